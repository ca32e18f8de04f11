#pragma once
// word_build: seed 003's experiment (Gupta, Modi and Pimentel, "Performance
// Evaluation of the LH*LH Scalable, Distributed Data Structure for a Cluster of
// Workstations"): clients build an LH*LH file from a dictionary, one word per
// key with a value of `value_bytes`, while the file splits onto dormant servers.
//
// Roles.  With p ranks, clients are ranks 0..C-1 and servers, in activation
// order, ranks p-1, p-2, ..., p-S (the paper maps clients from node 1 up and
// servers from node 8 down), so a rank may be both.  N servers are active at
// the start; the file splits onto the others.
//
// Run.  Rank 0 reads the word file (keys are the lines as bytes without the
// '\n'; an empty line is an error naming its line; duplicates are counted, not
// skipped) and broadcasts it.  Client c inserts its share of the words
// (contiguous blocks, or strided), each with a value that is a deterministic
// function of (word, seed, value_bytes).  Build phase: timed from a barrier;
// every insert is acknowledged (insert + get with `window` = 1 outstanding, as
// in the paper; more with --window) and its latency and completion time are
// kept.  Then flush, statistics, and a lookup phase: every word is found by
// its client and its value compared byte for byte.
//
// Baseline (--baseline): the same words, values, clients and window inserted
// into a plain hash_map<std::string, std::string> whose keys are placed by
// hash on the S server ranks (the final LH*LH server set, without splits).
//
// Output: JSON lines in the benchmark format of docs/architecture.md on stdout (rank 0, with
// --json), a human table on stderr, and with --trace FILE one JSON document
// with the build curve, the split points and client 0's insert latencies.
// Exit 0 only if every word was found with its value and no operation was
// forwarded more than twice.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <mpi.h>

#include "mpidict/linear_hash_map.hpp"


namespace mpidict::apps::word_build {

enum class share_kind { contiguous, strided };

struct word_build_options {
    std::string file;
    int clients = 0;                        // C; 0: every rank
    int servers_start = 1;                  // N
    int servers_max = 0;                    // S; 0: every rank
    std::size_t value_bytes = 1024;
    std::size_t limit = 0;                  // use the first W words; 0: all
    std::size_t server_capacity_bytes = 0;  // 0: automatic (see default_server_capacity)
    double split_load = 0.8;
    std::size_t buffer_bytes = 0;           // 0: the runtime default
    std::size_t window = 1;                 // outstanding requests per client
    share_kind share = share_kind::contiguous;
    bool baseline = false;
    bool baseline_first = false;            // run the hash_map baseline before LH*LH
    std::size_t repeat = 1;                 // whole runs; with --baseline they alternate the order
    bool json = false;
    std::string trace;                      // write the trace document here (rank 0)
    std::uint64_t seed = 1;
    bool quiet = false;                     // no human table
};

// A bad word file: "<path>:<line>: <what>" or "<path>: cannot open: <why>".
class word_file_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// The whole file; throws word_file_error ("<path>: cannot open: <why>").
std::string read_file_bytes(const std::string& path);

// The words of a file: the file's bytes and each line's place in them.
class word_list {
public:
    std::size_t size() const { return m_lines.size(); }
    std::string_view operator[](std::size_t index) const {
        return std::string_view(m_bytes).substr(m_lines[index].first, m_lines[index].second);
    }
    std::size_t duplicates() const { return m_duplicates; }
    std::size_t key_bytes() const { return m_key_bytes; }
    std::size_t longest() const { return m_longest; }

    // Reads `path` (the first `limit` lines; 0: all).  Throws word_file_error.
    static word_list read(const std::string& path, std::size_t limit, std::size_t max_key_bytes);
    // Splits `bytes` into lines (the same checks; `name` names the file in messages).
    static word_list parse(std::string bytes, const std::string& name, std::size_t limit, std::size_t max_key_bytes);

private:
    std::string m_bytes;
    std::vector<std::pair<std::uint32_t, std::uint32_t>> m_lines;  // offset, length
    std::size_t m_duplicates = 0;
    std::size_t m_key_bytes = 0;
    std::size_t m_longest = 0;
};

// The value stored for `word`: value_bytes bytes from a generator seeded by a
// 64-bit hash of the word and `seed`.
void make_value(std::string_view word, std::uint64_t seed, std::size_t value_bytes, std::string& out);

// With the automatic capacity, how long a client keeps retrying the inserts its
// servers refused while their splits were under way (word_build.cpp).
inline constexpr double retry_seconds = 5.0;

// Automatic per-server capacity.  The largest share of the file any LH* bucket
// holds at the end (N*2^floor(log2(S/N)) buckets being the last complete level),
// plus three standard deviations of its word count, ends at load
// (split_load + 1) / 2: below 1, so nothing is refused, and for large files
// above split_load, so every split down to S servers happens.  (A small file
// with S not N times a power of two may stop one split short.)  At least 4 KiB.
std::size_t default_server_capacity(std::uint64_t payload_bytes, std::uint64_t words, int servers_start,
                                    int servers_max, double split_load);

// Empty if `options` suit a run on `ranks` ranks, else the usage message.
std::string check_options(const word_build_options& options, int ranks);

struct latency_summary {
    std::uint64_t samples = 0;
    double mean_us = 0, median_us = 0, p90_us = 0, p99_us = 0, min_us = 0, max_us = 0;
};

struct split_point {
    lh_split_record record;
    double start_seconds = 0;       // since the build began
    double end_seconds = 0;
    std::uint64_t insertions = 0;   // acknowledged inserts (all clients) when it began
};

struct baseline_result {
    double build_seconds = 0;
    latency_summary insert_latency;
    std::uint64_t stored = 0;
};

// Everything below `failure` is meaningful on rank 0 only.
struct word_build_result {
    std::string failure;            // non-empty: the run could not happen (same on every rank)
    int ranks = 1;
    int clients = 1;
    int servers_start = 1;
    int servers_max = 1;
    std::vector<int> client_ranks;
    std::vector<int> server_ranks;  // activation order
    bool oversubscribed = false;
    int cores_per_node = 0;         // of the most loaded node
    int ranks_per_node = 0;
    std::size_t server_capacity_bytes = 0;
    bool capacity_automatic = false;

    std::uint64_t words = 0;
    std::uint64_t duplicates = 0;
    std::uint64_t payload_bytes = 0;  // keys + values
    std::uint64_t words_inserted = 0; // acknowledged as stored
    std::uint64_t rejected = 0;       // refused for capacity (after the retries)
    std::uint64_t retried = 0;        // stored on a retry, after a first refusal (automatic capacity only)
    std::uint64_t words_found = 0;    // found with the right value
    std::uint64_t wrong_values = 0;
    std::uint64_t missing = 0;

    double build_seconds = 0;        // barrier to the last acknowledged insert
    double build_flush_seconds = 0;  // barrier to the end of the flush (splits done)
    double lookup_seconds = 0;
    latency_summary insert_latency;
    latency_summary find_latency;
    std::vector<double> client_build_seconds;  // by client

    linear_hash_map_statistics stats;             // after the lookups
    std::vector<split_point> splits;
    int max_forwards = 0;
    double forwards_per_op = 0;      // inserts and finds
    double forwards_per_insert = 0;
    double forwards_per_find = 0;

    std::vector<std::pair<double, std::uint64_t>> curve;  // (seconds, acknowledged inserts)
    std::vector<float> client0_latency_us;                // every insert of client 0, in order

    std::optional<baseline_result> baseline;

    bool verified() const { return failure.empty() && words_found == words && max_forwards <= 2; }
};

// Collective over `comm`.  Reads options.file on rank 0; bad input comes back
// as `failure` on every rank.
word_build_result run_word_build(MPI_Comm comm, const word_build_options& options);

// The program: parses argv (argv[0] names the program in messages), runs on
// comm, prints on rank 0.  Collective.  Returns 0 if verified, 1 on bad input or
// a failed check (on every rank), 2 on a usage error.
int word_build_main(int argc, char** argv, MPI_Comm comm);

}  // namespace mpidict::apps::word_build
