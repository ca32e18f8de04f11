// The node role: nodes hosted on this rank, their hold queues, expiry, and the
// point operations (Listings 1, 3 and 4 with G keys per node).  See
// skiplist_nodes.hpp and the design comment of skiplist_map.hpp.
//
// A held node replays its queue in arrival order, except that a stamped
// (total_order) record goes ahead of every queued record with a later stamp,
// even while the node also holds for its creation or for other links (each
// pending link's window of arrivals decided this until the arrival-level
// escape below; the windows are gone).
// Upper levels are linked one at a time, bottom up, so a node being spliced on a
// level is already on every lower level, hence on every path into its range.
// Cross-caller order (total_order): every request enters at the head, whose
// handling order contains each caller's issue order.  A before B at the head on
// one key follow one path in order (routing is a function of key and links;
// FIFO per rank pair) up to the first node N whose link changed between them.
// B takes the new link to Y; the old way of A leads through Y (on every lower
// level) or queues at N (splitting).  Y holds from the expect (ahead of B on
// N's rank pair) until the marker routed behind A has come the old way and the
// old successor's rank has seen the marker behind N's direct sends, and A goes
// ahead of B at Y: by induction over later changes both take effect in head
// order (linearizable in head order).  That A goes ahead of B at Y and that
// both leave Y the same way are the stamps' and the climbing's (below).
// Before issue 42 a node still holding for
// its creation replayed B before A: the escape (3 reordered chains in 185 runs)
// found by the simulation's order probe once total_order towers could grow past
// their parent (tests/sim/sim_skiplist_history.cpp --chains --probe: two callers,
// dependent chains; markers off must show an overtaking).  A second escape
// (seeds 114 and 501 of --find-many): Y held for two new links at once kept
// only the last one, so A, on the first link's old way, was replayed behind B,
// which had come over the first link; and a node created without holds kept
// hold level 0, so it queued old-way arrivals it should have served.  A third
// (grid routing, sim.skiplist_history.total_order.grid): pending links were
// named by the linking node's rank and level only, so when the head and a node
// spliced in after it (both on one rank) linked one target on one level while
// it held, the second link's marker was taken for the first's, and the first
// link's old way was replayed behind its new way (then named by rank, slot
// and level; the windows are gone since the stamps).  A fourth
// (the arrival-level escape, grid seed 2543 and direct seed 1539): A reached Y
// on a lower level (the old way), B over the new link on level g; after the
// hold A left Y on its arrival level, B on Y's level-g link, and a node split
// off Y on the lower level only made A arrive second.  So the way on from a
// node must not depend on the arrival level: total_order requests climb the
// node's whole tower (points, find_split and range_split pieces alike).  Once
// they climb, the arrival level no longer tells the old way from the new (an
// old request climbs onto a second new link of the same level), so the hold
// queue no longer decides by levels and windows: the head stamps each request
// with its handling order (point_header, find_split_header, range_split_header
// carry the stamp) and a holding node replays stamped records in stamp order
// (goes_ahead); unstamped records (markers, structure records, other modes)
// keep their arrival order.  Outside total_order
// requests enter at different nodes (the directory), so a caller keeps one
// operation per key in flight: later ones on the key wait at the caller until
// the earlier one is answered (fire-and-forget ones included), so each caller's
// operations on a key take effect in issue order.  The simulation test checks
// it, and a test-only switch that disables both mechanisms must make it fail.

#include "mpidict/detail/skiplist_nodes.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <limits>

#include "mpidict/detail/skiplist_ranges.hpp"
#include "mpidict/detail/skiplist_reduce.hpp"
#include "mpidict/detail/skiplist_structure.hpp"
#include "mpidict/error.hpp"

namespace mpidict::detail {

skiplist_nodes::skiplist_nodes(skiplist_shared& shared, skiplist_directory& directory)
    : m_shared(shared), m_directory(directory) {
    if (const char* broken = std::getenv("MPIDICT_SKIPLIST_BREAK_ONLINE_MOVES_FOR_TESTING"))
        break_online_for_testing = broken[0] == '1' ? 1 : broken[0] == '2' ? 2 : 0;
}

skiplist_node_id skiplist_nodes::allocate_local(std::string_view separator, unsigned height) {
    std::uint32_t slot;
    if (!m_free.empty()) {
        slot = m_free.back();
        m_free.pop_back();
    } else {
        if (!m_shared.pool_may_grow(m_nodes.size()))
            return skiplist_node_id{};
        slot = static_cast<std::uint32_t>(m_nodes.size());
        m_nodes.emplace_back();
    }
    node& fresh = m_nodes[slot];
    const std::uint32_t generation = fresh.generation + 1;
    fresh = node{};
    fresh.generation = generation;
    fresh.live = true;
    fresh.separator = std::string(separator);
    fresh.tower.resize(height);
    ++m_shared.stats.nodes;
    const skiplist_node_id id{m_shared.rank(), slot, generation};
    m_directory.learn(separator, id);  // the directory knows the nodes hosted here
    return id;
}

void skiplist_nodes::free_slot(std::uint32_t slot) {
    node& here = m_nodes[slot];
    const std::uint32_t generation = here.generation;
    here = node{};
    here.generation = generation;  // allocate_local gives the slot's next node generation + 1
    m_free.push_back(slot);
    --m_shared.stats.nodes;
}

bool skiplist_nodes::forward_if_moved(const node& here, runtime::handler_id handler, std::string_view record) {
    if (!here.stub())
        return false;
    // Unchanged but for the address: the level, its flags and the hops stay,
    // so the record goes on from the new place exactly as from the old one.
    // Everything that reached the old slot goes to the new one on one rank
    // pair, in the order it arrived (skiplist_rebalance.hpp, online moves).
    byte_reader in = reader_of(record);
    const auto route = read_record<wire::route_header>(in);
    m_shared.forward(handler, here.moved_to, record.substr(wire_bytes<wire::route_header>), route.level & wire::level_mask,
                     static_cast<std::uint8_t>(route.level & ~wire::level_mask), route.hops);
    ++m_shared.stats.hops;
    return true;
}

skiplist_nodes::node& skiplist_nodes::addressed(skiplist_node_id id, const char* what) {
    if (!live(id))
        throw decode_error(std::string("mpidict: skiplist_map ") + what + " record addresses node " + describe(id) +
                           ", which is not live on rank " + std::to_string(m_shared.rank()));
    return m_nodes[id.slot];
}

namespace {

// Whether a record stamped `stamp` (total_order) must be replayed ahead of
// `queued`: it passed the head first.  Unstamped records (ordering markers,
// structure records, requests of the other modes) keep their arrival order.
bool goes_ahead(std::uint32_t stamp, const skiplist_node::held_record& queued) {
    return skiplist_nodes::stamped_before(stamp, queued.stamp);
}

}  // namespace

bool skiplist_nodes::hold_if_busy(node& target, runtime::handler_id handler, int source, std::string_view record,
                                  int arrival_level, std::uint32_t stamp) {
    if (target.holds == 0 && !target.allocating)
        return false;
    const std::uint8_t level = arrival_level >= 0 ? static_cast<std::uint8_t>(arrival_level) : node::no_hold_level;
    // A node that holds for a new link on level L (link_up) still serves what
    // comes the old way, on the levels below L: it is older than anything the
    // new link brings, which is what the hold queues.  Queuing it too would
    // let the new way overtake it when the queue is replayed.  Served now only
    // if it must go ahead of everything queued (what came over a link whose
    // marker has arrived may be older than what comes below it now).
    const bool old_way = arrival_level >= 0 && arrival_level < target.hold_level;
    if (old_way && !target.allocating && !target.low_queued) {
        bool ahead_of_all = true;
        if (target.held)
            for (const auto& queued : *target.held)
                if (!(ahead_of_all = queued.level == node::no_hold_level || goes_ahead(stamp, queued)))
                    break;
        if (ahead_of_all)
            return false;
    }
    if (old_way)
        target.low_queued = true;
    if (!target.held)
        target.held = std::make_unique<std::deque<node::held_record>>();
    // Queued ahead of the first queued record with a later stamp (the head
    // handled this one first), even while the node also holds for its
    // creation (hold_level 0: everything queues).  Issue 42 found escapes
    // here: a node still holding for its creation replayed a request over the
    // new, shorter way before an older one that took the old way; with one
    // "last link" per node a second link's expect made the node forget what
    // had come over the first (seeds 114 and 501 of --find-many); and once
    // records climb, the arrival level no longer tells old way from new
    // (grid seed 2543): hence the head's stamps.
    // An unstamped record goes ahead of none (no scan: a node that holds a
    // long queue, the list's tail under ascending inserts, would scan it per
    // record, 57 % of the ascending phase's samples at 1M keys per rank).
    const auto later = [&](const node::held_record& queued) { return goes_ahead(stamp, queued); };
    auto position =
        stamp == 0 ? target.held->end() : std::find_if(target.held->begin(), target.held->end(), later);
    target.held->insert(position, node::held_record{handler, source, std::string(record), level, stamp});
    ++m_shared.stats.held;
    return true;
}

void skiplist_nodes::release_held(skiplist_node_id id) {
    const auto& h = m_shared.handlers;
    while (true) {
        node& here = m_nodes[id.slot];
        if (here.holds != 0 || here.allocating || !here.holding_records()) {
            if (here.holds == 0 && !here.allocating) {
                here.held.reset();
                here.hold_level = node::no_hold_level;
                here.low_queued = false;
            }
            return;
        }
        if (here.held->front().handler == h.insert_direct) {
            // Every insert segment queued next to it, merged at once.
            std::vector<node::held_record> group;
            while (here.holding_records() && here.held->front().handler == h.insert_direct) {
                group.push_back(std::move(here.held->front()));
                here.held->pop_front();
            }
            insert_held(id, group);
            continue;
        }
        node::held_record next = std::move(here.held->front());
        here.held->pop_front();
        if (next.handler == h.point)
            handle_point(next.source, next.bytes);
        else if (next.handler == h.range)
            m_ranges->handle_range(next.source, next.bytes);
        else if (next.handler == h.range_split)
            m_ranges->handle_range_split(next.source, next.bytes);
        else if (next.handler == h.find_split)
            m_ranges->handle_find_split(next.source, next.bytes);
        else if (next.handler == h.link_up)
            m_structure->handle_link_up(next.source, next.bytes);
        else if (next.handler == h.set_links)
            m_structure->handle_set_links(next.source, next.bytes);
        else
            MPIDICT_ASSERT(false, "held record of an unexpected kind");
    }
}

int skiplist_nodes::forward_level(const node& here, std::string_view key, int level, bool strictly_less) {
    level = std::min(level, static_cast<int>(here.tower.size()) - 1);
    for (; level >= 0; --level) {
        const link& next = here.tower[static_cast<std::size_t>(level)];
        if (!next.set || next.to.null())
            continue;
        if (strictly_less ? std::string_view(next.separator) < key : std::string_view(next.separator) <= key)
            return level;
    }
    return -1;
}

void skiplist_nodes::purge_expired(node& here, expiry_time now) {
    if (here.earliest_expiry == 0 || now < here.earliest_expiry)
        return;
    expiry_time earliest = 0;
    auto& stats = m_shared.stats;
    here.run.erase_unless([&](std::size_t index) {
        const expiry_time expires = here.run.expires(index);
        if (expires != 0 && expires <= now) {
            stats.payload_bytes -= here.run.key(index).size() + here.run.value(index).size();
            --stats.entries;
            ++stats.expired;
            return false;
        }
        if (expires != 0 && (earliest == 0 || expires < earliest))
            earliest = expires;
        return true;
    });
    here.earliest_expiry = earliest;
}

std::size_t skiplist_nodes::sweep_expired() {
    const std::uint64_t before = m_shared.stats.expired;
    const expiry_time now = m_shared.clock_now();
    for (auto& here : m_nodes)
        if (here.live && here.holds == 0 && !here.allocating)
            purge_expired(here, now);
    return static_cast<std::size_t>(m_shared.stats.expired - before);
}

// ---------------------------------------------------------------------------
// Point operations
// ---------------------------------------------------------------------------

void skiplist_nodes::handle_point(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto route = read_record<wire::route_header>(in);
    const skiplist_node_id id{m_shared.rank(), route.slot, route.generation};
    const std::string_view tail = record.substr(wire_bytes<wire::route_header>);
    if ((route.level & wire::route_shortcut) != 0 && !live(id)) {
        // A directory entry led here, but its node is gone (unlinked, its slot
        // perhaps reused: the generation differs).  Never trusted further.
        m_shared.fall_back_to_head(m_shared.handlers.point, tail, route.level, route.hops);
        return;
    }
    addressed(id, "point operation");
    skiplist_point point;
    point.header = read_record<wire::point_header>(in);
    point.key = read_string(in);
    point.value = read_string(in);
    if (point.header.kind > static_cast<std::uint8_t>(skiplist_op::reduce) ||
        !m_shared.valid_rank(point.header.caller) || !(point.header.expires >= 0) ||
        point.header.expires == std::numeric_limits<expiry_time>::infinity())
        throw decode_error("mpidict: skiplist_map point record with a bad operation, caller or expiry");
    route_point(source, id, route.level, route.hops, point, tail);
    m_shared.window_check();
}

void skiplist_nodes::send_point(skiplist_node_id to, int level, std::uint8_t flags, std::uint8_t hops,
                                const skiplist_point& point, std::string_view tail) {
    if (!tail.empty()) {
        m_shared.forward(m_shared.handlers.point, to, tail, level, flags, hops);
        return;
    }
    const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<wire::point_header> +
                              string_bytes(point.key) + string_bytes(point.value);
    byte_writer out(m_shared.engine->reserve(to.rank, m_shared.handlers.point, bytes), bytes);
    out.record(skiplist_shared::route(to, level, flags, hops)).record(point.header);
    put_string(out, point.key);
    put_string(out, point.value);
    out.finish();
}

void skiplist_nodes::route_point(int source, skiplist_node_id id, std::uint8_t level_byte, std::uint8_t hops,
                                 const skiplist_point& point, std::string_view tail) {
    node& here = m_nodes[id.slot];
    const int level = level_byte & wire::level_mask;
    const skiplist_op kind = point.kind();
    const std::string_view key = point.key;
    if (here.stub() && !(break_online_for_testing == 1 && kind != skiplist_op::marker)) {
        // Moved between flushes: on to the new place, unchanged.  A routed
        // ordering marker that names this node names the new one from here
        // (it clears the node it reaches: skiplist_structure::order_new_link).
        ++m_shared.stats.hops;
        if (kind == skiplist_op::marker && point.value.size() == wire::node_id_bytes) {
            byte_reader target = reader_of(point.value);
            if (read_node_id(target) == id) {
                std::string renamed(wire::node_id_bytes, '\0');
                byte_writer out(reinterpret_cast<std::byte*>(renamed.data()), renamed.size());
                put_node_id(out, here.moved_to).finish();
                skiplist_point forwarded = point;
                forwarded.value = renamed;
                send_point(here.moved_to, level, level_byte & ~wire::level_mask, hops, forwarded, {});
                return;
            }
        }
        send_point(here.moved_to, level, level_byte & ~wire::level_mask, hops, point, tail);
        return;
    }
    // A routed marker that has reached the node it clears is handled at once:
    // that node is holding because of it.  Everything it followed is already
    // handled here, or queued here ahead of whatever the clear releases.
    bool marker_home = false;
    if (kind == skiplist_op::marker && point.value.size() == wire::node_id_bytes) {
        byte_reader target = reader_of(point.value);
        marker_home = read_node_id(target) == id;
    }
    // The broken mode none (test only) lets a splitting node handle finds and
    // erases it must hold: an erase of a key on its way to the new node is lost.
    const auto& config = m_shared.config;
    const bool broken_split = config.break_consistency_for_testing &&
                              config.consistency == skiplist_consistency::none && here.allocating &&
                              here.holds == 0 && !here.holding_records() &&
                              (kind == skiplist_op::erase || kind == skiplist_op::find);
    if (!marker_home && !broken_split && (here.holds != 0 || here.allocating)) {
        std::string record;
        if (tail.empty()) {
            // A direct find's key meets a holding node (rare): it waits in the
            // queue as the point record it would have been.
            const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<wire::point_header> +
                                      string_bytes(point.key) + string_bytes(point.value);
            record.resize(bytes);
            byte_writer out(reinterpret_cast<std::byte*>(record.data()), bytes);
            out.record(skiplist_shared::route(id, level, level_byte & ~wire::level_mask, hops)).record(point.header);
            put_string(out, point.key);
            put_string(out, point.value);
            out.finish();
        } else {
            record.resize(wire_bytes<wire::route_header>);
            overwrite_record(reinterpret_cast<std::byte*>(record.data()),
                             skiplist_shared::route(id, level, level_byte & ~wire::level_mask, hops));
            record.append(tail);
        }
        if (hold_if_busy(here, m_shared.handlers.point, source, record, level, point.header.stamp))
            return;
    }
    here.count_requests(1);
    m_shared.count_window(1);
    if (id == m_shared.head) {
        ++m_shared.stats.head_visits;
        if (auto* probe = skiplist_order_probe_for_testing.load(std::memory_order_relaxed);
            probe != nullptr && kind != skiplist_op::marker && point.header.stamp == 0)
            probe->at_head(point.header.caller, point.header.slot, point.header.ticket);
        if (kind != skiplist_op::marker && point.header.stamp == 0 &&
            (level_byte & (wire::route_free | wire::route_shortcut)) == 0) {
            // total_order (entered at the head, not free): stamped with the
            // head's order, and written anew from `point` to carry it.
            skiplist_point stamped = point;
            stamped.header.stamp = next_stamp();
            route_point(source, id, level_byte, hops, stamped, {});
            return;
        }
    }
    const std::uint8_t free = level_byte & wire::route_free;
    if (key < std::string_view(here.separator)) {
        // Entered above its key: a shortcut to a node that starts above it (its
        // slot reused by a node further on).  Start again at the head, which is
        // below every key.
        ++m_shared.stats.hops;
        if ((level_byte & wire::route_shortcut) != 0)
            send_point(m_shared.head, m_shared.top_level(), free, skiplist_shared::next_hops(hops) | wire::route_fell_back,
                       point, tail);
        else
            send_point(m_shared.head, m_shared.top_level(), free, skiplist_shared::next_hops(hops), point, tail);
        return;
    }
    // Mode none climbs: the whole tower, whatever level the request came on;
    // so do total_order's stamped requests (issue 42, grid seed 2543: two
    // requests that reached a node on different levels left it on different
    // links, and the older one's way was longer).
    const bool climb = free || point.header.stamp != 0;
    const int next = forward_level(here, key, climb ? static_cast<int>(here.tower.size()) - 1 : level, false);
    if (free && kind != skiplist_op::marker && (hops & wire::route_fell_back) == 0) {
        // ... and jumps through this rank's directory when it knows a node
        // further on (at or below the key) than the tower's next hop.  Not
        // after a shortcut failed on the way: a stale entry here would send
        // it back to the failure, and from the head here again, forever (the
        // direct-finds test found that loop).
        const std::string_view floor =
            next >= 0 ? std::string_view(here.tower[static_cast<std::size_t>(next)].separator)
                      : std::string_view(here.separator);
        const skiplist_node_id jump = m_directory.after(key, floor);
        if (!jump.null() && !(jump == id)) {
            ++m_shared.stats.hops;
            ++m_shared.stats.node_shortcuts;
            send_point(jump, m_shared.top_level(), wire::route_free | wire::route_shortcut,
                       skiplist_shared::next_hops(hops), point, tail);
            return;
        }
    }
    if (next >= 0) {
        ++m_shared.stats.hops;
        send_point(here.tower[static_cast<std::size_t>(next)].to, next, free, skiplist_shared::next_hops(hops), point,
                   tail);
        return;
    }
    answer_point(here, id, point, hops);
}

void skiplist_nodes::answer_point(node& here, skiplist_node_id id, const skiplist_point& point, std::uint8_t hops) {
    skiplist_op kind = point.kind();
    const int caller = point.header.caller;
    const std::uint32_t slot = point.header.slot, ticket = point.header.ticket;
    const std::string_view key = point.key;
    std::string_view value = point.value;
    expiry_time expires = point.header.expires;
    auto& stats = m_shared.stats;
    if (kind == skiplist_op::marker) {
        // A routed ordering marker (order_new_link): it has reached the end of the
        // old way (the node it names, unless that node has split meanwhile); the
        // node it was meant for may stop holding.
        byte_reader in = reader_of(value);
        m_structure->clear_for_marker(read_node_id(in));
        return;
    }
    ++stats.handled;
    if (auto* probe = skiplist_order_probe_for_testing.load(std::memory_order_relaxed); probe != nullptr)
        probe->applied(caller, slot, ticket, key);
    purge_expired(here, m_shared.clock_now());
    const std::size_t position = here.run.lower_bound(key);
    const bool present = here.run.holds_at(position, key);
    if (kind == skiplist_op::reduce) {
        // op(current, value) at the node (skiplist_reduce.hpp): `expires` is the
        // operator's number.  The stored value keeps its expiry; a new key is
        // stored as an insert of the operand (no expiry).
        const auto& reducers = skiplist_reducers::entries();
        const auto number = static_cast<std::uint32_t>(expires);
        if (expires < 0 || static_cast<expiry_time>(number) != expires || number >= reducers.size())
            throw decode_error("mpidict: skiplist_map reduce record names operator " + std::to_string(expires) +
                               ", which this rank does not know");
        if (present) {
            const std::string folded = reducers[number].entry(here.run.value(position), value);
            stats.payload_bytes += folded.size();
            stats.payload_bytes -= here.run.value(position).size();
            here.run.assign(position, folded, here.run.expires(position));
            reply_point(here, id, caller, slot, ticket, skiplist_status::replaced, {}, hops);
            return;
        }
        kind = skiplist_op::insert;
        expires = 0;
    }
    switch (kind) {
    case skiplist_op::find:
        if (present)
            reply_point(here, id, caller, slot, ticket, skiplist_status::hit, here.run.value(position), hops);
        else
            reply_point(here, id, caller, slot, ticket, skiplist_status::miss, {}, hops);
        return;
    case skiplist_op::erase:
        if (present) {
            stats.payload_bytes -= here.run.key(position).size() + here.run.value(position).size();
            --stats.entries;
            here.run.erase(position, position + 1);
        }
        reply_point(here, id, caller, slot, ticket, present ? skiplist_status::hit : skiplist_status::miss, {}, hops);
        return;
    case skiplist_op::insert:
    case skiplist_op::insert_if_absent:
        if (present) {
            if (kind == skiplist_op::insert_if_absent) {
                reply_point(here, id, caller, slot, ticket, skiplist_status::duplicate, {}, hops);
                return;
            }
            stats.payload_bytes += value.size();
            stats.payload_bytes -= here.run.value(position).size();
            here.run.assign(position, value, expires);
            if (expires != 0 && (here.earliest_expiry == 0 || expires < here.earliest_expiry))
                here.earliest_expiry = expires;
            reply_point(here, id, caller, slot, ticket, skiplist_status::replaced, {}, hops);
            return;
        }
        here.run.insert(position, key, value, expires);
        stats.payload_bytes += key.size() + value.size();
        ++stats.entries;
        if (expires != 0 && (here.earliest_expiry == 0 || expires < here.earliest_expiry))
            here.earliest_expiry = expires;
        if (here.run.size() > m_shared.config.granularity && !here.allocating) {  // allocating: only the broken mode none
            // Answered when the split is decided (list_full takes the key back out).
            here.split = std::make_unique<skiplist_point_split>();
            here.split->source = caller;
            here.split->slot = slot;
            here.split->ticket = ticket;
            here.split->key = std::string(key);
            here.split->hops = hops;
            m_structure->start_split(here, id);
            return;
        }
        reply_point(here, id, caller, slot, ticket, skiplist_status::stored, {}, hops);
        return;
    case skiplist_op::expiry:
    case skiplist_op::set_expiry: {
        // The deadline (8 bytes; 0: none) goes back with a hit: ttl reads it,
        // expire and persist tell from the old one what they changed.
        if (!present) {
            reply_point(here, id, caller, slot, ticket, skiplist_status::miss, {}, hops);
            return;
        }
        const expiry_time old = here.run.expires(position);
        char bytes[sizeof old];
        std::memcpy(bytes, &old, sizeof old);
        if (kind == skiplist_op::set_expiry) {
            if (expires != 0 && expires <= m_shared.clock_now()) {
                // A deadline already passed: the key goes at once (Redis EXPIRE with a time in the past).
                stats.payload_bytes -= here.run.key(position).size() + here.run.value(position).size();
                --stats.entries;
                ++stats.expired;
                here.run.erase(position, position + 1);
            } else {
                here.run.set_expires(position, expires);
                if (expires != 0 && (here.earliest_expiry == 0 || expires < here.earliest_expiry))
                    here.earliest_expiry = expires;
            }
        }
        reply_point(here, id, caller, slot, ticket, skiplist_status::hit, std::string_view(bytes, sizeof bytes), hops);
        return;
    }
    case skiplist_op::marker:
    case skiplist_op::reduce:  // became an insert above
        break;
    }
}

void skiplist_nodes::reply_point(const node& here, skiplist_node_id id, int caller, std::uint32_t slot,
                                 std::uint32_t ticket, std::uint8_t status, std::string_view value, std::uint8_t hops) {
    if (ticket == wire::no_slot)
        return;  // a node's own record (an ordering marker): nobody waits for it
    // The answering node and its separator go back with the answer: the caller
    // enters there next time for keys at or above the separator (entry_point).
    // The hops byte says how far the operation travelled and whether a shortcut
    // failed on the way.
    const std::size_t bytes = wire_bytes<wire::point_reply_header> + string_bytes(here.separator) + value.size();
    byte_writer out(m_shared.engine->reserve(caller, m_shared.handlers.point_reply, bytes), bytes);
    out.record(wire::point_reply_header{slot, ticket, status, hops, id.rank, id.slot, id.generation});
    put_string(out, here.separator);
    out.put_bytes(value).finish();
}

// ---------------------------------------------------------------------------
// Direct finds: a batch's keys straight to the nodes the caller's directory
// names, one record per destination rank with a run of keys per node
// ---------------------------------------------------------------------------

void skiplist_nodes::handle_find_direct(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::find_direct_header>(in);
    const std::uint8_t level_byte = header.level;
    const std::uint32_t slot = header.slot;
    const std::uint32_t segments = header.segments;
    if ((slot & 0x80000000u) == 0 || (level_byte & wire::route_shortcut) == 0 || segments == 0 ||
        segments > record.size() / wire_bytes<wire::segment>)
        throw decode_error("mpidict: skiplist_map direct find record with a bad slot, level byte or segment count");
    struct segment {
        skiplist_node_id id;
        std::uint32_t first, count;
        std::size_t keys_from;
    };
    std::vector<segment> parts(segments);
    std::vector<std::string_view> keys;
    const std::uint32_t max_key_bytes = m_shared.config.max_key_bytes;
    for (segment& part : parts) {
        const auto read = read_record<wire::segment>(in);
        part.id = skiplist_node_id{m_shared.rank(), read.slot, read.generation};
        part.first = read.first;
        part.count = read.count;
        part.keys_from = keys.size();
        if (part.count == 0 || part.count > record.size() / 4 || part.first > wire::no_slot - part.count)
            throw decode_error("mpidict: skiplist_map direct find record with a bad key count");
        for (std::uint32_t index = 0; index < part.count; ++index) {
            keys.push_back(read_string(in));
            if (keys.back().size() > max_key_bytes)
                throw decode_error("mpidict: skiplist_map direct find record with a key of " +
                                   std::to_string(keys.back().size()) + " bytes");
        }
    }
    if (!in.empty())
        throw decode_error("mpidict: skiplist_map direct find record with bytes after its keys");

    // The answers: {u32 batch slot} then found × ({index, status} [value]); a
    // record as long as a record may be.
    std::string answers;
    auto& engine = *m_shared.engine;
    const std::size_t room = engine.max_record_bytes() - 4;
    auto send_answers = [&] {
        if (answers.empty())
            return;
        const std::size_t bytes = 4 + answers.size();
        byte_writer(engine.reserve(source, m_shared.handlers.found_direct, bytes), bytes)
            .put(slot)
            .put_bytes(answers)
            .finish();
        answers.clear();
    };
    std::vector<std::pair<std::uint32_t, std::uint32_t>> passed_on;  // (segment, key) sent on the ordinary way
    std::uint64_t answered = 0;
    // Each segment is a series of dependent loads (node, tower, run): start
    // loading the node two segments on and the tower and run of the next one.
    auto prefetch_node = [&](const segment& part) {
        if (part.id.slot < m_nodes.size()) {
            const char* at = reinterpret_cast<const char*>(&m_nodes[part.id.slot]);
            for (std::size_t line = 0; line < sizeof(node); line += 64)
                prefetch_line(at + line);
        }
    };
    auto prefetch_run = [&](const segment& part) {
        if (part.id.slot < m_nodes.size()) {
            const node& ahead = m_nodes[part.id.slot];
            ahead.run.prefetch();
            prefetch_line(ahead.tower.data());
        }
    };
    prefetch_node(parts[0]);
    if (segments > 1)
        prefetch_node(parts[1]);
    for (std::uint32_t which = 0; which < segments; ++which) {
        const segment& part = parts[which];
        if (which + 2 < segments)
            prefetch_node(parts[which + 2]);
        if (which + 1 < segments)
            prefetch_run(parts[which + 1]);
        // The node answers the keys in its range, unless it is holding or
        // splitting (then the ordinary way queues them).
        node* here = live(part.id) ? &m_nodes[part.id.slot] : nullptr;
        if (here && (here->busy() || here->stub()))
            here = nullptr;
        if (here && here->earliest_expiry != 0)
            purge_expired(*here, m_shared.clock_now());
        if (here) {
            here->count_requests(part.count);
            m_shared.count_window(part.count);
        }
        // A key is this node's if the run holds it, or if it lies at or above
        // the separator and below the successor's (what forward_level would
        // find on every level).
        const link* next = here && !here->tower.empty() && here->tower[0].set ? &here->tower[0] : nullptr;
        // Comparisons by 8-byte prefixes first (sorted_run::compare).
        const std::string_view floor = here ? std::string_view(here->separator) : std::string_view();
        const std::uint64_t floor_prefix = sorted_run::prefix_of(floor);
        const std::string_view ceiling = next && !next->to.null() ? std::string_view(next->separator) : std::string_view();
        const std::uint64_t ceiling_prefix = sorted_run::prefix_of(ceiling);
        std::size_t position = 0;
        std::string_view previous;
        std::uint64_t previous_prefix = 0;
        for (std::uint32_t index = 0; index < part.count; ++index) {
            const std::string_view key = keys[part.keys_from + index];
            const std::uint64_t prefix = sorted_run::prefix_of(key);
            bool hit = false, miss = false;
            if (here && sorted_run::compare(key, prefix, floor, floor_prefix) >= 0) {
                // Ascending keys (a sorted batch) move forward from the last one.
                position = index > 0 && sorted_run::compare(key, prefix, previous, previous_prefix) >= 0
                               ? here->run.seek(key, prefix, position)
                               : here->run.lower_bound(key, prefix, 0, here->run.size());
                hit = here->run.holds_at(position, key, prefix);
                miss = !hit && next &&
                       (next->to.null() || sorted_run::compare(key, prefix, ceiling, ceiling_prefix) < 0);
            }
            previous = key;
            previous_prefix = prefix;
            if (!hit && !miss) {
                passed_on.emplace_back(which, index);
                continue;
            }
            const std::string_view value = hit ? here->run.value(position) : std::string_view();
            const std::size_t entry = wire_bytes<wire::found> + (hit ? string_bytes(value) : 0);
            if (answers.size() + entry > room)
                send_answers();
            const std::size_t at = answers.size();
            answers.resize(at + entry);
            byte_writer out(reinterpret_cast<std::byte*>(answers.data() + at), entry);
            out.record(wire::found{part.first + index, hit ? skiplist_status::hit : skiplist_status::miss});
            if (hit)
                put_string(out, value);
            out.finish();
            ++answered;
        }
    }
    m_shared.stats.handled += answered;
    send_answers();
    // The others continue on the ordinary way from their node, as the point
    // find send_batch_point would have sent there (a gone node or one above
    // the key sends it to the head, counted as a failed shortcut).
    for (const auto& [which, index] : passed_on) {
        const segment& part = parts[which];
        skiplist_point point;
        point.header = wire::point_header{static_cast<std::uint8_t>(skiplist_op::find), source, slot,
                                          part.first + index, 0};
        point.key = keys[part.keys_from + index];
        if (!live(part.id)) {
            send_point(m_shared.head, m_shared.top_level(), level_byte & wire::route_free,
                       skiplist_shared::next_hops(0) | wire::route_fell_back, point, {});
            continue;
        }
        route_point(source, part.id, level_byte, 0, point, {});
    }
    m_shared.window_check();
}

// ---------------------------------------------------------------------------
// Local views
// ---------------------------------------------------------------------------

void skiplist_nodes::for_all_local(
    const std::function<void(std::string_view, std::string_view, expiry_time)>& visit) const {
    const expiry_time now = m_shared.clock_now();
    for (const auto& here : m_nodes) {
        if (!here.live)
            continue;
        for (std::size_t index = 0; index < here.run.size(); ++index) {
            const expiry_time expires = here.run.expires(index);
            if (expires == 0 || expires > now)
                visit(here.run.key(index), here.run.value(index), expires);
        }
    }
}

std::size_t skiplist_nodes::local_size() const {
    const expiry_time now = m_shared.clock_now();
    std::size_t total = 0;
    for (const auto& here : m_nodes) {
        if (!here.live)
            continue;
        for (std::size_t index = 0; index < here.run.size(); ++index) {
            const expiry_time expires = here.run.expires(index);
            total += expires == 0 || expires > now;
        }
    }
    return total;
}

std::string skiplist_nodes::check_local_invariants() const {
    for (std::size_t slot = 0; slot < m_nodes.size(); ++slot) {
        const node& here = m_nodes[slot];
        if (!here.live)
            continue;
        const std::string where = "node " + std::to_string(slot) + " on rank " + std::to_string(m_shared.rank());
        if (here.busy())
            return where + " still holds requests after a flush";
        for (std::size_t index = 0; index < here.run.size(); ++index) {
            if (index > 0 && !(here.run.key(index - 1) < here.run.key(index)))
                return where + " has an unsorted run";
            if (here.run.key(index) < std::string_view(here.separator))
                return where + " holds a key below its separator";
        }
        if (here.run.size() > m_shared.config.granularity)
            return where + " holds more than G keys";
        for (std::size_t level = 0; level < here.tower.size(); ++level) {
            const link& next = here.tower[level];
            if (!next.set || next.to.null())
                continue;
            if (!(here.separator < next.separator))
                return where + " links level " + std::to_string(level) + " backwards";
            if (level == 0 && !here.run.empty() &&
                !(here.run.key(here.run.size() - 1) < std::string_view(next.separator)))
                return where + " holds a key at or above its successor's separator";
        }
    }
    return {};
}

}  // namespace mpidict::detail
