// mpidict._core, part 3: skiplist_map snapshots (skiplist_snapshot.hpp).  Reads
// release the GIL while they wait (other ranks are served meanwhile); the
// results are converted after.

#include <optional>
#include <string>
#include <vector>

#include "skiplist_kinds.hpp"
#include "skiplist_snapshot.hpp"

namespace mpidict_python {

template <class K, class V>
nb::object py_skiplist_snapshot<K, V>::find(const typename kind<K>::arg& key_in) {
    const K key = kind<K>::value(key_in);
    std::optional<V> value;
    {
        nb::gil_scoped_release released;
        value = m_snapshot.find(key);
    }
    return value ? kind<V>::scalar(*value) : nb::none();
}

template <class K, class V>
nb::tuple py_skiplist_snapshot<K, V>::range(const typename kind<K>::arg& lo_in, const typename kind<K>::arg& hi_in,
                                            bool bounded, std::uint64_t limit, bool descending, bool after_lo,
                                            bool before_hi) {
    const mpidict::range_options options{limit, descending, after_lo, before_hi && bounded};
    const K lo = kind<K>::value(lo_in);
    typename mpidict::skiplist_snapshot<K, V>::entry_list entries;
    {
        nb::gil_scoped_release released;
        entries = bounded ? m_snapshot.range(lo, kind<K>::value(hi_in), options) : m_snapshot.range_from(lo, options);
    }
    pair_columns<K, V> out;
    out.reserve(entries.size());
    for (const auto& [k, v] : entries)
        out.add(k, v);
    return out.release();
}

template <class K, class V>
std::uint64_t py_skiplist_snapshot<K, V>::count(const typename kind<K>::arg& lo_in, const typename kind<K>::arg& hi_in,
                                                bool after_lo, bool before_hi) {
    mpidict::range_options options;
    options.after_lo = after_lo;
    options.before_hi = before_hi;
    const K lo = kind<K>::value(lo_in), hi = kind<K>::value(hi_in);
    nb::gil_scoped_release released;
    return m_snapshot.count(lo, hi, options);
}

template <class K, class V>
nb::tuple py_skiplist_snapshot<K, V>::local_items() {
    pair_columns<K, V> out;
    m_snapshot.for_all([&](const K& key, const V& value) { out.add(key, value); });
    return out.release();
}

template <class K, class V>
void py_skiplist_snapshot<K, V>::release() {
    nb::gil_scoped_release released;
    m_snapshot.release();
}

namespace {

template <class K, class V>
void bind_one(nb::module_& mod, const char* name) {
    using S = py_skiplist_snapshot<K, V>;
    nb::class_<S>(mod, name)
        .def("find", &S::find)
        .def("range", &S::range)
        .def("count", &S::count)
        .def("local_items", &S::local_items)
        .def("size", &S::size)
        .def("local_size", &S::local_size)
        .def("local_bytes", &S::local_bytes)
        .def("valid", &S::valid)
        .def("release", &S::release);
}

}  // namespace

void bind_skiplist_snapshots(nb::module_& mod) {
    for_each_skiplist_class([&]<class K, class V>(const char*, const char* name) { bind_one<K, V>(mod, name); });
}

}  // namespace mpidict_python
