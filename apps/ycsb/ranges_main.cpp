// The skiplist_ranges program: seed 004's range experiments (Figures 9-12).
//   mpiexec -n 2 skiplist_ranges --experiment size --size 1000
// See range_experiments.hpp and docs/ycsb.md.

#include "mpidict/support/program.hpp"
#include "ycsb/range_experiments.hpp"

int main(int argc, char** argv) {
    return mpidict::support::mpi_main(argc, argv, "skiplist_ranges", mpidict::apps::ycsb::range_experiment_main);
}
