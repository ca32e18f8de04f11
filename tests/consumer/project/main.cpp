// Compiles and links against an installed mpidict; run with 2 ranks.
#include <mpidict/c/mpidict.h>
#include <mpidict/hash_map.hpp>

#include <mpi.h>

#include <cstdint>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD);
    map.destroy();
  }
  MPI_Finalize();
  return 0;
}
