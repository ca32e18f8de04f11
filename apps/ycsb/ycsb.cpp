// ycsb: YCSB's core workloads on mpidict's containers (ycsb.hpp, docs/ycsb.md).
#include "ycsb/ycsb.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <optional>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include "mpidict/detail/rma_window.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/skiplist_map.hpp"
#include "mpidict/support/host.hpp"
#include "mpidict/support/json.hpp"
#include "mpidict/support/program.hpp"
#include "mpidict/support/progress.hpp"
#include "mpidict/support/text.hpp"
#include "mpidict/support/yielding.hpp"

namespace mpidict::apps::ycsb {

std::string_view container_name(container_kind kind) {
    switch (kind) {
    case container_kind::skiplist: return "skiplist";
    case container_kind::hash: return "hash";
    case container_kind::linear: return "linear";
    }
    return "?";
}

// ---- latency histogram ---------------------------------------------------------

int latency_histogram::bucket_of(std::uint64_t ns) {
    if (ns < 64)
        return static_cast<int>(ns);
    const int exponent = std::bit_width(ns) - 1;  // >= 6
    const int sub = static_cast<int>((ns >> (exponent - 5)) & (sub_buckets - 1));
    return std::min(buckets - 1, 64 + (exponent - 6) * sub_buckets + sub);
}

double latency_histogram::bucket_middle_ns(int bucket) {
    if (bucket < 64)
        return bucket;
    const int exponent = (bucket - 64) / sub_buckets + 6;
    const int sub = (bucket - 64) % sub_buckets;
    const double low = std::ldexp(static_cast<double>(sub_buckets + sub), exponent - 5);
    return low + std::ldexp(1.0, exponent - 6);
}

void latency_histogram::add(std::uint64_t ns) {
    ++m_counts[static_cast<std::size_t>(bucket_of(ns))];
    ++m_count;
    m_sum_ns += ns;
    m_max_ns = std::max(m_max_ns, ns);
}

double latency_histogram::quantile_us(double q) const {
    if (m_count == 0)
        return 0;
    const auto rank = static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(m_count)));
    std::uint64_t seen = 0;
    for (int bucket = 0; bucket < buckets; ++bucket) {
        seen += m_counts[static_cast<std::size_t>(bucket)];
        if (seen >= std::max<std::uint64_t>(rank, 1))
            return std::min(bucket_middle_ns(bucket), static_cast<double>(m_max_ns)) / 1e3;
    }
    return max_us();
}

void latency_histogram::reduce_to_root(MPI_Comm comm) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    std::array<std::uint64_t, buckets + 2> sums{};
    std::copy(m_counts.begin(), m_counts.end(), sums.begin());
    sums[buckets] = m_count;
    sums[buckets + 1] = m_sum_ns;
    std::array<std::uint64_t, buckets + 2> total{};
    MPI_Reduce(sums.data(), total.data(), buckets + 2, MPI_UINT64_T, MPI_SUM, 0, comm);
    std::uint64_t max_total = 0;
    MPI_Reduce(&m_max_ns, &max_total, 1, MPI_UINT64_T, MPI_MAX, 0, comm);
    if (rank == 0) {
        std::copy(total.begin(), total.begin() + buckets, m_counts.begin());
        m_count = total[buckets];
        m_sum_ns = total[buckets + 1];
        m_max_ns = max_total;
    }
}

bool ycsb_result::verified() const {
    if (!failure.empty() || records_stored != records_expected)
        return false;
    return std::all_of(phases.begin(), phases.end(), [](const phase_result& phase) { return phase.failures == 0; });
}

namespace {

using clock_type = std::chrono::steady_clock;
using entries = std::vector<std::pair<std::string, std::string>>;

enum class write_outcome { stored_new, replaced, refused };

std::size_t key_bytes_bound(const workload& spec) {
    return 4 + static_cast<std::size_t>(std::max<std::int64_t>(spec.zeropadding, 20));
}

// ---- the containers, behind one small interface ---------------------------------

// What every adapter holds: its map, and the load's loader calls every container
// answers alike (fire-and-forget inserts, refusals counted in load_rejected(); or
// insert_many batches).
template <class Map>
class loading_adapter {
public:
    void load_one(const std::string& key, const std::string& record) { m_map.async_insert(key, record); }
    insert_many_result load_many(std::span<const std::string> keys, std::span<const std::string> records) {
        return m_map.insert_many(keys, records);
    }
    std::uint64_t load_rejected() const { return m_map.async_rejected(); }
    void flush() { m_map.flush(); }

protected:
    template <class... Args>
    explicit loading_adapter(Args&&... args) : m_map(std::forward<Args>(args)...) {}

    Map m_map;
};

// skiplist_map and linear_hash_map: insert stores or replaces one value, find
// answers it.  Neither updates a field at the owner: the client reads, changes
// and writes back.
template <class Map>
class replacing_adapter : public loading_adapter<Map> {
protected:
    using loading_adapter<Map>::m_map;

public:
    using map_type = Map;
    using read_request = request<std::optional<std::string>>;
    using write_request = request<replace_result>;
    static constexpr bool atomic_field_update = false;

    read_request read(const std::string& key) { return m_map.find(key); }
    static std::optional<std::string> read_value(read_request& done) { return done.get(); }
    write_request write(const std::string& key, const std::string& record) { return m_map.insert(key, record); }
    // on_found(index, const std::optional<std::string>&) for every key (untimed checks).
    template <class Function>
    void read_many(std::span<const std::string> keys, Function&& on_found) {
        m_map.find_many(keys, [&](std::size_t index, const std::optional<std::string>& value) { on_found(index, value); });
    }
    static write_outcome written(write_request& done) {
        const replace_result result = done.get();
        return !result.stored ? write_outcome::refused
                              : result.replaced ? write_outcome::replaced : write_outcome::stored_new;
    }

protected:
    template <class Config>
    replacing_adapter(MPI_Comm comm, const Config& config) : loading_adapter<Map>(comm, config) {}
};

class skiplist_adapter : public replacing_adapter<skiplist_map<std::string, std::string>> {
public:
    using scan_request = request<map_type::entry_list>;
    static constexpr bool can_scan = true;

    skiplist_adapter(MPI_Comm comm, const workload& spec, const ycsb_options& options)
        : replacing_adapter(comm, settings(spec, options)) {}

    static skiplist_map_config settings(const workload& spec, const ycsb_options& options) {
        skiplist_map_config config;
        config.max_value_bytes = std::max(config.max_value_bytes, spec.max_record_bytes());
        config.max_key_bytes = std::max(config.max_key_bytes, key_bytes_bound(spec) + 8);
        config.consistency = skiplist_consistency_named(options.consistency).value();  // --consistency checked it
        config.runtime.buffer_bytes = std::max(config.runtime.buffer_bytes, config.required_buffer_bytes());
        config.online_rebalance = options.online_rebalance;
        return config;
    }
    std::uint64_t online_moves() const { return m_map.local_statistics().online_moves; }

    // Collective: rebalance() by requests (move: false: only measures and
    // restarts the count).
    skiplist_rebalance_result rebalance(bool move, double target = 1.1) {
        return m_map.rebalance({.metric = skiplist_load_metric::requests, .target = move ? target : 1e300});
    }
    skiplist_rebalance_result drain(int rank) { return m_map.drain(rank); }

    scan_request scan(const std::string& start, std::int64_t length) {
        range_options options;
        options.limit = static_cast<std::uint64_t>(length);
        return m_map.range_from(start, options);
    }
    static entries scanned(scan_request& done) { return done.get(); }
    std::uint64_t global_size() { return m_map.global_size(); }
};

class linear_adapter : public replacing_adapter<linear_hash_map<std::string, std::string>> {
public:
    using scan_request = std::monostate;
    static constexpr bool can_scan = false;

    linear_adapter(MPI_Comm comm, const workload& spec, const ycsb_options&)
        : replacing_adapter(comm, settings(comm, spec)), m_comm(comm) {}

    static linear_hash_map_config settings(MPI_Comm comm, const workload& spec) {
        int ranks = 1;
        MPI_Comm_size(comm, &ranks);
        linear_hash_map_config config;
        config.initial_servers = static_cast<std::size_t>(ranks);  // a steady file: every server active
        config.max_value_bytes = std::max(config.max_value_bytes, spec.max_record_bytes());
        config.max_key_bytes = std::max(config.max_key_bytes, key_bytes_bound(spec) + 8);
        // Room for every record the run can hold, spread unevenly: twice the fair share, at least 256 MiB.
        const double records = static_cast<double>(spec.recordcount) + static_cast<double>(spec.expected_new_keys());
        const double bytes = records * static_cast<double>(spec.max_record_bytes() + key_bytes_bound(spec));
        config.server_capacity_bytes =
            std::max<std::size_t>(config.server_capacity_bytes, static_cast<std::size_t>(2 * bytes / ranks));
        config.runtime.buffer_bytes = std::max(config.runtime.buffer_bytes, config.required_buffer_bytes());
        return config;
    }

    // linear_hash_map has no global_size: the sum of the servers' local sizes.
    std::uint64_t global_size() {
        std::uint64_t local = m_map.local_size();
        std::uint64_t total = 0;
        MPI_Allreduce(&local, &total, 1, MPI_UINT64_T, MPI_SUM, m_comm);
        return total;
    }

private:
    MPI_Comm m_comm;
};

class hash_adapter : public loading_adapter<hash_map<std::string, std::string>> {
public:
    using map_type = hash_map<std::string, std::string>;
    using read_request = request<std::vector<std::string>>;
    using write_request = request<bool>;
    using scan_request = std::monostate;
    static constexpr bool atomic_field_update = true;
    static constexpr bool can_scan = false;

    hash_adapter(MPI_Comm comm, const workload&, const ycsb_options&)
        : loading_adapter(comm),
          m_put(m_map.register_visitor("ycsb.put", &put)),
          m_patch(m_map.register_visitor("ycsb.update_field", &patch)) {}

    // Stores `record` as the key's only value; returns whether the key existed.
    static bool put(map_type::visit_context&, const std::string&, std::vector<std::string>& values,
                    const std::string& record) {
        const bool existed = !values.empty();
        values.assign(1, record);
        return existed;
    }
    // Replaces one field (argument: the field's index, 2 bytes, then the field
    // as append_field writes it); false if the key is absent.
    static bool patch(map_type::visit_context&, const std::string& key, std::vector<std::string>& values,
                      const std::string& argument) {
        if (values.empty())
            return false;
        if (argument.size() < 2)
            throw std::invalid_argument("ycsb.update_field: argument of " + std::to_string(argument.size()) + " bytes");
        const auto field = static_cast<std::int64_t>(static_cast<unsigned char>(argument[0]) |
                                                     static_cast<unsigned char>(argument[1]) << 8);
        std::vector<field_view> fields;
        if (!split_record(values.front(), fields) || field >= static_cast<std::int64_t>(fields.size()))
            throw std::invalid_argument("ycsb.update_field: malformed record for key " + key);
        values.front() = replace_field(values.front(), fields, field, std::string_view(argument).substr(2));
        return true;
    }

    read_request read(const std::string& key) { return m_map.find(key); }
    static std::optional<std::string> read_value(read_request& done) {
        std::vector<std::string> values = done.get();
        if (values.empty())
            return std::nullopt;
        return std::move(values.front());
    }
    write_request write(const std::string& key, const std::string& record) { return m_map.visit(key, m_put, record); }
    // A key with two values (stored twice) is reported as missing its one record.
    template <class Function>
    void read_many(std::span<const std::string> keys, Function&& on_found) {
        m_map.find_many(keys, 2, [&](std::size_t index, const auto& values) {
            const std::optional<std::string> value =
                values.size() == 1 ? std::optional<std::string>(*values.begin()) : std::nullopt;
            on_found(index, value);
        });
    }
    write_request update_field(const std::string& key, std::int64_t field, const std::string& bytes) {
        std::string argument;
        argument += static_cast<char>(field & 0xff);
        argument += static_cast<char>((field >> 8) & 0xff);
        argument += bytes;
        return m_map.visit(key, m_patch, argument);
    }
    // put and update_field both answer whether the key was there.
    static write_outcome written(write_request& done) {
        return done.get() ? write_outcome::replaced : write_outcome::stored_new;
    }
    std::uint64_t global_size() { return m_map.global_size(); }

private:
    map_type::visitor<std::string, bool> m_put;
    map_type::visitor<std::string, bool> m_patch;
};

// ---- the insert counter, shared ---------------------------------------------------------

// Every rank's count of run-phase inserts acknowledged in order (key_chooser's
// c_r), one 64-bit slot per rank in an rma_window (the window rma_hash_set
// uses).  All ranks on one node: plain atomics on the shared segments, no MPI
// call.  Otherwise one-sided atomics (MPI_Raccumulate with MPI_REPLACE for the
// own slot, MPI_Rget_accumulate with MPI_NO_OP for the others) waited for with
// yields: MPICH on one node runs RMA as messages its target must progress, and
// a blocking flush would spin against the rank it waits for.  The values only
// grow, so a stale read is a lower bound, which is all key_chooser needs.
class insert_progress {
public:
    insert_progress(MPI_Comm comm, int rank, int ranks, bool allow_shared)
        : m_window(comm, sizeof(std::int64_t), allow_shared),
          m_rank(rank),
          m_counts(static_cast<std::size_t>(ranks), 0) {
        if (!m_window.shared())
            m_window.lock_all();
        m_window.barrier();
    }
    ~insert_progress() {
        if (m_window.locked_all())
            m_window.unlock_all();
        m_window.free();  // collective
    }
    insert_progress(const insert_progress&) = delete;
    insert_progress& operator=(const insert_progress&) = delete;

    // How many operations between two exchanges.
    std::uint64_t interval() const { return m_window.shared() ? 32 : 256; }

    // Publishes this rank's count and reads everyone's.
    const std::vector<std::int64_t>& exchange(std::int64_t own) {
        const auto size = static_cast<int>(m_counts.size());
        if (m_window.shared()) {
            std::atomic_ref<std::int64_t>(*reinterpret_cast<std::int64_t*>(m_window.local_segment()))
                .store(own, std::memory_order_release);
            for (int rank = 0; rank < size; ++rank)
                if (rank != m_rank)
                    m_counts[static_cast<std::size_t>(rank)] =
                        std::atomic_ref<std::int64_t>(*reinterpret_cast<std::int64_t*>(m_window.segment(rank)))
                            .load(std::memory_order_acquire);
        } else {
            std::vector<MPI_Request> requests(static_cast<std::size_t>(size), MPI_REQUEST_NULL);
            MPI_Raccumulate(&own, 1, MPI_INT64_T, m_rank, 0, 1, MPI_INT64_T, MPI_REPLACE, m_window.handle(),
                            &requests[static_cast<std::size_t>(m_rank)]);
            const std::int64_t nothing = 0;
            for (int rank = 0; rank < size; ++rank)
                if (rank != m_rank)
                    MPI_Rget_accumulate(&nothing, 1, MPI_INT64_T, &m_counts[static_cast<std::size_t>(rank)], 1,
                                        MPI_INT64_T, rank, 0, 1, MPI_INT64_T, MPI_NO_OP, m_window.handle(),
                                        &requests[static_cast<std::size_t>(rank)]);
            for (MPI_Request& request : requests)
                m_window.wait(request);
        }
        m_counts[static_cast<std::size_t>(m_rank)] = own;
        return m_counts;
    }

private:
    detail::rma_window m_window;
    int m_rank;
    std::vector<std::int64_t> m_counts;
};

// ---- one rank's client ----------------------------------------------------------------

struct run_context {
    MPI_Comm comm;
    int rank = 0;
    int ranks = 1;
    const workload& spec;
    const ycsb_options& options;
    bool strict_freshness = false;
    const std::vector<std::string>* loaded_keys = nullptr;  // sorted; scans' completeness check
    support::progress_meter* meter = nullptr;
    std::FILE* dump = nullptr;
    insert_progress* inserts = nullptr;  // when the run phase inserts and p > 1
    bool oversubscribed = false;         // more ranks than cores on this node
};

template <class Adapter>
class client {
public:
    client(Adapter& db, run_context& context, key_chooser& chooser)
        : m_db(db), m_context(context), m_spec(context.spec), m_chooser(chooser), m_backoff(context.oversubscribed) {}

    // Inserts records [first, first + count): --load async (the default) as a
    // loader would, every record an async_insert (the containers' streaming
    // form: skiplist_map sends them as sorted batches, hash_map aggregates
    // them per rank), answered by the flush that ends the phase; --load
    // requests as YCSB's client does, one insert request per record, W in
    // flight, each answer checked (a new key) and timed.
    void load(std::int64_t first, std::int64_t count, phase_result& phase) {
        m_phase = &phase;
        m_load_first = first;
        m_load_count = count;
        m_load_sequence = m_sequence;
        if (m_context.options.load == "async") {
            const std::size_t kind = static_cast<std::size_t>(operation::insert);
            for (std::int64_t keynum = first; keynum < first + count; ++keynum) {
                const std::string key = key_name(keynum, m_spec);
                m_db.load_one(key, record_for(key, ++m_sequence));
                ++m_phase->by_kind[kind];
                ++m_phase->operations;
                if (m_context.meter != nullptr)
                    m_context.meter->tick();
            }
            return;
        }
        if (m_context.options.load == "many") {
            const std::size_t kind = static_cast<std::size_t>(operation::insert);
            const std::int64_t chunk = static_cast<std::int64_t>(m_context.options.load_chunk);
            std::vector<std::string> keys, records;
            for (std::int64_t start = first; start < first + count; start += chunk) {
                const std::int64_t size = std::min(chunk, first + count - start);
                keys.clear();
                records.clear();
                for (std::int64_t keynum = start; keynum < start + size; ++keynum) {
                    keys.push_back(key_name(keynum, m_spec));
                    records.push_back(record_for(keys.back(), ++m_sequence));
                }
                const insert_many_result stored = m_db.load_many(keys, records);
                if (stored.stored != static_cast<std::uint64_t>(size) || stored.replaced != 0)
                    fail("load: insert_many of records " + std::to_string(start) + ".." +
                         std::to_string(start + size - 1) + " stored " + std::to_string(stored.stored) + " (" +
                         std::to_string(stored.replaced) + " replaced, " + std::to_string(stored.refused) +
                         " refused)");
                m_phase->by_kind[kind] += static_cast<std::uint64_t>(size);
                m_phase->operations += static_cast<std::uint64_t>(size);
            }
            return;
        }
        std::int64_t next = first;
        drive(count, [&](pending& op) {
            op.kind = operation::insert;
            op.keynum = next++;
        });
    }

    // After the load's flush, untimed, in both load modes: no insert refused,
    // and every loaded record of this rank found once, holding exactly what
    // the load wrote (every field tagged with its insert's write).  Failures
    // count in the load phase.
    void verify_load() {
        if (const std::uint64_t refused = m_db.load_rejected(); refused != 0)
            fail("load: " + std::to_string(refused) + " inserts refused (capacity)");
        constexpr std::int64_t chunk = 4096;
        std::vector<std::string> keys;
        std::vector<field_view> fields;
        for (std::int64_t start = 0; start < m_load_count; start += chunk) {
            const std::int64_t size = std::min(chunk, m_load_count - start);
            keys.clear();
            for (std::int64_t i = 0; i < size; ++i)
                keys.push_back(key_name(m_load_first + start + i, m_spec));
            m_db.read_many(std::span<const std::string>(keys), [&](std::size_t index, const std::optional<std::string>& value) {
                const std::string& key = keys[index];
                if (!value) {
                    fail("load: record " + key + " not found (once) after the load");
                    return;
                }
                if (const std::string problem = check_record(*value, key, m_spec, fields); !problem.empty()) {
                    fail("load: record " + key + ": " + problem);
                    return;
                }
                const std::uint64_t tag =
                    make_tag(m_context.rank, m_load_sequence + static_cast<std::uint64_t>(start) + index + 1);
                for (const field_view& field : fields)
                    if (field.tag != tag) {
                        fail("load: record " + key + " holds a field of another write than its insert");
                        return;
                    }
            });
        }
    }

    void run(std::int64_t count, phase_result& phase) {
        m_phase = &phase;
        m_running = true;
        drive(count, [&](pending& op) { choose(op); });
    }

    std::uint64_t acknowledged_inserts() const { return m_acknowledged_inserts; }

private:
    struct pending {
        bool active = false;
        operation kind = operation::read;
        int step = 0;
        std::int64_t keynum = 0;
        std::string key;
        clock_type::time_point start;
        std::vector<std::uint64_t> floors;  // this rank's acknowledged write per field when it started
        std::int64_t field = -1;            // an update's field (-1: the whole record)
        std::uint64_t sequence = 0;         // the write's sequence (its tag)
        std::string field_bytes;            // the new field
        std::int64_t scan_length = 0;
        std::optional<typename Adapter::read_request> read;
        std::optional<typename Adapter::write_request> write;
        std::optional<typename Adapter::scan_request> scan;
    };

    bool writes(const pending& op) const {
        return op.kind == operation::update || op.kind == operation::read_modify_write;
    }

    void choose(pending& op) {
        if (m_context.inserts != nullptr && m_generated++ % m_context.inserts->interval() == 0)
            m_chooser.learn_acknowledged(m_context.inserts->exchange(m_chooser.own_acknowledged()));
        op.kind = m_chooser.next_operation();
        if (op.kind == operation::insert) {
            op.keynum = m_chooser.next_insert_keynum();
        } else {
            op.keynum = m_chooser.next_keynum();
            if (op.kind == operation::scan)
                op.scan_length = m_chooser.next_scan_length();
            if (writes(op))
                op.field = m_spec.writeallfields ? -1 : m_chooser.next_field();
        }
        if (m_context.dump != nullptr)
            std::fprintf(m_context.dump, "%s %lld\n", std::string(operation_names[static_cast<int>(op.kind)]).c_str(),
                         static_cast<long long>(op.keynum));
    }

    template <class Generate>
    void drive(std::int64_t count, Generate&& generate) {
        const std::size_t window = std::max<std::size_t>(1, m_context.options.window);
        std::vector<pending> slots(window);
        std::int64_t generated = 0;
        std::int64_t completed = 0;
        std::size_t in_flight = 0;
        std::optional<pending> parked;  // waits for an earlier write of its key
        while (completed < count) {
            while (in_flight < window && (parked || generated < count)) {
                pending op;
                if (parked) {
                    op = std::move(*parked);
                    parked.reset();
                } else {
                    generate(op);
                    ++generated;
                }
                if (writes(op) && m_writing.count(op.keynum) != 0) {
                    parked = std::move(op);
                    break;
                }
                auto free_slot = std::find_if(slots.begin(), slots.end(), [](const pending& p) { return !p.active; });
                *free_slot = std::move(op);
                start(*free_slot);
                ++in_flight;
            }
            bool progressed = false;
            for (pending& op : slots) {
                if (!op.active || !test(op))
                    continue;
                progressed = true;
                if (advance(op)) {
                    op.active = false;
                    op.read.reset();
                    op.write.reset();
                    op.scan.reset();
                    --in_flight;
                    ++completed;
                    if (m_context.meter != nullptr)
                        m_context.meter->tick();
                }
            }
            m_backoff(progressed);
        }
    }

    std::string record_for(const std::string& key, std::uint64_t sequence) {
        std::string record;
        record.reserve(m_spec.max_record_bytes());
        const std::uint64_t tag = make_tag(m_context.rank, sequence);
        for (std::int64_t field = 0; field < m_spec.fieldcount; ++field)
            append_field(record, key, field, tag, static_cast<std::size_t>(m_chooser.next_field_length()));
        return record;
    }

    void start(pending& op) {
        op.active = true;
        op.step = 0;
        op.key = key_name(op.keynum, m_spec);
        op.start = clock_type::now();
        op.floors.clear();
        if (const auto known = m_own_writes.find(op.keynum); known != m_own_writes.end())
            op.floors = known->second;
        switch (op.kind) {
        case operation::insert:
            op.sequence = ++m_sequence;
            op.write.emplace(m_db.write(op.key, record_for(op.key, op.sequence)));
            break;
        case operation::read:
            op.read.emplace(m_db.read(op.key));
            break;
        case operation::scan:
            if constexpr (Adapter::can_scan)
                op.scan.emplace(m_db.scan(op.key, op.scan_length));
            break;
        case operation::update:
            m_writing.insert(op.keynum);
            start_update(op, nullptr);
            break;
        case operation::read_modify_write:
            m_writing.insert(op.keynum);
            op.read.emplace(m_db.read(op.key));
            break;
        }
    }

    // The write of an update (or of a read-modify-write's second step).
    // `record`: the record just read, or nullptr.
    void start_update(pending& op, const std::pair<std::string, std::vector<field_view>>* record) {
        op.sequence = ++m_sequence;
        op.step = 1;
        if (op.field < 0) {
            op.write.emplace(m_db.write(op.key, record_for(op.key, op.sequence)));
            return;
        }
        op.field_bytes.clear();
        append_field(op.field_bytes, op.key, op.field, make_tag(m_context.rank, op.sequence),
                     static_cast<std::size_t>(m_chooser.next_field_length()));
        if constexpr (Adapter::atomic_field_update) {
            op.write.emplace(m_db.update_field(op.key, op.field, op.field_bytes));
        } else {
            if (record == nullptr) {  // read first
                op.step = 0;
                op.read.emplace(m_db.read(op.key));
                return;
            }
            op.write.emplace(m_db.write(op.key, replace_field(record->first, record->second, op.field, op.field_bytes)));
        }
    }

    bool test(pending& op) {
        if (op.read)
            return op.read->test();
        if (op.write)
            return op.write->test();
        if constexpr (Adapter::can_scan)
            if (op.scan)
                return op.scan->test();
        return true;
    }

    void fail(const std::string& message) {
        if (m_phase->failures++ == 0)
            m_phase->first_failure = "rank " + std::to_string(m_context.rank) + ": " + message;
    }

    // Checks a record read for op's key; returns it split, or nullopt.
    std::optional<std::pair<std::string, std::vector<field_view>>> check_read(pending& op, std::optional<std::string> value) {
        if (!value) {  // every key chosen is at or below an acknowledged limit: stored
            fail(std::string(operation_names[static_cast<int>(op.kind)]) + " of " + op.key + " (record " +
                 std::to_string(op.keynum) + ", acknowledged limit " + std::to_string(m_chooser.acknowledged_limit()) +
                 "): not found");
            return std::nullopt;
        }
        std::pair<std::string, std::vector<field_view>> record{std::move(*value), {}};
        if (const std::string problem = check_record(record.first, op.key, m_spec, record.second); !problem.empty()) {
            fail("read of " + op.key + ": " + problem);
            return std::nullopt;
        }
        for (std::size_t field = 0; field < record.second.size(); ++field) {
            const std::uint64_t tag = record.second[field].tag;
            const int writer = tag_rank(tag);
            if (writer < 0 || writer >= m_context.ranks) {
                fail("read of " + op.key + ": field " + std::to_string(field) + " names writer rank " +
                     std::to_string(writer));
                return std::nullopt;
            }
            if (writer != m_context.rank)
                continue;
            if (tag_sequence(tag) > m_sequence) {
                fail("read of " + op.key + ": field " + std::to_string(field) + " holds write " +
                     std::to_string(tag_sequence(tag)) + " of this rank, which has issued only " +
                     std::to_string(m_sequence));
                return std::nullopt;
            }
            if (m_context.strict_freshness && field < op.floors.size() && tag_sequence(tag) < op.floors[field]) {
                fail("read of " + op.key + ": field " + std::to_string(field) + " holds this rank's write " +
                     std::to_string(tag_sequence(tag)) + ", older than its write " + std::to_string(op.floors[field]) +
                     " acknowledged before the read started");
                return std::nullopt;
            }
        }
        return record;
    }

    void acknowledge_write(pending& op) {
        auto& known = m_own_writes[op.keynum];
        known.resize(static_cast<std::size_t>(m_spec.fieldcount), 0);
        if (op.field < 0) {
            std::fill(known.begin(), known.end(), op.sequence);
        } else {
            known[static_cast<std::size_t>(op.field)] = op.sequence;
        }
    }

    void check_scan(pending& op, const entries& found) {
        const std::string& start = op.key;
        if (found.size() > static_cast<std::size_t>(op.scan_length)) {
            fail("scan from " + start + " asked for " + std::to_string(op.scan_length) + " records, got " +
                 std::to_string(found.size()));
            return;
        }
        std::vector<field_view> fields;
        for (std::size_t i = 0; i < found.size(); ++i) {
            if (found[i].first < start || (i > 0 && !(found[i - 1].first < found[i].first))) {
                fail("scan from " + start + ": key " + found[i].first + " out of order");
                return;
            }
            if (const std::string problem = check_record(found[i].second, found[i].first, m_spec, fields);
                !problem.empty()) {
                fail("scan from " + start + ": record " + found[i].first + ": " + problem);
                return;
            }
        }
        if (m_context.loaded_keys == nullptr)
            return;
        const auto& loaded = *m_context.loaded_keys;
        auto next = std::lower_bound(loaded.begin(), loaded.end(), start);
        std::size_t j = 0;
        const bool short_scan = found.size() < static_cast<std::size_t>(op.scan_length);
        for (; next != loaded.end(); ++next) {
            if (!short_scan && (found.empty() || found.back().first < *next))
                break;
            while (j < found.size() && found[j].first < *next)
                ++j;
            if (j == found.size() || found[j].first != *next) {
                fail("scan from " + start + " (" + std::to_string(found.size()) + " of " +
                     std::to_string(op.scan_length) + " records) missed loaded record " + *next);
                return;
            }
        }
        m_phase->scanned_records += found.size();
    }

    // Handles op's arrived answer; true when op is complete.
    bool advance(pending& op) {
        switch (op.kind) {
        case operation::insert: {
            const write_outcome outcome = Adapter::written(*op.write);
            if (outcome != write_outcome::stored_new)
                fail("insert of " + op.key + " (record " + std::to_string(op.keynum) + "): " +
                     (outcome == write_outcome::refused ? "refused (capacity)" : "the key was already there"));
            else if (m_running) {
                m_chooser.acknowledge_insert(op.keynum);
                ++m_acknowledged_inserts;
                acknowledge_write(op);
            }
            break;
        }
        case operation::read:
            check_read(op, Adapter::read_value(*op.read));
            break;
        case operation::scan:
            if constexpr (Adapter::can_scan)
                check_scan(op, Adapter::scanned(*op.scan));
            break;
        case operation::update:
        case operation::read_modify_write:
            if (op.step == 0) {
                auto record = check_read(op, Adapter::read_value(*op.read));
                op.read.reset();
                if (!record) {
                    m_writing.erase(op.keynum);
                    break;
                }
                if (op.kind == operation::read_modify_write && (op.field < 0 || Adapter::atomic_field_update))
                    start_update(op, nullptr);
                else
                    start_update(op, &*record);
                if (op.step == 1)
                    return false;  // the write is on its way
                return false;      // (an update's read: the write follows)
            }
            {
                const write_outcome outcome = Adapter::written(*op.write);
                m_writing.erase(op.keynum);
                if (outcome == write_outcome::replaced)
                    acknowledge_write(op);
                else
                    fail(std::string(operation_names[static_cast<int>(op.kind)]) + " of " + op.key + ": " +
                         (outcome == write_outcome::refused ? "refused (capacity)" : "the record was not there"));
            }
            break;
        }
        const auto kind = static_cast<std::size_t>(op.kind);
        m_phase->latency[kind].add(static_cast<std::uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now() - op.start).count()));
        ++m_phase->by_kind[kind];
        ++m_phase->operations;
        return true;
    }

    Adapter& m_db;
    run_context& m_context;
    const workload& m_spec;
    key_chooser& m_chooser;
    phase_result* m_phase = nullptr;
    support::poll_backoff m_backoff;
    bool m_running = false;
    std::uint64_t m_sequence = 0;
    std::uint64_t m_acknowledged_inserts = 0;
    std::uint64_t m_generated = 0;
    std::int64_t m_load_first = 0, m_load_count = 0;
    std::uint64_t m_load_sequence = 0;  // m_sequence before the load
    std::unordered_set<std::int64_t> m_writing;                                   // keys with a write in flight
    std::unordered_map<std::int64_t, std::vector<std::uint64_t>> m_own_writes;  // run phase: acknowledged, per field
};

// Sums a phase over the ranks onto rank 0 (collective).
void reduce_phase(MPI_Comm comm, int rank, phase_result& phase, double local_seconds) {
    double slowest = 0;
    MPI_Reduce(&local_seconds, &slowest, 1, MPI_DOUBLE, MPI_MAX, 0, comm);
    phase.seconds = slowest;
    std::array<std::uint64_t, operation_count + 3> counts{};
    std::copy(phase.by_kind.begin(), phase.by_kind.end(), counts.begin());
    counts[operation_count] = phase.operations;
    counts[operation_count + 1] = phase.scanned_records;
    counts[operation_count + 2] = phase.failures;
    std::array<std::uint64_t, operation_count + 3> total{};
    MPI_Reduce(counts.data(), total.data(), static_cast<int>(counts.size()), MPI_UINT64_T, MPI_SUM, 0, comm);
    for (latency_histogram& histogram : phase.latency)
        histogram.reduce_to_root(comm);
    // The lowest failing rank's first message.
    const std::string first = support::agree_on_failure(comm, phase.first_failure);
    if (rank == 0) {
        std::copy(total.begin(), total.begin() + operation_count, phase.by_kind.begin());
        phase.operations = total[operation_count];
        phase.scanned_records = total[operation_count + 1];
        phase.failures = total[operation_count + 2];
        phase.first_failure = first;
    }
}

// The share [first, first + count) of `total` items starting at `base` for rank r of p.
std::pair<std::int64_t, std::int64_t> share_of(std::int64_t base, std::int64_t total, int rank, int ranks) {
    const std::int64_t each = total / ranks;
    const std::int64_t extra = total % ranks;
    const std::int64_t first = base + each * rank + std::min<std::int64_t>(rank, extra);
    return {first, each + (rank < extra ? 1 : 0)};
}

template <class Adapter>
void run_with(Adapter& db, run_context& context, ycsb_result& result) {
    const workload& spec = context.spec;
    key_chooser chooser(spec, context.rank, context.ranks, context.options.seed);
    client<Adapter> worker(db, context, chooser);

    phase_result load;
    load.name = "load";
    const auto [first, count] = share_of(spec.insertstart, spec.insertcount, context.rank, context.ranks);
    if (context.meter != nullptr)
        context.meter->start("load", static_cast<std::uint64_t>(spec.insertcount), context.ranks);
    support::barrier_yielding(context.comm);
    auto began = clock_type::now();
    worker.load(first, count, load);
    db.flush();
    double seconds = std::chrono::duration<double>(clock_type::now() - began).count();
    if (context.meter != nullptr)
        context.meter->finish();
    worker.verify_load();  // (untimed; answering the other ranks' reads until every rank is done)
    db.flush();
    reduce_phase(context.comm, context.rank, load, seconds);
    constexpr bool elastic = requires { db.rebalance(false); };
    if constexpr (elastic)
        db.rebalance(false);  // (untimed: the request counts start with the run)

    phase_result run;
    run.name = "run";
    const auto [unused, operations] = share_of(0, spec.operationcount, context.rank, context.ranks);
    (void)unused;
    if (context.meter != nullptr)
        context.meter->start("run", static_cast<std::uint64_t>(spec.operationcount), context.ranks);
    support::barrier_yielding(context.comm);
    began = clock_type::now();
    if constexpr (elastic) {
        // Segments separated by rebalances (and the drain, halfway).
        const std::size_t segments = context.options.rebalances + 1;
        std::int64_t done = 0;
        for (std::size_t segment = 0; segment < segments; ++segment) {
            const auto until = static_cast<std::int64_t>(static_cast<std::uint64_t>(operations) * (segment + 1) / segments);
            const std::int64_t half = operations / 2;
            if (context.options.drain >= 0 && done <= half && half < until) {
                worker.run(half - done, run);
                done = half;
                const skiplist_rebalance_result drained = db.drain(context.options.drain);
                result.moved_nodes += drained.moved_nodes;
                result.moved_bytes += drained.moved_bytes;
                result.rebalance_seconds += drained.seconds;
            }
            worker.run(until - done, run);
            done = until;
            if (segment + 1 < segments) {
                const skiplist_rebalance_result moved = db.rebalance(true, context.options.rebalance_target);
                result.moved_nodes += moved.moved_nodes;
                result.moved_bytes += moved.moved_bytes;
                result.rebalance_seconds += moved.seconds;
            }
        }
    } else {
        worker.run(operations, run);
    }
    db.flush();
    seconds = std::chrono::duration<double>(clock_type::now() - began).count();
    if (context.meter != nullptr)
        context.meter->finish();
    reduce_phase(context.comm, context.rank, run, seconds);
    if constexpr (elastic) {
        std::uint64_t online = db.online_moves();  // (the online policy's, --online-rebalance)
        MPI_Allreduce(MPI_IN_PLACE, &online, 1, MPI_UINT64_T, MPI_SUM, context.comm);
        result.moved_nodes += online;
        const skiplist_rebalance_result measured = db.rebalance(false);  // (untimed: nothing moves)
        result.request_load = measured.load_before;
        result.request_load_ratio = skiplist_rebalance_result::ratio(measured.load_before, measured.servers);
    }

    std::uint64_t inserts = worker.acknowledged_inserts();
    MPI_Allreduce(MPI_IN_PLACE, &inserts, 1, MPI_UINT64_T, MPI_SUM, context.comm);
    result.records_expected = static_cast<std::uint64_t>(spec.insertcount) + inserts;
    result.records_stored = db.global_size();
    result.phases = {load, run};
}

std::vector<std::string> sorted_loaded_keys(const workload& spec) {
    std::vector<std::string> keys;
    keys.reserve(static_cast<std::size_t>(spec.insertcount));
    for (std::int64_t keynum = spec.insertstart; keynum < spec.insertstart + spec.insertcount; ++keynum)
        keys.push_back(key_name(keynum, spec));
    std::sort(keys.begin(), keys.end());
    return keys;
}

// The --dump-keys file, or nullptr with `problem` set.  A FIFO (which would
// block every rank until somebody reads it), a socket or a directory is
// refused; opening without blocking, the kind is checked on the descriptor.
std::FILE* open_dump(const std::string& path, std::string& problem) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NONBLOCK | O_CLOEXEC | O_NOCTTY, 0644);
    if (fd < 0) {
        problem = "--dump-keys: cannot write " + path + ": " +
                  (errno == ENXIO ? std::string("it is a FIFO (named pipe) nobody reads, not a regular file")
                                  : std::string(std::strerror(errno)));
        return nullptr;
    }
    struct stat info {};
    if (::fstat(fd, &info) != 0 || S_ISFIFO(info.st_mode) || S_ISSOCK(info.st_mode)) {
        problem = "--dump-keys: cannot write " + path + ": it is a " +
                  (S_ISSOCK(info.st_mode) ? "socket" : "FIFO (named pipe)") + ", not a regular file";
        ::close(fd);
        return nullptr;
    }
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    std::FILE* out = ::fdopen(fd, "w");
    if (out == nullptr) {
        problem = "--dump-keys: cannot write " + path + ": " + std::strerror(errno);
        ::close(fd);
    }
    return out;
}

// Rank 0 reads the file; every rank gets its bytes (or the reason it could not be read).
std::string broadcast_file(MPI_Comm comm, int rank, const std::string& path, std::string& problem) {
    std::string bytes;
    if (rank == 0) {
        try {
            bytes = properties::read_bytes(path);
        } catch (const workload_error& failure) {
            problem = failure.what();
        }
    }
    problem = support::agree_on_failure(comm, problem);
    if (!problem.empty())
        return {};
    std::uint64_t size = bytes.size();
    MPI_Bcast(&size, 1, MPI_UINT64_T, 0, comm);
    bytes.resize(size);
    MPI_Bcast(bytes.data(), static_cast<int>(size), MPI_CHAR, 0, comm);
    return bytes;
}

}  // namespace

ycsb_result run_ycsb(MPI_Comm comm, const ycsb_options& options) {
    ycsb_result result;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &result.ranks);
    std::string problem;
    const std::string bytes = broadcast_file(comm, rank, options.workload_file, problem);
    if (!problem.empty()) {
        result.failure = problem;
        return result;
    }
    // Every rank parses the same bytes: the same outcome everywhere.
    try {
        properties source = properties::parse(bytes, options.workload_file);
        for (const std::string& assignment : options.overrides)
            source.override_with(assignment);
        const std::size_t slash = options.workload_file.find_last_of('/');
        result.spec = workload::from(source, options.workload_file.substr(slash == std::string::npos ? 0 : slash + 1));
    } catch (const workload_error& error) {
        result.failure = error.what();
        return result;
    }
    const workload& spec = result.spec;
    const bool scans = spec.proportions[static_cast<int>(operation::scan)] > 0;
    if (scans && options.container != container_kind::skiplist) {
        result.failure = spec.name + " has scans (scanproportion=" +
                         std::to_string(spec.proportions[static_cast<int>(operation::scan)]) + "): " +
                         std::string(container_name(options.container)) +
                         " is a hash table and cannot run them; use --container skiplist";
        return result;
    }
    if (spec.insertcount < result.ranks) {
        result.failure = "insertcount=" + std::to_string(spec.insertcount) + " is smaller than the " +
                         std::to_string(result.ranks) + " ranks";
        return result;
    }
    result.load_average = support::read_load_average();

    std::vector<std::string> loaded;
    if (scans)
        loaded = sorted_loaded_keys(spec);
    std::FILE* dump = nullptr;
    if (rank == 0 && !options.dump_keys.empty()) {
        dump = open_dump(options.dump_keys, problem);
    }
    problem = support::agree_on_failure(comm, problem);
    if (!problem.empty()) {
        if (dump != nullptr)
            std::fclose(dump);
        result.failure = problem;
        return result;
    }
    support::progress_meter meter(rank == 0 && (options.progress ||
                                                 (!options.json && !options.quiet && support::progress_meter::stderr_is_terminal())));
    run_context context{comm, rank, result.ranks, spec, options};
    context.strict_freshness = result.ranks == 1 || spec.writeallfields || options.container == container_kind::hash;
    context.loaded_keys = scans ? &loaded : nullptr;
    context.meter = &meter;
    context.dump = dump;
    context.oversubscribed = support::node_oversubscribed(comm);
    std::optional<insert_progress> inserts;
    if (result.ranks > 1 && spec.proportions[static_cast<int>(operation::insert)] > 0) {
        inserts.emplace(comm, rank, result.ranks, options.counter_window != "rma");
        context.inserts = &*inserts;
    }
    switch (options.container) {
    case container_kind::skiplist: {
        skiplist_adapter db(comm, spec, options);
        run_with(db, context, result);
        break;
    }
    case container_kind::hash: {
        hash_adapter db(comm, spec, options);
        run_with(db, context, result);
        break;
    }
    case container_kind::linear: {
        linear_adapter db(comm, spec, options);
        run_with(db, context, result);
        break;
    }
    }
    if (dump != nullptr) {
        // A write that failed earlier (a full disk) leaves the error flag; the
        // last buffer's failure shows in fclose.
        const bool failed = std::ferror(dump) != 0;
        if ((std::fclose(dump) != 0 || failed) && problem.empty())
            problem = "--dump-keys: cannot write " + options.dump_keys + ": " +
                      (errno != 0 ? std::strerror(errno) : "write error");
    }
    problem = support::agree_on_failure(comm, problem);
    if (!problem.empty())
        result.failure = problem;
    return result;
}

namespace {

support::json_object run_fields(const ycsb_result& result, const ycsb_options& options) {
    support::json_object fields;
    fields.add("workload", result.spec.name)
        .add("container", container_name(options.container))
        .add("consistency", options.container == container_kind::skiplist ? options.consistency : std::string("n/a"))
        .add("window", static_cast<std::uint64_t>(options.window))
        .add("load", options.load)
        .add("recordcount", static_cast<std::uint64_t>(result.spec.recordcount))
        .add("operationcount", static_cast<std::uint64_t>(result.spec.operationcount))
        .add("fieldcount", static_cast<std::uint64_t>(result.spec.fieldcount))
        .add("fieldlength", static_cast<std::uint64_t>(result.spec.fieldlength))
        .add("requestdistribution", distribution_name(result.spec.request))
        .add("load_average", result.load_average);
    return fields;
}

void print_json(const ycsb_result& result, const ycsb_options& options) {
    const support::json_object fields = run_fields(result, options);
    const int p = result.ranks;
    const std::uint64_t seed = options.seed;
    for (const phase_result& phase : result.phases) {
        support::json_object with_phase = fields;
        with_phase.add("phase", phase.name);
        support::print_json_line(stdout, "ycsb", "throughput", phase.throughput(), "ops/s", p, seed, with_phase);
        support::print_json_line(stdout, "ycsb", "seconds", phase.seconds, "s", p, seed, with_phase);
        support::print_json_line(stdout, "ycsb", "operations", static_cast<double>(phase.operations), "count", p, seed,
                                 with_phase);
        for (int kind = 0; kind < operation_count; ++kind) {
            const latency_histogram& histogram = phase.latency[static_cast<std::size_t>(kind)];
            if (histogram.count() == 0)
                continue;
            support::json_object with_kind = with_phase;
            with_kind.add("operation", operation_names[kind]).add("count", histogram.count());
            support::print_json_line(stdout, "ycsb", "latency_mean", histogram.mean_us(), "us", p, seed, with_kind);
            support::print_json_line(stdout, "ycsb", "latency_p50", histogram.quantile_us(0.50), "us", p, seed, with_kind);
            support::print_json_line(stdout, "ycsb", "latency_p95", histogram.quantile_us(0.95), "us", p, seed, with_kind);
            support::print_json_line(stdout, "ycsb", "latency_p99", histogram.quantile_us(0.99), "us", p, seed, with_kind);
            support::print_json_line(stdout, "ycsb", "latency_p999", histogram.quantile_us(0.999), "us", p, seed, with_kind);
            support::print_json_line(stdout, "ycsb", "latency_max", histogram.max_us(), "us", p, seed, with_kind);
        }
        if (phase.by_kind[static_cast<int>(operation::scan)] > 0)
            support::print_json_line(stdout, "ycsb", "scanned_records", static_cast<double>(phase.scanned_records),
                                     "count", p, seed, with_phase);
        support::print_json_line(stdout, "ycsb", "failures", static_cast<double>(phase.failures), "count", p, seed,
                                 with_phase);
    }
    support::json_object with_counts = fields;
    with_counts.add("records_expected", result.records_expected);
    support::print_json_line(stdout, "ycsb", "records_stored", static_cast<double>(result.records_stored), "count", p,
                             seed, with_counts);
    if (options.container == container_kind::skiplist) {
        support::json_object with_moves = fields;
        with_moves.add("rebalances", static_cast<std::uint64_t>(options.rebalances));
        with_moves.add("moved_nodes", result.moved_nodes);
        with_moves.add("moved_bytes", result.moved_bytes);
        support::print_json_line(stdout, "ycsb", "request_load_max_over_mean", result.request_load_ratio, "ratio", p,
                                 seed, with_moves);
    }
    support::print_json_line(stdout, "ycsb", "verified", result.verified() ? 1 : 0, "bool", p, seed, fields);
}

void print_table(const ycsb_result& result, const ycsb_options& options) {
    const workload& spec = result.spec;
    std::fprintf(stderr, "ycsb %s on %s%s, %d ranks, window %zu: %s records of %lld x %lld bytes, %s operations, %s\n",
                 spec.name.c_str(), std::string(container_name(options.container)).c_str(),
                 options.container == container_kind::skiplist ? (" (" + options.consistency + ")").c_str() : "",
                 result.ranks, options.window, support::format_count(static_cast<std::uint64_t>(spec.recordcount)).c_str(),
                 static_cast<long long>(spec.fieldcount), static_cast<long long>(spec.fieldlength),
                 support::format_count(static_cast<std::uint64_t>(spec.operationcount)).c_str(),
                 std::string(distribution_name(spec.request)).c_str());
    support::text_table table;
    table.add_row({"phase", "operation", "count", "mean us", "p50", "p95", "p99", "p99.9", "max"});
    for (const phase_result& phase : result.phases) {
        for (int kind = 0; kind < operation_count; ++kind) {
            const latency_histogram& h = phase.latency[static_cast<std::size_t>(kind)];
            if (h.count() == 0)
                continue;
            table.add_row({phase.name, std::string(operation_names[kind]), support::format_count(h.count()),
                           support::format_fixed(h.mean_us(), 1), support::format_fixed(h.quantile_us(0.5), 1),
                           support::format_fixed(h.quantile_us(0.95), 1), support::format_fixed(h.quantile_us(0.99), 1),
                           support::format_fixed(h.quantile_us(0.999), 1), support::format_fixed(h.max_us(), 1)});
        }
    }
    table.print(stderr, "  ");
    for (const phase_result& phase : result.phases) {
        std::fprintf(stderr, "%s: %s operations in %s s = %s", phase.name.c_str(),
                     support::format_count(phase.operations).c_str(), support::format_seconds(phase.seconds).c_str(),
                     support::format_rate(phase.throughput()).c_str());
        if (phase.by_kind[static_cast<int>(operation::scan)] > 0)
            std::fprintf(stderr, ", %s records scanned", support::format_count(phase.scanned_records).c_str());
        std::fputc('\n', stderr);
    }
    if (options.container == container_kind::skiplist) {
        std::string loads;
        for (const std::uint64_t load : result.request_load) {
            if (!loads.empty())
                loads += ' ';
            loads += support::format_count(load);
        }
        std::fprintf(stderr,
                     "requests per rank %s (max/mean %s, since the run's %s); %zu rebalances%s moved %s nodes (%s) "
                     "in %s s\n",
                     loads.c_str(), support::format_fixed(result.request_load_ratio, 2).c_str(),
                     options.rebalances > 0 ? "last rebalance" : "start", options.rebalances,
                     options.drain >= 0 ? (" and drain(" + std::to_string(options.drain) + ")").c_str() : "",
                     support::format_count(result.moved_nodes).c_str(),
                     support::format_bytes(static_cast<double>(result.moved_bytes)).c_str(),
                     support::format_seconds(result.rebalance_seconds).c_str());
    }
    std::fprintf(stderr, "records stored: %s (expected %s); verified: %s\n",
                 support::format_count(result.records_stored).c_str(),
                 support::format_count(result.records_expected).c_str(), result.verified() ? "yes" : "NO");
}

}  // namespace

int ycsb_main(int argc, char** argv, MPI_Comm comm) {
    const std::string program = support::program_name(argc, argv, "ycsb");
    int rank = 0, size = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    const support::exit_reporter finish(argc, argv, program, comm);

    // YCSB's "-p key=value" and "-P file" spellings.
    std::vector<std::string> storage;
    for (int i = 1; i < argc; ++i) {
        const std::string_view argument = argv[i];
        if (argument == "-p")
            storage.emplace_back("--property");
        else if (argument == "-P")
            storage.emplace_back("--workload");
        else
            storage.emplace_back(argument);
    }
    std::vector<char*> arguments;
    for (std::string& each : storage)
        arguments.push_back(each.data());

    ycsb_options options;
    bool trace_exit = false;
    std::string container = "skiplist";
    support::option_parser parser(
        program + " --workload FILE [-p key=value]... [options]",
        "Runs a YCSB core workload (load, then run) on an mpidict container, every rank a client;\n"
        "reports throughput and latency percentiles per operation and verifies every answer.\n"
        "YCSB's core workloads A-F are in the repository: data/ycsb/workloada ... workloadf.");
    parser.add_text("workload", &options.workload_file, "the workload property file (also -P FILE)", "FILE")
        .add_custom("property", "KEY=VALUE", "override a workload property, as YCSB's -p (repeatable)", "",
                    [&](std::string_view value) { options.overrides.emplace_back(value); })
        .add_choice("container", &container, {"skiplist", "hash", "linear"},
                    "skiplist_map (every workload), hash_map or linear_hash_map (no scans: A-D, F)")
        .add_choice("consistency", &options.consistency, {"total_order", "sequential", "none"},
                    "skiplist_map's consistency mode")
        .add_count("window", &options.window, "operations in flight per rank (W)", 1, 1u << 16)
        .add_count("load-chunk", &options.load_chunk, "records per insert_many call of --load many", 1, 1u << 24)
        .add_choice("load", &options.load, {"async", "many", "requests"},
                    "the load phase: every record an async_insert, answered by the phase's flush (async), "
                    "insert_many calls of --load-chunk records (many), or one insert request per record, W in "
                    "flight, as YCSB's client (requests); every way checked afterwards")
        .add_count("seed", &options.seed, "seed of the random choices (rank r uses its own stream)")
        .add_choice("counter-window", &options.counter_window, {"auto", "rma"},
                    "the shared insert counter: shared memory when every rank is on one node (auto), or MPI RMA")
        .add_custom("dump-keys", "FILE",
                    "rank 0 writes each run-phase operation and its record number here, one per line", "",
                    [&](std::string_view value) {
                        if (value.empty())
                            throw support::usage_error("--dump-keys: the file name is empty");
                        options.dump_keys = std::string(value);
                    })
        .add_count("rebalance", &options.rebalances,
                   "skiplist: rebalance() by requests this many times, evenly spaced through the run phase", 0, 1000)
        .add_real("rebalance-target", &options.rebalance_target,
                  "skiplist: --rebalance moves nothing while the requests' max/mean is at or below this", 1.0, 1e12)
        .add_real("online-rebalance", &options.online_rebalance,
                  "skiplist: the online policy (online_rebalance): a server whose request rate passes this x the "
                  "mean moves nodes while operations go on (0: off)",
                  0.0, 1e12)
        .add_custom("drain", "RANK", "skiplist: drain(RANK) halfway through the run phase", "",
                    [&](std::string_view value) {
                        try {
                            options.drain = std::stoi(std::string(value));
                        } catch (const std::exception&) {
                            throw support::usage_error("--drain: '" + std::string(value) + "' is not a rank");
                        }
                        if (options.drain < 0)
                            throw support::usage_error("--drain: a rank is at least 0");
                    })
        .add_flag("json", &options.json, "print JSON lines (docs/architecture.md's format) on stdout")
        .add_flag("quiet", &options.quiet, "no human table on stderr")
        .add_flag("progress", &options.progress, "show a progress bar on stderr even when it is not a terminal")
        .add_flag("trace-exit", &trace_exit, "each rank says with which code it exits (tests)")
        .add_check([&] {
            if (options.workload_file.empty())
                throw support::usage_error("no workload given (--workload FILE)");
            if ((options.rebalances > 0 || options.drain >= 0 || options.online_rebalance > 0) &&
                container != "skiplist")
                throw support::usage_error(
                    "--rebalance, --online-rebalance and --drain are skiplist_map's (--container skiplist)");
            if (options.online_rebalance > 0 && options.online_rebalance < 1)
                throw support::usage_error("--online-rebalance: 0 (off) or at least 1 (rate over the mean)");
            if (options.drain >= 0 && size == 1)
                throw support::usage_error("--drain " + std::to_string(options.drain) +
                                           ": the run has one rank, whose nodes have nowhere to go");
            if (options.drain >= size)
                throw support::usage_error("--drain " + std::to_string(options.drain) + ": there are " +
                                           std::to_string(size) + " ranks");
            if (container == "hash")
                options.container = container_kind::hash;
            else if (container == "linear")
                options.container = container_kind::linear;
            else
                options.container = container_kind::skiplist;
        })
        .add_epilogue("example:\n  mpiexec -n 2 " + program +
                      " --workload data/ycsb/workloada -p recordcount=10000 -p operationcount=100000\n");
    if (const auto stop = support::parse_collectively(comm, parser, arguments, program))
        return finish(*stop);

    const ycsb_result result = run_ycsb(comm, options);
    if (rank == 0)
        for (const std::string& warning : result.spec.warnings)
            std::fprintf(stderr, "%s: warning: %s\n", program.c_str(), warning.c_str());
    if (!result.failure.empty()) {
        if (rank == 0)
            std::fprintf(stderr, "%s: error: %s\n", program.c_str(), result.failure.c_str());
        return finish(1);
    }
    int verdict = 0;
    if (rank == 0) {
        if (options.json)
            print_json(result, options);
        if (!options.quiet)
            print_table(result, options);
        if (!result.verified()) {
            std::string why;
            for (const phase_result& phase : result.phases)
                if (phase.failures > 0)
                    why += (why.empty() ? "" : "; ") + phase.name + ": " + std::to_string(phase.failures) +
                           " failed checks, first: " + phase.first_failure;
            if (result.records_stored != result.records_expected)
                why += (why.empty() ? "" : "; ") + std::string("the container holds ") +
                       std::to_string(result.records_stored) + " records, expected " +
                       std::to_string(result.records_expected);
            std::fprintf(stderr, "%s: error: verification failed: %s\n", program.c_str(), why.c_str());
            verdict = 1;
        }
    }
    MPI_Bcast(&verdict, 1, MPI_INT, 0, comm);
    return finish(verdict);
}

}  // namespace mpidict::apps::ycsb
