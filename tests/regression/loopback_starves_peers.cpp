// Regression: a rank whose requests all complete through its own loopback never
// polled MPI, so other ranks' requests to it waited until it next sent a
// message off-rank (in linear_hash_map: a client that is also the only server
// delayed every other client's first insert until the first split, 0.4-0.7 s).
// Rank 1 loops on requests to itself until rank 0's insert has arrived in its
// shard; with the bug the loop runs to its cap.

#include <span>
#include <string>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "loopback_starves_peers");
        constexpr int cap = 200000;  // a few hundred ms of self-requests
        {
            mpidict::hash_map<int, int> map(MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            const int server = size - 1;
            if (rank == server && size > 1) {
                int loops = 0;
                while (!map.local_contains(-1) && loops < cap) {
                    map.insert(mpidict::target_rank{server}, loops, std::span<const int>(&loops, 1)).get();
                    ++loops;
                }
                MPIDICT_CHECK_MSG(loops < cap, "rank 0's insert never arrived while this rank served itself");
            } else if (rank == 0 && size > 1) {
                const int value = 7;
                MPIDICT_CHECK(map.insert(mpidict::target_rank{server}, -1, std::span<const int>(&value, 1)).get().stored == 1);
            }
            map.flush();
        }
        {
            // The same through linear_hash_map: rank 0 is the only server and a
            // client; the others' first insert must not wait for rank 0's loop.
            mpidict::linear_hash_map_config config;
            config.server_ranks = std::vector<int>{0};
            mpidict::linear_hash_map<std::string, std::string> map(MPI_COMM_WORLD, config);
            MPI_Barrier(MPI_COMM_WORLD);
            if (rank == 0 && size > 1) {
                int loops = 0;
                while (map.local_size() < static_cast<std::size_t>(size - 1) + static_cast<std::size_t>(loops) &&
                       loops < cap) {
                    map.insert("self" + std::to_string(loops), "v").get();
                    ++loops;
                }
                MPIDICT_CHECK_MSG(loops < cap, "the other clients' inserts never arrived while rank 0 served itself");
            } else if (size > 1) {
                MPIDICT_CHECK(map.insert("peer" + std::to_string(rank), "v").get().stored);
            }
            map.flush();
        }
    });
}
