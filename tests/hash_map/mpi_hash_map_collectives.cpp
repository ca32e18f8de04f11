// The collective conveniences: gather to one rank and to all, gather_topk,
// reduce over every value, count / contains, clear; each against a model.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::int64_t>;
using pair = std::pair<std::uint64_t, std::int64_t>;

// Keys 0..n-1; key k holds k % 3 + 1 values k*10, k*10+1, ...; every rank inserts its share.
constexpr std::uint64_t key_count = 200;

std::vector<pair> model() {
    std::vector<pair> pairs;
    for (std::uint64_t key = 0; key < key_count; ++key)
        for (std::uint64_t i = 0; i <= key % 3; ++i)
            pairs.emplace_back(key, static_cast<std::int64_t>(key * 10 + i));
    return pairs;
}

void fill(map_type& map, int rank, int size) {
    for (std::uint64_t key = static_cast<std::uint64_t>(rank); key < key_count; key += static_cast<std::uint64_t>(size))
        for (std::uint64_t i = 0; i <= key % 3; ++i)
            map.async_insert(key, static_cast<std::int64_t>(key * 10 + i));
    map.flush();
}

void gathers(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    fill(map, rank, size);
    const std::vector<pair> expected = model();
    for (int root = 0; root < size; ++root) {
        std::vector<pair> got = map.gather(root);
        if (rank != root) {
            MPIDICT_CHECK(got.empty());
            continue;
        }
        // A key's values keep their order; keys come in any order.
        std::stable_sort(got.begin(), got.end(), [](const pair& a, const pair& b) { return a.first < b.first; });
        MPIDICT_CHECK_MSG(got == expected, "gather to " + std::to_string(root) + ": " + std::to_string(got.size()));
    }
    std::vector<pair> everywhere = map.gather_all();
    std::stable_sort(everywhere.begin(), everywhere.end(), [](const pair& a, const pair& b) { return a.first < b.first; });
    MPIDICT_CHECK(everywhere == expected);

    // Top 5 values, larger first; ties impossible here.  Then a top-k with
    // ties (by key % 7), which must still be the same on every rank.
    const auto larger = [](const pair& a, const pair& b) { return a.second > b.second; };
    std::vector<pair> sorted = expected;
    std::sort(sorted.begin(), sorted.end(), larger);
    sorted.resize(5);
    MPIDICT_CHECK(map.gather_topk(5, larger) == sorted);
    MPIDICT_CHECK(map.gather_topk(0, larger).empty());
    MPIDICT_CHECK(map.gather_topk(100000, larger).size() == expected.size());
    const std::vector<pair> tied = map.gather_topk(7, [](const pair& a, const pair& b) { return a.first % 7 < b.first % 7; });
    MPIDICT_CHECK(tied.size() == 7);
    for (const pair& entry : tied)
        MPIDICT_CHECK(entry.first % 7 == 0);
    std::vector<std::uint64_t> mine;
    for (const pair& entry : tied)
        mine.push_back(entry.first);
    std::vector<std::uint64_t> first(mine.size());
    if (rank == 0)
        first = mine;
    MPI_Bcast(first.data(), static_cast<int>(first.size()), MPI_UINT64_T, 0, MPI_COMM_WORLD);
    MPIDICT_CHECK(first == mine);

    // reduce over every value.
    std::int64_t sum = 0;
    std::int64_t most = 0;
    for (const pair& entry : expected) {
        sum += entry.second;
        most = std::max(most, entry.second);
    }
    MPIDICT_CHECK(map.reduce(std::plus<>()) == sum);
    MPIDICT_CHECK(map.reduce([](std::int64_t a, std::int64_t b) { return std::max(a, b); }) == most);

    // The shard as ranges: the same keys and values as local_for_each.
    std::vector<pair> walked;
    std::vector<pair> viewed;
    map.local_for_each([&](std::uint64_t key, const map_type::values_view& values) {
        for (std::int64_t value : values)
            walked.emplace_back(key, value);
    });
    for (const auto& [key, values] : map.local_table())
        for (std::int64_t value : values)
            viewed.emplace_back(key, value);
    MPIDICT_CHECK(walked == viewed);
    std::size_t keys_seen = 0;
    std::size_t values_seen = 0;
    for (std::uint64_t key : map.local_keys())
        keys_seen += map.owner(key) == rank ? 1 : 0;
    for (const auto& values : map.local_values())
        values_seen += values.size();
    MPIDICT_CHECK(keys_seen == map.local_size() && values_seen == map.local_value_count());

    // count and contains, at the owner, in order with this rank's own operations.
    MPIDICT_CHECK(map.count(5).get() == 3u);
    MPIDICT_CHECK(map.count(3).get() == 1u);
    MPIDICT_CHECK(map.count(key_count + 1).get() == 0u);
    MPIDICT_CHECK(map.contains(4).get());
    MPIDICT_CHECK(!map.contains(key_count + 1).get());
    const std::uint64_t fresh = 1000000 + static_cast<std::uint64_t>(rank);
    map.async_insert(fresh, 1);
    MPIDICT_CHECK(map.contains(fresh).get());
    map.async_erase(fresh);
    MPIDICT_CHECK(map.count(fresh).get() == 0u);

    // clear: empty everywhere, and usable at once.
    map.clear();
    MPIDICT_CHECK(map.local_size() == 0 && map.local_payload_bytes() == 0);
    MPIDICT_CHECK(map.global_size() == 0);
    MPIDICT_CHECK(!map.reduce(std::plus<>()).has_value());
    MPIDICT_CHECK(map.gather_all().empty());
    map.async_insert(static_cast<std::uint64_t>(rank), 5);
    map.flush();
    MPIDICT_CHECK(map.global_size() == static_cast<std::size_t>(size));
    map.destroy();
}

void strings(int rank, int size) {
    mpidict::hash_map<std::string, std::string> map(MPI_COMM_WORLD);
    map.async_insert("rank" + std::to_string(rank), std::string(static_cast<std::size_t>(rank) + 1, 'x'));
    map.flush();
    auto all = map.gather_all();
    std::sort(all.begin(), all.end());
    MPIDICT_CHECK(all.size() == static_cast<std::size_t>(size));
    for (int r = 0; r < size; ++r)
        MPIDICT_CHECK(all[static_cast<std::size_t>(r)] ==
                      std::make_pair("rank" + std::to_string(r), std::string(static_cast<std::size_t>(r) + 1, 'x')));
    const auto longest = map.reduce([](const std::string& a, const std::string& b) { return a.size() >= b.size() ? a : b; });
    MPIDICT_CHECK(longest && longest->size() == static_cast<std::size_t>(size));
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_collectives");
        gathers(rank, size);
        strings(rank, size);
    });
}
