// skiplist_map's packed sorted run (detail/sorted_run.hpp) against a
// std::map model: random inserts, replacements (same and other value sizes),
// erases of single entries and ranges, expiries and purges.

#include <gtest/gtest.h>

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

}  // namespace
