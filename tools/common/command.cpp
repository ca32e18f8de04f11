#include "common/command.hpp"

#include <algorithm>
#include <cstdio>
#include <stdexcept>

#include "mpidict/support/program.hpp"

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

int run_app(command_context& context, app_program program) {
    std::string name = "mpidict " + std::string(context.command_name());
    std::vector<char*> argv{name.data()};
    argv.insert(argv.end(), context.arguments().begin(), context.arguments().end());
    argv.push_back(nullptr);
    return program(static_cast<int>(argv.size()) - 1, argv.data(), context.world());
}

bool command_context::parse_options(option_parser& parser) {
    const std::optional<int> stop =
        support::parse_collectively(m_world, parser, m_arguments, "mpidict " + m_command_name);
    if (stop && *stop == support::exit_success)
        return false;
    if (stop)
        throw exit_now{*stop};
    return true;
}

}  // namespace mpidict::tool
