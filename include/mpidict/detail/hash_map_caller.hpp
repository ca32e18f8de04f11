#pragma once
// hash_map's caller-side plumbing (hash_map.hpp is the facade, which encodes
// each operation and decodes its reply): the timing of operation starts, the
// request slot given back when encoding throws, and the batches of find_many /
// take_many (their records out, their find_many_reply records back).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iterator>
#include <limits>
#include <span>
#include <string>
#include <vector>

#include "mpidict/detail/wire.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::detail {

// Times request-form starts always.  Fire-and-forget starts are cheaper than
// a clock read, so one in initiation_sample_period is timed and scaled, minus
// the time it spent shipping a full buffer; the engine times every such
// shipment itself and that time is added unscaled, so rare slow calls are
// neither missed nor multiplied.  Holds the engine lock while it lives.
// Inline and unchecked on the path every async_* call takes (issue 52: the
// out-of-line constructor and destructor with their bounds-checked lookups
// were 8% of a 2-rank async_reduce count): an unsampled call reads no clock.
class initiation_timer {
public:
    [[gnu::always_inline]] initiation_timer(runtime::engine& engine, std::uint32_t& sample_counter,
                                            runtime::op_kind kind, bool always = false)
        : m_lock(engine), m_engine(engine), m_stats(engine.stats().by_kind[kind]) {
        engine.check_alive(kind);
        ++m_stats.operations;
        if (always) {
            m_weight = 1;
        } else if (++sample_counter == runtime::initiation_sample_period) [[unlikely]] {
            sample_counter = 0;
            m_weight = runtime::initiation_sample_period;
        }
        m_ship_start = engine.ship_seconds();
        if (m_weight != 0)
            m_start = runtime::now_seconds();
    }
    [[gnu::always_inline]] ~initiation_timer() {
        const double shipping = m_engine.ship_seconds() - m_ship_start;
        if (m_weight != 0) [[unlikely]]
            m_stats.initiation_seconds += shipping + std::max(0.0, runtime::now_seconds() - m_start - shipping) * m_weight;
        else if (shipping != 0) [[unlikely]]
            m_stats.initiation_seconds += shipping;
    }
    initiation_timer(const initiation_timer&) = delete;
    initiation_timer& operator=(const initiation_timer&) = delete;

private:
    runtime::engine_lock m_lock;
    runtime::engine& m_engine;
    runtime::op_statistics& m_stats;
    std::uint32_t m_weight = 0;
    double m_start = 0;
    double m_ship_start = 0;
};

// Gives a request slot back if encoding its operation throws (nothing was sent).
class slot_guard {
public:
    slot_guard(runtime::engine& owner, std::uint32_t slot) : m_engine(owner), m_slot(slot) {}
    ~slot_guard() {
        if (m_armed)
            m_engine.cancel_request(m_slot);
    }
    slot_guard(const slot_guard&) = delete;
    slot_guard& operator=(const slot_guard&) = delete;
    std::uint32_t release() {
        m_armed = false;
        return m_slot;
    }

private:
    runtime::engine& m_engine;
    std::uint32_t m_slot;
    bool m_armed = true;
};

// find_many and take_many at the caller, streamed: to each owner a many_begin
// {batch, limit, take} record, then the keys bare (many_keys); the owner
// answers in the same order (many_reply_begin {batch}, then many_value or
// many_counted per key: on_reply_begin, on_value, on_counted), so the caller
// keeps, per owner, the indices of the keys it sent there and matches answers
// to them in order.  run() waits until every key is answered.  One batch at a
// time per map.  (The older one-record-per-key {batch, index, limit} key
// records, find_many / take_many / find_many_reply, are still answered: on_reply.)
template <class K, class V>
class hash_map_batches {
    using wire = hash_map_wire;

public:
    static constexpr std::size_t unlimited = std::numeric_limits<std::uint32_t>::max();

    explicit hash_map_batches(runtime::engine& engine)
        : m_engine(engine),
          m_peers(static_cast<std::size_t>(engine.size())),
          m_chunk_count(static_cast<std::size_t>(engine.size()), 0),
          m_chunk_start(static_cast<std::size_t>(engine.size()), 0) {}

    // Sends every key to destination(key) (with `begin`'s and `keys`'s
    // handlers) and returns when all have answered, calling on_result(index,
    // values) for each.  check() runs after the batch's own checks (hash_map:
    // the target rank); before a key is encoded, before_key(key) (hash_map:
    // forget a waiting reduce of it).
    //
    // A find's keys this rank owns are not sent to itself: after this rank's
    // records to itself waiting to be handled are handled (so the lookups see
    // its earlier operations, as a loopback message queued behind them did),
    // they are gathered in runs of local_run keys and looked up in place by
    // find_local(count, key_at, limit, deliver, refuse) (hash_map_shard::
    // find_local), which answers each with the same values or refusal an
    // owner's message would carry.  take_many goes through the owner path.
    template <class Function, class Check, class Destination, class BeforeKey, class FindLocal>
    void run(runtime::handler_id begin, runtime::handler_id keys_handler, bool take, runtime::op_kind kind_id,
             std::span<const K> keys, std::size_t limit, Function& on_result, Check&& check,
             Destination&& destination, BeforeKey&& before_key, FindLocal&& find_local) {
        runtime::engine_lock lock(m_engine);
        m_engine.check_alive(m_engine.op_kind_name(kind_id).data());
        if (m_engine.in_handler())
            throw error("mpidict: find_many/take_many cannot be called from inside a visitor");
        if (m_pending != 0)
            throw error("mpidict: find_many/take_many called while another one is running");
        if (keys.size() > std::numeric_limits<std::uint32_t>::max())
            throw invalid_argument_error("mpidict: find_many/take_many take at most 4294967295 keys per call");
        check();
        const double start = runtime::now_seconds();
        m_callback = [&](std::size_t index, std::span<const V> values) { on_result(index, values); };
        if constexpr (codec<V>::fixed_size) {
            // Runs of single values (on_value): one indirect call per run, on_result inlined in its loop.
            m_context = &on_result;
            m_single_values = [](void* context, const std::uint32_t* indices, const std::byte* values,
                                 std::uint32_t count) {
                Function& function = *static_cast<Function*>(context);
                for (std::uint32_t i = 0; i < count; ++i) {
                    V value;
                    std::memcpy(&value, values + std::size_t{i} * sizeof(V), sizeof(V));
                    function(std::size_t{indices[i]}, std::span<const V>(&value, 1));
                }
            };
        }
        ++m_id;
        m_pending = keys.size();
        m_error.clear();
        const auto clamped = static_cast<std::uint32_t>(std::min<std::size_t>(limit, unlimited));
        struct reset {
            hash_map_batches& self;
            ~reset() {
                self.m_callback = nullptr;
                self.m_single_values = nullptr;
                self.m_context = nullptr;
                self.m_pending = 0;
                for (const int touched : self.m_touched)  // (left set only when an exception cut a chunk short)
                    self.m_chunk_count[static_cast<std::size_t>(touched)] = 0;
                self.m_touched.clear();
            }
        } guard{*this};
        const int self = m_engine.rank();
        const bool in_place = !take;
        if (in_place)
            m_engine.deliver_loopback();
        // This rank's keys, by index; looked up after every other key has left
        // (a find's own keys never travel, so its own peer's order is free;
        // take_many sends them and uses it as every owner's).
        std::vector<std::uint32_t>& local = m_peers[static_cast<std::size_t>(self)].order;
        local.clear();
        if (in_place)
            local.reserve(keys.size());  // 4 bytes a key, touched only as far as used: no regrowth copies
        std::size_t local_first = 0;
        std::uint32_t local_count = 0;
        const auto look_up_local = [&] {
            const std::uint32_t* run_of = local.data() + local_first;
            find_local(
                local_count, [&](std::uint32_t i) -> const K& { return keys[run_of[i]]; }, clamped,
                [&](std::uint32_t i, const auto& found, std::size_t n) {
                    --m_pending;
                    if constexpr (codec<V>::fixed_size) {
                        if (n == 1) {
                            const V value = found[0];
                            on_result(std::size_t{run_of[i]}, std::span<const V>(&value, 1));
                            return;
                        }
                    }
                    // A copy: on_result may start operations that change the table.
                    std::vector<V> values;
                    values.reserve(n);
                    found.copy_to(std::back_inserter(values), n);
                    on_result(std::size_t{run_of[i]}, std::span<const V>(values));
                },
                [&](std::uint32_t, const std::string& message) {
                    --m_pending;
                    if (m_error.empty())
                        m_error = message;
                });
        };
        // The keys leave in chunks of route_chunk (route_chunk_keys): every key's
        // owner first, then per owner its keys, in index order, with one
        // reserve_many and its indices appended at once.  Per key that leaves
        // no branch on which owner it has (a mispredicted 1 - 1/p guess when
        // every key is routed alone) and no batch check.
        for (std::size_t base = 0; base < keys.size(); base += route_chunk) {
            const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(route_chunk, keys.size() - base));
            route_chunk_keys(base, n, keys, destination, before_key, [&](int to, const std::uint32_t* indices,
                                                                        std::uint32_t count) {
                if (in_place && to == self) {
                    local.insert(local.end(), indices, indices + count);
                    return;
                }
                peer& owner = m_peers[static_cast<std::size_t>(to)];
                if (owner.sent_batch != m_id) {
                    owner.sent_batch = m_id;
                    owner.order.clear();
                    byte_writer(m_engine.reserve(to, begin, wire_bytes<wire::many_begin>),
                                wire_bytes<wire::many_begin>)
                        .record(wire::many_begin{m_id, clamped, take ? 1u : 0u})
                        .finish();
                }
                owner.order.insert(owner.order.end(), indices, indices + count);
                if constexpr (codec<K>::fixed_size) {
                    for (std::uint32_t done = 0; done < count;) {
                        std::uint32_t granted = 0;
                        std::byte* out = m_engine.reserve_many(to, keys_handler, sizeof(K), count - done, granted);
                        for (std::uint32_t i = 0; i < granted; ++i)
                            std::memcpy(out + std::size_t{i} * sizeof(K), &keys[indices[done + i]], sizeof(K));
                        done += granted;
                    }
                } else {
                    for (std::uint32_t i = 0; i < count; ++i) {
                        const K& key = keys[indices[i]];
                        const std::size_t bytes = codec<K>::encoded_size(key);
                        byte_writer(m_engine.reserve(to, keys_handler, bytes), bytes).encode(key).finish();
                    }
                }
            });
        }
        if (in_place && !local.empty()) {
            // The other ranks' keys leave now, and their owners answer while
            // this rank looks its own keys up, serving between runs (their
            // answers, their keys) so that nobody waits for it at the end.
            m_engine.ship_all();
            for (local_first = 0; local_first < local.size(); local_first += local_count) {
                local_count = static_cast<std::uint32_t>(std::min<std::size_t>(local_run, local.size() - local_first));
                look_up_local();
                m_engine.progress();
            }
        }
        auto& kind = m_engine.stats()[kind_id];
        kind.operations += keys.size();
        kind.initiation_seconds += runtime::now_seconds() - start;
        const double wait_start = runtime::now_seconds();
        m_engine.wait_until([this] { return m_pending == 0; });
        kind.completion_seconds += runtime::now_seconds() - wait_start;
        if (!m_error.empty()) {
            std::string message;
            message.swap(m_error);
            throw invalid_argument_error(message);
        }
    }

    // many_reply_begin {batch}: the answers from `source` that follow are to that batch.
    void on_reply_begin(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        if (record_bytes != wire_bytes<wire::many_reply_begin>)
            throw decode_error("mpidict: malformed find_many answer header");
        peer& owner = m_peers[static_cast<std::size_t>(source)];
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            owner.reply_batch = read_record<wire::many_reply_begin>(records, record_bytes).batch;
            owner.answered = 0;
        }
    }

    // many_value: one value per record, the answer to the next key sent to `source`.
    void on_value(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        if constexpr (!codec<V>::fixed_size) {
            throw decode_error("mpidict: a single-value find_many answer for a variable-size value type");
        } else {
            if (record_bytes != sizeof(V))
                throw decode_error("mpidict: malformed find_many answer");
            peer& owner = m_peers[static_cast<std::size_t>(source)];
            if (!current(owner))
                return;  // the answer to a batch abandoned by an exception: drop it
            if (count > owner.order.size() - owner.answered || count > m_pending)
                throw decode_error("mpidict: more find_many answers than keys sent");
            const std::uint32_t* indices = owner.order.data() + owner.answered;
            owner.answered += count;
            m_pending -= count;
            m_single_values(m_context, indices, records, count);
        }
    }

    // many_counted: {count} value × count, or {error_count} and the owner's reason
    // (thrown by run()).
    void on_counted(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        peer& owner = m_peers[static_cast<std::size_t>(source)];
        if (!current(owner))
            return;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const std::uint32_t n = read_record<wire::count_record>(reader).count;
            const std::uint32_t key_index = next_index(owner);
            if (n == runtime::engine::error_count) {
                if (m_error.empty())
                    m_error.assign(reinterpret_cast<const char*>(reader.position()), reader.remaining());
                --m_pending;
                continue;
            }
            m_scratch.clear();
            for (std::uint32_t i = 0; i < n; ++i)
                m_scratch.push_back(codec<V>::decode(reader));
            --m_pending;
            m_callback(key_index, std::span<const V>(m_scratch));
        }
    }

    // The older find_many_reply handler: {batch, index, count} value × count, or
    // with count == engine::error_count the owner's reason.
    void on_reply(int, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto [batch, key_index, n] = read_record<wire::many_reply_header>(reader);
            if (batch != m_id || m_pending == 0 || !m_callback)
                continue;  // the answer to a batch abandoned by an exception: drop it
            if (n == runtime::engine::error_count) {
                if (m_error.empty())
                    m_error.assign(reinterpret_cast<const char*>(reader.position()), reader.remaining());
                --m_pending;
                continue;
            }
            m_scratch.clear();
            for (std::uint32_t i = 0; i < n; ++i)
                m_scratch.push_back(codec<V>::decode(reader));
            m_callback(key_index, std::span<const V>(m_scratch));
            --m_pending;
        }
    }

private:
    // Per owner: the batch whose keys were last sent there and their indices in
    // send order; the batch its answers are to now and how many have come.
    struct peer {
        std::uint32_t sent_batch = 0;
        std::uint32_t reply_batch = 0;
        std::size_t answered = 0;
        std::vector<std::uint32_t> order;
    };
    bool current(const peer& owner) const {
        return owner.reply_batch == m_id && owner.sent_batch == m_id && m_pending != 0 && m_callback;
    }
    std::uint32_t next_index(peer& owner) {
        if (owner.answered >= owner.order.size() || m_pending == 0)
            throw decode_error("mpidict: more find_many answers than keys sent");
        return owner.order[owner.answered++];
    }

    // A find's keys this rank owns, looked up in place per this many.
    static constexpr std::uint32_t local_run = 256;
    // Keys routed together (route_chunk_keys).
    static constexpr std::uint32_t route_chunk = 512;

    // Keys [base, base + n) grouped by owner (a stable counting sort of their
    // indices): each_owner(rank, indices, count) once per owner that has any,
    // in the order of their first keys, the indices ascending.  before_key runs
    // for every key before any is handed on.
    template <class Destination, class BeforeKey, class EachOwner>
    void route_chunk_keys(std::size_t base, std::uint32_t n, std::span<const K> keys, Destination& destination,
                          BeforeKey& before_key, EachOwner&& each_owner) {
        int owner_of[route_chunk];
        std::uint32_t grouped[route_chunk];
        for (std::uint32_t i = 0; i < n; ++i) {
            const K& key = keys[base + i];
            const int to = destination(key);
            before_key(key);
            owner_of[i] = to;
            if (m_chunk_count[static_cast<std::size_t>(to)]++ == 0)
                m_touched.push_back(to);
        }
        std::uint32_t next = 0;
        for (const int to : m_touched) {
            m_chunk_start[static_cast<std::size_t>(to)] = next;
            next += m_chunk_count[static_cast<std::size_t>(to)];
        }
        for (std::uint32_t i = 0; i < n; ++i)
            grouped[m_chunk_start[static_cast<std::size_t>(owner_of[i])]++] = static_cast<std::uint32_t>(base + i);
        // Each count is zeroed as its owner is handed on; an exception leaves
        // the rest set, and run's guard zeroes every touched one.
        for (const int to : m_touched) {
            std::uint32_t& count = m_chunk_count[static_cast<std::size_t>(to)];
            const std::uint32_t how_many = count;
            count = 0;
            each_owner(to, grouped + (m_chunk_start[static_cast<std::size_t>(to)] - how_many), how_many);
        }
        m_touched.clear();
    }

    runtime::engine& m_engine;
    std::function<void(std::size_t, std::span<const V>)> m_callback;
    // on_value's path: the caller's on_result and a function calling it for a run of values.
    void* m_context = nullptr;
    void (*m_single_values)(void* context, const std::uint32_t* indices, const std::byte* values,
                            std::uint32_t count) = nullptr;
    std::uint32_t m_id = 0;
    std::size_t m_pending = 0;
    std::string m_error;  // first failure reported by an owner during a batch
    std::vector<V> m_scratch;
    std::vector<peer> m_peers;
    // route_chunk_keys' per-rank counts (zero between chunks) and starts, and
    // the ranks the current chunk has keys for.
    std::vector<std::uint32_t> m_chunk_count;
    std::vector<std::uint32_t> m_chunk_start;
    std::vector<int> m_touched;
};

}  // namespace mpidict::detail
