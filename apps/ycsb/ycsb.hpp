#pragma once
// ycsb: YCSB's core workloads (A-F and any property file in their format) on
// mpidict's containers, every rank a client.  docs/ycsb.md describes the
// workload, what is faithful to YCSB and what differs, and the results.
//
// Phases.  load: every rank inserts its share of the records (workload.hpp):
// --load async (default) as async_inserts ended by a flush, --load many as
// insert_many calls, --load requests as insert requests with W in flight;
// then, untimed, reads every record of its share back.  run: every rank executes its share of
// operationcount operations chosen by the workload's proportions and key
// distribution, W in flight, then a flush.  Each phase is timed from a barrier
// to the end of its flush; throughput is the phase's operations over that time.
// Latencies are measured per operation from its start to the arrival of its
// answer (both requests of a two-step operation) into log-linear histograms
// (1/32 relative resolution) summed over the ranks.
//
// Operations on the containers.
//   read    find(key) (the whole record; readallfields=false still fetches it)
//   insert  insert(key, record) of a new key
//   update  writeallfields=true: a new record replaces the old one.  Otherwise
//           one field changes: hash_map applies the field at the owner (a
//           registered visitor, one request); skiplist_map and linear_hash_map
//           have no server-side update, so the client reads the record, changes
//           the field and writes it back (two requests, like YCSB's RocksDB
//           binding).  A rank never has two writes of one key in flight.
//   read-modify-write  read, then the update above with the record just read
//   scan    skiplist_map: range_from(start key, limit = scan length).  The hash
//           containers cannot scan: a workload with scans is refused for them.
//
// Verification (docs/ycsb.md, "What is checked").  Every record a read or scan
// returns must be well formed for its key: each field written by some rank for
// this key and this field (workload.hpp's record format).  A field this rank
// wrote itself must be at least as new as its last acknowledged write of that
// field when the read started, when this is sound: at 1 rank, or with
// writeallfields=true, or on hash_map (whose updates are atomic); with several
// writers doing client-side read-modify-write a lost update is legal.  A
// chosen record is never missing: every choice is at or below the insert
// counter's acknowledged limit, which the ranks share through a window
// (workload.hpp, insert_progress in ycsb.cpp).  Scans return keys in
// ascending order from their start key, at most the scan length, every loaded
// key between the start and the last key returned, and fewer than asked only
// when no loaded key is left.  At the end the containers hold exactly the
// loaded records plus the acknowledged inserts.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include "ycsb/workload.hpp"

namespace mpidict::apps::ycsb {

enum class container_kind { skiplist, hash, linear };
std::string_view container_name(container_kind kind);

// A latency histogram: exact below 64 ns, then 32 buckets per power of two.
class latency_histogram {
public:
    static constexpr int sub_buckets = 32;
    static constexpr int buckets = 64 + 40 * sub_buckets;

    void add(std::uint64_t nanoseconds);
    std::uint64_t count() const { return m_count; }
    double mean_us() const { return m_count == 0 ? 0 : static_cast<double>(m_sum_ns) / static_cast<double>(m_count) / 1e3; }
    double max_us() const { return static_cast<double>(m_max_ns) / 1e3; }
    // The q-quantile (0 < q <= 1) in microseconds: the middle of the bucket
    // holding it (within 1/64 of the true value above 64 ns).
    double quantile_us(double q) const;
    // Collective: the sum over the ranks of comm, on rank 0.
    void reduce_to_root(MPI_Comm comm);

    static int bucket_of(std::uint64_t nanoseconds);
    static double bucket_middle_ns(int bucket);

private:
    std::array<std::uint64_t, buckets> m_counts{};
    std::uint64_t m_count = 0;
    std::uint64_t m_sum_ns = 0;
    std::uint64_t m_max_ns = 0;
};

struct ycsb_options {
    std::string workload_file;
    std::vector<std::string> overrides;        // -p key=value, in order
    container_kind container = container_kind::skiplist;
    std::string consistency = "sequential";     // skiplist_map: total_order | sequential | none
    std::size_t window = 16;                    // W: operations in flight per rank
    std::string load = "async";                 // the load phase: async (async_insert, then flush) | many | requests
    std::size_t load_chunk = 8192;              // records per insert_many call (--load many)
    std::uint64_t seed = 1;
    bool json = false;
    bool quiet = false;
    bool progress = false;                      // a progress bar on stderr (rank 0)
    std::string dump_keys;                      // rank 0 writes its chosen key numbers here
    std::string counter_window = "auto";        // the shared insert counter: auto (shared memory on one node) | rma
    // skiplist_map (issue 44): rebalance() by requests this many times, evenly
    // spaced through the run phase (timed with it); drain this rank halfway
    // through the run (-1: none).
    std::size_t rebalances = 0;
    double rebalance_target = 1.1;              // max/mean of the requests at or below which nothing moves
    int drain = -1;
    double online_rebalance = 0;                // skiplist_map_config::online_rebalance (0: off)
};

struct phase_result {
    std::string name;                           // "load" | "run"
    double seconds = 0;
    std::uint64_t operations = 0;               // over every rank
    std::array<std::uint64_t, operation_count> by_kind{};
    std::array<latency_histogram, operation_count> latency{};
    std::uint64_t scanned_records = 0;
    std::uint64_t failures = 0;                 // verification failures
    std::string first_failure;                  // lowest failing rank's first message
    double throughput() const { return seconds > 0 ? static_cast<double>(operations) / seconds : 0; }
};

struct ycsb_result {
    std::string failure;                        // bad input or options (same on every rank)
    workload spec;
    int ranks = 1;
    std::vector<phase_result> phases;           // meaningful on rank 0
    std::uint64_t records_expected = 0;         // loaded + acknowledged inserts
    std::uint64_t records_stored = 0;           // global size at the end
    double load_average = 0;
    // skiplist_map: the requests each rank's nodes handled since the run's last
    // rebalance (or its start), and what the rebalances and the drain moved.
    std::vector<std::uint64_t> request_load;
    double request_load_ratio = 0;   // max/mean over the active servers
    std::uint64_t moved_nodes = 0, moved_bytes = 0;
    double rebalance_seconds = 0;
    bool verified() const;
};

// Reads the workload file on rank 0 (broadcast), applies the overrides and
// checks the result against the options; a problem comes back as `failure`.
// Collective.
ycsb_result run_ycsb(MPI_Comm comm, const ycsb_options& options);

// The program: `ycsb --workload FILE [-p key=value]... [options]`.  Collective.
// Returns 0 if every check passed, 1 on bad input or a failed check, 2 on a
// usage error.
int ycsb_main(int argc, char** argv, MPI_Comm comm);

}  // namespace mpidict::apps::ycsb
