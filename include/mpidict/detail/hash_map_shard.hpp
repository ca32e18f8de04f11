#pragma once
// hash_map's owner side: one rank's shard of the map (hash_map.hpp is the
// facade; detail/hash_map_visitors.hpp runs visitors and reduce operators).
//
// The shard holds the local table and the payload it accounts for, enforces
// the capacity limits (hash_map_config::capacity_values / capacity_bytes), and
// handles every keyed record an owner receives except the visits: insert_one,
// insert, reduce, find, take, find_from, erase, insert_if_absent, count,
// find_many and take_many.  A handler answers a request through the engine's
// reply records (find, take, erase, ...) or a find_many_reply record; refused
// async values and failed async visits go back to their origin as notices
// (hash_map.rejected, hash_map.visit_failed), which the facade handles.
//
// Record layouts: detail/wire.hpp (hash_map_wire).  The one way to answer a
// find or a take, single or batched, is answer() below.

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"
#include "mpidict/detail/callable_registry.hpp"
#include "mpidict/detail/wire.hpp"
#include "mpidict/error.hpp"
#include "mpidict/hash_map_types.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/local/multi_table.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::detail {

// One hash_map's handler ids.  hash_map::register_handlers registers them in
// this order, which every rank must keep (the fuzz seeds, tests/fuzz/seeds.cpp,
// name handlers by position): append new ones at the end.
struct hash_map_handlers {
    runtime::handler_id insert_one = 0, insert = 0, find = 0, take = 0, erase = 0, insert_if_absent = 0, visit = 0,
                        find_many = 0, find_many_reply = 0, take_many = 0, rejected = 0, visit_failed = 0,
                        reduce = 0, visit_callable = 0, count = 0, find_from = 0, many_begin = 0, many_keys = 0,
                        many_reply_begin = 0, many_value = 0, many_counted = 0, reduce_op = 0, reduce_pairs = 0;
};

template <class K, class V, class Hash>
class hash_map_shard;

// A reduce operator: `fold` one value into another (the caller's combining),
// `run` a run of reduce records naming it at the owner (one dispatch per run,
// the operator inlined in the loop).  Numbered by the operator's type
// (callable_registry.hpp; detail/hash_map_visitors.hpp adds them).
template <class K, class V, class Hash>
struct reduce_entry {
    void (*fold)(V& accumulated, const V& incoming);
    void (*run)(hash_map_shard<K, V, Hash>& shard, int source, const std::byte* records, std::uint32_t record_bytes,
                std::uint32_t count, std::uint32_t& rejected, bool bare);
};
template <class K, class V, class Hash>
using reduce_registry = callable_registry<reduce_entry<K, V, Hash>>;

template <class K, class V, class Hash>
class hash_map_shard {
public:
    using table_type = local::multi_table<K, V, Hash>;
    using values_view = typename table_type::values_view;
    using reducers = reduce_registry<K, V, Hash>;

    static constexpr std::uint32_t no_slot = std::numeric_limits<std::uint32_t>::max();
    static constexpr std::size_t unlimited_take = std::numeric_limits<std::size_t>::max();
    // reduce_value's answer when the capacity limit refused the value.
    static constexpr std::size_t refused = std::numeric_limits<std::size_t>::max();
    // Records ahead whose slots the bulk insert and find handlers prefetch: 16
    // gave 14% more inserts and about 5% more lookups per second than 8 (2 ranks,
    // 2M keys per rank); 32, 3% more lookups, within the noise.
    static constexpr std::uint32_t prefetch_lookahead = 16;
    // Single-value find_many answers gathered before one reserve_many writes
    // them (on_many_keys): 1 KiB on the handler's stack (128 8-byte values),
    // or one value when V is larger.
    static constexpr std::size_t answer_run_bytes = 1024;
    // A streamed find_many/take_many batch of one caller (on_many_begin).
    struct batch_state {
        std::uint32_t limit = 0;
        bool take = false;
        bool begun = false;
    };

    hash_map_shard(runtime::engine& engine, const hash_map_config& settings, const hash_map_handlers& handlers)
        : m_engine(engine), m_config(settings), m_handlers(handlers), m_table(table_keys(settings), settings.max_load),
          m_batches(static_cast<std::size_t>(engine.size())), m_reduce_ops(static_cast<std::size_t>(engine.size())) {}

    hash_map_shard(const hash_map_shard&) = delete;
    hash_map_shard& operator=(const hash_map_shard&) = delete;

    table_type& table() { return m_table; }
    const table_type& table() const { return m_table; }
    std::size_t stored_bytes() const { return m_stored_bytes; }
    std::uint64_t local_rejected() const { return m_local_rejected; }

    // Empties the shard (clear(), a failed load, destroy()).
    void reset() {
        m_table = table_type(table_keys(m_config), m_config.max_load);
        m_stored_bytes = 0;
    }
    void release() { m_table.clear(); }

    // expected_keys_per_rank, refused (the same on every rank: the same settings)
    // when the local table could not address room for that many keys.
    static std::size_t checked_expected_keys(const hash_map_config& settings) {
        if (!(settings.max_load > 0.05 && settings.max_load < 0.99))
            return 0;  // the table's constructor refuses max_load with its own message
        const std::size_t most = table_type::max_keys(settings.max_load);
        if (settings.expected_keys_per_rank > most)
            throw invalid_argument_error("mpidict: hash_map expected_keys_per_rank = " +
                                         std::to_string(settings.expected_keys_per_rank) +
                                         " is more than one rank's table can address (at most " +
                                         std::to_string(most) + " at max_load " +
                                         std::to_string(settings.max_load) + ")");
        return settings.expected_keys_per_rank;
    }

    // The keys the table is sized for: the hint plus four standard deviations
    // of how many keys hash placement deals one rank (binomial: at most
    // sqrt(hint)).  Sized to the hint alone, the table grew (doubled, holding
    // both arrays at the peak) on about half the ranks, whichever got a few
    // keys more than the average, so a hint cost more memory than no hint
    // (docs/benchmarks-hash_map.md, "The capacity hint").
    static std::size_t table_keys(const hash_map_config& settings) {
        const std::size_t hint = checked_expected_keys(settings);
        if (hint == 0)
            return 0;
        const auto spread = static_cast<std::size_t>(4.0 * std::sqrt(static_cast<double>(hint))) + 16;
        return std::min(hint + spread, table_type::max_keys(settings.max_load));
    }

    // ---- checkpoints (hash_map::save and load) --------------------------------

    static constexpr checkpoint::layout_flags checkpoint_flags{true, true, false};

    // Writes every key with its values (in their order): this rank's part of
    // hash_map::save, on a copy of the map's communicator.
    void save(MPI_Comm comm, const std::string& directory, const checkpoint_options& options) {
        namespace ck = checkpoint;
        ck::entry_totals totals{m_table.size(), m_table.value_count(), 0, 0};
        if constexpr (ck::column_codec<K>::variable || ck::column_codec<V>::variable) {
            m_table.for_each([&](const K& key, const values_view& values) {
                ck::add_totals(key, totals.key_bytes);
                for (const V& value : values)
                    ck::add_totals(value, totals.value_bytes);
            });
        }
        ck::description what = ck::describe<K, V>("hash_map", checkpoint_flags, options);
        what.tunables = {{"placement", m_config.place == placement::cyclic ? "cyclic" : "hash"},
                         {"expected_keys_per_rank", std::to_string(m_config.expected_keys_per_rank)},
                         {"max_load", std::to_string(m_config.max_load)},
                         {"capacity_values", std::to_string(m_config.capacity_values)},
                         {"capacity_bytes", std::to_string(m_config.capacity_bytes)},
                         {"fixed_value_bytes", std::to_string(m_config.fixed_value_bytes)}};
        ck::write_entries<K, V>(comm, directory, std::move(what), checkpoint_flags, totals, options,
                                [&](ck::entry_writer<K, V>& entries) {
                                    m_table.for_each([&](const K& key, const values_view& values) {
                                        entries.key(key);
                                        entries.count(values.size());
                                        for (const V& value : values)
                                            entries.value(value);
                                    });
                                });
    }

    // ---- capacity ----------------------------------------------------------

    // Appends one value under the capacity limit; false if it did not fit.
    bool store_value(const K& key, const V& value) {
        if (m_config.capacity_values == 0 && m_config.capacity_bytes == 0) [[likely]] {
            if constexpr (codec<K>::fixed_size && codec<V>::fixed_size) {
                if (m_table.append_hashed(key, m_table.hash_of(key), value))
                    m_stored_bytes += sizeof(K);
                m_stored_bytes += sizeof(V);
                return true;
            }
        }
        const bool new_key = !m_table.contains(key);
        if (!room_for(key, value, new_key)) {
            ++m_local_rejected;
            return false;
        }
        m_table.append(key, value);
        m_stored_bytes += codec<V>::payload_bytes(value) + (new_key ? codec<K>::payload_bytes(key) : 0);
        return true;
    }

    // Appends keys[i]'s value values[i] for every i (a load's run of this
    // rank's pairs): without capacity limits, fixed-size pairs go in with each
    // key hashed once.  A run that ends above every hash in the table is
    // placed in order (a checkpoint's keys come in their saved table's slot
    // order, which is hash order but for keys that shared a probe run there):
    // each key above the table's hashes goes to the first empty slot from its
    // home without a key comparison (multi_table::place_if_above), the others
    // (about one in six) are inserted as usual; the slots are visited in order,
    // so nothing is prefetched.  Any other run is inserted with each key's
    // slot prefetched `ahead` keys early.
    // `hashes`: hash_of(keys[i]) for every i, already computed by the caller.
    void store_pairs(std::span<const K> keys, std::span<const V> values, std::span<const std::uint64_t> hashes) {
        if constexpr (codec<K>::fixed_size && codec<V>::fixed_size) {
            if (m_config.capacity_values == 0 && m_config.capacity_bytes == 0) [[likely]] {
                const std::size_t n = keys.size();
                if (n != 0 && m_table.above_all(hashes[n - 1])) {
                    std::size_t added = 0;
                    for (std::size_t i = 0; i < n; ++i)
                        added += m_table.place_if_above(keys[i], hashes[i], values[i]) ||
                                 m_table.append_hashed(keys[i], hashes[i], values[i]);
                    m_stored_bytes += added * sizeof(K) + n * sizeof(V);
                    return;
                }
                constexpr std::size_t ahead = 16;
                for (std::size_t i = 0; i < std::min(n, ahead); ++i)
                    m_table.prefetch_hashed(hashes[i]);
                for (std::size_t i = 0; i < n; ++i) {
                    if (i + ahead < n)
                        m_table.prefetch_hashed(hashes[i + ahead]);
                    if (m_table.append_hashed(keys[i], hashes[i], values[i]))
                        m_stored_bytes += sizeof(K);
                    m_stored_bytes += sizeof(V);
                }
                return;
            }
        }
        (void)hashes;
        for (std::size_t i = 0; i < keys.size(); ++i)
            store_value(keys[i], values[i]);
    }

    // Removes `key` and all its values.
    void remove_key(const K& key) {
        std::size_t payload = 0;
        const std::size_t removed = m_table.take(key, unlimited_take, [&](V&& value) {
            payload += codec<V>::payload_bytes(value);
        });
        account_removed(key, payload, removed > 0);
    }

    void account_removed(const K& key, std::size_t value_bytes, bool key_removed) {
        m_stored_bytes -= std::min(m_stored_bytes, value_bytes + (key_removed ? codec<K>::payload_bytes(key) : 0));
    }

    // Payload bytes of a key's values (byte strings: their lengths).
    std::size_t payload_of(const K& key) const {
        std::size_t bytes = 0;
        for (const V& value : m_table.find(key))
            bytes += codec<V>::payload_bytes(value);
        return bytes;
    }

    // Visitors that change byte-string values in place recount their key's payload.
    void set_stored_bytes(std::size_t bytes) { m_stored_bytes = bytes; }
    void add_rejected(std::uint64_t values) { m_local_rejected += values; }

    // The owner's half of a reduce: how many values the key had before (0: it
    // was new), or `refused` (capacity; the key is unchanged, counted in local_rejected()).
    template <class Fold>
    std::size_t reduce_value(const K& key, const V& value, Fold&& fold) {
        if constexpr (codec<K>::fixed_size && codec<V>::fixed_size) {
            if (m_config.capacity_values == 0 && m_config.capacity_bytes == 0) [[likely]] {
                const std::size_t before = m_table.reduce_hashed(key, m_table.hash_of(key), value, fold);
                if (before == 0)
                    m_stored_bytes += sizeof(K) + sizeof(V);
                else
                    m_stored_bytes -= (before - 1) * sizeof(V);
                return before;
            }
        }
        const values_view current = m_table.find(key);
        if (current.empty()) {
            if (!store_value(key, value))
                return refused;
            return 0;
        }
        std::size_t old_bytes = 0;
        for (const V& stored : current)
            old_bytes += codec<V>::payload_bytes(stored);
        V accumulated = current[0];
        for (std::size_t i = 1; i < current.size(); ++i)
            fold(accumulated, current[i]);
        fold(accumulated, value);
        const std::size_t new_bytes = codec<V>::payload_bytes(accumulated);
        if (m_config.capacity_bytes != 0 && new_bytes > old_bytes &&
            m_stored_bytes + (new_bytes - old_bytes) > m_config.capacity_bytes) {
            ++m_local_rejected;
            return refused;
        }
        const std::size_t before = current.size();
        m_table.assign(key, std::span<const V>(&accumulated, 1));
        m_stored_bytes = m_stored_bytes - std::min(m_stored_bytes, old_bytes) + new_bytes;
        return before;
    }

    // ---- notices to the origin ---------------------------------------------

    void notify_rejected(int source, std::uint32_t rejected) {
        if (rejected == 0)
            return;
        overwrite_record(m_engine.reserve(source, m_handlers.rejected, wire_bytes<wire::count_record>),
                         wire::count_record{rejected});
    }

    void notify_visit_failed(int source, std::uint32_t failures, std::string_view message) {
        if (failures == 0)
            return;
        constexpr std::size_t header = wire_bytes<wire::count_record>;
        message = message.substr(0, std::min(message.size(), m_engine.max_record_bytes() - header));
        const std::size_t bytes = header + message.size();
        byte_writer(m_engine.reserve(source, m_handlers.visit_failed, bytes), bytes)
            .record(wire::count_record{failures})
            .put_bytes(message)
            .finish();
    }

    // ---- handlers (registered by hash_map::register_handlers) ---------------

    // async_insert of one fixed-size value: bare {key, value} records.
    void on_insert_one(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        if constexpr (codec<K>::fixed_size && codec<V>::fixed_size) {
            if (record_bytes != sizeof(K) + sizeof(V))
                throw decode_error("mpidict: hash_map insert record of " + std::to_string(record_bytes) +
                                   " bytes, expected " + std::to_string(sizeof(K) + sizeof(V)));
            if (m_config.capacity_values == 0 && m_config.capacity_bytes == 0) {
                // The bulk path: hash each key once, prefetch its slot a few
                // records ahead so the table's cache misses overlap.
                constexpr std::uint32_t lookahead = prefetch_lookahead;
                std::uint64_t hashes[lookahead];
                const std::uint32_t primed = std::min(count, lookahead);
                for (std::uint32_t index = 0; index < primed; ++index) {
                    K key;
                    std::memcpy(&key, records + std::size_t{index} * record_bytes, sizeof(K));
                    hashes[index] = m_table.hash_of(key);
                    m_table.prefetch_hashed(hashes[index]);
                }
                for (std::uint32_t index = 0; index < count; ++index) {
                    const std::byte* record = records + std::size_t{index} * record_bytes;
                    K key;
                    V value;
                    std::memcpy(&key, record, sizeof(K));
                    std::memcpy(&value, record + sizeof(K), sizeof(V));
                    const std::uint64_t hash = hashes[index % lookahead];
                    if (index + lookahead < count) {
                        K ahead;
                        std::memcpy(&ahead, records + std::size_t{index + lookahead} * record_bytes, sizeof(K));
                        hashes[index % lookahead] = m_table.hash_of(ahead);
                        m_table.prefetch_hashed(hashes[index % lookahead]);
                    }
                    if (m_table.append_hashed(key, hash, value))
                        m_stored_bytes += sizeof(K);
                }
                m_stored_bytes += std::size_t{count} * sizeof(V);
                return;
            }
            std::uint32_t rejected = 0;
            for (std::uint32_t index = 0; index < count; ++index) {
                K key;
                V value;
                std::memcpy(&key, records + std::size_t{index} * record_bytes, sizeof(K));
                std::memcpy(&value, records + std::size_t{index} * record_bytes + sizeof(K), sizeof(V));
                if (!store_value(key, value))
                    ++rejected;
            }
            notify_rejected(source, rejected);
        } else {
            (void)source, (void)records, (void)record_bytes, (void)count;
            throw decode_error("mpidict: fixed-size insert record sent to a map with variable-size keys or values");
        }
    }

    void on_insert(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto [slot, n] = read_record<wire::insert_header>(reader);
            const K key = codec<K>::decode(reader);
            std::uint32_t stored = 0;
            bool full = false;
            for (std::uint32_t value_index = 0; value_index < n; ++value_index) {
                const V value = codec<V>::decode(reader);
                if (!full && store_value(key, value))
                    ++stored;
                else
                    full = true;
            }
            if (full)  // store_value counted the first refusal; count the values skipped after it
                m_local_rejected += (n - stored) - 1;
            if (slot != no_slot) {
                overwrite_record(m_engine.reserve_reply(source, slot, stored, wire_bytes<wire::count_record>),
                                 wire::count_record{n});
            } else {
                notify_rejected(source, n - stored);
            }
        }
    }

    // reduce: {slot, op} key value.  Each run of records naming one operator
    // goes to that operator's reduce_run (one dispatch per run).
    void on_reduce(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        const auto& operators = reducers::entries();
        std::uint32_t rejected = 0;
        const auto op_of = [&](std::uint32_t index) {
            return read_record<wire::reduce_header>(records + std::size_t{index} * record_bytes, record_bytes).op;
        };
        for (std::uint32_t index = 0; index < count;) {
            const std::uint32_t op = op_of(index);
            if (op >= operators.size())
                throw decode_error("mpidict: reduce names operator " + std::to_string(op) + " but this rank has " +
                                   std::to_string(operators.size()));
            std::uint32_t end = index + 1;
            while (end < count && op_of(end) == op)
                ++end;
            operators[op].entry.run(*this, source, records + std::size_t{index} * record_bytes, record_bytes,
                                    end - index, rejected, false);
            index = end;
        }
        notify_rejected(source, rejected);
    }

    // reduce streamed: reduce_op {op} names the operator of the bare {key value}
    // reduce_pairs records `source` sends after it (async, no slot).
    void on_reduce_op(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        if (record_bytes != wire_bytes<wire::reduce_op>)
            throw decode_error("mpidict: malformed reduce operator record");
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            const std::uint32_t op = read_record<wire::reduce_op>(records, record_bytes).op;
            if (op >= reducers::entries().size())
                throw decode_error("mpidict: reduce names operator " + std::to_string(op) + " but this rank has " +
                                   std::to_string(reducers::entries().size()));
            m_reduce_ops[static_cast<std::size_t>(source)] = op + 1;
        }
    }
    void on_reduce_pairs(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        const std::uint32_t op = m_reduce_ops[static_cast<std::size_t>(source)];
        if (op == 0)
            throw decode_error("mpidict: reduce values before their operator");
        std::uint32_t rejected = 0;
        reducers::entries()[op - 1].entry.run(*this, source, records, record_bytes, count, rejected, true);
        notify_rejected(source, rejected);
    }

    // A run of reduce records of one operator, `fold(accumulated&, incoming)`
    // ({slot, op} key value, or `bare`: key value):
    // with fixed-size keys and values and no capacity limit, decoded in bulk,
    // each key hashed once and its slot prefetched a few records ahead (as the
    // insert path does); otherwise record by record through reduce_value.
    template <class Fold>
    void reduce_run(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count, Fold&& fold,
                    std::uint32_t& rejected, bool bare) {
        const std::size_t header = bare ? 0 : wire_bytes<wire::reduce_header>;
        if constexpr (codec<K>::fixed_size && codec<V>::fixed_size) {
            if (m_config.capacity_values == 0 && m_config.capacity_bytes == 0 &&
                record_bytes == header + sizeof(K) + sizeof(V)) [[likely]] {
                prefetched_run(records, record_bytes, count, header, [&](const std::byte* record, const K& key,
                                                                          std::uint64_t hash) {
                    std::uint32_t slot = no_slot;
                    V value;
                    if (!bare)
                        std::memcpy(&slot, record, sizeof slot);
                    std::memcpy(&value, record + header + sizeof(K), sizeof(V));
                    const std::size_t before = m_table.reduce_hashed(key, hash, value, fold);
                    if (before == 0)
                        m_stored_bytes += sizeof(K) + sizeof(V);
                    else
                        m_stored_bytes -= (before - 1) * sizeof(V);
                    if (slot != no_slot)
                        m_engine.reserve_reply(source, slot, before == 0 ? 1 : 0, 0);
                });
                return;
            }
        }
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const std::uint32_t slot = bare ? no_slot : read_record<wire::reduce_header>(reader).slot;
            const K key = codec<K>::decode(reader);
            const V value = codec<V>::decode(reader);
            if (bare && reader.remaining() != 0)
                throw decode_error("mpidict: malformed reduce record");
            const std::size_t before = reduce_value(key, value, fold);
            if (slot == no_slot)
                rejected += before == refused ? 1 : 0;
            else  // a refusal is a result (false: not a new key), never an error
                m_engine.reserve_reply(source, slot, before == 0 ? 1 : 0, 0);
        }
    }

    // Calls each(index, key, hash) for the `count` fixed-size keys key_at(index)
    // returns, hashing each key once and prefetching its slot prefetch_lookahead
    // keys ahead.  `each` may change the table (a rehash only makes the
    // prefetches useless).
    template <class KeyAt, class Each>
    void prefetched_keys(std::uint32_t count, KeyAt&& key_at, Each&& each) const {
        constexpr std::uint32_t lookahead = prefetch_lookahead;
        std::uint64_t hashes[lookahead];
        for (std::uint32_t index = 0; index < std::min(count, lookahead); ++index) {
            hashes[index] = m_table.hash_of(key_at(index));
            m_table.prefetch_hashed(hashes[index]);
        }
        for (std::uint32_t index = 0; index < count; ++index) {
            const std::uint64_t hash = hashes[index % lookahead];
            if (index + lookahead < count) {
                hashes[index % lookahead] = m_table.hash_of(key_at(index + lookahead));
                m_table.prefetch_hashed(hashes[index % lookahead]);
            }
            each(index, key_at(index), hash);
        }
    }

    // Calls each(record, key, hash) for `count` records of `record_bytes` whose
    // fixed-size key sits at `key_offset` (prefetched_keys over the records).
    template <class Each>
    void prefetched_run(const std::byte* records, std::uint32_t record_bytes, std::uint32_t count,
                        std::size_t key_offset, Each&& each) {
        const auto key_at = [&](std::uint32_t index) {
            K key;
            std::memcpy(&key, records + std::size_t{index} * record_bytes + key_offset, sizeof(K));
            return key;
        };
        prefetched_keys(count, key_at, [&](std::uint32_t index, const K& key, std::uint64_t hash) {
            each(records + std::size_t{index} * record_bytes, key, hash);
        });
    }

    // find and take: {slot, limit} key; the answer is the engine's reply to the
    // caller's request (hash_map::find -> keyed_request -> decode_values).
    void on_find(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        answer_keyed(false, source, records, record_bytes, count);
    }
    void on_take(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        answer_keyed(true, source, records, record_bytes, count);
    }

    void on_find_from(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        const std::size_t room = m_engine.max_record_bytes() - runtime::reply_header_bytes;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto header = read_record<wire::find_from_header>(reader);
            const std::uint32_t slot = header.slot;
            const K key = codec<K>::decode(reader);
            answer(
                key, header.limit, false, room,
                [&](std::size_t n, std::size_t bytes) {
                    return m_engine.reserve_reply(source, slot, static_cast<std::uint32_t>(n), bytes);
                },
                [&](const std::string& message) { m_engine.reply_error(source, slot, message); }, header.offset);
        }
    }

    void on_erase(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto slot = read_record<wire::keyed_header>(reader).slot;  // erase has no limit
            const K key = codec<K>::decode(reader);
            std::size_t payload = 0;
            const std::size_t removed = m_table.take(key, unlimited_take, [&](V&& value) {
                payload += codec<V>::payload_bytes(value);
            });
            account_removed(key, payload, removed > 0);
            if (slot != no_slot)
                m_engine.reserve_reply(source, slot, static_cast<std::uint32_t>(std::min<std::size_t>(removed, no_slot)), 0);
        }
    }

    void on_insert_if_absent(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        std::uint32_t rejected = 0;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto slot = read_record<wire::keyed_value_header>(reader).slot;
            const K key = codec<K>::decode(reader);
            const V value = codec<V>::decode(reader);
            bool inserted = false;
            if (!m_table.contains(key)) {
                if (store_value(key, value))
                    inserted = true;
                else if (slot == no_slot)
                    ++rejected;
            }
            if (slot != no_slot)
                m_engine.reserve_reply(source, slot, inserted ? 1 : 0, 0);
        }
        notify_rejected(source, rejected);
    }

    // count and contains: {slot, limit} key; the reply's count is the number of values.
    void on_count(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto slot = read_record<wire::keyed_header>(reader).slot;
            const K key = codec<K>::decode(reader);
            const std::size_t n = m_table.find(key).size();
            if (slot != no_slot)
                m_engine.reserve_reply(source, slot, static_cast<std::uint32_t>(std::min<std::size_t>(n, no_slot - 1)), 0);
        }
    }

    // find_many and take_many: {batch, index, limit} key; each answer is a
    // find_many_reply record (hash_map::on_find_many_reply at the caller).
    void on_find_many(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        answer_many(false, source, records, record_bytes, count);
    }
    void on_take_many(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        answer_many(true, source, records, record_bytes, count);
    }

    // find_many and take_many, streamed (wire::many_begin): the batch and limit
    // of what `source` sends next, acknowledged by a many_reply_begin.
    void on_many_begin(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        if (record_bytes != wire_bytes<wire::many_begin>)
            throw decode_error("mpidict: malformed find_many batch header");
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            const auto begin = read_record<wire::many_begin>(records, record_bytes);
            if (begin.take > 1)
                throw decode_error("mpidict: malformed find_many batch header");
            m_batches[static_cast<std::size_t>(source)] = {begin.limit, begin.take == 1, true};
            byte_writer(m_engine.reserve(source, m_handlers.many_reply_begin, wire_bytes<wire::many_reply_begin>),
                        wire_bytes<wire::many_reply_begin>)
                .record(wire::many_reply_begin{begin.batch})
                .finish();
        }
    }
    // Bare keys of `source`'s current batch, answered in order: a key with
    // exactly one fixed-size value found by many_value (the value alone),
    // others by many_counted.  Fixed-size keys are hashed once and their slots
    // prefetched ahead (prefetched_run).
    void on_many_keys(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        const batch_state state = m_batches[static_cast<std::size_t>(source)];
        if (!state.begun)
            throw decode_error("mpidict: find_many keys before their batch header");
        if constexpr (codec<K>::fixed_size) {
            if (record_bytes != sizeof(K))
                throw decode_error("mpidict: malformed find_many key");
            if constexpr (codec<V>::fixed_size) {
                if (!state.take && state.limit != 0) {
                    // Single values gathered into runs, each written with one
                    // reserve_many (consecutive many_value records); a key with
                    // another count first ends the run before it, so the
                    // answers stay in key order.
                    constexpr std::uint32_t run_values =
                        static_cast<std::uint32_t>(std::max<std::size_t>(1, answer_run_bytes / sizeof(V)));
                    alignas(V) std::byte run[std::size_t{run_values} * sizeof(V)];
                    std::uint32_t held = 0;
                    const auto write_run = [&] {
                        for (std::uint32_t done = 0; done < held;) {
                            std::uint32_t granted = 0;
                            std::byte* out =
                                m_engine.reserve_many(source, m_handlers.many_value, sizeof(V), held - done, granted);
                            std::memcpy(out, run + std::size_t{done} * sizeof(V), std::size_t{granted} * sizeof(V));
                            done += granted;
                        }
                        held = 0;
                    };
                    prefetched_run(records, record_bytes, count, 0, [&](const std::byte*, const K& key,
                                                                        std::uint64_t hash) {
                        const values_view found = m_table.find_hashed(key, hash);
                        if (found.size() == 1) {
                            std::memcpy(run + std::size_t{held++} * sizeof(V), &found[0], sizeof(V));
                            if (held == run_values)
                                write_run();
                        } else {
                            write_run();
                            answer_counted(source, key, state);
                        }
                    });
                    write_run();
                    return;
                }
            }
        }
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const K key = codec<K>::decode(reader);
            if (reader.remaining() != 0)
                throw decode_error("mpidict: malformed find_many key");
            answer_counted(source, key, state);
        }
    }

    // find_many's keys this rank owns, looked up in place instead of through a
    // loopback message (hash_map_batches::run): key_at(i) for i < count, each
    // fixed-size key hashed once and its slot prefetched ahead as
    // on_many_keys does.  deliver(i, values, n) with the key's first n =
    // min(limit, size) values, valid until the table changes; refuse(i,
    // message) where the answer would not fit in one message (the same
    // refusal, with the same room, as a streamed answer from another rank).
    template <class KeyAt, class Deliver, class Refuse>
    void find_local(std::uint32_t count, KeyAt&& key_at, std::uint32_t limit, Deliver&& deliver, Refuse&& refuse) const {
        const std::size_t room = m_engine.max_record_bytes() - wire_bytes<wire::count_record>;
        const auto one = [&](std::uint32_t index, const values_view& found) {
            const std::size_t n = std::min<std::size_t>(limit, found.size());
            std::size_t bytes = 0;
            if constexpr (codec<V>::fixed_size) {
                bytes = n * sizeof(V);
            } else {
                for (std::size_t i = 0; i < n; ++i)
                    bytes += codec<V>::encoded_size(found[i]);
            }
            if (bytes > room) [[unlikely]]
                refuse(index, too_large_message(m_engine.rank(), bytes, room));
            else
                deliver(index, found, n);
        };
        if constexpr (codec<K>::fixed_size) {
            prefetched_keys(count, key_at, [&](std::uint32_t index, const K& key, std::uint64_t hash) {
                one(index, m_table.find_hashed(key, hash));
            });
        } else {
            for (std::uint32_t index = 0; index < count; ++index)
                one(index, m_table.find(key_at(index)));
        }
    }

private:
    using wire = hash_map_wire;

    bool room_for(const K& key, const V& value, bool new_key) const {
        if (m_config.capacity_values != 0 && m_table.value_count() + 1 > m_config.capacity_values)
            return false;
        if (m_config.capacity_bytes != 0) {
            const std::size_t extra = codec<V>::payload_bytes(value) + (new_key ? codec<K>::payload_bytes(key) : 0);
            if (m_stored_bytes + extra > m_config.capacity_bytes)
                return false;
        }
        return true;
    }

    void answer_keyed(bool take, int source, const std::byte* records, std::uint32_t record_bytes,
                      std::uint32_t count) {
        const std::size_t room = m_engine.max_record_bytes() - runtime::reply_header_bytes;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            // A named record, not a structured binding: lambdas capture it
            // (capturing bindings needs clang 16).
            const auto header = read_record<wire::keyed_header>(reader);
            const std::uint32_t slot = header.slot;
            const K key = codec<K>::decode(reader);
            answer(
                key, header.limit, take, room,
                [&](std::size_t n, std::size_t bytes) {
                    // reserve_reply never runs handlers inside a handler, so what
                    // answer() found stays intact while it encodes.
                    return m_engine.reserve_reply(source, slot, static_cast<std::uint32_t>(n), bytes);
                },
                [&](const std::string& message) {
                    if (slot == no_slot)
                        throw invalid_argument_error(message);
                    m_engine.reply_error(source, slot, message);
                });
        }
    }

    void answer_many(bool take, int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        constexpr std::size_t header = wire_bytes<wire::many_reply_header>;
        const std::size_t room = m_engine.max_record_bytes() - header;
        // Prefetch the slots of the next few keys so the table's cache misses overlap.
        constexpr std::uint32_t lookahead = prefetch_lookahead;
        constexpr std::size_t key_offset = wire_bytes<wire::many_header>;
        const std::byte* const first = records;
        auto prefetch_record = [&](std::uint32_t index) {
            if constexpr (codec<K>::fixed_size) {
                if (index < count && record_bytes >= key_offset + sizeof(K)) {
                    K ahead;
                    std::memcpy(&ahead, first + std::size_t{index} * record_bytes + key_offset, sizeof(K));
                    m_table.prefetch(ahead);
                }
            }
        };
        for (std::uint32_t index = 0; index < std::min(count, lookahead); ++index)
            prefetch_record(index);
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            prefetch_record(index + lookahead);
            byte_reader reader(records, record_bytes);
            const auto request = read_record<wire::many_header>(reader);
            const std::uint32_t batch = request.batch;
            const std::uint32_t key_index = request.index;
            const K key = codec<K>::decode(reader);
            answer(
                key, request.limit, take, room,
                [&](std::size_t n, std::size_t bytes) {
                    std::byte* out = m_engine.reserve(source, m_handlers.find_many_reply, header + bytes);
                    overwrite_record(out, wire::many_reply_header{batch, key_index, static_cast<std::uint32_t>(n)});
                    return out + header;
                },
                [&](std::string message) {
                    // A failure marker and the reason; find_many throws it at the caller.
                    message.resize(std::min(message.size(), room));
                    byte_writer(m_engine.reserve(source, m_handlers.find_many_reply, header + message.size()),
                                header + message.size())
                        .record(wire::many_reply_header{batch, key_index, runtime::engine::error_count})
                        .put_bytes(message)
                        .finish();
                });
        }
    }

    // One key of a streamed batch answered by a many_counted record.
    void answer_counted(int source, const K& key, const batch_state& state) {
        constexpr std::size_t header = wire_bytes<wire::count_record>;
        const std::size_t room = m_engine.max_record_bytes() - header;
        answer(
            key, state.limit, state.take, room,
            [&](std::size_t n, std::size_t bytes) {
                std::byte* out = m_engine.reserve(source, m_handlers.many_counted, header + bytes);
                overwrite_record(out, wire::count_record{static_cast<std::uint32_t>(n)});
                return out + header;
            },
            [&](std::string message) {
                message.resize(std::min(message.size(), room));
                byte_writer(m_engine.reserve(source, m_handlers.many_counted, header + message.size()),
                            header + message.size())
                    .record(wire::count_record{runtime::engine::error_count})
                    .put_bytes(message)
                    .finish();
            });
    }

    // The one way to answer a find or take (single or batched): up to `limit`
    // values of `key`, sized first; an answer over `room` bytes is refused with
    // refuse(message) and nothing is removed (nothing stored is lost), else
    // reserve(values, bytes) gives where to encode them, and a take removes them.
    template <class Reserve, class Refuse>
    void answer(const K& key, std::uint32_t limit, bool take, std::size_t room, Reserve&& reserve, Refuse&& refuse,
                std::size_t offset = 0) {
        const values_view found = m_table.find(key);
        const std::size_t first = std::min(offset, found.size());  // a find from `offset`; take: 0
        const std::size_t n = std::min<std::size_t>(limit, found.size() - first);
        std::size_t bytes = 0;
        for (std::size_t i = first; i < first + n; ++i)
            bytes += codec<V>::encoded_size(found[i]);
        if (bytes > room) {
            refuse(too_large_message(m_engine.rank(), bytes, room));
            return;
        }
        byte_writer out(reserve(n, bytes), bytes);
        if (!take) {
            for (std::size_t i = first; i < first + n; ++i)
                out.encode(found[i]);
        } else {
            const bool removes_key = n == found.size();
            std::size_t payload = 0;
            m_table.take(key, n, [&](V&& value) {
                payload += codec<V>::payload_bytes(value);
                out.encode(value);
            });
            account_removed(key, payload, removes_key && n > 0);
        }
        out.finish();
    }

    // The answer would not fit in one message: nothing is removed, and the caller's
    // request fails with this message (raised on the calling rank, not here).
    static std::string too_large_message(int owner, std::size_t bytes, std::size_t room) {
        return "mpidict: the answer from rank " + std::to_string(owner) + " needs " + std::to_string(bytes) +
               " bytes but one message holds " + std::to_string(room) +
               "; ask for fewer values per find/take (find(key, limit, offset) reads a key in pieces) or raise "
               "buffer_bytes";
    }

    runtime::engine& m_engine;
    const hash_map_config m_config;
    const hash_map_handlers& m_handlers;
    table_type m_table;
    std::size_t m_stored_bytes = 0;
    std::uint64_t m_local_rejected = 0;
    std::vector<batch_state> m_batches;  // per caller rank
    std::vector<std::uint32_t> m_reduce_ops;  // per caller rank: its reduce_pairs' operator + 1 (0: none yet)
};

}  // namespace mpidict::detail
