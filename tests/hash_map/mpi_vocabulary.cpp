// One vocabulary (issue 16, item 5): every container offers num_ranks(),
// flush(), local_for_each(f) (this rank's part, no communication) and the
// collective for_all(f) (flush, then local_for_each on every rank), and
// for_all visits every entry exactly once over the job, by its owner.  Each
// rank inserts its own keys with the fire-and-forget form and calls for_all
// at once, without a flush of its own: for_all must flush first, or entries
// still in flight would be missed.  The collectives gather, gather_all,
// gather_topk and reduce give the same results in hash_map, linear_hash_map and
// skiplist_map.

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <utility>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/rma_hash_set.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

constexpr std::uint64_t keys_per_rank = 500;

std::uint64_t key_of(int rank, std::uint64_t index) { return static_cast<std::uint64_t>(rank) * 100000 + index; }

// Sums over ranks: the count of entries visited and the sum of their keys and values.
struct tally {
    std::int64_t entries = 0;
    std::int64_t key_sum = 0;
    std::int64_t value_sum = 0;
};

tally reduce(const tally& mine) {
    std::array<std::int64_t, 3> in{mine.entries, mine.key_sum, mine.value_sum}, out{};
    MPI_Allreduce(in.data(), out.data(), 3, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return {out[0], out[1], out[2]};
}

void expect_everything(const tally& seen, int size, const char* container) {
    const tally all = reduce(seen);
    std::int64_t keys = 0, values = 0;
    for (int rank = 0; rank < size; ++rank)
        for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
            keys += static_cast<std::int64_t>(key_of(rank, index));
            values += static_cast<std::int64_t>(2 * key_of(rank, index) + 1);
        }
    const bool ok = all.entries == static_cast<std::int64_t>(keys_per_rank) * size && all.key_sum == keys &&
                    all.value_sum == values;
    if (!ok)
        std::fprintf(stderr, "%s: for_all saw %lld entries (expected %lld)\n", container,
                     static_cast<long long>(all.entries), static_cast<long long>(keys_per_rank) * size);
    MPIDICT_CHECK_MSG(ok, container);
}

// gather, gather_all, gather_topk and reduce: the same calls and results in
// every message-based container holding key_of(r, i) -> 2 * key + 1.
template <class Map>
void check_collectives(Map& map, int rank, int size, const char* container) {
    using pair = std::pair<std::uint64_t, std::uint64_t>;
    const std::size_t total = keys_per_rank * static_cast<std::size_t>(size);
    std::vector<pair> all = map.gather_all();
    std::sort(all.begin(), all.end());
    bool ok = all.size() == total;
    for (std::size_t i = 0; ok && i < all.size(); ++i)
        ok = all[i].first == key_of(static_cast<int>(i / keys_per_rank), i % keys_per_rank) &&
             all[i].second == 2 * all[i].first + 1;
    MPIDICT_CHECK_MSG(ok, std::string(container) + " gather_all");
    const std::vector<pair> at_root = map.gather(size - 1);
    MPIDICT_CHECK_MSG(at_root.size() == (rank == size - 1 ? total : 0), std::string(container) + " gather");
    const std::vector<pair> top = map.gather_topk(3, [](const pair& a, const pair& b) { return a.second > b.second; });
    const std::uint64_t last = key_of(size - 1, keys_per_rank - 1);
    MPIDICT_CHECK_MSG(top == (std::vector<pair>{{last, 2 * last + 1}, {last - 1, 2 * last - 1}, {last - 2, 2 * last - 3}}),
                      std::string(container) + " gather_topk");
    std::uint64_t sum = 0;
    for (const pair& entry : all)
        sum += entry.second;
    MPIDICT_CHECK_MSG(map.reduce(std::plus<>()) == sum, std::string(container) + " reduce");
    bool refused = false;
    try {
        (void)map.gather(size);
    } catch (const mpidict::invalid_argument_error&) {
        refused = true;  // on every rank: the same bad root everywhere
    }
    MPIDICT_CHECK_MSG(refused, std::string(container) + " gather(bad root)");
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(120), "mpi_vocabulary");

        {
            mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD);
            MPIDICT_CHECK(map.num_ranks() == size);
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                map.async_insert(key_of(rank, index), 2 * key_of(rank, index) + 1);
            tally seen;
            map.for_all([&](const std::uint64_t& key, const auto& values) {
                MPIDICT_CHECK(map.owner(key) == rank);
                for (std::uint64_t value : values) {
                    ++seen.entries;
                    seen.key_sum += static_cast<std::int64_t>(key);
                    seen.value_sum += static_cast<std::int64_t>(value);
                }
            });
            expect_everything(seen, size, "hash_map");
            check_collectives(map, rank, size, "hash_map");
            map.destroy();
        }
        {
            mpidict::linear_hash_map_config config;
            config.split_load = 0.5;
            config.server_capacity_bytes = 16 << 10;  // splits happen while the keys arrive
            mpidict::linear_hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
            MPIDICT_CHECK(map.num_ranks() == size);
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                map.async_insert(key_of(rank, index), 2 * key_of(rank, index) + 1);
            tally seen;
            map.for_all([&](const std::uint64_t& key, const std::uint64_t& value) {
                ++seen.entries;
                seen.key_sum += static_cast<std::int64_t>(key);
                seen.value_sum += static_cast<std::int64_t>(value);
            });
            MPIDICT_CHECK(map.async_rejected() == 0);
            expect_everything(seen, size, "linear_hash_map");
            MPIDICT_CHECK(map.global_size() == keys_per_rank * static_cast<std::uint64_t>(size));
            check_collectives(map, rank, size, "linear_hash_map");
            map.destroy();
        }
        {
            mpidict::skiplist_map<std::uint64_t, std::uint64_t> list(MPI_COMM_WORLD);
            MPIDICT_CHECK(list.num_ranks() == size);
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                list.async_insert(key_of(rank, index), 2 * key_of(rank, index) + 1);
            tally seen;
            list.for_all([&](const std::uint64_t& key, const std::uint64_t& value) {
                ++seen.entries;
                seen.key_sum += static_cast<std::int64_t>(key);
                seen.value_sum += static_cast<std::int64_t>(value);
            });
            expect_everything(seen, size, "skiplist_map");
            std::size_t local = 0;
            list.local_for_each([&](const std::uint64_t&, const std::uint64_t&) { ++local; });
            MPIDICT_CHECK(local == list.local_size());
            check_collectives(list, rank, size, "skiplist_map");
            list.destroy();
        }
        {
            struct object {
                std::uint64_t key;
                std::uint64_t value;
            };
            mpidict::rma_hash_set_config config;
            config.slots_per_rank = 4 * keys_per_rank;
            mpidict::rma_hash_set<object> set(MPI_COMM_WORLD, config);
            MPIDICT_CHECK(set.num_ranks() == size);
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                MPIDICT_CHECK(set.insert_if_absent(object{key_of(rank, index), 2 * key_of(rank, index) + 1}).get());
            tally seen;
            set.for_all([&](const object& stored) {
                ++seen.entries;
                seen.key_sum += static_cast<std::int64_t>(stored.key);
                seen.value_sum += static_cast<std::int64_t>(stored.value);
            });
            expect_everything(seen, size, "rma_hash_set");
            set.flush();
            set.destroy();
        }
    });
}
