#pragma once
// A skiplist_map node's sorted run: up to G (G + 1 while splitting) entries of
// (key, value, expiry) in key order (memcmp order of the encoded keys), packed
// into one byte string instead of a std::string pair per entry.
//
// Layout: m_bytes holds the entries back to back in key order, each as
// [u32 key bytes][u32 value bytes][key][value]; m_offsets[i] is where entry i
// starts; m_expires is empty while no entry has an expiry, else parallel to
// m_offsets.  m_prefixes[i] is entry i's first 8 key bytes as a big-endian
// number (missing bytes 0): prefix order agrees with key order, so a lookup
// compares numbers and reads key bytes only where prefixes tie and at the end.
// An 8-byte key with an 8-byte value costs 36 bytes (8 of lengths, 4 of
// offset, 8 of prefix) instead of about 72 with two std::strings and an expiry.
// Inserting or erasing in the middle moves the bytes after it (a node holds at
// most G entries, so at most a few KiB move).  Views returned by key() and
// value() are valid until the run is next changed.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mpidict/detail/prefetch.hpp"
#include "mpidict/error.hpp"

namespace mpidict::detail {

class sorted_run {
public:
    static constexpr std::size_t entry_header_bytes = 8;

    std::size_t size() const { return m_offsets.size(); }
    bool empty() const { return m_offsets.empty(); }

    std::string_view key(std::size_t index) const {
        const char* at = m_bytes.data() + m_offsets[index];
        return {at + entry_header_bytes, load(at)};
    }
    std::string_view value(std::size_t index) const {
        const char* at = m_bytes.data() + m_offsets[index];
        return {at + entry_header_bytes + load(at), load(at + 4)};
    }
    double expires(std::size_t index) const { return m_expires.empty() ? 0 : m_expires[index]; }

    // The first 8 bytes of a key as a big-endian number (missing bytes 0): if
    // prefix(a) < prefix(b) then a < b; equal prefixes decide nothing.
    static std::uint64_t prefix_of(std::string_view key) {
        if (key.size() >= 8) {
            std::uint64_t word;
            std::memcpy(&word, key.data(), sizeof word);
            if constexpr (std::endian::native == std::endian::little)
                return __builtin_bswap64(word);
            else
                return word;
        }
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
        // Entries with a smaller prefix are below, a larger one above: only the
        // (usually empty or single) run of equal prefixes needs the key bytes.
        std::size_t low = std::min(from, size());
        const std::size_t end = std::max(low, std::min(to, size()));
        // Branch-free halving (the comparisons of a lookup are unpredictable).
        for (std::size_t length = end - low; length > 1;) {
            const std::size_t half = length / 2;
            low = m_prefixes[low + half - 1] < prefix ? low + half : low;
            length -= half;
        }
        if (low < end && m_prefixes[low] < prefix)
            ++low;
        while (low < size() && m_prefixes[low] == prefix && compare(key(low), prefix, wanted, prefix) < 0)
            ++low;
        return low;
    }
    // lower_bound for a key known not to lie below index `from`'s key: gallops
    // forward from `from` (steps 1, 2, 4, ...) and halves the last step, so a
    // series of ascending keys in one run costs about the distance moved.
    std::size_t seek(std::string_view wanted, std::uint64_t prefix, std::size_t from) const {
        std::size_t low = std::min(from, size()), step = 1;
        while (low + step <= size() && m_prefixes[low + step - 1] < prefix) {
            low += step;
            step *= 2;
        }
        return lower_bound(wanted, prefix, low, std::min(size(), low + step));
    }
    // Asks the processor to start loading what a lookup reads first (batched
    // lookups issue this for a later key before handling the current one).
    void prefetch() const {
        prefetch_bytes(m_prefixes.data(), m_prefixes.size() * sizeof(std::uint64_t), 1024);
        prefetch_bytes(m_offsets.data(), m_offsets.size() * sizeof(std::uint32_t), 512);
        prefetch_bytes(m_bytes.data(), m_bytes.size(), 2048);
    }
    bool holds_at(std::size_t index, std::string_view wanted) const {
        return holds_at(index, wanted, prefix_of(wanted));
    }
    bool holds_at(std::size_t index, std::string_view wanted, std::uint64_t prefix) const {
        return index < size() && m_prefixes[index] == prefix && compare(key(index), prefix, wanted, prefix) == 0;
    }

    // Inserts before `index` (the caller keeps the order).  `key_bytes` and
    // `value_bytes` must not view this run.
    void insert(std::size_t index, std::string_view key_bytes, std::string_view value_bytes, double expiry) {
        const std::size_t bytes = entry_header_bytes + key_bytes.size() + value_bytes.size();
        if (key_bytes.size() > std::numeric_limits<std::uint32_t>::max() ||
            value_bytes.size() > std::numeric_limits<std::uint32_t>::max() ||
            m_bytes.size() + bytes > std::numeric_limits<std::uint32_t>::max())
            throw invalid_argument_error("mpidict: skiplist_map node would hold more than 4 GiB");
        const std::size_t at = index < size() ? m_offsets[index] : m_bytes.size();
        m_bytes.insert(at, bytes, '\0');
        char* out = m_bytes.data() + at;
        store(out, key_bytes.size());
        store(out + 4, value_bytes.size());
        if (!key_bytes.empty())
            std::memcpy(out + entry_header_bytes, key_bytes.data(), key_bytes.size());
        if (!value_bytes.empty())
            std::memcpy(out + entry_header_bytes + key_bytes.size(), value_bytes.data(), value_bytes.size());
        m_offsets.insert(m_offsets.begin() + static_cast<std::ptrdiff_t>(index), static_cast<std::uint32_t>(at));
        m_prefixes.insert(m_prefixes.begin() + static_cast<std::ptrdiff_t>(index), prefix_of(key_bytes));
        for (std::size_t later = index + 1; later < m_offsets.size(); ++later)
            m_offsets[later] += static_cast<std::uint32_t>(bytes);
        if (expiry != 0 && m_expires.empty())
            m_expires.assign(m_offsets.size() - 1, 0.0);  // (still empty for the first entry)
        if (expiry != 0 || !m_expires.empty())
            m_expires.insert(m_expires.begin() + static_cast<std::ptrdiff_t>(index), expiry);
    }
    void push_back(std::string_view key_bytes, std::string_view value_bytes, double expiry) {
        insert(size(), key_bytes, value_bytes, expiry);
    }
    // Replaces entry `index`'s value and expiry (its key stays).
    void assign(std::size_t index, std::string_view value_bytes, double expiry) {
        const char* at = m_bytes.data() + m_offsets[index];
        if (load(at + 4) == value_bytes.size()) {
            if (!value_bytes.empty())
                std::memcpy(m_bytes.data() + m_offsets[index] + entry_header_bytes + load(at), value_bytes.data(),
                        value_bytes.size());
            if (expiry != 0 && m_expires.empty())
                m_expires.assign(m_offsets.size(), 0.0);
            if (!m_expires.empty())
                m_expires[index] = expiry;
            return;
        }
        const std::string key_copy(key(index));
        erase(index, index + 1);
        insert(index, key_copy, value_bytes, expiry);
    }
    // Sets entry `index`'s expiry (0: none), its key and value unchanged.
    void set_expires(std::size_t index, double expiry) {
        if (expiry != 0 && m_expires.empty())
            m_expires.assign(m_offsets.size(), 0.0);
        if (!m_expires.empty())
            m_expires[index] = expiry;
    }
    // Removes entries [first, last).
    void erase(std::size_t first, std::size_t last) {
        if (first >= last)
            return;
        const std::size_t begin = m_offsets[first];
        const std::size_t end = last < size() ? m_offsets[last] : m_bytes.size();
        const std::size_t bytes = end - begin;
        m_bytes.erase(begin, bytes);
        m_offsets.erase(m_offsets.begin() + static_cast<std::ptrdiff_t>(first),
                        m_offsets.begin() + static_cast<std::ptrdiff_t>(last));
        m_prefixes.erase(m_prefixes.begin() + static_cast<std::ptrdiff_t>(first),
                         m_prefixes.begin() + static_cast<std::ptrdiff_t>(last));
        for (std::size_t later = first; later < m_offsets.size(); ++later)
            m_offsets[later] -= static_cast<std::uint32_t>(bytes);
        if (!m_expires.empty())
            m_expires.erase(m_expires.begin() + static_cast<std::ptrdiff_t>(first),
                            m_expires.begin() + static_cast<std::ptrdiff_t>(last));
        if (m_offsets.empty()) {
            clear();
        } else if (m_bytes.capacity() > 2 * m_bytes.size() + 256) {
            m_bytes.shrink_to_fit();  // a node that lost most of its entries gives the memory back
            m_offsets.shrink_to_fit();
            m_prefixes.shrink_to_fit();
        }
    }
    // Keeps the entries for which keep(index) is true, in order.
    template <class Keep>
    void erase_unless(Keep&& keep) {
        sorted_run kept;
        kept.reserve(size(), m_bytes.size());
        for (std::size_t index = 0; index < size(); ++index)
            if (keep(index))
                kept.push_back(key(index), value(index), expires(index));
        *this = std::move(kept);
    }
    // Gives back spare capacity (after a split moved half the entries away).
    void shrink_to_fit() {
        m_bytes.shrink_to_fit();
        m_offsets.shrink_to_fit();
        m_prefixes.shrink_to_fit();
        m_expires.shrink_to_fit();
    }
    void clear() {
        std::string().swap(m_bytes);
        std::vector<std::uint32_t>().swap(m_offsets);
        std::vector<std::uint64_t>().swap(m_prefixes);
        std::vector<double>().swap(m_expires);
    }
    void reserve(std::size_t entries, std::size_t bytes) {
        m_offsets.reserve(entries);
        m_prefixes.reserve(entries);
        m_bytes.reserve(bytes);
    }
    // Bytes of the packed entries (keys, values and their lengths).
    std::size_t packed_bytes() const { return m_bytes.size(); }
    std::uint64_t prefix(std::size_t index) const { return m_prefixes[index]; }
    // Heap bytes this run holds (capacities).
    std::size_t memory_bytes() const {
        return m_bytes.capacity() + m_offsets.capacity() * sizeof(std::uint32_t) +
               m_prefixes.capacity() * sizeof(std::uint64_t) + m_expires.capacity() * sizeof(double);
    }

private:
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
    std::vector<std::uint32_t> m_offsets;
    std::vector<std::uint64_t> m_prefixes;
    std::vector<double> m_expires;
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
