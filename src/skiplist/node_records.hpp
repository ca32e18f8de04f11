#pragma once
// Decoding the parts of a node that more than one record carries: a tower
// (height x {node id, next separator}: unlink and migrate records) and a run
// of entries (key, value, expiry: bulk fill and migrate records).  Only src/
// includes this file.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "mpidict/detail/skiplist_nodes.hpp"
#include "mpidict/detail/skiplist_shared.hpp"
#include "mpidict/error.hpp"

namespace mpidict::detail {

// `height` levels; every successor must name a valid rank.  `what` names the
// record in the error ("unlink record").
inline std::vector<skiplist_link> read_tower(byte_reader& in, unsigned height, const skiplist_shared& shared,
                                             const char* what) {
    std::vector<skiplist_link> tower(height);
    for (auto& level : tower) {
        level.to = read_node_id(in);
        level.separator = std::string(read_string(in));
        level.set = true;
        if (!level.to.null() && !shared.valid_rank(level.to.rank))
            throw decode_error(std::string("mpidict: skiplist_map ") + what + " names a bad successor");
    }
    return tower;
}

// Appends `count` entries to `node`'s run, each above the run's last key and
// not below node.separator (exact_first: the first entry of an empty run is
// the separator itself), keeping the node's earliest expiry and the rank's
// entry and payload counters.
inline void read_run(byte_reader& in, std::uint32_t count, skiplist_node& node, bool exact_first,
                     skiplist_map_local_statistics& stats, const char* what) {
    for (std::uint32_t index = 0; index < count; ++index) {
        const std::string_view key = read_string(in);
        const std::string_view value = read_string(in);
        const auto expires = in.read<expiry_time>();
        const bool in_order = node.run.empty()
                                  ? (exact_first ? key == node.separator : !(key < std::string_view(node.separator)))
                                  : node.run.key(node.run.size() - 1) < key;
        if (!in_order)
            throw decode_error(std::string("mpidict: skiplist_map ") + what + " carries entries out of order");
        if (expires != 0 && (node.earliest_expiry == 0 || expires < node.earliest_expiry))
            node.earliest_expiry = expires;
        stats.payload_bytes += key.size() + value.size();
        ++stats.entries;
        node.run.push_back(key, value, expires);
    }
}

}  // namespace mpidict::detail
