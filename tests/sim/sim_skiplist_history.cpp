// skiplist_map histories under the deterministic simulation, checked per
// consistency mode by tools/histcheck: each seed draws 2-4 virtual ranks, a list
// shape (G 1-4, height 1-5) and a workload (history_workload.hpp: request forms
// in flight on a small shared key space, then a flush and final reads), runs it
// with random message delays, and writes one history (time = the simulation's
// step counter).  The checker then reads all of them.
//
//   sim_skiplist_history --mode sequential --seeds 1000 --checker build/tools/histcheck/histcheck
//   ... --break --expect-reject   (the mode broken on purpose: some history must be rejected)
//   sim_skiplist_history --mode total_order --chains --seeds 1000 --checker ...   (two callers, dependent chains)
//   sim_skiplist_history --mode sequential --range-runs [--trust-ranges --expect-reject] --seeds 300 --checker ...

#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <tuple>
#include <string>
#include <vector>

#include <unistd.h>

#include "../skiplist_map/history_workload.hpp"
#include "mpidict/runtime/sim_transport.hpp"
#include "sim_driver.hpp"

namespace {

using namespace mpidict;
using namespace mpidict::history_test;

std::uint64_t mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::string value_after(const std::vector<std::string>& extra, const std::string& flag, const std::string& fallback) {
    for (std::size_t i = 0; i + 1 < extra.size(); ++i)
        if (extra[i] == flag)
            return extra[i + 1];
    return fallback;
}

// --probe: every key's point operations must take effect in the order they
// passed the head (total_order's non-overtaking, across callers).  Sees the
// operations inside the nodes (skiplist_order_probe), so it catches an
// overtaking the history cannot show (two finds, or writes the checker can
// still order another way).
struct order_probe final : detail::skiplist_order_probe {
    std::mutex lock;
    std::map<std::tuple<int, std::uint32_t, std::uint32_t>, long long> passed;
    std::map<std::string, long long> last;
    std::map<std::string, std::string> last_who;  // who set `last`
    long long next = 0, checked = 0, overtaken = 0;
    std::string first;
    void at_head(int caller, std::uint32_t slot, std::uint32_t ticket) override {
        const std::lock_guard<std::mutex> guard(lock);
        passed.try_emplace({caller, slot, ticket}, next++);
    }
    void applied(int caller, std::uint32_t slot, std::uint32_t ticket, std::string_view key) override {
        const std::lock_guard<std::mutex> guard(lock);
        const auto it = passed.find({caller, slot, ticket});
        if (it == passed.end())
            return;
        ++checked;
        long long& latest = last.try_emplace(std::string(key), -1).first->second;
        if (it->second < latest) {
            if (overtaken++ == 0)
                first = "operation " + std::to_string(it->second) + " at the head (rank " + std::to_string(caller) +
                        ", slot " + std::to_string(slot) + ", ticket " + std::to_string(ticket) +
                        ") took effect after operation " + std::to_string(latest) + " (" + last_who[std::string(key)] +
                        ") on its key";
        } else {
            latest = it->second;
            last_who[std::string(key)] = "rank " + std::to_string(caller) + ", slot " + std::to_string(slot) +
                                         ", ticket " + std::to_string(ticket);
        }
        passed.erase(it);
    }
};

}  // namespace

int main(int argc, char** argv) {
    const sim_test::command_line cli = sim_test::parse_command_line(argc, argv);
    sim_test::install_crash_handler();
    const std::string mode_name = value_after(cli.extra, "--mode", "sequential");
    const std::optional<skiplist_consistency> named = mpidict::skiplist_consistency_named(mode_name);
    if (!named) {
        std::fprintf(stderr, "sim_skiplist_history: unknown --mode %s\n", mode_name.c_str());
        return 2;
    }
    const skiplist_consistency mode = *named;
    const std::string checker = value_after(cli.extra, "--checker", "");
    const bool broken = sim_test::has_flag(cli, "--break");
    const bool expect_reject = sim_test::has_flag(cli, "--expect-reject");
    // --chains: two callers, chains of dependent operations in flight together,
    // tall towers (link_up on every other split): the cross-caller order of
    // total_order (issue 42).
    const bool chains = sim_test::has_flag(cli, "--chains");
    const bool find_many = sim_test::has_flag(cli, "--find-many");
    // --probe (above); with --unordered (markers and per-key order off, test
    // only) some seed must show an overtaking.
    const bool probing = sim_test::has_flag(cli, "--probe");
    const bool unordered = sim_test::has_flag(cli, "--unordered");
    // --range-runs: runs of range_from queries in flight together against
    // writes (history_workload.hpp; mode sequential lets a later one leave
    // before an earlier one it overlaps and checks it afterwards).  With
    // --trust-ranges (test only) that check is skipped: some history must then
    // be rejected.
    const bool range_runs = sim_test::has_flag(cli, "--range-runs");
    const bool trust_ranges = sim_test::has_flag(cli, "--trust-ranges");
    // --counts: count, erase_range and reduce drawn too (history_workload.hpp,
    // as in the MPI test's odd rounds).  --routing grid|mixed: the runtime's
    // grid routing (docs/runtime.md), in every seed or in half of them.
    const bool counts = sim_test::has_flag(cli, "--counts");
    const std::string routing = value_after(cli.extra, "--routing", "direct");
    // --granularity G --height H --window W --keys K --caller-window C: the
    // shape fixed instead of drawn (the MPI test's round 5 at 4 ranks: 1 5 6 10 4).
    const int granularity = std::atoi(value_after(cli.extra, "--granularity", "0").c_str());
    const int height = std::atoi(value_after(cli.extra, "--height", "0").c_str());
    const int window = std::atoi(value_after(cli.extra, "--window", "0").c_str());
    const int keys = std::atoi(value_after(cli.extra, "--keys", "0").c_str());
    const int caller_window = std::atoi(value_after(cli.extra, "--caller-window", "0").c_str());
    if (trust_ranges)
        ::setenv("MPIDICT_SKIPLIST_TRUST_RANGES_FOR_TESTING", "1", 1);
    // --elastic (issue 44): a rebalance and a drain while the callers' requests
    // are open, and in odd seeds growth from one server (history_workload.hpp);
    // --break-moves: every moved node loses an entry (some history must then be
    // rejected).
    // --online: online moves (local_rebalance) four times per caller while
    // its requests are open, between the collective steps with --elastic;
    // with --break-moves a stub then serves instead of forwarding.
    const bool elastic = sim_test::has_flag(cli, "--elastic");
    const bool online = sim_test::has_flag(cli, "--online");
    // --online-steps K --online-nodes N: K steps of up to N nodes per caller (4, 2).
    const int online_times = std::atoi(value_after(cli.extra, "--online-steps", "4").c_str());
    const auto online_nodes = static_cast<std::size_t>(std::atoi(value_after(cli.extra, "--online-nodes", "2").c_str()));
    const bool break_moves = sim_test::has_flag(cli, "--break-moves");
    // --break-markers (with --online --probe): a moved node does not wait for
    // the markers behind what its old slot sent; the probe must see an overtaking.
    const bool break_markers = sim_test::has_flag(cli, "--break-markers");
    if (break_markers)
        ::setenv("MPIDICT_SKIPLIST_BREAK_ONLINE_MOVES_FOR_TESTING", "2", 1);
    if (break_moves)
        ::setenv(online ? "MPIDICT_SKIPLIST_BREAK_ONLINE_MOVES_FOR_TESTING" : "MPIDICT_SKIPLIST_BREAK_REBALANCE_FOR_TESTING",
                 "1", 1);
    const std::string flags = "--mode " + mode_name + (broken ? " --break" : "") +
                              (elastic ? " --elastic" : "") + (online ? " --online" : "") +
                              (break_moves ? " --break-moves" : "") +
                              (range_runs ? " --range-runs" : "") + (trust_ranges ? " --trust-ranges" : "");
    long long probed_seeds = 0, overtaking_seeds = 0, probed_operations = 0;
    std::atomic<long long> online_moves{0}, online_refused{0};  // (every virtual rank shares this process)
    const long long seeds = cli.seeds >= 0 ? cli.seeds : 100;
    const char* tmp = std::getenv("TMPDIR");
    const std::string directory = std::string(tmp ? tmp : "/tmp") + "/mpidict-sim-history-" + mode_name +
                                  (broken || break_moves ? "-broken-" : "-") + (elastic ? "elastic-" : "") + (online ? "online-" : "") + std::to_string(static_cast<long long>(::getpid()));
    std::filesystem::create_directories(directory);
    const sim_test::stopwatch clock;
    std::vector<std::string> files;
    long long failed = 0;
    for (long long index = 0; index < seeds; ++index) {
        const std::uint64_t seed = cli.first_seed + static_cast<std::uint64_t>(index);
        std::uint64_t state = mix(seed * 0x9e3779b97f4a7c15ULL + 17);
        auto draw = [&](std::uint64_t bound) { return (state = mix(state + 0x9e3779b97f4a7c15ULL)) % bound; };
        const int ranks = cli.ranks_given ? cli.ranks[static_cast<std::size_t>(index) % cli.ranks.size()]
                          : chains       ? 2
                                         : 2 + static_cast<int>(draw(3));
        workload_shape shape;
        shape.operations = cli.ops > 0 ? cli.ops : 16;
        shape.keys = 6 + static_cast<int>(draw(6));
        shape.window = 1 + static_cast<int>(draw(4));
        shape.ranges = draw(2) == 0;  // ranges and matches in every mode (issue 42)
        skiplist_map_config config;
        config.granularity = 1 + draw(4);
        config.max_height = 1 + static_cast<unsigned>(draw(5));
        if (chains) {
            shape.operations = cli.ops > 0 ? cli.ops : 120;
            shape.keys = 6 + static_cast<int>(draw(7));
            shape.window = 6;
            shape.ranges = false;
            shape.chains = true;
            config.granularity = 1;
            config.max_height = 4 + static_cast<unsigned>(draw(5));
            config.tower_probability = 0.7;
        }
        if (range_runs) {
            shape.operations = cli.ops > 0 ? cli.ops : 40;
            shape.window = 4 + static_cast<int>(draw(4));
            shape.ranges = false;
            shape.range_runs = true;
        }
        config.max_key_bytes = 8;
        config.max_value_bytes = 8;
        config.runtime.buffer_bytes = draw(2) == 0 ? 1024 : 8192;
        // --find-many: find_many drawn too (issue 42); a small window in half the
        // seeds, so a total_order find_many leaves in several chunks.  (Drawn
        // apart from the list's shape, which stays what it was before.)
        shape.find_many = find_many;
        if (const std::uint64_t window_draw = mix(seed + 0x5deece66dULL); find_many && window_draw % 2 == 0)
            config.caller_window = 1 + (window_draw >> 8) % 8;
        shape.counts = counts;
        // Fixed instead of drawn (after the draws, so the other seeds' shapes stay).
        if (granularity > 0)
            config.granularity = static_cast<std::size_t>(granularity);
        if (height > 0)
            config.max_height = static_cast<unsigned>(height);
        if (window > 0)
            shape.window = window;
        if (keys > 0)
            shape.keys = keys;
        if (caller_window > 0)
            config.caller_window = static_cast<std::size_t>(caller_window);
        if (routing == "grid" || (routing == "mixed" && mix(seed + 0x9e37ULL) % 2 == 0))
            config.runtime.routing = runtime::routing_mode::grid;
        config.consistency = mode;
        config.break_consistency_for_testing = broken;
        config.unordered_for_testing = unordered;
        if (elastic)
            elastic_config(config, seed);
        std::vector<std::string> parts(static_cast<std::size_t>(ranks));
        order_probe probe;
        if (probing)
            detail::skiplist_order_probe_for_testing.store(&probe);
        sim::options options;
        if (cli.trace)
            options.trace_stream = stderr;
        sim_test::set_crash_note(cli, ranks, seed, flags);
        const sim::result outcome = sim::run(ranks, seed, options, [&](int rank, sim::sim_context& context) {
            config.seed = context.seed();
            map_type map(std::make_unique<runtime::engine>(context.make_transport(), config.runtime), config);
            workload_shape mine_shape = shape;
            if (online)
                mine_shape.midway = online_steps(map, elastic, online_times, online_nodes);
            else if (elastic)
                mine_shape.midway = elastic_steps(map);
            auto now = [&] { return static_cast<std::int64_t>(context.step()); };
            auto below = [&](std::uint64_t bound) { return context.random_below(bound); };
            std::string mine = run_workload(map, mine_shape, rank, now, below, [&] { context.yield(); });
            map.flush();
            mine += final_reads(map, shape, rank, now, final_reads_first_seq(shape));
            map.flush();
            if (!broken && !break_moves) {
                const std::string problem = map.check_local_invariants();
                if (!problem.empty())
                    context.fail(problem);
            }
            parts[static_cast<std::size_t>(rank)] = std::move(mine);
            online_moves += static_cast<long long>(map.local_statistics().online_moves);
            online_refused += static_cast<long long>(map.local_statistics().online_refused);
            map.destroy();
        });
        detail::skiplist_order_probe_for_testing.store(nullptr);
        if (probing && outcome.ok) {
            ++probed_seeds;
            probed_operations += probe.checked;
            if (probe.overtaken > 0) {
                ++overtaking_seeds;
                if (!(unordered || break_markers) || overtaking_seeds == 1)
                    std::printf("seed %llu (%d ranks): %lld overtaken; first: %s\n",
                                static_cast<unsigned long long>(seed), ranks, probe.overtaken, probe.first.c_str());
            }
        }
        if (!outcome.ok) {
            ++failed;
            sim_test::print_failure(cli, outcome, flags, "");
            if (failed >= 3)
                break;
            continue;
        }
        const std::string path = directory + "/seed-" + std::to_string(seed) + "-ranks-" + std::to_string(ranks) + ".jsonl";
        std::ofstream out(path);
        for (const auto& part : parts)
            out << part;
        files.push_back(path);
    }
    std::printf("sim skiplist histories (%s%s): %zu histories written, %lld runs failed (%.1f s)\n", mode_name.c_str(),
                broken ? ", broken" : "", files.size(), failed, clock.seconds());
    if (online)
        std::printf("online moves: %lld shipped, %lld stayed (no room, or busy meanwhile)\n", online_moves.load(),
                    online_refused.load());
    if (failed > 0)
        return 1;
    if (probing) {
        const bool pass = unordered || break_markers ? overtaking_seeds > 0 : overtaking_seeds == 0;
        std::printf("order probe: %lld seeds, %lld operations checked against their head order, %lld seeds with an "
                    "overtaking%s\n%s\n",
                    probed_seeds, probed_operations, overtaking_seeds, unordered ? " (markers off)" : "",
                    pass ? "PASS" : "FAIL");
        if (!pass)
            return 1;
    }
    if (checker.empty()) {
        if (std::getenv("MPIDICT_KEEP_HISTORIES") == nullptr) {
            std::filesystem::remove_all(directory);
            std::printf("no --checker given (MPIDICT_KEEP_HISTORIES=1 keeps the histories)\n");
        } else {
            std::printf("histories in %s (no --checker given)\n", directory.c_str());
        }
        return 0;
    }
    // The checker reads a list of files from its command line; pass them in batches.
    int rejected_batches = 0, bad = 0;
    for (std::size_t first = 0; first < files.size(); first += 200) {
        std::string command = checker + " --quiet --mode " + mode_name + (expect_reject ? " --expect-reject" : "");
        for (std::size_t i = first; i < files.size() && i < first + 200; ++i)
            command += " " + files[i];
        std::fflush(stdout);
        const int status = std::system(command.c_str());
        if (expect_reject)
            rejected_batches += status == 0;
        else
            bad += status != 0;
    }
    const bool pass = expect_reject ? rejected_batches > 0 : bad == 0;
    std::printf("%s: %s\n", pass ? "PASS" : "FAIL",
                expect_reject ? "the broken mode must produce a history the checker rejects"
                              : "every history must satisfy the mode");
    if (pass)
        std::filesystem::remove_all(directory);
    return pass ? 0 : 1;
}
