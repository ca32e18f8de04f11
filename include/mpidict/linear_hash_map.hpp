#pragma once
// linear_hash_map<K, V>: LH*LH, a distributed linear-hashing file that grows onto
// dormant ranks while it serves (Litwin, Neimat and Schneider's LH*; Karlsson's
// LH*LH; seed 003).
//
// Data layout.  Some ranks are servers (config.server_ranks, in activation
// order): bucket address a lives on server_ranks[a].  The first N are active;
// the rest are dormant until a split wakes them.  A key with hash h belongs to
// bucket h mod (N*2^j) for the level j of that bucket.  Each active server holds
// one LH* bucket as a local linear-hashing table (local/linear_table.hpp).  Any
// rank may be a client (config.client_ranks); a client keeps an image (i', n')
// of the file and addresses with it: a = h mod (N*2^i'), or h mod (N*2^(i'+1))
// if a < n'.
//
// Addressing errors.  A server checks every request with LH*'s address check
// and forwards a misaddressed one; LH* proves at most two forwards.  The
// answering server's (address, level) travels back in the reply as the image
// adjustment (IAM) and the client moves its image forward.  A client moves its
// image past the split of bucket s only when none of its operations first sent
// to s is unanswered, so a client's own operations on one key never overtake
// each other on different routes.
//
// Splitting.  The split token (n, i) travels the ring of active servers.  Its
// holder splits when its load factor (payload bytes / server_capacity_bytes)
// passes split_load and a dormant rank remains: it wakes server N*2^i + n,
// ships its odd LH buckets in bulk (whole buckets per message, at most
// ship_window messages unacknowledged), keeps answering meanwhile (a key whose
// bucket has not left yet is answered here; one that has is forwarded), then
// keeps its even buckets renumbered and passes the token.  The new server
// answers a key once the LH bucket that held it has arrived, and holds requests
// for the buckets still on the way.  When no dormant rank remains, splitting
// stops and servers fill up to their capacity: an insert beyond it is refused
// and reported (stored = false).
//
// When operations complete.  Every operation is acknowledged by the server that
// answers it.  insert/find/erase return a request; async_insert/async_erase
// return nothing and complete by the next flush() (their capacity refusals are
// counted in async_rejected()).  flush() also waits for a split in progress.
//
// Costs in messages: one request record, plus one per forward (at most two),
// plus one reply record.  A split costs one activation, ceil(shipped bytes /
// buffer) shipment messages and as many acknowledgements, and one token.

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <exception>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"
#include "mpidict/detail/batches.hpp"
#include "mpidict/detail/collectives.hpp"
#include "mpidict/detail/facade.hpp"
#include "mpidict/detail/lh_core.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/runtime/engine.hpp"
#include "mpidict/detail/payload.hpp"
#include "mpidict/runtime/request.hpp"

namespace mpidict {

namespace detail {
template <class T>
inline constexpr bool lh_storable = payload_storable<T>;
}  // namespace detail

template <class K, class V>
class linear_hash_map : public detail::with_collectives<linear_hash_map<K, V>, K, V> {
    static_assert(detail::lh_storable<K>, "linear_hash_map keys must be std::string, std::vector<std::byte> or trivially copyable.");
    static_assert(detail::lh_storable<V>, "linear_hash_map values must be std::string, std::vector<std::byte> or trivially copyable.");
    static_assert(std::is_same_v<K, std::string> || std::is_same_v<K, std::vector<std::byte>> ||
                      std::has_unique_object_representations_v<K>,
                  "linear_hash_map<K, V>: K has padding bytes or floating-point members; the map hashes and "
                  "compares keys by their bytes, so two equal keys could be stored twice. Use a key type "
                  "without padding (std::has_unique_object_representations_v<K>: reorder or widen the members, "
                  "or pack them into an integer or a std::array) or a byte string.");

public:
    using key_type = K;
    using value_type = V;
    using image = detail::lh_core::image;

    // Collective.  Creates the file over a duplicate of `communicator`.
    explicit linear_hash_map(MPI_Comm communicator, linear_hash_map_config settings = {})
        : linear_hash_map(std::make_unique<runtime::engine>(communicator, settings.runtime), settings) {}

    // Collective.  Creates the file over an engine it takes over (e.g. a simulated one).
    linear_hash_map(std::unique_ptr<runtime::engine> engine, const linear_hash_map_config& settings)
        : m_core(std::make_unique<detail::lh_core>(std::move(engine), settings)) {
        detail::register_op_kinds(m_core->engine(), linear_hash_map_op::names);
        detail::check_value_type<V>("linear_hash_map", settings.max_value_bytes);
    }

    linear_hash_map(const linear_hash_map&) = delete;
    linear_hash_map& operator=(const linear_hash_map&) = delete;

    // Collective unless an exception is unwinding (then it abandons without waiting).
    ~linear_hash_map() {
        detail::destroy_from_destructor(m_core ? &m_core->engine() : nullptr, "linear_hash_map",
                                        [&] { m_core->destroy(); });
    }

    // Collective.  Applies everything pending (splits included) and releases the communicator.
    void destroy() { m_core->destroy(); }
    // Collective.  Returns once every operation started anywhere has been answered
    // and no split is in progress.
    void flush() { m_core->flush(); }

    int rank() const { return m_core->rank(); }
    int num_ranks() const { return m_core->size(); }
    [[deprecated("mpidict: size() is the number of ranks here; call num_ranks() (the name every container uses)")]]
    int size() const { return m_core->size(); }
    const linear_hash_map_config& settings() const { return m_core->settings(); }
    runtime::engine& engine() { return m_core->engine(); }
    const runtime::statistics& stats() const { return m_core->engine().stats(); }

    // ---- operations (clients) ----------------------------------------------

    // Inserts or replaces.  stored = false: the answering server was full.
    request<replace_result> insert(const K& key, const V& value) {
        return start<replace_result>(linear_hash_map_op::insert, linear_hash_map_op::insert, key, detail::payload_of(value),
                                       &decode_insert);
    }
    void async_insert(const K& key, const V& value) {
        start_async(linear_hash_map_op::insert, linear_hash_map_op::insert, key, detail::payload_of(value));
    }
    request<std::optional<V>> find(const K& key) {
        return start<std::optional<V>>(linear_hash_map_op::find, linear_hash_map_op::find, key, {}, &decode_find);
    }
    // True if the key was there.
    request<bool> erase(const K& key) {
        return start<bool>(linear_hash_map_op::erase, linear_hash_map_op::erase, key, {}, &decode_erase);
    }
    void async_erase(const K& key) { start_async(linear_hash_map_op::erase, linear_hash_map_op::erase, key, {}); }
    // True if the key is there (a find that brings no value back to the caller's
    // type; counted as a find in stats()).
    request<bool> contains(const K& key) {
        return start<bool>(linear_hash_map_op::find, linear_hash_map_op::find, key, {}, &decode_contains);
    }

    // ---- batches (docs/architecture.md, "Contracts") ------------------------

    // Looks every key up and calls on_result(index, std::optional<V>) once per
    // key, on this rank, in index order; returns when every key has been
    // answered.  Local: other ranks answer while inside any library call.
    template <class Function>
    void find_many(std::span<const K> keys, Function&& on_result) {
        detail::windowed_batch(
            keys.size(), batch_window(), [&](std::size_t index) { return find(keys[index]); },
            [&](std::size_t index, std::optional<V> value) { on_result(index, std::as_const(value)); });
    }
    // Inserts (or replaces) keys[i] -> values[i] for every i, in index order
    // where a key repeats; returns once every pair has been answered, with how
    // many were stored, replaced and refused for capacity (never thrown).
    insert_many_result insert_many(std::span<const K> keys, std::span<const V> values) {
        if (keys.size() != values.size())
            throw invalid_argument_error("mpidict: linear_hash_map insert_many got " + std::to_string(keys.size()) +
                                         " keys and " + std::to_string(values.size()) + " values");
        insert_many_result totals;
        detail::windowed_batch(
            keys.size(), batch_window(), [&](std::size_t index) { return insert(keys[index], values[index]); },
            [&](std::size_t index, const replace_result& one) { detail::count_insert(totals, index, one); });
        return totals;
    }

    // Inserts refused for capacity among this rank's async_insert calls (known
    // once their acknowledgements arrived, e.g. after flush()).
    std::uint64_t async_rejected() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->async_rejected();
    }

    // The client's image (i', n'); reset_image() forgets everything learnt (the
    // image of a client that just joined).
    image client_image() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->client_image();
    }
    void reset_image() {
        runtime::engine_lock lock(m_core->engine());
        m_core->reset_image();
    }

    // ---- this rank as a server --------------------------------------------

    bool is_server() const { return m_core->is_server(); }
    bool is_client() const { return m_core->is_client(); }
    // This rank's bucket address, or -1 (not a server, or dormant).
    int server_address() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->server_address();
    }
    std::size_t local_size() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->local_entries();
    }
    // Collective.  Entries over all servers (call after flush() for a settled count).
    std::size_t global_size() { return static_cast<std::size_t>(m_core->engine().sum(local_size(), "global_size")); }
    std::size_t local_payload_bytes() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->local_payload_bytes();
    }
    double local_load_factor() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->local_load_factor();
    }
    // Calls f(key, value) for every entry this server holds (call after flush()).
    template <class Function>
    void local_for_each(Function&& function) const {
        runtime::engine_lock lock(m_core->engine());  // a progress thread may be splitting
        m_core->local_table().for_each([&](const local::linear_table::entry& e) {
            function(detail::from_payload<K>(e.key()), detail::from_payload<V>(e.value()));
        });
    }

    // Collective.  flush() (which also waits out a split), then f(key, value)
    // on every entry this rank's server holds: the whole map is visited once.
    template <class Function>
    void for_all(Function&& function) {
        flush();
        local_for_each(std::forward<Function>(function));
    }

    // A copy: with a progress thread the counters move while you read them.
    linear_hash_map_local_statistics local_statistics() const { return detail::locked_local_statistics(*m_core); }
    // This rank's counters and the engine's, zeroed.
    void reset_statistics() { detail::reset_statistics(*m_core); }
    // Collective.  Flushes, then gathers every rank's counters, splits and servers.
    linear_hash_map_statistics gather_statistics() { return m_core->gather_statistics(); }

    // ---- checkpoints (include/mpidict/checkpoint.hpp, docs/checkpoint.md) --

    // Collective.  flush() (which waits out a split), then writes every entry
    // each server holds to `directory`, replacing the checkpoint there only
    // once all of it is on disk.
    void save(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        flush();
        ck::communicator_copy comm(m_core->engine().mpi_communicator(), "linear_hash_map");
        runtime::engine_lock lock(m_core->engine());
        const std::uint64_t held = m_core->local_entries();
        ck::entry_totals totals{held, held, 0, 0};
        if constexpr (ck::column_codec<K>::variable || ck::column_codec<V>::variable) {
            m_core->local_table().for_each([&](const local::linear_table::entry& e) {
                if constexpr (ck::column_codec<K>::variable)
                    totals.key_bytes += e.key().size();
                if constexpr (ck::column_codec<V>::variable)
                    totals.value_bytes += e.value().size();
            });
        }
        const auto& config = m_core->settings();
        ck::description what = ck::describe<K, V>("linear_hash_map", checkpoint_flags, options);
        what.tunables = {{"initial_servers", std::to_string(config.initial_servers)},
                         {"server_capacity_bytes", std::to_string(config.server_capacity_bytes)},
                         {"split_load", std::to_string(config.split_load)},
                         {"max_key_bytes", std::to_string(config.max_key_bytes)},
                         {"max_value_bytes", std::to_string(config.max_value_bytes)},
                         {"bucket_entries", std::to_string(config.bucket_entries)}};
        ck::write_entries<K, V>(comm.get(), directory, std::move(what), checkpoint_flags, totals, options,
                                [&](ck::entry_writer<K, V>& entries) {
                                    m_core->local_table().for_each([&](const local::linear_table::entry& e) {
                                        entries.key(detail::from_payload<K>(e.key()));
                                        entries.value(detail::from_payload<V>(e.value()));
                                    });
                                });
    }

    // Collective.  Fills this map, which must be empty, from the checkpoint in
    // `directory` (saved at any number of ranks): the client ranks read the
    // shards and insert every entry, so the file grows by its own splits to the
    // size this configuration gives it and every image learns as usual.
    // Throws checkpoint_error on every rank, leaving the map empty, if the
    // checkpoint is missing, damaged or of other types, or if a server refuses
    // an entry for capacity.
    void load(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        if (const std::size_t held = global_size(); held != 0)
            throw invalid_argument_error("mpidict: linear_hash_map load needs an empty map; this one holds " +
                                         std::to_string(held) + " entries");
        ck::communicator_copy comm(m_core->engine().mpi_communicator(), "linear_hash_map");
        std::vector<int> clients;
        for (int r = 0; r < num_ranks(); ++r)
            if (!m_core->settings().client_ranks ||
                std::find(m_core->settings().client_ranks->begin(), m_core->settings().client_ranks->end(), r) !=
                    m_core->settings().client_ranks->end())
                clients.push_back(r);
        ck::reader in(comm.get(), directory, ck::describe<K, V>("linear_hash_map", checkpoint_flags, options),
                      ck::columns_for<K, V>(checkpoint_flags, {}), options, clients);
        const std::uint64_t refused_before = async_rejected();
        ck::load_by_inserts<K, V>(
            comm.get(), in, checkpoint_flags, directory, [&](const K& key, const V& value, double) { async_insert(key, value); },
            [&](const K& key) { async_erase(key); }, [&] { flush(); },
            [&] { return m_core->engine().sum(async_rejected() - refused_before, "load"); },
            "the servers are full (server_capacity_bytes)");
    }

private:
    // The walk the collectives (gather, gather_topk, reduce) go over.
    friend class detail::with_collectives<linear_hash_map, K, V>;
    auto each_pair() const {
        return [this](auto&& emit) { local_for_each(emit); };
    }
    static constexpr detail::checkpoint::layout_flags checkpoint_flags{true, false, false};

    // Requests a batch keeps in flight: the engine's window (L).
    std::size_t batch_window() const { return m_core->engine().settings().blocking_factor; }

    void prepare(linear_hash_map_op::kind op, runtime::op_kind kind, const K& key, std::string_view value) {
        m_core->engine().check_alive(m_core->engine().op_kind_name(kind).data());
        m_core->check_client(m_core->engine().op_kind_name(kind).data());
        m_core->check_key(detail::payload_of(key));
        if (op == linear_hash_map_op::insert)
            m_core->check_value(value.size());
        ++m_core->engine().stats()[kind].operations;
    }

    template <class T>
    request<T> start(linear_hash_map_op::kind op, runtime::op_kind kind, const K& key, std::string_view value,
                     typename request<T>::decoder decode) {
        runtime::engine_lock lock(m_core->engine());
        prepare(op, kind, key, value);
        auto& engine = m_core->engine();
        const std::uint32_t slot = engine.open_request(kind);
        try {
            m_core->send(op, slot, detail::payload_of(key), value);
        } catch (...) {
            engine.cancel_request(slot);
            throw;
        }
        return request<T>(engine, slot, decode);
    }

    void start_async(linear_hash_map_op::kind op, runtime::op_kind kind, const K& key, std::string_view value) {
        runtime::engine_lock lock(m_core->engine());
        prepare(op, kind, key, value);
        m_core->send(op, detail::lh_core::no_slot, detail::payload_of(key), value);
    }

    static replace_result decode_insert(std::uint32_t, byte_reader& reader, const void*) {
        const auto status = reader.read<std::uint8_t>();
        replace_result result;
        result.stored = status != detail::lh_core::status_rejected;
        result.replaced = status == detail::lh_core::status_replaced;
        return result;
    }
    static std::optional<V> decode_find(std::uint32_t, byte_reader& reader, const void*) {
        const auto status = reader.read<std::uint8_t>();
        if (status != detail::lh_core::status_hit)
            return std::nullopt;
        const std::size_t bytes = reader.remaining();
        const std::byte* data = reader.take(bytes);
        return detail::from_payload<V>(std::string_view(reinterpret_cast<const char*>(data), bytes));
    }
    static bool decode_erase(std::uint32_t, byte_reader& reader, const void*) {
        return reader.read<std::uint8_t>() == detail::lh_core::status_hit;
    }
    static bool decode_contains(std::uint32_t, byte_reader& reader, const void*) {
        const bool hit = reader.read<std::uint8_t>() == detail::lh_core::status_hit;
        reader.take(reader.remaining());  // the value, not needed
        return hit;
    }

    std::unique_ptr<detail::lh_core> m_core;
};

}  // namespace mpidict
