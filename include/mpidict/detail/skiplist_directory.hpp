#pragma once
// The skip list's directory on one rank (src/skiplist/directory.cpp):
// separator -> node, learned from answers and from the nodes hosted here (at
// most config.route_cache_entries).  The caller enters through it
// (entry_point); a node in mode none jumps through it (after).  A separator
// never changes while its node lives, so the key's node is the entry's node or
// one after it; a stale entry is caught by the node it names (generation).
//
// For large find batches it is copied into a flat sorted array with buckets
// over the separators' 8-byte prefixes (flat_entry_point); the copy is current
// while version() has not changed.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <iterator>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "mpidict/skiplist_map_types.hpp"

namespace mpidict::detail {

class skiplist_directory {
public:
    skiplist_directory(std::size_t capacity, skiplist_node_id head) : m_capacity(capacity), m_head(head) {}

    std::size_t size() const { return m_routes.size(); }
    bool empty() const { return m_routes.empty(); }
    // The remembered node with the largest separator <= key, else the head.
    skiplist_node_id entry_point(std::string_view key) const {
        auto after = m_routes.upper_bound(key);
        if (after == m_routes.begin())
            return m_head;
        return std::prev(after)->second;
    }
    // The remembered node with the largest separator below `key` (!bounded:
    // the largest of all), else the head: where a descending range enters.
    skiplist_node_id entry_below(std::string_view key, bool bounded) const {
        auto after = bounded ? m_routes.lower_bound(key) : m_routes.end();
        if (after == m_routes.begin())
            return m_head;
        return std::prev(after)->second;
    }
    // The closest node at or below `key` whose separator is above `floor`
    // (null if none): where a node in mode none may jump.
    skiplist_node_id after(std::string_view key, std::string_view floor) const;
    // The node with the largest separator below `key` among the `steps`
    // entries below it for which ok(id) holds (null if none).
    template <class Ok>
    skiplist_node_id before(std::string_view key, std::size_t steps, Ok&& ok) const {
        for (auto at = m_routes.lower_bound(key); at != m_routes.begin() && steps > 0; --steps) {
            --at;
            if (ok(at->second))
                return at->second;
        }
        return {};
    }
    // The entry entry_point(key) names and the entries after it, in key
    // order, `count` at most: visit(separator, node) (the head, first, with an
    // empty separator when no entry lies at or below key).  Direct ranges
    // (caller_ranges.cpp) send a range's parts to these nodes.
    template <class Visit>
    void entries_from(std::string_view key, std::size_t count, Visit&& visit) const {
        auto at = m_routes.upper_bound(key);
        if (count == 0)
            return;
        if (at == m_routes.begin()) {
            visit(std::string_view(), m_head);
            --count;
        } else {
            --at;
        }
        for (; at != m_routes.end() && count > 0; ++at, --count)
            visit(std::string_view(at->first), at->second);
    }
    void learn(std::string_view separator, skiplist_node_id id);
    // A shortcut for `key` failed and `answered_by` answered: forget the entry used.
    void forget_failed(std::string_view key, skiplist_node_id answered_by);
    // Forgets every entry whose node `gone` names.
    void forget_if(const std::function<bool(const skiplist_node_id&)>& gone);
    // Points every entry whose node moved (moved(id) returns its new id, or a
    // null id when it did not move) at the new node (rebalance, at a flush).
    void replace_if(const std::function<skiplist_node_id(const skiplist_node_id&)>& moved) {
        for (auto& entry : m_routes)
            if (const skiplist_node_id to = moved(entry.second); !to.null())
                entry.second = to;
        ++m_version;
    }
    // The head moved (drain of its rank).
    void set_head(skiplist_node_id head) {
        m_head = head;
        ++m_version;
    }

    // The flat copy.
    bool flat_current() const { return m_flat_version == m_version; }
    void rebuild_flat();
    skiplist_node_id flat_entry_point(std::string_view key) const;

private:
    std::size_t m_capacity;
    skiplist_node_id m_head;
    std::map<std::string, skiplist_node_id, std::less<>> m_routes;
    // Counts every change of m_routes; a flat copy made at version v is current
    // while m_version == v.
    std::uint64_t m_version = 0;
    // The flat copy: separators in order (the first 8 bytes big-endian as a
    // number, whose order agrees with the byte order, and the bytes in
    // m_flat_bytes) and their nodes.
    struct flat_route {
        std::uint64_t prefix;
        std::uint32_t offset;
        std::uint32_t bytes;
    };
    std::vector<flat_route> m_flat;
    // m_flat_buckets[b]: the first entry whose prefix lies in bucket b or later
    // (flat_bucket: the m_flat_bucket_bits prefix bits below those all entries
    // share), so a lookup searches one bucket.
    std::vector<std::uint32_t> m_flat_buckets;
    int m_flat_shift = 0, m_flat_bucket_bits = 0;
    std::size_t flat_bucket(std::uint64_t prefix) const {
        return static_cast<std::size_t>((prefix >> m_flat_shift) & ((std::uint64_t{1} << m_flat_bucket_bits) - 1));
    }
    std::vector<skiplist_node_id> m_flat_ids;
    mutable std::size_t m_flat_hint = 0;  // the entry flat_entry_point returned last
    std::string m_flat_bytes;
    std::uint64_t m_flat_version = ~std::uint64_t{0};
};

}  // namespace mpidict::detail
