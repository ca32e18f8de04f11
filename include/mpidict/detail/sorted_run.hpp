#pragma once
// A skiplist_map node's sorted run: up to G (G + 1 while splitting) entries of
// (key, value, expiry) in key order (memcmp order of the encoded keys), packed
// into one byte string instead of a std::string pair per entry.
//
// Two layouts (stop 68, issue 43's memory target):
//
// * Fixed width (the common case: fixed-size C++ keys and values), used while
//   every entry has the same key width and the same value width: m_bytes holds
//   [key][value] back to back in key order, entry i at i * (key width + value
//   width).  No lengths, no offsets, no prefix array: an entry's 8-byte prefix
//   is read from its key bytes.  An 8-byte key with an 8-byte value costs 16
//   bytes.
// * Variable width (the general case): m_bytes holds [u32 key bytes][u32 value
//   bytes][key][value] per entry; m_variable holds offsets[i] (where entry i
//   starts) and prefixes[i] (entry i's first 8 key bytes as a big-endian
//   number, missing bytes 0).  An 8+8 pair costs 36 bytes (8 of lengths, 4 of
//   offset, 8 of prefix).
//
// An empty run is fixed width with no widths yet; its first entry sets them.
// An entry of another width converts the run to the variable layout once (it
// stays variable until it is emptied or rebuilt: erase_unless and the merges
// of batch inserts build new runs, fixed width again when the widths agree).
// m_expires is empty while no entry has an expiry, else one per entry, in
// both layouts.  Prefix order agrees with key order, so a lookup compares
// numbers and reads key bytes only where prefixes tie and at the end.
// Inserting or erasing in the middle moves the bytes after it (a node holds at
// most G entries, so at most a few KiB move).  Views returned by key() and
// value() are valid until the run is next changed.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mpidict/detail/prefetch.hpp"
#include "mpidict/error.hpp"

namespace mpidict::detail {

class sorted_run {
    struct variable_index {
        std::vector<std::uint32_t> offsets;
        std::vector<std::uint64_t> prefixes;
    };
    std::size_t stride() const { return std::size_t{m_key_width} + m_value_width; }
    // Calls f with the run's prefix reader (index -> prefix), chosen once per
    // call: the variable layout's array; fixed width, the key bytes at a
    // stride (8 bytes loaded and the bytes past a short key masked off, when
    // an entry has 8 bytes to load); else prefix_of on the key.  (Defined
    // before the calls that deduce its type.)
    template <class F>
    decltype(auto) with_prefixes(F&& f) const {
        if (m_variable) {
            const std::uint64_t* prefixes = m_variable->prefixes.data();
            return f([prefixes](std::size_t index) { return prefixes[index]; });
        }
        if (stride() >= 8) {
            const char* base = m_bytes.data();
            const std::size_t step = stride();
            const std::uint64_t mask = m_key_width >= 8 ? ~std::uint64_t{0}
                                       : m_key_width == 0 ? 0
                                                          : ~std::uint64_t{0} << (64 - 8 * m_key_width);
            return f([base, step, mask](std::size_t index) { return big_endian(base + index * step) & mask; });
        }
        return f([this](std::size_t index) { return prefix_of(key(index)); });
    }

public:
    // The variable layout's and the wire's per-entry header: two u32 lengths.
    static constexpr std::size_t entry_header_bytes = 8;

    sorted_run() = default;
    sorted_run(const sorted_run& other)
        : m_bytes(other.m_bytes),
          m_expires(other.m_expires),
          m_variable(other.m_variable ? std::make_unique<variable_index>(*other.m_variable) : nullptr),
          m_size(other.m_size),
          m_key_width(other.m_key_width),
          m_value_width(other.m_value_width),
          m_reserve(other.m_reserve),
          m_reserve_bytes(other.m_reserve_bytes) {}
    sorted_run(sorted_run&&) noexcept = default;
    sorted_run& operator=(const sorted_run& other) {
        if (this != &other)
            *this = sorted_run(other);
        return *this;
    }
    sorted_run& operator=(sorted_run&&) noexcept = default;

    std::size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    // True while every entry has the same key width and value width (the
    // fixed-width layout); then key_width() and value_width() are those widths.
    bool fixed_width() const { return !m_variable; }
    std::size_t key_width() const { return m_key_width; }
    std::size_t value_width() const { return m_value_width; }
    // Fixed width only: entry `index`'s bytes, [key][value], and those of the
    // entries after it at a stride of key_width() + value_width().
    const char* fixed_entry(std::size_t index) const { return m_bytes.data() + index * stride(); }

    std::string_view key(std::size_t index) const {
        if (!m_variable)
            return {m_bytes.data() + index * stride(), m_key_width};
        const char* at = m_bytes.data() + m_variable->offsets[index];
        return {at + entry_header_bytes, load(at)};
    }
    std::string_view value(std::size_t index) const {
        if (!m_variable)
            return {m_bytes.data() + index * stride() + m_key_width, m_value_width};
        const char* at = m_bytes.data() + m_variable->offsets[index];
        return {at + entry_header_bytes + load(at), load(at + 4)};
    }
    double expires(std::size_t index) const { return m_expires.empty() ? 0 : m_expires[index]; }

    // The first 8 bytes of a key as a big-endian number (missing bytes 0): if
    // prefix(a) < prefix(b) then a < b; equal prefixes decide nothing.
    static std::uint64_t prefix_of(std::string_view key) {
        if (key.size() >= 8)
            return big_endian(key.data());
        unsigned char bytes[8] = {};
        if (!key.empty())  // (an empty view's data() may be null)
            std::memcpy(bytes, key.data(), key.size());
        std::uint64_t value = 0;
        for (unsigned char byte : bytes)
            value = value << 8 | byte;
        return value;
    }

    // a.compare(b) for keys whose prefixes (prefix_of) are pa and pb: the
    // prefixes decide unless they are equal; then two keys of at most 8 bytes
    // differ only in length (the shorter one is the longer one's beginning,
    // as its missing bytes count as zeros), and longer ones compare bytes.
    static int compare(std::string_view a, std::uint64_t pa, std::string_view b, std::uint64_t pb) {
        if (pa != pb)
            return pa < pb ? -1 : 1;
        if (a.size() <= 8 && b.size() <= 8)
            return a.size() < b.size() ? -1 : (a.size() > b.size() ? 1 : 0);
        return a.compare(b);
    }

    // The first index at or after `from` whose key is not below `key`.  With
    // `to`, the prefixes are searched in [from, to) only: the caller knows the
    // first prefix not below the key's lies there, or that `to` is size().
    std::size_t lower_bound(std::string_view wanted, std::size_t from = 0,
                            std::size_t to = std::numeric_limits<std::size_t>::max()) const {
        return lower_bound(wanted, prefix_of(wanted), from, to);
    }
    std::size_t lower_bound(std::string_view wanted, std::uint64_t prefix, std::size_t from, std::size_t to) const {
        return with_prefixes([&](auto prefix_at) { return lower_bound_in(prefix_at, wanted, prefix, from, to); });
    }
    // lower_bound for a key known not to lie below index `from`'s key: gallops
    // forward from `from` (steps 1, 2, 4, ...) and halves the last step, so a
    // series of ascending keys in one run costs about the distance moved.
    std::size_t seek(std::string_view wanted, std::uint64_t prefix, std::size_t from) const {
        return with_prefixes([&](auto prefix_at) {
            std::size_t low = std::min(from, size()), step = 1;
            while (low + step <= size() && prefix_at(low + step - 1) < prefix) {
                low += step;
                step *= 2;
            }
            return lower_bound_in(prefix_at, wanted, prefix, low, std::min(size(), low + step));
        });
    }
    // Asks the processor to start loading what a lookup reads first (batched
    // lookups issue this for a later key before handling the current one).
    void prefetch() const {
        if (m_variable) {
            prefetch_bytes(m_variable->prefixes.data(), m_variable->prefixes.size() * sizeof(std::uint64_t), 1024);
            prefetch_bytes(m_variable->offsets.data(), m_variable->offsets.size() * sizeof(std::uint32_t), 512);
        }
        prefetch_bytes(m_bytes.data(), m_bytes.size(), 2048);
    }
    bool holds_at(std::size_t index, std::string_view wanted) const {
        return holds_at(index, wanted, prefix_of(wanted));
    }
    bool holds_at(std::size_t index, std::string_view wanted, std::uint64_t prefix) const {
        return index < size() && this->prefix(index) == prefix && compare(key(index), prefix, wanted, prefix) == 0;
    }

    // Inserts before `index` (the caller keeps the order).  `key_bytes` and
    // `value_bytes` must not view this run.
    void insert(std::size_t index, std::string_view key_bytes, std::string_view value_bytes, double expiry) {
        const std::size_t bytes = entry_header_bytes + key_bytes.size() + value_bytes.size();
        if (key_bytes.size() > std::numeric_limits<std::uint32_t>::max() ||
            value_bytes.size() > std::numeric_limits<std::uint32_t>::max() ||
            packed_bytes() + bytes > std::numeric_limits<std::uint32_t>::max())
            throw invalid_argument_error("mpidict: skiplist_map node would hold more than 4 GiB");
        if (!m_variable) {
            if (m_size == 0) {
                m_key_width = static_cast<std::uint32_t>(key_bytes.size());
                m_value_width = static_cast<std::uint32_t>(value_bytes.size());
                if (m_reserve > 1)
                    m_bytes.reserve(std::size_t{m_reserve} * stride());
            } else if (key_bytes.size() != m_key_width || value_bytes.size() != m_value_width) {
                to_variable();
            }
        }
        if (!m_variable) {
            if (index == m_size) {
                m_bytes.append(key_bytes);
                m_bytes.append(value_bytes);
            } else {
                m_bytes.insert(index * stride(), stride(), '\0');
                char* out = m_bytes.data() + index * stride();
                copy(out, key_bytes);
                copy(out + m_key_width, value_bytes);
            }
        } else {
            auto& offsets = m_variable->offsets;
            const std::size_t at = index < size() ? offsets[index] : m_bytes.size();
            m_bytes.insert(at, bytes, '\0');
            char* out = m_bytes.data() + at;
            store(out, key_bytes.size());
            store(out + 4, value_bytes.size());
            copy(out + entry_header_bytes, key_bytes);
            copy(out + entry_header_bytes + key_bytes.size(), value_bytes);
            offsets.insert(offsets.begin() + static_cast<std::ptrdiff_t>(index), static_cast<std::uint32_t>(at));
            m_variable->prefixes.insert(m_variable->prefixes.begin() + static_cast<std::ptrdiff_t>(index),
                                        prefix_of(key_bytes));
            for (std::size_t later = index + 1; later < offsets.size(); ++later)
                offsets[later] += static_cast<std::uint32_t>(bytes);
        }
        ++m_size;
        if (m_size >= m_reserve)  // (the hint is used up: no stale room for a later conversion)
            m_reserve = m_reserve_bytes = 0;
        if (expiry != 0 && m_expires.empty())
            m_expires.assign(m_size - 1, 0.0);  // (still empty for the first entry)
        if (expiry != 0 || !m_expires.empty())
            m_expires.insert(m_expires.begin() + static_cast<std::ptrdiff_t>(index), expiry);
    }
    void push_back(std::string_view key_bytes, std::string_view value_bytes, double expiry) {
        insert(size(), key_bytes, value_bytes, expiry);
    }
    // Replaces entry `index`'s value and expiry (its key stays).  A value of
    // another width moves the entry (and makes a run of more than one entry
    // variable-width).
    void assign(std::size_t index, std::string_view value_bytes, double expiry) {
        if (value(index).size() == value_bytes.size()) {
            if (!value_bytes.empty())
                std::memcpy(const_cast<char*>(value(index).data()), value_bytes.data(), value_bytes.size());
            set_expires(index, expiry);
            return;
        }
        const std::string key_copy(key(index));
        erase(index, index + 1);
        insert(index, key_copy, value_bytes, expiry);
    }
    // Sets entry `index`'s expiry (0: none), its key and value unchanged.
    void set_expires(std::size_t index, double expiry) {
        if (expiry != 0 && m_expires.empty())
            m_expires.assign(m_size, 0.0);
        if (!m_expires.empty())
            m_expires[index] = expiry;
    }
    // Removes entries [first, last).
    void erase(std::size_t first, std::size_t last) {
        if (first >= last)
            return;
        if (!m_variable) {
            m_bytes.erase(first * stride(), (last - first) * stride());
        } else {
            auto& offsets = m_variable->offsets;
            auto& prefixes = m_variable->prefixes;
            const std::size_t begin = offsets[first];
            const std::size_t end = last < size() ? offsets[last] : m_bytes.size();
            const std::size_t bytes = end - begin;
            m_bytes.erase(begin, bytes);
            offsets.erase(offsets.begin() + static_cast<std::ptrdiff_t>(first),
                          offsets.begin() + static_cast<std::ptrdiff_t>(last));
            prefixes.erase(prefixes.begin() + static_cast<std::ptrdiff_t>(first),
                           prefixes.begin() + static_cast<std::ptrdiff_t>(last));
            for (std::size_t later = first; later < offsets.size(); ++later)
                offsets[later] -= static_cast<std::uint32_t>(bytes);
        }
        m_size -= static_cast<std::uint32_t>(last - first);
        if (!m_expires.empty())
            m_expires.erase(m_expires.begin() + static_cast<std::ptrdiff_t>(first),
                            m_expires.begin() + static_cast<std::ptrdiff_t>(last));
        if (m_size == 0) {
            clear();
        } else if (m_bytes.capacity() > 2 * m_bytes.size() + 256) {
            m_bytes.shrink_to_fit();  // a node that lost most of its entries gives the memory back
            if (m_variable) {
                m_variable->offsets.shrink_to_fit();
                m_variable->prefixes.shrink_to_fit();
            }
        }
    }
    // Keeps the entries for which keep(index) is true, in order (the run is
    // rebuilt: fixed width again if the kept entries' widths agree).
    template <class Keep>
    void erase_unless(Keep&& keep) {
        sorted_run kept;
        kept.reserve(size(), packed_bytes());
        for (std::size_t index = 0; index < size(); ++index)
            if (keep(index))
                kept.push_back(key(index), value(index), expires(index));
        kept.m_reserve = kept.m_reserve_bytes = 0;  // (fewer kept: no hint left for later entries)
        *this = std::move(kept);
    }
    // Gives back spare capacity (after a split moved half the entries away).
    void shrink_to_fit() {
        m_bytes.shrink_to_fit();
        m_expires.shrink_to_fit();
        if (m_variable) {
            m_variable->offsets.shrink_to_fit();
            m_variable->prefixes.shrink_to_fit();
        }
    }
    void clear() {
        std::string().swap(m_bytes);
        std::vector<double>().swap(m_expires);
        m_variable.reset();
        m_size = m_key_width = m_value_width = m_reserve = m_reserve_bytes = 0;
    }
    // Room for `entries` entries of `bytes` bytes in the variable layout
    // (packed_bytes()'s measure); a fixed-width run takes entries × its width.
    void reserve(std::size_t entries, std::size_t bytes) {
        if (m_variable) {
            m_variable->offsets.reserve(entries);
            m_variable->prefixes.reserve(entries);
            m_bytes.reserve(bytes);
        } else {
            // Kept for a conversion to the variable layout while the run fills
            // (to_variable), which would otherwise grow its arrays by doubling.
            m_reserve = static_cast<std::uint32_t>(std::min<std::size_t>(entries, 1u << 30));
            m_reserve_bytes = static_cast<std::uint32_t>(std::min<std::size_t>(bytes, 0xffffffffu));
            if (m_size != 0)
                m_bytes.reserve(entries * stride());
        }
    }
    // Bytes of the entries [first, last) as the variable layout holds them,
    // {u32 key bytes, u32 value bytes, key, value} each (as many as the
    // wire's {u32, key, u32, value}), whichever layout the run has.
    std::size_t packed_bytes(std::size_t first, std::size_t last) const {
        if (first >= last)
            return 0;
        if (!m_variable)
            return (last - first) * (entry_header_bytes + stride());
        const auto& offsets = m_variable->offsets;
        return (last < size() ? offsets[last] : m_bytes.size()) - offsets[first];
    }
    std::size_t packed_bytes() const { return packed_bytes(0, size()); }
    std::uint64_t prefix(std::size_t index) const {
        return with_prefixes([&](auto prefix_at) { return prefix_at(index); });
    }
    // Heap bytes this run holds (capacities).
    std::size_t memory_bytes() const {
        std::size_t bytes = m_bytes.capacity() + m_expires.capacity() * sizeof(double);
        if (m_variable)
            bytes += sizeof(variable_index) + m_variable->offsets.capacity() * sizeof(std::uint32_t) +
                     m_variable->prefixes.capacity() * sizeof(std::uint64_t);
        return bytes;
    }

private:

    template <class PrefixAt>
    std::size_t lower_bound_in(PrefixAt prefix_at, std::string_view wanted, std::uint64_t prefix, std::size_t from,
                               std::size_t to) const {
        // Entries with a smaller prefix are below, a larger one above: only the
        // (usually empty or single) run of equal prefixes needs the key bytes.
        std::size_t low = std::min(from, size());
        const std::size_t end = std::max(low, std::min(to, size()));
        // Branch-free halving (the comparisons of a lookup are unpredictable).
        for (std::size_t length = end - low; length > 1;) {
            const std::size_t half = length / 2;
            low = prefix_at(low + half - 1) < prefix ? low + half : low;
            length -= half;
        }
        if (low < end && prefix_at(low) < prefix)
            ++low;
        while (low < size() && prefix_at(low) == prefix && compare(key(low), prefix, wanted, prefix) < 0)
            ++low;
        return low;
    }
    // The variable layout from the fixed one (an entry of another width came).
    void to_variable() {
        // The room reserve() asked for, if the run is still filling up to it
        // (a merge of batch inserts reserves the whole merged run).
        auto index = std::make_unique<variable_index>();
        index->offsets.reserve(std::max<std::size_t>(m_size + std::size_t{1}, m_reserve));
        index->prefixes.reserve(std::max<std::size_t>(m_size + std::size_t{1}, m_reserve));
        std::string bytes;
        bytes.reserve(std::max<std::size_t>(packed_bytes(), m_reserve_bytes));
        m_reserve = m_reserve_bytes = 0;
        for (std::size_t entry = 0; entry < m_size; ++entry) {
            const std::string_view key_bytes = key(entry), value_bytes = value(entry);
            index->offsets.push_back(static_cast<std::uint32_t>(bytes.size()));
            index->prefixes.push_back(prefix_of(key_bytes));
            char header[entry_header_bytes];
            store(header, key_bytes.size());
            store(header + 4, value_bytes.size());
            bytes.append(header, entry_header_bytes);
            bytes.append(key_bytes);
            bytes.append(value_bytes);
        }
        m_bytes.swap(bytes);
        m_variable = std::move(index);
        m_key_width = m_value_width = 0;
    }
    static std::uint64_t big_endian(const char* at) {
        std::uint64_t word;
        std::memcpy(&word, at, sizeof word);
        if constexpr (std::endian::native == std::endian::little)
            return __builtin_bswap64(word);
        else
            return word;
    }
    static void copy(char* out, std::string_view bytes) {
        if (!bytes.empty())
            std::memcpy(out, bytes.data(), bytes.size());
    }
    static void prefetch_bytes(const void* data, std::size_t bytes, std::size_t at_most) {
        const char* first = static_cast<const char*>(data);
        for (std::size_t at = 0; at < bytes && at < at_most; at += 64)
            prefetch_line(first + at);
    }
    static std::uint32_t load(const char* at) {
        std::uint32_t value;
        std::memcpy(&value, at, sizeof value);
        return value;
    }
    static void store(char* at, std::size_t value) {
        const auto narrow = static_cast<std::uint32_t>(value);
        std::memcpy(at, &narrow, sizeof narrow);
    }

    std::string m_bytes;
    std::vector<double> m_expires;
    std::unique_ptr<variable_index> m_variable;  // null: the fixed-width layout
    std::uint32_t m_size = 0;
    std::uint32_t m_key_width = 0, m_value_width = 0;  // fixed width: every entry's
    std::uint32_t m_reserve = 0;        // entries reserve() asked for, until the run holds them
    std::uint32_t m_reserve_bytes = 0;  // and their bytes in the variable layout (to_variable)
};

// Orders (prefix, index) pairs by the `digits` most significant bytes in
// which the prefixes differ (all 8: sorted by prefix), stably, least
// significant of those first; the bytes every prefix shares (e.g. the high
// bytes of small integers) cost nothing.  `scratch` is reused between calls.
// (Items: a vector of std::pair<std::uint64_t, std::uint32_t>, any allocator.)
template <class Items>
void radix_sort_by_prefix(Items& items, Items& scratch, unsigned digits = 8) {
    if (items.size() < 2)
        return;
    std::uint64_t differ = 0;
    for (const auto& item : items)
        differ |= item.first ^ items.front().first;
    unsigned lowest = 0;  // the lowest byte taken: `digits` differing bytes from the top
    for (unsigned shift = 64, taken = 0; shift > 0 && taken < digits;) {
        shift -= 8;
        if (((differ >> shift) & 0xff) != 0) {
            ++taken;
            lowest = shift;
        }
    }
    scratch.resize(items.size());
    for (unsigned shift = lowest; shift < 64; shift += 8) {
        if (((differ >> shift) & 0xff) == 0)
            continue;
        std::size_t counts[257] = {};
        for (const auto& item : items)
            ++counts[((item.first >> shift) & 0xff) + 1];
        for (std::size_t digit = 1; digit < 257; ++digit)
            counts[digit] += counts[digit - 1];
        for (const auto& item : items)
            scratch[counts[(item.first >> shift) & 0xff]++] = item;
        items.swap(scratch);
    }
}

}  // namespace mpidict::detail
