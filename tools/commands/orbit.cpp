// `mpidict orbit FILE`: seed 002's orbit enumeration (apps/orbit, docs/orbit.md).
#include <vector>

#include "common/command.hpp"
#include "orbit/orbit.hpp"

namespace mpidict::tool {
namespace {

int run_orbit_command(command_context& context) {
    static char program[] = "mpidict orbit";  // argv[0]: the name in messages
    std::vector<char*> argv{program};
    argv.insert(argv.end(), context.arguments().begin(), context.arguments().end());
    argv.push_back(nullptr);
    return apps::orbit::run_orbit(static_cast<int>(argv.size()) - 1, argv.data(), context.world());
}

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(orbit, "orbit of a group acting on points (seed 002): hash_map vs rma_hash_set visited sets",
                     mpidict::tool::run_orbit_command);
