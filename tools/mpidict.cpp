// mpidict: the command-line workload runner.
//
//   mpiexec -n 4 mpidict hash --keys 200000 --pattern nn
//   mpidict --help            mpidict <command> --help
//
// Every rank parses the same argv.  Usage mistakes end every rank with exit code
// 2 (the ranks agree before any collective, see common/command.hpp); any other
// exception is printed with its rank and aborts the job, so no rank is left
// waiting in a collective for one that gave up.

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <string_view>

#include <mpi.h>

#include "common/command.hpp"
#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"

#ifndef MPIDICT_TOOL_VERSION
#define MPIDICT_TOOL_VERSION "unknown"
#endif

namespace {

using mpidict::tool::command;
using mpidict::tool::usage_error;

std::string general_help() {
    std::string text =
        "usage: mpiexec -n <ranks> mpidict <command> [options]\n"
        "       mpidict --help | --version | <command> --help | help <command>\n"
        "\n"
        "Runs a distributed-dictionary workload on the current MPI world and reports\n"
        "rates, latencies and memory; exits non-zero if the results do not verify.\n"
        "\n"
        "commands:\n";
    std::size_t width = 0;
    for (const command& entry : mpidict::tool::registered_commands())
        width = std::max(width, entry.name.size());
    for (const command& entry : mpidict::tool::registered_commands())
        text += "  " + std::string(entry.name) + std::string(width + 3 - entry.name.size(), ' ') +
                std::string(entry.summary) + "\n";
    text += "\nSee docs/cli.md for the output and what each number means.\n";
    return text;
}

// Runs the command line; returns the exit code.  Throws usage_error only in
// ways every rank reproduces from the same argv.
int dispatch(int argc, char** argv, int rank) {
    const std::span<char* const> arguments(argv + 1, static_cast<std::size_t>(argc > 0 ? argc - 1 : 0));
    if (arguments.empty()) {
        if (rank == 0)
            std::fputs(general_help().c_str(), stderr);
        return 2;
    }
    std::string_view first = arguments[0];
    if (first == "-h" || first == "--help" || (first == "help" && arguments.size() == 1)) {
        if (rank == 0)
            std::fputs(general_help().c_str(), stdout);
        return 0;
    }
    if (first == "--version") {
        if (rank == 0)
            std::printf("mpidict %s\n", MPIDICT_TOOL_VERSION);
        return 0;
    }
    std::span<char* const> rest = arguments.subspan(1);
    static char help_flag[] = "--help";
    static char* const help_arguments[] = {help_flag};
    if (first == "help") {  // "mpidict help hash" == "mpidict hash --help"
        first = arguments[1];
        rest = std::span<char* const>(help_arguments);
    }
    if (first.starts_with("-"))
        throw usage_error("expected a command before " + std::string(first));
    const command* entry = mpidict::tool::find_command(first);
    if (entry == nullptr) {
        std::string known;
        for (const command& each : mpidict::tool::registered_commands())
            known += (known.empty() ? "" : ", ") + std::string(each.name);
        // The applications' subcommands are left out of a build with MPIDICT_BUILD_APPS=OFF
        // (tools/CMakeLists.txt names them in MPIDICT_TOOL_NOT_BUILT).
#ifndef MPIDICT_TOOL_NOT_BUILT
#define MPIDICT_TOOL_NOT_BUILT ""
#endif
        const std::string not_built = " " MPIDICT_TOOL_NOT_BUILT " ";
        if (!first.empty() && not_built.find(std::string(" ").append(first).append(" ")) != std::string::npos)
            throw usage_error("'" + std::string(first) + "' runs an application this build left out "
                              "(configured with MPIDICT_BUILD_APPS=OFF, as make demo does); make build "
                              "builds it (commands here: " + known + ")");
        throw usage_error("unknown command '" + std::string(first) + "' (commands: " + known + ")");
    }
    mpidict::tool::command_context context(MPI_COMM_WORLD, entry->name, rest);
    return entry->run(context);
}

int run(int argc, char** argv, MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    try {
        return dispatch(argc, argv, rank);
    } catch (const mpidict::tool::exit_now& stop) {
        return stop.code;  // the message (or the help) is printed already
    } catch (const usage_error& problem) {
        // dispatch's own usage errors (no or an unknown command) are the same on every rank.
        if (rank == 0) {
            const std::string_view command = argc > 1 && argv[1][0] != '-' ? argv[1] : "";
            const bool known = mpidict::tool::find_command(command) != nullptr;
            std::fprintf(stderr, "mpidict%s%s: error: %s\nRun 'mpidict%s%s --help' for usage.\n",
                         known ? " " : "", known ? argv[1] : "", problem.what(), known ? " " : "",
                         known ? argv[1] : "");
        }
        return mpidict::support::exit_usage;
    }
}

}  // namespace

int main(int argc, char** argv) { return mpidict::support::mpi_main(argc, argv, "mpidict", run); }
