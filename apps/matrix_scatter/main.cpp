// The standalone matrix_scatter program (also `mpidict scatter`):
//   mpiexec -n 4 matrix_scatter [options] FILE.mtx
// See matrix_scatter.hpp and docs/matrix_scatter.md.

#include "common/app_support.hpp"
#include "matrix_scatter/matrix_scatter.hpp"

int main(int argc, char** argv) {
    return mpidict::apps::app_main(argc, argv, "matrix_scatter", mpidict::apps::run_matrix_scatter);
}
