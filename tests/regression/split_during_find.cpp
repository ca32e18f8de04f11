// Regression: finds for keys whose LH bucket is being shipped.  A split starts
// while the owner handles an insert; the finds that follow in the same message
// and the next ones meet buckets already shipped (forwarded to the new server),
// a bucket partly shipped (answered here only if the key is still here) and
// buckets not shipped yet (answered here).  Every find must return the value;
// a miss here means a key was looked up in the wrong place during the split.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/linear_hash_map.hpp"

namespace {

std::string key_name(int key) { return std::string("k") + std::to_string(1000 + key); }

std::string value_of(int key, std::size_t bytes) {
    std::string value(bytes, '\0');
    std::uint64_t state = 0x9e3779b97f4a7c15ULL * static_cast<std::uint64_t>(key + 1);
    for (auto& c : value) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        c = static_cast<char>(state);
    }
    return value;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "split_during_find");
        constexpr int before = 140;       // inserted before the split
        constexpr int during = 20;        // the first of these starts it
        // 1000-byte values: every bucket is larger than a message (partly shipped
        // buckets); 300-byte values: several whole buckets per message.
        const std::pair<std::size_t, std::size_t> runs[] = {{1, 1000}, {3, 1000}, {1, 300}, {2, 300}};
        for (const auto& [window, value_bytes] : runs) {
            mpidict::linear_hash_map_config config;
            config.runtime.buffer_bytes = 2048;   // one shipment message per one or two entries
            config.server_ranks = std::vector<int>{size - 1, size > 1 ? size - 2 : 0};
            if (size == 1)
                config.server_ranks = std::vector<int>{0};
            config.client_ranks = std::vector<int>{0};
            config.initial_servers = 1;
            config.max_value_bytes = 1500;
            config.max_key_bytes = 32;
            config.ship_window = window;
            config.server_capacity_bytes = 1 << 20;
            // The split starts with the insert of key `before`.
            config.split_load = (before * (value_bytes + 4) + value_bytes / 2) / double(config.server_capacity_bytes);
            mpidict::linear_hash_map<std::string, std::string> map(MPI_COMM_WORLD, config);
            if (rank == 0) {
                std::vector<mpidict::request<mpidict::replace_result>> inserts;
                for (int key = 0; key < before; ++key)
                    inserts.push_back(map.insert(key_name(key), value_of(key, value_bytes)));
                for (auto& r : inserts)
                    MPIDICT_CHECK(r.get().stored);
                inserts.clear();
                // The split starts on the first of these; the finds race with it.
                for (int key = before; key < before + during; ++key)
                    inserts.push_back(map.insert(key_name(key), value_of(key, value_bytes)));
                std::vector<mpidict::request<std::optional<std::string>>> finds;
                for (int key = 0; key < before + during; ++key)
                    finds.push_back(map.find(key_name(key)));
                for (auto& r : inserts)
                    MPIDICT_CHECK(r.get().stored);
                for (int key = 0; key < before + during; ++key) {
                    const auto got = finds[static_cast<std::size_t>(key)].get();
                    MPIDICT_CHECK_MSG(got && *got == value_of(key, value_bytes), key_name(key));
                }
            }
            const auto stats = map.gather_statistics();
            MPIDICT_CHECK(stats.max_forwards() <= 2);
            if (size > 1) {
                MPIDICT_CHECK(stats.splits.size() == 1);
                // Some finds met keys that had already left: the race happened.
                MPIDICT_CHECK_MSG(stats.forwards[1][1] > 0,
                                  "no find was forwarded during the split (window " + std::to_string(window) + ", values of " +
                                      std::to_string(value_bytes) + " bytes)");
                if (rank == 0)
                    std::printf("window %zu, %zu-byte values: finds answered after 0/1/2 forwards: %llu/%llu/%llu, deferred %llu, "
                                "shipped %llu entries in %llu messages\n",
                                window, value_bytes, static_cast<unsigned long long>(stats.forwards[1][0]),
                                static_cast<unsigned long long>(stats.forwards[1][1]),
                                static_cast<unsigned long long>(stats.forwards[1][2]),
                                static_cast<unsigned long long>(stats.deferred),
                                static_cast<unsigned long long>(stats.splits[0].entries_shipped),
                                static_cast<unsigned long long>(stats.splits[0].messages));
            }
        }
    });
}
