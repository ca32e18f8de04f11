// The skip list's directory and its flat copy (skiplist_directory.hpp).

#include "mpidict/detail/skiplist_directory.hpp"

#include <algorithm>
#include <bit>
#include <limits>

#include "mpidict/detail/sorted_run.hpp"

namespace mpidict::detail {

skiplist_node_id skiplist_directory::after(std::string_view key, std::string_view floor) const {
    auto after = m_routes.upper_bound(key);
    if (after == m_routes.begin())
        return {};
    --after;
    if (std::string_view(after->first) <= floor)
        return {};
    return after->second;
}

void skiplist_directory::learn(std::string_view separator, skiplist_node_id id) {
    if (m_capacity == 0 || separator.empty())
        return;  // disabled, or the head (the default entry point)
    auto known = m_routes.lower_bound(separator);
    if (known != m_routes.end() && known->first == separator) {
        if (!(known->second == id)) {
            known->second = id;
            ++m_version;
        }
        return;
    }
    ++m_version;
    if (m_routes.size() >= m_capacity) {
        // Full: forget the neighbour above (or below) the new entry, so the
        // directory stays bounded and keeps its entries spread over the key space.
        auto victim = known != m_routes.end() ? known : std::prev(known);
        known = m_routes.erase(victim);
    }
    m_routes.emplace_hint(known, std::string(separator), id);
}

void skiplist_directory::forget_failed(std::string_view key, skiplist_node_id answered_by) {
    auto used = m_routes.upper_bound(key);
    if (used != m_routes.begin() && !(std::prev(used)->second == answered_by)) {
        m_routes.erase(std::prev(used));
        ++m_version;
    }
}

void skiplist_directory::forget_if(const std::function<bool(const skiplist_node_id&)>& gone) {
    for (auto route = m_routes.begin(); route != m_routes.end();)
        route = gone(route->second) ? m_routes.erase(route) : std::next(route);
    ++m_version;
}

void skiplist_directory::rebuild_flat() {
    m_flat.clear();
    m_flat_ids.clear();
    m_flat_bytes.clear();
    m_flat.reserve(m_routes.size());
    m_flat_ids.reserve(m_routes.size());
    for (const auto& [separator, id] : m_routes) {
        m_flat.push_back(flat_route{sorted_run::prefix_of(separator), static_cast<std::uint32_t>(m_flat_bytes.size()),
                                    static_cast<std::uint32_t>(separator.size())});
        m_flat_ids.push_back(id);
        m_flat_bytes += separator;
        if (m_flat_bytes.size() > std::numeric_limits<std::uint32_t>::max() / 2) {
            // Separators of up to 1 MiB each: a directory this large stays in the std::map.
            m_flat.clear();
            m_flat_ids.clear();
            m_flat_bytes.clear();
            m_flat_version = ~std::uint64_t{0};
            return;
        }
    }
    // Buckets over the prefix bits below those every separator shares: about
    // one separator per bucket, at most 2^16 buckets.
    m_flat_buckets.clear();
    m_flat_shift = 0;
    m_flat_bucket_bits = 0;
    if (m_flat.size() >= 2 && m_flat.front().prefix != m_flat.back().prefix) {
        const int spread = static_cast<int>(std::bit_width(m_flat.front().prefix ^ m_flat.back().prefix));
        const int wanted = std::min(16, static_cast<int>(std::bit_width(m_flat.size())));
        m_flat_bucket_bits = std::min(spread, wanted);
        m_flat_shift = spread - m_flat_bucket_bits;
        const std::size_t buckets = std::size_t{1} << m_flat_bucket_bits;
        m_flat_buckets.assign(buckets + 1, 0);
        std::size_t index = 0;
        for (std::size_t bucket = 0; bucket <= buckets; ++bucket) {
            while (index < m_flat.size() && flat_bucket(m_flat[index].prefix) < bucket)
                ++index;
            m_flat_buckets[bucket] = static_cast<std::uint32_t>(index);
        }
    }
    m_flat_version = m_version;
}

skiplist_node_id skiplist_directory::flat_entry_point(std::string_view key) const {
    // As entry_point: the last separator <= key.
    const std::uint64_t prefix = sorted_run::prefix_of(key);
    // Below the first separator's prefix: the head; above the last one's: the
    // last entry or its equals; else the key's bucket bounds the search (every
    // separator before it is smaller, every one after it larger).
    // Keys of a sorted batch mostly fall between the same two separators as
    // the key before: prefixes strictly between them decide that alone.
    if (m_flat_hint < m_flat.size() && m_flat[m_flat_hint].prefix < prefix &&
        (m_flat_hint + 1 == m_flat.size() || prefix < m_flat[m_flat_hint + 1].prefix))
        return m_flat_ids[m_flat_hint];
    auto from = m_flat.begin(), to = m_flat.end();
    if (!m_flat_buckets.empty()) {
        if (prefix < m_flat.front().prefix)
            return m_head;
        if (prefix <= m_flat.back().prefix) {
            const std::size_t bucket = flat_bucket(prefix);
            from = m_flat.begin() + m_flat_buckets[bucket];
            to = m_flat.begin() + m_flat_buckets[bucket + 1];
        } else {
            from = m_flat.end() - 1;
        }
    }
    auto after = std::upper_bound(from, to, key, [&](std::string_view k, const flat_route& r) {
        if (prefix != r.prefix)
            return prefix < r.prefix;
        return k < std::string_view(m_flat_bytes.data() + r.offset, r.bytes);
    });
    if (after == m_flat.begin())
        return m_head;
    m_flat_hint = static_cast<std::size_t>(after - m_flat.begin()) - 1;
    return m_flat_ids[m_flat_hint];
}

}  // namespace mpidict::detail
