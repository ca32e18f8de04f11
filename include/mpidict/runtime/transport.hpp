#pragma once
// The narrow waist between the active-message engine and the network.  The
// engine needs only four things: send a buffer to a rank (and learn when the
// buffer may be reused), hand over arrived buffers one at a time in MPI's
// per-pair order, a non-blocking sum across ranks for termination detection,
// and a blocking min/max for collective consistency checks.
//
// Channels.  Messages travel on channel 0 (direct) or, when the transport was
// opened with two channels, channel 1 (relay: messages a rank must forward,
// under grid routing).  Order holds per pair and channel; a receiver may stop
// taking relay messages for a while (poll with one channel) while it keeps
// taking direct ones.  MPI implements it
// in src/runtime/mpi_transport.cpp; a deterministic in-process transport can
// implement it for simulation without touching any container.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include <mpi.h>

namespace mpidict::runtime {

// Channels a transport offers: 0 direct, 1 relay.
inline constexpr int max_channels = 2;

class message_sink {
public:
    virtual void deliver(int source, int channel, std::span<const std::byte> message) = 0;

protected:
    ~message_sink() = default;
};

class transport {
public:
    virtual ~transport() = default;

    virtual int rank() const = 0;
    virtual int size() const = 0;

    // Prepares to receive messages of at most `max_message_bytes` (collective in
    // spirit: every rank passes the same numbers) on `channels` (1 or 2)
    // channels, `receive_buffers` posted receives each.
    virtual void open(std::size_t max_message_bytes, std::size_t receive_buffers, int channels) = 0;

    // Starts sending; `message` must stay untouched until send_complete(ticket)
    // returns true.  A synchronous send completes only once the destination has
    // matched it, which is what bounds memory at a receiver that falls behind.
    virtual std::uint64_t start_send(int destination, std::span<const std::byte> message, bool synchronous,
                                     int channel) = 0;
    virtual bool send_complete(std::uint64_t ticket) = 0;

    // Delivers at most one arrived message of channels [0, channels); returns
    // false if none was ready.  Messages from one source on one channel arrive
    // in the order they were sent.
    virtual bool poll(message_sink& sink, int channels) = 0;

    // Non-blocking element-wise sum over all ranks; one may be in progress at a time.
    virtual void start_sum(std::span<const std::int64_t> input, std::span<std::int64_t> output) = 0;
    virtual bool sum_complete() = 0;

    // Blocking element-wise minimum and maximum over all ranks.
    virtual void min_max(std::span<const std::int64_t> input, std::span<std::int64_t> minimum,
                         std::span<std::int64_t> maximum) = 0;

    virtual void barrier() = 0;

    // Cancels posted receives; called once when the engine is destroyed.
    virtual void close() = 0;

    // MPI_Finalize has begun while the engine is alive: drop what is pending
    // with local calls only (no collective), so MPI can finish.  Default: close().
    virtual void abandon() { close(); }

    // Lets other processes run while this one waits (oversubscribed nodes).
    virtual void idle() = 0;

    // The MPI communicator under this transport (for collective file I/O such
    // as checkpoints), or MPI_COMM_NULL when there is none (simulation).
    virtual MPI_Comm mpi_communicator() const { return MPI_COMM_NULL; }
};

// Collective.  A transport over a duplicate of `communicator`.
std::unique_ptr<transport> make_mpi_transport(MPI_Comm communicator);

// Turns an MPI return code into an mpi_error naming the call.
void check_mpi(int code, const char* call);

// MPI_Test of `request` without a status, checked; true when it is complete.
// A null request is complete without a test: SimGrid 3.32's MPI_Test never sets
// the flag for one when the status is ignored.
bool test_complete(MPI_Request& request, const char* call);

// MPI_Iallreduce and MPI_Ibarrier, checked.  Under SimGrid SMPI (MPIDICT_SMPI)
// they run the blocking MPI_Allreduce / MPI_Barrier and leave *request =
// MPI_REQUEST_NULL, which tests complete: SMPI's non-blocking collectives send
// a message between every pair of ranks (p^2 per call; at 1024 simulated ranks
// the simulator spent its time on them, docs/scaling.md), its blocking ones
// take O(log p) steps.  Waiting that must serve messages meanwhile (flush's
// sums) does not use these.
void start_allreduce(const void* input, void* output, int count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm communicator, MPI_Request* request, const char* call);
void start_barrier(MPI_Comm communicator, MPI_Request* request);

}  // namespace mpidict::runtime
