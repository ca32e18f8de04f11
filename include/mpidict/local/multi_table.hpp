#pragma once
// multi_table<K, V>: the serial table behind every hash_map shard.
//
// Data layout.  One array of slots, open addressing with linear probing, any
// capacity (slot index = (hash * capacity) >> 64, so the table need not be a
// power of two and a size hint is honoured closely).  A slot is {key, first
// value}: a key with one value, the common case, lives entirely in its slot (16
// bytes for 8-byte keys and values).  Beside the slots, one tag byte per slot:
// 0 for an empty slot, else the multi bit (0x80) | 7 bits of the hash, never all
// 0 (the first 15 tags are repeated after the last), so a probe compares 16 tags
// at once and reads a slot only where its tag matches: a miss usually ends in
// the tag array (1 byte per slot, far more of it stays in cache than of the
// slots), a hit reads one slot.  A key with more than one value has the multi
// bit set, and its values 2..n live in a side table keyed by the key
// (spill_table: flat, one probe and a push_back per further value), so
// single-valued keys pay nothing for multi-valued ones.
// Deletion shifts later slots back (no tombstones), so probe sequences never
// degrade with churn.
//
// Invariants.  Every stored key sits in the run of occupied slots that starts at
// its home slot; load stays at most max_load (default 0.6: 28 bytes per slot
// and pair for 8+8 bytes when reserved, and unsuccessful probes mostly end in
// the first 16 tags); a key has a side-table entry exactly when its multi bit is
// set; values of a key keep insertion order.
//
// Costs.  find/insert/take: one hash and a short probe (and one side-table
// probe, with the same hash, for a key with several values); a take of some of
// a key's values costs O(1) amortised per value taken (the side table keeps them
// as a queue); growth doubles and rehashes (O(size)), so pass the expected key
// count when known.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <limits>
#include <span>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "mpidict/detail/huge_pages.hpp"
#include "mpidict/detail/prefetch.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/local/spill_table.hpp"

namespace mpidict::local {

// The load a table grows at unless told otherwise (hash_map_config::max_load's
// default too): 17 bytes per slot for 8+8-byte pairs, 29.3 bytes per pair when
// reserved, and most unsuccessful probes end in the first 16 tags.
inline constexpr double table_default_max_load = 0.58;

template <class K, class V, class Hash = hasher<K>, class Equal = std::equal_to<K>>
class multi_table {
    struct slot {
        K key{};
        V first{};
    };
    // Values 2..n of the keys that have several, keyed by the key.
    using rest_map = spill_table<K, V, Hash, Equal>;
    using slot_array = std::vector<slot, detail::huge_page_allocator<slot>>;
    using tag_array = std::vector<std::uint8_t, detail::huge_page_allocator<std::uint8_t>>;

public:
    using key_type = K;
    using value_type = V;

    // A read-only view of one key's values, valid until the table changes.
    class values_view {
    public:
        values_view() = default;
        std::size_t size() const { return m_first == nullptr ? 0 : m_rest == nullptr ? 1 : 1 + m_rest->size(); }
        bool empty() const { return m_first == nullptr; }
        const V& operator[](std::size_t index) const { return index == 0 ? *m_first : (*m_rest)[index - 1]; }
        // Iteration in insertion order: for (const V& value : view).
        class iterator {
        public:
            using iterator_category = std::forward_iterator_tag;
            using value_type = V;
            using difference_type = std::ptrdiff_t;
            using pointer = const V*;
            using reference = const V&;
            iterator() = default;
            const V& operator*() const { return (*m_view)[m_index]; }
            const V* operator->() const { return &(*m_view)[m_index]; }
            iterator& operator++() {
                ++m_index;
                return *this;
            }
            iterator operator++(int) {
                iterator before = *this;
                ++m_index;
                return before;
            }
            bool operator==(const iterator& other) const { return m_index == other.m_index; }

        private:
            friend class values_view;
            iterator(const values_view* view, std::size_t index) : m_view(view), m_index(index) {}
            const values_view* m_view = nullptr;
            std::size_t m_index = 0;
        };
        iterator begin() const { return iterator(this, 0); }
        iterator end() const { return iterator(this, size()); }
        template <class Out>
        void copy_to(Out out, std::size_t limit) const {
            const std::size_t n = std::min(limit, size());
            for (std::size_t index = 0; index < n; ++index)
                *out++ = (*this)[index];
        }

    private:
        friend class multi_table;
        values_view(const V* first, const value_queue<V>* rest) : m_first(first), m_rest(rest) {}
        const V* m_first = nullptr;
        const value_queue<V>* m_rest = nullptr;  // null: one value
    };

    // One key's values, changeable in place (not added or removed: append and
    // take do that); valid until the table changes.
    class mutable_values {
    public:
        mutable_values() = default;
        std::size_t size() const { return m_first == nullptr ? 0 : m_rest == nullptr ? 1 : 1 + m_rest->size(); }
        V& operator[](std::size_t index) const { return index == 0 ? *m_first : (*m_rest)[index - 1]; }

    private:
        friend class multi_table;
        mutable_values(V* first, value_queue<V>* rest) : m_first(first), m_rest(rest) {}
        V* m_first = nullptr;
        value_queue<V>* m_rest = nullptr;
    };

    explicit multi_table(std::size_t expected_keys = 0, double max_load = table_default_max_load)
        : m_max_load(max_load) {
        if (!(max_load > 0.05 && max_load < 0.99))
            throw invalid_argument_error("mpidict: max_load must lie in (0.05, 0.99)");
        reserve(expected_keys);
    }

    static constexpr double default_max_load = table_default_max_load;

    // The most keys a table with this max_load can be asked to make room for:
    // its slot count (a power of two) and their bytes must stay addressable.
    static std::size_t max_keys(double max_load) {
        return static_cast<std::size_t>(static_cast<double>(max_slots) * max_load) - 1;
    }

    std::size_t size() const { return m_size; }                // keys
    std::size_t value_count() const { return m_value_count; }  // values over all keys
    std::size_t capacity() const { return m_slots.size(); }
    bool empty() const { return m_size == 0; }

    // Bytes this table holds on the heap (slots, tags, the side table's
    // entries and the values in it), approximately: the spilled values are
    // counted at their size, not their vectors' capacity.
    std::size_t memory_bytes() const {
        return m_slots.capacity() * sizeof(slot) + m_tags.capacity() + m_rest.memory_bytes() +
               m_spilled_values * sizeof(V);
    }

    // Makes room for `keys` keys without rehashing.
    void reserve(std::size_t keys) {
        if (keys > max_keys(m_max_load))
            throw invalid_argument_error("mpidict: room for " + std::to_string(keys) +
                                         " keys is more than a local table can address (at most " +
                                         std::to_string(max_keys(m_max_load)) + ")");
        const auto wanted = static_cast<std::size_t>(static_cast<double>(keys) / m_max_load) + 1;
        if (wanted > m_slots.size())
            rehash(std::max<std::size_t>(wanted, group));
    }

    values_view find(const K& key) const {
        if (m_size == 0)
            return {};
        const std::uint64_t h = m_hash(key);
        const std::size_t index = locate(key, h);
        if (index == npos)
            return {};
        return values_view(&m_slots[index].first, rest_at(index, h));
    }

    mutable_values find_mutable(const K& key) {
        if (m_size == 0)
            return {};
        const std::uint64_t h = m_hash(key);
        const std::size_t index = locate(key, h);
        if (index == npos)
            return {};
        return mutable_values(&m_slots[index].first, rest_at(index, h));
    }

    // find and find_mutable with the key's hash_of(key) already computed (a
    // bulk handler hashes once, to prefetch and then to look up).
    values_view find_hashed(const K& key, std::uint64_t hash) const {
        if (m_size == 0)
            return {};
        const std::size_t index = locate(key, hash);
        if (index == npos)
            return {};
        return values_view(&m_slots[index].first, rest_at(index, hash));
    }
    mutable_values find_mutable_hashed(const K& key, std::uint64_t hash) {
        if (m_size == 0)
            return {};
        const std::size_t index = locate(key, hash);
        if (index == npos)
            return {};
        return mutable_values(&m_slots[index].first, rest_at(index, hash));
    }

    bool contains(const K& key) const { return m_size != 0 && locate(key, m_hash(key)) != npos; }

    // Hints the cache that `key` will be looked up soon (bulk inserts and
    // finds).  detail::prefetch_line, not __builtin_prefetch: GCC drops calls
    // to functions whose only effect is the latter (detail/prefetch.hpp).
    void prefetch(const K& key) const { prefetch_hashed(m_hash(key)); }

    // Appends values in order; returns how many it stored (all of them).
    template <class Iterator>
    std::size_t append(const K& key, Iterator first, Iterator last) {
        if (first == last)
            return 0;
        const std::uint64_t h = m_hash(key);
        std::size_t stored = 1;
        const std::size_t index = add(key, h, *first);
        if (++first == last)
            return stored;
        value_queue<V>& rest = spill(index, h, *first);
        for (++first, ++stored; first != last; ++first, ++stored) {
            rest.push_back(*first);  // counted one by one: a throwing copy leaves the counts exact
            ++m_value_count;
            ++m_spilled_values;
        }
        return stored;
    }

    void append(const K& key, const V& value) { add(key, m_hash(key), value); }

    // The hash this table uses for `key`; pass it to the *_hashed forms to hash once.
    std::uint64_t hash_of(const K& key) const { return m_hash(key); }
    // Returns true if the key was new.
    bool append_hashed(const K& key, std::uint64_t hash, const V& value) {
        const std::size_t before = m_size;
        add(key, hash, value);
        return m_size != before;
    }
    // Bulk loads in hash order (a checkpoint's keys arrive in their saved
    // table's slot order, which is the order of their hashes): a key whose hash
    // is above every hash this table has stored since it was last empty cannot
    // be in it, so it goes into the first empty slot from its home without a
    // key comparison.  Returns false, and does nothing, for any other key
    // (insert that one the usual way: its probe compares keys).
    bool above_all(std::uint64_t hash) const { return hash > m_hash_ceiling || m_size == 0; }
    bool place_if_above(const K& key, std::uint64_t hash, const V& value) {
        if (!above_all(hash))
            return false;
        grow_if_needed();
        const std::size_t capacity = m_slots.size();
        std::size_t index = home(hash);
        for (;;) {
            if (const std::uint32_t empties = match(index, 0); empties != 0) {
                index += static_cast<std::size_t>(std::countr_zero(empties));
                break;
            }
            index += group;
            index = index >= capacity ? index - capacity : index;
        }
        claim(index >= capacity ? index - capacity : index, key, hash, value);
        return true;
    }

    void prefetch_hashed(std::uint64_t hash) const {
        if (m_slots.empty())
            return;
        // The lines a probe reads first: its 16 tags (which may cross a line
        // boundary), the home slot's line and the next one (slots home..home+4
        // at least: about 40% of the keys sit past home at the default load, and
        // a key found through the tags waits for its slot).  Where two share a
        // line the extra prefetch costs an instruction.  The next line may lie
        // past the array: a prefetch never faults, and its address is computed
        // as an integer, not by pointer arithmetic.
        const std::size_t index = home(hash);
        const slot* at_home = m_slots.data() + index;
        detail::prefetch_line(m_tags.data() + index);
        detail::prefetch_line(m_tags.data() + index + group - 1);
        detail::prefetch_line(at_home);
        detail::prefetch_line(reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(at_home) + 64));
        // And the side table's home entry while any key has several values (a
        // predicted branch for tables of single values).
        m_rest.prefetch(hash);
    }

    // Single-valued update: a new key stores `value`; an existing key's values
    // are folded in order, then `value`, with fold(accumulated&, const V&), and
    // the key keeps that one value.  Returns how many values the key had before
    // (0: it was new).  If fold throws, the key keeps its values.
    template <class Fold>
    std::size_t reduce_hashed(const K& key, std::uint64_t hash, const V& value, Fold&& fold) {
        grow_if_needed();
        const auto [index, found] = probe(key, hash);
        if (!found) {
            claim(index, key, hash, value);
            return 0;
        }
        slot& s = m_slots[index];
        if (!is_multi(m_tags[index])) [[likely]] {
            fold(s.first, value);
            return 1;
        }
        const value_queue<V>& rest = *m_rest.find(s.key, hash);
        const std::size_t before = 1 + rest.size();
        V accumulated = s.first;
        for (const V& spilled : rest)
            fold(accumulated, spilled);
        fold(accumulated, value);
        s.first = std::move(accumulated);
        drop_rest(index, hash);
        return before;
    }

    // Stores (key, value) only if the key has no values; true if it did.
    bool insert_if_absent(const K& key, const V& value) {
        grow_if_needed();
        const std::uint64_t h = m_hash(key);
        const auto [index, found] = probe(key, h);
        if (found)
            return false;
        claim(index, key, h, value);
        return true;
    }

    // Removes up to `limit` values from the front of key's sequence, passing each
    // to `out` in order; drops the key when none remain.  Returns how many.
    template <class Out>
    std::size_t take(const K& key, std::size_t limit, Out&& out) {
        if (m_size == 0 || limit == 0)
            return 0;
        const std::uint64_t h = m_hash(key);
        const std::size_t index = locate(key, h);
        if (index == npos)
            return 0;
        slot& s = m_slots[index];
        if (!is_multi(m_tags[index])) {
            out(std::move(s.first));
            remove_slot(index);
            return 1;
        }
        value_queue<V>& rest = *m_rest.find(s.key, h);
        const std::size_t n = std::min<std::size_t>(limit, 1 + rest.size());
        out(std::move(s.first));
        for (std::size_t i = 0; i + 1 < n; ++i)
            out(std::move(rest[i]));
        if (n == 1 + rest.size()) {
            remove_slot(index);
            return n;
        }
        // Partial: the new first value is rest[n-1]; the queue drops its n
        // oldest (O(n) amortised, whatever is left behind them).  (An emptied
        // side entry would read as free: the entry goes first.)
        s.first = std::move(rest[n - 1]);
        m_value_count -= n;
        m_spilled_values -= n;
        if (n == rest.size()) {
            m_rest.erase(s.key, h);
            set_tag(index, static_cast<std::uint8_t>(m_tags[index] & ~multi_bit));
        } else {
            rest.drop_front(n);
        }
        return n;
    }

    // Removes the key and all its values; returns how many values it had.
    std::size_t erase(const K& key) {
        return take(key, std::numeric_limits<std::size_t>::max(), [](auto&&) {});
    }

    // Replaces key's values with `values` (empty: removes the key).
    void assign(const K& key, std::span<const V> values) {
        erase(key);
        if (!values.empty())
            append(key, values.begin(), values.end());
    }

    // Iteration over the keys: each element is a pair (key, values_view),
    // in slot order; valid until the table changes.
    class const_iterator {
    public:
        using iterator_category = std::forward_iterator_tag;
        using value_type = std::pair<const K&, values_view>;
        using difference_type = std::ptrdiff_t;
        using reference = value_type;
        const_iterator() = default;
        value_type operator*() const { return m_table->entry(m_index); }
        const_iterator& operator++() {
            m_index = m_table->occupied_from(m_index + 1);
            return *this;
        }
        const_iterator operator++(int) {
            const_iterator before = *this;
            ++*this;
            return before;
        }
        bool operator==(const const_iterator& other) const { return m_index == other.m_index; }

    private:
        friend class multi_table;
        const_iterator(const multi_table* table, std::size_t index) : m_table(table), m_index(index) {}
        const multi_table* m_table = nullptr;
        std::size_t m_index = 0;
    };
    const_iterator begin() const { return const_iterator(this, occupied_from(0)); }
    const_iterator end() const { return const_iterator(this, m_slots.size()); }

    template <class Function>
    void for_each(Function&& function) const {
        for (std::size_t index = 0; index < m_slots.size(); ++index) {
            if (m_tags[index] != 0) {
                const auto [key, values] = entry(index);
                function(key, values);
            }
        }
    }

    // Removes everything and gives the memory back.
    void clear() {
        slot_array().swap(m_slots);
        tag_array().swap(m_tags);
        m_grow_at = 0;
        m_rest.clear();
        m_size = m_value_count = m_spilled_values = 0;
    }

    // Longest probe run (a diagnostic for hash quality).
    std::size_t longest_probe() const {
        std::size_t longest = 0;
        for (std::size_t index = 0; index < m_slots.size(); ++index) {
            if (m_tags[index] == 0)
                continue;
            const std::size_t h = home(m_hash(m_slots[index].key));
            const std::size_t distance = index >= h ? index - h : index + m_slots.size() - h;
            longest = std::max(longest, distance + 1);
        }
        return longest;
    }

private:
    static constexpr std::size_t npos = std::numeric_limits<std::size_t>::max();

    std::size_t occupied_from(std::size_t index) const {
        while (index < m_slots.size() && m_tags[index] == 0)
            ++index;
        return index;
    }
    std::pair<const K&, values_view> entry(std::size_t index) const {
        const slot& s = m_slots[index];
        return {s.key, values_view(&s.first, is_multi(m_tags[index]) ? m_rest.find(s.key, m_hash(s.key)) : nullptr)};
    }
    std::size_t home(std::uint64_t h) const { return reduce_range(h, m_slots.size()); }
    std::size_t next(std::size_t index) const { return index + 1 == m_slots.size() ? 0 : index + 1; }

    // Tags: 16 per probe step (group), read from a slot index on; m_tags holds
    // group - 1 more than the slots, copies of the first ones, so a group read
    // near the end wraps around without a test.
    static constexpr std::size_t group = 16;
    static constexpr std::uint8_t multi_bit = 0x80;
    // 1..127 from the hash's low 7 bits (0 reads as 1: 0 marks an empty slot).
    static std::uint8_t tag_of(std::uint64_t h) {
        const auto bits = static_cast<std::uint8_t>(h & 0x7f);
        return static_cast<std::uint8_t>(bits + (bits == 0));
    }
    static bool is_multi(std::uint8_t tag) { return (tag & multi_bit) != 0; }
    void set_tag(std::size_t index, std::uint8_t tag) {
        m_tags[index] = tag;
        if (index < group - 1)
            m_tags[m_slots.size() + index] = tag;
    }
    // Bit i set: the tag of slot index + i (wrapping), multi bit ignored, equals
    // `tag` (so `tag` 0 finds the empty slots).
    std::uint32_t match(std::size_t index, std::uint8_t tag) const {
#if defined(__SSE2__)
        const __m128i tags = _mm_loadu_si128(reinterpret_cast<const __m128i*>(m_tags.data() + index));
        const __m128i unflagged = _mm_and_si128(tags, _mm_set1_epi8(static_cast<char>(~multi_bit)));
        return static_cast<std::uint32_t>(
            _mm_movemask_epi8(_mm_cmpeq_epi8(unflagged, _mm_set1_epi8(static_cast<char>(tag)))));
#else
        std::uint32_t bits = 0;
        for (std::size_t i = 0; i < group; ++i)
            bits |= static_cast<std::uint32_t>((m_tags[index + i] & ~multi_bit) == tag) << i;
        return bits;
#endif
    }

    // The slot that holds `key` (second: true), or the empty slot that ends
    // its run, where it would go (second: false).  The table is never full.
    std::pair<std::size_t, bool> probe(const K& key, std::uint64_t h) const {
        const std::uint8_t tag = tag_of(h);
        const std::size_t capacity = m_slots.size();
        std::size_t index = home(h);
        // A hit at home, the common one, is decided by the home slot alone,
        // whose load then starts beside the tags' (the branch is predicted).
        // There is no early exit for an empty home: its branch would be
        // unpredictable at any useful load, and a misprediction behind a cache
        // miss stalls the lookups after it; the group test below decides that.
        if ((m_tags[index] & ~multi_bit) == tag && m_equal(m_slots[index].key, key))
            return {index, true};
        std::uint32_t skip = 1;  // the home slot, already compared
        for (;;) {
            const std::uint32_t empties = match(index, 0);
            // Only tags before the run's end can be the key's.
            std::uint32_t candidates = match(index, tag) & ~skip & (empties ? (empties & (0u - empties)) - 1 : ~0u);
            skip = 0;
            while (candidates != 0) {
                std::size_t at = index + static_cast<std::size_t>(std::countr_zero(candidates));
                at = at >= capacity ? at - capacity : at;
                if (m_equal(m_slots[at].key, key))
                    return {at, true};
                candidates &= candidates - 1;
            }
            if (empties != 0) {
                const std::size_t at = index + static_cast<std::size_t>(std::countr_zero(empties));
                return {at >= capacity ? at - capacity : at, false};
            }
            index += group;
            index = index >= capacity ? index - capacity : index;
        }
    }

    std::size_t locate(const K& key, std::uint64_t h) const {
        const auto [index, found] = probe(key, h);
        return found ? index : npos;
    }

    // The side-table values of the key in slot `index`, whose hash is `h`
    // (null: it has one value).
    const value_queue<V>* rest_at(std::size_t index, std::uint64_t h) const {
        return is_multi(m_tags[index]) ? m_rest.find(m_slots[index].key, h) : nullptr;
    }
    value_queue<V>* rest_at(std::size_t index, std::uint64_t h) {
        return const_cast<value_queue<V>*>(std::as_const(*this).rest_at(index, h));
    }

    void grow_if_needed() {
        if (m_size + 1 > m_grow_at) [[unlikely]]
            rehash(std::max<std::size_t>(m_slots.size() * 2, group));
    }

    // Makes the empty slot `index` the key's, with its first value.
    void claim(std::size_t index, const K& key, std::uint64_t h, const V& value) {
        slot& s = m_slots[index];
        s.first = value;
        s.key = key;
        set_tag(index, tag_of(h));
        m_hash_ceiling = m_size == 0 ? h : std::max(m_hash_ceiling, h);
        ++m_size;
        ++m_value_count;
    }

    // Appends one value to the key (adding the key if new); returns its slot.
    std::size_t add(const K& key, std::uint64_t hash, const V& value) {
        grow_if_needed();
        const auto [index, found] = probe(key, hash);
        if (!found) {
            claim(index, key, hash, value);
            return index;
        }
        spill(index, hash, value);
        return index;
    }

    // Appends `value` to the side-table values of the key in slot `index`
    // (hash h), making its entry if it had one value; returns those values.
    // If the append throws, the key keeps its values.
    value_queue<V>& spill(std::size_t index, std::uint64_t h, const V& value) {
        value_queue<V>* rest = nullptr;
        if (is_multi(m_tags[index])) {
            rest = m_rest.find(m_slots[index].key, h);
            rest->push_back(value);
        } else {
            rest = &m_rest.create(m_slots[index].key, h, value);
            set_tag(index, static_cast<std::uint8_t>(m_tags[index] | multi_bit));
        }
        ++m_value_count;
        ++m_spilled_values;
        return *rest;
    }

    // The key in slot `index` (hash h) is back to its one value: forget its side entry.
    void drop_rest(std::size_t index, std::uint64_t h) {
        const std::size_t spilled = m_rest.find(m_slots[index].key, h)->size();
        m_value_count -= spilled;
        m_spilled_values -= spilled;
        m_rest.erase(m_slots[index].key, h);
        set_tag(index, static_cast<std::uint8_t>(m_tags[index] & ~multi_bit));
    }

    void remove_slot(std::size_t hole) {
        if (is_multi(m_tags[hole]))
            drop_rest(hole, m_hash(m_slots[hole].key));
        --m_value_count;
        --m_size;
        // Backward shift: pull later members of the run into the hole while doing
        // so keeps each between its home and its position.
        std::size_t index = hole;
        for (;;) {
            index = next(index);
            if (m_tags[index] == 0)
                break;
            slot& candidate = m_slots[index];
            const std::size_t h = home(m_hash(candidate.key));
            const bool movable = hole <= index ? (h <= hole || h > index) : (h <= hole && h > index);
            if (movable) {
                m_slots[hole] = std::move(candidate);
                set_tag(hole, m_tags[index]);
                hole = index;
            }
        }
        m_slots[hole] = slot{};
        set_tag(hole, 0);
    }

    void rehash(std::size_t new_capacity) {
        slot_array old(new_capacity);
        tag_array old_tags(new_capacity + group - 1, 0);
        old.swap(m_slots);
        old_tags.swap(m_tags);
        m_grow_at = static_cast<std::size_t>(static_cast<double>(new_capacity) * m_max_load);
        for (std::size_t from = 0; from < old.size(); ++from) {
            if (old_tags[from] == 0)
                continue;
            // The tag depends on the hash and the multi bit only: it moves as is.
            std::size_t index = home(m_hash(old[from].key));
            while (m_tags[index] != 0)
                index = next(index);
            m_slots[index] = std::move(old[from]);
            set_tag(index, old_tags[from]);
        }
    }

    slot_array m_slots;
    tag_array m_tags;                  // m_slots.size() + group - 1 (see probe)
    rest_map m_rest;                   // the multi-bit keys' values 2..n
    std::size_t m_size = 0;
    std::size_t m_value_count = 0;
    std::size_t m_spilled_values = 0;  // values held in m_rest
    std::size_t m_grow_at = 0;         // size at which the next insert of a new key grows the table
    std::uint64_t m_hash_ceiling = 0;  // >= every stored key's hash (place_if_above); any value when empty
    // Slots a table may have: a power of two whose bytes fit in size_t with room to double.
    static constexpr std::size_t max_slots = std::bit_floor(std::numeric_limits<std::size_t>::max() / sizeof(slot)) >> 2;
    double m_max_load;
    [[no_unique_address]] Hash m_hash;
    [[no_unique_address]] Equal m_equal;
};

}  // namespace mpidict::local
