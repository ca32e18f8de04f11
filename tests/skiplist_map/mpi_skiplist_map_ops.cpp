// The operations users of ordered stores expect (issue 49, item 6) at 1-4 ranks
// in every consistency mode, against std::map models: count(lo, hi) (Redis
// ZCOUNT) and erase_range(lo, hi) (ZREMRANGEBYSCORE, RocksDB DeleteRange),
// both answered at the nodes, and reduce / async_reduce (op applied at the
// key's node; run_reduce).
//
// Every rank owns a region of the key space, [rank * region, (rank + 1) *
// region), and is the only one to write there, so its model of the region is
// exact while the others work in theirs (the regions share the nodes at their
// borders): each operation's result is checked as it completes.  Then, after a
// flush, counts over every region against the union of the models; emptied
// nodes unlinked by the flush and their slots used again; and bad input.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using key_type = std::int64_t;
using map_type = mpidict::skiplist_map<key_type, std::uint64_t>;
using model_type = std::map<key_type, std::uint64_t>;
using mode_type = mpidict::skiplist_consistency;

constexpr key_type region = 4000;

constexpr auto same_entry = [](const auto& a, const auto& b) { return a.first == b.first && a.second == b.second; };

const char* name_of(mode_type mode) { return mpidict::to_string(mode); }

// What count(lo, hi, options) counts in `model`.
std::uint64_t model_count(const model_type& model, key_type lo, key_type hi, const mpidict::range_options& options) {
    if (options.after_lo)
        ++lo;
    if (options.before_hi)
        --hi;
    if (hi < lo)
        return 0;
    return static_cast<std::uint64_t>(std::distance(model.lower_bound(lo), model.upper_bound(hi)));
}
void model_erase(model_type& model, key_type lo, key_type hi, const mpidict::range_options& options) {
    if (options.after_lo)
        ++lo;
    if (options.before_hi)
        --hi;
    if (hi >= lo)
        model.erase(model.lower_bound(lo), model.upper_bound(hi));
}

void run_mode(int rank, int size, mode_type mode, std::size_t granularity) {
    mpidict::skiplist_map_config config;
    config.granularity = granularity;
    config.max_height = 5;
    config.consistency = mode;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    map_type map(MPI_COMM_WORLD, config);
    const std::string where = std::string(" (") + name_of(mode) + ", G = " + std::to_string(granularity) + ", " +
                              std::to_string(size) + " ranks, rank " + std::to_string(rank) + ")";
    std::mt19937_64 random(0xc0417 + 131 * rank + granularity);
    const key_type base = rank * region;
    auto own = [&](key_type span = region) { return base + static_cast<key_type>(random() % span); };
    model_type model;
    {
        std::vector<key_type> keys;
        std::vector<std::uint64_t> values;
        for (key_type key = base; key < base + region; key += 1 + static_cast<key_type>(random() % 3)) {
            keys.push_back(key);
            values.push_back(static_cast<std::uint64_t>(key) * 10);
            model[key] = values.back();
        }
        const auto stored = map.insert_many(std::span<const key_type>(keys), std::span<const std::uint64_t>(values));
        MPIDICT_CHECK(stored.stored == keys.size());
    }
    // While the other ranks work in their regions: each result against the model.
    std::uint64_t version = 1;
    for (int step = 0; step < 120; ++step) {
        const mpidict::range_options flags{.after_lo = random() % 4 == 0, .before_hi = random() % 4 == 0};
        key_type lo = own();
        key_type hi = std::min(base + region - 1, lo + static_cast<key_type>(random() % (step % 10 == 0 ? region : 60)));
        if (random() % 8 == 0)
            std::swap(lo, hi);  // an empty interval unless lo == hi
        const std::string what = std::string("[").append(std::to_string(lo)) + ", " + std::to_string(hi) + "]" +
                                 (flags.after_lo ? " after_lo" : "") + (flags.before_hi ? " before_hi" : "") + where;
        switch (random() % 6) {
        case 0:
        case 1: {
            const key_type key = own();
            map.insert(key, ++version).get();
            model[key] = version;
            break;
        }
        case 2: {
            const key_type key = own();
            MPIDICT_CHECK(map.erase(key).get() == (model.erase(key) == 1));
            break;
        }
        case 3:
        case 4: {
            const std::uint64_t got = map.count(lo, hi, flags).get();
            const std::uint64_t expected = model_count(model, lo, hi, flags);
            MPIDICT_CHECK_MSG(got == expected, "count" + what + ": " + std::to_string(got) + ", expected " +
                                                   std::to_string(expected));
            break;
        }
        default: {
            const std::uint64_t got = map.erase_range(lo, hi, flags).get();
            const std::uint64_t expected = model_count(model, lo, hi, flags);
            MPIDICT_CHECK_MSG(got == expected, "erase_range" + what + ": erased " + std::to_string(got) +
                                                   ", expected " + std::to_string(expected));
            model_erase(model, lo, hi, flags);
            if (hi < lo)
                break;
            const key_type from = std::max(base, lo - 2), to = std::min(base + region - 1, hi + 2);
            const auto left = map.range(from, to).get();
            const model_type expected_left(model.lower_bound(from), model.upper_bound(to));
            MPIDICT_CHECK_MSG(left.size() == expected_left.size() &&
                                  std::equal(left.begin(), left.end(), expected_left.begin(), same_entry),
                              "range around erase_range" + what);
            break;
        }
        }
    }
    if (mode != mode_type::none) {
        // Issue order within one caller (total_order, sequential), all in
        // flight together: insert two keys, erase the interval holding them,
        // count it, insert one of them again, count again.
        for (int round = 0; round < 20; ++round) {
            const key_type a = own(region - 40), b = a + 1 + static_cast<key_type>(random() % 30);
            auto first = map.insert(a, ++version);
            auto second = map.insert(b, ++version);
            auto erased = map.erase_range(a, b);
            auto none_left = map.count(a, b);
            auto again = map.insert(b, ++version);
            auto one_left = map.count(a, b);
            auto found = map.find(b);
            model[a] = version - 2;
            model[b] = version - 1;
            const std::uint64_t expected = model_count(model, a, b, {});
            first.get();
            second.get();
            MPIDICT_CHECK_MSG(erased.get() == expected, "pipelined erase_range" + where);
            MPIDICT_CHECK_MSG(none_left.get() == 0, "pipelined count after erase_range" + where);
            MPIDICT_CHECK(!again.get().replaced);
            MPIDICT_CHECK_MSG(one_left.get() == 1, "pipelined count after the insert" + where);
            MPIDICT_CHECK(found.get() == version);
            model_erase(model, a, b, {});
            model[b] = version;
        }
    }
    map.flush();
    // Settled: every region's count against its owner's model.
    std::vector<std::int64_t> sizes(static_cast<std::size_t>(size), 0);
    sizes[static_cast<std::size_t>(rank)] = static_cast<std::int64_t>(model.size());
    sizes = mpidict::testing::sum_over_ranks(sizes);
    std::int64_t total = 0;
    for (int other = 0; other < size; ++other) {
        const std::uint64_t got = map.count(other * region, (other + 1) * region - 1).get();
        MPIDICT_CHECK_MSG(got == static_cast<std::uint64_t>(sizes[static_cast<std::size_t>(other)]),
                          "count of region " + std::to_string(other) + where);
        total += sizes[static_cast<std::size_t>(other)];
    }
    MPIDICT_CHECK(map.count(-1, size * region).get() == static_cast<std::uint64_t>(total));
    MPIDICT_CHECK(map.count(size * region, size * region + 100).get() == 0);
    MPIDICT_CHECK(static_cast<std::int64_t>(map.global_size()) == total);
    const auto mine = map.range(base, base + region - 1).get();
    MPIDICT_CHECK_MSG(mine.size() == model.size() && std::equal(mine.begin(), mine.end(), model.begin(), same_entry),
                      "own region after the flush" + where);
    // Bad input: refused on the calling rank, nothing changed.
    MPIDICT_EXPECT_ERROR(mpidict::invalid_argument_error, map.count(0, 10, {.limit = 3}), "count", "limit");
    MPIDICT_EXPECT_ERROR(mpidict::invalid_argument_error, map.erase_range(0, 10, {.descending = true}),
                         "erase_range", "descending");
    map.flush();
    MPIDICT_CHECK(static_cast<std::int64_t>(map.global_size()) == total);
    // Empty a whole region but its last key: the flush unlinks the emptied
    // nodes (as after erase), and the region fills again.
    const auto before = map.local_statistics();
    const std::uint64_t erased = map.erase_range(base, base + region - 2).get();
    MPIDICT_CHECK(erased == model_count(model, base, base + region - 2, {}));
    model_erase(model, base, base + region - 2, {});
    map.flush();
    const std::int64_t unlinked =
        mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(map.local_statistics().unlinked - before.unlinked));
    if (granularity <= 16)
        MPIDICT_CHECK_MSG(unlinked > 0, "no node unlinked after erase_range emptied them" + where);
    MPIDICT_CHECK(map.count(base, base + region - 1).get() == model.size());
    std::vector<key_type> keys;
    std::vector<std::uint64_t> values;
    for (key_type key = base; key < base + region; key += 2) {
        keys.push_back(key);
        values.push_back(static_cast<std::uint64_t>(key));
        model[key] = static_cast<std::uint64_t>(key);
    }
    (void)map.insert_many(std::span<const key_type>(keys), std::span<const std::uint64_t>(values));
    map.flush();
    MPIDICT_CHECK(map.count(base, base + region - 1).get() == model.size());
    const auto refilled = map.range(base, base + region - 1).get();
    MPIDICT_CHECK_MSG(refilled.size() == model.size() && std::equal(refilled.begin(), refilled.end(), model.begin(), same_entry),
                      "own region refilled" + where);
    map.flush();
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
}

// reduce / async_reduce (op(current, v) at the key's node): counters every
// rank adds to at once, a maximum by a lambda, new keys that split nodes, and
// one caller's insert, reduce, find in flight together (not in mode none,
// which keeps no order between them).
void run_reduce(int rank, int size, mode_type mode, std::size_t granularity) {
    mpidict::skiplist_map_config config;
    config.granularity = granularity;
    config.max_height = 5;
    config.consistency = mode;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    map_type map(MPI_COMM_WORLD, config);
    const std::string where = std::string(" (") + name_of(mode) + ", G = " + std::to_string(granularity) + ", " +
                              std::to_string(size) + " ranks, rank " + std::to_string(rank) + ")";
    constexpr key_type counters = 64;
    constexpr int rounds = 5;
    constexpr auto larger = [](std::uint64_t a, std::uint64_t b) { return std::max(a, b); };
    for (int round = 0; round < rounds; ++round)
        for (key_type key = 0; key < counters; ++key) {
            map.async_reduce(key, static_cast<std::uint64_t>(key + 1));  // std::plus by default
            map.async_reduce(1'000'000 + key, static_cast<std::uint64_t>(rank * 100 + round), larger);
        }
    // Request forms on keys of this rank only: the first reduce stores, later ones fold.
    std::mt19937_64 random(0x7ed + 17 * rank + granularity);
    model_type mine;
    for (int step = 0; step < 200; ++step) {
        const key_type key = 2'000'000 + rank * 1000 + static_cast<key_type>(random() % 300);
        const std::uint64_t operand = random() % 1000;
        const auto result = map.reduce(key, operand).get();
        MPIDICT_CHECK_MSG(result.stored && result.replaced == (mine.count(key) > 0), "reduce's result" + where);
        mine[key] += operand;
    }
    map.flush();
    for (key_type key = 0; key < counters; ++key) {
        const auto sum = map.find(key).get();
        MPIDICT_CHECK_MSG(sum && *sum == static_cast<std::uint64_t>((key + 1) * rounds * size),
                          "counter " + std::to_string(key) + " = " + (sum ? std::to_string(*sum) : "none") + where);
        const auto top = map.find(1'000'000 + key).get();
        MPIDICT_CHECK_MSG(top && *top == static_cast<std::uint64_t>((size - 1) * 100 + rounds - 1),
                          "maximum " + std::to_string(key) + where);
    }
    const auto stored = map.range(2'000'000 + rank * 1000, 2'000'000 + rank * 1000 + 999).get();
    MPIDICT_CHECK_MSG(stored.size() == mine.size() && std::equal(stored.begin(), stored.end(), mine.begin(), same_entry),
                      "reduced keys against the model" + where);
    if (mode != mode_type::none) {
        for (int round = 0; round < 20; ++round) {
            const key_type key = 3'000'000 + rank * 100 + round;
            auto put = map.insert(key, 5);
            auto add = map.reduce(key, std::uint64_t{3});
            auto keep = map.reduce(key, std::uint64_t{2}, larger);
            auto read = map.find(key);
            auto gone = map.erase(key);
            auto fresh = map.reduce(key, std::uint64_t{7});
            auto again = map.find(key);
            MPIDICT_CHECK(!put.get().replaced);
            MPIDICT_CHECK(add.get().replaced && keep.get().replaced);
            MPIDICT_CHECK_MSG(read.get() == std::optional<std::uint64_t>(8), "insert, reduce, find in flight" + where);
            MPIDICT_CHECK(gone.get());
            MPIDICT_CHECK(!fresh.get().replaced);
            MPIDICT_CHECK_MSG(again.get() == std::optional<std::uint64_t>(7), "erase, reduce, find in flight" + where);
        }
    }
    map.flush();
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(170), "mpi_skiplist_map_ops");
        for (const mode_type mode : {mode_type::sequential, mode_type::none, mode_type::total_order})
            for (const std::size_t granularity : {std::size_t{4}, std::size_t{64}}) {
                run_mode(rank, size, mode, granularity);
                run_reduce(rank, size, mode, granularity);
            }
    });
}
