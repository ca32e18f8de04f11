// Checks once that the launcher really starts the number of ranks CTest asked for
// (mpi_hash_map_ranks.np4 runs 4 distinct processes), and that a map built over
// them reaches every one.

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(60), "mpi_hash_map_ranks");

        // CTest always sets MPIDICT_TEST_RANKS; run_mpi_test aborts on a mismatch,
        // this makes the expectation explicit (and fails if the variable is missing).
        const char* expected = std::getenv("MPIDICT_TEST_RANKS");
        MPIDICT_CHECK(expected != nullptr);
        if (expected)
            MPIDICT_CHECK(std::atoi(expected) == size);

        // Every rank is a distinct process.
        const long pid = static_cast<long>(getpid());
        std::vector<long> pids(static_cast<std::size_t>(size));
        MPI_Allgather(&pid, 1, MPI_LONG, pids.data(), 1, MPI_LONG, MPI_COMM_WORLD);
        MPIDICT_CHECK(std::set<long>(pids.begin(), pids.end()).size() == static_cast<std::size_t>(size));
        MPIDICT_CHECK(mpidict::testing::sum_over_ranks(rank) == std::int64_t{size} * (size - 1) / 2);

        // A map over the world: every rank appends its rank to one key; all see all.
        mpidict::hash_map<std::uint64_t, std::int32_t> map(MPI_COMM_WORLD);
        MPIDICT_CHECK(map.num_ranks() == size);
        MPIDICT_CHECK(map.rank() == rank);
        map.async_insert(7, rank);
        map.flush();
        std::vector<std::int32_t> found = map.find(7).get();
        std::sort(found.begin(), found.end());
        std::vector<std::int32_t> all(static_cast<std::size_t>(size));
        for (int r = 0; r < size; ++r)
            all[static_cast<std::size_t>(r)] = r;
        MPIDICT_CHECK(found == all);
        map.destroy();
    });
}
