#pragma once
// hash_map<K, V>: a distributed multi-valued hash map (CSE_Hash semantics).
//
// Data layout.  Each rank owns a shard: a local::multi_table mapping a key to a
// sequence of values in insertion order.  The owner of a key is chosen by its
// hash (default), by key % p (cyclic, integer keys), or by an explicit
// target_rank given with the call; finds must then name the same target.
//
// When operations complete.  Every operation becomes one record in the engine's
// outbox for the owner (see runtime/engine.hpp).  The request form returns a
// request<T> that completes when the owner's reply arrives; the async_ form
// returns nothing and is applied by the next flush().  Operations on keys this
// rank owns travel the same path through a loopback queue, so ordering and
// flush semantics do not depend on placement.
//
// Costs in messages (amortised by aggregation): async_insert, async_erase,
// async_insert_if_absent, async_visit: one record, no reply.  insert, find,
// take, erase, insert_if_absent, visit: one record and one reply record.
// find_many, take_many: streamed; per owner a batch header each way, then per
// key the key alone and its answer (the value alone when it is one fixed-size value).
// find_many looks up the keys this rank owns in place, after handling what this
// rank sent itself before (so it sees the same values a loopback message would).
//
// Capacity.  A per-rank limit on stored values and/or payload bytes.  An insert
// that reaches it stores a prefix of its values and reports how many; the rest
// are not stored and nothing already stored changes.  Rejections of async
// inserts are counted back at the origin (async_rejected()).
//
// Visitor failures.  The owner catches any exception a visitor throws (and a
// result too large for one reply): the visit is not applied (the key keeps its
// values; operations the visitor started before throwing still run) and the
// owner goes on serving.  visit() fails on the caller's rank: get() throws
// invalid_argument_error with the visitor's name, the owner and what().  A
// failed async_visit is counted back at the rank that started it, like a
// capacity rejection: async_visit_errors() and the first message in
// async_visit_error_message(), complete after flush().
//
// Threads.  One thread calls the map at a time; an optional progress thread
// (config.runtime.progress_thread) only makes progress.
//
// Files.  This header is the facade and the caller side: every public call, the
// encoders of its records and the decoders of its replies (find: find ->
// keyed_request -> encode_keyed, decode_values).  The owner side is the shard
// core, detail/hash_map_shard.hpp (the table, capacity, the handlers: find:
// on_find -> answer_keyed -> answer); the code that runs at the owner for the
// program (registered and callable visitors, values_ref, reduce operators and
// the combining of waiting reduces) is detail/hash_map_visitors.hpp; the record
// layouts are in detail/wire.hpp (hash_map_wire); the public types in
// hash_map_types.hpp.

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <limits>
#include <memory>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"
#include "mpidict/detail/batches.hpp"
#include "mpidict/detail/callable_registry.hpp"
#include "mpidict/detail/collectives.hpp"
#include "mpidict/detail/facade.hpp"
#include "mpidict/detail/hash_map_caller.hpp"
#include "mpidict/detail/hash_map_load.hpp"
#include "mpidict/detail/hash_map_shard.hpp"
#include "mpidict/detail/hash_map_visitors.hpp"
#include "mpidict/detail/wire.hpp"
#include "mpidict/error.hpp"
#include "mpidict/hash_map_types.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/local/composite.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/local/multi_table.hpp"
#include "mpidict/results.hpp"
#include "mpidict/runtime/engine.hpp"
#include "mpidict/runtime/member_handler.hpp"
#include "mpidict/runtime/request.hpp"

namespace mpidict {

template <class K, class V, class Hash = hasher<K>>
class hash_map : public detail::with_collectives<hash_map<K, V, Hash>, K, V> {
    static_assert(encodable<K>, "hash_map keys: see 'Key and value types' in docs/hash_map.md.");
    static_assert(encodable<V>, "hash_map values: see 'Key and value types' in docs/hash_map.md.");
    static_assert(std::equality_comparable<K>,
                  "hash_map<K, V>: K has no operator==; give it one (e.g. `bool operator==(const K&) const = "
                  "default;`), the local table compares keys with it.");
    static_assert(std::is_invocable_r_v<std::uint64_t, const Hash&, const K&>,
                  "hash_map<K, V, Hash>: Hash must be callable as std::uint64_t(const K&).");
    static_assert(detail::key_bytes_are_canonical<K, Hash>,
                  "hash_map<K, V>: K has padding bytes or floating-point members, and the default hash reads "
                  "the key's bytes, so two equal keys could be stored twice. Use a key type without padding "
                  "(std::has_unique_object_representations_v<K>: reorder or widen the members, or pack them "
                  "into an integer or a std::array), or pass a hash of the members as the third template "
                  "argument (hash_map<K, V, my_hash>, with operator== on K); docs/hash_map.md, 'Key types'.");

public:
    using key_type = K;
    using value_type = V;
    using table_type = local::multi_table<K, V, Hash>;
    using values_view = typename table_type::values_view;

    // What a visitor sees besides the key and values.
    struct visit_context {
        hash_map& map;       // start further operations from here (never wait)
        int source;          // rank that sent the visit
        void* user_context;  // the pointer given at registration on this rank
    };

    template <class Arg, class Result>
    struct visitor {
        std::uint32_t id;
        static constexpr bool is_registered_visitor_handle = true;
    };

    // What a callable visitor (async_visit(key, f, args...)) gets: the key's
    // values at its owner, changed in place (detail/hash_map_visitors.hpp).
    using values_ref = detail::hash_map_values_ref<K, V, Hash>;

    // Collective.  Creates the map over a duplicate of `communicator`.
    explicit hash_map(MPI_Comm communicator, hash_map_config settings = {})
        : hash_map(std::make_unique<runtime::engine>(communicator, settings.runtime), settings) {}

    // Collective.  Creates the map over an engine it takes over (e.g. a simulated one).
    hash_map(std::unique_ptr<runtime::engine> engine, hash_map_config settings)
        : m_engine(std::move(engine)), m_config(settings), m_shard(*m_engine, settings, m_handlers) {
        if (settings.place == placement::cyclic && !std::is_integral_v<K>)
            throw invalid_argument_error("mpidict: cyclic placement needs integer keys");
        if (settings.fixed_value_bytes != 0 && codec<V>::fixed_size && settings.fixed_value_bytes != sizeof(V))
            throw invalid_argument_error("mpidict: fixed_value_bytes = " + std::to_string(settings.fixed_value_bytes) +
                                         " disagrees with the value type's size " + std::to_string(sizeof(V)));
        register_handlers();
        // One set-up round: the handlers, the placement, the type sizes and the
        // numbering of reduce operators and callable visitors
        // (include/mpidict/detail/callable_registry.hpp).
        const std::int64_t settings_that_agree[] = {
            static_cast<std::int64_t>(settings.place), static_cast<std::int64_t>(sizeof(K) * 1000 + sizeof(V)),
            static_cast<std::int64_t>((reducers::fingerprint() ^ mix64(callable_visitors::fingerprint())) >> 1)};
        m_engine->verify_handlers(settings_that_agree,
                                  "hash_map placement, key/value type sizes, reduce operators or visitors (the ranks "
                                  "run different programs?)");
        m_engine->start_progress_thread();
    }

    hash_map(const hash_map&) = delete;
    hash_map& operator=(const hash_map&) = delete;

    // Collective when the map is still alive and no exception is unwinding (the
    // scoped form of destroy()); otherwise it abandons without waiting.
    ~hash_map() { detail::destroy_from_destructor(m_engine.get(), "hash_map", [&] { destroy(); }); }

    // Collective.  Applies everything pending and releases the communicator.
    void destroy() {
        if (m_engine->destroyed())
            return;
        m_engine->destroy();  // joins the progress thread, then locks
        m_shard.release();
    }

    int rank() const { return m_engine->rank(); }
    int num_ranks() const { return m_engine->size(); }
    [[deprecated("mpidict: size() is the number of ranks here; call num_ranks() (the name every container uses)")]]
    int size() const { return m_engine->size(); }
    const hash_map_config& settings() const { return m_config; }
    runtime::engine& engine() { return *m_engine; }
    const runtime::statistics& stats() const { return m_engine->stats(); }
    void reset_statistics() { m_engine->reset_statistics(); }

    // The rank that owns `key` under this map's placement.
    int owner(const K& key) const {
        if (m_config.place == placement::cyclic) {
            if constexpr (std::is_integral_v<K>) {
                using unsigned_key = std::make_unsigned_t<K>;
                return static_cast<int>(static_cast<unsigned_key>(key) % static_cast<unsigned_key>(num_ranks()));
            }
        }
        return owner_of_hash(m_hash(key));
    }
    // owner(key) for hash placement, given m_hash(key) (the shard's table hashes
    // keys with the same function: a load hashes each key once for both).
    int owner_of_hash(std::uint64_t hash) const {
        return static_cast<int>(reduce_range(mix64(hash ^ 0x5851f42d4c957f2dULL), static_cast<std::size_t>(num_ranks())));
    }

    // ---- insert ------------------------------------------------------------

    void async_insert(const K& key, const V& value) { async_insert(target_rank{owner(key)}, key, value); }
    void async_insert(target_rank target, const K& key, const V& value) {
        check_value(value);
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::insert);
        if constexpr (codec<K>::fixed_size && codec<V>::fixed_size) {
            forget_pending_reduce(key);
            std::byte* out = reserve(target, m_handlers.insert_one, sizeof(K) + sizeof(V));
            out = codec<K>::encode(out, key);
            codec<V>::encode(out, value);
        } else {
            encode_insert(target, no_slot, key, std::span<const V>(&value, 1));
        }
    }
    void async_insert(const K& key, std::span<const V> values) { async_insert(target_rank{owner(key)}, key, values); }
    void async_insert(target_rank target, const K& key, std::span<const V> values) {
        for (const V& value : values)
            check_value(value);
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::insert);
        encode_insert(target, no_slot, key, values);
    }

    request<insert_result> insert(const K& key, const V& value) { return insert(key, std::span<const V>(&value, 1)); }
    request<insert_result> insert(const K& key, std::span<const V> values) {
        return insert(target_rank{owner(key)}, key, values);
    }
    request<insert_result> insert(target_rank target, const K& key, std::span<const V> values) {
        for (const V& value : values)
            check_value(value);
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::insert, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::insert);
        slot_guard guard(*m_engine, slot);
        encode_insert(target, slot, key, values);
        return request<insert_result>(*m_engine, guard.release(), &decode_insert);
    }
    // Appends values[i] to keys[i]'s values for every i and returns once every
    // pair has been answered (docs/architecture.md, "Contracts"): how many were
    // stored and how many the owners refused for capacity (replaced is 0: values
    // are appended).  A key's pairs are applied in index order.  The streaming
    // form is async_insert in a loop, then flush().
    insert_many_result insert_many(std::span<const K> keys, std::span<const V> values) {
        if (keys.size() != values.size())
            throw invalid_argument_error("mpidict: hash_map insert_many got " + std::to_string(keys.size()) +
                                         " keys and " + std::to_string(values.size()) + " values");
        insert_many_result totals;
        detail::windowed_batch(
            keys.size(), m_engine->settings().blocking_factor,
            [&](std::size_t index) { return insert(keys[index], std::span<const V>(&values[index], 1)); },
            [&](std::size_t index, const insert_result& one) { detail::count_insert(totals, index, one); });
        return totals;
    }

    // ---- find / take / erase -------------------------------------------------

    // Up to `limit` values of `key`, in insertion order.
    request<std::vector<V>> find(const K& key, std::size_t limit = unlimited) {
        return find(target_rank{owner(key)}, key, limit);
    }
    request<std::vector<V>> find(target_rank target, const K& key, std::size_t limit = unlimited) {
        return keyed_request(target, m_handlers.find, hash_map_op::find, key, limit, &decode_values);
    }
    // Up to `limit` values of `key` from its `offset`-th on (0: the oldest):
    // reads a key with more values than one message holds in pieces, without
    // taking them (count(key) says how many there are).
    request<std::vector<V>> find(const K& key, std::size_t limit, std::size_t offset) {
        return find(target_rank{owner(key)}, key, limit, offset);
    }
    request<std::vector<V>> find(target_rank target, const K& key, std::size_t limit, std::size_t offset) {
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::find, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::find);
        slot_guard guard(*m_engine, slot);
        forget_pending_reduce(key);
        const auto clamp = [](std::size_t n) { return static_cast<std::uint32_t>(std::min<std::size_t>(n, unlimited)); };
        const std::size_t bytes = header_bytes<wire::find_from_header> + codec<K>::encoded_size(key);
        detail::byte_writer(reserve(target, m_handlers.find_from, bytes), bytes)
            .record(wire::find_from_header{slot, clamp(limit), clamp(offset)})
            .encode(key)
            .finish();
        return request<std::vector<V>>(*m_engine, guard.release(), &decode_values);
    }

    // Removes and returns up to `limit` values of `key` (oldest first), atomically.
    request<std::vector<V>> take(const K& key, std::size_t limit = unlimited) {
        return take(target_rank{owner(key)}, key, limit);
    }
    request<std::vector<V>> take(target_rank target, const K& key, std::size_t limit = unlimited) {
        return keyed_request(target, m_handlers.take, hash_map_op::take, key, limit, &decode_values);
    }

    // Removes `key` and all its values; the request yields how many values it had.
    request<std::size_t> erase(const K& key) { return erase(target_rank{owner(key)}, key); }
    request<std::size_t> erase(target_rank target, const K& key) {
        return keyed_request(target, m_handlers.erase, hash_map_op::erase, key, 0, &decode_count);
    }
    void async_erase(const K& key) { async_erase(target_rank{owner(key)}, key); }
    void async_erase(target_rank target, const K& key) {
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::erase);
        encode_keyed(target, m_handlers.erase, no_slot, key, 0);
    }

    // ---- visited sets ---------------------------------------------------------

    // Stores (key, value) if key has no values; the request yields whether it did.
    request<bool> insert_if_absent(const K& key, const V& value) {
        return insert_if_absent(target_rank{owner(key)}, key, value);
    }
    request<bool> insert_if_absent(target_rank target, const K& key, const V& value) {
        check_value(value);
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::insert_if_absent, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::insert_if_absent);
        slot_guard guard(*m_engine, slot);
        encode_keyed_value(target, m_handlers.insert_if_absent, slot, key, value);
        return request<bool>(*m_engine, guard.release(), &decode_flag);
    }
    void async_insert_if_absent(const K& key, const V& value) {
        async_insert_if_absent(target_rank{owner(key)}, key, value);
    }
    void async_insert_if_absent(target_rank target, const K& key, const V& value) {
        check_value(value);
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::insert_if_absent);
        encode_keyed_value(target, m_handlers.insert_if_absent, no_slot, key, value);
    }

    // ---- reduce on insert (single-valued) ---------------------------------------

    // Combines `value` into the key's value at its owner: a new key stores
    // `value`, an existing one becomes op(current, value) (a key holding several
    // values from insert() has them folded in order first, and keeps one).  `op`
    // is any stateless callable V(const V&, const V&) (std::plus<>, a lambda
    // without captures) and must be associative: with fixed-size keys and values,
    // reduces of one key to one owner that wait in the same unsent buffer are
    // combined at this rank (op(a, b) then sent once), so a counter sends one
    // record per distinct key per buffer, not one per occurrence.  Applied by
    // the next flush(); values refused by a capacity limit count in async_rejected().
    template <class Op = std::plus<>>
    void async_reduce(const K& key, const V& value, Op op = {}) {
        if constexpr (reduce_ops::combinable) {
            if (!std::is_integral_v<K> || m_config.place != placement::cyclic) {
                const std::uint64_t hash = m_hash(key);  // one hash: owner, combining slot, owner's table
                return reduce_hashed<Op>(target_rank{owner_of_hash(hash)}, key, value, hash);
            }
        }
        async_reduce(target_rank{owner(key)}, key, value, op);
    }
    template <class Op = std::plus<>>
    void async_reduce(target_rank target, const K& key, const V& value, Op = {}) {
        reduce_hashed<Op>(target, key, value, reduce_ops::combinable ? m_hash(key) : 0);
    }

    // Replaces the key's values with the one `value` (inserting the key if new).
    void async_insert_or_assign(const K& key, const V& value) {
        async_insert_or_assign(target_rank{owner(key)}, key, value);
    }
    void async_insert_or_assign(target_rank target, const K& key, const V& value) {
        async_reduce(target, key, value, detail::replace_with_new{});
    }
    // The request form yields true if the key was new and is now stored, false
    // if it was there (its value replaced) or the owner's capacity limit refused
    // it (the key is unchanged; the owner counts it in local_rejected()): a
    // refusal is a result, never an exception (docs/architecture.md, "Contracts").
    request<bool> insert_or_assign(const K& key, const V& value) {
        return insert_or_assign(target_rank{owner(key)}, key, value);
    }
    request<bool> insert_or_assign(target_rank target, const K& key, const V& value) {
        check_value(value);
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::reduce, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::reduce);
        slot_guard guard(*m_engine, slot);
        encode_reduce<detail::replace_with_new>(target, slot, key, value);
        return request<bool>(*m_engine, guard.release(), &decode_flag);
    }

    // Reduces of this rank combined into a waiting record instead of being sent.
    std::uint64_t async_reduces_combined() const { return m_reduces.combined(); }

    // ---- visit ---------------------------------------------------------------

    // Collective, set-up: call it before operations start or right after a flush
    // (it serves no other rank while it waits).  Registers `function` to run at a
    // key's owner.  Every rank
    // registers the same visitors in the same order; `user_context` is this
    // rank's own pointer, handed to the function in visit_context.  The function
    // gets the key's values as a vector it may change (emptying it removes the
    // key); its result returns to the caller of visit().  If it throws, the visit
    // changes nothing and fails at its origin (see "Visitor failures" above).
    template <class Arg, class Result>
    visitor<Arg, Result> register_visitor(std::string_view name,
                                          Result (*function)(visit_context&, const K&, std::vector<V>&, const Arg&),
                                          void* user_context = nullptr) {
        static_assert(encodable<Arg>, "visitor arguments must be trivially copyable or byte strings.");
        static_assert(std::is_void_v<Result> || encodable<Result>,
                      "visitor results must be void, trivially copyable or byte strings.");
        runtime::engine_lock lock(*m_engine);  // locked throughout
        m_engine->check_alive("register_visitor");
        // The entry exists before the collective check returns: another rank may
        // send a visit the moment its own check is done.
        return visitor<Arg, Result>{m_visitors.add(name, function, user_context)};
    }

    template <class Arg, class Result>
    auto visit(const K& key, visitor<Arg, Result> which, const Arg& arg) {
        return visit(target_rank{owner(key)}, key, which, arg);
    }
    template <class Arg, class Result>
    auto visit(target_rank target, const K& key, visitor<Arg, Result> which, const Arg& arg) {
        using returned = std::conditional_t<std::is_void_v<Result>, nothing, Result>;
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::visit, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::visit);
        slot_guard guard(*m_engine, slot);
        encode_visit(target, slot, key, which.id, arg);
        return request<returned>(*m_engine, guard.release(), &decode_visit<returned>);
    }
    template <class Arg, class Result>
    void async_visit(const K& key, visitor<Arg, Result> which, const Arg& arg) {
        async_visit(target_rank{owner(key)}, key, which, arg);
    }
    template <class Arg, class Result>
    void async_visit(target_rank target, const K& key, visitor<Arg, Result> which, const Arg& arg) {
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::visit);
        encode_visit(target, no_slot, key, which.id, arg);
    }

    // ---- callable visitors ------------------------------------------------------

    // Runs f at the key's owner on the key's values, in place:
    //     f(const K& key, values_ref& values, args...)  or
    //     f(visit_context& ctx, const K& key, values_ref& values, args...)
    // f is any stateless callable (a lambda without captures, a function
    // object type); nothing is registered: it is numbered by its type (and the
    // arguments' types) consistently on every rank (callable_registry.hpp).  The
    // arguments travel by value: trivially copyable types or byte strings
    // (a string literal travels as std::string) and convert to f's parameters
    // at the owner.  async_visit runs f even when the key is absent (values is
    // empty; push_back creates the key), async_visit_if_contains only when it is
    // present.  visit() is the request form: it yields f's result (nothing for
    // void).  If f throws, the changes it made before the throw stay and the
    // failure goes to the origin as for registered visitors (visit() throws,
    // async_visit_errors() counts).
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    void async_visit(const K& key, F f, const Args&... args) {
        async_visit(target_rank{owner(key)}, key, f, args...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    void async_visit(target_rank target, const K& key, F, const Args&... args) {
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::visit);
        encode_callable_visit<F>(target, no_slot, false, key, visitors::visit_argument(args)...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    void async_visit_if_contains(const K& key, F f, const Args&... args) {
        async_visit_if_contains(target_rank{owner(key)}, key, f, args...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    void async_visit_if_contains(target_rank target, const K& key, F, const Args&... args) {
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::visit);
        encode_callable_visit<F>(target, no_slot, true, key, visitors::visit_argument(args)...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    auto visit(const K& key, F f, const Args&... args) {
        return visit(target_rank{owner(key)}, key, f, args...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    auto visit(target_rank target, const K& key, F, const Args&... args) {
        using result = typename visitors::template callable_result<F, detail::visit_argument_t<Args>...>;
        using returned = std::conditional_t<std::is_void_v<result>, nothing, result>;
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::visit, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::visit);
        slot_guard guard(*m_engine, slot);
        encode_callable_visit<F>(target, slot, false, key, visitors::visit_argument(args)...);
        return request<returned>(*m_engine, guard.release(), &decode_visit<returned>);
    }

    // ---- bulk lookup ---------------------------------------------------------

    // Looks up every key (up to `limit` values each) and calls
    // on_result(index, values) on this rank as answers arrive, in any order.
    // Returns when all have answered.  Local: other ranks need not take part,
    // but they answer only while inside some library call (or with a progress thread).
    template <class Function>
    void find_many(std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk_lookup(false, hash_map_op::find, nullptr, keys, limit, on_result);
    }
    // The same, every key sent to `target` (explicit placement).
    template <class Function>
    void find_many(target_rank target, std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk_lookup(false, hash_map_op::find, &target, keys, limit, on_result);
    }
    // Removes and returns up to `limit` oldest values of every key, calling
    // on_result(index, values) with what was taken.  Each key is taken atomically.
    template <class Function>
    void take_many(std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk_lookup(true, hash_map_op::take, nullptr, keys, limit, on_result);
    }
    template <class Function>
    void take_many(target_rank target, std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk_lookup(true, hash_map_op::take, &target, keys, limit, on_result);
    }

    // ---- collective ----------------------------------------------------------

    // Collective.  Returns when every operation started anywhere before it has
    // been applied (and answered).
    void flush() {
        runtime::engine_lock lock(*m_engine);
        m_engine->flush();
    }

    // Values rejected by capacity limits from this rank's async inserts, as
    // reported back by the owners so far (complete after flush()).
    std::uint64_t async_rejected() const { return m_async_rejected; }
    // Values this rank refused as an owner because of its capacity limit.
    std::uint64_t local_rejected() const { return m_shard.local_rejected(); }

    // This rank's async_visits (including those its visitors started) whose
    // visitor threw at the owner, as reported back so far (complete after
    // flush()).  Such a visit changed nothing at the owner.  Never thrown: a
    // collective flush() that threw on some ranks only would leave the others
    // waiting in the next collective; check the count (e.g. summed over ranks).
    std::uint64_t async_visit_errors() const {
        runtime::engine_lock lock(*m_engine);
        return m_async_visit_errors;
    }
    // The message of the first failure counted by async_visit_errors() (visitor
    // name, owner rank, the exception's what()); empty if none.
    std::string async_visit_error_message() const {
        runtime::engine_lock lock(*m_engine);
        return m_async_visit_error_message;
    }
    // Resets both, e.g. between phases.
    void clear_async_visit_errors() {
        runtime::engine_lock lock(*m_engine);
        m_async_visit_errors = 0;
        m_async_visit_error_message.clear();
    }

    // How many values `key` has (0: absent), and whether it is present; at the
    // key's owner, in order with this rank's other operations on the key.
    request<std::size_t> count(const K& key) { return count(target_rank{owner(key)}, key); }
    request<std::size_t> count(target_rank target, const K& key) {
        return keyed_request(target, m_handlers.count, hash_map_op::find, key, 0, &decode_count);
    }
    request<bool> contains(const K& key) { return contains(target_rank{owner(key)}, key); }
    request<bool> contains(target_rank target, const K& key) {
        return keyed_request(target, m_handlers.count, hash_map_op::find, key, 0, &decode_flag);
    }

    // Collective.  Removes every key; other ranks' operations started after
    // clear() returns on every rank are kept.
    void clear() {
        flush();
        {
            runtime::engine_lock lock(*m_engine);
            m_shard.reset();
        }
        flush();  // nobody sends new operations before everyone has cleared
    }

    // Collective: gather(root), gather_all(), gather_topk(k, compare) and
    // reduce(op) come from detail::with_collectives (a key with n values gives n
    // pairs, in their order; memory: the whole map on each receiver).

    // Collective.  Total keys and values over all ranks.
    std::size_t global_size() { return global_sum(m_shard.table().size(), "global_size"); }
    std::size_t global_value_count() { return global_sum(m_shard.table().value_count(), "global_value_count"); }

    // ---- this rank's shard -----------------------------------------------------

    // Reads of the shard lock the engine, so a progress thread cannot change it meanwhile.
    std::size_t local_size() const {
        runtime::engine_lock lock(*m_engine);
        return m_shard.table().size();
    }
    std::size_t local_value_count() const {
        runtime::engine_lock lock(*m_engine);
        return m_shard.table().value_count();
    }
    std::size_t local_payload_bytes() const {
        runtime::engine_lock lock(*m_engine);
        return m_shard.stored_bytes();
    }
    std::size_t local_memory_bytes() const {
        runtime::engine_lock lock(*m_engine);
        return m_shard.table().memory_bytes();
    }
    std::vector<V> local_find(const K& key, std::size_t limit = unlimited) const {
        runtime::engine_lock lock(*m_engine);
        std::vector<V> out;
        m_shard.table().find(key).copy_to(std::back_inserter(out), limit);
        return out;
    }
    bool local_contains(const K& key) const {
        runtime::engine_lock lock(*m_engine);
        return m_shard.table().contains(key);
    }
    template <class Function>
    void local_for_each(Function&& function) const {
        runtime::engine_lock lock(*m_engine);
        m_shard.table().for_each(function);
    }
    // Collective.  flush(), then f(key, values) on every entry this rank holds:
    // every rank visits its own part, so the whole map is visited once.
    template <class Function>
    void for_all(Function&& function) {
        flush();
        local_for_each(std::forward<Function>(function));
    }
    // This rank's shard as ranges, without copying: iterating local_table()
    // gives (key, values_view) pairs; local_keys() the keys; local_values() each
    // key's values_view.  Valid until the next call into the map (no lock is
    // held while the caller iterates: not with a progress thread running).
    const table_type& local_table() const { return m_shard.table(); }
    auto local_keys() const { return std::views::keys(m_shard.table()); }
    auto local_values() const { return std::views::values(m_shard.table()); }

    // ---- checkpoints (include/mpidict/checkpoint.hpp, docs/checkpoint.md) --

    // Collective.  flush(), then writes every key with its values (in their
    // order) to `directory`, replacing the checkpoint there only once all of it
    // is on disk.
    void save(const std::string& directory, const checkpoint_options& options = {}) {
        flush();
        detail::checkpoint::communicator_copy comm(m_engine->mpi_communicator(), "hash_map");
        runtime::engine_lock lock(*m_engine);
        m_shard.save(comm.get(), directory, options);
    }

    // Collective.  Fills this map, which must be empty on every rank, from the
    // checkpoint in `directory` (saved at any number of ranks): every key goes
    // to its owner here, with its values in their saved order.  Throws
    // checkpoint_error on every rank, leaving the map empty, if the checkpoint
    // is missing, damaged or of other types, or if this map's capacity limits
    // refuse any value.
    void load(const std::string& directory, const checkpoint_options& options = {}) {
        detail::hash_map_loader::load(*this, directory, options);  // detail/hash_map_load.hpp
    }

    static constexpr std::size_t unlimited = std::numeric_limits<std::uint32_t>::max();

private:
    friend struct detail::hash_map_loader;
    using wire = detail::hash_map_wire;
    using shard_type = detail::hash_map_shard<K, V, Hash>;
    using visitors = detail::hash_map_visitors<K, V, Hash, hash_map>;
    using reduce_ops = detail::reduce_combiner<K, V, Hash>;
    using batches = detail::hash_map_batches<K, V>;
    using initiation_timer = detail::initiation_timer;
    using slot_guard = detail::slot_guard;
    using reducers = typename reduce_ops::reducers;
    using callable_visitors = typename visitors::callables;
    template <class Record>
    static constexpr std::size_t header_bytes = detail::wire_bytes<Record>;
    static constexpr std::uint32_t no_slot = shard_type::no_slot;

    // ---- handlers ----

    // Registration order is part of the wire format (handler ids; the fuzz seeds,
    // tests/fuzz/seeds.cpp, name them by position): add new handlers at the end.
    void register_handlers() {
        detail::register_op_kinds(*m_engine, hash_map_op::names);
        auto& h = m_handlers;
        shard_type* shard = &m_shard;
        visitors* visit = &m_visitors;
        runtime::engine& e = *m_engine;
        h.insert_one = runtime::register_handler<&shard_type::on_insert_one>(e, "hash_map.insert_one", shard);
        h.insert = runtime::register_handler<&shard_type::on_insert>(e, "hash_map.insert", shard);
        h.find = runtime::register_handler<&shard_type::on_find>(e, "hash_map.find", shard);
        h.take = runtime::register_handler<&shard_type::on_take>(e, "hash_map.take", shard);
        h.erase = runtime::register_handler<&shard_type::on_erase>(e, "hash_map.erase", shard);
        h.insert_if_absent =
            runtime::register_handler<&shard_type::on_insert_if_absent>(e, "hash_map.insert_if_absent", shard);
        h.visit = runtime::register_handler<&visitors::on_visit>(e, "hash_map.visit", visit);
        h.find_many = runtime::register_handler<&shard_type::on_find_many>(e, "hash_map.find_many", shard);
        h.find_many_reply = runtime::register_handler<&batches::on_reply>(e, "hash_map.find_many_reply", &m_batches);
        h.take_many = runtime::register_handler<&shard_type::on_take_many>(e, "hash_map.take_many", shard);
        h.rejected = runtime::register_handler<&hash_map::on_rejected>(e, "hash_map.rejected", this);
        h.visit_failed = runtime::register_handler<&hash_map::on_visit_failed>(e, "hash_map.visit_failed", this);
        h.reduce = runtime::register_handler<&shard_type::on_reduce>(e, "hash_map.reduce", shard);
        h.visit_callable =
            runtime::register_handler<&visitors::on_visit_callable>(e, "hash_map.visit_callable", visit);
        h.count = runtime::register_handler<&shard_type::on_count>(e, "hash_map.count", shard);
        h.find_from = runtime::register_handler<&shard_type::on_find_from>(e, "hash_map.find_from", shard);
        h.many_begin = runtime::register_handler<&shard_type::on_many_begin>(e, "hash_map.many_begin", shard);
        h.many_keys = runtime::register_handler<&shard_type::on_many_keys>(e, "hash_map.many_keys", shard);
        h.many_reply_begin =
            runtime::register_handler<&batches::on_reply_begin>(e, "hash_map.many_reply_begin", &m_batches);
        h.many_value = runtime::register_handler<&batches::on_value>(e, "hash_map.many_value", &m_batches);
        h.many_counted = runtime::register_handler<&batches::on_counted>(e, "hash_map.many_counted", &m_batches);
        h.reduce_op = runtime::register_handler<&shard_type::on_reduce_op>(e, "hash_map.reduce_op", shard);
        h.reduce_pairs = runtime::register_handler<&shard_type::on_reduce_pairs>(e, "hash_map.reduce_pairs", shard);
    }

    static constexpr detail::checkpoint::layout_flags checkpoint_flags = shard_type::checkpoint_flags;
    static constexpr std::size_t checkpoint_batch = 256;  // values per record when loading

    // One key's values (a piece of them) from a checkpoint, to their owner:
    // stored directly when that is this rank, else as an async insert.
    void restore(int target, const K& key, std::span<const V> values) {
        if (target == rank()) {
            for (const V& value : values)
                m_shard.store_value(key, value);
        } else {
            encode_insert(target_rank{target}, no_slot, key, values);
        }
    }

    void check_value(const V& value) const {
        if constexpr (!codec<V>::fixed_size) {
            // The payload: a byte string's length, a composite's parts' bytes.
            const std::size_t bytes = codec<V>::payload_bytes(value);
            if (m_config.fixed_value_bytes != 0 && bytes != m_config.fixed_value_bytes)
                throw invalid_argument_error("mpidict: value length " + std::to_string(bytes) +
                                             " does not match this map's fixed value length " +
                                             std::to_string(m_config.fixed_value_bytes));
        }
        (void)value;
    }

    void check_target(target_rank target) const {
        if (target.rank < 0 || target.rank >= num_ranks()) [[unlikely]]
            throw_bad_target(target);
    }
    [[noreturn, gnu::cold, gnu::noinline]] void throw_bad_target(target_rank target) const {
        throw invalid_argument_error("mpidict: target rank " + std::to_string(target.rank) + " is outside " +
                                     detail::communicator_of(num_ranks()));
    }

    std::byte* reserve(target_rank target, runtime::handler_id handler, std::size_t bytes) {
        check_target(target);
        return m_engine->reserve(target.rank, handler, bytes);
    }

    // ---- encoders (caller side; layouts in detail/wire.hpp) ----

    void encode_insert(target_rank target, std::uint32_t slot, const K& key, std::span<const V> values) {
        if (values.size() > std::numeric_limits<std::uint32_t>::max() - 1)
            throw invalid_argument_error("mpidict: at most 4294967294 values per insert");
        forget_pending_reduce(key);
        std::size_t bytes = header_bytes<wire::insert_header> + codec<K>::encoded_size(key);
        for (const V& value : values)
            bytes += codec<V>::encoded_size(value);
        detail::byte_writer out(reserve(target, m_handlers.insert, bytes), bytes);
        out.record(wire::insert_header{slot, static_cast<std::uint32_t>(values.size())}).encode(key);
        for (const V& value : values)
            out.encode(value);
        out.finish();
    }

    // find, take, erase, count, contains: {slot, limit} key.
    void encode_keyed(target_rank target, runtime::handler_id handler, std::uint32_t slot, const K& key,
                      std::uint32_t limit) {
        forget_pending_reduce(key);
        const std::size_t bytes = header_bytes<wire::keyed_header> + codec<K>::encoded_size(key);
        detail::byte_writer(reserve(target, handler, bytes), bytes).record(wire::keyed_header{slot, limit}).encode(key).finish();
    }

    void encode_keyed_value(target_rank target, runtime::handler_id handler, std::uint32_t slot, const K& key,
                            const V& value) {
        forget_pending_reduce(key);
        const std::size_t bytes =
            header_bytes<wire::keyed_value_header> + codec<K>::encoded_size(key) + codec<V>::encoded_size(value);
        detail::byte_writer(reserve(target, handler, bytes), bytes)
            .record(wire::keyed_value_header{slot})
            .encode(key)
            .encode(value)
            .finish();
    }

    template <class Arg>
    void encode_visit(target_rank target, std::uint32_t slot, const K& key, std::uint32_t which, const Arg& arg) {
        if (which >= m_visitors.registered())
            throw invalid_argument_error("mpidict: unknown visitor " + std::to_string(which));
        forget_pending_reduce(key);
        const std::size_t bytes =
            header_bytes<wire::visit_header> + codec<K>::encoded_size(key) + codec<Arg>::encoded_size(arg);
        detail::byte_writer(reserve(target, m_handlers.visit, bytes), bytes)
            .record(wire::visit_header{slot, which})
            .encode(key)
            .encode(arg)
            .finish();
    }

    template <class F, class... A>
    void encode_callable_visit(target_rank target, std::uint32_t slot, bool if_contains, const K& key,
                               const A&... args) {
        visitors::template check_callable<F, A...>();
        forget_pending_reduce(key);
        const std::uint32_t id = visitors::template callable_id<F, A...>;
        const std::size_t bytes = header_bytes<wire::callable_visit_header> + codec<K>::encoded_size(key) +
                                  (std::size_t{0} + ... + codec<A>::encoded_size(args));
        detail::byte_writer out(reserve(target, m_handlers.visit_callable, bytes), bytes);
        out.record(wire::callable_visit_header{slot, id, if_contains ? 1u : 0u}).encode(key);
        (out.encode(args), ...);
        out.finish();
    }

    // async_reduce with the key's m_hash(key), computed once by the caller.
    template <class Op>
    void reduce_hashed(target_rank target, const K& key, const V& value, std::uint64_t hash) {
        reduce_ops::template check<Op>();
        check_value(value);
        initiation_timer timer(*m_engine, m_sample_counter, hash_map_op::reduce);
        encode_reduce<Op>(target, no_slot, key, value, hash);
    }

    // reduce: {slot, op} key value.  A fire-and-forget reduce with fixed-size key
    // and value may fold into one waiting in the outbox; else it is streamed (a
    // reduce_op when the operator to this owner changes, then the bare pair), or,
    // in a handler, headered (a top-level reserve may serve handlers: no split).
    // Op is known here, so a combined reduce folds with Op inlined.
    // `hash`: m_hash(key) (the combining slot), or 0 for a request (slot != no_slot).
    template <class Op>
    void encode_reduce(target_rank target, std::uint32_t slot, const K& key, const V& value, std::uint64_t hash = 0) {
        constexpr std::size_t header = header_bytes<wire::reduce_header>;
        const std::uint32_t op = reduce_ops::template id<Op>;
        check_target(target);  // before the outbox of target.rank is looked at
        if constexpr (reduce_ops::combinable) {
            if (slot == no_slot) {
                auto* const entry = m_reduces.template combine<Op>(target.rank, op, key, value, hash);
                if (entry == nullptr)
                    return;
                const bool bare = !m_engine->in_handler();
                std::uint32_t& streamed = m_reduces.stream_op(target.rank);
                if (bare && streamed != op + 1) {
                    detail::overwrite_record(reserve(target, m_handlers.reduce_op, header_bytes<wire::reduce_op>),
                                             wire::reduce_op{op});
                    streamed = op + 1;
                }
                const std::size_t at = bare ? 0 : header;  // where the key starts
                std::byte* out = reserve(target, bare ? m_handlers.reduce_pairs : m_handlers.reduce,
                                         at + sizeof(K) + sizeof(V));
                if (!bare)
                    detail::overwrite_record(out, wire::reduce_header{no_slot, op});
                std::memcpy(out + at, &key, sizeof(K));
                std::memcpy(out + at + sizeof(K), &value, sizeof(V));
                m_reduces.remember(entry, target.rank, op, key, out + at + sizeof(K));
                return;
            }
        }
        forget_pending_reduce(key);
        const std::size_t bytes = header + codec<K>::encoded_size(key) + codec<V>::encoded_size(value);
        detail::byte_writer(reserve(target, m_handlers.reduce, bytes), bytes)
            .record(wire::reduce_header{slot, op})
            .encode(key)
            .encode(value)
            .finish();
    }

    void forget_pending_reduce(const K& key) { m_reduces.forget(key); }

    // The request form of every {slot, limit} key record: find, take, erase, count, contains.
    template <class T>
    request<T> keyed_request(target_rank target, runtime::handler_id handler, runtime::op_kind kind, const K& key,
                             std::size_t limit, T (*decode)(std::uint32_t, byte_reader&, const void*)) {
        initiation_timer timer(*m_engine, m_sample_counter, kind, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(kind);
        slot_guard guard(*m_engine, slot);
        const auto clamped = static_cast<std::uint32_t>(std::min<std::size_t>(limit, unlimited));
        encode_keyed(target, handler, slot, key, clamped);
        return request<T>(*m_engine, guard.release(), decode);
    }

    // find_many and take_many: streamed batches (detail/hash_map_caller.hpp).
    template <class Function>
    void bulk_lookup(bool take, runtime::op_kind kind, const target_rank* target, std::span<const K> keys,
                     std::size_t limit, Function& on_result) {
        m_batches.run(
            m_handlers.many_begin, m_handlers.many_keys, take, kind, keys, limit, on_result,
            [&] {
                if (target)
                    check_target(*target);
            },
            [&](const K& key) { return target ? target->rank : owner(key); },
            [&](const K& key) { forget_pending_reduce(key); },
            [&](std::uint32_t count, auto&& key_at, std::uint32_t clamped, auto&& deliver, auto&& refuse) {
                m_shard.find_local(count, key_at, clamped, deliver, refuse);
            });
    }

    // ---- decoders (caller side: a request's get()) ----

    static insert_result decode_insert(std::uint32_t count, byte_reader& reader, const void*) {
        insert_result result;
        result.stored = count;
        result.requested = detail::read_record<wire::count_record>(reader).count;
        return result;
    }
    static std::vector<V> decode_values(std::uint32_t count, byte_reader& reader, const void*) {
        std::vector<V> values;
        // `count` comes off the wire: reserve no more than the reply's bytes can encode.
        values.reserve(std::min<std::size_t>(count, reader.remaining() / (codec<V>::fixed_size ? sizeof(V) : 4)));
        for (std::uint32_t index = 0; index < count; ++index)
            values.push_back(codec<V>::decode(reader));
        return values;
    }
    static std::size_t decode_count(std::uint32_t count, byte_reader&, const void*) { return count; }
    static bool decode_flag(std::uint32_t count, byte_reader&, const void*) { return count != 0; }
    template <class R>
    static R decode_visit(std::uint32_t, byte_reader& reader, const void*) {
        if constexpr (std::is_same_v<R, nothing>)
            return nothing{};
        else
            return codec<R>::decode(reader);
    }

    // ---- caller-side handlers: answers and notices from owners ----

    // A notice {u32 failures, first message} from an owner whose visitor threw
    // running async_visits this rank started.
    void on_visit_failed(int, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        constexpr std::size_t header = header_bytes<wire::count_record>;
        if (record_bytes < header)
            throw decode_error("mpidict: malformed visitor failure notice");
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            m_async_visit_errors += detail::read_record<wire::count_record>(records, record_bytes).count;
            if (m_async_visit_error_message.empty())
                m_async_visit_error_message.assign(reinterpret_cast<const char*>(records + header),
                                                   record_bytes - header);
        }
    }

    // A notice {u32 values} from an owner that refused this rank's async values.
    void on_rejected(int, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        if (record_bytes != header_bytes<wire::count_record>)
            throw decode_error("mpidict: malformed rejection notice");
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
            m_async_rejected += detail::read_record<wire::count_record>(records, record_bytes).count;
    }

    // ---- collectives (detail/collectives.hpp) ----

    friend class detail::with_collectives<hash_map, K, V>;
    // A walk over every (key, value) pair of the shard, for the collectives.
    auto each_pair() const {
        return [this](auto&& emit) {
            m_shard.table().for_each([&](const K& key, const values_view& values) {
                for (const V& value : values)
                    emit(key, value);
            });
        };
    }

    std::size_t global_sum(std::size_t local, const char* what) {
        runtime::engine_lock lock(*m_engine);
        m_engine->check_alive(what);
        return static_cast<std::size_t>(m_engine->sum(local, what));
    }

    std::unique_ptr<runtime::engine> m_engine;
    hash_map_config m_config;
    detail::hash_map_handlers m_handlers;
    shard_type m_shard;  // the owner side
    visitors m_visitors{*this, m_shard, *m_engine};
    reduce_ops m_reduces{*m_engine, m_config.break_consistency_for_testing};
    batches m_batches{*m_engine};
    [[no_unique_address]] Hash m_hash;
    std::uint64_t m_async_rejected = 0;
    std::uint64_t m_async_visit_errors = 0;    // this rank's async_visits whose visitor threw
    std::string m_async_visit_error_message;  // the first of them
    std::uint32_t m_sample_counter = 0;
};

}  // namespace mpidict
