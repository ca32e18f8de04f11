#pragma once
// What the batch operations return in every container (docs/architecture.md,
// "Contracts"), beside the point operations' results in results.hpp.
//
//   insert_many_result  insert_many: how many pairs were stored, how many of
//                       those replaced a value, and how many the owners refused
//                       for capacity
//
// Capacity: an owner that refuses an insert for capacity answers normally and
// the result says so (stored false, stored < requested,
// insert_status::not_inserted, insert_many_result::refused, or async_rejected()
// for fire-and-forget calls); it is never an exception.

#include <cstddef>
#include <vector>

#include "mpidict/results.hpp"

namespace mpidict {

// insert_many's answer, once every pair has been answered.  stored + refused is
// the number of pairs given.
struct insert_many_result {
    std::size_t stored = 0;    // pairs stored: a new key, a replaced value, or (hash_map) a value appended
    std::size_t replaced = 0;  // of those, pairs that replaced a key's value (single-valued maps; hash_map: 0)
    std::size_t refused = 0;   // pairs the owner refused for capacity: nothing of them was stored
    std::vector<std::size_t> refused_indexes;  // which: indexes into the call's keys, ascending
    bool complete() const { return refused == 0; }
    // Keys that were not there before (single-valued maps).
    std::size_t added() const { return stored - replaced; }
    // skiplist_map::insert_many used to return this count as a std::size_t.
    [[deprecated("mpidict: insert_many returns insert_many_result; use .added() for the count of new keys")]]
    operator std::size_t() const { return added(); }
};

}  // namespace mpidict
