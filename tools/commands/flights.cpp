// `mpidict flights --data DIR [options]`: seed 004's live flights service
// (apps/flights, docs/flights.md).
#include "common/command.hpp"
#include "flights/flights.hpp"

namespace mpidict::tool {
namespace {

int run_flights_command(command_context& context) { return run_app(context, &apps::flights::flights_main); }

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(flights, "seed 004's live flights service: a replay of 2013 on skiplist_map with two-box queries",
                     mpidict::tool::run_flights_command);
