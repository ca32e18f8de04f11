// Placement: hash (owner() agrees on every rank and data lands on the owner),
// cyclic (owner is key % p), and an explicit target_rank (data lands on exactly
// that rank, and operations naming the same target reach it).

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

constexpr std::uint64_t keys_per_rank = 120;

std::uint64_t key_of(int rank, std::uint64_t index) { return static_cast<std::uint64_t>(rank) * 100000 + index; }

void hash_placement(int rank, int size) {
    mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD);

    // owner() is a pure function of the key: every rank computes the same owners.
    std::uint64_t mixed = 0;  // unsigned: wraps instead of overflowing
    std::vector<std::int64_t> keys_per_owner(static_cast<std::size_t>(size), 0);
    for (std::uint64_t key = 0; key < 4000; ++key) {
        const int owner = map.owner(key);
        MPIDICT_CHECK(owner >= 0 && owner < size);
        mixed = mixed * 31 + static_cast<std::uint64_t>(owner);
        ++keys_per_owner[static_cast<std::size_t>(owner)];
    }
    const auto digest = static_cast<std::int64_t>(mixed >> 1);
    MPIDICT_CHECK(mpidict::testing::same_on_all_ranks(digest));
    for (int owner = 0; owner < size; ++owner)  // the hash spreads keys (4000 keys, at most 4 ranks)
        MPIDICT_CHECK(keys_per_owner[static_cast<std::size_t>(owner)] > 4000 / size / 2);

    for (std::uint64_t index = 0; index < keys_per_rank; ++index)
        map.async_insert(key_of(rank, index), key_of(rank, index) + 1);
    map.flush();

    // Every key of every rank lives on its owner and nowhere else.
    std::size_t owned = 0;
    for (int origin = 0; origin < size; ++origin) {
        for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
            const std::uint64_t key = key_of(origin, index);
            const bool mine = map.owner(key) == rank;
            MPIDICT_CHECK_MSG(map.local_contains(key) == mine, "key " + std::to_string(key));
            if (mine) {
                ++owned;
                MPIDICT_CHECK(map.local_find(key) == std::vector<std::uint64_t>{key + 1});
            }
        }
    }
    MPIDICT_CHECK(map.local_size() == owned);
    MPIDICT_CHECK(mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(map.local_size())) ==
                  static_cast<std::int64_t>(keys_per_rank) * size);
    map.destroy();
}

void cyclic_placement(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.place = mpidict::placement::cyclic;
    mpidict::hash_map<std::int64_t, std::int64_t> map(MPI_COMM_WORLD, settings);

    for (std::int64_t key = 0; key < 1000; ++key)
        MPIDICT_CHECK(map.owner(key) == static_cast<int>(key % size));

    // Each rank inserts a strided set so that every owner receives from everyone.
    for (std::int64_t key = rank; key < 400; key += size)
        map.async_insert(key, key * 3);
    map.flush();
    for (std::int64_t key = 0; key < 400; ++key) {
        const bool mine = key % size == rank;
        MPIDICT_CHECK_MSG(map.local_contains(key) == mine, "key " + std::to_string(key));
        if (mine)
            MPIDICT_CHECK(map.local_find(key) == std::vector<std::int64_t>{key * 3});
    }
    MPIDICT_CHECK(map.local_size() == static_cast<std::size_t>((400 - rank + size - 1) / size));
    // find through the placement reaches the right rank.
    for (std::int64_t key = 0; key < 400; key += 7)
        MPIDICT_CHECK(map.find(key).get() == std::vector<std::int64_t>{key * 3});
    map.flush();
    map.destroy();
}

// A key whose hash owner is not `target` (when p > 1), so that a miss of the
// explicit target would show.
std::uint64_t key_not_owned_by(const mpidict::hash_map<std::uint64_t, std::uint64_t>& map, int target,
                               std::uint64_t start) {
    std::uint64_t key = start;
    while (map.num_ranks() > 1 && map.owner(key) == target)
        ++key;
    return key;
}

void explicit_target(int rank, int size) {
    using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;
    map_type map(MPI_COMM_WORLD);
    const int target = (rank + 1) % size;
    const mpidict::target_rank to{target};

    // Keys this rank places on `target`, chosen so their hash owner differs.
    std::vector<std::uint64_t> keys;
    std::uint64_t next = key_of(rank, 0);
    for (int i = 0; i < 40; ++i) {
        keys.push_back(key_not_owned_by(map, target, next));
        next = keys.back() + 1;
    }

    // All operation forms accept the target.
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const std::uint64_t key = keys[i];
        const std::uint64_t values[] = {key, key + 1, key + 2};
        switch (i % 4) {
            case 0: map.async_insert(to, key, key); break;
            case 1: map.async_insert(to, key, std::span<const std::uint64_t>(values, 1)); break;
            case 2: MPIDICT_CHECK(map.insert(to, key, std::span<const std::uint64_t>(values, 1)).get().stored == 1); break;
            default: MPIDICT_CHECK(map.insert_if_absent(to, key, key).get()); break;
        }
    }
    map.flush();

    // Data landed exactly on the target: check on every rank which keys it holds.
    for (int origin = 0; origin < size; ++origin) {
        const int origin_target = (origin + 1) % size;
        std::uint64_t next_key = key_of(origin, 0);
        for (int i = 0; i < 40; ++i) {
            const std::uint64_t key = key_not_owned_by(map, origin_target, next_key);
            next_key = key + 1;
            MPIDICT_CHECK_MSG(map.local_contains(key) == (rank == origin_target),
                              "key " + std::to_string(key) + " from rank " + std::to_string(origin));
        }
    }

    // find/take/erase/visit with the same target reach the data; without it they miss.
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const std::uint64_t key = keys[i];
        MPIDICT_CHECK(map.find(to, key).get() == std::vector<std::uint64_t>{key});
        if (size > 1)
            MPIDICT_CHECK(map.find(key).get().empty());
    }
    map.flush();
    MPIDICT_CHECK(map.take(to, keys[0]).get() == std::vector<std::uint64_t>{keys[0]});
    MPIDICT_CHECK(map.erase(to, keys[1]).get() == 1);
    MPIDICT_CHECK(!map.insert_if_absent(to, keys[2], 0).get());  // present on the target
    map.async_erase(to, keys[3]);
    map.flush();
    MPIDICT_CHECK(map.find(to, keys[0]).get().empty());
    MPIDICT_CHECK(map.find(to, keys[1]).get().empty());
    MPIDICT_CHECK(map.find(to, keys[2]).get() == std::vector<std::uint64_t>{keys[2]});
    MPIDICT_CHECK(map.find(to, keys[3]).get().empty());
    MPIDICT_CHECK(map.find(to, keys[4]).get() == std::vector<std::uint64_t>{keys[4]});
    map.flush();
    MPIDICT_CHECK(map.local_size() == 40 - 3);  // one origin placed 40 keys here, 3 removed
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(60), "mpi_hash_map_placement");
        hash_placement(rank, size);
        cyclic_placement(rank, size);
        explicit_target(rank, size);
    });
}
