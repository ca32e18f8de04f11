// The standalone matrix_scatter program (also `mpidict scatter`):
//   mpiexec -n 4 matrix_scatter [options] FILE.mtx
// See matrix_scatter.hpp and docs/matrix_scatter.md.

#include <cstdio>
#include <exception>

#include <mpi.h>

#include "matrix_scatter/matrix_scatter.hpp"

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int exit_code = 1;
    try {
        exit_code = mpidict::apps::run_matrix_scatter(argc, argv, MPI_COMM_WORLD);
    } catch (const std::exception& problem) {
        // Anything not foreseen may have left other ranks inside a collective.
        std::fprintf(stderr, "matrix_scatter: error on rank %d: %s\n", rank, problem.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
        return 1;
    }
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Finalize();
    return exit_code;
}
