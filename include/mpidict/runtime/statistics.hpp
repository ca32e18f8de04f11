#pragma once
// Counters the engine and containers keep.  Times follow seed 000's three
// wall-clock times for a loop of operations: initiation (inside the call that
// starts an operation), completion (inside wait/test on its request) and barrier
// (inside the collective flush).  Initiation of fire-and-forget operations is
// sampled (one call in `initiation_sample_period` is timed and scaled) because
// reading the clock costs as much as the operation itself.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace mpidict::runtime {

// An operation kind is whatever a container says it is: each container registers
// the names of its kinds with its engine (engine::register_op_kind), in an order
// that gives them the ids 0, 1, ...; a container usually mirrors that order in an
// enum of its own and indexes the statistics with it.  The runtime knows no
// container verbs.
using op_kind = std::uint8_t;
inline constexpr std::size_t max_op_kinds = 32;

// 256: at 16 the two clock reads of the sampled calls were 7% of an async_insert
// loop's time (perf, 2 ranks, 1M keys per rank); a loop short enough that 256
// leaves few samples is one whose initiation time nobody needs to the percent.
inline constexpr std::uint32_t initiation_sample_period = 256;

struct op_statistics {
    std::uint64_t operations = 0;      // started (request and fire-and-forget forms)
    std::uint64_t requests = 0;        // of which returned a request
    std::uint64_t values = 0;          // values carried by the requests that completed
    double initiation_seconds = 0;     // time inside the starting calls
    double completion_seconds = 0;     // time inside wait/test for this kind
};

struct statistics {
    std::vector<op_statistics> by_kind;     // indexed by op_kind
    std::vector<std::string> kind_names;    // what the container registered, same index
    std::uint64_t messages_sent = 0;
    std::uint64_t messages_received = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t records_received = 0;
    std::uint64_t records_forwarded = 0;  // grid routing: records this rank passed on for others
    std::uint64_t loopback_messages = 0;  // buffers this rank addressed to itself
    std::uint64_t waits = 0;              // wait()/wait_all() calls that had to progress
    std::uint64_t window_stalls = 0;      // starts that waited because L requests were outstanding
    std::uint64_t queue_stalls = 0;       // sends that waited because q buffers were in flight
    std::uint64_t flushes = 0;
    std::uint64_t flush_rounds = 0;       // termination-detection reductions
    double barrier_seconds = 0;           // time inside flush()
    std::size_t buffer_bytes_high_water = 0;      // outboxes + in-flight sends, at most
    std::size_t in_flight_high_water = 0;         // send buffers awaiting release, at most
    std::size_t outstanding_requests_high_water = 0;

    const op_statistics& operator[](op_kind kind) const { return by_kind.at(kind); }
    op_statistics& operator[](op_kind kind) { return by_kind.at(kind); }
    // A container's own enum of its registered kinds.
    template <class Kind>
        requires std::is_enum_v<Kind>
    const op_statistics& operator[](Kind kind) const { return (*this)[static_cast<op_kind>(kind)]; }
    template <class Kind>
        requires std::is_enum_v<Kind>
    op_statistics& operator[](Kind kind) { return (*this)[static_cast<op_kind>(kind)]; }
    // The counters of the kind registered under `name`, or nullptr.
    const op_statistics* find(std::string_view name) const {
        for (std::size_t index = 0; index < kind_names.size(); ++index)
            if (kind_names[index] == name)
                return &by_kind[index];
        return nullptr;
    }
    // Zeroes every counter; the registered kinds stay.
    void clear() {
        statistics fresh;
        fresh.kind_names = std::move(kind_names);
        fresh.by_kind.resize(fresh.kind_names.size());
        *this = std::move(fresh);
    }
};

}  // namespace mpidict::runtime
