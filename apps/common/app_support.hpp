#pragma once
// What the applications in apps/ share (library mpidict_app_common, target
// mpidict::app_common; include "common/app_support.hpp"):
//
//   app_main           an app's whole main(): MPI_Init, the run, MPI_Finalize,
//                      and MPI_Abort on an exception nobody caught
//   program_name       argv[0] without its directory, for messages
//   exit_reporter      `return finish(code)`: with --trace-exit every rank says
//                      with which code it exits (the bad-input tests count them)
//   agree_on_failure   every rank learns whether any rank failed, so that all
//                      of them exit non-zero at once instead of hanging in the
//                      next collective
//   usage_failed       the same for a usage error, reported once by rank 0
//
// and, header-only, the yielding MPI waits (common/yielding.hpp) and the JSON
// text helpers (common/json.hpp).

#include <string>
#include <string_view>

#include <mpi.h>

#include "common/json.hpp"
#include "common/yielding.hpp"

namespace mpidict::apps {

// An app's entry point: run(argc, argv, comm) returns the exit code; argv[0]
// names the program in its messages.
using app_run = int (*)(int argc, char** argv, MPI_Comm comm);

// The whole main() of an app: MPI_Init, run(argc, argv, MPI_COMM_WORLD),
// stdout and stderr flushed, MPI_Finalize, run's exit code.  An exception that
// escapes run() was not foreseen and may have left other ranks inside a
// collective: "<name>: error on rank <r>: <what>" on stderr, then MPI_Abort.
int app_main(int argc, char** argv, const char* name, app_run run);

// argv[0] without its directory ("orbit" for "/usr/bin/orbit"); `fallback`
// when there is no argv[0].
std::string program_name(int argc, char** argv, std::string_view fallback);

// `return finish(code);` at every exit of an app's run: when --trace-exit is
// among the arguments, first prints "<program>: rank <r> exits with code <c>"
// to stderr (and flushes it).
class exit_reporter {
public:
    exit_reporter(int argc, char** argv, std::string program, MPI_Comm comm);
    int operator()(int code) const;

private:
    std::string m_program;
    int m_rank = 0;
    bool m_trace = false;
};

// Collective over `comm`.  Every rank passes its own problem (empty: none);
// returns empty on every rank if no rank had one, and otherwise, on every
// rank, the problem of the lowest failing rank ("failed on rank <r>" if that
// message is empty).  Lets rank 0 print one clear message while every rank
// exits with the same non-zero code.
std::string agree_on_failure(MPI_Comm comm, const std::string& problem);

// Collective over `comm`: agree_on_failure() on a usage problem (a bad option;
// empty: none).  If some rank has one, rank 0 prints "<program>: error:
// <message>" and "Run '<program> --help' for usage." to stderr and every rank
// returns true (the app then exits with code 2).
bool usage_failed(MPI_Comm comm, const std::string& problem, const std::string& program);

}  // namespace mpidict::apps
