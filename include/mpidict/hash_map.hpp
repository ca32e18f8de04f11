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
// find_many, take_many: one record and one reply record per key, streamed.
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
#include <optional>
#include <ranges>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"
#include "mpidict/detail/callable_registry.hpp"
#include "mpidict/detail/collectives.hpp"
#include "mpidict/detail/wire.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/local/composite.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/local/multi_table.hpp"
#include "mpidict/results.hpp"
#include "mpidict/runtime/engine.hpp"
#include "mpidict/runtime/request.hpp"

namespace mpidict {

enum class placement { hash, cyclic };

// Pass as the first argument to send an operation to a chosen rank.
struct target_rank {
    int rank;
};

namespace detail {
// insert_or_assign's operator: the newer value wins (associative, so combinable).
struct replace_with_new {
    template <class V>
    V operator()(const V&, const V& newer) const {
        return newer;
    }
};
}  // namespace detail

struct hash_map_config {
    runtime::config runtime{};
    placement place = placement::hash;
    std::size_t expected_keys_per_rank = 0;  // capacity hint for the local table
    double max_load = local::table_default_max_load;  // of the local table (0.58: 29.3 bytes per 8+8-byte pair)
    std::size_t capacity_values = 0;         // per-rank limit on stored values; 0: none
    std::size_t capacity_bytes = 0;          // per-rank limit on key+value payload bytes; 0: none
    std::size_t fixed_value_bytes = 0;       // byte-string values must have this length; 0: any
};

// hash_map's operation kinds, registered with its engine in this order; index
// `stats()` with them (e.g. `map.stats()[hash_map_op::find].completion_seconds`).
struct hash_map_op {
    enum kind : runtime::op_kind { insert, find, take, erase, visit, insert_if_absent, reduce };
    static constexpr std::string_view names[] = {"insert", "find", "take", "erase", "visit", "insert_if_absent",
                                                 "reduce"};
};

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
    // values at its owner, changed in place.  Valid during the call only.
    class values_ref {
    public:
        std::size_t size() const { return m_values.size(); }
        bool empty() const { return size() == 0; }
        V& operator[](std::size_t index) { return m_values[index]; }
        const V& operator[](std::size_t index) const { return m_values[index]; }
        V& front() { return m_values[0]; }
        // Appends a value (creating the key); false if the owner's capacity
        // limit refused it (counted like an insert's refusal).
        bool push_back(const V& value) {
            const bool stored = m_map.store_value(m_key, value);
            m_refused += stored ? 0 : 1;
            m_values = m_map.m_table.find_mutable(m_key);
            return stored;
        }
        // Removes the key and all its values.
        void clear() {
            m_map.remove_key(m_key);
            m_values = {};
        }
        template <class Ref>
        class basic_iterator {
        public:
            using iterator_category = std::forward_iterator_tag;
            using value_type = V;
            using difference_type = std::ptrdiff_t;
            using reference = Ref;
            Ref operator*() const { return (*m_values)[m_index]; }
            basic_iterator& operator++() {
                ++m_index;
                return *this;
            }
            basic_iterator operator++(int) {
                basic_iterator before = *this;
                ++m_index;
                return before;
            }
            bool operator==(const basic_iterator& other) const { return m_index == other.m_index; }

        private:
            friend class values_ref;
            basic_iterator(const typename table_type::mutable_values* values, std::size_t index)
                : m_values(values), m_index(index) {}
            const typename table_type::mutable_values* m_values;
            std::size_t m_index;
        };
        using iterator = basic_iterator<V&>;
        using const_iterator = basic_iterator<const V&>;
        iterator begin() { return iterator(&m_values, 0); }
        iterator end() { return iterator(&m_values, size()); }
        const_iterator begin() const { return const_iterator(&m_values, 0); }
        const_iterator end() const { return const_iterator(&m_values, size()); }

    private:
        friend class hash_map;
        values_ref(hash_map& map, const K& key) : m_map(map), m_key(key), m_values(map.m_table.find_mutable(key)) {}
        hash_map& m_map;
        const K& m_key;
        typename table_type::mutable_values m_values;
        std::uint32_t m_refused = 0;
    };

    // Collective.  Creates the map over a duplicate of `communicator`.
    explicit hash_map(MPI_Comm communicator, hash_map_config settings = {})
        : hash_map(std::make_unique<runtime::engine>(communicator, settings.runtime), settings) {}

    // Collective.  Creates the map over an engine it takes over (e.g. a simulated one).
    hash_map(std::unique_ptr<runtime::engine> engine, hash_map_config settings)
        : m_engine(std::move(engine)), m_config(settings),
          m_table(checked_expected_keys(settings), settings.max_load) {
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
    ~hash_map() {
        if (m_engine && !m_engine->destroyed() && std::uncaught_exceptions() == 0) {
            try {
                destroy();
            } catch (const std::exception& problem) {
                std::fprintf(stderr, "mpidict: hash_map teardown on rank %d failed: %s\n", rank(), problem.what());
            }
        }
    }

    // Collective.  Applies everything pending and releases the communicator.
    void destroy() {
        if (m_engine->destroyed())
            return;
        m_engine->destroy();  // joins the progress thread, then locks
        m_table.clear();
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
        return static_cast<int>(reduce_range(mix64(m_hash(key) ^ 0x5851f42d4c957f2dULL), static_cast<std::size_t>(num_ranks())));
    }

    // ---- insert ------------------------------------------------------------

    void async_insert(const K& key, const V& value) { async_insert(target_rank{owner(key)}, key, value); }
    void async_insert(target_rank target, const K& key, const V& value) {
        check_value(value);
        initiation_timer timer(*this, hash_map_op::insert);
        if constexpr (codec<K>::fixed_size && codec<V>::fixed_size) {
            forget_pending_reduce(key);
            std::byte* out = reserve(target, m_insert_one, sizeof(K) + sizeof(V));
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
        initiation_timer timer(*this, hash_map_op::insert);
        encode_insert(target, no_slot, key, values);
    }

    request<insert_result> insert(const K& key, const V& value) { return insert(key, std::span<const V>(&value, 1)); }
    request<insert_result> insert(const K& key, std::span<const V> values) {
        return insert(target_rank{owner(key)}, key, values);
    }
    request<insert_result> insert(target_rank target, const K& key, std::span<const V> values) {
        for (const V& value : values)
            check_value(value);
        initiation_timer timer(*this, hash_map_op::insert, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::insert);
        slot_guard guard(*m_engine, slot);
        encode_insert(target, slot, key, values);
        return request<insert_result>(*m_engine, guard.release(), &decode_insert);
    }

    // ---- find / take / erase -------------------------------------------------

    // Up to `limit` values of `key`, in insertion order.
    request<std::vector<V>> find(const K& key, std::size_t limit = unlimited) {
        return find(target_rank{owner(key)}, key, limit);
    }
    request<std::vector<V>> find(target_rank target, const K& key, std::size_t limit = unlimited) {
        return keyed_request(target, m_find, hash_map_op::find, key, limit, &decode_values);
    }
    // Up to `limit` values of `key` from its `offset`-th on (0: the oldest):
    // reads a key with more values than one message holds in pieces, without
    // taking them (count(key) says how many there are).
    request<std::vector<V>> find(const K& key, std::size_t limit, std::size_t offset) {
        return find(target_rank{owner(key)}, key, limit, offset);
    }
    request<std::vector<V>> find(target_rank target, const K& key, std::size_t limit, std::size_t offset) {
        initiation_timer timer(*this, hash_map_op::find, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::find);
        slot_guard guard(*m_engine, slot);
        forget_pending_reduce(key);
        const auto clamp = [](std::size_t n) { return static_cast<std::uint32_t>(std::min<std::size_t>(n, unlimited)); };
        const std::size_t bytes = header_bytes<wire::find_from_header> + codec<K>::encoded_size(key);
        detail::byte_writer(reserve(target, m_find_from, bytes), bytes)
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
        return keyed_request(target, m_take, hash_map_op::take, key, limit, &decode_values);
    }

    // Removes `key` and all its values; the request yields how many values it had.
    request<std::size_t> erase(const K& key) { return erase(target_rank{owner(key)}, key); }
    request<std::size_t> erase(target_rank target, const K& key) {
        return keyed_request(target, m_erase, hash_map_op::erase, key, 0, &decode_count);
    }
    void async_erase(const K& key) { async_erase(target_rank{owner(key)}, key); }
    void async_erase(target_rank target, const K& key) {
        initiation_timer timer(*this, hash_map_op::erase);
        encode_keyed(target, m_erase, no_slot, key, 0);
    }

    // ---- visited sets ---------------------------------------------------------

    // Stores (key, value) if key has no values; the request yields whether it did.
    request<bool> insert_if_absent(const K& key, const V& value) {
        return insert_if_absent(target_rank{owner(key)}, key, value);
    }
    request<bool> insert_if_absent(target_rank target, const K& key, const V& value) {
        check_value(value);
        initiation_timer timer(*this, hash_map_op::insert_if_absent, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::insert_if_absent);
        slot_guard guard(*m_engine, slot);
        encode_keyed_value(target, m_insert_if_absent, slot, key, value);
        return request<bool>(*m_engine, guard.release(), &decode_flag);
    }
    void async_insert_if_absent(const K& key, const V& value) {
        async_insert_if_absent(target_rank{owner(key)}, key, value);
    }
    void async_insert_if_absent(target_rank target, const K& key, const V& value) {
        check_value(value);
        initiation_timer timer(*this, hash_map_op::insert_if_absent);
        encode_keyed_value(target, m_insert_if_absent, no_slot, key, value);
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
        async_reduce(target_rank{owner(key)}, key, value, op);
    }
    template <class Op = std::plus<>>
    void async_reduce(target_rank target, const K& key, const V& value, Op = {}) {
        check_reduce_op<Op>();
        check_value(value);
        initiation_timer timer(*this, hash_map_op::reduce);
        encode_reduce(target, no_slot, reducer_id<Op>, key, value);
    }

    // Replaces the key's values with the one `value` (inserting the key if new).
    void async_insert_or_assign(const K& key, const V& value) {
        async_insert_or_assign(target_rank{owner(key)}, key, value);
    }
    void async_insert_or_assign(target_rank target, const K& key, const V& value) {
        async_reduce(target, key, value, detail::replace_with_new{});
    }
    // The request form yields true if the key was new.  A refusal by the
    // owner's capacity limit fails the request (get() throws); the key is unchanged.
    request<bool> insert_or_assign(const K& key, const V& value) {
        return insert_or_assign(target_rank{owner(key)}, key, value);
    }
    request<bool> insert_or_assign(target_rank target, const K& key, const V& value) {
        check_value(value);
        initiation_timer timer(*this, hash_map_op::reduce, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::reduce);
        slot_guard guard(*m_engine, slot);
        encode_reduce(target, slot, reducer_id<detail::replace_with_new>, key, value);
        return request<bool>(*m_engine, guard.release(), &decode_flag);
    }

    // Reduces of this rank combined into a waiting record instead of being sent.
    std::uint64_t async_reduces_combined() const { return m_reduces_combined; }

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
        // Locked throughout, and the entry exists before the collective check
        // returns: another rank may send a visit the moment its own check is done.
        runtime::engine_lock lock(*m_engine);
        m_engine->check_alive("register_visitor");
        visitor_entry entry;
        entry.name = std::string(name);
        entry.function = reinterpret_cast<void (*)()>(function);
        entry.user_context = user_context;
        entry.invoke = &invoke_visitor<Arg, Result>;
        m_visitors.push_back(std::move(entry));
        try {
            // A set-up collective: it handles no message until every rank has
            // registered, so a visitor's own id is known before any visit runs.
            m_engine->check_same(static_cast<std::int64_t>(hash_bytes(name.data(), name.size()) >> 1),
                                 "visitor registration (name '" + std::string(name) + "')", /*serve=*/false);
        } catch (...) {
            m_visitors.pop_back();
            throw;
        }
        return visitor<Arg, Result>{static_cast<std::uint32_t>(m_visitors.size() - 1)};
    }

    template <class Arg, class Result>
    auto visit(const K& key, visitor<Arg, Result> which, const Arg& arg) {
        return visit(target_rank{owner(key)}, key, which, arg);
    }
    template <class Arg, class Result>
    auto visit(target_rank target, const K& key, visitor<Arg, Result> which, const Arg& arg) {
        using returned = std::conditional_t<std::is_void_v<Result>, nothing, Result>;
        initiation_timer timer(*this, hash_map_op::visit, true);
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
        initiation_timer timer(*this, hash_map_op::visit);
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
        initiation_timer timer(*this, hash_map_op::visit);
        encode_callable_visit<F>(target, no_slot, false, key, visit_argument<Args>(args)...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    void async_visit_if_contains(const K& key, F f, const Args&... args) {
        async_visit_if_contains(target_rank{owner(key)}, key, f, args...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    void async_visit_if_contains(target_rank target, const K& key, F, const Args&... args) {
        initiation_timer timer(*this, hash_map_op::visit);
        encode_callable_visit<F>(target, no_slot, true, key, visit_argument<Args>(args)...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    auto visit(const K& key, F f, const Args&... args) {
        return visit(target_rank{owner(key)}, key, f, args...);
    }
    template <class F, class... Args>
        requires(!detail::registered_visitor_handle<F>)
    auto visit(target_rank target, const K& key, F, const Args&... args) {
        using result = callable_result<F, detail::visit_argument_t<Args>...>;
        using returned = std::conditional_t<std::is_void_v<result>, nothing, result>;
        initiation_timer timer(*this, hash_map_op::visit, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(hash_map_op::visit);
        slot_guard guard(*m_engine, slot);
        encode_callable_visit<F>(target, slot, false, key, visit_argument<Args>(args)...);
        return request<returned>(*m_engine, guard.release(), &decode_visit<returned>);
    }

    // ---- bulk lookup ---------------------------------------------------------

    // Looks up every key (up to `limit` values each) and calls
    // on_result(index, values) on this rank as answers arrive, in any order.
    // Returns when all have answered.  Local: other ranks need not take part,
    // but they answer only while inside some library call (or with a progress thread).
    template <class Function>
    void find_many(std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk_lookup(m_find_many, hash_map_op::find, nullptr, keys, limit, on_result);
    }
    // The same, every key sent to `target` (explicit placement).
    template <class Function>
    void find_many(target_rank target, std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk_lookup(m_find_many, hash_map_op::find, &target, keys, limit, on_result);
    }
    // Removes and returns up to `limit` oldest values of every key, calling
    // on_result(index, values) with what was taken.  Each key is taken atomically.
    template <class Function>
    void take_many(std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk_lookup(m_take_many, hash_map_op::take, nullptr, keys, limit, on_result);
    }
    template <class Function>
    void take_many(target_rank target, std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk_lookup(m_take_many, hash_map_op::take, &target, keys, limit, on_result);
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
    std::uint64_t local_rejected() const { return m_local_rejected; }

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
        return keyed_request(target, m_count, hash_map_op::find, key, 0, &decode_count);
    }
    request<bool> contains(const K& key) { return contains(target_rank{owner(key)}, key); }
    request<bool> contains(target_rank target, const K& key) {
        return keyed_request(target, m_count, hash_map_op::find, key, 0, &decode_flag);
    }

    // Collective.  Removes every key; other ranks' operations started after
    // clear() returns on every rank are kept.
    void clear() {
        flush();
        {
            runtime::engine_lock lock(*m_engine);
            m_table = table_type(checked_expected_keys(m_config), m_config.max_load);
            m_stored_bytes = 0;
        }
        flush();  // nobody sends new operations before everyone has cleared
    }

    // Collective: gather(root), gather_all(), gather_topk(k, compare) and
    // reduce(op) come from detail::with_collectives (a key with n values gives n
    // pairs, in their order; memory: the whole map on each receiver).

    // Collective.  Total keys and values over all ranks.
    std::size_t global_size() { return global_sum(m_table.size(), "global_size"); }
    std::size_t global_value_count() { return global_sum(m_table.value_count(), "global_value_count"); }

    // ---- this rank's shard -----------------------------------------------------

    // Reads of the shard lock the engine, so a progress thread cannot change it meanwhile.
    std::size_t local_size() const {
        runtime::engine_lock lock(*m_engine);
        return m_table.size();
    }
    std::size_t local_value_count() const {
        runtime::engine_lock lock(*m_engine);
        return m_table.value_count();
    }
    std::size_t local_payload_bytes() const {
        runtime::engine_lock lock(*m_engine);
        return m_stored_bytes;
    }
    std::size_t local_memory_bytes() const {
        runtime::engine_lock lock(*m_engine);
        return m_table.memory_bytes();
    }
    std::vector<V> local_find(const K& key, std::size_t limit = unlimited) const {
        runtime::engine_lock lock(*m_engine);
        std::vector<V> out;
        m_table.find(key).copy_to(std::back_inserter(out), limit);
        return out;
    }
    bool local_contains(const K& key) const {
        runtime::engine_lock lock(*m_engine);
        return m_table.contains(key);
    }
    template <class Function>
    void local_for_each(Function&& function) const {
        runtime::engine_lock lock(*m_engine);
        m_table.for_each(function);
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
    const table_type& local_table() const { return m_table; }
    auto local_keys() const { return std::views::keys(m_table); }
    auto local_values() const { return std::views::values(m_table); }

    // ---- checkpoints (include/mpidict/checkpoint.hpp, docs/checkpoint.md) --

    // Collective.  flush(), then writes every key with its values (in their
    // order) to `directory`, replacing the checkpoint there only once all of it
    // is on disk.
    void save(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        flush();
        ck::communicator_copy comm(m_engine->mpi_communicator(), "hash_map");
        runtime::engine_lock lock(*m_engine);
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
        ck::write_entries<K, V>(comm.get(), directory, std::move(what), checkpoint_flags, totals, options,
                                [&](ck::entry_writer<K, V>& entries) {
                                    m_table.for_each([&](const K& key, const values_view& values) {
                                        entries.key(key);
                                        entries.count(values.size());
                                        for (const V& value : values)
                                            entries.value(value);
                                    });
                                });
    }

    // Collective.  Fills this map, which must be empty on every rank, from the
    // checkpoint in `directory` (saved at any number of ranks): every key goes
    // to its owner here, with its values in their saved order.  Throws
    // checkpoint_error on every rank, leaving the map empty, if the checkpoint
    // is missing, damaged or of other types, or if this map's capacity limits
    // refuse any value.
    void load(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        if (const std::size_t held = global_size(); held != 0)
            throw invalid_argument_error("mpidict: hash_map load needs an empty map; this one holds " +
                                         std::to_string(held) + " keys");
        ck::communicator_copy comm(m_engine->mpi_communicator(), "hash_map");
        ck::reader in(comm.get(), directory, ck::describe<K, V>("hash_map", checkpoint_flags, options),
                      ck::columns_for<K, V>(checkpoint_flags, {}), options);
        const std::uint64_t refused_before = m_local_rejected;
        std::string problem;  // e.g. a saved value too large for this map's messages
        try {
            runtime::engine_lock lock(*m_engine);
            const std::size_t batch_bytes = m_engine->max_record_bytes() / 4;
            std::vector<V> values;
            for (std::size_t shard = 0; shard < in.shards(); ++shard) {
                ck::entry_reader<K, V> entries(in, shard, checkpoint_flags);
                for (std::uint64_t entry = 0; entry < in.entries(shard); ++entry) {
                    const K key = entries.key();
                    const std::uint64_t count = entries.count();
                    const int target = owner(key);
                    std::size_t bytes = 0;
                    values.clear();
                    for (std::uint64_t index = 0; index < count; ++index) {
                        values.push_back(entries.value());
                        bytes += codec<V>::encoded_size(values.back());
                        if (values.size() == checkpoint_batch || bytes >= batch_bytes || index + 1 == count) {
                            restore(target, key, values);
                            values.clear();
                            bytes = 0;
                        }
                    }
                }
            }
        } catch (const std::exception& failure) {
            problem = "mpidict: checkpoint " + directory + ": loading failed: " + failure.what();
        }
        flush();
        const std::size_t refused = global_sum(m_local_rejected - refused_before, "load");
        if (problem.empty() && refused != 0)
            problem = "mpidict: checkpoint " + directory + ": this hash_map's capacity limits refused " +
                      std::to_string(refused) + " of the saved values";
        // A key saved twice (each shard's keys are distinct, and so are the shards'):
        // fewer keys than the manifest's entries.
        if (const std::size_t distinct = global_size(); problem.empty() && distinct != in.total_entries())
            problem = "mpidict: checkpoint " + directory + ": the manifest lists " +
                      std::to_string(in.total_entries()) + " keys, but only " + std::to_string(distinct) +
                      " are distinct: a key is saved more than once";
        try {
            ck::agree(comm.get(), problem);
        } catch (const checkpoint_error& failure) {
            runtime::engine_lock lock(*m_engine);
            m_table = table_type(checked_expected_keys(m_config), m_config.max_load);
            m_stored_bytes = 0;
            throw checkpoint_error(std::string(failure.what()) + "; the map is left empty");
        }
    }

    static constexpr std::size_t unlimited = std::numeric_limits<std::uint32_t>::max();

private:
    using wire = detail::hash_map_wire;
    template <class Record>
    static constexpr std::size_t header_bytes = detail::wire_bytes<Record>;
    static constexpr std::uint32_t no_slot = std::numeric_limits<std::uint32_t>::max();

    struct visitor_entry {
        std::string name;
        void (*function)() = nullptr;
        void* user_context = nullptr;
        // Decodes the argument, runs the visitor, writes the values back and
        // replies (request form).  If the visitor throws (or its result cannot be
        // replied), changes nothing, sends nothing and returns false with the
        // reason in `failure`.
        bool (*invoke)(hash_map& self, int source, std::uint32_t slot, const visitor_entry& entry, const K& key,
                       byte_reader& reader, std::string& failure) = nullptr;
    };

    // Times request-form starts always.  Fire-and-forget starts are cheaper than
    // a clock read, so one in 16 is timed and scaled, minus the time it spent
    // shipping a full buffer; the engine times every such shipment itself and
    // that time is added unscaled, so rare slow calls are neither missed nor
    // multiplied.
    class initiation_timer {
    public:
        initiation_timer(hash_map& self, runtime::op_kind kind, bool always = false)
            : m_lock(*self.m_engine), m_self(self), m_kind(kind) {
            self.m_engine->check_alive(self.m_engine->op_kind_name(kind).data());
            ++self.m_engine->stats()[kind].operations;
            if (always) {
                m_weight = 1;
            } else if (++self.m_sample_counter == runtime::initiation_sample_period) {
                self.m_sample_counter = 0;
                m_weight = runtime::initiation_sample_period;
            }
            m_ship_start = self.m_engine->ship_seconds();
            if (m_weight != 0)
                m_start = runtime::now_seconds();
        }
        ~initiation_timer() {
            auto& engine = *m_self.m_engine;
            const double shipping = engine.ship_seconds() - m_ship_start;
            double seconds = shipping;
            if (m_weight != 0)
                seconds += std::max(0.0, runtime::now_seconds() - m_start - shipping) * m_weight;
            engine.stats()[m_kind].initiation_seconds += seconds;
        }

    private:
        runtime::engine_lock m_lock;
        hash_map& m_self;
        runtime::op_kind m_kind;
        std::uint32_t m_weight = 0;
        double m_start = 0;
        double m_ship_start = 0;
    };

    // expected_keys_per_rank, refused (the same on every rank: the same settings)
    // when the local table could not address room for that many keys.
    static constexpr detail::checkpoint::layout_flags checkpoint_flags{true, true, false};
    static constexpr std::size_t checkpoint_batch = 256;  // values per record when loading

    // One key's values (a piece of them) from a checkpoint, to their owner:
    // stored directly when that is this rank, else as an async insert.
    void restore(int target, const K& key, std::span<const V> values) {
        if (target == rank()) {
            for (const V& value : values)
                store_value(key, value);
        } else {
            encode_insert(target_rank{target}, no_slot, key, values);
        }
    }

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

    // Gives a request slot back if encoding its operation throws (nothing was sent).
    class slot_guard {
    public:
        slot_guard(runtime::engine& owner, std::uint32_t slot) : m_engine(owner), m_slot(slot) {}
        ~slot_guard() {
            if (m_armed)
                m_engine.cancel_request(m_slot);
        }
        std::uint32_t release() {
            m_armed = false;
            return m_slot;
        }

    private:
        runtime::engine& m_engine;
        std::uint32_t m_slot;
        bool m_armed = true;
    };

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
        if (target.rank < 0 || target.rank >= num_ranks())
            throw invalid_argument_error("mpidict: target rank " + std::to_string(target.rank) +
                                         " is outside " + detail::communicator_of(num_ranks()));
    }

    std::byte* reserve(target_rank target, runtime::handler_id handler, std::size_t bytes) {
        check_target(target);
        return m_engine->reserve(target.rank, handler, bytes);
    }

    void encode_insert(target_rank target, std::uint32_t slot, const K& key, std::span<const V> values) {
        if (values.size() > std::numeric_limits<std::uint32_t>::max() - 1)
            throw invalid_argument_error("mpidict: at most 4294967294 values per insert");
        forget_pending_reduce(key);
        std::size_t bytes = header_bytes<wire::insert_header> + codec<K>::encoded_size(key);
        for (const V& value : values)
            bytes += codec<V>::encoded_size(value);
        detail::byte_writer out(reserve(target, m_insert, bytes), bytes);
        out.record(wire::insert_header{slot, static_cast<std::uint32_t>(values.size())}).encode(key);
        for (const V& value : values)
            out.encode(value);
        out.finish();
    }

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

    // ---- callable visitors ----

    using callable_visitor_function = bool (*)(hash_map& self, int source, std::uint32_t slot, bool if_contains,
                                               const K& key, byte_reader& reader, std::string& failure);
    using callable_visitors = detail::callable_registry<callable_visitor_function>;

    template <class T>
    static decltype(auto) visit_argument(const T& argument) {
        if constexpr (std::is_same_v<detail::visit_argument_t<T>, std::decay_t<T>>)
            return (argument);
        else
            return std::string(argument);
    }

    struct not_a_visitor {};
    template <class F, class... A>
    static auto callable_result_probe() {
        if constexpr (std::is_invocable_v<const F&, visit_context&, const K&, values_ref&, const A&...>)
            return std::type_identity<std::invoke_result_t<const F&, visit_context&, const K&, values_ref&, const A&...>>{};
        else if constexpr (std::is_invocable_v<const F&, const K&, values_ref&, const A&...>)
            return std::type_identity<std::invoke_result_t<const F&, const K&, values_ref&, const A&...>>{};
        else
            return std::type_identity<not_a_visitor>{};
    }
    template <class F, class... A>
    using callable_result = typename decltype(callable_result_probe<F, A...>())::type;

    template <class F, class... A>
    static constexpr void check_callable_visitor() {
        static_assert(std::is_empty_v<F> && std::is_default_constructible_v<F>,
                      "async_visit: the visitor must be stateless (a lambda without captures or an empty function "
                      "object): it runs at the key's owner, where only its type is known; pass state as arguments.");
        static_assert(!std::is_same_v<callable_result<F, A...>, not_a_visitor>,
                      "async_visit: the visitor must be callable as f(const K& key, values_ref& values, args...) or "
                      "f(visit_context& ctx, const K& key, values_ref& values, args...).");
        static_assert((encodable<A> && ...),
                      "async_visit: visitor arguments must be trivially copyable or byte strings.");
        static_assert(std::is_void_v<callable_result<F, A...>> || encodable<callable_result<F, A...>>,
                      "visit: the visitor's result must be void, trivially copyable or a byte string.");
    }

    template <class F, class... A>
    void encode_callable_visit(target_rank target, std::uint32_t slot, bool if_contains, const K& key,
                               const A&... args) {
        check_callable_visitor<F, A...>();
        forget_pending_reduce(key);
        const std::uint32_t id = callable_visitor_id<F, A...>;
        const std::size_t bytes = header_bytes<wire::callable_visit_header> + codec<K>::encoded_size(key) +
                                  (std::size_t{0} + ... + codec<A>::encoded_size(args));
        detail::byte_writer out(reserve(target, m_visit_callable, bytes), bytes);
        out.record(wire::callable_visit_header{slot, id, if_contains ? 1u : 0u}).encode(key);
        (out.encode(args), ...);
        out.finish();
    }

    // ---- collectives (detail/collectives.hpp) ----

    friend class detail::with_collectives<hash_map, K, V>;
    // A walk over every (key, value) pair of the shard, for the collectives.
    auto each_pair() const {
        return [this](auto&& emit) {
            m_table.for_each([&](const K& key, const values_view& values) {
                for (const V& value : values)
                    emit(key, value);
            });
        };
    }

    static void handle_count(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                             std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto slot = detail::read_record<wire::keyed_header>(reader).slot;
            const K key = codec<K>::decode(reader);
            const std::size_t n = self.m_table.find(key).size();
            if (slot != no_slot)
                self.m_engine->reserve_reply(source, slot, static_cast<std::uint32_t>(std::min<std::size_t>(n, no_slot - 1)), 0);
        }
    }

    // ---- reduce ----

    using reduce_function = void (*)(V& accumulated, const V& incoming);
    using reducers = detail::callable_registry<reduce_function>;
    template <class Op>
    static void apply_reduce(V& accumulated, const V& incoming) {
        accumulated = Op{}(static_cast<const V&>(accumulated), incoming);
    }
    // The operator's number, the same on every rank (see callable_registry.hpp).
    template <class Op>
    static inline const std::uint32_t reducer_id = reducers::add(detail::type_name<Op>(), &apply_reduce<Op>);

    template <class Op>
    static constexpr void check_reduce_op() {
        static_assert(std::is_empty_v<Op> && std::is_default_constructible_v<Op>,
                      "async_reduce: the operator must be stateless (a lambda without captures, std::plus<>, "
                      "or an empty struct): it runs at the key's owner, where only its type is known.");
        static_assert(std::is_invocable_r_v<V, const Op&, const V&, const V&>,
                      "async_reduce: the operator must be callable as V(const V&, const V&).");
    }

    // A reduce waiting unsent in an outbox, for combining later reduces of the
    // same key into it (fixed-size keys and values only).  Direct-mapped by the
    // key's hash; valid while the outbox's generation is unchanged.
    struct pending_reduce {
        K key{};
        int destination = -1;  // -1: empty
        std::uint32_t op = 0;
        std::uint64_t generation = 0;
        std::byte* value = nullptr;  // the record's value bytes
    };
    static constexpr std::size_t pending_reduce_slots = 4096;
    static constexpr bool combinable = codec<K>::fixed_size && codec<V>::fixed_size;

    void encode_reduce(target_rank target, std::uint32_t slot, std::uint32_t op, const K& key, const V& value) {
        constexpr std::size_t header = header_bytes<wire::reduce_header>;
        check_target(target);  // before the outbox of target.rank is looked at
        if constexpr (combinable) {
            if (slot == no_slot) {
                if (m_pending_reduces.empty())
                    m_pending_reduces.resize(pending_reduce_slots);
                pending_reduce& waiting = m_pending_reduces[m_hash(key) & (pending_reduce_slots - 1)];
                if (waiting.destination == target.rank && waiting.op == op &&
                    waiting.generation == m_engine->outbox_generation(target.rank) && waiting.key == key) {
                    V combined;
                    std::memcpy(&combined, waiting.value, sizeof(V));
                    reducers::entries()[op].entry(combined, value);
                    std::memcpy(waiting.value, &combined, sizeof(V));
                    ++m_reduces_combined;
                    return;
                }
                std::byte* out = reserve(target, m_reduce, header + sizeof(K) + sizeof(V));
                detail::overwrite_record(out, wire::reduce_header{no_slot, op});
                std::memcpy(out + header, &key, sizeof(K));
                std::memcpy(out + header + sizeof(K), &value, sizeof(V));
                waiting = pending_reduce{key, target.rank, op, m_engine->outbox_generation(target.rank),
                                         out + header + sizeof(K)};
                return;
            }
        }
        forget_pending_reduce(key);
        const std::size_t bytes = header + codec<K>::encoded_size(key) + codec<V>::encoded_size(value);
        detail::byte_writer(reserve(target, m_reduce, bytes), bytes)
            .record(wire::reduce_header{slot, op})
            .encode(key)
            .encode(value)
            .finish();
    }

    // Any other operation on `key` from this rank must not be overtaken by a
    // later reduce combined into an earlier record: forget that record.
    void forget_pending_reduce(const K& key) {
        if constexpr (combinable) {
            if (!m_pending_reduces.empty()) [[unlikely]] {
                pending_reduce& waiting = m_pending_reduces[m_hash(key) & (pending_reduce_slots - 1)];
                if (waiting.destination >= 0 && waiting.key == key)
                    waiting.destination = -1;
            }
        }
        (void)key;
    }

    template <class Arg>
    void encode_visit(target_rank target, std::uint32_t slot, const K& key, std::uint32_t which, const Arg& arg) {
        if (which >= m_visitors.size())
            throw invalid_argument_error("mpidict: unknown visitor " + std::to_string(which));
        forget_pending_reduce(key);
        const std::size_t bytes =
            header_bytes<wire::visit_header> + codec<K>::encoded_size(key) + codec<Arg>::encoded_size(arg);
        detail::byte_writer(reserve(target, m_visit, bytes), bytes)
            .record(wire::visit_header{slot, which})
            .encode(key)
            .encode(arg)
            .finish();
    }

    // The request form of every {slot, limit} key record: find, take, erase, count, contains.
    template <class T>
    request<T> keyed_request(target_rank target, runtime::handler_id handler, runtime::op_kind kind, const K& key,
                             std::size_t limit, T (*decode)(std::uint32_t, byte_reader&, const void*)) {
        initiation_timer timer(*this, kind, true);
        check_target(target);
        const std::uint32_t slot = m_engine->open_request(kind);
        slot_guard guard(*m_engine, slot);
        const auto clamped = static_cast<std::uint32_t>(std::min<std::size_t>(limit, unlimited));
        encode_keyed(target, handler, slot, key, clamped);
        return request<T>(*m_engine, guard.release(), decode);
    }

    template <class Function>
    void bulk_lookup(runtime::handler_id handler, runtime::op_kind kind_id, const target_rank* target,
                     std::span<const K> keys, std::size_t limit, Function& on_result) {
        runtime::engine_lock lock(*m_engine);
        m_engine->check_alive(m_engine->op_kind_name(kind_id).data());
        if (m_engine->in_handler())
            throw error("mpidict: find_many/take_many cannot be called from inside a visitor");
        if (m_batch_pending != 0)
            throw error("mpidict: find_many/take_many called while another one is running");
        if (keys.size() > std::numeric_limits<std::uint32_t>::max())
            throw invalid_argument_error("mpidict: find_many/take_many take at most 4294967295 keys per call");
        if (target)
            check_target(*target);
        const double start = runtime::now_seconds();
        m_batch_callback = [&](std::size_t index, std::span<const V> values) { on_result(index, values); };
        ++m_batch_id;
        m_batch_pending = keys.size();
        m_batch_error.clear();
        const auto clamped = static_cast<std::uint32_t>(std::min<std::size_t>(limit, unlimited));
        struct reset {
            hash_map& self;
            ~reset() {
                self.m_batch_callback = nullptr;
                self.m_batch_pending = 0;
            }
        } guard{*this};
        for (std::size_t index = 0; index < keys.size(); ++index) {
            const K& key = keys[index];
            const int destination = target ? target->rank : owner(key);
            forget_pending_reduce(key);
            const std::size_t bytes = header_bytes<wire::many_header> + codec<K>::encoded_size(key);
            detail::byte_writer(m_engine->reserve(destination, handler, bytes), bytes)
                .record(wire::many_header{m_batch_id, static_cast<std::uint32_t>(index), clamped})
                .encode(key)
                .finish();
        }
        auto& kind = m_engine->stats()[kind_id];
        kind.operations += keys.size();
        kind.initiation_seconds += runtime::now_seconds() - start;
        const double wait_start = runtime::now_seconds();
        m_engine->wait_until([this] { return m_batch_pending == 0; });
        kind.completion_seconds += runtime::now_seconds() - wait_start;
        if (!m_batch_error.empty()) {
            std::string message;
            message.swap(m_batch_error);
            throw invalid_argument_error(message);
        }
    }

    // ---- decoders (caller side) ----

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

    // ---- owner side ----

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

    void account_removed(const K& key, std::size_t value_bytes, bool key_removed) {
        m_stored_bytes -= std::min(m_stored_bytes, value_bytes + (key_removed ? codec<K>::payload_bytes(key) : 0));
    }

    void notify_rejected(int source, std::uint32_t rejected) {
        if (rejected == 0)
            return;
        detail::overwrite_record(m_engine->reserve(source, m_rejected, header_bytes<wire::count_record>),
                                 wire::count_record{rejected});
    }

    void notify_visit_failed(int source, std::uint32_t failures, std::string_view message) {
        if (failures == 0)
            return;
        constexpr std::size_t header = header_bytes<wire::count_record>;
        message = message.substr(0, std::min(message.size(), m_engine->max_record_bytes() - header));
        const std::size_t bytes = header + message.size();
        detail::byte_writer(m_engine->reserve(source, m_visit_failed, bytes), bytes)
            .record(wire::count_record{failures})
            .put_bytes(message)
            .finish();
    }

    void register_handlers() {
        for (const std::string_view name : hash_map_op::names)
            m_engine->register_op_kind(name);
        m_insert_one = m_engine->register_handler("hash_map.insert_one", &handle_insert_one, this);
        m_insert = m_engine->register_handler("hash_map.insert", &handle_insert, this);
        m_find = m_engine->register_handler("hash_map.find", &handle_find, this);
        m_take = m_engine->register_handler("hash_map.take", &handle_take, this);
        m_erase = m_engine->register_handler("hash_map.erase", &handle_erase, this);
        m_insert_if_absent = m_engine->register_handler("hash_map.insert_if_absent", &handle_insert_if_absent, this);
        m_visit = m_engine->register_handler("hash_map.visit", &handle_visit, this);
        m_find_many = m_engine->register_handler("hash_map.find_many", &handle_find_many, this);
        m_find_many_reply = m_engine->register_handler("hash_map.find_many_reply", &handle_find_many_reply, this);
        m_take_many = m_engine->register_handler("hash_map.take_many", &handle_take_many, this);
        m_rejected = m_engine->register_handler("hash_map.rejected", &handle_rejected, this);
        m_visit_failed = m_engine->register_handler("hash_map.visit_failed", &handle_visit_failed, this);
        m_reduce = m_engine->register_handler("hash_map.reduce", &handle_reduce, this);
        m_visit_callable = m_engine->register_handler("hash_map.visit_callable", &handle_visit_callable, this);
        m_count = m_engine->register_handler("hash_map.count", &handle_count, this);
        m_find_from = m_engine->register_handler("hash_map.find_from", &handle_find_from, this);
    }

    static void handle_insert_one(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                                  std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        if constexpr (codec<K>::fixed_size && codec<V>::fixed_size) {
            if (record_bytes != sizeof(K) + sizeof(V))
                throw decode_error("mpidict: hash_map insert record of " + std::to_string(record_bytes) +
                                   " bytes, expected " + std::to_string(sizeof(K) + sizeof(V)));
            if (self.m_config.capacity_values == 0 && self.m_config.capacity_bytes == 0) {
                // The bulk path: hash each key once, prefetch its slot a few
                // records ahead so the table's cache misses overlap.
                constexpr std::uint32_t lookahead = prefetch_lookahead;
                std::uint64_t hashes[lookahead];
                const std::uint32_t primed = std::min(count, lookahead);
                for (std::uint32_t index = 0; index < primed; ++index) {
                    K key;
                    std::memcpy(&key, records + std::size_t{index} * record_bytes, sizeof(K));
                    hashes[index] = self.m_table.hash_of(key);
                    self.m_table.prefetch_hashed(hashes[index]);
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
                        hashes[index % lookahead] = self.m_table.hash_of(ahead);
                        self.m_table.prefetch_hashed(hashes[index % lookahead]);
                    }
                    if (self.m_table.append_hashed(key, hash, value))
                        self.m_stored_bytes += sizeof(K);
                }
                self.m_stored_bytes += std::size_t{count} * sizeof(V);
                return;
            }
            std::uint32_t rejected = 0;
            for (std::uint32_t index = 0; index < count; ++index) {
                K key;
                V value;
                std::memcpy(&key, records + std::size_t{index} * record_bytes, sizeof(K));
                std::memcpy(&value, records + std::size_t{index} * record_bytes + sizeof(K), sizeof(V));
                if (!self.store_value(key, value))
                    ++rejected;
            }
            self.notify_rejected(source, rejected);
        } else {
            (void)source, (void)records, (void)record_bytes, (void)count;
            throw decode_error("mpidict: fixed-size insert record sent to a map with variable-size keys or values");
        }
    }

    static void handle_insert(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                              std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto [slot, n] = detail::read_record<wire::insert_header>(reader);
            const K key = codec<K>::decode(reader);
            std::uint32_t stored = 0;
            bool full = false;
            for (std::uint32_t value_index = 0; value_index < n; ++value_index) {
                const V value = codec<V>::decode(reader);
                if (!full && self.store_value(key, value))
                    ++stored;
                else
                    full = true;
            }
            if (full)  // store_value counted the first refusal; count the values skipped after it
                self.m_local_rejected += (n - stored) - 1;
            if (slot != no_slot) {
                detail::overwrite_record(
                    self.m_engine->reserve_reply(source, slot, stored, header_bytes<wire::count_record>),
                    wire::count_record{n});
            } else {
                self.notify_rejected(source, n - stored);
            }
        }
    }

    static void handle_reduce(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                              std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        const auto& operators = reducers::entries();
        std::uint32_t rejected = 0;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto [slot, op] = detail::read_record<wire::reduce_header>(reader);
            if (op >= operators.size())
                throw decode_error("mpidict: reduce names operator " + std::to_string(op) + " but this rank has " +
                                   std::to_string(operators.size()));
            const K key = codec<K>::decode(reader);
            const V value = codec<V>::decode(reader);
            const std::size_t before = self.reduce_value(key, value, operators[op].entry);
            if (slot == no_slot) {
                rejected += before == refused ? 1 : 0;
            } else if (before == refused) {
                self.m_engine->reply_error(source, slot, self.full_message("insert_or_assign"));
            } else {
                self.m_engine->reserve_reply(source, slot, before == 0 ? 1 : 0, 0);
            }
        }
        self.notify_rejected(source, rejected);
    }

    static constexpr std::size_t refused = std::numeric_limits<std::size_t>::max();

    // The owner's half of a reduce: how many values the key had before (0: it
    // was new), or `refused` (capacity; the key is unchanged, counted in local_rejected()).
    std::size_t reduce_value(const K& key, const V& value, reduce_function fold) {
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

    std::string full_message(const char* operation) const {
        return "mpidict: rank " + std::to_string(rank()) + " is at its capacity limit (capacity_values = " +
               std::to_string(m_config.capacity_values) + ", capacity_bytes = " +
               std::to_string(m_config.capacity_bytes) + "): " + operation + " refused, the key is unchanged";
    }

    static void handle_find(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                            std::uint32_t count) {
        static_cast<hash_map*>(context)->answer_keyed(false, source, records, record_bytes, count);
    }
    static void handle_take(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                            std::uint32_t count) {
        static_cast<hash_map*>(context)->answer_keyed(true, source, records, record_bytes, count);
    }
    static void handle_find_from(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                                 std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        const std::size_t room = self.m_engine->max_record_bytes() - runtime::reply_header_bytes;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto header = detail::read_record<wire::find_from_header>(reader);
            const std::uint32_t slot = header.slot;
            const K key = codec<K>::decode(reader);
            self.answer(
                key, header.limit, false, room,
                [&](std::size_t n, std::size_t bytes) {
                    return self.m_engine->reserve_reply(source, slot, static_cast<std::uint32_t>(n), bytes);
                },
                [&](const std::string& message) { self.m_engine->reply_error(source, slot, message); }, header.offset);
        }
    }

    // find and take: the answer is the engine's reply to the caller's request.
    void answer_keyed(bool take, int source, const std::byte* records, std::uint32_t record_bytes,
                      std::uint32_t count) {
        const std::size_t room = m_engine->max_record_bytes() - runtime::reply_header_bytes;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            // A named record, not a structured binding: lambdas capture it
            // (capturing bindings needs clang 16).
            const auto header = detail::read_record<wire::keyed_header>(reader);
            const std::uint32_t slot = header.slot;
            const K key = codec<K>::decode(reader);
            answer(
                key, header.limit, take, room,
                [&](std::size_t n, std::size_t bytes) {
                    // reserve_reply never runs handlers inside a handler, so what
                    // answer() found stays intact while it encodes.
                    return m_engine->reserve_reply(source, slot, static_cast<std::uint32_t>(n), bytes);
                },
                [&](const std::string& message) {
                    if (slot == no_slot)
                        throw invalid_argument_error(message);
                    m_engine->reply_error(source, slot, message);
                });
        }
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
            refuse(too_large_message(rank(), bytes, room));
            return;
        }
        detail::byte_writer out(reserve(n, bytes), bytes);
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

    static void handle_erase(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                             std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto slot = detail::read_record<wire::keyed_header>(reader).slot;  // erase has no limit
            const K key = codec<K>::decode(reader);
            std::size_t payload = 0;
            const std::size_t removed = self.m_table.take(key, unlimited_take, [&](V&& value) {
                payload += codec<V>::payload_bytes(value);
            });
            self.account_removed(key, payload, removed > 0);
            if (slot != no_slot)
                self.m_engine->reserve_reply(source, slot, static_cast<std::uint32_t>(std::min<std::size_t>(removed, no_slot)), 0);
        }
    }

    static void handle_insert_if_absent(void* context, int source, const std::byte* records,
                                        std::uint32_t record_bytes, std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        std::uint32_t rejected = 0;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto slot = detail::read_record<wire::keyed_value_header>(reader).slot;
            const K key = codec<K>::decode(reader);
            const V value = codec<V>::decode(reader);
            bool inserted = false;
            if (!self.m_table.contains(key)) {
                if (self.store_value(key, value))
                    inserted = true;
                else if (slot == no_slot)
                    ++rejected;
            }
            if (slot != no_slot)
                self.m_engine->reserve_reply(source, slot, inserted ? 1 : 0, 0);
        }
        self.notify_rejected(source, rejected);
    }

    static void handle_visit(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                             std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        // Failed async visits of this group: reported to `source` in one notice.
        std::uint32_t async_failures = 0;
        std::string first_failure;
        std::string failure;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto [slot, which] = detail::read_record<wire::visit_header>(reader);
            const K key = codec<K>::decode(reader);
            if (which >= self.m_visitors.size())
                throw decode_error("mpidict: visit names visitor " + std::to_string(which) + " but this rank has " +
                                   std::to_string(self.m_visitors.size()));
            const visitor_entry& entry = self.m_visitors[which];
            failure.clear();
            if (entry.invoke(self, source, slot, entry, key, reader, failure))
                continue;
            if (slot != no_slot) {
                self.m_engine->reply_error(source, slot, failure);
            } else {
                ++async_failures;
                if (first_failure.empty())
                    first_failure = failure;
            }
        }
        self.notify_visit_failed(source, async_failures, first_failure);
    }

    // What a caller sees when visitor `entry` threw `what` at this rank.
    std::string visitor_threw_message(const visitor_entry& entry, int source, std::string_view what) const {
        std::string message = "mpidict: visitor '" + entry.name + "' threw at rank " + std::to_string(rank()) +
                              " (the key's owner, visited from rank " + std::to_string(source) + "): ";
        message += what;
        message += "; the visit was not applied (the key's values are unchanged)";
        return message;
    }

    template <class Arg, class Result>
    static bool invoke_visitor(hash_map& self, int source, std::uint32_t slot, const visitor_entry& entry,
                               const K& key, byte_reader& reader, std::string& failure) {
        const Arg arg = codec<Arg>::decode(reader);
        std::vector<V> values;
        const values_view current = self.m_table.find(key);
        values.reserve(current.size());
        current.copy_to(std::back_inserter(values), current.size());
        const std::size_t before = values.size();
        auto function = reinterpret_cast<Result (*)(visit_context&, const K&, std::vector<V>&, const Arg&)>(entry.function);
        visit_context ctx{self, source, entry.user_context};
        auto write_back = [&] {
            // Replace the values, honouring the capacity for what the visitor added.
            std::size_t payload = 0;
            self.m_table.take(key, unlimited_take, [&](V&& value) { payload += codec<V>::payload_bytes(value); });
            self.account_removed(key, payload, before > 0);
            std::uint32_t rejected = 0;
            for (const V& value : values)
                if (!self.store_value(key, value))
                    ++rejected;
            if (slot == no_slot)
                self.notify_rejected(source, rejected);
        };
        // The visitor is user code: whatever it throws is this visit's failure,
        // reported to the caller, never the owner's (the table is untouched so far).
        using stored_result = std::conditional_t<std::is_void_v<Result>, nothing, Result>;
        std::optional<stored_result> result;
        try {
            if constexpr (std::is_void_v<Result>) {
                function(ctx, key, values, arg);
                result.emplace();
            } else {
                result.emplace(function(ctx, key, values, arg));
            }
        } catch (const std::exception& problem) {
            failure = self.visitor_threw_message(entry, source, problem.what());
            return false;
        } catch (...) {
            failure = self.visitor_threw_message(entry, source, "an exception not derived from std::exception");
            return false;
        }
        if constexpr (std::is_void_v<Result>) {
            write_back();
            if (slot != no_slot)
                self.m_engine->reserve_reply(source, slot, 1, 0);
        } else {
            const std::size_t bytes = codec<Result>::encoded_size(*result);
            const std::size_t room = self.m_engine->max_record_bytes() - runtime::reply_header_bytes;
            if (slot != no_slot && bytes > room) {
                // Checked before the write-back: a visit whose answer is lost changes nothing.
                failure = "mpidict: the result of visitor '" + entry.name + "' at rank " +
                          std::to_string(self.rank()) + " needs " + std::to_string(bytes) +
                          " bytes but one message holds " + std::to_string(room) +
                          "; the visit was not applied (return less or raise buffer_bytes)";
                return false;
            }
            write_back();
            if (slot != no_slot) {
                std::byte* out = self.m_engine->reserve_reply(source, slot, 1, bytes);
                codec<Result>::encode(out, *result);
            }
        }
        return true;
    }

    static void handle_visit_callable(void* context, int source, const std::byte* records,
                                      std::uint32_t record_bytes, std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        const auto& visitors = callable_visitors::entries();
        std::uint32_t async_failures = 0;
        std::string first_failure;
        std::string failure;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto header = detail::read_record<wire::callable_visit_header>(reader);
            if (header.visitor >= visitors.size())
                throw decode_error("mpidict: visit names callable visitor " + std::to_string(header.visitor) +
                                   " but this rank has " + std::to_string(visitors.size()));
            const K key = codec<K>::decode(reader);
            failure.clear();
            if (visitors[header.visitor].entry(self, source, header.slot, header.if_contains != 0, key, reader, failure))
                continue;
            if (header.slot != no_slot) {
                self.m_engine->reply_error(source, header.slot, failure);
            } else {
                ++async_failures;
                if (first_failure.empty())
                    first_failure = failure;
            }
        }
        self.notify_visit_failed(source, async_failures, first_failure);
    }

    // Payload bytes of a key's values (byte strings: their lengths).
    std::size_t payload_of(const K& key) const {
        std::size_t bytes = 0;
        for (const V& value : m_table.find(key))
            bytes += codec<V>::payload_bytes(value);
        return bytes;
    }

    void remove_key(const K& key) {
        std::size_t payload = 0;
        const std::size_t removed = m_table.take(key, unlimited_take, [&](V&& value) {
            payload += codec<V>::payload_bytes(value);
        });
        account_removed(key, payload, removed > 0);
    }

    template <class F, class... A>
    static bool invoke_callable(hash_map& self, int source, std::uint32_t slot, bool if_contains, const K& key,
                                byte_reader& reader, std::string& failure) {
        const std::tuple<A...> args{codec<A>::decode(reader)...};  // braced: decoded in order
        const bool present = self.m_table.contains(key);
        if (if_contains && !present) {
            if (slot != no_slot)
                self.m_engine->reply_error(source, slot, "mpidict: visit_if_contains: the key is absent");
            return true;
        }
        // Byte-string values changed in place change the payload: recount this key.
        const std::size_t stored_before = self.m_stored_bytes;
        const std::size_t payload_before = codec<V>::fixed_size ? 0 : self.payload_of(key);
        auto settle = [&] {
            if constexpr (!codec<V>::fixed_size) {
                const bool now = self.m_table.contains(key);
                std::size_t total = stored_before - std::min(stored_before, payload_before) + self.payload_of(key);
                if (now != present)
                    total = now ? total + codec<K>::payload_bytes(key)
                                : total - std::min(total, codec<K>::payload_bytes(key));
                self.m_stored_bytes = total;
            }
        };
        values_ref values(self, key);
        visit_context ctx{self, source, nullptr};
        using R = callable_result<F, A...>;
        using stored_result = std::conditional_t<std::is_void_v<R>, nothing, R>;
        std::optional<stored_result> result;
        auto call = [&]() -> R {
            return std::apply(
                [&](const A&... a) -> R {
                    if constexpr (std::is_invocable_v<const F&, visit_context&, const K&, values_ref&, const A&...>)
                        return F{}(ctx, key, values, a...);
                    else
                        return F{}(key, values, a...);
                },
                args);
        };
        auto threw = [&](std::string_view what) {
            settle();
            failure = "mpidict: " + callable_name<F>() + " threw at rank " + std::to_string(self.rank()) +
                      " (the key's owner, visited from rank " + std::to_string(source) + "): " + std::string(what) +
                      "; changes it made before throwing stay";
            return false;
        };
        try {
            if constexpr (std::is_void_v<R>) {
                call();
                result.emplace();
            } else {
                result.emplace(call());
            }
        } catch (const std::exception& problem) {
            return threw(problem.what());
        } catch (...) {
            return threw("an exception not derived from std::exception");
        }
        settle();
        if (slot == no_slot) {
            self.notify_rejected(source, values.m_refused);
            return true;
        }
        if constexpr (std::is_void_v<R>) {
            self.m_engine->reserve_reply(source, slot, 1, 0);
        } else {
            const std::size_t bytes = codec<R>::encoded_size(*result);
            const std::size_t room = self.m_engine->max_record_bytes() - runtime::reply_header_bytes;
            if (bytes > room) {
                failure = "mpidict: the result of " + callable_name<F>() + " at rank " + std::to_string(self.rank()) +
                          " needs " + std::to_string(bytes) + " bytes but one message holds " +
                          std::to_string(room) + "; the visit's changes stay (return less or raise buffer_bytes)";
                return false;
            }
            codec<R>::encode(self.m_engine->reserve_reply(source, slot, 1, bytes), *result);
        }
        return true;
    }

    // The callable's number with these argument types, the same on every rank.
    template <class F, class... A>
    static inline const std::uint32_t callable_visitor_id =
        callable_visitors::add(detail::type_name<detail::type_list<F, A...>>(), &invoke_callable<F, A...>);

    template <class F>
    static std::string callable_name() {
        return "visitor " + detail::demangle(std::string(detail::type_name<F>()));
    }

    static void handle_find_many(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                                 std::uint32_t count) {
        static_cast<hash_map*>(context)->answer_many(false, source, records, record_bytes, count);
    }
    static void handle_take_many(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                                 std::uint32_t count) {
        static_cast<hash_map*>(context)->answer_many(true, source, records, record_bytes, count);
    }

    // find_many and take_many: each answer is a find_many_reply record.
    void answer_many(bool take, int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        constexpr std::size_t header = header_bytes<wire::many_reply_header>;
        const std::size_t room = m_engine->max_record_bytes() - header;
        // Prefetch the slots of the next few keys so the table's cache misses overlap.
        constexpr std::uint32_t lookahead = prefetch_lookahead;
        constexpr std::size_t key_offset = header_bytes<wire::many_header>;
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
            const auto request = detail::read_record<wire::many_header>(reader);
            const std::uint32_t batch = request.batch;
            const std::uint32_t key_index = request.index;
            const K key = codec<K>::decode(reader);
            answer(
                key, request.limit, take, room,
                [&](std::size_t n, std::size_t bytes) {
                    std::byte* out = m_engine->reserve(source, m_find_many_reply, header + bytes);
                    detail::overwrite_record(out, wire::many_reply_header{batch, key_index, static_cast<std::uint32_t>(n)});
                    return out + header;
                },
                [&](std::string message) {
                    // A failure marker and the reason; find_many throws it at the caller.
                    message.resize(std::min(message.size(), room));
                    detail::byte_writer(m_engine->reserve(source, m_find_many_reply, header + message.size()),
                                        header + message.size())
                        .record(wire::many_reply_header{batch, key_index, runtime::engine::error_count})
                        .put_bytes(message)
                        .finish();
                });
        }
    }

    static void handle_find_many_reply(void* context, int source, const std::byte* records,
                                       std::uint32_t record_bytes, std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        std::vector<V>& scratch = self.m_scratch;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto [batch, key_index, n] = detail::read_record<wire::many_reply_header>(reader);
            if (batch != self.m_batch_id || self.m_batch_pending == 0 || !self.m_batch_callback) {
                // The answer to a batch abandoned by an exception: drop it.
                (void)source;
                continue;
            }
            if (n == runtime::engine::error_count) {
                if (self.m_batch_error.empty())
                    self.m_batch_error.assign(reinterpret_cast<const char*>(reader.position()), reader.remaining());
                --self.m_batch_pending;
                continue;
            }
            scratch.clear();
            for (std::uint32_t i = 0; i < n; ++i)
                scratch.push_back(codec<V>::decode(reader));
            self.m_batch_callback(key_index, std::span<const V>(scratch));
            --self.m_batch_pending;
        }
    }

    // A notice {u32 failures, first message} from an owner whose visitor threw
    // running async_visits this rank started.
    static void handle_visit_failed(void* context, int, const std::byte* records, std::uint32_t record_bytes,
                                    std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        constexpr std::size_t header = header_bytes<wire::count_record>;
        if (record_bytes < header)
            throw decode_error("mpidict: malformed visitor failure notice");
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            self.m_async_visit_errors += detail::read_record<wire::count_record>(records, record_bytes).count;
            if (self.m_async_visit_error_message.empty())
                self.m_async_visit_error_message.assign(reinterpret_cast<const char*>(records + header),
                                                        record_bytes - header);
        }
    }

    static void handle_rejected(void* context, int, const std::byte* records, std::uint32_t record_bytes,
                                std::uint32_t count) {
        auto& self = *static_cast<hash_map*>(context);
        if (record_bytes != header_bytes<wire::count_record>)
            throw decode_error("mpidict: malformed rejection notice");
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
            self.m_async_rejected += detail::read_record<wire::count_record>(records, record_bytes).count;
    }

    std::size_t global_sum(std::size_t local, const char* what) {
        runtime::engine_lock lock(*m_engine);
        m_engine->check_alive(what);
        return static_cast<std::size_t>(m_engine->sum(local, what));
    }

    static constexpr std::size_t unlimited_take = std::numeric_limits<std::size_t>::max();
    // Records ahead whose slots the bulk insert and find handlers prefetch: 16
    // gave 14% more inserts and about 5% more lookups per second than 8 (2 ranks,
    // 2M keys per rank); 32, 3% more lookups, within the noise.
    static constexpr std::uint32_t prefetch_lookahead = 16;

    std::unique_ptr<runtime::engine> m_engine;
    hash_map_config m_config;
    table_type m_table;
    [[no_unique_address]] Hash m_hash;
    std::vector<visitor_entry> m_visitors;
    std::size_t m_stored_bytes = 0;
    std::uint64_t m_async_rejected = 0;
    std::uint64_t m_local_rejected = 0;
    std::uint64_t m_async_visit_errors = 0;    // this rank's async_visits whose visitor threw
    std::string m_async_visit_error_message;  // the first of them
    std::uint32_t m_sample_counter = 0;
    runtime::handler_id m_insert_one = 0, m_insert = 0, m_find = 0, m_take = 0, m_erase = 0, m_insert_if_absent = 0,
                        m_visit = 0, m_find_many = 0, m_find_many_reply = 0, m_rejected = 0, m_take_many = 0,
                        m_visit_failed = 0, m_reduce = 0, m_visit_callable = 0, m_count = 0, m_find_from = 0;
    std::function<void(std::size_t, std::span<const V>)> m_batch_callback;
    std::uint32_t m_batch_id = 0;
    std::size_t m_batch_pending = 0;
    std::string m_batch_error;  // first failure reported by an owner during a batch
    std::vector<V> m_scratch;
    std::vector<pending_reduce> m_pending_reduces;  // empty until the first combinable async_reduce
    std::uint64_t m_reduces_combined = 0;
};

}  // namespace mpidict
