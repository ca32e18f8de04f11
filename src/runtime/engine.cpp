// The engine's flow-control core: outboxes and their groups (reserve_record,
// append), shipping (ship, ship_all and flush's ship_settling), the send queue
// (wait_for_queue_space, release_finished_sends), receiving (poll_once,
// handle_message, progress) and termination detection (flush).  The buffer
// format and the rules are in include/mpidict/runtime/engine.hpp and
// docs/runtime.md; routing, requests, collectives and the engine's life are in
// engine_routing.cpp, engine_requests.cpp, engine_collectives.cpp and
// engine_lifecycle.cpp.
//
// The flow-control invariants (docs/maintainers.md lists them too), each
// restated below at the code that keeps it, marked "Invariant (n)":
//  (1) Handlers never wait: no request, no flush; a send inside a handler never
//      waits for queue space (ship), so replies may exceed q (bounded by L).
//  (2) Handler output leaves when its message is done (handle_message), or,
//      under grid routing inside progress()'s polling loop, at that loop's end
//      (progress); any new place that handles messages ships it at its end.
//  (3) flush counts messages (loopback ones too): every path that sends
//      counts in m_messages_sent (ship), every handled message in
//      m_messages_handled or m_handled_next_round (handle_message).
//  (4) append serves (progress()) after every full buffer it ships outside a
//      handler; the fill mark (m_fill_bytes) and the q in effect
//      (m_release_queue) are fixed at construction; no size subtraction wraps.
//  (5) Every waiting loop serves (serve_round or progress + poll): wait, test,
//      the window wait, the flush reductions and flush's final wait.  A loop
//      that only releases sends can deadlock with a rank in the same loop.
//  (6) The inline reserve (engine.hpp) extends only an open plain group, which
//      only append opens, only in the outbox of a direct peer; ship clears
//      has_group.  Grid routing's per-pair order: engine_routing.cpp.

#include "mpidict/runtime/engine.hpp"
#include "mpidict/runtime/serving.hpp"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <vector>

#if MPIDICT_SMPI
#include <smpi/smpi.h>
#endif

#include "engine_internal.hpp"

namespace mpidict::runtime {

using namespace engine_internal;

class engine::sink final : public message_sink {
public:
    explicit sink(engine& owner) : m_owner(owner) {}
    void deliver(int source, int channel, std::span<const std::byte> message) override {
        m_owner.handle_message(source, channel, message);
    }

private:
    engine& m_owner;
};


std::size_t engine::fill_mark(const config& settings, std::size_t peers) {
    const std::size_t buffer = settings.buffer_bytes;
    if (settings.total_outbox_bytes == 0 || peers == 0 || settings.total_outbox_bytes / peers >= buffer)
        return buffer;
    return std::clamp(settings.total_outbox_bytes / peers, std::min<std::size_t>(buffer, minimum_fill_bytes), buffer);
}

engine::message_buffer engine::take_buffer() {
    if (!m_free_buffers.empty()) {
        message_buffer buffer = std::move(m_free_buffers.back());
        m_free_buffers.pop_back();
        buffer.size = 0;
        return buffer;
    }
    // Uninitialised on purpose: only the used prefix is ever read or sent.
    return message_buffer{std::unique_ptr<std::byte[]>(new std::byte[m_config.buffer_bytes]), 0};
}

void engine::recycle(message_buffer&& buffer) {
    // Released buffers are reused in release order; a few spares stay pooled.
    if (m_free_buffers.size() < m_release_queue + 4) {
        buffer.size = 0;
        m_free_buffers.push_back(std::move(buffer));
    }
}

void engine::update_high_water() {
    const std::size_t held = m_outbox_bytes + m_in_flight_bytes;
    if (held > m_stats.buffer_bytes_high_water)
        m_stats.buffer_bytes_high_water = held;
    if (m_in_flight.size() > m_stats.in_flight_high_water)
        m_stats.in_flight_high_water = m_in_flight.size();
}

std::byte* engine::reserve_record(int destination, handler_id handler, std::size_t bytes) {
    MPIDICT_ASSERT(handler < m_handlers.size(), "unregistered handler");
    if (bytes > max_record_bytes()) [[unlikely]]
        throw invalid_argument_error("mpidict: a record of " + std::to_string(bytes) +
                                     " bytes does not fit in one message (buffer_bytes = " +
                                     std::to_string(m_config.buffer_bytes) + ", so at most " +
                                     std::to_string(max_record_bytes()) +
                                     " bytes of key and values per operation)");
    const int hop = next_hop(destination);
    if (hop != destination) [[unlikely]]
        return append(hop, group_kind::routed, static_cast<std::uint32_t>(destination), handler, bytes, false);
    return append(destination, group_kind::plain, 0, handler, bytes, false);
}

std::byte* engine::reserve_many(int destination, handler_id handler, std::size_t bytes, std::uint32_t wanted,
                                std::uint32_t& granted) {
    MPIDICT_ASSERT(destination >= 0 && destination < m_size, "destination rank out of range");
    MPIDICT_ASSERT(wanted >= 1, "reserve_many wants at least one record");
    granted = 1;
    if (wanted == 1 || next_hop(destination) != destination) [[unlikely]]
        return reserve_record(destination, handler, bytes);
    if (bytes > max_record_bytes()) [[unlikely]]
        return reserve_record(destination, handler, bytes);  // throws the size error
    return append(destination, group_kind::plain, 0, handler, bytes, false, wanted, &granted);
}

std::byte* engine::append(int to, group_kind kind, std::uint32_t label, handler_id handler, std::size_t bytes,
                          bool deferred, std::uint32_t wanted, std::uint32_t* granted) {
    MPIDICT_ASSERT(wanted == 1 || kind != group_kind::routed, "routed records are appended one at a time");
    const std::size_t stride = bytes + (kind == group_kind::routed ? routing_overhead_bytes : 0);
    const std::size_t header = group_header_bytes + (kind == group_kind::forwarded ? routing_overhead_bytes : 0);
    for (;;) {
        outbox& box = m_outboxes[static_cast<std::size_t>(to)];
        if (!box.buffer.data) {
            box.buffer = take_buffer();
            m_outbox_bytes += m_config.buffer_bytes;
            update_high_water();
        }
        const std::size_t used = box.buffer.size;
        const bool extend = box.continues(kind, handler, bytes, label);
        const std::size_t opening = extend ? 0 : header;
        // An empty buffer takes one record of any size that passed the size
        // check (up to B), even above the fill mark.
        const std::size_t capacity = used == 0 ? std::max(m_fill_bytes, opening + stride) : m_fill_bytes;
        // Records that fit after the group header (if one opens); one record,
        // the common case, without a division.
        std::uint32_t fitting = 0;
        if (used + opening <= capacity) {
            const std::size_t room = capacity - used - opening;
            if (wanted == 1 || stride == 0)
                fitting = room >= stride ? wanted : 0;
            else
                fitting = static_cast<std::uint32_t>(std::min<std::size_t>(wanted, room / stride));
        }
        if (fitting > 0) {
            if (granted != nullptr)
                *granted = fitting;
            const std::size_t needed = opening + fitting * stride;
            if (used == 0)
                m_dirty.push_back(to);
            if (deferred) {
                if (!box.holds_forwards) {
                    box.holds_forwards = true;
                    ++m_forwards_waiting;
                }
            } else if (m_handler_depth > 0 && !box.holds_handler_output) {
                // Invariant (2).  Handler output (replies, forwarded work) leaves when the message
                // that caused it is done, or (grid routing) after the polling loop
                // that handled it (handle_message), so nobody waits on a rank that has
                // returned to computing.
                box.holds_handler_output = true;
                m_handler_dirty.push_back(to);
            }
            box.buffer.size = used + needed;
            std::byte* base = box.buffer.data.get();
            std::byte* record = base + used;
            if (extend) {
                add_to_group(box, fitting);
            } else {
                store<std::uint16_t>(record, handler);
                store<std::uint16_t>(record + 2, static_cast<std::uint16_t>(kind));
                store<std::uint32_t>(record + 4, static_cast<std::uint32_t>(bytes));
                store<std::uint32_t>(record + 8, fitting);
                if (kind == group_kind::forwarded)
                    store<std::uint32_t>(record + group_header_bytes, label);
                box.has_group = true;
                box.kind = kind;
                box.group_offset = used;
                box.group_handler = handler;
                box.group_record_bytes = static_cast<std::uint32_t>(bytes);
                box.group_label = label;
                record += header;
            }
            if (kind == group_kind::routed) {
                store<std::uint32_t>(record, label);
                record += routing_overhead_bytes;
            }
            return record;
        }
        // Full: ship it (which may run handlers that append here), then retry.
        // Invariant (4): outside a handler, serve after every full buffer.
        if (in_handler()) {
            ship(to, /*full=*/true);
        } else {
            const double start = now_seconds();
            ship(to, /*full=*/true);
            m_ship_seconds += now_seconds() - start;
            // Serve what arrived meanwhile: a rank streaming out records then
            // forwards and handles its peers' as it goes instead of saving
            // that work for its flush, where the ranks that saved the most
            // would keep the others waiting (docs/scaling.md).
            progress();
        }
    }
}

void engine::ship_settling(bool active) {
    // While messages keep arriving, a corner holds the records it forwards so
    // that one message per column peer carries its whole row's records, not
    // one per incoming message (at the end of a phase every row peer's last
    // buffer arrives at about the same time); once a round is quiet they go.
    if (!active || m_forwards_waiting == 0)
        ship_all();
    else
        ship_outboxes(/*holding_forwards=*/false);
}

bool engine::serve_round(bool settling) {
    bool active = progress();
    if (!m_dirty.empty()) {
        if (settling)
            ship_settling(active);
        else
            ship_all();
        active = true;
    }
    return active;
}

void engine::ship_forwards() {
    if (m_forwards_waiting != 0 && !in_handler())
        ship_outboxes(/*holding_forwards=*/true);
}

template <class Wanted>
void engine::ship_dirty_if(Wanted&& wanted, bool serve) {
    const std::vector<int> waiting = m_dirty;  // ship() edits m_dirty
    for (const int destination : waiting) {
        if (wanted(destination)) {
            ship(destination);
            if (serve)
                progress();
        }
    }
}

void engine::ship_outboxes(bool holding_forwards) {
    ship_dirty_if(
        [&](int destination) {
            return m_outboxes[static_cast<std::size_t>(destination)].holds_forwards == holding_forwards;
        },
        /*serve=*/false);
}

#if MPIDICT_SMPI
namespace {

// One value each for the whole simulation (every rank sets the same).
double simulated_record_seconds = 0;
double simulated_message_seconds = 0;

// A message of `records` records leaves or arrives (`messages` is 0 for a
// rank's messages to itself, which no MPI call carries).
void charge(std::uint64_t records, std::uint64_t messages) {
    const double seconds = simulated_record_seconds * static_cast<double>(records) +
                           simulated_message_seconds * static_cast<double>(messages);
    if (seconds > 0)
        smpi_execute(seconds);
}

}  // namespace

void set_simulated_costs(double seconds_per_record, double seconds_per_message) {
    simulated_record_seconds = seconds_per_record > 0 ? seconds_per_record : 0;
    simulated_message_seconds = seconds_per_message > 0 ? seconds_per_message : 0;
}

std::uint64_t engine::records_in(std::span<const std::byte> message) {
    std::uint64_t records = 0;
    const std::byte* cursor = message.data();
    const std::byte* const end = cursor + message.size();
    while (cursor < end) {
        const auto kind = static_cast<group_kind>(load<std::uint16_t>(cursor + 2) & group_kind_mask);
        std::uint64_t stride = load<std::uint32_t>(cursor + 4);
        const auto count = load<std::uint32_t>(cursor + 8);
        cursor += group_header_bytes;
        if (kind == group_kind::forwarded)
            cursor += routing_overhead_bytes;  // the origin's label
        else if (kind == group_kind::routed)
            stride += routing_overhead_bytes;  // each record's destination
        cursor += stride * count;
        records += count;
    }
    return records;
}
#endif

void engine::ship(int destination, bool full) {
    outbox& box = m_outboxes[static_cast<std::size_t>(destination)];
    if (box.buffer.empty())
        return;
    // Invariant (1): inside a handler a send never waits for queue space.
    if (!in_handler())
        wait_for_queue_space();
    // wait_for_queue_space may have run handlers that shipped this outbox already.
    outbox& current = m_outboxes[static_cast<std::size_t>(destination)];
    if (current.buffer.empty())
        return;
    message_buffer buffer = std::move(current.buffer);
    current.buffer = message_buffer{};
    ++current.generation;
    current.has_group = false;  // Invariant (6): the inline reserve never extends a shipped group
    current.holds_handler_output = false;
    if (current.holds_forwards) {
        current.holds_forwards = false;
        --m_forwards_waiting;
    }
    m_outbox_bytes -= m_config.buffer_bytes;
    m_dirty.erase(std::remove(m_dirty.begin(), m_dirty.end(), destination), m_dirty.end());
    const std::size_t size = buffer.size;
#if MPIDICT_SMPI
    charge(records_in(buffer.bytes()), destination == m_rank ? 0 : 1);
#endif
    // The first group's flags carry the message's marks: the sender's round
    // (see flush()), and urgent_flag when the first hop should forward at
    // once because someone is waiting.  Not in a flush: every rank is
    // flushing then and ships what it gathered each round, so forwarding at
    // once would only split the corner's buffers into a message per incoming
    // one (at 64 ranks it made grid routing send 1.5x the messages of direct
    // routing).
    std::byte* flags = buffer.data.get() + 2;
    auto marks = static_cast<std::uint16_t>((load<std::uint16_t>(flags) & ~epoch_flags) |
                                            ((m_epoch & epoch_mask) << epoch_shift));
    if (!full && m_routed && !m_in_flush)
        marks |= urgent_flag;
    store<std::uint16_t>(flags, marks);
    if (destination == m_rank) {
        // Loopback: handled by this rank's own progress, never through MPI.
        // Invariant (3): counted like any message.
        ++m_messages_sent;
        ++m_stats.loopback_messages;
        m_loopback.push_back(std::move(buffer));
        // Full progress, not only the loopback: a rank whose waits all complete
        // through its own loopback must still serve other ranks (otherwise a
        // client that is its own server starves every other client).
        if (!in_handler())
            progress();
        return;
    }
    if (m_in_flush && m_fault_drop_flush_message) {
        // Injected fault (tests only): the message vanishes without being counted.
        recycle(std::move(buffer));
        return;
    }
    // Full buffers (streams) go synchronously: that is what bounds a flooded
    // receiver.  Partial ones leave because someone waits (latency mode, handler
    // replies, flush); a standard send saves the receiver's acknowledgement on
    // the critical path, and their number is bounded by waits and requests.
    const int channel = m_routed ? m_relay_channel[static_cast<std::size_t>(destination)] : 0;
    const std::uint64_t ticket = m_transport->start_send(destination, buffer.bytes(), /*synchronous=*/full, channel);
    if (channel == 0)
        ++m_direct_in_flight;
    ++m_messages_sent;
    ++m_stats.messages_sent;
    m_stats.bytes_sent += size;
    m_in_flight_bytes += m_config.buffer_bytes;
    m_in_flight.push_back(in_flight_send{ticket, std::move(buffer), destination, channel});
    m_stuck.sent_to(destination);
    update_high_water();
    if (m_release_queue == 0 && !in_handler()) {
        // q = 0: no deferred release; the caller waits for this send to finish.
        while (!m_in_flight.empty()) {
            if (!progress())
                m_transport->idle();
        }
    }
}

// Invariant (5): this loop polls while it waits (a full queue may be waiting
// for a peer that waits on this rank).
void engine::wait_for_queue_space() {
    const std::size_t limit = std::max<std::size_t>(m_release_queue, 1);
    if (m_in_flight.size() < limit)
        return;
    ++m_stats.queue_stalls;
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::send_queue, "");
    release_finished_sends();
    unsigned idle_rounds = 0;
    while (m_in_flight.size() >= limit) {
        // Keep receiving: the destination may be waiting on us to drain its sends.
        bool active = poll_once();
        active |= release_finished_sends();
        backoff(active, idle_rounds);
    }
}

void engine::backoff(bool active, unsigned& idle_rounds) {
    m_stuck.tick();  // every waiting loop comes here each round
    // A few empty polls spin (a reply is usually microseconds away); after that
    // the transport lets other processes run, which matters when ranks outnumber cores.
#if MPIDICT_SMPI
    // Under SimGrid the transport's idle() blocks until one of its requests
    // completes (mpi_transport.cpp), and every spin is a simulation step.
    constexpr unsigned spins = 0;
#else
    constexpr unsigned spins = 32;
#endif
    if (active) {
        idle_rounds = 0;
    } else if (++idle_rounds > spins) {
        // Nothing for this container: serve this thread's others (a rank may
        // wait on one of them for this rank; serving.hpp), else idle.
        if (!serve_other_containers(this))
            m_transport->idle();
    }
}

bool engine::release_finished_sends() {
    bool released = false;
    for (auto it = m_in_flight.begin(); it != m_in_flight.end();) {
        if (m_transport->send_complete(it->ticket)) {
            m_in_flight_bytes -= m_config.buffer_bytes;
            if (it->channel == 0)
                --m_direct_in_flight;
            recycle(std::move(it->buffer));
            it = m_in_flight.erase(it);
            released = true;
        } else {
            ++it;
        }
    }
    return released;
}

bool engine::poll_once() {
    sink receiver(*this);
    // Relay messages make this rank forward; it takes them only while its
    // direct-channel sends, where forwarded records go, are below q.  Those
    // always complete (every rank keeps taking direct messages), so holding
    // relays back bounds a corner's memory without a cycle of waits.
    const bool take_relays = m_routed && m_direct_in_flight < std::max<std::size_t>(m_release_queue, 1);
    return m_transport->poll(receiver, take_relays ? 2 : 1);
}

void engine::handle_message(int source, int channel, std::span<const std::byte> message) {
    if (source != m_rank) {
        m_stuck.heard_from(source);
        ++m_stats.messages_received;
        m_stats.bytes_received += message.size();
    }
    const handler_scope scope(m_handler_depth);
    const std::byte* cursor = message.data();
    const std::byte* const end = message.data() + message.size();
    // The message's marks, on its first group's flags (see ship()).
    const bool marked = message.size() >= group_header_bytes;
    const std::uint16_t marks = marked ? load<std::uint16_t>(cursor + 2) : 0;
    const bool urgent = (marks & urgent_flag) != 0;
#if MPIDICT_SMPI
    const std::uint64_t records_before = m_stats.records_received;
#endif
    while (cursor != end) {
        if (static_cast<std::size_t>(end - cursor) < group_header_bytes)
            throw decode_error("mpidict: message from rank " + std::to_string(source) +
                               " ends inside a group header");
        const auto handler = load<std::uint16_t>(cursor);
        const auto kind = static_cast<group_kind>(load<std::uint16_t>(cursor + 2) & group_kind_mask);
        const auto record_bytes = load<std::uint32_t>(cursor + 4);
        const auto count = load<std::uint32_t>(cursor + 8);
        cursor += group_header_bytes;
        if (handler >= m_handlers.size())
            throw decode_error("mpidict: message from rank " + std::to_string(source) + " names handler " +
                               std::to_string(handler) + " but only " + std::to_string(m_handlers.size()) +
                               " are registered");
        int origin = source;
        std::uint64_t stride = record_bytes;
        if (kind == group_kind::forwarded) {
            if (static_cast<std::size_t>(end - cursor) < routing_overhead_bytes)
                throw decode_error("mpidict: message from rank " + std::to_string(source) +
                                   " ends inside a forwarded group's header");
            const auto label = load<std::uint32_t>(cursor);
            cursor += routing_overhead_bytes;
            if (label >= static_cast<std::uint32_t>(m_size))
                throw decode_error("mpidict: message from rank " + std::to_string(source) +
                                   " forwards records from rank " + std::to_string(label) + ", outside " +
                                   detail::communicator_of(m_size));
            origin = static_cast<int>(label);
        } else if (kind == group_kind::routed) {
            if (channel != 1)
                throw decode_error("mpidict: message from rank " + std::to_string(source) +
                                   " carries records to forward outside the relay channel");
            stride += routing_overhead_bytes;
        } else if (kind != group_kind::plain) {
            throw decode_error("mpidict: message from rank " + std::to_string(source) + " has a group of kind " +
                               std::to_string(static_cast<unsigned>(kind)) + ", which no rank sends");
        }
        const std::uint64_t group_bytes = stride * count;
        if (group_bytes > static_cast<std::uint64_t>(end - cursor) || count == 0)
            throw decode_error("mpidict: message from rank " + std::to_string(source) + " has a group of " +
                               std::to_string(count) + " records of " + std::to_string(record_bytes) +
                               " bytes but only " + std::to_string(end - cursor) + " bytes remain");
        if (kind == group_kind::routed) {
            forward_group(source, cursor, record_bytes, count, handler, urgent);
        } else {
            const handler_entry& entry = m_handlers[handler];
            entry.function(entry.context, origin, cursor, record_bytes, count);
            m_stats.records_received += count;
        }
        cursor += group_bytes;
    }
    // A message its sender shipped after its cut of the round this rank has
    // yet to contribute to counts from the next round on (see flush()).  The
    // stamp is the round modulo 4 and a sender is at most one round ahead; an
    // older message that aliases as "ahead" only counts one round late.
    const unsigned stamp = marked ? (marks >> epoch_shift) & epoch_mask : static_cast<unsigned>(m_epoch & epoch_mask);
    if (((stamp - m_epoch) & epoch_mask) == 1)
        ++m_handled_next_round;
    else
        ++m_messages_handled;
#if MPIDICT_SMPI
    charge(m_stats.records_received - records_before, source == m_rank ? 0 : 1);
#endif
    // Handler output leaves when this message is done, or, under grid routing
    // when it came through progress(), with the output of every message of its
    // polling loop: an owner's answers to one corner's message go to up to
    // sqrt(p) corners, and per incoming message that made O(p) messages per
    // rank.  (Under direct routing they all go back to the message's sender,
    // and waiting for the loop's end would only add a poll to every round trip.)
    // Invariant (2).
    if (m_handler_depth == 1 && !(m_polling && m_routed))
        ship_handler_output();  // still inside the handler scope, so these sends never block
}

void engine::ship_handler_output() {
    while (!m_handler_dirty.empty()) {
        const int destination = m_handler_dirty.back();
        m_handler_dirty.pop_back();
        if (m_outboxes[static_cast<std::size_t>(destination)].holds_handler_output)
            ship(destination);
    }
}

bool engine::drain_loopback() {
    if (in_handler())
        return false;
    bool active = false;
    while (!m_loopback.empty()) {
        message_buffer message = std::move(m_loopback.front());
        m_loopback.pop_front();
        handle_message(m_rank, 0, message.bytes());
        recycle(std::move(message));
        active = true;
    }
    return active;
}

void engine::deliver_loopback() {
    if (in_handler())
        throw error("mpidict: deliver_loopback called from a handler");
    ship(m_rank);  // loopback: queued and handled by the progress() it runs
    drain_loopback();
}

bool engine::progress() {
    if (t_served_from_outside == this) [[unlikely]] {
        // Another container's wait serves this one (serving.hpp).  Not while
        // this thread is inside one of this engine's calls further up the stack.
        t_served_from_outside = nullptr;
        if (m_user.load(std::memory_order_relaxed) == &t_thread_marker)
            return false;
    }
    bool active = drain_loopback();
    // Ship what waits in outboxes only when someone needs it or nothing else is
    // going on; callers that stream keep filling buffers instead.
    {
        // Urgent forwards of the messages handled in this loop leave together
        // after it (one message per column peer, not one per incoming message).
        const bool outer = !m_polling;
        m_polling = true;
        struct polling_guard {
            bool& flag;
            bool restore;
            ~polling_guard() { flag = restore; }
        } guard{m_polling, !outer};
        while (poll_once()) {
            active = true;
            // Release as we go: a rank that a flood keeps polling would otherwise hold
            // every reply it shipped meanwhile, matched or not, until the flood stops.
            release_finished_sends();
        }
    }
    if (!m_polling && !in_handler()) {
        if (!m_handler_dirty.empty()) {
            // Invariant (2), after the polling loop.  As handler output always leaves: without waiting for queue
            // space (and for loopback, without nested progress).
            const handler_scope scope(m_handler_depth);
            ship_handler_output();
        }
        if (m_urgent_forwards) {
            m_urgent_forwards = false;
            ship_forwards();
        }
    }
    active |= release_finished_sends();
    return active;
}

void engine::ship_all() {
    // In a flush, serve after each message: a flush may ship one outbox per
    // peer (62 at 1024 ranks under grid routing), and the messages that
    // arrive meanwhile are other ranks' flushes, whose records this rank
    // should forward or handle now rather than after packing all of its own
    // (the same reason append() serves after each full buffer).
    const bool serve = m_in_flush && !in_handler();
    // Under grid routing the outboxes to corners leave first: their records
    // need a second hop, which the corners can make while this rank ships the rest.
    if (m_routed)
        ship_dirty_if([&](int destination) { return m_relay_channel[static_cast<std::size_t>(destination)] != 0; },
                      serve);
    // ship() takes its destination off m_dirty, but shipping (and serving) may
    // run handlers that dirty other outboxes: loop until none is left.
    while (!m_dirty.empty()) {
        ship(m_dirty.front());
        if (serve)
            progress();
    }
}

void engine::flush() {
    check_alive("flush");
    if (in_handler())
        throw error("mpidict: flush() called from inside a visitor or handler; flush is collective and must be called by the application");
    const double start = now_seconds();
    ++m_stats.flushes;
    m_in_flush = true;
    struct flush_guard {
        bool& flag;
        ~flush_guard() { flag = false; }
    } guard{m_in_flush};
    // Termination (Mattern's colouring): a rank's contribution to a round is
    // its cut.  Every message carries the round its sender was in when it
    // left (ship: the epoch, rounds contributed so far); a rank counts as
    // handled only the messages sent before their senders' cuts, the others
    // once it has made its own (handle_message).  So a round's sums count
    // exactly the messages sent before the cut and those handled before it:
    // equal sums mean none was in flight across the cut, and as every rank
    // was quiet at its cut (nothing unsent, nothing unhandled), whatever a
    // rank handled after its cut was itself sent after one, which nothing
    // could have caused.  One round that finds everything delivered ends the
    // flush; a flush with nothing to do takes one reduction.
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::flush, "flush");
    std::int64_t pieces[tag_pieces];
    collective_tag("flush", pieces);
    for (;;) {
        // Settle locally: ship everything, handle what arrives, repeat until quiet.
        ship_all();
        for (;;) {
            const bool active = progress();
            if (!active && m_dirty.empty())
                break;
            ship_settling(active);
        }
        // Every round carries the tag (see sum()).
        const std::int64_t counts[2 + tag_pieces] = {m_messages_sent, m_messages_handled, pieces[0],
                                                     pieces[1],       pieces[2],          pieces[3]};
        // The cut: what this rank sends from here on belongs to the next round,
        // and the messages it held back as sent after their senders' cuts
        // count from the next round on.
        ++m_epoch;
        m_messages_handled += m_handled_next_round;
        m_handled_next_round = 0;
        std::int64_t totals[2 + tag_pieces] = {};
        reduce_serving(counts, totals);
        ++m_stats.flush_rounds;
        check_tag(pieces, totals + 2, "flush");
        if (totals[0] == totals[1])
            break;
    }
    // Every counted send was matched and handled; let those release their
    // buffers.  Keep serving meanwhile: a rank whose reduction completed first
    // may already have sent new work here, and handling it (a reply, a record
    // forwarded by a corner, a server's forward) may have put sends to a rank
    // that is itself in this loop in flight; such a send completes only while
    // its receiver polls.  (Waiting without polling deadlocked two LH*LH
    // servers under grid routing.)  Only the sends counted by the flush are
    // waited for, so new work arriving forever cannot hold the flush.
    std::vector<std::uint64_t> counted;
    for (const in_flight_send& send : m_in_flight)
        counted.push_back(send.ticket);
    unsigned idle_rounds = 0;
    // Invariant (5): this wait serves.
    while (!counted.empty()) {
        const bool active = serve_round();
        std::erase_if(counted, [&](std::uint64_t ticket) {
            return std::none_of(m_in_flight.begin(), m_in_flight.end(),
                                [&](const in_flight_send& send) { return send.ticket == ticket; });
        });
        backoff(active, idle_rounds);
    }
    m_stats.barrier_seconds += now_seconds() - start;
}

// Invariant (5): the reductions of flush, sum and check_same serve while they wait.
void engine::reduce_serving(std::span<const std::int64_t> input, std::span<std::int64_t> output) {
    // Non-blocking, and serving others meanwhile: a rank may enter this while
    // another still waits for an answer this rank owes it.
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::collective, "a reduction");
    m_transport->start_sum(input, output);
    unsigned idle_rounds = 0;
    while (!m_transport->sum_complete()) {
        backoff(serve_round(/*settling=*/true), idle_rounds);
    }
}

}  // namespace mpidict::runtime
