// Consistent snapshots of skiplist_map (issue 49, item 6) at 1-4 ranks in every
// consistency mode: snapshot_workload.hpp's check (reads through the snapshot
// against the state at the cut while every rank writes), and the errors of a
// snapshot whose map is gone.
//
//   mpi_skiplist_snapshot                              the check; exit 0 if it holds
//   mpi_skiplist_snapshot --broken skip_flush|live_reads --expect-reject
//                                                      a broken variant: exit 0 only if the check fails

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>

#include "mpi_test_util.hpp"
#include "snapshot_workload.hpp"

namespace {

using namespace mpidict;
namespace st = mpidict::snapshot_test;

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    st::broken variant = st::broken::none;
    bool expect_reject = false;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        if (arg == "--broken" && i + 1 < argc) {
            const std::string name = argv[++i];
            variant = name == "skip_flush" ? st::broken::skip_flush
                      : name == "live_reads" ? st::broken::live_reads
                                             : st::broken::none;
            if (variant == st::broken::none) {
                std::fprintf(stderr, "unknown --broken %s (skip_flush, live_reads)\n", name.c_str());
                MPI_Abort(MPI_COMM_WORLD, 2);
            }
        } else if (arg == "--expect-reject") {
            expect_reject = true;
        }
    }
    const mpidict::testing::watchdog guard(rank, std::chrono::seconds(150), "mpi_skiplist_snapshot");
    std::mt19937_64 random(0x5eed + static_cast<std::uint64_t>(rank));
    st::counters count;
    std::uint64_t first_failures = 0;
    for (const auto mode : {skiplist_consistency::sequential, skiplist_consistency::total_order, skiplist_consistency::none}) {
        double clock = 1.0e6;
        skiplist_map_config config;
        config.granularity = 4;  // many nodes over few keys
        config.consistency = mode;
        config.expiry_clock = [&clock] {
            return std::chrono::system_clock::time_point(std::chrono::duration_cast<std::chrono::system_clock::duration>(
                std::chrono::duration<double>(clock)));
        };
        st::map_type map(MPI_COMM_WORLD, config);
        st::run(
            map, rank, size, clock, variant,
            [&](const std::string& what) {
                if (++first_failures <= 5)
                    std::fprintf(stderr, "[rank %d, %s] %s\n", rank, to_string(mode), what.c_str());
            },
            [&](std::uint64_t below) { return below == 0 ? 0 : random() % below; }, count);
        if (variant == st::broken::none && size > 1) {
            // Ranks releasing different snapshots: every rank hears of it, nothing is
            // released, and the right order afterwards works.
            auto first = map.snapshot();
            auto second = map.snapshot();
            MPIDICT_EXPECT_ERROR(collective_mismatch_error, (rank == 0 ? first : second).release(), "snapshot release");
            MPIDICT_CHECK(first.find(0) == second.find(0));
            first.release();
            second.release();
        }
        if (variant == st::broken::none) {
            // A snapshot outliving its map: reads throw, its destructor is quiet.
            auto orphan = map.snapshot();
            map.destroy();
            MPIDICT_EXPECT_ERROR(use_after_destroy_error, (void)orphan.find(1), "destroyed");
            MPIDICT_EXPECT_ERROR(use_after_destroy_error, (void)map.snapshot(), "snapshot");
        }
    }
    const std::int64_t failures = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(count.failures));
    const std::int64_t checks = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(count.checks));
    const int test_failures = mpidict::testing::failure_count();
    const std::int64_t hard = mpidict::testing::sum_over_ranks(test_failures);
    if (rank == 0)
        std::printf("snapshot check%s: %lld checks, %lld failed, %d ranks\n",
                    variant == st::broken::none ? "" : variant == st::broken::skip_flush ? " (broken: skip_flush)"
                                                                                         : " (broken: live_reads)",
                    static_cast<long long>(checks), static_cast<long long>(failures), size);
    int status = 0;
    if (expect_reject)
        status = failures > 0 && hard == 0 ? 0 : 1;
    else
        status = failures == 0 && hard == 0 ? 0 : 1;
    if (rank == 0 && expect_reject)
        std::printf(status == 0 ? "the broken variant was rejected\n" : "the broken variant was NOT rejected\n");
    MPI_Finalize();
    return status;
}
