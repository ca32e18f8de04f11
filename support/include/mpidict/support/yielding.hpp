#pragma once
// Waits on MPI requests that give the core away while they wait, for runs with
// more ranks than cores (the tests run 4 ranks on 2 cores): a blocking MPI wait
// busy-polls and takes the time share the ranks with work need.

#include <mpi.h>
#include <sched.h>
#include <time.h>

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

}  // namespace mpidict::support
