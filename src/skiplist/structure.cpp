// The structure of the skip list: splits and the free-node service, link_up,
// the ordering records of "Non-overtaking" (skiplist_map.hpp), and unlinking
// emptied nodes at a flush.  See skiplist_structure.hpp.

#include "mpidict/detail/skiplist_structure.hpp"

#include <algorithm>
#include <span>

#include "mpidict/error.hpp"
#include "node_records.hpp"

namespace mpidict::detail {

namespace {
// The most hops a link_up walk makes before it gives up (handle_link_up);
// below the route header's hop counter's ceiling.  A walk through well-linked
// levels takes about 1 / tower_probability hops per level (2 by default).
constexpr unsigned link_up_hop_limit = 96;
static_assert(link_up_hop_limit < skiplist_shared::hops_mask);
}  // namespace

skiplist_structure::skiplist_structure(skiplist_shared& shared, skiplist_nodes& nodes, skiplist_directory& directory)
    : m_shared(shared), m_nodes(nodes), m_directory(directory) {
    m_random.seed(shared.config.seed + static_cast<std::uint64_t>(shared.rank()) * 0x9e3779b97f4a7c15ULL);
}

unsigned skiplist_structure::draw_height() {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    unsigned height = 1;
    while (height < m_shared.config.max_height && coin(m_random) < m_shared.config.tower_probability)
        ++height;
    return height;
}

void skiplist_structure::send_clear(skiplist_node_id target) {
    m_shared.send(target.rank, m_shared.handlers.clear, wire::clear{target.slot, target.generation});
}

void skiplist_structure::send_marker(int destination, skiplist_node_id target) {
    m_shared.send(destination, m_shared.handlers.marker, wire::marker{target.rank, target.slot, target.generation});
}

// ---------------------------------------------------------------------------
// Splits and the free-node service (Section 2.2, Figure 6)
// ---------------------------------------------------------------------------

void skiplist_structure::start_split(node& here, skiplist_node_id id) {
    const auto& config = m_shared.config;
    ++m_shared.stats.splits;
    const std::size_t middle = here.run.size() / 2;
    // Every mode draws the full geometric height (total_order capped it at the
    // splitting node's height until issue 42 found the link_up escape, fixed in
    // skiplist_nodes::hold_if_busy).
    const unsigned height = draw_height();
    skiplist_point_split& split = *here.split;  // (made by the insert that overflowed the node)
    split.separator = std::string(here.run.key(middle));
    split.height = height;
    split.direct = 0;
    here.allocating = true;

    // The levels linked directly after this node: a prefix of its tower.
    std::uint32_t holds = 0;
    std::uint8_t links = 0;
    std::size_t bytes = wire_bytes<wire::alloc_header> + string_bytes(split.separator) +
                        wire_bytes<wire::alloc_shape> + 4;
    for (unsigned level = 0; level < height && level < here.tower.size(); ++level) {
        const link& next = here.tower[level];
        if (!next.set)
            break;
        split.direct |= 1u << level;
        ++links;
        if (!next.to.null() && !config.unordered_for_testing)
            ++holds;  // one marker per replaced link (order_new_link)
        bytes += 1 + wire::node_id_bytes + string_bytes(next.separator);
    }
    for (std::size_t index = middle; index < here.run.size(); ++index)
        bytes += string_bytes(here.run.key(index)) + string_bytes(here.run.value(index)) + sizeof(expiry_time);

    // Placement: round robin from the next server, so that even ascending keys
    // (every split at the tail) spread their nodes over the ranks.
    const std::size_t servers = m_shared.servers.size();
    const std::size_t start = m_shared.server_index < 0 ? 0 : static_cast<std::size_t>(m_shared.server_index) + 1;
    const int target = m_shared.servers[(start + m_placement_counter++) % servers];
    byte_writer out(m_shared.engine->reserve(target, m_shared.handlers.alloc, bytes), bytes);
    out.record(wire::alloc_header{id.rank, id.slot, id.generation, 0});
    put_string(out, split.separator);
    out.record(wire::alloc_shape{static_cast<std::uint8_t>(height), holds, links});
    for (unsigned level = 0; level < links; ++level) {
        out.put(static_cast<std::uint8_t>(level));
        put_node_id(out, here.tower[level].to);
        put_string(out, here.tower[level].separator);
    }
    out.put(static_cast<std::uint32_t>(here.run.size() - middle));
    for (std::size_t index = middle; index < here.run.size(); ++index) {
        put_string(out, here.run.key(index));
        put_string(out, here.run.value(index));
        out.put(here.run.expires(index));
    }
    out.finish();
}

void skiplist_structure::handle_alloc(int, std::string_view record) {
    const auto& config = m_shared.config;
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::alloc_header>(in);
    const skiplist_node_id origin{header.origin_rank, header.origin_slot, header.origin_generation};
    const std::string_view separator = read_string(in);
    const auto shape = read_record<wire::alloc_shape>(in);
    const unsigned height = shape.height;
    if (!m_shared.valid_rank(origin.rank) || height < 1 || height > config.max_height ||
        header.hops >= m_shared.servers.size())
        throw decode_error("mpidict: skiplist_map allocation record with a bad origin, height or hop count");
    const skiplist_node_id fresh = m_nodes.allocate_local(separator, height);
    if (fresh.null()) {
        // This manager has no free slot: ask the next one around the ring; after
        // a full cycle the list is full.
        if (header.hops + 1 >= m_shared.servers.size()) {
            m_shared.send(origin.rank, m_shared.handlers.alloc_reply,
                          wire::alloc_reply{origin.slot, origin.generation, 0, -1, 0, 0});
            return;
        }
        ++m_shared.stats.allocations_forwarded;
        const std::size_t me = m_shared.server_index < 0 ? 0 : static_cast<std::size_t>(m_shared.server_index);
        const int next = m_shared.servers[(me + 1) % m_shared.servers.size()];
        std::byte* out = m_shared.engine->reserve(next, m_shared.handlers.alloc, record.size());
        std::memcpy(out, record.data(), record.size());
        wire::alloc_header onward = header;
        ++onward.hops;
        overwrite_record(out, onward);
        return;
    }
    node& created = m_nodes.all()[fresh.slot];
    created.holds = static_cast<int>(shape.holds);
    // A new node's holds cover every level.  Without holds it never holds, and
    // its hold level must say so: a stale 0 made every later link's hold queue
    // what came the old way too (issue 42, seed 114 of the find_many workload).
    created.hold_level = shape.holds > 0 ? 0 : node::no_hold_level;
    for (unsigned index = 0; index < shape.links; ++index) {
        const unsigned level = in.read<std::uint8_t>();
        const skiplist_node_id to = read_node_id(in);
        const std::string_view next_separator = read_string(in);
        if (level >= height)
            throw decode_error("mpidict: skiplist_map allocation record links a level above the node's height");
        created.tower[level] = link{std::string(next_separator), to, true};
    }
    const auto entries = in.read<std::uint32_t>();
    if (entries > config.granularity + 1)
        throw decode_error("mpidict: skiplist_map allocation record carries more entries than a node holds");
    created.run.reserve(entries, record.size());
    auto& stats = m_shared.stats;
    for (std::uint32_t index = 0; index < entries; ++index) {
        const std::string_view key = read_string(in);
        const std::string_view value = read_string(in);
        const auto expires = in.read<expiry_time>();
        if (!created.run.empty() && !(created.run.key(created.run.size() - 1) < key))
            throw decode_error("mpidict: skiplist_map allocation record carries entries out of order");
        if (expires != 0 && (created.earliest_expiry == 0 || expires < created.earliest_expiry))
            created.earliest_expiry = expires;
        stats.payload_bytes += key.size() + value.size();
        ++stats.entries;
        created.run.push_back(key, value, expires);
    }
    m_shared.send(origin.rank, m_shared.handlers.alloc_reply,
                  wire::alloc_reply{origin.slot, origin.generation, 1, fresh.rank, fresh.slot, fresh.generation});
}

void skiplist_structure::handle_alloc_reply(int, std::string_view record) {
    const auto reply = read_record<wire::alloc_reply>(reinterpret_cast<const std::byte*>(record.data()), record.size());
    const skiplist_node_id id{m_shared.rank(), reply.slot, reply.generation};
    const skiplist_node_id fresh{reply.fresh_rank, reply.fresh_slot, reply.fresh_generation};
    node& here = m_nodes.addressed(id, "allocation reply");
    if (!here.allocating)
        throw decode_error("mpidict: skiplist_map allocation reply for a node that is not splitting");
    if (!here.split)
        throw decode_error("mpidict: skiplist_map allocation reply for a node without a split in progress");
    here.allocating = false;
    const std::unique_ptr<skiplist_point_split> split = std::move(here.split);
    const int caller = split->source;
    const std::uint32_t slot = split->slot;
    const std::uint32_t ticket = split->ticket;
    auto& stats = m_shared.stats;
    const auto& config = m_shared.config;
    if (reply.ok != 0) {
        // The upper half now lives in the new node: drop it here and link the new
        // node directly after this one on every level it shares with this tower.
        const std::size_t first_moved = here.run.lower_bound(split->separator);
        for (std::size_t index = first_moved; index < here.run.size(); ++index) {
            stats.payload_bytes -= here.run.key(index).size() + here.run.value(index).size();
            --stats.entries;
        }
        here.run.erase(first_moved, here.run.size());
        here.run.shrink_to_fit();
        unsigned linked = 0;  // the direct levels form a prefix (see start_split)
        for (unsigned level = 0; level < split->height; ++level) {
            if ((split->direct & (1u << level)) == 0)
                break;
            ++linked;
            const skiplist_node_id old = here.tower[level].to;
            here.tower[level] = link{split->separator, fresh, true};
            // Requests this node sent to `old` before must reach it before
            // those the new node will send it: a marker behind them.
            if (!old.null() && !config.unordered_for_testing)
                send_marker(old.rank, fresh);
        }
        if (linked < split->height)
            send_link_up(fresh, split->separator, linked);
        m_nodes.reply_point(here, id, caller, slot, ticket, skiplist_status::stored, {}, split->hops);
    } else {
        // list_full: take the key that made the node overflow back out.
        ++stats.list_full;
        const std::size_t position = here.run.lower_bound(split->key);
        if (here.run.holds_at(position, split->key)) {
            stats.payload_bytes -= here.run.key(position).size() + here.run.value(position).size();
            --stats.entries;
            here.run.erase(position, position + 1);
        }
        m_nodes.reply_point(here, id, caller, slot, ticket, skiplist_status::full,
                            m_shared.list_full_message());
    }
    m_nodes.release_held(id);
}

// ---------------------------------------------------------------------------
// Linking the upper levels of a taller node (the SPLIT of Figure 6(c))
// ---------------------------------------------------------------------------

void skiplist_structure::send_link_up(skiplist_node_id fresh, std::string_view separator, unsigned level,
                                      skiplist_node_id last, std::string_view plan) {
    const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<wire::link_up_header> +
                              string_bytes(separator) + 1 + (last.null() ? 0 : wire::node_id_bytes + plan.size());
    // The walk to the predecessor on `level` starts at the head, or (outside
    // total_order) at a node hosted here that is already on that level and
    // lies below the separator: the head would walk levels whose links lag
    // behind a burst of splits (a bulk load) node by node.
    skiplist_node_id start = m_shared.head;
    int start_level = m_shared.top_level();
    if (m_shared.config.consistency != skiplist_consistency::total_order) {
        const auto& nodes = m_nodes.all();
        const skiplist_node_id local = m_directory.before(separator, 64, [&](const skiplist_node_id& id) {
            if (id.rank != m_shared.rank() || !m_nodes.live(id))
                return false;
            const node& there = nodes[id.slot];
            return !there.reserved && there.tower.size() > level && there.tower[level].set;
        });
        if (!local.null()) {
            start = local;
            start_level = static_cast<int>(nodes[local.slot].tower.size()) - 1;
        }
    }
    byte_writer out(m_shared.engine->reserve(start.rank, m_shared.handlers.link_up, bytes), bytes);
    out.record(skiplist_shared::route(start, start_level, 0, 0))
        .record(wire::link_up_header{fresh.rank, fresh.slot, fresh.generation});
    put_string(out, separator).put(static_cast<std::uint8_t>(level));
    if (!last.null())
        put_node_id(out, last).put_bytes(plan);
    out.finish();
}

std::string bulk_plan::bytes() const {
    std::size_t size = 1;
    for (const level& next : levels)
        size += 2 * skiplist_wire::node_id_bytes + string_bytes(next.separator);
    std::string out(size, '\0');
    byte_writer writer(reinterpret_cast<std::byte*>(out.data()), size);
    writer.put(static_cast<std::uint8_t>(levels.size()));
    for (const level& next : levels)
        put_node_id(put_string(put_node_id(writer, next.first), next.separator), next.last);
    writer.finish();
    return out;
}

bulk_plan bulk_plan::read(byte_reader& in, const skiplist_shared& shared) {
    bulk_plan plan;
    const unsigned count = in.read<std::uint8_t>();
    if (count >= shared.config.max_height)
        throw decode_error("mpidict: skiplist_map link_up record plans more levels than a tower has");
    for (unsigned index = 0; index < count; ++index) {
        level next;
        next.first = read_node_id(in);
        next.separator = std::string(read_string(in));
        next.last = read_node_id(in);
        if (!shared.valid_rank(next.first.rank) || !shared.valid_rank(next.last.rank) || next.separator.empty())
            throw decode_error("mpidict: skiplist_map link_up record plans a bad node");
        plan.levels.push_back(std::move(next));
    }
    return plan;
}

void skiplist_structure::handle_link_up(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto route = read_record<wire::route_header>(in);
    const skiplist_node_id id{m_shared.rank(), route.slot, route.generation};
    const int arrival = route.level & wire::level_mask;
    node& here = m_nodes.addressed(id, "link_up");
    if (m_nodes.forward_if_moved(here, m_shared.handlers.link_up, record))
        return;
    if (m_nodes.hold_if_busy(here, m_shared.handlers.link_up, source, record, arrival))
        return;
    const auto header = read_record<wire::link_up_header>(in);
    const skiplist_node_id fresh{header.fresh_rank, header.fresh_slot, header.fresh_generation};
    const std::string separator(read_string(in));
    const unsigned target_level = in.read<std::uint8_t>();
    // A bulk split's chain (bulk.cpp): the level's last member, which takes
    // the predecessor's old successor.
    const skiplist_node_id last = in.empty() ? skiplist_node_id{} : read_node_id(in);
    const bulk_plan plan = last.null() ? bulk_plan{} : bulk_plan::read(in, m_shared);
    if (!m_shared.valid_rank(fresh.rank) || target_level >= here.tower.size() ||
        target_level >= m_shared.config.max_height || !in.empty() || (!last.null() && !m_shared.valid_rank(last.rank)))
        throw decode_error("mpidict: skiplist_map link_up record names a bad node or level");
    // Travel towards the new node's separator (strictly before it) down to the
    // level being linked; the node where that stops precedes it on that level.
    // A walk that has made link_up_hop_limit hops gives up here: the new node
    // stays lower (set_links with linked = 0, as when the predecessor is not on
    // the level yet).  Without the limit, ascending inserts (every split near
    // the tail) outran their own links: each level-1 walk started where level 2
    // stopped, thousands of level-1 nodes back, and the lag grew with the list
    // (issue 43: 28M link_up hops per rank at 600,000 keys per rank).
    bool gave_up = false;
    for (int level = std::min(arrival, static_cast<int>(here.tower.size()) - 1);
         level >= static_cast<int>(target_level); --level) {
        const link& next = here.tower[static_cast<std::size_t>(level)];
        if (next.set && !next.to.null() && std::string_view(next.separator) < separator) {
            if ((route.hops & wire::hops_mask) >= link_up_hop_limit) {
                gave_up = true;
                break;
            }
            ++m_shared.stats.hops;
            m_shared.forward(m_shared.handlers.link_up, next.to, record.substr(wire_bytes<wire::route_header>), level,
                             0, skiplist_shared::next_hops(route.hops));
            return;
        }
    }
    link& next = here.tower[target_level];
    const bool linked = next.set && !gave_up;
    const skiplist_node_id old = linked ? next.to : skiplist_node_id{};
    const std::string old_separator = linked ? next.separator : std::string();
    if (linked) {
        // Splice the new node in after this one on the level.
        next = link{separator, fresh, true};
        order_new_link(here, static_cast<int>(target_level), fresh, separator, old);
    }
    if (!last.null()) {
        // A bulk split's chain is linked on every level already, its last
        // member ending the level (null).  Unlinked here, or at the level's end,
        // nothing more is needed; else the last member takes the old successor.
        if (!old.null())
            send_set_links(last, target_level, 2, old, old_separator);
        // Bottom up: the next level's first member is linked on this one now
        // (by this node or a piece before it), so it is on every path into its
        // range below the next level, which that level's ordering markers need.
        if (linked && !plan.levels.empty()) {
            bulk_plan rest;
            rest.levels.assign(plan.levels.begin() + 1, plan.levels.end());
            const auto& next_level = plan.levels.front();
            send_link_up(next_level.first, next_level.separator, target_level + 1, next_level.last, rest.bytes());
        }
        return;
    }
    // Not linked here yet: the new node stays lower (linked = 0).
    send_set_links(fresh, target_level, linked ? 1 : 0, old, old_separator);
}

void skiplist_structure::send_set_links(skiplist_node_id to, unsigned level, std::uint8_t linked,
                                        skiplist_node_id next, std::string_view next_separator) {
    const std::size_t bytes = wire_bytes<wire::set_links_header> + string_bytes(next_separator);
    byte_writer out(m_shared.engine->reserve(to.rank, m_shared.handlers.set_links, bytes), bytes);
    out.record(wire::set_links_header{to.slot, to.generation, 0, static_cast<std::uint8_t>(level), linked, next.rank,
                                      next.slot, next.generation});
    put_string(out, next_separator).finish();
}

void skiplist_structure::handle_set_links(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::set_links_header>(in);
    const skiplist_node_id id{m_shared.rank(), header.slot, header.generation};
    node& here = m_nodes.addressed(id, "set_links");
    if (here.stub()) {
        // (Not expected: a node moves only with every level linked.)  On to the new place.
        wire::set_links_header moved = header;
        moved.slot = here.moved_to.slot;
        moved.generation = here.moved_to.generation;
        std::string forwarded(record);
        overwrite_record(reinterpret_cast<std::byte*>(forwarded.data()), moved);
        m_shared.send_record(here.moved_to.rank, m_shared.handlers.set_links, forwarded);
        return;
    }
    if (m_nodes.hold_if_busy(here, m_shared.handlers.set_links, source, record))
        return;
    const unsigned level = header.level;
    const skiplist_node_id to{header.to_rank, header.to_slot, header.to_generation};
    const std::string separator(read_string(in));
    if (header.linked == 2) {
        // A bulk split's chain ended the level at this node (null) and its
        // first member was spliced in before `to` (handle_link_up): this node
        // links `to` if it still ends the level; if a node was linked after it
        // meanwhile and lies before `to`, the record walks on to it; if what it
        // links is at or after `to`, `to` is passed over on this level (every
        // link still leads forward, so routes stay right).
        if (to.null() || !m_shared.valid_rank(to.rank) || level >= m_shared.config.max_height)
            throw decode_error("mpidict: skiplist_map set_links record hands a bad successor to a chain's end");
        // A node the walk reached that is not on the level yet (its own
        // set_links still to come) or lies at or after `to`: passed over.
        if (level >= here.tower.size() || !here.tower[level].set ||
            !(std::string_view(here.separator) < std::string_view(separator)))
            return;
        link& next = here.tower[level];
        if (next.to.null()) {
            next = link{separator, to, true};
            order_new_link(here, static_cast<int>(level), to, separator, skiplist_node_id{});
        } else if (std::string_view(next.separator) < std::string_view(separator)) {
            send_set_links(next.to, level, 2, to, separator);
        }
        return;
    }
    if (level >= here.tower.size() || (level > 0 && !here.tower[level - 1].set) || here.tower[level].set)
        throw decode_error("mpidict: skiplist_map set_links record for a level that is not the next to link");
    if (header.linked == 0) {
        // The predecessor was not linked on that level, or the walk gave up:
        // this node stays this tall.  Its tower ends here, so it is linked on
        // every level it has (an emptied one is unlinked at a flush).
        if (level > 0)
            here.tower.resize(level);
        return;
    }
    here.tower[level] = link{separator, to, true};
    if (!to.null())
        order_new_link(here, static_cast<int>(level), to, separator, skiplist_node_id{});
    // One level at a time, bottom up: a node linked on every level below the
    // next one is on every path into its range, which the ordering markers need.
    if (level + 1 < here.tower.size())
        send_link_up(id, here.separator, level + 1);
}

// ---------------------------------------------------------------------------
// Non-overtaking when a link changes
// ---------------------------------------------------------------------------

void skiplist_structure::order_new_link(node& from, int level, skiplist_node_id target,
                                        std::string_view target_separator, skiplist_node_id old_successor) {
    if (m_shared.config.unordered_for_testing)
        return;
    // 1. The target holds every request until the clears below arrive.  This
    //    record travels on the same rank pair as every request `from` will send
    //    it over the new link, so it arrives first.
    const std::int32_t expected = old_successor.null() ? 1 : 2;
    const int below = skiplist_nodes::forward_level(from, target_separator, level - 1, false);
    m_shared.send(target.rank, m_shared.handlers.expect,
                  wire::expect{target.slot, target.generation, expected, static_cast<std::uint8_t>(level)});
    // 2. A marker along the old way to the target: the route a request for the
    //    target's separator took before the change (below `level`).  It queues
    //    behind everything `from` sent that way and clears the target on arrival.
    if (below >= 0) {
        const skiplist_node_id to = from.tower[static_cast<std::size_t>(below)].to;
        const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<wire::point_header> +
                                  string_bytes(target_separator) + 4 + wire::node_id_bytes;
        byte_writer out(m_shared.engine->reserve(to.rank, m_shared.handlers.point, bytes), bytes);
        out.record(skiplist_shared::route(to, below, 0, 0))
            .record(wire::point_header{static_cast<std::uint8_t>(skiplist_op::marker), target.rank, wire::no_slot,
                                       wire::no_slot, 0});
        put_string(out, target_separator);
        out.put(static_cast<std::uint32_t>(wire::node_id_bytes));
        put_node_id(out, target).finish();
    } else {
        // Before the change the target's keys were this node's own: nothing of
        // ours is on the way to it.
        send_clear(target);
    }
    // 3. The successor the link used to reach: what we sent it directly must be
    //    handled there before what now reaches it through the target.
    if (!old_successor.null())
        send_marker(old_successor.rank, target);
}

void skiplist_structure::clear_for_marker(skiplist_node_id target) {
    if (!m_shared.valid_rank(target.rank))
        throw decode_error("mpidict: skiplist_map marker names a bad node");
    if (target.rank == m_shared.rank()) {
        node& here = m_nodes.addressed(target, "clear");
        if (here.stub()) {
            send_clear(here.moved_to);  // moved between flushes: the clear follows it
            return;
        }
        --here.holds;
        m_nodes.release_held(target);
    } else {
        send_clear(target);
    }
}

void skiplist_structure::handle_expect(int, std::string_view record) {
    const auto expect = read_record<wire::expect>(reinterpret_cast<const std::byte*>(record.data()), record.size());
    const std::uint8_t level = expect.level;
    if (expect.expected < 0 || expect.expected > 2 || level >= m_shared.config.max_height)
        throw decode_error("mpidict: skiplist_map expect record with a bad count or level");
    const skiplist_node_id id{m_shared.rank(), expect.slot, expect.generation};
    node& here = m_nodes.addressed(id, "expect");
    if (here.stub()) {
        // Moved between flushes: the new place holds instead.  Whatever comes
        // over the new link reaches it through this stub, behind this record.
        m_shared.send(here.moved_to.rank, m_shared.handlers.expect,
                      wire::expect{here.moved_to.slot, here.moved_to.generation, expect.expected, level});
        return;
    }
    here.holds += expect.expected;
    // What comes below `level` meanwhile (the old way) may be served at once
    // (skiplist_nodes::hold_if_busy); what queues is replayed in the head's
    // order (total_order's stamps).
    here.hold_level = std::min(here.hold_level, level);
    m_nodes.release_held(id);
}

void skiplist_structure::handle_marker(int, std::string_view record) {
    // Everything the marker's sender sent to this rank before it has been
    // handled (or is queued, in order, at its node): the new node may go on.
    const auto marker = read_record<wire::marker>(reinterpret_cast<const std::byte*>(record.data()), record.size());
    if (!m_shared.valid_rank(marker.rank))
        throw decode_error("mpidict: skiplist_map marker record names a bad node");
    send_clear(skiplist_node_id{marker.rank, marker.slot, marker.generation});
}

void skiplist_structure::handle_clear(int, std::string_view record) {
    const auto clear = read_record<wire::clear>(reinterpret_cast<const std::byte*>(record.data()), record.size());
    const skiplist_node_id id{m_shared.rank(), clear.slot, clear.generation};
    node& here = m_nodes.addressed(id, "clear");
    if (here.stub()) {
        send_clear(here.moved_to);  // moved between flushes: the clear follows it
        return;
    }
    --here.holds;
    m_nodes.release_held(id);
}

// ---------------------------------------------------------------------------
// Unlinking emptied nodes (at a flush)
// ---------------------------------------------------------------------------
//
// After the engine's flush nothing is in flight anywhere: no request, split,
// link_up, marker or answer.  So the list can be changed without the ordering
// machinery: every rank announces its emptied nodes (not the head) with their
// towers to every rank; each rank then points every link of its own nodes that
// names an emptied node at that node's successor on the same level (following a
// run of emptied nodes to the first one that stays), forgets the routes to
// them, and frees its own.  The predecessor on level 0 thereby takes over the
// emptied node's key range: ranges are [separator, next separator), and the
// next separator is now the one after the emptied node.  A second engine flush
// separates the announcements from the changes, so every rank changes its
// links knowing every emptied node, and a last reduction keeps every rank from
// starting new operations before all have.

void skiplist_structure::handle_unlinked(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::unlinked_header>(in);
    const skiplist_node_id id{header.rank, header.slot, header.generation};
    if (id.rank != source || header.height == 0 || header.height > m_shared.config.max_height)
        throw decode_error("mpidict: skiplist_map unlink record from rank " + std::to_string(source) +
                           " names a node of another rank or a bad height");
    std::vector<link> tower = read_tower(in, header.height, m_shared, "unlink record");
    if (!in.empty())
        throw decode_error("mpidict: skiplist_map unlink record has trailing bytes");
    m_unlinked[id] = std::move(tower);
}

void skiplist_structure::unlink_emptied() {
    auto& nodes = m_nodes.all();
    auto& engine = *m_shared.engine;
    const int me = m_shared.rank();
    std::vector<std::uint32_t> emptied;
    for (std::uint32_t slot = 0; slot < nodes.size(); ++slot) {
        const node& here = nodes[slot];
        if (!here.live || !here.run.empty() || here.separator.empty() || here.busy())
            continue;  // the head (empty separator) always stays
        bool linked = true;
        for (const link& level : here.tower)
            linked = linked && level.set;
        if (linked)
            emptied.push_back(slot);
    }
    // Cleared before the sum: another rank's announcements may arrive while this
    // rank still serves the reduction.
    m_unlinked.clear();
    const std::int64_t mine = static_cast<std::int64_t>(emptied.size());
    std::int64_t total = 0;
    engine.sum(std::span<const std::int64_t>(&mine, 1), std::span<std::int64_t>(&total, 1), "skiplist_map.unlink");
    if (total == 0)
        return;
    std::string announce;
    for (const std::uint32_t slot : emptied) {
        const node& here = nodes[slot];
        std::size_t bytes = wire_bytes<wire::unlinked_header>;
        for (const link& level : here.tower)
            bytes += wire::node_id_bytes + string_bytes(level.separator);
        announce.assign(bytes, '\0');
        byte_writer out(reinterpret_cast<std::byte*>(announce.data()), bytes);
        out.record(wire::unlinked_header{me, slot, here.generation, static_cast<std::uint8_t>(here.tower.size())});
        for (const link& level : here.tower)
            put_string(put_node_id(out, level.to), level.separator);
        out.finish();
        for (int destination = 0; destination < engine.size(); ++destination) {
            if (destination == me)
                handle_unlinked(me, announce);
            else
                m_shared.send_record(destination, m_shared.handlers.unlinked, announce);
        }
    }
    engine.flush();
    if (m_unlinked.size() != static_cast<std::size_t>(total))
        throw decode_error("mpidict: skiplist_map unlink: " + std::to_string(m_unlinked.size()) +
                           " emptied nodes announced, " + std::to_string(total) + " counted");
    for (std::uint32_t slot = 0; slot < nodes.size(); ++slot) {
        node& here = nodes[slot];
        if (!here.live || m_unlinked.count(skiplist_node_id{me, slot, here.generation}) != 0)
            continue;
        for (std::size_t level = 0; level < here.tower.size(); ++level) {
            link& next = here.tower[level];
            // A run of emptied nodes ends within total steps (towers only lead forward).
            for (std::int64_t steps = 0; next.set && !next.to.null(); ++steps) {
                auto gone = m_unlinked.find(next.to);
                if (gone == m_unlinked.end())
                    break;
                if (level >= gone->second.size() || steps > total)
                    throw decode_error("mpidict: skiplist_map unlink: node " + describe(next.to) +
                                       " is linked on level " + std::to_string(level) + " above its tower");
                next = gone->second[level];
            }
        }
    }
    m_directory.forget_if([&](const skiplist_node_id& id) { return m_unlinked.count(id) != 0; });
    for (const std::uint32_t slot : emptied) {
        m_nodes.free_slot(slot);
        ++m_shared.stats.unlinked;
    }
    m_unlinked.clear();
    // No rank may send a new operation until every rank has changed its links:
    // a rank that left the flush early could otherwise reach a node here that
    // still links an emptied node, or one that is already freed elsewhere.
    std::int64_t none = 0, ignored = 0;
    engine.sum(std::span<const std::int64_t>(&none, 1), std::span<std::int64_t>(&ignored, 1), "skiplist_map.unlinked");
}

}  // namespace mpidict::detail
