#pragma once
// Internal to the library: how much memory this machine can still give, for the
// checks that refuse a size before allocating it (rma windows, engine buffers).

#include <cstdint>

namespace mpidict::detail {

// /proc/meminfo's MemAvailable + SwapFree in bytes; 0 when unknown (then no
// check is made).
std::uint64_t available_memory_bytes();

}  // namespace mpidict::detail
