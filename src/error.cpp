// See error.hpp: what MPIDICT_ASSERT calls when an internal invariant fails.

#include "mpidict/error.hpp"

#include <cstdio>
#include <cstdlib>

#include <mpi.h>

namespace mpidict::detail {

void assertion_failed(const char* expression, const char* file, int line, const char* message) {
    std::fprintf(stderr, "mpidict: internal error at %s:%d: %s (%s)\n", file, line, message, expression);
    std::fflush(stderr);
    int initialised = 0;
    MPI_Initialized(&initialised);
    int finalised = 0;
    MPI_Finalized(&finalised);
    if (initialised && !finalised)
        MPI_Abort(MPI_COMM_WORLD, 70);
    std::abort();
}

}  // namespace mpidict::detail
