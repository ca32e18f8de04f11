#pragma once
// callable_registry<Entry>: numbers for functions chosen by a type, so that a
// record can name code for another rank to run (a reduce operator, a visitor
// lambda) without a collective registration.
//
// How the numbers agree across ranks.  Each (Entry, Callable) pair is added by
// the initialiser of a static variable template (`id_of<Callable>` in the
// container), which the compiler emits wherever the container's template is
// used with that callable; all such initialisers run before main(), in an order
// fixed by the executable.  Every rank of an SPMD job runs the same executable,
// so every rank numbers the same callables the same way.  Containers check that
// at construction: the ranks' fingerprints (a hash of every name in order) must
// be equal, else construction throws collective_mismatch_error on every rank
// (e.g. an MPMD job whose programs use different callables with one map type).
//
// A callable is named by its mangled type name (typeid().name()), so two
// lambdas never share a number.  Reads after main() starts need no lock: the
// list is only written during static initialisation (or while a shared
// library that uses the container is loaded, before any container of it runs).

#include <cxxabi.h>

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

#include "mpidict/local/hash.hpp"

namespace mpidict::detail {

template <class Entry>
class callable_registry {
public:
    struct item {
        std::string name;
        Entry entry;
    };

    static std::uint32_t add(std::string_view name, Entry entry) {
        auto& list = items();
        list.push_back(item{std::string(name), entry});
        return static_cast<std::uint32_t>(list.size() - 1);
    }
    static const std::vector<item>& entries() { return items(); }
    // A hash of the names in order; equal on ranks that number alike.
    static std::uint64_t fingerprint() {
        std::uint64_t h = 0x6a09e667f3bcc909ULL;
        for (const item& entry : items())
            h = hash_bytes(entry.name.data(), entry.name.size(), h);
        return h;
    }

private:
    static std::vector<item>& items() {
        static std::vector<item> list;  // a function's static: usable from other initialisers
        return list;
    }
};

// The name a callable type is registered under.
template <class T>
std::string_view type_name() {
    return typeid(T).name();
}

// A registered name as C++ (for messages), or the name itself.
inline std::string demangle(const std::string& mangled) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> readable(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                                   std::free);
    return status == 0 && readable ? std::string(readable.get()) : mangled;
}

// A type naming a callable together with its argument types.
template <class... T>
struct type_list {};

// The handle register_visitor returns (as opposed to a callable visitor).
template <class F>
concept registered_visitor_handle = requires { F::is_registered_visitor_handle; };

// How a visitor argument travels: a C string as std::string, anything else as
// its decayed type.
template <class T>
using visit_argument_t =
    std::conditional_t<std::is_same_v<std::decay_t<T>, const char*> || std::is_same_v<std::decay_t<T>, char*>,
                       std::string, std::decay_t<T>>;

}  // namespace mpidict::detail
