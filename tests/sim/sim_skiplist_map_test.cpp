// skiplist_map under the deterministic simulation: each seed picks a list shape
// (G, maximum height, tower probability, which ranks host nodes, slots per rank,
// buffer size) and a schedule with random message delays; every virtual rank
// runs request-form inserts, insert_if_absent, finds and erases on its own keys
// (interleaved with everyone else's, so all ranks split the same nodes), and
// fire-and-forget chains on one key (insert, erase, insert, ...), which must
// apply in the order they were issued: that is the non-overtaking property.
// Checked per seed: every answer against the rank's model, every chain key after
// the flush, whole-list ranges against the union of the models, node invariants,
// and the entry count.
//
//   sim_skiplist_map --ranks 2,3,5,16 --seeds 100
//   sim_skiplist_map --ranks 5 --seed 17 --trace
//   sim_skiplist_map --unordered --expect-failure   (markers off: must fail)

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mpidict/runtime/sim_transport.hpp"
#include "mpidict/skiplist_map.hpp"
#include "sim_driver.hpp"

namespace {

using namespace mpidict;
using u64 = std::uint64_t;
using map_type = skiplist_map<std::int64_t, u64>;

struct shape {
    std::size_t granularity = 4;
    unsigned max_height = 6;
    double probability = 0.5;
    std::vector<int> servers;
    std::size_t buffer_bytes = 4096;
    int keys_per_rank = 40;
    int batches = 8;
    std::size_t window = 256;  // caller_window: small ones make insert_many wait between keys
    std::size_t async_batch = 65536;  // async_batch_keys: small ones send many async batches (0: point records)
    std::size_t async_in_flight = 2;
    std::string describe() const {
        std::string text = "G=" + std::to_string(granularity) + " height=" + std::to_string(max_height) +
                           " p=" + std::to_string(probability).substr(0, 4) + " buffer=" + std::to_string(buffer_bytes) + " W=" + std::to_string(window) +
                           " async=" + std::to_string(async_batch) + "x" + std::to_string(async_in_flight) +
                           " servers {";
        for (int r : servers)
            text += std::to_string(r) + " ";
        return text + "}";
    }
};

u64 mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

shape make_shape(int ranks, u64 seed, int ops) {
    u64 state = mix(seed * 0x9e3779b97f4a7c15ULL + static_cast<u64>(ranks));
    auto random = [&](u64 bound) { return (state = mix(state + 0x9e3779b97f4a7c15ULL)) % bound; };
    shape s;
    const std::size_t granularities[] = {1, 2, 3, 4, 8, 32};
    s.granularity = granularities[random(6)];
    s.max_height = 1 + static_cast<unsigned>(random(8));
    s.probability = random(2) == 0 ? 0.5 : 0.25;
    std::vector<int> order(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
        order[static_cast<std::size_t>(r)] = r;
    for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[random(i)]);
    const std::size_t servers = random(3) == 0 ? 1 + random(static_cast<u64>(ranks)) : static_cast<std::size_t>(ranks);
    s.servers.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(servers));
    s.buffer_bytes = random(2) == 0 ? 1024 : 8192;
    s.window = random(3) == 0 ? 256 : 1 + random(3);
    const std::size_t async_batches[] = {0, 1, 2, 5, 65536};
    s.async_batch = async_batches[random(5)];
    s.async_in_flight = 1 + random(3);
    if (ops > 0)
        s.batches = ops;
    return s;
}

struct totals {
    u64 checks = 0;
    u64 splits = 0;
    u64 held = 0;
    u64 nodes = 0;
};

bool g_no_chains = false;

void workload(int rank, sim::sim_context& context, const shape& setup, bool unordered, totals& shared) {
    auto fail_if = [&](bool bad, const std::string& what) {
        ++shared.checks;
        if (bad)
            context.fail("check failed on rank " + std::to_string(rank) + ": " + what);
    };
    const int size = context.size();
    skiplist_map_config config;
    config.runtime.buffer_bytes = setup.buffer_bytes;
    config.granularity = setup.granularity;
    config.max_height = setup.max_height;
    config.tower_probability = setup.probability;
    config.server_ranks = setup.servers;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    config.seed = context.seed();
    config.unordered_for_testing = unordered;
    config.caller_window = setup.window;
    config.async_batch_keys = setup.async_batch;
    config.async_batches_in_flight = setup.async_in_flight;
    map_type map(std::make_unique<runtime::engine>(context.make_transport(), config.runtime), config);

    std::map<std::int64_t, u64> model;
    auto key_of = [&](u64 index) { return static_cast<std::int64_t>(index) * size + rank - setup.keys_per_rank * size / 2; };
    u64 version = static_cast<u64>(rank) << 40;
    for (int batch = 0; batch < setup.batches; ++batch) {
        std::vector<std::int64_t> used;
        std::vector<request<replace_result>> inserts;
        std::vector<bool> replaced;
        std::vector<request<bool>> fresh;
        std::vector<bool> was_absent;
        std::vector<request<std::optional<u64>>> finds;
        std::vector<std::optional<u64>> expected;
        std::vector<request<bool>> erases;
        std::vector<bool> present;
        for (int op = 0; op < 10; ++op) {
            const std::int64_t key = key_of(context.random_below(static_cast<u64>(setup.keys_per_rank)));
            if (std::find(used.begin(), used.end(), key) != used.end())
                continue;
            used.push_back(key);
            const auto it = model.find(key);
            const u64 kind = g_no_chains ? context.random_below(7) : context.random_below(10);
            if (kind < 3) {
                replaced.push_back(it != model.end());
                inserts.push_back(map.insert(key, ++version));
                model[key] = version;
            } else if (kind < 4) {
                was_absent.push_back(it == model.end());
                fresh.push_back(map.insert_if_absent(key, ++version));
                if (it == model.end())
                    model[key] = version;
            } else if (kind < 6) {
                expected.push_back(it == model.end() ? std::nullopt : std::optional<u64>(it->second));
                finds.push_back(map.find(key));
            } else if (kind < 7) {
                present.push_back(it != model.end());
                erases.push_back(map.erase(key));
                model.erase(key);
            } else {
                // A fire-and-forget chain on one key, ending present or absent.
                const int length = 2 + static_cast<int>(context.random_below(4));
                for (int link = 0; link < length; ++link) {
                    if (link % 2 == 0)
                        map.async_insert(key, ++version);
                    else
                        map.async_erase(key);
                }
                if (length % 2 == 1)
                    model[key] = version;
                else
                    model.erase(key);
                // Read-your-writes right behind the chain (an async_insert
                // may still be buffered or in an async batch in flight).
                if (!unordered && context.random_below(2) == 0) {
                    expected.push_back(length % 2 == 1 ? std::optional<u64>(version) : std::nullopt);
                    finds.push_back(map.find(key));
                }
            }
        }
        for (std::size_t i = 0; i < inserts.size(); ++i) {
            const auto result = inserts[i].get();
            fail_if(!result.stored || result.replaced != replaced[i], "insert result");
        }
        for (std::size_t i = 0; i < fresh.size(); ++i)
            fail_if(fresh[i].get() != was_absent[i], "insert_if_absent result");
        for (std::size_t i = 0; i < finds.size(); ++i)
            fail_if(finds[i].get() != expected[i], "find during the run");
        for (std::size_t i = 0; i < erases.size(); ++i)
            fail_if(erases[i].get() != present[i], "erase result");
        if (context.random_below(2) == 0) {
            // insert_many with repeated keys: the last value of each must win.
            std::vector<std::int64_t> keys;
            std::vector<u64> values;
            const int count = 2 + static_cast<int>(context.random_below(8));
            const u64 distinct = std::min<u64>(4, static_cast<u64>(setup.keys_per_rank));
            for (int i = 0; i < count; ++i) {
                keys.push_back(key_of(context.random_below(distinct)));
                values.push_back(++version);
                model[keys.back()] = version;
            }
            (void)map.insert_many(std::span<const std::int64_t>(keys), std::span<const u64>(values));
        }
    }
    map.flush();
    for (int index = 0; index < setup.keys_per_rank; ++index) {
        const std::int64_t key = key_of(static_cast<u64>(index));
        const auto it = model.find(key);
        const auto got = map.find(key).get();
        fail_if(got != (it == model.end() ? std::nullopt : std::optional<u64>(it->second)),
                "after the flush: key " + std::to_string(key));
    }
    // The whole list, in order: this rank's keys must be exactly its model.
    const auto all = map.range_from(std::numeric_limits<std::int64_t>::min()).get();
    std::map<std::int64_t, u64> mine;
    for (std::size_t i = 0; i < all.size(); ++i) {
        fail_if(i > 0 && !(all[i - 1].first < all[i].first), "range out of order");
        if (((all[i].first % size) + size) % size == rank)
            mine.emplace(all[i].first, all[i].second);
    }
    fail_if(mine != model, "whole-list range holds " + std::to_string(mine.size()) + " of this rank's keys, model " +
                               std::to_string(model.size()));
    // Latest N (descending with a limit, the walk from the top down that stops
    // at the limit) and floor lookups, against the whole list just read.
    for (const std::uint64_t limit : {1, 3, 17}) {
        const auto latest = map.range_from(std::numeric_limits<std::int64_t>::min(),
                                           {.limit = limit, .descending = true}).get();
        const std::size_t expected = std::min<std::size_t>(limit, all.size());
        fail_if(latest.size() != expected ||
                    !std::equal(latest.begin(), latest.end(), all.rbegin(),
                                [](const auto& a, const auto& b) { return a.first == b.first && a.second == b.second; }),
                "latest " + std::to_string(limit) + ": " + std::to_string(latest.size()) + " entries, not the last " +
                    std::to_string(expected) + " of the whole list");
    }
    for (std::size_t probe = 0; probe < all.size(); probe += 1 + all.size() / 7) {
        const std::int64_t key = all[probe].first;
        const auto floor = map.range(std::numeric_limits<std::int64_t>::min(), key - 1,
                                     {.limit = 1, .descending = true}).get();
        fail_if(probe == 0 ? !floor.empty() : floor.size() != 1 || floor[0].first != all[probe - 1].first,
                "the floor below " + std::to_string(key));
    }
    map.flush();
    const std::string problem = map.check_local_invariants();
    fail_if(!problem.empty(), problem);
    std::int64_t counts[2] = {static_cast<std::int64_t>(map.local_size()), static_cast<std::int64_t>(model.size())};
    std::int64_t sums[2] = {0, 0};
    map.engine().sum(counts, sums);
    fail_if(sums[0] != sums[1], "stored " + std::to_string(sums[0]) + " entries, models hold " + std::to_string(sums[1]));
    const auto stats = map.local_statistics();
    shared.splits += stats.splits;
    shared.held += stats.held;
    shared.nodes += stats.nodes;
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    const sim_test::command_line cli = sim_test::parse_command_line(argc, argv);
    sim_test::install_crash_handler();
    const bool unordered = sim_test::has_flag(cli, "--unordered");
    const bool expect_failure = sim_test::has_flag(cli, "--expect-failure");
    g_no_chains = sim_test::has_flag(cli, "--no-chains");
    std::vector<int> ranks = cli.ranks_given ? cli.ranks : std::vector<int>{1, 2, 3, 5, 8, 16};
    const long long seeds = cli.seeds >= 0 ? cli.seeds : cli.soak ? 1'000'000'000LL : 40;
    const double minutes = cli.minutes > 0 ? cli.minutes : cli.soak ? 10.0 : 0.0;
    const sim_test::stopwatch clock;
    long long runs = 0, failed = 0;
    totals sum;
    const std::string flags = unordered ? "--unordered" : "";
    for (long long index = 0; index < seeds && (failed < 3 && !(expect_failure && failed > 0)); ++index) {
        for (int count : ranks) {
            if (minutes > 0 && clock.seconds() > minutes * 60)
                break;
            const u64 seed = cli.first_seed + static_cast<u64>(index);
            sim_test::set_crash_note(cli, count, seed, flags);
            const shape setup = make_shape(count, seed, cli.ops);
            sim::options options;
            if (cli.trace)
                options.trace_stream = stderr;
            totals shared;
            const sim::result outcome = sim::run(count, seed, options, [&](int rank, sim::sim_context& context) {
                workload(rank, context, setup, unordered, shared);
            });
            ++runs;
            sum.checks += shared.checks;
            sum.splits += shared.splits;
            sum.held += shared.held;
            sum.nodes += shared.nodes;
            if (cli.verbose || cli.single_seed)
                std::fprintf(stderr, "seed %" PRIu64 " ranks %d: %s; %" PRIu64 " steps, %" PRIu64 " splits, %s\n", seed,
                             count, outcome.ok ? "ok" : "FAILED", outcome.steps, shared.splits,
                             setup.describe().c_str());
            if (!outcome.ok) {
                ++failed;
                if (!expect_failure)
                    sim_test::print_failure(cli, outcome, flags, setup.describe());
                else
                    std::printf("expected failure found: %s\n", outcome.failure.c_str());
            }
        }
    }
    std::printf("sim skiplist_map%s: %lld runs, %lld failed; %" PRIu64 " checks, %" PRIu64 " splits, %" PRIu64
                " requests held behind splits and markers, %" PRIu64 " nodes (%.1f s)\n",
                unordered ? " (markers off)" : "", runs, failed, sum.checks, sum.splits, sum.held, sum.nodes,
                clock.seconds());
    if (expect_failure)
        return failed > 0 ? 0 : 1;
    return failed == 0 ? 0 : 1;
}
