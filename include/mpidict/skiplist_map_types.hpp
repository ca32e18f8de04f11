#pragma once
// The public types of skiplist_map (skiplist_map.hpp): its configuration, the
// node ids and the per-rank statistics.  In a header of
// their own because the compiled core (detail/skiplist_*.hpp,
// src/skiplist/) needs them too and must not include the typed
// front; include skiplist_map.hpp, which includes this.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/results.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict {

// The consistency modes of seed 004 (Sections 1.3, 2.4, 2.5); skiplist_map.md
// "Consistency modes" states what each guarantees and how it is checked.
enum class skiplist_consistency : std::uint8_t {
    // Every operation enters at the head: linearizable in the order the head
    // receives them, each caller's operations in the order it issued them.
    total_order = 0,
    // Callers enter through the directory (shortcuts); one operation per key in
    // flight per caller and a hold-back queue: each caller's operations on a key
    // take effect in issue order, and its replies complete in issue order.
    sequential = 1,
    // Callers and nodes use the directory freely and nodes climb their towers;
    // replies complete as they arrive.  Each operation is still atomic and the
    // list stays ordered.
    none = 2,
};
const char* to_string(skiplist_consistency mode);
// The mode named "total_order", "sequential" or "none" (to_string's names); nothing for any other name.
std::optional<skiplist_consistency> skiplist_consistency_named(std::string_view name);

struct skiplist_map_config {
    runtime::config runtime{};
    // Ranks that host nodes (the free-node managers form a ring in this order;
    // the head node lives on the first).  nullopt: every rank.
    std::optional<std::vector<int>> server_ranks{};
    // Elastic servers (docs/skiplist_map.md, "Rebalancing, growing and
    // draining"): the first initial_servers of server_ranks host nodes from
    // the start (0: all of them); the others are dormant until a flush finds
    // every active server at or past grow_entries entries, or past
    // grow_memory_fraction of memory_limit_per_rank, and wakes the next one
    // (nodes then move onto it, as rebalance() moves them).
    std::size_t initial_servers = 0;
    std::uint64_t grow_entries = std::uint64_t{1} << 20;
    double grow_memory_fraction = 0.5;
    // A flush also rebalances (by entries) when the entries' max/mean over the
    // active servers passes this; 0: only rebalance() does.
    double rebalance_threshold = 0;
    // Online policy (issue 44; 0: off): every online_rebalance_seconds each
    // server tells the others its request rate (smoothed over windows; no
    // collective); one whose rate passes online_rebalance x the mean moves up
    // to two of its most requested nodes to the server with the lowest rate
    // while operations go on, then waits three windows.
    double online_rebalance = 0;
    double online_rebalance_seconds = 0.2;
    std::size_t granularity = 64;            // G: keys per node before it splits
    // Capacity (docs/skiplist_map.md "Capacity and list_full"): a server rank's
    // pool of node slots grows on demand until one of these limits stops it;
    // then the rank grants no new node, and when no server rank can, inserts
    // that need one are refused (list_full) and nothing stored is lost.
    // P: a hard limit on the nodes one server rank hosts; 0: none (slots stay
    // below 2^31, a node id's limit).
    std::size_t node_slots_per_rank = 0;
    // The resident memory (RSS, bytes) of this process past which its pool
    // stops growing.  0: automatic, 3/4 of the node's memory (the smaller of
    // the physical memory and a cgroup limit) shared evenly by the ranks on the
    // node: the list refuses inserts before the kernel's out-of-memory killer
    // ends a rank.  no_memory_limit: none.
    std::size_t memory_limit_per_rank = 0;
    static constexpr std::size_t no_memory_limit = static_cast<std::size_t>(-1);
    unsigned max_height = 16;                // the head's tower; every tower is at most this tall
    double tower_probability = 0.5;          // P(height > h | height >= h)
    std::size_t max_key_bytes = 256;         // encoded key
    std::size_t max_value_bytes = 1024;      // the defaults fit the default 64 KiB buffer
    std::uint64_t seed = 0x736b69706c697374ULL;  // tower heights (per rank: seed + rank)
    std::size_t caller_window = 4096;        // W: the most keys one find_many/insert_many keeps in flight
    // Adapt W (up to caller_window, from 8) from the measured reply latency, as
    // the seed does (detail/window_control.hpp); false: always caller_window.
    bool adaptive_window = true;
    // async_insert (modes sequential and none, with a route cache): keys
    // buffered at the caller and sent as one sorted batch, as insert_many sends
    // its keys (skiplist_map.md, "async_insert batches"); at most
    // async_batches_in_flight batches unanswered.  0: each async_insert is sent
    // at once as its own point record.  A batch also goes out once its keys and
    // values reach async_batch_bytes (8 MiB: small pairs fill 131,072 keys in
    // ~2-5 MiB; 1 KiB values cut a batch at ~8k keys, bounding a caller's
    // buffers, whose price the keys-per-node gain no longer pays).
    std::size_t async_batch_keys = 131072;
    std::size_t async_batch_bytes = std::size_t{8} << 20;
    std::size_t async_batches_in_flight = 2;
    // Nodes each caller remembers as entry points (separator -> node, learned from
    // answers, about 80 bytes each): an operation enters at the closest one at or
    // below its key instead of at the head.  0: every operation enters at the head.
    std::size_t route_cache_entries = 1u << 16;
    // The mode this map's callers start in (skiplist_map::set_consistency
    // changes it for one caller).
    skiplist_consistency consistency = skiplist_consistency::sequential;
    // The clock that judges expiry (insert's expires_at) on this rank; empty:
    // std::chrono::system_clock::now.  A replay sets it to its simulated time
    // (apps/flights): every rank must give the same time for the same moment,
    // and it must never go back.
    std::function<std::chrono::system_clock::time_point()> expiry_clock{};
    // Test only: no ordering markers when links change and no per-key order at
    // the caller, so operations may overtake one another (the simulation test
    // must catch it).  Never set it otherwise.
    bool unordered_for_testing = false;
    // Test only: break the consistency mode on purpose, so that the history
    // checkers must reject what it does: total_order callers take shortcuts;
    // sequential callers drop the per-key order, send every other operation
    // through the head and complete replies as they arrive; none: a splitting
    // node handles the finds and erases it should hold (an erase of a key in the
    // moving half is lost).  Never set it otherwise.
    bool break_consistency_for_testing = false;

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

// What rebalance() balances: the entries the server ranks hold, or the
// requests their nodes handled (answered or passed on) since the last
// rebalance (or since the map was built).
enum class skiplist_load_metric : std::uint8_t { entries = 0, requests = 1 };

struct skiplist_rebalance_options {
    skiplist_load_metric metric = skiplist_load_metric::entries;
    // Nothing moves while max/mean of the metric over the active servers is at
    // or below this; otherwise nodes move from the most loaded ranks to the
    // least until each is near the mean.
    double target = 1.1;
};

// What rebalance(), drain() (or a flush that grew or rebalanced) did; the same
// on every rank.  Per-rank vectors are indexed by rank (non-servers hold 0).
struct skiplist_rebalance_result {
    std::vector<std::uint64_t> entries_before, entries_after;
    std::vector<std::uint64_t> load_before, load_after;  // the metric's load (entries or requests)
    std::uint64_t moved_nodes = 0;     // nodes that changed rank
    std::uint64_t moved_entries = 0;   // entries they carried
    std::uint64_t moved_bytes = 0;     // record bytes sent to move them (node records only)
    std::uint64_t refused_nodes = 0;   // moves a destination could not take (its capacity): the node stayed
    std::uint64_t servers_added = 0;   // dormant ranks that became servers
    bool head_moved = false;           // the head node moved (drain of its rank)
    std::vector<int> servers;          // the active server ranks afterwards
    double seconds = 0;                // wall time of the whole call on this rank
    static double ratio(const std::vector<std::uint64_t>& load, const std::vector<int>& over);  // max/mean
};

// This rank's counters (local_statistics()): the name every container uses.
struct skiplist_map_local_statistics {
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
    std::uint64_t migrated_out = 0;      // nodes moved from here to another rank (rebalance, drain, growth)
    std::uint64_t migrated_in = 0;       // nodes moved here
    // Consistency modes (counted by this rank as a caller, except head_visits).
    std::uint64_t answers = 0;           // point operations answered to this caller
    std::uint64_t answer_hops = 0;       // node-to-node hops those operations took (answer_hops / answers: mean)
    std::uint64_t shortcut_entries = 0;  // operations this caller sent into the list through the directory
    std::uint64_t shortcut_failures = 0; // of those (and of node shortcuts), the ones that fell back to the head
    std::uint64_t node_shortcuts = 0;    // forwards by nodes hosted here through the directory (mode none)
    std::uint64_t head_visits = 0;       // requests the head node (if hosted here) handled or forwarded
    std::uint64_t held_back = 0;         // replies the hold-back queue delayed (sequential)
    std::uint64_t hold_back_peak = 0;    // the most replies waiting in it at once
    std::uint64_t async_batches = 0;     // async_insert batches this caller sent (skiplist_map.md, "async_insert batches")
    // Online moves (local_rebalance: between flushes, no collective).
    std::uint64_t online_moves = 0;      // nodes this rank shipped while operations went on (freed at the next flush)
    std::uint64_t online_refused = 0;    // of those started, the ones that stayed (no room there, or busy meanwhile)
};

using skiplist_local_statistics [[deprecated("mpidict: renamed skiplist_map_local_statistics")]] =
    skiplist_map_local_statistics;

// skiplist_map's operation kinds, registered with its engine in this order;
// index `stats()` with them.
struct skiplist_map_op {
    enum kind : runtime::op_kind { insert, insert_if_absent, find, erase, range };
    static constexpr std::string_view names[] = {"insert", "insert_if_absent", "find", "erase", "range"};
};

struct range_options {
    std::uint64_t limit = 0;   // at most this many entries (0: all); with descending, the largest ones
    bool descending = false;   // largest key first
    // Paging (YCSB's scan is "start key + count"): a page cut by `limit` names
    // its resume key, the last key it returned.  The next ascending page is the
    // same query from that key with after_lo (lo itself excluded); the next
    // descending page is range(lo, resume key) with before_hi (hi excluded).
    bool after_lo = false;
    bool before_hi = false;    // range(lo, hi) only
};

// No longer thrown: a full list's refusal is a result (docs/architecture.md,
// "Contracts"): insert's replace_result has stored = false, insert_if_absent's
// bool is false, insert_many's insert_many_result counts it in refused and
// names it in refused_indexes.  Kept so that code catching it still compiles.
class [[deprecated("mpidict: skiplist_map reports list_full in the result (insert: stored = false; insert_many: "
                   "insert_many_result::refused / refused_indexes), never by throwing")]] list_full_error
    : public invalid_argument_error {
public:
    list_full_error(std::string message, std::size_t stored, std::vector<std::size_t> not_stored)
        : invalid_argument_error(std::move(message)), m_stored(stored), m_not_stored(std::move(not_stored)) {}
    std::size_t stored() const { return m_stored; }  // keys stored (new or replaced)
    // Indexes into the call's keys of those not stored, ascending.
    const std::vector<std::size_t>& not_stored() const { return m_not_stored; }

private:
    std::size_t m_stored;
    std::vector<std::size_t> m_not_stored;
};

}  // namespace mpidict
