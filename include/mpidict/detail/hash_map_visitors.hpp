#pragma once
// hash_map's code that runs at a key's owner on the program's behalf
// (hash_map.hpp is the facade, detail/hash_map_shard.hpp the shard it changes):
//
//   * registered visitors (hash_map::register_visitor): a table of entries,
//     numbered by a collective registration, run by on_visit;
//   * callable visitors (async_visit(key, f, args...)): numbered by the
//     callable's type and argument types in a callable_registry, run by
//     on_visit_callable on a values_ref (the key's values, in place);
//   * reduce operators (async_reduce): numbered by type, and the caller-side
//     combining of reduces waiting unsent in an outbox (reduce_combiner).
//
// A visitor's failure (an exception, a result too large for one reply) is the
// visit's, never the owner's: it goes back to the caller's request or, for an
// async visit, to its origin as a hash_map.visit_failed notice.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <vector>

#include "mpidict/detail/callable_registry.hpp"
#include "mpidict/detail/hash_map_shard.hpp"
#include "mpidict/detail/wire.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/results.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::detail {

template <class K, class V, class Hash, class Map>
class hash_map_visitors;

// What a callable visitor (async_visit(key, f, args...)) gets: the key's values
// at its owner, changed in place.  Valid during the call only.  Users name it
// hash_map<K, V>::values_ref.
template <class K, class V, class Hash>
class hash_map_values_ref {
    using shard_type = hash_map_shard<K, V, Hash>;
    using table_type = typename shard_type::table_type;

public:
    std::size_t size() const { return m_values.size(); }
    bool empty() const { return size() == 0; }
    V& operator[](std::size_t index) { return m_values[index]; }
    const V& operator[](std::size_t index) const { return m_values[index]; }
    V& front() { return m_values[0]; }
    // Appends a value (creating the key); false if the owner's capacity
    // limit refused it (counted like an insert's refusal).
    bool push_back(const V& value) {
        const bool stored = m_shard.store_value(m_key, value);
        m_refused += stored ? 0 : 1;
        m_values = m_shard.table().find_mutable(m_key);
        return stored;
    }
    // Removes the key and all its values.
    void clear() {
        m_shard.remove_key(m_key);
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
        friend class hash_map_values_ref;
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
    template <class, class, class, class>
    friend class hash_map_visitors;
    hash_map_values_ref(shard_type& shard, const K& key, typename table_type::mutable_values found)
        : m_shard(shard), m_key(key), m_values(found) {}
    shard_type& m_shard;
    const K& m_key;
    typename table_type::mutable_values m_values;
    std::uint32_t m_refused = 0;
};

// Map is the facade (hash_map<K, V, Hash>); it is only named inside function
// bodies, so this class can be a member of the facade it serves.
template <class K, class V, class Hash, class Map>
class hash_map_visitors {
    using shard_type = hash_map_shard<K, V, Hash>;
    using wire = hash_map_wire;
    static constexpr std::uint32_t no_slot = shard_type::no_slot;

public:
    using values_ref = hash_map_values_ref<K, V, Hash>;

    hash_map_visitors(Map& map, shard_type& shard, runtime::engine& engine)
        : m_map(map), m_shard(shard), m_engine(engine) {}

    hash_map_visitors(const hash_map_visitors&) = delete;
    hash_map_visitors& operator=(const hash_map_visitors&) = delete;

    // ---- registered visitors ----------------------------------------------

    std::size_t registered() const { return m_entries.size(); }

    // Collective (hash_map::register_visitor): the new visitor's number.  The
    // caller holds the engine lock throughout.
    template <class Arg, class Result, class Context>
    std::uint32_t add(std::string_view name,
                      Result (*function)(Context&, const K&, std::vector<V>&, const Arg&), void* user_context) {
        entry added;
        added.name = std::string(name);
        added.function = reinterpret_cast<void (*)()>(function);
        added.user_context = user_context;
        added.invoke = &invoke_visitor<Arg, Result>;
        m_entries.push_back(std::move(added));
        try {
            // A set-up collective: it handles no message until every rank has
            // registered, so a visitor's own id is known before any visit runs.
            m_engine.check_same(static_cast<std::int64_t>(hash_bytes(name.data(), name.size()) >> 1),
                                "visitor registration (name '" + std::string(name) + "')", /*serve=*/false);
        } catch (...) {
            m_entries.pop_back();
            throw;
        }
        return static_cast<std::uint32_t>(m_entries.size() - 1);
    }

    // ---- callable visitors --------------------------------------------------

    // What one group of visit records reports back to its origin: failed
    // async visits (the first reason kept) and values a capacity limit refused.
    struct visit_failures {
        std::uint32_t async = 0;
        std::string first;
        std::uint32_t rejected = 0;
    };
    // Runs `count` visit_callable records that all name this callable.
    using callable_function = void (*)(hash_map_visitors& self, int source, const std::byte* records,
                                       std::uint32_t record_bytes, std::uint32_t count, visit_failures& failures);
    using callables = callable_registry<callable_function>;

    // How an argument travels: a C string as std::string, anything else as is.
    template <class T>
    static decltype(auto) visit_argument(const T& argument) {
        if constexpr (std::is_same_v<visit_argument_t<T>, std::decay_t<T>>)
            return (argument);
        else
            return std::string(argument);
    }

    struct not_a_visitor {};
    template <class F, class... A>
    static auto callable_result_probe() {
        using context = typename Map::visit_context;
        if constexpr (std::is_invocable_v<const F&, context&, const K&, values_ref&, const A&...>)
            return std::type_identity<std::invoke_result_t<const F&, context&, const K&, values_ref&, const A&...>>{};
        else if constexpr (std::is_invocable_v<const F&, const K&, values_ref&, const A&...>)
            return std::type_identity<std::invoke_result_t<const F&, const K&, values_ref&, const A&...>>{};
        else
            return std::type_identity<not_a_visitor>{};
    }
    template <class F, class... A>
    using callable_result = typename decltype(callable_result_probe<F, A...>())::type;

    template <class F, class... A>
    static constexpr void check_callable() {
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

    // ---- owner side: handlers (registered by hash_map::register_handlers) ---

    // visit: {slot, visitor} key argument.
    void on_visit(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        // Failed async visits of this group: reported to `source` in one notice.
        std::uint32_t async_failures = 0;
        std::string first_failure;
        std::string failure;
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto [slot, which] = read_record<wire::visit_header>(reader);
            const K key = codec<K>::decode(reader);
            if (which >= m_entries.size())
                throw decode_error("mpidict: visit names visitor " + std::to_string(which) + " but this rank has " +
                                   std::to_string(m_entries.size()));
            const entry& visitor = m_entries[which];
            failure.clear();
            if (visitor.invoke(*this, source, slot, visitor, key, reader, failure))
                continue;
            if (slot != no_slot) {
                m_engine.reply_error(source, slot, failure);
            } else {
                ++async_failures;
                if (first_failure.empty())
                    first_failure = failure;
            }
        }
        m_shard.notify_visit_failed(source, async_failures, first_failure);
    }

    // visit_callable: {slot, visitor, if_contains} key arguments...  Each run
    // of records naming one callable goes to its invoke_callable_run (one
    // dispatch per run); refusals and failures go back in one notice each.
    void on_visit_callable(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
        const auto& visitors = callables::entries();
        const auto visitor_of = [&](std::uint32_t index) {
            return read_record<wire::callable_visit_header>(records + std::size_t{index} * record_bytes, record_bytes)
                .visitor;
        };
        visit_failures failures;
        for (std::uint32_t index = 0; index < count;) {
            const std::uint32_t id = visitor_of(index);
            if (id >= visitors.size())
                throw decode_error("mpidict: visit names callable visitor " + std::to_string(id) +
                                   " but this rank has " + std::to_string(visitors.size()));
            std::uint32_t end = index + 1;
            while (end < count && visitor_of(end) == id)
                ++end;
            visitors[id].entry(*this, source, records + std::size_t{index} * record_bytes, record_bytes, end - index,
                               failures);
            index = end;
        }
        m_shard.notify_rejected(source, failures.rejected);
        m_shard.notify_visit_failed(source, failures.async, failures.first);
    }

private:
    struct entry {
        std::string name;
        void (*function)() = nullptr;
        void* user_context = nullptr;
        // Decodes the argument, runs the visitor, writes the values back and
        // replies (request form).  If the visitor throws (or its result cannot be
        // replied), changes nothing, sends nothing and returns false with the
        // reason in `failure`.
        bool (*invoke)(hash_map_visitors& self, int source, std::uint32_t slot, const entry& visitor, const K& key,
                       byte_reader& reader, std::string& failure) = nullptr;
    };

    // What a caller sees when registered visitor `visitor` threw `what` at this rank.
    std::string visitor_threw_message(const entry& visitor, int source, std::string_view what) const {
        std::string message = "mpidict: visitor '" + visitor.name + "' threw at rank " +
                              std::to_string(m_engine.rank()) + " (the key's owner, visited from rank " +
                              std::to_string(source) + "): ";
        message += what;
        message += "; the visit was not applied (the key's values are unchanged)";
        return message;
    }

    template <class Arg, class Result>
    static bool invoke_visitor(hash_map_visitors& self, int source, std::uint32_t slot, const entry& visitor,
                               const K& key, byte_reader& reader, std::string& failure) {
        using context = typename Map::visit_context;
        shard_type& shard = self.m_shard;
        const Arg arg = codec<Arg>::decode(reader);
        std::vector<V> values;
        const auto current = shard.table().find(key);
        values.reserve(current.size());
        current.copy_to(std::back_inserter(values), current.size());
        const std::size_t before = values.size();
        auto function = reinterpret_cast<Result (*)(context&, const K&, std::vector<V>&, const Arg&)>(visitor.function);
        context ctx{self.m_map, source, visitor.user_context};
        auto write_back = [&] {
            // Replace the values, honouring the capacity for what the visitor added.
            std::size_t payload = 0;
            shard.table().take(key, shard_type::unlimited_take,
                               [&](V&& value) { payload += codec<V>::payload_bytes(value); });
            shard.account_removed(key, payload, before > 0);
            std::uint32_t rejected = 0;
            for (const V& value : values)
                if (!shard.store_value(key, value))
                    ++rejected;
            if (slot == no_slot)
                shard.notify_rejected(source, rejected);
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
            failure = self.visitor_threw_message(visitor, source, problem.what());
            return false;
        } catch (...) {
            failure = self.visitor_threw_message(visitor, source, "an exception not derived from std::exception");
            return false;
        }
        if constexpr (std::is_void_v<Result>) {
            write_back();
            if (slot != no_slot)
                self.m_engine.reserve_reply(source, slot, 1, 0);
        } else {
            const std::size_t bytes = codec<Result>::encoded_size(*result);
            const std::size_t room = self.m_engine.max_record_bytes() - runtime::reply_header_bytes;
            if (slot != no_slot && bytes > room) {
                // Checked before the write-back: a visit whose answer is lost changes nothing.
                failure = "mpidict: the result of visitor '" + visitor.name + "' at rank " +
                          std::to_string(self.m_engine.rank()) + " needs " + std::to_string(bytes) +
                          " bytes but one message holds " + std::to_string(room) +
                          "; the visit was not applied (return less or raise buffer_bytes)";
                return false;
            }
            write_back();
            if (slot != no_slot) {
                std::byte* out = self.m_engine.reserve_reply(source, slot, 1, bytes);
                codec<Result>::encode(out, *result);
            }
        }
        return true;
    }

    template <class F>
    static std::string callable_name() {
        return "visitor " + demangle(std::string(type_name<F>()));
    }

    // A run of visit_callable records of callable F with arguments A...: with
    // a fixed-size key and arguments, decoded in bulk, each key hashed once and
    // its slot prefetched a few records ahead (hash_map_shard::prefetched_run);
    // otherwise record by record.
    template <class F, class... A>
    static void invoke_callable_run(hash_map_visitors& self, int source, const std::byte* records,
                                    std::uint32_t record_bytes, std::uint32_t count, visit_failures& failures) {
        constexpr std::size_t header = wire_bytes<wire::callable_visit_header>;
        auto& table = self.m_shard.table();
        if constexpr (codec<K>::fixed_size && (codec<A>::fixed_size && ...)) {
            if (record_bytes == header + sizeof(K) + (std::size_t{0} + ... + sizeof(A))) [[likely]] {
                self.m_shard.prefetched_run(records, record_bytes, count, header,
                                            [&](const std::byte* record, const K& key, std::uint64_t hash) {
                                                byte_reader reader(record, record_bytes);
                                                const auto h = read_record<wire::callable_visit_header>(reader);
                                                reader.take(sizeof(K));  // the key, already read
                                                const std::tuple<A...> args{codec<A>::decode(reader)...};
                                                visit_one<F, A...>(self, source, h.slot, h.if_contains != 0, key,
                                                                   hash, args, failures);
                                            });
                return;
            }
        }
        for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
            byte_reader reader(records, record_bytes);
            const auto h = read_record<wire::callable_visit_header>(reader);
            const K key = codec<K>::decode(reader);
            const std::tuple<A...> args{codec<A>::decode(reader)...};  // braced: decoded in order
            visit_one<F, A...>(self, source, h.slot, h.if_contains != 0, key, table.hash_of(key), args, failures);
        }
    }

    // One callable visit: f(key, values, args...) on the key's values in place.
    // A failure (f threw, or its result cannot be replied) fails the request or
    // is counted in `failures` for the origin.
    template <class F, class... A>
    static void visit_one(hash_map_visitors& self, int source, std::uint32_t slot, bool if_contains, const K& key,
                          std::uint64_t hash, const std::tuple<A...>& args, visit_failures& failures) {
        using context = typename Map::visit_context;
        shard_type& shard = self.m_shard;
        const auto found = shard.table().find_mutable_hashed(key, hash);
        const bool present = found.size() != 0;
        if (if_contains && !present) {
            if (slot != no_slot)
                self.m_engine.reply_error(source, slot, "mpidict: visit_if_contains: the key is absent");
            return;
        }
        auto fail = [&](std::string failure) {
            if (slot != no_slot) {
                self.m_engine.reply_error(source, slot, failure);
            } else {
                ++failures.async;
                if (failures.first.empty())
                    failures.first = std::move(failure);
            }
        };
        // Byte-string values changed in place change the payload: recount this key.
        const std::size_t stored_before = shard.stored_bytes();
        const std::size_t payload_before = codec<V>::fixed_size ? 0 : shard.payload_of(key);
        auto settle = [&] {
            if constexpr (!codec<V>::fixed_size) {
                const bool now = shard.table().contains(key);
                std::size_t total = stored_before - std::min(stored_before, payload_before) + shard.payload_of(key);
                if (now != present)
                    total = now ? total + codec<K>::payload_bytes(key)
                                : total - std::min(total, codec<K>::payload_bytes(key));
                shard.set_stored_bytes(total);
            }
        };
        values_ref values(shard, key, found);
        context ctx{self.m_map, source, nullptr};
        using R = callable_result<F, A...>;
        using stored_result = std::conditional_t<std::is_void_v<R>, nothing, R>;
        std::optional<stored_result> result;
        auto call = [&]() -> R {
            return std::apply(
                [&](const A&... a) -> R {
                    if constexpr (std::is_invocable_v<const F&, context&, const K&, values_ref&, const A&...>)
                        return F{}(ctx, key, values, a...);
                    else
                        return F{}(key, values, a...);
                },
                args);
        };
        auto threw = [&](std::string_view what) {
            settle();
            fail("mpidict: " + callable_name<F>() + " threw at rank " + std::to_string(self.m_engine.rank()) +
                 " (the key's owner, visited from rank " + std::to_string(source) + "): " + std::string(what) +
                 "; changes it made before throwing stay");
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
            failures.rejected += values.m_refused;
            return;
        }
        if constexpr (std::is_void_v<R>) {
            self.m_engine.reserve_reply(source, slot, 1, 0);
        } else {
            const std::size_t bytes = codec<R>::encoded_size(*result);
            const std::size_t room = self.m_engine.max_record_bytes() - runtime::reply_header_bytes;
            if (bytes > room)
                return fail("mpidict: the result of " + callable_name<F>() + " at rank " +
                            std::to_string(self.m_engine.rank()) + " needs " + std::to_string(bytes) +
                            " bytes but one message holds " + std::to_string(room) +
                            "; the visit's changes stay (return less or raise buffer_bytes)");
            codec<R>::encode(self.m_engine.reserve_reply(source, slot, 1, bytes), *result);
        }
    }

    Map& m_map;
    shard_type& m_shard;
    runtime::engine& m_engine;
    std::vector<entry> m_entries;

public:
    // The callable's number with these argument types, the same on every rank
    // (declared after invoke_callable_run, which its initialiser names).
    template <class F, class... A>
    static inline const std::uint32_t callable_id =
        callables::add(type_name<type_list<F, A...>>(), &invoke_callable_run<F, A...>);
};

// Reduce operators (async_reduce, insert_or_assign) and the caller-side
// combining of reduces: a reduce waiting unsent in an outbox absorbs later
// reduces of the same key with the same operator (fixed-size keys and values
// only).  Direct-mapped by the key's hash; an entry is valid while the outbox's
// generation (engine::outbox_generation) is the one read after its reserve.
template <class K, class V, class Hash>
class reduce_combiner {
public:
    using reducers = reduce_registry<K, V, Hash>;
    static constexpr bool combinable = codec<K>::fixed_size && codec<V>::fixed_size;

    // `broken`: hash_map_config::break_consistency_for_testing (forget() does nothing).
    explicit reduce_combiner(runtime::engine& engine, bool broken = false)
        : m_engine(engine), m_stream_ops(static_cast<std::size_t>(engine.size())), m_broken(broken) {}

    template <class Op>
    static void apply(V& accumulated, const V& incoming) {
        accumulated = Op{}(static_cast<const V&>(accumulated), incoming);
    }
    // A run of reduce records of operator Op at the owner, Op inlined.
    template <class Op>
    static void run(hash_map_shard<K, V, Hash>& shard, int source, const std::byte* records,
                    std::uint32_t record_bytes, std::uint32_t count, std::uint32_t& rejected, bool bare) {
        shard.reduce_run(
            source, records, record_bytes, count,
            [](V& accumulated, const V& incoming) { accumulated = Op{}(static_cast<const V&>(accumulated), incoming); },
            rejected, bare);
    }
    // The operator's number, the same on every rank (see callable_registry.hpp).
    template <class Op>
    static inline const std::uint32_t id =
        reducers::add(type_name<Op>(), reduce_entry<K, V, Hash>{&apply<Op>, &run<Op>});

    template <class Op>
    static constexpr void check() {
        static_assert(std::is_empty_v<Op> && std::is_default_constructible_v<Op>,
                      "async_reduce: the operator must be stateless (a lambda without captures, std::plus<>, "
                      "or an empty struct): it runs at the key's owner, where only its type is known.");
        static_assert(std::is_invocable_r_v<V, const Op&, const V&, const V&>,
                      "async_reduce: the operator must be callable as V(const V&, const V&).");
    }

    struct pending;
    // nullptr if `value` was folded into a waiting reduce of `key` to
    // `destination` with operator `op` (then nothing is to be sent), else the
    // entry to pass to remember() once the record is reserved.
    // Adaptive: a window of `window` reduces in which fewer than one in 64
    // combines pauses the check for `pause_windows` windows (distinct keys:
    // the lookup bought nothing), after which the array starts empty and one
    // window tries again.  The slots' keys lie apart from the rest of their
    // entries (8 bytes a slot, 32 KiB for 8-byte keys, against 32 bytes and
    // 128 KiB together): the compare that decides whether to combine reads
    // mostly from L1, and only a matching key reads its 24-byte entry.
    // `op` is Op's id; the fold calls Op inlined.
    // `hash`: Hash{}(key), which the caller computed once (the slot: its low bits).
    template <class Op>
    pending* combine(int destination, std::uint32_t op, const K& key, const V& value, std::uint64_t hash) {
        if (m_paused != 0) [[unlikely]] {
            if (--m_paused == 0)
                std::fill(m_pending.begin(), m_pending.end(), pending{});
            return &m_unused;
        }
        if (m_pending.empty()) {
            m_pending.resize(slots);
            m_keys.resize(slots);
        }
        if (++m_tried == window) {
            if (m_hits < window / 64)
                m_paused = pause_windows * window;
            m_tried = 0;
            m_hits = 0;
        }
        const std::size_t index = hash & (slots - 1);  // index_of(key), the caller's hash
        pending& waiting = m_pending[index];
        if (m_keys[index] == key && waiting.destination == destination && waiting.op == op &&
            waiting.generation == m_engine.outbox_generation(destination)) {
            V combined;
            std::memcpy(&combined, waiting.value, sizeof(V));
            apply<Op>(combined, value);
            std::memcpy(waiting.value, &combined, sizeof(V));
            ++m_combined;
            ++m_hits;
            return nullptr;
        }
        return &waiting;
    }
    // A reduce record just reserved for `destination`, whose value bytes are at
    // `value_bytes`: later reduces of `key` may combine into it (none while the
    // check pauses: the array is emptied before it resumes, so no reduce is
    // ever folded into a record older than another of the same key).
    // `entry`: combine()'s answer for `key` (the array never moves once allocated).
    void remember(pending* entry, int destination, std::uint32_t op, const K& key, std::byte* value_bytes) {
        if (entry == &m_unused)
            return;
        *entry = pending{destination, op, m_engine.outbox_generation(destination), value_bytes};
        m_keys[static_cast<std::size_t>(entry - m_pending.data())] = key;
    }
    // The operator the reduce_pairs records sent to `destination` carry now
    // (the last reduce_op sent there) + 1; 0 before the first.
    std::uint32_t& stream_op(int destination) { return m_stream_ops[static_cast<std::size_t>(destination)]; }
    // Any other operation on `key` from this rank must not be overtaken by a
    // later reduce combined into an earlier record: forget that record.
    void forget(const K& key) {
        if constexpr (combinable) {
            if (!m_pending.empty() && !m_broken) [[unlikely]] {
                const std::size_t index = index_of(key);
                if (m_keys[index] == key)
                    m_pending[index].destination = -1;
            }
        }
        (void)key;
    }
    std::uint64_t combined() const { return m_combined; }

    struct pending {
        int destination = -1;  // -1: empty
        std::uint32_t op = 0;
        std::uint64_t generation = 0;
        std::byte* value = nullptr;  // the record's value bytes
    };

private:
    static constexpr std::size_t slots = 4096;
    static constexpr std::uint32_t window = 1u << 16;
    static constexpr std::uint32_t pause_windows = 15;

    std::size_t index_of(const K& key) const { return m_hash(key) & (slots - 1); }

    runtime::engine& m_engine;
    [[no_unique_address]] Hash m_hash;
    std::vector<pending> m_pending;  // empty until the first combinable async_reduce
    std::vector<K> m_keys;           // m_pending[i]'s key (apart: the compare reads 8 bytes a slot)
    std::vector<std::uint32_t> m_stream_ops;
    std::uint64_t m_combined = 0;
    std::uint32_t m_tried = 0;   // reduces checked in this window
    std::uint32_t m_hits = 0;    // of them combined
    std::uint32_t m_paused = 0;  // reduces left to send without checking
    pending m_unused;            // combine()'s answer while the check pauses
    bool m_broken = false;       // break_consistency_for_testing
};

}  // namespace mpidict::detail
