#include "common/command.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

namespace mpidict::tool {

namespace {

// A function-local static: commands register during static initialisation, in
// whatever order the linker puts the files.
std::vector<command>& registry() {
    static std::vector<command> commands;
    return commands;
}

}  // namespace

command_registrar::command_registrar(command entry) {
    for (const command& existing : registry())
        if (existing.name == entry.name)
            throw std::logic_error("mpidict tool: command '" + std::string(entry.name) + "' registered twice");
    registry().push_back(entry);
}

std::vector<command> registered_commands() {
    std::vector<command> sorted = registry();
    std::sort(sorted.begin(), sorted.end(), [](const command& a, const command& b) { return a.name < b.name; });
    return sorted;
}

const command* find_command(std::string_view name) {
    for (const command& entry : registry())
        if (entry.name == name)
            return &entry;
    return nullptr;
}

command_context::command_context(MPI_Comm world, std::string_view command_name, std::span<char* const> arguments)
    : m_world(world), m_command_name(command_name), m_arguments(arguments) {
    MPI_Comm_rank(world, &m_rank);
    MPI_Comm_size(world, &m_size);
}

bool command_context::parse_options(option_parser& parser) {
    enum : int { parsed = 0, help = 1, rejected = 2 };
    int status = parsed;
    std::string message;
    try {
        if (!parser.parse(m_arguments))
            status = help;
    } catch (const usage_error& problem) {
        status = rejected;
        message = problem.what();
    }
    // Every rank saw the same argv, so they should agree; make sure anyway before
    // anyone starts a collective that a rank which gave up would never join.
    int worst = status;
    MPI_Allreduce(&status, &worst, 1, MPI_INT, MPI_MAX, m_world);
    if (worst == rejected) {
        int first_failing = status == rejected ? m_rank : m_size;
        int first = first_failing;
        MPI_Allreduce(&first_failing, &first, 1, MPI_INT, MPI_MIN, m_world);
        if (m_rank == first && m_rank != 0)
            std::fprintf(stderr, "mpidict %s: rank %d: %s\n", m_command_name.c_str(), m_rank, message.c_str());
        if (status == rejected && m_rank == 0)
            throw usage_error(message);
        throw usage_error("rank " + std::to_string(first) + " rejected the options (see its message above)");
    }
    if (worst == help) {
        if (m_rank == 0)
            std::fputs(parser.help().c_str(), stdout);
        return false;
    }
    return true;
}

}  // namespace mpidict::tool
