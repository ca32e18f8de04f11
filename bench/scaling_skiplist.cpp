// bench/scaling's skiplist_map phases (scaling_skiplist.hpp; issue 45).
//
// Keys.  The list holds the dense keys 0 .. N − 1, N = n·p: rank r inserts the
// keys (g·A) mod N of its global indexes g = r·n .. r·n + n − 1, A an odd
// constant coprime to N, so every rank's keys are spread uniformly over the
// key space (and over the nodes) and a range's answer is known exactly.  A
// value is a function of its key.
//
// Phases, each from a barrier to the slowest rank's end (its flush included):
//   skiplist_insert_many          insert_many of the rank's n keys (sequential)
//   skiplist_find_many_sequential find_many of the same keys, mode sequential
//                                 (two rounds: _first_round_* right after the
//                                 load, then the figure itself)
//   skiplist_find_many_none       the same, mode none
//   skiplist_find_total_order     find_many of the first --total-order-keys of
//                                 them, mode total_order (every find enters at
//                                 the head: seed 004's Figure 8 bottleneck)
//   skiplist_range_R              R = 100, 1,000, 10,000: --range-entries / R
//                                 bounded ranges [s, s + R − 1] per rank from
//                                 uniform starts (mode none, as the seed's
//                                 Figure 9), --window in flight; exactly R entries
//   skiplist_mix                  --mix-operations per rank: 60% find, 20%
//                                 insert, 20% erase of uniform keys (mode none;
//                                 the seed's Figures 10-11 with finds)
//   skiplist_pattern_D            D = 1..6: a new list of about N grid points
//                                 (keys std::array<uint32_t, 6>, the first D
//                                 coordinates spanning e^D points, e = round(N^(1/D)));
//                                 --pattern-queries match() boxes of at most
//                                 4,096 points per rank (the seed's Figure 12),
//                                 exactly the box checked
// Besides times and rates: messages a rank sent per phase (mean), hops per
// find, the share of finds that entered through the directory, head visits per
// find, range parts per query.
#include "scaling_skiplist.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <deque>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <utility>
#include <vector>

#include <mpi.h>

#include "mpidict/local/hash.hpp"
#include "mpidict/skiplist_map.hpp"

namespace mpidict::bench::scaling {

namespace {

using list_type = skiplist_map<std::uint64_t, std::uint64_t>;
using grid_key = std::array<std::uint32_t, 6>;
using grid_list = skiplist_map<grid_key, std::uint64_t>;

std::uint64_t value_of(std::uint64_t key) { return mix64(key ^ 0x5bd1e9955bd1e995ULL); }
std::uint64_t value_of(const grid_key& key) {
    std::uint64_t hash = 0x9E3779B97F4A7C15ULL;
    for (const std::uint32_t coordinate : key)
        hash = mix64(hash ^ coordinate);
    return hash;
}

std::uint64_t total(MPI_Comm comm, std::uint64_t value) {
    std::uint64_t result = 0;
    MPI_Allreduce(&value, &result, 1, MPI_UINT64_T, MPI_SUM, comm);
    return result;
}

// Wrong answers: counted, the first few described on stderr.
struct checker {
    int rank = 0;
    std::uint64_t failures = 0;
    void fail(const std::string& what) {
        if (failures++ < 3)
            std::fprintf(stderr, "scaling: rank %d: %s\n", rank, what.c_str());
    }
};

bool runs(const skiplist_settings& s, const char* phase) {
    return s.phases == "skiplist" || s.phases == phase;
}

skiplist_map_config list_config(const skiplist_settings& s, std::size_t key_bytes) {
    skiplist_map_config config;
    config.runtime = s.runtime;
    config.max_key_bytes = key_bytes;
    config.max_value_bytes = 8;
    config.seed = s.seed;
    // Enough slots for n·p keys in nodes at least a quarter full on any rank
    // (nodes go round robin over the ranks), and no more: every simulated rank
    // lives in one process.
    config.node_slots_per_rank = static_cast<std::size_t>(8 * s.keys_per_rank / config.granularity + 64);
    config.runtime.buffer_bytes = std::max(config.runtime.buffer_bytes, config.required_buffer_bytes());
    return config;
}

// The widths of a pattern query's box: D values within one of each other,
// product at most `limit` and as large as possible (apps/ycsb's rule).
std::vector<std::uint64_t> box_widths(std::uint64_t dimensions, std::uint64_t limit) {
    auto base = static_cast<std::uint64_t>(std::floor(std::pow(static_cast<double>(limit), 1.0 / dimensions) + 1e-9));
    while (base > 1 && std::pow(static_cast<double>(base), static_cast<double>(dimensions)) > static_cast<double>(limit))
        --base;
    std::vector<std::uint64_t> widths(dimensions, std::max<std::uint64_t>(base, 1));
    for (std::size_t d = 0; d < widths.size(); ++d) {
        double product = 1;
        for (std::size_t e = 0; e < widths.size(); ++e)
            product *= static_cast<double>(e == d ? widths[e] + 1 : widths[e]);
        if (product <= static_cast<double>(limit))
            ++widths[d];
    }
    return widths;
}

// Runs `issue(i)` for i < count with at most `window` requests in flight,
// completing them in issue order with `finish(request, i)`.
template <class Request, class Issue, class Finish>
void windowed(std::uint64_t count, std::uint64_t window, Issue&& issue, Finish&& finish) {
    std::deque<std::pair<std::uint64_t, Request>> pending;
    for (std::uint64_t i = 0; i < count || !pending.empty();) {
        while (i < count && pending.size() < std::max<std::uint64_t>(1, window)) {
            pending.emplace_back(i, issue(i));
            ++i;
        }
        finish(pending.front().second, pending.front().first);
        pending.pop_front();
    }
}

struct phase_counts {
    std::uint64_t messages = 0;
    skiplist_map_local_statistics stats{};
};

template <class List>
phase_counts counts_of(List& list) {
    return {list.stats().messages_sent, list.local_statistics()};
}

// Messages a rank sent during a phase (mean over ranks).
template <class List>
double messages_per_rank(MPI_Comm comm, int ranks, List& list, const phase_counts& before) {
    return static_cast<double>(total(comm, list.stats().messages_sent - before.messages)) / ranks;
}

void run_list(const skiplist_settings& s, const world& w, report& out, checker& check) {
    const std::uint64_t n = s.keys_per_rank;
    const std::uint64_t p = static_cast<std::uint64_t>(w.size);
    const std::uint64_t all = n * p;
    std::uint64_t multiplier = 2654435761ULL % all;  // coprime to N: a bijection of 0 .. N − 1
    while (all > 1 && std::gcd(multiplier, all) != 1)
        multiplier = (multiplier + 2) % all;
    std::vector<std::uint64_t> keys(n);
    std::vector<std::uint64_t> values(n);
    for (std::uint64_t i = 0; i < n; ++i) {
        const unsigned __int128 g = static_cast<unsigned __int128>(static_cast<std::uint64_t>(w.rank) * n + i);
        keys[i] = static_cast<std::uint64_t>(g * multiplier % all);
        values[i] = value_of(keys[i]);
    }
    skiplist_map_config config = list_config(s, 8);
    config.consistency = skiplist_consistency::sequential;
    list_type list(w.comm, config);
    out.context().add("routing", std::string(runtime::routing_name(list.engine().routing())));

    auto before = counts_of(list);
    std::uint64_t added = 0;
    const double insert = slowest_seconds(w.comm, [&] {
        added = list.insert_many(std::span<const std::uint64_t>(keys), std::span<const std::uint64_t>(values)).added();
        list.flush();
    });
    if (added != n)
        check.fail("skiplist insert_many added " + std::to_string(added) + " of " + std::to_string(n) + " keys");
    out.figure("skiplist_insert_many_seconds", insert, "s");
    out.figure("skiplist_insert_many_rate", static_cast<double>(all) / insert, "ops/s");
    out.figure("skiplist_insert_many_messages_per_rank", messages_per_rank(w.comm, w.size, list, before), "messages");
    {
        const auto stats = list.local_statistics();
        out.figure("skiplist_nodes", static_cast<double>(total(w.comm, stats.nodes)), "nodes");
        if (total(w.comm, stats.entries) != all)
            check.fail("the list holds " + std::to_string(total(w.comm, stats.entries)) + " entries, not " +
                       std::to_string(all));
    }

    if (runs(s, "skiplist_core")) {
        // Figure 8: find_many of every key per mode; total_order on a share.
        const std::uint64_t head_keys = std::min(n, s.total_order_keys);
        for (const skiplist_consistency mode :
             {skiplist_consistency::sequential, skiplist_consistency::none, skiplist_consistency::total_order}) {
            list.set_consistency(mode);
            const std::uint64_t count = mode == skiplist_consistency::total_order ? head_keys : n;
            const std::string name = mode == skiplist_consistency::total_order
                                         ? "skiplist_find_total_order"
                                         : std::string("skiplist_find_many_") + to_string(mode);
            // Two rounds: the first right after the load (a caller's directory
            // holds the nodes as its inserts' answers named them, before later
            // splits moved keys on), reported as <name>_first_round_*; the
            // second with what the first taught it, reported as <name>_*.
            for (int round = 0; round < 2; ++round) {
                const std::string label = round == 0 ? name + "_first_round" : name;
                before = counts_of(list);
                std::uint64_t hits = 0;
                const double seconds = slowest_seconds(w.comm, [&] {
                    list.find_many(std::span<const std::uint64_t>(keys.data(), count),
                                   [&](std::size_t index, const std::optional<std::uint64_t>& value) {
                                       hits += value && *value == values[index];
                                   });
                    list.flush();
                });
                if (hits != count)
                    check.fail(label + " found " + std::to_string(hits) + " of " + std::to_string(count) + " keys");
                const auto after = list.local_statistics();
                const double finds = static_cast<double>(count * p);
                const double answers = static_cast<double>(total(w.comm, after.answers - before.stats.answers));
                const double hops = static_cast<double>(total(w.comm, after.answer_hops - before.stats.answer_hops));
                const auto extra = json_object().add("finds_per_rank", count).add("round", round + 1);
                out.figure(label + "_seconds", seconds, "s", extra);
                out.figure(label + "_rate", finds / seconds, "ops/s", extra);
                out.figure(label + "_messages_per_rank", messages_per_rank(w.comm, w.size, list, before), "messages");
                out.figure(label + "_hops_per_find", answers > 0 ? hops / answers : 0, "hops");
                out.figure(label + "_shortcut_share",
                           static_cast<double>(total(w.comm, after.shortcut_entries - before.stats.shortcut_entries)) /
                               finds,
                           "ratio");
                out.figure(label + "_head_visits_per_find",
                           static_cast<double>(total(w.comm, after.head_visits - before.stats.head_visits)) / finds,
                           "visits");
            }
        }
    }

    list.set_consistency(skiplist_consistency::none);
    if (runs(s, "skiplist_ranges")) {
        // Figure 9: bounded ranges of R entries from uniform starts.
        for (const std::uint64_t r : {std::uint64_t{100}, std::uint64_t{1000}, std::uint64_t{10000}}) {
            const std::string name = "skiplist_range_" + std::to_string(r);
            if (all < 2 * r) {
                out.skipped(name + "_seconds", "s", "fewer than 2R keys in the list");
                continue;
            }
            const std::uint64_t queries = std::max<std::uint64_t>(1, s.range_entries / r);
            std::mt19937_64 random(s.seed * 31 + static_cast<std::uint64_t>(w.rank) * 7 + r);
            std::vector<std::uint64_t> starts(queries);
            for (std::uint64_t& start : starts)
                start = random() % (all - r + 1);
            before = counts_of(list);
            std::uint64_t entries = 0;
            const double seconds = slowest_seconds(w.comm, [&] {
                windowed<request<list_type::entry_list>>(
                    queries, s.window, [&](std::uint64_t i) { return list.range(starts[i], starts[i] + r - 1); },
                    [&](request<list_type::entry_list>& query, std::uint64_t i) {
                        const list_type::entry_list got = query.get();
                        entries += got.size();
                        bool right = got.size() == r;
                        for (std::size_t k = 0; right && k < got.size(); ++k)
                            right = got[k].first == starts[i] + k && got[k].second == value_of(got[k].first);
                        if (!right)
                            check.fail(name + ": the range from " + std::to_string(starts[i]) + " returned " +
                                       std::to_string(got.size()) + " entries, not exactly its keys");
                    });
                list.flush();
            });
            const auto after = list.local_statistics();
            const double all_queries = static_cast<double>(queries * p);
            const auto extra = json_object().add("queries_per_rank", queries).add("range", r);
            out.figure(name + "_seconds", seconds, "s", extra);
            out.figure(name + "_rate", all_queries / seconds, "ops/s", extra);
            out.figure(name + "_entries_rate", static_cast<double>(total(w.comm, entries)) / seconds, "entries/s");
            out.figure(name + "_parts_per_query",
                       static_cast<double>(total(w.comm, after.range_parts - before.stats.range_parts)) / all_queries,
                       "messages");
            out.figure(name + "_messages_per_rank", messages_per_rank(w.comm, w.size, list, before), "messages");
        }
    }

    if (runs(s, "skiplist_mix")) {
        // Figures 10-11 with finds: 60% find, 20% insert, 20% erase.
        struct operation {
            int kind = 0;  // 0 find, 1 insert, 2 erase
            std::uint64_t key = 0;
        };
        std::mt19937_64 random(s.seed * 131 + static_cast<std::uint64_t>(w.rank));
        std::vector<operation> operations(s.mix_operations);
        for (operation& each : operations) {
            const std::uint64_t draw = random() % 10;
            each.kind = draw < 6 ? 0 : draw < 8 ? 1 : 2;
            each.key = random() % all;
        }
        struct pending {
            std::optional<request<std::optional<std::uint64_t>>> find;
            std::optional<request<replace_result>> insert;
            std::optional<request<bool>> erase;
        };
        before = counts_of(list);
        const double seconds = slowest_seconds(w.comm, [&] {
            windowed<pending>(
                operations.size(), s.window,
                [&](std::uint64_t i) {
                    pending each;
                    const operation& op = operations[i];
                    if (op.kind == 0)
                        each.find.emplace(list.find(op.key));
                    else if (op.kind == 1)
                        each.insert.emplace(list.insert(op.key, value_of(op.key)));
                    else
                        each.erase.emplace(list.erase(op.key));
                    return each;
                },
                [&](pending& each, std::uint64_t i) {
                    const operation& op = operations[i];
                    if (each.find) {
                        if (const auto found = each.find->get(); found && *found != value_of(op.key))
                            check.fail("skiplist_mix: find " + std::to_string(op.key) + " returned a wrong value");
                    } else if (each.insert) {
                        if (!each.insert->get().stored)
                            check.fail("skiplist_mix: insert " + std::to_string(op.key) + " refused");
                    } else {
                        (void)each.erase->get();
                    }
                });
            list.flush();
        });
        const auto extra = json_object().add("operations_per_rank", s.mix_operations);
        out.figure("skiplist_mix_seconds", seconds, "s", extra);
        out.figure("skiplist_mix_rate", static_cast<double>(s.mix_operations * p) / seconds, "ops/s", extra);
        out.figure("skiplist_mix_messages_per_rank", messages_per_rank(w.comm, w.size, list, before), "messages");
        if (const std::string problem = list.check_local_invariants(); !problem.empty())
            check.fail("skiplist_mix: list invariants: " + problem);
    }
    list.destroy();
}

void run_patterns(const skiplist_settings& s, const world& w, report& out, checker& check) {
    const std::uint64_t all = s.keys_per_rank * static_cast<std::uint64_t>(w.size);
    for (std::size_t d = 1; d <= 6; ++d) {
        const std::string name = "skiplist_pattern_" + std::to_string(d);
        const auto extent = std::max<std::uint64_t>(
            2, static_cast<std::uint64_t>(std::llround(std::pow(static_cast<double>(all), 1.0 / static_cast<double>(d)))));
        std::vector<std::uint64_t> widths = box_widths(d, 4096);
        std::uint64_t grid = 1;
        std::uint64_t expected = 1;
        std::string box;
        for (std::size_t i = 0; i < d; ++i) {
            widths[i] = std::min(widths[i], extent);
            grid *= extent;
            expected *= widths[i];
            box += (i == 0 ? "" : "x") + std::to_string(widths[i]);
        }
        skiplist_settings sized = s;
        sized.keys_per_rank = grid / static_cast<std::uint64_t>(w.size) + 1;
        skiplist_map_config config = list_config(sized, 32);
        config.consistency = skiplist_consistency::none;
        grid_list list(w.comm, config);
        if (d == 1 && s.phases == "skiplist_patterns")
            out.context().add("routing", std::string(runtime::routing_name(list.engine().routing())));
        {
            std::vector<grid_key> keys;
            std::vector<std::uint64_t> values;
            for (std::uint64_t index = static_cast<std::uint64_t>(w.rank); index < grid;
                 index += static_cast<std::uint64_t>(w.size)) {
                grid_key key{};
                std::uint64_t rest = index;
                for (std::size_t i = d; i-- > 0;) {
                    key[i] = static_cast<std::uint32_t>(rest % extent);
                    rest /= extent;
                }
                keys.push_back(key);
                values.push_back(value_of(key));
            }
            if (const insert_many_result loaded = list.insert_many(keys, values); !loaded.complete())
                check.fail(name + ": the list refused " + std::to_string(loaded.refused) + " grid keys");
            list.flush();
        }
        std::mt19937_64 random(s.seed * 17 + static_cast<std::uint64_t>(w.rank) * 13 + d);
        std::vector<grid_key> corners(s.pattern_queries);
        std::vector<std::string> texts(s.pattern_queries);
        for (std::uint64_t q = 0; q < s.pattern_queries; ++q) {
            for (std::size_t i = 0; i < 6; ++i) {
                if (i < d) {
                    const auto at = static_cast<std::uint32_t>(random() % (extent - widths[i] + 1));
                    corners[q][i] = at;
                    texts[q].append("[").append(std::to_string(at)).append(",");
                    texts[q].append(std::to_string(at + widths[i] - 1)).append("]");
                } else {
                    texts[q] += "0";
                }
                if (i + 1 < 6)
                    texts[q] += ".";
            }
        }
        const phase_counts before = counts_of(list);
        std::uint64_t entries = 0;
        const double seconds = slowest_seconds(w.comm, [&] {
            windowed<request<grid_list::entry_list>>(
                s.pattern_queries, s.window, [&](std::uint64_t q) { return list.match(texts[q]); },
                [&](request<grid_list::entry_list>& query, std::uint64_t q) {
                    const grid_list::entry_list got = query.get();
                    entries += got.size();
                    bool right = got.size() == expected;
                    for (std::size_t i = 0; right && i < got.size(); ++i) {
                        right = got[i].second == value_of(got[i].first) && (i == 0 || got[i - 1].first < got[i].first);
                        for (std::size_t k = 0; k < 6 && right; ++k) {
                            const std::uint32_t c = got[i].first[k];
                            right = k < d ? (c >= corners[q][k] && c < corners[q][k] + widths[k]) : c == 0;
                        }
                    }
                    if (!right)
                        check.fail(name + ": the query " + texts[q] + " returned " + std::to_string(got.size()) +
                                   " entries, not exactly its box of " + std::to_string(expected));
                });
            list.flush();
        });
        const auto after = list.local_statistics();
        const double queries = static_cast<double>(s.pattern_queries * static_cast<std::uint64_t>(w.size));
        const auto extra = json_object().add("box", box).add("grid", grid).add("queries_per_rank", s.pattern_queries);
        out.figure(name + "_seconds", seconds, "s", extra);
        out.figure(name + "_rate", queries / seconds, "ops/s", extra);
        out.figure(name + "_entries_rate", static_cast<double>(total(w.comm, entries)) / seconds, "entries/s");
        out.figure(name + "_parts_per_query",
                   static_cast<double>(total(w.comm, after.range_parts - before.stats.range_parts)) / queries,
                   "messages");
        out.figure(name + "_messages_per_rank", messages_per_rank(w.comm, w.size, list, before), "messages");
        list.destroy();
    }
}

}  // namespace

bool is_skiplist_phase(const std::string& phases) {
    return phases == "skiplist" || phases == "skiplist_core" || phases == "skiplist_ranges" ||
           phases == "skiplist_mix" || phases == "skiplist_patterns";
}

std::uint64_t run_skiplist_phases(const skiplist_settings& s, const world& w, report& out) {
    checker check;
    check.rank = w.rank;
    if (runs(s, "skiplist_core") || runs(s, "skiplist_ranges") || runs(s, "skiplist_mix"))
        run_list(s, w, out, check);
    if (runs(s, "skiplist_patterns"))
        run_patterns(s, w, out, check);
    return check.failures;
}

}  // namespace mpidict::bench::scaling
