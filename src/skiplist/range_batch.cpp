// Direct ranges batched per rank at the nodes (skiplist.range_batch, answered
// by skiplist.range_pieces; issue 42, stop 67).  See skiplist_ranges.hpp and,
// for the caller's side, caller_ranges.cpp (send_direct_range).

#include "mpidict/detail/skiplist_ranges.hpp"

#include <cstring>
#include <string>
#include <vector>

#include "mpidict/error.hpp"

namespace mpidict::detail {

// ---------------------------------------------------------------------------
// Direct ranges batched per rank (stop 67)
// ---------------------------------------------------------------------------
//
// A range_batch record holds the directory intervals of one query whose nodes
// are on this rank.  An interval whose node is live, not moved, not holding,
// not the head, starts at or above the node's separator and ends at or below
// its level-0 successor's is the node's own: it is answered here, in one pass
// that first sizes every answer and then writes the entries straight from the
// runs into one range_pieces record (several when they do not fit one).  Any
// other interval is handed, after that record is written, to
// handle_range_split as the range_split piece the caller sent before (so
// forwarding, holding, a stale directory and a dead node stay exactly what
// they were); its node answers it with range_piece records.  The caller takes
// both kinds alike.  Nothing is read or changed between the sizing and the
// writing (the pieces handed on run after), so the sizes stay true.

void skiplist_range_nodes::handle_range_batch(int source, std::string_view record) {
    const auto& h = m_shared.handlers;
    auto& stats = m_shared.stats;
    auto& engine = *m_shared.engine;
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::range_batch_header>(in);
    const int caller = header.caller;
    if (!m_shared.valid_rank(caller) || header.limit == 0 || header.intervals == 0)
        throw decode_error("mpidict: skiplist_map range batch record with a bad caller, limit or interval count");
    const std::uint64_t limit = header.limit;
    // A piece larger than this goes the range_split way (answered in parts).
    const std::size_t room = engine.max_record_bytes() - runtime::reply_header_bytes - 32 -
                             wire_bytes<wire::range_pieces_header>;
    const std::size_t keys = 2 * m_shared.config.max_key_bytes;
    const std::size_t piece_room = room / 2 > keys ? room / 2 - keys : 0;
    std::vector<batch_answer>& answers = m_batch_answers;
    answers.clear();
    std::vector<std::string> handed_on;  // the other intervals, as range_split records
    const expiry_time now = m_shared.clock_now();
    // The intervals first, so that the nodes can be loaded ahead: each is a
    // series of dependent loads (node, then tower and run), mostly cache
    // misses on nodes untouched since they were filled.
    std::vector<batch_interval>& intervals = m_batch_intervals;
    intervals.clear();
    for (std::uint32_t index = 0; index < header.intervals; ++index) {
        const std::size_t at = record.size() - in.remaining();
        const auto route = read_record<wire::route_header>(in);
        const std::string_view from = read_string(in);
        const std::string_view to = read_string(in);
        if (to <= from)
            throw decode_error("mpidict: skiplist_map range batch record with an empty interval");
        intervals.push_back(batch_interval{route.slot, route.generation, at, from, to});
    }
    if (in.remaining() != 0)
        throw decode_error("mpidict: skiplist_map range batch record longer than its intervals");
    const auto& nodes = m_nodes.all();
    auto prefetch_node = [&](std::size_t index) {
        if (index < intervals.size() && intervals[index].slot < nodes.size()) {
            const char* at = reinterpret_cast<const char*>(&nodes[intervals[index].slot]);
            for (std::size_t line = 0; line < sizeof(node); line += 64)
                prefetch_line(at + line);
        }
    };
    auto prefetch_run = [&](std::size_t index) {
        if (index < intervals.size() && intervals[index].slot < nodes.size()) {
            const node& ahead = nodes[intervals[index].slot];
            ahead.run.prefetch();
            prefetch_line(ahead.tower.data());
        }
    };
    prefetch_node(0);
    prefetch_node(1);
    for (std::size_t index = 0; index < intervals.size(); ++index) {
        prefetch_node(index + 2);
        prefetch_run(index + 1);
        const batch_interval& interval = intervals[index];
        const std::size_t at = interval.at;
        const std::string_view from = interval.from, to = interval.to;
        const skiplist_node_id id{m_shared.rank(), interval.slot, interval.generation};
        node* here = m_nodes.live(id) && id != m_shared.head ? &m_nodes.addressed(id, "range batch") : nullptr;
        if (here != nullptr) {
            const link* next = here->tower.empty() ? nullptr : &here->tower.front();
            const bool own = !here->stub() && here->holds == 0 && !here->allocating &&
                             from >= std::string_view(here->separator) && next != nullptr && next->set &&
                             (next->to.null() || std::string_view(next->separator) >= to);
            if (!own)
                here = nullptr;
        }
        if (here != nullptr) {
            m_nodes.purge_expired(*here, now);
            const sorted_run& run = here->run;
            // The common interval holds the node's whole run: one comparison
            // at each end instead of a search.
            const std::size_t size = run.size();
            const std::size_t first = size == 0 || run.key(0) >= from ? 0 : run.lower_bound(from);
            std::size_t stop = first == size || run.key(size - 1) < to ? size : run.lower_bound(to, first);
            if (limit != skiplist_shared::unlimited && stop - first > limit)
                stop = first + static_cast<std::size_t>(limit);
            // The wire's {u32 key bytes, key, u32 value bytes, value} per
            // entry: packed_bytes counts them without a pass over the
            // entries (the writing checks every entry against it).
            const std::size_t data_bytes = run.packed_bytes(first, stop);
            if (data_bytes <= piece_room) {
                answers.push_back(batch_answer{here, first, stop, data_bytes, from, to});
                continue;
            }
        }
        // Not this batch's to answer: the range_split piece it stands for.
        const std::string_view route_bytes = record.substr(at, wire_bytes<wire::route_header>);
        const std::size_t bytes = route_bytes.size() + wire_bytes<wire::range_split_header> + string_bytes(from) +
                                  string_bytes(to) + string_bytes(std::string_view());
        std::string& split = handed_on.emplace_back(bytes, '\0');
        byte_writer out(reinterpret_cast<std::byte*>(split.data()), bytes);
        out.put_bytes(route_bytes).record(wire::range_split_header{caller, header.slot, wire::range_bounded, limit});
        put_string(out, from);
        put_string(out, to);
        put_string(out, std::string_view());
        out.finish();
    }
    // The answers, in records of at most `room` bytes.
    auto piece_bytes = [](const batch_answer& answer) {
        return wire_bytes<wire::range_batch_piece> + string_bytes(answer.from) + string_bytes(answer.to) +
               answer.data_bytes;
    };
    for (std::size_t begin = 0; begin < answers.size();) {
        std::size_t end = begin, bytes = wire_bytes<wire::range_pieces_header>;
        while (end < answers.size() && (end == begin || bytes + piece_bytes(answers[end]) <= room))
            bytes += piece_bytes(answers[end++]);
        std::byte* const out = engine.reserve(caller, h.range_pieces, bytes);
        std::byte* cursor = out;
        auto put = [&](const void* data, std::size_t size) {
            std::memcpy(cursor, data, size);
            cursor += size;
        };
        auto put_u32 = [&](std::size_t value) {
            const auto word = static_cast<std::uint32_t>(value);
            put(&word, sizeof word);
        };
        {
            byte_writer head(cursor, wire_bytes<wire::range_pieces_header>);
            head.record(wire::range_pieces_header{header.slot, static_cast<std::uint32_t>(end - begin)}).finish();
            cursor += wire_bytes<wire::range_pieces_header>;
        }
        for (std::size_t index = begin; index != end; ++index) {
            const batch_answer& answer = answers[index];
            byte_writer piece(cursor, wire_bytes<wire::range_batch_piece>);
            piece.record(wire::range_batch_piece{1, static_cast<std::uint32_t>(answer.stop - answer.first),
                                                 static_cast<std::uint32_t>(answer.data_bytes)})
                .finish();
            cursor += wire_bytes<wire::range_batch_piece>;
            put_u32(answer.from.size());
            put(answer.from.data(), answer.from.size());
            put_u32(answer.to.size());
            put(answer.to.data(), answer.to.size());
            const sorted_run& run = answer.here->run;
            std::byte* const piece_end = cursor + answer.data_bytes;
            if (run.fixed_width()) {
                // Every entry of the run has the same widths (sorted_run's
                // fixed-width layout): the headers are two constants, the
                // entries [key][value] at a fixed stride.
                const std::size_t key_width = run.key_width(), value_width = run.value_width();
                const std::size_t count = answer.stop - answer.first;
                MPIDICT_ASSERT(count * (8 + key_width + value_width) == answer.data_bytes,
                               "a range piece's entries differ from the bytes counted for them");
                const char* in = run.fixed_entry(answer.first);
                if (key_width == 8 && value_width == 8) {
                    // 8-byte keys and values (integers): copies of fixed size, no library call.
                    const std::uint32_t eight = 8;
                    for (std::size_t entry = 0; entry != count; ++entry, in += 16, cursor += 24) {
                        std::memcpy(cursor, &eight, 4);
                        std::memcpy(cursor + 4, in, 8);
                        std::memcpy(cursor + 12, &eight, 4);
                        std::memcpy(cursor + 16, in + 8, 8);
                    }
                } else {
                    for (std::size_t entry = 0; entry != count; ++entry, in += key_width + value_width) {
                        put_u32(key_width);
                        put(in, key_width);
                        put_u32(value_width);
                        put(in + key_width, value_width);
                    }
                }
                MPIDICT_ASSERT(cursor == piece_end, "a range piece's entries fill fewer bytes than counted for them");
                ++stats.handled;
                ++stats.range_parts;
                continue;
            }
            for (std::size_t entry = answer.first; entry != answer.stop; ++entry) {
                const std::string_view key = run.key(entry), value = run.value(entry);
                MPIDICT_ASSERT(key.size() + value.size() + 8 <= static_cast<std::size_t>(piece_end - cursor),
                               "a range piece's entries exceed the bytes counted for them");
                if (key.size() == 8 && value.size() == 8) {
                    // 8-byte keys and values (integers): copies of fixed size, no library call.
                    const std::uint32_t eight = 8;
                    std::memcpy(cursor, &eight, 4);
                    std::memcpy(cursor + 4, key.data(), 8);
                    std::memcpy(cursor + 12, &eight, 4);
                    std::memcpy(cursor + 16, value.data(), 8);
                    cursor += 24;
                    continue;
                }
                put_u32(key.size());
                put(key.data(), key.size());
                put_u32(value.size());
                put(value.data(), value.size());
            }
            MPIDICT_ASSERT(cursor == piece_end, "a range piece's entries fill fewer bytes than counted for them");
            ++stats.handled;
            ++stats.range_parts;
        }
        MPIDICT_ASSERT(cursor == out + bytes, "a range_pieces record was written to another length than reserved");
        begin = end;
    }
    for (const std::string& split : handed_on)
        handle_range_split(source, split);
}

}  // namespace mpidict::detail
