// Ranges and patterns at the nodes (Listing 2).  See skiplist_ranges.hpp.

#include "mpidict/detail/skiplist_ranges.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/key_pattern.hpp"
#include "split_ranges.hpp"

namespace mpidict::detail {

namespace {

// A routed record whose tail is {Header} followed by three strings.
template <class Header>
void forward_three(skiplist_shared& shared, runtime::handler_id handler, skiplist_node_id to, int level,
                   std::uint8_t flags, std::uint8_t hops, const Header& header, std::string_view first,
                   std::string_view second, std::string_view third) {
    const std::size_t bytes = wire_bytes<skiplist_wire::route_header> + wire_bytes<Header> + string_bytes(first) +
                              string_bytes(second) + string_bytes(third);
    byte_writer out(shared.engine->reserve(to.rank, handler, bytes), bytes);
    out.record(skiplist_shared::route(to, level, flags, hops)).record(header);
    put_string(out, first);
    put_string(out, second);
    put_string(out, third);
    out.finish();
}

// count, erase_range: the entries [first, last) of a node's run, counted in
// its statistics as erased (an emptied node is unlinked at the next flush, as
// after erase).
template <class Node>
void erase_entries(skiplist_shared& shared, Node& here, std::size_t first, std::size_t last) {
    for (std::size_t at = first; at < last; ++at)
        shared.stats.payload_bytes -= here.run.key(at).size() + here.run.value(at).size();
    shared.stats.entries -= last - first;
    here.run.erase(first, last);
}

}  // namespace

// ---------------------------------------------------------------------------
// Range queries: located like a find, then along level 0
// ---------------------------------------------------------------------------

void skiplist_range_nodes::handle_range(int source, std::string_view record) {
    const auto& h = m_shared.handlers;
    auto& stats = m_shared.stats;
    byte_reader in = reader_of(record);
    const auto route = read_record<wire::route_header>(in);
    const skiplist_node_id id{m_shared.rank(), route.slot, route.generation};
    const std::uint8_t level_byte = route.level;
    const std::uint8_t hops = route.hops;
    const int level = level_byte & wire::level_mask;
    const std::string_view tail = record.substr(wire_bytes<wire::route_header>);
    if ((level_byte & wire::route_shortcut) != 0 && !m_nodes.live(id)) {
        m_shared.fall_back_to_head(h.range, tail, level_byte, hops);  // see skiplist_nodes::handle_point
        return;
    }
    node& here = m_nodes.addressed(id, "range");
    if (m_nodes.forward_if_moved(here, h.range, record))
        return;
    if (m_nodes.hold_if_busy(here, h.range, source, record, level))
        return;
    if (id == m_shared.head)
        ++stats.head_visits;
    auto header = read_record<wire::range_header>(in);
    const int caller = header.caller;
    const std::uint32_t slot = header.slot;
    std::uint32_t sequence = header.sequence;
    const bool bounded = (header.flags & wire::range_bounded) != 0;
    std::uint64_t limit = header.limit;
    const std::string_view lo = read_string(in);
    const std::string_view hi = read_string(in);
    const std::string_view pattern_bytes = read_string(in);
    if (!m_shared.valid_rank(caller) || limit == 0)
        throw decode_error("mpidict: skiplist_map range record with a bad caller or limit");
    std::optional<key_pattern> pattern;
    if (!pattern_bytes.empty())
        pattern = key_pattern::deserialize(pattern_bytes);
    if ((header.flags & wire::range_descending) != 0) {
        walk_down(here, id, level_byte, hops, tail, header, lo, hi, pattern_bytes, pattern ? &*pattern : nullptr);
        return;
    }
    if (lo < std::string_view(here.separator) && sequence == 0) {
        // Entered above lo (see handle_point): start again at the head.
        ++stats.hops;
        if ((level_byte & wire::route_shortcut) != 0)
            m_shared.fall_back_to_head(h.range, tail, level_byte, hops);
        else
            m_shared.forward(h.range, m_shared.head, tail, m_shared.top_level(), level_byte & wire::route_free,
                             skiplist_shared::next_hops(hops));
        return;
    }
    const bool climb = (level_byte & wire::route_free) != 0 && sequence == 0;
    const int next_level =
        skiplist_nodes::forward_level(here, lo, climb ? static_cast<int>(here.tower.size()) - 1 : level, false);
    if (next_level >= 0) {
        ++stats.hops;
        m_shared.forward(h.range, here.tower[static_cast<std::size_t>(next_level)].to, tail, next_level,
                         level_byte & wire::route_free, skiplist_shared::next_hops(hops));
        return;
    }
    ++stats.handled;
    m_nodes.purge_expired(here, m_shared.clock_now());
    const sorted_run& run = here.run;
    std::size_t it = run.lower_bound(lo);
    const link& next = here.tower[0];
    auto& engine = *m_shared.engine;
    if ((header.flags & wire::range_count) != 0) {
        // count, erase_range: this node's part counted (and erased) here, one
        // part per node with the count and no entries.
        const std::size_t last = bounded ? std::max(it, run.lower_bound(hi)) : run.size();
        if ((header.flags & wire::range_erase) != 0 && last > it)
            erase_entries(m_shared, here, it, last);
        const bool more = next.set && !next.to.null() && (!bounded || std::string_view(next.separator) < hi);
        const std::size_t bytes = wire_bytes<wire::range_part_header>;
        byte_writer(engine.reserve(caller, h.range_part, bytes), bytes)
            .record(wire::range_part_header{slot, sequence, static_cast<std::uint8_t>(!more),
                                            static_cast<std::uint32_t>(last - it)})
            .finish();
        ++stats.range_parts;
        if (more) {
            ++stats.hops;
            forward_three(m_shared, h.range, next.to, 0, 0, 0,
                          wire::range_header{caller, slot, sequence + 1, header.flags, limit}, next.separator, hi, {});
        }
        return;
    }
    const std::size_t room = engine.max_record_bytes() - runtime::reply_header_bytes - 16;
    // Where a pattern query goes after `key`: the smallest key above it that can
    // match (nullopt: nothing more can).
    auto skip_to = [&](std::string_view key) { return pattern->next_candidate(key); };
    std::string part;
    // Parts of at most one message each; the last part of the query says so.
    while (true) {
        part.clear();
        std::uint32_t entries = 0;
        for (; it != run.size() && limit != 0; ++it) {
            const std::string_view key = run.key(it);
            if (bounded && key >= hi)
                break;
            if (pattern && !pattern->matches(key)) {
                // Jump within this node to the next key that can match.
                const auto candidate = skip_to(key);
                if (!candidate) {
                    it = run.size();
                    limit = 0;  // nothing above can match: the query ends here
                    break;
                }
                it = run.lower_bound(*candidate, it);
                if (it == run.size())
                    break;
                --it;  // the loop's ++it lands on it again
                continue;
            }
            const std::string_view value = run.value(it);
            const std::size_t size = 8 + key.size() + value.size();
            if (entries > 0 && part.size() + size > room)
                break;
            append_entry(part, key, value);
            ++entries;
            if (limit != skiplist_shared::unlimited)
                --limit;
        }
        const bool node_done = it == run.size() || limit == 0 || (bounded && run.key(it) >= hi);
        // A pattern query continues at the first key at or above the successor's
        // separator that can match, routed from here over the towers so the
        // nodes in the gap are skipped.
        std::optional<std::string> resume;
        if (node_done && pattern && limit != 0 && next.set && !next.to.null())
            resume = pattern->matches(next.separator) ? std::optional<std::string>(next.separator)
                                                      : skip_to(next.separator);
        const bool more_nodes = node_done && limit != 0 && next.set && !next.to.null() &&
                                (!pattern || resume.has_value()) &&
                                (!bounded || std::string_view(pattern ? *resume : next.separator) < hi);
        const bool last = node_done && !more_nodes;
        const std::size_t bytes = wire_bytes<wire::range_part_header> + part.size();
        byte_writer(engine.reserve(caller, h.range_part, bytes), bytes)
            .record(wire::range_part_header{slot, sequence, static_cast<std::uint8_t>(last), entries})
            .put_bytes(part)
            .finish();
        ++stats.range_parts;
        ++sequence;
        if (!node_done)
            continue;
        if (more_nodes) {
            const wire::range_header onward{caller, slot, sequence, header.flags, limit};
            ++stats.hops;
            if (!pattern) {
                forward_three(m_shared, h.range, next.to, 0, 0, 0, onward, next.separator, hi, {});
                return;
            }
            const int level = skiplist_nodes::forward_level(here, *resume, static_cast<int>(here.tower.size()) - 1, false);
            MPIDICT_ASSERT(level >= 0, "a pattern query resumes beyond this node's range");
            forward_three(m_shared, h.range, here.tower[static_cast<std::size_t>(level)].to, level, 0, 0, onward,
                          *resume, hi, pattern_bytes);
        }
        return;
    }
}

// ---------------------------------------------------------------------------
// Descending ranges ("latest N"): from hi down, node by node
// ---------------------------------------------------------------------------
//
// The query is routed like a point operation to the node below hi (the last
// node whose separator is < hi; the last node of the list when unbounded),
// which answers the largest entries of its part, largest first.  If the limit
// is not used up and the interval reaches below the node's separator, the
// query goes on to the node below that separator (with a pattern: below the
// largest key under it that can match, key_pattern::prev_candidate), located
// again from this rank's directory (a shortcut; the head when it knows no
// node there, or when the entry turns out dead).  Levels link forward only, so
// each step is a locate of O(log(n / G)) hops from the entry, and a query that
// stops after `limit` entries costs O(log n + limit) in all, where collecting
// the interval and cutting at the caller cost the whole interval.  Every key
// is read atomically at its node, between call and return (modes sequential
// and none; the caller's ordering of mode sequential does not depend on the
// path: skiplist_caller.cpp).  Parts are numbered as the ascending walk's are.

void skiplist_range_nodes::walk_down(node& here, skiplist_node_id id, std::uint8_t level_byte, std::uint8_t hops,
                                     std::string_view tail, const wire::range_header& header, std::string_view lo,
                                     std::string_view hi, std::string_view pattern_bytes, const key_pattern* pattern) {
    const auto& h = m_shared.handlers;
    auto& stats = m_shared.stats;
    const bool bounded = (header.flags & wire::range_bounded) != 0;
    const bool empty = bounded && hi <= lo;
    const int level = level_byte & wire::level_mask;
    const bool head = id == m_shared.head;
    if (!empty && bounded && !head && hi <= std::string_view(here.separator)) {
        // Entered at or above hi (a stale route): start again at the head.
        ++stats.hops;
        if ((level_byte & wire::route_shortcut) != 0)
            m_shared.fall_back_to_head(h.range, tail, level_byte, hops);
        else
            m_shared.forward(h.range, m_shared.head, tail, m_shared.top_level(), level_byte & wire::route_free,
                             skiplist_shared::next_hops(hops));
        return;
    }
    if (!empty) {
        // Locate the node below hi: forward while a successor's separator is below it.
        int next_level = -1;
        if (bounded) {
            next_level = skiplist_nodes::forward_level(here, hi, level, true);
        } else {
            for (int at = std::min(level, static_cast<int>(here.tower.size()) - 1); at >= 0 && next_level < 0; --at) {
                const link& next = here.tower[static_cast<std::size_t>(at)];
                if (next.set && !next.to.null())
                    next_level = at;
            }
        }
        if (next_level >= 0) {
            ++stats.hops;
            m_shared.forward(h.range, here.tower[static_cast<std::size_t>(next_level)].to, tail, next_level,
                             level_byte & wire::route_free, skiplist_shared::next_hops(hops));
            return;
        }
    }
    ++stats.handled;
    m_nodes.purge_expired(here, m_shared.clock_now());
    const sorted_run& run = here.run;
    auto& engine = *m_shared.engine;
    const std::size_t room = engine.max_record_bytes() - runtime::reply_header_bytes - 16;
    const std::size_t bottom = empty ? 0 : run.lower_bound(lo);
    std::size_t it = empty ? 0 : bounded ? run.lower_bound(hi) : run.size();
    std::uint32_t sequence = header.sequence;
    std::uint64_t limit = header.limit;
    bool exhausted = false;  // a pattern query: nothing below can match
    std::string part;
    while (true) {
        part.clear();
        std::uint32_t entries = 0;
        while (it > bottom && limit != 0) {
            const std::string_view key = run.key(it - 1);
            if (pattern && !pattern->matches(key)) {
                // Jump within this node to the largest key below that can match.
                const auto candidate = pattern->prev_candidate(key);
                if (!candidate || std::string_view(*candidate) < lo) {
                    it = bottom;
                    exhausted = true;
                    break;
                }
                it = std::max(bottom, run.lower_bound(*candidate + '\0'));
                continue;
            }
            const std::string_view value = run.value(it - 1);
            if (entries > 0 && part.size() + 8 + key.size() + value.size() > room)
                break;
            append_entry(part, key, value);
            ++entries;
            --it;
            if (limit != skiplist_shared::unlimited)
                --limit;
        }
        const bool node_done = it <= bottom || limit == 0;
        // The rest lies below this node's separator: [lo, next_hi).
        std::optional<std::string> next_hi;
        if (node_done && limit != 0 && !exhausted && !empty && !head && lo < std::string_view(here.separator)) {
            if (!pattern) {
                next_hi = here.separator;
            } else if (auto candidate = pattern->prev_candidate(here.separator);
                       candidate && std::string_view(*candidate) >= lo) {
                next_hi = std::move(*candidate);
                next_hi->push_back('\0');  // the smallest key above the candidate
            }
        }
        const bool last = node_done && !next_hi;
        const std::size_t bytes = wire_bytes<wire::range_part_header> + part.size();
        byte_writer(engine.reserve(header.caller, h.range_part, bytes), bytes)
            .record(wire::range_part_header{header.slot, sequence, static_cast<std::uint8_t>(last), entries})
            .put_bytes(part)
            .finish();
        ++stats.range_parts;
        ++sequence;
        if (!node_done)
            continue;
        if (next_hi) {
            const skiplist_node_id entry = m_nodes.directory().entry_below(*next_hi, true);
            std::uint8_t flags = level_byte & wire::route_free;
            if (!(entry == m_shared.head)) {
                flags |= wire::route_shortcut;
                ++stats.node_shortcuts;
            }
            ++stats.hops;
            const wire::range_header onward{header.caller, header.slot, sequence,
                                            static_cast<std::uint8_t>(wire::range_bounded | wire::range_descending),
                                            limit};
            forward_three(m_shared, h.range, entry, m_shared.top_level(), flags, 0, onward, lo, *next_hi,
                          pattern_bytes);
        }
        return;
    }
}

// ---------------------------------------------------------------------------
// Ranges split over the towers (the seed's Listing 2): every ascending range
// in mode total_order (from the head), and in modes sequential and none those
// without a pattern (from where a find on lo enters; budgeted when limited:
// opt-in, split_ranges.hpp, and docs/skiplist_map.md "Split ranges").  (The comments
// of skiplist_ranges.hpp and skiplist_wire.hpp still say total_order only;
// editing them rebuilds every target that includes skiplist_map.hpp.)
// ---------------------------------------------------------------------------
//
// A piece [a, hi) arriving at a node on level L looks at its levels from L
// down: a successor whose separator is <= a takes the whole piece (as it would
// take a point operation on a); one whose separator s lies inside takes
// [s, hi) and the piece shrinks to [a, s); what is left at level 0 is this
// node's to answer.  So the piece holding a key travels exactly the links a
// point operation on that key travels, and per-link FIFO order keeps them in
// the order the head saw them.  Each node answers its piece with one or more
// range_piece records naming the interval they cover; the caller completes the
// query once the intervals chain from lo to hi.

void skiplist_range_nodes::handle_range_split(int source, std::string_view record) {
    const auto& h = m_shared.handlers;
    auto& stats = m_shared.stats;
    byte_reader in = reader_of(record);
    const auto route = read_record<wire::route_header>(in);
    const skiplist_node_id id{m_shared.rank(), route.slot, route.generation};
    const std::uint8_t level_byte = route.level;
    const int arrival = level_byte & wire::level_mask;
    const std::uint8_t hops = route.hops;
    const std::string_view tail = record.substr(wire_bytes<wire::route_header>);
    const bool shortcut = (level_byte & wire::route_shortcut) != 0;
    if (shortcut && !m_nodes.live(id)) {
        m_shared.fall_back_to_head(h.range_split, tail, level_byte, hops);  // see skiplist_nodes::handle_point
        return;
    }
    node& here = m_nodes.addressed(id, "range split");
    if (m_nodes.forward_if_moved(here, h.range_split, record))
        return;
    auto header = read_record<wire::range_split_header>(in);
    if (m_nodes.hold_if_busy(here, h.range_split, source, record, arrival, header.stamp))
        return;
    if (id == m_shared.head) {
        ++stats.head_visits;
        // total_order's (entered at the head, not free): stamped with the
        // head's order, as a point record (skiplist_nodes::route_point).
        if (header.stamp == 0 && (level_byte & (wire::route_free | wire::route_shortcut)) == 0)
            header.stamp = m_nodes.next_stamp();
    }
    // A stamped piece climbs the tower as a stamped point record does.
    const int top = header.stamp != 0 ? static_cast<int>(here.tower.size()) - 1 : arrival;
    const int caller = header.caller;
    const std::uint32_t slot = header.slot;
    const bool bounded = (header.flags & wire::range_bounded) != 0;
    const bool descending = (header.flags & wire::range_descending) != 0;
    const bool budgeted = (header.flags & split_ranges::range_budgeted) != 0;
    const bool cut_end = (header.flags & split_ranges::range_cut_end) != 0;
    const std::uint64_t limit = header.limit;
    const std::string_view lo = read_string(in);
    const std::string_view hi = read_string(in);
    const std::string_view third = read_string(in);
    const std::string_view pattern_bytes = budgeted ? std::string_view() : third;
    const std::uint64_t budget = budgeted ? split_ranges::budget_of(third) : 0;
    if (shortcut && lo < std::string_view(here.separator)) {
        // A shortcut entered above lo (modes sequential and none): from the head.
        ++stats.hops;
        m_shared.fall_back_to_head(h.range_split, tail, level_byte, hops);
        return;
    }
    if (!m_shared.valid_rank(caller) || limit == 0 || (bounded && hi <= lo) || lo < std::string_view(here.separator) ||
        (budgeted && (budget == 0 || descending || (header.flags & wire::range_count) != 0)) ||
        (cut_end && (!budgeted || !bounded)))
        throw decode_error("mpidict: skiplist_map range split record with a bad caller, limit, budget, interval or node");
    std::optional<key_pattern> pattern;
    if (!pattern_bytes.empty())
        pattern = key_pattern::deserialize(pattern_bytes);
    auto send_piece = [&](skiplist_node_id to, int level, std::string_view from, std::string_view upto,
                          bool up_bounded, std::uint64_t open_budget, bool end_cut) {
        ++stats.hops;
        const auto flags = static_cast<std::uint8_t>((up_bounded ? wire::range_bounded : 0) |
                                                     (descending ? wire::range_descending : 0) |
                                                     (open_budget != 0 ? split_ranges::range_budgeted : 0) |
                                                     (end_cut ? split_ranges::range_cut_end : 0) |
                                                     (header.flags & (wire::range_count | wire::range_erase)));
        forward_three(m_shared, h.range_split, to, level, 0, skiplist_shared::next_hops(hops),
                      wire::range_split_header{caller, slot, flags, limit, header.stamp}, from, upto,
                      open_budget != 0 ? std::string_view(split_ranges::budget_bytes(open_budget)) : pattern_bytes);
    };
    std::string upto(hi);
    bool up_bounded = bounded;
    if (budgeted) {
        // Located like a find: the whole piece goes on while a successor's
        // separator is <= lo.
        for (int level = std::min(top, static_cast<int>(here.tower.size()) - 1); level >= 0; --level) {
            const link& next = here.tower[static_cast<std::size_t>(level)];
            if (next.set && !next.to.null() && std::string_view(next.separator) <= lo) {
                send_piece(next.to, level, lo, hi, bounded, budget, cut_end);
                return;
            }
        }
        // This node holds lo.  A level-l link spans about (1 / p)^l nodes of
        // about this node's fill each, so [lo, successor on level l) holds about
        // mine + fill * ((1 / p)^l - 1) keys.  Find the first level whose
        // successor lies at or above hi (the end), or whose estimate reaches
        // the budget (a cut there).  The levels below it each take the piece
        // between their successor and the next level's (split there as Listing
        // 2 splits it), except that below a cut the highest of them takes its
        // piece budgeted, with the cut as its end (range_cut_end), and so on
        // down: the cut lands about where the estimate runs out.  When no level
        // ends it, the top one's successor takes the open rest, budgeted with
        // what is left.
        const std::size_t mine = here.run.size() - here.run.lower_bound(lo);
        const double fill = static_cast<double>(
            std::max<std::size_t>({here.run.size(), m_shared.config.granularity / 4, std::size_t{1}}));
        const double p = m_shared.config.tower_probability;
        const double widen = p > 0 && p < 1 ? 1 / p : 2;
        int end_level = -1;    // the level whose successor ends the query (cut, or at hi)
        int open_level = -1;   // no end: the highest linked level, which takes the open rest
        bool cut = false;
        double span = 1;
        double open_estimate = static_cast<double>(mine);  // [lo, the open level's successor)
        for (int level = 0; level < static_cast<int>(here.tower.size()); ++level, span *= widen) {
            const link& next = here.tower[static_cast<std::size_t>(level)];
            if (!next.set || next.to.null() ||
                (open_level >= 0 && next.separator == here.tower[static_cast<std::size_t>(open_level)].separator))
                continue;  // unlinked, or the node a lower level reaches already
            if (bounded && std::string_view(next.separator) >= hi) {
                end_level = level;
                break;
            }
            const double estimate = static_cast<double>(mine) + fill * (span - 1);
            if (estimate >= static_cast<double>(budget)) {
                end_level = level;
                cut = true;
                break;
            }
            open_level = level;
            open_estimate = estimate;
        }
        // Where this node ends the query with a cut, if it does: its own
        // level's successor (its part alone reaches the budget), or hi when hi
        // is itself a cut (range_cut_end) and the query ends there.
        std::string cut_at;
        int below = -1;  // the levels that take bounded pieces: [0, below]
        auto hand_on = [&](int level, std::string_view end, bool end_bounded, bool end_cut) {
            // The piece from this level's successor to `end`, budgeted with what is left.
            const link& top = here.tower[static_cast<std::size_t>(level)];
            const auto left = static_cast<std::uint64_t>(std::max(1.0, static_cast<double>(budget) - open_estimate));
            send_piece(top.to, level, top.separator, end, end_bounded, left, end_cut);
            upto = top.separator;
            up_bounded = true;
            below = level - 1;
        };
        if (cut && open_level >= 0) {
            // The level below the cut's takes [its successor, the cut's) budgeted,
            // and ends it: so the cut falls near where the budget runs out, not a
            // whole level's span beyond it.
            hand_on(open_level, here.tower[static_cast<std::size_t>(end_level)].separator, true, true);
        } else if (cut) {
            upto = here.tower[static_cast<std::size_t>(end_level)].separator;
            up_bounded = true;
            below = end_level - 1;
            cut_at = upto;
        } else if (end_level >= 0) {
            below = end_level - 1;
            if (cut_end)
                cut_at = hi;
        } else if (open_level >= 0) {
            hand_on(open_level, hi, bounded, cut_end);
        } else if (cut_end) {
            cut_at = hi;  // the last node: [lo, hi) is its own
        }
        for (int level = below; level >= 0; --level) {
            const link& next = here.tower[static_cast<std::size_t>(level)];
            if (next.set && !next.to.null() && (!up_bounded || next.separator < upto)) {
                send_piece(next.to, level, next.separator, upto, true, 0, false);
                upto = next.separator;
                up_bounded = true;
            }
        }
        if (!cut_at.empty()) {
            // The cut: [cut_at, cut_at), nothing at or above it was sent.
            const std::size_t bytes = wire_bytes<wire::range_piece_header> + 2 * string_bytes(cut_at);
            byte_writer out(m_shared.engine->reserve(caller, h.range_piece, bytes), bytes);
            out.record(wire::range_piece_header{slot, static_cast<std::uint8_t>(1 | split_ranges::piece_cut), 0});
            put_string(out, cut_at);
            put_string(out, cut_at);
            out.finish();
        }
    } else {
        for (int level = std::min(top, static_cast<int>(here.tower.size()) - 1); level >= 0; --level) {
            const link& next = here.tower[static_cast<std::size_t>(level)];
            if (!next.set || next.to.null())
                continue;
            if (std::string_view(next.separator) <= lo) {
                send_piece(next.to, level, lo, upto, up_bounded, 0, false);
                return;
            }
            if (!up_bounded || next.separator < upto) {
                send_piece(next.to, level, next.separator, upto, up_bounded, 0, false);
                upto = next.separator;
                up_bounded = true;
            }
        }
    }
    // [lo, upto) is this node's: answer it in parts of at most one message.
    ++stats.handled;
    m_nodes.purge_expired(here, m_shared.clock_now());
    const sorted_run& run = here.run;
    auto& engine = *m_shared.engine;
    const std::size_t room =
        engine.max_record_bytes() - runtime::reply_header_bytes - 32 - 2 * m_shared.config.max_key_bytes;
    std::uint64_t left = limit;
    std::string data;
    if ((header.flags & wire::range_count) != 0) {
        // count, erase_range: [lo, upto) counted (and erased) here, one piece.
        const std::size_t first = run.lower_bound(lo);
        const std::size_t last = up_bounded ? std::max(first, run.lower_bound(upto)) : run.size();
        if ((header.flags & wire::range_erase) != 0 && last > first)
            erase_entries(m_shared, here, first, last);
        const std::size_t bytes = wire_bytes<wire::range_piece_header> + string_bytes(lo) + string_bytes(upto);
        byte_writer out(engine.reserve(caller, h.range_piece, bytes), bytes);
        out.record(wire::range_piece_header{slot, static_cast<std::uint8_t>(up_bounded),
                                            static_cast<std::uint32_t>(last - first)});
        put_string(out, lo);
        put_string(out, upto);
        out.finish();
        ++stats.range_parts;
        return;
    }
    if (descending) {
        // The largest `limit` entries of [lo, upto), largest first, in parts
        // that each name the interval they cover: a part that stops early
        // covers down to the last key it sent.
        std::size_t it = up_bounded ? run.lower_bound(upto) : run.size();
        const std::size_t bottom = run.lower_bound(lo);
        std::string to = upto;
        bool to_bounded = up_bounded;
        while (true) {
            data.clear();
            std::uint32_t entries = 0;
            for (; it > bottom && left != 0; --it) {
                const std::string_view key = run.key(it - 1);
                if (pattern && !pattern->matches(key))
                    continue;
                const std::string_view value = run.value(it - 1);
                if (entries > 0 && data.size() + 8 + key.size() + value.size() > room)
                    break;
                append_entry(data, key, value);
                ++entries;
                if (left != skiplist_shared::unlimited)
                    --left;
            }
            const bool done = it <= bottom || left == 0;
            const std::string part_from = done ? std::string(lo) : std::string(run.key(it));
            const std::size_t bytes =
                wire_bytes<wire::range_piece_header> + string_bytes(part_from) + string_bytes(to) + data.size();
            byte_writer out(engine.reserve(caller, h.range_piece, bytes), bytes);
            out.record(wire::range_piece_header{slot, static_cast<std::uint8_t>(to_bounded), entries});
            put_string(out, part_from);
            put_string(out, to);
            out.put_bytes(data).finish();
            ++stats.range_parts;
            if (done)
                return;
            to = part_from;
            to_bounded = true;
        }
    }
    std::size_t it = run.lower_bound(lo);
    // The piece's entries end at `stop` (one search, not a comparison per entry).
    const std::size_t stop = up_bounded ? std::max(it, run.lower_bound(upto, it)) : run.size();
    std::string from(lo);
    while (true) {
        data.clear();
        std::uint32_t entries = 0;
        for (; it != stop && left != 0; ++it) {
            const std::string_view key = run.key(it);
            if (pattern && !pattern->matches(key))
                continue;
            const std::string_view value = run.value(it);
            const std::size_t size = 8 + key.size() + value.size();
            if (entries > 0 && data.size() + size > room)
                break;
            append_entry(data, key, value);
            ++entries;
            if (left != skiplist_shared::unlimited)
                --left;
        }
        const bool done = it == stop || left == 0;
        // A part that stops early covers up to the next key it did not send.
        const std::string part_end = done ? upto : std::string(run.key(it));
        const bool part_bounded = done ? up_bounded : true;
        const std::size_t bytes =
            wire_bytes<wire::range_piece_header> + string_bytes(from) + string_bytes(part_end) + data.size();
        byte_writer out(engine.reserve(caller, h.range_piece, bytes), bytes);
        out.record(wire::range_piece_header{slot, static_cast<std::uint8_t>(part_bounded), entries});
        put_string(out, from);
        put_string(out, part_end);
        out.put_bytes(data).finish();
        ++stats.range_parts;
        if (done)
            return;
        from = part_end;
    }
}

}  // namespace mpidict::detail

namespace mpidict::detail {

// ---------------------------------------------------------------------------
// find_many chunks in mode total_order: split over the towers like a range
// ---------------------------------------------------------------------------
//
// A piece (sorted keys, each with its batch index) arriving at a node on level
// L looks at its levels from L down: the keys at or above a successor's
// separator go over that link (all of them when the smallest does, as a point
// operation on it would), and what is left at level 0 is this node's to
// answer.  The piece holding a key travels exactly the links a point
// operation on that key travels (skiplist_caller.cpp's send_split_chunk has
// the ordering argument).  The answers go straight to the caller in
// found_split records, by batch index.

void skiplist_range_nodes::handle_find_split(int source, std::string_view record) {
    const auto& h = m_shared.handlers;
    auto& stats = m_shared.stats;
    byte_reader in = reader_of(record);
    const auto route = read_record<wire::route_header>(in);
    const skiplist_node_id id{m_shared.rank(), route.slot, route.generation};
    const int arrival = route.level & wire::level_mask;
    const std::uint8_t hops = route.hops;
    node& here = m_nodes.addressed(id, "find split");
    if (m_nodes.forward_if_moved(here, h.find_split, record))
        return;
    auto header = read_record<wire::find_split_header>(in);
    if (m_nodes.hold_if_busy(here, h.find_split, source, record, arrival, header.stamp))
        return;
    // Stamped at the head (total_order's order, as a point record's); the
    // pieces climb the towers as stamped point records do.
    if (id == m_shared.head && header.stamp == 0)
        header.stamp = m_nodes.next_stamp();
    const int caller = header.caller;
    const std::uint32_t slot = header.slot;
    if (!m_shared.valid_rank(caller) || (slot & 0x80000000u) == 0 || header.keys == 0 ||
        header.keys > in.remaining() / 8)
        throw decode_error("mpidict: skiplist_map find split record with a bad caller, batch or key count");
    // The keys: where each entry ({u32 index} key) starts in the record, and its key.
    struct entry {
        std::size_t at;
        std::uint32_t index;
        std::string_view key;
    };
    std::vector<entry> keys;
    keys.reserve(header.keys);
    for (std::uint32_t k = 0; k < header.keys; ++k) {
        const std::size_t at = record.size() - in.remaining();
        const auto index = in.read<std::uint32_t>();
        const std::string_view key = read_string(in);
        if (!keys.empty() && key < keys.back().key)
            throw decode_error("mpidict: skiplist_map find split record with keys out of order");
        keys.push_back(entry{at, index, key});
    }
    if (!in.empty() || keys.front().key < std::string_view(here.separator))
        throw decode_error("mpidict: skiplist_map find split record with trailing bytes or a key below its node");
    auto* probe = skiplist_order_probe_for_testing.load(std::memory_order_relaxed);
    if (id == m_shared.head) {
        ++stats.head_visits;
        if (probe != nullptr)
            for (const entry& key : keys)
                probe->at_head(caller, slot, key.index);
    }
    // keys[0, end) are still this node's to route or answer.
    std::size_t end = keys.size();
    const int top = static_cast<int>(here.tower.size()) - 1;
    for (int level = header.stamp != 0 ? top : std::min(arrival, top); level >= 0 && end > 0; --level) {
        const link& next = here.tower[static_cast<std::size_t>(level)];
        if (!next.set || next.to.null())
            continue;
        const std::string_view separator = next.separator;
        const auto first = std::lower_bound(keys.begin(), keys.begin() + static_cast<std::ptrdiff_t>(end), separator,
                                            [](const entry& key, std::string_view bound) { return key.key < bound; });
        const auto from = static_cast<std::size_t>(first - keys.begin());
        if (from == end)
            continue;
        // keys[from, end) go over this link: their entries are contiguous in the record.
        const std::size_t stop = end == keys.size() ? record.size() : keys[end].at;
        const std::string_view entries = record.substr(keys[from].at, stop - keys[from].at);
        const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<wire::find_split_header> + entries.size();
        ++stats.hops;
        byte_writer(m_shared.engine->reserve(next.to.rank, h.find_split, bytes), bytes)
            .record(skiplist_shared::route(next.to, level, 0, skiplist_shared::next_hops(hops)))
            .record(wire::find_split_header{caller, slot, static_cast<std::uint32_t>(end - from), header.stamp})
            .put_bytes(entries)
            .finish();
        end = from;
    }
    if (end == 0)
        return;
    // keys[0, end) are this node's: answered in records of at most one message.
    stats.handled += end;
    m_nodes.purge_expired(here, m_shared.clock_now());
    const sorted_run& run = here.run;
    auto& engine = *m_shared.engine;
    const std::size_t room = engine.max_record_bytes() - wire_bytes<wire::found_split_header>;
    std::string answers;
    auto send = [&] {
        const std::size_t bytes = wire_bytes<wire::found_split_header> + answers.size();
        byte_writer(engine.reserve(caller, h.found_split, bytes), bytes)
            .record(wire::found_split_header{slot, hops})
            .put_bytes(answers)
            .finish();
        answers.clear();
    };
    std::size_t position = 0;
    for (std::size_t k = 0; k < end; ++k) {
        if (probe != nullptr)
            probe->applied(caller, slot, keys[k].index, keys[k].key);
        // Sorted keys: each lookup starts where the last one ended.
        position = run.lower_bound(keys[k].key, position);
        const bool present = run.holds_at(position, keys[k].key);
        const std::string_view value = present ? run.value(position) : std::string_view();
        const std::size_t size = wire_bytes<wire::found> + (present ? string_bytes(value) : 0);
        if (!answers.empty() && answers.size() + size > room)
            send();
        const std::size_t at = answers.size();
        answers.resize(at + size);
        byte_writer out(reinterpret_cast<std::byte*>(answers.data() + at), size);
        out.record(wire::found{keys[k].index, present ? skiplist_status::hit : skiplist_status::miss});
        if (present)
            put_string(out, value);
        out.finish();
    }
    send();
}

}  // namespace mpidict::detail
