#pragma once
// The main() of an MPI benchmark: every rank parses the same argv (so they all
// reach the same verdict and leave together), then runs; an exception escaping
// the run aborts the job so no rank is left waiting.
//
//   int main(int argc, char** argv) {
//       return mpidict::bench::mpi_main(argc, argv, bench_name, usage, parse, run);
//   }
//
// parse(argc, argv) returns the settings or throws (help_requested for --help);
// run(settings, world) returns the exit status.

#include <cstdio>
#include <exception>

#include <mpi.h>

namespace mpidict::bench {

// The benchmark's own duplicate of MPI_COMM_WORLD.
struct world {
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
};

// Thrown by a parser for --help: rank 0 prints the usage, every rank exits 0.
struct help_requested {};

template <class Parse, class Run>
int mpi_main(int argc, char** argv, const char* name, const char* usage, Parse&& parse, Run&& run) {
    MPI_Init(&argc, &argv);
    world w;
    MPI_Comm_dup(MPI_COMM_WORLD, &w.comm);
    MPI_Comm_rank(w.comm, &w.rank);
    MPI_Comm_size(w.comm, &w.size);
    auto finish = [&](int status) {
        MPI_Comm_free(&w.comm);
        MPI_Finalize();
        return status;
    };

    decltype(parse(argc, argv)) settings;
    try {
        settings = parse(argc, argv);
    } catch (const help_requested&) {
        if (w.rank == 0)
            std::fputs(usage, stdout);
        return finish(0);
    } catch (const std::exception& problem) {
        // Every rank parsed the same argv, so every rank leaves here together.
        if (w.rank == 0)
            std::fprintf(stderr, "%s: %s\n%s", name, problem.what(), usage);
        return finish(2);
    }

    int status = 0;
    try {
        status = run(settings, w);
    } catch (const std::exception& problem) {
        std::fprintf(stderr, "%s: rank %d: %s\n", name, w.rank, problem.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return finish(status);
}

}  // namespace mpidict::bench
