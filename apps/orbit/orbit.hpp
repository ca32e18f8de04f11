#pragma once
// orbit: enumerate the orbit of a start point under a group given by
// generators (seed 002: GAP's orbit problem), as a distributed breadth-first
// search over a visited set.
//
// Each level every rank applies every generator to each point of its frontier
// and offers the image to the visited set, a test-and-insert at the image's
// owner rank; an image that was new joins the *owner's* next frontier.  The
// search stops when the global frontier is empty; the orbit length is the sum
// of the new points of all levels and is checked against the file's
// `expected` and the visited set's global size.
//
// Visited-set backends (--backends):
//   hash_map        the active-message hash_map: async_visit to the owner, whose
//                   visitor test-and-inserts and pushes a new point into its own
//                   next frontier (user_context); flush() ends the level.
//   rma_lock_free   rma_hash_set, compare-and-swap claims; the inserting rank
//                   learns "new" and ships new points to their owners at the end
//                   of the level (one MPI_Ialltoallv).
//   rma_owner_lock  rma_hash_set under seed 002's per-owner exclusive lock.
//   serial          one process (rank 0), std::unordered_set: the baseline for
//                   the ratio.
//   serial_flat     one process (rank 0), an open-addressing table of packed
//                   points (linear probing, load <= 1/2): the strong baseline.
//
// Points are packed into the smallest of 4, 8, 16 or 32 bytes that holds
// (coordinates x bits per coordinate) bits: a point of a permutation domain of
// degree N takes bit_width(N-1) bits, a vector entry over GF(q) bit_width(q-1).
//
// Output: progress per BFS level on rank 0 (stderr), a human table (stderr),
// JSON lines in the benchmark format of docs/architecture.md (stdout, rank 0): per backend the
// orbit time, points/s, speedup over serial, memory, and a final "verified".

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include "mpidict/rma_hash_set.hpp"
#include "orbit/problem.hpp"

namespace mpidict::apps::orbit {

enum class backend { serial, serial_flat, hash_map, rma_lock_free, rma_owner_lock };
const char* to_string(backend which);

struct orbit_options {
    std::string file;
    std::vector<backend> backends{backend::serial, backend::serial_flat, backend::hash_map,
                                  backend::rma_lock_free, backend::rma_owner_lock};
    rma_access access = rma_access::automatic;
    std::size_t slots_per_rank = 0;  // rma backends; 0: from expected / p / max_load
    double max_load = 0.5;
    std::size_t repeat = 1;          // runs of every backend, order alternating; medians reported
    std::size_t batch = 4096;        // images per insert_if_absent_many (rma backends) and per serial batch
    bool progress = true;            // a line per BFS level on rank 0
};

struct orbit_result {
    backend which = backend::serial;
    bool ran = false;                // false: this rank took no part (serial on rank != 0)
    std::uint64_t orbit_length = 0;
    std::uint64_t set_size = 0;      // the visited set's own global count
    std::uint64_t images = 0;        // generator applications, all ranks
    std::uint64_t checksum = 0;      // sum mod 2^64 of a hash of every orbit point (same for every backend)
    int levels = 0;
    double seconds = 0;
    bool shared_memory = false;      // rma backends: direct atomics on a shared window
    std::size_t table_bytes_per_rank = 0;  // max over ranks
    std::size_t peak_rss_bytes = 0;        // max over ranks, VmHWM after the run
    std::string failure;             // non-empty: the run could not finish (same on every rank)
};

// Collective over `comm` (serial: rank 0 computes, the others wait).
orbit_result enumerate(const problem& input, backend which, const orbit_options& options, MPI_Comm comm);

// The app: parses argv (argv[0] names the program in messages), runs on comm,
// prints on rank 0.  Collective.  Returns 0 if every backend found the
// expected orbit, 1 on bad input or a wrong/failed run (on every rank), 2 on a
// usage error.
int run_orbit(int argc, char** argv, MPI_Comm comm);

}  // namespace mpidict::apps::orbit
