#pragma once
// A deterministic in-process network for tests: one OS process runs P virtual
// ranks, and the whole run is a function of one seed.
//
// Scheduling.  Each virtual rank is an OS thread running the user's function,
// but only the thread holding the baton runs.  Every transport call (poll, idle,
// send_complete, start_send, start_sum, sum_complete, min_max, barrier) is a
// scheduling point: the clock advances one step and, with probability
// switch_probability, the baton goes to a seeded-random runnable rank (possibly
// the same one).  A rank that calls idle() with nothing new since its last idle()
// is parked until something concerns it (a message matched for it, its send
// completed, a sum became visible); when every rank is parked or blocked the
// clock jumps to the next timed event.  Nothing else decides the order, so a
// seed replays exactly.
//
// Network.  A message becomes deliverable 0..max_delay_steps steps after it is
// sent (seeded), but never before an earlier message of the same pair (MPI's
// non-overtaking rule); messages of different sources interleave in any seeded
// order.  Arrived messages match the receiver's `receive_buffers` posted
// receives in arrival order (as the MPI transport's ring does); a synchronous
// send completes when its message is matched, and poll() hands out matched
// messages in match order, each in a heap buffer of exactly its size (so an
// out-of-bounds read shows up under AddressSanitizer).  The non-blocking sum
// completes once every rank has contributed and becomes visible to each rank
// after its own seeded delay; min_max and barrier block the calling rank until
// every rank has arrived.
//
// Checks the simulation makes by itself (each fails the run, naming the seed):
// a message larger than the receiver's max_message_bytes; a send buffer changed
// before its send completed; a collective mismatch (different calls, lengths);
// a second start_sum while one is running; every rank waiting with nothing in
// transit (deadlock); more than max_steps steps (livelock).
//
// Failure.  A failed run unwinds every rank by throwing sim::aborted from its
// next scheduling point (not an mpidict::error, so code that catches library
// errors does not swallow it) and run() returns a result carrying the seed, the
// reason and the last trace events.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "mpidict/runtime/transport.hpp"

namespace mpidict::sim {

struct options {
    std::uint64_t max_steps = 50'000'000;   // scheduling points before a run counts as livelocked
    double switch_probability = 1.0;        // chance to hand the baton on at each scheduling point
    std::uint32_t max_delay_steps = 16;     // a message is deliverable 0..this many steps after it is sent
    std::uint32_t max_sum_delay_steps = 16; // a finished sum becomes visible 0..this many steps later, per rank
    bool yield_on_send = true;              // start_send is a scheduling point too
    std::size_t trace_capacity = 256;       // last events kept for the failure report (0: none)
    std::FILE* trace_stream = nullptr;      // if set, every event is also printed here as it happens
};

struct result {
    bool ok = true;
    int ranks = 0;
    std::uint64_t seed = 0;
    std::string failure;               // empty if ok; names the seed, the step and the rank
    std::uint64_t steps = 0;           // scheduling points taken
    std::uint64_t clock = 0;           // simulated time (steps plus jumps while every rank waited)
    std::uint64_t switches = 0;        // baton hand-overs
    std::uint64_t messages_sent = 0;   // through any simulated transport (not injected ones)
    std::uint64_t messages_delivered = 0;
    std::uint64_t messages_undelivered = 0;  // still in the network when the run ended
    std::uint64_t delivery_hash = 0;   // digest of every delivery (when, who, what): equal seeds, equal hash
    std::uint64_t trace_hash = 0;      // digest of every trace event
    std::string trace;                 // the last trace_capacity events, one per line
    explicit operator bool() const { return ok; }
};

// Thrown at a scheduling point of every rank once the run has failed, so that all
// ranks unwind.  Deliberately not derived from mpidict::error.
class aborted : public std::exception {
public:
    const char* what() const noexcept override { return "mpidict::sim: run aborted"; }
};

class world;

// What a virtual rank sees of the simulation.  Only the rank's own thread may use it.
class sim_context {
public:
    sim_context(world& owner, int rank) : m_world(&owner), m_rank(rank) {}
    sim_context(const sim_context&) = delete;
    sim_context& operator=(const sim_context&) = delete;

    int rank() const { return m_rank; }
    int size() const;
    std::uint64_t seed() const;

    // A transport over a fresh simulated communicator.  Every rank makes its
    // transports in the same order (the k-th call on each rank joins the k-th
    // communicator, as MPI_Comm_dup does); pass it to runtime::engine.
    std::unique_ptr<runtime::transport> make_transport();

    // Random numbers private to this rank: a function of (seed, rank, call number).
    std::uint64_t random();
    std::uint64_t random_below(std::uint64_t bound);  // uniform in [0, bound); 0 if bound == 0

    // A scheduling point outside any transport.
    void yield();
    // Collective over all virtual ranks, independent of every transport.
    void barrier();

    // Messages sent on any simulated transport and not yet handed out by poll().
    std::uint64_t messages_in_flight() const;
    std::uint64_t step() const;

    // Appends an event to the trace.  `label` must outlive the run (a literal).
    void note(const char* label, std::uint64_t a = 0, std::uint64_t b = 0, std::uint64_t c = 0);
    // Fails the run with `why` (the report adds seed, step and rank) and unwinds.
    [[noreturn]] void fail(std::string_view why);

    // Test hook: puts raw bytes into the network of communicator `communicator`
    // (0 = this rank's first make_transport()) as if `source` had sent them to
    // `destination`.  The bytes follow the normal delay, order and matching rules.
    void inject(int communicator, int source, int destination, std::span<const std::byte> bytes);

private:
    world* m_world;
    int m_rank;
};

// Runs body(rank, context) on `ranks` virtual ranks (1..4096) under the schedule
// that `seed` determines; returns when every rank's function has returned or the
// run has failed.  An exception escaping a rank's function fails the run.
result run(int ranks, std::uint64_t seed, const options& settings,
           const std::function<void(int rank, sim_context& context)>& body);

}  // namespace mpidict::sim
