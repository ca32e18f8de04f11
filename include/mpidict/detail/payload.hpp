#pragma once
// How a container stores a key or value as bytes when it keeps them as byte
// strings (linear_hash_map, skiplist_map values): a byte string's contents, or a
// trivially copyable object's representation.

#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "mpidict/error.hpp"

namespace mpidict::detail {
// The bytes a key or value is stored as: a byte string's contents, or a
// trivially copyable object's representation.
template <class T>
std::string_view payload_of(const T& value) {
    if constexpr (std::is_same_v<T, std::string>)
        return value;
    else if constexpr (std::is_same_v<T, std::vector<std::byte>>)
        return {reinterpret_cast<const char*>(value.data()), value.size()};
    else
        return {reinterpret_cast<const char*>(&value), sizeof(T)};
}

template <class T>
T from_payload(std::string_view bytes) {
    if constexpr (std::is_same_v<T, std::string>) {
        return std::string(bytes);
    } else if constexpr (std::is_same_v<T, std::vector<std::byte>>) {
        const auto* data = reinterpret_cast<const std::byte*>(bytes.data());
        return std::vector<std::byte>(data, data + bytes.size());
    } else {
        if (bytes.size() != sizeof(T))
            throw decode_error("mpidict: stored value of " + std::to_string(bytes.size()) +
                               " bytes does not match the value type's " + std::to_string(sizeof(T)));
        T value;
        std::memcpy(&value, bytes.data(), sizeof(T));
        return value;
    }
}

template <class T>
inline constexpr bool payload_storable = std::is_same_v<T, std::string> || std::is_same_v<T, std::vector<std::byte>> ||
                                         std::is_trivially_copyable_v<T>;

}  // namespace mpidict::detail
