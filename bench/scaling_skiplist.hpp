#pragma once
// bench/scaling's skiplist_map phases (issue 45; docs/scaling.md, "The ordered
// service"): seed 004's Figures 8, 9, 10 and 12 as weak scaling, timed with
// MPI_Wtime (simulated time under SimGrid SMPI), every answer checked.

#include <cstdint>
#include <string>

#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::bench::scaling {

struct skiplist_settings {
    std::uint64_t keys_per_rank = 20000;     // n: the list holds the keys 0 .. n·p − 1
    std::uint64_t seed = 1;
    // Which phases: skiplist (all), skiplist_core (insert_many, find_many per
    // mode), skiplist_ranges, skiplist_mix, skiplist_patterns.
    std::string phases = "skiplist";
    std::uint64_t total_order_keys = 1000;   // keys per rank looked up in total_order (every one through the head)
    std::uint64_t range_entries = 10000;     // entries per rank per range size: R = 100 runs 100 queries, 10,000 one
    std::uint64_t mix_operations = 2000;     // operations per rank of the 20/20/60 mix
    std::uint64_t pattern_queries = 4;       // pattern queries per rank for each D = 1..6
    std::uint64_t window = 16;               // requests in flight per rank (ranges, mix, patterns)
    runtime::config runtime{};
};

// Collective.  Runs the phases, reports them to `out`, returns this rank's
// count of wrong answers (every answer is checked).
std::uint64_t run_skiplist_phases(const skiplist_settings& settings, const world& w, report& out);

// True for the --phases names run_skiplist_phases handles.
bool is_skiplist_phase(const std::string& phases);

}  // namespace mpidict::bench::scaling
