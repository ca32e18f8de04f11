#pragma once
// spill_table<K, V>: multi_table's side table, the values 2..n of the keys that
// have more than one value.
//
// Data layout.  One array of entries {key, vector of values}, open addressing
// with linear probing from the home reduce_range(hash, capacity) (the same hash
// as the main table's), a power-of-two capacity at most half full.  An entry
// whose vector is empty is free: a key has an entry only while it holds at least
// one spilled value.  No nodes: finding a key's values is one probe of a flat
// array (usually one cache line for 8-byte keys: 32-byte entries) and appending
// one is a push_back, O(1) amortised however many values a key has.  (Until stop
// 66 this was a std::unordered_map: a node, a bucket and a chain walk per key,
// which made appending 1s to k-mers about 3x slower than the spill index before it.)
//
// Invariants.  Every stored key sits in the run of occupied entries that starts
// at its home (deletion shifts later entries back, no tombstones); size <=
// capacity / 2; after an erase leaves size < capacity / 8 the array shrinks,
// so memory stays proportional to the keys with several values.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "mpidict/detail/prefetch.hpp"
#include "mpidict/local/hash.hpp"

namespace mpidict::local {

// The values 2..n of one key, oldest first: m_values[m_head..].  take() removes
// from the front by moving the head; the vector is compacted once the taken
// part reaches half of it, so taking a key's values a few at a time costs O(1)
// amortised per value (erasing the front of a vector each time made taking them
// one by one quadratic).  Empty storage marks a free side-table entry, so a
// queue is never left empty of live values while its entry exists.
template <class V>
class value_queue {
public:
    std::size_t size() const { return m_values.size() - m_head; }
    bool empty() const { return m_values.empty(); }
    const V& operator[](std::size_t index) const { return m_values[m_head + index]; }
    V& operator[](std::size_t index) { return m_values[m_head + index]; }
    auto begin() const { return m_values.begin() + static_cast<std::ptrdiff_t>(m_head); }
    auto end() const { return m_values.end(); }
    void push_back(const V& value) { m_values.push_back(value); }
    // Removes the `n` oldest values; n < size() (a key's last values leave with its entry).
    void drop_front(std::size_t n) {
        m_head += n;
        if (m_head * 2 >= m_values.size()) {
            m_values.erase(m_values.begin(), m_values.begin() + static_cast<std::ptrdiff_t>(m_head));
            m_head = 0;
        }
    }
    void swap(value_queue& other) noexcept {
        m_values.swap(other.m_values);
        std::swap(m_head, other.m_head);
    }

private:
    std::vector<V> m_values;
    std::size_t m_head = 0;
};

template <class K, class V, class Hash, class Equal>
class spill_table {
public:
    using values_type = value_queue<V>;
    struct entry {
        K key{};
        values_type values;  // empty: a free entry
    };

    std::size_t size() const { return m_size; }
    std::size_t capacity() const { return m_entries.size(); }
    bool empty() const { return m_size == 0; }
    std::size_t memory_bytes() const { return m_entries.capacity() * sizeof(entry); }

    // The values of `key` (hash: the table's hash of it); null if it has none here.
    values_type* find(const K& key, std::uint64_t hash) {
        if (m_size == 0)
            return nullptr;
        for (std::size_t index = home(hash);; index = next(index)) {
            entry& e = m_entries[index];
            if (e.values.empty())
                return nullptr;
            if (m_equal(e.key, key))
                return &e.values;
        }
    }
    const values_type* find(const K& key, std::uint64_t hash) const {
        return const_cast<spill_table*>(this)->find(key, hash);
    }

    // Makes key's entry (it must have none) holding `first`; returns its values.
    // If anything throws, the table is as it was.
    values_type& create(const K& key, std::uint64_t hash, const V& first) {
        if ((m_size + 1) * 2 > m_entries.size())
            rehash(m_entries.empty() ? min_capacity : m_entries.size() * 2);
        std::size_t index = home(hash);
        while (!m_entries[index].values.empty())
            index = next(index);
        values_type values;
        values.push_back(first);
        entry& e = m_entries[index];
        e.key = key;
        e.values.swap(values);
        ++m_size;
        return e.values;
    }

    // Removes key's entry (it must have one).
    void erase(const K& key, std::uint64_t hash) {
        std::size_t hole = home(hash);
        while (!m_equal(m_entries[hole].key, key) || m_entries[hole].values.empty())
            hole = next(hole);
        values_type().swap(m_entries[hole].values);
        --m_size;
        // Backward shift: pull later members of the run into the hole while doing
        // so keeps each between its home and its position.
        for (std::size_t index = next(hole); !m_entries[index].values.empty(); index = next(index)) {
            const std::size_t h = home(m_hash(m_entries[index].key));
            const bool movable = hole <= index ? (h <= hole || h > index) : (h <= hole && h > index);
            if (movable) {
                m_entries[hole].key = std::move(m_entries[index].key);
                m_entries[hole].values.swap(m_entries[index].values);  // index's is now the empty one
                hole = index;
            }
        }
        if (m_size < m_entries.size() / 8 && m_entries.size() > min_capacity)
            rehash(std::max(min_capacity, std::bit_ceil(m_size * 4)));
    }

    void prefetch(std::uint64_t hash) const {
        if (m_size != 0)
            detail::prefetch_line(m_entries.data() + home(hash));
    }

    void clear() {
        std::vector<entry>().swap(m_entries);
        m_size = 0;
    }

private:
    static constexpr std::size_t min_capacity = 16;
    std::size_t home(std::uint64_t hash) const { return reduce_range(hash, m_entries.size()); }
    std::size_t next(std::size_t index) const { return (index + 1) & (m_entries.size() - 1); }

    void rehash(std::size_t new_capacity) {
        std::vector<entry> old(new_capacity);
        old.swap(m_entries);
        for (entry& e : old) {
            if (e.values.empty())
                continue;
            std::size_t index = home(m_hash(e.key));
            while (!m_entries[index].values.empty())
                index = next(index);
            m_entries[index].key = std::move(e.key);
            m_entries[index].values.swap(e.values);
        }
    }

    std::vector<entry> m_entries;
    std::size_t m_size = 0;
    [[no_unique_address]] Hash m_hash;
    [[no_unique_address]] Equal m_equal;
};

}  // namespace mpidict::local
