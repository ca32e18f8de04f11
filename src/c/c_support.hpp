#pragma once
// What the C API's translation units share (src/c/mpidict_c.cpp for hash_map,
// src/c/skiplist_c.cpp for skiplist_map): the thread-local last error and the
// guard that turns every exception into an error code.  Nothing throws across
// extern "C".

#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "mpidict/c/mpidict.h"
#include "mpidict/error.hpp"

namespace mpidict::c_detail {

inline thread_local std::string t_last_error;
inline thread_local const char* t_static_error = nullptr;  // used when the message could not be allocated

inline const char* last_error() noexcept {
    if (t_static_error != nullptr)
        return t_static_error;
    return t_last_error.c_str();
}

inline int fail(int code, std::string_view function, std::string_view message) noexcept {
    try {
        std::string text;
        text.reserve(function.size() + 2 + message.size());
        text.append(function).append(": ").append(message);
        t_last_error = std::move(text);
        t_static_error = nullptr;
    } catch (...) {
        t_static_error = "mpidict: out of memory while recording an error message";
    }
    return code;
}

// The library's own messages start with "mpidict: "; the C message names the
// C function instead.
inline std::string_view strip_prefix(std::string_view message) {
    constexpr std::string_view prefix = "mpidict: ";
    if (message.substr(0, prefix.size()) == prefix)
        message.remove_prefix(prefix.size());
    return message;
}

// Runs `body` and turns any exception into an error code and message.
template <class Body>
int guarded(const char* function, Body&& body) noexcept {
    try {
        return body();
    } catch (const mpidict::use_after_destroy_error& problem) {
        return fail(MPIDICT_ERR_DESTROYED, function, strip_prefix(problem.what()));
    } catch (const mpidict::invalid_argument_error& problem) {
        return fail(MPIDICT_ERR_ARGUMENT, function, strip_prefix(problem.what()));
    } catch (const mpidict::collective_mismatch_error& problem) {
        return fail(MPIDICT_ERR_MISMATCH, function, strip_prefix(problem.what()));
    } catch (const mpidict::mpi_error& problem) {
        return fail(MPIDICT_ERR_MPI, function, strip_prefix(problem.what()));
    } catch (const mpidict::decode_error& problem) {
        return fail(MPIDICT_ERR_INTERNAL, function, strip_prefix(problem.what()));
    } catch (const mpidict::error& problem) {
        return fail(MPIDICT_ERR_ARGUMENT, function, strip_prefix(problem.what()));
    } catch (const std::bad_alloc&) {
        return fail(MPIDICT_ERR_NO_MEMORY, function, "out of memory");
    } catch (const std::exception& problem) {
        return fail(MPIDICT_ERR_INTERNAL, function, problem.what());
    } catch (...) {
        return fail(MPIDICT_ERR_INTERNAL, function, "unknown exception");
    }
}

}  // namespace mpidict::c_detail
