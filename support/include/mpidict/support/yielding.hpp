#pragma once
// Waits on MPI requests that give the core away while they wait, for runs with
// more ranks than cores (the tests run 4 ranks on 2 cores): a blocking MPI wait
// busy-polls and takes the time share the ranks with work need.

#include <mpi.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

namespace mpidict::support {

// Polls `request` with MPI_Test until it completes: the first few polls back
// to back, then with sched_yield between them, and after 2048 polls with a
// 50 us sleep (a long wait takes no time share).
inline void wait_yielding(MPI_Request& request) {
    unsigned polls = 0;
    for (;;) {
        int done = 0;
        MPI_Test(&request, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        // Yield to ranks with work; a long wait sleeps so it takes no time share.
        if (++polls > 2048) {
            const timespec pause{0, 50'000};
            nanosleep(&pause, nullptr);
        } else if (polls > 4) {
            sched_yield();
        }
    }
}

// MPI_Barrier over `comm`, waited for with wait_yielding (MPI_Ibarrier).
inline void barrier_yielding(MPI_Comm comm) {
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Ibarrier(comm, &request);
    wait_yielding(request);
}

// Whether the node this rank runs on hosts more ranks of `comm` than it has
// cores.  Collective over comm.
inline bool node_oversubscribed(MPI_Comm comm) {
    MPI_Comm node = MPI_COMM_NULL;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int ranks_on_node = 1;
    MPI_Comm_size(node, &ranks_on_node);
    MPI_Comm_free(&node);
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    return cores > 0 && ranks_on_node > cores;
}

// For a loop that polls requests (request::test) and found nothing to do: a
// few empty rounds spin (an answer is usually microseconds away), then the
// core is yielded, and where ranks outnumber cores the rank sleeps 10 us after
// two yields, as the runtime's own waits do (mpi_transport's idle policy), so
// that the rank with work gets the core.  Call it once per round with whether
// the round made progress.
class poll_backoff {
public:
    explicit poll_backoff(bool oversubscribed) : m_sleep(oversubscribed) {}
    void operator()(bool progressed) {
        if (progressed) {
            m_idle = 0;
            return;
        }
        if (++m_idle <= 32)
            return;
        if (!m_sleep || m_idle <= 34) {
            sched_yield();
            return;
        }
        const timespec pause{0, 10'000};
        nanosleep(&pause, nullptr);
    }

private:
    bool m_sleep;
    unsigned m_idle = 0;
};

}  // namespace mpidict::support
