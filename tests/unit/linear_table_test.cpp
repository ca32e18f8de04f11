// linear_table: the local linear-hashing (LH) table of an LH*LH server.
// Differential against std::map under random upserts and erases (growth one
// bucket at a time, through several levels), the bucket invariant after every
// step, payload accounting, and the global-split protocol: shipping every odd
// bucket (in message-sized pieces) to a second table and keeping the even ones
// renumbered leaves each key on exactly the side LH* addresses it to.

#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "mpidict/local/hash.hpp"
#include "mpidict/local/linear_table.hpp"

namespace {

using mpidict::local::linear_table;

std::uint64_t next_random(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::uint64_t hash_of(const std::string& key) { return mpidict::hash_bytes(key.data(), key.size()); }

void check_invariants(const linear_table& table, const std::map<std::string, std::string>& model) {
    ASSERT_EQ(table.bucket_count(), (std::size_t{1} << table.level()) + table.next());
    ASSERT_LT(table.next(), std::size_t{1} << table.level());
    std::size_t entries = 0, payload = 0;
    for (std::size_t b = 0; b < table.bucket_count(); ++b) {
        for (const auto& e : table.bucket_at(b)) {
            ASSERT_EQ(table.bucket_of(e.hash), b);
            const auto it = model.find(std::string(e.key()));
            ASSERT_NE(it, model.end());
            ASSERT_EQ(it->second, e.value());
            ++entries;
            payload += e.payload_bytes();
        }
    }
    ASSERT_EQ(entries, model.size());
    ASSERT_EQ(table.size(), model.size());
    ASSERT_EQ(table.payload_bytes(), payload);
}

TEST(LinearTable, DifferentialAgainstMap) {
    for (std::uint64_t divisor : {1ull, 3ull, 8ull}) {
        linear_table table(divisor, 4);
        std::map<std::string, std::string> model;
        std::uint64_t state = divisor;
        for (int step = 0; step < 20000; ++step) {
            const std::string key = std::string("k") + std::to_string(next_random(state) % 3000);
            const auto kind = next_random(state) % 4;
            if (kind < 2) {
                const std::string value(next_random(state) % 40, static_cast<char>('a' + step % 26));
                bool replaced = false;
                std::int64_t delta = 0;
                const std::size_t before = table.payload_bytes();
                table.upsert(hash_of(key), key, value, replaced, delta);
                ASSERT_EQ(replaced, model.count(key) == 1);
                ASSERT_EQ(static_cast<std::int64_t>(table.payload_bytes()) - static_cast<std::int64_t>(before), delta);
                model[key] = value;
            } else if (kind == 2) {
                const auto freed = table.erase(hash_of(key), key);
                const auto it = model.find(key);
                ASSERT_EQ(freed >= 0, it != model.end());
                if (it != model.end()) {
                    ASSERT_EQ(static_cast<std::size_t>(freed), key.size() + it->second.size());
                    model.erase(it);
                }
            } else {
                const auto* found = table.find(hash_of(key), key);
                const auto it = model.find(key);
                ASSERT_EQ(found != nullptr, it != model.end());
                if (found) {
                    ASSERT_EQ(found->value(), it->second);
                }
            }
            if (step % 1000 == 0)
                check_invariants(table, model);
        }
        check_invariants(table, model);
        EXPECT_GT(table.level(), 5u);  // it grew through several levels
    }
}

TEST(LinearTable, GlobalSplitShipsOddBucketsKeepsEven) {
    // Server at level j of a file with N = 3 starting buckets: divisor 3*2^j.
    for (unsigned j : {0u, 2u}) {
        const std::uint64_t divisor = 3ull << j;
        for (std::size_t keys : {0, 1, 7, 500, 4000}) {
            linear_table table(divisor, 8);
            std::map<std::string, std::string> model;
            std::uint64_t state = keys + j;
            for (std::size_t index = 0; index < keys; ++index) {
                const std::string key = std::string("w") + std::to_string(next_random(state));
                const std::string value(next_random(state) % 100, 'v');
                bool replaced = false;
                std::int64_t delta = 0;
                table.upsert(hash_of(key), key, value, replaced, delta);
                model[key] = value;
            }
            table.ensure_splittable();
            table.set_frozen(true);
            linear_table shipped_to(divisor * 2, 8);
            std::map<std::string, std::string> kept_model, shipped_model;
            for (const auto& [key, value] : model)
                (((hash_of(key) / divisor) & 1) ? shipped_model : kept_model)[key] = value;
            // Ship odd buckets in pieces of at most 300 bytes, as the server does.
            for (std::size_t b = 1; b < table.bucket_count(); b += 2) {
                while (!table.bucket_at(b).empty()) {
                    std::size_t budget = 300;
                    table.drain_bucket(b, budget, 16, [&](linear_table::entry&& e) {
                        ASSERT_EQ((e.hash / divisor) & 1, 1u);
                        shipped_to.adopt(std::move(e));
                    });
                }
            }
            table.keep_even_buckets();
            table.set_frozen(false);
            EXPECT_EQ(table.divisor(), divisor * 2);
            check_invariants(table, kept_model);
            check_invariants(shipped_to, shipped_model);
            // Both sides keep working after the split.
            bool replaced = false;
            std::int64_t delta = 0;
            for (int extra = 0; extra < 200; ++extra) {
                const std::string key = std::string("x") + std::to_string(extra);
                auto& side_model = ((hash_of(key) / divisor) & 1) ? shipped_model : kept_model;
                auto& side = ((hash_of(key) / divisor) & 1) ? shipped_to : table;
                side.upsert(hash_of(key), key, "new", replaced, delta);
                side_model[key] = "new";
            }
            check_invariants(table, kept_model);
            check_invariants(shipped_to, shipped_model);
        }
    }
}

TEST(LinearTable, FrozenTableDoesNotGrowUntilThawed) {
    linear_table table(1, 2);
    table.set_frozen(true);
    bool replaced = false;
    std::int64_t delta = 0;
    for (int key = 0; key < 100; ++key) {
        const std::string name = std::to_string(key);
        table.upsert(hash_of(name), name, "v", replaced, delta);
    }
    EXPECT_EQ(table.bucket_count(), 2u);
    table.set_frozen(false);
    EXPECT_GE(table.bucket_count(), 50u);
    for (int key = 0; key < 100; ++key) {
        const std::string name = std::to_string(key);
        EXPECT_NE(table.find(hash_of(name), name), nullptr);
    }
}

}  // namespace
