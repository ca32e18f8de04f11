// The standalone ycsb program (also `mpidict ycsb`):
//   mpiexec -n 2 ycsb --workload data/ycsb/workloada [-p key=value]... [options]
// See ycsb.hpp and docs/ycsb.md.

#include "mpidict/support/program.hpp"
#include "ycsb/ycsb.hpp"

int main(int argc, char** argv) { return mpidict::support::mpi_main(argc, argv, "ycsb", mpidict::apps::ycsb::ycsb_main); }
