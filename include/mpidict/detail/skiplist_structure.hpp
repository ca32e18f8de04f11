#pragma once
// The structure of the skip list on one rank (src/skiplist/structure.cpp):
// splits and the free-node service (Section 2.2, Figure 6), linking a taller
// node's upper levels (link_up, set_links), the ordering records that keep
// requests from overtaking one another when a link changes (expect, marker,
// clear: "Non-overtaking" in skiplist_map.hpp), and the unlinking of emptied
// nodes at a flush.

#include <cstddef>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mpidict/detail/skiplist_directory.hpp"
#include "mpidict/detail/skiplist_nodes.hpp"
#include "mpidict/detail/skiplist_shared.hpp"

namespace mpidict::detail {

// The levels a bulk split's link_up still has to link after the one it
// carries, bottom up: per level its first and last piece (bulk.cpp).
struct bulk_plan {
    struct level {
        skiplist_node_id first;
        std::string separator;  // the first piece's
        skiplist_node_id last;
    };
    std::vector<level> levels;
    std::string bytes() const;  // u8 count, then per level first, separator, last
    static bulk_plan read(byte_reader& in, const skiplist_shared& shared);
};

class skiplist_structure {
public:
    using node = skiplist_node;
    using link = skiplist_link;
    using wire = skiplist_wire;

    skiplist_structure(skiplist_shared& shared, skiplist_nodes& nodes, skiplist_directory& directory);

    // An insert took `here` past G keys: keep the lower half, ask the free-node
    // service for a node with the upper half, hold until it answers.
    void start_split(node& here, skiplist_node_id id);
    // A merge took `here` past G keys: cut its run into pieces (this node keeps
    // the first), reserve a node per other piece (one request per rank), hold
    // until they are granted (src/skiplist/bulk.cpp).
    void start_bulk_split(node& here, skiplist_node_id id, bool appended);
    void handle_bulk_reserve(int source, std::string_view record);
    void handle_bulk_reserved(int source, std::string_view record);
    void handle_bulk_fill(int source, std::string_view record);
    std::string list_full_message() const;
    // The stock of empty nodes other servers granted this rank in advance
    // (bulk.cpp): a bulk split takes its pieces' nodes from it with no round
    // trip.  At a flush every stocked node goes back (close_stock before the
    // engine's flush, open_stock after it; grants that arrive meanwhile go back).
    void close_stock();
    void open_stock() { m_stock_closed = false; }
    // The active servers changed (at a flush, stocks empty): per-server state starts again.
    void reset_stock() {
        m_stock.clear();
        m_stock_asked.clear();
    }
    // A routed marker reached the end of the old way: `target` may stop holding.
    void clear_for_marker(skiplist_node_id target);

    // Handlers.
    void handle_alloc(int source, std::string_view record);
    void handle_alloc_reply(int source, std::string_view record);
    void handle_link_up(int source, std::string_view record);
    void handle_set_links(int source, std::string_view record);
    void handle_expect(int source, std::string_view record);
    void handle_marker(int source, std::string_view record);
    void handle_clear(int source, std::string_view record);
    void handle_unlinked(int source, std::string_view record);

    // Collective, at a flush (the list is quiescent): every emptied node except
    // the head is unlinked on every level and its slot returns to the free pool.
    void unlink_emptied();

private:
    unsigned draw_height();
    void request_reservations(node& here, skiplist_node_id id, std::size_t needed);
    void finish_bulk_split(node& here, skiplist_node_id id);
    void refuse_bulk_split(node& here, skiplist_node_id id);
    // Too few nodes granted: refuses the fresh keys that do not fit and
    // finishes the split with the nodes there are (false: none fit, refuse all).
    bool trim_bulk_split(node& here, skiplist_node_id id);
    void cut_pieces(node& here, std::size_t target);
    // Takes an empty node per piece, round robin over the servers (this rank's
    // own at once, the others' from the stock), into bulk.granted, and asks
    // for what the stock lacks: true if a reply must come before the split ends.
    bool take_stocked(node& here, skiplist_node_id id);
    void replenish_stock();
    std::size_t fill_budget() const;
    // Starts linking `fresh` on `level` (its levels below are linked): travels from the head.
    // `last` (not null): fresh is the first of a bulk split's pieces linked among
    // themselves on the level, `last` the last of them (bulk.cpp, finish_bulk_split):
    // the predecessor's old successor goes to `last` (set_links, linked = 2), and
    // `plan` (a bulk_plan's bytes) names the levels above, linked one after another.
    void send_link_up(skiplist_node_id fresh, std::string_view separator, unsigned level,
                      skiplist_node_id last = {}, std::string_view plan = {});
    void send_clear(skiplist_node_id target);
    // A set_links record to `to` for `level` (linked: 0 not linked, 1 linked,
    // 2 a bulk chain's end takes `next` if it still ends the level).
    void send_set_links(skiplist_node_id to, unsigned level, std::uint8_t linked, skiplist_node_id next,
                        std::string_view next_separator);
    void send_marker(int destination, skiplist_node_id target);
    // Ordering (skiplist_map.hpp, "Non-overtaking"): `from` now links `target`
    // directly on `level`; requests that took the old way must reach `target`
    // (and `old_successor`) before any that take the new one.
    void order_new_link(node& from, int level, skiplist_node_id target, std::string_view target_separator,
                        skiplist_node_id old_successor);

    skiplist_shared& m_shared;
    skiplist_nodes& m_nodes;
    skiplist_directory& m_directory;
    std::size_t m_placement_counter = 0;
    // Per server index: empty nodes reserved for this rank there, and whether
    // a stock request is in flight (1), the server had no room (2: not asked
    // again before the next flush) or no split drew from it yet (3: not asked).
    std::vector<std::vector<skiplist_node_id>> m_stock;
    std::vector<std::uint8_t> m_stock_asked;
    bool m_stock_closed = false;
    std::mt19937_64 m_random;
    // unlink_emptied: the emptied nodes every rank announced, with their towers.
    struct node_id_hash {
        std::size_t operator()(const skiplist_node_id& id) const {
            return std::hash<std::uint64_t>()((std::uint64_t(std::uint32_t(id.rank)) << 32 | id.slot) ^
                                              (std::uint64_t(id.generation) << 17));
        }
    };
    std::unordered_map<skiplist_node_id, std::vector<link>, node_id_hash> m_unlinked;
};

}  // namespace mpidict::detail
