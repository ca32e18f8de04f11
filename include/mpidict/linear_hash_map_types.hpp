#pragma once
// The public types of linear_hash_map (linear_hash_map.hpp): its configuration,
// and the statistics (an insert returns replace_result, results.hpp).  In a header of their own because
// the compiled core (detail/lh_core.hpp, src/lh/lh_core.cpp) needs them too and
// must not include the typed front; include linear_hash_map.hpp, which
// includes this.

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "mpidict/results.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict {

struct linear_hash_map_config {
    runtime::config runtime{};
    // Ranks that host a server, in activation order (bucket address a lives on
    // server_ranks[a]).  nullopt: every rank.  An explicit empty list is an error.
    std::optional<std::vector<int>> server_ranks{};
    // Ranks that may start operations.  nullopt: every rank.
    std::optional<std::vector<int>> client_ranks{};
    std::size_t initial_servers = 1;                    // N: active at start
    std::size_t server_capacity_bytes = 256u << 20;    // per server: key + value payload bytes
    double split_load = 0.8;                            // token holder splits above this load factor
    std::size_t max_key_bytes = 1024;
    std::size_t max_value_bytes = 16 * 1024;
    std::size_t bucket_entries = 8;                     // LH: average entries per local bucket
    std::size_t ship_window = 2;                        // split messages in flight, unacknowledged

    // The smallest runtime.buffer_bytes that holds one record of the largest key
    // and value (a request, or one entry of a split shipment); the constructor
    // throws invalid_argument_error below it.
    std::size_t required_buffer_bytes() const;
};

// linear_hash_map's operation kinds, registered with its engine in this order;
// index `stats()` with them (and linear_hash_map_statistics::operations).
struct linear_hash_map_op {
    enum kind : runtime::op_kind { insert, find, erase };
    static constexpr std::string_view names[] = {"insert", "find", "erase"};
};
using lh_op [[deprecated("mpidict: lh_op is linear_hash_map_op::kind (the name every container's kinds follow)")]] =
    linear_hash_map_op::kind;
inline constexpr std::size_t lh_op_count = 3;
// Forward counts recorded: 0, 1, 2, and "more than 2" (never expected).
inline constexpr std::size_t lh_hop_bins = 4;

struct lh_split_record {
    int from_address = -1;
    int to_address = -1;
    int from_rank = -1;
    int to_rank = -1;
    double start_seconds = 0;  // runtime::now_seconds() on the splitting rank
    double end_seconds = 0;
    std::uint64_t bytes_shipped = 0;
    std::uint64_t entries_shipped = 0;
    std::uint64_t messages = 0;
};

struct lh_server_info {
    int rank = -1;
    int address = -1;  // -1: dormant
    int level = 0;
    std::uint64_t entries = 0;
    std::uint64_t payload_bytes = 0;
    double load_factor = 0;
    std::uint64_t lh_buckets = 0;
    std::uint64_t served = 0;       // requests answered here
    std::uint64_t forwarded = 0;    // requests this server sent on
};

// What one rank saw.  forwards[op][h]: operations answered after h forwards
// (counted where they were answered; h = 3 means more than 2).
struct linear_hash_map_local_statistics {
    std::array<std::array<std::uint64_t, lh_hop_bins>, lh_op_count> forwards{};
    std::uint64_t iams_sent = 0;       // image adjustments carried back to clients
    std::uint64_t iams_applied = 0;    // adjustments that moved this client's image
    std::uint64_t rejected = 0;        // inserts refused for capacity (answered here)
    std::uint64_t deferred = 0;        // requests held until a shipment completed
    std::vector<lh_split_record> splits;  // splits this rank performed
};

// The whole file, gathered collectively.
struct linear_hash_map_statistics {
    std::array<std::array<std::uint64_t, lh_hop_bins>, lh_op_count> forwards{};
    std::uint64_t iams_sent = 0;
    std::uint64_t iams_applied = 0;
    std::uint64_t rejected = 0;
    std::uint64_t deferred = 0;
    std::vector<lh_split_record> splits;   // in split order
    std::vector<lh_server_info> servers;   // by address, then dormant ranks
    int servers_active = 0;
    int level = 0;       // i of the file
    int split_next = 0;  // n of the file
    int max_forwards() const;
    std::uint64_t operations(linear_hash_map_op::kind op) const;
};

// The names before issue 40 (statistics are <container>_local_statistics and
// <container>_statistics in every container).
using lh_local_statistics [[deprecated("mpidict: renamed linear_hash_map_local_statistics")]] =
    linear_hash_map_local_statistics;
using lh_statistics [[deprecated("mpidict: renamed linear_hash_map_statistics")]] = linear_hash_map_statistics;

}  // namespace mpidict
