#pragma once
// Shared by the MPI tests: every rank checks its own results, a failure on one
// rank aborts the whole job (no rank is left waiting), and the verdict is reduced.

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include <mpi.h>

#include "mpidict/support/program.hpp"

namespace mpidict::testing {

inline int& failure_count() {
    static int failures = 0;
    return failures;
}

// A count from environment variable `name` (test-only settings such as
// MPIDICT_TEST_RANKS): unset gives `fallback`; anything but decimal digits for
// a number in [1, limit] throws, naming the variable and the valid range.
inline unsigned long long env_count(const char* name, unsigned long long fallback,
                                    unsigned long long limit = 1'000'000'000ULL) {
    const char* text = std::getenv(name);
    if (!text)
        return fallback;
    unsigned long long value = 0;
    bool valid = *text != '\0';
    for (const char* at = text; *at && valid; ++at) {
        valid = *at >= '0' && *at <= '9' && value <= (limit - static_cast<unsigned long long>(*at - '0')) / 10;
        value = value * 10 + static_cast<unsigned long long>(*at - '0');
    }
    if (!valid || value < 1 || value > limit)
        throw std::invalid_argument(std::string(name) + " = '" + text + "' is not a whole number from 1 to " +
                                    std::to_string(limit));
    return value;
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

// Runs `body` on every rank under MPI (support::mpi_main: a rank that throws
// aborts the job, so none is left waiting); checks the launched rank count
// against MPIDICT_TEST_RANKS; returns 0 if no rank recorded a failed check.
template <class Body>
int run_mpi_test(int argc, char** argv, Body&& body) {
    const std::string name = support::program_name(argc, argv, "test");
    return support::mpi_main(
        argc, argv, name,
        [&](int, char**, MPI_Comm comm) {
            int rank = 0;
            int size = 0;
            MPI_Comm_rank(comm, &rank);
            MPI_Comm_size(comm, &size);
            if (const auto expected = env_count("MPIDICT_TEST_RANKS", 0, 1 << 20);
                expected != 0 && expected != static_cast<unsigned long long>(size))
                throw std::runtime_error("launched with " + std::to_string(size) + " ranks but the test expects " +
                                         std::to_string(expected));
            body(rank, size);
            int local = failure_count();
            int total = 0;
            MPI_Allreduce(&local, &total, 1, MPI_INT, MPI_SUM, comm);
            if (rank == 0)
                std::printf("%s: %d failed checks over %d ranks\n", total == 0 ? "PASS" : "FAIL", total, size);
            return total == 0 ? support::exit_success : support::exit_failure;
        },
        MPI_THREAD_SERIALIZED);
}

}  // namespace mpidict::testing

#define MPIDICT_CHECK(expression) ::mpidict::testing::check((expression), #expression, __FILE__, __LINE__)
#define MPIDICT_CHECK_MSG(expression, note) \
    ::mpidict::testing::check((expression), #expression, __FILE__, __LINE__, (note))
