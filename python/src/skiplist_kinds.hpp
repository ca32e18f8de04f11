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

// Every (key, value) storage pair a Python skiplist_map class exists for, with
// the names of its map and snapshot classes: visit.template operator()<K, V>(map, snapshot).
template <class Visit>
void for_each_skiplist_class(Visit&& visit) {
    visit.template operator()<std::int64_t, std::uint64_t>("skiplist_map_i64_u64", "skiplist_snapshot_i64_u64");
    visit.template operator()<std::int64_t, std::string>("skiplist_map_i64_bytes", "skiplist_snapshot_i64_bytes");
    visit.template operator()<std::uint64_t, std::uint64_t>("skiplist_map_u64_u64", "skiplist_snapshot_u64_u64");
    visit.template operator()<std::uint64_t, std::string>("skiplist_map_u64_bytes", "skiplist_snapshot_u64_bytes");
    visit.template operator()<double, std::uint64_t>("skiplist_map_f64_u64", "skiplist_snapshot_f64_u64");
    visit.template operator()<double, std::string>("skiplist_map_f64_bytes", "skiplist_snapshot_f64_bytes");
    visit.template operator()<std::string, std::uint64_t>("skiplist_map_bytes_u64", "skiplist_snapshot_bytes_u64");
    visit.template operator()<std::string, std::string>("skiplist_map_bytes_bytes", "skiplist_snapshot_bytes_bytes");
    visit.template operator()<composite<2>, std::uint64_t>("skiplist_map_c2_u64", "skiplist_snapshot_c2_u64");
    visit.template operator()<composite<2>, std::string>("skiplist_map_c2_bytes", "skiplist_snapshot_c2_bytes");
    visit.template operator()<composite<3>, std::uint64_t>("skiplist_map_c3_u64", "skiplist_snapshot_c3_u64");
    visit.template operator()<composite<3>, std::string>("skiplist_map_c3_bytes", "skiplist_snapshot_c3_bytes");
    visit.template operator()<composite<4>, std::uint64_t>("skiplist_map_c4_u64", "skiplist_snapshot_c4_u64");
    visit.template operator()<composite<4>, std::string>("skiplist_map_c4_bytes", "skiplist_snapshot_c4_bytes");
}

}  // namespace mpidict_python
