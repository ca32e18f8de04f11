// The caller's side of ranges: parts (level-0 walk) and pieces (split over the
// towers) collected in key order, and streaming.  See skiplist_caller.hpp.

#include "mpidict/detail/skiplist_caller.hpp"

#include <algorithm>

#include "mpidict/error.hpp"
#include "split_ranges.hpp"

namespace mpidict::detail {

namespace {
// The result of count and erase_range: {u64 total}.
std::string counted_bytes(std::uint64_t total) {
    std::string bytes(sizeof total, '\0');
    byte_writer(reinterpret_cast<std::byte*>(bytes.data()), bytes.size()).put(total).finish();
    return bytes;
}
}  // namespace

std::uint64_t skiplist_caller::take_range_sequence(std::uint32_t slot) {
    auto found = m_range_sequence.find(slot);
    MPIDICT_ASSERT(found != m_range_sequence.end(), "a range without an issue number");
    const std::uint64_t sequence = found->second;
    m_range_sequence.erase(found);
    return sequence;
}

void skiplist_caller::handle_range_part(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::range_part_header>(in);
    const std::uint32_t slot = header.slot, sequence = header.sequence;
    auto found = m_ranges.find(slot);
    if (found == m_ranges.end())
        throw decode_error("mpidict: skiplist_map range part for request slot " + std::to_string(slot) +
                           ", which has no range in progress");
    range_state& state = found->second;
    if (state.parts.count(sequence) != 0 || (state.last != no_slot && sequence > state.last))
        throw decode_error("mpidict: skiplist_map range part " + std::to_string(sequence) + " arrived twice or late");
    if (state.streaming && sequence < state.next)
        throw decode_error("mpidict: skiplist_map range part " + std::to_string(sequence) + " arrived twice");
    state.parts.emplace(sequence, std::string(read_rest(in)));
    state.counts.emplace(sequence, header.entries);
    if (header.last != 0)
        state.last = sequence;
    if (state.streaming) {
        state.source = source;
        advance_stream(slot, state);
        return;
    }
    if (state.last == no_slot || state.parts.size() != std::size_t(state.last) + 1)
        return;
    // Every part is here: hand the request its entries in key order (count,
    // erase_range: the sum of the parts' counts).
    std::string result;
    std::uint32_t total = 0;
    std::uint64_t counted = 0;
    for (auto& [index, bytes] : state.parts) {
        result += bytes;
        total += state.counts[index];
        counted += state.counts[index];
    }
    if (state.counting)
        result = counted_bytes(counted);
    if (state.speculative) {
        // It went ahead of earlier ranges: delivered once checked against them.
        state.parts.clear();
        state.counts.clear();
        state.complete = true;
        state.collected = std::move(result);
        state.count = total;
        state.source = source;
        settle_ranges();
        return;
    }
    if (m_speculating > 0)
        m_settled_reads.emplace(state.sequence, reads_of(state, result, total));
    m_ranges.erase(found);
    deliver(take_range_sequence(slot), completion{source, slot, total, std::move(result)});
    if (m_speculating > 0)
        settle_ranges();  // drains the issue queue
    else if (!m_issue_queue.empty())
        drain_issue_queue();  // what waited for this range (mode sequential)
}

// ---------------------------------------------------------------------------
// Ranges that go ahead (mode sequential)
// ---------------------------------------------------------------------------
//
// A range must read every key after the caller's earlier ranges that read it
// (monotonic reads).  An unbounded range_from(lo, limit) overlaps every later
// range above lo until it finishes, so with that rule alone a caller's ranges
// ran one at a time.  Instead, a range held back only by earlier ranges (each
// ascending, split or a level-0 walk, not streamed) leaves at once, remembering their
// issue numbers (`after`).  When all its parts are here it waits until each of
// those ranges is final, then compares the keys they read (reads_of: [lo, the
// last entry] when the limit stopped the range, else [lo, hi) or to the end of
// the list) with its own:
//   - disjoint from all of them: no key was read by both, so no per-key order
//     between them exists to break; the result is final and delivered (the
//     hold-back queue still hands it out in issue order);
//   - sharing a key with one: the result is dropped (nobody has seen it) and the
//     range runs again now, when every earlier range is final (and no earlier
//     point operation on its interval is in flight: it waited for those before
//     it left), so it reads every key after them.
// Later point operations on its interval wait for it as for any range, until it
// is final; a later range that goes ahead of it is checked against its final
// reads.  Mode sequential promises order per key only, so ranges that share no
// key need no order between them.

skiplist_caller::range_reads skiplist_caller::reads_of(const range_state& state, std::string_view result,
                                                       std::uint32_t count) const {
    range_reads reads;
    reads.lo = state.split && !state.descending ? state.top : state.cursor;  // a split range's cursor moves
    reads.end = state.hi;
    reads.bounded = state.bounded;
    if (state.limit != 0 && count >= state.limit && count > 0) {
        std::string_view last = state.last_key;  // a split range's, found in the piece that met the limit
        if (!state.split || state.last_key.empty()) {
            byte_reader entries = reader_of(result);
            for (std::uint32_t index = 0; index < count; ++index) {
                last = read_string(entries);
                read_string(entries);
            }
        }
        std::string end(last);
        end.push_back('\0');  // the smallest key above the last entry
        if (!reads.bounded || end < reads.end)
            reads.end = std::move(end);
        reads.bounded = true;
    }
    return reads;
}

namespace {

template <class Reads>
bool share_a_key(const Reads& a, const Reads& b) {
    const bool a_empty = a.bounded && a.end <= a.lo, b_empty = b.bounded && b.end <= b.lo;
    if (a_empty || b_empty)
        return false;
    return (!b.bounded || a.lo < b.end) && (!a.bounded || b.lo < a.end);
}

}  // namespace

void skiplist_caller::settle_ranges() {
    for (bool progress = true; progress;) {
        progress = false;
        for (auto it = m_ranges.begin(); it != m_ranges.end(); ++it) {
            range_state& state = it->second;
            if (!state.speculative || !state.complete)
                continue;
            const bool ready = std::all_of(state.after.begin(), state.after.end(), [&](std::uint64_t earlier) {
                return m_settled_reads.count(earlier) != 0;
            });
            if (!ready)
                continue;
            const range_reads mine = reads_of(state, state.collected, state.count);
            const bool shared = std::any_of(state.after.begin(), state.after.end(), [&](std::uint64_t earlier) {
                return share_a_key(m_settled_reads.find(earlier)->second, mine);
            });
            const std::uint32_t slot = it->first;
            --m_speculating;
            state.speculative = false;
            state.complete = false;
            state.after.clear();
            if (shared && !m_trust_ranges) {
                // Run it again, behind every earlier range (all final now).
                state.collected.clear();
                state.last_key.clear();
                state.count = 0;
                state.last = no_slot;
                state.source = -1;
                // Copies: dispatch_range sets a split range's cursor, hi and top again.
                const std::string lo = state.split ? state.top : state.cursor, hi = state.hi;
                dispatch_range(slot, lo, hi, state.bounded, state.limit, state.pattern, false,
                               0);  // never a count or erase_range: those do not go ahead
            } else {
                if (m_speculating > 0)
                    m_settled_reads.emplace(state.sequence, mine);
                completion done{state.source, slot, state.count, std::move(state.collected)};
                m_ranges.erase(it);
                deliver(take_range_sequence(slot), std::move(done));
            }
            progress = true;
            break;
        }
    }
    if (m_speculating == 0) {
        m_settled_reads.clear();
    } else {
        // Keep only what a range still waiting for its check may ask for.
        std::uint64_t oldest = UINT64_MAX;
        for (const auto& [slot, state] : m_ranges)
            for (const std::uint64_t earlier : state.after)
                oldest = std::min(oldest, earlier);
        m_settled_reads.erase(m_settled_reads.begin(), m_settled_reads.lower_bound(oldest));
    }
    if (!m_issue_queue.empty())
        drain_issue_queue();
}

void skiplist_caller::handle_range_piece(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::range_piece_header>(in);
    const std::string_view from = read_string(in);
    const std::string_view to = read_string(in);
    take_piece(source, header.slot, header.bounded, header.entries, from, to, read_rest(in));
}

// Several pieces of one query in one record (a range_batch's answers).
void skiplist_caller::handle_range_pieces(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::range_pieces_header>(in);
    for (std::uint32_t index = 0; index < header.pieces; ++index) {
        const auto piece = read_record<wire::range_batch_piece>(in);
        const std::string_view from = read_string(in);
        const std::string_view to = read_string(in);
        const std::string_view data(reinterpret_cast<const char*>(in.take(piece.data_bytes)), piece.data_bytes);
        take_piece(source, header.slot, piece.bounded, piece.entries, from, to, data);
    }
    if (in.remaining() != 0)
        throw decode_error("mpidict: skiplist_map range pieces record longer than its pieces");
}

void skiplist_caller::take_piece(int source, std::uint32_t slot, std::uint8_t bounded_byte, std::uint32_t entries,
                                 std::string_view from, std::string_view to, std::string_view data) {
    const bool bounded = bounded_byte != 0;
    auto found = m_ranges.find(slot);
    if (found == m_ranges.end() || !found->second.split)
        throw decode_error("mpidict: skiplist_map range piece for request slot " + std::to_string(slot) +
                           ", which has no split range in progress");
    range_state& state = found->second;
    if (state.descending) {
        state.source = source;
        take_descending_piece(slot, state, std::string(from), std::string(to), bounded, entries, data);
        return;
    }
    // A cut (modes sequential and none, split_ranges.hpp): [to, to), nothing
    // at or above `to` was sent; kept as a piece with no entries that ends there.
    const bool cut = (bounded_byte & split_ranges::piece_cut) != 0;
    if (from < std::string_view(state.cursor) || (bounded && to <= from && !cut) ||
        (cut && (to != from || entries != 0)) || state.pieces.count(from) != 0)
        throw decode_error("mpidict: skiplist_map range piece that overlaps another");
    state.source = source;
    if (state.direct && !cut)
        state.direct_got += entries;
    if (!cut && from == std::string_view(state.cursor)) {
        // It continues the chain: taken straight from the record, never stored.
        if (take_entries(slot, state, to, bounded, entries, data))
            return;
    } else {
        state.pieces.emplace(std::string(from), range_state::piece{std::string(to), bounded, entries, std::string(data)});
    }
    // Take the pieces that now continue the chain from the cursor, in key order.
    for (auto next = state.pieces.find(state.cursor); next != state.pieces.end();
         next = state.pieces.find(state.cursor)) {
        range_state::piece taken = std::move(next->second);
        state.pieces.erase(next);
        if (taken.bounded && taken.to == state.cursor) {
            // A cut at the cursor: done when the limit is met (or the query
            // ends here), else the query goes on from the cut, budgeted with
            // what is left of its limit.
            if (state.remaining == 0 || (state.bounded && state.cursor >= state.hi)) {
                finish_split_range(slot, state);
                return;
            }
            if (state.direct) {
                count_direct_batch(state);
                send_direct_range(slot, state);  // the next intervals, from the cut
                return;
            }
            const auto flags = static_cast<std::uint8_t>(state.bounded ? wire::range_bounded : 0);
            const skiplist_node_id entry = uses_shortcuts() ? m_directory.entry_point(state.cursor) : m_shared.head;
            split_ranges::send_split(m_shared, entry, entry_level_byte(entry), slot, state.cursor, state.hi, flags,
                                     state.remaining);
            return;
        }
        if (take_entries(slot, state, taken.to, taken.bounded, taken.entries, taken.data))
            return;
    }
}

// The piece at the cursor, up to `to`: its entries, cut to what the limit
// leaves (count, erase_range: no limit, no entries), go to the result; true
// when that finished the query (the state is gone then).
bool skiplist_caller::take_entries(std::uint32_t slot, range_state& state, std::string_view to, bool bounded,
                                   std::uint32_t entries, std::string_view data) {
    std::uint32_t kept = entries;
    std::size_t bytes = data.size();
    bool cut = false;           // the limit ends inside this piece: its entries were read
    std::string_view last_kept;  // then the last key kept
    if (state.counting) {
        bytes = 0;
    } else if (state.remaining == skiplist_shared::unlimited) {
    } else if (entries <= state.remaining) {
        state.remaining -= entries;  // all of them: no entry read here (the request's decoder checks them)
    } else {
        byte_reader reader = reader_of(data);
        for (kept = 0; kept < state.remaining; ++kept) {
            last_kept = read_string(reader);
            read_string(reader);
        }
        bytes = data.size() - reader.remaining();
        state.remaining = 0;
        cut = true;
    }
    state.entries += kept;
    if (kept > 0 && bytes > 0 && state.remaining == 0 && state.limit != 0) {
        // The limit is met in this piece: its last key ends what the range
        // read (reads_of), found here rather than in the whole result (read
        // once: a cut piece's entries were read above).
        if (cut) {
            state.last_key = last_kept;
        } else {
            byte_reader reader = reader_of(data.substr(0, bytes));
            for (std::uint32_t index = 0; index < kept; ++index) {
                state.last_key = read_string(reader);
                read_string(reader);
            }
        }
    }
    if (kept > 0 && bytes > 0) {
        if (state.streaming) {
            if (!state.abandoned)
                state.ready.emplace_back(data.substr(0, bytes));
        } else {
            if (state.collected.empty() && state.remaining != skiplist_shared::unlimited) {
                // Room for the whole result at this piece's bytes per entry: no regrowth.
                const std::size_t estimate = bytes / kept * (kept + state.remaining);
                state.collected.reserve(std::min<std::size_t>(estimate + bytes, std::size_t{1} << 18));
            }
            state.collected.append(data.data(), bytes);
        }
    }
    state.cursor.assign(to);
    if (!bounded || (state.bounded && state.cursor == state.hi)) {
        if (!bounded && state.bounded)
            throw decode_error("mpidict: skiplist_map range piece reaches past the query");
        finish_split_range(slot, state);
        return true;
    }
    return false;
}

// ---------------------------------------------------------------------------
// Direct ranges (modes sequential and none, ascending, a limit, no pattern)
// ---------------------------------------------------------------------------
//
// The directory maps separators to nodes; between two consecutive entries
// s_i < s_i+1 lies node i's interval (and, when the directory misses nodes or
// a node split since, the nodes after it up to s_i+1).  From the cursor the
// caller sends each interval [s_i, s_i+1) (the first from the cursor, the
// last cut at hi) straight to node i, all at once, the intervals of one rank's
// nodes in one range_batch record (ranges.cpp, handle_range_batch; each
// interval is answered as the range_split piece it stands for would be):
// enough intervals for the limit left at the mean fill seen so far (entries
// per interval), plus one, and remembers a cut at the last separator.  A node
// answers its interval as any split piece: what is its own, and what lies
// beyond its successor split over its tower (a stale entry: a node split off
// since); a dead node (its generation) sends the piece back to the head.  The
// caller chains the pieces by interval coverage (handle_range_piece); reaching
// the cut, it is done if the limit is met, else it sends the next intervals
// from there.  Each piece carries the limit left at sending, so no node sends
// more than the query can keep.  Without a directory entry above the cursor
// the rest goes budgeted (split_ranges.hpp).
//
// Every key is read atomically at its node, as by the walk, and the caller's
// ordering (mode sequential: a range leaves after every earlier point
// operation on its interval, later ones wait for it; ranges that go ahead are
// checked when they end) does not depend on how the parts travel.

void skiplist_caller::send_direct_range(std::uint32_t slot, range_state& state) {
    const std::uint64_t left = state.remaining;
    const double fill = m_direct_intervals >= 16
                            ? std::max(1.0, m_direct_entries / m_direct_intervals)
                            : std::max(1.0, static_cast<double>(m_shared.config.granularity) / 2);
    // The first interval holds about half a node from the cursor; one more for
    // the spread of the fill (a short batch costs another round trip).
    const double wanted = 2.0 + static_cast<double>(left) / fill;
    const std::size_t intervals = static_cast<std::size_t>(std::min(wanted, 256.0));
    struct entry {
        std::string_view separator;
        skiplist_node_id node;
    };
    std::vector<entry> entries;
    entries.reserve(intervals + 1);
    m_directory.entries_from(state.cursor, intervals + 1,
                             [&](std::string_view separator, skiplist_node_id node) { entries.push_back({separator, node}); });
    if (entries.size() < 2) {
        // No known node above the cursor: the rest goes budgeted, located like a find.
        const skiplist_node_id entry = entries.empty() ? m_shared.head : entries.front().node;
        split_ranges::send_split(m_shared, entry, entry_level_byte(entry), slot, state.cursor, state.hi,
                                 static_cast<std::uint8_t>(state.bounded ? wire::range_bounded : 0), left);
        return;
    }
    const std::string from_cursor = state.cursor;
    bool ended = false;  // the last piece reaches hi
    // One range_batch record per destination rank (stop 67; several when
    // they would not fit one): {route_header} from to per interval.  All are
    // written before the first is sent: outside a handler a send may serve
    // incoming records, whose pieces may send another range's batches.
    struct batch {
        int rank;
        std::uint32_t count = 0;
        std::string bytes;
    };
    std::vector<batch> batches;
    const std::size_t room = m_shared.engine->max_record_bytes() - wire_bytes<wire::range_batch_header>;
    m_batch_index.resize(static_cast<std::size_t>(m_shared.engine->size()), -1);
    for (std::size_t at = 0; at + 1 < entries.size() && !ended; ++at) {
        const std::string_view from = at == 0 ? std::string_view(from_cursor) : entries[at].separator;
        std::string_view to = entries[at + 1].separator;
        if (state.bounded && to >= std::string_view(state.hi)) {
            to = state.hi;
            ended = true;
        }
        const skiplist_node_id node = entries[at].node;
        const std::uint8_t level_byte = entry_level_byte(node);
        if ((level_byte & wire::route_shortcut) != 0)
            ++m_shared.stats.shortcut_entries;
        const std::size_t interval = wire_bytes<wire::route_header> + string_bytes(from) + string_bytes(to);
        int& index = m_batch_index[static_cast<std::size_t>(node.rank)];
        if (index < 0 || batches[static_cast<std::size_t>(index)].bytes.size() + interval > room) {
            index = static_cast<int>(batches.size());
            batches.push_back(batch{node.rank, 0, {}});
        }
        batch& into = batches[static_cast<std::size_t>(index)];
        const std::size_t offset = into.bytes.size();
        into.bytes.resize(offset + interval);
        byte_writer out(reinterpret_cast<std::byte*>(into.bytes.data() + offset), interval);
        out.record(skiplist_shared::route(node, level_byte & wire::level_mask, level_byte & ~wire::level_mask, 0));
        put_string(out, from);
        put_string(out, to);
        out.finish();
        ++into.count;
        state.direct_sent += at == 0 || ended ? 0.5 : 1.0;
    }
    for (const batch& each : batches)
        m_batch_index[static_cast<std::size_t>(each.rank)] = -1;
    if (!ended) {
        // The cut: nothing at or above the last separator was asked for.
        const std::string end(entries.back().separator);
        state.pieces.emplace(end, range_state::piece{end, true, 0, std::string()});
    }
    for (const batch& each : batches) {
        const std::size_t size = wire_bytes<wire::range_batch_header> + each.bytes.size();
        byte_writer out(m_shared.engine->reserve(each.rank, m_shared.handlers.range_batch, size), size);
        out.record(wire::range_batch_header{m_shared.rank(), slot, left, each.count}).put_bytes(each.bytes).finish();
    }
}

// A descending split range: pieces chain from hi down to lo (`top` is where
// the chain taken so far ends), each holding the largest entries of its
// interval, largest first; the first `remaining` of the chain are kept.
void skiplist_caller::take_descending_piece(std::uint32_t slot, range_state& state, std::string from, std::string to,
                                            bool bounded, std::uint32_t entries, std::string_view data) {
    std::string key = descending_key(to, bounded);
    if (from < state.cursor || (bounded && to <= from) || (bounded && state.bounded && to > state.hi) ||
        (!bounded && state.bounded) || state.pieces.count(key) != 0)
        throw decode_error("mpidict: skiplist_map descending range piece that overlaps another or lies outside the query");
    state.pieces.emplace(std::move(key), range_state::piece{std::move(from), true, entries, std::string(data)});
    for (auto next = state.pieces.find(state.top); next != state.pieces.end(); next = state.pieces.find(state.top)) {
        range_state::piece taken = std::move(next->second);
        state.pieces.erase(next);
        std::uint32_t kept = 0;
        byte_reader reader = reader_of(taken.data);
        while (kept < taken.entries && state.remaining != 0) {
            read_string(reader);
            read_string(reader);
            ++kept;
            if (state.remaining != skiplist_shared::unlimited)
                --state.remaining;
        }
        taken.data.resize(taken.data.size() - reader.remaining());
        state.entries += kept;
        if (kept > 0) {
            if (state.streaming) {
                if (!state.abandoned)
                    state.ready.push_back(std::move(taken.data));
            } else {
                state.collected += taken.data;
            }
        }
        // piece::to holds the piece's start here.
        if (taken.to == state.cursor) {
            finish_split_range(slot, state);
            return;
        }
        state.top = descending_key(taken.to, true);
    }
}

void skiplist_caller::count_direct_batch(range_state& state) {
    m_direct_entries += state.direct_got;
    m_direct_intervals += state.direct_sent;
    state.direct_got = state.direct_sent = 0;
    if (m_direct_intervals > 1e5) {  // the mean of the recent ranges
        m_direct_intervals /= 2;
        m_direct_entries /= 2;
    }
}

void skiplist_caller::finish_split_range(std::uint32_t slot, range_state& state) {
    if (state.direct)
        count_direct_batch(state);
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(state.entries, no_slot - 1));
    if (state.streaming) {
        // advance_stream completes the request once `ready` is handed out.
        state.last = 0;
        state.next = 1;
        advance_stream(slot, state);
        return;
    }
    std::string result = state.counting ? counted_bytes(state.entries) : std::move(state.collected);
    const int source = state.source < 0 ? m_shared.rank() : state.source;
    if (state.speculative) {
        // Mode sequential: it went ahead of earlier ranges (settle_ranges).
        state.complete = true;
        state.collected = std::move(result);
        state.count = count;
        state.source = source;
        settle_ranges();
        return;
    }
    if (m_speculating > 0)
        m_settled_reads.emplace(state.sequence, reads_of(state, result, count));
    m_ranges.erase(slot);
    deliver(take_range_sequence(slot), completion{source, slot, count, std::move(result)});
    if (m_speculating > 0)
        settle_ranges();  // drains the issue queue
    else if (!m_issue_queue.empty())
        drain_issue_queue();
}

void skiplist_caller::advance_stream(std::uint32_t slot, range_state& state) {
    for (auto first = state.parts.begin(); first != state.parts.end() && first->first == state.next;
         first = state.parts.begin()) {
        state.entries += state.counts[first->first];
        state.counts.erase(first->first);
        if (!state.abandoned)
            state.ready.push_back(std::move(first->second));
        state.parts.erase(first);
        ++state.next;
    }
    if (state.last == no_slot || state.next <= state.last || !state.ready.empty())
        return;
    // Every part handed out: the request completes with the entry count.
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(state.entries, no_slot - 1));
    const int source = state.source < 0 ? m_shared.rank() : state.source;
    m_ranges.erase(slot);
    deliver(take_range_sequence(slot), completion{source, slot, count, {}});
    if (!m_issue_queue.empty())
        drain_issue_queue();
}

bool skiplist_caller::take_stream_part(std::uint32_t slot, std::string& part) {
    auto found = m_ranges.find(slot);
    if (found == m_ranges.end() || found->second.ready.empty())
        return false;
    if (m_mode == skiplist_consistency::sequential && !m_shared.config.break_consistency_for_testing) {
        // Mode sequential: a streamed range hands out nothing before every
        // earlier operation of this caller has completed.
        auto sequence = m_range_sequence.find(slot);
        if (sequence != m_range_sequence.end() && sequence->second != m_next_delivery)
            return false;
    }
    part = std::move(found->second.ready.front());
    found->second.ready.pop_front();
    advance_stream(slot, found->second);
    return true;
}

void skiplist_caller::abandon_stream(std::uint32_t slot) {
    auto found = m_ranges.find(slot);
    if (found == m_ranges.end())
        return;
    found->second.abandoned = true;
    found->second.ready.clear();
    advance_stream(slot, found->second);
}

}  // namespace mpidict::detail
