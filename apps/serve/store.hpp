#pragma once
// What runs at a key's owner (apps/serve, docs/serve.md "Where commands run").
//
// The keyspace is one hash_map<std::string, std::string>: a Redis key is a
// hash_map key with one value, an entry: a type byte ('s' string, 'h' hash,
// 'z' sorted set), this rank's FLUSHALL epoch when it was written (4 bytes),
// its expiry time (8 bytes, Unix milliseconds, 0 for none) and the payload:
// the string itself, or for a hash or a sorted set the number of an object
// that lives on the owner rank (a field table; an ordered set of (score,
// member) with a member index).  Every command on one key is one callable
// visit (hash_map::visit) that runs key_command at the owner, atomically with
// respect to every other command on that key, and returns the finished RESP
// reply.  Commands on the whole keyspace (DBSIZE, FLUSHALL, SCAN, INFO) are one
// visit of rank_command per rank, addressed with target_rank.
//
// An entry whose epoch is older than its rank's (a FLUSHALL happened) or whose
// expiry time has passed is dead: every command treats it as absent and removes
// it when it meets it, and the service's loop removes the rest in the
// background (dead_local_keys + drop_if_dead).

#include <cstdint>
#include <string>
#include <vector>

#include "mpidict/hash_map.hpp"

namespace mpidict::apps::serve {

using keyspace = mpidict::hash_map<std::string, std::string>;

// argv[0] is the command's canonical upper-case name (the dispatcher's), then
// the key and the rest of the client's arguments.
struct key_command {
    std::string operator()(const std::string& key, keyspace::values_ref& values,
                           const std::vector<std::string>& argv) const;
};

// DBSIZE, FLUSHALL, INFO, SCAN <position> <count> [pattern]: this rank's part.
struct rank_command {
    std::string operator()(keyspace::visit_context& context, const std::string& key, keyspace::values_ref& values,
                           const std::vector<std::string>& argv) const;
};

// Removes the key's entry if it is dead (expired, or older than a FLUSHALL).
struct drop_if_dead {
    void operator()(const std::string& key, keyspace::values_ref& values) const;
};

// Up to `limit` keys of this rank whose entries are dead (not in a handler).
// O(local keys): the loop calls it at most every 200 ms, and only while
// sweep_wanted().
std::vector<std::string> dead_local_keys(const keyspace& map, std::size_t limit);
// True when this rank may hold dead entries: a FLUSHALL, or an entry with an
// expiry time seen since the last dead_local_keys.
bool sweep_wanted();

// Counters of this rank, for INFO.
struct rank_counters {
    std::uint64_t commands = 0;  // key and rank commands run here as owner
    std::uint64_t objects = 0;   // hashes and sorted sets hosted here
    std::uint64_t object_bytes = 0;
};
rank_counters counters();

// Parses a SCAN position's parts (the dispatcher's cursor encoding).
constexpr int scan_rank_bits = 16;
constexpr std::uint64_t scan_position_mask = (std::uint64_t{1} << (64 - scan_rank_bits)) - 1;

}  // namespace mpidict::apps::serve
