#pragma once
// Errors raised by mpidict.  Every user error derives from mpidict::error so a
// caller can catch the library's complaints without catching everything else.
// Internal invariants use MPIDICT_ASSERT, which stays on in every build: a broken
// invariant in a distributed structure is cheaper to report than to debug.

#include <stdexcept>
#include <string>

namespace mpidict {

class error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A caller passed something the library cannot accept (wrong length, too large).
class invalid_argument_error : public error {
public:
    using error::error;
};

// An operation on a container that was already destroyed.
class use_after_destroy_error : public error {
public:
    using error::error;
};

// The ranks disagree about a collective call (different handlers, tunables, ...).
class collective_mismatch_error : public error {
public:
    using error::error;
};

// MPI returned an error code; the message carries MPI's own text.
class mpi_error : public error {
public:
    using error::error;
};

// A received buffer does not decode (truncated or corrupt); never read past it.
class decode_error : public error {
public:
    using error::error;
};

namespace detail {
// "the communicator of 1 rank" / "of 4 ranks": the phrase every message about a
// rank outside the communicator uses.
inline std::string communicator_of(int ranks) {
    return "the communicator of " + std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks");
}

// Prints the failed internal invariant and aborts the job (src/error.cpp);
// called by MPIDICT_ASSERT below, never by users.
[[noreturn]] void assertion_failed(const char* expression, const char* file, int line,
                                   const char* message);
}  // namespace detail

}  // namespace mpidict

#define MPIDICT_ASSERT(expression, message)                                                   \
    do {                                                                                      \
        if (!(expression)) [[unlikely]]                                                       \
            ::mpidict::detail::assertion_failed(#expression, __FILE__, __LINE__, (message)); \
    } while (false)
