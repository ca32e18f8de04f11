#pragma once
// matrix_scatter: seed 000 §2.1 and §2.3 (Figures 1 and 2, Table 1).
//
// Rank 0 reads a MatrixMarket file into a local table keyed by row (Figure 1)
// and deals the rows out cyclically, row r to rank r % p, in two ways over the
// same rows:
//   * hash_map (Figure 2): for each row whose target is not 0, take the row's
//     (column, value) pairs out of the local table and insert them into the
//     distributed map at the target with a request; wait for the outstanding
//     requests every L of them; flush at the end.  Rows of rank 0 stay in its
//     local table (in the paper that table *is* rank 0's shard, hash_a->hash_x).
//   * send/recv (§2.3's comparison): the same loop with blocking MPI_Send of
//     one message per row; each target MPI_Recv's its rows into its own local
//     table; a barrier ends it.
// Both are timed from a barrier in seed 000's three phases: initiation (take
// plus insert/send), completion (plus waits) and barrier (plus the flush or
// closing barrier), and both results are verified on every rank against
// rank 0's reading: each rank's row count, entry count and checksum of
// (row, column, value), and the totals all-reduced.  Any mismatch fails the run.
//
// Input problems are found on rank 0 and broadcast before any collective
// container work, so every rank exits non-zero together with the message
// "<file>:<line>: <problem>" printed once.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include "matrix_scatter/matrix_market.hpp"
#include "mpidict/hash_map.hpp"

namespace mpidict::apps {

using row_map = hash_map<std::int64_t, matrix_entry>;

// Order-independent digest of a set of entries: the sum (mod 2^64) of a mix of
// each (row, column, value bits).
std::uint64_t entry_checksum(std::int64_t row, const matrix_entry& entry);

// What a rank holds, or should hold.
struct row_summary {
    std::int64_t rows = 0;       // keys with at least one entry
    std::int64_t entries = 0;    // (column, value) pairs
    std::uint64_t checksum = 0;  // sum of entry_checksum
    std::int64_t misplaced = 0;  // rows this rank holds but r % p names another rank

    void add_row(std::int64_t row, const row_table::values_view& values, int rank, int ranks);
    bool operator==(const row_summary&) const = default;
};

// Summary of the rows of `table` a given rank should own under r % ranks
// (index = rank); used by rank 0 on its reading.
std::vector<row_summary> expected_by_rank(const row_table& table, int ranks);

// Summary of what this rank holds in `table` (and `map`'s shard if given).
row_summary held_rows(const row_table* table, const row_map* map, int rank, int ranks);

// Collective.  Compares each rank's `held` with expected[rank] (significant on
// rank 0 only, which scatters it) and the all-reduced totals with rank 0's.
// Prints what differs on the rank that sees it.  True on every rank iff every
// rank matched.
bool verify_rows(MPI_Comm comm, const row_summary& held, const std::vector<row_summary>& expected,
                 const char* what);

struct phase_times {
    double initiation_seconds = 0;
    double completion_seconds = 0;  // includes initiation
    double barrier_seconds = 0;     // includes completion: the whole scatter
};

struct insert_tally {
    std::uint64_t requests = 0;
    std::uint64_t requested = 0;  // values asked to be stored
    std::uint64_t stored = 0;     // values the owners reported stored
};

// The rows of `table` with entries whose target r % ranks is not 0, in row
// order: what rank 0 sends.  Rows without entries are not sent (the seed's loop
// runs over every declared row; here the work follows the entries, so a header
// declaring 1e12 rows costs nothing).
std::vector<std::int64_t> rows_to_send(const row_table& table, int ranks);

// Collective over comm, whose ranks are map's.  Rank 0 scatters the rows of
// `root_rows` (Figure 2): takes each row of rows_to_send() and inserts it at its
// target with a request, waiting for the outstanding requests every
// `blocking_factor` of them; rows longer than one message are split into
// several inserts.  Other ranks only flush (their `root_rows` is not used).
// Times start at a barrier.
phase_times scatter_with_hash_map(MPI_Comm comm, row_map& map, row_table& root_rows, std::size_t blocking_factor,
                                  insert_tally& tally);

// Collective over comm.  Figure 2 without requests: rank 0 async_inserts every
// row (split as above) and every rank flushes; no window, no answers.
phase_times scatter_with_hash_map_async(MPI_Comm comm, row_map& map, row_table& root_rows);

// Collective over comm.  The same scatter with blocking MPI_Send/MPI_Recv only:
// one message {row, pairs} per row of rows_to_send(); each target is told first
// (MPI_Scatter, before the timed phase) how many it will receive.  On rank 0
// `rows` is the reading (rows of other ranks are taken out of it); on the others
// it receives their rows.  `longest_row` (the paper's m) sizes the receive
// buffer and must be the same on every rank.
phase_times scatter_with_sendrecv(MPI_Comm comm, row_table& rows, std::uint64_t longest_row);

// Collective over comm.  The scatter a user would write today (issue 52): rank 0
// packs the rows of rows_to_send() per destination ({row, count} then the
// pairs), tells each rank its entry and row counts (MPI_Scatter), and moves
// everything in one MPI_Alltoallv; each receiver reserves its table for the rows
// it gets and appends them.  All of it is timed, from a barrier to a barrier.
// `rows` as for scatter_with_sendrecv.
phase_times scatter_with_alltoallv(MPI_Comm comm, row_table& rows);

// The app: parses its own options (argv[0] is the program name used in
// messages), runs on `comm`, prints the human table on stderr and JSON lines
// on stdout from rank 0.  Collective.  Returns the exit code: 0 verified, 1
// bad input or verification failure (on every rank), 2 usage error.
int run_matrix_scatter(int argc, char** argv, MPI_Comm comm);

}  // namespace mpidict::apps
