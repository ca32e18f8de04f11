#pragma once
// The node role of the skip list on one rank (src/skiplist/nodes.cpp): the
// nodes hosted here (slots, generations, sorted runs, towers), the hold queue
// of a node that waits for a split or for ordering clears, expiry, and the
// point operations (Listings 1, 3 and 4 with G keys per node): a point record
// travels forward from node to node until the node whose range holds its key
// answers the caller.  Direct-find records (a batch's keys sent straight to
// the nodes the caller's directory names) are answered here too; a key a node
// cannot answer continues on the ordinary way from there.
//
// Splits and links are skiplist_structure's, ranges skiplist_range_nodes'; this
// class calls them where a point operation meets them (an insert that
// overflows a node, a marker that reaches its node, a held record replayed).

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "mpidict/detail/skiplist_directory.hpp"
#include "mpidict/detail/skiplist_shared.hpp"
#include "mpidict/detail/sorted_run.hpp"

namespace mpidict::detail {

class skiplist_structure;
class skiplist_range_nodes;

struct skiplist_link {
    std::string separator;      // the successor's lower bound (fixed when it was created)
    skiplist_node_id to{};      // null: end of this level
    bool set = false;           // false: this level is not linked yet (skip it)
};

// Test only (the simulation, where every virtual rank shares one process):
// told when a point operation first passes the head and when it takes effect
// at its node, so a test can check that every key's operations take effect in
// the order they passed the head (total_order's non-overtaking across callers,
// issue 42: tests/sim/sim_skiplist_history.cpp --probe).  Null in real runs.
struct skiplist_order_probe {
    virtual ~skiplist_order_probe() = default;
    virtual void at_head(int caller, std::uint32_t slot, std::uint32_t ticket) = 0;
    virtual void applied(int caller, std::uint32_t slot, std::uint32_t ticket, std::string_view key) = 0;
};
inline std::atomic<skiplist_order_probe*> skiplist_order_probe_for_testing{nullptr};
// A node's bulk split in progress (src/skiplist/bulk.cpp): its run is cut into
// pieces; this node keeps the first and asks for empty nodes for the others.
struct skiplist_bulk_split {
    std::vector<std::size_t> cuts;          // piece p is [cuts[p], cuts[p + 1]) of the run
    std::vector<skiplist_node_id> granted;  // reserved nodes, in the order they came
    std::uint32_t outstanding = 0;          // reservation replies still to come
    std::vector<std::uint8_t> full;         // per server index: granted fewer than asked
    // The fresh keys of the merge that made the node overflow, answered once
    // the split is decided (taken back out if the list is full).
    struct pending {
        int caller;
        std::uint32_t slot, index;
    };
    std::vector<pending> answers;
    std::string keys;                   // their keys, back to back
    std::vector<std::uint32_t> key_ends;
};

// A node's split for one point insert in progress (src/skiplist/structure.cpp):
// the insert that made the node overflow, answered once the split is decided,
// and the new node's separator, height and the levels linked directly after
// this node (bit l).  Held out of line (skiplist_node::split): only a
// splitting node has one, and inline it was 88 of every node's bytes.
struct skiplist_point_split {
    int source = -1;
    std::uint32_t slot = skiplist_wire::no_slot;
    std::uint32_t ticket = skiplist_wire::no_slot;
    std::string key;
    std::uint8_t hops = 0;
    std::string separator;
    unsigned height = 0;
    std::uint32_t direct = 0;
};

struct skiplist_node {
    std::uint32_t generation = 0;
    bool live = false;
    std::string separator;              // lower bound of this node's key range
    std::vector<skiplist_link> tower;   // height = tower.size()
    sorted_run run;                     // sorted by key, at most G (G + 1 while splitting)
    expiry_time earliest_expiry = 0;    // 0: nothing expires
    std::uint32_t requests = 0;         // requests handled here since the last rebalance (its load; saturates)
    void count_requests(std::size_t n) {
        requests = n >= std::size_t(0xffffffffu - requests) ? 0xffffffffu : requests + static_cast<std::uint32_t>(n);
    }
    int holds = 0;                      // ordering clears still expected
    // While holding for a link on level hold_level, what arrives below it
    // (the old way) is served, not queued (hold_if_busy); low_queued: some
    // of it had to queue anyway (the node was splitting), so the rest must too.
    static constexpr std::uint8_t no_hold_level = 0xff;
    std::uint8_t hold_level = no_hold_level;
    bool low_queued = false;
    bool allocating = false;            // waiting for the free-node service (or reserved for a bulk split's piece)
    // Moved between flushes (issue 44, online moves): this slot is a stub
    // that forwards every record addressed to it to moved_to, until the next
    // flush re-points the links and frees it (skiplist_rebalance.hpp).
    skiplist_node_id moved_to{};
    bool stub() const { return !moved_to.null(); }
    bool reserved = false;              // a bulk split's empty node, not filled yet
    std::unique_ptr<skiplist_bulk_split> bulk;  // this node's bulk split in progress
    struct held_record {
        runtime::handler_id handler;
        int source;
        std::string bytes;
        std::uint8_t level = no_hold_level;  // arrival level (no_hold_level: none, never reordered)
        std::uint32_t stamp = 0;             // total_order: the head's order (0: none, never reordered)
    };
    // Records that arrived while holding (allocated when the first one does:
    // an empty std::deque costs about 600 bytes per node).
    std::unique_ptr<std::deque<held_record>> held;
    bool holding_records() const { return held && !held->empty(); }
    bool busy() const { return holds != 0 || allocating || holding_records(); }
    // The point insert's split in progress (null: none).
    std::unique_ptr<skiplist_point_split> split;
};

// A point operation as it travels (the point record's tail, decoded).
struct skiplist_point {
    skiplist_wire::point_header header;
    std::string_view key, value;
    skiplist_op kind() const { return static_cast<skiplist_op>(header.kind); }
};

class skiplist_nodes {
public:
    friend class skiplist_structure;
    friend class skiplist_rebalancer;
    using node = skiplist_node;
    using link = skiplist_link;
    using wire = skiplist_wire;

    skiplist_nodes(skiplist_shared& shared, skiplist_directory& directory);
    void connect(skiplist_structure* structure, skiplist_range_nodes* ranges) {
        m_structure = structure;
        m_ranges = ranges;
    }

    bool live(skiplist_node_id id) const {
        return id.slot < m_nodes.size() && m_nodes[id.slot].live && m_nodes[id.slot].generation == id.generation;
    }
    // The node a record addresses, or decode_error.
    node& addressed(skiplist_node_id id, const char* what);
    std::deque<node>& all() { return m_nodes; }
    skiplist_directory& directory() { return m_directory; }
    const std::deque<node>& all() const { return m_nodes; }
    skiplist_node_id allocate_local(std::string_view separator, unsigned height);
    void free_slot(std::uint32_t slot);

    // Queues the record if the node holds (split in progress, clears expected).
    // arrival_level: the level the record came on (-1: never served while holding);
    // stamp: the head's order of a request in total_order (0: none).
    bool hold_if_busy(node& target, runtime::handler_id handler, int source, std::string_view record,
                      int arrival_level = -1, std::uint32_t stamp = 0);
    // total_order: the next stamp of the head's handling order (never 0), and
    // whether stamp a is older than b (serial-number order: stamps wrap).
    std::uint32_t next_stamp() {
        if (++m_stamps == 0)
            ++m_stamps;
        return m_stamps;
    }
    static bool stamped_before(std::uint32_t a, std::uint32_t b) {
        return a != 0 && b != 0 && static_cast<std::int32_t>(a - b) < 0;
    }
    // A stub (moved between flushes) forwards a routed record (route_header
    // first) to the node's new place unchanged; true if it did.
    bool forward_if_moved(const node& here, runtime::handler_id handler, std::string_view record);
    // Test only (MPIDICT_SKIPLIST_BREAK_ONLINE_MOVES_FOR_TESTING): 1, a stub
    // serves point operations from its empty run instead of forwarding them;
    // 2, the moved node does not hold for the markers' clears.
    int break_online_for_testing = 0;
    // Replays what `id` queued, in order, while it no longer holds.
    void release_held(skiplist_node_id id);
    // The level-l forward for `key` from `here`, scanning down from `level`:
    // returns the level to forward on, or -1 when the key belongs here.
    static int forward_level(const node& here, std::string_view key, int level, bool strictly_less);

    void purge_expired(node& here, expiry_time now);
    std::size_t sweep_expired();

    // Handlers.
    void handle_point(int source, std::string_view record);
    void handle_find_direct(int source, std::string_view record);
    // Inserts of a batch, one sorted run per node (src/skiplist/bulk.cpp).
    void handle_insert_direct(int source, std::string_view record);
    // A reserved, empty node for a bulk split (null at the hard limit).
    skiplist_node_id reserve_local();
    // Room to grant `count` nodes to another rank's stock and still have as
    // many again for splits (false near node_slots_per_rank or the memory limit).
    bool may_stock(std::size_t count) {
        return m_free.size() >= 2 * count || m_shared.pool_may_grow(m_nodes.size() + 2 * count);
    }
    // Answers a point operation through the caller's point_reply handler.
    void reply_point(const node& here, skiplist_node_id id, int caller, std::uint32_t slot, std::uint32_t ticket,
                     std::uint8_t status, std::string_view value = {}, std::uint8_t hops = 0);

    // Local views.
    void for_all_local(const std::function<void(std::string_view, std::string_view, expiry_time)>& visit) const;
    std::size_t local_size() const;
    std::string check_local_invariants() const;

private:
    struct direct_segment;
    struct direct_answers;
    struct direct_record;
    struct direct_item {
        std::string_view key, value;
        int caller;
        std::uint32_t batch, index;
        expiry_time expires;
    };
    // A segment at its node: held, or its keys sent on (the head, next
    // nodes) and those of this node's range appended to `items`.
    void route_segment(int source, const direct_segment& segment, std::vector<direct_item>& items);
    // Merges `items` (key order) into the node's run; splits it if it overflows.
    void merge_items(skiplist_node_id id, const std::vector<direct_item>& items, direct_answers& answers);
    void insert_held(skiplist_node_id id, std::vector<node::held_record>& group);
    // Sends keys [from, until) of `segment` on as a segment of their own, addressed to `to`.
    void send_segment(skiplist_node_id to, std::uint8_t level_byte, std::uint8_t hops, const direct_segment& segment,
                      std::size_t from, std::size_t until);
    // One step of a point operation at node `id`: hold it, forward it, or
    // answer it.  `tail` is the record's tail as it arrived (empty: a direct
    // find's key passed on, written from `point` if it must travel or wait).
    void route_point(int source, skiplist_node_id id, std::uint8_t level_byte, std::uint8_t hops,
                     const skiplist_point& point, std::string_view tail);
    void send_point(skiplist_node_id to, int level, std::uint8_t flags, std::uint8_t hops,
                    const skiplist_point& point, std::string_view tail);
    void answer_point(node& here, skiplist_node_id id, const skiplist_point& point, std::uint8_t hops);

    skiplist_shared& m_shared;
    skiplist_directory& m_directory;
    skiplist_structure* m_structure = nullptr;
    skiplist_range_nodes* m_ranges = nullptr;
    std::deque<node> m_nodes;            // this rank's slots (a deque: references stay valid)
    std::vector<std::uint32_t> m_free;   // free slots (LIFO)
    std::uint32_t m_stamps = 0;          // the last stamp the head gave (next_stamp)
};

}  // namespace mpidict::detail
