// `mpidict inspect DIR`: what a checkpoint holds, and whether it is intact.
//
// Reads the manifest and checks every shard's file, size, CRC-32 per column and
// column structure, as a load would, without loading anything (rank 0 does the
// work; run it without mpiexec).  Exits 0 when everything checks, 1 with the
// problem otherwise.

#include <cstdio>
#include <string>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"
#include "mpidict/support/options.hpp"

#include "common/command.hpp"
#include "common/report.hpp"

namespace mpidict::tool {
namespace {

std::string type_text(const std::string& type, std::uint64_t bytes) {
    return type + (bytes == 0 ? " (variable length)" : " (" + std::to_string(bytes) + " bytes)");
}

int run_inspect(command_context& context) {
    std::string directory;
    bool manifest = false;
    bool verify = true;
    option_parser parser("mpidict inspect [options] DIR",
                         "Prints what the checkpoint in DIR holds (written by save() or `mpidict hash --save`)\n"
                         "and checks every shard's file, size, CRC-32 and structure as a load would.\n"
                         "Exits 0 if everything checks, 1 with the problem otherwise.");
    parser.add_positional("checkpoint directory", &directory, "DIR")
        .add_flag("manifest", &manifest, "also print the manifest (JSON) itself")
        .add_flag("no-verify", &verify, "read the manifest only; skip the checksums", false);
    if (!context.parse_options(parser))
        return 0;
    int status = 0;
    if (context.rank() == 0) {
        const checkpoint_summary summary = inspect_checkpoint(directory, verify);
        if (!summary.container.empty()) {
            std::printf("checkpoint %s\n", directory.c_str());
            std::printf("  container  %s, saved at %d rank%s\n", summary.container.c_str(), summary.ranks,
                        summary.ranks == 1 ? "" : "s");
            std::printf("  keys       %s\n", type_text(summary.key_type, summary.key_bytes).c_str());
            if (!summary.value_type.empty())
                std::printf("  values     %s%s\n", type_text(summary.value_type, summary.value_bytes).c_str(),
                            summary.multi_valued ? ", several per key" : "");
            std::printf("  entries    %s\n", format_count(summary.entries).c_str());
            std::printf("  data       %s in %zu columns\n", format_bytes(static_cast<double>(summary.data_bytes)).c_str(),
                        summary.columns);
        }
        if (manifest && !summary.manifest.empty())
            std::printf("%s", summary.manifest.c_str());
        if (!summary.problem.empty()) {
            std::fprintf(stderr, "mpidict inspect: error: %s\n", summary.problem.c_str());
            status = 1;
        } else {
            std::printf("%s\n", verify ? "verified: every shard's file, size, CRC-32 and structure"
                                       : "not verified (--no-verify)");
        }
        std::fflush(stdout);
    }
    MPI_Bcast(&status, 1, MPI_INT, 0, context.world());
    return status;
}

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(inspect, "what a checkpoint directory holds, with every checksum verified",
                     mpidict::tool::run_inspect);
