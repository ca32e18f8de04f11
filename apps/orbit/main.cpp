// The standalone orbit program (also `mpidict orbit`):
//   mpiexec -n 4 orbit [options] FILE
// See orbit.hpp and docs/orbit.md.

#include "mpidict/support/program.hpp"
#include "orbit/orbit.hpp"

int main(int argc, char** argv) {
    return mpidict::support::mpi_main(argc, argv, "orbit", mpidict::apps::orbit::run_orbit);
}
