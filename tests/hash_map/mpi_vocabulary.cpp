// One vocabulary (issue 16, item 5): every container offers num_ranks(),
// flush(), local_for_each(f) (this rank's part, no communication) and the
// collective for_all(f) (flush, then local_for_each on every rank), and
// for_all visits every entry exactly once over the job, by its owner.  Each
// rank inserts its own keys with the fire-and-forget form and calls for_all
// at once, without a flush of its own: for_all must flush first, or entries
// still in flight would be missed.  The collectives gather, gather_all,
// gather_topk and reduce give the same results in hash_map, linear_hash_map and
// skiplist_map.
//
// Then the contracts of docs/architecture.md, "Contracts" (issue 40, item 4),
// one typed check over the four containers (contract::check_contract below).

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <type_traits>
#include <utility>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/rma_hash_set.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

constexpr std::uint64_t keys_per_rank = 500;

std::uint64_t key_of(int rank, std::uint64_t index) { return static_cast<std::uint64_t>(rank) * 100000 + index; }

// Sums over ranks: the count of entries visited and the sum of their keys and values.
struct tally {
    std::int64_t entries = 0;
    std::int64_t key_sum = 0;
    std::int64_t value_sum = 0;
};

tally reduce(const tally& mine) {
    std::array<std::int64_t, 3> in{mine.entries, mine.key_sum, mine.value_sum}, out{};
    MPI_Allreduce(in.data(), out.data(), 3, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return {out[0], out[1], out[2]};
}

void expect_everything(const tally& seen, int size, const char* container) {
    const tally all = reduce(seen);
    std::int64_t keys = 0, values = 0;
    for (int rank = 0; rank < size; ++rank)
        for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
            keys += static_cast<std::int64_t>(key_of(rank, index));
            values += static_cast<std::int64_t>(2 * key_of(rank, index) + 1);
        }
    const bool ok = all.entries == static_cast<std::int64_t>(keys_per_rank) * size && all.key_sum == keys &&
                    all.value_sum == values;
    if (!ok)
        std::fprintf(stderr, "%s: for_all saw %lld entries (expected %lld)\n", container,
                     static_cast<long long>(all.entries), static_cast<long long>(keys_per_rank) * size);
    MPIDICT_CHECK_MSG(ok, container);
}

// gather, gather_all, gather_topk and reduce: the same calls and results in
// every message-based container holding key_of(r, i) -> 2 * key + 1.
template <class Map>
void check_collectives(Map& map, int rank, int size, const char* container) {
    using pair = std::pair<std::uint64_t, std::uint64_t>;
    const std::size_t total = keys_per_rank * static_cast<std::size_t>(size);
    std::vector<pair> all = map.gather_all();
    std::sort(all.begin(), all.end());
    bool ok = all.size() == total;
    for (std::size_t i = 0; ok && i < all.size(); ++i)
        ok = all[i].first == key_of(static_cast<int>(i / keys_per_rank), i % keys_per_rank) &&
             all[i].second == 2 * all[i].first + 1;
    MPIDICT_CHECK_MSG(ok, std::string(container) + " gather_all");
    const std::vector<pair> at_root = map.gather(size - 1);
    MPIDICT_CHECK_MSG(at_root.size() == (rank == size - 1 ? total : 0), std::string(container) + " gather");
    const std::vector<pair> top = map.gather_topk(3, [](const pair& a, const pair& b) { return a.second > b.second; });
    const std::uint64_t last = key_of(size - 1, keys_per_rank - 1);
    MPIDICT_CHECK_MSG(top == (std::vector<pair>{{last, 2 * last + 1}, {last - 1, 2 * last - 1}, {last - 2, 2 * last - 3}}),
                      std::string(container) + " gather_topk");
    std::uint64_t sum = 0;
    for (const pair& entry : all)
        sum += entry.second;
    MPIDICT_CHECK_MSG(map.reduce(std::plus<>()) == sum, std::string(container) + " reduce");
    bool refused = false;
    try {
        (void)map.gather(size);
    } catch (const mpidict::invalid_argument_error&) {
        refused = true;  // on every rank: the same bad root everywhere
    }
    MPIDICT_CHECK_MSG(refused, std::string(container) + " gather(bad root)");
}

}  // namespace

// ---- One contract, typed over the four containers ---------------------------
// docs/architecture.md, "Contracts" (issue 40, item 4).  Each kind below says how
// its container spells the contract's calls; check_contract<Kind> runs the same
// checks on every one:
//   insert_many blocks and returns an insert_many_result (stored, replaced,
//     refused); a repeated key is applied after its first pair;
//   find_many blocks and calls on_result(index, result) exactly once per key,
//     on the calling rank (order: not promised; the index says which key);
//   erase and contains are requests (request<bool>; hash_map::erase is
//     request<std::size_t>, the values removed);
//   a capacity refusal is a result, never an exception: stored + refused is
//     every pair, refused_indexes names the refused ones (absent after), and
//     what the results say was stored is what the container holds;
//   this rank's counters are <container>_local_statistics where there are any.
namespace contract {

using u64 = std::uint64_t;
u64 value_of(u64 key) { return 3 * key + 1; }
std::vector<u64> values_of(std::span<const u64> keys) {
    std::vector<u64> values;
    for (u64 key : keys)
        values.push_back(value_of(key));
    return values;
}

struct hash_map_kind {
    static constexpr const char* name = "hash_map";
    using type = mpidict::hash_map<u64, u64>;
    static constexpr bool single_valued = false;  // insert appends a value
    static constexpr bool has_erase = true;
    static constexpr bool has_contains = true;
    static constexpr bool capacity_is_a_result = true;
    static std::unique_ptr<type> make(std::size_t room, int) {  // room: entries per rank, 0: no limit
        mpidict::hash_map_config config;
        config.capacity_values = room;
        return std::make_unique<type>(MPI_COMM_WORLD, config);
    }
    static mpidict::insert_many_result insert_many(type& c, std::span<const u64> keys) {
        const std::vector<u64> values = values_of(keys);
        return c.insert_many(keys, std::span<const u64>(values));
    }
    template <class F>
    static void find_many(type& c, std::span<const u64> keys, F&& on_result) {
        c.find_many(keys, 1, [&](std::size_t index, std::span<const u64> values) {
            on_result(index, values.empty() ? std::optional<u64>() : std::optional<u64>(values[0]));
        });
    }
    static bool erase(type& c, u64 key) {
        static_assert(std::is_same_v<decltype(c.erase(key)), mpidict::request<std::size_t>>);
        return c.erase(key).get() > 0;
    }
    static bool contains(type& c, u64 key) {
        static_assert(std::is_same_v<decltype(c.contains(key)), mpidict::request<bool>>);
        return c.contains(key).get();
    }
    static u64 held(type& c) { return c.global_size(); }
};

struct linear_hash_map_kind {
    static constexpr const char* name = "linear_hash_map";
    using type = mpidict::linear_hash_map<u64, u64>;
    static constexpr bool single_valued = true;
    static constexpr bool has_erase = true;
    static constexpr bool has_contains = true;
    static constexpr bool capacity_is_a_result = true;
    static std::unique_ptr<type> make(std::size_t room, int size) {
        mpidict::linear_hash_map_config config;
        if (room != 0) {  // every rank a server from the start (no split), a few dozen entries each
            config.initial_servers = static_cast<std::size_t>(size);
            config.server_capacity_bytes = 32 * room;
        }
        return std::make_unique<type>(MPI_COMM_WORLD, config);
    }
    static mpidict::insert_many_result insert_many(type& c, std::span<const u64> keys) {
        const std::vector<u64> values = values_of(keys);
        return c.insert_many(keys, std::span<const u64>(values));
    }
    template <class F>
    static void find_many(type& c, std::span<const u64> keys, F&& on_result) {
        c.find_many(keys, [&](std::size_t index, const std::optional<u64>& value) { on_result(index, value); });
    }
    static bool erase(type& c, u64 key) {
        static_assert(std::is_same_v<decltype(c.erase(key)), mpidict::request<bool>>);
        return c.erase(key).get();
    }
    static bool contains(type& c, u64 key) {
        static_assert(std::is_same_v<decltype(c.contains(key)), mpidict::request<bool>>);
        return c.contains(key).get();
    }
    static u64 held(type& c) { return c.global_size(); }
    static_assert(std::is_same_v<decltype(std::declval<type&>().local_statistics()),
                                 mpidict::linear_hash_map_local_statistics>);
};

struct skiplist_map_kind {
    static constexpr const char* name = "skiplist_map";
    using type = mpidict::skiplist_map<u64, u64>;
    static constexpr bool single_valued = true;
    static constexpr bool has_erase = true;
    static constexpr bool has_contains = false;
    static constexpr bool capacity_is_a_result = true;  // list_full: a result since issue 40
    static std::unique_ptr<type> make(std::size_t room, int) {
        mpidict::skiplist_map_config config;
        if (room != 0) {
            config.granularity = 4;
            config.node_slots_per_rank = 4;
        }
        return std::make_unique<type>(MPI_COMM_WORLD, config);
    }
    static mpidict::insert_many_result insert_many(type& c, std::span<const u64> keys) {
        const std::vector<u64> values = values_of(keys);
        return c.insert_many(keys, std::span<const u64>(values));
    }
    template <class F>
    static void find_many(type& c, std::span<const u64> keys, F&& on_result) {
        c.find_many(keys, [&](std::size_t index, const std::optional<u64>& value) { on_result(index, value); });
    }
    static bool erase(type& c, u64 key) {
        static_assert(std::is_same_v<decltype(c.erase(key)), mpidict::request<bool>>);
        return c.erase(key).get();
    }
    static bool contains(type&, u64) { return false; }
    static u64 held(type& c) { return c.global_size(); }
};

struct rma_hash_set_kind {
    static constexpr const char* name = "rma_hash_set";
    using type = mpidict::rma_hash_set<u64>;
    static constexpr bool single_valued = true;  // an object present: "replaced" (nothing to replace)
    static constexpr bool has_erase = false;
    static constexpr bool has_contains = true;
    static constexpr bool capacity_is_a_result = true;
    static std::unique_ptr<type> make(std::size_t room, int) {
        mpidict::rma_hash_set_config config;
        config.slots_per_rank = room != 0 ? room : 4096;
        return std::make_unique<type>(MPI_COMM_WORLD, config);
    }
    // A set stores the key itself: "its value" is the key.
    static mpidict::insert_many_result insert_many(type& c, std::span<const u64> keys) { return c.insert_many(keys); }
    template <class F>
    static void find_many(type& c, std::span<const u64> keys, F&& on_result) {
        c.find_many(keys, [&](std::size_t index, bool present) {
            on_result(index, present ? std::optional<u64>(value_of(keys[index])) : std::nullopt);
        });
    }
    static bool erase(type&, u64) { return false; }
    static bool contains(type& c, u64 key) {
        static_assert(std::is_convertible_v<decltype(c.contains(key)), mpidict::request<bool>>);
        return c.contains(key).get();
    }
    static u64 held(type& c) { return c.global_size(); }
    static_assert(std::is_same_v<std::remove_cvref_t<decltype(std::declval<type&>().local_statistics())>,
                                 mpidict::rma_hash_set_local_statistics>);
};

u64 sum_over_ranks(u64 mine) {
    u64 total = 0;
    MPI_Allreduce(&mine, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

template <class Kind>
void check_contract(int rank, int size) {
    const std::string name = Kind::name;
    {
        auto container = Kind::make(0, size);
        auto& c = *container;
        std::vector<u64> keys;
        for (u64 index = 0; index < 200; ++index)
            keys.push_back(key_of(rank, 20000 + index));
        keys.push_back(keys.front());  // a repeated key: applied after its first pair
        const mpidict::insert_many_result stored = Kind::insert_many(c, keys);
        const std::size_t replaced = Kind::single_valued ? 1 : 0;
        MPIDICT_CHECK_MSG(stored.stored == keys.size() && stored.replaced == replaced && stored.refused == 0 &&
                              stored.complete() && stored.added() == keys.size() - replaced,
                          name + " insert_many: stored " + std::to_string(stored.stored) + ", replaced " +
                              std::to_string(stored.replaced) + ", refused " + std::to_string(stored.refused));
        // Every key answered exactly once; absent keys (another rank's range) too.
        std::vector<u64> probe = keys;
        for (u64 index = 0; index < 50; ++index)
            probe.push_back(key_of((rank + 1) % size, 20300 + index));
        std::vector<int> answers(probe.size(), 0);
        bool right = true;
        bool here = true;
        Kind::find_many(c, probe, [&](std::size_t index, const std::optional<u64>& value) {
            here = here && index < probe.size();
            if (index >= probe.size())
                return;
            ++answers[index];
            right = right && (index < keys.size() ? value == std::optional<u64>(value_of(probe[index]))
                                                  : !value.has_value());
        });
        MPIDICT_CHECK_MSG(here && std::all_of(answers.begin(), answers.end(), [](int n) { return n == 1; }),
                          name + " find_many: every key answered exactly once");
        MPIDICT_CHECK_MSG(right, name + " find_many: the right answers");
        if constexpr (Kind::has_contains)
            MPIDICT_CHECK_MSG(Kind::contains(c, keys[1]) && !Kind::contains(c, probe.back()), name + " contains");
        if constexpr (Kind::has_erase) {
            MPIDICT_CHECK_MSG(Kind::erase(c, keys[1]) && !Kind::erase(c, keys[1]), name + " erase: true, then false");
            if constexpr (Kind::has_contains)
                MPIDICT_CHECK_MSG(!Kind::contains(c, keys[1]), name + " contains after erase");
        }
        c.flush();
        c.destroy();
    }
    {
        // Capacity: a few dozen entries per rank, five hundred offered by each.
        auto container = Kind::make(32, size);
        auto& c = *container;
        std::vector<u64> keys;
        for (u64 index = 0; index < 500; ++index)
            keys.push_back(key_of(rank, index));
        static_assert(Kind::capacity_is_a_result, "every container reports a capacity refusal in its result");
        const mpidict::insert_many_result result = Kind::insert_many(c, keys);
        MPIDICT_CHECK_MSG(result.stored + result.refused == keys.size() && result.replaced == 0,
                          name + " at capacity: every pair answered");
        MPIDICT_CHECK_MSG(result.refused_indexes.size() == result.refused &&
                              std::is_sorted(result.refused_indexes.begin(), result.refused_indexes.end()) &&
                              (result.refused_indexes.empty() || result.refused_indexes.back() < keys.size()),
                          name + " at capacity: refused_indexes name the refused pairs, ascending");
        // What the indexes say was refused is absent; everything else is there.
        std::size_t disagree = 0;
        Kind::find_many(c, keys, [&](std::size_t index, const std::optional<u64>& value) {
            const bool refused =
                std::binary_search(result.refused_indexes.begin(), result.refused_indexes.end(), index);
            disagree += value.has_value() == refused ? 1 : 0;
        });
        MPIDICT_CHECK_MSG(disagree == 0, name + " at capacity: " + std::to_string(disagree) +
                                             " keys disagree with refused_indexes");
        c.flush();  // before an MPI collective of the test's own: others may still need answers
        MPIDICT_CHECK_MSG(sum_over_ranks(result.refused) > 0 && result.complete() == (result.refused == 0),
                          name + " at capacity: refusals reported");
        MPIDICT_CHECK_MSG(Kind::held(c) == sum_over_ranks(result.stored),
                          name + " at capacity: what the results say was stored is what is there");
        c.destroy();
    }
}

}  // namespace contract

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(120), "mpi_vocabulary");

        {
            mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD);
            MPIDICT_CHECK(map.num_ranks() == size);
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                map.async_insert(key_of(rank, index), 2 * key_of(rank, index) + 1);
            tally seen;
            map.for_all([&](const std::uint64_t& key, const auto& values) {
                MPIDICT_CHECK(map.owner(key) == rank);
                for (std::uint64_t value : values) {
                    ++seen.entries;
                    seen.key_sum += static_cast<std::int64_t>(key);
                    seen.value_sum += static_cast<std::int64_t>(value);
                }
            });
            expect_everything(seen, size, "hash_map");
            check_collectives(map, rank, size, "hash_map");
            map.destroy();
        }
        {
            mpidict::linear_hash_map_config config;
            config.split_load = 0.5;
            config.server_capacity_bytes = 16 << 10;  // splits happen while the keys arrive
            mpidict::linear_hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
            MPIDICT_CHECK(map.num_ranks() == size);
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                map.async_insert(key_of(rank, index), 2 * key_of(rank, index) + 1);
            tally seen;
            map.for_all([&](const std::uint64_t& key, const std::uint64_t& value) {
                ++seen.entries;
                seen.key_sum += static_cast<std::int64_t>(key);
                seen.value_sum += static_cast<std::int64_t>(value);
            });
            MPIDICT_CHECK(map.async_rejected() == 0);
            expect_everything(seen, size, "linear_hash_map");
            MPIDICT_CHECK(map.global_size() == keys_per_rank * static_cast<std::uint64_t>(size));
            check_collectives(map, rank, size, "linear_hash_map");
            map.destroy();
        }
        {
            mpidict::skiplist_map<std::uint64_t, std::uint64_t> list(MPI_COMM_WORLD);
            MPIDICT_CHECK(list.num_ranks() == size);
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                list.async_insert(key_of(rank, index), 2 * key_of(rank, index) + 1);
            tally seen;
            list.for_all([&](const std::uint64_t& key, const std::uint64_t& value) {
                ++seen.entries;
                seen.key_sum += static_cast<std::int64_t>(key);
                seen.value_sum += static_cast<std::int64_t>(value);
            });
            expect_everything(seen, size, "skiplist_map");
            std::size_t local = 0;
            list.local_for_each([&](const std::uint64_t&, const std::uint64_t&) { ++local; });
            MPIDICT_CHECK(local == list.local_size());
            check_collectives(list, rank, size, "skiplist_map");
            list.destroy();
        }
        {
            struct object {
                std::uint64_t key;
                std::uint64_t value;
            };
            mpidict::rma_hash_set_config config;
            config.slots_per_rank = 4 * keys_per_rank;
            mpidict::rma_hash_set<object> set(MPI_COMM_WORLD, config);
            MPIDICT_CHECK(set.num_ranks() == size);
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                MPIDICT_CHECK(set.insert_if_absent(object{key_of(rank, index), 2 * key_of(rank, index) + 1}).get());
            static_assert(std::is_convertible_v<decltype(set.contains(object{})), mpidict::request<bool>>,
                          "contains returns request<bool>");
            MPIDICT_CHECK(set.contains(object{key_of(rank, 0), 2 * key_of(rank, 0) + 1}).get());
            const mpidict::replace_result again = set.insert(object{key_of(rank, 0), 2 * key_of(rank, 0) + 1}).get();
            MPIDICT_CHECK_MSG(again.stored && again.replaced, "rma_hash_set insert of a present object");
            tally seen;
            set.for_all([&](const object& stored) {
                ++seen.entries;
                seen.key_sum += static_cast<std::int64_t>(stored.key);
                seen.value_sum += static_cast<std::int64_t>(stored.value);
            });
            expect_everything(seen, size, "rma_hash_set");
            set.flush();
            set.destroy();
        }
        contract::check_contract<contract::hash_map_kind>(rank, size);
        contract::check_contract<contract::linear_hash_map_kind>(rank, size);
        contract::check_contract<contract::skiplist_map_kind>(rank, size);
        contract::check_contract<contract::rma_hash_set_kind>(rank, size);
    });
}
