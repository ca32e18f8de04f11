#pragma once
// The public types of hash_map (hash_map.hpp): placement, target_rank, its
// configuration and its operation kinds.  In a header of their own because the
// shard core (detail/hash_map_shard.hpp) needs them too and must not include the
// typed front; include hash_map.hpp, which includes this.

#include <cstddef>
#include <string_view>

#include "mpidict/local/multi_table.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict {

enum class placement { hash, cyclic };

// Pass as the first argument to send an operation to a chosen rank.
struct target_rank {
    int rank;
};

namespace detail {
// insert_or_assign's operator: the newer value wins (associative, so combinable).
struct replace_with_new {
    template <class V>
    V operator()(const V&, const V& newer) const {
        return newer;
    }
};
}  // namespace detail

struct hash_map_config {
    runtime::config runtime{};
    placement place = placement::hash;
    std::size_t expected_keys_per_rank = 0;  // capacity hint for the local table
    double max_load = local::table_default_max_load;  // of the local table (0.58: 29.3 bytes per 8+8-byte pair)
    std::size_t capacity_values = 0;         // per-rank limit on stored values; 0: none
    std::size_t capacity_bytes = 0;          // per-rank limit on key+value payload bytes; 0: none
    std::size_t fixed_value_bytes = 0;       // byte-string values must have this length; 0: any
    // Test only: async_reduce's combining at the origin is not ended by this
    // rank's other operations on the key, so a later reduce may fold into a
    // record sent before them (the history check of
    // tests/hash_map/mpi_hash_map_reduce_combine.cpp must reject it).  Never set it otherwise.
    bool break_consistency_for_testing = false;
};

// hash_map's operation kinds, registered with its engine in this order; index
// `stats()` with them (e.g. `map.stats()[hash_map_op::find].completion_seconds`).
struct hash_map_op {
    enum kind : runtime::op_kind { insert, find, take, erase, visit, insert_if_absent, reduce };
    static constexpr std::string_view names[] = {"insert", "find", "take", "erase", "visit", "insert_if_absent",
                                                 "reduce"};
};

}  // namespace mpidict
