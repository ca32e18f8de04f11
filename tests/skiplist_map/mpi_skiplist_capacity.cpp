// skiplist_map's capacity (issue 43; docs/skiplist_map.md "Capacity and
// list_full"): the slot pool grows on demand with no hard limit by default;
// node_slots_per_rank is an optional hard limit and memory_limit_per_rank
// bounds a rank's resident memory.  Each limit is hit here (small limits,
// small sizes, through insert_many and single inserts): the refusal is
// list_full, last_refusal() names the limit that was hit with its value, and
// every acknowledged key is still found with its value.  1-4 ranks.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <unistd.h>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using mpidict::testing::sum_over_ranks;

std::int64_t resident_now() {
    FILE* file = std::fopen("/proc/self/statm", "r");
    unsigned long long size = 0, resident = 0;
    if (file) {
        if (std::fscanf(file, "%llu %llu", &size, &resident) != 2)
            resident = 0;
        std::fclose(file);
    }
    return static_cast<std::int64_t>(resident) * ::sysconf(_SC_PAGESIZE);
}

std::string value_of(std::int64_t key, std::size_t bytes) {
    std::string value(bytes, static_cast<char>('a' + key % 26));
    value.replace(0, std::min<std::size_t>(bytes, 20), std::to_string(key).substr(0, bytes));
    return value;
}

// Every key this rank was told is stored: found, with its value; every
// refused one absent (keys are distinct across ranks and rounds).
template <class Map>
void check_kept(Map& list, const std::vector<std::int64_t>& kept, const std::vector<std::int64_t>& refused,
                std::size_t value_bytes, const char* what) {
    std::size_t lost = 0, wrong = 0, present = 0;
    list.find_many(std::span<const std::int64_t>(kept), [&](std::size_t index, const std::optional<std::string>& found) {
        if (!found)
            ++lost;
        else if (*found != value_of(kept[index], value_bytes))
            ++wrong;
    });
    list.find_many(std::span<const std::int64_t>(refused),
                   [&](std::size_t, const std::optional<std::string>& found) { present += found.has_value(); });
    list.flush();
    MPIDICT_CHECK_MSG(lost == 0 && wrong == 0, std::string(what) + ": " + std::to_string(lost) + " of " +
                                                   std::to_string(kept.size()) + " acknowledged keys lost, " +
                                                   std::to_string(wrong) + " with a wrong value");
    MPIDICT_CHECK_MSG(present == 0, std::string(what) + ": " + std::to_string(present) + " refused keys are present");
    const auto total = static_cast<std::int64_t>(list.global_size());
    MPIDICT_CHECK_MSG(total == sum_over_ranks(static_cast<std::int64_t>(kept.size())),
                      std::string(what) + ": the list holds " + std::to_string(total) + " keys");
}

// Inserts rounds of `per_round` fresh keys with insert_many until some rank
// sees a refusal (or `rounds` pass); returns (kept, refused) of this rank.
template <class Map>
std::pair<std::vector<std::int64_t>, std::vector<std::int64_t>> fill(Map& list, int rank, std::size_t per_round,
                                                                     int rounds, std::size_t value_bytes) {
    std::vector<std::int64_t> kept, refused;
    for (int round = 0; round < rounds; ++round) {
        std::vector<std::int64_t> keys;
        std::vector<std::string> values;
        for (std::size_t i = 0; i < per_round; ++i) {
            // Spread over the key space (not ascending), distinct per rank and round.
            const std::int64_t key = static_cast<std::int64_t>(((round * per_round + i) * 7919) % 1000003) * 16 + rank;
            keys.push_back(key);
            values.push_back(value_of(key, value_bytes));
        }
        const mpidict::insert_many_result result = list.insert_many(keys, values);
        std::vector<bool> no(keys.size(), false);
        for (const std::size_t index : result.refused_indexes)
            no.at(index) = true;
        for (std::size_t i = 0; i < keys.size(); ++i)
            (no[i] ? refused : kept).push_back(keys[i]);
        MPIDICT_CHECK(result.stored + result.refused == keys.size());
        list.flush();
        if (sum_over_ranks(static_cast<std::int64_t>(refused.size())) > 0)
            break;
    }
    return {kept, refused};
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(150), "mpi_skiplist_capacity");
        {
            const mpidict::skiplist_map_config defaults;
            MPIDICT_CHECK_MSG(defaults.node_slots_per_rank == 0, "no hard node limit by default");
            MPIDICT_CHECK_MSG(defaults.memory_limit_per_rank == 0, "an automatic memory limit by default");
        }

        // 1. No hard limit: the pool grows to hundreds of nodes per rank (G = 2).
        {
            mpidict::skiplist_map_config config;
            config.granularity = 2;
            mpidict::skiplist_map<std::int64_t, std::string> list(MPI_COMM_WORLD, config);
            auto [kept, refused] = fill(list, rank, 1500, 1, 8);
            MPIDICT_CHECK_MSG(refused.empty() && kept.size() == 1500, "no hard limit: nothing refused");
            check_kept(list, kept, refused, 8, "no hard limit");
            const auto nodes = sum_over_ranks(static_cast<std::int64_t>(list.local_statistics().nodes));
            MPIDICT_CHECK_MSG(nodes >= 1500 * size / 2, std::to_string(nodes) + " nodes hold " +
                                                              std::to_string(1500 * size) + " keys at G = 2");
            list.destroy();
        }

        // 2. The hard limit node_slots_per_rank, through insert_many and single inserts.
        {
            mpidict::skiplist_map_config config;
            config.granularity = 4;
            config.node_slots_per_rank = 5;
            mpidict::skiplist_map<std::int64_t, std::string> list(MPI_COMM_WORLD, config);
            auto [kept, refused] = fill(list, rank, 200, 1, 8);
            MPIDICT_CHECK_MSG(sum_over_ranks(static_cast<std::int64_t>(refused.size())) > 0,
                              "200 keys per rank into room for about " + std::to_string(5 * 4 * size) +
                                  " were refused in part");
            if (!refused.empty()) {
                const std::string message = list.last_refusal();
                MPIDICT_CHECK_MSG(message.find("list_full") != std::string::npos &&
                                      message.find("hard limit node_slots_per_rank = 5") != std::string::npos,
                                  "the message names the hard limit: " + message);
            }
            // Single inserts from every rank, also refused with the message.
            std::size_t single_refused = 0;
            for (std::int64_t i = 0; i < 20; ++i) {
                const std::int64_t key = (2000000 + i) * 16 + rank;
                const auto result = list.insert(key, value_of(key, 8)).get();
                (result.stored ? kept : refused).push_back(key);
                single_refused += !result.stored;
            }
            if (single_refused > 0)
                MPIDICT_CHECK_MSG(list.last_refusal().find("node_slots_per_rank = 5") != std::string::npos,
                                  "single insert's refusal: " + list.last_refusal());
            list.flush();
            check_kept(list, kept, refused, 8, "node_slots_per_rank = 5");
            list.destroy();
        }

        // 3. The memory limit: resident memory now + 24 MiB (the largest over
        //    the ranks), no hard limit, 1 KiB values.
        {
            std::int64_t limit = resident_now() + (24 << 20);
            MPI_Allreduce(MPI_IN_PLACE, &limit, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
            mpidict::skiplist_map_config config;
            config.memory_limit_per_rank = static_cast<std::size_t>(limit);
            mpidict::skiplist_map<std::int64_t, std::string> list(MPI_COMM_WORLD, config);
            const std::size_t value_bytes = 1000;
            auto [kept, refused] = fill(list, rank, 1000, 400, value_bytes);
            const auto all_refused = sum_over_ranks(static_cast<std::int64_t>(refused.size()));
            MPIDICT_CHECK_MSG(all_refused > 0, "the memory limit refused inserts (" +
                                                   std::to_string(sum_over_ranks(static_cast<std::int64_t>(kept.size()))) +
                                                   " stored)");
            if (!refused.empty()) {
                const std::string message = list.last_refusal();
                MPIDICT_CHECK_MSG(message.find("list_full") != std::string::npos &&
                                      message.find("memory_limit_per_rank = " + std::to_string(limit) + " bytes") !=
                                          std::string::npos &&
                                      message.find("reached its memory limit") != std::string::npos,
                                  "the message names the memory limit: " + message);
                if (rank == 0 || size == 1)
                    std::printf("rank %d: %zu stored, %zu refused: %s\n", rank, kept.size(), refused.size(),
                                message.c_str());
            }
            check_kept(list, kept, refused, value_bytes, "memory_limit_per_rank");
            list.destroy();
        }

        // 4. A memory limit below 1 MiB is refused, naming it.
        {
            mpidict::skiplist_map_config config;
            config.memory_limit_per_rank = 1000;
            MPIDICT_EXPECT_ERROR(mpidict::invalid_argument_error,
                                 (mpidict::skiplist_map<std::int64_t, std::int64_t>(MPI_COMM_WORLD, config)),
                                 "memory_limit_per_rank = 1000");
        }
    });
}
