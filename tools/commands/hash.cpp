// `mpidict hash`: the hash-map workload of seed 000 §3 on the current MPI world.
//
// N unique 64-bit keys (a bijective scramble of 0..N-1 under the seed) with v
// values each go through three phases, each timed from a barrier to the end of
// a collective flush: insert, find (every value checked against the value the
// key must hold) and take (removes everything, checked the same way).  Between
// find and take, single find round trips are timed one by one for latency
// percentiles.  Communication patterns:
//   1n  rank 0 originates every operation; owners by hash placement;
//   nn  rank r originates keys [N r/p, N (r+1)/p); key k is owned by k % p;
//   n1  as nn, but rank 0 owns every key (explicit target_rank{0}).
// Modes: async streams fire-and-forget inserts and looks up with find_many;
// request waits for insert/find/take requests every L operations (seed 000,
// Figure 2).  Take is a request in both modes (its values come back).

#include <algorithm>
#include <optional>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/runtime/statistics.hpp"
#include "mpidict/support/program.hpp"

#include "common/command.hpp"
#include "mpidict/support/progress.hpp"
#include "common/report.hpp"

namespace mpidict::tool {
namespace {

// --save "" and --load "" did nothing and said nothing (issue 48, item 12).
std::string non_empty_directory(const char* option, std::string_view value) {
    if (value.empty())
        throw usage_error(std::string("--") + option + ": the checkpoint directory name is empty");
    return std::string(value);
}

enum class pattern_kind { one_to_n, n_to_n, n_to_one };

struct hash_options {
    std::uint64_t keys = 1'000'000;
    std::string pattern = "nn";
    std::string mode = "async";
    std::uint64_t values_per_key = 1;
    std::uint64_t value_bytes = 8;
    std::uint64_t blocking_factor = 1024;
    std::uint64_t buffer_bytes = runtime::config{}.buffer_bytes;
    std::uint64_t release_queue = runtime::config{}.release_queue;
    std::uint64_t seed = 1;
    std::uint64_t latency_samples = 2000;
    std::uint64_t capacity_values = 0;
    bool json = false;
    bool progress = false;
    std::string save;  // checkpoint directory written after insert
    std::string load;  // checkpoint directory read instead of inserting

    pattern_kind kind() const {
        if (pattern == "1n")
            return pattern_kind::one_to_n;
        if (pattern == "n1")
            return pattern_kind::n_to_one;
        return pattern_kind::n_to_n;
    }
    bool request_mode() const { return mode == "request"; }
};

// Bounds the engine enforces on buffer_bytes (checked here too, so a bad value
// is a usage error on every rank rather than an exception inside a collective).
constexpr std::uint64_t minimum_buffer_bytes = 256;
constexpr std::uint64_t maximum_buffer_bytes = std::uint64_t{1} << 30;
constexpr std::uint64_t key_bytes = sizeof(std::uint64_t);
// Largest record a key with its values makes: an insert request carries
// {slot, count, key, values}; a find_many answer {batch, index, count, values}.
constexpr std::uint64_t record_overhead_bytes = 8 + key_bytes;

// mpidict::mix64 (local/hash.hpp) is a bijection, so distinct indices give distinct keys.
constexpr std::uint64_t scramble(std::uint64_t x) { return mpidict::mix64(x); }

// The value a key must hold at position `index`: a function of (key, index, seed).
template <class V>
struct value_maker;

template <>
struct value_maker<std::uint64_t> {
    static std::uint64_t make(std::uint64_t key, std::uint64_t index, std::uint64_t salt) {
        return scramble(key ^ scramble(salt + index + 1));
    }
};

template <std::size_t n>
struct value_maker<std::array<std::byte, n>> {
    static_assert(n % 8 == 0, "fixed-size values are whole 64-bit words.");
    static std::array<std::byte, n> make(std::uint64_t key, std::uint64_t index, std::uint64_t salt) {
        std::array<std::byte, n> value;
        for (std::size_t word = 0; word < n / 8; ++word) {
            const std::uint64_t bits = scramble(key ^ scramble(salt + index * 64 + word + 1));
            std::memcpy(value.data() + word * 8, &bits, 8);
        }
        return value;
    }
};

// What one phase cost, reduced over ranks (times: max; counters: sum).
struct phase_result {
    std::string name;
    std::uint64_t operations = 0;  // key operations, all ranks
    double wall_seconds = 0;
    double initiation_seconds = 0;
    double completion_seconds = 0;
    double barrier_seconds = 0;
    std::uint64_t messages_sent = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t window_stalls = 0;
    std::uint64_t queue_stalls = 0;

    double rate() const { return wall_seconds > 0 ? static_cast<double>(operations) / wall_seconds : 0; }
};

template <class V>
class hash_workload {
public:
    using key_type = std::uint64_t;
    using map_type = hash_map<key_type, V>;

    hash_workload(const hash_options& options, command_context& context)
        : m_options(options), m_context(context), m_rank(context.rank()), m_size(context.size()),
          m_kind(options.kind()), m_values_per_key(options.values_per_key),
          m_key_salt(scramble(options.seed + 0x9e3779b97f4a7c15ULL)),
          m_value_salt(scramble(options.seed ^ 0x2545f4914f6cdd1dULL)),
          m_meter(context.rank() == 0 &&
                  (options.progress || (!options.json && progress_meter::stderr_is_terminal()))) {
        const auto p = static_cast<std::uint64_t>(m_size);
        const auto r = static_cast<std::uint64_t>(m_rank);
        if (m_kind == pattern_kind::one_to_n) {
            m_first = 0;
            m_last = m_rank == 0 ? options.keys : 0;
        } else {
            m_first = options.keys * r / p;
            m_last = options.keys * (r + 1) / p;
        }
    }

    int run() {
        const double start = MPI_Wtime();
        // Refuse a workload this machine cannot hold before allocating for it
        // (--keys 1Ti used to end in a bare std::bad_alloc).
        // Every rank has the same verdict, so every rank returns 1 here and rank 0
        // says why.  (Throwing ended in MPI_Abort, which could kill the job before
        // mpiexec forwarded the message: regression.hash_keys_beyond_memory_message
        // failed that way under load.)
        if (const std::string problem = support::agree_on_failure(m_context.world(), memory_problem());
            !problem.empty()) {
            if (m_rank == 0)
                std::fprintf(stderr, "mpidict hash: error: %s\n", problem.c_str());
            return 1;
        }
        // The constructor checks the configuration on every rank together (buffer
        // sizes, what the ranks can hold), so a refusal reaches every rank: each
        // says why and returns 1, without MPI_Abort (see memory_problem above).
        std::optional<map_type> made;
        try {
            made.emplace(m_context.world(), map_settings());
        } catch (const invalid_argument_error& problem) {
            std::fprintf(stderr, "mpidict hash: error on rank %d: %s\n", m_rank, problem.what());
            return 1;
        }
        map_type& map = *made;

        // --load replaces the insert phase: the map comes from a checkpoint
        // (saved by --save at any number of ranks) and is then verified as if
        // this run had inserted it.
        phase_result insert;
        try {
            insert = m_options.load.empty() ? run_phase(map, "insert", [&] { return insert_phase(map); })
                                            : run_phase(map, "load", [&] {
                                                  map.load(m_options.load);
                                                  return 0.0;
                                              });
        } catch (const checkpoint_error& problem) {
            // Thrown on every rank together, with the finding rank named.
            if (m_rank == 0)
                std::fprintf(stderr, "mpidict hash: error: %s\n", problem.what());
            return 1;
        }
        check_after_insert(map);
        if (!m_options.save.empty() && !save_checkpoint(map))
            return 1;
        const phase_result find = run_phase(map, "find", [&] { return find_phase(map); });
        const std::vector<double> latencies = latency_phase(map);
        const phase_result take = run_phase(map, "take", [&] { return take_phase(map); });

        const std::uint64_t keys_left = map.global_size();
        const std::uint64_t values_left = map.global_value_count();
        if (m_rank == 0 && (keys_left != 0 || values_left != 0))
            fail("after take the map still holds " + std::to_string(keys_left) + " keys and " +
                 std::to_string(values_left) + " values (expected 0)");
        map.destroy();
        const double total_seconds = MPI_Wtime() - start;

        const run_outcome outcome = gather_outcome(m_context.world(), m_failures);
        const std::uint64_t failures = outcome.failures;
        const std::uint64_t rss_max = outcome.peak_rss_bytes_max;
        std::uint64_t table_max = m_table_bytes;
        std::uint64_t table_sum = m_table_bytes;
        MPI_Reduce(&m_table_bytes, &table_max, 1, MPI_UINT64_T, MPI_MAX, 0, m_context.world());
        MPI_Reduce(&m_table_bytes, &table_sum, 1, MPI_UINT64_T, MPI_SUM, 0, m_context.world());

        if (m_rank == 0) {
            report summary{{insert, find, take}, latencies, rss_max, table_max, table_sum,
                           failures, total_seconds};
            if (!m_options.json)
                print_table(summary);
            print_json(summary);
            std::fflush(stdout);
        }
        return failures == 0 ? 0 : 1;
    }

private:
    struct report {
        std::array<phase_result, 3> phases;
        std::vector<double> latencies_us;  // sorted
        std::uint64_t peak_rss_bytes_max;
        std::uint64_t table_bytes_max;
        std::uint64_t table_bytes_sum;
        std::uint64_t failures;
        double total_seconds;
    };

    // Why this rank cannot hold its share of the keys, or "".  The estimate is
    // the table's entries (key, values and about as much again in slots and
    // spare capacity) against MemAvailable + SwapFree.
    std::string memory_problem() const {
        const double owned = m_kind == pattern_kind::n_to_one ? (m_rank == 0 ? static_cast<double>(m_options.keys) : 0.0)
                                                              : static_cast<double>(m_options.keys) / m_size;
        const double entry = static_cast<double>(sizeof(key_type)) +
                             static_cast<double>(m_values_per_key) * static_cast<double>(m_options.value_bytes);
        const double needed = owned * entry * 2.0;
        double available = 0;
        if (std::FILE* file = std::fopen("/proc/meminfo", "r")) {
            char line[256];
            while (std::fgets(line, sizeof line, file)) {
                unsigned long long kib = 0;
                if (std::sscanf(line, "MemAvailable: %llu kB", &kib) == 1 || std::sscanf(line, "SwapFree: %llu kB", &kib) == 1)
                    available += static_cast<double>(kib) * 1024.0;
            }
            std::fclose(file);
        }
        if (available <= 0 || needed <= available)
            return {};
        return "--keys " + std::to_string(m_options.keys) + " needs about " + format_bytes(needed) + " on rank " +
               std::to_string(m_rank) + " (" + format_count(static_cast<std::uint64_t>(owned)) + " keys of " +
               format_bytes(entry) + " each, and the table around them), but " + format_bytes(available) +
               " of memory is available; lower --keys, --values-per-key or --value-bytes, or run on more ranks";
    }

    hash_map_config map_settings() const {
        hash_map_config settings;
        settings.runtime.buffer_bytes = m_options.buffer_bytes;
        settings.runtime.blocking_factor = m_options.blocking_factor;
        settings.runtime.release_queue = m_options.release_queue;
        settings.place = m_kind == pattern_kind::n_to_n ? placement::cyclic : placement::hash;
        settings.capacity_values = m_options.capacity_values;
        // Size the shard for the keys this rank will own, so the timed insert
        // measures communication and insertion, not table growth.
        const double share = static_cast<double>(m_options.keys) / m_size;
        if (m_kind == pattern_kind::n_to_one)
            settings.expected_keys_per_rank = m_rank == 0 ? m_options.keys : 0;
        else
            settings.expected_keys_per_rank = static_cast<std::size_t>(share + 4 * std::sqrt(share) + 16);
        return settings;
    }

    key_type key_at(std::uint64_t index) const { return scramble(index ^ m_key_salt); }
    V value_at(key_type key, std::uint64_t index) const { return value_maker<V>::make(key, index, m_value_salt); }
    void fill_values(key_type key, std::vector<V>& values) const {
        for (std::uint64_t index = 0; index < m_values_per_key; ++index)
            values[index] = value_at(key, index);
    }
    target_rank target(const map_type& map, key_type key) const {
        return m_kind == pattern_kind::n_to_one ? target_rank{0} : target_rank{map.owner(key)};
    }
    // Rank 0's share times this gives the global progress.
    double progress_scale() const { return m_kind == pattern_kind::one_to_n ? 1.0 : static_cast<double>(m_size); }

    void fail(const std::string& message) {
        if (m_failures < max_reported_failures)
            std::fprintf(stderr, "mpidict hash: rank %d: verification failed: %s\n", m_rank, message.c_str());
        else if (m_failures == max_reported_failures)
            std::fprintf(stderr, "mpidict hash: rank %d: further failures not shown\n", m_rank);
        ++m_failures;
    }

    void verify(key_type key, std::span<const V> got, const char* what) {
        if (got.size() != m_values_per_key) {
            fail(std::string(what) + " of key " + std::to_string(key) + " returned " + std::to_string(got.size()) +
                 " values, expected " + std::to_string(m_values_per_key));
            return;
        }
        for (std::uint64_t index = 0; index < m_values_per_key; ++index)
            if (!(got[index] == value_at(key, index))) {
                fail(std::string(what) + " of key " + std::to_string(key) + ": value " + std::to_string(index) +
                     " differs from the value inserted");
                return;
            }
    }

    // Collective.  Times `body` from a barrier to the end of a flush; reduces the
    // times and the engine's counters.  Seed 000's three times are measured here
    // with the clock around the calls, not taken from the engine's statistics:
    // the engine samples one async start in 16 and scales it, which is far off
    // when a few starts are long (those that ship a full buffer).  `body`
    // returns the time it spent waiting (completion); the rest of its time is
    // initiation; the closing flush is the barrier time.
    template <class Body>
    phase_result run_phase(map_type& map, const char* name, Body&& body) {
        MPI_Barrier(m_context.world());
        map.reset_statistics();
        m_meter.start(name, m_options.keys, progress_scale());
        const double start = MPI_Wtime();
        const double completion = body();
        const double flush_start = MPI_Wtime();
        map.flush();
        const double end = MPI_Wtime();
        m_meter.finish();

        const runtime::statistics& stats = map.stats();
        const double wall = end - start;
        const double initiation = flush_start - start - completion;
        const double barrier = end - flush_start;
        const double times[4] = {wall, initiation, completion, barrier};
        double times_max[4] = {};
        const std::uint64_t counts[4] = {stats.messages_sent, stats.bytes_sent, stats.window_stalls,
                                         stats.queue_stalls};
        std::uint64_t counts_sum[4] = {};
        MPI_Reduce(times, times_max, 4, MPI_DOUBLE, MPI_MAX, 0, m_context.world());
        MPI_Reduce(counts, counts_sum, 4, MPI_UINT64_T, MPI_SUM, 0, m_context.world());

        phase_result result;
        result.name = name;
        result.operations = m_options.keys;
        result.wall_seconds = times_max[0];
        result.initiation_seconds = times_max[1];
        result.completion_seconds = times_max[2];
        result.barrier_seconds = times_max[3];
        result.messages_sent = counts_sum[0];
        result.bytes_sent = counts_sum[1];
        result.window_stalls = counts_sum[2];
        result.queue_stalls = counts_sum[3];
        return result;
    }

    // Collective.  Saves the map to --save, timed from a barrier; rank 0 reports
    // the bandwidth.  False (on every rank) if the save failed.
    bool save_checkpoint(map_type& map) {
        MPI_Barrier(m_context.world());
        const double start = MPI_Wtime();
        try {
            map.save(m_options.save);
        } catch (const checkpoint_error& problem) {
            if (m_rank == 0)
                std::fprintf(stderr, "mpidict hash: error: %s\n", problem.what());
            return false;
        }
        const double seconds = MPI_Wtime() - start;
        if (m_rank == 0) {
            const checkpoint_summary saved = inspect_checkpoint(m_options.save, false);
            const double bytes = static_cast<double>(saved.data_bytes);
            if (!m_options.json)
                std::printf("checkpoint: saved %s keys (%s of columns) to %s in %s s: %s/s\n",
                            format_count(saved.entries).c_str(), format_bytes(bytes).c_str(), m_options.save.c_str(),
                            format_seconds(seconds).c_str(), format_bytes(seconds > 0 ? bytes / seconds : 0).c_str());
            json_lines json("mpidict_hash", m_size, m_options.seed);
            json.emit(stdout, "save_bandwidth", seconds > 0 ? bytes / seconds / 1e6 : 0, "MB/s",
                      {json_lines::field{"seconds", json_lines::number(seconds)},
                       json_lines::field{"bytes", std::to_string(saved.data_bytes)}});
            std::fflush(stdout);
        }
        return true;
    }

    // Returns the seconds spent waiting for requests.
    double insert_phase(map_type& map) {
        std::vector<V> values(m_values_per_key);
        if (!m_options.request_mode()) {
            for (std::uint64_t index = m_first; index < m_last; ++index) {
                const key_type key = key_at(index);
                fill_values(key, values);
                if (m_values_per_key == 1)
                    map.async_insert(target(map, key), key, values[0]);
                else
                    map.async_insert(target(map, key), key, std::span<const V>(values));
                m_meter.tick();
            }
            return 0.0;
        }
        // Seed 000, Figure 2: start L inserts, then wait for all of them.
        std::vector<request<insert_result>> window;
        window.reserve(m_options.blocking_factor);
        double waiting = 0;
        const auto complete = [&] {
            const double start = MPI_Wtime();
            for (request<insert_result>& pending : window) {
                const insert_result result = pending.get();
                m_request_rejected += result.requested - result.stored;
                if (result.requested != m_values_per_key || !result.complete())
                    fail("an insert stored " + std::to_string(result.stored) + " of " +
                         std::to_string(result.requested) + " values (expected all " +
                         std::to_string(m_values_per_key) + ")");
            }
            window.clear();
            waiting += MPI_Wtime() - start;
        };
        for (std::uint64_t index = m_first; index < m_last; ++index) {
            const key_type key = key_at(index);
            fill_values(key, values);
            window.push_back(map.insert(target(map, key), key, std::span<const V>(values)));
            m_meter.tick();
            if (window.size() == m_options.blocking_factor)
                complete();
        }
        complete();
        return waiting;
    }

    // Collective (outside the timed phases).  Counts and placement after insert.
    void check_after_insert(map_type& map) {
        // Each lost value counts once, at its origin (async inserts: reported back
        // by the owner; requests: what the answer did not store).  The owner's
        // local_rejected() counts the same values again, so it is not added.
        const std::uint64_t lost_here = map.async_rejected() + m_request_rejected;
        std::uint64_t lost = 0;
        MPI_Allreduce(&lost_here, &lost, 1, MPI_UINT64_T, MPI_SUM, m_context.world());
        if (lost_here != 0)
            fail(std::to_string(lost_here) + " of this rank's values were rejected by their owners' capacity (" +
                 std::to_string(lost) + " on all ranks)");
        const std::uint64_t keys = map.global_size();
        const std::uint64_t values = map.global_value_count();
        if (m_rank == 0 && (keys != m_options.keys || values != m_options.keys * m_values_per_key))
            fail("after insert the map holds " + std::to_string(keys) + " keys and " + std::to_string(values) +
                 " values; expected " + std::to_string(m_options.keys) + " and " +
                 std::to_string(m_options.keys * m_values_per_key));
        std::uint64_t misplaced = 0;
        const auto p = static_cast<std::uint64_t>(m_size);
        map.local_for_each([&](const key_type& key, const auto&) {
            int owner = 0;
            if (m_kind == pattern_kind::n_to_n)
                owner = static_cast<int>(key % p);
            else if (m_kind == pattern_kind::one_to_n)
                owner = map.owner(key);
            if (owner != m_rank)
                ++misplaced;
        });
        if (misplaced != 0)
            fail(std::to_string(misplaced) + " keys stored on rank " + std::to_string(m_rank) +
                 " belong to another rank under pattern " + m_options.pattern);
        m_table_bytes = map.local_memory_bytes();
    }

    // Returns the seconds spent waiting for answers.
    double find_phase(map_type& map) {
        if (m_options.request_mode() || m_kind == pattern_kind::n_to_one) {
            // find_many routes by owner() and cannot name target_rank{0}, so the
            // N-1 pattern looks up with requests in async mode too.
            return windowed_lookup(map, false);
        }
        double in_find_many = 0;
        constexpr std::uint64_t chunk_keys = 1 << 16;
        std::vector<key_type> chunk;
        chunk.reserve(static_cast<std::size_t>(std::min(chunk_keys, m_last - m_first)));
        for (std::uint64_t begin = m_first; begin < m_last; begin += chunk_keys) {
            const std::uint64_t end = std::min(m_last, begin + chunk_keys);
            chunk.clear();
            for (std::uint64_t index = begin; index < end; ++index)
                chunk.push_back(key_at(index));
            const double start = MPI_Wtime();
            map.find_many(std::span<const key_type>(chunk), map_type::unlimited,
                          [&](std::size_t position, std::span<const V> values) {
                              verify(chunk[position], values, "find_many");
                              m_meter.tick();
                          });
            in_find_many += MPI_Wtime() - start;
        }
        // find_many times its own start (encoding every key) exactly, without
        // sampling; the rest of the call waited for answers.
        return in_find_many - map.stats()[hash_map_op::find].initiation_seconds;
    }

    double take_phase(map_type& map) { return windowed_lookup(map, true); }

    // find or take requests, L at a time, each result checked.  Returns the
    // seconds spent waiting for them.
    double windowed_lookup(map_type& map, bool take) {
        std::vector<request<std::vector<V>>> window;
        std::vector<key_type> keys;
        window.reserve(m_options.blocking_factor);
        keys.reserve(m_options.blocking_factor);
        const char* what = take ? "take" : "find";
        double waiting = 0;
        const auto complete = [&] {
            const double start = MPI_Wtime();
            for (std::size_t position = 0; position < window.size(); ++position) {
                const std::vector<V> values = window[position].get();
                verify(keys[position], values, what);
            }
            window.clear();
            keys.clear();
            waiting += MPI_Wtime() - start;
        };
        for (std::uint64_t index = m_first; index < m_last; ++index) {
            const key_type key = key_at(index);
            keys.push_back(key);
            window.push_back(take ? map.take(target(map, key), key) : map.find(target(map, key), key));
            m_meter.tick();
            if (window.size() == m_options.blocking_factor)
                complete();
        }
        complete();
        return waiting;
    }

    // Collective.  Each originating rank times single find round trips on keys
    // spread over its block; rank 0 gets every sample, sorted, in microseconds.
    std::vector<double> latency_phase(map_type& map) {
        // This rank's share of the samples: all of them for 1n, 1/p for nn and n1.
        const std::uint64_t samples_total = m_options.latency_samples;
        std::uint64_t wanted = m_rank == 0 ? samples_total : 0;
        if (m_kind != pattern_kind::one_to_n) {
            const auto p = static_cast<std::uint64_t>(m_size);
            const auto r = static_cast<std::uint64_t>(m_rank);
            wanted = samples_total * (r + 1) / p - samples_total * r / p;
        }
        const std::uint64_t block = m_last - m_first;
        const std::uint64_t count = std::min(block, wanted);
        std::vector<double> samples;
        samples.reserve(count);
        MPI_Barrier(m_context.world());
        for (std::uint64_t sample = 0; sample < count; ++sample) {
            const key_type key = key_at(m_first + sample * block / count);
            const double start = runtime::now_seconds();
            request<std::vector<V>> pending = map.find(target(map, key), key);
            const std::vector<V> values = pending.get();
            samples.push_back((runtime::now_seconds() - start) * 1e6);
            verify(key, values, "find (latency sample)");
        }
        map.flush();

        const int local_count = static_cast<int>(samples.size());
        std::vector<int> counts(m_rank == 0 ? static_cast<std::size_t>(m_size) : 0);
        MPI_Gather(&local_count, 1, MPI_INT, counts.data(), 1, MPI_INT, 0, m_context.world());
        std::vector<int> offsets(counts.size(), 0);
        std::vector<double> all;
        if (m_rank == 0) {
            int total = 0;
            for (std::size_t index = 0; index < counts.size(); ++index) {
                offsets[index] = total;
                total += counts[index];
            }
            all.resize(static_cast<std::size_t>(total));
        }
        MPI_Gatherv(samples.data(), local_count, MPI_DOUBLE, all.data(), counts.data(), offsets.data(), MPI_DOUBLE,
                    0, m_context.world());
        std::sort(all.begin(), all.end());
        return all;
    }

    std::string pattern_description() const {
        switch (m_kind) {
        case pattern_kind::one_to_n: return "1n: rank 0 originates everything; owners by hash";
        case pattern_kind::n_to_one: return "n1: every rank originates its block; rank 0 owns everything";
        default: return "nn: every rank originates its block; key k owned by rank k % p";
        }
    }

    void print_table(const report& summary) const {
        std::printf("mpidict hash: %d ranks, %s keys x %llu value%s of %llu bytes, mode %s\n", m_size,
                    format_count(m_options.keys).c_str(), static_cast<unsigned long long>(m_values_per_key),
                    m_values_per_key == 1 ? "" : "s", static_cast<unsigned long long>(m_options.value_bytes),
                    m_options.mode.c_str());
        std::printf("pattern %s\n", pattern_description().c_str());
        std::printf("tunables: blocking factor L %llu, buffer B %s, release queue q %llu; seed %llu\n\n",
                    static_cast<unsigned long long>(m_options.blocking_factor),
                    format_bytes(static_cast<double>(m_options.buffer_bytes)).c_str(),
                    static_cast<unsigned long long>(m_options.release_queue),
                    static_cast<unsigned long long>(m_options.seed));

        text_table table;
        table.add_row({"phase", "ops", "wall s", "rate", "initiation s", "completion s", "barrier s", "messages",
                       "sent", "stalls L/q"});
        for (const phase_result& phase : summary.phases)
            table.add_row({phase.name, format_count(phase.operations), format_seconds(phase.wall_seconds),
                           format_rate(phase.rate()), format_seconds(phase.initiation_seconds),
                           format_seconds(phase.completion_seconds), format_seconds(phase.barrier_seconds),
                           format_count(phase.messages_sent), format_bytes(static_cast<double>(phase.bytes_sent)),
                           format_count(phase.window_stalls) + "/" + format_count(phase.queue_stalls)});
        table.print(stdout);
        std::printf("(rate: key operations of all ranks / wall; initiation, completion, barrier: max over ranks; "
                    "messages, sent, stalls: sum over ranks)\n\n");

        const auto& lat = summary.latencies_us;
        if (lat.empty()) {
            std::printf("latency:  no samples (--latency-samples 0)\n");
        } else {
            std::printf("latency:  %s single find round trips: p50 %s us, p90 %s us, p99 %s us, max %s us\n",
                        format_count(lat.size()).c_str(), format_fixed(quantile(lat, 0.50), 1).c_str(),
                        format_fixed(quantile(lat, 0.90), 1).c_str(), format_fixed(quantile(lat, 0.99), 1).c_str(),
                        format_fixed(lat.back(), 1).c_str());
        }
        std::printf("memory:   peak RSS %s (max over ranks); table %s (max over ranks), %s in all\n",
                    format_bytes(static_cast<double>(summary.peak_rss_bytes_max)).c_str(),
                    format_bytes(static_cast<double>(summary.table_bytes_max)).c_str(),
                    format_bytes(static_cast<double>(summary.table_bytes_sum)).c_str());
        print_verdict(summary.failures, "every value found and taken as inserted; final global size 0",
                      summary.total_seconds);
    }

    void print_json(const report& summary) const {
        json_lines json("mpidict_hash", m_size, m_options.seed);
        json.describe("keys", m_options.keys);
        json.describe("pattern", m_options.pattern);
        json.describe("mode", m_options.mode);
        json.describe("values_per_key", m_options.values_per_key);
        json.describe("value_bytes", m_options.value_bytes);
        json.describe("blocking_factor", m_options.blocking_factor);
        json.describe("buffer_bytes", m_options.buffer_bytes);
        json.describe("release_queue", m_options.release_queue);
        using field = json_lines::field;
        for (const phase_result& phase : summary.phases)
            json.emit(stdout, phase.name + "_rate", phase.rate(), "ops/s",
                      {field{"seconds", json_lines::number(phase.wall_seconds)},
                       field{"initiation_seconds", json_lines::number(phase.initiation_seconds)},
                       field{"completion_seconds", json_lines::number(phase.completion_seconds)},
                       field{"barrier_seconds", json_lines::number(phase.barrier_seconds)},
                       field{"messages", std::to_string(phase.messages_sent)},
                       field{"bytes_sent", std::to_string(phase.bytes_sent)}});
        const auto& lat = summary.latencies_us;
        if (!lat.empty()) {  // --latency-samples 0: no figure rather than a made-up 0
            const std::vector<field> samples{field{"samples", std::to_string(lat.size())}};
            json.emit(stdout, "find_latency_p50_us", quantile(lat, 0.50), "us", samples);
            json.emit(stdout, "find_latency_p90_us", quantile(lat, 0.90), "us", samples);
            json.emit(stdout, "find_latency_p99_us", quantile(lat, 0.99), "us", samples);
        }
        json.emit(stdout, "peak_rss_bytes", static_cast<double>(summary.peak_rss_bytes_max), "bytes",
                  {field{"reduction", "\"max\""}});
        json.emit(stdout, "table_bytes", static_cast<double>(summary.table_bytes_max), "bytes",
                  {field{"reduction", "\"max\""}});
        json.emit(stdout, "verified", summary.failures == 0 ? 1 : 0, "bool",
                  {field{"failures", std::to_string(summary.failures)}});
    }

    static constexpr std::uint64_t max_reported_failures = 3;

    const hash_options& m_options;
    command_context& m_context;
    int m_rank;
    int m_size;
    pattern_kind m_kind;
    std::uint64_t m_values_per_key;
    std::uint64_t m_key_salt;
    std::uint64_t m_value_salt;
    std::uint64_t m_first = 0;  // this rank originates key indices [m_first, m_last)
    std::uint64_t m_last = 0;
    std::uint64_t m_failures = 0;
    std::uint64_t m_request_rejected = 0;  // values this rank's insert requests did not store
    std::uint64_t m_table_bytes = 0;
    progress_meter m_meter;
};

int run_hash(command_context& context) {
    hash_options options;
    option_parser parser(
        "mpidict hash [options]",
        "Runs a hash-map workload on the current MPI world (seed 000, section 3): insert N\n"
        "keys with v values each, find them all, take them all, verifying every value,\n"
        "then prints rates, Figure-2 times, latency percentiles and memory.");
    parser.add_count("keys", &options.keys, "total unique keys N over all ranks", 1, std::uint64_t{1} << 40)
        .add_choice("pattern", &options.pattern, {"nn", "1n", "n1"},
                    "who originates and who owns: nn all to all (owner k % p), 1n rank 0 to all "
                    "(owner by hash), n1 all to rank 0")
        .add_choice("mode", &options.mode, {"async", "request"},
                    "async: async_insert + flush, find_many; request: insert/find requests waited every L")
        .add_count("values-per-key", &options.values_per_key, "values v stored under each key", 1,
                   std::uint64_t{1} << 20, "V")
        .add_count("value-bytes", &options.value_bytes, "bytes per value: 8, 16, 32 or 64", 8, 64, "BYTES")
        .add_count("blocking-factor", &options.blocking_factor,
                   "L: requests started before waiting for them (also the engine's window)", 1,
                   std::uint64_t{1} << 24, "L")
        .add_count("buffer-bytes", &options.buffer_bytes, "B: bytes per aggregated message", minimum_buffer_bytes,
                   maximum_buffer_bytes, "B")
        .add_count("release-queue", &options.release_queue, "q: sent buffers awaiting release (0: wait for each)",
                   0, std::uint64_t{1} << 20, "Q")
        .add_count("seed", &options.seed, "seed of the keys and values", 0, UINT64_MAX, "S")
        .add_count("latency-samples", &options.latency_samples,
                   "single find round trips timed, in all (split over the originating ranks)", 0,
                   std::uint64_t{1} << 24, "N")
        .add_count("capacity-values", &options.capacity_values,
                   "per-rank limit on stored values (0: none); values beyond it are rejected, which "
                   "the run reports as a verification failure",
                   0, UINT64_MAX, "N")
        .add_custom("save", "DIR",
                    "after insert, save the map to this checkpoint directory (replaced only once the new "
                    "checkpoint is complete)",
                    "", [&](std::string_view value) { options.save = non_empty_directory("save", value); })
        .add_custom("load", "DIR",
                    "instead of inserting, load the map from this checkpoint directory (saved by --save with "
                    "the same --keys, --seed, --values-per-key and --value-bytes, at any number of ranks), then "
                    "verify, find and take as usual",
                    "", [&](std::string_view value) { options.load = non_empty_directory("load", value); })
        .add_flag("json", &options.json, "print only the JSON lines (one object per figure) on stdout")
        .add_flag("progress", &options.progress, "show a progress bar on stderr even when it is not a terminal")
        .add_check([&] {
            if ((!options.save.empty() || !options.load.empty()) && options.kind() == pattern_kind::n_to_one)
                throw usage_error("--save and --load need pattern nn or 1n: under n1 every key sits on rank 0 "
                                  "regardless of its owner, which a load cannot restore");
            const std::uint64_t s = options.value_bytes;
            if (s != 8 && s != 16 && s != 32 && s != 64)
                throw usage_error("--value-bytes: " + std::to_string(s) + " is not one of 8, 16, 32, 64");
            const std::uint64_t record = record_overhead_bytes + options.values_per_key * s;
            const std::uint64_t room = options.buffer_bytes - runtime::group_header_bytes;
            if (record > room)
                throw usage_error("--values-per-key " + std::to_string(options.values_per_key) + " x --value-bytes " +
                                  std::to_string(s) + " makes " + std::to_string(record) +
                                  "-byte records but --buffer-bytes " + std::to_string(options.buffer_bytes) +
                                  " holds " + std::to_string(room) + "; raise --buffer-bytes");
        })
        .add_epilogue("Counts take suffixes: 200k = 200000, 1M, 2e5, 64Ki = 65536.\n"
                      "Example: mpiexec -n 4 mpidict hash --keys 200000 --pattern nn\n");
    if (!context.parse_options(parser))
        return 0;

    switch (options.value_bytes) {
    case 8: return hash_workload<std::uint64_t>(options, context).run();
    case 16: return hash_workload<std::array<std::byte, 16>>(options, context).run();
    case 32: return hash_workload<std::array<std::byte, 32>>(options, context).run();
    default: return hash_workload<std::array<std::byte, 64>>(options, context).run();
    }
}

}  // namespace
}  // namespace mpidict::tool

MPIDICT_TOOL_COMMAND(hash, "hash-map workload: insert, find, take N keys (patterns 1n, nn, n1)",
                     mpidict::tool::run_hash);
