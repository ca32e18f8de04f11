// Regression (issue 18, item 8): rank 0 calling global_size() while the other
// ranks called flush() returned numbers like 188408838135684 with exit 0 (the
// two collectives' reductions were mixed).  Every flush() and sum() now carries a
// tag (the call's kind and sequence number) in a reduction of the same length,
// so the mismatch raises collective_mismatch_error on every rank, and the ranks
// stay in step: the next matching collectives work.

#include <cstdint>
#include <string>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

template <class Map>
void mismatch(Map& map, int rank, int size, const char* what) {
    bool caught = false;
    std::string message;
    try {
        if (rank == 0)
            (void)map.global_size();
        else
            map.flush();
    } catch (const mpidict::collective_mismatch_error& problem) {
        caught = true;
        message = problem.what();
    }
    MPIDICT_CHECK_MSG(caught == (size > 1), std::string(what) + ": rank " + std::to_string(rank) +
                                                (caught ? " caught: " + message : " caught nothing"));
    if (caught)
        MPIDICT_CHECK_MSG(message.find("collective call mismatch") != std::string::npos, message);
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "collective_mismatch_garbage");
        {
            mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD);
            map.async_insert(static_cast<std::uint64_t>(rank), 7);
            map.flush();
            mismatch(map, rank, size, "hash_map");
            // In step again: matching collectives give the right numbers.
            map.flush();
            MPIDICT_CHECK(map.global_size() == static_cast<std::size_t>(size));
            // One flush too many on the last rank, against global_value_count elsewhere.
            bool caught = false;
            try {
                if (rank == size - 1)
                    map.flush();
                else
                    (void)map.global_value_count();
            } catch (const mpidict::collective_mismatch_error&) {
                caught = true;
            }
            MPIDICT_CHECK(caught == (size > 1));
            MPIDICT_CHECK(map.global_value_count() == static_cast<std::size_t>(size));
        }
        {
            mpidict::skiplist_map<std::uint64_t, std::uint64_t> list(MPI_COMM_WORLD);
            list.async_insert(static_cast<std::uint64_t>(rank), 1);
            list.flush();
            mismatch(list, rank, size, "skiplist_map");
            list.flush();
            MPIDICT_CHECK(list.global_size() == static_cast<std::size_t>(size));
        }
    });
}
