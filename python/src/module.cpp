// mpidict._core: the nanobind module under the Python package (python/mpidict).
//
// The typed Python classes (python/mpidict/__init__.py) convert user dtypes to
// one of two storage kinds and call the classes here:
//   u64    any numeric dtype of at most 8 bytes, carried as its bits in a
//          uint64 (numpy arrays in and out, no copy for 8-byte dtypes);
//   bytes  byte strings and wider fixed dtypes, carried as a batch of
//          (offsets: uint64[n + 1], data: uint8[...]) in and out, so a batch
//          crosses the boundary as two arrays, never as n Python objects.
// skiplist_map orders its keys, so its numeric keys keep their C++ types
// (int64, uint64, float64).
//
// The GIL is released while the library runs a batch, waits for a request or
// flushes.  No Python code runs inside the library (no Python visitors), so a
// progress thread never needs the GIL.

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
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/rma_hash_set.hpp"
#include "binding.hpp"
#include "reference.hpp"

namespace nb = nanobind;
using namespace nb::literals;

namespace mpidict_python {
void bind_skiplist_maps(nb::module_& mod);  // skiplist.cpp: SkiplistMapConfig and the skiplist_map classes
}  // namespace mpidict_python

namespace {

using namespace mpidict_python;

// ---- hash_map ----------------------------------------------------------------------

template <class K, class V>
class py_hash_map : public py_container<mpidict::hash_map<K, V>> {
public:
    using map_type = mpidict::hash_map<K, V>;
    using py_container<map_type>::m;
    ~py_hash_map() { this->abandon_if_alive("hash_map"); }
    py_hash_map(const py_hash_map&) = delete;
    py_hash_map& operator=(const py_hash_map&) = delete;
    py_hash_map(communicator c, mpidict::hash_map_config config) { m = std::make_unique<map_type>(c.comm, config); }

    // The batch contract (docs/architecture.md, "Contracts"): blocking;
    // (stored, replaced (always 0: values are appended), refused, refused_indexes).
    nb::tuple insert_many(const typename kind<K>::batch& keys, const typename kind<V>::batch& values) {
        auto k = kind<K>::open(keys);
        auto v = kind<V>::open(values);
        same_length(k, v);
        mpidict::insert_many_result result;
        {
            nb::gil_scoped_release released;
            mpidict::detail::windowed_batch(
                k.size(), m->engine().settings().blocking_factor,
                [&](std::size_t i) {
                    const V value = v.at(i);
                    return m->insert(k.at(i), std::span<const V>(&value, 1));
                },
                [&](std::size_t i, const mpidict::insert_result& r) { mpidict::detail::count_insert(result, i, r); });
        }
        return insert_many_out(result);
    }
    void async_insert_many(const typename kind<K>::batch& keys, const typename kind<V>::batch& values) {
        async_insert_pairs<K, V>(*m, keys, values);
    }
    // async_reduce of every pair with a named operator (Python callables cannot
    // run at the owner): sum (bytes: concatenation), min, max, replace.  Numbers
    // travel as uint64 bits (see _Codec): `kind` and `size` (numpy's dtype.kind
    // and itemsize) say what the bits are, so the operator computes on the real type.
    void reduce_many(const typename kind<K>::batch& keys, const typename kind<V>::batch& values, const std::string& op,
                     const std::string& kind_code, std::size_t size) {
        auto k = kind<K>::open(keys);
        auto v = kind<V>::open(values);
        same_length(k, v);
        auto each = [&](auto combine) {
            nb::gil_scoped_release released;
            for (std::size_t i = 0; i < k.size(); ++i)
                m->async_reduce(k.at(i), v.at(i), combine);
        };
        if (op == "replace") {
            each(mpidict::detail::replace_with_new{});
            return;
        }
        if constexpr (std::is_same_v<V, std::uint64_t>) {
            if (!dispatch_bits(kind_code, size, op, each))
                throw nb::value_error(("reduce_many: op must be 'sum', 'min', 'max' or 'replace' (numbers of "
                                       "numpy kinds i, u, f of 4 or 8 bytes, or i, u of 1 or 2), not '" +
                                       op + "' on " + kind_code + std::to_string(size))
                                          .c_str());
        } else {
            (void)kind_code, (void)size;
            if (op == "sum")
                each(std::plus<>{});
            else if (op == "min")
                each([](const V& a, const V& b) { return b < a ? b : a; });
            else if (op == "max")
                each([](const V& a, const V& b) { return a < b ? b : a; });
            else
                throw nb::value_error(("reduce_many: op must be 'sum', 'min', 'max' or 'replace', not '" + op + "'").c_str());
        }
    }

private:
    // Operators on uint64 bits holding a T (zero-extended, as _Codec stores them).
    template <class T>
    static T from_bits(std::uint64_t bits) {
        T value;
        std::memcpy(&value, &bits, sizeof(T));
        return value;
    }
    template <class T>
    static std::uint64_t to_bits(T value) {
        std::uint64_t bits = 0;
        std::memcpy(&bits, &value, sizeof(T));
        return bits;
    }
    template <class T>
    struct sum_bits {
        std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const {
            if constexpr (std::is_integral_v<T>) {  // wraps, as numpy's integers do
                using U = std::make_unsigned_t<T>;
                return to_bits<U>(static_cast<U>(from_bits<U>(a) + from_bits<U>(b)));
            } else {
                return to_bits<T>(from_bits<T>(a) + from_bits<T>(b));
            }
        }
    };
    template <class T>
    struct min_bits {
        std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const {
            return from_bits<T>(b) < from_bits<T>(a) ? b : a;
        }
    };
    template <class T>
    struct max_bits {
        std::uint64_t operator()(std::uint64_t a, std::uint64_t b) const {
            return from_bits<T>(a) < from_bits<T>(b) ? b : a;
        }
    };
    template <class T, class Each>
    static bool run_bits(const std::string& op, Each& each) {
        if (op == "sum")
            each(sum_bits<T>{});
        else if (op == "min")
            each(min_bits<T>{});
        else if (op == "max")
            each(max_bits<T>{});
        else
            return false;
        return true;
    }
    template <bool Signed, class Each>
    static bool run_integer(std::size_t size, const std::string& op, Each& each) {
        switch (size) {
            case 1: return run_bits<std::conditional_t<Signed, std::int8_t, std::uint8_t>>(op, each);
            case 2: return run_bits<std::conditional_t<Signed, std::int16_t, std::uint16_t>>(op, each);
            case 4: return run_bits<std::conditional_t<Signed, std::int32_t, std::uint32_t>>(op, each);
            case 8: return run_bits<std::conditional_t<Signed, std::int64_t, std::uint64_t>>(op, each);
        }
        return false;
    }
    template <class Each>
    static bool dispatch_bits(const std::string& kind_code, std::size_t size, const std::string& op, Each& each) {
        if (kind_code == "i")
            return run_integer<true>(size, op, each);
        if (kind_code == "u")
            return run_integer<false>(size, op, each);
        if (kind_code == "f" && size == 4)
            return run_bits<float>(op, each);
        if (kind_code == "f" && size == 8)
            return run_bits<double>(op, each);
        return false;
    }

public:
    // (counts, values): counts[i] values of keys[i], concatenated in key order.
    // Numeric keys are read in place from the numpy buffer (no copy); answers
    // arrive in any order and are put back in key order in one pass at the end.
    nb::tuple find_many(const typename kind<K>::batch& keys, std::size_t limit, bool take) {
        auto k = kind<K>::open(keys);
        std::vector<K> copied;
        std::span<const K> list;
        if constexpr (std::is_arithmetic_v<K>) {
            list = std::span<const K>(keys.data(), keys.shape(0));
        } else {
            copied.reserve(k.size());
            for (std::size_t i = 0; i < k.size(); ++i)
                copied.push_back(k.at(i));
            list = std::span<const K>(copied);
        }
        std::vector<std::uint32_t> counts(list.size(), 0);
        if constexpr (std::is_arithmetic_v<V>) {
            if (limit == 1) {
                // At most one value a key: each answer goes straight to its key's
                // slot, and the slots of absent keys are squeezed out in one
                // sequential pass (no arrival buffer, no gather by position).
                std::vector<V> slots(list.size());
                {
                    nb::gil_scoped_release released;
                    auto collect = [&](std::size_t position, std::span<const V> found) {
                        if (!found.empty()) {
                            counts[position] = 1;
                            slots[position] = found.front();
                        }
                    };
                    if (take)
                        m->take_many(list, 1, collect);
                    else
                        m->find_many(list, 1, collect);
                    std::size_t at = 0;
                    for (std::size_t i = 0; i < list.size(); ++i)
                        if (counts[i] != 0)
                            slots[at++] = slots[i];
                    slots.resize(at);
                }
                return nb::make_tuple(to_numpy(std::move(counts)), to_numpy(std::move(slots)));
            }
        }
        std::vector<std::uint64_t> starts(list.size(), 0);
        std::vector<V> arrived;
        {
            nb::gil_scoped_release released;
            auto collect = [&](std::size_t position, std::span<const V> found) {
                counts[position] = static_cast<std::uint32_t>(found.size());
                starts[position] = arrived.size();
                arrived.insert(arrived.end(), found.begin(), found.end());
            };
            if (take)
                m->take_many(list, limit, collect);
            else
                m->find_many(list, limit, collect);
        }
        if constexpr (std::is_arithmetic_v<V>) {
            std::vector<V> ordered(arrived.size());
            {
                nb::gil_scoped_release released;
                std::size_t at = 0;
                for (std::size_t i = 0; i < list.size(); ++i) {
                    std::copy_n(arrived.data() + starts[i], counts[i], ordered.data() + at);
                    at += counts[i];
                }
            }
            return nb::make_tuple(to_numpy(std::move(counts)), to_numpy(std::move(ordered)));
        } else {
            typename kind<V>::out out;
            for (std::size_t i = 0; i < list.size(); ++i)
                for (std::uint32_t j = 0; j < counts[i]; ++j)
                    out.add(arrived[starts[i] + j]);
            return nb::make_tuple(to_numpy(std::move(counts)), out.release());
        }
    }
    nb::object insert_if_absent_many(const typename kind<K>::batch& keys, const typename kind<V>::batch& values) {
        auto k = kind<K>::open(keys);
        auto v = kind<V>::open(values);
        same_length(k, v);
        std::vector<std::uint8_t> inserted(k.size(), 0);
        {
            nb::gil_scoped_release released;
            constexpr std::size_t window = 4096;
            std::vector<mpidict::request<bool>> pending;
            for (std::size_t begin = 0; begin < k.size(); begin += window) {
                const std::size_t end = std::min(k.size(), begin + window);
                pending.clear();
                for (std::size_t i = begin; i < end; ++i)
                    pending.push_back(m->insert_if_absent(k.at(i), v.at(i)));
                for (std::size_t i = begin; i < end; ++i)
                    inserted[i] = pending[i - begin].get() ? 1 : 0;
            }
        }
        return nb::cast(to_numpy(std::move(inserted)));
    }
    request_handle insert(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in) {
        const K key = kind<K>::value(key_in);
        const V value = kind<V>::value(value_in);
        return wrap(m->insert(key, std::span<const V>(&value, 1)),
                    [](const mpidict::insert_result& r) { return nb::bool_(r.stored == 1); });
    }
    request_handle find(const typename kind<K>::arg& key_in, std::size_t limit, bool take) {
        const K key = kind<K>::value(key_in);
        auto convert = [](const std::vector<V>& values) {
            typename kind<V>::out out;
            for (const V& v : values)
                out.add(v);
            return out.release();
        };
        return wrap(take ? m->take(key, limit) : m->find(key, limit), convert);
    }
    request_handle erase(const typename kind<K>::arg& key_in) {
        const K key = kind<K>::value(key_in);
        return wrap(m->erase(key), [](std::size_t n) { return nb::int_(n); });
    }
    void async_insert(const typename kind<K>::arg& key_in, const typename kind<V>::arg& value_in) {
        m->async_insert(kind<K>::value(key_in), kind<V>::value(value_in));
    }
    void async_erase(const typename kind<K>::arg& key_in) { m->async_erase(kind<K>::value(key_in)); }
    std::size_t global_value_count() {
        nb::gil_scoped_release released;
        return m->global_value_count();
    }
    std::uint64_t async_rejected() const { return m->async_rejected(); }
    int owner(const typename kind<K>::arg& key_in) const { return m->owner(kind<K>::value(key_in)); }
    // (keys, counts, values) of this rank's entries.
    nb::tuple local_items() {
        typename kind<K>::out keys;
        typename kind<V>::out values;
        std::vector<std::uint32_t> counts;
        m->local_for_each([&](const K& key, const typename map_type::values_view& vs) {
            keys.add(key);
            counts.push_back(static_cast<std::uint32_t>(vs.size()));
            for (const V& v : vs)
                values.add(v);
        });
        return nb::make_tuple(keys.release(), to_numpy(std::move(counts)), values.release());
    }
    bool destroyed() const { return m->engine().destroyed(); }

    // The same batch operations written in C++ (python/src/reference.hpp), for
    // bench/python_hash_map.py: on the keys Python passes, values = key, checked.
    double cpp_reference_insert(const array_in<std::uint64_t>& keys) requires std::is_same_v<K, std::uint64_t> && std::is_same_v<V, std::uint64_t> {
        nb::gil_scoped_release released;
        return mpidict_python::reference::hash_map_insert(*m, std::span<const std::uint64_t>(keys.data(), keys.shape(0)));
    }
    double cpp_reference_find(const array_in<std::uint64_t>& keys) requires std::is_same_v<K, std::uint64_t> && std::is_same_v<V, std::uint64_t> {
        nb::gil_scoped_release released;
        return mpidict_python::reference::hash_map_find(*m, std::span<const std::uint64_t>(keys.data(), keys.shape(0)));
    }
};

template <class K, class V>
void bind_hash_map(nb::module_& mod, const char* name) {
    using M = py_hash_map<K, V>;
    auto c = nb::class_<M>(mod, name)
                 .def(nb::init<communicator, mpidict::hash_map_config>())
                 .def("insert_many", &M::insert_many)
                 .def("async_insert_many", &M::async_insert_many)
                 .def("reduce_many", &M::reduce_many)
                 .def("find_many", &M::find_many, "keys"_a, "limit"_a, "take"_a)
                 .def("insert_if_absent_many", &M::insert_if_absent_many)
                 .def("insert", &M::insert)
                 .def("find", &M::find, "key"_a, "limit"_a, "take"_a)
                 .def("erase", &M::erase)
                 .def("async_insert", &M::async_insert)
                 .def("async_erase", &M::async_erase)
                 .def("global_value_count", &M::global_value_count)
                 .def("async_rejected", &M::async_rejected)
                 .def("owner", &M::owner)
                 .def("local_items", &M::local_items)
                 .def("destroyed", &M::destroyed);
    bind_common(c);
    if constexpr (std::is_same_v<K, std::uint64_t> && std::is_same_v<V, std::uint64_t>)
        c.def("cpp_reference_insert", &M::cpp_reference_insert).def("cpp_reference_find", &M::cpp_reference_find);
}

// ---- linear_hash_map ---------------------------------------------------------------

template <class K, class V>
class py_linear_hash_map : public py_single_valued<mpidict::linear_hash_map<K, V>, K, V> {
public:
    using map_type = mpidict::linear_hash_map<K, V>;
    using py_container<map_type>::m;
    ~py_linear_hash_map() { this->abandon_if_alive("linear_hash_map"); }
    py_linear_hash_map(const py_linear_hash_map&) = delete;
    py_linear_hash_map& operator=(const py_linear_hash_map&) = delete;
    py_linear_hash_map(communicator c, mpidict::linear_hash_map_config config) {
        m = std::make_unique<map_type>(c.comm, config);
    }

    nb::tuple local_items() {
        pair_columns<K, V> out;
        m->local_for_each([&](const K& key, const V& value) { out.add(key, value); });
        return out.release();
    }
};

template <class K, class V>
void bind_linear_hash_map(nb::module_& mod, const char* name) {
    using M = py_linear_hash_map<K, V>;
    auto c = nb::class_<M>(mod, name)
                 .def(nb::init<communicator, mpidict::linear_hash_map_config>())
                 .def("local_items", &M::local_items);
    bind_single_valued(c);
    if constexpr (std::is_same_v<K, std::uint64_t> && std::is_same_v<V, std::uint64_t>) {
        namespace ref = mpidict_python::reference;
        c.def("cpp_reference_insert", [](M& self, const array_in<std::uint64_t>& keys) {
            nb::gil_scoped_release released;
            return ref::linear_insert(self.map(), std::span<const std::uint64_t>(keys.data(), keys.shape(0)));
        });
        c.def("cpp_reference_find", [](M& self, const array_in<std::uint64_t>& keys) {
            nb::gil_scoped_release released;
            return ref::linear_find(self.map(), std::span<const std::uint64_t>(keys.data(), keys.shape(0)));
        });
    }
}

// ---- rma_hash_set --------------------------------------------------------------------

// Objects of W 64-bit words (8, 16 or 32 bytes), passed as uint64[n * W].
template <std::size_t W>
class py_rma_hash_set : public py_container<mpidict::rma_hash_set<std::conditional_t<W == 1, std::uint64_t, std::array<std::uint64_t, W>>>> {
public:
    using object = std::conditional_t<W == 1, std::uint64_t, std::array<std::uint64_t, W>>;
    using set_type = mpidict::rma_hash_set<object>;
    using py_container<set_type>::m;
    // Collected without destroy(): freeing the window is collective, so it is
    // left to MPI_Finalize.
    ~py_rma_hash_set() {
        if (m && !m->destroyed()) {
            std::fprintf(stderr, "mpidict: rank %d: an rma_hash_set was garbage-collected without destroy() (use "
                         "`with` or call destroy() on every rank); its window is left to MPI_Finalize\n", m->rank());
            (void)m.release();
        }
    }
    py_rma_hash_set(const py_rma_hash_set&) = delete;
    py_rma_hash_set& operator=(const py_rma_hash_set&) = delete;
    py_rma_hash_set(communicator c, mpidict::rma_hash_set_config config) {
        m = std::make_unique<set_type>(c.comm, config);
    }

    static std::span<const object> objects(const array_in<std::uint64_t>& words) {
        if (words.shape(0) % W != 0)
            throw mpidict::invalid_argument_error("mpidict: rma_hash_set batch of " + std::to_string(words.shape(0)) +
                                                  " words is not a whole number of " + std::to_string(W * 8) +
                                                  "-byte objects");
        return {reinterpret_cast<const object*>(words.data()), words.shape(0) / W};
    }
    // int8 per object: 1 inserted, 0 present, -1 not inserted (owner's table full)
    nb::object insert_if_absent_many(const array_in<std::uint64_t>& words) {
        auto batch = objects(words);
        mpidict::insert_if_absent_many_result result;
        {
            nb::gil_scoped_release released;
            result = m->insert_if_absent_many(batch);
        }
        std::vector<std::int8_t> status(batch.size());
        for (std::size_t i = 0; i < batch.size(); ++i)
            status[i] = result.status[i] == mpidict::insert_status::inserted  ? 1
                        : result.status[i] == mpidict::insert_status::present ? 0
                                                                              : -1;
        return nb::cast(to_numpy(std::move(status)));
    }
    nb::object contains_many(const array_in<std::uint64_t>& words) {
        auto batch = objects(words);
        std::vector<std::uint8_t> found(batch.size());
        {
            nb::gil_scoped_release released;
            for (std::size_t i = 0; i < batch.size(); ++i)
                found[i] = m->contains(batch[i]).get() ? 1 : 0;
        }
        return nb::cast(to_numpy(std::move(found)));
    }
    nb::object local_items() {
        std::vector<std::uint64_t> words;
        m->local_for_each([&](const object& o) {
            if constexpr (W == 1)
                words.push_back(o);
            else
                words.insert(words.end(), o.begin(), o.end());
        });
        return nb::cast(to_numpy(std::move(words)));
    }

};

template <std::size_t W>
void bind_rma_hash_set(nb::module_& mod, const char* name) {
    using S = py_rma_hash_set<W>;
    auto c = nb::class_<S>(mod, name)
                 .def(nb::init<communicator, mpidict::rma_hash_set_config>())
                 .def("insert_if_absent_many", &S::insert_if_absent_many)
                 .def("contains_many", &S::contains_many)
                 .def("local_items", &S::local_items);
    bind_common(c);
}

}  // namespace


NB_MODULE(_core, mod) {
    mod.doc() = "mpidict's C++ containers (use the typed classes of the mpidict package)";

    // Errors: one Python class per C++ class, all under mpidict._core.Error.
    static nb::exception<mpidict::error> error(mod, "Error");
    static nb::exception<mpidict::invalid_argument_error> invalid(mod, "InvalidArgumentError", error);
    static nb::exception<mpidict::use_after_destroy_error> destroyed(mod, "UseAfterDestroyError", error);
    static nb::exception<mpidict::collective_mismatch_error> mismatch(mod, "CollectiveMismatchError", error);
    static nb::exception<mpidict::mpi_error> mpi(mod, "MPIError", error);
    static nb::exception<mpidict::decode_error> decode(mod, "DecodeError", error);
    static nb::exception<mpidict::checkpoint_error> checkpoint(mod, "CheckpointError", error);
    // No longer raised: capacity refusals are results (docs/architecture.md,
    // "Contracts").  Kept so that code catching it still runs.
    mod.attr("TableFullError") = nb::steal(PyErr_NewException("mpidict._core.TableFullError", error.ptr(), nullptr));
    nb::register_exception_translator([](const std::exception_ptr& p, void*) {
        try {
            std::rethrow_exception(p);
        } catch (const mpidict::invalid_argument_error& e) {
            PyErr_SetString(invalid.ptr(), e.what());
        } catch (const mpidict::use_after_destroy_error& e) {
            PyErr_SetString(destroyed.ptr(), e.what());
        } catch (const mpidict::collective_mismatch_error& e) {
            PyErr_SetString(mismatch.ptr(), e.what());
        } catch (const mpidict::mpi_error& e) {
            PyErr_SetString(mpi.ptr(), e.what());
        } catch (const mpidict::decode_error& e) {
            PyErr_SetString(decode.ptr(), e.what());
        } catch (const mpidict::checkpoint_error& e) {
            PyErr_SetString(checkpoint.ptr(), e.what());
        } catch (const mpidict::error& e) {
            PyErr_SetString(error.ptr(), e.what());
        }
    });

    nb::class_<communicator>(mod, "Communicator")
        .def_static("from_fortran", [](std::int64_t handle) {
            int initialised = 0;
            MPI_Initialized(&initialised);
            if (!initialised)
                throw mpidict::mpi_error("mpidict: MPI is not initialised (import mpi4py.MPI first)");
            return communicator{MPI_Comm_f2c(static_cast<MPI_Fint>(handle))};
        });
    mod.def("mpi_library_version", &mpi_library_version);

    nb::class_<request_handle>(mod, "Request")
        .def("get", &request_handle::get, "waits (if needed) and returns the result")
        .def("wait", &request_handle::wait)
        .def("test", &request_handle::test, "true once the result is there (makes progress)");

    nb::class_<mpidict::runtime::config>(mod, "RuntimeConfig")
        .def(nb::init<>())
        .def_rw("buffer_bytes", &mpidict::runtime::config::buffer_bytes)
        .def_rw("blocking_factor", &mpidict::runtime::config::blocking_factor)
        .def_rw("release_queue", &mpidict::runtime::config::release_queue)
        .def_rw("stuck_wait_seconds", &mpidict::runtime::config::stuck_wait_seconds)
        .def_rw("total_outbox_bytes", &mpidict::runtime::config::total_outbox_bytes)
        .def_rw("progress_thread", &mpidict::runtime::config::progress_thread)
        .def_prop_rw(
            "routing", [](const mpidict::runtime::config& c) { return std::string(mpidict::runtime::routing_name(c.routing)); },
            [](mpidict::runtime::config& c, const std::string& text) { c.routing = mpidict::runtime::parse_routing(text); },
            "'automatic' (grid from 128 ranks on), 'direct' or 'grid' (docs/runtime.md, Routing)");
    nb::class_<mpidict::hash_map_config>(mod, "HashMapConfig")
        .def(nb::init<>())
        .def_rw("runtime", &mpidict::hash_map_config::runtime)
        .def_prop_rw(
            "cyclic", [](const mpidict::hash_map_config& c) { return c.place == mpidict::placement::cyclic; },
            [](mpidict::hash_map_config& c, bool cyclic) {
                c.place = cyclic ? mpidict::placement::cyclic : mpidict::placement::hash;
            })
        .def_rw("expected_keys_per_rank", &mpidict::hash_map_config::expected_keys_per_rank)
        .def_rw("max_load", &mpidict::hash_map_config::max_load)
        .def_rw("capacity_values", &mpidict::hash_map_config::capacity_values)
        .def_rw("capacity_bytes", &mpidict::hash_map_config::capacity_bytes);
    nb::class_<mpidict::linear_hash_map_config>(mod, "LinearHashMapConfig")
        .def(nb::init<>())
        .def_rw("runtime", &mpidict::linear_hash_map_config::runtime)
        .def_rw("initial_servers", &mpidict::linear_hash_map_config::initial_servers)
        .def_rw("server_capacity_bytes", &mpidict::linear_hash_map_config::server_capacity_bytes)
        .def_rw("split_load", &mpidict::linear_hash_map_config::split_load)
        .def_rw("max_key_bytes", &mpidict::linear_hash_map_config::max_key_bytes)
        .def_rw("max_value_bytes", &mpidict::linear_hash_map_config::max_value_bytes);
    nb::class_<mpidict::rma_hash_set_config>(mod, "RmaHashSetConfig")
        .def(nb::init<>())
        .def_rw("slots_per_rank", &mpidict::rma_hash_set_config::slots_per_rank)
        .def_rw("expected_per_rank", &mpidict::rma_hash_set_config::expected_per_rank)
        .def_rw("max_load", &mpidict::rma_hash_set_config::max_load);

    nb::class_<string_batch>(mod, "StringBatch")
        .def(nb::init<array_in<std::uint64_t>, array_in<std::uint8_t>>(), "offsets"_a, "data"_a);

    bind_hash_map<std::uint64_t, std::uint64_t>(mod, "hash_map_u64_u64");
    bind_hash_map<std::uint64_t, std::string>(mod, "hash_map_u64_bytes");
    bind_hash_map<std::string, std::uint64_t>(mod, "hash_map_bytes_u64");
    bind_hash_map<std::string, std::string>(mod, "hash_map_bytes_bytes");
    bind_linear_hash_map<std::uint64_t, std::uint64_t>(mod, "linear_hash_map_u64_u64");
    bind_linear_hash_map<std::uint64_t, std::string>(mod, "linear_hash_map_u64_bytes");
    bind_linear_hash_map<std::string, std::uint64_t>(mod, "linear_hash_map_bytes_u64");
    bind_linear_hash_map<std::string, std::string>(mod, "linear_hash_map_bytes_bytes");
    mpidict_python::bind_skiplist_maps(mod);  // skiplist.cpp
    bind_rma_hash_set<1>(mod, "rma_hash_set_8");
    bind_rma_hash_set<2>(mod, "rma_hash_set_16");
    bind_rma_hash_set<4>(mod, "rma_hash_set_32");
}
