#pragma once
// The public types of skiplist_map (skiplist_map.hpp): its configuration, the
// node ids and the per-rank statistics.  In a header of
// their own because the compiled core (detail/skiplist_core.hpp,
// src/skiplist/skiplist_core.cpp) needs them too and must not include the typed
// front; include skiplist_map.hpp, which includes this.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "mpidict/results.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict {

struct skiplist_map_config {
    runtime::config runtime{};
    // Ranks that host nodes (the free-node managers form a ring in this order;
    // the head node lives on the first).  nullopt: every rank.
    std::optional<std::vector<int>> server_ranks{};
    std::size_t granularity = 64;            // G: keys per node before it splits
    std::size_t node_slots_per_rank = 1u << 16;  // P: nodes one server rank can host
    unsigned max_height = 16;                // the head's tower; every tower is at most this tall
    double tower_probability = 0.5;          // P(height > h | height >= h)
    std::size_t max_key_bytes = 256;         // encoded key
    std::size_t max_value_bytes = 1024;      // the defaults fit the default 64 KiB buffer
    std::uint64_t seed = 0x736b69706c697374ULL;  // tower heights (per rank: seed + rank)
    std::size_t caller_window = 4096;        // W: the most keys one find_many/insert_many keeps in flight
    // Adapt W (up to caller_window, from 8) from the measured reply latency, as
    // the seed does (detail/window_control.hpp); false: always caller_window.
    bool adaptive_window = true;
    // Nodes each caller remembers as entry points (separator -> node, learned from
    // answers, about 80 bytes each): an operation enters at the closest one at or
    // below its key instead of at the head.  0: every operation enters at the head.
    std::size_t route_cache_entries = 1u << 16;
    // Test only: no ordering markers when links change and no per-key order at
    // the caller, so operations may overtake one another (the simulation test
    // must catch it).  Never set it otherwise.
    bool unordered_for_testing = false;

    // The smallest runtime.buffer_bytes the constructor accepts: one message must
    // carry the upper half of a full node when it splits.
    std::size_t required_buffer_bytes() const;
};

// A node id: (rank, slot, generation).  A slot reused for a new node gets a new
// generation, so a reference to the old node is detected as stale.
struct skiplist_node_id {
    std::int32_t rank = -1;
    std::uint32_t slot = 0;
    std::uint32_t generation = 0;
    bool null() const { return rank < 0; }
    friend bool operator==(const skiplist_node_id&, const skiplist_node_id&) = default;
};

struct skiplist_local_statistics {
    std::uint64_t nodes = 0;             // live nodes hosted here
    std::uint64_t entries = 0;           // key-value pairs held by them
    std::uint64_t payload_bytes = 0;     // key + value bytes held
    std::uint64_t splits = 0;            // splits started by nodes hosted here
    std::uint64_t allocations_forwarded = 0;  // free-node requests passed on around the ring
    std::uint64_t list_full = 0;         // inserts refused: no free node anywhere
    std::uint64_t hops = 0;              // forwards sent by nodes hosted here
    std::uint64_t handled = 0;           // operations answered here
    std::uint64_t held = 0;              // requests queued behind a node's split or ordering marker
    std::uint64_t expired = 0;           // entries removed because their expiry passed
    std::uint64_t range_parts = 0;       // range parts sent from here
    std::uint64_t unlinked = 0;          // emptied nodes unlinked here (at a flush) and returned to the free pool
};

}  // namespace mpidict
