#pragma once
// skiplist_ranges: the range experiments of seed 004 (Section 3.2-3.3) on
// skiplist_map, every rank a client with W queries in flight.
//
//   size        100% range queries of a fixed result size R (Figure 9: small
//               100, medium 1,000, large 10,000): operations/s, returned
//               messages/s and returned key-values/s.
//   mix         20% insert, 20% delete and 60% either finds or range queries of
//               size R (Figures 10 and 11: medium and small): the same rates.
//   dimensions  100% multi-dimensional pattern queries (skiplist_map::match)
//               over D = 1..6 dimensions with a result of at most 4,096
//               key-values spread evenly over the dimensions (Figure 12).
//
// Data.  size and mix: the keys 0 .. N-1 (8-byte unsigned, 8-byte values, the
// value a function of the key).  A range query is range_from(start, limit R)
// from a uniform start in [0, N - 2R], so it returns R entries unless deletes
// thinned the keys ahead of it (mix only).  Inserts and deletes in mix pick a
// uniform key in [0, N).  dimensions: keys std::array<uint32_t, 6> whose first D
// coordinates span a grid of e^D points (e = round(N^(1/D))) and whose others
// are 0; a query is an interval of w_d values in each of the D dimensions
// (product of the w_d at most 4,096, as large as possible, the w_d within one of
// each other) at a uniform position, so it returns exactly prod(w_d) entries.
//
// Returned messages: range parts the nodes sent plus point operations answered
// (skiplist_map_local_statistics range_parts + answers, over every rank), the
// seed's "returned messages all the application processes receive".
//
// Checks: every range returns keys in ascending order, at or after its start,
// at most R (size: exactly R), values that match their keys; every pattern query
// exactly its box; a find of a key below N never returns a wrong value.

#include <cstdint>
#include <string>

#include <mpi.h>

namespace mpidict::apps::ycsb {

struct range_experiment_options {
    std::string experiment = "size";    // size | mix | dimensions
    std::uint64_t keys = 1u << 17;      // N
    std::uint64_t size = 1000;          // R (size, mix)
    std::string mix = "range";          // find | range (mix)
    std::uint64_t dimensions = 1;       // D (dimensions)
    std::uint64_t result_size = 4096;   // the most entries a pattern query returns (dimensions)
    std::uint64_t operations = 2000;    // per rank
    std::uint64_t window = 16;          // W: queries in flight per rank
    std::string consistency = "none";
    std::uint64_t seed = 1;
    bool json = false;
};

struct range_experiment_result {
    int ranks = 1;
    double seconds = 0;
    std::uint64_t operations = 0;       // over every rank
    std::uint64_t messages = 0;         // returned messages
    std::uint64_t key_values = 0;       // returned key-values (range entries + finds that hit)
    std::uint64_t failures = 0;
    std::string first_failure;
    std::string box;                    // dimensions: the query box's widths, e.g. "64x64"
    std::uint64_t grid = 0;             // keys loaded
    double load_average = 0;
};

// Collective.  Runs one experiment; the result is meaningful on rank 0.
range_experiment_result run_range_experiment(MPI_Comm comm, const range_experiment_options& options);

// The program `skiplist_ranges`.  Collective; 0 if every check passed.
int range_experiment_main(int argc, char** argv, MPI_Comm comm);

}  // namespace mpidict::apps::ycsb
