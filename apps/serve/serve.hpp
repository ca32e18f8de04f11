#pragma once
// mpidict serve: an MPI job whose ranks speak the Redis protocol (RESP2) over
// the library's containers (docs/serve.md).
//
//   resp.hpp    the request parser and the reply writers (no MPI, fuzzed)
//   store.hpp   what runs at a key's owner: one hash_map entry per Redis key,
//               each command one callable visit
//   serve.cpp   the options, each rank's event loop (epoll, non-blocking
//               sockets, interleaved with the engine's progress), the command
//               table and how a command's reply is assembled from its visits
//
// Every rank listens (127.0.0.1:PORT+rank by default, or rank 0 alone with
// --single-port) and accepts any key: the container sends the command to the
// key's owner and the reply back.

#include <mpi.h>

namespace mpidict::apps::serve {

// The whole program (also `mpidict serve`); collective over `comm`.
int serve_main(int argc, char** argv, MPI_Comm comm);

}  // namespace mpidict::apps::serve
