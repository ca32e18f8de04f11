#pragma once
// Counters the engine and containers keep.  Times follow seed 000's three
// wall-clock times for a loop of operations: initiation (inside the call that
// starts an operation), completion (inside wait/test on its request) and barrier
// (inside the collective flush).  Initiation of fire-and-forget operations is
// sampled (one call in `initiation_sample_period` is timed and scaled) because
// reading the clock costs as much as the operation itself.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace mpidict::runtime {

enum class op_kind : std::uint8_t {
    insert,
    find,
    take,
    erase,
    visit,
    insert_if_absent,
    other,
};
inline constexpr std::size_t op_kind_count = 7;

constexpr std::string_view op_kind_name(op_kind kind) {
    constexpr std::array<std::string_view, op_kind_count> names{
        "insert", "find", "take", "erase", "visit", "insert_if_absent", "other"};
    return names[static_cast<std::size_t>(kind)];
}

inline constexpr std::uint32_t initiation_sample_period = 16;

struct op_statistics {
    std::uint64_t operations = 0;      // started (request and fire-and-forget forms)
    std::uint64_t requests = 0;        // of which returned a request
    std::uint64_t values = 0;          // values carried by the requests that completed
    double initiation_seconds = 0;     // time inside the starting calls
    double completion_seconds = 0;     // time inside wait/test for this kind
};

struct statistics {
    std::array<op_statistics, op_kind_count> by_kind{};
    std::uint64_t messages_sent = 0;
    std::uint64_t messages_received = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t records_received = 0;
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

    const op_statistics& operator[](op_kind kind) const { return by_kind[static_cast<std::size_t>(kind)]; }
    op_statistics& operator[](op_kind kind) { return by_kind[static_cast<std::size_t>(kind)]; }
};

}  // namespace mpidict::runtime
