// Requests: a slot per outstanding operation (at most L, config::blocking_factor),
// the reply records of the engine's handler 0 that complete them, and the
// caller's test and wait.  A wait ships what holds its record at once (latency
// mode) and serves others while it waits (serve_round, engine.cpp).
#include "mpidict/runtime/engine.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "engine_internal.hpp"

namespace mpidict::runtime {

using namespace engine_internal;

std::uint32_t engine::open_request(op_kind kind) {
    if (kind >= m_stats.by_kind.size())
        throw invalid_argument_error("mpidict: operation kind " + std::to_string(kind) +
                                     " was never registered (engine::register_op_kind)");
    // Inside a handler the window may overflow: a handler must never wait.
    if (m_outstanding >= m_config.blocking_factor && !in_handler()) {
        ++m_stats.window_stalls;
        const stuck_wait_detector::scope watched(m_stuck, wait_kind::request_window, "");
        // Invariant (5): the window wait serves.
        unsigned idle_rounds = 0;
        while (m_outstanding >= m_config.blocking_factor) {
            // The records of outstanding requests may still sit in outboxes.
            ship_all();
            backoff(progress(), idle_rounds);
        }
    }
    std::uint32_t slot;
    if (!m_free_slots.empty()) {
        slot = m_free_slots.back();
        m_free_slots.pop_back();
    } else {
        slot = static_cast<std::uint32_t>(m_requests.size());
        m_requests.emplace_back();
    }
    request_slot& entry = m_requests[slot];
    entry.state = slot_state::pending;
    entry.failed = false;
    entry.kind = kind;
    entry.count = 0;
    entry.result.clear();
    ++m_outstanding;
    if (m_outstanding > m_stats.outstanding_requests_high_water)
        m_stats.outstanding_requests_high_water = m_outstanding;
    ++m_stats[kind].requests;
    return slot;
}

std::byte* engine::reserve_reply(int destination, std::uint32_t slot, std::uint32_t count,
                                 std::size_t result_bytes) {
    std::byte* out = reserve(destination, reply_handler, reply_header_bytes + result_bytes);
    store<std::uint32_t>(out, slot);
    store<std::uint32_t>(out + 4, count);
    return out + reply_header_bytes;
}

void engine::reply_error(int destination, std::uint32_t slot, std::string_view message) {
    const std::size_t room = max_record_bytes() - reply_header_bytes;
    const std::size_t length = std::min(message.size(), room);
    std::byte* out = reserve_reply(destination, slot, error_count, length);
    std::memcpy(out, message.data(), length);
}

void engine::handle_reply(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                          std::uint32_t count) {
    auto& self = *static_cast<engine*>(context);
    if (record_bytes < reply_header_bytes)
        throw decode_error("mpidict: reply from rank " + std::to_string(source) + " is " +
                           std::to_string(record_bytes) + " bytes, shorter than its header");
    for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
        self.complete_request(source, load<std::uint32_t>(records), load<std::uint32_t>(records + 4),
                              {records + reply_header_bytes, record_bytes - reply_header_bytes});
}

void engine::complete_request(int source, std::uint32_t slot, std::uint32_t count,
                              std::span<const std::byte> result) {
    if (slot >= m_requests.size())
        throw decode_error("mpidict: reply from rank " + std::to_string(source) + " names request " +
                           std::to_string(slot) + " which was never opened");
    request_slot& entry = m_requests[slot];
    if (entry.state == slot_state::abandoned) {
        entry.state = slot_state::free;
        ++entry.generation;
        entry.result.clear();
        m_free_slots.push_back(slot);
        --m_outstanding;
        return;
    }
    if (entry.state != slot_state::pending)
        throw decode_error("mpidict: reply from rank " + std::to_string(source) + " for request " +
                           std::to_string(slot) + " that is not pending");
    entry.count = count;
    entry.result.assign(result.begin(), result.end());
    entry.state = slot_state::done;
    entry.failed = entry.count == error_count;
    if (entry.failed)
        entry.count = 0;
    m_stats[entry.kind].values += entry.count;
    --m_outstanding;
}

bool engine::test_request(std::uint32_t slot) {
    request_slot& entry = m_requests[slot];
    if (entry.state == slot_state::done)
        return true;
    check_alive("test");
    if (in_handler())
        return false;
    const double start = now_seconds();
    ship_all();
    progress();
    m_stats[entry.kind].completion_seconds += now_seconds() - start;
    return m_requests[slot].state == slot_state::done;
}

void engine::wait_request(std::uint32_t slot) {
    if (m_requests[slot].state == slot_state::done)
        return;
    check_alive("wait");
    if (in_handler())
        throw error("mpidict: a visitor or handler must not wait on a request (it would block the rank's progress)");
    ++m_stats.waits;
    const double start = now_seconds();
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::request, op_kind_name(m_requests[slot].kind));
    // Latency mode: whatever holds this request's record leaves now.
    ship_all();
    unsigned idle_rounds = 0;
    // Invariant (5): the wait serves.
    while (m_requests[slot].state != slot_state::done) {
        backoff(serve_round(), idle_rounds);  // handlers may have queued records others wait for
    }
    m_stats[m_requests[slot].kind].completion_seconds += now_seconds() - start;
}

void engine::cancel_request(std::uint32_t slot) {
    request_slot& entry = m_requests[slot];
    MPIDICT_ASSERT(entry.state == slot_state::pending, "cancel_request on a slot that is not pending");
    entry.state = slot_state::free;
    ++entry.generation;
    --m_outstanding;
    m_free_slots.push_back(slot);
}

void engine::close_request(std::uint32_t slot) {
    request_slot& entry = m_requests[slot];
    if (entry.state == slot_state::pending) {
        entry.state = slot_state::abandoned;
        return;
    }
    if (entry.state == slot_state::done) {
        entry.state = slot_state::free;
        ++entry.generation;
        if (entry.result.capacity() > 4096)
            std::vector<std::byte>().swap(entry.result);  // keep idle slots small
        m_free_slots.push_back(slot);
    }
}

}  // namespace mpidict::runtime
