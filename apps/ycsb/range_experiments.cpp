// skiplist_ranges: seed 004's range experiments (range_experiments.hpp).
#include "ycsb/range_experiments.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <vector>

#include "mpidict/key_pattern.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/skiplist_map.hpp"
#include "mpidict/support/host.hpp"
#include "mpidict/support/json.hpp"
#include "mpidict/support/program.hpp"
#include "mpidict/support/text.hpp"
#include "mpidict/support/yielding.hpp"
#include "ycsb/generators.hpp"

namespace mpidict::apps::ycsb {

namespace {

using clock_type = std::chrono::steady_clock;
using grid_key = std::array<std::uint32_t, 6>;

std::uint64_t value_of(std::uint64_t key) { return mix64(key ^ 0x5bd1e995ULL); }
std::uint64_t value_of(const grid_key& key) {
    std::uint64_t hash = 0x9E3779B97F4A7C15ULL;
    for (const std::uint32_t coordinate : key)
        hash = mix64(hash ^ coordinate);
    return hash;
}

// Failures counted and the first described.
struct checker {
    std::uint64_t failures = 0;
    std::string first;
    int rank = 0;
    void fail(const std::string& what) {
        if (failures++ == 0)
            first = "rank " + std::to_string(rank) + ": " + what;
    }
};

// The interval widths of a pattern query: D values within one of each other,
// product at most `limit` and as large as possible.
std::vector<std::uint64_t> box_widths(std::uint64_t dimensions, std::uint64_t limit) {
    auto base = static_cast<std::uint64_t>(std::floor(std::pow(static_cast<double>(limit), 1.0 / dimensions) + 1e-9));
    while (base > 1 && std::pow(static_cast<double>(base), static_cast<double>(dimensions)) > static_cast<double>(limit))
        --base;
    std::vector<std::uint64_t> widths(dimensions, std::max<std::uint64_t>(base, 1));
    // Widen dimensions one at a time while the product stays within the limit.
    for (std::size_t d = 0; d < widths.size(); ++d) {
        double product = 1;
        for (std::size_t e = 0; e < widths.size(); ++e)
            product *= static_cast<double>(e == d ? widths[e] + 1 : widths[e]);
        if (product <= static_cast<double>(limit))
            ++widths[d];
    }
    return widths;
}

template <class Map>
void gather_messages(Map& map, MPI_Comm comm, std::uint64_t& messages) {
    const skiplist_map_local_statistics stats = map.local_statistics();
    std::uint64_t local = stats.range_parts + stats.answers;
    MPI_Allreduce(&local, &messages, 1, MPI_UINT64_T, MPI_SUM, comm);
}

// Keeps `window` operations in flight until `operations` are done, timed from a
// barrier to the end of the map's flush: start(slot) begins one in a free slot,
// poll(slot) returns true once that slot's operation has completed (and has
// handled its answer).  Then sums the rates' counts into `result`.
template <class Slot, class Map, class Start, class Poll>
void run_windowed(MPI_Comm comm, Map& map, const range_experiment_options& options, const std::uint64_t& key_values,
                  range_experiment_result& result, Start&& start, Poll&& poll) {
    std::vector<Slot> slots(std::max<std::uint64_t>(1, options.window));
    std::vector<bool> active(slots.size(), false);
    std::uint64_t started = 0;
    std::uint64_t done = 0;
    support::poll_backoff backoff(support::node_oversubscribed(comm));
    support::barrier_yielding(comm);
    const auto began = clock_type::now();
    while (done < options.operations) {
        for (std::size_t i = 0; i < slots.size() && started < options.operations; ++i) {
            if (active[i])
                continue;
            active[i] = true;
            ++started;
            start(slots[i]);
        }
        bool progressed = false;
        for (std::size_t i = 0; i < slots.size(); ++i) {
            if (active[i] && poll(slots[i])) {
                active[i] = false;
                ++done;
                progressed = true;
            }
        }
        backoff(progressed);
    }
    map.flush();
    const double seconds = std::chrono::duration<double>(clock_type::now() - began).count();
    MPI_Allreduce(&seconds, &result.seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
    MPI_Allreduce(&key_values, &result.key_values, 1, MPI_UINT64_T, MPI_SUM, comm);
    gather_messages(map, comm, result.messages);
}

// Inserts the experiment's keys and flushes; a key the list refuses (list_full)
// fails the run.
template <class Map, class Key>
void load(Map& map, const std::vector<Key>& keys, const std::vector<std::uint64_t>& values) {
    if (const mpidict::insert_many_result loaded = map.insert_many(keys, values); !loaded.complete())
        throw mpidict::error("mpidict ycsb: the list refused " + std::to_string(loaded.refused) +
                             " loaded keys (list_full)");
    map.flush();
}

// ---- size and mix -------------------------------------------------------------

void run_flat(MPI_Comm comm, int rank, int ranks, const range_experiment_options& options,
              range_experiment_result& result, checker& check) {
    using map_type = skiplist_map<std::uint64_t, std::uint64_t>;
    skiplist_map_config config;
    config.consistency = skiplist_consistency_named(options.consistency).value();  // --consistency checked it
    map_type map(comm, config);
    const std::uint64_t n = options.keys;
    {  // load: keys i with i % p == rank
        std::vector<std::uint64_t> keys;
        std::vector<std::uint64_t> values;
        for (std::uint64_t key = static_cast<std::uint64_t>(rank); key < n; key += static_cast<std::uint64_t>(ranks)) {
            keys.push_back(key);
            values.push_back(value_of(key));
        }
        load(map, keys, values);
    }
    result.grid = n;
    map.reset_statistics();
    const bool mix = options.experiment == "mix";
    const bool mix_finds = mix && options.mix == "find";
    const std::uint64_t r = options.size;
    random_source random(options.seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank) + 7);
    const std::int64_t start_span = static_cast<std::int64_t>(n - 2 * r + 1);

    struct slot {
        int kind = 0;  // 0 range, 1 find, 2 insert, 3 erase
        std::uint64_t key = 0;
        std::optional<request<map_type::entry_list>> range;
        std::optional<request<std::optional<std::uint64_t>>> find;
        std::optional<request<replace_result>> insert;
        std::optional<request<bool>> erase;
    };
    std::uint64_t key_values = 0;
    const auto start = [&](slot& each) {
        const double draw = mix ? random.next_double() : 0;
        if (draw < 0.6) {
            if (mix_finds) {
                each.kind = 1;
                each.key = static_cast<std::uint64_t>(random.next_below(static_cast<std::int64_t>(n)));
                each.find.emplace(map.find(each.key));
            } else {
                each.kind = 0;
                each.key = static_cast<std::uint64_t>(random.next_below(start_span));
                range_options limit;
                limit.limit = r;
                each.range.emplace(map.range_from(each.key, limit));
            }
            return;
        }
        each.key = static_cast<std::uint64_t>(random.next_below(static_cast<std::int64_t>(n)));
        if (draw < 0.8) {
            each.kind = 2;
            each.insert.emplace(map.insert(each.key, value_of(each.key)));
        } else {
            each.kind = 3;
            each.erase.emplace(map.erase(each.key));
        }
    };
    const auto check_range = [&](const slot& each, const map_type::entry_list& entries) {
        key_values += entries.size();
        if (entries.size() > r || (!mix && entries.size() != r))
            check.fail("range from " + std::to_string(each.key) + " returned " + std::to_string(entries.size()) +
                       " entries, asked for " + std::to_string(r));
        for (std::size_t i = 0; i < entries.size(); ++i) {
            if (entries[i].first < each.key || (i > 0 && entries[i].first <= entries[i - 1].first) ||
                entries[i].second != value_of(entries[i].first)) {
                check.fail("range from " + std::to_string(each.key) + ": entry " + std::to_string(i) + " (key " +
                           std::to_string(entries[i].first) + ") out of order or wrong");
                return;
            }
        }
        // Without deletes the keys are dense: exactly start .. start + R - 1.
        if (!mix && !entries.empty() && entries.back().first != each.key + r - 1)
            check.fail("range from " + std::to_string(each.key) + " ended at " + std::to_string(entries.back().first));
    };
    const auto poll = [&](slot& each) {
        switch (each.kind) {
        case 0:
            if (!each.range->test())
                return false;
            check_range(each, each.range->get());
            each.range.reset();
            return true;
        case 1:
            if (!each.find->test())
                return false;
            if (const std::optional<std::uint64_t> found = each.find->get()) {
                ++key_values;
                if (*found != value_of(each.key))
                    check.fail("find " + std::to_string(each.key) + " returned a wrong value");
            }
            each.find.reset();
            return true;
        case 2:
            if (!each.insert->test())
                return false;
            if (!each.insert->get().stored)
                check.fail("insert " + std::to_string(each.key) + " refused");
            each.insert.reset();
            return true;
        default:
            if (!each.erase->test())
                return false;
            (void)each.erase->get();
            each.erase.reset();
            return true;
        }
    };
    run_windowed<slot>(comm, map, options, key_values, result, start, poll);
    if (const std::string problem = map.check_local_invariants(); !problem.empty())
        check.fail("list invariants: " + problem);
}

// ---- dimensions -------------------------------------------------------------------

void run_dimensions(MPI_Comm comm, int rank, int ranks, const range_experiment_options& options,
                    range_experiment_result& result, checker& check) {
    using map_type = skiplist_map<grid_key, std::uint64_t>;
    const auto d = static_cast<std::size_t>(options.dimensions);
    const auto extent = std::max<std::uint64_t>(
        2, static_cast<std::uint64_t>(std::llround(std::pow(static_cast<double>(options.keys), 1.0 / static_cast<double>(d)))));
    std::vector<std::uint64_t> widths = box_widths(options.dimensions, options.result_size);
    for (std::uint64_t& width : widths)
        width = std::min(width, extent);
    std::uint64_t grid = 1;
    std::uint64_t expected = 1;
    for (std::size_t i = 0; i < d; ++i) {
        grid *= extent;
        expected *= widths[i];
    }
    result.grid = grid;
    for (std::size_t i = 0; i < d; ++i)
        result.box += (i == 0 ? "" : "x") + std::to_string(widths[i]);
    skiplist_map_config config;
    config.consistency = skiplist_consistency_named(options.consistency).value();  // --consistency checked it
    map_type map(comm, config);
    {
        std::vector<grid_key> keys;
        std::vector<std::uint64_t> values;
        for (std::uint64_t index = static_cast<std::uint64_t>(rank); index < grid; index += static_cast<std::uint64_t>(ranks)) {
            grid_key key{};
            std::uint64_t rest = index;
            for (std::size_t i = d; i-- > 0;) {
                key[i] = static_cast<std::uint32_t>(rest % extent);
                rest /= extent;
            }
            keys.push_back(key);
            values.push_back(value_of(key));
        }
        load(map, keys, values);
    }
    map.reset_statistics();
    random_source random(options.seed * 0x9E3779B97F4A7C15ULL + static_cast<std::uint64_t>(rank) + 11);
    struct slot {
        grid_key lo{};
        std::optional<request<map_type::entry_list>> query;
    };
    std::uint64_t key_values = 0;
    const auto start = [&](slot& each) {
        std::string text;
        each.lo = {};
        for (std::size_t i = 0; i < 6; ++i) {
            if (i < d) {
                const auto at =
                    static_cast<std::uint32_t>(random.next_below(static_cast<std::int64_t>(extent - widths[i] + 1)));
                each.lo[i] = at;
                text += "[" + std::to_string(at) + "," + std::to_string(at + widths[i] - 1) + "]";
            } else {
                text += "0";
            }
            if (i + 1 < 6)
                text += ".";
        }
        each.query.emplace(map.match(text));
    };
    const auto poll = [&](slot& each) {
        if (!each.query->test())
            return false;
        const map_type::entry_list entries = each.query->get();
        each.query.reset();
        key_values += entries.size();
        if (entries.size() != expected)
            check.fail("pattern query returned " + std::to_string(entries.size()) + " entries, expected " +
                       std::to_string(expected));
        for (std::size_t i = 0; i < entries.size(); ++i) {
            bool inside =
                entries[i].second == value_of(entries[i].first) && (i == 0 || entries[i - 1].first < entries[i].first);
            for (std::size_t k = 0; k < 6 && inside; ++k) {
                const std::uint32_t c = entries[i].first[k];
                inside = k < d ? (c >= each.lo[k] && c < each.lo[k] + widths[k]) : c == 0;
            }
            if (!inside) {
                check.fail("pattern query returned entry " + std::to_string(i) + " outside its box or out of order");
                break;
            }
        }
        return true;
    };
    run_windowed<slot>(comm, map, options, key_values, result, start, poll);
}

}  // namespace

range_experiment_result run_range_experiment(MPI_Comm comm, const range_experiment_options& options) {
    range_experiment_result result;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &result.ranks);
    result.load_average = support::read_load_average();
    checker check;
    check.rank = rank;
    if (options.experiment == "dimensions")
        run_dimensions(comm, rank, result.ranks, options, result, check);
    else
        run_flat(comm, rank, result.ranks, options, result, check);
    result.operations = options.operations * static_cast<std::uint64_t>(result.ranks);
    MPI_Allreduce(&check.failures, &result.failures, 1, MPI_UINT64_T, MPI_SUM, comm);
    result.first_failure = support::agree_on_failure(comm, check.first);
    return result;
}

int range_experiment_main(int argc, char** argv, MPI_Comm comm) {
    const std::string program = support::program_name(argc, argv, "skiplist_ranges");
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    const support::exit_reporter finish(argc, argv, program, comm);
    range_experiment_options options;
    bool trace_exit = false;
    support::option_parser parser(program + " [options]",
                                  "Seed 004's range experiments on skiplist_map (Section 3.2-3.3, Figures 9-12);\n"
                                  "see apps/ycsb/range_experiments.hpp and docs/ycsb.md.");
    parser.add_choice("experiment", &options.experiment, {"size", "mix", "dimensions"},
                      "size: 100% ranges of --size results; mix: 20% insert, 20% delete, 60% --mix; "
                      "dimensions: pattern queries over --dimensions D")
        .add_count("keys", &options.keys, "N: keys loaded (dimensions: a grid of about N points)", 16, std::uint64_t{1} << 32)
        .add_count("size", &options.size, "R: entries a range query returns at most", 1, std::uint64_t{1} << 24, "R")
        .add_choice("mix", &options.mix, {"find", "range"}, "the 60% of the mix experiment")
        .add_count("dimensions", &options.dimensions, "D: key dimensions of the pattern queries", 1, 6, "D")
        .add_count("result-size", &options.result_size, "most entries a pattern query returns", 1, std::uint64_t{1} << 24)
        .add_count("operations", &options.operations, "operations per rank", 1, std::uint64_t{1} << 32)
        .add_count("window", &options.window, "W: operations in flight per rank", 1, 1u << 16, "W")
        .add_choice("consistency", &options.consistency, {"total_order", "sequential", "none"},
                    "skiplist_map's consistency mode (the seed's figures: none)")
        .add_count("seed", &options.seed, "seed of the random choices")
        .add_flag("json", &options.json, "print JSON lines on stdout")
        .add_flag("trace-exit", &trace_exit, "each rank says with which code it exits (tests)")
        .add_check([&] {
            if (options.experiment != "dimensions" && 2 * options.size >= options.keys)
                throw support::usage_error("--size " + std::to_string(options.size) + " needs --keys above " +
                                           std::to_string(2 * options.size));
        });
    if (const auto stop = support::parse_collectively(comm, parser, support::arguments_of(argc, argv), program))
        return finish(*stop);
    const range_experiment_result result = run_range_experiment(comm, options);
    if (rank == 0) {
        support::json_object fields;
        fields.add("experiment", options.experiment)
            .add("keys", result.grid)
            .add("window", options.window)
            .add("consistency", options.consistency)
            .add("load_average", result.load_average);
        if (options.experiment == "dimensions")
            fields.add("dimensions", options.dimensions).add("box", result.box);
        else
            fields.add("size", options.size);
        if (options.experiment == "mix")
            fields.add("mix", options.mix);
        const double seconds = std::max(result.seconds, 1e-9);
        if (options.json) {
            support::print_json_line(stdout, "skiplist_ranges", "operations_per_second",
                                     static_cast<double>(result.operations) / seconds, "ops/s", ranks, options.seed, fields);
            support::print_json_line(stdout, "skiplist_ranges", "messages_per_second",
                                     static_cast<double>(result.messages) / seconds, "messages/s", ranks, options.seed, fields);
            support::print_json_line(stdout, "skiplist_ranges", "key_values_per_second",
                                     static_cast<double>(result.key_values) / seconds, "key-values/s", ranks, options.seed,
                                     fields);
            support::print_json_line(stdout, "skiplist_ranges", "verified", result.failures == 0 ? 1 : 0, "bool", ranks,
                                     options.seed, fields);
        }
        std::fprintf(stderr,
                     "%s %s on %d ranks (%s keys%s%s): %s operations in %s s: %s operations/s, %s messages/s, %s "
                     "key-values/s; verified: %s\n",
                     program.c_str(), options.experiment.c_str(), ranks, support::format_count(result.grid).c_str(),
                     result.box.empty() ? "" : ", box ", result.box.c_str(),
                     support::format_count(result.operations).c_str(), support::format_seconds(result.seconds).c_str(),
                     support::format_rate(static_cast<double>(result.operations) / seconds).c_str(),
                     support::format_rate(static_cast<double>(result.messages) / seconds).c_str(),
                     support::format_rate(static_cast<double>(result.key_values) / seconds).c_str(),
                     result.failures == 0 ? "yes" : "NO");
        if (result.failures != 0)
            std::fprintf(stderr, "%s: error: verification failed: %llu failed checks, first: %s\n", program.c_str(),
                         static_cast<unsigned long long>(result.failures), result.first_failure.c_str());
    }
    return finish(result.failures == 0 ? 0 : 1);
}

}  // namespace mpidict::apps::ycsb
