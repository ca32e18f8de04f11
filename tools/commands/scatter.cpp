// `mpidict scatter FILE.mtx`: seed 000's matrix scatter, hash_map against
// blocking send/recv (apps/matrix_scatter, docs/matrix_scatter.md).  The app
// parses its own options; every rank agrees on them before any collective, so
// a usage error ends every rank with exit code 2 and bad input with 1.

#include "common/command.hpp"
#include "matrix_scatter/matrix_scatter.hpp"

namespace mpidict::tool {
namespace {

// doc-begin
int run_scatter(command_context& context) { return run_app(context, &apps::run_matrix_scatter); }

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(scatter, "matrix scatter of a MatrixMarket file: hash_map vs blocking send/recv (seed 000)",
                     mpidict::tool::run_scatter);
// doc-end
