// multi_table against std::unordered_map<K, std::vector<V>>: random operation
// sequences (append one / a range / append_hashed, take with a limit, erase, insert_if_absent,
// assign, find with a limit, clear, reserve), compared result by result and, every
// so often, in full through for_each.  Run with the default hash on a wide key
// range and with degenerate hashes (everything in one slot, the last slot, two
// ends of the table, a few homes) on small key ranges, where every deletion
// shifts a long run.  A failure names the seed and the operation index.

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpidict/local/multi_table.hpp"

namespace {

using mpidict::local::multi_table;
using u64 = std::uint64_t;

struct first_slot_hash {
    template <class K>
    u64 operator()(const K&) const { return 0; }
};
struct last_slot_hash {
    template <class K>
    u64 operator()(const K&) const { return std::numeric_limits<u64>::max(); }
};
struct two_ends_hash {
    u64 operator()(u64 key) const { return key % 2 == 1 ? std::numeric_limits<u64>::max() : 0; }
};
// Five homes spread over the table: runs that grow into each other.
struct five_homes_hash {
    u64 operator()(u64 key) const { return (key % 5) * (std::numeric_limits<u64>::max() / 5); }
};

struct u64_maker {
    static u64 key(u64 index) { return index * 0x100000001b3ULL; }
    static u64 value(u64 stamp) { return stamp; }
};
struct string_maker {
    static std::string key(u64 index) {
        if (index == 0)
            return {};
        return std::string(index % 19, 'k') + std::to_string(index);
    }
    static std::string value(u64 stamp) {
        std::string out = std::to_string(stamp);
        out.append(stamp % 29, static_cast<char>('a' + stamp % 26));
        if (stamp % 7 == 0)
            out.push_back('\0');
        return out;
    }
};

struct differential_options {
    u64 seed = 1;
    std::size_t operations = 200000;
    u64 key_range = 1000;
    double max_load = 0.8;
    std::size_t full_check_every = 1000;
};

template <class K, class V, class Hash, class Maker>
void run_differential(const differential_options& options) {
    using table_type = multi_table<K, V, Hash>;
    using model_type = std::unordered_map<K, std::vector<V>>;
    table_type table(0, options.max_load);
    model_type model;
    std::size_t model_values = 0;
    std::mt19937_64 random(options.seed);
    u64 stamp = 1;
    auto pick = [&](u64 bound) { return std::uniform_int_distribution<u64>(0, bound - 1)(random); };
    std::string op;  // what the current operation is, for messages

    auto where = [&](std::size_t index) {
        std::ostringstream text;
        text << "seed " << options.seed << " op #" << index << " (" << op << ")";
        return text.str();
    };
    auto actual_values = [&](const K& key, std::size_t limit = std::numeric_limits<std::size_t>::max()) {
        std::vector<V> out;
        table.find(key).copy_to(std::back_inserter(out), limit);
        return out;
    };
    auto full_check = [&](std::size_t index) {
        ASSERT_EQ(table.size(), model.size()) << where(index);
        ASSERT_EQ(table.value_count(), model_values) << where(index);
        std::size_t keys_seen = 0;
        bool ok = true;
        table.for_each([&](const K& key, const auto& view) {
            ++keys_seen;
            const auto found = model.find(key);
            if (found == model.end() || found->second.size() != view.size()) {
                ok = false;
                return;
            }
            for (std::size_t i = 0; i < view.size(); ++i)
                if (!(view[i] == found->second[i]))
                    ok = false;
        });
        ASSERT_TRUE(ok) << "for_each disagrees with the model at " << where(index);
        ASSERT_EQ(keys_seen, model.size()) << where(index);
        for (const auto& [key, values] : model)
            ASSERT_EQ(actual_values(key), values) << where(index);
        ASSERT_LE(static_cast<double>(table.size()), static_cast<double>(table.capacity()) * options.max_load + 1e-9)
            << where(index);
    };

#ifndef MPIDICT_DIFFERENTIAL_DIVISOR
#define MPIDICT_DIFFERENTIAL_DIVISOR 1  // sanitizer/Debug builds run a tenth of the operations
#endif
    const std::size_t operations = options.operations / MPIDICT_DIFFERENTIAL_DIVISOR;
    for (std::size_t index = 0; index < operations; ++index) {
        const K key = Maker::key(pick(options.key_range));
        std::vector<V>& expected = model[key];  // removed again below if it stays empty
        const u64 dice = pick(100);
        bool check_now = false;
        if (dice < 22) {
            const V value = Maker::value(stamp++);
            if (dice % 2 == 0) {
                op = "append one";
                table.append(key, value);
            } else {
                op = "append_hashed";
                ASSERT_EQ(table.append_hashed(key, table.hash_of(key), value), expected.empty()) << where(index);
            }
            expected.push_back(value);
            ++model_values;
        } else if (dice < 38) {
            const std::size_t n = pick(5);  // 0..4, 0 adds nothing
            op = "append range of " + std::to_string(n);
            std::vector<V> values;
            for (std::size_t i = 0; i < n; ++i)
                values.push_back(Maker::value(stamp++));
            ASSERT_EQ(table.append(key, values.begin(), values.end()), n) << where(index);
            expected.insert(expected.end(), values.begin(), values.end());
            model_values += n;
        } else if (dice < 56) {
            const std::size_t limit = pick(8);
            op = "take " + std::to_string(limit);
            std::vector<V> out;
            const std::size_t n = table.take(key, limit, [&](V&& value) { out.push_back(std::move(value)); });
            const std::size_t want = std::min(limit, expected.size());
            ASSERT_EQ(n, want) << where(index);
            ASSERT_EQ(out, std::vector<V>(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(want)))
                << where(index);
            expected.erase(expected.begin(), expected.begin() + static_cast<std::ptrdiff_t>(want));
            model_values -= want;
        } else if (dice < 64) {
            op = "erase";
            ASSERT_EQ(table.erase(key), expected.size()) << where(index);
            model_values -= expected.size();
            expected.clear();
        } else if (dice < 74) {
            op = "insert_if_absent";
            const V value = Maker::value(stamp++);
            ASSERT_EQ(table.insert_if_absent(key, value), expected.empty()) << where(index);
            if (expected.empty()) {
                expected.push_back(value);
                ++model_values;
            }
        } else if (dice < 80) {
            const std::size_t n = pick(4);
            op = "assign " + std::to_string(n);
            std::vector<V> values;
            for (std::size_t i = 0; i < n; ++i)
                values.push_back(Maker::value(stamp++));
            table.assign(key, std::span<const V>(values));
            model_values = model_values - expected.size() + n;
            expected = values;
        } else if (dice < 99) {
            const std::size_t limit = pick(6);
            op = "find " + std::to_string(limit);
            ASSERT_EQ(table.contains(key), !expected.empty()) << where(index);
            ASSERT_EQ(table.find(key).size(), expected.size()) << where(index);
            ASSERT_EQ(actual_values(key, limit),
                      std::vector<V>(expected.begin(),
                                     expected.begin() + static_cast<std::ptrdiff_t>(std::min(limit, expected.size()))))
                << where(index);
        } else {
            const u64 rare = pick(400);
            if (rare == 0) {
                op = "clear";
                table.clear();
                model.clear();
                model_values = 0;
                continue;  // `expected` dangles
            }
            if (rare < 40) {
                op = "reserve";
                table.reserve(table.size() + pick(2 * options.key_range));
            } else {
                op = "full check";
                check_now = true;
            }
        }
        if (expected.empty())
            model.erase(key);
        if (check_now || index % options.full_check_every == 0) {
            full_check(index);
            if (::testing::Test::HasFatalFailure())
                return;
        }
    }
    full_check(operations);
    // Drain everything through take, oldest first.
    for (auto& [key, values] : model) {
        std::vector<V> out;
        table.take(key, values.size() + 1, [&](V&& value) { out.push_back(std::move(value)); });
        ASSERT_EQ(out, values) << "final drain, seed " << options.seed;
    }
    EXPECT_TRUE(table.empty());
    EXPECT_EQ(table.value_count(), 0u);
}

constexpr u64 seeds[] = {1, 20240611, 0xdecafbad};

TEST(MultiTableDifferential, DefaultHashWideRange) {
    for (const u64 seed : seeds) {
        run_differential<u64, u64, mpidict::hasher<u64>, u64_maker>({seed, 200000, 5000, 0.8, 2000});
        ASSERT_FALSE(HasFatalFailure());
    }
}

TEST(MultiTableDifferential, DefaultHashNarrowRangeHighLoad) {
    for (const u64 seed : seeds) {
        run_differential<u64, u64, mpidict::hasher<u64>, u64_maker>({seed, 200000, 300, 0.95, 500});
        ASSERT_FALSE(HasFatalFailure());
    }
}

TEST(MultiTableDifferential, ConstantHashFirstSlot) {
    for (const u64 seed : seeds) {
        run_differential<u64, u64, first_slot_hash, u64_maker>({seed, 200000, 64, 0.8, 200});
        ASSERT_FALSE(HasFatalFailure());
    }
}

TEST(MultiTableDifferential, ConstantHashLastSlotWraps) {
    for (const u64 seed : seeds) {
        run_differential<u64, u64, last_slot_hash, u64_maker>({seed, 200000, 64, 0.8, 200});
        ASSERT_FALSE(HasFatalFailure());
    }
}

TEST(MultiTableDifferential, TwoEndsHash) {
    for (const u64 seed : seeds) {
        // u64_maker keys are index * odd constant, so parity follows the index.
        run_differential<u64, u64, two_ends_hash, u64_maker>({seed, 200000, 96, 0.9, 200});
        ASSERT_FALSE(HasFatalFailure());
    }
}

TEST(MultiTableDifferential, FiveHomesHash) {
    for (const u64 seed : seeds) {
        run_differential<u64, u64, five_homes_hash, u64_maker>({seed, 200000, 120, 0.9, 200});
        ASSERT_FALSE(HasFatalFailure());
    }
}

TEST(MultiTableDifferential, StringsDefaultHash) {
    for (const u64 seed : seeds) {
        run_differential<std::string, std::string, mpidict::hasher<std::string>, string_maker>(
            {seed, 100000, 2000, 0.8, 2000});
        ASSERT_FALSE(HasFatalFailure());
    }
}

TEST(MultiTableDifferential, StringsConstantHash) {
    for (const u64 seed : seeds) {
        run_differential<std::string, std::string, last_slot_hash, string_maker>({seed, 100000, 48, 0.8, 200});
        ASSERT_FALSE(HasFatalFailure());
    }
}

}  // namespace
