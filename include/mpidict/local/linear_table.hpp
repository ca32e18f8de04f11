#pragma once
// linear_table: Litwin's linear hashing (LH) over byte-string keys and values,
// the local store of one LH*LH server.
//
// Data layout.  2^level + next buckets, each a vector of entries.  An entry keeps
// its 64-bit key hash, so growing never rehashes a key.  A key's bucket comes
// from g = hash / divisor (the bits the global LH* file has not used yet):
// g mod 2^level, or g mod 2^(level+1) if that is below `next`.  Buckets grow one
// at a time: when entries exceed bucket_entries per bucket on average, bucket
// `next` splits by the next bit of g.
//
// Why g and not the hash itself: the global file sends a key to server
// hash mod (N*2^j).  With divisor = N*2^j, the next global split moves exactly
// the keys whose g is odd, i.e. every LH bucket with an odd index (the level is
// at least 1 when it happens).  The even buckets, renumbered b/2, form the
// table the server keeps, with divisor doubled (keep_even_buckets()); no key
// is visited twice.
//
// Invariants: every entry of bucket b satisfies bucket_of(hash) == b; keys are
// unique; `payload_bytes` is the sum of key and value sizes.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mpidict/error.hpp"

namespace mpidict::local {

class linear_table {
public:
    struct entry {
        std::uint64_t hash = 0;
        std::uint32_t key_bytes = 0;
        std::string data;  // key bytes, then value bytes
        std::string_view key() const { return {data.data(), key_bytes}; }
        std::string_view value() const { return {data.data() + key_bytes, data.size() - key_bytes}; }
        std::size_t payload_bytes() const { return data.size(); }
    };
    using bucket = std::vector<entry>;

    explicit linear_table(std::uint64_t divisor = 1, std::size_t bucket_entries = 8)
        : m_divisor(divisor), m_bucket_entries(std::max<std::size_t>(1, bucket_entries)), m_buckets(2) {
        MPIDICT_ASSERT(divisor >= 1, "linear_table divisor must be positive");
        m_level = 1;
    }

    std::size_t size() const { return m_entries; }
    std::size_t payload_bytes() const { return m_payload_bytes; }
    std::size_t bucket_count() const { return m_buckets.size(); }
    unsigned level() const { return m_level; }
    std::size_t next() const { return m_next; }
    std::uint64_t divisor() const { return m_divisor; }
    const bucket& bucket_at(std::size_t index) const { return m_buckets[index]; }

    // Growth is suspended while a global split ships buckets (indices must not move).
    void set_frozen(bool frozen) {
        m_frozen = frozen;
        if (!frozen)
            grow();
    }

    std::size_t bucket_of(std::uint64_t hash) const {
        const std::uint64_t g = hash / m_divisor;
        std::uint64_t index = g & ((std::uint64_t{1} << m_level) - 1);
        if (index < m_next)
            index = g & ((std::uint64_t{1} << (m_level + 1)) - 1);
        return static_cast<std::size_t>(index);
    }

    const entry* find(std::uint64_t hash, std::string_view key) const {
        const bucket& b = m_buckets[bucket_of(hash)];
        for (const entry& e : b)
            if (e.hash == hash && e.key() == key)
                return &e;
        return nullptr;
    }
    bool contains(std::uint64_t hash, std::string_view key) const { return find(hash, key) != nullptr; }

    // Inserts or replaces.  Returns the payload bytes the table grows by (negative
    // if a replacement is smaller) through `delta`; `replaced` says which happened.
    void upsert(std::uint64_t hash, std::string_view key, std::string_view value, bool& replaced,
                std::int64_t& delta) {
        bucket& b = m_buckets[bucket_of(hash)];
        for (entry& e : b) {
            if (e.hash == hash && e.key() == key) {
                delta = static_cast<std::int64_t>(value.size()) - static_cast<std::int64_t>(e.value().size());
                e.data.resize(key.size());
                e.data.append(value);
                m_payload_bytes = static_cast<std::size_t>(static_cast<std::int64_t>(m_payload_bytes) + delta);
                replaced = true;
                return;
            }
        }
        entry fresh;
        fresh.hash = hash;
        fresh.key_bytes = static_cast<std::uint32_t>(key.size());
        fresh.data.reserve(key.size() + value.size());
        fresh.data.append(key);
        fresh.data.append(value);
        add(b, std::move(fresh));
        delta = static_cast<std::int64_t>(key.size() + value.size());
        replaced = false;
        grow();
    }

    // Adds an entry known to be absent (a shipped bucket's contents).
    void adopt(entry&& incoming) {
        bucket& b = m_buckets[bucket_of(incoming.hash)];
        add(b, std::move(incoming));
        grow();
    }

    // Removes `key`; returns the payload bytes freed, or -1 if absent.
    std::int64_t erase(std::uint64_t hash, std::string_view key) {
        bucket& b = m_buckets[bucket_of(hash)];
        for (std::size_t index = 0; index < b.size(); ++index) {
            if (b[index].hash == hash && b[index].key() == key) {
                const auto freed = static_cast<std::int64_t>(b[index].payload_bytes());
                if (index + 1 != b.size())
                    b[index] = std::move(b.back());
                b.pop_back();
                --m_entries;
                m_payload_bytes -= static_cast<std::size_t>(freed);
                return freed;
            }
        }
        return -1;
    }

    // Removes and returns up to what fits in `budget` payload-and-header bytes of
    // bucket `index` (at least one entry); the bucket empties when it all fits.
    template <class Sink>
    void drain_bucket(std::size_t index, std::size_t& budget, std::size_t header_bytes, Sink&& sink) {
        bucket& b = m_buckets[index];
        while (!b.empty()) {
            const std::size_t bytes = header_bytes + b.back().payload_bytes();
            if (bytes > budget)
                break;
            budget -= bytes;
            entry taken = std::move(b.back());
            b.pop_back();
            --m_entries;
            m_payload_bytes -= taken.payload_bytes();
            sink(std::move(taken));
        }
        if (b.empty())
            bucket().swap(b);  // give the memory back now, not at compaction
    }

    // Makes sure a global split has odd buckets to ship (level >= 1 always holds
    // after construction and after keep_even_buckets() on a table of >= 2 buckets).
    void ensure_splittable() {
        while (m_level < 1 || m_buckets.size() < 2)
            split_one();
    }

    // After every odd bucket has been shipped: bucket 2k becomes bucket k and the
    // divisor doubles (the global level went up by one).
    void keep_even_buckets() {
        MPIDICT_ASSERT(m_level >= 1, "keep_even_buckets needs a table of level >= 1");
        std::vector<bucket> kept;
        kept.reserve((m_buckets.size() + 1) / 2);
        for (std::size_t index = 0; index < m_buckets.size(); index += 2)
            kept.push_back(std::move(m_buckets[index]));
        for (std::size_t index = 1; index < m_buckets.size(); index += 2)
            MPIDICT_ASSERT(m_buckets[index].empty(), "an odd LH bucket was not shipped before compaction");
        m_buckets = std::move(kept);
        m_level -= 1;
        m_next = (m_next + 1) / 2;
        m_divisor *= 2;
        normalise();  // a one-bucket table is level 0, next 0
    }

    // Prepares an empty table for a newly activated server.
    void reset(std::uint64_t divisor) {
        *this = linear_table(divisor, m_bucket_entries);
    }

    template <class Function>
    void for_each(Function&& function) const {
        for (const bucket& b : m_buckets)
            for (const entry& e : b)
                function(e);
    }

private:
    void add(bucket& b, entry&& fresh) {
        m_payload_bytes += fresh.payload_bytes();
        ++m_entries;
        b.push_back(std::move(fresh));
    }

    // Keeps (level, next) canonical: next < 2^level.
    void normalise() {
        if (m_next == (std::size_t{1} << m_level)) {
            m_next = 0;
            ++m_level;
        }
        MPIDICT_ASSERT(m_buckets.size() == (std::size_t{1} << m_level) + m_next,
                       "linear_table bucket count disagrees with its level and split pointer");
    }

    void grow() {
        if (m_frozen)
            return;
        while (m_entries > m_bucket_entries * m_buckets.size())
            split_one();
    }

    void split_one() {
        const std::size_t source = m_next;
        const std::size_t target = m_buckets.size();  // == source + 2^level
        m_buckets.emplace_back();
        const std::uint64_t bit = std::uint64_t{1} << m_level;
        bucket& from = m_buckets[source];
        bucket& to = m_buckets[target];
        std::size_t keep = 0;
        for (std::size_t index = 0; index < from.size(); ++index) {
            if ((from[index].hash / m_divisor) & bit) {
                to.push_back(std::move(from[index]));
            } else {
                if (keep != index)  // never self-move: a moved-from std::string may be emptied
                    from[keep] = std::move(from[index]);
                ++keep;
            }
        }
        from.resize(keep);
        ++m_next;
        normalise();
    }

    std::uint64_t m_divisor;
    std::size_t m_bucket_entries;
    std::vector<bucket> m_buckets;
    unsigned m_level = 1;
    std::size_t m_next = 0;
    std::size_t m_entries = 0;
    std::size_t m_payload_bytes = 0;
    bool m_frozen = false;
};

}  // namespace mpidict::local
