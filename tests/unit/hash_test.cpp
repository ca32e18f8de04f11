// Hashing: reduce_range stays in range and is uniform and monotone; mix64 is a
// good finaliser (avalanche); hash_bytes depends on every byte and the length;
// hasher<K> spreads keys over owner ranks (balance within 10% over 1e5 keys)
// and over table slots.

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "mpidict/local/hash.hpp"

namespace {

using mpidict::hash_bytes;
using mpidict::hasher;
using mpidict::mix64;
using mpidict::reduce_range;
using u64 = std::uint64_t;

// The owner rule of hash_map<K, V>::owner() under hash placement
// (include/mpidict/hash_map.hpp): a second mix of the key hash, reduced to p.
template <class K>
int owner_of(const K& key, int ranks) {
    return static_cast<int>(reduce_range(mix64(hasher<K>{}(key) ^ 0x5851f42d4c957f2dULL), static_cast<std::size_t>(ranks)));
}

TEST(ReduceRange, StaysInRange) {
    std::mt19937_64 random(7);
    const std::vector<std::size_t> ranges{1, 2, 3, 4, 7, 10, 1000, 1u << 20, 123456789, std::size_t{1} << 40,
                                          std::numeric_limits<std::size_t>::max()};
    for (const std::size_t range : ranges) {
        EXPECT_EQ(reduce_range(0, range), 0u);
        EXPECT_EQ(reduce_range(std::numeric_limits<u64>::max(), range), range - 1) << range;
        for (int trial = 0; trial < 10000; ++trial)
            ASSERT_LT(reduce_range(random(), range), range) << range;
    }
}

TEST(ReduceRange, MonotoneAndEvenSplits) {
    // Monotone in the hash: the range is cut into contiguous, nearly equal pieces.
    const std::size_t range = 7;
    std::size_t last = 0;
    for (u64 step = 0; step <= 1000; ++step) {
        const u64 hash = step * (std::numeric_limits<u64>::max() / 1000);
        const std::size_t value = reduce_range(hash, range);
        ASSERT_GE(value, last);
        last = value;
    }
    // Exact quarter points.
    const u64 quarter = u64{1} << 62;
    EXPECT_EQ(reduce_range(quarter - 1, 4), 0u);
    EXPECT_EQ(reduce_range(quarter, 4), 1u);
    EXPECT_EQ(reduce_range(2 * quarter, 4), 2u);
    EXPECT_EQ(reduce_range(3 * quarter, 4), 3u);
}

TEST(ReduceRange, UniformOnRandomInput) {
    std::mt19937_64 random(11);
    constexpr std::size_t buckets = 10;
    constexpr int samples = 1000000;
    std::vector<int> counts(buckets);
    for (int trial = 0; trial < samples; ++trial)
        ++counts[reduce_range(random(), buckets)];
    for (const int count : counts)
        EXPECT_NEAR(count, samples / static_cast<int>(buckets), samples / buckets / 50);  // within 2%
}

TEST(Mix64, BijectiveSampleAndAvalanche) {
    EXPECT_EQ(mix64(0), 0u);  // fmix64 fixes zero; the hasher adds a constant first
    std::set<u64> seen;
    for (u64 x = 0; x < 100000; ++x)
        seen.insert(mix64(x));
    EXPECT_EQ(seen.size(), 100000u);

    // Flipping one input bit flips about half the output bits, for every bit.
    std::mt19937_64 random(3);
    for (int bit = 0; bit < 64; ++bit) {
        double flips = 0;
        constexpr int trials = 2000;
        for (int trial = 0; trial < trials; ++trial) {
            const u64 x = random();
            flips += std::popcount(mix64(x) ^ mix64(x ^ (u64{1} << bit)));
        }
        EXPECT_NEAR(flips / trials, 32.0, 1.5) << "input bit " << bit;
    }
}

TEST(HashBytes, DependsOnEveryByteAndTheLength) {
    const std::string text = "the quick brown fox jumps over the lazy dog";
    const u64 base = hash_bytes(text.data(), text.size());
    EXPECT_EQ(base, hash_bytes(text.data(), text.size()));
    for (std::size_t index = 0; index < text.size(); ++index) {
        std::string changed = text;
        changed[index] ^= 1;
        EXPECT_NE(hash_bytes(changed.data(), changed.size()), base) << index;
    }
    // Zero-filled inputs of different lengths differ (the length is mixed in).
    const std::string zeros(40, '\0');
    std::set<u64> by_length;
    for (std::size_t length = 0; length <= zeros.size(); ++length)
        by_length.insert(hash_bytes(zeros.data(), length));
    EXPECT_EQ(by_length.size(), zeros.size() + 1);
    // The seed matters.
    EXPECT_NE(hash_bytes(text.data(), text.size(), 1), base);
}

TEST(Hasher, StringAndByteVectorAgreeWithHashBytes) {
    const std::string text = "key-123";
    std::vector<std::byte> raw(text.size());
    std::memcpy(raw.data(), text.data(), text.size());
    EXPECT_EQ(hasher<std::string>{}(text), hash_bytes(text.data(), text.size()));
    EXPECT_EQ(hasher<std::vector<std::byte>>{}(raw), hash_bytes(raw.data(), raw.size()));
    EXPECT_NE(hasher<std::string>{}(""), hasher<std::string>{}(std::string(1, '\0')));
}

TEST(Hasher, IntegerHashIsInjectiveOnASample) {
    std::set<u64> seen;
    for (u64 key = 0; key < 100000; ++key)
        seen.insert(hasher<u64>{}(key));
    EXPECT_EQ(seen.size(), 100000u);
    EXPECT_NE(hasher<u64>{}(0), 0u);  // key 0 must not land on hash 0 (fmix64 fixes 0)
    std::set<u64> narrow;
    for (std::uint32_t key = 0; key < 1000; ++key)
        narrow.insert(hasher<std::uint32_t>{}(key));
    EXPECT_EQ(narrow.size(), 1000u);
}

template <class K, class Make>
void expect_owner_balance(Make make, int keys) {
    for (int ranks = 2; ranks <= 8; ++ranks) {
        std::vector<int> counts(static_cast<std::size_t>(ranks));
        for (int index = 0; index < keys; ++index)
            ++counts[static_cast<std::size_t>(owner_of<K>(make(index), ranks))];
        const double mean = static_cast<double>(keys) / ranks;
        for (int rank = 0; rank < ranks; ++rank)
            EXPECT_NEAR(counts[static_cast<std::size_t>(rank)], mean, 0.10 * mean)
                << "rank " << rank << " of " << ranks;
    }
}

TEST(HasherDistribution, OwnerBalanceSequentialIntegers) {
    expect_owner_balance<u64>([](int index) { return static_cast<u64>(index); }, 100000);
}

TEST(HasherDistribution, OwnerBalanceStridedIntegers) {
    // Multiples of a power of two: the low bits never change.
    expect_owner_balance<u64>([](int index) { return static_cast<u64>(index) << 20; }, 100000);
    expect_owner_balance<u64>([](int index) { return static_cast<u64>(index) * 4; }, 100000);
}

TEST(HasherDistribution, OwnerBalanceStrings) {
    expect_owner_balance<std::string>([](int index) { return "key" + std::to_string(index); }, 100000);
}

TEST(HasherDistribution, OwnerBalanceFourRanksTight) {
    constexpr int keys = 100000;
    std::vector<int> counts(4);
    for (int key = 0; key < keys; ++key)
        ++counts[static_cast<std::size_t>(owner_of<u64>(static_cast<u64>(key), 4))];
    const auto [low, high] = std::minmax_element(counts.begin(), counts.end());
    EXPECT_LE(*high - *low, keys / 4 / 10) << "imbalance over 4 ranks";
}

TEST(HasherDistribution, SlotsWithinOneRankStayUniform) {
    // Keys that one owner receives must still spread over its table: the slot
    // uses the raw hash, the owner a second mix, so they are independent.
    constexpr int ranks = 4;
    constexpr std::size_t slots = 1000;
    std::vector<int> counts(slots);
    int received = 0;
    for (u64 key = 0; key < 400000; ++key) {
        if (owner_of<u64>(key, ranks) != 0)
            continue;
        ++received;
        ++counts[reduce_range(hasher<u64>{}(key), slots)];
    }
    const double mean = static_cast<double>(received) / slots;
    double chi_square = 0;
    for (const int count : counts)
        chi_square += (count - mean) * (count - mean) / mean;
    // 999 degrees of freedom: mean 999, standard deviation about 45.
    EXPECT_LT(chi_square, 999 + 6 * 45) << "slot distribution of rank 0's keys";
    EXPECT_EQ(*std::min_element(counts.begin(), counts.end()) > 0, true);
}

}  // namespace
