// What grid routing costs per forwarded record, measured on the real engine:
// `hash_map` inserts of N keys per rank, then flush, on P virtual ranks of the
// in-process simulation transport (include/mpidict/runtime/sim_transport.hpp),
// under direct and under grid routing, runs alternated.  Only one virtual rank
// runs at a time, so a run's CPU time is the sum of every rank's work:
// (grid - direct) / records forwarded is what a corner spends per record it
// forwards (taking it apart, copying it into an outbox, and the second message
// it travels in), against direct / (P x N) for one insert (packing and
// handling); every run's key count is checked.  Serial: no mpiexec.
//
//   build/bench/forward_cost [--ranks P] [--keys-per-rank N] [--runs R]

#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "common/report.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/runtime/sim_transport.hpp"
#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"

namespace {

using namespace mpidict;

// CPU time of the whole process (every virtual rank's thread): less disturbed
// than wall-clock time by other processes on a busy machine.
double cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

struct outcome {
    double seconds = 0;
    std::uint64_t forwarded = 0;
};

outcome run_once(int ranks, std::uint64_t keys_per_rank, runtime::routing_mode routing) {
    sim::options settings;
    settings.switch_probability = 0.001;  // few hand-overs: the run is the ranks' own work
    settings.max_steps = ~std::uint64_t{0};
    settings.max_delay_steps = 0;
    settings.max_sum_delay_steps = 0;
    settings.trace_capacity = 0;
    std::vector<std::uint64_t> forwarded(static_cast<std::size_t>(ranks), 0);
    const double start = cpu_seconds();
    const sim::result result = sim::run(ranks, 1, settings, [&](int rank, sim::sim_context& context) {
        hash_map_config config;
        config.runtime.routing = routing;
        config.expected_keys_per_rank = keys_per_rank;
        hash_map<std::uint64_t, std::uint64_t> map(
            std::make_unique<runtime::engine>(context.make_transport(), config.runtime), config);
        for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
            const std::uint64_t key = mix64((std::uint64_t(rank) << 40) ^ index);
            map.async_insert(key, index);
        }
        map.flush();
        if (map.global_size() != keys_per_rank * static_cast<std::uint64_t>(ranks))
            context.fail("forward_cost: the map holds " + std::to_string(map.global_size()) + " keys, not " +
                         std::to_string(keys_per_rank * static_cast<std::uint64_t>(ranks)));
        forwarded[static_cast<std::size_t>(rank)] = map.stats().records_forwarded;
        map.destroy();
    });
    outcome out;
    out.seconds = cpu_seconds() - start;
    if (!result.ok) {
        std::fprintf(stderr, "forward_cost: simulated run failed: %s\n", result.failure.c_str());
        std::exit(1);
    }
    for (const std::uint64_t count : forwarded)
        out.forwarded += count;
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t ranks = 9;  // a 3 x 3 grid: 4 of every 9 records are forwarded
    std::uint64_t keys_per_rank = 200000;
    std::uint64_t runs = 7;
    support::option_parser parser("forward_cost [options]",
                                  "Grid routing's cost per forwarded record on the real engine over the in-process "
                                  "simulation transport (serial; docs/scaling.md).");
    parser.add_count("ranks", &ranks, "virtual ranks", 3, 256, "P")
        .add_count("keys-per-rank", &keys_per_rank, "keys each rank inserts", 1, std::uint64_t{1} << 26, "N")
        .add_count("runs", &runs, "direct/grid pairs, alternated", 1, 1000, "R");
    try {
        if (!parser.parse(support::arguments_of(argc, argv))) {
            std::printf("%s", parser.help().c_str());
            return 0;
        }
    } catch (const support::usage_error& problem) {
        std::fprintf(stderr, "forward_cost: %s\n", problem.what());
        return 2;
    }
    const int p = static_cast<int>(ranks);
    std::vector<double> direct, grid, forward_ns, ratio;
    std::uint64_t forwarded = 0;
    const double inserts = static_cast<double>(keys_per_rank) * static_cast<double>(ranks);
    for (std::uint64_t run = 0; run < runs; ++run) {
        const outcome d = run_once(p, keys_per_rank, runtime::routing_mode::direct);
        const outcome g = run_once(p, keys_per_rank, runtime::routing_mode::grid);
        if (d.forwarded != 0 || g.forwarded == 0) {
            std::fprintf(stderr, "forward_cost: direct routing forwarded %llu records, grid %llu\n",
                         static_cast<unsigned long long>(d.forwarded), static_cast<unsigned long long>(g.forwarded));
            return 1;
        }
        forwarded = g.forwarded;
        direct.push_back(d.seconds / inserts * 1e9);
        grid.push_back(g.seconds / inserts * 1e9);
        forward_ns.push_back((g.seconds - d.seconds) / static_cast<double>(g.forwarded) * 1e9);
        ratio.push_back(forward_ns.back() / direct.back());
    }
    bench::report out("forward_cost", p, 1, true);
    out.context().add("keys_per_rank", keys_per_rank).add("runs", runs);
    out.figure("direct_ns_per_insert", direct, "ns");
    out.figure("grid_ns_per_insert", grid, "ns");
    out.figure("records_forwarded", static_cast<double>(forwarded), "records");
    out.figure("ns_per_forwarded_record", forward_ns, "ns");
    out.figure("forward_to_insert_ratio", ratio, "ratio");
    out.print_table();
    return 0;
}
