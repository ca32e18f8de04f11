// `mpidict serve [options]`: the containers behind the Redis protocol
// (apps/serve, docs/serve.md).
#include "common/command.hpp"
#include "serve/serve.hpp"

namespace mpidict::tool {
namespace {

int run_serve_command(command_context& context) { return run_app(context, &apps::serve::serve_main); }

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(serve, "the containers behind the Redis protocol: every rank a RESP2 server over hash_map",
                     mpidict::tool::run_serve_command);
