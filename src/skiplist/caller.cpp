// The caller role: issue order, per-key order, the hold-back queue, and the
// point and range records a caller sends.  See skiplist_caller.hpp.

#include "mpidict/detail/skiplist_caller.hpp"

#include <cstdlib>
#include <span>
#include <vector>

#include "mpidict/error.hpp"
#include "split_ranges.hpp"

namespace mpidict::detail {

namespace {

// Mode sequential orders ranges against this caller's point operations (issue
// 42): a range waits until no earlier point operation of this caller on a key
// in its interval is in flight (nor an earlier range overlapping it), and a
// point operation waits while a range in flight covers its key; the issue
// queue keeps whatever waits in issue order.
// Without this a range overtook an insert waiting behind another on its key,
// and the hold-back queue delivered its stale reply after the insert's.
bool orders_ranges(skiplist_consistency mode, const skiplist_map_config& config) {
    return mode == skiplist_consistency::sequential && !config.unordered_for_testing &&
           !config.break_consistency_for_testing;
}

// MPIDICT_SKIPLIST_BUDGETED_SPLIT=1: ranges with a limit split too, budgeted
// (modes sequential and none; off by default, see dispatch_range).
bool budgeted_split_ranges() {
    static const bool on = [] {
        const char* text = std::getenv("MPIDICT_SKIPLIST_BUDGETED_SPLIT");
        return text != nullptr && *text != '\0' && std::string_view(text) != "0";
    }();
    return on;
}

// MPIDICT_SKIPLIST_DIRECT_RANGES=0: ranges with a limit walk level 0 (or
// split budgeted) instead of going straight to the directory's nodes (for
// measurements of the walk against direct ranges in one binary).
bool direct_ranges_enabled() {
    static const bool on = [] {
        const char* text = std::getenv("MPIDICT_SKIPLIST_DIRECT_RANGES");
        return text == nullptr || *text == '\0' || std::string_view(text) != "0";
    }();
    return on;
}

bool in_interval(std::string_view key, std::string_view lo, std::string_view hi, bool bounded) {
    return key >= lo && (!bounded || key < hi);
}

// An earlier point operation on a key in [lo, hi) is in flight (m_keys).
template <class Keys>
bool point_in_flight(const Keys& keys, std::string_view lo, std::string_view hi, bool bounded) {
    for (const auto& [key, state] : keys)
        if (state.outstanding > 0 && in_interval(key, lo, hi, bounded))
            return true;
    return false;
}

// A range's lo: a level-0 walk's `cursor` (see send_range); an ascending
// split range's `top` (its cursor moves up as its pieces chain, and a range
// that went ahead may run again from lo: the order asks for the whole interval).
template <class State>
std::string_view range_lo(const State& state) {
    return state.split && !state.descending ? std::string_view(state.top) : std::string_view(state.cursor);
}

// A range that has left covers `key` (m_ranges; split ones too, issue 42).
template <class Ranges>
bool covered_by_range(const Ranges& ranges, std::string_view key) {
    for (const auto& [slot, state] : ranges)
        if ((state.split || state.remaining != 0) && in_interval(key, range_lo(state), state.hi, state.bounded))
            return true;
    return false;
}

// A range that has left overlaps [lo, hi) (m_ranges): two ranges of one caller
// on a common key must read it in issue order too (monotonic reads; the
// simulation's history check caught an earlier range seeing a newer value than
// a later one that was in flight with it).
template <class Ranges>
bool range_in_flight(const Ranges& ranges, std::string_view lo, std::string_view hi, bool bounded) {
    for (const auto& [slot, state] : ranges)
        if ((state.split || state.remaining != 0) && (!bounded || range_lo(state) < hi) &&
            (!state.bounded || lo < std::string_view(state.hi)))
            return true;
    return false;
}

// Mode sequential: whether a range that range_in_flight holds back may go
// ahead of the earlier ranges it overlaps (caller_ranges.cpp, "Ranges that go
// ahead"): it and each of them run ascending (a level-0 walk or split), are not streamed and
// return their entries (a count or erase_range returns none to compare, and an
// erase_range writes: neither goes ahead, nor does a range of one).
// `after` receives their issue numbers.
template <class Ranges>
bool may_go_ahead(const Ranges& ranges, std::string_view lo, std::string_view hi, bool bounded, bool streaming,
                  bool descending, bool counting, std::vector<std::uint64_t>& after) {
    after.clear();
    if (streaming || descending || counting)
        return false;
    for (const auto& [slot, state] : ranges) {
        if (!((state.split || state.remaining != 0) && (!bounded || range_lo(state) < hi) &&
              (!state.bounded || lo < std::string_view(state.hi))))
            continue;
        if (state.streaming || state.descending || state.counting)
            return false;
        after.push_back(state.sequence);
    }
    return true;
}

}  // namespace

bool skiplist_caller::trust_ranges_for_testing() {
    const char* text = std::getenv("MPIDICT_SKIPLIST_TRUST_RANGES_FOR_TESTING");
    return text != nullptr && *text != '\0' && std::string_view(text) != "0";
}

void skiplist_caller::set_consistency(skiplist_consistency mode) {
    if (static_cast<unsigned>(mode) > static_cast<unsigned>(skiplist_consistency::none))
        throw invalid_argument_error("mpidict: skiplist_map consistency " + std::to_string(static_cast<unsigned>(mode)) +
                                     " is not one of total_order, sequential, none");
    if (!idle())
        throw error("mpidict: skiplist_map set_consistency needs this caller's operations answered first");
    m_mode = mode;
    m_next_delivery = m_next_issue;
}

bool skiplist_caller::uses_shortcuts() const {
    const auto& config = m_shared.config;
    if (config.route_cache_entries == 0)
        return false;
    if (m_mode == skiplist_consistency::total_order)
        return config.break_consistency_for_testing;
    if (m_mode == skiplist_consistency::sequential && config.break_consistency_for_testing)
        return (m_next_ticket & 1) == 0;  // every other operation through the head (the reordering shortcut)
    return true;
}

std::uint8_t skiplist_caller::entry_level_byte(skiplist_node_id entry) const {
    std::uint8_t flags = 0;
    if (m_mode == skiplist_consistency::none)
        flags |= wire::route_free;
    if (!(entry == m_shared.head))
        flags |= wire::route_shortcut;
    return static_cast<std::uint8_t>((m_shared.top_level() & wire::level_mask) | flags);
}

bool skiplist_caller::in_issue_order() const {
    const auto& config = m_shared.config;
    return m_mode == skiplist_consistency::total_order && !config.unordered_for_testing &&
           !config.break_consistency_for_testing;
}

void skiplist_caller::deliver(std::uint64_t sequence, completion done) {
    const bool hold_back =
        m_mode == skiplist_consistency::sequential && !m_shared.config.break_consistency_for_testing;
    auto& stats = m_shared.stats;
    if (hold_back && sequence != m_next_delivery) {
        if (sequence < m_next_delivery || !m_hold_back.emplace(sequence, std::move(done)).second)
            throw decode_error("mpidict: skiplist_map operation " + std::to_string(sequence) + " completed twice");
        ++stats.held_back;
        stats.hold_back_peak = std::max<std::uint64_t>(stats.hold_back_peak, m_hold_back.size());
        return;
    }
    auto complete = [this](completion& finished) {
        if (finished.slot != no_slot)
            m_shared.engine->complete_request(
                finished.source, finished.slot, finished.count,
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

// ---------------------------------------------------------------------------
// Point operations
// ---------------------------------------------------------------------------

void skiplist_caller::send_point(skiplist_op kind, std::uint32_t slot, std::string_view key, std::string_view value,
                                 expiry_time expires) {
    // One operation per key in flight from this caller: a later one waits here
    // until the earlier one is acknowledged, so this caller's operations on a key
    // take effect in the order it issued them, whatever paths they take.
    // Mode none (and the broken sequential mode) keeps no such order.
    // An async insert may be buffered and sent in a batch (caller_async.cpp);
    // anything else first sends that buffer and waits for a batch holding its key.
    if (buffer_async(kind, slot, key, value, expires))
        return;
    before_operation(&key);
    const auto& config = m_shared.config;
    const std::uint64_t sequence = next_issue();
    const bool ordered = m_mode != skiplist_consistency::none && !config.unordered_for_testing &&
                         !(m_mode == skiplist_consistency::sequential && config.break_consistency_for_testing);
    if (!ordered) {
        dispatch_point(kind, slot, std::string(key), value, expires, sequence, nullptr);
        return;
    }
    auto [state, fresh] = m_keys.try_emplace(std::string(key));
    if ((in_issue_order() && (!m_issue_queue.empty() || state->second.outstanding > 0)) ||
        (orders_ranges(m_mode, config) && (!m_issue_queue.empty() || covered_by_range(m_ranges, key)))) {
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

void skiplist_caller::dispatch_point(skiplist_op kind, std::uint32_t slot, const std::string& key,
                                     std::string_view value, expiry_time expires, std::uint64_t sequence,
                                     key_state* state) {
    std::uint32_t ticket = m_next_ticket++;
    if (ticket == no_slot)
        ticket = m_next_ticket++;
    m_tickets.emplace(ticket, ticket_state{key, sequence, state != nullptr});
    if (state)
        ++state->outstanding;
    const skiplist_node_id entry = uses_shortcuts() ? m_directory.entry_point(key) : m_shared.head;
    const std::uint8_t level_byte = entry_level_byte(entry);
    if (level_byte & wire::route_shortcut)
        ++m_shared.stats.shortcut_entries;
    const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<wire::point_header> + string_bytes(key) +
                              string_bytes(value);
    byte_writer out(m_shared.engine->reserve(entry.rank, m_shared.handlers.point, bytes), bytes);
    out.record(skiplist_shared::route(entry, level_byte & wire::level_mask, level_byte & ~wire::level_mask, 0))
        .record(wire::point_header{static_cast<std::uint8_t>(kind), m_shared.rank(), slot, ticket, expires});
    put_string(out, key);
    put_string(out, value);
    out.finish();
}

void skiplist_caller::handle_point_reply(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto reply = read_record<wire::point_reply_header>(in);
    const skiplist_node_id answered_by{reply.node_rank, reply.node_slot, reply.node_generation};
    const std::string_view separator = read_string(in);
    const std::string_view value = read_rest(in);
    const std::uint32_t slot = reply.slot, ticket = reply.ticket;
    const std::uint8_t status = reply.status, hops = reply.hops;
    if (answered_by.rank != source)
        throw decode_error("mpidict: skiplist_map answer from rank " + std::to_string(source) + " names node " +
                           describe(answered_by) + " of another rank");
    auto& stats = m_shared.stats;
    ++stats.answers;
    stats.answer_hops += hops & wire::hops_mask;
    if ((hops & wire::route_fell_back) != 0)
        ++stats.shortcut_failures;
    if (status == skiplist_status::full && !value.empty())
        m_shared.last_refusal = value;  // list_full: the message names the limit (skiplist_map::last_refusal)
    if (slot != no_slot && (slot & batch_slot_bit) != 0) {
        // An answer to a batch (send_batch_point): the ticket is the key's index.
        if (status > skiplist_status::full)
            throw decode_error("mpidict: skiplist_map batch answer with a bad status");
        m_directory.learn(separator, answered_by);
        if (m_batch && slot == batch_slot())
            m_batch->answer(ticket, status, value);
        else if (skiplist_batch_sink* batch = async_sink(slot))
            batch->answer(ticket, status, value);
        return;
    }
    auto owner = m_tickets.find(ticket);
    if (owner == m_tickets.end() || status > skiplist_status::full)
        throw decode_error("mpidict: skiplist_map answer for ticket " + std::to_string(ticket) +
                           ", which this caller did not send, or with a bad status");
    const std::string key = std::move(owner->second.key);
    const std::uint64_t sequence = owner->second.sequence;
    const bool ordered = owner->second.ordered;
    m_tickets.erase(owner);
    if (separator > std::string_view(key))
        throw decode_error("mpidict: skiplist_map answer from node " + describe(answered_by) +
                           " whose range starts above the key it answered for");
    if ((hops & wire::route_fell_back) != 0)
        m_directory.forget_failed(key, answered_by);  // the answer teaches the right one below
    m_directory.learn(separator, answered_by);
    completion done;
    if (slot != no_slot) {
        // The request's result: the status byte, then the value (or the message).
        done.source = source;
        done.slot = slot;
        done.count = 1;
        done.bytes.assign(1, static_cast<char>(status));
        done.bytes += value;
    } else if (status == skiplist_status::full) {
        ++m_async_rejected;
    }
    deliver(sequence, std::move(done));
    if (!ordered)
        return;
    auto state = m_keys.find(key);
    if (state == m_keys.end())
        return;
    struct drain_after {
        skiplist_caller& caller;
        ~drain_after() {
            if (!caller.m_issue_queue.empty())
                caller.drain_issue_queue();
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
// Ranges: the records (their answers: caller_ranges.cpp)
// ---------------------------------------------------------------------------

void skiplist_caller::send_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded,
                                 std::uint64_t limit, std::string_view pattern, bool streaming, bool descending,
                                 std::uint8_t counting) {
    // The interval, for the order of mode sequential: cursor = lo, hi,
    // bounded; `remaining` becomes nonzero when the query leaves (a split
    // range, total_order, sets them again in dispatch_range).
    before_operation(nullptr);  // after every async batch of this caller
    range_state& state = m_ranges[slot] = range_state{};
    state.streaming = streaming;
    state.cursor = std::string(lo);
    state.hi = std::string(hi);
    state.bounded = bounded;
    state.descending = descending;
    state.limit = limit;
    state.pattern = std::string(pattern);
    state.counting = counting != 0;
    state.sequence = m_range_sequence[slot] = next_issue();
    std::vector<std::uint64_t> after;
    if ((in_issue_order() && !m_issue_queue.empty()) ||
        (orders_ranges(m_mode, m_shared.config) &&
         (!m_issue_queue.empty() || point_in_flight(m_keys, lo, hi, bounded) ||
          (range_in_flight(m_ranges, lo, hi, bounded) &&
           !may_go_ahead(m_ranges, lo, hi, bounded, streaming, descending, counting != 0, after))))) {
        queued_operation later;
        later.range = true;
        later.slot = slot;
        later.key = std::string(lo);
        later.hi = std::string(hi);
        later.bounded = bounded;
        later.limit = limit;
        later.descending = descending;
        later.counting = counting;
        later.pattern = std::string(pattern);
        m_issue_queue.push_back(std::move(later));
        return;
    }
    // Marked before it leaves: sending may serve incoming records (a full
    // buffer), and an earlier range finishing then must keep its reads for
    // this one's check (m_speculating > 0), or this one waits for them forever.
    go_ahead(slot, std::move(after));
    dispatch_range(slot, lo, hi, bounded, limit, pattern, descending, counting);
}

void skiplist_caller::go_ahead(std::uint32_t slot, std::vector<std::uint64_t> after) {
    auto found = m_ranges.find(slot);
    if (after.empty() || found == m_ranges.end())
        return;
    range_state& state = found->second;
    state.speculative = true;
    state.after = std::move(after);
    ++m_speculating;
}

// A dispatch may serve incoming records (a send that finds its buffer full),
// and a range or point completing among them drains the queue again: that
// inner call returns at once (this loop goes on with whatever became free),
// and the operation leaves the queue before it is dispatched, so it is never
// sent twice and nothing refers into the queue across a send.
void skiplist_caller::drain_issue_queue() {
    if (m_draining)
        return;
    m_draining = true;
    struct reset {
        bool& flag;
        ~reset() { flag = false; }
    } draining{m_draining};
    while (!m_issue_queue.empty()) {
        const queued_operation& front = m_issue_queue.front();
        const bool sequential = orders_ranges(m_mode, m_shared.config);
        if (front.range) {
            std::vector<std::uint64_t> after;
            if (sequential && (point_in_flight(m_keys, front.key, front.hi, front.bounded) ||
                               (range_in_flight(m_ranges, front.key, front.hi, front.bounded) &&
                                !may_go_ahead(m_ranges, front.key, front.hi, front.bounded,
                                              m_ranges[front.slot].streaming, front.descending, front.counting != 0,
                                              after))))
                return;
            const queued_operation next = std::move(m_issue_queue.front());
            m_issue_queue.pop_front();
            go_ahead(next.slot, std::move(after));  // before it leaves, as in send_range
            dispatch_range(next.slot, next.key, next.hi, next.bounded, next.limit, next.pattern, next.descending,
                           next.counting);
        } else {
            if (sequential && covered_by_range(m_ranges, front.key))
                return;
            auto state = m_keys.try_emplace(front.key).first;
            if (state->second.outstanding > 0)
                return;
            const queued_operation next = std::move(m_issue_queue.front());
            m_issue_queue.pop_front();
            dispatch_point(next.kind, next.slot, state->first, next.value, next.expires, next.sequence,
                           &state->second);
        }
    }
}

void skiplist_caller::dispatch_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded,
                                     std::uint64_t limit, std::string_view pattern, bool descending,
                                     std::uint8_t counting) {
    const std::uint64_t wire_limit = limit == 0 ? skiplist_shared::unlimited : limit;
    const auto flags = static_cast<std::uint8_t>((bounded ? wire::range_bounded : 0) |
                                                 (descending ? wire::range_descending : 0) | counting);
    auto write = [&](runtime::handler_id handler, skiplist_node_id to, std::uint8_t level_byte, const auto& header) {
        const std::size_t bytes = wire_bytes<wire::route_header> + wire_bytes<std::decay_t<decltype(header)>> +
                                  string_bytes(lo) + string_bytes(hi) + string_bytes(pattern);
        byte_writer out(m_shared.engine->reserve(to.rank, handler, bytes), bytes);
        out.record(skiplist_shared::route(to, level_byte & wire::level_mask, level_byte & ~wire::level_mask, 0))
            .record(header);
        put_string(out, lo);
        put_string(out, hi);
        put_string(out, pattern);
        out.finish();
    };
    const bool total_order = m_mode == skiplist_consistency::total_order;
    // Modes sequential and none: an ascending range with a limit goes straight
    // to the nodes of its interval the directory names (caller_ranges.cpp,
    // "Direct ranges"), in parallel, where the walk visited them one by one.
    const bool direct = !total_order && pattern.empty() && !descending && counting == 0 &&
                        wire_limit != skiplist_shared::unlimited && uses_shortcuts() && direct_ranges_enabled();
    if ((total_order && !m_shared.config.break_consistency_for_testing) ||
        (!total_order && pattern.empty() && !descending &&
         (wire_limit == skiplist_shared::unlimited || budgeted_split_ranges() || direct))) {
        // Mode total_order: the range splits over the towers from the head (the
        // seed's Listing 2), so every piece takes the path a point operation on
        // its keys takes and none overtakes or is overtaken (skiplist_map.hpp).
        // Modes sequential and none (issue 42): ascending ranges without a
        // pattern or a limit split too, entering where a find on lo enters.
        // Ascending ranges with a limit go direct (send_direct_range) unless
        // MPIDICT_SKIPLIST_DIRECT_RANGES=0; then they walk level 0, or split
        // budgeted with budgeted_split_ranges() (split_ranges.hpp: it sent 1.6x
        // the entries kept and measured 0.70x the walk's rate on a quiet
        // machine; docs/skiplist_map.md, "Split ranges").  Patterns walk level 0
        // (their jumps over the towers skip the nodes that cannot match), as do
        // descending ranges (each step a locate, stopping at the limit).
        range_state& state = m_ranges[slot];
        state.split = true;
        state.cursor = std::string(lo);
        state.hi = std::string(hi);
        state.bounded = bounded;
        state.remaining = wire_limit;
        state.descending = descending;
        // top: where a descending chain has got to; an ascending one's lo (the
        // order of mode sequential asks for the whole interval: range_lo).
        state.top = descending ? descending_key(hi, bounded) : std::string(lo);
        state.entries = 0;
        state.pieces.clear();
        state.direct = direct;
        state.direct_sent = state.direct_got = 0;
        if (bounded && hi <= lo) {
            finish_split_range(slot, state);
            return;
        }
        if (total_order) {
            write(m_shared.handlers.range_split, m_shared.head, static_cast<std::uint8_t>(m_shared.top_level()),
                  wire::range_split_header{m_shared.rank(), slot, flags, wire_limit});
            return;
        }
        if (direct) {
            send_direct_range(slot, state);
            return;
        }
        const skiplist_node_id entry = uses_shortcuts() ? m_directory.entry_point(lo) : m_shared.head;
        split_ranges::send_split(m_shared, entry, entry_level_byte(entry), slot, lo, hi, flags, wire_limit);
        return;
    }
    m_ranges[slot].remaining = 1;  // it has left (covered_by_range)
    // A descending query enters at the node below hi: the last node that can
    // hold a key of the interval.
    const skiplist_node_id entry = !uses_shortcuts() ? m_shared.head
                                   : descending      ? m_directory.entry_below(hi, bounded)
                                                     : m_directory.entry_point(lo);
    const std::uint8_t level_byte = entry_level_byte(entry);
    if (level_byte & wire::route_shortcut)
        ++m_shared.stats.shortcut_entries;
    write(m_shared.handlers.range, entry, level_byte, wire::range_header{m_shared.rank(), slot, 0, flags, wire_limit});
}

}  // namespace mpidict::detail
