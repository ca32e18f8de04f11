#pragma once
// rma_window: the MPI-3 window behind rma_hash_set, and the waiting rules that
// keep one-sided MPI usable when ranks outnumber cores.
//
// Two kinds of window, chosen collectively at construction:
//   * shared_memory: every rank of the communicator is on one node (checked with
//     MPI_Comm_split_type(MPI_COMM_TYPE_SHARED)); the memory comes from
//     MPI_Win_allocate_shared and every rank reaches every other rank's segment
//     through an MPI_Win_shared_query pointer.  Containers then use C++ atomics
//     on that memory directly: no operation needs the target to run.
//   * mpi_rma: MPI_Win_allocate, accessed only through MPI RMA calls.
//
// Waiting.  MPICH 4.0.2 (ch4:ucx) executes RMA on one node as active messages
// that the *target* handles when it makes progress, and its blocking calls
// (MPI_Win_flush, MPI_Win_unlock, MPI_Barrier) busy-poll without giving up the
// core.  With more ranks than cores each round trip then waits for the
// scheduler to preempt a spinning rank (a time slice, milliseconds).  So
// everything here that waits uses a request (MPI_Rget_accumulate, MPI_Ibarrier,
// MPI_Iallreduce) and polls it with MPI_Test, calling sched_yield between polls:
// the target gets the core at once.  See docs/rma_hash_set.md for the numbers.

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <mpi.h>

namespace mpidict::detail {

enum class window_kind { shared_memory, mpi_rma };

// Throws mpi_error with MPI's own text if `code` is not MPI_SUCCESS.
void check_mpi(int code, const char* what);

// Spin-then-yield back-off: the first few calls return at once, later ones
// give the core away (a waiting rank must not starve the one it waits for).
class backoff {
public:
    void pause();
    void reset() { m_spins = 0; }
    std::uint64_t yields() const { return m_yields; }

private:
    unsigned m_spins = 0;
    std::uint64_t m_yields = 0;
};

class rma_window {
public:
    // Collective over `communicator` (duplicated).  `bytes_per_rank` is the same
    // on every rank; `allow_shared`: use a shared-memory window if every rank is
    // on this node.  The segment is zeroed on every rank before this returns.
    // Throws invalid_argument_error (on every rank) if the window cannot fit:
    // beyond what MPI_Aint carries, RLIMIT_AS / RLIMIT_DATA or available memory.
    rma_window(MPI_Comm communicator, std::size_t bytes_per_rank, bool allow_shared);
    // bytes_per_rank rounded up to whole cache lines; throws if it is absurd.
    static std::size_t checked_bytes(std::size_t bytes_per_rank);
    rma_window(const rma_window&) = delete;
    rma_window& operator=(const rma_window&) = delete;
    // Frees nothing collectively: call free() (collective) first.  If it was not
    // called the MPI objects are leaked rather than blocking on other ranks.
    ~rma_window() = default;

    // Collective.  Ends any epoch and frees the window and communicators.
    void free();
    bool freed() const { return m_window == MPI_WIN_NULL; }

    int rank() const { return m_rank; }
    int size() const { return m_size; }
    window_kind kind() const { return m_kind; }
    bool shared() const { return m_kind == window_kind::shared_memory; }
    MPI_Win handle() const { return m_window; }
    MPI_Comm comm() const { return m_comm; }
    std::size_t bytes_per_rank() const { return m_bytes_per_rank; }

    // This rank's segment (either kind), and another rank's (shared kind only).
    std::byte* local_segment() const { return m_local; }
    std::byte* segment(int rank) const { return m_segments[static_cast<std::size_t>(rank)]; }

    // Passive-target epoch on every rank (MPI_Win_lock_all, MPI_MODE_NOCHECK).
    void lock_all();
    void unlock_all();
    bool locked_all() const { return m_locked_all; }

    // Polls `request` to completion, yielding the core between polls; counts
    // the yields in `yields` if given.
    void wait(MPI_Request& request, std::uint64_t* yields = nullptr) const;

    // Collective, yielding.  For the shared kind also a memory barrier
    // (MPI_Win_sync) on both sides, so stores before it are seen after it.
    void barrier();
    // Collective, yielding.  Sum / min / max over the ranks.
    std::uint64_t sum(std::uint64_t value);
    std::uint64_t min(std::uint64_t value);
    std::uint64_t max(std::uint64_t value);

    // Collective.  Throws collective_mismatch_error naming `what` unless every
    // rank passed the same value.
    void check_same(std::uint64_t value, const std::string& what);

private:
    std::uint64_t reduce(std::uint64_t value, MPI_Op op);

    MPI_Comm m_comm = MPI_COMM_NULL;
    MPI_Win m_window = MPI_WIN_NULL;
    window_kind m_kind = window_kind::mpi_rma;
    int m_rank = 0;
    int m_size = 1;
    std::size_t m_bytes_per_rank = 0;
    std::byte* m_local = nullptr;
    std::vector<std::byte*> m_segments;  // every rank's segment (shared kind)
    bool m_locked_all = false;
};

// Whether every rank of `communicator` shares this node.  Collective the first
// time for a communicator; the verdict is cached on it as an attribute.
bool all_ranks_on_one_node(MPI_Comm communicator);

// Collective.  Throws collective_mismatch_error naming names[i] on every rank
// unless every rank passed the same values[i] (one reduction for all).
void check_same_on(MPI_Comm communicator, std::span<const std::uint64_t> values,
                   std::span<const std::string> names);

}  // namespace mpidict::detail
