// The standalone word_build program (also `mpidict words`):
//   mpiexec -n 4 word_build [options] FILE
// See word_build.hpp and docs/linear_hash_map.md.

#include "mpidict/support/program.hpp"
#include "word_build/word_build.hpp"

int main(int argc, char** argv) {
    return mpidict::support::mpi_main(argc, argv, "word_build", mpidict::apps::word_build::word_build_main);
}
