#pragma once
// xoshiro256** (Blackman and Vigna), seeded through mix64 of seed + k * 2^64/phi:
// the same numbers on every platform.  The simulation transport's schedules and
// the YCSB generators draw from it.

#include <cstdint>

#include "mpidict/local/hash.hpp"

namespace mpidict::detail {

class xoshiro256 {
public:
    explicit xoshiro256(std::uint64_t seed) {
        for (auto& word : m_state) {
            seed += 0x9e3779b97f4a7c15ULL;
            word = mix64(seed);
        }
    }
    std::uint64_t next() {
        const std::uint64_t result = rotate(m_state[1] * 5, 7) * 9;
        const std::uint64_t t = m_state[1] << 17;
        m_state[2] ^= m_state[0];
        m_state[3] ^= m_state[1];
        m_state[1] ^= m_state[2];
        m_state[0] ^= m_state[3];
        m_state[2] ^= t;
        m_state[3] = rotate(m_state[3], 45);
        return result;
    }
    // Uniform in [0, 1) with 53 random bits.
    double unit() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    static std::uint64_t rotate(std::uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    std::uint64_t m_state[4];
};

}  // namespace mpidict::detail
