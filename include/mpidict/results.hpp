#pragma once
// What operations return, shared by every container: the same operation has
// the same result type everywhere, and where the semantics differ the name of
// the type says so.
//
//   insert_result   hash_map::insert, which appends values to a key's list:
//                   how many of the values given were stored
//   replace_result  linear_hash_map::insert and skiplist_map::insert, which
//                   store or replace one value: whether it was stored and
//                   whether an old value was replaced
//   insert_status   per key of a batched insert_if_absent (rma_hash_set)
//   nothing         the result of a visitor that returns void

#include <cstdint>

namespace mpidict {

struct insert_result {
    std::uint32_t requested = 0;
    std::uint32_t stored = 0;
    // Values [stored, requested) of the call were not stored (capacity).
    bool complete() const { return stored == requested; }
    std::uint32_t not_stored() const { return requested - stored; }
};

struct replace_result {
    bool stored = false;    // false: the owner was at its capacity; nothing changed
    bool replaced = false;  // the key existed and its value was replaced
};

enum class insert_status : std::uint8_t { inserted, present, not_inserted };

struct nothing {};

}  // namespace mpidict
