// rma_window: see include/mpidict/detail/rma_window.hpp.

#include "mpidict/detail/rma_window.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <time.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <cstring>
#include <span>
#include <vector>
#include <string>

#include "mpidict/error.hpp"
#include "mpidict/runtime/serving.hpp"
#include "mpidict/runtime/transport.hpp"
#include "../memory.hpp"

namespace mpidict::detail {

void check_mpi(int code, const char* what) { runtime::check_mpi(code, what); }

void backoff::pause() {
    // A few tight polls catch an answer that is already on its way; after that
    // every poll gives the core away, which is what lets an oversubscribed
    // target run.  A wait that lasts (a rank done with its level waiting for
    // the others) sleeps between polls: sched_yield alone still takes a time
    // share from the ranks that have work.
    ++m_spins;
    if (m_spins <= 4)
        return;
    ++m_yields;
    if (m_spins <= 2048) {
        sched_yield();
    } else {
        const timespec pause{0, 50'000};  // 50 us
        nanosleep(&pause, nullptr);
    }
}

namespace {

// MPI_Comm_split_type costs a blocking collective (0.1-0.3 s here when ranks
// outnumber cores), so the verdict is cached on the communicator.
int node_keyval() {
    static int keyval = [] {
        int value = MPI_KEYVAL_INVALID;
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, MPI_COMM_NULL_DELETE_FN, &value, nullptr);
        return value;
    }();
    return keyval;
}

// Encoded in the attribute pointer itself: 1 = one node, 2 = several.
constexpr std::intptr_t one_node = 1;
constexpr std::intptr_t several_nodes = 2;

}  // namespace

bool all_ranks_on_one_node(MPI_Comm communicator) {
    void* cached = nullptr;
    int found = 0;
    MPI_Comm_get_attr(communicator, node_keyval(), &cached, &found);
    if (found)
        return reinterpret_cast<std::intptr_t>(cached) == one_node;
    int size = 0;
    int rank = 0;
    MPI_Comm_size(communicator, &size);
    MPI_Comm_rank(communicator, &rank);
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(communicator, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type");
    int node_size = 0;
    MPI_Comm_size(node, &node_size);
    MPI_Comm_free(&node);
    // Every rank must reach the same verdict: some may share a node while others do not.
    int local = node_size == size ? 1 : 0;
    int all = 0;
    check_mpi(MPI_Allreduce(&local, &all, 1, MPI_INT, MPI_MIN, communicator), "MPI_Allreduce");
    MPI_Comm_set_attr(communicator, node_keyval(),
                      reinterpret_cast<void*>(all == 1 ? one_node : several_nodes));
    return all == 1;
}

namespace {

// Polls `request` to completion with backoff pacing, adding the yields to
// *yields when given.
void wait_paced(MPI_Request& request, std::uint64_t* yields) {
    backoff pacing;
    while (!runtime::test_complete(request, "MPI_Test")) {
        // The engines' containers of this thread are served meanwhile
        // (runtime/serving.hpp): another rank may wait on one for this rank.
        if (runtime::serve_other_containers(nullptr))
            pacing.reset();
        else
            pacing.pause();
    }
    if (yields)
        *yields += pacing.yields();
}

}  // namespace

void check_same_on(MPI_Comm communicator, std::span<const std::uint64_t> values,
                   std::span<const std::string> names) {
    std::vector<std::uint64_t> in;
    for (const std::uint64_t value : values) {
        in.push_back(value);
        in.push_back(~value);
    }
    std::vector<std::uint64_t> out(in.size(), 0);
    MPI_Request request = MPI_REQUEST_NULL;
    runtime::start_allreduce(in.data(), out.data(), static_cast<int>(in.size()), MPI_UINT64_T, MPI_MAX, communicator,
                             &request, "MPI_Iallreduce");
    wait_paced(request, nullptr);
    for (std::size_t index = 0; index < values.size(); ++index) {
        const std::uint64_t high = out[2 * index];
        const std::uint64_t low = ~out[2 * index + 1];
        if (low != high)
            throw collective_mismatch_error("mpidict: ranks disagree on " + names[index] + " (values from " +
                                            std::to_string(low) + " to " + std::to_string(high) + ")");
    }
}

namespace {

// Why this rank cannot map `mapped` bytes (its own `own` bytes among them), or "".
std::string memory_verdict(std::uint64_t own, std::uint64_t mapped) {
    rlimit limit{};
    if (getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && mapped > limit.rlim_cur)
        return "needs " + std::to_string(mapped) + " bytes of address space for the window, but RLIMIT_AS (ulimit -v) is " +
               std::to_string(limit.rlim_cur) + " bytes";
    if (getrlimit(RLIMIT_DATA, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && own > limit.rlim_cur)
        return "needs " + std::to_string(own) + " bytes for its window segment, but RLIMIT_DATA (ulimit -d) is " +
               std::to_string(limit.rlim_cur) + " bytes";
    const std::uint64_t available = available_memory_bytes();
    if (available > 0 && own > available)
        return "needs " + std::to_string(own) + " bytes for its window segment, but only " + std::to_string(available) +
               " bytes of memory (MemAvailable + SwapFree) are available";
    return {};
}

}  // namespace

std::size_t rma_window::checked_bytes(std::size_t bytes_per_rank) {
    // Whole cache lines (see the constructor), and a size MPI_Aint can carry.
    constexpr std::size_t largest = static_cast<std::size_t>(std::numeric_limits<MPI_Aint>::max()) / 2;
    if (bytes_per_rank > largest)
        throw invalid_argument_error("mpidict: a window of " + std::to_string(bytes_per_rank) +
                                     " bytes per rank is larger than the largest this library allocates (" +
                                     std::to_string(largest) + " bytes)");
    return (bytes_per_rank + 63) / 64 * 64;
}

rma_window::rma_window(MPI_Comm communicator, std::size_t bytes_per_rank, bool allow_shared)
    // MPICH 4.0.2 (ch4) bug: with MPI_Win_allocate of a size that is not a
    // multiple of 16 bytes, the base pointer returned to ranks >= 1 is 8 bytes
    // off from where RMA operations land.  Whole cache lines avoid it.
    : m_bytes_per_rank(checked_bytes(bytes_per_rank)) {
    {
#if MPIDICT_SMPI
        // SimGrid SMPI has no MPI_Comm_idup.
        check_mpi(MPI_Comm_dup(communicator, &m_comm), "MPI_Comm_dup");
#else
        // MPI_Comm_idup, polled with yields: a blocking dup busy-polls.
        MPI_Request request = MPI_REQUEST_NULL;
        check_mpi(MPI_Comm_idup(communicator, &m_comm, &request), "MPI_Comm_idup");
        wait(request);
#endif
    }
    MPI_Comm_set_errhandler(m_comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(m_comm, &m_rank);
    MPI_Comm_size(m_comm, &m_size);
    const bool shared = allow_shared && all_ranks_on_one_node(m_comm);
    {
        // Refuse a window that cannot fit before MPI tries (MPICH loops forever
        // in MPI_Win_allocate_shared past RLIMIT_AS), on every rank together: a
        // shared window maps every rank's segment into each process.
        const std::uint64_t own = m_bytes_per_rank;
        const std::uint64_t mapped =
            shared ? (own > UINT64_MAX / static_cast<std::uint64_t>(m_size) ? UINT64_MAX : own * static_cast<std::uint64_t>(m_size))
                   : own;
        const std::string verdict = memory_verdict(own, mapped);
        int mine = verdict.empty() ? -1 : m_rank;
        int first = -1;
        const int code = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MAX, m_comm);
        if (code != MPI_SUCCESS || first >= 0) {
            MPI_Comm_free(&m_comm);
            check_mpi(code, "MPI_Allreduce");
            if (!verdict.empty())
                throw invalid_argument_error("mpidict: rank " + std::to_string(m_rank) + " cannot allocate its RMA window: " +
                                             verdict + "; lower slots_per_rank / expected_per_rank");
            throw invalid_argument_error("mpidict: rank " + std::to_string(first) +
                                         " cannot allocate its RMA window (it says why); nothing was allocated");
        }
    }

    MPI_Info info = MPI_INFO_NULL;
    MPI_Info_create(&info);
    MPI_Info_set(info, "same_size", "true");
    MPI_Info_set(info, "same_disp_unit", "true");
    int code = MPI_SUCCESS;
    void* base = nullptr;
    const auto bytes = static_cast<MPI_Aint>(m_bytes_per_rank);
    if (shared) {
        // Each rank's segment on its own pages, first touched by its owner.
        MPI_Info_set(info, "alloc_shared_noncontig", "true");
        code = MPI_Win_allocate_shared(bytes, 8, info, m_comm, &base, &m_window);
        m_kind = window_kind::shared_memory;
    } else {
        code = MPI_Win_allocate(bytes, 8, info, m_comm, &base, &m_window);
        m_kind = window_kind::mpi_rma;
    }
    MPI_Info_free(&info);
    if (code != MPI_SUCCESS) {
        MPI_Comm_free(&m_comm);
        check_mpi(code, shared ? "MPI_Win_allocate_shared" : "MPI_Win_allocate");
    }
    MPI_Win_set_errhandler(m_window, MPI_ERRORS_RETURN);
    m_local = static_cast<std::byte*>(base);
    if (m_bytes_per_rank > 0)
        std::memset(m_local, 0, m_bytes_per_rank);
    if (shared) {
        m_segments.resize(static_cast<std::size_t>(m_size), nullptr);
        for (int other = 0; other < m_size; ++other) {
            MPI_Aint segment_bytes = 0;
            int unit = 0;
            void* pointer = nullptr;
            check_mpi(MPI_Win_shared_query(m_window, other, &segment_bytes, &unit, &pointer), "MPI_Win_shared_query");
            m_segments[static_cast<std::size_t>(other)] = static_cast<std::byte*>(pointer);
        }
    }
    // Nobody touches another segment before its owner has zeroed it.
    barrier();
}

void rma_window::lock_all() {
    if (m_locked_all)
        return;
    check_mpi(MPI_Win_lock_all(MPI_MODE_NOCHECK, m_window), "MPI_Win_lock_all");
    m_locked_all = true;
}

void rma_window::unlock_all() {
    if (!m_locked_all)
        return;
    m_locked_all = false;
    check_mpi(MPI_Win_unlock_all(m_window), "MPI_Win_unlock_all");
}

void rma_window::free() {
    if (m_window == MPI_WIN_NULL)
        return;
    barrier();
    unlock_all();
    check_mpi(MPI_Win_free(&m_window), "MPI_Win_free");
    m_window = MPI_WIN_NULL;
    m_local = nullptr;
    m_segments.clear();
    MPI_Comm_free(&m_comm);
}

void rma_window::wait(MPI_Request& request, std::uint64_t* yields) const { wait_paced(request, yields); }

void rma_window::barrier() {
    if (m_kind == window_kind::shared_memory && m_window != MPI_WIN_NULL)
        MPI_Win_sync(m_window);
    MPI_Request request = MPI_REQUEST_NULL;
    runtime::start_barrier(m_comm, &request);
    wait(request);
    if (m_kind == window_kind::shared_memory && m_window != MPI_WIN_NULL)
        MPI_Win_sync(m_window);
}

std::uint64_t rma_window::reduce(std::uint64_t value, MPI_Op op) {
    std::uint64_t result = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    runtime::start_allreduce(&value, &result, 1, MPI_UINT64_T, op, m_comm, &request, "MPI_Iallreduce");
    wait(request);
    return result;
}

std::uint64_t rma_window::sum(std::uint64_t value) { return reduce(value, MPI_SUM); }
std::uint64_t rma_window::min(std::uint64_t value) { return reduce(value, MPI_MIN); }
std::uint64_t rma_window::max(std::uint64_t value) { return reduce(value, MPI_MAX); }

void rma_window::check_same(std::uint64_t value, const std::string& what) {
    const std::uint64_t low = min(value);
    const std::uint64_t high = max(value);
    if (low != high)
        throw collective_mismatch_error("mpidict: ranks disagree on " + what + " (values from " + std::to_string(low) +
                                        " to " + std::to_string(high) + ")");
}

}  // namespace mpidict::detail
