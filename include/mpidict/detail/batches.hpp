#pragma once
// The batch contract's driver for containers whose batches are built from
// their point operations (linear_hash_map, hash_map::insert_many;
// docs/architecture.md, "Contracts"):
// up to `window` requests in flight, each answered in index order, so results
// are delivered in index order and one caller's operations on a repeated key
// are applied in index order.  Blocking: returns once every request has been
// answered.  Other ranks answer while this rank waits (every wait serves).

#include <cstddef>
#include <deque>
#include <utility>

#include "mpidict/batch_results.hpp"

namespace mpidict::detail {

// start(index) returns a request; done(index, result) receives its get().
template <class Start, class Done>
void windowed_batch(std::size_t count, std::size_t window, Start&& start, Done&& done) {
    using request_type = decltype(start(std::size_t{0}));
    std::deque<std::pair<std::size_t, request_type>> in_flight;
    if (window == 0)
        window = 1;
    for (std::size_t index = 0; index < count; ++index) {
        if (in_flight.size() >= window) {
            auto& [first, oldest] = in_flight.front();
            done(first, oldest.get());
            in_flight.pop_front();
        }
        in_flight.emplace_back(index, start(index));
    }
    while (!in_flight.empty()) {
        auto& [first, oldest] = in_flight.front();
        done(first, oldest.get());
        in_flight.pop_front();
    }
}

// Counts the answer of the index'th pair (answers come in index order).
inline void count_insert(insert_many_result& totals, std::size_t index, const replace_result& one) {
    if (!one.stored) {
        ++totals.refused;
        totals.refused_indexes.push_back(index);
        return;
    }
    ++totals.stored;
    totals.replaced += one.replaced ? 1 : 0;
}
// hash_map's insert_result (one value per pair): appended (never replaced) or refused.
inline void count_insert(insert_many_result& totals, std::size_t index, const insert_result& one) {
    totals.stored += one.stored;
    totals.refused += one.not_stored();
    if (one.not_stored() != 0)
        totals.refused_indexes.push_back(index);
}

}  // namespace mpidict::detail
