#pragma once
// Unaligned reads and writes of trivially copyable values in message buffers
// (records have no alignment: a group of 13-byte records is legal).

#include <cstddef>
#include <cstring>
#include <type_traits>

namespace mpidict::detail {

template <class T>
void store(std::byte* out, T value) {
    static_assert(std::is_trivially_copyable_v<T>, "store needs a trivially copyable type.");
    std::memcpy(out, &value, sizeof(T));
}

template <class T>
T load(const std::byte* in) {
    static_assert(std::is_trivially_copyable_v<T>, "load needs a trivially copyable type.");
    T value;
    std::memcpy(&value, in, sizeof(T));
    return value;
}

}  // namespace mpidict::detail
