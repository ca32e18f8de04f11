#pragma once
// Hashing for keys.  A hash here must be good in every bit: the owner rank is
// taken from one mix of it and the slot in the local table from another, so a
// weak hash would pile every key of a rank into one region of its table.
//
// Namespace: mpidict, not mpidict::local.  hasher<K> is a customisation point
// users specialise for their own key types (like std::hash), and mix64 is used
// by every container, the tool and the benchmarks; the file sits in local/
// because nothing in it communicates.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace mpidict {

// A 64-bit finaliser (MurmurHash3's fmix64 constants): bijective, every input bit
// flips each output bit with probability about 1/2.
constexpr std::uint64_t mix64(std::uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

// The 128-bit product of a and b with its halves XORed (the integer step of
// abseil's and wyhash's hashes): one multiply, and through the high half every
// output bit depends on every bit of a.  Not bijective, but a collision of two
// keys is as rare as for a random function.
constexpr std::uint64_t fold_multiply(std::uint64_t a, std::uint64_t b) {
    const unsigned __int128 product = static_cast<unsigned __int128>(a) * b;
    return static_cast<std::uint64_t>(product) ^ static_cast<std::uint64_t>(product >> 64);
}

inline std::uint64_t hash_bytes(const void* data, std::size_t size, std::uint64_t seed = 0) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    std::uint64_t h = seed ^ (0x9e3779b97f4a7c15ULL * (size + 1));
    while (size >= 8) {
        std::uint64_t word;
        std::memcpy(&word, bytes, 8);
        h = mix64(h ^ word) + 0x9e3779b97f4a7c15ULL;
        bytes += 8;
        size -= 8;
    }
    if (size > 0) {
        std::uint64_t word = 0;
        std::memcpy(&word, bytes, size);
        h = mix64(h ^ word ^ (static_cast<std::uint64_t>(size) << 59));
    }
    return mix64(h);
}

// hasher<K>: the default key hash.  Integers take one fold_multiply (a third of
// mix64's instructions, which a table lookup feels: bench/local_table); other trivially
// copyable types hash their object representation (so they must not have padding
// with indeterminate content); byte strings hash their contents.
template <class K, class Enable = void>
struct hasher {
    static_assert(std::is_trivially_copyable_v<K>,
                  "mpidict::hasher<K> cannot hash this key type: use a trivially copyable key, a byte string, a "
                  "std::vector/pair/tuple/array of such, a struct that names its members with "
                  "MPIDICT_FIELDS(type, &type::member, ...), or pass a hash as the map's Hash argument "
                  "(docs/hash_map.md, 'Key and value types').");
    // This hash reads the key's object bytes (see detail::key_bytes_are_canonical).
    static constexpr bool hashes_object_bytes = true;
    std::uint64_t operator()(const K& key) const {
        if constexpr (std::is_integral_v<K> && sizeof(K) <= 8)
            return fold_multiply(static_cast<std::uint64_t>(key) ^ 0x2545f4914f6cdd1dULL, 0x9e3779b97f4a7c15ULL);
        else
            return hash_bytes(&key, sizeof(K));
    }
};

template <>
struct hasher<std::string> {
    std::uint64_t operator()(const std::string& key) const { return hash_bytes(key.data(), key.size()); }
};

template <>
struct hasher<std::vector<std::byte>> {
    std::uint64_t operator()(const std::vector<std::byte>& key) const {
        return hash_bytes(key.data(), key.size());
    }
};

// Maps a 64-bit hash uniformly onto [0, range) without a division (Lemire).
inline std::size_t reduce_range(std::uint64_t hash, std::size_t range) {
    return static_cast<std::size_t>((static_cast<unsigned __int128>(hash) * range) >> 64);
}

namespace detail {

// Whether hashing and comparing K through Hash is sound: a hash that reads the
// key's object bytes (the default hasher<K> of a struct, a float, ...) is sound
// only if equal keys have equal bytes, i.e. K has no padding and no
// floating-point members (std::has_unique_object_representations).  A
// user-provided Hash (or a hasher<K> specialisation) is trusted.
template <class Hash>
concept hashes_object_bytes = requires { requires Hash::hashes_object_bytes; };
template <class K, class Hash>
inline constexpr bool key_bytes_are_canonical = !hashes_object_bytes<Hash> || std::has_unique_object_representations_v<K>;

}  // namespace detail

}  // namespace mpidict
