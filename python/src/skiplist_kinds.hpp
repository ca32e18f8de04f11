#pragma once
// Composite keys of the Python skiplist_map classes (skiplist.cpp has the
// design): std::array<uint64_t, D> and how a batch of them crosses.  Shared by
// skiplist.cpp and skiplist_snapshot.cpp.

#include <nanobind/stl/array.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "binding.hpp"

namespace mpidict_python {

template <std::size_t D>
using composite = std::array<std::uint64_t, D>;

// A composite key batch: n * D words, key i at [i * D, i * D + D).
template <std::size_t D>
struct kind<composite<D>> {
    using batch = array_in<std::uint64_t>;
    struct view {
        const std::uint64_t* p;
        std::size_t n;
        std::size_t size() const { return n; }
        composite<D> at(std::size_t i) const {
            composite<D> key;
            std::copy_n(p + i * D, D, key.begin());
            return key;
        }
    };
    static view open(const batch& b) {
        if (b.shape(0) % D != 0)
            throw mpidict::invalid_argument_error("mpidict: a batch of " + std::to_string(D) + "-field keys holds " +
                                                  std::to_string(b.shape(0)) + " words, not a multiple of " +
                                                  std::to_string(D));
        return {b.data(), b.shape(0) / D};
    }
    struct out {
        std::vector<std::uint64_t> items;
        void add(const composite<D>& key) { items.insert(items.end(), key.begin(), key.end()); }
        void reserve(std::size_t n) { items.reserve(n * D); }
        nb::object release() { return nb::cast(to_numpy(std::move(items))); }
    };
    using arg = composite<D>;
    static composite<D> value(const arg& a) { return a; }
};

}  // namespace mpidict_python
