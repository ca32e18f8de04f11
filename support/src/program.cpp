// See program.hpp.

#include "mpidict/support/program.hpp"

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>

namespace mpidict::support {

int mpi_main(int argc, char** argv, std::string_view name, const program_run& run, int thread_level) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, thread_level, &provided);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const std::string label(name);
    int code = exit_failure;
    try {
        if (provided < thread_level)
            throw std::runtime_error("MPI provides thread level " + std::to_string(provided) + ", below the " +
                                     std::to_string(thread_level) + " this program needs");
        code = run(argc, argv, MPI_COMM_WORLD);
    } catch (const std::bad_alloc&) {
        // Say which input asked for the memory, not just "std::bad_alloc".
        std::string command;
        for (int index = 1; index < argc; ++index)
            command += std::string(" ") + argv[index];
        std::fprintf(stderr, "%s: error on rank %d: out of memory (an allocation failed) while running%s; "
                             "lower the sizes given (keys, batch, capacity, buffer sizes) or run on more ranks\n",
                     label.c_str(), rank, command.c_str());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, exit_failure);
        return exit_failure;
    } catch (const std::exception& problem) {
        // Anything not foreseen may have left other ranks inside a collective.
        std::fprintf(stderr, "%s: error on rank %d: %s\n", label.c_str(), rank, problem.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, exit_failure);
        return exit_failure;
    } catch (...) {
        std::fprintf(stderr, "%s: unknown exception on rank %d\n", label.c_str(), rank);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, exit_failure);
        return exit_failure;
    }
    // Output that could not be written (a full disk, a closed pipe, /dev/full)
    // is a failure, not a success with the results lost.
    if (std::fflush(stdout) != 0 || std::ferror(stdout)) {
        const int error = errno;
        std::fprintf(stderr, "%s: rank %d could not write its standard output: %s\n", label.c_str(), rank,
                     error != 0 ? std::strerror(error) : "write error");
        code = exit_failure;
    }
    if (std::fflush(stderr) != 0 || std::ferror(stderr))
        code = exit_failure;
    MPI_Finalize();
    return code;
}

std::string program_name(int argc, char** argv, std::string_view fallback) {
    std::string program(argc > 0 && argv[0] != nullptr ? std::string_view(argv[0]) : fallback);
    if (const auto slash = program.find_last_of('/'); slash != std::string::npos)
        program = program.substr(slash + 1);
    return program;
}

std::span<char* const> arguments_of(int argc, char** argv) {
    if (argc <= 1 || argv == nullptr)
        return {};
    return {argv + 1, static_cast<std::size_t>(argc - 1)};
}

exit_reporter::exit_reporter(int argc, char** argv, std::string program, MPI_Comm comm)
    : m_program(std::move(program)) {
    MPI_Comm_rank(comm, &m_rank);
    for (int index = 1; index < argc; ++index)
        m_trace = m_trace || std::string_view(argv[index]) == "--trace-exit";
}

int exit_reporter::operator()(int code) const {
    if (m_trace) {
        std::fprintf(stderr, "%s: rank %d exits with code %d\n", m_program.c_str(), m_rank, code);
        std::fflush(stderr);
    }
    return code;
}

std::string agree_on_failure(MPI_Comm comm, const std::string& problem) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    const int mine = problem.empty() ? INT_MAX : rank;
    int first = INT_MAX;
    MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm);
    if (first == INT_MAX)
        return {};
    std::string message = problem;
    int length = static_cast<int>(message.size());
    MPI_Bcast(&length, 1, MPI_INT, first, comm);
    message.resize(static_cast<std::size_t>(length));
    MPI_Bcast(message.data(), length, MPI_CHAR, first, comm);
    return message.empty() ? "failed on rank " + std::to_string(first) : message;
}

bool usage_failed(MPI_Comm comm, const std::string& problem, const std::string& program) {
    const std::string message = agree_on_failure(comm, problem);
    if (message.empty())
        return false;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    if (rank == 0)
        std::fprintf(stderr, "%s: error: %s\nRun '%s --help' for usage.\n", program.c_str(), message.c_str(),
                     program.c_str());
    return true;
}

std::optional<int> parse_collectively(MPI_Comm comm, option_parser& parser, std::span<char* const> arguments,
                                      const std::string& program) {
    std::string problem;
    bool run = true;
    try {
        run = parser.parse(arguments);
    } catch (const usage_error& bad) {
        problem = bad.what();
    }
    // Every rank saw the same argv, so they should agree; make sure anyway
    // before anyone starts a collective that a rank which gave up would never join.
    if (usage_failed(comm, problem, program))
        return exit_usage;
    if (!run) {
        int rank = 0;
        MPI_Comm_rank(comm, &rank);
        if (rank == 0) {
            std::fputs(parser.help().c_str(), stdout);
            std::fflush(stdout);
        }
        return exit_success;
    }
    return std::nullopt;
}

}  // namespace mpidict::support
