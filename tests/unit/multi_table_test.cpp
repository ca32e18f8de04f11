// multi_table: the serial open-addressing multi-value table behind every shard.
// Covers each operation with one and many values per key, insertion order,
// growth/rehash, reserve, backward-shift deletion under total collision
// (including runs that wrap around the end of the slot array), string keys and
// values, and the memory estimate.  The randomized differential test against
// std::unordered_map lives in multi_table_differential_test.cpp.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/local/multi_table.hpp"

namespace {

using mpidict::local::multi_table;
using u64 = std::uint64_t;
constexpr double default_load = mpidict::local::multi_table<std::uint64_t, std::uint64_t>::default_max_load;

// Every key hashes to the same value: one run holds the whole table.
template <u64 Value>
struct constant_hash {
    template <class K>
    u64 operator()(const K&) const { return Value; }
};
using hash_to_first_slot = constant_hash<0>;
using hash_to_last_slot = constant_hash<std::numeric_limits<u64>::max()>;

// Odd keys home at the last slot, even keys at slot 0: two runs that meet and
// interleave across the wrap-around point.
struct two_ends_hash {
    u64 operator()(u64 key) const { return key % 2 == 1 ? std::numeric_limits<u64>::max() : 0; }
};

template <class Table>
std::vector<typename Table::value_type> values_of(const Table& table, const typename Table::key_type& key) {
    std::vector<typename Table::value_type> out;
    table.find(key).copy_to(std::back_inserter(out), std::numeric_limits<std::size_t>::max());
    return out;
}

template <class Table>
std::vector<typename Table::value_type> take_values(Table& table, const typename Table::key_type& key,
                                                    std::size_t limit, std::size_t* returned = nullptr) {
    std::vector<typename Table::value_type> out;
    const std::size_t n = table.take(key, limit, [&](auto&& value) { out.push_back(std::move(value)); });
    if (returned)
        *returned = n;
    return out;
}

std::vector<u64> iota_values(u64 first, std::size_t count) {
    std::vector<u64> out(count);
    std::iota(out.begin(), out.end(), first);
    return out;
}

// ---- basics ------------------------------------------------------------------

TEST(MultiTable, EmptyTable) {
    multi_table<u64, u64> table;
    EXPECT_TRUE(table.empty());
    EXPECT_EQ(table.size(), 0u);
    EXPECT_EQ(table.value_count(), 0u);
    EXPECT_GT(table.capacity(), 0u);
    EXPECT_TRUE(table.find(1).empty());
    EXPECT_EQ(table.find(1).size(), 0u);
    EXPECT_FALSE(table.contains(1));
    EXPECT_EQ(table.erase(1), 0u);
    std::size_t taken = 99;
    EXPECT_TRUE(take_values(table, 1, 10, &taken).empty());
    EXPECT_EQ(taken, 0u);
    int calls = 0;
    table.for_each([&](const u64&, const auto&) { ++calls; });
    EXPECT_EQ(calls, 0);
    EXPECT_EQ(table.longest_probe(), 0u);
}

TEST(MultiTable, RejectsBadMaxLoad) {
    EXPECT_THROW((multi_table<u64, u64>(0, 0.0)), mpidict::invalid_argument_error);
    EXPECT_THROW((multi_table<u64, u64>(0, 1.0)), mpidict::invalid_argument_error);
    EXPECT_THROW((multi_table<u64, u64>(0, -0.5)), mpidict::invalid_argument_error);
    EXPECT_NO_THROW((multi_table<u64, u64>(0, 0.5)));
}

TEST(MultiTable, SingleValuePerKey) {
    multi_table<u64, u64> table;
    for (u64 key = 0; key < 100; ++key)
        table.append(key, key * 10);
    EXPECT_EQ(table.size(), 100u);
    EXPECT_EQ(table.value_count(), 100u);
    for (u64 key = 0; key < 100; ++key) {
        const auto view = table.find(key);
        ASSERT_EQ(view.size(), 1u) << key;
        EXPECT_EQ(view[0], key * 10);
        EXPECT_TRUE(table.contains(key));
    }
    EXPECT_FALSE(table.contains(100));
    EXPECT_FALSE(table.contains(std::numeric_limits<u64>::max()));
}

TEST(MultiTable, ManyValuesKeepInsertionOrder) {
    multi_table<u64, u64> table;
    // Interleave appends to several keys, mixing single and range appends.
    std::map<u64, std::vector<u64>> expected;
    u64 stamp = 1;
    for (int round = 0; round < 50; ++round) {
        for (u64 key = 0; key < 7; ++key) {
            if ((round + key) % 3 == 0) {
                const auto batch = iota_values(stamp, key + 1);
                stamp += key + 1;
                EXPECT_EQ(table.append(key, batch.begin(), batch.end()), batch.size());
                expected[key].insert(expected[key].end(), batch.begin(), batch.end());
            } else {
                table.append(key, stamp);
                expected[key].push_back(stamp++);
            }
        }
    }
    std::size_t total = 0;
    for (const auto& [key, values] : expected) {
        EXPECT_EQ(values_of(table, key), values) << "key " << key;
        total += values.size();
    }
    EXPECT_EQ(table.size(), expected.size());
    EXPECT_EQ(table.value_count(), total);
}

TEST(MultiTable, AppendHashedReportsNewKeys) {
    multi_table<u64, u64> table;
    EXPECT_EQ(table.hash_of(7), mpidict::hasher<u64>{}(7));
    EXPECT_TRUE(table.append_hashed(7, table.hash_of(7), 1));
    EXPECT_FALSE(table.append_hashed(7, table.hash_of(7), 2));
    table.prefetch_hashed(table.hash_of(8));  // a hint only
    for (u64 key = 100; key < 20100; ++key)
        ASSERT_TRUE(table.append_hashed(key, table.hash_of(key), key));
    EXPECT_EQ(values_of(table, 7), (std::vector<u64>{1, 2}));
    for (u64 key = 100; key < 20100; ++key)
        ASSERT_EQ(values_of(table, key), std::vector<u64>{key});
    EXPECT_EQ(table.erase(7), 2u);
    EXPECT_TRUE(table.append_hashed(7, table.hash_of(7), 3));
}

// place_if_above (a checkpoint's load in hash order): a key above every hash
// stored goes in without a comparison; any other is refused and left to the
// caller, so a key can never be stored twice (the ceiling counts every key
// stored, however it came in, erased ones included); the table stays a valid
// linear-probing table (every key found, erase works), through growth and the
// wrap-around at the end of the slots.
TEST(MultiTable, PlaceIfAboveOnlyPlacesKeysAboveEveryStoredHash) {
    multi_table<u64, u64> table(8);
    EXPECT_TRUE(table.above_all(0));  // empty
    std::vector<std::pair<u64, u64>> by_hash;  // (hash, key)
    for (u64 key = 1; key <= 3000; ++key)
        by_hash.emplace_back(table.hash_of(key), key);
    std::sort(by_hash.begin(), by_hash.end());
    // The top 1% first: their runs wrap past the end of the slots; then the rest in order.
    std::rotate(by_hash.begin(), by_hash.end() - 30, by_hash.end());
    u64 placed = 0, refused = 0;
    for (const auto& [hash, key] : by_hash) {
        if (table.place_if_above(key, hash, key * 7)) {
            ++placed;
        } else {
            ++refused;
            EXPECT_TRUE(table.append_hashed(key, hash, key * 7));
        }
    }
    EXPECT_EQ(placed, 30u);  // the wrapped ones; all the others lie below the largest hash
    EXPECT_EQ(refused, 2970u);
    EXPECT_EQ(table.size(), 3000u);
    for (u64 key = 1; key <= 3000; ++key) {
        ASSERT_EQ(values_of(table, key), std::vector<u64>{key * 7}) << key;
    }
    // A stored key is never above the table's hashes: it is refused, not stored twice.
    EXPECT_FALSE(table.place_if_above(by_hash.back().second, by_hash.back().first, 0));
    EXPECT_EQ(table.size(), 3000u);
    // In order from an empty table: every key placed, through growth.
    multi_table<u64, u64> ordered(4);
    std::sort(by_hash.begin(), by_hash.end());
    for (const auto& [hash, key] : by_hash)
        EXPECT_TRUE(ordered.place_if_above(key, hash, key));
    EXPECT_EQ(ordered.size(), 3000u);
    EXPECT_EQ(ordered.value_count(), 3000u);
    for (u64 key = 1; key <= 3000; key += 2)
        EXPECT_EQ(ordered.erase(key), 1u);
    for (u64 key = 1; key <= 3000; ++key)
        EXPECT_EQ(ordered.contains(key), key % 2 == 0) << key;
    // Erased keys still count: the largest hash was erased or not, either way the
    // key with it is refused (and found or inserted by the caller).
    EXPECT_FALSE(ordered.place_if_above(by_hash.back().second, by_hash.back().first, 0));
    EXPECT_FALSE(ordered.above_all(by_hash.back().first));
    EXPECT_TRUE(ordered.above_all(by_hash.back().first + 1) || by_hash.back().first == ~u64{0});
    ordered.clear();
    EXPECT_TRUE(ordered.place_if_above(by_hash.front().second, by_hash.front().first, 1));  // empty again
}

TEST(MultiTable, AppendEmptyRangeAddsNothing) {
    multi_table<u64, u64> table;
    std::vector<u64> none;
    EXPECT_EQ(table.append(5, none.begin(), none.end()), 0u);
    EXPECT_FALSE(table.contains(5));
    EXPECT_EQ(table.size(), 0u);
    table.append(5, 1);
    EXPECT_EQ(table.append(5, none.begin(), none.end()), 0u);
    EXPECT_EQ(values_of(table, 5), std::vector<u64>{1});
}

TEST(MultiTable, ValuesViewCopyToHonoursLimit) {
    multi_table<u64, u64> table;
    const auto values = iota_values(100, 6);
    table.append(1, values.begin(), values.end());
    for (std::size_t limit = 0; limit <= 8; ++limit) {
        std::vector<u64> out;
        table.find(1).copy_to(std::back_inserter(out), limit);
        EXPECT_EQ(out, std::vector<u64>(values.begin(), values.begin() + std::min<std::size_t>(limit, 6)));
    }
}

TEST(MultiTable, TakePartialThenFull) {
    multi_table<u64, u64> table;
    const auto values = iota_values(1, 10);
    table.append(42, values.begin(), values.end());
    table.append(7, 700);

    std::size_t n = 0;
    EXPECT_EQ(take_values(table, 42, 3, &n), (std::vector<u64>{1, 2, 3}));
    EXPECT_EQ(n, 3u);
    EXPECT_EQ(values_of(table, 42), (std::vector<u64>{4, 5, 6, 7, 8, 9, 10}));
    EXPECT_EQ(table.size(), 2u);
    EXPECT_EQ(table.value_count(), 8u);

    // Appends after a partial take go to the back.
    table.append(42, 11);
    EXPECT_EQ(values_of(table, 42), (std::vector<u64>{4, 5, 6, 7, 8, 9, 10, 11}));

    // Leave exactly one value (the spill becomes empty and is released).
    EXPECT_EQ(take_values(table, 42, 7), (std::vector<u64>{4, 5, 6, 7, 8, 9, 10}));
    EXPECT_EQ(values_of(table, 42), std::vector<u64>{11});
    table.append(42, 12);
    EXPECT_EQ(values_of(table, 42), (std::vector<u64>{11, 12}));

    // Limit 0 takes nothing.
    EXPECT_TRUE(take_values(table, 42, 0, &n).empty());
    EXPECT_EQ(n, 0u);
    EXPECT_EQ(values_of(table, 42), (std::vector<u64>{11, 12}));

    // More than present: everything, and the key is gone.
    EXPECT_EQ(take_values(table, 42, 100, &n), (std::vector<u64>{11, 12}));
    EXPECT_EQ(n, 2u);
    EXPECT_FALSE(table.contains(42));
    EXPECT_TRUE(table.find(42).empty());
    EXPECT_EQ(table.size(), 1u);
    EXPECT_EQ(table.value_count(), 1u);
    EXPECT_EQ(values_of(table, 7), std::vector<u64>{700});

    // Taking a single-value key exactly.
    EXPECT_EQ(take_values(table, 7, 1), std::vector<u64>{700});
    EXPECT_TRUE(table.empty());
    EXPECT_EQ(table.value_count(), 0u);
}

TEST(MultiTable, TakeOneAtATimeIsFifo) {
    multi_table<u64, u64> table;
    const auto values = iota_values(1000, 500);
    table.append(3, values.begin(), values.end());
    for (std::size_t index = 0; index < values.size(); ++index) {
        ASSERT_EQ(take_values(table, 3, 1), std::vector<u64>{values[index]}) << index;
        ASSERT_EQ(table.find(3).size(), values.size() - index - 1);
    }
    EXPECT_FALSE(table.contains(3));
    EXPECT_EQ(table.value_count(), 0u);
}

TEST(MultiTable, EraseRemovesKeyAndReportsCount) {
    multi_table<u64, u64> table;
    const auto values = iota_values(1, 5);
    table.append(1, values.begin(), values.end());
    table.append(2, 20);
    table.append(3, values.begin(), values.end());
    EXPECT_EQ(table.erase(1), 5u);
    EXPECT_FALSE(table.contains(1));
    EXPECT_EQ(table.erase(1), 0u);
    EXPECT_EQ(table.erase(2), 1u);
    EXPECT_EQ(table.size(), 1u);
    EXPECT_EQ(table.value_count(), 5u);
    EXPECT_EQ(values_of(table, 3), values);
    // A re-inserted key starts afresh.
    table.append(1, 99);
    EXPECT_EQ(values_of(table, 1), std::vector<u64>{99});
}

TEST(MultiTable, InsertIfAbsent) {
    multi_table<u64, u64> table;
    EXPECT_TRUE(table.insert_if_absent(9, 1));
    EXPECT_FALSE(table.insert_if_absent(9, 2));
    EXPECT_EQ(values_of(table, 9), std::vector<u64>{1});
    table.append(9, 3);
    EXPECT_FALSE(table.insert_if_absent(9, 4));
    EXPECT_EQ(values_of(table, 9), (std::vector<u64>{1, 3}));
    EXPECT_EQ(table.erase(9), 2u);
    EXPECT_TRUE(table.insert_if_absent(9, 5));
    EXPECT_EQ(values_of(table, 9), std::vector<u64>{5});
    EXPECT_EQ(table.size(), 1u);
    EXPECT_EQ(table.value_count(), 1u);
    // Many keys through insert_if_absent alone (exercises its own growth path).
    for (u64 key = 100; key < 5100; ++key)
        ASSERT_TRUE(table.insert_if_absent(key, key));
    for (u64 key = 100; key < 5100; ++key)
        ASSERT_FALSE(table.insert_if_absent(key, 0));
    for (u64 key = 100; key < 5100; ++key)
        ASSERT_EQ(values_of(table, key), std::vector<u64>{key});
    EXPECT_EQ(table.size(), 5001u);
}

TEST(MultiTable, Assign) {
    multi_table<u64, u64> table;
    const std::vector<u64> three{7, 8, 9};
    const std::vector<u64> one{1};
    table.assign(4, three);  // absent key: creates it
    EXPECT_EQ(values_of(table, 4), three);
    table.assign(4, one);  // shrinks
    EXPECT_EQ(values_of(table, 4), one);
    table.assign(4, three);  // grows again
    EXPECT_EQ(values_of(table, 4), three);
    EXPECT_EQ(table.value_count(), 3u);
    table.assign(4, std::span<const u64>());  // empty: removes
    EXPECT_FALSE(table.contains(4));
    EXPECT_EQ(table.size(), 0u);
    EXPECT_EQ(table.value_count(), 0u);
    table.assign(5, std::span<const u64>());  // empty on an absent key: nothing
    EXPECT_FALSE(table.contains(5));
    EXPECT_EQ(table.size(), 0u);
}

TEST(MultiTable, ForEachVisitsEveryKeyOnce) {
    multi_table<u64, u64> table;
    std::map<u64, std::vector<u64>> expected;
    for (u64 key = 0; key < 300; ++key) {
        const auto values = iota_values(key * 1000, key % 5 + 1);
        table.append(key, values.begin(), values.end());
        expected[key] = values;
    }
    for (u64 key = 0; key < 300; key += 3) {
        table.erase(key);
        expected.erase(key);
    }
    std::map<u64, std::vector<u64>> seen;
    table.for_each([&](const u64& key, const auto& view) {
        EXPECT_FALSE(seen.count(key)) << "key visited twice: " << key;
        auto& values = seen[key];
        for (std::size_t index = 0; index < view.size(); ++index)
            values.push_back(view[index]);
    });
    EXPECT_EQ(seen, expected);
}

TEST(MultiTable, ClearEmptiesAndTableIsReusable) {
    multi_table<u64, u64> table;
    for (u64 key = 0; key < 1000; ++key) {
        table.append(key, key);
        table.append(key, key + 1);
    }
    table.clear();
    EXPECT_TRUE(table.empty());
    EXPECT_EQ(table.value_count(), 0u);
    for (u64 key = 0; key < 1000; ++key)
        ASSERT_FALSE(table.contains(key));
    int calls = 0;
    table.for_each([&](const u64&, const auto&) { ++calls; });
    EXPECT_EQ(calls, 0);
    for (u64 key = 0; key < 1000; ++key)
        table.append(key, key * 2);
    for (u64 key = 0; key < 1000; ++key)
        ASSERT_EQ(values_of(table, key), std::vector<u64>{key * 2});
    EXPECT_EQ(table.value_count(), 1000u);
}

TEST(MultiTable, SpillStorageIsRecycledWithoutMixingValues) {
    multi_table<u64, u64> table;
    // Keys with several values use side storage; free and reuse it repeatedly.
    for (int round = 0; round < 20; ++round) {
        for (u64 key = 0; key < 50; ++key) {
            const auto values = iota_values(round * 100000 + key * 100, 3 + key % 4);
            table.append(key, values.begin(), values.end());
        }
        for (u64 key = 0; key < 50; key += 2)
            table.erase(key);
        for (u64 key = 1; key < 50; key += 2) {
            const auto all = values_of(table, key);
            table.take(key, all.size() - 1, [](auto&&) {});  // keep one: spill released
        }
        for (u64 key = 0; key < 50; ++key) {
            const auto values = values_of(table, key);
            if (key % 2 == 0) {
                ASSERT_TRUE(values.empty());
            } else {
                const u64 last = round * 100000 + key * 100 + (3 + key % 4) - 1;
                ASSERT_EQ(values, std::vector<u64>{last}) << "round " << round << " key " << key;
            }
        }
        table.clear();
    }
}

// ---- growth ------------------------------------------------------------------

TEST(MultiTable, GrowthAndRehashKeepEverything) {
    multi_table<u64, u64> table;  // starts at the minimum capacity
    const std::size_t initial_capacity = table.capacity();
    constexpr u64 keys = 40000;
    for (u64 key = 0; key < keys; ++key) {
        const u64 spread = key * 0x9e3779b97f4a7c15ULL;  // not sequential
        table.append(spread, key);
        if (key % 4 == 0)
            table.append(spread, key + 1);
        if (key % 16 == 0)
            table.append(spread, key + 2);
        ASSERT_LE(static_cast<double>(table.size()),
                  static_cast<double>(table.capacity()) * default_load + 1e-9);
    }
    EXPECT_GT(table.capacity(), initial_capacity);
    EXPECT_EQ(table.size(), keys);
    std::size_t values = 0;
    for (u64 key = 0; key < keys; ++key) {
        const u64 spread = key * 0x9e3779b97f4a7c15ULL;
        std::vector<u64> expected{key};
        if (key % 4 == 0)
            expected.push_back(key + 1);
        if (key % 16 == 0)
            expected.push_back(key + 2);
        ASSERT_EQ(values_of(table, spread), expected) << key;
        values += expected.size();
    }
    EXPECT_EQ(table.value_count(), values);
    // The default hash keeps probes short.
    EXPECT_LT(table.longest_probe(), 64u);
}

TEST(MultiTable, SequentialKeysGrowth) {
    multi_table<u64, u64> table;
    constexpr u64 keys = 60000;
    for (u64 key = 0; key < keys; ++key)
        table.append(key, ~key);
    for (u64 key = 0; key < keys; key += 2)
        ASSERT_EQ(table.erase(key), 1u);
    for (u64 key = 0; key < keys; ++key)
        ASSERT_EQ(table.contains(key), key % 2 == 1) << key;
    EXPECT_EQ(table.size(), keys / 2);
    EXPECT_LT(table.longest_probe(), 64u);
}

TEST(MultiTable, ReserveAvoidsGrowth) {
    for (const double load : {0.5, 0.8, 0.9}) {
        multi_table<u64, u64> table(0, load);
        constexpr std::size_t keys = 12345;
        table.reserve(keys);
        const std::size_t capacity = table.capacity();
        EXPECT_GE(static_cast<double>(capacity) * load, static_cast<double>(keys));
        for (u64 key = 0; key < keys; ++key)
            table.append(key, key);
        EXPECT_EQ(table.capacity(), capacity) << "load " << load;
        // Reserving less than present never shrinks.
        table.reserve(10);
        EXPECT_EQ(table.capacity(), capacity);
    }
}

TEST(MultiTable, ExpectedKeysHintAvoidsGrowth) {
    constexpr std::size_t keys = 20000;
    multi_table<u64, u64> table(keys);
    const std::size_t capacity = table.capacity();
    // Honoured closely: no power-of-two rounding.
    EXPECT_LE(capacity, static_cast<std::size_t>(keys / default_load) + 2);
    for (u64 key = 0; key < keys; ++key)
        table.insert_if_absent(key, key);
    EXPECT_EQ(table.capacity(), capacity);
    EXPECT_EQ(table.size(), keys);
}

// ---- collisions and backward-shift deletion ------------------------------------

// With every key in one run, delete from the middle, the front and the back of
// the run, and check every survivor after each deletion.
template <class Hash>
void delete_inside_one_run() {
    multi_table<u64, u64, Hash> table;
    constexpr u64 keys = 200;
    std::set<u64> present;
    for (u64 key = 0; key < keys; ++key) {
        table.append(key, key + 1000);
        if (key % 3 == 0)
            table.append(key, key + 2000);
        present.insert(key);
    }
    EXPECT_EQ(table.longest_probe(), keys);  // one run of every key
    // Middle, then alternating ends, then the rest.
    std::vector<u64> order{100, 101, 57, 0, 199, 1, 198, 150};
    for (u64 key = 2; key < keys; key += 7)
        order.push_back(key);
    for (u64 key = 0; key < keys; ++key)
        order.push_back(key);
    for (const u64 victim : order) {
        const std::size_t expected_count = present.count(victim) ? (victim % 3 == 0 ? 2 : 1) : 0;
        ASSERT_EQ(table.erase(victim), expected_count) << "erase " << victim;
        present.erase(victim);
        for (u64 key = 0; key < keys; ++key) {
            const auto values = values_of(table, key);
            if (!present.count(key)) {
                ASSERT_TRUE(values.empty()) << "erased key " << key << " still found after erasing " << victim;
                continue;
            }
            std::vector<u64> expected{key + 1000};
            if (key % 3 == 0)
                expected.push_back(key + 2000);
            ASSERT_EQ(values, expected) << "key " << key << " after erasing " << victim;
        }
        ASSERT_EQ(table.size(), present.size());
    }
    EXPECT_TRUE(table.empty());
    EXPECT_EQ(table.value_count(), 0u);
}

TEST(MultiTableCollisions, ConstantHashToFirstSlot) { delete_inside_one_run<hash_to_first_slot>(); }

TEST(MultiTableCollisions, ConstantHashToLastSlotWrapsAround) { delete_inside_one_run<hash_to_last_slot>(); }

TEST(MultiTableCollisions, TakeAndReinsertInsideOneRun) {
    // Partial takes keep the key in place; full takes shift the run.
    multi_table<u64, u64, hash_to_last_slot> table;
    for (u64 key = 0; key < 64; ++key) {
        const auto values = iota_values(key * 10, 4);
        table.append(key, values.begin(), values.end());
    }
    for (u64 key = 0; key < 64; key += 2)
        ASSERT_EQ(take_values(table, key, 2), (std::vector<u64>{key * 10, key * 10 + 1}));
    for (u64 key = 1; key < 64; key += 2)
        ASSERT_EQ(take_values(table, key, 4), iota_values(key * 10, 4));
    for (u64 key = 1; key < 64; key += 2)
        table.insert_if_absent(key, 7);
    for (u64 key = 0; key < 64; ++key) {
        if (key % 2 == 0)
            ASSERT_EQ(values_of(table, key), (std::vector<u64>{key * 10 + 2, key * 10 + 3})) << key;
        else
            ASSERT_EQ(values_of(table, key), std::vector<u64>{7}) << key;
    }
}

TEST(MultiTableCollisions, TwoRunsMeetingAcrossTheWrap) {
    // Odd keys home at the last slot and wrap to the front; even keys home at
    // slot 0 and are pushed behind them.  Deleting a wrapped key must pull the
    // right keys back over the boundary and must not move a slot-0 key to the end.
    multi_table<u64, u64, two_ends_hash> table(64);
    const std::size_t capacity = table.capacity();
    std::set<u64> present;
    for (u64 key = 0; key < 40; ++key) {
        table.append(key, key * 3);
        present.insert(key);
    }
    ASSERT_EQ(table.capacity(), capacity) << "test assumes no growth";
    std::vector<u64> order{1, 0, 39, 2, 21, 20, 3, 5, 4, 7};
    for (u64 key = 0; key < 40; ++key)
        order.push_back(key);
    for (const u64 victim : order) {
        ASSERT_EQ(table.erase(victim), present.count(victim)) << victim;
        present.erase(victim);
        for (u64 key = 0; key < 40; ++key) {
            if (present.count(key))
                ASSERT_EQ(values_of(table, key), std::vector<u64>{key * 3}) << key << " after " << victim;
            else
                ASSERT_FALSE(table.contains(key)) << key << " after " << victim;
        }
        // Re-insert a few to keep both runs busy.
        if (victim % 5 == 0 && victim < 40 && !present.count(victim + 40)) {
            table.append(victim + 40, (victim + 40) * 3);
            present.insert(victim + 40);
            for (u64 key : present)
                ASSERT_EQ(values_of(table, key), std::vector<u64>{key * 3}) << key;
        }
    }
}

TEST(MultiTableCollisions, GrowthUnderTotalCollision) {
    multi_table<u64, u64, hash_to_first_slot> table;
    for (u64 key = 0; key < 2000; ++key)
        table.append(key, key);
    for (u64 key = 0; key < 2000; ++key)
        ASSERT_EQ(values_of(table, key), std::vector<u64>{key});
    EXPECT_EQ(table.longest_probe(), 2000u);
}

// ---- strings -----------------------------------------------------------------

TEST(MultiTableStrings, KeysAndValues) {
    multi_table<std::string, std::string> table;
    const std::string long_value(300, 'v');  // heap-allocated, beyond SSO
    table.append("", "empty key");
    table.append("a", "");
    table.append("a", long_value);
    table.append("a", std::string("with\0nul", 8));
    table.append(std::string(100, 'k'), "long key");
    EXPECT_EQ(values_of(table, ""), std::vector<std::string>{"empty key"});
    EXPECT_EQ(values_of(table, "a"), (std::vector<std::string>{"", long_value, std::string("with\0nul", 8)}));
    EXPECT_EQ(values_of(table, std::string(100, 'k')), std::vector<std::string>{"long key"});
    EXPECT_FALSE(table.contains("with"));
    EXPECT_EQ(take_values(table, "a", 2), (std::vector<std::string>{"", long_value}));
    EXPECT_EQ(values_of(table, "a"), std::vector<std::string>{std::string("with\0nul", 8)});
    EXPECT_TRUE(table.insert_if_absent("b", "first"));
    EXPECT_FALSE(table.insert_if_absent("b", "second"));
    const std::vector<std::string> replacement{"x", "y"};
    table.assign("b", replacement);
    EXPECT_EQ(values_of(table, "b"), replacement);
    EXPECT_EQ(table.erase(""), 1u);
    EXPECT_EQ(table.size(), 3u);
}

TEST(MultiTableStrings, ManyKeysWithGrowthAndDeletes) {
    multi_table<std::string, std::string> table;
    auto key_of = [](int index) { return "key-" + std::to_string(index) + std::string(index % 23, '#'); };
    auto value_of = [](int index, int which) {
        return std::string(static_cast<std::size_t>(index % 40), 'a' + static_cast<char>(which)) + std::to_string(index);
    };
    constexpr int keys = 20000;
    for (int index = 0; index < keys; ++index) {
        table.append(key_of(index), value_of(index, 0));
        if (index % 3 == 0)
            table.append(key_of(index), value_of(index, 1));
    }
    for (int index = 0; index < keys; index += 4)
        table.erase(key_of(index));
    for (int index = 1; index < keys; index += 4)
        table.take(key_of(index), 1, [](std::string&&) {});
    for (int index = 0; index < keys; ++index) {
        const auto values = values_of(table, key_of(index));
        std::vector<std::string> expected;
        if (index % 4 == 0) {
        } else if (index % 4 == 1) {
            if (index % 3 == 0)
                expected.push_back(value_of(index, 1));
        } else {
            expected.push_back(value_of(index, 0));
            if (index % 3 == 0)
                expected.push_back(value_of(index, 1));
        }
        ASSERT_EQ(values, expected) << index;
    }
}

TEST(MultiTableStrings, TakeMovesValuesOut) {
    multi_table<std::string, std::string> table;
    const std::string big(1000, 'z');
    table.append("k", big);
    table.append("k", big + "1");
    table.append("k", big + "2");
    std::vector<std::string> out;
    table.take("k", 2, [&](std::string&& value) { out.push_back(std::move(value)); });
    EXPECT_EQ(out, (std::vector<std::string>{big, big + "1"}));
    EXPECT_EQ(values_of(table, "k"), std::vector<std::string>{big + "2"});
}

TEST(MultiTableStrings, ConstantHash) {
    multi_table<std::string, std::string, hash_to_last_slot> table;
    for (int index = 0; index < 300; ++index)
        table.append(std::to_string(index), std::to_string(index * 2));
    for (int index = 0; index < 300; index += 2)
        ASSERT_EQ(table.erase(std::to_string(index)), 1u);
    for (int index = 0; index < 300; ++index) {
        if (index % 2 == 0)
            ASSERT_FALSE(table.contains(std::to_string(index)));
        else
            ASSERT_EQ(values_of(table, std::to_string(index)), std::vector<std::string>{std::to_string(index * 2)});
    }
}

// ---- memory -----------------------------------------------------------------

TEST(MultiTableMemory, SeventeenBytesPerSlotForU64) {
    // A 16-byte slot and a tag byte per slot, plus 15 tags repeated at the end.
    multi_table<u64, u64> table(10000);
    const auto slots_and_tags = [&] { return table.capacity() * 17 + 15; };
    EXPECT_EQ(table.memory_bytes(), slots_and_tags());
    for (u64 key = 0; key < 10000; ++key)
        table.append(key, key);
    // One value per key: nothing outside the slots and tags.
    EXPECT_EQ(table.memory_bytes(), slots_and_tags());
    const double per_key = static_cast<double>(table.memory_bytes()) / 10000.0;
    EXPECT_LE(per_key, 17.0 / default_load + 1.0);  // at the default load
    EXPECT_LE(per_key, 32.0);  // the budget for an 8+8-byte pair

    // Extra values cost their own size plus a side-table entry (key, value
    // queue: a vector and its head) per such key, at most half the entries
    // used: 1,000 keys take 2,048.
    for (u64 key = 0; key < 1000; ++key)
        for (int extra = 0; extra < 4; ++extra)
            table.append(key, key);
    const std::size_t fixed = slots_and_tags();
    const std::size_t entry = sizeof(u64) + sizeof(mpidict::local::value_queue<u64>);
    EXPECT_EQ(table.memory_bytes(), fixed + 4000 * sizeof(u64) + 2048 * entry);
    // Back to one value each: the side table shrinks to its smallest (16 entries).
    for (u64 key = 0; key < 1000; ++key)
        table.assign(key, std::vector<u64>{key});
    EXPECT_LE(table.memory_bytes(), fixed + 16 * entry);
}

// The VmFlags of the mapping that holds `address` (/proc/self/smaps), or "" if unknown.
std::string mapping_flags(const void* address) {
    std::ifstream smaps("/proc/self/smaps");
    const auto at = reinterpret_cast<std::uintptr_t>(address);
    std::string line;
    bool inside = false;
    while (std::getline(smaps, line)) {
        std::uintptr_t start = 0, end = 0;
        char dash = 0;
        std::istringstream head(line);
        if (head >> std::hex >> start >> dash >> end && dash == '-' && line.find(':') > line.find(' ')) {
            inside = start <= at && at < end;
            continue;
        }
        if (inside && line.rfind("VmFlags:", 0) == 0)
            return line;
    }
    return "";
}

TEST(MultiTableMemory, LargeArraysAskForHugePages) {
    // detail::huge_page_allocator: 4 MiB and more advised MADV_HUGEPAGE (the
    // mapping's VmFlags show "hg"), smaller blocks plain; both freed plainly.
    mpidict::detail::huge_page_allocator<u64> allocator;
    constexpr std::size_t big_bytes = std::size_t{8} << 20;
    u64* big = allocator.allocate(big_bytes / sizeof(u64));
    big[0] = 1;
    big[big_bytes / sizeof(u64) - 1] = 2;
    const std::string flags = mapping_flags(reinterpret_cast<const char*>(big) + big_bytes / 2);
    const bool kernel_has_thp = std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good();
    if (!flags.empty() && kernel_has_thp) {
        EXPECT_NE(flags.find(" hg"), std::string::npos) << flags;
    }
    allocator.deallocate(big, big_bytes / sizeof(u64));
    u64* small = allocator.allocate(100);
    small[99] = 3;
    allocator.deallocate(small, 100);
    EXPECT_THROW((void)allocator.allocate(std::numeric_limits<std::size_t>::max() / 4), std::bad_array_new_length);
}

TEST(MultiTableMemory, GrowsFromSmallArraysToHugePageArrays) {
    // 300,000 keys: the slot array passes 4 MiB on the way (rehashes move the
    // table from plain to advised blocks), and every key and value survives,
    // including keys with several values and erasures in the large table.
    multi_table<u64, u64> table;
    constexpr u64 keys = 300000;
    for (u64 key = 0; key < keys; ++key) {
        table.append(key * 0x9e3779b97f4a7c15ULL, key);
        if (key % 7 == 0)
            table.append(key * 0x9e3779b97f4a7c15ULL, key + 1);
    }
    ASSERT_GE(table.capacity() * 16, std::size_t{4} << 20);
    for (u64 key = 0; key < keys; key += 3)
        ASSERT_EQ(table.erase(key * 0x9e3779b97f4a7c15ULL), key % 7 == 0 ? 2u : 1u) << key;
    for (u64 key = 0; key < keys; ++key) {
        const auto values = values_of(table, key * 0x9e3779b97f4a7c15ULL);
        if (key % 3 == 0) {
            ASSERT_TRUE(values.empty()) << key;
        } else {
            std::vector<u64> expected{key};
            if (key % 7 == 0)
                expected.push_back(key + 1);
            ASSERT_EQ(values, expected) << key;
        }
    }
    EXPECT_EQ(table.size(), keys - (keys + 2) / 3);
}

TEST(MultiTableMemory, ClearGivesTheMemoryBack) {
    // clear(): "Removes everything and gives the memory back" -- the slot array,
    // the spilled values and the index of side vectors alike.
    const std::size_t fresh = multi_table<u64, u64>().memory_bytes();
    multi_table<u64, u64> table;
    for (u64 key = 0; key < 10000; ++key)
        table.append(key, key);
    for (u64 key = 0; key < 1000; ++key)
        for (int extra = 0; extra < 4; ++extra)
            table.append(key, key);
    EXPECT_GT(table.memory_bytes(), 10000u * 24);
    table.clear();
    EXPECT_LE(table.memory_bytes(), fresh) << "memory_bytes() after clear(); a new table reports " << fresh;
    // And the table still works.
    table.append(1, 2);
    table.append(1, 3);
    EXPECT_EQ(values_of(table, 1), (std::vector<u64>{2, 3}));
}

}  // namespace
