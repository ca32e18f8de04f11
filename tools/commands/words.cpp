// `mpidict words FILE`: seed 003's LH*LH build of a word list (apps/word_build,
// docs/linear_hash_map.md).
#include "common/command.hpp"
#include "word_build/word_build.hpp"

namespace mpidict::tool {
namespace {

int run_words_command(command_context& context) { return run_app(context, &apps::word_build::word_build_main); }

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(words, "LH*LH build of a word list (seed 003): linear_hash_map splits, latency vs hash_map",
                     mpidict::tool::run_words_command);
