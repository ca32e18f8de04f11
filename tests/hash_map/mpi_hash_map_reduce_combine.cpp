// async_reduce's combining at the origin (reduce_combiner: a reduce folds into
// one of the same key, owner and operator still waiting unsent in the outbox;
// any other operation of this rank on the key ends that), checked against a
// model with the default buffers and with 512-byte ones (outboxes ship every
// few records, so combining restarts all the time):
//
//   * history: each rank runs a random sequence of reduces (std::plus and a
//     non-commutative operator, 2x2 matrix product mod 2^16, so a reordered or
//     double-applied fold changes the value), insert_or_assign, insert, erase,
//     finds and find_many on its own keys (some to explicit targets that change
//     between calls); every find must see exactly the operations this rank
//     started on the key before it, and after the last flush every key must
//     hold the model's values;
//   * counting: every rank adds to shared keys; the sums must be exact (no
//     reduce lost or counted twice) and nothing is refused.
//
// --broken --expect-reject: the map built with break_consistency_for_testing
// (other operations do not end the combining, so a later reduce folds into a
// record sent before them); the history check must then reject some find or
// final value.

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/detail/xoshiro.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

// 2x2 matrices mod 2^16 packed in 16-bit lanes (a b / c d): associative, not commutative.
struct matrix_product {
    std::uint64_t operator()(const std::uint64_t& x, const std::uint64_t& y) const {
        const auto at = [](std::uint64_t m, int i) { return (m >> (16 * i)) & 0xffffu; };
        const std::uint64_t a = at(x, 0), b = at(x, 1), c = at(x, 2), d = at(x, 3);
        const std::uint64_t p = at(y, 0), q = at(y, 1), r = at(y, 2), s = at(y, 3);
        return ((a * p + b * r) & 0xffffu) | (((a * q + b * s) & 0xffffu) << 16) | (((c * p + d * r) & 0xffffu) << 32) |
               (((c * q + d * s) & 0xffffu) << 48);
    }
};

struct options {
    bool broken = false;
    bool expect_reject = false;
};

// The values a (target, key) holds after this rank's operations, in order.
using model = std::map<std::pair<int, std::uint64_t>, std::vector<std::uint64_t>>;

template <class Op>
void model_reduce(std::vector<std::uint64_t>& values, std::uint64_t value, Op op) {
    if (values.empty()) {
        values.push_back(value);
        return;
    }
    std::uint64_t folded = values[0];
    for (std::size_t i = 1; i < values.size(); ++i)
        folded = op(folded, values[i]);
    values.assign(1, op(folded, value));
}

// Returns this rank's violations (finds or final values that differ from the model).
std::uint64_t history(int rank, int size, std::size_t buffer_bytes, bool broken, std::uint64_t seed) {
    mpidict::hash_map_config config;
    config.runtime.buffer_bytes = buffer_bytes;
    config.break_consistency_for_testing = broken;
    map_type map(MPI_COMM_WORLD, config);
    mpidict::detail::xoshiro256 random(seed * 1000 + static_cast<std::uint64_t>(rank));
    constexpr std::uint64_t keys = 40;
    const auto key_of = [&](std::uint64_t i) { return (static_cast<std::uint64_t>(rank + 1) << 32) | i; };
    model expected;
    std::uint64_t violations = 0;
    std::string first;
    const auto check = [&](int target, std::uint64_t key, const std::vector<std::uint64_t>& got, const char* when) {
        const auto it = expected.find({target, key});
        const std::vector<std::uint64_t> want = it == expected.end() ? std::vector<std::uint64_t>{} : it->second;
        if (got != want) {
            if (violations++ == 0)
                first = std::string(when) + ": key " + std::to_string(key) + " at rank " + std::to_string(target) +
                        " holds " + std::to_string(got.size()) + " values (" +
                        (got.empty() ? std::string("-") : std::to_string(got[0])) + "), the model " +
                        std::to_string(want.size()) + " (" + (want.empty() ? std::string("-") : std::to_string(want[0])) +
                        ")";
        }
    };
    constexpr int rounds = 4;
    constexpr int steps = 300;
    for (int round = 0; round < rounds; ++round) {
        for (int step = 0; step < steps; ++step) {
            const std::uint64_t i = random.next() % keys;
            const std::uint64_t key = key_of(i);
            // Keys i % 8 == 7 go to an explicit target that changes between calls.
            const bool explicit_target = i % 8 == 7;
            const int target = explicit_target ? static_cast<int>(random.next() % static_cast<std::uint64_t>(size))
                                               : map.owner(key);
            const mpidict::target_rank to{target};
            std::vector<std::uint64_t>& values = expected[{target, key}];
            const std::uint64_t value = random.next() & 0xffff'ffff'ffffULL;
            const std::uint64_t dice = random.next() % 100;
            if (dice < 45) {
                map.async_reduce(to, key, value);
                model_reduce(values, value, std::plus<>{});
            } else if (dice < 62) {
                map.async_reduce(to, key, value, matrix_product{});
                model_reduce(values, value, matrix_product{});
            } else if (dice < 70) {
                map.async_insert_or_assign(to, key, value);
                values.assign(1, value);
            } else if (dice < 77) {
                map.async_insert(to, key, value);
                values.push_back(value);
            } else if (dice < 82) {
                map.async_erase(to, key);
                values.clear();
            } else if (dice < 96) {
                check(target, key, map.find(to, key).get(), "find");
            } else if (!explicit_target) {
                // find_many over a few default-placed keys (looked up in place when owned here).
                std::vector<std::uint64_t> some;
                for (std::uint64_t j = i; j < i + 3; ++j)
                    if (j % 8 != 7 && j < keys)
                        some.push_back(key_of(j));
                std::vector<std::vector<std::uint64_t>> got(some.size());
                map.find_many(std::span<const std::uint64_t>(some), map_type::unlimited,
                              [&](std::size_t index, std::span<const std::uint64_t> found) {
                                  got[index].assign(found.begin(), found.end());
                              });
                for (std::size_t j = 0; j < some.size(); ++j)
                    check(map.owner(some[j]), some[j], got[j], "find_many");
            }
        }
        map.flush();
    }
    for (const auto& [where, values] : expected)
        check(where.first, where.second, map.find(mpidict::target_rank{where.first}, where.second).get(), "final");
    MPIDICT_CHECK(map.async_rejected() == 0);
    if (violations != 0 && !broken)
        std::fprintf(stderr, "rank %d, buffer_bytes %zu: %llu violations; first: %s\n", rank, buffer_bytes,
                     static_cast<unsigned long long>(violations), first.c_str());
    map.destroy();
    return violations;
}

// Every rank adds (k % 5 + 1) * (rank + 1) to shared key k in several passes;
// the sums must be exact.
void counting(int rank, int size, std::size_t buffer_bytes) {
    mpidict::hash_map_config config;
    config.runtime.buffer_bytes = buffer_bytes;
    map_type map(MPI_COMM_WORLD, config);
    constexpr std::uint64_t keys = 300;
    for (std::uint64_t pass = 0; pass < 5; ++pass)
        for (std::uint64_t k = 0; k < keys; ++k)
            if (pass <= k % 5)
                map.async_reduce(k, static_cast<std::uint64_t>(rank + 1));
    map.flush();
    const std::uint64_t ranks_sum = static_cast<std::uint64_t>(size) * static_cast<std::uint64_t>(size + 1) / 2;
    for (std::uint64_t k = 0; k < keys; ++k)
        MPIDICT_CHECK_MSG(map.find(k).get() == std::vector<std::uint64_t>{(k % 5 + 1) * ranks_sum},
                          "key " + std::to_string(k) + ", buffer_bytes " + std::to_string(buffer_bytes));
    MPIDICT_CHECK(map.global_size() == keys);
    MPIDICT_CHECK(map.async_rejected() == 0);
    if (buffer_bytes >= keys * 16 * static_cast<std::size_t>(size))  // a pass fits in one buffer: passes fold
        MPIDICT_CHECK(map.async_reduces_combined() > 0);
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    options opts;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--broken") == 0)
            opts.broken = true;
        else if (std::strcmp(argv[i], "--expect-reject") == 0)
            opts.expect_reject = true;
    }
    return mpidict::testing::run_mpi_test(argc, argv, [&](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_reduce_combine");
        std::uint64_t violations = 0;
        std::uint64_t seed = 1;
        for (const std::size_t buffer_bytes : {std::size_t{65536}, std::size_t{512}})
            violations += history(rank, size, buffer_bytes, opts.broken, seed++);
        std::uint64_t total = 0;
        MPI_Allreduce(&violations, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (opts.expect_reject) {
            MPIDICT_CHECK_MSG(total > 0, "the broken variant was not rejected");
        } else {
            MPIDICT_CHECK_MSG(total == 0, std::to_string(total) + " violations");
            for (const std::size_t buffer_bytes : {std::size_t{65536}, std::size_t{512}})
                counting(rank, size, buffer_bytes);
        }
    });
}
