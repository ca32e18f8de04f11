#pragma once
// Shared by the MPI tests: every rank checks its own results, a failure on one
// rank aborts the whole job (no rank is left waiting), and the verdict is reduced.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <mpi.h>

namespace mpidict::testing {

inline int& failure_count() {
    static int failures = 0;
    return failures;
}

inline int world_rank() {
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

// Records a failed check; the test keeps going so one run reports every problem.
inline void check(bool condition, const char* expression, const char* file, int line, const std::string& note = {}) {
    if (!condition) {
        ++failure_count();
        std::fprintf(stderr, "[rank %d] CHECK FAILED %s:%d: %s %s\n", world_rank(), file, line, expression,
                     note.c_str());
        std::fflush(stderr);
    }
}

// Runs `body` on every rank under MPI; checks the launched rank count against
// MPIDICT_TEST_RANKS; aborts the job if any rank throws; returns the exit code.
template <class Body>
int run_mpi_test(int argc, char** argv, Body&& body) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
    int rank = 0;
    int size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (const char* expected = std::getenv("MPIDICT_TEST_RANKS")) {
        if (std::atoi(expected) != size) {
            std::fprintf(stderr, "[rank %d] launched with %d ranks but the test expects %s\n", rank, size, expected);
            MPI_Abort(MPI_COMM_WORLD, 3);
        }
    }
    try {
        body(rank, size);
    } catch (const std::exception& problem) {
        std::fprintf(stderr, "[rank %d] uncaught exception: %s\n", rank, problem.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int local = failure_count();
    int total = 0;
    MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("%s: %d failed checks over %d ranks\n", total == 0 ? "PASS" : "FAIL", total, size);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}

}  // namespace mpidict::testing

#define MPIDICT_CHECK(expression) ::mpidict::testing::check((expression), #expression, __FILE__, __LINE__)
#define MPIDICT_CHECK_MSG(expression, note) \
    ::mpidict::testing::check((expression), #expression, __FILE__, __LINE__, (note))
