// multi_table: the work of keys with many values, counted (not timed).
//
// A key's values 2..n live in a side table (spill_table).  Appending a value
// must cost O(1) amortised however many values the key has, and a key with
// several values must not cost a heap node of its own beside its values'
// vector: until stop 66 the side table was a std::unordered_map (a node, a
// bucket and a chain walk per key), which made appending 1s to k-mers
// (bench/kmer_count's append_rate) 4-5x slower than before it.  These tests
// count heap allocations (this binary replaces the global operator new) and
// copies/moves of the values, so a return of either slow path fails them
// deterministically.

#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <vector>

#include "mpidict/local/multi_table.hpp"

namespace {
std::size_t g_allocations = 0;  // heap allocations since the last reset (this test is single-threaded)
}  // namespace

void* operator new(std::size_t size) {
    ++g_allocations;
    if (void* p = std::malloc(size == 0 ? 1 : size))
        return p;
    throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }

namespace {

using mpidict::local::multi_table;
using u64 = std::uint64_t;

// A value that counts its copies and moves.
struct counted {
    static inline std::size_t copies_and_moves = 0;
    u64 value = 0;
    counted() = default;
    explicit counted(u64 v) : value(v) {}
    counted(const counted& other) : value(other.value) { ++copies_and_moves; }
    counted(counted&& other) noexcept : value(other.value) { ++copies_and_moves; }
    counted& operator=(const counted& other) {
        value = other.value;
        ++copies_and_moves;
        return *this;
    }
    counted& operator=(counted&& other) noexcept {
        value = other.value;
        ++copies_and_moves;
        return *this;
    }
};

TEST(MultiTableWork, ASecondValuePerKeyCostsOneAllocation) {
    // 20,000 keys reserved, two values each: the second value's vector is the
    // key's only allocation (its side entry lives in a flat array that doubles:
    // O(log) allocations for all keys).  A node per key would make it >= 2.
    constexpr u64 keys = 20000;
    multi_table<u64, u64> table(keys);
    for (u64 key = 0; key < keys; ++key)
        table.append(key * 0x9e3779b97f4a7c15ULL, key);
    g_allocations = 0;
    for (u64 key = 0; key < keys; ++key)
        table.append(key * 0x9e3779b97f4a7c15ULL, key + 1);
    const std::size_t allocations = g_allocations;
    EXPECT_LE(allocations, keys + 64) << "allocations for " << keys << " second values";
    EXPECT_EQ(table.value_count(), 2 * keys);
    for (u64 key = 0; key < keys; key += 997) {
        const auto values = table.find(key * 0x9e3779b97f4a7c15ULL);
        ASSERT_EQ(values.size(), 2u);
        EXPECT_EQ(values[0], key);
        EXPECT_EQ(values[1], key + 1);
    }
}

TEST(MultiTableWork, AppendingToOneKeyIsLinear) {
    // 200,000 values on one key (and 1,000 other keys with 50 each, appended
    // in turn): each value is copied in once and moved O(1) times on average
    // (geometric growth), and allocations grow with log n per key.
    constexpr std::size_t n = 200000;
    multi_table<u64, counted> table;
    counted::copies_and_moves = 0;
    g_allocations = 0;
    for (std::size_t i = 0; i < n; ++i)
        table.append(7, counted(i));
    EXPECT_LE(counted::copies_and_moves, 3 * n) << "copies and moves for " << n << " values on one key";
    EXPECT_LE(g_allocations, 64u) << "allocations for " << n << " values on one key";

    counted::copies_and_moves = 0;
    for (std::size_t round = 0; round < 50; ++round)
        for (u64 key = 100; key < 1100; ++key)
            table.append(key, counted(round));
    EXPECT_LE(counted::copies_and_moves, 4 * 50000u);
    const auto values = table.find(7);
    ASSERT_EQ(values.size(), n);
    EXPECT_EQ(values[0].value, 0u);
    EXPECT_EQ(values[n - 1].value, n - 1);
    EXPECT_EQ(table.find(1099).size(), 50u);
}

TEST(MultiTableWork, TakingOneValueAtATimeIsLinear) {
    // A key used as a queue: 20,000 values appended, then taken back one and
    // three at a time (oldest first), with appends in between.  Each value is
    // moved O(1) times on average; erasing the front of the side vector on every
    // take moved all the values behind it (about n^2 / 2 = 2e8 moves here).
    constexpr std::size_t n = 20000;
    multi_table<u64, counted> table;
    for (std::size_t i = 0; i < n; ++i)
        table.append(7, counted(i));
    counted::copies_and_moves = 0;
    u64 expected = 0, appended = n;
    std::size_t taken = 0;
    while (!table.find(7).empty()) {
        const std::size_t limit = taken % 2 == 0 ? 1 : 3;
        std::vector<u64> got;
        taken += table.take(7, limit, [&](counted&& value) { got.push_back(value.value); });
        for (const u64 value : got)
            ASSERT_EQ(value, expected++);
        if (appended < n + n / 4 && taken % 16 == 0)
            table.append(7, counted(appended++));
    }
    EXPECT_EQ(taken, appended);
    EXPECT_EQ(table.value_count(), 0u);
    EXPECT_LE(counted::copies_and_moves, 6 * appended) << "copies and moves taking " << appended << " values";
}

TEST(MultiTableWork, SideTableMemoryFollowsTheKeysWithSeveralValues) {
    // 50,000 keys with two values, then back to one: the side table's bytes
    // shrink with them (memory_bytes counts its entries).
    constexpr u64 keys = 50000;
    multi_table<u64, u64> table(2 * keys);  // room to spare: the slots never grow here
    for (u64 key = 0; key < keys; ++key)
        table.append(key, key);
    const std::size_t single = table.memory_bytes();
    for (u64 key = 0; key < keys; ++key)
        table.append(key, key);
    const std::size_t multi = table.memory_bytes();
    EXPECT_GE(multi, single + keys * sizeof(u64));
    EXPECT_LE(multi, single + keys * (sizeof(u64) + 4 * (sizeof(u64) + sizeof(mpidict::local::value_queue<u64>))));
    for (u64 key = 0; key < keys; ++key)
        table.reduce_hashed(key, table.hash_of(key), 0, [](u64& a, const u64& b) { a += b; });
    EXPECT_LE(table.memory_bytes(), single + 1024) << "after every key went back to one value";
    EXPECT_EQ(table.value_count(), keys);
    EXPECT_EQ(table.find(123).size(), 1u);
    EXPECT_EQ(table.find(123)[0], 246u);
}

}  // namespace
