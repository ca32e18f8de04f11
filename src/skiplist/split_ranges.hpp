#pragma once
// Split ranges in modes sequential and none (issue 42, item 2): what the
// range_split and range_piece records add to skiplist_wire.hpp's layout for
// them (ranges.cpp: handle_range_split; caller.cpp and caller_ranges.cpp: the
// caller's side).  Only src/ includes this file.

#include <cstdint>
#include <string>
#include <string_view>

#include "mpidict/detail/skiplist_shared.hpp"

namespace mpidict::detail::split_ranges {

// range_split flags: range_budgeted (a range with a limit, modes sequential
// and none): the third string holds {u64 budget} instead of a pattern.  The
// piece is first located like a find (not split on the way down); the node
// holding lo then splits it forward over its own tower, as far as an estimate
// of the keys its levels span says `budget` entries need, and either passes
// the rest on (an open piece to its top successor with the budget left) or
// ends the query there with a cut.
inline constexpr std::uint8_t range_budgeted = 0x40;
// range_split flags: range_cut_end (with range_budgeted and range_bounded):
// hi is a cut, not the query's end; the node whose part reaches hi says so
// with a cut record.  A node that ends the query with a cut hands the piece
// below the cut's level on budgeted, with the cut as its end, so the cut falls
// near where the estimate runs out rather than a whole level's span beyond.
inline constexpr std::uint8_t range_cut_end = 0x80;

// range_piece_header::bounded bit: a cut.  The piece [to, to) (no entries)
// says nothing was sent at or above `to`: the caller, once its chain reaches
// `to`, finishes (the limit is met) or sends the query on from there.
inline constexpr std::uint8_t piece_cut = 2;

inline std::string budget_bytes(std::uint64_t budget) {
    std::string bytes(8, '\0');
    for (int at = 0; at < 8; ++at)
        bytes[static_cast<std::size_t>(at)] = static_cast<char>((budget >> (8 * at)) & 0xff);
    return bytes;
}

// 0 when `bytes` is not 8 bytes long (a malformed record).
inline std::uint64_t budget_of(std::string_view bytes) {
    if (bytes.size() != 8)
        return 0;
    std::uint64_t budget = 0;
    for (int at = 7; at >= 0; --at)
        budget = (budget << 8) | static_cast<unsigned char>(bytes[static_cast<std::size_t>(at)]);
    return budget;
}

// The caller's range_split record for [lo, hi) entering at `entry`
// (level_byte: skiplist_caller::entry_level_byte's); budgeted when limited.
inline void send_split(skiplist_shared& shared, skiplist_node_id entry, std::uint8_t level_byte, std::uint32_t slot,
                       std::string_view lo, std::string_view hi, std::uint8_t flags, std::uint64_t limit) {
    using wire = skiplist_wire;
    const bool budgeted = limit != skiplist_shared::unlimited && (flags & wire::range_count) == 0;
    // The budget is the limit.  Aimed a quarter past it, bench/skiplist_map's
    // ranges of 1,000 (2 ranks, 100,000 keys per rank) sent 2.05x the entries
    // kept instead of 1.6x, for 9 % of ranges resumed after a cut instead of 21 %.
    const std::string third = budgeted ? budget_bytes(limit) : std::string();
    if (budgeted)
        flags = static_cast<std::uint8_t>(flags | range_budgeted);
    if ((level_byte & wire::route_shortcut) != 0)
        ++shared.stats.shortcut_entries;
    const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<wire::range_split_header> +
                              string_bytes(lo) + string_bytes(hi) + string_bytes(third);
    byte_writer out(shared.engine->reserve(entry.rank, shared.handlers.range_split, bytes), bytes);
    out.record(skiplist_shared::route(entry, level_byte & wire::level_mask, level_byte & ~wire::level_mask, 0))
        .record(wire::range_split_header{shared.rank(), slot, flags, limit});
    put_string(out, lo);
    put_string(out, hi);
    put_string(out, third);
    out.finish();
}

}  // namespace mpidict::detail::split_ranges
