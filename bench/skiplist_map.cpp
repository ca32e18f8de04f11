// skiplist_map benchmark (issue 12, Performance): the ordered skip list against
// hash_map in the same process, on the same keys, as ratios of one run.
//
//   uniform keys (a bijective scramble of rank * n + i, 8-byte keys and values):
//     insert: hash_map async_insert + flush  vs  skiplist_map insert_many
//     find:   hash_map find_many             vs  skiplist_map find_many
//     range:  skiplist_map range_from(start, limit R) queries returning R
//             entries each, in entries/s, vs hash_map find_many of exactly the
//             keys those ranges returned, in keys/s;
//     memory: resident-set growth while the skip list is loaded, per stored
//             pair (and the key + value payload per pair); with glibc also
//             the malloc heap in use (mallinfo2) grown per pair, so RSS splits
//             into what the structures hold and what the allocator keeps
//             free, and the RSS growth left after malloc_trim right after
//             the load (untimed, before the finds);
//   ascending keys (rank r inserts r, r + p, r + 2p, ...: the list grows at its
//     end from every rank): insert rate and the load balance, the entries on
//     the rank that holds the most over the mean.
// Every phase is timed from a barrier to a collective flush; rates are totals
// over ranks divided by the slowest rank's time.  Every answer is checked (a
// value is a function of its key; ranges must return R ordered entries in
// range); a wrong answer makes the run exit 1.
//
// --latest-entries E runs only the "latest N" phase (issue 49): --latest-prefixes
// key prefixes (the high 24 bits of a key, a sensor of a time series) of E
// entries each (the low 40 bits, its time stamps), inserted by all ranks; then
// each rank runs, one query at a time, first-N (range of one prefix, limit N),
// latest-N (the same, descending) and, as the baseline of the same process,
// latest-N the way it cost before: the whole prefix collected and cut (range
// without a limit, keep the last N).  Rounds alternate the order of the three
// kinds; per kind the median over rounds of the slowest rank's time per query,
// and the range parts the nodes sent per query.
//
// The baseline a user would otherwise write: keys range-partitioned by p - 1
// splitters chosen from a sample of every rank's keys, one absl::btree_map per
// rank, operations as runtime records through the same engine (inserts fire
// and forget; finds and ranges as requests, W in flight; a range that runs
// off a rank's partition continues on the next rank).  It runs the same
// phases on the same keys, uniform and ascending.

#include <absl/container/btree_map.h>

#include <algorithm>
#include <deque>
#include <cstring>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "mpidict/support/host.hpp"
#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/runtime/engine.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

constexpr const char* bench_name = "skiplist_map";
constexpr const char* description =
    "skiplist_map against hash_map and a range-partitioned absl::btree_map per rank in the\n"
    "same run: load, finds, inserts and range queries with uniform and ascending keys.\n"
    "JSON lines on stdout (rank 0), a table on stderr; exit 1 if an answer is wrong.";

struct settings {
    std::uint64_t keys_per_rank = 1'000'000;
    std::uint64_t range_results = 1000;
    std::uint64_t ranges_per_rank = 100;
    std::uint64_t granularity = 64;
    std::uint64_t window = 4096;
    std::uint64_t adaptive = 1;
    std::uint64_t range_window = 16;
    std::uint64_t find_rounds = 1;
    std::uint64_t rounds = 3;
    std::uint64_t ascending = 1;
    std::uint64_t route_cache = 1u << 16;
    std::string consistency = "sequential";
    std::uint64_t seed = 1;
    std::uint64_t latest_entries = 0;
    std::uint64_t latest_prefixes = 4;
    std::uint64_t latest_limit = 10;
    std::uint64_t latest_queries = 200;
    std::uint64_t latest_rounds = 5;
    std::uint64_t async_rounds = 0;
    std::uint64_t async_batch = 131072;
    std::uint64_t async_batch_bytes = 8u << 20;
    std::uint64_t async_in_flight = 2;
    std::uint64_t async_point = 0;
    std::uint64_t async_ttl = 0;
    std::uint64_t ranges_only = 0;
};

void declare(mpidict::support::option_parser& parser, settings& s) {
    parser.add_count("keys-per-rank", &s.keys_per_rank, "8-byte keys (and 8-byte values) each rank inserts", 1)
        .add_count("range-results", &s.range_results,
                   "entries one range query returns (at most 4096: one baseline reply per rank)", 1, 4096, "R")
        .add_count("ranges-per-rank", &s.ranges_per_rank, "range queries each rank runs", 0, UINT64_MAX, "Q")
        .add_count("granularity", &s.granularity, "skiplist_map keys per node", 1, UINT64_MAX, "G")
        .add_count("window", &s.window, "skiplist_map caller window of insert_many/find_many (the largest, when adaptive)",
                   1, UINT64_MAX, "W")
        .add_count("adaptive", &s.adaptive, "1: adapt W from reply latency up to --window; 0: W fixed", 0, 1, "A")
        .add_count("range-window", &s.range_window,
                   "skiplist_map range queries each rank keeps in flight (the baseline runs one at a time)", 1, 4096,
                   "Q")
        .add_count("route-cache", &s.route_cache,
                   "skiplist_map route_cache_entries (0: every operation enters at the head)", 0, UINT64_MAX, "C")
        .add_choice("consistency", &s.consistency, {"total_order", "sequential", "none"},
                    "skiplist_map consistency mode of the list and its callers (Figure 8 of seed 004: run each)")
        .add_count("ascending", &s.ascending, "1: run the ascending-key phase; 0: skip it; 2: run only it", 0, 2, "A")
        .add_count("find-rounds", &s.find_rounds,
                   "times the find phase runs (skiplist_map and hash_map); the median rate is reported", 1, 1000, "F")
        .add_count("rounds", &s.rounds,
                   "rounds of the uniform-key phases (skiplist_map, hash_map, the btree baseline, each on a fresh "
                   "structure; the order alternates between rounds, medians reported; the memory figures come from "
                   "round 1, where skiplist_map runs first)",
                   1, 1000, "R")
        .add_count("seed", &s.seed, "keys and tower heights", 0, UINT64_MAX, "S")
        .add_count("latest-entries", &s.latest_entries,
                   "run only the latest-N phase: entries per key prefix (0: the other phases)", 0, 1ULL << 40, "E")
        .add_count("latest-prefixes", &s.latest_prefixes, "latest-N phase: key prefixes", 1, 1u << 20, "P")
        .add_count("latest-limit", &s.latest_limit, "latest-N phase: N, the entries a query returns", 1, 4096, "N")
        .add_count("latest-queries", &s.latest_queries, "latest-N phase: queries of each kind per rank and round", 1,
                   UINT64_MAX, "Q")
        .add_count("latest-rounds", &s.latest_rounds, "latest-N phase: rounds (the median is reported)", 1, 1000, "R")
        .add_count("async-rounds", &s.async_rounds,
                   "run only the async_insert phase (issue 49): rounds of insert_many and async_insert + flush of "
                   "--keys-per-rank uniform keys into fresh lists, alternating (0: the other phases)",
                   0, 1000, "R")
        .add_count("async-batch", &s.async_batch, "async_insert phase: async_batch_keys (0: one point record each)", 0,
                   UINT64_MAX, "B")
        .add_count("async-batch-bytes", &s.async_batch_bytes, "async_insert phase: async_batch_bytes", 0,
                   UINT64_MAX, "Y")
        .add_count("async-in-flight", &s.async_in_flight, "async_insert phase: async_batches_in_flight", 1, 4096, "F")
        .add_count("async-point", &s.async_point,
                   "async_insert phase: 1 also times async_insert with async_batch_keys = 0 (each key its own point "
                   "record, the path before issue 49) on the first tenth of the keys",
                   0, 1, "A")
        .add_count("async-ttl", &s.async_ttl,
                   "async_insert phase: 1 also times insert_many with a TTL of one hour for the batch (issue 49 "
                   "item 5: on insert_many's own path), against insert_many in the same round",
                   0, 1, "T")
        .add_count("ranges-only", &s.ranges_only,
                   "1: run only the range phase (issue 42): load the list and the btree baseline once, warm the "
                   "list's directory with one untimed find_many, then --rounds rounds of the list's ranges and the "
                   "baseline's, alternating which goes first; medians and the per-round ratio (for profiles)",
                   0, 1, "O");
}

constexpr std::uint64_t value_of(std::uint64_t key) { return mpidict::mix64(key ^ 0x5bd1e9955bd1e995ULL); }

// ---- the baseline: range-partitioned absl::btree_map per rank ------------------

class btree_partitioned {
public:
    using btree = absl::btree_map<std::uint64_t, std::uint64_t>;

    // Collective.  Splitters from `sample` (each rank's own sample of its keys).
    btree_partitioned(MPI_Comm comm, std::span<const std::uint64_t> sample, std::size_t window)
        : m_engine(comm, engine_config()), m_window(window) {
        m_insert = m_engine.register_handler("btree.insert", &handle_insert, this);
        m_find = m_engine.register_handler("btree.find", &handle_find, this);
        m_range = m_engine.register_handler("btree.range", &handle_range, this);
        m_engine.verify_handlers();
        m_find_kind = m_engine.register_op_kind("find");
        m_range_kind = m_engine.register_op_kind("range");
        const int p = m_engine.size();
        const int mine = static_cast<int>(sample.size());
        std::vector<int> counts(static_cast<std::size_t>(p));
        MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, comm);
        std::vector<int> offsets(static_cast<std::size_t>(p), 0);
        for (int r = 1; r < p; ++r)
            offsets[r] = offsets[r - 1] + counts[r - 1];
        std::vector<std::uint64_t> all(static_cast<std::size_t>(offsets[p - 1] + counts[p - 1]));
        MPI_Allgatherv(sample.data(), mine, MPI_UINT64_T, all.data(), counts.data(), offsets.data(), MPI_UINT64_T,
                       comm);
        std::sort(all.begin(), all.end());
        for (int r = 1; r < p; ++r)
            m_splitters.push_back(all.empty() ? 0 : all[all.size() * static_cast<std::size_t>(r) / p]);
    }

    int owner(std::uint64_t key) const {
        return static_cast<int>(std::upper_bound(m_splitters.begin(), m_splitters.end(), key) - m_splitters.begin());
    }
    void async_insert(std::uint64_t key, std::uint64_t value) {
        std::byte* out = m_engine.reserve(owner(key), m_insert, 16);
        std::memcpy(out, &key, 8);
        std::memcpy(out + 8, &value, 8);
    }
    // Looks every key up, W requests in flight; on_result(index, optional value).
    template <class Function>
    void find_many(std::span<const std::uint64_t> keys, Function&& on_result) {
        std::vector<std::uint32_t> slots;
        std::size_t done = 0;
        const auto finish = [&] {
            const std::uint32_t slot = slots[done % m_window];
            m_engine.wait_request(slot);
            std::optional<std::uint64_t> value;
            if (m_engine.request_count(slot) == 1) {
                std::uint64_t v = 0;
                std::memcpy(&v, m_engine.request_result(slot).data(), 8);
                value = v;
            }
            m_engine.close_request(slot);
            on_result(done, value);
            ++done;
        };
        for (std::size_t index = 0; index < keys.size(); ++index) {
            if (index - done == m_window)
                finish();
            const std::uint32_t slot = m_engine.open_request(m_find_kind);
            std::byte* out = m_engine.reserve(owner(keys[index]), m_find, 12);
            std::memcpy(out, &slot, 4);
            std::memcpy(out + 4, &keys[index], 8);
            if (slots.size() < m_window)
                slots.push_back(slot);
            else
                slots[index % m_window] = slot;
        }
        while (done < keys.size())
            finish();
    }
    // Up to `limit` entries with key >= start, in order.
    std::vector<std::pair<std::uint64_t, std::uint64_t>> range_from(std::uint64_t start, std::uint32_t limit) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
        int rank = owner(start);
        while (out.size() < limit && rank < m_engine.size()) {
            const std::uint32_t slot = m_engine.open_request(m_range_kind);
            const std::uint32_t want = limit - static_cast<std::uint32_t>(out.size());
            std::byte* record = m_engine.reserve(rank, m_range, 16);
            std::memcpy(record, &slot, 4);
            std::memcpy(record + 4, &want, 4);
            std::memcpy(record + 8, &start, 8);
            m_engine.wait_request(slot);
            const auto result = m_engine.request_result(slot);
            for (std::uint32_t i = 0; i < m_engine.request_count(slot); ++i) {
                std::uint64_t key = 0;
                std::uint64_t value = 0;
                std::memcpy(&key, result.data() + 16 * i, 8);
                std::memcpy(&value, result.data() + 16 * i + 8, 8);
                out.emplace_back(key, value);
            }
            m_engine.close_request(slot);
            if (rank < static_cast<int>(m_splitters.size()))
                start = std::max(start, m_splitters[static_cast<std::size_t>(rank)]);
            ++rank;
        }
        return out;
    }
    void flush() { m_engine.flush(); }
    void destroy() { m_engine.destroy(); }
    std::size_t local_size() const { return m_tree.size(); }

private:
    static mpidict::runtime::config engine_config() {
        mpidict::runtime::config config;
        // One range reply of up to 4096 entries of 16 bytes fits one message.
        config.buffer_bytes = std::max<std::size_t>(config.buffer_bytes, 4096 * 16 + 64);
        return config;
    }
    static void handle_insert(void* context, int, const std::byte* records, std::uint32_t bytes, std::uint32_t count) {
        auto& self = *static_cast<btree_partitioned*>(context);
        for (std::uint32_t i = 0; i < count; ++i, records += bytes) {
            std::uint64_t key = 0;
            std::uint64_t value = 0;
            std::memcpy(&key, records, 8);
            std::memcpy(&value, records + 8, 8);
            self.m_tree.insert_or_assign(key, value);
        }
    }
    static void handle_find(void* context, int source, const std::byte* records, std::uint32_t bytes,
                            std::uint32_t count) {
        auto& self = *static_cast<btree_partitioned*>(context);
        for (std::uint32_t i = 0; i < count; ++i, records += bytes) {
            std::uint32_t slot = 0;
            std::uint64_t key = 0;
            std::memcpy(&slot, records, 4);
            std::memcpy(&key, records + 4, 8);
            const auto found = self.m_tree.find(key);
            if (found == self.m_tree.end()) {
                self.m_engine.reserve_reply(source, slot, 0, 0);
            } else {
                std::byte* out = self.m_engine.reserve_reply(source, slot, 1, 8);
                std::memcpy(out, &found->second, 8);
            }
        }
    }
    static void handle_range(void* context, int source, const std::byte* records, std::uint32_t bytes,
                             std::uint32_t count) {
        auto& self = *static_cast<btree_partitioned*>(context);
        for (std::uint32_t i = 0; i < count; ++i, records += bytes) {
            std::uint32_t slot = 0;
            std::uint32_t want = 0;
            std::uint64_t start = 0;
            std::memcpy(&slot, records, 4);
            std::memcpy(&want, records + 4, 4);
            std::memcpy(&start, records + 8, 8);
            want = std::min<std::uint32_t>(want, 4096);
            std::vector<std::byte> entries;
            std::uint32_t found = 0;
            for (auto at = self.m_tree.lower_bound(start); at != self.m_tree.end() && found < want; ++at, ++found) {
                const std::size_t offset = entries.size();
                entries.resize(offset + 16);
                std::memcpy(entries.data() + offset, &at->first, 8);
                std::memcpy(entries.data() + offset + 8, &at->second, 8);
            }
            std::byte* out = self.m_engine.reserve_reply(source, slot, found, entries.size());
            if (!entries.empty())
                std::memcpy(out, entries.data(), entries.size());
        }
    }

    mpidict::runtime::engine m_engine;
    std::size_t m_window;
    mpidict::runtime::handler_id m_insert = 0;
    mpidict::runtime::handler_id m_find = 0;
    mpidict::runtime::handler_id m_range = 0;
    mpidict::runtime::op_kind m_find_kind = 0;
    mpidict::runtime::op_kind m_range_kind = 0;
    std::vector<std::uint64_t> m_splitters;
    btree m_tree;
};

class runner {
public:
    runner(const settings& s, const mpidict::bench::world& w)
        : m_s(s), m_w(w), m_out(bench_name, w.size, s.seed, w.rank == 0) {}

    int run() {
        m_out.context()
            .add("keys_per_rank", m_s.keys_per_rank)
            .add("key_bytes", 8)
            .add("value_bytes", 8)
            .add("granularity", m_s.granularity)
            .add("window", m_s.window)
            .add("route_cache_entries", m_s.route_cache)
            .add("consistency", m_s.consistency)
            .add("range_results", m_s.range_results)
            .add("load_average", mpidict::support::read_load_average());
        if (m_s.latest_entries > 0)
            return run_latest();
        if (m_s.async_rounds > 0)
            return run_async();
        const std::uint64_t n = m_s.keys_per_rank;
        if (m_s.ascending == 2) {  // only the ascending phase (for profiles of it)
            run_ascending(n);
            return finish();
        }
        std::vector<std::uint64_t> keys(n);
        std::vector<std::uint64_t> values(n);
        const std::uint64_t salt = mpidict::mix64(m_s.seed + 0x9e3779b97f4a7c15ULL);
        for (std::uint64_t i = 0; i < n; ++i) {
            keys[i] = mpidict::mix64((static_cast<std::uint64_t>(m_w.rank) * n + i) ^ salt);
            values[i] = value_of(keys[i]);
        }
        if (m_s.ranges_only != 0)
            return run_ranges_only(keys, values);

        // The malloc heap in use (small chunks and mmapped ones), or -1 where
        // glibc's mallinfo2 is missing.
        const auto heap_in_use = []() -> double {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
            const struct mallinfo2 info = mallinfo2();
            return static_cast<double>(info.uordblks) + static_cast<double>(info.hblkhd);
#else
            return -1;
#endif
        };
        // One round of each side on fresh structures. Round 1 runs skiplist_map
        // first (its resident-set growth is the largest allocation so far, so the
        // memory figures are its own, and only round 1 measures them); later
        // rounds alternate the order. hash_map looks up the keys the last
        // skiplist ranges returned (the same in every round: the same keys, the
        // same starts). Each round's rates go to the vectors; the medians below.
        std::vector<std::uint64_t> range_keys;
        std::vector<double> list_inserts, list_finds, range_rates;
        std::vector<double> hash_inserts, hash_finds, hash_range_rates;
        std::vector<double> tree_inserts, tree_finds, tree_range_rates;
        double memory_per_pair = 0;
        bool first = true;
        const auto run_list = [&] {
            const auto before = mpidict::support::read_process_memory();
            const double heap_before = first ? heap_in_use() : -1;
            mpidict::skiplist_map<std::uint64_t, std::uint64_t> list(m_w.comm, list_config());
            const double insert_rate = timed(n, [&] {
                const std::size_t fresh = list.insert_many(std::span<const std::uint64_t>(keys),
                                                           std::span<const std::uint64_t>(values)).added();
                check(fresh == n, "skiplist insert_many stored " + std::to_string(fresh) + " new keys of " +
                                      std::to_string(n));
            }, [&] { list.flush(); });
            double heap_per_pair = -1, trimmed_per_pair = -1, payload = 0;
            if (first) {
                const auto after = mpidict::support::read_process_memory();
                const double grown = static_cast<double>(after.rss_bytes) - static_cast<double>(before.rss_bytes);
                memory_per_pair = max_over_ranks(grown / static_cast<double>(n));
                const double heap_after = heap_in_use();
                heap_per_pair =
                    heap_before < 0 ? -1 : max_over_ranks((heap_after - heap_before) / static_cast<double>(n));
#if defined(__GLIBC__)
                if (heap_per_pair >= 0) {
                    // Right after the load, before the finds (untimed): gives the
                    // allocator's free pages back, so what is left is held memory.
                    malloc_trim(0);
                    const auto trimmed = mpidict::support::read_process_memory();
                    trimmed_per_pair = max_over_ranks(
                        (static_cast<double>(trimmed.rss_bytes) - static_cast<double>(before.rss_bytes)) / static_cast<double>(n));
                }
#endif
                const auto stats = list.local_statistics();
                payload = static_cast<double>(stats.payload_bytes) / static_cast<double>(std::max<std::uint64_t>(1, stats.entries));
            }

            const auto before_find = list.local_statistics();
            const double find_rate = median_of_rounds(n, [&] {
                std::uint64_t hits = 0;
                list.find_many(std::span<const std::uint64_t>(keys), [&](std::size_t index, const std::optional<std::uint64_t>& value) {
                    hits += value && *value == values[index];
                });
                check(hits == n, "skiplist find_many found " + std::to_string(hits) + " of " + std::to_string(n));
            }, [&] { list.flush(); });
            if (first) {
                // Where the finds went: hops per answer, and how many took a
                // shortcut (directory entry) or fell back to the head.
                const auto after_find = list.local_statistics();
                const double answers = total(static_cast<double>(after_find.answers - before_find.answers));
                const double hops = total(static_cast<double>(after_find.answer_hops - before_find.answer_hops));
                const double shortcuts = total(static_cast<double>(after_find.shortcut_entries - before_find.shortcut_entries));
                const double failures = total(static_cast<double>(after_find.shortcut_failures - before_find.shortcut_failures));
                const double head = total(static_cast<double>(after_find.head_visits - before_find.head_visits));
                const double keys_found = total(static_cast<double>(n)) * static_cast<double>(m_s.find_rounds);
                m_out.figure("skiplist_find_hops_per_op", answers > 0 ? hops / answers : 0, "hops");
                m_out.figure("skiplist_find_shortcut_share", shortcuts / keys_found, "ratio");
                m_out.figure("skiplist_find_fallbacks", failures, "ops");
                m_out.figure("skiplist_find_head_visits_per_op", head / keys_found, "visits");
            }

            // Ranges: start at own keys, R results each.
            const double range_rate = list_ranges(list, keys, &range_keys);
            list_inserts.push_back(insert_rate);
            list_finds.push_back(find_rate);
            range_rates.push_back(range_rate);
            if (first) {
                m_out.figure("skiplist_window_after_find", max_over_ranks(static_cast<double>(list.current_window())), "keys",
                             mpidict::bench::json_object().add("reduction", "max").add("adaptive", m_s.adaptive != 0));
                m_out.figure("skiplist_range_entries", total(static_cast<double>(m_range_entries)), "entries");
                m_out.figure("skiplist_rss_growth_per_pair", memory_per_pair, "bytes",
                             mpidict::bench::json_object().add("reduction", "max"));
                m_out.figure("skiplist_payload_per_pair", payload, "bytes");
                if (heap_per_pair >= 0) {
                    // What the structures hold (malloc's count, chunk headers
                    // included) against what RSS grew by: the difference is free
                    // memory the allocator kept after the load's transient buffers.
                    m_out.figure("skiplist_heap_growth_per_pair", heap_per_pair, "bytes",
                                 mpidict::bench::json_object().add("reduction", "max").add("source", "mallinfo2"));
                    m_out.figure("skiplist_rss_growth_after_trim_per_pair", trimmed_per_pair, "bytes",
                                 mpidict::bench::json_object().add("reduction", "max"));
                }
            }
            list.destroy();
        };
        const auto run_hash = [&] {
            mpidict::hash_map_config config;
            config.expected_keys_per_rank = static_cast<std::size_t>(n + 4 * std::sqrt(static_cast<double>(n)) + 16);
            mpidict::hash_map<std::uint64_t, std::uint64_t> map(m_w.comm, config);
            hash_inserts.push_back(timed(n, [&] {
                for (std::uint64_t i = 0; i < n; ++i)
                    map.async_insert(keys[i], values[i]);
            }, [&] { map.flush(); }));
            hash_finds.push_back(median_of_rounds(n, [&] {
                std::uint64_t hits = 0;
                map.find_many(std::span<const std::uint64_t>(keys), 1, [&](std::size_t index, auto found) {
                    hits += found.size() == 1 && found[0] == values[index];
                });
                check(hits == n, "hash_map find_many found " + std::to_string(hits) + " of " + std::to_string(n));
            }, [&] { map.flush(); }));
            // The keys the ranges returned, looked up one by one with find_many.
            const double seconds = timed_seconds([&] {
                std::uint64_t hits = 0;
                map.find_many(std::span<const std::uint64_t>(range_keys), 1, [&](std::size_t, auto found) {
                    hits += found.size() == 1;
                });
                check(hits == range_keys.size(), "hash_map did not find every key a range returned");
            }, [&] { map.flush(); });
            hash_range_rates.push_back(total(static_cast<double>(range_keys.size())) / max_over_ranks(seconds));
            map.destroy();
        };
        const auto run_tree = [&] {
            btree_partitioned tree(m_w.comm, sample_of(keys), m_s.window);
            tree_inserts.push_back(timed(n, [&] {
                for (std::uint64_t i = 0; i < n; ++i)
                    tree.async_insert(keys[i], values[i]);
            }, [&] { tree.flush(); }));
            tree_finds.push_back(timed(n, [&] {
                std::uint64_t hits = 0;
                tree.find_many(std::span<const std::uint64_t>(keys), [&](std::size_t index, const std::optional<std::uint64_t>& value) {
                    hits += value && *value == values[index];
                });
                check(hits == n, "btree find_many found " + std::to_string(hits) + " of " + std::to_string(n));
            }, [&] { tree.flush(); }));
            tree_range_rates.push_back(tree_ranges(tree, keys));
            tree.destroy();
        };
        for (std::uint64_t round = 0; round < m_s.rounds; ++round) {
            first = round == 0;
            if (round % 2 == 0) {
                run_list();
                run_hash();
                run_tree();
            } else {
                run_tree();
                run_list();
                run_hash();
            }
        }
        const auto med = [](const std::vector<double>& v) { return mpidict::bench::summary::of(v).median; };
        const double list_insert = med(list_inserts), list_find = med(list_finds), range_rate = med(range_rates);
        const double hash_insert = med(hash_inserts), hash_find = med(hash_finds);
        const double hash_range_keys_rate = med(hash_range_rates);
        const auto rounds_field = mpidict::bench::json_object().add("order", "alternating per round");
        m_out.figure("skiplist_insert_many_rate", list_inserts, "ops/s", rounds_field);
        m_out.figure("skiplist_find_many_rate", list_finds, "ops/s", rounds_field);
        m_out.figure("skiplist_range_entries_rate", range_rates, "entries/s", rounds_field);
        m_out.figure("hash_map_insert_rate", hash_inserts, "ops/s", rounds_field);
        m_out.figure("hash_map_find_many_rate", hash_finds, "ops/s", rounds_field);
        m_out.figure("hash_map_find_of_range_keys_rate", hash_range_rates, "keys/s", rounds_field);
        m_out.figure("btree_insert_rate", tree_inserts, "ops/s", rounds_field);
        m_out.figure("btree_find_many_rate", tree_finds, "ops/s", rounds_field);
        m_out.figure("btree_range_entries_rate", tree_range_rates, "entries/s", rounds_field);
        {
            const auto beside = [](double ours, double baseline) {
                return mpidict::bench::json_object().add("ours_rate", ours).add("baseline_rate", baseline);
            };
            const double tree_insert = med(tree_inserts), tree_find = med(tree_finds), tree_range = med(tree_range_rates);
            m_out.figure("skiplist_vs_btree_insert", list_insert / tree_insert, "ratio", beside(list_insert, tree_insert));
            m_out.figure("skiplist_vs_btree_find", list_find / tree_find, "ratio", beside(list_find, tree_find));
            m_out.figure("skiplist_vs_btree_range", range_rate / tree_range, "ratio", beside(range_rate, tree_range));
        }

        const auto rates = [](double ours, double baseline) {
            return mpidict::bench::json_object().add("ours_rate", ours).add("baseline_rate", baseline);
        };
        m_out.ratio("find_vs_hash_map", list_find / hash_find, ">= 0.3", list_find >= 0.3 * hash_find,
                    rates(list_find, hash_find));
        m_out.ratio("insert_vs_hash_map", list_insert / hash_insert, ">= 0.3", list_insert >= 0.3 * hash_insert,
                    rates(list_insert, hash_insert));
        m_out.ratio("range_entries_vs_hash_map_finds", range_rate / hash_range_keys_rate, ">= 10",
                    range_rate >= 10 * hash_range_keys_rate, rates(range_rate, hash_range_keys_rate));
        if (m_s.consistency == "none")  // issue 13: finds through the directory
            m_out.ratio("none_find_vs_hash_map", list_find / hash_find, ">= 0.5", list_find >= 0.5 * hash_find,
                        rates(list_find, hash_find));
        m_out.ratio("memory_per_pair_bytes_vs_48", memory_per_pair / 48.0, "<= 1.0", memory_per_pair <= 48.0);

        if (m_s.ascending != 0)
            run_ascending(n);

        return finish();
    }

    // --ranges-only: the list and the baseline loaded once with the same keys,
    // the list's directory warmed as the full run's finds warm it (one untimed
    // find_many), then --rounds rounds of the list's ranges and the baseline's,
    // alternating which goes first.
    int run_ranges_only(const std::vector<std::uint64_t>& keys, const std::vector<std::uint64_t>& values) {
        const std::uint64_t n = keys.size();
        mpidict::skiplist_map<std::uint64_t, std::uint64_t> list(m_w.comm, list_config());
        btree_partitioned tree(m_w.comm, sample_of(keys), m_s.window);
        const double list_load = timed(n, [&] {
            (void)list.insert_many(std::span<const std::uint64_t>(keys), std::span<const std::uint64_t>(values));
        }, [&] { list.flush(); });
        for (std::uint64_t i = 0; i < n; ++i)
            tree.async_insert(keys[i], values[i]);
        tree.flush();
        check(list.global_size() == n * static_cast<std::uint64_t>(m_w.size), "ranges-only: the list misses keys");
        std::uint64_t hits = 0;
        list.find_many(std::span<const std::uint64_t>(keys), [&](std::size_t index, const std::optional<std::uint64_t>& value) {
            hits += value && *value == values[index];
        });
        list.flush();  // a rank answers others only inside mpidict calls
        check(hits == n, "ranges-only: find_many found " + std::to_string(hits) + " of " + std::to_string(n));
        std::vector<double> list_rates, tree_rates, ratios, loads;
        for (std::uint64_t round = 0; round < m_s.rounds; ++round) {
            loads.push_back(mpidict::support::read_load_average());
            const auto before = list.local_statistics();
            double list_rate = 0, tree_rate = 0;
            if (round % 2 == 0) {
                list_rate = list_ranges(list, keys, nullptr);
                tree_rate = tree_ranges(tree, keys);
            } else {
                tree_rate = tree_ranges(tree, keys);
                list_rate = list_ranges(list, keys, nullptr);
            }
            const auto after = list.local_statistics();
            const double parts = total(static_cast<double>(after.range_parts - before.range_parts));
            const double queries = total(static_cast<double>(m_s.ranges_per_rank));
            list_rates.push_back(list_rate);
            tree_rates.push_back(tree_rate);
            ratios.push_back(list_rate / tree_rate);
            if (m_w.rank == 0)
                std::fprintf(stderr,
                             "round %llu (load %.2f): skiplist ranges %.3f M entries/s, btree %.3f M entries/s, "
                             "ratio %.3f, %.1f parts per range\n",
                             static_cast<unsigned long long>(round), loads.back(), list_rate / 1e6, tree_rate / 1e6,
                             ratios.back(), queries > 0 ? parts / queries : 0.0);
        }
        const auto med = [](const std::vector<double>& v) { return mpidict::bench::summary::of(v).median; };
        const auto order = mpidict::bench::json_object().add("order", "alternating per round");
        m_out.figure("skiplist_load_rate", list_load, "ops/s");
        m_out.figure("skiplist_range_entries_rate", list_rates, "entries/s", order);
        m_out.figure("btree_range_entries_rate", tree_rates, "entries/s", order);
        m_out.figure("skiplist_vs_btree_range", med(ratios), "ratio",
                     mpidict::bench::json_object()
                         .add("ours_rate", med(list_rates))
                         .add("baseline_rate", med(tree_rates))
                         .add("reduction", "median of the per-round ratios")
                         .add("target", 1.0));
        m_out.figure("load_average_after", mpidict::support::read_load_average(), "load");
        list.destroy();
        tree.destroy();
        return finish();
    }

    // The splitters' sample: 256 of this rank's keys.
    static std::vector<std::uint64_t> sample_of(const std::vector<std::uint64_t>& keys) {
        std::vector<std::uint64_t> sample;
        for (std::size_t i = 0; i < keys.size(); i += std::max<std::size_t>(1, keys.size() / 256))
            sample.push_back(keys[i]);
        return sample;
    }

    // --ranges-per-rank range_from(start, {limit = R}) on the list, up to
    // --range-window in flight, taken in issue order, each checked; entries per
    // second of the slowest rank.  `returned`: the keys they returned.
    double list_ranges(mpidict::skiplist_map<std::uint64_t, std::uint64_t>& list, const std::vector<std::uint64_t>& keys,
                       std::vector<std::uint64_t>* returned) {
        const std::uint64_t n = keys.size();
        std::mt19937_64 random(m_s.seed * 31 + static_cast<std::uint64_t>(m_w.rank));
        std::uint64_t entries = 0;
        if (returned != nullptr)
            returned->clear();
        const double seconds = timed_seconds([&] {
            std::deque<std::pair<std::uint64_t, mpidict::request<mpidict::skiplist_map<std::uint64_t, std::uint64_t>::entry_list>>> pending;
            std::uint64_t issued = 0;
            while (issued < m_s.ranges_per_rank || !pending.empty()) {
                while (issued < m_s.ranges_per_rank && pending.size() < m_s.range_window) {
                    const std::uint64_t from = keys[random() % n] & ~std::uint64_t{0xffffffff};
                    pending.emplace_back(from, list.range_from(from, mpidict::range_options{m_s.range_results, false}));
                    ++issued;
                }
                const std::uint64_t start = pending.front().first;
                const auto part = pending.front().second.get();
                pending.pop_front();
                entries += part.size();
                for (std::size_t i = 0; i < part.size(); ++i) {
                    if (part[i].first < start || (i > 0 && part[i].first <= part[i - 1].first) ||
                        part[i].second != value_of(part[i].first)) {
                        check(false, "a range returned a key out of order or a wrong value");
                        break;
                    }
                    if (returned != nullptr)
                        returned->push_back(part[i].first);
                }
            }
        }, [&] { list.flush(); });
        m_range_entries = entries;
        return total(static_cast<double>(entries)) / max_over_ranks(seconds);
    }

    // The same queries (the same starts) on the baseline, one at a time,
    // checked against the list's entry count.
    double tree_ranges(btree_partitioned& tree, const std::vector<std::uint64_t>& keys) {
        const std::uint64_t n = keys.size();
        std::mt19937_64 random(m_s.seed * 31 + static_cast<std::uint64_t>(m_w.rank));  // the same starts
        std::uint64_t entries = 0;
        const double seconds = timed_seconds([&] {
            for (std::uint64_t q = 0; q < m_s.ranges_per_rank; ++q) {
                const std::uint64_t start = keys[random() % n] & ~std::uint64_t{0xffffffff};
                const auto part = tree.range_from(start, static_cast<std::uint32_t>(m_s.range_results));
                entries += part.size();
                for (std::size_t i = 0; i < part.size(); ++i)
                    if (part[i].first < start || (i > 0 && part[i].first <= part[i - 1].first) ||
                        part[i].second != value_of(part[i].first)) {
                        check(false, "a btree range returned a key out of order or a wrong value");
                        break;
                    }
            }
        }, [&] { tree.flush(); });
        check(m_range_entries == 0 || entries == m_range_entries,
              "btree ranges returned " + std::to_string(entries) + " entries, the skip list's the same queries " +
                  std::to_string(m_range_entries));
        return total(static_cast<double>(entries)) / max_over_ranks(seconds);
    }

    int finish() {
        std::uint64_t failures = 0;
        MPI_Allreduce(&m_failures, &failures, 1, MPI_UINT64_T, MPI_SUM, m_w.comm);
        m_out.figure("verified", failures == 0 ? 1 : 0, "bool",
                     mpidict::bench::json_object().add("failures", static_cast<double>(failures)));
        m_out.print_table();
        return failures == 0 ? 0 : 1;
    }

private:
    // The ascending-key phase: skiplist_map insert_many and the baseline, --rounds
    // rounds on fresh structures, skiplist first in odd rounds and the btree first
    // in even ones; rates are medians, the list's costs those of round 1.
    void run_ascending(std::uint64_t n) {
        std::vector<double> list_rates, tree_rates;
        double tree_balance = 0;
        // ---- ascending keys: rank r inserts r, r + p, ... -------------------------
        const auto run_list = [&](bool first) {
            mpidict::skiplist_map<std::uint64_t, std::uint64_t> list(m_w.comm, list_config());
            const auto p = static_cast<std::uint64_t>(m_w.size);
            const auto r = static_cast<std::uint64_t>(m_w.rank);
            std::vector<std::uint64_t> ascending(n);
            std::vector<std::uint64_t> ascending_values(n);
            for (std::uint64_t i = 0; i < n; ++i) {
                ascending[i] = i * p + r;
                ascending_values[i] = value_of(ascending[i]);
            }
            const double rate = timed(n, [&] {
                const std::size_t fresh = list.insert_many(std::span<const std::uint64_t>(ascending),
                                                           std::span<const std::uint64_t>(ascending_values)).added();
                check(fresh == n, "ascending insert_many stored " + std::to_string(fresh) + " of " + std::to_string(n));
            }, [&] { list.flush(); });
            const auto stats = list.local_statistics();
            const double entries = static_cast<double>(stats.entries);
            const double largest = max_over_ranks(entries);
            const double mean = total(entries) / m_w.size;
            check(static_cast<std::uint64_t>(total(entries)) == n * p, "ascending: the list does not hold every key");
            list_rates.push_back(rate);
            if (!first) {
                list.destroy();
                return;
            }
            m_out.figure("ascending_largest_rank_entries", largest, "entries",
                         mpidict::bench::json_object().add("mean", mean).add("nodes_total", total(static_cast<double>(stats.nodes))));
            // What the phase cost the list, over all ranks per inserted key: node
            // splits, node-to-node forwards, requests held behind a split.
            const double keys_total = static_cast<double>(n * p);
            m_out.figure("ascending_splits_per_key", total(static_cast<double>(stats.splits)) / keys_total, "splits",
                         mpidict::bench::json_object().add("splits", total(static_cast<double>(stats.splits))));
            m_out.figure("ascending_hops_per_key", total(static_cast<double>(stats.hops)) / keys_total, "hops");
            m_out.figure("ascending_held_per_key", total(static_cast<double>(stats.held)) / keys_total, "requests");
            m_out.ratio("ascending_load_balance", mean > 0 ? largest / mean : 0, "<= 1.5",
                        mean > 0 && largest <= 1.5 * mean);
            list.destroy();
        };
        const auto run_tree = [&] {
            // The baseline on ascending keys: splitters from a sample of the keys to come.
            const auto p = static_cast<std::uint64_t>(m_w.size);
            const auto r = static_cast<std::uint64_t>(m_w.rank);
            std::vector<std::uint64_t> sample;
            for (std::uint64_t i = 0; i < n; i += std::max<std::uint64_t>(1, n / 256))
                sample.push_back(i * p + r);
            btree_partitioned tree(m_w.comm, std::span<const std::uint64_t>(sample), m_s.window);
            const double rate = timed(n, [&] {
                for (std::uint64_t i = 0; i < n; ++i)
                    tree.async_insert(i * p + r, value_of(i * p + r));
            }, [&] { tree.flush(); });
            const double held = static_cast<double>(tree.local_size());
            const double largest = max_over_ranks(held);
            const double mean = total(held) / m_w.size;
            check(static_cast<std::uint64_t>(total(held)) == n * p, "ascending btree does not hold every key");
            tree_rates.push_back(rate);
            tree_balance = mean > 0 ? largest / mean : 0;
            tree.destroy();
        };
        for (std::uint64_t round = 0; round < m_s.rounds; ++round) {
            if (round % 2 == 0) {
                run_list(round == 0);
                run_tree();
            } else {
                run_tree();
                run_list(false);
            }
        }
        const auto order = mpidict::bench::json_object().add("order", "alternating per round");
        m_out.figure("skiplist_ascending_insert_many_rate", list_rates, "ops/s", order);
        m_out.figure("btree_ascending_insert_rate", tree_rates, "ops/s", order);
        m_out.figure("btree_ascending_load_balance", tree_balance, "max/mean");
        const double list_rate = mpidict::bench::summary::of(list_rates).median;
        const double tree_rate = mpidict::bench::summary::of(tree_rates).median;
        m_out.figure("skiplist_vs_btree_ascending_insert", list_rate / tree_rate, "ratio",
                     mpidict::bench::json_object().add("ours_rate", list_rate).add("baseline_rate", tree_rate));
    }

    // The latest-N phase (--latest-entries; see the top of this file).
    int run_latest() {
        using list_type = mpidict::skiplist_map<std::uint64_t, std::uint64_t>;
        const std::uint64_t entries = m_s.latest_entries, prefixes = m_s.latest_prefixes, limit = m_s.latest_limit;
        const auto p = static_cast<std::uint64_t>(m_w.size), rank = static_cast<std::uint64_t>(m_w.rank);
        auto key_of = [](std::uint64_t prefix, std::uint64_t stamp) { return prefix << 40 | stamp; };
        mpidict::skiplist_map_config config = list_config();
        config.node_slots_per_rank = static_cast<std::size_t>(
            std::max<std::uint64_t>(config.node_slots_per_rank, 8 * entries * prefixes / p / m_s.granularity + 64));
        list_type list(m_w.comm, config);
        std::vector<std::uint64_t> keys, values;
        for (std::uint64_t prefix = 0; prefix < prefixes; ++prefix)
            for (std::uint64_t stamp = rank; stamp < entries; stamp += p) {
                keys.push_back(key_of(prefix, stamp));
                values.push_back(value_of(keys.back()));
            }
        const double load_rate = timed(keys.size(), [&] {
            (void)list.insert_many(std::span<const std::uint64_t>(keys), std::span<const std::uint64_t>(values));
        }, [&] { list.flush(); });
        check(list.global_size() == entries * prefixes, "latest: the list does not hold every entry");
        std::mt19937_64 random(m_s.seed * 131 + rank);
        // One query: its entries must be the first (or last) `limit` stamps of the prefix.
        enum kind { first, latest, collect_all };
        const char* names[] = {"first", "latest", "latest_collect_all"};
        auto query = [&](kind what) {
            const std::uint64_t prefix = random() % prefixes;
            const std::uint64_t lo = key_of(prefix, 0), hi = key_of(prefix, (std::uint64_t{1} << 40) - 1);
            list_type::entry_list got;
            if (what == collect_all) {
                got = list.range(lo, hi).get();
                std::reverse(got.begin(), got.end());
                got.resize(std::min<std::size_t>(got.size(), limit));
            } else {
                got = list.range(lo, hi, {.limit = limit, .descending = what == latest}).get();
            }
            bool ok = got.size() == std::min(limit, entries);
            for (std::size_t i = 0; ok && i < got.size(); ++i) {
                const std::uint64_t stamp = what == first ? i : entries - 1 - i;
                ok = got[i].first == key_of(prefix, stamp) && got[i].second == value_of(got[i].first);
            }
            check(ok, std::string("latest: a ") + names[what] + " query returned wrong entries");
        };
        // collect_all costs the whole prefix: a twentieth of the queries.
        const std::uint64_t counts[] = {m_s.latest_queries, m_s.latest_queries,
                                        std::max<std::uint64_t>(1, m_s.latest_queries / 20)};
        std::vector<double> seconds[3], parts[3], ratios;
        for (std::uint64_t round = 0; round < m_s.latest_rounds; ++round) {
            const kind orders[3][3] = {{first, latest, collect_all}, {latest, collect_all, first},
                                       {collect_all, first, latest}};
            double per_query[3] = {0, 0, 0};
            for (const kind what : orders[round % 3]) {
                const double before = total(static_cast<double>(list.local_statistics().range_parts));
                const double spent = timed_seconds([&] {
                    for (std::uint64_t q = 0; q < counts[what]; ++q)
                        query(what);
                }, [&] { list.flush(); });
                const double after = total(static_cast<double>(list.local_statistics().range_parts));
                per_query[what] = max_over_ranks(spent) / static_cast<double>(counts[what]);
                seconds[what].push_back(per_query[what]);
                parts[what].push_back((after - before) / static_cast<double>(counts[what] * p));
            }
            ratios.push_back(per_query[latest] / per_query[first]);
        }
        auto median = [](std::vector<double> values) {
            std::sort(values.begin(), values.end());
            return values[values.size() / 2];
        };
        m_out.figure("latest_load_rate", load_rate, "ops/s",
                     mpidict::bench::json_object().add("entries", static_cast<double>(entries * prefixes)));
        for (const kind what : {first, latest, collect_all}) {
            m_out.figure(std::string(names[what]) + "_seconds_per_query", median(seconds[what]), "s",
                         mpidict::bench::json_object().add("queries_per_rank_and_round", static_cast<double>(counts[what]))
                             .add("limit", static_cast<double>(limit)));
            m_out.figure(std::string(names[what]) + "_parts_per_query", median(parts[what]), "parts");
        }
        m_out.figure("latest_over_first", median(ratios), "ratio",
                     mpidict::bench::json_object().add("target", 2.0).add("rounds", static_cast<double>(ratios.size())));
        m_out.figure("collect_all_over_latest", median(seconds[collect_all]) / median(seconds[latest]), "ratio");
        m_out.figure("load_average_after", mpidict::support::read_load_average(), "load");
        list.destroy();
        std::uint64_t failures = 0;
        MPI_Allreduce(&m_failures, &failures, 1, MPI_UINT64_T, MPI_SUM, m_w.comm);
        m_out.figure("verified", failures == 0 ? 1 : 0, "bool",
                     mpidict::bench::json_object().add("failures", static_cast<double>(failures)));
        m_out.print_table();
        return failures == 0 ? 0 : 1;
    }

    // The async_insert phase (--async-rounds; issue 49 item 1): insert_many
    // against async_insert + flush of the same keys into fresh lists, the two
    // alternating which goes first, medians over rounds; each load checked
    // (global size, and find_many of a sample of this rank's keys).
    int run_async() {
        using list_type = mpidict::skiplist_map<std::uint64_t, std::uint64_t>;
        const std::uint64_t n = m_s.keys_per_rank;
        std::vector<std::uint64_t> keys(n), values(n);
        const std::uint64_t salt = mpidict::mix64(m_s.seed + 0x9e3779b97f4a7c15ULL);
        for (std::uint64_t i = 0; i < n; ++i) {
            keys[i] = mpidict::mix64((static_cast<std::uint64_t>(m_w.rank) * n + i) ^ salt);
            values[i] = value_of(keys[i]);
        }
        auto config_for = [&](std::uint64_t batch) {
            mpidict::skiplist_map_config config = list_config();
            config.async_batch_keys = static_cast<std::size_t>(batch);
            config.async_batch_bytes = static_cast<std::size_t>(m_s.async_batch_bytes);
            config.async_batches_in_flight = static_cast<std::size_t>(m_s.async_in_flight);
            return config;
        };
        auto verify = [&](list_type& list, std::uint64_t count, const char* what) {
            check(list.global_size() == count * static_cast<std::uint64_t>(m_w.size),
                  std::string(what) + ": the list does not hold every key");
            const std::size_t sample = std::min<std::size_t>(count, 2000);
            std::vector<std::uint64_t> probe(sample);
            for (std::size_t i = 0; i < sample; ++i)
                probe[i] = keys[i * count / sample];
            std::size_t wrong = 0;
            list.find_many(std::span<const std::uint64_t>(probe), [&](std::size_t i, const std::optional<std::uint64_t>& v) {
                wrong += !v || *v != value_of(probe[i]);
            });
            check(wrong == 0, std::string(what) + ": " + std::to_string(wrong) + " sampled keys missing or wrong");
        };
        enum kind { many, async, point, many_ttl };
        const char* names[] = {"insert_many", "async_insert", "async_insert_point", "insert_many_ttl"};
        auto load = [&](kind what) {
            const std::uint64_t count = what == point ? std::max<std::uint64_t>(1, n / 10) : n;
            list_type list(m_w.comm, config_for(what == point ? 0 : m_s.async_batch));
            const double rate = timed(count, [&] {
                if (what == many) {
                    (void)list.insert_many(std::span<const std::uint64_t>(keys),
                                           std::span<const std::uint64_t>(values));
                } else if (what == many_ttl) {
                    (void)list.insert_many(std::span<const std::uint64_t>(keys),
                                           std::span<const std::uint64_t>(values), std::chrono::hours(1));
                } else {
                    for (std::uint64_t i = 0; i < count; ++i)
                        list.async_insert(keys[i], values[i]);
                }
            }, [&] { list.flush(); });
            verify(list, count, names[what]);
            check(list.async_rejected() == 0, std::string(names[what]) + ": refusals");
            list.destroy();
            return rate;
        };
        std::vector<double> rates[4], ratios, ttl_ratios, loads;
        for (std::uint64_t round = 0; round < m_s.async_rounds; ++round) {
            loads.push_back(mpidict::support::read_load_average());
            double rate[4] = {0, 0, 0, 0};
            const kind order[2][3] = {{many, async, many_ttl}, {many_ttl, async, many}};
            for (const kind what : order[round % 2])
                if (what != many_ttl || m_s.async_ttl != 0)
                    rates[what].push_back(rate[what] = load(what));
            if (m_s.async_ttl != 0) {
                ttl_ratios.push_back(rate[many_ttl] / rate[many]);
                if (m_w.rank == 0)
                    std::fprintf(stderr, "round %llu: insert_many with a TTL %.3f M/s, over insert_many %.3f\n",
                                 static_cast<unsigned long long>(round), rate[many_ttl] / 1e6, ttl_ratios.back());
            }
            if (m_s.async_point != 0)
                rates[point].push_back(rate[point] = load(point));
            ratios.push_back(rate[async] / rate[many]);
            if (m_w.rank == 0)
                std::fprintf(stderr, "round %llu (load %.2f): insert_many %.3f M/s, async_insert %.3f M/s, ratio %.3f%s\n",
                             static_cast<unsigned long long>(round), loads.back(), rate[many] / 1e6,
                             rate[async] / 1e6, ratios.back(),
                             m_s.async_point != 0
                                 ? (", point records " + std::to_string(rate[point] / 1e6) + " M/s").c_str()
                                 : "");
        }
        auto median = [](std::vector<double> values) {
            std::sort(values.begin(), values.end());
            return values.empty() ? 0.0 : values[values.size() / 2];
        };
        if (!ttl_ratios.empty())
            m_out.figure("insert_many_ttl_over_insert_many", median(ttl_ratios), "ratio",
                         mpidict::bench::json_object().add("rounds", static_cast<double>(ttl_ratios.size())));
        for (const kind what : {many, async, point, many_ttl})
            if (!rates[what].empty())
                m_out.figure(std::string(names[what]) + "_rate", median(rates[what]), "ops/s");
        m_out.figure("async_insert_over_insert_many", median(ratios), "ratio",
                     mpidict::bench::json_object()
                         .add("target", 0.5)
                         .add("rounds", static_cast<double>(ratios.size()))
                         .add("async_batch_keys", static_cast<double>(m_s.async_batch))
                         .add("async_batch_bytes", static_cast<double>(m_s.async_batch_bytes))
                         .add("async_batches_in_flight", static_cast<double>(m_s.async_in_flight)));
        m_out.figure("load_average_after", mpidict::support::read_load_average(), "load");
        std::uint64_t failures = 0;
        MPI_Allreduce(&m_failures, &failures, 1, MPI_UINT64_T, MPI_SUM, m_w.comm);
        m_out.figure("verified", failures == 0 ? 1 : 0, "bool",
                     mpidict::bench::json_object().add("failures", static_cast<double>(failures)));
        m_out.print_table();
        return failures == 0 ? 0 : 1;
    }

    mpidict::skiplist_map_config list_config() const {
        mpidict::skiplist_map_config config;
        config.granularity = m_s.granularity;
        config.max_key_bytes = 8;
        config.max_value_bytes = 8;
        config.caller_window = m_s.window;
        config.adaptive_window = m_s.adaptive != 0;
        config.route_cache_entries = static_cast<std::size_t>(m_s.route_cache);
        config.consistency = mpidict::skiplist_consistency_named(m_s.consistency).value();  // --consistency checked it
        config.seed = m_s.seed;
        // Enough slots for n * p keys in nodes at least a quarter full, on any rank.
        config.node_slots_per_rank = static_cast<std::size_t>(
            std::max<std::uint64_t>(config.node_slots_per_rank, 8 * m_s.keys_per_rank / m_s.granularity + 64));
        config.runtime.buffer_bytes = std::max(config.runtime.buffer_bytes, config.required_buffer_bytes());
        return config;
    }

    void check(bool ok, const std::string& what) {
        if (!ok) {
            if (m_failures < 3)
                std::fprintf(stderr, "%s: rank %d: %s\n", bench_name, m_w.rank, what.c_str());
            ++m_failures;
        }
    }

    double max_over_ranks(double value) const { return mpidict::bench::max_over_ranks(value, m_w.comm); }
    double total(double value) const { return mpidict::bench::sum_over_ranks(value, m_w.comm); }

    // Seconds of this rank from a barrier through body and the collective finish.
    template <class Body, class Finish>
    double timed_seconds(Body&& body, Finish&& finish) {
        MPI_Barrier(m_w.comm);
        const double start = MPI_Wtime();
        body();
        finish();
        return MPI_Wtime() - start;
    }
    // Operations of all ranks per second of the slowest rank.
    template <class Body, class Finish>
    double timed(std::uint64_t per_rank, Body&& body, Finish&& finish) {
        const double seconds = timed_seconds(body, finish);
        return total(static_cast<double>(per_rank)) / max_over_ranks(seconds);
    }
    // --find-rounds runs of timed(), the median rate.
    template <class Body, class Finish>
    double median_of_rounds(std::uint64_t per_rank, Body&& body, Finish&& finish) {
        std::vector<double> rates;
        for (std::uint64_t round = 0; round < m_s.find_rounds; ++round)
            rates.push_back(timed(per_rank, body, finish));
        std::sort(rates.begin(), rates.end());
        return rates[rates.size() / 2];
    }

    const settings& m_s;
    const mpidict::bench::world& m_w;
    mpidict::bench::report m_out;
    std::uint64_t m_failures = 0;
    std::uint64_t m_range_entries = 0;
};

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(
        argc, argv, bench_name, description, declare,
        [](const settings& s, const mpidict::bench::world& w) { return runner(s, w).run(); });
}
