#pragma once
// skiplist_map's consistent snapshots, type-erased (keys are order-preserving
// encoded byte strings, values byte strings); skiplist_snapshot<K, V>
// (include/mpidict/skiplist_snapshot.hpp) is the front.  Design and costs:
// src/skiplist/snapshot.cpp and docs/skiplist_map.md "Snapshots".
//
// In short: taking a snapshot is collective.  The list is flushed (every
// operation started anywhere before it is then complete), each rank copies the
// live entries of the nodes it hosts, and the copies are redistributed so that
// rank r holds the r-th slice of the whole snapshot in key order (splitters
// chosen by weighted regular sampling).  No rank leaves before every rank has
// copied, so no write made after the call reaches a copy.  Reads go to the
// rank(s) whose slice holds the keys and are answered from the copy; the live
// list is never read again.  A snapshot is released collectively.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mpidict/detail/skiplist_shared.hpp"

namespace mpidict::detail {

class skiplist_snapshots {
public:
    using visit_entry = std::function<void(std::string_view key, std::string_view value, expiry_time expires)>;
    using visit_all = std::function<void(const visit_entry&)>;
    using on_entry = std::function<void(std::string_view key, std::string_view value)>;

    explicit skiplist_snapshots(skiplist_shared& shared) : m_shared(shared) {}

    // Collective, after the list's flush.  for_all_local(visit) visits every
    // entry of the nodes hosted here; entries whose deadline has passed at the
    // cut (the latest clock of all ranks) are left out.  Returns the new id.
    std::uint32_t create(const visit_all& for_all_local);
    // Collective.  Every rank must release the same snapshot (checked).
    void release(std::uint32_t id);
    bool holds(std::uint32_t id) const { return m_parts.count(id) != 0; }

    // Local; other ranks are served while they wait.
    std::optional<std::string> find(std::uint32_t id, std::string_view key);
    // The entries with lo <= key < hi (to the end if !bounded), at most `limit`
    // (0: all), ascending or largest first, to on_entry in that order; returns
    // how many.
    std::uint64_t range(std::uint32_t id, std::string_view lo, std::string_view hi, bool bounded, std::uint64_t limit,
                        bool descending, const on_entry& deliver);
    // How many entries lie in [lo, hi), counted where they are.
    std::uint64_t count(std::uint32_t id, std::string_view lo, std::string_view hi, bool bounded);
    // Entries in the whole snapshot, and in this rank's slice.
    std::uint64_t size(std::uint32_t id) const { return part(id).total; }
    std::size_t local_size(std::uint32_t id) const { return part(id).order.size(); }
    // This rank's slice in key order.
    void local_for_each(std::uint32_t id, const on_entry& visit) const;
    // The copy's bytes on this rank (entries and their index).
    std::size_t local_bytes(std::uint32_t id) const;

    // Handlers (registered by skiplist_core).
    void handle_fill(int source, std::string_view record);
    void handle_read(int source, std::string_view record);

    // Test support (a broken variant the checker must reject): take the copy
    // without flushing first, so writes still in flight are missed.
    bool fault_skip_flush = false;

private:
    // One rank's slice: entries packed as {u32 key bytes, key, u32 value bytes,
    // value}, `order` their offsets sorted by key; splitters[r] is the smallest
    // key of slice r + 1.
    struct part_data {
        std::string bytes;
        std::vector<std::uint64_t> order;
        std::vector<std::string> splitters;
        std::uint64_t total = 0;
    };
    const part_data& part(std::uint32_t id) const;
    int owner(const part_data& data, std::string_view key) const;
    std::string_view key_at(const part_data& data, std::size_t index) const;
    std::string_view value_at(const part_data& data, std::size_t index) const;
    std::size_t lower_bound(const part_data& data, std::string_view key) const;
    void sort_by_key(part_data& data) const;
    // Sends one read (its slot filled in here) and waits for its answer: the
    // reply's count and bytes; the owner's error is thrown.
    std::pair<std::uint32_t, std::string> ask(int rank, std::string record);

    skiplist_shared& m_shared;
    std::map<std::uint32_t, part_data> m_parts;
    std::uint32_t m_next_id = 1;
    std::uint32_t m_building = 0;  // the snapshot being taken (its entries arrive), 0: none
};

}  // namespace mpidict::detail
