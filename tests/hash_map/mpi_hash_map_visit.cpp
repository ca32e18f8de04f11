// Visitors: functions registered collectively and run at a key's owner.
//
//  * A chain started by handlers: the visitor, at the owner, records a value,
//    async_inserts a derived key and async_visits key + 1 with one hop fewer, so
//    the chain hops across ranks.  After ONE flush every hop and every derived
//    insert of every rank's chain is present: flush's termination detection must
//    see operations that handlers started while it ran.
//  * A visitor returning a value through visit(), under contention on one key.
//  * A visitor returning a byte string that reports visit_context.source.
//  * Void visitors through visit() (request<nothing>): one that rewrites values,
//    one that empties them (which removes the key).
//  * Values a visitor adds obey the capacity limit; refusals of async visits are
//    reported back to the origin.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;
using context = map_type::visit_context;

constexpr std::uint64_t derived_offset = 500000;

// Registered in the same order on every rank, so the ids agree everywhere.
map_type::visitor<std::uint32_t, void> chain_visitor{};

struct chain_counters {
    std::uint64_t visits = 0;
    std::uint64_t remote_sources = 0;
};

void chain_step(context& ctx, const std::uint64_t& key, std::vector<std::uint64_t>& values,
                const std::uint32_t& remaining) {
    auto& counters = *static_cast<chain_counters*>(ctx.user_context);
    ++counters.visits;
    if (ctx.source != ctx.map.rank())
        ++counters.remote_sources;
    values.push_back(remaining);
    ctx.map.async_insert(key + derived_offset, key);
    if (remaining > 0)
        ctx.map.async_visit(key + 1, chain_visitor, remaining - 1);
}

std::uint64_t add_and_sum(context&, const std::uint64_t&, std::vector<std::uint64_t>& values,
                          const std::uint64_t& amount) {
    values.push_back(amount);
    std::uint64_t sum = 0;
    for (std::uint64_t value : values)
        sum += value;
    return sum;
}

std::string describe(context& ctx, const std::uint64_t& key, std::vector<std::uint64_t>& values,
                     const std::uint32_t& tag) {
    return "key=" + std::to_string(key) + " source=" + std::to_string(ctx.source) + " owner=" +
           std::to_string(ctx.map.rank()) + " values=" + std::to_string(values.size()) + " tag=" +
           std::to_string(tag);
}

void double_all(context&, const std::uint64_t&, std::vector<std::uint64_t>& values, const std::uint32_t&) {
    for (std::uint64_t& value : values)
        value *= 2;
}

void clear_all(context&, const std::uint64_t&, std::vector<std::uint64_t>& values, const std::uint32_t&) {
    values.clear();
}

void push_many(context&, const std::uint64_t&, std::vector<std::uint64_t>& values, const std::uint32_t& count) {
    for (std::uint32_t i = 0; i < count; ++i)
        values.push_back(i);
}

std::uint64_t chain_base(int rank, int round) {
    return (static_cast<std::uint64_t>(rank) + 1) * 10000 + static_cast<std::uint64_t>(round) * 1000;
}

void check_chain(map_type& map, int origin, int round, std::uint32_t length) {
    const std::uint64_t base = chain_base(origin, round);
    std::vector<mpidict::request<std::vector<std::uint64_t>>> hops;
    std::vector<mpidict::request<std::vector<std::uint64_t>>> derived;
    for (std::uint32_t hop = 0; hop <= length; ++hop) {
        hops.push_back(map.find(base + hop));
        derived.push_back(map.find(base + hop + derived_offset));
    }
    std::size_t wrong = 0;
    for (std::uint32_t hop = 0; hop <= length; ++hop) {
        if (hops[hop].get() != std::vector<std::uint64_t>{length - hop})
            ++wrong;
        if (derived[hop].get() != std::vector<std::uint64_t>{base + hop})
            ++wrong;
    }
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " of " + std::to_string(2 * (length + 1)) +
                                      " chain entries missing or wrong (origin " + std::to_string(origin) +
                                      ", round " + std::to_string(round) + ")");
    // One past the end of the chain was never visited.
    MPIDICT_CHECK(map.find(base + length + 1).get().empty());
}

void chains(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    chain_counters counters;
    chain_visitor = map.register_visitor("chain", &chain_step, &counters);
    constexpr std::uint32_t length = 40;

    // Round 0: started fire-and-forget; round 1: started with a request whose reply
    // comes from the first hop, before the rest of the chain has run.
    map.async_visit(chain_base(rank, 0), chain_visitor, length);
    mpidict::request<mpidict::nothing> first_hop = map.visit(chain_base(rank, 1), chain_visitor, length);
    first_hop.wait();
    map.flush();  // one flush covers every hop of every chain

    for (int origin = 0; origin < size; ++origin)
        for (int round = 0; round < 2; ++round)
            check_chain(map, origin, round, length);
    map.flush();  // others may still wait on our answers: no plain MPI collective before this
    const std::int64_t visits = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(counters.visits));
    MPIDICT_CHECK_MSG(visits == std::int64_t{size} * 2 * (length + 1), "visits " + std::to_string(visits));
    if (size > 1)  // the chain hops across ranks
        MPIDICT_CHECK(mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(counters.remote_sources)) > 0);
    MPIDICT_CHECK(map.global_value_count() == static_cast<std::size_t>(size) * 2 * 2 * (length + 1));
    map.destroy();
}

void results_and_void_visitors(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    // Same registration order everywhere.
    const auto adder = map.register_visitor("add_and_sum", &add_and_sum);
    const auto describer = map.register_visitor("describe", &describe);
    const auto doubler = map.register_visitor("double_all", &double_all);
    const auto clearer = map.register_visitor("clear_all", &clear_all);

    // A private key: results are exact running sums, the key is created on first visit.
    const std::uint64_t mine = 777000 + static_cast<std::uint64_t>(rank);
    MPIDICT_CHECK(map.visit(mine, adder, std::uint64_t{5}).get() == 5);
    MPIDICT_CHECK(map.visit(mine, adder, std::uint64_t{7}).get() == 12);
    MPIDICT_CHECK(map.find(mine).get() == (std::vector<std::uint64_t>{5, 7}));

    // A shared key under contention: every visit sees the values before it, so the
    // results are distinct running sums and the largest is the total.
    const std::uint64_t shared = 424242;
    std::vector<std::uint64_t> results;
    for (int i = 0; i < 10; ++i)
        results.push_back(map.visit(shared, adder, static_cast<std::uint64_t>(rank + 1)).get());
    MPIDICT_CHECK(std::is_sorted(results.begin(), results.end()));
    MPIDICT_CHECK(std::adjacent_find(results.begin(), results.end()) == results.end());
    map.flush();
    const std::uint64_t total = 10 * static_cast<std::uint64_t>(size) * static_cast<std::uint64_t>(size + 1) / 2;
    std::uint64_t largest = results.back();
    std::uint64_t global_largest = 0;
    MPI_Allreduce(&largest, &global_largest, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
    MPIDICT_CHECK_MSG(global_largest == total, "largest " + std::to_string(global_largest));
    MPIDICT_CHECK(map.find(shared).get().size() == 10 * static_cast<std::size_t>(size));

    // A byte-string result naming the source rank and owner, with an explicit target.
    const int target = (rank + 1) % size;
    const std::string said = map.visit(mpidict::target_rank{target}, mine, describer, std::uint32_t{99}).get();
    // The target holds `mine` (two values) only if it happens to be its hash owner.
    const std::string expected_values = target == map.owner(mine) ? "2" : "0";
    MPIDICT_CHECK_MSG(said == "key=" + std::to_string(mine) + " source=" + std::to_string(rank) +
                                  " owner=" + std::to_string(target) + " values=" + expected_values + " tag=99",
                      said);

    // Void visitors through visit(): a request<nothing> that completes.
    mpidict::request<mpidict::nothing> doubled = map.visit(mine, doubler, std::uint32_t{0});
    doubled.get();
    MPIDICT_CHECK(map.find(mine).get() == (std::vector<std::uint64_t>{10, 14}));
    mpidict::request<mpidict::nothing> cleared = map.visit(mine, clearer, std::uint32_t{0});
    MPIDICT_CHECK(cleared.count() == 1);
    cleared.get();
    MPIDICT_CHECK(map.find(mine).get().empty());
    map.async_visit(mine, adder, std::uint64_t{3});  // fire-and-forget result is dropped
    map.flush();
    MPIDICT_CHECK(map.find(mine).get() == std::vector<std::uint64_t>{3});
    map.async_visit(mine, clearer, std::uint32_t{0});
    map.flush();
    // Emptying the values removed the key at its owner.
    MPIDICT_CHECK(!map.local_contains(mine));  // (trivially true off the owner)
    MPI_Barrier(MPI_COMM_WORLD);
    std::int64_t held = 0;
    for (int r = 0; r < size; ++r)
        held += map.local_contains(777000 + static_cast<std::uint64_t>(r)) ? 1 : 0;
    MPIDICT_CHECK(mpidict::testing::sum_over_ranks(held) == 0);
    map.destroy();
}

void visitor_capacity(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.capacity_values = 3;
    map_type map(MPI_COMM_WORLD, settings);
    const auto pusher = map.register_visitor("push_many", &push_many);
    const mpidict::target_rank to{(rank + 1) % size};  // one origin per owner: exact counts
    map.async_visit(to, 5, pusher, std::uint32_t{5});
    map.flush();
    MPIDICT_CHECK_MSG(map.async_rejected() == 2, "async_rejected " + std::to_string(map.async_rejected()));
    MPIDICT_CHECK(map.local_rejected() == 2);
    MPIDICT_CHECK(map.find(to, 5).get() == (std::vector<std::uint64_t>{0, 1, 2}));
    map.flush();
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_visit");
        chains(rank, size);
        results_and_void_visitors(rank, size);
        visitor_capacity(rank, size);
    });
}
