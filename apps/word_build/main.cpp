// The standalone word_build program (also `mpidict words`):
//   mpiexec -n 4 word_build [options] FILE
// See word_build.hpp and docs/linear_hash_map.md.

#include <cstdio>
#include <exception>

#include <mpi.h>

#include "word_build/word_build.hpp"

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int exit_code = 1;
    try {
        exit_code = mpidict::apps::word_build::word_build_main(argc, argv, MPI_COMM_WORLD);
    } catch (const std::exception& problem) {
        // Anything not foreseen may have left other ranks inside a collective.
        std::fprintf(stderr, "word_build: error on rank %d: %s\n", rank, problem.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Finalize();
    return exit_code;
}
