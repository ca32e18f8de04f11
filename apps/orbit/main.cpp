// The standalone orbit program (also `mpidict orbit`):
//   mpiexec -n 4 orbit [options] FILE
// See orbit.hpp and docs/orbit.md.

#include "common/app_support.hpp"
#include "orbit/orbit.hpp"

int main(int argc, char** argv) {
    return mpidict::apps::app_main(argc, argv, "orbit", mpidict::apps::orbit::run_orbit);
}
