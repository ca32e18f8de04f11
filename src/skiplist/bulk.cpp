// Batch inserts as sorted runs per node, and bulk splits (issue 43).  A batch's
// inserts reach a node as a sorted segment (insert_direct records, gathered per
// rank by the caller like direct finds); the node merges the keys of its range
// into its run in one pass and sends the others on, one segment per next node.
// A merge that takes the node past G keys cuts the run into as many pieces as
// needed at once: the node keeps the first, reserves an empty node per other
// piece (one request per rank), holds until they are granted, then fills them
// with their pieces and towers and links them in one step.  See skiplist_map.md,
// "Batch inserts and bulk splits".

#include <algorithm>
#include <limits>

#include "mpidict/detail/skiplist_nodes.hpp"
#include "mpidict/detail/skiplist_structure.hpp"
#include "mpidict/error.hpp"
#include "node_records.hpp"

namespace mpidict::detail {

struct skiplist_nodes::direct_segment {
    std::uint8_t level_byte = 0, hops = 0;
    int caller = -1;
    std::uint32_t batch = 0;
    skiplist_node_id id{};
    std::uint32_t first = 0;  // the batch index of keys[0]
    const std::string_view* keys = nullptr;
    const std::string_view* values = nullptr;
    std::size_t count = 0;
    expiry_time expires = 0;  // every key's deadline (0: none)
};

// The answers to one caller, {u32 batch slot} then found × ({index, status}
// [message if full]), sent when a record is full and at the end.
struct skiplist_nodes::direct_answers {
    explicit direct_answers(skiplist_shared& owner) : shared(owner) {}
    skiplist_shared& shared;
    int caller = -1;
    std::uint32_t batch = 0;
    std::string bytes;
    void add(int to, std::uint32_t slot, std::uint32_t index, std::uint8_t status, std::string_view message = {}) {
        if (to != caller || slot != batch) {
            send();
            caller = to;
            batch = slot;
        }
        const std::size_t entry = wire_bytes<skiplist_wire::found> + (message.empty() ? 0 : string_bytes(message));
        if (bytes.size() + entry + 4 > shared.engine->max_record_bytes())
            send();
        const std::size_t at = bytes.size();
        bytes.resize(at + entry);
        byte_writer out(reinterpret_cast<std::byte*>(bytes.data() + at), entry);
        out.record(skiplist_wire::found{index, status});
        if (!message.empty())
            put_string(out, message);
        out.finish();
    }
    void send() {
        if (bytes.empty())
            return;
        const std::size_t size = 4 + bytes.size();
        byte_writer(shared.engine->reserve(caller, shared.handlers.found_direct, size), size)
            .put(batch)
            .put_bytes(bytes)
            .finish();
        bytes.clear();
    }
};

skiplist_node_id skiplist_nodes::reserve_local() {
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
    // Holds whatever reaches it (from a piece linked before it is filled)
    // until its fill arrives; clears that come before the fill count down
    // from zero (holds may go negative meanwhile).
    fresh.reserved = true;
    fresh.allocating = true;
    fresh.hold_level = 0;
    ++m_shared.stats.nodes;
    return skiplist_node_id{m_shared.rank(), slot, generation};
}

// An insert_direct record, read and checked: its segments, keys and values.
struct skiplist_nodes::direct_record {
    skiplist_wire::insert_direct_header header{};
    struct part {
        skiplist_node_id id;
        std::uint32_t first, count;
        std::size_t from;
    };
    std::vector<part> parts;
    std::vector<std::string_view> keys, values;

    direct_record(const skiplist_shared& shared, std::string_view record) {
        byte_reader in = reader_of(record);
        header = read_record<skiplist_wire::insert_direct_header>(in);
        if ((header.slot & 0x80000000u) == 0 || !shared.valid_rank(header.caller) || header.segments == 0 ||
            header.segments > record.size() / wire_bytes<skiplist_wire::segment>)
            throw decode_error("mpidict: skiplist_map direct insert record with a bad slot, caller or segment count");
        if (!(header.expires >= 0) || header.expires == std::numeric_limits<expiry_time>::infinity())
            throw decode_error("mpidict: skiplist_map direct insert record with a bad expiry");
        parts.resize(header.segments);
        const auto& config = shared.config;
        for (part& p : parts) {
            const auto read = read_record<skiplist_wire::segment>(in);
            p.id = skiplist_node_id{shared.rank(), read.slot, read.generation};
            p.first = read.first;
            p.count = read.count;
            p.from = keys.size();
            if (p.count == 0 || p.count > record.size() / 8 || p.first > skiplist_wire::no_slot - p.count)
                throw decode_error("mpidict: skiplist_map direct insert record with a bad key count");
            for (std::uint32_t index = 0; index < p.count; ++index) {
                keys.push_back(read_string(in));
                values.push_back(read_string(in));
                if (keys.back().size() > config.max_key_bytes || values.back().size() > config.max_value_bytes)
                    throw decode_error("mpidict: skiplist_map direct insert record with a key of " +
                                       std::to_string(keys.back().size()) + " bytes or a value of " +
                                       std::to_string(values.back().size()) + " bytes");
                if (index > 0 && !(keys[keys.size() - 2] < keys.back()))
                    throw decode_error("mpidict: skiplist_map direct insert record with keys out of order");
            }
        }
        if (!in.empty())
            throw decode_error("mpidict: skiplist_map direct insert record with bytes after its keys");
    }
    direct_segment segment(std::size_t which) const {
        const part& p = parts[which];
        direct_segment out;
        out.level_byte = header.level;
        out.hops = header.hops;
        out.caller = header.caller;
        out.batch = header.slot;
        out.id = p.id;
        out.first = p.first;
        out.keys = keys.data() + p.from;
        out.values = values.data() + p.from;
        out.count = p.count;
        out.expires = header.expires;
        return out;
    }
};

void skiplist_nodes::handle_insert_direct(int source, std::string_view record) {
    const direct_record parsed(m_shared, record);
    direct_answers answers(m_shared);
    std::vector<direct_item> items;
    for (std::size_t which = 0; which < parsed.parts.size(); ++which) {
        const direct_segment segment = parsed.segment(which);
        items.clear();
        route_segment(source, segment, items);
        if (!items.empty())
            merge_items(segment.id, items, answers);
    }
    answers.send();
}

void skiplist_nodes::insert_held(skiplist_node_id id, std::vector<node::held_record>& group) {
    // Every insert segment that queued here while the node split, merged in
    // one pass (in arrival order where keys repeat): one split for all of them.
    std::vector<direct_record> parsed;
    parsed.reserve(group.size());
    std::vector<direct_item> items;
    for (const auto& held : group) {
        parsed.emplace_back(m_shared, held.bytes);
        for (std::size_t which = 0; which < parsed.back().parts.size(); ++which)
            route_segment(held.source, parsed.back().segment(which), items);
    }
    direct_answers answers(m_shared);
    if (!items.empty()) {
        if (!std::is_sorted(items.begin(), items.end(),
                            [](const direct_item& a, const direct_item& b) { return a.key < b.key; }))
            std::stable_sort(items.begin(), items.end(),
                             [](const direct_item& a, const direct_item& b) { return a.key < b.key; });
        merge_items(id, items, answers);
    }
    answers.send();
}

void skiplist_nodes::send_segment(skiplist_node_id to, std::uint8_t level_byte, std::uint8_t hops,
                                  const direct_segment& segment, std::size_t from, std::size_t until) {
    std::size_t bytes = wire_bytes<wire::insert_direct_header> + wire_bytes<wire::segment>;
    for (std::size_t index = from; index < until; ++index)
        bytes += string_bytes(segment.keys[index]) + string_bytes(segment.values[index]);
    byte_writer out(m_shared.engine->reserve(to.rank, m_shared.handlers.insert_direct, bytes), bytes);
    out.record(wire::insert_direct_header{level_byte, hops, segment.caller, segment.batch, 1, segment.expires})
        .record(wire::segment{to.slot, to.generation, segment.first + static_cast<std::uint32_t>(from),
                              static_cast<std::uint32_t>(until - from)});
    for (std::size_t index = from; index < until; ++index) {
        put_string(out, segment.keys[index]);
        put_string(out, segment.values[index]);
    }
    out.finish();
}

void skiplist_nodes::route_segment(int source, const direct_segment& segment, std::vector<direct_item>& items) {
    const auto& h = m_shared.handlers;
    const std::size_t count = segment.count;
    const std::uint8_t free = segment.level_byte & wire::route_free;
    const bool shortcut = (segment.level_byte & wire::route_shortcut) != 0;
    const skiplist_node_id id = segment.id;
    if (!live(id)) {
        // A directory entry led here, but its node is gone: from the head.
        if (!shortcut)
            addressed(id, "direct insert");  // (throws: a link names a node that is not live)
        send_segment(m_shared.head, static_cast<std::uint8_t>(m_shared.top_level() | free),
                     skiplist_shared::next_hops(segment.hops) | wire::route_fell_back, segment, 0, count);
        return;
    }
    node& here = m_nodes[id.slot];
    const int level = segment.level_byte & wire::level_mask;
    if (here.stub()) {
        // Moved between flushes: the segment goes on to the new place as it came.
        ++m_shared.stats.hops;
        send_segment(here.moved_to, segment.level_byte, segment.hops, segment, 0, count);
        return;
    }
    if (here.holds != 0 || here.allocating) {
        // Queued as the one-segment record it would have been.
        std::size_t bytes = wire_bytes<wire::insert_direct_header> + wire_bytes<wire::segment>;
        for (std::size_t index = 0; index < count; ++index)
            bytes += string_bytes(segment.keys[index]) + string_bytes(segment.values[index]);
        std::string record(bytes, '\0');
        byte_writer out(reinterpret_cast<std::byte*>(record.data()), bytes);
        out.record(wire::insert_direct_header{segment.level_byte, segment.hops, segment.caller, segment.batch, 1,
                                              segment.expires})
            .record(wire::segment{id.slot, id.generation, segment.first, static_cast<std::uint32_t>(count)});
        for (std::size_t index = 0; index < count; ++index) {
            put_string(out, segment.keys[index]);
            put_string(out, segment.values[index]);
        }
        out.finish();
        if (hold_if_busy(here, h.insert_direct, source, record, level))
            return;
    }
    auto& stats = m_shared.stats;
    if (id == m_shared.head)
        ++stats.head_visits;
    if (here.earliest_expiry != 0)
        purge_expired(here, m_shared.clock_now());
    // Keys below the separator (a shortcut to a node that starts above them):
    // from the head.  Keys at or above the first link the walk would take:
    // on, a segment per next node.  The rest are this node's.
    const std::string_view separator = here.separator;
    std::size_t low = 0;
    while (low < count && segment.keys[low] < separator)
        ++low;
    if (low > 0) {
        ++stats.hops;
        send_segment(m_shared.head, static_cast<std::uint8_t>(m_shared.top_level() | free),
                     skiplist_shared::next_hops(segment.hops) | (shortcut ? wire::route_fell_back : 0), segment, 0,
                     low);
    }
    const int top = free ? static_cast<int>(here.tower.size()) - 1 : level;
    std::size_t high = low;
    while (high < count && forward_level(here, segment.keys[high], top, false) < 0)
        ++high;
    // The others go on a segment per next node: the tower's next hop, or a
    // node further on that this rank's directory knows (a jump, marked as a
    // shortcut: a gone node or one above the key sends the keys to the head).
    // The keys of a batch are distinct and their caller waits for all of them,
    // so their ways need not agree with a point operation's.  Not after a
    // shortcut failed on the way (a stale entry would send them back to it).
    const bool jumps = (segment.hops & wire::route_fell_back) == 0;
    struct hop {
        skiplist_node_id to;
        std::uint8_t level_byte;
        bool operator==(const hop&) const = default;
    };
    const auto next_hop = [&](std::string_view key) {
        const int next = forward_level(here, key, top, false);
        const std::string_view floor =
            std::string_view(here.tower[static_cast<std::size_t>(next)].separator);
        if (jumps) {
            const skiplist_node_id jump = m_directory.after(key, floor);
            if (!jump.null() && !(jump == id))
                return hop{jump, static_cast<std::uint8_t>(m_shared.top_level() | free | wire::route_shortcut)};
        }
        return hop{here.tower[static_cast<std::size_t>(next)].to, static_cast<std::uint8_t>(next | free)};
    };
    // The keys are sorted and their hops advance with them (the tower's level
    // and the directory's entry only grow with the key), so a hop's keys are
    // one run, found by a galloping then binary search: O(log run) lookups per
    // hop, not one per key (issue 43: a batch of ascending keys entering at a
    // former tail passed every key through the directory, 13 % of the CPU).
    // Were a key inside a run to have another hop, the run's is still a node
    // at or before it (its separator is at most the run's first key).
    for (std::size_t from = high; from < count;) {
        const hop next = next_hop(segment.keys[from]);
        std::size_t same = from + 1;  // keys[from, same) share `next`
        std::size_t step = 1;
        std::size_t until = count;    // the first key known to differ (or count)
        while (same + step - 1 < count) {
            if (!(next_hop(segment.keys[same + step - 1]) == next)) {
                until = same + step - 1;
                break;
            }
            same += step;
            step *= 2;
        }
        while (same < until) {  // binary search in [same, until)
            const std::size_t mid = same + (until - same) / 2;
            if (next_hop(segment.keys[mid]) == next)
                same = mid + 1;
            else
                until = mid;
        }
        until = same;
        ++stats.hops;
        send_segment(next.to, next.level_byte, skiplist_shared::next_hops(segment.hops), segment, from, until);
        from = until;
    }
    for (std::size_t index = low; index < high; ++index)
        items.push_back(direct_item{segment.keys[index], segment.values[index], segment.caller, segment.batch,
                                    segment.first + static_cast<std::uint32_t>(index), segment.expires});
}

void skiplist_nodes::merge_items(skiplist_node_id id, const std::vector<direct_item>& items,
                                 direct_answers& answers) {
    // One pass: the run and the items (in key order; a key may repeat, then
    // in arrival order), merged.
    node& here = m_nodes[id.slot];
    auto& stats = m_shared.stats;
    sorted_run& run = here.run;
    std::size_t new_bytes = 0;
    for (const direct_item& item : items)
        new_bytes += sorted_run::entry_header_bytes + item.key.size() + item.value.size();
    sorted_run merged;
    merged.reserve(run.size() + items.size(), run.packed_bytes() + new_bytes);
    std::vector<std::uint8_t> fresh(items.size(), 0);
    const std::size_t old_size = run.size();
    const bool appended = old_size == 0 || run.key(old_size - 1) < items.front().key;
    std::size_t at = 0;
    for (std::size_t which = 0; which < items.size(); ++which) {
        const direct_item& item = items[which];
        if (which > 0 && items[which - 1].key == item.key) {
            // The same key again (another caller's, queued later): replaces.
            stats.payload_bytes -= merged.value(merged.size() - 1).size();
            stats.payload_bytes += item.value.size();
            merged.assign(merged.size() - 1, item.value, item.expires);
            continue;
        }
        const std::uint64_t prefix = sorted_run::prefix_of(item.key);
        while (at < old_size && sorted_run::compare(run.key(at), run.prefix(at), item.key, prefix) < 0) {
            merged.push_back(run.key(at), run.value(at), run.expires(at));
            ++at;
        }
        if (at < old_size && run.holds_at(at, item.key, prefix)) {
            stats.payload_bytes -= run.value(at).size();
            stats.payload_bytes += item.value.size();
            merged.push_back(item.key, item.value, item.expires);
            ++at;
            continue;
        }
        merged.push_back(item.key, item.value, item.expires);
        stats.payload_bytes += item.key.size() + item.value.size();
        ++stats.entries;
        fresh[which] = 1;
    }
    for (; at < old_size; ++at)
        merged.push_back(run.key(at), run.value(at), run.expires(at));
    run = std::move(merged);
    for (const direct_item& item : items)  // (a batch's keys share one deadline: one comparison per batch)
        if (item.expires != 0 && (here.earliest_expiry == 0 || item.expires < here.earliest_expiry))
            here.earliest_expiry = item.expires;
    stats.handled += items.size();
    here.count_requests(items.size());
    const bool splits = run.size() > m_shared.config.granularity;
    for (std::size_t which = 0; which < items.size(); ++which) {
        const direct_item& item = items[which];
        if (!fresh[which])
            answers.add(item.caller, item.batch, item.index, skiplist_status::replaced);
        else if (!splits)
            answers.add(item.caller, item.batch, item.index, skiplist_status::stored);
    }
    if (!splits)
        return;
    // The fresh keys are answered once the split is decided.
    auto bulk = std::make_unique<skiplist_bulk_split>();
    for (std::size_t which = 0; which < items.size(); ++which) {
        if (!fresh[which])
            continue;
        const direct_item& item = items[which];
        bulk->answers.push_back({item.caller, item.batch, item.index});
        bulk->keys.append(item.key);
        bulk->key_ends.push_back(static_cast<std::uint32_t>(bulk->keys.size()));
    }
    here.bulk = std::move(bulk);
    m_structure->start_bulk_split(here, id, appended);
}

// ---------------------------------------------------------------------------
// Bulk splits
// ---------------------------------------------------------------------------

std::string skiplist_structure::list_full_message() const { return m_shared.list_full_message(); }

void skiplist_structure::start_bulk_split(node& here, skiplist_node_id id, bool appended) {
    const auto& config = m_shared.config;
    const std::size_t size = here.run.size();
    const std::size_t granularity = config.granularity;
    // Keys that all came after the run's last (ascending inserts) fill the
    // pieces: nothing will land between them.  Otherwise pieces of about 3/4 G
    // (room for inserts before the next split), each within one record.
    std::size_t target = granularity;
    if (!appended) {
        const std::size_t fill = std::max<std::size_t>(1, granularity * 3 / 4);
        const std::size_t pieces = (size + fill - 1) / fill;
        target = (size + pieces - 1) / pieces;
    }
    auto& bulk = *here.bulk;
    cut_pieces(here, target);
    bulk.full.assign(m_shared.servers.size(), 0);
    here.allocating = true;
    // The pieces' nodes come from the stock (and this rank's pool) at once;
    // only what the stock lacks costs a reservation round trip.
    if (!take_stocked(here, id))
        finish_bulk_split(here, id);
}

// How many empty nodes a rank keeps granted on each other server: a budget of
// 1024 per rank split over the other servers, at least 4 and at most 256 each
// (256 at 2-5 servers, 68 at 16, 4 from 257 on); it asks for more below 3/4.
// A server is asked only once a split of this rank drew from it (m_stock_asked
// starts at 3, "not wanted yet"), so a rank that never splits asks for nothing
// and a rank's stocks stay within the budget whatever the server count.
constexpr std::size_t stock_budget = 1024, stock_least = 4, stock_most = 256;
constexpr std::uint8_t stock_unwanted = 3;

static std::size_t stock_target(std::size_t servers) {
    return std::clamp<std::size_t>(stock_budget / std::max<std::size_t>(1, servers - 1), stock_least, stock_most);
}

// The most nodes one stock grant names (its reply is one record).
static std::size_t stock_grant_limit(const skiplist_shared& shared) {
    const std::size_t room = shared.engine->max_record_bytes() - wire_bytes<skiplist_wire::bulk_reserved>;
    return std::max<std::size_t>(1, room / 8);
}

bool skiplist_structure::take_stocked(node& here, skiplist_node_id id) {
    auto& bulk = *here.bulk;
    const std::size_t needed = bulk.cuts.size() - 2;
    const std::size_t servers = m_shared.servers.size();
    if (m_stock.size() != servers) {
        m_stock.assign(servers, {});
        m_stock_asked.assign(servers, stock_unwanted);
    }
    // Round robin from the next server, as request_reservations places them
    // (the pieces stay balanced): this rank's own node at once, another's
    // from the stock, and what a stock lacks asked for (one request per rank).
    std::vector<std::uint32_t> missing(servers, 0);
    const std::size_t start = m_shared.server_index < 0 ? 0 : static_cast<std::size_t>(m_shared.server_index) + 1;
    for (std::size_t piece = 0; piece < needed; ++piece) {
        const std::size_t which = (start + m_placement_counter++) % servers;
        skiplist_node_id got{};
        if (static_cast<int>(which) == m_shared.server_index) {
            got = m_nodes.reserve_local();
        } else if (m_stock_asked[which] == stock_unwanted) {
            m_stock_asked[which] = 0;  // (wanted from now on: replenish_stock asks it)
        } else if (!m_stock[which].empty()) {
            got = m_stock[which].back();
            m_stock[which].pop_back();
        }
        if (got.null())
            ++missing[which];
        else
            bulk.granted.push_back(got);
    }
    // Every reply counted before the first request leaves (a send may serve
    // records meanwhile, a reply among them).
    for (std::size_t which = 0; which < servers; ++which)
        bulk.outstanding += missing[which] != 0;
    const bool waits = bulk.outstanding != 0;
    for (std::size_t which = 0; which < servers; ++which)
        if (missing[which] != 0)
            m_shared.send(m_shared.servers[which], m_shared.handlers.bulk_reserve,
                          wire::bulk_reserve{id.rank, id.slot, id.generation, missing[which]});
    replenish_stock();
    return waits;
}

void skiplist_structure::replenish_stock() {
    if (m_stock_closed)
        return;
    const std::size_t target = stock_target(m_stock.size());
    for (std::size_t which = 0; which < m_stock.size(); ++which) {
        if (static_cast<int>(which) == m_shared.server_index || m_stock_asked[which] != 0 ||
            m_stock[which].size() >= target * 3 / 4)
            continue;
        m_stock_asked[which] = 1;
        const std::size_t want = std::min<std::size_t>(target - m_stock[which].size(), stock_grant_limit(m_shared));
        m_shared.send(m_shared.servers[which], m_shared.handlers.bulk_reserve,
                      wire::bulk_reserve{m_shared.rank(), wire::no_slot, 0, static_cast<std::uint32_t>(want)});
    }
}

void skiplist_structure::close_stock() {
    m_stock_closed = true;
    // Taken out before any is sent: a send may serve records meanwhile (when
    // the send queue is full), and a split among them takes from the stock.
    std::vector<skiplist_node_id> spares;
    for (std::size_t which = 0; which < m_stock.size(); ++which) {
        spares.insert(spares.end(), m_stock[which].begin(), m_stock[which].end());
        m_stock[which].clear();
        if (m_stock_asked[which] == 2)
            m_stock_asked[which] = 0;  // (asked again after the flush)
    }
    for (const skiplist_node_id& spare : spares)
        m_shared.send(spare.rank, m_shared.handlers.bulk_fill,
                      wire::bulk_fill{spare.slot, spare.generation, 0, 0, wire::bulk_release});
}

std::size_t skiplist_structure::fill_budget() const {
    // A piece's entries, with its fill record's header, separator and tower, fit one record.
    const auto& config = m_shared.config;
    return m_shared.engine->max_record_bytes() - wire_bytes<wire::bulk_fill> - 4 - config.max_key_bytes - 4 -
           std::size_t(config.max_height) * (1 + wire::node_id_bytes + 4 + config.max_key_bytes);
}

void skiplist_structure::cut_pieces(node& here, std::size_t target) {
    auto& bulk = *here.bulk;
    const std::size_t budget = fill_budget();
    bulk.cuts.assign(1, 0);
    std::size_t entries = 0, bytes = 0;
    for (std::size_t index = 0; index < here.run.size(); ++index) {
        const std::size_t entry =
            string_bytes(here.run.key(index)) + string_bytes(here.run.value(index)) + sizeof(expiry_time);
        if (entries == target || (entries > 0 && bytes + entry > budget)) {
            bulk.cuts.push_back(index);
            entries = bytes = 0;
        }
        ++entries;
        bytes += entry;
    }
    bulk.cuts.push_back(here.run.size());
}

void skiplist_structure::request_reservations(node& here, skiplist_node_id id, std::size_t needed) {
    auto& bulk = *here.bulk;
    const std::size_t servers = m_shared.servers.size();
    std::vector<std::uint32_t> counts(servers, 0);
    // Round robin from the next server (as single splits place their node),
    // over the servers that have not run out of nodes.
    const std::size_t start = m_shared.server_index < 0 ? 0 : static_cast<std::size_t>(m_shared.server_index) + 1;
    for (std::size_t placed = 0; placed < needed;) {
        const std::size_t which = (start + m_placement_counter++) % servers;
        if (bulk.full[which] != 0)
            continue;
        ++counts[which];
        ++placed;
    }
    // Every reply counted before the first request leaves (a send may serve
    // records meanwhile, a reply among them).
    for (std::size_t which = 0; which < servers; ++which)
        bulk.outstanding += counts[which] != 0;
    for (std::size_t which = 0; which < servers; ++which)
        if (counts[which] != 0)
            m_shared.send(m_shared.servers[which], m_shared.handlers.bulk_reserve,
                          wire::bulk_reserve{id.rank, id.slot, id.generation, counts[which]});
}

void skiplist_structure::handle_bulk_reserve(int source, std::string_view record) {
    const auto request =
        read_record<wire::bulk_reserve>(reinterpret_cast<const std::byte*>(record.data()), record.size());
    if (request.origin_rank != source || request.count == 0 || request.count > (1u << 24))
        throw decode_error("mpidict: skiplist_map reservation record with a bad origin or count");
    std::vector<skiplist_node_id> granted;
    // A stock request (no splitting node) is granted only with room to spare.
    const bool stock = request.origin_slot == wire::no_slot;
    const std::size_t limit =
        stock ? std::min<std::size_t>(request.count, stock_grant_limit(m_shared)) : request.count;
    while (granted.size() < limit && (!stock || m_nodes.may_stock(request.count))) {
        const skiplist_node_id fresh = m_nodes.reserve_local();
        if (fresh.null())
            break;
        granted.push_back(fresh);
    }
    const std::size_t bytes = wire_bytes<wire::bulk_reserved> + granted.size() * 8;
    byte_writer out(m_shared.engine->reserve(source, m_shared.handlers.bulk_reserved, bytes), bytes);
    out.record(wire::bulk_reserved{request.origin_slot, request.origin_generation, request.count,
                                   static_cast<std::uint32_t>(granted.size())});
    for (const auto& fresh : granted)
        out.put(fresh.slot).put(fresh.generation);
    out.finish();
}

void skiplist_structure::handle_bulk_reserved(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto reply = read_record<wire::bulk_reserved>(in);
    const auto server = std::find(m_shared.servers.begin(), m_shared.servers.end(), source);
    if (reply.slot == wire::no_slot) {
        // Nodes for the stock.
        const std::size_t which = static_cast<std::size_t>(server - m_shared.servers.begin());
        if (server == m_shared.servers.end() || which >= m_stock.size() || m_stock_asked[which] != 1 ||
            reply.granted > reply.asked || in.remaining() != std::size_t(reply.granted) * 8)
            throw decode_error("mpidict: skiplist_map stock reply from a rank that was not asked, or malformed");
        m_stock_asked[which] = reply.granted == 0 ? 2 : 0;
        for (std::uint32_t index = 0; index < reply.granted; ++index) {
            skiplist_node_id fresh;
            fresh.rank = source;
            fresh.slot = in.read<std::uint32_t>();
            fresh.generation = in.read<std::uint32_t>();
            if (m_stock_closed)  // (a flush began meanwhile: back at once)
                m_shared.send(fresh.rank, m_shared.handlers.bulk_fill,
                              wire::bulk_fill{fresh.slot, fresh.generation, 0, 0, wire::bulk_release});
            else
                m_stock[which].push_back(fresh);
        }
        return;
    }
    const skiplist_node_id id{m_shared.rank(), reply.slot, reply.generation};
    node& here = m_nodes.addressed(id, "reservation reply");
    if (!here.bulk || here.bulk->outstanding == 0 || reply.granted > reply.asked ||
        in.remaining() != std::size_t(reply.granted) * 8 || server == m_shared.servers.end())
        throw decode_error("mpidict: skiplist_map reservation reply for a node that did not ask, or malformed");
    auto& bulk = *here.bulk;
    for (std::uint32_t index = 0; index < reply.granted; ++index) {
        skiplist_node_id fresh;
        fresh.rank = source;
        fresh.slot = in.read<std::uint32_t>();
        fresh.generation = in.read<std::uint32_t>();
        bulk.granted.push_back(fresh);
    }
    if (reply.granted < reply.asked)
        bulk.full[static_cast<std::size_t>(server - m_shared.servers.begin())] = 1;
    if (--bulk.outstanding != 0)
        return;
    const std::size_t needed = bulk.cuts.size() - 2;
    if (bulk.granted.size() >= needed) {
        finish_bulk_split(here, id);
        return;
    }
    if (std::find(bulk.full.begin(), bulk.full.end(), 0) != bulk.full.end()) {
        request_reservations(here, id, needed - bulk.granted.size());
        return;
    }
    if (!trim_bulk_split(here, id))
        refuse_bulk_split(here, id);
}

bool skiplist_structure::trim_bulk_split(node& here, skiplist_node_id id) {
    // Too few nodes for every piece: keep every entry the run held before the
    // merge and as many fresh keys (in key order) as the granted nodes and
    // this one hold at G each; refuse the rest.
    auto& bulk = *here.bulk;
    const std::size_t granularity = m_shared.config.granularity;
    const std::size_t capacity = (bulk.granted.size() + 1) * granularity;
    const std::size_t fresh = bulk.answers.size();
    const std::size_t old = here.run.size() - fresh;
    if (bulk.granted.empty() || capacity <= old)
        return false;
    std::size_t keep = std::min(fresh, capacity - old);
    // The fresh keys from `keep` on (in key order) are refused.
    std::vector<std::uint8_t> refused(fresh, 0);
    std::vector<std::size_t> order(fresh);
    for (std::size_t which = 0; which < fresh; ++which)
        order[which] = which;
    const auto key_of = [&](std::size_t which) {
        const std::uint32_t begin = which == 0 ? 0 : bulk.key_ends[which - 1];
        return std::string_view(bulk.keys.data() + begin, bulk.key_ends[which] - begin);
    };
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return key_of(a) < key_of(b); });
    for (std::size_t rank = keep; rank < fresh; ++rank)
        refused[order[rank]] = 1;
    // Cut what stays into pieces of at most G (and one record each).
    const std::size_t budget = fill_budget();
    std::vector<std::size_t> kept_positions;
    for (std::size_t which = 0; which < fresh; ++which)
        if (refused[which]) {
            const std::size_t position = here.run.lower_bound(key_of(which));
            if (here.run.holds_at(position, key_of(which)))
                kept_positions.push_back(position);  // (positions of refused keys, really)
        }
    std::sort(kept_positions.begin(), kept_positions.end());
    std::size_t pieces = 1, entries = 0, bytes = 0, skip = 0;
    for (std::size_t index = 0; index < here.run.size(); ++index) {
        if (skip < kept_positions.size() && kept_positions[skip] == index) {
            ++skip;
            continue;
        }
        const std::size_t entry =
            string_bytes(here.run.key(index)) + string_bytes(here.run.value(index)) + sizeof(expiry_time);
        if (entries == granularity || (entries > 0 && bytes + entry > budget)) {
            ++pieces;
            entries = bytes = 0;
        }
        ++entries;
        bytes += entry;
    }
    if (pieces > bulk.granted.size() + 1)
        return false;
    // Take the refused keys out and answer them; cut again.
    auto& stats = m_shared.stats;
    const std::string message = list_full_message();
    skiplist_nodes::direct_answers answers(m_shared);
    std::vector<skiplist_bulk_split::pending> still;
    std::string still_keys;
    std::vector<std::uint32_t> still_ends;
    for (std::size_t which = 0; which < fresh; ++which) {
        const std::string_view key = key_of(which);
        if (!refused[which]) {
            still.push_back(bulk.answers[which]);
            still_keys.append(key);
            still_ends.push_back(static_cast<std::uint32_t>(still_keys.size()));
            continue;
        }
        const std::size_t position = here.run.lower_bound(key);
        if (here.run.holds_at(position, key)) {
            stats.payload_bytes -= here.run.key(position).size() + here.run.value(position).size();
            --stats.entries;
            here.run.erase(position, position + 1);
        }
        ++stats.list_full;
        answers.add(bulk.answers[which].caller, bulk.answers[which].slot, bulk.answers[which].index,
                    skiplist_status::full, message);
    }
    answers.send();
    bulk.answers = std::move(still);
    bulk.keys = std::move(still_keys);
    bulk.key_ends = std::move(still_ends);
    cut_pieces(here, granularity);
    // Nodes granted beyond the pieces go back.
    while (bulk.granted.size() > bulk.cuts.size() - 2) {
        const skiplist_node_id spare = bulk.granted.back();
        bulk.granted.pop_back();
        m_shared.send(spare.rank, m_shared.handlers.bulk_fill,
                      wire::bulk_fill{spare.slot, spare.generation, 0, 0, wire::bulk_release});
    }
    finish_bulk_split(here, id);
    return true;
}

// The pieces' links (issue 43; design B of stop 68 for the levels above the prefix).
// On the levels this node is linked on (the prefix), each level's pieces link
// one another, the first from this node, the last the old successor (a marker
// holds it, as in a single split).  On each level L above the prefix, the pieces
// taller than L link one another too, in the fill, and the last ends the level
// (a null link, set): every piece's tower is whole when it is filled.  One
// link_up per level then links the level's first piece after its predecessor
// P, found by the walk, and P's old successor S goes to the level's last piece
// (set_links, linked = 2).  Before, every piece taller than the prefix sent its
// own link_up per level, and near the tail those walks queued at node after
// node holding for the ordering of a link it had just got (stop 64: 1.06M
// held link_up records for 1M ascending keys).
//
// Why the order of requests holds:
// - A piece handles nothing before its fill (reserved, it holds), so none of
//   the links the fill gives it replaces a way it sent anything: no marker.
// - P's new link to the first piece is a link change as any other
//   (order_new_link: the first piece holds for a marker along the old way and
//   one through S).  The old way from P to any key at or after the first
//   piece's separator passes through it if it is on every level below L from
//   the nodes before it: the levels are linked bottom up, the link_up of level
//   L + 1 sent by P_L only once it linked level L (the plan the record
//   carries), and below the prefix the fill links it; a piece before it is
//   never taller than L, so no chain link skips it.
// - The last piece ends the level until S reaches it; meanwhile what it
//   forwards goes down a level (a route, only longer).  Taking S is a new link
//   (order_new_link, as set_links always did).  If a node was linked after the
//   last piece meanwhile, the record walks on along the level to the node that
//   still ends it before S; one at or after S is left as it is (S is then
//   passed over on that level: every link still leads forward).
// - A walk that gives up leaves the level's chain unreachable from before it
//   and the levels above unlinked from outside; every tower stays set, so an
//   emptied piece is still unlinked at a flush.
// total_order keeps single splits (no bulk path), so its stamps are untouched.
void skiplist_structure::finish_bulk_split(node& here, skiplist_node_id id) {
    const auto& config = m_shared.config;
    auto& stats = m_shared.stats;
    auto& bulk = *here.bulk;
    const std::size_t pieces = bulk.cuts.size() - 1;  // (1: what stayed fits this node)
    // The levels linked after this node: a prefix of its tower (as in start_split).
    std::size_t prefix = 0;
    while (prefix < here.tower.size() && here.tower[prefix].set)
        ++prefix;
    std::vector<unsigned> height(pieces, 0), direct(pieces, 0);
    for (std::size_t piece = 1; piece < pieces; ++piece) {
        height[piece] = draw_height();
        direct[piece] = std::min<unsigned>(height[piece], static_cast<unsigned>(prefix));
    }
    std::vector<skiplist_node_id> ids(pieces);
    ids[0] = id;
    for (std::size_t piece = 1; piece < pieces; ++piece)
        ids[piece] = bulk.granted[piece - 1];
    // Links from the last piece back: `upcoming[l]` is what the next member
    // of level l (going backwards) links to; it starts as this node's old link.
    std::vector<link> upcoming(here.tower.begin(), here.tower.begin() + static_cast<std::ptrdiff_t>(prefix));
    // The levels above the prefix (design B, issue 43 stop 68): `upper[l - prefix]`
    // is what the next member of level l (going backwards) links to, null
    // after the last; `last[l - prefix]` is that last member.
    // Only at the list's end (this node ends level 0: ascending inserts, where
    // the walks queued) and where it saves link_ups (two pieces or more taller
    // than the prefix); elsewhere each piece keeps the single split's way (its
    // own link_up per level, its levels above the prefix unset until linked).
    // With the chain for every split with two taller pieces, uniform
    // insert_many fell to 0.330 / 0.336 / 0.338x the btree from 0.363 / 0.402 /
    // 0.376x (same binary, alternated, load 3.7-3.8); why was not found.
    unsigned top = static_cast<unsigned>(prefix);
    std::size_t taller = 0;
    for (std::size_t piece = 1; piece < pieces; ++piece) {
        top = std::max(top, height[piece]);
        taller += height[piece] > prefix ? 1 : 0;
    }
    const bool at_end = prefix > 0 && upcoming[0].to.null();
    const bool chained = taller >= 2 && at_end;
    if (!chained)
        top = static_cast<unsigned>(prefix);
    std::vector<link> upper(top - prefix, link{std::string(), skiplist_node_id{}, true});
    std::vector<std::size_t> last(top - prefix, 0);
    std::vector<std::vector<link>> links(pieces);
    std::vector<std::uint32_t> holds(pieces, 0);
    for (std::size_t piece = pieces - 1; piece >= 1 && piece < pieces; --piece) {
        links[piece].assign(upcoming.begin(), upcoming.begin() + direct[piece]);
        const link member{std::string(here.run.key(bulk.cuts[piece])), ids[piece], true};
        for (unsigned level = 0; level < direct[piece]; ++level) {
            // The last member of the level links the old successor: requests
            // this node sent it directly must come first (a marker).
            if (upcoming[level].to == here.tower[level].to && !upcoming[level].to.null() &&
                !config.unordered_for_testing) {
                ++holds[piece];
                send_marker(upcoming[level].to.rank, ids[piece]);
            }
            upcoming[level] = member;
        }
        for (unsigned level = static_cast<unsigned>(prefix); level < std::min(height[piece], top); ++level) {
            if (upper[level - prefix].to.null())
                last[level - prefix] = piece;
            links[piece].push_back(upper[level - prefix]);
            upper[level - prefix] = member;
        }
    }
    for (std::size_t piece = 1; piece < pieces; ++piece) {
        const std::string_view separator = here.run.key(bulk.cuts[piece]);
        std::size_t bytes = wire_bytes<wire::bulk_fill> + string_bytes(separator) + 4;
        for (const link& next : links[piece])
            bytes += 1 + wire::node_id_bytes + string_bytes(next.separator);
        for (std::size_t index = bulk.cuts[piece]; index < bulk.cuts[piece + 1]; ++index)
            bytes += string_bytes(here.run.key(index)) + string_bytes(here.run.value(index)) + sizeof(expiry_time);
        const skiplist_node_id to = ids[piece];
        byte_writer out(m_shared.engine->reserve(to.rank, m_shared.handlers.bulk_fill, bytes), bytes);
        out.record(wire::bulk_fill{to.slot, to.generation, holds[piece], static_cast<std::uint8_t>(height[piece]),
                                   static_cast<std::uint8_t>(links[piece].size())});
        put_string(out, separator);
        for (unsigned level = 0; level < links[piece].size(); ++level) {
            out.put(static_cast<std::uint8_t>(level));
            put_node_id(out, links[piece][level].to);
            put_string(out, links[piece][level].separator);
        }
        out.put(static_cast<std::uint32_t>(bulk.cuts[piece + 1] - bulk.cuts[piece]));
        for (std::size_t index = bulk.cuts[piece]; index < bulk.cuts[piece + 1]; ++index) {
            put_string(out, here.run.key(index));
            put_string(out, here.run.value(index));
            out.put(here.run.expires(index));
        }
        out.finish();
    }
    // This node links the first member of each level and keeps the first piece.
    for (std::size_t level = 0; level < prefix; ++level)
        here.tower[level] = upcoming[level];
    // One link_up per level above the prefix, for the level's first member;
    // the predecessor it finds hands its old successor to the level's last.
    if (!chained) {
        for (std::size_t piece = 1; piece < pieces; ++piece)
            if (height[piece] > direct[piece])
                send_link_up(ids[piece], here.run.key(bulk.cuts[piece]), direct[piece]);
    } else if (top > prefix) {
        bulk_plan plan;
        for (unsigned level = static_cast<unsigned>(prefix) + 1; level < top; ++level)
            plan.levels.push_back({upper[level - prefix].to, upper[level - prefix].separator, ids[last[level - prefix]]});
        send_link_up(upper[0].to, upper[0].separator, static_cast<unsigned>(prefix), ids[last[0]], plan.bytes());
    }
    for (std::size_t index = bulk.cuts[1]; index < here.run.size(); ++index) {
        stats.payload_bytes -= here.run.key(index).size() + here.run.value(index).size();
        --stats.entries;
    }
    here.run.erase(bulk.cuts[1], here.run.size());
    here.run.shrink_to_fit();
    stats.splits += pieces - 1;
    std::unique_ptr<skiplist_bulk_split> done = std::move(here.bulk);
    here.allocating = false;
    skiplist_nodes::direct_answers answers{m_shared};
    for (const auto& pending : done->answers)
        answers.add(pending.caller, pending.slot, pending.index, skiplist_status::stored);
    answers.send();
    m_nodes.release_held(id);
}

void skiplist_structure::refuse_bulk_split(node& here, skiplist_node_id id) {
    auto& stats = m_shared.stats;
    std::unique_ptr<skiplist_bulk_split> done = std::move(here.bulk);
    for (const auto& fresh : done->granted)
        m_shared.send(fresh.rank, m_shared.handlers.bulk_fill,
                      wire::bulk_fill{fresh.slot, fresh.generation, 0, 0, wire::bulk_release});
    // Nothing stored is lost: the run goes back to what it held before the
    // merge (with the values it replaced); the fresh keys are refused.
    const std::string message = list_full_message();
    skiplist_nodes::direct_answers answers{m_shared};
    std::uint32_t begin = 0;
    for (std::size_t which = 0; which < done->answers.size(); ++which) {
        const std::string_view key(done->keys.data() + begin, done->key_ends[which] - begin);
        begin = done->key_ends[which];
        const std::size_t position = here.run.lower_bound(key);
        if (here.run.holds_at(position, key)) {
            stats.payload_bytes -= here.run.key(position).size() + here.run.value(position).size();
            --stats.entries;
            here.run.erase(position, position + 1);
        }
        ++stats.list_full;
        const auto& pending = done->answers[which];
        answers.add(pending.caller, pending.slot, pending.index, skiplist_status::full, message);
    }
    answers.send();
    here.allocating = false;
    m_nodes.release_held(id);
}

void skiplist_structure::handle_bulk_fill(int, std::string_view record) {
    const auto& config = m_shared.config;
    byte_reader in = reader_of(record);
    const auto fill = read_record<wire::bulk_fill>(in);
    const skiplist_node_id id{m_shared.rank(), fill.slot, fill.generation};
    node& created = m_nodes.addressed(id, "bulk fill");
    if (!created.reserved)
        throw decode_error("mpidict: skiplist_map bulk fill for a node that is not reserved");
    if (fill.links == wire::bulk_release) {
        // The split was refused: nothing can have reached this node (no link
        // and no directory entry names it).
        if (created.holding_records() || !in.empty())
            throw decode_error("mpidict: skiplist_map released a reserved node that holds records");
        m_nodes.free_slot(id.slot);
        return;
    }
    const std::string_view separator = read_string(in);
    if (fill.height < 1 || fill.height > config.max_height || fill.links > fill.height || separator.empty())
        throw decode_error("mpidict: skiplist_map bulk fill with a bad height, link count or separator");
    created.separator = std::string(separator);
    created.tower.assign(fill.height, link{});
    for (unsigned index = 0; index < fill.links; ++index) {
        const unsigned level = in.read<std::uint8_t>();
        const skiplist_node_id to = read_node_id(in);
        const std::string_view next_separator = read_string(in);
        if (level != index || (!to.null() && !m_shared.valid_rank(to.rank)))
            throw decode_error("mpidict: skiplist_map bulk fill links levels out of order or a bad node");
        created.tower[level] = link{std::string(next_separator), to, true};
    }
    const auto entries = in.read<std::uint32_t>();
    if (entries == 0 || entries > config.granularity)
        throw decode_error("mpidict: skiplist_map bulk fill carries no entries or more than a node holds");
    created.run.reserve(entries, in.remaining());
    auto& stats = m_shared.stats;
    read_run(in, entries, created, true, stats, "bulk fill");
    if (!in.empty())
        throw decode_error("mpidict: skiplist_map bulk fill has trailing bytes");
    created.holds += static_cast<int>(fill.holds);
    created.reserved = false;
    created.allocating = false;
    m_directory.learn(separator, id);
    m_nodes.release_held(id);
}

}  // namespace mpidict::detail
