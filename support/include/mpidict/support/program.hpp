#pragma once
// What every MPI program in this repository shares (library mpidict_support,
// target mpidict::support): the apps, the `mpidict` tool, the benchmarks, the
// examples and the MPI tests.
//
//   mpi_main            a program's whole main(): MPI_Init, the run,
//                       MPI_Finalize; MPI_Abort on an exception nobody caught
//   exit codes          exit_success 0, exit_failure 1 (bad input or a result
//                       that does not verify), exit_usage 2 (a bad command line)
//   program_name        argv[0] without its directory, for messages
//   exit_reporter       `return finish(code)`: with --trace-exit every rank says
//                       with which code it exits (the bad-input tests count them)
//   agree_on_failure    every rank learns whether any rank failed, so that all
//                       of them exit non-zero at once instead of hanging in the
//                       next collective
//   parse_collectively  an option_parser run on every rank, the ranks agreeing
//                       on the outcome; rank 0 prints help or the usage error
//
// and, header-only, the yielding MPI waits (yielding.hpp), the JSON lines
// (json.hpp) and facts about the host (host.hpp).

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include <mpi.h>

#include "mpidict/support/options.hpp"

namespace mpidict::support {

enum exit_code : int {
    exit_success = 0,  // the run finished and its results verified
    exit_failure = 1,  // bad input, a result that does not verify, an unforeseen error (MPI_Abort)
    exit_usage = 2,    // a mistake on the command line
};

// A program's entry point: run(argc, argv, comm) returns the exit code; argv[0]
// names the program in its messages.
using program_run = std::function<int(int argc, char** argv, MPI_Comm comm)>;

// The whole main() of a program: MPI_Init_thread(thread_level), run(argc,
// argv, MPI_COMM_WORLD), stdout and stderr flushed, MPI_Finalize, run's exit
// code.  An exception that escapes run() was not foreseen and may have left
// other ranks inside a collective: "<name>: error on rank <r>: <what>" on
// stderr, then MPI_Abort(exit_failure).
int mpi_main(int argc, char** argv, std::string_view name, const program_run& run,
             int thread_level = MPI_THREAD_SINGLE);

// argv[0] without its directory ("orbit" for "/usr/bin/orbit"); `fallback`
// when there is no argv[0].
std::string program_name(int argc, char** argv, std::string_view fallback);

// The arguments after argv[0].
std::span<char* const> arguments_of(int argc, char** argv);

// `return finish(code);` at every exit of a run: when --trace-exit is among
// the arguments, first prints "<program>: rank <r> exits with code <c>" to
// stderr (and flushes it).
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
// returns true (the program then exits with exit_usage).
bool usage_failed(MPI_Comm comm, const std::string& problem, const std::string& program);

// Collective over `comm`: parser.parse(arguments) on every rank, the ranks
// agreeing on the outcome.  Returns nothing when the program should run;
// exit_success after rank 0 printed the help (--help); exit_usage after rank 0
// printed the usage error (usage_failed).
std::optional<int> parse_collectively(MPI_Comm comm, option_parser& parser, std::span<char* const> arguments,
                                      const std::string& program);

}  // namespace mpidict::support
