// map_outlives_finalize: a container destroyed after MPI_Finalize (a map in
// main's scope with MPI_Finalize called before the scope ends) ended with
// MPICH's "Attempting to use an MPI routine (internal_Test) ... after finalizing"
// and UCX warnings about receives never returned, naming nothing of ours.  Now
// MPI_Finalize tells every live engine (an attribute on MPI_COMM_SELF): each says
// what happened and what to do, cancels its receives, and its container's
// destructor makes no MPI call.  CTest checks the message, the absence of
// MPI's and UCX's complaints, and exit code 0 (tests/regression/CMakeLists.txt).
//
// No run_mpi_test here: the point is a main() that gets the order wrong.

#include <cstdint>
#include <cstdio>

#include <mpi.h>

#include "mpidict/hash_map.hpp"
#include "mpidict/skiplist_map.hpp"

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mpidict::hash_map<std::uint64_t, std::uint64_t> hashed(MPI_COMM_WORLD);
    mpidict::skiplist_map<std::uint64_t, std::uint64_t> ordered(MPI_COMM_WORLD);
    // One container at a time: a rank serves a container only inside its calls.
    for (std::uint64_t i = 0; i < 100; ++i)
        hashed.async_insert(i * 4 + static_cast<std::uint64_t>(rank), i);
    hashed.flush();
    bool found = hashed.find(static_cast<std::uint64_t>(rank)).get().size() == 1;
    hashed.flush();
    for (std::uint64_t i = 0; i < 100; ++i)
        ordered.async_insert(i * 4 + static_cast<std::uint64_t>(rank), i);
    ordered.flush();
    found = ordered.find(static_cast<std::uint64_t>(rank)).get().has_value() && found;
    ordered.flush();
    if (rank == 0)
        std::printf("before MPI_Finalize: %s\n", found ? "found" : "MISSING");
    MPI_Finalize();  // wrong: both maps are still alive
    return found ? 0 : 1;
}
