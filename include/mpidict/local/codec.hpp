#pragma once
// How keys and values travel in message buffers.  Trivially copyable types are
// copied byte for byte (every rank runs the same binary, so layouts agree); byte
// strings (std::string, std::vector<std::byte>) are a 32-bit length followed by
// the bytes.  Decoding goes through byte_reader, which checks every read against
// the end of the buffer and throws decode_error instead of reading past it.
//
// Namespace: mpidict, not mpidict::local.  codec<T> is a customisation point
// that users specialise for their own key and value types (like std::hash), so
// it lives where users write `template <> struct mpidict::codec<my_type>`; the
// file sits in local/ because nothing in it communicates.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "mpidict/error.hpp"

namespace mpidict {

class byte_reader {
public:
    byte_reader() = default;
    byte_reader(const std::byte* data, std::size_t size) : m_cursor(data), m_end(data + size) {}
    explicit byte_reader(std::span<const std::byte> bytes)
        : byte_reader(bytes.data(), bytes.size()) {}

    std::size_t remaining() const { return static_cast<std::size_t>(m_end - m_cursor); }
    bool empty() const { return m_cursor == m_end; }
    const std::byte* position() const { return m_cursor; }

    const std::byte* take(std::size_t bytes) {
        if (bytes > remaining()) [[unlikely]]
            throw_truncated(bytes);
        const std::byte* start = m_cursor;
        m_cursor += bytes;
        return start;
    }

    template <class T>
    T read() {
        static_assert(std::is_trivially_copyable_v<T>, "byte_reader::read needs a trivially copyable type.");
        T value;
        std::memcpy(&value, take(sizeof(T)), sizeof(T));
        return value;
    }

private:
    [[noreturn]] void throw_truncated(std::size_t wanted) const;
    const std::byte* m_cursor = nullptr;
    const std::byte* m_end = nullptr;
};

inline void byte_reader::throw_truncated(std::size_t wanted) const {
    throw decode_error("mpidict: truncated message: wanted " + std::to_string(wanted) +
                       " bytes but only " + std::to_string(remaining()) + " remain");
}

// codec<T>: encoded_size, encode (returns the end of what it wrote), decode.
template <class T, class Enable = void>
struct codec {
    static_assert(std::is_trivially_copyable_v<T>,
                  "mpidict keys and values must be trivially copyable, std::string, std::vector, std::pair, "
                  "std::tuple or std::array of such types, or a struct that names its members with "
                  "MPIDICT_FIELDS(type, &type::member, ...) (mpidict/local/composite.hpp); or specialise "
                  "mpidict::codec<T> (docs/hash_map.md, 'Key and value types').");
    static constexpr bool fixed_size = true;
    static constexpr std::size_t encoded_size(const T&) { return sizeof(T); }
    static std::byte* encode(std::byte* out, const T& value) {
        std::memcpy(out, &value, sizeof(T));
        return out + sizeof(T);
    }
    static T decode(byte_reader& reader) { return reader.read<T>(); }
    // The payload bytes of a value, counted against byte capacity limits.
    static constexpr std::size_t payload_bytes(const T&) { return sizeof(T); }
};

namespace detail {
template <class Bytes>
struct length_prefixed_codec {
    static constexpr bool fixed_size = false;
    static std::size_t encoded_size(const Bytes& value) { return sizeof(std::uint32_t) + value.size(); }
    static std::byte* encode(std::byte* out, const Bytes& value) {
        const auto length = static_cast<std::uint32_t>(value.size());
        std::memcpy(out, &length, sizeof length);
        if (length != 0)
            std::memcpy(out + sizeof length, value.data(), length);
        return out + sizeof length + length;
    }
    static Bytes decode(byte_reader& reader) {
        const auto length = reader.read<std::uint32_t>();
        const std::byte* data = reader.take(length);
        Bytes value;
        value.resize(length);
        if (length != 0)
            std::memcpy(value.data(), data, length);
        return value;
    }
    static std::size_t payload_bytes(const Bytes& value) { return value.size(); }
};
}  // namespace detail

template <>
struct codec<std::string> : detail::length_prefixed_codec<std::string> {};
template <>
struct codec<std::vector<std::byte>> : detail::length_prefixed_codec<std::vector<std::byte>> {};

template <class T>
concept encodable = requires(const T& value, std::byte* out, byte_reader& reader) {
    { codec<T>::encoded_size(value) } -> std::convertible_to<std::size_t>;
    { codec<T>::encode(out, value) } -> std::same_as<std::byte*>;
    { codec<T>::decode(reader) } -> std::same_as<T>;
};

}  // namespace mpidict
