#pragma once
// How skiplist_map lays out its records (src/skiplist/), beside the other
// containers' layouts in wire.hpp: one named header per record kind, fields in
// wire order, written with byte_writer and read with read_record.  Byte strings
// (keys, values, separators, patterns) follow a header as {u32 bytes, bytes}
// (put_string / read_string); node ids as {i32 rank, u32 slot, u32 generation}.
//
// Routed records (point, range, range_split, link_up) start with a
// route_header naming the node they are addressed to now; the rest (the
// record's "tail") travels unchanged from hop to hop.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>

#include "mpidict/detail/wire.hpp"
#include "mpidict/skiplist_map_types.hpp"

namespace mpidict::detail {

// Expiry: seconds since the Unix epoch (std::chrono::system_clock); 0 = never.
using expiry_time = double;

struct skiplist_wire {
    static constexpr std::uint32_t no_slot = 0xffffffffu;
    static constexpr std::size_t node_id_bytes = 12;

    // The header of a routed record: the addressed node's slot and generation
    // (on the receiving rank), the level byte (the level in the low bits, and
    // route_free / route_shortcut) and the hops byte (hops so far, and
    // route_fell_back).
    struct route_header {
        std::uint32_t slot;
        std::uint32_t generation;
        std::uint8_t level;
        std::uint8_t hops;
        static constexpr auto fields() {
            return std::tuple{&route_header::slot, &route_header::generation, &route_header::level, &route_header::hops};
        }
    };
    static constexpr std::uint8_t level_mask = 0x3f, route_free = 0x40, route_shortcut = 0x80;
    static constexpr std::uint8_t hops_mask = 0x7f, route_fell_back = 0x80;

    // point (tail): {point_header} key value.  A routed ordering marker
    // (kind marker) carries the node id it clears as its value; `ticket` is
    // the caller's answer ticket, or a batch key's index when `slot` names a
    // batch.  `stamp` (mode total_order): the head's handling order, set
    // when the record passes the head (0: not yet, or not a request); a
    // holding node replays what it queued in stamp order (nodes.cpp).
    struct point_header {
        std::uint8_t kind;
        std::int32_t caller;
        std::uint32_t slot;
        std::uint32_t ticket;
        expiry_time expires;
        std::uint32_t stamp = 0;
        static constexpr auto fields() {
            return std::tuple{&point_header::kind,   &point_header::caller,  &point_header::slot,
                              &point_header::ticket, &point_header::expires, &point_header::stamp};
        }
    };
    // point_reply: {point_reply_header} separator, then the value (the rest).
    struct point_reply_header {
        std::uint32_t slot;
        std::uint32_t ticket;
        std::uint8_t status;
        std::uint8_t hops;
        std::int32_t node_rank;  // the answering node and (next) its separator
        std::uint32_t node_slot;
        std::uint32_t node_generation;
        static constexpr auto fields() {
            return std::tuple{&point_reply_header::slot,      &point_reply_header::ticket,
                              &point_reply_header::status,    &point_reply_header::hops,
                              &point_reply_header::node_rank, &point_reply_header::node_slot,
                              &point_reply_header::node_generation};
        }
    };
    // range (tail): {range_header} lo hi pattern (serialized key_pattern, empty: none).
    // flags: range_bounded (hi is an end; else to the end of the list) and
    // range_descending (the query walks from hi down: every step locates the
    // node below hi, whose part comes next, largest key first).
    // range_count (count, erase_range; never with a pattern or descending):
    // each node counts the entries of its part instead of sending them (a
    // part's or piece's `entries` is the count, no entries follow);
    // range_erase (with range_count) erases what it counts.
    static constexpr std::uint8_t range_bounded = 1, range_descending = 2, range_count = 4, range_erase = 8;
    struct range_header {
        std::int32_t caller;
        std::uint32_t slot;
        std::uint32_t sequence;  // the next part's number (0: still locating lo, or hi when descending)
        std::uint8_t flags;
        std::uint64_t limit;     // entries left (unlimited: no limit)
        static constexpr auto fields() {
            return std::tuple{&range_header::caller, &range_header::slot, &range_header::sequence,
                              &range_header::flags, &range_header::limit};
        }
    };
    // range_part: {range_part_header} then `entries` × (key value).
    struct range_part_header {
        std::uint32_t slot;
        std::uint32_t sequence;
        std::uint8_t last;
        std::uint32_t entries;
        static constexpr auto fields() {
            return std::tuple{&range_part_header::slot, &range_part_header::sequence, &range_part_header::last,
                              &range_part_header::entries};
        }
    };
    // range_split (tail; skiplist_ranges.hpp says which ranges split): {range_split_header} lo hi pattern;
    // flags as a range_header's.
    struct range_split_header {
        std::int32_t caller;
        std::uint32_t slot;
        std::uint8_t flags;
        std::uint64_t limit;
        std::uint32_t stamp = 0;  // as a point_header's
        static constexpr auto fields() {
            return std::tuple{&range_split_header::caller, &range_split_header::slot, &range_split_header::flags,
                              &range_split_header::limit, &range_split_header::stamp};
        }
    };
    // range_piece: {range_piece_header} from to, then `entries` × (key value):
    // the entries of [from, to) (to the end when !bounded); of a descending
    // query, the largest ones (at most its limit) of [from, to), largest first.
    struct range_piece_header {
        std::uint32_t slot;
        std::uint8_t bounded;
        std::uint32_t entries;
        static constexpr auto fields() {
            return std::tuple{&range_piece_header::slot, &range_piece_header::bounded, &range_piece_header::entries};
        }
    };
    // range_batch (not routed; modes sequential and none, direct ranges,
    // caller_ranges.cpp): {range_batch_header} then `intervals` × ({route_header}
    // from to), the directory intervals of one query whose nodes are on the
    // destination rank.  Each interval is the range_split piece
    // {route_header} {range_split_header{caller, slot, range_bounded, limit}}
    // from to "" would be (ranges.cpp, handle_range_batch); the answers of the
    // nodes that hold their whole interval travel together in range_pieces.
    struct range_batch_header {
        std::int32_t caller;
        std::uint32_t slot;
        std::uint64_t limit;
        std::uint32_t intervals;
        static constexpr auto fields() {
            return std::tuple{&range_batch_header::caller, &range_batch_header::slot, &range_batch_header::limit,
                              &range_batch_header::intervals};
        }
    };
    // range_pieces: {range_pieces_header} then `pieces` × ({range_batch_piece}
    // from to, then data_bytes of entries): range_piece records' contents, as
    // many as fit one record, of one query.
    struct range_pieces_header {
        std::uint32_t slot;
        std::uint32_t pieces;
        static constexpr auto fields() { return std::tuple{&range_pieces_header::slot, &range_pieces_header::pieces}; }
    };
    struct range_batch_piece {
        std::uint8_t bounded;
        std::uint32_t entries;
        std::uint32_t data_bytes;
        static constexpr auto fields() {
            return std::tuple{&range_batch_piece::bounded, &range_batch_piece::entries, &range_batch_piece::data_bytes};
        }
    };
    // find_split (tail, mode total_order; a find_many chunk): {find_split_header},
    // keys × ({u32 batch index} key), keys in ascending order (a repeated key
    // stays next to itself).  It enters at the head and splits over the towers
    // as a range_split does (ranges.cpp, handle_find_split): the piece holding
    // a key takes the links a point operation on that key takes.
    struct find_split_header {
        std::int32_t caller;
        std::uint32_t slot;  // the batch
        std::uint32_t keys;
        std::uint32_t stamp = 0;  // as a point_header's
        static constexpr auto fields() {
            return std::tuple{&find_split_header::caller, &find_split_header::slot, &find_split_header::keys,
                              &find_split_header::stamp};
        }
    };
    // found_split: {found_split_header}, then answers as found_direct's
    // ({found} [value if hit]): a node's answers to its keys of a piece.
    struct found_split_header {
        std::uint32_t slot;
        std::uint8_t hops;  // the hops the piece made (each of its keys made as many)
        static constexpr auto fields() { return std::tuple{&found_split_header::slot, &found_split_header::hops}; }
    };
    // alloc: {alloc_header} separator {alloc_shape}, links × ({u8 level} node id
    // separator), {u32 entries}, entries × (key value {f64 expires}).
    struct alloc_header {
        std::int32_t origin_rank;  // the splitting node
        std::uint32_t origin_slot;
        std::uint32_t origin_generation;
        std::uint32_t hops;        // managers that had no free slot
        static constexpr auto fields() {
            return std::tuple{&alloc_header::origin_rank, &alloc_header::origin_slot,
                              &alloc_header::origin_generation, &alloc_header::hops};
        }
    };
    struct alloc_shape {
        std::uint8_t height;
        std::uint32_t holds;  // clears the new node waits for
        std::uint8_t links;   // levels linked directly after the splitting node
        static constexpr auto fields() {
            return std::tuple{&alloc_shape::height, &alloc_shape::holds, &alloc_shape::links};
        }
    };
    // alloc_reply: the splitting node, whether a node was found, and which.
    struct alloc_reply {
        std::uint32_t slot;
        std::uint32_t generation;
        std::uint8_t ok;
        std::int32_t fresh_rank;
        std::uint32_t fresh_slot;
        std::uint32_t fresh_generation;
        static constexpr auto fields() {
            return std::tuple{&alloc_reply::slot,       &alloc_reply::generation, &alloc_reply::ok,
                              &alloc_reply::fresh_rank, &alloc_reply::fresh_slot, &alloc_reply::fresh_generation};
        }
    };
    // link_up (tail): the node to splice in, then its separator, then {u8 level}.
    struct link_up_header {
        std::int32_t fresh_rank;
        std::uint32_t fresh_slot;
        std::uint32_t fresh_generation;
        static constexpr auto fields() {
            return std::tuple{&link_up_header::fresh_rank, &link_up_header::fresh_slot,
                              &link_up_header::fresh_generation};
        }
    };
    // set_links: {set_links_header} separator (the successor's on `level`).
    struct set_links_header {
        std::uint32_t slot;
        std::uint32_t generation;
        std::uint8_t reserved;
        std::uint8_t level;
        std::uint8_t linked;  // 0: the predecessor was not linked on the level
        std::int32_t to_rank;
        std::uint32_t to_slot;
        std::uint32_t to_generation;
        static constexpr auto fields() {
            return std::tuple{&set_links_header::slot,    &set_links_header::generation, &set_links_header::reserved,
                              &set_links_header::level,   &set_links_header::linked,     &set_links_header::to_rank,
                              &set_links_header::to_slot, &set_links_header::to_generation};
        }
    };
    // expect: the node, how many clears it waits for and the level of its new link.
    struct expect {
        std::uint32_t slot;
        std::uint32_t generation;
        std::int32_t expected;
        std::uint8_t level;
        static constexpr auto fields() {
            return std::tuple{&expect::slot, &expect::generation, &expect::expected, &expect::level};
        }
    };
    // marker: the node to clear once the receiver has handled what came before.
    struct marker {
        std::int32_t rank;
        std::uint32_t slot;
        std::uint32_t generation;
        static constexpr auto fields() { return std::tuple{&marker::rank, &marker::slot, &marker::generation}; }
    };
    struct clear {
        std::uint32_t slot;
        std::uint32_t generation;
        static constexpr auto fields() { return std::tuple{&clear::slot, &clear::generation}; }
    };
    // unlinked: {unlinked_header}, height × (node id separator).
    struct unlinked_header {
        std::int32_t rank;
        std::uint32_t slot;
        std::uint32_t generation;
        std::uint8_t height;
        static constexpr auto fields() {
            return std::tuple{&unlinked_header::rank, &unlinked_header::slot, &unlinked_header::generation,
                              &unlinked_header::height};
        }
    };
    // find_direct: {find_direct_header}, segments × ({segment} count × key):
    // runs of consecutive batch indices that name the same node.
    struct find_direct_header {
        std::uint8_t level;  // the level byte a point record would start with
        std::uint32_t slot;  // the batch
        std::uint32_t segments;
        static constexpr auto fields() {
            return std::tuple{&find_direct_header::level, &find_direct_header::slot, &find_direct_header::segments};
        }
    };
    struct segment {
        std::uint32_t slot;
        std::uint32_t generation;
        std::uint32_t first;  // the batch index of the first key
        std::uint32_t count;
        static constexpr auto fields() {
            return std::tuple{&segment::slot, &segment::generation, &segment::first, &segment::count};
        }
    };
    // insert_direct: {find_direct_header}, segments × ({segment} count × (key
    // value)): a batch's inserts, sorted by key, runs of consecutive indices
    // per node (the same layout as find_direct with a value after each key).
    // A node merges the keys of its range into its run in one pass and sends
    // the others on, a segment per next node.
    struct insert_direct_header {
        std::uint8_t level;  // the level byte of a point record on this hop
        std::uint8_t hops;   // as a point record's (route_fell_back: a shortcut failed)
        std::int32_t caller;
        std::uint32_t slot;  // the batch
        std::uint32_t segments;
        expiry_time expires;  // every key's deadline (insert_many with an expiry; 0: none)
        static constexpr auto fields() {
            return std::tuple{&insert_direct_header::level, &insert_direct_header::hops,
                              &insert_direct_header::caller, &insert_direct_header::slot,
                              &insert_direct_header::segments, &insert_direct_header::expires};
        }
    };
    // bulk_reserve: {bulk_reserve} — the splitting node asks a rank for
    // `count` empty nodes; bulk_reserved: {bulk_reserved}, granted × {u32 slot,
    // u32 generation} (fewer than asked: that rank reached its limit).
    struct bulk_reserve {
        std::int32_t origin_rank;
        std::uint32_t origin_slot;
        std::uint32_t origin_generation;
        std::uint32_t count;
        static constexpr auto fields() {
            return std::tuple{&bulk_reserve::origin_rank, &bulk_reserve::origin_slot,
                              &bulk_reserve::origin_generation, &bulk_reserve::count};
        }
    };
    struct bulk_reserved {
        std::uint32_t slot;  // the splitting node
        std::uint32_t generation;
        std::uint32_t asked;
        std::uint32_t granted;
        static constexpr auto fields() {
            return std::tuple{&bulk_reserved::slot, &bulk_reserved::generation, &bulk_reserved::asked,
                              &bulk_reserved::granted};
        }
    };
    // bulk_fill: {bulk_fill} separator, links × ({u8 level} node id separator),
    // {u32 entries}, entries × (key value {f64 expires}): a reserved node
    // becomes a piece of the split (release: links = 0xff, nothing follows).
    struct bulk_fill {
        std::uint32_t slot;
        std::uint32_t generation;
        std::uint32_t holds;  // clears it waits for (markers of replaced links)
        std::uint8_t height;
        std::uint8_t links;
        static constexpr auto fields() {
            return std::tuple{&bulk_fill::slot, &bulk_fill::generation, &bulk_fill::holds, &bulk_fill::height,
                              &bulk_fill::links};
        }
    };
    static constexpr std::uint8_t bulk_release = 0xff;
    // found_direct: {u32 batch slot}, then answers × ({found} [value if hit;
    // the message if full]): the answers to direct finds and inserts.
    struct found {
        std::uint32_t index;
        std::uint8_t status;
        static constexpr auto fields() { return std::tuple{&found::index, &found::status}; }
    };
};

static_assert(wire_bytes<skiplist_wire::route_header> == 10 && wire_bytes<skiplist_wire::point_header> == 25 &&
              wire_bytes<skiplist_wire::segment> == 16 && wire_bytes<skiplist_wire::find_direct_header> == 9);

// Bytes of a length-prefixed string.
constexpr std::size_t string_bytes(std::string_view bytes) { return 4 + bytes.size(); }
inline byte_writer& put_string(byte_writer& out, std::string_view bytes) {
    return out.put(static_cast<std::uint32_t>(bytes.size())).put_bytes(bytes);
}
inline std::string_view read_string(byte_reader& in) {
    const auto size = in.read<std::uint32_t>();
    return {reinterpret_cast<const char*>(in.take(size)), size};
}
inline byte_writer& put_node_id(byte_writer& out, const skiplist_node_id& id) {
    return out.put(id.rank).put(id.slot).put(id.generation);
}
inline skiplist_node_id read_node_id(byte_reader& in) {
    skiplist_node_id id;
    id.rank = in.read<std::int32_t>();
    id.slot = in.read<std::uint32_t>();
    id.generation = in.read<std::uint32_t>();
    return id;
}
// The rest of a record as bytes.
inline std::string_view read_rest(byte_reader& in) {
    const std::size_t size = in.remaining();
    return {reinterpret_cast<const char*>(in.take(size)), size};
}
inline byte_reader reader_of(std::string_view record) {
    return byte_reader(reinterpret_cast<const std::byte*>(record.data()), record.size());
}
// Entries of range parts and pieces, gathered before their header is known:
// appends {u32 key bytes, key, u32 value bytes, value}.
inline void append_entry(std::string& out, std::string_view key, std::string_view value) {
    const auto append = [&](std::string_view bytes) {
        const auto size = static_cast<std::uint32_t>(bytes.size());
        out.append(reinterpret_cast<const char*>(&size), sizeof size);
        out.append(bytes);
    };
    append(key);
    append(value);
}

}  // namespace mpidict::detail
