#pragma once
// skiplist_map's reduce at the node (issue 49, item 6): reduce(key, v, op) and
// async_reduce(key, v, op) send op's number with the operand in a point record
// of kind skiplist_op::reduce (the number travels in the point header's
// `expires` field: a reduce never sets an expiry); the node holding the key
// folds op(current, v) into the stored value, or stores v for a new key, as an
// insert would (splits and list_full included).  The operator is numbered by
// its type (callable_registry.hpp, as hash_map's async_reduce): every rank of
// the program numbers the same operators the same way, and the nodes, which
// know no types, call it through skiplist_reducers.

#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "mpidict/detail/callable_registry.hpp"
#include "mpidict/detail/payload.hpp"

namespace mpidict::detail {

// A reduce operator as the nodes run it: the stored value's bytes and the
// operand's in, the new value's bytes out.
using skiplist_reducer = std::string (*)(std::string_view current, std::string_view operand);
using skiplist_reducers = callable_registry<skiplist_reducer>;

// Op's number for the map type Map with values V.  Op: a stateless callable
// V(const V&, const V&) (std::plus<>, a lambda without captures).
template <class Map, class V, class Op>
struct skiplist_reduce_op {
    static_assert(std::is_empty_v<Op> && std::is_default_constructible_v<Op>,
                  "skiplist_map reduce: the operator must be stateless (a lambda without captures, std::plus<>)");
    static_assert(std::is_trivially_copyable_v<V>, "skiplist_map reduce: values must be trivially copyable");
    static std::string apply(std::string_view current, std::string_view operand) {
        const V folded = static_cast<V>(Op{}(from_payload<V>(current), from_payload<V>(operand)));
        return std::string(payload_of(folded));
    }
    static inline const std::uint32_t id =
        skiplist_reducers::add(type_name<type_list<Map, Op>>(), &skiplist_reduce_op::apply);
    // The number as the point header carries it.
    static double wire_id() { return static_cast<double>(id); }
};

}  // namespace mpidict::detail
