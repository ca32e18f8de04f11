#pragma once
// Ranges and patterns at the nodes (src/skiplist/ranges.cpp; the caller's
// side, which collects the parts, is skiplist_caller's).
//   - range: located like a find, then along level 0; every node with keys in
//     range sends its part(s) straight to the caller, numbered; a pattern
//     query jumps over the towers from each node to the next key that can
//     match (key_pattern::next_candidate).
//   - range with range_descending: from hi down, node by node, each step
//     located from the directory or the head; stops at the limit.
//   - range_split (the seed's Listing 2; every range in mode total_order, and
//     in sequential and none the ascending ranges without a limit or pattern,
//     src/skiplist/split_ranges.hpp): the interval splits at every level on the
//     way down, so the piece holding a key travels the links a point operation
//     on that key travels; each node answers its piece with range_piece records
//     naming the interval they cover.  In sequential and none an ascending
//     range with a limit sends range_split pieces straight to the nodes the
//     caller's directory names ("direct ranges", caller_ranges.cpp), each node
//     splitting on from there; MPIDICT_SKIPLIST_DIRECT_RANGES=0 gives them the
//     level-0 walk above again (or the budgeted split, split_ranges.hpp).
//   - range_batch (direct ranges since stop 67): the intervals of one query
//     on one rank in one record; every node that holds its whole interval
//     answers at once, all of them in one range_pieces record written straight
//     from the runs into the outbox; any other interval is handled as the
//     range_split piece it stands for (handle_range_batch).
//   - find_split (mode total_order, a find_many chunk): the chunk's sorted keys
//     split the same way; each node answers the keys left to it (found_split).

#include <string_view>
#include <vector>

#include "mpidict/detail/skiplist_nodes.hpp"
#include "mpidict/detail/skiplist_shared.hpp"
#include "mpidict/key_pattern.hpp"

namespace mpidict::detail {

class skiplist_range_nodes {
public:
    using node = skiplist_node;
    using link = skiplist_link;
    using wire = skiplist_wire;

    skiplist_range_nodes(skiplist_shared& shared, skiplist_nodes& nodes) : m_shared(shared), m_nodes(nodes) {}

    void handle_range(int source, std::string_view record);
    void handle_range_split(int source, std::string_view record);
    void handle_find_split(int source, std::string_view record);
    void handle_range_batch(int source, std::string_view record);

private:
    // A descending range at `here` (ranges.cpp: locate the node below hi,
    // answer it largest first, go on below its separator until the limit).
    void walk_down(node& here, skiplist_node_id id, std::uint8_t level_byte, std::uint8_t hops, std::string_view tail,
                   const wire::range_header& header, std::string_view lo, std::string_view hi,
                   std::string_view pattern_bytes, const key_pattern* pattern);

    // handle_range_batch's answers, reused from batch to batch: the node and
    // the entries [first, stop) of its run each interval sends.
    struct batch_answer {
        const node* here;
        std::size_t first, stop, data_bytes;
        std::string_view from, to;
    };
    std::vector<batch_answer> m_batch_answers;
    struct batch_interval {
        std::uint32_t slot, generation;
        std::size_t at;  // where its route_header starts in the record
        std::string_view from, to;
    };
    std::vector<batch_interval> m_batch_intervals;

    skiplist_shared& m_shared;
    skiplist_nodes& m_nodes;
};

}  // namespace mpidict::detail
