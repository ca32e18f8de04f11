// Grid routing (docs/runtime.md, "Routing"): which routing is in effect, the
// grid and each destination's next hop and channel (choose_routing), and a
// corner's forwarding of a routed group down its column (forward_group).
//
// Invariant (per-pair order under grid routing): every record from one rank to
// another takes one fixed path (m_next_hop, fixed here at construction), and
// every message of one pair travels on one channel (m_relay_channel).  Corners
// forward only down their column, on the direct channel, which every rank
// always takes; a corner stops taking relay messages while q of its direct
// sends are in flight (poll_once, engine.cpp).  A routed group on the direct
// channel, or a forward onto the relay channel, would bring back unbounded
// corner memory or a cycle of waits; handle_message refuses the former.
#include "mpidict/runtime/engine.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>

#include "engine_internal.hpp"

namespace mpidict::runtime {

using namespace engine_internal;

routing_mode parse_routing(std::string_view text) {
    if (text == "direct")
        return routing_mode::direct;
    if (text == "grid")
        return routing_mode::grid;
    if (text == "automatic" || text == "auto")
        return routing_mode::automatic;
    throw invalid_argument_error("mpidict: routing '" + std::string(text) +
                                 "' is none of direct, grid, automatic");
}

std::string_view routing_name(routing_mode mode) {
    switch (mode) {
    case routing_mode::direct:
        return "direct";
    case routing_mode::grid:
        return "grid";
    case routing_mode::automatic:
        break;
    }
    return "automatic";
}

void engine::choose_routing() {
    routing_mode mode = m_config.routing;
    if (mode == routing_mode::automatic) {
        if (const char* text = std::getenv("MPIDICT_ROUTING"); text != nullptr && *text != '\0')
            mode = parse_routing(text);
    }
    if (mode == routing_mode::automatic)
        mode = m_size >= automatic_grid_ranks ? routing_mode::grid : routing_mode::direct;
    m_routed = mode == routing_mode::grid && m_size > 2;
    if (!m_routed) {
        m_peer_count = static_cast<std::size_t>(m_size);
        return;
    }
    // c = ceil(sqrt(p)) columns; rank x sits at row x / c, column x % c.
    int columns = 1;
    while (columns * columns < m_size)
        ++columns;
    const int row = m_rank / columns;
    const int column = m_rank % columns;
    const int last_row = (m_size - 1) / columns;
    const int last_row_width = m_size - last_row * columns;
    m_next_hop.resize(static_cast<std::size_t>(m_size));
    m_relay_channel.assign(static_cast<std::size_t>(m_size), 0);
    m_peer_count = 0;
    for (int destination = 0; destination < m_size; ++destination) {
        const int to_row = destination / columns;
        const int to_column = destination % columns;
        int hop = destination;
        if (to_row != row && to_column != column) {
            // Along this rank's row to the destination's column, then down it.
            // From the short last row, where that corner is missing, to the
            // rank of the destination's column in the row above instead.
            hop = row * columns + to_column;
            if (hop >= m_size)
                hop = (row - 1) * columns + to_column;
        }
        m_next_hop[static_cast<std::size_t>(destination)] = hop;
        if (hop == destination)
            ++m_peer_count;
        // Relay channel: the ranks this one uses as corners (its row, and from
        // the short last row the ranks above the gap), for every message to
        // them, so each pair keeps one channel.  Corners forward down their
        // column on the direct channel, which no rank ever holds back.
        const bool corner = to_row == row ||
                            (row == last_row && to_row == last_row - 1 && to_column >= last_row_width);
        m_relay_channel[static_cast<std::size_t>(destination)] = corner && destination != m_rank ? 1 : 0;
    }
}

void engine::forward_group(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count,
                           handler_id handler, bool urgent) {
    const std::size_t stride = std::size_t{record_bytes} + routing_overhead_bytes;
    if (m_forward_counts.size() != static_cast<std::size_t>(m_size))
        m_forward_counts.assign(static_cast<std::size_t>(m_size), 0);
    // Bucket the records by destination (a corner forwards to its column only:
    // few buckets), keeping each bucket in arrival order, then copy each bucket
    // as runs: one group header and one count update per run, not per record.
    m_forward_destinations.clear();
    for (std::uint32_t index = 0; index < count; ++index) {
        const auto destination = load<std::uint32_t>(records + index * stride);
        if (destination >= static_cast<std::uint32_t>(m_size) ||
            next_hop(static_cast<int>(destination)) != static_cast<int>(destination))
            throw decode_error("mpidict: message from rank " + std::to_string(source) +
                               " asks this rank to forward a record to rank " + std::to_string(destination) +
                               ", which is not one of its peers in " + detail::communicator_of(m_size));
        if (m_forward_counts[destination]++ == 0)
            m_forward_destinations.push_back(static_cast<int>(destination));
    }
    m_forward_order.resize(count);
    std::uint32_t start = 0;
    for (const int destination : m_forward_destinations) {
        const std::uint32_t bucket = m_forward_counts[static_cast<std::size_t>(destination)];
        m_forward_counts[static_cast<std::size_t>(destination)] = start;  // now the bucket's cursor
        start += bucket;
    }
    for (std::uint32_t index = 0; index < count; ++index)
        m_forward_order[m_forward_counts[load<std::uint32_t>(records + index * stride)]++] = index;
    const handler_entry& entry = m_handlers[handler];
    std::uint32_t next = 0;
    for (const int destination : m_forward_destinations) {
        const std::uint32_t end = m_forward_counts[static_cast<std::size_t>(destination)];
        m_forward_counts[static_cast<std::size_t>(destination)] = 0;
        const auto payload = [&](std::uint32_t at) {
            return records + std::size_t{m_forward_order[at]} * stride + routing_overhead_bytes;
        };
        if (destination == m_rank) {
            // Records for this rank itself (it is the corner of its own row):
            // contiguous, then one handler call.
            m_forward_scratch.resize(std::size_t{end - next} * record_bytes);
            for (std::uint32_t at = next; at < end; ++at)
                std::memcpy(m_forward_scratch.data() + std::size_t{at - next} * record_bytes, payload(at), record_bytes);
            entry.function(entry.context, source, m_forward_scratch.data(), record_bytes, end - next);
            m_stats.records_received += end - next;
            next = end;
            continue;
        }
        // Urgent records leave with this message's other output, or, when the
        // message came through progress(), with every urgent forward of its
        // polling loop; the rest gather until a buffer fills or this rank
        // waits or flushes.
        const bool with_message = urgent && !m_polling;
        m_urgent_forwards |= urgent && m_polling;
        while (next < end) {
            std::uint32_t granted = 0;
            std::byte* out = append(destination, group_kind::forwarded, static_cast<std::uint32_t>(source), handler,
                                    record_bytes, !with_message, end - next, &granted);
            for (std::uint32_t at = next; at < next + granted; ++at, out += record_bytes)
                std::memcpy(out, payload(at), record_bytes);
            m_stats.records_forwarded += granted;
            next += granted;
        }
    }
}

}  // namespace mpidict::runtime
