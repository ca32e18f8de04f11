// skiplist_map's consistent snapshots under the deterministic simulation: the
// check of tests/skiplist_map/snapshot_workload.hpp (reads through a snapshot
// compared with the state at the cut while every rank writes) on 2-4 virtual
// ranks per seed, random message delays and schedules, every consistency mode
// (by seed), G 1-4.  With --broken skip_flush|live_reads --expect-reject, the
// broken variant must fail on some seed.
//
//   sim_skiplist_snapshot --ranks 2,3,4 --seeds 30
//   sim_skiplist_snapshot --ranks 2,3 --seeds 10 --broken skip_flush --expect-reject

#include <cinttypes>
#include <cstdio>
#include <string>

#include "../skiplist_map/snapshot_workload.hpp"
#include "mpidict/runtime/sim_transport.hpp"
#include "sim_driver.hpp"

namespace {

using namespace mpidict;
namespace st = mpidict::snapshot_test;

void workload(int rank, sim::sim_context& context, st::broken variant, st::counters& shared) {
    double clock = 1.0e6;
    skiplist_map_config config;
    config.granularity = 1 + static_cast<std::uint32_t>(context.seed() % 4);
    config.consistency = static_cast<skiplist_consistency>(context.seed() / 4 % 3);
    config.seed = context.seed();
    config.expiry_clock = [&clock] {
        return std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(clock)));
    };
    st::map_type map(std::make_unique<runtime::engine>(context.make_transport(), config.runtime), config);
    st::counters mine;
    st::run(
        map, rank, context.size(), clock, variant,
        [&](const std::string& what) { context.fail("check failed on rank " + std::to_string(rank) + ": " + what); },
        [&](std::uint64_t below) { return below == 0 ? 0 : context.random_below(below); }, mine);
    shared.checks += mine.checks;
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    const sim_test::command_line cli = sim_test::parse_command_line(argc, argv);
    sim_test::install_crash_handler();
    const bool expect_reject = sim_test::has_flag(cli, "--expect-reject");
    const std::string broken_name = sim_test::flag_value(cli, "--broken", "");
    const st::broken variant = broken_name == "skip_flush"   ? st::broken::skip_flush
                               : broken_name == "live_reads" ? st::broken::live_reads
                                                             : st::broken::none;
    if (!broken_name.empty() && variant == st::broken::none) {
        std::fprintf(stderr, "unknown --broken %s (skip_flush, live_reads)\n", broken_name.c_str());
        return 2;
    }
    const std::vector<int> ranks = cli.ranks_given ? cli.ranks : std::vector<int>{2, 3, 4};
    const long long seeds = cli.seeds >= 0 ? cli.seeds : cli.soak ? 1'000'000'000LL : 30;
    const double minutes = cli.minutes > 0 ? cli.minutes : cli.soak ? 10.0 : 0.0;
    const sim_test::stopwatch clock;
    const std::string flags = broken_name.empty() ? "" : "--broken " + broken_name;
    long long runs = 0, failed = 0;
    st::counters total;
    for (long long index = 0; index < seeds && failed < 3; ++index) {
        for (int count : ranks) {
            if (minutes > 0 && clock.seconds() > minutes * 60)
                break;
            const std::uint64_t seed = cli.first_seed + static_cast<std::uint64_t>(index);
            sim_test::set_crash_note(cli, count, seed, flags);
            sim::options options;
            if (cli.trace)
                options.trace_stream = stderr;
            st::counters shared;
            const sim::result outcome = sim::run(count, seed, options, [&](int rank, sim::sim_context& context) {
                workload(rank, context, variant, shared);
            });
            ++runs;
            total.checks += shared.checks;
            if (cli.verbose || cli.single_seed)
                std::fprintf(stderr, "seed %" PRIu64 " ranks %d: %s; %" PRIu64 " steps\n", seed, count,
                             outcome.ok ? "ok" : "FAILED", outcome.steps);
            if (!outcome.ok) {
                ++failed;
                if (expect_reject)
                    std::printf("expected rejection found: %s\n", outcome.failure.c_str());
                else
                    sim_test::print_failure(cli, outcome, flags, "");
            }
        }
    }
    std::printf("sim skiplist_map snapshots%s: %lld runs, %lld failed; %" PRIu64 " checks (%.1f s)\n",
                flags.empty() ? "" : (" (" + flags + ")").c_str(), runs, failed, total.checks, clock.seconds());
    if (expect_reject)
        return failed > 0 ? 0 : 1;
    return failed == 0 ? 0 : 1;
}
