#pragma once
// A rank waiting in one container serves them all.
//
// Ranks answer each other only from inside mpidict calls.  With two containers
// that was not enough: a rank waiting on map A for a rank that waits on map B
// (or sits in B's collective construction or destruction) hung both, because
// each wait served only its own container.  So every wait of the library
// (a request's get(), flush, the collectives of construction and destruction,
// the waits of rma_hash_set and of the C API's create) also makes progress on
// every other container the same thread created over MPI.
//
// Not served from another container's wait: a container whose construction
// has not finished (a rank that left its last collective may already send to
// it), containers with a progress thread
// (they serve themselves), containers another thread created (serving them
// would race with that thread; each thread's own waits serve them), a
// container inside one of its own handlers or calls further up this thread's
// stack (a local_for_each whose function waits on another container: its
// table must not change under the iteration), and, under SimGrid, nothing
// (its ranks share one thread).
//
// What changes for a user: a reference into a container's local data that is
// documented as "valid until the next call into the map" (hash_map's
// local_table(), local_keys(), local_values()) is also invalidated by a wait
// in another container of the same thread, as that wait may apply other
// ranks' operations to it.

#include <mpi.h>

namespace mpidict::runtime {

class engine;

// Local.  One round of progress on every other container this thread created
// (except `except`).  True if any of them handled or shipped something.  An
// exception from another container's handler (a visitor that threw) leaves
// through this call, as it would through that container's own wait.
bool serve_other_containers(const engine* except = nullptr);

// Local.  Polls `request` (a non-blocking collective or RMA request) to
// completion, serving every container of this thread between polls; spins
// with sched_yield, then sleeps 10 us a poll.  Throws mpi_error naming `call`
// if MPI reports an error.
void wait_serving(MPI_Request& request, const char* call);

// Collective over `communicator`.  MPI_Allreduce started as MPI_Iallreduce and
// waited for with wait_serving.
void allreduce_serving(const void* input, void* output, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm communicator, const char* call);

}  // namespace mpidict::runtime
