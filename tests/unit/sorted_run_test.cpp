// skiplist_map's packed sorted run (detail/sorted_run.hpp) against a
// std::map model: random inserts, replacements (same and other value sizes),
// erases of single entries and ranges, expiries and purges; the fixed-width
// layout (every entry of the same key and value widths) and its conversion to
// the variable one.

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <utility>

#include "mpidict/detail/sorted_run.hpp"

namespace {

using mpidict::detail::sorted_run;
using model_type = std::map<std::string, std::pair<std::string, double>>;

void expect_same(const sorted_run& run, const model_type& model) {
    ASSERT_EQ(run.size(), model.size());
    std::size_t index = 0;
    for (const auto& [key, entry] : model) {
        EXPECT_EQ(run.key(index), key) << "index " << index;
        EXPECT_EQ(run.value(index), entry.first) << "index " << index;
        EXPECT_EQ(run.expires(index), entry.second) << "index " << index;
        ++index;
    }
}

TEST(SortedRun, MatchesAMapUnderRandomChanges) {
    std::mt19937_64 random(7);
    sorted_run run;
    model_type model;
    for (int step = 0; step < 20'000; ++step) {
        std::string key(1 + random() % 4, '\0');
        for (char& c : key)
            c = static_cast<char>(random() % 4);  // embedded zero bytes included
        const std::size_t at = run.lower_bound(key);
        const bool present = run.holds_at(at, key);
        ASSERT_EQ(present, model.count(key) == 1);
        const std::string value(random() % 3 == 0 ? 0 : random() % 12, static_cast<char>('a' + step % 26));
        const double expiry = random() % 4 == 0 ? static_cast<double>(step) : 0.0;
        switch (random() % 5) {
        case 0:
        case 1:
            if (present)
                run.assign(at, value, expiry);
            else
                run.insert(at, key, value, expiry);
            model[key] = {value, expiry};
            break;
        case 2:
            if (present) {
                run.erase(at, at + 1);
                model.erase(key);
            }
            break;
        case 3: {  // erase a range [at, at + n)
            const std::size_t last = std::min(run.size(), at + random() % 3);
            for (std::size_t index = at; index < last; ++index)
                model.erase(std::string(run.key(index)));
            run.erase(at, last);
            break;
        }
        default:  // purge what expired before `step / 2`
            run.erase_unless([&](std::size_t index) {
                const double expires = run.expires(index);
                return expires == 0 || expires >= step / 2;
            });
            for (auto it = model.begin(); it != model.end();)
                it = it->second.second != 0 && it->second.second < step / 2 ? model.erase(it) : std::next(it);
        }
        if (step % 97 == 0)
            expect_same(run, model);
    }
    expect_same(run, model);
    EXPECT_GT(run.memory_bytes(), 0u);
    run.erase(0, run.size());
    EXPECT_TRUE(run.empty());
    EXPECT_LE(run.memory_bytes(), std::string().capacity());  // nothing beyond an empty string
}

TEST(SortedRun, LowerBoundFromAnIndexAndEmptyStrings) {
    sorted_run run;
    run.push_back("", "empty key", 0);
    run.push_back("a", "", 0);
    run.push_back("b", std::string(1000, 'x'), 5.0);
    EXPECT_EQ(run.lower_bound(""), 0u);
    EXPECT_EQ(run.lower_bound("a"), 1u);
    EXPECT_EQ(run.lower_bound("a", 2), 2u);
    EXPECT_EQ(run.lower_bound("c"), 3u);
    EXPECT_EQ(run.value(0), "empty key");
    EXPECT_EQ(run.value(1), "");
    EXPECT_EQ(run.expires(0), 0.0);
    EXPECT_EQ(run.expires(2), 5.0);
    run.assign(2, "short", 0);  // another size: moved
    EXPECT_EQ(run.value(2), "short");
    EXPECT_EQ(run.key(2), "b");
    EXPECT_EQ(run.expires(2), 0.0);
}


// Big-endian bytes of a number (the encoding of unsigned integer keys).
std::string be(std::uint64_t number, std::size_t width = 8) {
    std::string bytes(width, '\0');
    for (std::size_t at = width; at-- > 0; number >>= 8)
        bytes[at] = static_cast<char>(number & 0xff);
    return bytes;
}

void expect_prefixes(const sorted_run& run) {
    for (std::size_t index = 0; index < run.size(); ++index)
        ASSERT_EQ(run.prefix(index), sorted_run::prefix_of(run.key(index))) << "index " << index;
}

TEST(SortedRun, FixedWidthHoldsAnEightPlusEightPairInSixteenBytes) {
    sorted_run run;
    EXPECT_TRUE(run.fixed_width());
    std::vector<std::uint64_t> numbers(64);
    for (std::size_t index = 0; index < numbers.size(); ++index)
        numbers[index] = (index * 0x9e3779b97f4a7c15ull) >> 3;
    run.reserve(numbers.size(), numbers.size() * 24);
    for (std::uint64_t number : numbers)
        run.insert(run.lower_bound(be(number)), be(number), be(~number), 0);
    ASSERT_TRUE(run.fixed_width());
    EXPECT_EQ(run.key_width(), 8u);
    EXPECT_EQ(run.value_width(), 8u);
    EXPECT_EQ(run.memory_bytes(), 64u * 16);  // reserved once, no lengths, offsets or prefixes
    EXPECT_EQ(run.packed_bytes(), 64u * 24);  // the variable layout's (and the wire's) bytes
    EXPECT_EQ(run.packed_bytes(3, 10), 7u * 24);
    std::sort(numbers.begin(), numbers.end());
    for (std::size_t index = 0; index < numbers.size(); ++index) {
        EXPECT_EQ(run.key(index), be(numbers[index]));
        EXPECT_EQ(run.value(index), be(~numbers[index]));
        EXPECT_EQ(run.fixed_entry(index), run.key(index).data());
        EXPECT_EQ(run.lower_bound(be(numbers[index])), index);
        EXPECT_EQ(run.lower_bound(be(numbers[index] + 1)), index + 1);
        EXPECT_TRUE(run.holds_at(index, be(numbers[index])));
        EXPECT_FALSE(run.holds_at(index, be(numbers[index], 9)));  // a longer key with the same prefix
        EXPECT_EQ(run.seek(be(numbers[index]), sorted_run::prefix_of(be(numbers[index])), 0), index);
    }
    expect_prefixes(run);
}

TEST(SortedRun, AnotherWidthConvertsOnceAndKeepsEverything) {
    sorted_run run;
    for (std::uint64_t number = 0; number < 10; ++number)
        run.push_back(be(number * 2), be(number, 8), number % 3 == 0 ? 100.0 + number : 0);
    ASSERT_TRUE(run.fixed_width());
    const std::size_t packed = run.packed_bytes();
    run.insert(run.lower_bound(be(0, 4)), be(0, 4), "v", 7.0);  // a 4-byte key: variable from now on
    ASSERT_FALSE(run.fixed_width());
    EXPECT_EQ(run.packed_bytes(), packed + 8 + 4 + 1);
    ASSERT_EQ(run.size(), 11u);
    EXPECT_EQ(run.key(0), be(0, 4));  // (its prefix ties with be(0)'s; it is shorter)
    EXPECT_EQ(run.value(0), "v");
    EXPECT_EQ(run.expires(0), 7.0);
    for (std::uint64_t number = 0; number < 10; ++number) {
        EXPECT_EQ(run.key(number + 1), be(number * 2));
        EXPECT_EQ(run.value(number + 1), be(number, 8));
        EXPECT_EQ(run.expires(number + 1), number % 3 == 0 ? 100.0 + number : 0);
    }
    expect_prefixes(run);
    // Erasing the odd entry keeps the variable layout; a rebuild makes it fixed again.
    run.erase(0, 1);
    EXPECT_FALSE(run.fixed_width());
    run.erase_unless([](std::size_t index) { return index != 4; });
    EXPECT_TRUE(run.fixed_width());
    EXPECT_EQ(run.size(), 9u);
    EXPECT_EQ(run.key(4), be(10));
    EXPECT_EQ(run.expires(8), 109.0);
    EXPECT_EQ(run.packed_bytes(), 9u * 24);
}

TEST(SortedRun, AssignAnotherValueWidth) {
    sorted_run one;
    one.push_back(be(1), be(1), 0);
    one.assign(0, "three", 4.0);  // the only entry: the widths change, the layout stays fixed
    EXPECT_TRUE(one.fixed_width());
    EXPECT_EQ(one.value_width(), 5u);
    EXPECT_EQ(one.value(0), "three");
    EXPECT_EQ(one.expires(0), 4.0);
    sorted_run run;
    for (std::uint64_t number = 0; number < 5; ++number)
        run.push_back(be(number), be(number), 0);
    run.assign(2, be(9), 3.0);  // same width: in place
    EXPECT_TRUE(run.fixed_width());
    EXPECT_EQ(run.value(2), be(9));
    EXPECT_EQ(run.expires(2), 3.0);
    EXPECT_EQ(run.expires(1), 0.0);
    run.set_expires(1, 2.0);
    run.assign(3, "", 0);  // another width: variable
    EXPECT_FALSE(run.fixed_width());
    ASSERT_EQ(run.size(), 5u);
    for (std::uint64_t number = 0; number < 5; ++number)
        EXPECT_EQ(run.key(number), be(number));
    EXPECT_EQ(run.value(3), "");
    EXPECT_EQ(run.value(2), be(9));
    EXPECT_EQ(run.value(4), be(4));
    EXPECT_EQ(run.expires(1), 2.0);
    EXPECT_EQ(run.expires(2), 3.0);
    EXPECT_EQ(run.expires(3), 0.0);
    run.erase(0, run.size());  // emptied: fixed again, with the next entry's widths
    EXPECT_TRUE(run.fixed_width());
    run.push_back("ab", "c", 0);
    EXPECT_TRUE(run.fixed_width());
    EXPECT_EQ(run.key_width(), 2u);
    EXPECT_EQ(run.value(0), "c");
}

TEST(SortedRun, CopiesAreDeep) {
    sorted_run run;
    run.push_back("a", "1", 0);
    run.push_back("bb", "2", 5.0);  // variable
    sorted_run copy(run);
    run.assign(0, "x", 0);
    EXPECT_EQ(copy.value(0), "1");
    EXPECT_EQ(copy.key(1), "bb");
    EXPECT_EQ(copy.expires(1), 5.0);
    EXPECT_FALSE(copy.fixed_width());
    copy = sorted_run{};
    EXPECT_TRUE(copy.empty());
    EXPECT_EQ(run.value(0), "x");
}

// The property test of the fixed-width layout: runs of one key width and one
// value width (short keys masked from 8 loaded bytes, keys under 8 bytes in
// entries under 8 bytes, keys over 8 bytes whose prefixes tie), with now and
// then an entry of another width (a conversion) or a rebuild, against a
// std::map; every lookup of the model's keys and of absent ones compared.
struct widths {
    std::size_t key, value;
};
class SortedRunFixed : public ::testing::TestWithParam<widths> {};

TEST_P(SortedRunFixed, MatchesAMap) {
    const auto [key_width, value_width] = GetParam();
    std::mt19937_64 random(key_width * 131 + value_width);
    sorted_run run;
    model_type model;
    const char alphabet[] = {0, 1, 2, '\xff'};
    auto random_key = [&](std::size_t width) {
        std::string key(width, '\0');
        for (char& c : key)
            c = alphabet[random() % 4];
        return key;
    };
    bool mixed = false;  // an entry of another width was stored since the run was last fixed
    std::size_t conversions = 0, fixed_checks = 0;
    for (int step = 0; step < 12'000; ++step) {
        const bool odd = random() % 200 == 0;
        const std::string key = random_key(odd && random() % 2 ? key_width + 1 : key_width);
        const std::string value =
            odd && key.size() == key_width ? std::string(value_width + 1, 'o') : std::string(value_width, 'a' + step % 26);
        const double expiry = random() % 5 == 0 ? static_cast<double>(step) : 0.0;
        const std::size_t at = run.lower_bound(key);
        ASSERT_EQ(at, static_cast<std::size_t>(std::distance(model.begin(), model.lower_bound(key))));
        const bool present = run.holds_at(at, key);
        ASSERT_EQ(present, model.count(key) == 1);
        const bool was_fixed = run.fixed_width();
        switch (random() % 7) {
        case 0:
        case 1:
        case 2:
            if (present)
                run.assign(at, value, expiry);
            else
                run.insert(at, key, value, expiry);
            model[key] = {value, expiry};
            if (key.size() != key_width || value.size() != value_width)
                mixed = true;
            break;
        case 3:
            if (present) {
                run.erase(at, at + 1);
                model.erase(key);
            }
            break;
        case 4: {
            const std::size_t last = std::min(run.size(), at + random() % 4);
            for (std::size_t index = at; index < last; ++index)
                model.erase(std::string(run.key(index)));
            run.erase(at, last);
            break;
        }
        case 5:
            if (present) {
                run.set_expires(at, expiry);
                model[key].second = expiry;
            }
            break;
        default:
            if (random() % 8 != 0)
                break;
            run.erase_unless([&](std::size_t index) {  // a purge: rebuilds the run
                const double expires = run.expires(index);
                return (expires == 0 || expires >= step / 2) &&
                       run.key(index).size() == key_width && run.value(index).size() == value_width;
            });
            for (auto it = model.begin(); it != model.end();)
                it = (it->second.second != 0 && it->second.second < step / 2) || it->first.size() != key_width ||
                             it->second.first.size() != value_width
                         ? model.erase(it)
                         : std::next(it);
            mixed = false;
            EXPECT_TRUE(run.fixed_width());
        }
        if (run.empty())
            mixed = false;
        if (was_fixed && !run.fixed_width())
            ++conversions;
        if (!mixed) {
            ASSERT_TRUE(run.fixed_width()) << "step " << step;
            ++fixed_checks;
        }
        if (step % 61 == 0) {
            expect_same(run, model);
            expect_prefixes(run);
            std::size_t packed = 0;
            for (const auto& [k, entry] : model)
                packed += 8 + k.size() + entry.first.size();
            ASSERT_EQ(run.packed_bytes(), packed);
        }
    }
    expect_same(run, model);
    EXPECT_GT(conversions, 0u);
    EXPECT_GT(fixed_checks, 6'000u);
}

INSTANTIATE_TEST_SUITE_P(Widths, SortedRunFixed,
                         ::testing::Values(widths{8, 8}, widths{8, 0}, widths{4, 4}, widths{3, 1}, widths{1, 2},
                                           widths{6, 8}, widths{12, 4}, widths{16, 8}),
                         [](const ::testing::TestParamInfo<widths>& info) {
                             return "key" + std::to_string(info.param.key) + "_value" +
                                    std::to_string(info.param.value);
                         });

}  // namespace
