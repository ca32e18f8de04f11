// skiplist_map's distributed skip list: nodes hosted on server ranks, requests
// that travel forward from the head, splits with free-node allocation around a
// ring of managers, and the ordering markers that keep operations from
// overtaking one another when links change.  See skiplist_map.hpp for the design.

#include "mpidict/detail/skiplist_core.hpp"
#include "mpidict/detail/wire.hpp"
#include "mpidict/key_pattern.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>

#include "mpidict/error.hpp"

namespace mpidict {

namespace {

constexpr std::size_t node_id_bytes = 12;
constexpr std::size_t header_bytes = 4 + 4 + 1 + 1;  // slot, generation, level byte, hops byte
// A direct-find record's header (level byte, batch slot, segments) and a
// segment's (node slot, generation, first index, keys).
constexpr std::size_t direct_header_bytes = 1 + 4 + 4, direct_segment_bytes = 4 + 4 + 4 + 4;
constexpr std::size_t entry_overhead = 4 + 4 + 8;  // key and value lengths, expiry
constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();

// Appends fixed-width fields and length-prefixed byte strings to a record.
class record_writer {
public:
    template <class T>
    record_writer& put(T value) {
        static_assert(std::is_trivially_copyable_v<T>);
        char bytes[sizeof(T)];
        std::memcpy(bytes, &value, sizeof(T));
        m_bytes.append(bytes, sizeof(T));
        return *this;
    }
    record_writer& put_bytes(std::string_view bytes) {
        put<std::uint32_t>(static_cast<std::uint32_t>(bytes.size()));
        m_bytes.append(bytes);
        return *this;
    }
    record_writer& put_id(const skiplist_node_id& id) { return put(id.rank).put(id.slot).put(id.generation); }
    record_writer& append(std::string_view raw) {
        m_bytes.append(raw);
        return *this;
    }
    const std::string& bytes() const { return m_bytes; }

private:
    std::string m_bytes;
};

// Reads what record_writer wrote; every read is bounds-checked (decode_error).
class record_reader {
public:
    explicit record_reader(std::string_view bytes)
        : m_reader(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()) {}
    template <class T>
    T get() {
        return m_reader.read<T>();
    }
    std::string_view get_bytes() {
        const auto size = m_reader.read<std::uint32_t>();
        return {reinterpret_cast<const char*>(m_reader.take(size)), size};
    }
    skiplist_node_id get_id() {
        skiplist_node_id id;
        id.rank = get<std::int32_t>();
        id.slot = get<std::uint32_t>();
        id.generation = get<std::uint32_t>();
        return id;
    }
    std::string_view rest() {
        const std::size_t size = m_reader.remaining();
        return {reinterpret_cast<const char*>(m_reader.take(size)), size};
    }
    bool empty() const { return m_reader.empty(); }

private:
    byte_reader m_reader;
};

std::string describe(const skiplist_node_id& id) {
    return "(rank " + std::to_string(id.rank) + ", slot " + std::to_string(id.slot) + ", generation " +
           std::to_string(id.generation) + ")";
}

template <class Member>
void for_each_record(const std::byte* records, std::uint32_t record_bytes, std::uint32_t count, Member&& member) {
    for (std::uint32_t index = 0; index < count; ++index)
        member(std::string_view(reinterpret_cast<const char*>(records) + std::size_t(index) * record_bytes,
                                record_bytes));
}

}  // namespace

const char* to_string(skiplist_consistency mode) {
    switch (mode) {
    case skiplist_consistency::total_order:
        return "total_order";
    case skiplist_consistency::sequential:
        return "sequential";
    case skiplist_consistency::none:
        return "none";
    }
    return "unknown";
}

std::optional<skiplist_consistency> skiplist_consistency_named(std::string_view name) {
    for (const skiplist_consistency mode :
         {skiplist_consistency::total_order, skiplist_consistency::sequential, skiplist_consistency::none})
        if (name == to_string(mode))
            return mode;
    return std::nullopt;
}

std::size_t skiplist_map_config::required_buffer_bytes() const {
    // The largest record: a split's allocation request carrying the upper half
    // of a full node (G / 2 + 1 entries), its separator and its tower.
    const std::size_t entry = max_key_bytes + max_value_bytes + entry_overhead;
    const std::size_t link = 1 + node_id_bytes + 4 + max_key_bytes;
    const std::size_t alloc = node_id_bytes + 4 + 4 + max_key_bytes + 1 + 4 + 1 + std::size_t(max_height) * link + 4 +
                              (granularity / 2 + 1) * entry;
    return runtime::group_header_bytes + runtime::routing_overhead_bytes + alloc;
}

namespace detail {

expiry_time skiplist_core::clock_now() const {
    const auto now = m_config.expiry_clock ? m_config.expiry_clock() : std::chrono::system_clock::now();
    return std::chrono::duration<double>(now.time_since_epoch()).count();
}

skiplist_core::skiplist_core(std::unique_ptr<runtime::engine> engine, const skiplist_map_config& settings)
    : m_engine(std::move(engine)), m_config(settings) {
    const int ranks = m_engine->size();
    if (!settings.server_ranks) {
        for (int r = 0; r < ranks; ++r)
            m_servers.push_back(r);
    } else {
        if (settings.server_ranks->empty())
            throw invalid_argument_error("mpidict: skiplist_map configuration has no server rank (server_ranks is empty)");
        std::set<int> seen;
        for (int r : *settings.server_ranks) {
            if (r < 0 || r >= ranks)
                throw invalid_argument_error("mpidict: skiplist_map server_ranks names rank " + std::to_string(r) +
                                             ", outside " + detail::communicator_of(ranks));
            if (!seen.insert(r).second)
                throw invalid_argument_error("mpidict: skiplist_map server_ranks lists rank " + std::to_string(r) +
                                             " twice");
        }
        m_servers = *settings.server_ranks;
    }
    if (settings.granularity < 1 || settings.granularity > (1u << 20))
        throw invalid_argument_error("mpidict: skiplist_map granularity G = " + std::to_string(settings.granularity) +
                                     " must be between 1 and 1048576");
    if (settings.max_height < 1 || settings.max_height > 32)
        throw invalid_argument_error("mpidict: skiplist_map max_height = " + std::to_string(settings.max_height) +
                                     " must be between 1 and 32");
    if (!(settings.tower_probability > 0 && settings.tower_probability < 1))
        throw invalid_argument_error("mpidict: skiplist_map tower_probability = " +
                                     std::to_string(settings.tower_probability) + " must be in (0, 1)");
    if (settings.node_slots_per_rank < 1 || settings.node_slots_per_rank > (std::size_t(1) << 31))
        throw invalid_argument_error("mpidict: skiplist_map node_slots_per_rank = " +
                                     std::to_string(settings.node_slots_per_rank) + " must be between 1 and 2^31");
    if (settings.max_key_bytes < 1 || settings.max_key_bytes > (1u << 20) || settings.max_value_bytes > (1u << 30))
        throw invalid_argument_error("mpidict: skiplist_map max_key_bytes must be in [1, 2^20] and max_value_bytes at "
                                     "most 2^30");
    if (settings.required_buffer_bytes() > m_engine->settings().buffer_bytes)
        throw invalid_argument_error(
            "mpidict: skiplist_map needs runtime.buffer_bytes >= " + std::to_string(settings.required_buffer_bytes()) +
            " (half a node of G = " + std::to_string(settings.granularity) + " entries of up to " +
            std::to_string(settings.max_key_bytes) + " + " + std::to_string(settings.max_value_bytes) +
            " bytes must fit one message), but it is " + std::to_string(m_engine->settings().buffer_bytes) +
            "; lower G or max_value_bytes, or raise buffer_bytes");

    if (static_cast<unsigned>(settings.consistency) > static_cast<unsigned>(skiplist_consistency::none))
        throw invalid_argument_error("mpidict: skiplist_map consistency " +
                                     std::to_string(static_cast<unsigned>(settings.consistency)) +
                                     " is not one of total_order, sequential, none");
    m_mode = settings.consistency;

    const auto me = std::find(m_servers.begin(), m_servers.end(), rank());
    if (me != m_servers.end())
        m_server_index = static_cast<int>(me - m_servers.begin());
    m_random.seed(settings.seed + static_cast<std::uint64_t>(rank()) * 0x9e3779b97f4a7c15ULL);

    m_h_point = m_engine->register_handler("skiplist.point", &on_point, this);
    m_h_range = m_engine->register_handler("skiplist.range", &on_range, this);
    m_h_range_part = m_engine->register_handler("skiplist.range_part", &on_range_part, this);
    m_h_range_split = m_engine->register_handler("skiplist.range_split", &on_range_split, this);
    m_h_range_piece = m_engine->register_handler("skiplist.range_piece", &on_range_piece, this);
    m_h_alloc = m_engine->register_handler("skiplist.alloc", &on_alloc, this);
    m_h_alloc_reply = m_engine->register_handler("skiplist.alloc_reply", &on_alloc_reply, this);
    m_h_link_up = m_engine->register_handler("skiplist.link_up", &on_link_up, this);
    m_h_set_links = m_engine->register_handler("skiplist.set_links", &on_set_links, this);
    m_h_expect = m_engine->register_handler("skiplist.expect", &on_expect, this);
    m_h_marker = m_engine->register_handler("skiplist.marker", &on_marker, this);
    m_h_clear = m_engine->register_handler("skiplist.clear", &on_clear, this);
    m_h_point_reply = m_engine->register_handler("skiplist.point_reply", &on_point_reply, this);
    m_h_unlinked = m_engine->register_handler("skiplist.unlinked", &on_unlinked, this);
    m_h_find_direct = m_engine->register_handler("skiplist.find_direct", &on_find_direct, this);
    m_h_found_direct = m_engine->register_handler("skiplist.found_direct", &on_found_direct, this);
    m_engine->verify_handlers();
    // Every rank must agree on the tunables that shape the list.
    m_engine->check_same(static_cast<std::int64_t>(settings.granularity), "skiplist_map granularity", false);
    m_engine->check_same(static_cast<std::int64_t>(settings.max_height), "skiplist_map max_height", false);
    m_engine->check_same(static_cast<std::int64_t>(m_servers.size()) * 1000003 + m_servers.front(),
                         "skiplist_map server_ranks", false);

    m_head = skiplist_node_id{m_servers.front(), 0, 1};
    if (rank() == m_servers.front()) {
        const skiplist_node_id head = allocate_local("", settings.max_height);
        MPIDICT_ASSERT(head == m_head, "the head node must take slot 0");
        for (auto& level : m_nodes[head.slot].tower)
            level.set = true;  // every level of the head exists: it ends the empty list
    }
    m_engine->start_progress_thread();
}

skiplist_core::~skiplist_core() = default;

void skiplist_core::check_key(std::size_t bytes) const {
    if (bytes > m_config.max_key_bytes)
        throw invalid_argument_error("mpidict: skiplist_map key of " + std::to_string(bytes) +
                                     " encoded bytes exceeds max_key_bytes = " + std::to_string(m_config.max_key_bytes));
}

void skiplist_core::check_value(std::size_t bytes) const {
    if (bytes > m_config.max_value_bytes)
        throw invalid_argument_error("mpidict: skiplist_map value of " + std::to_string(bytes) +
                                     " bytes exceeds max_value_bytes = " + std::to_string(m_config.max_value_bytes));
}

// ---------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------

void skiplist_core::send_record(int destination, runtime::handler_id handler, std::string_view bytes) {
    std::byte* out = m_engine->reserve(destination, handler, bytes.size());
    std::memcpy(out, bytes.data(), bytes.size());
}

void skiplist_core::forward(runtime::handler_id handler, skiplist_node_id to, std::string_view record_tail, int level,
                            std::uint8_t level_flags, std::uint8_t hops) {
    const std::size_t bytes = header_bytes + record_tail.size();
    detail::byte_writer(m_engine->reserve(to.rank, handler, bytes), bytes)
        .put(to.slot)
        .put(to.generation)
        .put(static_cast<std::uint8_t>((level & level_mask) | level_flags))
        .put(hops)
        .put_bytes(record_tail)
        .finish();
}

void skiplist_core::fall_back_to_head(runtime::handler_id handler, std::string_view record_tail,
                                      std::uint8_t level_byte, std::uint8_t hops) {
    // The route is not trusted again on this way: no shortcut flag, so a
    // second failure would be a real error.
    forward(handler, m_head, record_tail, static_cast<int>(m_config.max_height) - 1,
            static_cast<std::uint8_t>(level_byte & route_free), next_hops(hops) | route_fell_back);
}

void skiplist_core::set_consistency(skiplist_consistency mode) {
    if (static_cast<unsigned>(mode) > static_cast<unsigned>(skiplist_consistency::none))
        throw invalid_argument_error("mpidict: skiplist_map consistency " + std::to_string(static_cast<unsigned>(mode)) +
                                     " is not one of total_order, sequential, none");
    if (!caller_idle())
        throw error("mpidict: skiplist_map set_consistency needs this caller's operations answered first");
    m_mode = mode;
    m_next_delivery = m_next_issue;
}

bool skiplist_core::caller_uses_shortcuts() const {
    if (m_config.route_cache_entries == 0)
        return false;
    if (m_mode == skiplist_consistency::total_order)
        return m_config.break_consistency_for_testing;
    if (m_mode == skiplist_consistency::sequential && m_config.break_consistency_for_testing)
        return (m_next_ticket & 1) == 0;  // every other operation through the head (the reordering shortcut)
    return true;
}

std::uint8_t skiplist_core::entry_level_byte(skiplist_node_id entry) const {
    std::uint8_t flags = 0;
    if (m_mode == skiplist_consistency::none)
        flags |= route_free;
    if (!(entry == m_head))
        flags |= route_shortcut;
    return static_cast<std::uint8_t>(((m_config.max_height - 1) & level_mask) | flags);
}

void skiplist_core::deliver(std::uint64_t sequence, completion done) {
    const bool hold_back =
        m_mode == skiplist_consistency::sequential && !m_config.break_consistency_for_testing;
    if (hold_back && sequence != m_next_delivery) {
        if (sequence < m_next_delivery || !m_hold_back.emplace(sequence, std::move(done)).second)
            throw decode_error("mpidict: skiplist_map operation " + std::to_string(sequence) + " completed twice");
        ++m_stats.held_back;
        m_stats.hold_back_peak = std::max<std::uint64_t>(m_stats.hold_back_peak, m_hold_back.size());
        return;
    }
    auto complete = [this](completion& finished) {
        if (finished.slot != no_slot)
            m_engine->complete_request(finished.source, finished.slot, finished.count,
                                       std::span<const std::byte>(reinterpret_cast<const std::byte*>(finished.bytes.data()),
                                                                  finished.bytes.size()));
    };
    complete(done);
    if (!hold_back)
        return;
    ++m_next_delivery;
    for (auto next = m_hold_back.begin(); next != m_hold_back.end() && next->first == m_next_delivery;
         next = m_hold_back.begin()) {
        completion waiting = std::move(next->second);
        m_hold_back.erase(next);
        ++m_next_delivery;
        complete(waiting);
    }
}

void skiplist_core::send_point(op kind, std::uint32_t slot, std::string_view key, std::string_view value,
                               expiry_time expires) {
    // One operation per key in flight from this caller: a later one waits here
    // until the earlier one is acknowledged, so this caller's operations on a key
    // take effect in the order it issued them, whatever paths they take.
    // Mode none (and the broken sequential mode) keeps no such order.
    const std::uint64_t sequence = next_issue();
    const bool ordered = m_mode != skiplist_consistency::none && !m_config.unordered_for_testing &&
                         !(m_mode == skiplist_consistency::sequential && m_config.break_consistency_for_testing);
    if (!ordered) {
        dispatch_point(kind, slot, std::string(key), value, expires, sequence, nullptr);
        return;
    }
    auto [state, fresh] = m_keys.try_emplace(std::string(key));
    if (in_issue_order() && (!m_issue_queue.empty() || state->second.outstanding > 0)) {
        // Mode total_order: the head's order must be the issue order, so once
        // one operation waits for its key, every later one waits behind it.
        queued_operation later;
        later.kind = kind;
        later.slot = slot;
        later.key = std::string(key);
        later.value = std::string(value);
        later.expires = expires;
        later.sequence = sequence;
        m_issue_queue.push_back(std::move(later));
        return;
    }
    if (!fresh && state->second.outstanding > 0) {
        state->second.waiting.push_back(waiting_point{kind, slot, std::string(value), expires, sequence});
        return;
    }
    dispatch_point(kind, slot, state->first, value, expires, sequence, &state->second);
}

void skiplist_core::dispatch_point(op kind, std::uint32_t slot, const std::string& key, std::string_view value,
                                   expiry_time expires, std::uint64_t sequence, key_state* state) {
    std::uint32_t ticket = m_next_ticket++;
    if (ticket == no_slot)
        ticket = m_next_ticket++;
    m_tickets.emplace(ticket, ticket_state{key, sequence, state != nullptr});
    if (state)
        ++state->outstanding;
    record_writer tail;
    tail.put(static_cast<std::uint8_t>(kind)).put(static_cast<std::int32_t>(rank())).put(slot).put(ticket);
    tail.put(expires).put_bytes(key).put_bytes(value);
    const skiplist_node_id entry = caller_uses_shortcuts() ? entry_point(key) : m_head;
    const std::uint8_t level_byte = entry_level_byte(entry);
    if (level_byte & route_shortcut)
        ++m_stats.shortcut_entries;
    forward(m_h_point, entry, tail.bytes(), level_byte & level_mask, level_byte & ~level_mask);
}

void skiplist_core::send_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded,
                               std::uint64_t limit, std::string_view pattern, bool streaming) {
    m_ranges[slot] = range_state{};
    m_ranges[slot].streaming = streaming;
    m_range_sequence[slot] = next_issue();
    if (in_issue_order() && !m_issue_queue.empty()) {
        queued_operation later;
        later.range = true;
        later.slot = slot;
        later.key = std::string(lo);
        later.hi = std::string(hi);
        later.bounded = bounded;
        later.limit = limit;
        later.pattern = std::string(pattern);
        m_issue_queue.push_back(std::move(later));
        return;
    }
    dispatch_range(slot, lo, hi, bounded, limit, pattern);
}

bool skiplist_core::in_issue_order() const {
    return m_mode == skiplist_consistency::total_order && !m_config.unordered_for_testing &&
           !m_config.break_consistency_for_testing;
}

void skiplist_core::drain_issue_queue() {
    while (!m_issue_queue.empty()) {
        queued_operation& next = m_issue_queue.front();
        if (next.range) {
            dispatch_range(next.slot, next.key, next.hi, next.bounded, next.limit, next.pattern);
        } else {
            auto state = m_keys.try_emplace(next.key).first;
            if (state->second.outstanding > 0)
                return;
            dispatch_point(next.kind, next.slot, state->first, next.value, next.expires, next.sequence,
                           &state->second);
        }
        m_issue_queue.pop_front();
    }
}

void skiplist_core::dispatch_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded,
                                   std::uint64_t limit, std::string_view pattern) {
    if (m_mode == skiplist_consistency::total_order && !m_config.break_consistency_for_testing) {
        // Mode total_order: the range splits over the towers from the head (the
        // seed's Listing 2), so every piece takes the path a point operation on
        // its keys takes and none overtakes or is overtaken (skiplist_map.hpp).
        range_state& state = m_ranges[slot];
        state.split = true;
        state.cursor = std::string(lo);
        state.hi = std::string(hi);
        state.bounded = bounded;
        state.remaining = limit == 0 ? unlimited : limit;
        if (bounded && hi <= lo) {
            finish_split_range(slot, state);
            return;
        }
        record_writer tail;
        tail.put(static_cast<std::int32_t>(rank())).put(slot).put(static_cast<std::uint8_t>(bounded));
        tail.put(limit == 0 ? unlimited : limit).put_bytes(lo).put_bytes(hi).put_bytes(pattern);
        forward(m_h_range_split, m_head, tail.bytes(), static_cast<int>(m_config.max_height) - 1);
        return;
    }
    record_writer tail;
    tail.put(static_cast<std::int32_t>(rank())).put(slot).put(std::uint32_t{0});
    tail.put(static_cast<std::uint8_t>(bounded)).put(limit == 0 ? unlimited : limit);
    tail.put_bytes(lo).put_bytes(hi).put_bytes(pattern);
    const skiplist_node_id entry = caller_uses_shortcuts() ? entry_point(lo) : m_head;
    const std::uint8_t level_byte = entry_level_byte(entry);
    if (level_byte & route_shortcut)
        ++m_stats.shortcut_entries;
    forward(m_h_range, entry, tail.bytes(), level_byte & level_mask, level_byte & ~level_mask);
}

skiplist_node_id skiplist_core::entry_point(std::string_view key) const {
    // The remembered node with the largest separator <= key: the key's node is
    // that one or one after it (a separator never changes while its node lives),
    // and operations travel forward only.
    auto after = m_routes.upper_bound(key);
    if (after == m_routes.begin())
        return m_head;
    return std::prev(after)->second;
}

skiplist_node_id skiplist_core::directory_after(std::string_view key, std::string_view floor) const {
    auto after = m_routes.upper_bound(key);
    if (after == m_routes.begin())
        return {};
    --after;
    if (std::string_view(after->first) <= floor)
        return {};
    return after->second;
}

void skiplist_core::learn_route(std::string_view separator, skiplist_node_id id) {
    if (m_config.route_cache_entries == 0 || separator.empty())
        return;  // disabled, or the head (the default entry point)
    auto known = m_routes.lower_bound(separator);
    if (known != m_routes.end() && known->first == separator) {
        if (!(known->second == id)) {
            known->second = id;
            ++m_routes_version;
        }
        return;
    }
    ++m_routes_version;
    if (m_routes.size() >= m_config.route_cache_entries) {
        // Full: forget the neighbour above (or below) the new entry, so the cache
        // stays bounded and keeps the entries spread over the key space.
        auto victim = known != m_routes.end() ? known : std::prev(known);
        known = m_routes.erase(victim);
    }
    m_routes.emplace_hint(known, std::string(separator), id);
}

void skiplist_core::reply_point(const node& here, skiplist_node_id id, int caller, std::uint32_t slot,
                                std::uint32_t ticket, std::uint8_t status, std::string_view value, std::uint8_t hops) {
    if (ticket == no_slot)
        return;  // a node's own record (an ordering marker): nobody waits for it
    // The answering node and its separator go back with the answer: the caller
    // enters there next time for keys at or above the separator (entry_point).
    // The hops byte says how far the operation travelled and whether a shortcut
    // failed on the way.
    const std::size_t bytes = 4 + 4 + 1 + 1 + node_id_bytes + 4 + here.separator.size() + value.size();
    detail::byte_writer(m_engine->reserve(caller, m_h_point_reply, bytes), bytes)
        .put(slot)
        .put(ticket)
        .put(status)
        .put(hops)
        .put(id.rank)
        .put(id.slot)
        .put(id.generation)
        .put(static_cast<std::uint32_t>(here.separator.size()))
        .put_bytes(here.separator)
        .put_bytes(value)
        .finish();
}

void skiplist_core::begin_batch(batch_answer on_answer, std::size_t keys, bool finds) {
    if (m_batch_answer)
        throw error("mpidict: skiplist_map find_many/insert_many called while another one is running");
    // Earlier operations of this caller first (per-key order, see send_point;
    // and in mode sequential their replies, in issue order).
    m_engine->wait_until([this] { return m_tickets.empty() && m_hold_back.empty(); });
    m_batch_answer = std::move(on_answer);
    ++m_batch_id;
    // Finds alone cannot reorder one another (begin_batch waited for what came
    // before), so in the shortcut modes each goes straight to its node.  The
    // broken test modes keep the ordinary records they were built to break.
    m_batch_direct = finds && direct_finds();
    if (m_batch_direct) {
        m_direct.assign(static_cast<std::size_t>(m_engine->size()), direct_record{});
        m_direct_limit = direct_record_limit();
    }
    // A flat copy of the directory pays for itself when the batch is not much
    // smaller than the directory (copying costs about as much as a few lookups
    // in the std::map per entry).
    if (m_batch_direct && m_flat_version != m_routes_version && keys >= m_routes.size() / 4 && !m_routes.empty())
        rebuild_flat_routes();
    m_batch_flat = m_batch_direct && m_flat_version == m_routes_version;
}

bool skiplist_core::direct_finds() const {
    return m_mode != skiplist_consistency::total_order && caller_uses_shortcuts() &&
           !m_config.break_consistency_for_testing;
}

void skiplist_core::end_batch() {
    m_batch_answer = nullptr;
    m_direct.clear();  // (what a batch that threw left unsent is dropped)
    m_direct_open.clear();
    m_batch_direct = m_batch_flat = false;
}

void skiplist_core::rebuild_flat_routes() {
    m_flat.clear();
    m_flat_ids.clear();
    m_flat_bytes.clear();
    m_flat.reserve(m_routes.size());
    m_flat_ids.reserve(m_routes.size());
    for (const auto& [separator, id] : m_routes) {
        m_flat.push_back(flat_route{sorted_run::prefix_of(separator), static_cast<std::uint32_t>(m_flat_bytes.size()),
                                    static_cast<std::uint32_t>(separator.size())});
        m_flat_ids.push_back(id);
        m_flat_bytes += separator;
        if (m_flat_bytes.size() > std::numeric_limits<std::uint32_t>::max() / 2) {
            // Separators of up to 1 MiB each: a directory this large stays in the std::map.
            m_flat.clear();
            m_flat_ids.clear();
            m_flat_bytes.clear();
            m_flat_version = ~std::uint64_t{0};
            return;
        }
    }
    // Buckets over the prefix bits below those every separator shares: about
    // one separator per bucket, at most 2^16 buckets.
    m_flat_buckets.clear();
    m_flat_shift = 0;
    m_flat_bucket_bits = 0;
    if (m_flat.size() >= 2 && m_flat.front().prefix != m_flat.back().prefix) {
        const int spread = static_cast<int>(std::bit_width(m_flat.front().prefix ^ m_flat.back().prefix));
        const int wanted = std::min(16, static_cast<int>(std::bit_width(m_flat.size())));
        m_flat_bucket_bits = std::min(spread, wanted);
        m_flat_shift = spread - m_flat_bucket_bits;
        const std::size_t buckets = std::size_t{1} << m_flat_bucket_bits;
        m_flat_buckets.assign(buckets + 1, 0);
        std::size_t index = 0;
        for (std::size_t bucket = 0; bucket <= buckets; ++bucket) {
            while (index < m_flat.size() && flat_bucket(m_flat[index].prefix) < bucket)
                ++index;
            m_flat_buckets[bucket] = static_cast<std::uint32_t>(index);
        }
    }
    m_flat_version = m_routes_version;
}

skiplist_node_id skiplist_core::flat_entry_point(std::string_view key) const {
    // As entry_point: the last separator <= key.
    const std::uint64_t prefix = sorted_run::prefix_of(key);
    // Below the first separator's prefix: the head; above the last one's: the
    // last entry or its equals; else the key's bucket bounds the search (every
    // separator before it is smaller, every one after it larger).
    // Keys of a sorted batch mostly fall between the same two separators as
    // the key before: prefixes strictly between them decide that alone.
    if (m_flat_hint < m_flat.size() && m_flat[m_flat_hint].prefix < prefix &&
        (m_flat_hint + 1 == m_flat.size() || prefix < m_flat[m_flat_hint + 1].prefix))
        return m_flat_ids[m_flat_hint];
    auto from = m_flat.begin(), to = m_flat.end();
    if (!m_flat_buckets.empty()) {
        if (prefix < m_flat.front().prefix)
            return m_head;
        if (prefix <= m_flat.back().prefix) {
            const std::size_t bucket = flat_bucket(prefix);
            from = m_flat.begin() + m_flat_buckets[bucket];
            to = m_flat.begin() + m_flat_buckets[bucket + 1];
        } else {
            from = m_flat.end() - 1;
        }
    }
    auto after = std::upper_bound(from, to, key, [&](std::string_view k, const flat_route& r) {
        if (prefix != r.prefix)
            return prefix < r.prefix;
        return k < std::string_view(m_flat_bytes.data() + r.offset, r.bytes);
    });
    if (after == m_flat.begin())
        return m_head;
    m_flat_hint = static_cast<std::size_t>(after - m_flat.begin()) - 1;
    return m_flat_ids[m_flat_hint];
}

void skiplist_core::send_batch_point(op kind, std::uint32_t index, std::string_view key, std::string_view value) {
    const std::uint32_t slot = batch_slot();
    if (m_batch_direct && kind == op::find) {
        const skiplist_node_id to = m_batch_flat ? flat_entry_point(key) : entry_point(key);
        if (!(to == m_head)) {
            ++m_stats.shortcut_entries;
            add_direct_find(to, index, key);
            return;
        }
    }
    // A point record like dispatch_point's: the slot says "batch" (and which),
    // the ticket is the key's index in the batch.
    const skiplist_node_id to = caller_uses_shortcuts() ? entry_point(key) : m_head;
    const std::uint8_t level_byte = entry_level_byte(to);
    if (level_byte & route_shortcut)
        ++m_stats.shortcut_entries;
    const std::size_t bytes = header_bytes + 1 + 4 + 4 + 4 + sizeof(expiry_time) + 4 + key.size() + 4 + value.size();
    detail::byte_writer(m_engine->reserve(to.rank, m_h_point, bytes), bytes)
        .put(to.slot)
        .put(to.generation)
        .put(level_byte)
        .put(std::uint8_t{0})
        .put(static_cast<std::uint8_t>(kind))
        .put(static_cast<std::int32_t>(rank()))
        .put(slot)
        .put(index)
        .put(expiry_time{0})
        .put(static_cast<std::uint32_t>(key.size()))
        .put_bytes(key)
        .put(static_cast<std::uint32_t>(value.size()))
        .put_bytes(value)
        .finish();
}

std::size_t skiplist_core::direct_record_limit() const {
    // Long enough for a few hundred keys (a few dozen nodes' shares of a large
    // batch) and for one key of the largest size, never longer than a record
    // can be.
    return std::min(m_engine->max_record_bytes(),
                    std::max<std::size_t>(16 * 1024, direct_header_bytes + direct_segment_bytes + 4 + m_config.max_key_bytes));
}

void skiplist_core::add_direct_find(skiplist_node_id to, std::uint32_t index, std::string_view key) {
    direct_record& record = m_direct[static_cast<std::size_t>(to.rank)];
    const std::size_t entry = 4 + key.size();
    bool continues = record.count != 0 && record.node == to && record.next_index == index;
    if (direct_header_bytes + record.segments.size() + entry + (continues ? 0 : direct_segment_bytes) >
        m_direct_limit) {
        send_direct_record(to.rank);
        continues = false;
    }
    if (!record.listed) {
        record.listed = true;
        m_direct_open.push_back(to.rank);
    }
    auto append = [&](std::uint32_t word) { record.segments.append(reinterpret_cast<const char*>(&word), sizeof word); };
    if (!continues) {
        append(to.slot);
        append(to.generation);
        append(index);
        record.keys_at = record.segments.size();
        append(0);
        ++record.count;
        record.node = to;
    }
    std::uint32_t keys;
    std::memcpy(&keys, record.segments.data() + record.keys_at, sizeof keys);
    ++keys;
    std::memcpy(record.segments.data() + record.keys_at, &keys, sizeof keys);
    append(static_cast<std::uint32_t>(key.size()));
    record.segments.append(key);
    record.next_index = index + 1;
}

void skiplist_core::send_direct_record(int destination) {
    direct_record& record = m_direct[static_cast<std::size_t>(destination)];
    if (record.count == 0)
        return;
    // The level byte a point record would start with (the same for every
    // node but the head), the batch, and the segments.
    const std::size_t bytes = direct_header_bytes + record.segments.size();
    detail::byte_writer(m_engine->reserve(destination, m_h_find_direct, bytes), bytes)
        .put(entry_level_byte(record.node))
        .put(batch_slot())
        .put(record.count)
        .put_bytes(record.segments)
        .finish();
    record.segments.clear();
    record.count = 0;
}

void skiplist_core::close_batch_record() {
    for (const int destination : m_direct_open) {
        send_direct_record(destination);
        m_direct[static_cast<std::size_t>(destination)].listed = false;
    }
    m_direct_open.clear();
}

void skiplist_core::on_find_direct(void* self, int source, const std::byte* records, std::uint32_t bytes,
                                   std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_find_direct(source, record); });
}

void skiplist_core::handle_find_direct(int source, std::string_view record) {
    record_reader in(record);
    const auto level_byte = in.get<std::uint8_t>();
    const auto slot = in.get<std::uint32_t>();
    const auto segments = in.get<std::uint32_t>();
    if ((slot & batch_slot_bit) == 0 || (level_byte & route_shortcut) == 0 || segments == 0 ||
        segments > record.size() / direct_segment_bytes)
        throw decode_error("mpidict: skiplist_map direct find record with a bad slot, level byte or segment count");
    struct segment {
        skiplist_node_id id;
        std::uint32_t first, count;
        std::size_t keys_from;
    };
    std::vector<segment> parts(segments);
    std::vector<std::string_view> keys;
    for (segment& part : parts) {
        part.id = skiplist_node_id{rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
        part.first = in.get<std::uint32_t>();
        part.count = in.get<std::uint32_t>();
        part.keys_from = keys.size();
        if (part.count == 0 || part.count > record.size() / 4 || part.first > no_slot - part.count)
            throw decode_error("mpidict: skiplist_map direct find record with a bad key count");
        for (std::uint32_t index = 0; index < part.count; ++index) {
            keys.push_back(in.get_bytes());
            if (keys.back().size() > m_config.max_key_bytes)
                throw decode_error("mpidict: skiplist_map direct find record with a key of " +
                                   std::to_string(keys.back().size()) + " bytes");
        }
    }
    if (!in.empty())
        throw decode_error("mpidict: skiplist_map direct find record with bytes after its keys");

    // The answers: {u32 index, u8 status, (hit) u32 value bytes, value}*
    // after the batch slot; a record as long as a record may be.
    std::string answers;
    const std::size_t room = m_engine->max_record_bytes() - 4;
    auto send_answers = [&] {
        if (answers.empty())
            return;
        const std::size_t bytes = 4 + answers.size();
        detail::byte_writer(m_engine->reserve(source, m_h_found_direct, bytes), bytes)
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
        if (here && (here->holds != 0 || here->allocating || here->holding_records()))
            here = nullptr;
        if (here && here->earliest_expiry != 0)
            purge_expired(*here, clock_now());
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
            const std::size_t entry = 4 + 1 + (hit ? 4 + value.size() : 0);
            if (answers.size() + entry > room)
                send_answers();
            const std::size_t at = answers.size();
            answers.resize(at + entry);
            detail::byte_writer out(reinterpret_cast<std::byte*>(answers.data() + at), entry);
            out.put(part.first + index).put(hit ? status_hit : status_miss);
            if (hit)
                out.put(static_cast<std::uint32_t>(value.size())).put_bytes(value);
            ++answered;
        }
    }
    m_stats.handled += answered;
    send_answers();
    // The others the ordinary way from here: the point record send_batch_point
    // would have sent to the node (a gone node or one above the key sends it
    // to the head, counted as a failed shortcut).
    for (const auto& [which, index] : passed_on) {
        const segment& part = parts[which];
        record_writer point;
        point.put(part.id.slot).put(part.id.generation).put(level_byte).put(std::uint8_t{0});
        point.put(static_cast<std::uint8_t>(op::find)).put(static_cast<std::int32_t>(source)).put(slot);
        point.put(part.first + index).put(expiry_time{0}).put_bytes(keys[part.keys_from + index]).put_bytes({});
        handle_point(source, point.bytes());
    }
}

void skiplist_core::on_found_direct(void* self, int source, const std::byte* records, std::uint32_t bytes,
                                    std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_found_direct(source, record); });
}

void skiplist_core::handle_found_direct(int, std::string_view record) {
    record_reader in(record);
    const auto slot = in.get<std::uint32_t>();
    if ((slot & batch_slot_bit) == 0)
        throw decode_error("mpidict: skiplist_map direct find answer with a bad slot");
    const bool current = m_batch_answer && slot == batch_slot();
    while (!in.empty()) {
        const auto index = in.get<std::uint32_t>();
        const auto status = in.get<std::uint8_t>();
        std::string_view value;
        if (status == status_hit)
            value = in.get_bytes();
        else if (status != status_miss)
            throw decode_error("mpidict: skiplist_map direct find answer with a bad status");
        ++m_stats.answers;  // no hop: the node the directory named answered
        if (current)
            m_batch_answer(index, status, value);
    }
}

void skiplist_core::on_point_reply(void* self, int source, const std::byte* records, std::uint32_t bytes,
                                   std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_point_reply(source, record); });
}

void skiplist_core::handle_point_reply(int source, std::string_view record) {
    record_reader in(record);
    const auto slot = in.get<std::uint32_t>();
    const auto ticket = in.get<std::uint32_t>();
    const auto status = in.get<std::uint8_t>();
    const auto hops = in.get<std::uint8_t>();
    const skiplist_node_id answered_by = in.get_id();
    const std::string_view separator = in.get_bytes();
    const std::string_view value = in.rest();
    if (answered_by.rank != source)
        throw decode_error("mpidict: skiplist_map answer from rank " + std::to_string(source) + " names node " +
                           describe(answered_by) + " of another rank");
    ++m_stats.answers;
    m_stats.answer_hops += hops & hops_mask;
    if ((hops & route_fell_back) != 0)
        ++m_stats.shortcut_failures;
    if (slot != no_slot && (slot & batch_slot_bit) != 0) {
        // An answer to a batch (send_batch_point): the ticket is the key's index.
        if (status > status_full)
            throw decode_error("mpidict: skiplist_map batch answer with a bad status");
        learn_route(separator, answered_by);
        if (m_batch_answer && slot == batch_slot())
            m_batch_answer(ticket, status, value);
        return;
    }
    auto owner = m_tickets.find(ticket);
    if (owner == m_tickets.end() || status > status_full)
        throw decode_error("mpidict: skiplist_map answer for ticket " + std::to_string(ticket) +
                           ", which this caller did not send, or with a bad status");
    const std::string key = std::move(owner->second.key);
    const std::uint64_t sequence = owner->second.sequence;
    const bool ordered = owner->second.ordered;
    m_tickets.erase(owner);
    if (separator > std::string_view(key))
        throw decode_error("mpidict: skiplist_map answer from node " + describe(answered_by) +
                           " whose range starts above the key it answered for");
    if ((hops & route_fell_back) != 0) {
        // Forget the entry that failed (the answer teaches the right one below).
        auto used = m_routes.upper_bound(key);
        if (used != m_routes.begin() && !(std::prev(used)->second == answered_by))
        {
            m_routes.erase(std::prev(used));
            ++m_routes_version;
        }
    }
    learn_route(separator, answered_by);
    completion done;
    if (slot != no_slot) {
        // The request's result: the status byte, then the value (or the message).
        done.source = source;
        done.slot = slot;
        done.count = 1;
        done.bytes.assign(1, static_cast<char>(status));
        done.bytes += value;
    } else if (status == status_full) {
        ++m_async_rejected;
    }
    deliver(sequence, std::move(done));
    if (!ordered)
        return;
    auto state = m_keys.find(key);
    if (state == m_keys.end())
        return;
    struct drain_after {
        skiplist_core& core;
        ~drain_after() {
            if (core.in_issue_order())
                core.drain_issue_queue();
        }
    } drain{*this};
    --state->second.outstanding;
    if (!state->second.waiting.empty()) {
        waiting_point next = std::move(state->second.waiting.front());
        state->second.waiting.pop_front();
        dispatch_point(next.kind, next.slot, state->first, next.value, next.expires, next.sequence, &state->second);
    } else if (state->second.outstanding <= 0) {
        m_keys.erase(state);
    }
}

// ---------------------------------------------------------------------------
// Nodes
// ---------------------------------------------------------------------------

skiplist_node_id skiplist_core::allocate_local(std::string_view separator, unsigned height) {
    std::uint32_t slot;
    if (!m_free.empty()) {
        slot = m_free.back();
        m_free.pop_back();
    } else {
        if (m_server_index < 0 || m_nodes.size() >= m_config.node_slots_per_rank)
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
    ++m_stats.nodes;
    learn_route(separator, skiplist_node_id{rank(), slot, generation});  // the directory knows the nodes hosted here
    return skiplist_node_id{rank(), slot, generation};
}

skiplist_core::node& skiplist_core::addressed(skiplist_node_id id, const char* what) {
    if (id.slot >= m_nodes.size() || !m_nodes[id.slot].live || m_nodes[id.slot].generation != id.generation)
        throw decode_error(std::string("mpidict: skiplist_map ") + what + " record addresses node " + describe(id) +
                           ", which is not live on rank " + std::to_string(rank()));
    return m_nodes[id.slot];
}

bool skiplist_core::hold_if_busy(node& target, runtime::handler_id handler, int source, std::string_view record,
                                 int arrival_level) {
    if (target.holds == 0 && !target.allocating)
        return false;
    // A node that holds for a new link on level L (link_up) still serves what
    // comes the old way, on the levels below L: all of it is older than
    // anything the new link brings, which is what the hold queues.  Queuing it
    // too would let the new way overtake it when the queue is replayed.
    const bool old_way = arrival_level >= 0 && arrival_level < target.hold_level;
    if (old_way && !target.allocating && !target.low_queued)
        return false;
    if (old_way)
        target.low_queued = true;
    if (!target.held)
        target.held = std::make_unique<std::deque<held_record>>();
    target.held->push_back(held_record{handler, source, std::string(record)});
    ++m_stats.held;
    return true;
}

void skiplist_core::release_held(skiplist_node_id id) {
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
        held_record next = std::move(here.held->front());
        here.held->pop_front();
        if (next.handler == m_h_point)
            handle_point(next.source, next.bytes);
        else if (next.handler == m_h_range)
            handle_range(next.source, next.bytes);
        else if (next.handler == m_h_range_split)
            handle_range_split(next.source, next.bytes);
        else if (next.handler == m_h_link_up)
            handle_link_up(next.source, next.bytes);
        else if (next.handler == m_h_set_links)
            handle_set_links(next.source, next.bytes);
        else
            MPIDICT_ASSERT(false, "held record of an unexpected kind");
    }
}

int skiplist_core::forward_level(const node& here, std::string_view key, int level, bool strictly_less) {
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

unsigned skiplist_core::draw_height() {
    std::uniform_real_distribution<double> coin(0.0, 1.0);
    unsigned height = 1;
    while (height < m_config.max_height && coin(m_random) < m_config.tower_probability)
        ++height;
    return height;
}

void skiplist_core::purge_expired(node& here, expiry_time now) {
    if (here.earliest_expiry == 0 || now < here.earliest_expiry)
        return;
    expiry_time earliest = 0;
    here.run.erase_unless([&](std::size_t index) {
        const expiry_time expires = here.run.expires(index);
        if (expires != 0 && expires <= now) {
            m_stats.payload_bytes -= here.run.key(index).size() + here.run.value(index).size();
            --m_stats.entries;
            ++m_stats.expired;
            return false;
        }
        if (expires != 0 && (earliest == 0 || expires < earliest))
            earliest = expires;
        return true;
    });
    here.earliest_expiry = earliest;
}

std::size_t skiplist_core::sweep_expired() {
    const std::uint64_t before = m_stats.expired;
    const expiry_time now = clock_now();
    for (auto& here : m_nodes)
        if (here.live && here.holds == 0 && !here.allocating)
            purge_expired(here, now);
    return static_cast<std::size_t>(m_stats.expired - before);
}

// ---------------------------------------------------------------------------
// Point operations (Listings 1, 3 and 4 with G keys per node)
// ---------------------------------------------------------------------------

void skiplist_core::on_point(void* self, int source, const std::byte* records, std::uint32_t bytes,
                             std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_point(source, record); });
}

void skiplist_core::handle_point(int source, std::string_view record) {
    record_reader in(record);
    skiplist_node_id id{rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
    const std::uint8_t level_byte = in.get<std::uint8_t>();
    const std::uint8_t hops = in.get<std::uint8_t>();
    const int level = level_byte & level_mask;
    const std::string_view tail = record.substr(header_bytes);
    if ((level_byte & route_shortcut) != 0 && !live(id)) {
        // A directory entry led here, but its node is gone (unlinked, its slot
        // perhaps reused: the generation differs).  Never trusted further.
        fall_back_to_head(m_h_point, tail, level_byte, hops);
        return;
    }
    node& here = addressed(id, "point operation");
    const auto kind = static_cast<op>(in.get<std::uint8_t>());
    const auto caller = in.get<std::int32_t>();
    const auto slot = in.get<std::uint32_t>();
    const auto ticket = in.get<std::uint32_t>();
    const auto expires = in.get<expiry_time>();
    const std::string_view key = in.get_bytes();
    const std::string_view value = in.get_bytes();
    if (static_cast<std::uint8_t>(kind) > static_cast<std::uint8_t>(op::marker) || caller < 0 ||
        caller >= m_engine->size())
        throw decode_error("mpidict: skiplist_map point record with a bad operation or caller");
    // A routed marker that has reached the node it clears is handled at once:
    // that node is holding because of it.  Everything it followed is already
    // handled here, or queued here ahead of whatever the clear releases.
    const bool marker_home = kind == op::marker && value.size() == node_id_bytes &&
                             record_reader(value).get_id() == id;
    // The broken mode none (test only) lets a splitting node handle finds and
    // erases it must hold: an erase of a key on its way to the new node is lost.
    const bool broken_split = m_config.break_consistency_for_testing &&
                              m_config.consistency == skiplist_consistency::none && here.allocating &&
                              here.holds == 0 && !here.holding_records() &&
                              (kind == op::erase || kind == op::find);
    if (!marker_home && !broken_split && hold_if_busy(here, m_h_point, source, record, level))
        return;
    if (id == m_head)
        ++m_stats.head_visits;
    const std::uint8_t free = level_byte & route_free;
    if (key < std::string_view(here.separator)) {
        // Entered above its key: a shortcut to a node that starts above it (its
        // slot reused by a node further on).  Start again at the head, which is
        // below every key.
        ++m_stats.hops;
        if ((level_byte & route_shortcut) != 0)
            fall_back_to_head(m_h_point, tail, level_byte, hops);
        else
            forward(m_h_point, m_head, tail, static_cast<int>(m_config.max_height) - 1, free, next_hops(hops));
        return;
    }
    // Mode none climbs: the whole tower, whatever level the request came on.
    const int next = forward_level(here, key, free ? static_cast<int>(here.tower.size()) - 1 : level, false);
    if (free && kind != op::marker && (hops & route_fell_back) == 0) {
        // ... and jumps through this rank's directory when it knows a node
        // further on (at or below the key) than the tower's next hop.  Not
        // after a shortcut failed on the way: a stale entry here would send
        // it back to the failure, and from the head here again, forever (the
        // direct-finds test found that loop).
        const std::string_view floor =
            next >= 0 ? std::string_view(here.tower[static_cast<std::size_t>(next)].separator)
                      : std::string_view(here.separator);
        const skiplist_node_id jump = directory_after(key, floor);
        if (!jump.null() && !(jump == id)) {
            ++m_stats.hops;
            ++m_stats.node_shortcuts;
            forward(m_h_point, jump, tail, static_cast<int>(m_config.max_height) - 1, route_free | route_shortcut,
                    next_hops(hops));
            return;
        }
    }
    if (next >= 0) {
        ++m_stats.hops;
        forward(m_h_point, here.tower[static_cast<std::size_t>(next)].to, tail, next, free, next_hops(hops));
        return;
    }
    answer_point(here, id, kind, caller, slot, ticket, key, value, expires, hops);
}

void skiplist_core::answer_point(node& here, skiplist_node_id id, op kind, int caller, std::uint32_t slot,
                                 std::uint32_t ticket, std::string_view key, std::string_view value,
                                 expiry_time expires, std::uint8_t hops) {
    if (kind == op::marker) {
        // A routed ordering marker (order_new_link): it has reached the end of the
        // old way (the node it names, unless that node has split meanwhile); the
        // node it was meant for may stop holding.
        (void)id;
        record_reader in(value);
        const skiplist_node_id target = in.get_id();
        if (target.rank < 0 || target.rank >= m_engine->size())
            throw decode_error("mpidict: skiplist_map marker names a bad node");
        record_writer clear;
        clear.put(target.slot).put(target.generation);
        if (target.rank == rank())
            handle_clear(clear.bytes());
        else
            send_record(target.rank, m_h_clear, clear.bytes());
        return;
    }
    ++m_stats.handled;
    purge_expired(here, clock_now());
    const std::size_t position = here.run.lower_bound(key);
    const bool present = here.run.holds_at(position, key);
    switch (kind) {
    case op::find:
        if (present)
            reply_point(here, id, caller, slot, ticket, status_hit, here.run.value(position), hops);
        else
            reply_point(here, id, caller, slot, ticket, status_miss, {}, hops);
        return;
    case op::erase:
        if (present) {
            m_stats.payload_bytes -= here.run.key(position).size() + here.run.value(position).size();
            --m_stats.entries;
            here.run.erase(position, position + 1);
        }
        reply_point(here, id, caller, slot, ticket, present ? status_hit : status_miss, {}, hops);
        return;
    case op::insert:
    case op::insert_if_absent:
        if (present) {
            if (kind == op::insert_if_absent) {
                reply_point(here, id, caller, slot, ticket, status_duplicate, {}, hops);
                return;
            }
            m_stats.payload_bytes += value.size();
            m_stats.payload_bytes -= here.run.value(position).size();
            here.run.assign(position, value, expires);
            if (expires != 0 && (here.earliest_expiry == 0 || expires < here.earliest_expiry))
                here.earliest_expiry = expires;
            reply_point(here, id, caller, slot, ticket, status_replaced, {}, hops);
            return;
        }
        here.run.insert(position, key, value, expires);
        m_stats.payload_bytes += key.size() + value.size();
        ++m_stats.entries;
        if (expires != 0 && (here.earliest_expiry == 0 || expires < here.earliest_expiry))
            here.earliest_expiry = expires;
        if (here.run.size() > m_config.granularity && !here.allocating) {  // allocating: only the broken mode none
            // Answered when the split is decided (list_full takes the key back out).
            here.pending_source = caller;
            here.pending_slot = slot;
            here.pending_ticket = ticket;
            here.pending_key = std::string(key);
            here.pending_hops = hops;
            start_split(here, id);
            return;
        }
        reply_point(here, id, caller, slot, ticket, status_stored, {}, hops);
        return;
    case op::marker:
        break;
    }
}

// ---------------------------------------------------------------------------
// Splits and the free-node service (Section 2.2, Figure 6)
// ---------------------------------------------------------------------------

void skiplist_core::start_split(node& here, skiplist_node_id id) {
    ++m_stats.splits;
    const std::size_t middle = here.run.size() / 2;
    unsigned height = draw_height();
    // A map built for total_order never grows a node taller than the one it
    // splits from: every level of the new node is then linked directly after
    // it (with markers), and no link_up re-routes upper levels while requests
    // travel them; the one ordering path the history checker still caught
    // (skiplist_map.md, "Consistency modes") never runs.
    if (m_config.consistency == skiplist_consistency::total_order)
        height = std::min<unsigned>(height, static_cast<unsigned>(here.tower.size()));
    here.split_separator = std::string(here.run.key(middle));
    here.split_height = height;
    here.split_direct = 0;
    here.allocating = true;

    record_writer alloc;
    alloc.put_id(id).put(std::uint32_t{0}).put_bytes(here.split_separator).put(static_cast<std::uint8_t>(height));
    std::uint32_t holds = 0;
    std::uint8_t links = 0;
    record_writer tower;
    for (unsigned level = 0; level < height && level < here.tower.size(); ++level) {
        const link& next = here.tower[level];
        if (!next.set)
            break;  // a node's linked levels are a prefix of its tower
        here.split_direct |= 1u << level;
        ++links;
        if (!next.to.null() && !m_config.unordered_for_testing)
            ++holds;  // one marker per replaced link (order_new_link)
        tower.put(static_cast<std::uint8_t>(level)).put_id(next.to).put_bytes(next.separator);
    }
    alloc.put(holds).put(links).append(tower.bytes());
    alloc.put(static_cast<std::uint32_t>(here.run.size() - middle));
    for (std::size_t index = middle; index < here.run.size(); ++index)
        alloc.put_bytes(here.run.key(index)).put_bytes(here.run.value(index)).put(here.run.expires(index));

    // Placement: round robin from the next server, so that even ascending keys
    // (every split at the tail) spread their nodes over the ranks.
    const std::size_t servers = m_servers.size();
    const std::size_t start = m_server_index < 0 ? 0 : static_cast<std::size_t>(m_server_index) + 1;
    const int target = m_servers[(start + m_placement_counter++) % servers];
    send_record(target, m_h_alloc, alloc.bytes());
}

void skiplist_core::on_alloc(void* self, int source, const std::byte* records, std::uint32_t bytes,
                             std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_alloc(source, record); });
}

void skiplist_core::handle_alloc(int, std::string_view record) {
    record_reader in(record);
    const skiplist_node_id origin = in.get_id();
    const auto hops = in.get<std::uint32_t>();
    const std::string_view separator = in.get_bytes();
    const unsigned height = in.get<std::uint8_t>();
    if (origin.rank < 0 || origin.rank >= m_engine->size() || height < 1 || height > m_config.max_height ||
        hops >= m_servers.size())
        throw decode_error("mpidict: skiplist_map allocation record with a bad origin, height or hop count");
    const skiplist_node_id fresh = allocate_local(separator, height);
    if (fresh.null()) {
        // This manager has no free slot: ask the next one around the ring; after
        // a full cycle the list is full.
        record_writer reply;
        if (hops + 1 >= m_servers.size()) {
            reply.put(origin.slot).put(origin.generation).put(std::uint8_t{0}).put_id(skiplist_node_id{});
            send_record(origin.rank, m_h_alloc_reply, reply.bytes());
            return;
        }
        ++m_stats.allocations_forwarded;
        record_writer onward;
        onward.put_id(origin).put(hops + 1).append(record.substr(node_id_bytes + 4));
        const std::size_t me = m_server_index < 0 ? 0 : static_cast<std::size_t>(m_server_index);
        send_record(m_servers[(me + 1) % m_servers.size()], m_h_alloc, onward.bytes());
        return;
    }
    node& created = m_nodes[fresh.slot];
    created.holds = static_cast<int>(in.get<std::uint32_t>());
    created.hold_level = 0;  // a new node's holds cover every level
    const unsigned links = in.get<std::uint8_t>();
    for (unsigned index = 0; index < links; ++index) {
        const unsigned level = in.get<std::uint8_t>();
        const skiplist_node_id to = in.get_id();
        const std::string_view next_separator = in.get_bytes();
        if (level >= height)
            throw decode_error("mpidict: skiplist_map allocation record links a level above the node's height");
        created.tower[level] = link{std::string(next_separator), to, true};
    }
    const auto entries = in.get<std::uint32_t>();
    if (entries > m_config.granularity + 1)
        throw decode_error("mpidict: skiplist_map allocation record carries more entries than a node holds");
    created.run.reserve(entries, record.size());
    for (std::uint32_t index = 0; index < entries; ++index) {
        const std::string_view key = in.get_bytes();
        const std::string_view value = in.get_bytes();
        const auto expires = in.get<expiry_time>();
        if (!created.run.empty() && !(created.run.key(created.run.size() - 1) < key))
            throw decode_error("mpidict: skiplist_map allocation record carries entries out of order");
        if (expires != 0 && (created.earliest_expiry == 0 || expires < created.earliest_expiry))
            created.earliest_expiry = expires;
        m_stats.payload_bytes += key.size() + value.size();
        ++m_stats.entries;
        created.run.push_back(key, value, expires);
    }
    record_writer reply;
    reply.put(origin.slot).put(origin.generation).put(std::uint8_t{1}).put_id(fresh);
    send_record(origin.rank, m_h_alloc_reply, reply.bytes());
}

void skiplist_core::on_alloc_reply(void* self, int, const std::byte* records, std::uint32_t bytes,
                                   std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_alloc_reply(record); });
}

void skiplist_core::handle_alloc_reply(std::string_view record) {
    record_reader in(record);
    const skiplist_node_id id{rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
    const bool ok = in.get<std::uint8_t>() != 0;
    const skiplist_node_id fresh = in.get_id();
    node& here = addressed(id, "allocation reply");
    if (!here.allocating)
        throw decode_error("mpidict: skiplist_map allocation reply for a node that is not splitting");
    here.allocating = false;
    const int caller = here.pending_source;
    const std::uint32_t slot = here.pending_slot;
    const std::uint32_t ticket = here.pending_ticket;
    if (ok) {
        // The upper half now lives in the new node: drop it here and link the new
        // node directly after this one on every level it shares with this tower.
        const std::size_t first_moved = here.run.lower_bound(here.split_separator);
        for (std::size_t index = first_moved; index < here.run.size(); ++index) {
            m_stats.payload_bytes -= here.run.key(index).size() + here.run.value(index).size();
            --m_stats.entries;
        }
        here.run.erase(first_moved, here.run.size());
        here.run.shrink_to_fit();
        unsigned linked = 0;  // the direct levels form a prefix (see start_split)
        for (unsigned level = 0; level < here.split_height; ++level) {
            if ((here.split_direct & (1u << level)) == 0)
                break;
            ++linked;
            const skiplist_node_id old = here.tower[level].to;
            here.tower[level] = link{here.split_separator, fresh, true};
            if (!old.null() && !m_config.unordered_for_testing) {
                // Requests this node sent to `old` before must reach it before
                // those the new node will send it: a marker behind them.
                record_writer marker;
                marker.put_id(fresh);
                send_record(old.rank, m_h_marker, marker.bytes());
            }
        }
        if (linked < here.split_height)
            send_link_up(fresh, here.split_separator, linked);
        reply_point(here, id, caller, slot, ticket, status_stored, {}, here.pending_hops);
    } else {
        // list_full: take the key that made the node overflow back out.
        ++m_stats.list_full;
        const std::size_t position = here.run.lower_bound(here.pending_key);
        if (here.run.holds_at(position, here.pending_key)) {
            m_stats.payload_bytes -= here.run.key(position).size() + here.run.value(position).size();
            --m_stats.entries;
            here.run.erase(position, position + 1);
        }
        reply_point(here, id, caller, slot, ticket, status_full,
                    "mpidict: skiplist_map is full (list_full): no free node on any of the " +
                        std::to_string(m_servers.size()) + " server ranks (node_slots_per_rank = " +
                        std::to_string(m_config.node_slots_per_rank) + ", G = " +
                        std::to_string(m_config.granularity) + " keys per node); the insert was not applied");
    }
    here.pending_source = -1;
    here.pending_slot = no_slot;
    here.pending_ticket = no_slot;
    here.pending_key.clear();
    here.split_separator.clear();
    release_held(id);
}

// ---------------------------------------------------------------------------
// Linking the upper levels of a taller node (the SPLIT of Figure 6(c))
// ---------------------------------------------------------------------------

void skiplist_core::on_link_up(void* self, int source, const std::byte* records, std::uint32_t bytes,
                               std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_link_up(source, record); });
}

void skiplist_core::send_link_up(skiplist_node_id fresh, std::string_view separator, unsigned level) {
    record_writer tail;
    tail.put_id(fresh).put_bytes(separator).put(static_cast<std::uint8_t>(level));
    forward(m_h_link_up, m_head, tail.bytes(), static_cast<int>(m_config.max_height) - 1);
}

void skiplist_core::handle_link_up(int source, std::string_view record) {
    record_reader in(record);
    const skiplist_node_id id{rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
    const int arrival = in.get<std::uint8_t>() & level_mask;
    in.get<std::uint8_t>();  // hops
    node& here = addressed(id, "link_up");
    if (hold_if_busy(here, m_h_link_up, source, record, arrival))
        return;
    const skiplist_node_id fresh = in.get_id();
    const std::string separator(in.get_bytes());
    const unsigned target_level = in.get<std::uint8_t>();
    if (fresh.rank < 0 || fresh.rank >= m_engine->size() || target_level >= here.tower.size() ||
        target_level >= m_config.max_height)
        throw decode_error("mpidict: skiplist_map link_up record names a bad node or level");
    // Travel towards the new node's separator (strictly before it) down to the
    // level being linked; the node where that stops precedes it on that level.
    for (int level = std::min(arrival, static_cast<int>(here.tower.size()) - 1);
         level >= static_cast<int>(target_level); --level) {
        const link& next = here.tower[static_cast<std::size_t>(level)];
        if (next.set && !next.to.null() && std::string_view(next.separator) < separator) {
            record_writer tail;
            tail.put_id(fresh).put_bytes(separator).put(static_cast<std::uint8_t>(target_level));
            ++m_stats.hops;
            forward(m_h_link_up, next.to, tail.bytes(), level);
            return;
        }
    }
    link& next = here.tower[target_level];
    record_writer links;
    links.put(fresh.slot).put(fresh.generation).put(std::uint8_t{0});
    links.put(static_cast<std::uint8_t>(target_level)).put(static_cast<std::uint8_t>(next.set));
    if (next.set) {
        // Splice the new node in after this one on the level.
        links.put_id(next.to).put_bytes(next.separator);
        const skiplist_node_id old = next.to;
        next = link{separator, fresh, true};
        order_new_link(here, id, static_cast<int>(target_level), fresh, separator, old);
    } else {
        links.put_id(skiplist_node_id{}).put_bytes({});  // not linked here yet: the new node stays lower
    }
    send_record(fresh.rank, m_h_set_links, links.bytes());
}

void skiplist_core::on_set_links(void* self, int source, const std::byte* records, std::uint32_t bytes,
                                 std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_set_links(source, record); });
}

void skiplist_core::handle_set_links(int source, std::string_view record) {
    record_reader in(record);
    const skiplist_node_id id{rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
    in.get<std::uint8_t>();
    node& here = addressed(id, "set_links");
    if (hold_if_busy(here, m_h_set_links, source, record))
        return;
    const unsigned level = in.get<std::uint8_t>();
    const bool linked = in.get<std::uint8_t>() != 0;
    const skiplist_node_id to = in.get_id();
    const std::string separator(in.get_bytes());
    if (level >= here.tower.size() || (level > 0 && !here.tower[level - 1].set) || here.tower[level].set)
        throw decode_error("mpidict: skiplist_map set_links record for a level that is not the next to link");
    if (!linked)
        return;  // the predecessor was not linked on that level: this node stays this tall
    here.tower[level] = link{separator, to, true};
    if (!to.null())
        order_new_link(here, id, static_cast<int>(level), to, separator, skiplist_node_id{});
    // One level at a time, bottom up: a node linked on every level below the
    // next one is on every path into its range, which the ordering markers need.
    if (level + 1 < here.tower.size())
        send_link_up(id, here.separator, level + 1);
}

// ---------------------------------------------------------------------------
// Non-overtaking when a link changes
// ---------------------------------------------------------------------------

void skiplist_core::order_new_link(node& from, skiplist_node_id, int level, skiplist_node_id target,
                                   std::string_view target_separator, skiplist_node_id old_successor) {
    if (m_config.unordered_for_testing)
        return;
    // 1. The target holds every request until the clears below arrive.  This
    //    record travels on the same rank pair as every request `from` will send
    //    it over the new link, so it arrives first.
    int expected = 1;
    if (!old_successor.null())
        ++expected;
    record_writer expect;
    expect.put(target.slot).put(target.generation).put(static_cast<std::int32_t>(expected));
    expect.put(static_cast<std::uint8_t>(level));
    send_record(target.rank, m_h_expect, expect.bytes());
    // 2. A marker along the old way to the target: the route a request for the
    //    target's separator took before the change (below `level`).  It queues
    //    behind everything `from` sent that way and clears the target on arrival.
    record_writer tail;
    tail.put(static_cast<std::uint8_t>(op::marker)).put(static_cast<std::int32_t>(target.rank)).put(no_slot).put(no_slot);
    record_writer target_bytes;
    target_bytes.put_id(target);
    tail.put(expiry_time{0}).put_bytes(target_separator).put_bytes(target_bytes.bytes());
    const int below = forward_level(from, target_separator, level - 1, false);
    if (below >= 0) {
        forward(m_h_point, from.tower[static_cast<std::size_t>(below)].to, tail.bytes(), below);
    } else {
        // Before the change the target's keys were this node's own: nothing of
        // ours is on the way to it.
        record_writer clear;
        clear.put(target.slot).put(target.generation);
        send_record(target.rank, m_h_clear, clear.bytes());
    }
    // 3. The successor the link used to reach: what we sent it directly must be
    //    handled there before what now reaches it through the target.
    if (!old_successor.null()) {
        record_writer marker;
        marker.put_id(target);
        send_record(old_successor.rank, m_h_marker, marker.bytes());
    }
}

void skiplist_core::on_expect(void* self, int, const std::byte* records, std::uint32_t bytes, std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) {
        record_reader in(record);
        const skiplist_node_id id{core->rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
        const auto expected = in.get<std::int32_t>();
        const auto level = in.get<std::uint8_t>();
        if (expected < 0 || expected > 2 || level >= core->m_config.max_height)
            throw decode_error("mpidict: skiplist_map expect record with a bad count or level");
        node& here = core->addressed(id, "expect");
        here.holds += expected;
        here.hold_level = std::min(here.hold_level, level);
        core->release_held(id);
    });
}

void skiplist_core::on_marker(void* self, int, const std::byte* records, std::uint32_t bytes, std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) {
        // Everything the marker's sender sent to this rank before it has been
        // handled (or is queued, in order, at its node): the new node may go on.
        record_reader in(record);
        const skiplist_node_id target = in.get_id();
        if (target.rank < 0 || target.rank >= core->m_engine->size())
            throw decode_error("mpidict: skiplist_map marker record names a bad node");
        record_writer clear;
        clear.put(target.slot).put(target.generation);
        core->send_record(target.rank, core->m_h_clear, clear.bytes());
    });
}

void skiplist_core::on_clear(void* self, int, const std::byte* records, std::uint32_t bytes, std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_clear(record); });
}

void skiplist_core::handle_clear(std::string_view record) {
    record_reader in(record);
    const skiplist_node_id id{rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
    node& here = addressed(id, "clear");
    --here.holds;
    release_held(id);
}

// ---------------------------------------------------------------------------
// Range queries (Listing 2): located like a find, then along level 0
// ---------------------------------------------------------------------------

void skiplist_core::on_range(void* self, int source, const std::byte* records, std::uint32_t bytes,
                             std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_range(source, record); });
}

void skiplist_core::handle_range(int source, std::string_view record) {
    record_reader in(record);
    const skiplist_node_id id{rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
    const std::uint8_t level_byte = in.get<std::uint8_t>();
    const std::uint8_t hops = in.get<std::uint8_t>();
    const int level = level_byte & level_mask;
    const std::string_view tail = record.substr(header_bytes);
    if ((level_byte & route_shortcut) != 0 && !live(id)) {
        fall_back_to_head(m_h_range, tail, level_byte, hops);  // see handle_point
        return;
    }
    node& here = addressed(id, "range");
    if (hold_if_busy(here, m_h_range, source, record, level))
        return;
    if (id == m_head)
        ++m_stats.head_visits;
    const auto caller = in.get<std::int32_t>();
    const auto slot = in.get<std::uint32_t>();
    auto sequence = in.get<std::uint32_t>();
    const bool bounded = in.get<std::uint8_t>() != 0;
    std::uint64_t limit = in.get<std::uint64_t>();
    const std::string_view lo = in.get_bytes();
    const std::string_view hi = in.get_bytes();
    const std::string_view pattern_bytes = in.get_bytes();
    if (caller < 0 || caller >= m_engine->size() || limit == 0)
        throw decode_error("mpidict: skiplist_map range record with a bad caller or limit");
    std::optional<key_pattern> pattern;
    if (!pattern_bytes.empty())
        pattern = key_pattern::deserialize(pattern_bytes);
    if (lo < std::string_view(here.separator) && sequence == 0) {
        // Entered above lo (see handle_point): start again at the head.
        ++m_stats.hops;
        if ((level_byte & route_shortcut) != 0)
            fall_back_to_head(m_h_range, tail, level_byte, hops);
        else
            forward(m_h_range, m_head, tail, static_cast<int>(m_config.max_height) - 1, level_byte & route_free,
                    next_hops(hops));
        return;
    }
    const bool climb = (level_byte & route_free) != 0 && sequence == 0;
    const int next_level = forward_level(here, lo, climb ? static_cast<int>(here.tower.size()) - 1 : level, false);
    if (next_level >= 0) {
        ++m_stats.hops;
        forward(m_h_range, here.tower[static_cast<std::size_t>(next_level)].to, tail, next_level,
                level_byte & route_free, next_hops(hops));
        return;
    }
    ++m_stats.handled;
    purge_expired(here, clock_now());
    const sorted_run& run = here.run;
    std::size_t it = run.lower_bound(lo);
    const link& next = here.tower[0];
    const std::size_t room = m_engine->max_record_bytes() - runtime::reply_header_bytes - 16;
    // Where a pattern query goes after `key`: the smallest key above it that can
    // match (nullopt: nothing more can).
    auto skip_to = [&](std::string_view key) { return pattern->next_candidate(key); };
    // Parts of at most one message each; the last part of the query says so.
    while (true) {
        record_writer part;
        std::uint32_t entries = 0;
        std::size_t bytes = 0;
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
            if (entries > 0 && bytes + size > room)
                break;
            part.put_bytes(key).put_bytes(value);
            bytes += size;
            ++entries;
            if (limit != unlimited)
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
        record_writer out;
        out.put(slot).put(sequence).put(static_cast<std::uint8_t>(last)).put(entries).append(part.bytes());
        send_record(caller, m_h_range_part, out.bytes());
        ++m_stats.range_parts;
        ++sequence;
        if (!node_done)
            continue;
        if (more_nodes) {
            record_writer onward;
            onward.put(caller).put(slot).put(sequence).put(static_cast<std::uint8_t>(bounded)).put(limit);
            if (!pattern) {
                onward.put_bytes(next.separator).put_bytes(hi).put_bytes({});
                ++m_stats.hops;
                forward(m_h_range, next.to, onward.bytes(), 0);
                return;
            }
            onward.put_bytes(*resume).put_bytes(hi).put_bytes(pattern_bytes);
            const int level = forward_level(here, *resume, static_cast<int>(here.tower.size()) - 1, false);
            MPIDICT_ASSERT(level >= 0, "a pattern query resumes beyond this node's range");
            ++m_stats.hops;
            forward(m_h_range, here.tower[static_cast<std::size_t>(level)].to, onward.bytes(), level);
        }
        return;
    }
}

void skiplist_core::on_range_part(void* self, int source, const std::byte* records, std::uint32_t bytes,
                                  std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_range_part(source, record); });
}

void skiplist_core::handle_range_part(int source, std::string_view record) {
    record_reader in(record);
    const auto slot = in.get<std::uint32_t>();
    const auto sequence = in.get<std::uint32_t>();
    const bool last = in.get<std::uint8_t>() != 0;
    const auto entries = in.get<std::uint32_t>();
    auto found = m_ranges.find(slot);
    if (found == m_ranges.end())
        throw decode_error("mpidict: skiplist_map range part for request slot " + std::to_string(slot) +
                           ", which has no range in progress");
    range_state& state = found->second;
    if (state.parts.count(sequence) != 0 || (state.last != no_slot && sequence > state.last))
        throw decode_error("mpidict: skiplist_map range part " + std::to_string(sequence) + " arrived twice or late");
    if (state.streaming && sequence < state.next)
        throw decode_error("mpidict: skiplist_map range part " + std::to_string(sequence) + " arrived twice");
    state.parts.emplace(sequence, std::string(in.rest()));
    state.counts.emplace(sequence, entries);
    if (last)
        state.last = sequence;
    if (state.streaming) {
        state.source = source;
        advance_stream(slot, state);
        return;
    }
    if (state.last == no_slot || state.parts.size() != std::size_t(state.last) + 1)
        return;
    // Every part is here: hand the request its entries in key order.
    std::string result;
    std::uint32_t total = 0;
    for (auto& [index, bytes] : state.parts) {
        result += bytes;
        total += state.counts[index];
    }
    m_ranges.erase(found);
    deliver(take_range_sequence(slot), completion{source, slot, total, std::move(result)});
}

std::uint64_t skiplist_core::take_range_sequence(std::uint32_t slot) {
    auto found = m_range_sequence.find(slot);
    MPIDICT_ASSERT(found != m_range_sequence.end(), "a range without an issue number");
    const std::uint64_t sequence = found->second;
    m_range_sequence.erase(found);
    return sequence;
}

// ---------------------------------------------------------------------------
// Ranges in mode total_order: split over the towers (the seed's Listing 2)
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

void skiplist_core::on_range_split(void* self, int source, const std::byte* records, std::uint32_t bytes,
                                   std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_range_split(source, record); });
}

void skiplist_core::handle_range_split(int source, std::string_view record) {
    record_reader in(record);
    const skiplist_node_id id{rank(), in.get<std::uint32_t>(), in.get<std::uint32_t>()};
    const int arrival = in.get<std::uint8_t>() & level_mask;
    const std::uint8_t hops = in.get<std::uint8_t>();
    node& here = addressed(id, "range split");
    if (hold_if_busy(here, m_h_range_split, source, record, arrival))
        return;
    if (id == m_head)
        ++m_stats.head_visits;
    const auto caller = in.get<std::int32_t>();
    const auto slot = in.get<std::uint32_t>();
    const bool bounded = in.get<std::uint8_t>() != 0;
    const auto limit = in.get<std::uint64_t>();
    const std::string_view lo = in.get_bytes();
    const std::string_view hi = in.get_bytes();
    const std::string_view pattern_bytes = in.get_bytes();
    if (caller < 0 || caller >= m_engine->size() || limit == 0 || (bounded && hi <= lo) ||
        lo < std::string_view(here.separator))
        throw decode_error("mpidict: skiplist_map range split record with a bad caller, limit, interval or node");
    std::optional<key_pattern> pattern;
    if (!pattern_bytes.empty())
        pattern = key_pattern::deserialize(pattern_bytes);
    auto send_piece = [&](skiplist_node_id to, int level, std::string_view from, std::string_view upto, bool up_bounded) {
        record_writer tail;
        tail.put(caller).put(slot).put(static_cast<std::uint8_t>(up_bounded)).put(limit);
        tail.put_bytes(from).put_bytes(upto).put_bytes(pattern_bytes);
        ++m_stats.hops;
        forward(m_h_range_split, to, tail.bytes(), level, 0, next_hops(hops));
    };
    std::string upto(hi);
    bool up_bounded = bounded;
    for (int level = std::min(arrival, static_cast<int>(here.tower.size()) - 1); level >= 0; --level) {
        const link& next = here.tower[static_cast<std::size_t>(level)];
        if (!next.set || next.to.null())
            continue;
        if (std::string_view(next.separator) <= lo) {
            send_piece(next.to, level, lo, upto, up_bounded);
            return;
        }
        if (!up_bounded || next.separator < upto) {
            send_piece(next.to, level, next.separator, upto, up_bounded);
            upto = next.separator;
            up_bounded = true;
        }
    }
    // [lo, upto) is this node's: answer it in parts of at most one message.
    ++m_stats.handled;
    purge_expired(here, clock_now());
    const sorted_run& run = here.run;
    const std::size_t room = m_engine->max_record_bytes() - runtime::reply_header_bytes - 32 - 2 * m_config.max_key_bytes;
    std::size_t it = run.lower_bound(lo);
    std::uint64_t left = limit;
    std::string from(lo);
    while (true) {
        record_writer data;
        std::uint32_t entries = 0;
        std::size_t bytes = 0;
        for (; it != run.size() && left != 0; ++it) {
            const std::string_view key = run.key(it);
            if (key >= std::string_view(upto) && up_bounded)
                break;
            if (pattern && !pattern->matches(key))
                continue;
            const std::string_view value = run.value(it);
            const std::size_t size = 8 + key.size() + value.size();
            if (entries > 0 && bytes + size > room)
                break;
            data.put_bytes(key).put_bytes(value);
            bytes += size;
            ++entries;
            if (left != unlimited)
                --left;
        }
        const bool done = it == run.size() || left == 0 || (up_bounded && run.key(it) >= std::string_view(upto));
        // A part that stops early covers up to the next key it did not send.
        const std::string part_end = done ? upto : std::string(run.key(it));
        const bool part_bounded = done ? up_bounded : true;
        record_writer out;
        out.put(slot).put(static_cast<std::uint8_t>(part_bounded)).put(entries).put_bytes(from).put_bytes(part_end);
        out.append(data.bytes());
        send_record(caller, m_h_range_piece, out.bytes());
        ++m_stats.range_parts;
        if (done)
            return;
        from = part_end;
    }
}

void skiplist_core::on_range_piece(void* self, int source, const std::byte* records, std::uint32_t bytes,
                                   std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_range_piece(source, record); });
}

void skiplist_core::handle_range_piece(int source, std::string_view record) {
    record_reader in(record);
    const auto slot = in.get<std::uint32_t>();
    const bool bounded = in.get<std::uint8_t>() != 0;
    const auto entries = in.get<std::uint32_t>();
    const std::string from(in.get_bytes());
    const std::string to(in.get_bytes());
    const std::string_view data = in.rest();
    auto found = m_ranges.find(slot);
    if (found == m_ranges.end() || !found->second.split)
        throw decode_error("mpidict: skiplist_map range piece for request slot " + std::to_string(slot) +
                           ", which has no split range in progress");
    range_state& state = found->second;
    if (from < state.cursor || (bounded && to <= from) || state.pieces.count(from) != 0)
        throw decode_error("mpidict: skiplist_map range piece that overlaps another");
    state.source = source;
    state.pieces.emplace(from, range_state::piece{to, bounded, entries, std::string(data)});
    // Take the pieces that now continue the chain from the cursor, in key order.
    for (auto next = state.pieces.find(state.cursor); next != state.pieces.end(); next = state.pieces.find(state.cursor)) {
        range_state::piece taken = std::move(next->second);
        state.pieces.erase(next);
        // Cut to the entries the limit leaves.
        std::uint32_t kept = 0;
        std::size_t offset = 0;
        byte_reader entry_reader(reinterpret_cast<const std::byte*>(taken.data.data()), taken.data.size());
        while (kept < taken.entries && state.remaining != 0) {
            entry_reader.take(entry_reader.read<std::uint32_t>());
            entry_reader.take(entry_reader.read<std::uint32_t>());
            ++kept;
            if (state.remaining != unlimited)
                --state.remaining;
        }
        offset = taken.data.size() - entry_reader.remaining();
        taken.data.resize(offset);
        state.entries += kept;
        if (kept > 0) {
            if (state.streaming) {
                if (!state.abandoned)
                    state.ready.push_back(std::move(taken.data));
            } else {
                state.collected += taken.data;
            }
        }
        state.cursor = taken.to;
        if (!taken.bounded || (state.bounded && taken.to == state.hi)) {
            if (!taken.bounded && state.bounded)
                throw decode_error("mpidict: skiplist_map range piece reaches past the query");
            finish_split_range(slot, state);
            return;
        }
    }
}

void skiplist_core::finish_split_range(std::uint32_t slot, range_state& state) {
    const auto count = static_cast<std::uint32_t>(std::min<std::uint64_t>(state.entries, no_slot - 1));
    if (state.streaming) {
        // advance_stream completes the request once `ready` is handed out.
        state.last = 0;
        state.next = 1;
        advance_stream(slot, state);
        return;
    }
    std::string result = std::move(state.collected);
    const int source = state.source < 0 ? rank() : state.source;
    m_ranges.erase(slot);
    deliver(take_range_sequence(slot), completion{source, slot, count, std::move(result)});
}

void skiplist_core::advance_stream(std::uint32_t slot, range_state& state) {
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
    const int source = state.source < 0 ? rank() : state.source;
    m_ranges.erase(slot);
    deliver(take_range_sequence(slot), completion{source, slot, count, {}});
}

bool skiplist_core::take_stream_part(std::uint32_t slot, std::string& part) {
    auto found = m_ranges.find(slot);
    if (found == m_ranges.end() || found->second.ready.empty())
        return false;
    if (m_mode == skiplist_consistency::sequential && !m_config.break_consistency_for_testing) {
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

void skiplist_core::abandon_stream(std::uint32_t slot) {
    auto found = m_ranges.find(slot);
    if (found == m_ranges.end())
        return;
    found->second.abandoned = true;
    found->second.ready.clear();
    advance_stream(slot, found->second);
}

// ---------------------------------------------------------------------------
// Local views, statistics, collectives
// ---------------------------------------------------------------------------

void skiplist_core::for_all_local(const std::function<void(std::string_view, std::string_view, expiry_time)>& visit) {
    const expiry_time now = clock_now();
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

std::size_t skiplist_core::local_size() const {
    const expiry_time now = clock_now();
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

skiplist_local_statistics skiplist_core::local_statistics() const { return m_stats; }

void skiplist_core::reset_local_statistics() {
    const auto nodes = m_stats.nodes;
    const auto entries = m_stats.entries;
    const auto payload = m_stats.payload_bytes;
    m_stats = skiplist_local_statistics{};
    m_stats.nodes = nodes;
    m_stats.entries = entries;
    m_stats.payload_bytes = payload;
}

void skiplist_core::flush() {
    m_engine->flush();
    sweep_expired();
    unlink_emptied();
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

void skiplist_core::on_unlinked(void* self, int source, const std::byte* records, std::uint32_t bytes,
                                std::uint32_t count) {
    auto* core = static_cast<skiplist_core*>(self);
    for_each_record(records, bytes, count, [&](std::string_view record) { core->handle_unlinked(source, record); });
}

void skiplist_core::handle_unlinked(int source, std::string_view record) {
    record_reader in(record);
    const skiplist_node_id id = in.get_id();
    const auto height = in.get<std::uint8_t>();
    if (id.rank != source || height == 0 || height > m_config.max_height)
        throw decode_error("mpidict: skiplist_map unlink record from rank " + std::to_string(source) +
                           " names a node of another rank or a bad height");
    std::vector<link> tower(height);
    for (auto& level : tower) {
        level.to = in.get_id();
        level.separator = std::string(in.get_bytes());
        level.set = true;
        if (!level.to.null() && (level.to.rank < 0 || level.to.rank >= m_engine->size()))
            throw decode_error("mpidict: skiplist_map unlink record names a bad successor");
    }
    if (!in.empty())
        throw decode_error("mpidict: skiplist_map unlink record has trailing bytes");
    m_unlinked[id] = std::move(tower);
}

void skiplist_core::unlink_emptied() {
    std::vector<std::uint32_t> emptied;
    for (std::uint32_t slot = 0; slot < m_nodes.size(); ++slot) {
        const node& here = m_nodes[slot];
        if (!here.live || !here.run.empty() || here.separator.empty() || here.holds != 0 || here.allocating ||
            here.holding_records())
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
    m_engine->sum(std::span<const std::int64_t>(&mine, 1), std::span<std::int64_t>(&total, 1),
                  "skiplist_map.unlink");
    if (total == 0)
        return;
    for (const std::uint32_t slot : emptied) {
        const node& here = m_nodes[slot];
        record_writer announce;
        announce.put_id(skiplist_node_id{rank(), slot, here.generation})
            .put(static_cast<std::uint8_t>(here.tower.size()));
        for (const link& level : here.tower)
            announce.put_id(level.to).put_bytes(level.separator);
        for (int destination = 0; destination < m_engine->size(); ++destination) {
            if (destination == rank())
                handle_unlinked(rank(), announce.bytes());
            else
                send_record(destination, m_h_unlinked, announce.bytes());
        }
    }
    m_engine->flush();
    if (m_unlinked.size() != static_cast<std::size_t>(total))
        throw decode_error("mpidict: skiplist_map unlink: " + std::to_string(m_unlinked.size()) +
                           " emptied nodes announced, " + std::to_string(total) + " counted");
    for (std::uint32_t slot = 0; slot < m_nodes.size(); ++slot) {
        node& here = m_nodes[slot];
        if (!here.live || m_unlinked.count(skiplist_node_id{rank(), slot, here.generation}) != 0)
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
    for (auto route = m_routes.begin(); route != m_routes.end();)
        route = m_unlinked.count(route->second) != 0 ? m_routes.erase(route) : std::next(route);
    ++m_routes_version;
    for (const std::uint32_t slot : emptied) {
        node& here = m_nodes[slot];
        const std::uint32_t generation = here.generation;
        here = node{};
        here.generation = generation;  // allocate_local gives the slot's next node generation + 1
        m_free.push_back(slot);
        --m_stats.nodes;
        ++m_stats.unlinked;
    }
    m_unlinked.clear();
    // No rank may send a new operation until every rank has changed its links:
    // a rank that left the flush early could otherwise reach a node here that
    // still links an emptied node, or one that is already freed elsewhere.
    std::int64_t none = 0, ignored = 0;
    m_engine->sum(std::span<const std::int64_t>(&none, 1), std::span<std::int64_t>(&ignored, 1),
                  "skiplist_map.unlinked");
}

void skiplist_core::destroy() { m_engine->destroy(); }

std::string skiplist_core::check_local_invariants() const {
    for (std::size_t slot = 0; slot < m_nodes.size(); ++slot) {
        const node& here = m_nodes[slot];
        if (!here.live)
            continue;
        const std::string where = "node " + std::to_string(slot) + " on rank " + std::to_string(rank());
        if (here.holds != 0 || here.allocating || here.holding_records())
            return where + " still holds requests after a flush";
        for (std::size_t index = 0; index < here.run.size(); ++index) {
            if (index > 0 && !(here.run.key(index - 1) < here.run.key(index)))
                return where + " has an unsorted run";
            if (here.run.key(index) < std::string_view(here.separator))
                return where + " holds a key below its separator";
        }
        if (here.run.size() > m_config.granularity)
            return where + " holds more than G keys";
        for (std::size_t level = 0; level < here.tower.size(); ++level) {
            const link& next = here.tower[level];
            if (!next.set || next.to.null())
                continue;
            if (!(here.separator < next.separator))
                return where + " links level " + std::to_string(level) + " backwards";
            if (level == 0 && !here.run.empty() && !(here.run.key(here.run.size() - 1) < std::string_view(next.separator)))
                return where + " holds a key at or above its successor's separator";
        }
    }
    return {};
}

}  // namespace detail
}  // namespace mpidict
