#pragma once
// Keys and values made of parts: std::pair, std::tuple, std::array and
// std::vector of any encodable types, and user structs that list their members.
// Each gets a codec (its parts in order; a vector's length first) and a hasher
// (its parts' hashes combined), so hash_map<std::tuple<std::string, int>, ...>
// or hash_map<my_struct, std::vector<double>> needs no code from the user.
//
// A trivially copyable array (std::array<double, 3>) keeps the primary codec:
// its bytes, copied once, on the fixed-size fast paths.  The parts-wise codec
// here is for the others (a part that is a string or a vector; std::pair and
// std::tuple, which libstdc++ does not make trivially copyable) and for structs
// that list their fields (padded or not: only the members travel and are hashed).
//
// User structs.  Name the members once, beside the type:
//
//     struct city { std::string name; std::uint32_t zip; bool operator==(const city&) const = default; };
//     MPIDICT_FIELDS(city, &city::name, &city::zip);
//
// (at namespace scope, outside any namespace or in the global one), or write
// `template <> struct mpidict::fields<city> { static constexpr auto members = std::tuple{...}; };`.
// The struct must be default-constructible and, as a key, have operator==.  For
// full control specialise mpidict::codec<T> and mpidict::hasher<T> instead
// (docs/hash_map.md, "Key and value types").

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpidict/local/codec.hpp"
#include "mpidict/local/hash.hpp"

namespace mpidict {

// The extension point for user structs: `members` is a tuple of pointers to
// the members that make up the value, in the order they travel.
template <class T>
struct fields;

namespace detail {

template <class T>
struct is_std_pair : std::false_type {};
template <class A, class B>
struct is_std_pair<std::pair<A, B>> : std::true_type {};
template <class T>
struct is_std_tuple : std::false_type {};
template <class... Ts>
struct is_std_tuple<std::tuple<Ts...>> : std::true_type {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, std::size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_element_vector : std::false_type {};
template <class T, class A>
struct is_element_vector<std::vector<T, A>>
    : std::bool_constant<!std::is_same_v<T, std::byte> && !std::is_same_v<T, bool>> {};

template <class T>
concept has_fields = requires { fields<T>::members; };

template <class T>
concept tuple_like = is_std_pair<T>::value || is_std_tuple<T>::value || is_std_array<T>::value;

// Types whose codec and hasher are built from their parts: structs that list
// their fields, vectors of elements, and pairs, tuples and arrays that are not
// trivially copyable.  A trivially copyable one keeps the primary codec (its
// bytes, on the fixed-size fast paths, as a value too); as a key it must then
// have no padding or floating-point parts (detail::key_bytes_are_canonical).
template <class T>
concept composite = has_fields<T> || is_element_vector<T>::value ||
                    (tuple_like<T> && !std::is_trivially_copyable_v<T>);

// Calls f(part) for every part of a composite (a vector excepted), in order.
template <class T, class F>
void for_each_part(T& object, F&& f) {
    if constexpr (has_fields<std::remove_const_t<T>>) {
        std::apply([&](auto... member) { (f(object.*member), ...); }, fields<std::remove_const_t<T>>::members);
    } else {
        std::apply([&](auto&... part) { (f(part), ...); }, object);
    }
}

// Whether a part's hash is sound by itself (a part hashed through its bytes
// must have canonical bytes, as for whole keys).
template <class P>
constexpr bool part_hash_is_canonical();

}  // namespace detail

template <class T>
struct codec<T, std::enable_if_t<detail::composite<T>>> {
    static constexpr bool fixed_size = false;

    static std::size_t encoded_size(const T& value) {
        std::size_t bytes = 0;
        if constexpr (detail::is_element_vector<T>::value) {
            bytes = sizeof(std::uint32_t);
            using E = typename T::value_type;
            if constexpr (std::is_trivially_copyable_v<E> && codec<E>::fixed_size)
                bytes += value.size() * sizeof(E);
            else
                for (const E& element : value)
                    bytes += codec<E>::encoded_size(element);
        } else {
            detail::for_each_part(value, [&](const auto& part) {
                bytes += codec<std::remove_cvref_t<decltype(part)>>::encoded_size(part);
            });
        }
        return bytes;
    }

    static std::byte* encode(std::byte* out, const T& value) {
        if constexpr (detail::is_element_vector<T>::value) {
            using E = typename T::value_type;
            if (value.size() > std::uint32_t(-1))
                throw invalid_argument_error("mpidict: a vector key or value holds at most 4294967295 elements");
            const auto length = static_cast<std::uint32_t>(value.size());
            std::memcpy(out, &length, sizeof length);
            out += sizeof length;
            if constexpr (std::is_trivially_copyable_v<E> && codec<E>::fixed_size) {
                if (length != 0)
                    std::memcpy(out, value.data(), value.size() * sizeof(E));
                return out + value.size() * sizeof(E);
            } else {
                for (const E& element : value)
                    out = codec<E>::encode(out, element);
                return out;
            }
        } else {
            detail::for_each_part(value, [&](const auto& part) {
                out = codec<std::remove_cvref_t<decltype(part)>>::encode(out, part);
            });
            return out;
        }
    }

    static T decode(byte_reader& reader) {
        T value{};
        if constexpr (detail::is_element_vector<T>::value) {
            using E = typename T::value_type;
            const auto length = reader.read<std::uint32_t>();
            if constexpr (std::is_trivially_copyable_v<E> && codec<E>::fixed_size) {
                const std::byte* data = reader.take(std::size_t{length} * sizeof(E));  // checked before any allocation
                value.resize(length);
                if (length != 0)
                    std::memcpy(value.data(), data, std::size_t{length} * sizeof(E));
            } else {
                // Every element takes at least one byte or is fixed: never reserve more than the message could hold.
                value.reserve(std::min<std::size_t>(length, reader.remaining()));
                for (std::uint32_t index = 0; index < length; ++index)
                    value.push_back(codec<E>::decode(reader));
            }
        } else {
            detail::for_each_part(value, [&](auto& part) { part = codec<std::remove_cvref_t<decltype(part)>>::decode(reader); });
        }
        return value;
    }

    static std::size_t payload_bytes(const T& value) {
        std::size_t bytes = 0;
        if constexpr (detail::is_element_vector<T>::value) {
            for (const auto& element : value)
                bytes += codec<typename T::value_type>::payload_bytes(element);
        } else {
            detail::for_each_part(value, [&](const auto& part) {
                bytes += codec<std::remove_cvref_t<decltype(part)>>::payload_bytes(part);
            });
        }
        return bytes;
    }
};

template <class T>
struct hasher<T, std::enable_if_t<detail::composite<T>>> {
    std::uint64_t operator()(const T& value) const {
        std::uint64_t h = 0x243f6a8885a308d3ULL;
        auto add = [&](const auto& part) {
            h = mix64(h ^ hasher<std::remove_cvref_t<decltype(part)>>{}(part)) + 0x9e3779b97f4a7c15ULL;
        };
        if constexpr (detail::is_element_vector<T>::value) {
            for (const auto& element : value)
                add(element);
            h ^= value.size();
        } else {
            detail::for_each_part(value, add);
        }
        return mix64(h);
    }
    // Set when some part is hashed through bytes that are not canonical (a
    // double, a padded struct): such a key is refused at compile time.
    static constexpr bool hashes_object_bytes = !detail::part_hash_is_canonical<T>();
};

namespace detail {

template <class P>
constexpr bool part_hash_is_canonical() {
    if constexpr (composite<P>) {
        if constexpr (is_element_vector<P>::value) {
            return part_hash_is_canonical<typename P::value_type>();
        } else if constexpr (has_fields<P>) {
            return std::apply([](auto... member) {
                return (part_hash_is_canonical<std::remove_cvref_t<decltype(std::declval<P&>().*member)>>() && ...);
            }, fields<P>::members);
        } else {
            return []<std::size_t... I>(std::index_sequence<I...>) {
                return (part_hash_is_canonical<std::tuple_element_t<I, P>>() && ...);
            }(std::make_index_sequence<std::tuple_size_v<P>>{});
        }
    } else {
        return key_bytes_are_canonical<P, hasher<P>>;
    }
}

}  // namespace detail

}  // namespace mpidict

// Names the members of a user struct that travel and are hashed (see above).
#define MPIDICT_FIELDS(type, ...)                                     \
    template <>                                                       \
    struct mpidict::fields<type> {                                    \
        static constexpr auto members = std::tuple{__VA_ARGS__};      \
    }
