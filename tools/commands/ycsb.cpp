// `mpidict ycsb --workload FILE [-p key=value]...`: YCSB's core workloads on
// skiplist_map, hash_map or linear_hash_map (apps/ycsb, docs/ycsb.md).
#include "common/command.hpp"
#include "ycsb/ycsb.hpp"

namespace mpidict::tool {
namespace {

int run_ycsb_command(command_context& context) { return run_app(context, &apps::ycsb::ycsb_main); }

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(ycsb, "YCSB core workloads A-F on skiplist_map, hash_map or linear_hash_map, verified",
                     mpidict::tool::run_ycsb_command);
