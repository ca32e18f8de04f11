#pragma once
// The conformance adapter for mpidict::hash_map (the reference adapter; see the
// contract in conformance_suite.hpp).  count / append / pop_front are visitors
// registered at construction, so they run at the key's owner.
//
// ExplicitTarget: every operation names its rank with target_rank{...}, chosen by
// a rule unrelated to the map's placement; find_many / take_many, whose target
// form sends every key of a call to one rank, are split into one call per rank.

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

#include "mpidict/hash_map.hpp"

namespace mpidict::conformance {

template <class K, class V, class Hash = hasher<K>, bool ExplicitTarget = false>
class hash_map_adapter {
public:
    using key_type = K;
    using value_type = V;
    using map_type = hash_map<K, V, Hash>;
    using context = typename map_type::visit_context;

    static constexpr std::size_t unlimited = map_type::unlimited;
    static constexpr bool has_take = true;
    static constexpr bool has_visit = true;
    static constexpr bool has_insert_if_absent = true;
    static constexpr bool has_find_many = true;
    static constexpr bool has_take_many = true;
    static constexpr bool has_async = true;
    static constexpr bool has_payload_bytes = true;
    static constexpr bool has_global_size = true;

    // Collective.
    hash_map_adapter(MPI_Comm communicator, hash_map_config config) : m_map(communicator, config) {
        m_count = m_map.template register_visitor<std::uint32_t, std::uint32_t>("conformance.count", &count_visitor);
        m_append = m_map.template register_visitor<V, std::uint32_t>("conformance.append", &append_visitor);
        m_pop_front = m_map.template register_visitor<std::uint32_t, std::uint32_t>("conformance.pop_front",
                                                                                   &pop_front_visitor);
    }

    int rank() const { return m_map.rank(); }
    int size() const { return m_map.num_ranks(); }
    int owner(const K& key) const {
        if constexpr (ExplicitTarget)
            return at(key).rank;
        else
            return m_map.owner(key);
    }
    std::size_t capacity_values() const { return m_map.settings().capacity_values; }
    std::size_t capacity_bytes() const { return m_map.settings().capacity_bytes; }

    // Values of at most `value_bytes` encoded bytes each that one reply always
    // holds: a find/take reply carries an 8-byte reply header, a find_many answer
    // a 12-byte one, inside one group of buffer_bytes.
    std::size_t max_values_per_reply(std::size_t value_bytes) const {
        const std::size_t room = m_map.settings().runtime.buffer_bytes - runtime::group_header_bytes - 12;
        return room / value_bytes;
    }

    auto insert(const K& key, std::span<const V> values) {
        if constexpr (ExplicitTarget)
            return m_map.insert(at(key), key, values);
        else
            return m_map.insert(key, values);
    }
    void async_insert(const K& key, const V& value) {
        if constexpr (ExplicitTarget)
            m_map.async_insert(at(key), key, value);
        else
            m_map.async_insert(key, value);
    }
    void async_insert(const K& key, std::span<const V> values) {
        if constexpr (ExplicitTarget)
            m_map.async_insert(at(key), key, values);
        else
            m_map.async_insert(key, values);
    }
    auto find(const K& key, std::size_t limit) {
        if constexpr (ExplicitTarget)
            return m_map.find(at(key), key, limit);
        else
            return m_map.find(key, limit);
    }
    auto take(const K& key, std::size_t limit) {
        if constexpr (ExplicitTarget)
            return m_map.take(at(key), key, limit);
        else
            return m_map.take(key, limit);
    }
    auto erase(const K& key) {
        if constexpr (ExplicitTarget)
            return m_map.erase(at(key), key);
        else
            return m_map.erase(key);
    }
    void async_erase(const K& key) {
        if constexpr (ExplicitTarget)
            m_map.async_erase(at(key), key);
        else
            m_map.async_erase(key);
    }
    auto insert_if_absent(const K& key, const V& value) {
        if constexpr (ExplicitTarget)
            return m_map.insert_if_absent(at(key), key, value);
        else
            return m_map.insert_if_absent(key, value);
    }
    void async_insert_if_absent(const K& key, const V& value) {
        if constexpr (ExplicitTarget)
            m_map.async_insert_if_absent(at(key), key, value);
        else
            m_map.async_insert_if_absent(key, value);
    }
    auto count(const K& key) {
        if constexpr (ExplicitTarget)
            return m_map.visit(at(key), key, m_count, std::uint32_t{0});
        else
            return m_map.visit(key, m_count, std::uint32_t{0});
    }
    auto append(const K& key, const V& value) {
        if constexpr (ExplicitTarget)
            return m_map.visit(at(key), key, m_append, value);
        else
            return m_map.visit(key, m_append, value);
    }
    void async_append(const K& key, const V& value) {
        if constexpr (ExplicitTarget)
            m_map.async_visit(at(key), key, m_append, value);
        else
            m_map.async_visit(key, m_append, value);
    }
    auto pop_front(const K& key, std::uint32_t n) {
        if constexpr (ExplicitTarget)
            return m_map.visit(at(key), key, m_pop_front, n);
        else
            return m_map.visit(key, m_pop_front, n);
    }
    void async_pop_front(const K& key, std::uint32_t n) {
        if constexpr (ExplicitTarget)
            m_map.async_visit(at(key), key, m_pop_front, n);
        else
            m_map.async_visit(key, m_pop_front, n);
    }
    template <class Function>
    void find_many(std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk(false, keys, limit, on_result);
    }
    template <class Function>
    void take_many(std::span<const K> keys, std::size_t limit, Function&& on_result) {
        bulk(true, keys, limit, on_result);
    }

    void flush() { m_map.flush(); }
    // Holds the engine lock: with a progress thread, MPI must see one caller at
    // a time (MPI_THREAD_SERIALIZED), so the suite's own collectives take it.
    runtime::engine_lock mpi_guard() { return runtime::engine_lock(m_map.engine()); }
    void destroy() { m_map.destroy(); }

    template <class Function>
    void local_for_each(Function&& function) const {
        m_map.local_for_each(std::forward<Function>(function));
    }
    std::size_t local_size() const { return m_map.local_size(); }
    std::size_t local_value_count() const { return m_map.local_value_count(); }
    std::size_t local_payload_bytes() const { return m_map.local_payload_bytes(); }
    std::size_t global_size() { return m_map.global_size(); }
    std::size_t global_value_count() { return m_map.global_value_count(); }
    std::uint64_t async_rejected() const { return m_map.async_rejected(); }

    map_type& map() { return m_map; }

private:
    template <class Function>
    void bulk(bool take, std::span<const K> keys, std::size_t limit, Function& on_result) {
        if constexpr (!ExplicitTarget) {
            if (take)
                m_map.take_many(keys, limit, on_result);
            else
                m_map.find_many(keys, limit, on_result);
        } else {
            // One call per target rank, answers mapped back to the caller's indices
            // (a key's occurrences keep their order: they all go to one rank).
            const auto ranks = static_cast<std::size_t>(size());
            std::vector<std::vector<K>> keys_of(ranks);
            std::vector<std::vector<std::size_t>> positions_of(ranks);
            for (std::size_t index = 0; index < keys.size(); ++index) {
                const auto rank = static_cast<std::size_t>(at(keys[index]).rank);
                keys_of[rank].push_back(keys[index]);
                positions_of[rank].push_back(index);
            }
            for (std::size_t rank = 0; rank < ranks; ++rank) {
                if (keys_of[rank].empty())
                    continue;
                auto forward = [&](std::size_t index, std::span<const V> values) {
                    on_result(positions_of[rank].at(index), values);
                };
                const target_rank target{static_cast<int>(rank)};
                if (take)
                    m_map.take_many(target, std::span<const K>(keys_of[rank]), limit, forward);
                else
                    m_map.find_many(target, std::span<const K>(keys_of[rank]), limit, forward);
            }
        }
    }

    // With explicit targets, the rank an operation goes to: a rule of the
    // suite's (a second hash of the key, reduced to p), not the map's placement.
    target_rank at(const K& key) const {
        return target_rank{static_cast<int>(
            reduce_range(mix64(hasher<K>{}(key) + 0x632be59bd9b4e019ULL), static_cast<std::size_t>(m_map.num_ranks())))};
    }

    static std::uint32_t count_visitor(context&, const K&, std::vector<V>& values, const std::uint32_t&) {
        return static_cast<std::uint32_t>(values.size());
    }
    static std::uint32_t append_visitor(context&, const K&, std::vector<V>& values, const V& value) {
        const auto before = static_cast<std::uint32_t>(values.size());
        values.push_back(value);
        return before;
    }
    static std::uint32_t pop_front_visitor(context&, const K&, std::vector<V>& values, const std::uint32_t& n) {
        const auto before = static_cast<std::uint32_t>(values.size());
        values.erase(values.begin(), values.begin() + std::min<std::ptrdiff_t>(n, static_cast<std::ptrdiff_t>(values.size())));
        return before;
    }

    map_type m_map;
    typename map_type::template visitor<std::uint32_t, std::uint32_t> m_count{};
    typename map_type::template visitor<V, std::uint32_t> m_append{};
    typename map_type::template visitor<std::uint32_t, std::uint32_t> m_pop_front{};
};

}  // namespace mpidict::conformance
