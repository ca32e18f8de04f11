// The shared part of mpidict._core (module.cpp binds hash_map, linear_hash_map,
// rma_hash_set and the module; skiplist.cpp binds skiplist_map): storage kinds,
// batches, requests and the container base classes.  See module.cpp for the design.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"
#include "mpidict/error.hpp"
#include "mpidict/results.hpp"
#include "mpidict/batch_results.hpp"
#include "mpidict/runtime/request.hpp"

namespace mpidict_python {

namespace nb = nanobind;

// ---- communicators --------------------------------------------------------------

// An MPI communicator from mpi4py, taken as its Fortran handle (comm.py2f()),
// so that no Python int is ever mistaken for an MPI_Comm.
struct communicator {
    MPI_Comm comm = MPI_COMM_NULL;
};

inline std::string mpi_library_version() {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(text, &length);
    return std::string(text, static_cast<std::size_t>(length));
}

// ---- batches -----------------------------------------------------------------------

template <class T>
using array_in = nb::ndarray<const T, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
template <class T>
using array_out = nb::ndarray<nb::numpy, T, nb::ndim<1>>;

template <class T>
array_out<T> to_numpy(std::vector<T>&& items) {
    auto* owned = new std::vector<T>(std::move(items));
    nb::capsule owner(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
    return array_out<T>(owned->data(), {owned->size()}, owner);
}

// A batch of byte strings: offsets (n + 1) and data.
struct string_batch {
    string_batch(array_in<std::uint64_t> o, array_in<std::uint8_t> d) : offsets(std::move(o)), data(std::move(d)) {}
    array_in<std::uint64_t> offsets;
    array_in<std::uint8_t> data;
    std::size_t size() const { return offsets.shape(0) == 0 ? 0 : offsets.shape(0) - 1; }
    std::string at(std::size_t i) const {
        const std::uint64_t begin = offsets.data()[i], end = offsets.data()[i + 1];
        return std::string(reinterpret_cast<const char*>(data.data()) + begin, end - begin);
    }
    void check() const {
        const std::size_t n = offsets.shape(0);
        if (n == 0)
            throw mpidict::invalid_argument_error("mpidict: a byte-string batch needs n + 1 offsets");
        const std::uint64_t* o = offsets.data();
        if (o[0] != 0)
            throw mpidict::invalid_argument_error("mpidict: byte-string offsets must start at 0");
        for (std::size_t i = 1; i < n; ++i)
            if (o[i] < o[i - 1])
                throw mpidict::invalid_argument_error("mpidict: byte-string offsets must not decrease");
        if (o[n - 1] != data.shape(0))
            throw mpidict::invalid_argument_error("mpidict: byte-string offsets end at " + std::to_string(o[n - 1]) +
                                                  " but the data holds " + std::to_string(data.shape(0)) + " bytes");
    }
};

// Collects byte strings into (offsets, data) for Python.
struct string_out {
    std::vector<std::uint64_t> offsets{0};
    std::vector<std::uint8_t> data;
    void add(std::string_view s) {
        data.insert(data.end(), s.begin(), s.end());
        offsets.push_back(data.size());
    }
    void reserve(std::size_t n) { offsets.reserve(n + 1); }
    nb::tuple release() { return nb::make_tuple(to_numpy(std::move(offsets)), to_numpy(std::move(data))); }
};

// How a storage type crosses: in as a batch, out as a batch or a scalar.
template <class T>
struct kind;

template <>
struct kind<std::uint64_t> {
    using batch = array_in<std::uint64_t>;
    struct view {
        const std::uint64_t* p;
        std::size_t n;
        std::size_t size() const { return n; }
        std::uint64_t at(std::size_t i) const { return p[i]; }
    };
    static view open(const batch& b) { return {b.data(), b.shape(0)}; }
    struct out {
        std::vector<std::uint64_t> items;
        void add(std::uint64_t v) { items.push_back(v); }
        void reserve(std::size_t n) { items.reserve(n); }
        nb::object release() { return nb::cast(to_numpy(std::move(items))); }
    };
    static nb::object scalar(std::uint64_t v) { return nb::int_(v); }
    using arg = std::uint64_t;
    static std::uint64_t value(arg a) { return a; }
};

template <class Number>
struct number_kind {
    using batch = array_in<Number>;
    struct view {
        const Number* p;
        std::size_t n;
        std::size_t size() const { return n; }
        Number at(std::size_t i) const { return p[i]; }
    };
    static view open(const batch& b) { return {b.data(), b.shape(0)}; }
    struct out {
        std::vector<Number> items;
        void add(Number v) { items.push_back(v); }
        void reserve(std::size_t n) { items.reserve(n); }
        nb::object release() { return nb::cast(to_numpy(std::move(items))); }
    };
    static nb::object scalar(Number v) { return nb::cast(v); }
    using arg = Number;
    static Number value(arg a) { return a; }
};
template <>
struct kind<std::int64_t> : number_kind<std::int64_t> {};
template <>
struct kind<double> : number_kind<double> {};

template <>
struct kind<std::string> {
    using batch = string_batch;
    using view = const string_batch&;
    static const string_batch& open(const batch& b) {
        b.check();
        return b;
    }
    struct out {
        string_out items;
        void add(std::string_view v) { items.add(v); }
        void reserve(std::size_t n) { items.reserve(n); }
        nb::object release() { return items.release(); }
    };
    static nb::object scalar(const std::string& v) { return nb::bytes(v.data(), v.size()); }
    using arg = nb::bytes;  // single keys and values arrive as Python bytes
    static std::string value(const arg& a) { return std::string(a.c_str(), a.size()); }
};

// The user's type names, for the checkpoint manifest (checkpoint_options).
inline mpidict::checkpoint_options names(const std::string& key_name, const std::string& value_name) {
    mpidict::checkpoint_options options;
    options.key_type_name = key_name;
    options.value_type_name = value_name;
    return options;
}

template <class A, class B>
void same_length(const A& a, const B& b) {
    if (a.size() != b.size())
        throw mpidict::invalid_argument_error("mpidict: " + std::to_string(a.size()) + " keys but " +
                                              std::to_string(b.size()) + " values");
}

// A batch of keys and one of values (same length) copied into vectors, for the
// C++ batch calls that take spans (insert_many and its expiring forms).
template <class K, class V, class KeysIn, class ValuesIn>
std::pair<std::vector<K>, std::vector<V>> pairs_of(const KeysIn& keys, const ValuesIn& values) {
    auto k = kind<K>::open(keys);
    auto v = kind<V>::open(values);
    same_length(k, v);
    std::pair<std::vector<K>, std::vector<V>> out;
    out.first.reserve(k.size());
    out.second.reserve(k.size());
    for (std::size_t i = 0; i < k.size(); ++i) {
        out.first.push_back(k.at(i));
        out.second.push_back(v.at(i));
    }
    return out;
}

// ---- requests ------------------------------------------------------------------------

// A request whose result Python reads once: get() waits (GIL released) and converts.
template <class T, class Convert>
struct py_request {
    mpidict::request<T> pending;
    Convert convert;
    std::optional<nb::object> result;
    nb::object get() {
        if (!result) {
            T value;
            {
                nb::gil_scoped_release released;
                value = pending.get();
            }
            result = convert(value);
        }
        return *result;
    }
    void wait() {
        nb::gil_scoped_release released;
        pending.wait();
    }
    bool test() {
        nb::gil_scoped_release released;
        return result.has_value() || pending.test();
    }
};

struct request_base {
    virtual ~request_base() = default;
    virtual nb::object get() = 0;
    virtual void wait() = 0;
    virtual bool test() = 0;
};
template <class T, class Convert>
struct request_impl final : request_base {
    py_request<T, Convert> r;
    request_impl(mpidict::request<T>&& p, Convert c) : r{std::move(p), std::move(c), {}} {}
    nb::object get() override { return r.get(); }
    void wait() override { r.wait(); }
    bool test() override { return r.test(); }
};
struct request_handle {
    std::shared_ptr<request_base> impl;
    nb::object get() { return impl->get(); }
    void wait() { impl->wait(); }
    bool test() { return impl->test(); }
};
template <class T, class Convert>
request_handle wrap(mpidict::request<T>&& pending, Convert convert) {
    return {std::make_shared<request_impl<T, Convert>>(std::move(pending), std::move(convert))};
}

// Keys and values collected as two columns (numpy arrays, or lists of bytes/str),
// returned as (keys, values).
template <class K, class V>
struct pair_columns {
    typename kind<K>::out keys;
    typename kind<V>::out values;
    void add(const K& key, const V& value) {
        keys.add(key);
        values.add(value);
    }
    void reserve(std::size_t n) {
        keys.reserve(n);
        values.reserve(n);
    }
    nb::tuple release() { return nb::make_tuple(keys.release(), values.release()); }
};

// The batch contract's result (docs/architecture.md, "Contracts") as Python's
// InsertManyResult fields: (stored, replaced, refused, refused_indexes (int64 array)).
inline nb::tuple insert_many_out(const mpidict::insert_many_result& result) {
    std::vector<std::int64_t> refused(result.refused_indexes.begin(), result.refused_indexes.end());
    return nb::make_tuple(result.stored, result.replaced, result.refused, to_numpy(std::move(refused)));
}

// Fire and forget: every pair's async_insert, complete at the next flush()
// (refusals in async_rejected()).
template <class K, class V, class Map>
void async_insert_pairs(Map& map, const typename kind<K>::batch& keys, const typename kind<V>::batch& values) {
    auto k = kind<K>::open(keys);
    auto v = kind<V>::open(values);
    same_length(k, v);
    nb::gil_scoped_release released;
    for (std::size_t i = 0; i < k.size(); ++i)
        map.async_insert(k.at(i), v.at(i));
}

// What every container class here shares: the collective calls (the GIL
// released while they wait), ranks, sizes and checkpoints.
template <class Map>
class py_container {
public:
    void flush() {
        nb::gil_scoped_release released;
        m->flush();
    }
    std::size_t global_size() {
        nb::gil_scoped_release released;
        return m->global_size();
    }
    std::size_t local_size() { return m->local_size(); }
    int rank() const { return m->rank(); }
    int num_ranks() const { return m->num_ranks(); }
    void save(const std::string& directory, const std::string& key_name, const std::string& value_name) {
        nb::gil_scoped_release released;
        m->save(directory, names(key_name, value_name));
    }
    void load(const std::string& directory, const std::string& key_name, const std::string& value_name) {
        nb::gil_scoped_release released;
        m->load(directory, names(key_name, value_name));
    }
    void destroy() {
        nb::gil_scoped_release released;
        m->destroy();
    }
    Map& map() { return *m; }  // for the C++ references (reference.hpp)

protected:
    // A container collected without destroy() (no `with`, or an exception on
    // its way out): never collective here, other ranks may be elsewhere.
    void abandon_if_alive(const char* container) {
        if (m && !m->engine().destroyed())
            m->engine().abandon(std::string("a ") + container +
                                " was garbage-collected without destroy() (use `with` or call destroy() on every rank)");
    }

    std::unique_ptr<Map> m;
};

template <class C>
void bind_common(nb::class_<C>& c) {
    c.def("flush", [](C& self) { self.flush(); })
        .def("global_size", [](C& self) { return self.global_size(); })
        .def("local_size", [](C& self) { return self.local_size(); })
        .def("rank", [](const C& self) { return self.rank(); })
        .def("num_ranks", [](const C& self) { return self.num_ranks(); })
        .def("save", [](C& self, const std::string& d, const std::string& k, const std::string& v) { self.save(d, k, v); })
        .def("load", [](C& self, const std::string& d, const std::string& k, const std::string& v) { self.load(d, k, v); })
        .def("destroy", [](C& self) { self.destroy(); });
}

// Point operations of the single-valued maps (linear_hash_map, skiplist_map).
template <class Map, class K, class V>
class py_single_valued : public py_container<Map> {
public:
    request_handle insert(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in) {
        return wrap(this->m->insert(kind<K>::value(key_in), kind<V>::value(value_in)),
                    [](const mpidict::replace_result& r) { return nb::bool_(r.stored); });
    }
    request_handle find(const typename kind<K>::arg& key_in) {
        return wrap(this->m->find(kind<K>::value(key_in)),
                    [](const std::optional<V>& v) { return v ? kind<V>::scalar(*v) : nb::none(); });
    }
    request_handle erase(const typename kind<K>::arg& key_in) {
        return wrap(this->m->erase(kind<K>::value(key_in)), [](bool hit) { return nb::bool_(hit); });
    }
    void async_insert(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in) {
        this->m->async_insert(kind<K>::value(key_in), kind<V>::value(value_in));
    }
    void async_erase(const typename kind<K>::arg& key_in) { this->m->async_erase(kind<K>::value(key_in)); }
    // Batches (docs/architecture.md, "Contracts"): blocking, answered once every
    // key has been, results in key order.  insert_many: (stored, replaced, refused, refused_indexes).
    nb::tuple insert_many(const typename kind<K>::batch& keys, const typename kind<V>::batch& values) {
        const auto [ks, vs] = pairs_of<K, V>(keys, values);
        mpidict::insert_many_result result;
        {
            nb::gil_scoped_release released;
            result = this->m->insert_many(std::span<const K>(ks), std::span<const V>(vs));
        }
        return insert_many_out(result);
    }
    void async_insert_many(const typename kind<K>::batch& keys, const typename kind<V>::batch& values) {
        async_insert_pairs<K, V>(*this->m, keys, values);
    }
    // (found: bool[n], values of the found keys in key order)
    nb::tuple find_many(const typename kind<K>::batch& keys) {
        auto k = kind<K>::open(keys);
        std::vector<K> ks;
        ks.reserve(k.size());
        for (std::size_t i = 0; i < k.size(); ++i)
            ks.push_back(k.at(i));
        std::vector<std::optional<V>> results(ks.size());
        {
            nb::gil_scoped_release released;
            this->m->find_many(std::span<const K>(ks), [&](std::size_t i, const std::optional<V>& v) { results[i] = v; });
        }
        return found_out(results);
    }
    std::uint64_t async_rejected() const { return this->m->async_rejected(); }
    // (found: bool[n], values of the found keys in key order) from per-key results.
    static nb::tuple found_out(const std::vector<std::optional<V>>& results) {
        std::vector<std::uint8_t> found(results.size(), 0);
        typename kind<V>::out out;
        for (std::size_t i = 0; i < results.size(); ++i)
            if (results[i]) {
                found[i] = 1;
                out.add(*results[i]);
            }
        return nb::make_tuple(to_numpy(std::move(found)), out.release());
    }
};

template <class C>
void bind_single_valued(nb::class_<C>& c) {
    bind_common(c);
    c.def("insert", &C::insert).def("find", &C::find).def("erase", &C::erase)
        .def("async_insert", &C::async_insert).def("async_erase", &C::async_erase)
        .def("insert_many", &C::insert_many).def("async_insert_many", &C::async_insert_many)
        .def("find_many", &C::find_many).def("async_rejected", &C::async_rejected);
}

}  // namespace mpidict_python
