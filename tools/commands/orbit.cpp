// `mpidict orbit FILE`: seed 002's orbit enumeration (apps/orbit, docs/orbit.md).
#include "common/command.hpp"
#include "orbit/orbit.hpp"

namespace mpidict::tool {
namespace {

int run_orbit_command(command_context& context) { return run_app(context, &apps::orbit::run_orbit); }

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(orbit, "orbit of a group acting on points (seed 002): hash_map vs rma_hash_set visited sets",
                     mpidict::tool::run_orbit_command);
