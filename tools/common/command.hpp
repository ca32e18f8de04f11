#pragma once
// Subcommands of the `mpidict` tool.
//
// A subcommand is one source file in tools/commands/ that defines
//     int run_<name>(mpidict::tool::command_context& context);
// and registers it with one line at namespace scope:
//     MPIDICT_TOOL_COMMAND(name, "one-line summary", run_<name>);
// plus its file name in the MPIDICT_TOOL_COMMANDS list of tools/CMakeLists.txt.
// The dispatcher (tools/mpidict.cpp) finds it by name.
//
// Every rank runs the same command with the same arguments.  A command first
// calls context.parse_options(parser): the ranks agree there on whether the
// options are valid before any of them starts a collective, so a bad option
// ends every rank with exit code 2 and never leaves one waiting.  Any other
// exception escaping a command aborts the job (MPI_Abort) after printing.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "mpidict/support/options.hpp"
#include "mpidict/support/progress.hpp"

namespace mpidict::tool {

using support::option_parser;
using support::parse_count;
using support::usage_error;
using support::progress_meter;

// Thrown by command_context::parse_options when every rank should exit now
// with `code` (help printed: 0; usage error printed: 2); main() returns it.
struct exit_now {
    int code;
};

class command_context {
public:
    command_context(MPI_Comm world, std::string_view command_name, std::span<char* const> arguments);

    MPI_Comm world() const { return m_world; }
    int rank() const { return m_rank; }
    int size() const { return m_size; }
    std::string_view command_name() const { return m_command_name; }
    std::span<char* const> arguments() const { return m_arguments; }

    // Collective.  Parses this command's arguments with `parser` on every rank
    // and agrees on the outcome (support::parse_collectively).  Returns false
    // if help was asked for (printed on rank 0; the command should return 0).
    // If any rank rejected the options, rank 0 prints the first rank's message
    // and every rank throws exit_now{2}.
    bool parse_options(option_parser& parser);

private:
    MPI_Comm m_world;
    int m_rank = 0;
    int m_size = 1;
    std::string m_command_name;
    std::span<char* const> m_arguments;
};

using command_function = int (*)(command_context& context);

// A command that is an app's whole program (apps/<app>: its main without
// MPI_Init and MPI_Finalize, parsing its own options): runs `program` with
// argv[0] = "mpidict <command>" (the name in its messages) and the command's
// arguments, and returns its exit code.
using app_program = int (*)(int argc, char** argv, MPI_Comm comm);
int run_app(command_context& context, app_program program);

struct command {
    std::string_view name;
    std::string_view summary;
    command_function run = nullptr;
};

// All registered commands, sorted by name.
std::vector<command> registered_commands();
const command* find_command(std::string_view name);

struct command_registrar {
    explicit command_registrar(command entry);
};

}  // namespace mpidict::tool

#define MPIDICT_TOOL_COMMAND(name, summary, function)                                      \
    namespace {                                                                            \
    const ::mpidict::tool::command_registrar mpidict_tool_command_##name{                  \
        ::mpidict::tool::command{#name, summary, &function}};                              \
    }                                                                                      \
    static_assert(true, "MPIDICT_TOOL_COMMAND is used at namespace scope, with a semicolon.")
