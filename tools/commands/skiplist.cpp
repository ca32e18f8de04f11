// `mpidict skiplist`: an ordered-dictionary workload on skiplist_map (seed 004).
//
// Phases, each timed from a barrier to the end of a collective flush:
//   load  every rank inserts its share of N keys (key indices i < N with
//         i % p == rank, in ascending index order) with async_insert;
//   mix   every rank runs its share of M operations drawn with the weights
//         --find/--insert/--erase/--range, starting W requests and then waiting
//         for all of them (seed 000's blocking factor); a range is YCSB's scan:
//         a start key and a count (--range-size).
// Keys: --order uniform uses a bijective scramble of the index (random 64-bit
// keys), --order ascending uses the index itself (the case that piles every
// node onto one rank under the seed's "local first" placement).  Inserts and
// erases of the mix touch only key indices of the originating rank (i % p ==
// rank, drawn from [0, 2N)), so each rank knows exactly which of its keys are
// stored: every find of its own keys is checked, and after the mix every rank
// looks all its keys up again.  Ranges see other ranks' concurrent changes, so
// they are checked for order, bounds, count and values (a value is a function
// of its key).  Finally the global size must equal the sum of the ranks' models.
// Elastic servers (issue 44): --servers-max M hosts nodes on ranks 0..M-1 and
// --servers-start S starts with S of them; the load then inserts with
// insert_many in chunks of --chunk keys per rank, each followed by a flush, at
// which the dormant ranks wake once every active server holds --grow-entries
// entries (the nodes move onto them).  --rebalance: rebalance() by entries
// after the load and by requests after the mix.  Every growth and rebalance is
// reported: nodes moved, entries, bytes, per-rank entries and load before/after.

#include <algorithm>
#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "mpidict/runtime/statistics.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/skiplist_map.hpp"

#include "common/command.hpp"
#include "mpidict/support/progress.hpp"
#include "common/report.hpp"

namespace mpidict::tool {
namespace {

struct skiplist_options {
    std::uint64_t keys = 200'000;
    std::uint64_t operations = 200'000;
    std::uint64_t find_weight = 60;
    std::uint64_t insert_weight = 20;
    std::uint64_t erase_weight = 10;
    std::uint64_t range_weight = 10;
    std::uint64_t range_size = 100;
    std::string order = "uniform";
    std::uint64_t window = 256;
    std::uint64_t granularity = skiplist_map_config{}.granularity;
    std::uint64_t buffer_bytes = 0;
    std::uint64_t seed = 1;
    bool json = false;
    bool progress = false;
    std::uint64_t servers_start = 0;  // 0: every server from the start
    std::uint64_t servers_max = 0;    // 0: every rank
    std::uint64_t grow_entries = 0;   // 0: N / servers_max / 2
    std::uint64_t chunk = 65536;      // keys per rank per insert_many of an elastic load
    bool rebalance = false;
};

constexpr std::uint64_t scramble(std::uint64_t x) { return mpidict::mix64(x); }

struct phase_result {
    std::string name;
    std::uint64_t operations = 0;  // all ranks
    double wall_seconds = 0;       // max over ranks
    std::uint64_t messages_sent = 0;
    std::uint64_t bytes_sent = 0;
    double rate() const { return wall_seconds > 0 ? static_cast<double>(operations) / wall_seconds : 0; }
};

enum op_kind : int { op_find, op_insert, op_erase, op_range, op_kinds };
constexpr const char* op_names[op_kinds] = {"find", "insert", "erase", "range"};

class skiplist_workload {
public:
    using key_type = std::uint64_t;
    using value_type = std::uint64_t;
    using map_type = skiplist_map<key_type, value_type>;

    skiplist_workload(const skiplist_options& options, command_context& context)
        : m_options(options), m_context(context), m_rank(context.rank()), m_size(context.size()),
          m_salt(scramble(options.seed + 0x9e3779b97f4a7c15ULL)),
          m_value_salt(scramble(options.seed ^ 0x2545f4914f6cdd1dULL)),
          m_meter(context.rank() == 0 &&
                  (options.progress || (!options.json && progress_meter::stderr_is_terminal()))) {
        // This rank's key indices: i in [0, 2N) with i % p == rank.
        const auto p = static_cast<std::uint64_t>(m_size);
        const auto r = static_cast<std::uint64_t>(m_rank);
        m_own = 2 * options.keys > r ? (2 * options.keys - r + p - 1) / p : 0;
        m_present.assign(m_own, 0);
    }

    int run() {
        const double start = MPI_Wtime();
        map_type map(m_context.world(), settings());

        const phase_result load = run_phase(map, "load", m_options.keys, [&] { load_phase(map); });
        report_growth(map);
        if (m_options.rebalance)
            report_rebalance("after the load (entries)", map.rebalance());
        std::uint64_t rejected = map.async_rejected();
        if (rejected != 0)
            fail(std::to_string(rejected) + " loaded keys were refused (list_full)");
        const balance after_load = measure_balance(map);
        const phase_result mix = run_phase(map, "mix", m_options.operations, [&] { mix_phase(map); });
        if (m_options.rebalance)
            report_rebalance("after the mix (requests)",
                             map.rebalance({.metric = skiplist_load_metric::requests}));
        verify_all(map);
        const balance after_mix = measure_balance(map);

        std::uint64_t expected = 0;
        for (const auto present : m_present)
            expected += present;
        std::uint64_t expected_sum = 0;
        MPI_Allreduce(&expected, &expected_sum, 1, MPI_UINT64_T, MPI_SUM, m_context.world());
        const std::uint64_t global = map.global_size();
        if (m_rank == 0 && global != expected_sum)
            fail("global size " + std::to_string(global) + " differs from the " + std::to_string(expected_sum) +
                 " keys the ranks' models hold");
        map.destroy();
        const double total_seconds = MPI_Wtime() - start;

        std::uint64_t counts[op_kinds + 2] = {};
        for (int kind = 0; kind < op_kinds; ++kind)
            counts[kind] = m_op_counts[kind];
        counts[op_kinds] = m_range_entries;
        counts[op_kinds + 1] = m_failures;
        std::uint64_t sums[op_kinds + 2] = {};
        MPI_Reduce(counts, sums, op_kinds + 2, MPI_UINT64_T, MPI_SUM, 0, m_context.world());
        const run_outcome outcome = gather_outcome(m_context.world(), m_failures);
        const std::uint64_t failures = outcome.failures;
        const std::uint64_t rss_max = outcome.peak_rss_bytes_max;

        if (m_rank == 0) {
            report summary{load, mix, {}, sums[op_kinds], after_load, after_mix, rss_max, global, failures,
                           total_seconds};
            for (int kind = 0; kind < op_kinds; ++kind)
                summary.op_counts[kind] = sums[kind];
            if (!m_options.json)
                print_table(summary);
            print_json(summary);
            std::fflush(stdout);
        }
        return failures == 0 ? 0 : 1;
    }

private:
    struct balance {
        std::uint64_t entries_max = 0;
        double entries_mean = 0;
        std::uint64_t nodes_max = 0;
        std::uint64_t nodes_sum = 0;
        std::uint64_t payload_bytes_sum = 0;
        std::uint64_t hops_max = 0;  // forwards sent by the nodes of one rank (cumulative)
        std::uint64_t hops_sum = 0;
        std::uint64_t handled_sum = 0;  // operations answered
        double hops_ratio() const {
            return hops_sum > 0 ? static_cast<double>(hops_max) / (static_cast<double>(hops_sum) / ranks) : 0;
        }
        int ranks = 1;
        double ratio() const { return entries_mean > 0 ? static_cast<double>(entries_max) / entries_mean : 0; }
    };
    struct report {
        phase_result load;
        phase_result mix;
        std::array<std::uint64_t, op_kinds> op_counts;
        std::uint64_t range_entries;
        balance after_load;
        balance after_mix;
        std::uint64_t peak_rss_bytes_max;
        std::uint64_t final_size;
        std::uint64_t failures;
        double total_seconds;
    };

    skiplist_map_config settings() const {
        skiplist_map_config config;
        config.granularity = m_options.granularity;
        config.max_key_bytes = sizeof(key_type);
        config.max_value_bytes = sizeof(value_type);
        config.caller_window = m_options.window;
        config.seed = m_options.seed;
        if (m_options.servers_max != 0) {
            config.server_ranks.emplace();
            for (int r = 0; r < static_cast<int>(m_options.servers_max); ++r)
                config.server_ranks->push_back(r);
        }
        config.initial_servers = m_options.servers_start;
        const std::uint64_t most = m_options.servers_max != 0 ? m_options.servers_max : static_cast<std::uint64_t>(m_size);
        config.grow_entries = m_options.grow_entries != 0 ? m_options.grow_entries
                                                          : std::max<std::uint64_t>(1, m_options.keys / most / 2);
        config.runtime.buffer_bytes = m_options.buffer_bytes != 0
                                          ? m_options.buffer_bytes
                                          : std::max(config.runtime.buffer_bytes, config.required_buffer_bytes());
        return config;
    }

    bool ascending() const { return m_options.order == "ascending"; }
    key_type key_at(std::uint64_t index) const { return ascending() ? index : scramble(index ^ m_salt); }
    value_type value_of(key_type key) const { return scramble(key + m_value_salt); }
    std::uint64_t own_index(std::uint64_t slot) const {
        return slot * static_cast<std::uint64_t>(m_size) + static_cast<std::uint64_t>(m_rank);
    }

    void fail(const std::string& message) {
        if (m_failures < max_reported_failures)
            std::fprintf(stderr, "mpidict skiplist: rank %d: verification failed: %s\n", m_rank, message.c_str());
        else if (m_failures == max_reported_failures)
            std::fprintf(stderr, "mpidict skiplist: rank %d: further failures not shown\n", m_rank);
        ++m_failures;
    }

    template <class Body>
    phase_result run_phase(map_type& map, const char* name, std::uint64_t operations, Body&& body) {
        MPI_Barrier(m_context.world());
        map.reset_statistics();
        m_meter.start(name, operations, static_cast<double>(m_size));
        const double start = MPI_Wtime();
        body();
        map.flush();
        const double wall = MPI_Wtime() - start;
        m_meter.finish();
        const runtime::statistics& stats = map.stats();
        double wall_max = 0;
        MPI_Reduce(&wall, &wall_max, 1, MPI_DOUBLE, MPI_MAX, 0, m_context.world());
        const std::uint64_t counts[2] = {stats.messages_sent, stats.bytes_sent};
        std::uint64_t sums[2] = {};
        MPI_Reduce(counts, sums, 2, MPI_UINT64_T, MPI_SUM, 0, m_context.world());
        phase_result result;
        result.name = name;
        result.operations = operations;
        result.wall_seconds = wall_max;
        result.messages_sent = sums[0];
        result.bytes_sent = sums[1];
        return result;
    }

    bool elastic() const { return m_options.servers_start != 0; }

    // Growth during an elastic load: insert_many in chunks, a flush after each
    // (which may wake dormant servers and move nodes onto them).
    void elastic_load(map_type& map) {
        const auto p = static_cast<std::uint64_t>(m_size);
        const std::uint64_t mine = m_options.keys / p + (static_cast<std::uint64_t>(m_rank) < m_options.keys % p);
        const std::uint64_t chunks = (m_options.keys / p + m_options.chunk) / m_options.chunk;  // the same on every rank
        std::vector<key_type> keys;
        std::vector<value_type> values;
        std::uint64_t slot = 0;
        for (std::uint64_t chunk = 0; chunk < chunks; ++chunk) {
            keys.clear();
            values.clear();
            for (; slot < mine && keys.size() < m_options.chunk; ++slot) {
                const key_type key = key_at(own_index(slot));
                keys.push_back(key);
                values.push_back(value_of(key));
                m_present[slot] = 1;
            }
            const insert_many_result stored =
                map.insert_many(std::span<const key_type>(keys), std::span<const value_type>(values));
            if (stored.refused != 0)
                fail(std::to_string(stored.refused) + " loaded keys were refused (list_full)");
            m_meter.tick(keys.size());
            map.flush();
            const skiplist_rebalance_result& step = map.last_rebalance();
            m_grown += step.servers_added;
            m_grow_moved += step.moved_nodes;
            m_grow_entries += step.moved_entries;
            m_grow_bytes += step.moved_bytes;
            m_grow_seconds += step.seconds;
        }
        for (; slot < mine; ++slot)  // (none: chunks cover every key)
            m_present[slot] = 0;
    }

    static std::string per_rank(const std::vector<std::uint64_t>& values) {
        std::string out;
        for (const auto v : values) {
            if (!out.empty())
                out += ' ';
            out += format_count(v);
        }
        return out;
    }

    // Collective (an elastic load only): what grew, and the entries per rank.
    void report_growth(map_type& map) {
        if (!elastic())
            return;
        const std::uint64_t mine = map.local_size();
        std::vector<std::uint64_t> entries(static_cast<std::size_t>(m_size), 0);
        MPI_Gather(&mine, 1, MPI_UINT64_T, entries.data(), 1, MPI_UINT64_T, 0, m_context.world());
        if (m_rank != 0 || m_options.json)
            return;
        std::printf("growth:   %zu active servers after the load (%llu woken at flushes); %llu nodes moved onto them "
                    "(%s entries, %s) in %s s; entries per rank %s (max/mean %s)\n",
                    map.active_servers().size(), static_cast<unsigned long long>(m_grown),
                    static_cast<unsigned long long>(m_grow_moved), format_count(m_grow_entries).c_str(),
                    format_bytes(static_cast<double>(m_grow_bytes)).c_str(), format_seconds(m_grow_seconds).c_str(),
                    per_rank(entries).c_str(),
                    format_fixed(skiplist_rebalance_result::ratio(entries, map.active_servers()), 2).c_str());
        std::fflush(stdout);
    }

    void report_rebalance(const char* when, const skiplist_rebalance_result& result) {
        if (m_rank != 0 || m_options.json)
            return;
        std::printf("rebalance %s: %llu nodes moved (%s entries, %s, %llu refused) in %s s\n", when,
                    static_cast<unsigned long long>(result.moved_nodes), format_count(result.moved_entries).c_str(),
                    format_bytes(static_cast<double>(result.moved_bytes)).c_str(),
                    static_cast<unsigned long long>(result.refused_nodes), format_seconds(result.seconds).c_str());
        std::printf("          entries per rank %s (max/mean %s) -> %s (%s)\n", per_rank(result.entries_before).c_str(),
                    format_fixed(skiplist_rebalance_result::ratio(result.entries_before, result.servers), 2).c_str(),
                    per_rank(result.entries_after).c_str(),
                    format_fixed(skiplist_rebalance_result::ratio(result.entries_after, result.servers), 2).c_str());
        std::printf("          load per rank %s (max/mean %s) -> %s (%s)\n", per_rank(result.load_before).c_str(),
                    format_fixed(skiplist_rebalance_result::ratio(result.load_before, result.servers), 2).c_str(),
                    per_rank(result.load_after).c_str(),
                    format_fixed(skiplist_rebalance_result::ratio(result.load_after, result.servers), 2).c_str());
    }

    void load_phase(map_type& map) {
        if (elastic()) {
            elastic_load(map);
            return;
        }
        for (std::uint64_t slot = 0; slot < m_own; ++slot) {
            const std::uint64_t index = own_index(slot);
            if (index >= m_options.keys)
                break;
            const key_type key = key_at(index);
            map.async_insert(key, value_of(key));
            m_present[slot] = 1;
            m_meter.tick();
        }
    }

    // A started operation of the mix and what to check when it completes.
    struct pending {
        op_kind kind;
        std::uint64_t slot = 0;  // own key slot (find of an own key, insert, erase)
        bool own = false;        // a find of an own key (its presence is known)
        bool expect = false;     // find: present?
        key_type key = 0;
        std::optional<request<std::optional<value_type>>> find;
        std::optional<request<replace_result>> insert;
        std::optional<request<bool>> erase;
        std::optional<request<map_type::entry_list>> range;
    };

    void mix_phase(map_type& map) {
        const auto p = static_cast<std::uint64_t>(m_size);
        const auto r = static_cast<std::uint64_t>(m_rank);
        const std::uint64_t mine = m_options.operations * (r + 1) / p - m_options.operations * r / p;
        const std::uint64_t weights[op_kinds] = {m_options.find_weight, m_options.insert_weight,
                                                 m_options.erase_weight, m_options.range_weight};
        std::discrete_distribution<int> pick(std::begin(weights), std::end(weights));
        std::mt19937_64 random(scramble(m_options.seed * 7919 + r + 1));
        std::vector<pending> window;
        window.reserve(m_options.window);
        // Within a window, an own key is touched at most once, so the model's
        // order of updates is the order in which they apply.
        std::vector<std::uint64_t> touched;

        const auto complete = [&] {
            for (pending& op : window)
                finish(op);
            window.clear();
            touched.clear();
        };
        for (std::uint64_t done = 0; done < mine; ++done) {
            pending op;
            op.kind = static_cast<op_kind>(pick(random));
            if (op.kind == op_range) {
                const key_type start = key_at(random() % std::max<std::uint64_t>(1, 2 * m_options.keys));
                op.key = start;
                op.range.emplace(map.range_from(start, range_options{m_options.range_size, false}));
            } else if (op.kind == op_find && random() % 2 == 0) {
                // A find of any key (another rank's ones may change concurrently).
                op.key = key_at(random() % std::max<std::uint64_t>(1, 2 * m_options.keys));
                op.find.emplace(map.find(op.key));
            } else {
                if (m_own == 0)
                    continue;  // no own keys (more ranks than 2N)
                op.slot = random() % m_own;
                if (std::find(touched.begin(), touched.end(), op.slot) != touched.end())
                    complete();
                touched.push_back(op.slot);
                op.own = true;
                op.key = key_at(own_index(op.slot));
                if (op.kind == op_find) {
                    op.expect = m_present[op.slot] != 0;
                    op.find.emplace(map.find(op.key));
                } else if (op.kind == op_insert) {
                    op.expect = m_present[op.slot] != 0;
                    op.insert.emplace(map.insert(op.key, value_of(op.key)));
                    m_present[op.slot] = 1;
                } else {
                    op.expect = m_present[op.slot] != 0;
                    op.erase.emplace(map.erase(op.key));
                    m_present[op.slot] = 0;
                }
            }
            ++m_op_counts[op.kind];
            window.push_back(std::move(op));
            m_meter.tick();
            if (window.size() >= m_options.window)
                complete();
        }
        complete();
    }

    void finish(pending& op) {
        switch (op.kind) {
        case op_find: {
            const std::optional<value_type> value = op.find->get();
            if (value && *value != value_of(op.key))
                fail("find of key " + std::to_string(op.key) + " returned a value that was never stored");
            if (op.own && value.has_value() != op.expect)
                fail("find of own key " + std::to_string(op.key) + (op.expect ? " missed it" : " found an erased key"));
            break;
        }
        case op_insert: {
            const replace_result result = op.insert->get();
            if (!result.stored)
                fail("insert of key " + std::to_string(op.key) + " refused (list_full)");
            else if (result.replaced != op.expect)
                fail("insert of key " + std::to_string(op.key) + (op.expect ? " did not replace" : " replaced"));
            break;
        }
        case op_erase: {
            const bool hit = op.erase->get();
            if (hit != op.expect)
                fail("erase of key " + std::to_string(op.key) + (op.expect ? " missed it" : " hit an absent key"));
            break;
        }
        case op_range: {
            const map_type::entry_list entries = op.range->get();
            m_range_entries += entries.size();
            if (entries.size() > m_options.range_size)
                fail("a range with limit " + std::to_string(m_options.range_size) + " returned " +
                     std::to_string(entries.size()) + " entries");
            for (std::size_t index = 0; index < entries.size(); ++index) {
                const auto& [key, value] = entries[index];
                if (key < op.key || (index > 0 && key <= entries[index - 1].first)) {
                    fail("a range from " + std::to_string(op.key) + " returned key " + std::to_string(key) +
                         " out of order or below its start");
                    break;
                }
                if (value != value_of(key)) {
                    fail("a range returned key " + std::to_string(key) + " with a value never stored");
                    break;
                }
            }
            break;
        }
        default:
            break;
        }
    }

    // Collective (untimed).  Every rank looks all its own keys up.
    void verify_all(map_type& map) {
        std::vector<key_type> keys(m_own);
        for (std::uint64_t slot = 0; slot < m_own; ++slot)
            keys[slot] = key_at(own_index(slot));
        map.find_many(std::span<const key_type>(keys), [&](std::size_t slot, const std::optional<value_type>& value) {
            if (value.has_value() != (m_present[slot] != 0))
                fail("after the mix, key " + std::to_string(keys[slot]) +
                     (m_present[slot] ? " is missing" : " is present though erased"));
            else if (value && *value != value_of(keys[slot]))
                fail("after the mix, key " + std::to_string(keys[slot]) + " holds a value never stored");
        });
        map.flush();
    }

    // Collective.  Entries and nodes per rank.
    balance measure_balance(map_type& map) {
        const skiplist_map_local_statistics local = map.local_statistics();
        const std::uint64_t mine[5] = {local.entries, local.nodes, local.payload_bytes, local.hops, local.handled};
        std::uint64_t maxima[5] = {};
        std::uint64_t sums[5] = {};
        MPI_Allreduce(mine, maxima, 5, MPI_UINT64_T, MPI_MAX, m_context.world());
        MPI_Allreduce(mine, sums, 5, MPI_UINT64_T, MPI_SUM, m_context.world());
        balance result;
        result.entries_max = maxima[0];
        result.entries_mean = static_cast<double>(sums[0]) / m_size;
        result.nodes_max = maxima[1];
        result.nodes_sum = sums[1];
        result.payload_bytes_sum = sums[2];
        result.hops_max = maxima[3];
        result.hops_sum = sums[3];
        result.handled_sum = sums[4];
        result.ranks = m_size;
        return result;
    }

    void print_table(const report& summary) const {
        std::printf("mpidict skiplist: %d ranks, %s keys loaded (%s order), %s mixed operations "
                    "(find/insert/erase/range weights %llu/%llu/%llu/%llu, ranges of %llu), G = %llu, W = %llu, "
                    "seed %llu\n\n",
                    m_size, format_count(m_options.keys).c_str(), m_options.order.c_str(),
                    format_count(m_options.operations).c_str(), static_cast<unsigned long long>(m_options.find_weight),
                    static_cast<unsigned long long>(m_options.insert_weight),
                    static_cast<unsigned long long>(m_options.erase_weight),
                    static_cast<unsigned long long>(m_options.range_weight),
                    static_cast<unsigned long long>(m_options.range_size),
                    static_cast<unsigned long long>(m_options.granularity),
                    static_cast<unsigned long long>(m_options.window), static_cast<unsigned long long>(m_options.seed));
        text_table table;
        table.add_row({"phase", "ops", "wall s", "rate", "messages", "sent"});
        for (const phase_result* phase : {&summary.load, &summary.mix})
            table.add_row({phase->name, format_count(phase->operations), format_seconds(phase->wall_seconds),
                           format_rate(phase->rate()), format_count(phase->messages_sent),
                           format_bytes(static_cast<double>(phase->bytes_sent))});
        table.print(stdout);
        std::printf("(rate: operations of all ranks / wall, wall max over ranks; messages, sent: sum over ranks)\n\n");
        std::printf("mix:      ");
        for (int kind = 0; kind < op_kinds; ++kind)
            std::printf("%s %s%s", op_names[kind], format_count(summary.op_counts[kind]).c_str(),
                        kind + 1 < op_kinds ? ", " : "\n");
        std::printf("ranges:   %s entries returned (%s entries over the mix's wall time)\n",
                    format_count(summary.range_entries).c_str(),
                    format_rate(summary.mix.wall_seconds > 0
                                    ? static_cast<double>(summary.range_entries) / summary.mix.wall_seconds
                                    : 0)
                        .c_str());
        for (const auto& [name, b] : {std::pair<const char*, const balance&>{"after load", summary.after_load},
                                      std::pair<const char*, const balance&>{"after mix", summary.after_mix}})
            std::printf("balance:  %s: largest rank holds %s entries, %s x the mean; %s nodes (largest rank %s)\n",
                        name, format_count(b.entries_max).c_str(), format_fixed(b.ratio(), 2).c_str(),
                        format_count(b.nodes_sum).c_str(), format_count(b.nodes_max).c_str());
        const balance& work = summary.after_mix;
        std::printf("hops:     %s forwards for %s operations answered (%s per operation); the busiest rank "
                    "forwarded %s x the mean (load and mix)\n",
                    format_count(work.hops_sum).c_str(), format_count(work.handled_sum).c_str(),
                    format_fixed(work.handled_sum > 0
                                     ? static_cast<double>(work.hops_sum) / static_cast<double>(work.handled_sum)
                                     : 0,
                                 2)
                        .c_str(),
                    format_fixed(work.hops_ratio(), 2).c_str());
        std::printf("memory:   peak RSS %s (max over ranks); key + value bytes held %s\n",
                    format_bytes(static_cast<double>(summary.peak_rss_bytes_max)).c_str(),
                    format_bytes(static_cast<double>(summary.after_mix.payload_bytes_sum)).c_str());
        print_verdict(summary.failures,
                      "every own key found, replaced and erased as the model says; ranges ordered and bounded; "
                      "final size " + format_count(summary.final_size),
                      summary.total_seconds);
    }

    void print_json(const report& summary) const {
        json_lines json("mpidict_skiplist", m_size, m_options.seed);
        json.describe("keys", m_options.keys);
        json.describe("operations", m_options.operations);
        json.describe("order", m_options.order);
        json.describe("range_size", m_options.range_size);
        json.describe("granularity", m_options.granularity);
        json.describe("window", m_options.window);
        using field = json_lines::field;
        for (const phase_result* phase : {&summary.load, &summary.mix})
            json.emit(stdout, phase->name + "_rate", phase->rate(), "ops/s",
                      {field{"seconds", json_lines::number(phase->wall_seconds)},
                       field{"messages", std::to_string(phase->messages_sent)},
                       field{"bytes_sent", std::to_string(phase->bytes_sent)}});
        for (int kind = 0; kind < op_kinds; ++kind)
            json.emit(stdout, std::string(op_names[kind]) + "_operations", static_cast<double>(summary.op_counts[kind]),
                      "ops");
        json.emit(stdout, "range_entries_rate",
                  summary.mix.wall_seconds > 0 ? static_cast<double>(summary.range_entries) / summary.mix.wall_seconds
                                               : 0,
                  "entries/s", {field{"entries", std::to_string(summary.range_entries)}});
        json.emit(stdout, "load_balance", summary.after_load.ratio(), "max/mean",
                  {field{"after", "\"load\""}, field{"nodes", std::to_string(summary.after_load.nodes_sum)}});
        json.emit(stdout, "load_balance", summary.after_mix.ratio(), "max/mean",
                  {field{"after", "\"mix\""}, field{"nodes", std::to_string(summary.after_mix.nodes_sum)}});
        json.emit(stdout, "hops_per_operation",
                  summary.after_mix.handled_sum > 0 ? static_cast<double>(summary.after_mix.hops_sum) /
                                                          static_cast<double>(summary.after_mix.handled_sum)
                                                    : 0,
                  "hops", {field{"busiest_rank_over_mean", json_lines::number(summary.after_mix.hops_ratio())}});
        json.emit(stdout, "peak_rss_bytes", static_cast<double>(summary.peak_rss_bytes_max), "bytes",
                  {field{"reduction", "\"max\""}});
        json.emit(stdout, "verified", summary.failures == 0 ? 1 : 0, "bool",
                  {field{"failures", std::to_string(summary.failures)},
                   field{"final_size", std::to_string(summary.final_size)}});
    }

    static constexpr std::uint64_t max_reported_failures = 3;

    const skiplist_options& m_options;
    command_context& m_context;
    int m_rank;
    int m_size;
    std::uint64_t m_salt;
    std::uint64_t m_value_salt;
    std::uint64_t m_own = 0;              // own key slots: indices slot * p + rank < 2N
    std::vector<std::uint8_t> m_present;  // the model: own slot stored?
    std::array<std::uint64_t, op_kinds> m_op_counts{};
    std::uint64_t m_range_entries = 0;
    std::uint64_t m_failures = 0;
    std::uint64_t m_grown = 0, m_grow_moved = 0, m_grow_entries = 0, m_grow_bytes = 0;
    double m_grow_seconds = 0;
    progress_meter m_meter;
};

int run_skiplist(command_context& context) {
    skiplist_options options;
    option_parser parser(
        "mpidict skiplist [options]",
        "Runs an ordered-dictionary workload on skiplist_map (seed 004): load N keys, then a\n"
        "mix of find / insert / erase / range operations, verifying every answer about the\n"
        "rank's own keys, then prints rates, range throughput, load balance and memory.");
    parser.add_count("keys", &options.keys, "N: keys loaded over all ranks", 1, std::uint64_t{1} << 36)
        .add_count("ops", &options.operations, "M: mixed operations over all ranks", 0, std::uint64_t{1} << 36)
        .add_count("find", &options.find_weight, "weight of finds in the mix", 0, 1000, "W")
        .add_count("insert", &options.insert_weight, "weight of inserts in the mix", 0, 1000, "W")
        .add_count("erase", &options.erase_weight, "weight of erases in the mix", 0, 1000, "W")
        .add_count("range", &options.range_weight, "weight of ranges (start key + count) in the mix", 0, 1000, "W")
        .add_count("range-size", &options.range_size, "entries a range asks for at most", 1, 1u << 20, "R")
        .add_choice("order", &options.order, {"uniform", "ascending"},
                    "keys: uniform (scrambled 64-bit) or ascending (the index itself)")
        .add_count("window", &options.window, "W: requests started before waiting for them", 1, 1u << 20, "W")
        .add_count("granularity", &options.granularity, "G: keys per node before it splits", 1, 1u << 16, "G")
        .add_count("buffer-bytes", &options.buffer_bytes, "B: bytes per message (0: what G needs, at least 64 KiB)",
                   0, std::uint64_t{1} << 30, "B")
        .add_count("seed", &options.seed, "seed of the keys, values and the mix", 0, UINT64_MAX, "S")
        .add_count("servers-start", &options.servers_start,
                   "S: server ranks active at the start (the others wake as the list grows; default: all)", 1,
                   1u << 20, "S")
        .add_count("servers-max", &options.servers_max, "M: ranks 0..M-1 host nodes (default: every rank)", 1,
                   1u << 20, "M")
        .add_count("grow-entries", &options.grow_entries,
                   "E: a dormant server wakes when every active one holds E entries (default N / M / 2)", 0,
                   std::uint64_t{1} << 40, "E")
        .add_count("chunk", &options.chunk, "keys per rank per insert_many of an elastic load (with --servers-start)",
                   1, std::uint64_t{1} << 30, "K")
        .add_flag("rebalance", &options.rebalance,
                  "rebalance() by entries after the load and by requests after the mix, and report both")
        .add_flag("json", &options.json, "print only the JSON lines (one object per figure) on stdout")
        .add_flag("progress", &options.progress, "show a progress bar on stderr even when it is not a terminal")
        .add_check([&] {
            const std::uint64_t ranks = static_cast<std::uint64_t>(context.size());
            if (options.servers_max > ranks)
                throw usage_error("--servers-max " + std::to_string(options.servers_max) + " exceeds the " +
                                  std::to_string(ranks) + " ranks");
            const std::uint64_t most = options.servers_max != 0 ? options.servers_max : ranks;
            if (options.servers_start > most)
                throw usage_error("--servers-start " + std::to_string(options.servers_start) + " exceeds the " +
                                  std::to_string(most) + " server ranks (--servers-max)");
            if (options.find_weight + options.insert_weight + options.erase_weight + options.range_weight == 0 &&
                options.operations > 0)
                throw usage_error("--find, --insert, --erase and --range are all 0; give one a weight or --ops 0");
            if (options.buffer_bytes != 0) {
                skiplist_map_config config;
                config.granularity = options.granularity;
                config.max_key_bytes = 8;
                config.max_value_bytes = 8;
                if (options.buffer_bytes < config.required_buffer_bytes())
                    throw usage_error("--buffer-bytes " + std::to_string(options.buffer_bytes) + " is below the " +
                                      std::to_string(config.required_buffer_bytes()) + " bytes a split of G = " +
                                      std::to_string(options.granularity) + " keys needs");
            }
        })
        .add_epilogue("Counts take suffixes: 200k = 200000, 1M, 2e5, 64Ki = 65536.\n"
                      "Example: mpiexec -n 4 mpidict skiplist --keys 200k --ops 100k --order ascending\n");
    if (!context.parse_options(parser))
        return 0;
    return skiplist_workload(options, context).run();
}

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(skiplist, "ordered skip-list workload: load N keys, mix find/insert/erase/range, verify",
                     mpidict::tool::run_skiplist);
