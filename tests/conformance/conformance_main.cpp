// main() of the hash_map conformance executables: runs the configuration named
// by the first argument (see hash_map_conformance.cpp) under MPI.

#include <cstdio>
#include <string>

#include "../common/test_support.hpp"

namespace mpidict::conformance {
bool run_hash_map_case(const std::string& name);
}

int main(int argc, char** argv) {
    const std::string name = argc > 1 ? argv[1] : "default";
    return mpidict::testing::run_mpi_test(argc, argv, [&](int rank, int) {
        if (!mpidict::conformance::run_hash_map_case(name)) {
            if (rank == 0)
                std::fprintf(stderr, "unknown conformance configuration '%s'\n", name.c_str());
            MPIDICT_CHECK_MSG(false, "unknown configuration " + name);
        }
    });
}
