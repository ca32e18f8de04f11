// The standalone matrix_scatter program (also `mpidict scatter`):
//   mpiexec -n 4 matrix_scatter [options] FILE.mtx
// See matrix_scatter.hpp and docs/matrix_scatter.md.

#include "mpidict/support/program.hpp"
#include "matrix_scatter/matrix_scatter.hpp"

int main(int argc, char** argv) {
    return mpidict::support::mpi_main(argc, argv, "matrix_scatter", mpidict::apps::run_matrix_scatter);
}
