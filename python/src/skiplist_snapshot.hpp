#pragma once
// mpidict._core's skiplist_map snapshots: one class per map class
// (skiplist_snapshot_<key>_<value>), made by the map's snapshot() (skiplist.cpp)
// and bound in skiplist_snapshot.cpp, so the map's file does not compile them.
// python/mpidict/_skiplist.py wraps them (SkiplistSnapshot).

#include <cstdint>
#include <utility>

#include "binding.hpp"
#include "mpidict/skiplist_map.hpp"

namespace mpidict_python {

template <class K, class V>
class py_skiplist_snapshot {
public:
    explicit py_skiplist_snapshot(mpidict::skiplist_snapshot<K, V>&& snapshot) : m_snapshot(std::move(snapshot)) {}
    py_skiplist_snapshot(py_skiplist_snapshot&&) = default;
    // The garbage collector runs at different times on different ranks: never
    // collective here.  A snapshot not released stays with its map until the
    // map is destroyed (SkiplistSnapshot's docstring says so).
    ~py_skiplist_snapshot() { m_snapshot.detach(); }

    nb::object find(const typename kind<K>::arg& key);
    nb::tuple range(const typename kind<K>::arg& lo, const typename kind<K>::arg& hi, bool bounded,
                    std::uint64_t limit, bool descending, bool after_lo, bool before_hi);
    std::uint64_t count(const typename kind<K>::arg& lo, const typename kind<K>::arg& hi, bool after_lo,
                        bool before_hi);
    nb::tuple local_items();
    std::uint64_t size() const { return m_snapshot.size(); }
    std::size_t local_size() const { return m_snapshot.local_size(); }
    std::size_t local_bytes() const { return m_snapshot.local_bytes(); }
    bool valid() const { return m_snapshot.valid(); }
    void release();

private:
    mpidict::skiplist_snapshot<K, V> m_snapshot;
};

// skiplist_snapshot.cpp: the classes for every key and value type skiplist.cpp binds.
void bind_skiplist_snapshots(nb::module_& mod);

}  // namespace mpidict_python
