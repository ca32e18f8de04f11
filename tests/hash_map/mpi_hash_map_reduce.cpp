// async_reduce and insert_or_assign: single-valued updates with any stateless
// operator, combined at the origin while the record waits unsent, without
// reordering this rank's other operations on the same key; capacity refusals.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using counter_map = mpidict::hash_map<std::uint64_t, std::int64_t>;

constexpr std::uint64_t key_count = 500;

// Every rank adds (k % 7 + 1) ones to key k, interleaved over the keys, then
// a max and a min through lambdas on their own keys.
void counting(int rank, int size) {
    counter_map map(MPI_COMM_WORLD);
    for (std::uint64_t round = 0; round < 7; ++round)
        for (std::uint64_t key = 0; key < key_count; ++key)
            if (round <= key % 7)
                map.async_reduce(key, 1);
    for (std::uint64_t key = 0; key < 50; ++key) {
        map.async_reduce(100000 + key, static_cast<std::int64_t>(rank * 10 + key),
                         [](std::int64_t a, std::int64_t b) { return std::max(a, b); });
        map.async_reduce(200000 + key, static_cast<std::int64_t>(rank * 10 + key),
                         [](const std::int64_t& a, const std::int64_t& b) { return std::min(a, b); });
    }
    map.flush();
    for (std::uint64_t key = 0; key < key_count; ++key)
        MPIDICT_CHECK_MSG(map.find(key).get() == std::vector<std::int64_t>{static_cast<std::int64_t>(size) *
                                                                          static_cast<std::int64_t>(key % 7 + 1)},
                          "key " + std::to_string(key));
    for (std::uint64_t key = 0; key < 50; ++key) {
        MPIDICT_CHECK(map.find(100000 + key).get() ==
                      std::vector<std::int64_t>{static_cast<std::int64_t>((size - 1) * 10 + key)});
        MPIDICT_CHECK(map.find(200000 + key).get() == std::vector<std::int64_t>{static_cast<std::int64_t>(key)});
    }
    map.flush();
    MPIDICT_CHECK(map.global_size() == key_count + 100);
    MPIDICT_CHECK(map.global_value_count() == key_count + 100);
    // 7 rounds over 500 keys fit in one buffer per destination: most are combined.
    MPIDICT_CHECK_MSG(map.async_reduces_combined() > 1000,
                      "combined " + std::to_string(map.async_reduces_combined()));
    MPIDICT_CHECK(map.async_rejected() == 0);

    // One key hit 1000 times from every rank: one value, the exact sum.
    for (int i = 0; i < 1000; ++i)
        map.async_reduce(7777777, 2);
    map.flush();
    MPIDICT_CHECK(map.find(7777777).get() == std::vector<std::int64_t>{2000 * static_cast<std::int64_t>(size)});
    map.destroy();
}

// This rank's own operations on one key keep their order around reduces.
void ordering(int rank, int size) {
    counter_map map(MPI_COMM_WORLD);
    const auto mine = [&](std::uint64_t i) { return static_cast<std::uint64_t>(rank) * 1000000 + i; };
    for (std::uint64_t i = 0; i < 40; ++i) {
        const std::uint64_t key = mine(i);
        map.async_reduce(key, 1);
        map.async_reduce(key, 2);
        map.async_erase(key);            // the 1 + 2 go, not the 5 after it
        map.async_reduce(key, 5);
        map.async_insert(key, 100);       // a second value
        map.async_reduce(key, 7);         // folds 5 and 100, then adds 7
        map.async_insert_or_assign(key + 500, 1);
        map.async_reduce(key + 500, 1);
        map.async_insert_or_assign(key + 500, 40);  // the reduce before it is not moved past it
        map.async_reduce(key + 500, 2);
    }
    map.flush();
    for (std::uint64_t i = 0; i < 40; ++i) {
        MPIDICT_CHECK_MSG(map.find(mine(i)).get() == std::vector<std::int64_t>{112}, "key " + std::to_string(mine(i)));
        MPIDICT_CHECK(map.find(mine(i) + 500).get() == std::vector<std::int64_t>{42});
    }
    // A request between two reduces sees the first only.
    const std::uint64_t key = mine(900);
    map.async_reduce(key, 3);
    auto seen = map.find(key);
    map.async_reduce(key, 4);
    MPIDICT_CHECK(seen.get() == std::vector<std::int64_t>{3});
    map.flush();
    MPIDICT_CHECK(map.find(key).get() == std::vector<std::int64_t>{7});

    // insert_or_assign's request form: true when new; several values become one.
    const std::uint64_t multi = mine(950);
    MPIDICT_CHECK(map.insert_or_assign(multi, 9).get());
    MPIDICT_CHECK(!map.insert_or_assign(multi, 8).get());
    const std::int64_t three[] = {1, 2, 3};
    (void)map.insert(multi, std::span<const std::int64_t>(three)).get();
    map.async_reduce(multi, 10);
    map.flush();
    MPIDICT_CHECK(map.find(multi).get() == std::vector<std::int64_t>{24});
    MPIDICT_CHECK(map.global_size() == 80 * static_cast<std::size_t>(size) + 2 * static_cast<std::size_t>(size));

    // An explicit target, and a bad one.
    map.async_reduce(mpidict::target_rank{0}, 777777777, 1);
    for (const int bad : {size, -1}) {  // -1 also names no outbox (and matches no waiting record)
        bool refused = false;
        try {
            map.async_reduce(mpidict::target_rank{bad}, 0, 1);
        } catch (const mpidict::invalid_argument_error& problem) {
            refused = std::string(problem.what()).find("outside") != std::string::npos;
        }
        MPIDICT_CHECK(refused);
    }
    map.flush();
    MPIDICT_CHECK(map.find(mpidict::target_rank{0}, 777777777).get() == std::vector<std::int64_t>{size});
    map.destroy();
}

// Byte-string values (never combined at the origin): an associative but not
// commutative operator keeps this rank's order.
void strings(int rank, int size) {
    mpidict::hash_map<std::uint64_t, std::string> map(MPI_COMM_WORLD);
    const std::uint64_t key = 10 + static_cast<std::uint64_t>(rank);
    for (const char* piece : {"a", "b", "c", "d"})
        map.async_reduce(key, std::string(piece));
    map.async_reduce(key, std::string("|"), [](const std::string& a, const std::string& b) { return b + a + b; });
    map.flush();
    MPIDICT_CHECK(map.find(key).get() == std::vector<std::string>{"|abcd|"});
    MPIDICT_CHECK(map.async_reduces_combined() == 0);
    map.flush();
    (void)size;
    map.destroy();
}

// Capacity: new keys past the limit are refused (counted at the origin, or the
// request answers false); reduces into existing keys still apply.
void capacity(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.capacity_values = 20;
    counter_map map(MPI_COMM_WORLD, settings);
    if (rank == 0)
        for (std::uint64_t key = 0; key < 60; ++key)
            map.async_reduce(mpidict::target_rank{0}, key, 1);
    map.flush();
    MPIDICT_CHECK(map.async_rejected() == (rank == 0 ? 40u : 0u));
    if (rank == 0) {
        MPIDICT_CHECK(map.local_size() == 20);
        // A refusal is a result (issue 40): false, nothing stored, counted by the owner.
        const std::uint64_t refused_before = map.local_rejected();
        MPIDICT_CHECK(!map.insert_or_assign(mpidict::target_rank{0}, 999, 1).get());
        MPIDICT_CHECK(map.local_find(999).empty());
        MPIDICT_CHECK(map.local_rejected() == refused_before + 1);
        MPIDICT_CHECK(!map.insert_or_assign(mpidict::target_rank{0}, 3, 50).get());  // existing: fine
    }
    map.flush();
    map.async_reduce(mpidict::target_rank{0}, 3, 1);
    map.flush();
    if (rank == 0)
        MPIDICT_CHECK(map.local_find(3) == std::vector<std::int64_t>{50 + size});
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_reduce");
        counting(rank, size);
        ordering(rank, size);
        strings(rank, size);
        capacity(rank, size);
    });
}
