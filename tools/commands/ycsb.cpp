// `mpidict ycsb --workload FILE [-p key=value]...`: YCSB's core workloads on
// skiplist_map, hash_map or linear_hash_map (apps/ycsb, docs/ycsb.md).
#include <vector>

#include "common/command.hpp"
#include "ycsb/ycsb.hpp"

namespace mpidict::tool {
namespace {

int run_ycsb_command(command_context& context) {
    static char program[] = "mpidict ycsb";  // argv[0]: the name in messages
    std::vector<char*> argv{program};
    argv.insert(argv.end(), context.arguments().begin(), context.arguments().end());
    argv.push_back(nullptr);
    return apps::ycsb::ycsb_main(static_cast<int>(argv.size()) - 1, argv.data(), context.world());
}

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(ycsb, "YCSB core workloads A-F on skiplist_map, hash_map or linear_hash_map, verified",
                     mpidict::tool::run_ycsb_command);
