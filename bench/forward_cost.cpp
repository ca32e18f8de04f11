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

#include <algorithm>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "mpidict/hash_map.hpp"
#include "mpidict/runtime/sim_transport.hpp"

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

double median(std::vector<double> values) {
    std::sort(values.begin(), values.end());
    const std::size_t middle = values.size() / 2;
    return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

std::uint64_t number_after(int& index, int argc, char** argv, std::uint64_t lowest, std::uint64_t highest) {
    if (index + 1 >= argc) {
        std::fprintf(stderr, "forward_cost: %s needs a value\n", argv[index]);
        std::exit(2);
    }
    char* end = nullptr;
    const unsigned long long value = std::strtoull(argv[++index], &end, 10);
    if (end == argv[index] || *end != '\0' || value < lowest || value > highest) {
        std::fprintf(stderr, "forward_cost: %s takes a whole number in [%llu, %llu], not '%s'\n", argv[index - 1],
                     static_cast<unsigned long long>(lowest), static_cast<unsigned long long>(highest), argv[index]);
        std::exit(2);
    }
    return value;
}

}  // namespace

int main(int argc, char** argv) {
    int ranks = 9;  // a 3 x 3 grid: 4 of every 9 records are forwarded
    std::uint64_t keys_per_rank = 200000;
    int runs = 7;
    for (int index = 1; index < argc; ++index) {
        if (std::strcmp(argv[index], "--ranks") == 0)
            ranks = static_cast<int>(number_after(index, argc, argv, 3, 256));
        else if (std::strcmp(argv[index], "--keys-per-rank") == 0)
            keys_per_rank = number_after(index, argc, argv, 1, std::uint64_t{1} << 26);
        else if (std::strcmp(argv[index], "--runs") == 0)
            runs = static_cast<int>(number_after(index, argc, argv, 1, 1000));
        else {
            std::fprintf(stderr,
                         "usage: forward_cost [--ranks P (3..256, default 9)] [--keys-per-rank N (default 200000)] "
                         "[--runs R (default 7)]\n");
            return std::strcmp(argv[index], "--help") == 0 ? 0 : 2;
        }
    }
    std::vector<double> direct, grid, forward_ns, ratio;
    std::uint64_t forwarded = 0;
    const double inserts = static_cast<double>(keys_per_rank) * ranks;
    for (int run = 0; run < runs; ++run) {
        const outcome d = run_once(ranks, keys_per_rank, runtime::routing_mode::direct);
        const outcome g = run_once(ranks, keys_per_rank, runtime::routing_mode::grid);
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
    const auto line = [&](const char* metric, double value, const char* unit) {
        std::printf("{\"bench\":\"forward_cost\",\"metric\":\"%s\",\"value\":%.4g,\"unit\":\"%s\",\"ranks\":%d,"
                    "\"keys_per_rank\":%llu,\"runs\":%d}\n",
                    metric, value, unit, ranks, static_cast<unsigned long long>(keys_per_rank), runs);
    };
    line("direct_ns_per_insert_median", median(direct), "ns");
    line("grid_ns_per_insert_median", median(grid), "ns");
    line("records_forwarded", static_cast<double>(forwarded), "records");
    line("ns_per_forwarded_record_median", median(forward_ns), "ns");
    line("forward_to_insert_ratio_median", median(ratio), "ratio");
    return 0;
}
