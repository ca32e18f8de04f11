#pragma once
// Several ranges of a skiplist_map in one call (issue 49, item 6):
//
//   auto lists = mpidict::range_many(map, ranges);            // one entry_list per range, in index order
//   mpidict::range_many(map, ranges, [](std::size_t i, auto&& entries) { ... });   // streamed in index order
//
// `ranges` is a span of (lo, hi) pairs, each read as map.range(lo, hi, options)
// (the same range_options for every range: limit, descending, after_lo,
// before_hi).  Up to `window` ranges are in flight at once (0: 16); each is
// started as the oldest one is handed over, so a long list of ranges is
// pipelined without holding every answer.  Each range keeps a range's promise in
// the caller's consistency mode (skiplist_map.md "Consistency modes"): the
// ranges are separate ranges, not one snapshot (an entry inserted between two of
// them may be seen by the later one only).  Ranges with lo > hi are empty.
//
// A free function over the public API (a header of its own: nothing that does
// not use it is rebuilt).  Local; other ranks are served while it waits.

#include <cstddef>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/skiplist_map.hpp"

namespace mpidict {

inline constexpr std::size_t range_many_default_window = 16;

// Streams each range's entries to on_range(index, entry_list&&) in index order.
template <class K, class V, class OnRange>
void range_many(skiplist_map<K, V>& map, std::span<const std::pair<K, K>> ranges, OnRange&& on_range,
                range_options options = {}, std::size_t window = 0) {
    using entry_list = typename skiplist_map<K, V>::entry_list;
    if (window == 0)
        window = range_many_default_window;
    std::deque<request<entry_list>> in_flight;
    std::size_t started = 0;
    std::size_t handed = 0;
    const auto start_next = [&] {
        const auto& [lo, hi] = ranges[started++];
        in_flight.push_back(map.range(lo, hi, options));
    };
    while (handed < ranges.size()) {
        while (started < ranges.size() && in_flight.size() < window)
            start_next();
        entry_list entries = in_flight.front().get();
        in_flight.pop_front();
        on_range(handed++, std::move(entries));
    }
}

// Every range's entries, one entry_list per range in index order.
template <class K, class V>
std::vector<typename skiplist_map<K, V>::entry_list> range_many(skiplist_map<K, V>& map,
                                                                std::span<const std::pair<K, K>> ranges,
                                                                range_options options = {}, std::size_t window = 0) {
    std::vector<typename skiplist_map<K, V>::entry_list> lists(ranges.size());
    range_many(
        map, ranges, [&](std::size_t index, typename skiplist_map<K, V>::entry_list&& entries) {
            lists[index] = std::move(entries);
        },
        options, window);
    return lists;
}

}  // namespace mpidict
