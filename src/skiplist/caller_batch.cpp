// The caller's batches (find_many, insert_many): point records numbered by the
// key's index, and direct-find records gathered per destination rank.  See
// skiplist_caller.hpp.

#include "mpidict/detail/skiplist_caller.hpp"

#include <algorithm>
#include <cstring>

#include "mpidict/error.hpp"

namespace mpidict::detail {

namespace {

// find_split records (mode total_order): the header's bytes before the keys,
// and how many chunks a window holds (so several are in flight at once).
constexpr std::size_t split_record_bytes =
    wire_bytes<skiplist_wire::route_header> + wire_bytes<skiplist_wire::find_split_header>;
// A chunk holds up to W keys (one record at most), and a total_order
// find_many keeps up to split_window_scale * W keys in flight: a chunk's
// pieces take ~log(N/G) hops one after another, each a message (and, on a
// busy machine, a wait for the next rank to be scheduled), so only many keys
// in flight hide that latency; chunks make them cheap (one record at the head
// per chunk, about one per node touched below).
constexpr std::size_t split_window_scale = 16;

}  // namespace

void skiplist_caller::begin_batch(skiplist_batch_sink& sink, std::size_t keys, bool finds) {
    if (m_batch)
        throw error("mpidict: skiplist_map find_many/insert_many called while another one is running");
    // Earlier operations of this caller first (per-key order, see send_point;
    // and in mode sequential their replies, in issue order).
    release_async();
    m_shared.engine->wait_until([this] { return idle(); });
    m_batch = &sink;
    m_batch_expires = finds ? 0 : m_next_batch_expires;
    m_next_batch_expires = 0;
    ++m_batch_id;
    // Finds alone cannot reorder one another (begin_batch waited for what came
    // before), so in the shortcut modes each goes straight to its node.  The
    // broken test modes keep the ordinary records they were built to break.
    m_batch_direct = finds && direct_finds();
    // Inserts in the same modes go as sorted runs per node (direct-insert
    // records), merged by each node in one pass (src/skiplist/bulk.cpp).
    m_batch_insert = !finds && direct_finds();
    // Mode total_order: finds go to the head in sorted chunks that split over
    // the towers (send_split_chunk).  The broken and unordered test modes keep
    // the point records they were built to break.
    m_batch_split = finds && in_issue_order();
    if (m_batch_split) {
        m_split_chunk = std::max<std::size_t>(1, m_shared.config.caller_window);
        m_split_keys.clear();
        m_split_bytes.clear();
    }
    if (m_batch_direct || m_batch_insert) {
        m_direct.assign(static_cast<std::size_t>(m_shared.engine->size()), direct_record{});
        m_direct_limit = direct_record_limit();
    }
    // A flat copy of the directory pays for itself when the batch is not much
    // smaller than the directory (copying costs about as much as a few lookups
    // in the std::map per entry).
    if (m_batch_direct && !m_directory.flat_current() && keys >= m_directory.size() / 4 && !m_directory.empty())
        m_directory.rebuild_flat();
    m_batch_flat = m_batch_direct && m_directory.flat_current();
}

std::size_t skiplist_caller::batch_window_scale(bool finds) const {
    return finds && in_issue_order() ? split_window_scale : 1;
}

bool skiplist_caller::direct_finds() const {
    return m_mode != skiplist_consistency::total_order && uses_shortcuts() &&
           !m_shared.config.break_consistency_for_testing;
}

void skiplist_caller::end_batch() {
    m_batch = nullptr;
    m_batch_expires = m_next_batch_expires = 0;
    m_direct.clear();  // (what a batch that threw left unsent is dropped)
    m_direct_open.clear();
    m_batch_direct = m_batch_flat = m_batch_insert = m_batch_split = false;
    m_split_keys.clear();
    m_split_bytes.clear();
}

void skiplist_caller::send_batch_point(skiplist_op kind, std::uint32_t index, std::string_view key,
                                       std::string_view value) {
    const std::uint32_t slot = batch_slot();
    if (m_batch_split && kind == skiplist_op::find) {
        // Into the chunk; it leaves when full (keys, or bytes: one record) and
        // when the batch closes its records (close_batch_record).
        const std::size_t entry = 4 + string_bytes(key);
        if (!m_split_keys.empty() && split_record_bytes + m_split_bytes.size() + 8 * m_split_keys.size() + entry >
                                          m_shared.engine->max_record_bytes())
            send_split_chunk();
        m_split_keys.push_back(split_key{index, static_cast<std::uint32_t>(m_split_bytes.size()),
                                         static_cast<std::uint32_t>(key.size())});
        m_split_bytes.append(key);
        if (m_split_keys.size() >= m_split_chunk)
            send_split_chunk();
        return;
    }
    if (m_batch_direct && kind == skiplist_op::find) {
        const skiplist_node_id to = m_batch_flat ? m_directory.flat_entry_point(key) : m_directory.entry_point(key);
        if (!(to == m_shared.head)) {
            ++m_shared.stats.shortcut_entries;
            add_direct(to, index, key, {}, false);
            return;
        }
    }
    if (m_batch_insert && kind == skiplist_op::insert) {
        const skiplist_node_id to = m_directory.entry_point(key);
        if (!(to == m_shared.head))
            ++m_shared.stats.shortcut_entries;
        add_direct(to, index, key, value, true);
        return;
    }
    // A point record like dispatch_point's: the slot says "batch" (and which),
    // the ticket is the key's index in the batch.
    const skiplist_node_id to = uses_shortcuts() ? m_directory.entry_point(key) : m_shared.head;
    const std::uint8_t level_byte = entry_level_byte(to);
    if (level_byte & wire::route_shortcut)
        ++m_shared.stats.shortcut_entries;
    const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<wire::point_header> + string_bytes(key) +
                              string_bytes(value);
    byte_writer out(m_shared.engine->reserve(to.rank, m_shared.handlers.point, bytes), bytes);
    out.record(wire::route_header{to.slot, to.generation, level_byte, 0})
        .record(wire::point_header{static_cast<std::uint8_t>(kind), m_shared.rank(), slot, index,
                                   kind == skiplist_op::insert ? m_batch_expires : 0});
    put_string(out, key);
    put_string(out, value);
    out.finish();
}

std::size_t skiplist_caller::direct_record_limit() const {
    // Long enough for a few hundred keys (a few dozen nodes' shares of a large
    // batch) and for one key of the largest size, never longer than a record
    // can be.
    // Inserts: longer (half a buffer), and one key with the largest value.
    if (m_batch_insert)
        return std::min(m_shared.engine->max_record_bytes(),
                        std::max<std::size_t>(m_shared.engine->max_record_bytes() / 2,
                                              wire_bytes<wire::insert_direct_header> + wire_bytes<wire::segment> + 8 +
                                                  m_shared.config.max_key_bytes + m_shared.config.max_value_bytes));
    return std::min(m_shared.engine->max_record_bytes(),
                    std::max<std::size_t>(16 * 1024, wire_bytes<wire::find_direct_header> +
                                                         wire_bytes<wire::segment> + 4 +
                                                         m_shared.config.max_key_bytes));
}

void skiplist_caller::add_direct(skiplist_node_id to, std::uint32_t index, std::string_view key,
                                 std::string_view value, bool inserting) {
    direct_record& record = m_direct[static_cast<std::size_t>(to.rank)];
    const std::size_t entry = string_bytes(key) + (inserting ? string_bytes(value) : 0);
    const std::size_t header = inserting ? wire_bytes<wire::insert_direct_header> : wire_bytes<wire::find_direct_header>;
    // A direct insert segment is sorted: a key not above the last one starts another.
    bool continues = record.count != 0 && record.node == to && record.next_index == index &&
                     (!inserting || std::string_view(record.segments.data() + record.last_key_at,
                                                     record.last_key_bytes) < key);
    if (header + record.segments.size() + entry +
            (continues ? 0 : wire_bytes<wire::segment>) >
        m_direct_limit) {
        send_direct_record(to.rank);
        continues = false;
    }
    if (!record.listed) {
        record.listed = true;
        m_direct_open.push_back(to.rank);
    }
    if (!continues) {
        const std::size_t at = record.segments.size();
        record.segments.resize(at + wire_bytes<wire::segment>);
        overwrite_record(reinterpret_cast<std::byte*>(record.segments.data() + at),
                         wire::segment{to.slot, to.generation, index, 0});
        record.keys_at = at + wire_bytes<wire::segment> - sizeof(std::uint32_t);  // the count, last
        ++record.count;
        record.node = to;
    }
    // The segment's key count (its last field) grows by one.
    std::uint32_t keys;
    std::memcpy(&keys, record.segments.data() + record.keys_at, sizeof keys);
    ++keys;
    std::memcpy(record.segments.data() + record.keys_at, &keys, sizeof keys);
    const std::size_t at = record.segments.size();
    record.segments.resize(at + entry);
    byte_writer out(reinterpret_cast<std::byte*>(record.segments.data() + at), entry);
    put_string(out, key);
    if (inserting)
        put_string(out, value);
    out.finish();
    record.last_key_at = at + 4;
    record.last_key_bytes = key.size();
    record.next_index = index + 1;
}

void skiplist_caller::send_direct_record(int destination) {
    direct_record& record = m_direct[static_cast<std::size_t>(destination)];
    if (record.count == 0)
        return;
    // The level byte a point record would start with (the same for every
    // node but the head), the batch, and the segments.
    if (m_batch_insert) {
        // Every segment's level byte says "shortcut" (a gone node sends its keys
        // to the head; the head itself is never gone nor above a key).
        const std::uint8_t level_byte = entry_level_byte(record.node) | wire::route_shortcut;
        const std::size_t bytes = wire_bytes<wire::insert_direct_header> + record.segments.size();
        byte_writer(m_shared.engine->reserve(destination, m_shared.handlers.insert_direct, bytes), bytes)
            .record(wire::insert_direct_header{level_byte, 0, m_shared.rank(), direct_slot(), record.count,
                                               m_sending_slot != 0 ? 0 : m_batch_expires})
            .put_bytes(record.segments)
            .finish();
    } else {
        const std::size_t bytes = wire_bytes<wire::find_direct_header> + record.segments.size();
        byte_writer(m_shared.engine->reserve(destination, m_shared.handlers.find_direct, bytes), bytes)
            .record(wire::find_direct_header{entry_level_byte(record.node), batch_slot(), record.count})
            .put_bytes(record.segments)
            .finish();
    }
    record.segments.clear();
    record.count = 0;
}

// ---------------------------------------------------------------------------
// find_many in mode total_order: sorted chunks split over the towers
// ---------------------------------------------------------------------------
//
// A chunk is the next keys of the batch in index order (at most
// m_split_chunk, and one record), sorted, and sent to the head as ONE
// find_split record.  The head handles it in one handler call, at one
// position of its order; from there the chunk splits over the towers exactly
// as a total_order range does (src/skiplist/ranges.cpp, handle_find_split):
// on each level, from the arrival level down, the keys at or above the
// successor's separator go over that link.  So the piece holding a key
// travels exactly the links a point operation on that key would travel from
// the head, and per-link FIFO order keeps it behind every operation the head
// passed on before the chunk and ahead of every one after, at every node on
// the way (holding nodes queue it like a point record: hold_if_busy).  Each
// key is therefore read as a find passing the head at the chunk's position
// would read it: the chunk is a set of reads at one position of the head's
// order, like a range.  Reads at one position commute, so they can be placed
// there in index order; chunks leave in index order over the FIFO link to the
// head, so a batch's keys are linearized in index order, after everything the
// caller issued before (begin_batch waited for it) and before everything it
// issues after (find_many returns once every key is answered): linearizable in
// head order, each caller's operations in issue order, as single finds are.
// The caller completes a chunk by key coverage: every key is answered once
// (found_split, by batch index), whichever node holds it.
// Cost: about (nodes touched + towers' inner nodes) records per chunk instead
// of ~log(N/G) records per key.

void skiplist_caller::send_split_chunk() {
    if (m_split_keys.empty())
        return;
    std::sort(m_split_keys.begin(), m_split_keys.end(), [this](const split_key& a, const split_key& b) {
        return std::string_view(m_split_bytes.data() + a.at, a.bytes) <
               std::string_view(m_split_bytes.data() + b.at, b.bytes);
    });
    const std::size_t bytes = split_record_bytes + m_split_bytes.size() + 8 * m_split_keys.size();
    byte_writer out(m_shared.engine->reserve(m_shared.head.rank, m_shared.handlers.find_split, bytes), bytes);
    out.record(skiplist_shared::route(m_shared.head, m_shared.top_level(), 0, 0))
        .record(wire::find_split_header{m_shared.rank(), batch_slot(), static_cast<std::uint32_t>(m_split_keys.size())});
    for (const split_key& key : m_split_keys) {
        out.put(key.index);
        put_string(out, std::string_view(m_split_bytes.data() + key.at, key.bytes));
    }
    out.finish();
    m_split_keys.clear();
    m_split_bytes.clear();
}

void skiplist_caller::close_batch_record() {
    if (m_batch_split)
        send_split_chunk();
    for (const int destination : m_direct_open) {
        send_direct_record(destination);
        m_direct[static_cast<std::size_t>(destination)].listed = false;
    }
    m_direct_open.clear();
}

void skiplist_caller::handle_found_direct(int, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto slot = in.read<std::uint32_t>();
    take_found(slot, in, 0);  // no hop: the node the directory named answered
}

void skiplist_caller::handle_found_split(int, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto header = read_record<wire::found_split_header>(in);
    take_found(header.slot, in, header.hops & wire::hops_mask);
}

void skiplist_caller::take_found(std::uint32_t slot, byte_reader& in, std::uint8_t hops) {
    if ((slot & batch_slot_bit) == 0)
        throw decode_error("mpidict: skiplist_map direct find answer with a bad slot");
    skiplist_batch_sink* current = m_batch && slot == batch_slot() ? m_batch : async_sink(slot);
    while (!in.empty()) {
        const auto found = read_record<wire::found>(in);
        std::string_view value;
        if (found.status == skiplist_status::hit || found.status == skiplist_status::full)
            value = read_string(in);
        else if (found.status != skiplist_status::miss && found.status != skiplist_status::stored &&
                 found.status != skiplist_status::replaced)
            throw decode_error("mpidict: skiplist_map direct answer with a bad status");
        ++m_shared.stats.answers;
        m_shared.stats.answer_hops += hops;
        if (found.status == skiplist_status::full && !value.empty())
            m_shared.last_refusal = value;
        if (current)
            current->answer(found.index, found.status, value);
    }
}

}  // namespace mpidict::detail
