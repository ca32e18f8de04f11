#pragma once
// Elastic servers of the skip list on one rank (src/skiplist/rebalance.cpp):
// moving nodes between ranks at a flush (rebalance(), drain(rank), growth onto
// dormant server ranks).  After the engine's flush nothing is in flight, so,
// as when emptied nodes are unlinked (skiplist_structure::unlink_emptied):
//
//   1. every rank's load (entries, requests, nodes, memory) is summed into
//      one vector every rank holds, and every rank computes the same plan:
//      transfers (from, to, amount) from the most loaded ranks to the least;
//   2. each source picks its own nodes to meet its transfers and ships each
//      one (separator, tower, run with deadlines, request count) in migrate
//      records to its destination, which takes a slot (the pool grows on
//      demand, within node_slots_per_rank and memory_limit_per_rank) or
//      refuses (the node stays where it is: nothing is lost);
//   3. a destination that took a node announces old id -> new id to every
//      rank (migrated records); after a second engine flush every rank
//      re-points each link of its nodes that names a moved node, re-points
//      its directory entries (and the head, if it moved), and the sources
//      free the old slots (the generation check then catches any stale id);
//   4. a last sum (which also gathers the loads afterwards) keeps every rank
//      from sending new operations before all have re-pointed their links.
//
// Record layouts (one message each, skiplist_wire.hpp's helpers):
//   migrate:          node_id old, u8 flags (1: first part, 2: last part),
//                     [first: u32 requests, u8 height, string separator,
//                      height x (node_id to, string separator)],
//                     u32 n, n x (string key, string value, expiry_time)
//   migrated:         node_id old, node_id new (to every rank)
//   migrate_refused:  node_id old (to the source)
//
// Online moves (between flushes, no collective; start_online_moves):
//
//   1. the source asks the destination for an empty node (move_reserve:
//      node_id old); the destination reserves one, which holds whatever
//      reaches it, and answers (move_reserved: node_id old, node_id fresh,
//      null if it has no room; the node then stays);
//   2. the source, if the node is still idle (nothing held, no split, every
//      level linked), ships it in migrate records marked online (flags 4,
//      node_id fresh after the flags) and turns its slot into a stub
//      (skiplist_node::moved_to): every record that reaches the old slot
//      afterwards (points, direct segments, ranges, find and range splits,
//      link_up, expect, clear, routed markers) goes on to the new node,
//      unchanged, on the one rank pair source -> destination, behind the
//      node itself, in the order it arrived; the node still idle: abandoned
//      (flags 8: the reservation is freed);
//   3. the source sends a marker naming the new node to every rank (itself
//      included) behind everything it sent that rank before, and the new node
//      holds until every rank's clear has come: nothing it sends overtakes
//      what the old slot sent (the same relation a split's new node keeps
//      with its old successors, "Ordering" in docs/skiplist_map.md);
//   4. the source announces old -> new to every rank (migrated); nobody
//      links the new node yet (links, route caches and the head still name
//      the old slot, so every way into the node but direct entries from
//      answers goes through the stub in order); the next flush re-points
//      every link and directory entry and frees the stub (settle_online),
//      before the unlink's sum.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "mpidict/detail/skiplist_directory.hpp"
#include "mpidict/detail/skiplist_nodes.hpp"
#include "mpidict/detail/skiplist_shared.hpp"
#include "mpidict/detail/skiplist_structure.hpp"

namespace mpidict::detail {

class skiplist_rebalancer {
public:
    skiplist_rebalancer(skiplist_shared& shared, skiplist_nodes& nodes, skiplist_structure& structure,
                        skiplist_directory& directory);

    // Collective, right after a flush (the list is quiescent).
    skiplist_rebalance_result rebalance(const skiplist_rebalance_options& options);
    // Collective, right after a flush: every node off `rank` (an active server;
    // not the only one), which becomes dormant (the last to wake again).
    skiplist_rebalance_result drain(int rank);
    // Collective, at the end of every flush when elastic(): wakes dormant
    // servers when every active one is past config.grow_entries (or
    // grow_memory_fraction of its memory limit) and moves nodes onto them, or
    // rebalances by entries past config.rebalance_threshold.  last() says what
    // the last such step did (moved_nodes 0 and servers_added 0: nothing).
    void at_flush();
    bool elastic() const { return !m_shared.dormant.empty() || m_shared.config.rebalance_threshold > 0; }
    const skiplist_rebalance_result& last() const { return m_last; }
    void forget_last() {
        if (!m_last.servers.empty())
            m_last = skiplist_rebalance_result{};
    }

    // Not collective (online moves, above): starts moving up to `count` of
    // this rank's idle nodes (the most requested first; never the head, nor a
    // node that arrived since the last flush) to `to` (-1: the other active
    // servers in turn).  Returns the moves started; they end on their own
    // (refused ones leave the node where it was); the next flush settles them.
    std::size_t start_online_moves(std::size_t count, int to);
    // At every flush, after the engine's flush: re-points every link, route
    // and the head past the nodes moved online and frees their stubs (the
    // same on every rank: each move was announced to every rank).
    void settle_online();

    // The online policy (config.online_rebalance): closes a window of
    // requests, tells every other server this rank's rate, and moves nodes
    // when this rank's rate is well above the mean of the rates it knows.
    void online_window();
    void handle_load(int source, std::string_view record);
    void handle_move_reserve(int source, std::string_view record);
    void handle_move_reserved(int source, std::string_view record);
    void handle_migrate(int source, std::string_view record);
    void handle_migrated(int source, std::string_view record);
    void handle_migrate_refused(int source, std::string_view record);

private:
    struct loads {
        std::vector<std::int64_t> entries, requests, nodes, memory_full;
    };
    struct transfer {
        int from, to;
        double amount;
    };
    // Collective (one sum): every rank's loads; `extra` values are summed too.
    loads gather(std::vector<std::int64_t>* extra = nullptr);
    // The same on every rank: transfers that bring every active server near
    // the mean of `load` (a rank outside the servers sheds all of its load).
    std::vector<transfer> plan(std::vector<double> load, double target, bool forced) const;
    // Ships this rank's part of `transfers`, re-points, frees; collective.
    // drained: the rank that must end empty (-1: none).
    skiplist_rebalance_result execute(const std::vector<transfer>& transfers, skiplist_load_metric metric,
                                      int drained, const loads& before);
    std::uint64_t weight(const skiplist_node& node, skiplist_load_metric metric) const;
    bool movable(const skiplist_node& node, bool with_head) const;
    std::uint64_t ship(std::uint32_t slot, int destination, skiplist_node_id fresh = {});
    void receive_migrate(int source, std::string_view record);  // handle_migrate's work, once this rank may host
    // Re-points this rank's links, directory and head past every move in
    // m_moved and frees this rank's old slots; returns the slots freed.
    std::uint64_t settle(bool& head_moved);
    void announce(skiplist_node_id old, skiplist_node_id fresh);
    void add_servers(std::size_t count);

    skiplist_shared& m_shared;
    skiplist_nodes& m_nodes;
    skiplist_structure& m_structure;
    skiplist_directory& m_directory;
    bool m_break_for_testing = false;  // MPIDICT_SKIPLIST_BREAK_REBALANCE_FOR_TESTING: a moved node loses an entry
    struct id_hash {
        std::size_t operator()(const skiplist_node_id& id) const {
            return std::hash<std::uint64_t>()((std::uint64_t(std::uint32_t(id.rank)) << 32 | id.slot) ^
                                              (std::uint64_t(id.generation) << 17));
        }
    };
    std::unordered_map<skiplist_node_id, skiplist_node_id, id_hash> m_moved;     // old -> new, every rank's
    std::unordered_map<skiplist_node_id, skiplist_node_id, id_hash> m_incoming;  // parts still to come here
    std::unordered_set<skiplist_node_id, id_hash> m_refused_here;                // refused here: later parts dropped
    std::unordered_set<std::uint32_t> m_arrived;  // slots that took a node this round (never sent on in the same round)
    // Migrate records that reached a dormant rank before it learned, from its
    // own sum of the loads, that this flush wakes it (a faster rank may plan and
    // ship first): kept, in order, until execute() starts here.
    std::vector<std::pair<int, std::string>> m_early;
    std::uint64_t m_refused = 0;                                                 // of this rank's moves
    std::unordered_set<std::uint32_t> m_moving;   // online: slots whose reservation is awaited
    std::size_t m_next_destination = 0;           // online: the next server in turn
    void start_move(std::uint32_t slot, int destination);
    std::vector<double> m_rates;                  // online policy: each rank's last reported request rate
    std::chrono::steady_clock::time_point m_window_start{};
    int m_cooldown = 0;                           // windows to wait after moving (the rates show the move)
    skiplist_rebalance_result m_last;
};

}  // namespace mpidict::detail
