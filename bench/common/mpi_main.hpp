#pragma once
// The main() of an MPI benchmark, on the support library: support::mpi_main
// (an exception escaping the run aborts the job, so no rank is left waiting)
// and the one option parser, run on every rank with the ranks agreeing on the
// outcome (bad options: exit 2 on every rank; --help: the help, exit 0).
//
//   int main(int argc, char** argv) {
//       return mpidict::bench::mpi_main<settings>(argc, argv, bench_name, description, declare, run);
//   }
//
// declare(parser, settings) adds the options, whose targets are the settings'
// fields (their values are the defaults); run(settings, world) returns the
// exit status.

#include <stdexcept>
#include <string>

#include <mpi.h>

#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"

namespace mpidict::bench {

// The benchmark's own duplicate of MPI_COMM_WORLD.
struct world {
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
};

// The largest of every rank's `value`, on every rank; throws if MPI fails.
inline double max_over_ranks(double value, MPI_Comm comm) {
    double largest = 0;
    if (const int code = MPI_Allreduce(&value, &largest, 1, MPI_DOUBLE, MPI_MAX, comm); code != MPI_SUCCESS)
        throw std::runtime_error("MPI_Allreduce (max over ranks) failed with MPI error " + std::to_string(code));
    return largest;
}

// The sum of every rank's `value`, on every rank; throws if MPI fails.
inline double sum_over_ranks(double value, MPI_Comm comm) {
    double sum = 0;
    if (const int code = MPI_Allreduce(&value, &sum, 1, MPI_DOUBLE, MPI_SUM, comm); code != MPI_SUCCESS)
        throw std::runtime_error("MPI_Allreduce (sum over ranks) failed with MPI error " + std::to_string(code));
    return sum;
}

// Seconds from a barrier until every rank has run `step`: the slowest rank's
// time, on every rank (MPI_Wtime, so simulated time under SimGrid SMPI).
template <class Step>
double slowest_seconds(MPI_Comm comm, Step&& step) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    step();
    return max_over_ranks(MPI_Wtime() - start, comm);
}

template <class Settings, class Declare, class Run>
int mpi_main(int argc, char** argv, const char* name, const char* description, Declare&& declare, Run&& run) {
    return support::mpi_main(argc, argv, name, [&](int count, char** words, MPI_Comm comm) {
        Settings settings{};
        support::option_parser parser(std::string(name) + " [options]", description);
        declare(parser, settings);
        if (const auto stop = support::parse_collectively(comm, parser, support::arguments_of(count, words), name))
            return *stop;
        world w;
        MPI_Comm_dup(comm, &w.comm);
        MPI_Comm_rank(w.comm, &w.rank);
        MPI_Comm_size(w.comm, &w.size);
        const int status = run(settings, w);
        MPI_Comm_free(&w.comm);
        return status;
    });
}

}  // namespace mpidict::bench
