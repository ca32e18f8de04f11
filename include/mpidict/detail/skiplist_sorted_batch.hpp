#pragma once
// A batch of keys put in key order for skiplist_map::insert_many (issue 43):
// each key encoded once, sorted exactly (by 8-byte prefix, then by bytes where
// prefixes tie), and a key that repeats kept once, at its last occurrence (the
// value a sequence of inserts in index order leaves), sent in rounds of
// growing size, each in key order (build()).

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mpidict/detail/sorted_run.hpp"

#include <sys/mman.h>

#include <limits>
#include <new>

namespace mpidict::detail {

// The batch's buffers (about 70 bytes per key, transient) of 1 MiB or more are
// mapped directly and unmapped when freed: through malloc, once glibc's
// dynamic mmap threshold had risen, they came from the heap and their freed
// pages stayed resident after the load (issue 43: RSS growth per pair).
template <class T>
struct batch_allocator {
    using value_type = T;
    static constexpr std::size_t mapped_from = std::size_t(1) << 20;
    batch_allocator() = default;
    template <class U>
    batch_allocator(const batch_allocator<U>&) noexcept {}
    T* allocate(std::size_t count) {
        if (count > std::numeric_limits<std::size_t>::max() / sizeof(T))
            throw std::bad_array_new_length();
        const std::size_t bytes = count * sizeof(T);
        if (bytes < mapped_from)
            return std::allocator<T>().allocate(count);
        void* mapped = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mapped == MAP_FAILED)
            throw std::bad_alloc();
        return static_cast<T*>(mapped);
    }
    void deallocate(T* pointer, std::size_t count) noexcept {
        const std::size_t bytes = count * sizeof(T);
        if (bytes < mapped_from)
            std::allocator<T>().deallocate(pointer, count);
        else
            ::munmap(pointer, bytes);
    }
    template <class U>
    bool operator==(const batch_allocator<U>&) const noexcept {
        return true;
    }
};
template <class T>
using batch_vector = std::vector<T, batch_allocator<T>>;
using batch_string = std::basic_string<char, std::char_traits<char>, batch_allocator<char>>;

class sorted_batch {
public:
    // encode(index, out) appends the index'th key's encoding to out.  first:
    // the first round's size (rounds: below); at least count: one sweep.
    template <class Encode>
    void build(std::size_t count, Encode&& encode, std::size_t first = first_round) {
        batch_string encoded;
        batch_vector<std::size_t> starts;
        starts.reserve(count + 1);
        m_order.clear();
        m_order.reserve(count);
        std::string scratch_key;  // (encode appends to a std::string)
        for (std::size_t index = 0; index < count; ++index) {
            const std::size_t at = encoded.size();
            starts.push_back(at);
            encode(index, scratch_key);
            encoded.append(scratch_key);
            scratch_key.clear();
            m_order.emplace_back(sorted_run::prefix_of(std::string_view(encoded).substr(at)),
                                 static_cast<std::uint32_t>(index));
        }
        starts.push_back(encoded.size());
        const auto key_of = [&](std::uint32_t index) {
            return std::string_view(encoded).substr(starts[index], starts[index + 1] - starts[index]);
        };
        batch_vector<std::pair<std::uint64_t, std::uint32_t>> scratch;
        radix_sort_by_prefix(m_order, scratch, 8);  // stable: equal keys stay in index order
        // Equal prefixes decide nothing for keys longer than 8 bytes or of
        // different lengths: those groups are ordered by their bytes.
        for (std::size_t begin = 0; begin < count;) {
            std::size_t end = begin + 1;
            while (end < count && m_order[end].first == m_order[begin].first)
                ++end;
            if (end - begin > 1)
                std::stable_sort(m_order.begin() + static_cast<std::ptrdiff_t>(begin),
                                 m_order.begin() + static_cast<std::ptrdiff_t>(end),
                                 [&](const auto& a, const auto& b) { return key_of(a.second) < key_of(b.second); });
            begin = end;
        }
        m_group.clear();
        m_group.reserve(count + 1);
        for (std::size_t at = 0; at < count; ++at)
            if (at == 0 || m_order[at].first != m_order[at - 1].first ||
                key_of(m_order[at].second) != key_of(m_order[at - 1].second))
                m_group.push_back(static_cast<std::uint32_t>(at));
        const std::size_t positions = m_group.size();
        m_group.push_back(static_cast<std::uint32_t>(count));
        // Rounds: the keys whose (last) index lies in [0, 1024), [1024,
        // 5120), ..., each 4 times the one before, each in key order.  A key
        // sorted batch sent as one sweep would reach an empty list's last
        // node piece after piece; in rounds, each round's keys spread over
        // the nodes the earlier rounds made, and every node merges its share.
        batch_vector<std::uint32_t> round(positions);
        std::vector<std::size_t> per_round;
        for (std::size_t position = 0; position < positions; ++position) {
            std::size_t which = 0;
            for (std::size_t end = first; last_index(position) >= end; end = end * 4 + first)
                ++which;
            round[position] = static_cast<std::uint32_t>(which);
            if (per_round.size() <= which)
                per_round.resize(which + 1, 0);
            ++per_round[which];
        }
        std::vector<std::size_t> next(per_round.size(), 0);
        for (std::size_t which = 1; which < per_round.size(); ++which)
            next[which] = next[which - 1] + per_round[which - 1];
        m_send.assign(positions, 0);
        for (std::size_t position = 0; position < positions; ++position)
            m_send[next[round[position]]++] = static_cast<std::uint32_t>(position);
        m_bytes.clear();
        m_bytes.reserve(encoded.size());
        m_starts.clear();
        m_starts.reserve(positions + 1);
        for (std::size_t at = 0; at < positions; ++at) {
            m_starts.push_back(m_bytes.size());
            m_bytes.append(key_of(last_index(m_send[at])));
        }
        m_starts.push_back(m_bytes.size());
    }
    static constexpr std::size_t first_round = 1024;

    std::size_t distinct() const { return m_starts.empty() ? 0 : m_starts.size() - 1; }
    // The at'th key to send (rounds in order, each in key order).
    std::string_view key(std::size_t at) const {
        return std::string_view(m_bytes).substr(m_starts[at], m_starts[at + 1] - m_starts[at]);
    }
    // The call's index whose value the at'th key carries (its last occurrence).
    std::uint32_t value_index(std::size_t at) const { return last_index(m_send[at]); }

    // The call's indexes of the keys sent at `positions` (every occurrence of
    // each, ascending): what a refusal of those positions refuses.
    std::vector<std::size_t> indexes_of(const std::vector<std::size_t>& positions) const {
        std::vector<std::size_t> indexes;
        for (const std::size_t sent : positions)
            for (std::uint32_t at = m_group[m_send[sent]]; at < m_group[m_send[sent] + 1]; ++at)
                indexes.push_back(m_order[at].second);
        std::sort(indexes.begin(), indexes.end());
        return indexes;
    }

private:
    // The index of the last occurrence of the position'th distinct key (key order).
    std::uint32_t last_index(std::size_t position) const { return m_order[m_group[position + 1] - 1].second; }

    batch_vector<std::pair<std::uint64_t, std::uint32_t>> m_order;  // (prefix, index) in key order
    batch_vector<std::uint32_t> m_group;  // where each distinct key's occurrences start in m_order
    batch_string m_bytes;                 // the distinct keys, encoded, in key order
    batch_vector<std::size_t> m_starts;
    batch_vector<std::uint32_t> m_send;   // distinct key positions in sending order
};

}  // namespace mpidict::detail
