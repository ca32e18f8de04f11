// `mpidict words FILE`: seed 003's LH*LH build of a word list (apps/word_build,
// docs/linear_hash_map.md).
#include <vector>

#include "common/command.hpp"
#include "word_build/word_build.hpp"

namespace mpidict::tool {
namespace {

int run_words_command(command_context& context) {
    static char program[] = "mpidict words";  // argv[0]: the name in messages
    std::vector<char*> argv{program};
    argv.insert(argv.end(), context.arguments().begin(), context.arguments().end());
    argv.push_back(nullptr);
    return apps::word_build::word_build_main(static_cast<int>(argv.size()) - 1, argv.data(), context.world());
}

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(words, "LH*LH build of a word list (seed 003): linear_hash_map splits, latency vs hash_map",
                     mpidict::tool::run_words_command);
