#pragma once
// Order-preserving key encoding for ordered containers (skiplist_map): the
// encoded byte strings compare with memcmp / std::string ordering exactly as the
// keys compare.  Supported keys:
//   - integers: big-endian, signed ones with the sign bit flipped;
//   - float and double: IEEE bits, negatives complemented, positives with the
//     sign bit set; -0.0 is stored as +0.0; NaN is refused (it has no order);
//   - std::string and std::vector<std::byte>: their bytes (shorter prefix first);
//   - multi-dimensional keys: std::array<T, D>, std::pair and std::tuple of the
//     fixed-width types above, ordered lexicographically (dimension 0 first).
// A user type becomes a key by specialising mpidict::ordered_codec<T> with
// encode(const T&, std::string&) and decode(std::string_view).

#include <array>
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpidict/error.hpp"

namespace mpidict {

template <class K, class Enable = void>
struct ordered_codec;  // no encoding for this key type: specialise it, or use a supported key

namespace detail {

template <class U>
void put_big_endian(U bits, std::string& out) {
    char bytes[sizeof(U)];
    for (std::size_t index = 0; index < sizeof(U); ++index)
        bytes[index] = static_cast<char>(bits >> (8 * (sizeof(U) - 1 - index)));
    out.append(bytes, sizeof(U));
}

template <class U>
U get_big_endian(std::string_view in) {
    U bits = 0;
    for (std::size_t index = 0; index < sizeof(U); ++index)
        bits = static_cast<U>((bits << 8) | static_cast<unsigned char>(in[index]));
    return bits;
}

inline void check_encoded_size(std::string_view in, std::size_t expected) {
    if (in.size() != expected)
        throw decode_error("mpidict: an encoded key of " + std::to_string(in.size()) +
                           " bytes does not match its type's " + std::to_string(expected));
}

}  // namespace detail

template <class K>
struct ordered_codec<K, std::enable_if_t<std::is_integral_v<K> && !std::is_same_v<K, bool>>> {
    using bits_type = std::make_unsigned_t<K>;
    static constexpr std::size_t fixed_width = sizeof(K);
    static void encode(K key, std::string& out) {
        auto bits = static_cast<bits_type>(key);
        if constexpr (std::is_signed_v<K>)
            bits ^= bits_type(1) << (8 * sizeof(K) - 1);
        detail::put_big_endian(bits, out);
    }
    static K decode(std::string_view in) {
        detail::check_encoded_size(in, sizeof(K));
        auto bits = detail::get_big_endian<bits_type>(in);
        if constexpr (std::is_signed_v<K>)
            bits ^= bits_type(1) << (8 * sizeof(K) - 1);
        return static_cast<K>(bits);
    }
};

template <class K>
struct ordered_codec<K, std::enable_if_t<std::is_floating_point_v<K>>> {
    static_assert(sizeof(K) == 4 || sizeof(K) == 8, "ordered keys: float and double only");
    using bits_type = std::conditional_t<sizeof(K) == 4, std::uint32_t, std::uint64_t>;
    static constexpr std::size_t fixed_width = sizeof(K);
    static constexpr bits_type sign = bits_type(1) << (8 * sizeof(K) - 1);
    static void encode(K key, std::string& out) {
        if (std::isnan(key))
            throw invalid_argument_error("mpidict: NaN cannot be an ordered key (it compares with nothing)");
        if (key == 0)
            key = 0;  // -0.0 and +0.0 are one key
        auto bits = std::bit_cast<bits_type>(key);
        bits = (bits & sign) ? static_cast<bits_type>(~bits) : static_cast<bits_type>(bits | sign);
        detail::put_big_endian(bits, out);
    }
    static K decode(std::string_view in) {
        detail::check_encoded_size(in, sizeof(K));
        auto bits = detail::get_big_endian<bits_type>(in);
        bits = (bits & sign) ? static_cast<bits_type>(bits & ~sign) : static_cast<bits_type>(~bits);
        return std::bit_cast<K>(bits);
    }
};

template <>
struct ordered_codec<std::string> {
    static constexpr std::size_t fixed_width = 0;  // variable: only as a whole key
    static void encode(const std::string& key, std::string& out) { out += key; }
    static std::string decode(std::string_view in) { return std::string(in); }
};

template <>
struct ordered_codec<std::vector<std::byte>> {
    static constexpr std::size_t fixed_width = 0;
    static void encode(const std::vector<std::byte>& key, std::string& out) {
        out.append(reinterpret_cast<const char*>(key.data()), key.size());
    }
    static std::vector<std::byte> decode(std::string_view in) {
        const auto* data = reinterpret_cast<const std::byte*>(in.data());
        return std::vector<std::byte>(data, data + in.size());
    }
};

namespace detail {
template <class T>
concept fixed_width_key = requires { ordered_codec<T>::fixed_width; } && (ordered_codec<T>::fixed_width > 0);

template <class Tuple, std::size_t... I>
void encode_fields(const Tuple& key, std::string& out, std::index_sequence<I...>) {
    (ordered_codec<std::tuple_element_t<I, Tuple>>::encode(std::get<I>(key), out), ...);
}
template <class Tuple, std::size_t... I>
Tuple decode_fields(std::string_view in, std::index_sequence<I...>) {
    Tuple key{};
    std::size_t offset = 0;
    ((std::get<I>(key) = ordered_codec<std::tuple_element_t<I, Tuple>>::decode(
          in.substr(offset, ordered_codec<std::tuple_element_t<I, Tuple>>::fixed_width)),
      offset += ordered_codec<std::tuple_element_t<I, Tuple>>::fixed_width),
     ...);
    return key;
}
}  // namespace detail

// Multi-dimensional keys of one type.
template <class T, std::size_t D>
    requires detail::fixed_width_key<T>
struct ordered_codec<std::array<T, D>> {
    static constexpr std::size_t fixed_width = D * ordered_codec<T>::fixed_width;
    static void encode(const std::array<T, D>& key, std::string& out) {
        for (const T& field : key)
            ordered_codec<T>::encode(field, out);
    }
    static std::array<T, D> decode(std::string_view in) {
        detail::check_encoded_size(in, fixed_width);
        std::array<T, D> key{};
        for (std::size_t index = 0; index < D; ++index)
            key[index] = ordered_codec<T>::decode(in.substr(index * ordered_codec<T>::fixed_width,
                                                            ordered_codec<T>::fixed_width));
        return key;
    }
};

// Multi-dimensional keys of mixed fixed-width types.
template <class... T>
    requires(detail::fixed_width_key<T> && ...)
struct ordered_codec<std::tuple<T...>> {
    static constexpr std::size_t fixed_width = (ordered_codec<T>::fixed_width + ...);
    static void encode(const std::tuple<T...>& key, std::string& out) {
        detail::encode_fields(key, out, std::index_sequence_for<T...>{});
    }
    static std::tuple<T...> decode(std::string_view in) {
        detail::check_encoded_size(in, fixed_width);
        return detail::decode_fields<std::tuple<T...>>(in, std::index_sequence_for<T...>{});
    }
};

template <class A, class B>
    requires(detail::fixed_width_key<A> && detail::fixed_width_key<B>)
struct ordered_codec<std::pair<A, B>> {
    static constexpr std::size_t fixed_width = ordered_codec<A>::fixed_width + ordered_codec<B>::fixed_width;
    static void encode(const std::pair<A, B>& key, std::string& out) {
        ordered_codec<A>::encode(key.first, out);
        ordered_codec<B>::encode(key.second, out);
    }
    static std::pair<A, B> decode(std::string_view in) {
        detail::check_encoded_size(in, fixed_width);
        return {ordered_codec<A>::decode(in.substr(0, ordered_codec<A>::fixed_width)),
                ordered_codec<B>::decode(in.substr(ordered_codec<A>::fixed_width))};
    }
};

template <class K>
std::string encode_ordered_key(const K& key) {
    std::string out;
    ordered_codec<K>::encode(key, out);
    return out;
}

// The smallest encoded key greater than every key that starts with `prefix`
// (empty: there is none, every key from `prefix` on qualifies).
inline std::string prefix_successor(std::string_view prefix) {
    std::string bound(prefix);
    while (!bound.empty()) {
        auto& last = reinterpret_cast<unsigned char&>(bound.back());
        if (last != 0xff) {
            ++last;
            return bound;
        }
        bound.pop_back();
    }
    return bound;
}

}  // namespace mpidict
