#pragma once
// The public types of rma_hash_set (rma_hash_set.hpp): its synchronisation and
// access modes, table_full_error, its configuration, the batch result and the
// statistics.  In a header of their own because the core
// (detail/rma_set_core.hpp) needs them too and must not include the typed
// front; include rma_hash_set.hpp, which includes this.

#include <cstddef>
#include <cstdint>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/results.hpp"

namespace mpidict {

enum class rma_sync { lock_free, owner_lock };
enum class rma_access { automatic, shared_memory, mpi_rma };

inline const char* to_string(rma_sync sync) { return sync == rma_sync::lock_free ? "lock_free" : "owner_lock"; }
inline const char* to_string(rma_access access) {
    switch (access) {
    case rma_access::shared_memory: return "shared_memory";
    case rma_access::mpi_rma: return "mpi_rma";
    default: return "automatic";
    }
}

// No longer thrown: a full owner's refusal is a result (rma_hash_set.hpp,
// "Full tables"; docs/architecture.md, "Contracts").  Kept so that code
// catching it still compiles.
class [[deprecated("mpidict: rma_hash_set reports a full table in the result (insert: stored = false; "
                   "insert_if_absent_many: insert_status::not_inserted), never by throwing")]] table_full_error
    : public error {
public:
    using error::error;
};

struct rma_hash_set_config {
    // Slots per rank.  0: expected_per_rank / max_load, or 65536 if that is 0 too.
    std::size_t slots_per_rank = 0;
    std::size_t expected_per_rank = 0;
    double max_load = 0.5;  // only sizes the table; inserts go on until it is full
    rma_sync sync = rma_sync::lock_free;
    rma_access access = rma_access::automatic;
};

struct insert_if_absent_many_result {
    std::vector<insert_status> status;  // one per object, in the order given
    std::size_t inserted = 0;           // new objects stored
    std::size_t present = 0;            // already in the set
    std::size_t not_inserted = 0;       // owner's table full
    std::vector<std::size_t> not_inserted_indices;
    bool complete() const { return not_inserted == 0; }
};

// Counters of this rank's calls (not collective).
struct rma_hash_set_local_statistics {
    std::uint64_t inserts = 0;           // insert attempts (batch elements included)
    std::uint64_t inserted = 0;          // of which stored a new object
    std::uint64_t rejected = 0;          // of which the owner refused: its table was full
    std::uint64_t lookups = 0;           // contains() calls
    std::uint64_t remote_operations = 0; // operations whose owner is another rank
    std::uint64_t slots_probed = 0;      // control words examined
    std::uint64_t round_trips = 0;       // waited MPI RMA round trips (MPI RMA access)
    std::uint64_t claim_conflicts = 0;   // compare-and-swap lost to another rank
    std::uint64_t busy_waits = 0;        // re-reads of a slot being written
    std::uint64_t lock_waits = 0;        // failed attempts at an owner lock (shared memory)
    std::uint64_t yields = 0;            // times this rank gave its core away while waiting
};

using rma_statistics [[deprecated("mpidict: renamed rma_hash_set_local_statistics")]] =
    rma_hash_set_local_statistics;

}  // namespace mpidict
