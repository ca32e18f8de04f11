// "Latest N" at 1-4 ranks in every consistency mode (issue 49, item 2):
// descending ranges with a limit (range, range_from, the open-end flags,
// floor lookups, streaming, paging down with before_hi) and descending
// pattern queries (std::array keys) against a model, every rank querying at
// once; and that outside total_order the walk from hi down stops at the limit:
// latest-5 over the whole list is answered by a few nodes, not all of them
// (range parts counted over the ranks).

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using mode_type = mpidict::skiplist_consistency;

const char* name_of(mode_type mode) {
    return mode == mode_type::total_order ? "total_order" : mode == mode_type::sequential ? "sequential" : "none";
}

std::int64_t total(std::int64_t mine) {
    std::int64_t sum = 0;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return sum;
}

// Range parts sent by every rank's nodes while `query` runs (collective).
template <class Map, class Query>
std::int64_t parts_of(Map& map, Query&& query) {
    map.flush();
    const auto before = total(static_cast<std::int64_t>(map.local_statistics().range_parts));
    query();
    map.flush();
    return total(static_cast<std::int64_t>(map.local_statistics().range_parts)) - before;
}

void ranges(int rank, int size, mode_type mode) {
    using key_type = std::int64_t;
    mpidict::skiplist_map_config config;
    config.granularity = 8;
    config.consistency = mode;
    mpidict::skiplist_map<key_type, key_type> map(MPI_COMM_WORLD, config);
    const int per_rank = 300;
    std::map<key_type, key_type> model;
    std::vector<key_type> keys, values;
    for (int i = 0; i < per_rank * size; ++i) {
        const key_type key = 3 * i - 450;  // gaps between keys; negative keys too
        model[key] = key * 7;
        if (i % size == rank) {
            keys.push_back(key);
            values.push_back(key * 7);
        }
    }
    (void)map.insert_many(std::span<const key_type>(keys), std::span<const key_type>(values));
    map.flush();
    const key_type lowest = model.begin()->first, highest = model.rbegin()->first;
    const std::string where = std::string(" (") + name_of(mode) + ", " + std::to_string(size) + " ranks)";
    using entries = std::vector<std::pair<key_type, key_type>>;
    // The model's answer: entries of [lo, hi] (with the open-end flags), largest first.
    auto expect = [&](key_type lo, std::optional<key_type> hi, mpidict::range_options options) {
        entries out;
        for (auto it = model.rbegin(); it != model.rend(); ++it) {
            if (options.limit != 0 && out.size() == options.limit)
                break;
            const key_type key = it->first;
            if (hi && (key > *hi || (options.before_hi && key == *hi)))
                continue;
            if (key < lo || (options.after_lo && key == lo))
                break;
            out.emplace_back(key, it->second);
        }
        return out;
    };
    std::mt19937_64 random(49 + static_cast<unsigned>(rank) * 7919 + static_cast<unsigned>(mode) * 104729);
    auto draw = [&](key_type from, key_type to) { return std::uniform_int_distribution<key_type>(from, to)(random); };
    const std::uint64_t limits[] = {1, 2, 3, 5, 10, 37, 0};
    for (int round = 0; round < 40; ++round) {
        key_type lo = draw(lowest - 10, highest + 10), hi = draw(lowest - 10, highest + 10);
        if (lo > hi)
            std::swap(lo, hi);
        mpidict::range_options options{.limit = limits[round % 7], .descending = true};
        options.after_lo = round % 5 == 1;
        options.before_hi = round % 3 == 2;
        const std::string query = "range(" + std::to_string(lo) + ", " + std::to_string(hi) + ", limit " +
                                  std::to_string(options.limit) + (options.after_lo ? ", after_lo" : "") +
                                  (options.before_hi ? ", before_hi" : "") + ")" + where;
        const entries got = map.range(lo, hi, options).get();
        const entries expected = expect(lo, hi, options);
        MPIDICT_CHECK_MSG(got == expected, query + ": " + std::to_string(got.size()) + " entries, expected " +
                                               std::to_string(expected.size()));
        // Streaming: the same entries, largest first, to a callback.
        entries streamed;
        const std::size_t count =
            map.range(lo, hi, [&](const key_type& key, const key_type& value) { streamed.emplace_back(key, value); },
                      options);
        MPIDICT_CHECK_MSG(streamed == expected && count == expected.size(), "streaming " + query);
        // range_from: to the end of the list.
        mpidict::range_options from_options{.limit = options.limit, .descending = true, .after_lo = options.after_lo};
        MPIDICT_CHECK_MSG(map.range_from(lo, from_options).get() == expect(lo, std::nullopt, from_options),
                          "range_from " + query);
        // A floor lookup: the largest key <= x.
        const key_type x = draw(lowest - 10, highest + 10);
        const entries floor = map.range(lowest - 100, x, {.limit = 1, .descending = true}).get();
        const entries floor_expected = expect(lowest - 100, x, {.limit = 1});
        MPIDICT_CHECK_MSG(floor == floor_expected, "floor of " + std::to_string(x) + where);
    }
    // Paging down the whole list with before_hi.
    entries paged;
    entries page = map.range(lowest, highest, {.limit = 7, .descending = true}).get();
    while (!page.empty()) {
        paged.insert(paged.end(), page.begin(), page.end());
        page = map.range(lowest, page.back().first, {.limit = 7, .descending = true, .before_hi = true}).get();
    }
    MPIDICT_CHECK_MSG(paged == expect(lowest, highest, {}), "paging down" + where + ": " + std::to_string(paged.size()) +
                                                               " entries, expected " + std::to_string(model.size()));
    // The walk stops at the limit: only rank 0 queries, the others wait.
    const auto latest = parts_of(map, [&] {
        if (rank == 0)
            MPIDICT_CHECK(map.range_from(lowest, {.limit = 5, .descending = true}).get() ==
                          expect(lowest, std::nullopt, {.limit = 5}));
    });
    const auto whole = parts_of(map, [&] {
        if (rank == 0)
            MPIDICT_CHECK(map.range_from(lowest).get().size() == model.size());
    });
    if (rank == 0 && std::getenv("SKIPLIST_TEST_VERBOSE"))
        std::fprintf(stderr, "%s: latest-5 in %lld parts, the whole list in %lld\n", where.c_str(),
                     static_cast<long long>(latest), static_cast<long long>(whole));
    if (mode != mode_type::total_order) {
        // Nodes hold at least G / 2 = 4 keys after a split: 5 entries lie in at
        // most 3 nodes; one more part if the list's last node happens to be empty.
        MPIDICT_CHECK_MSG(latest <= 4 && whole >= 20, "latest-5 answered in " + std::to_string(latest) +
                                                           " parts, the whole list in " + std::to_string(whole) + where);
    } else {
        // total_order splits a range over every node of its interval (one snapshot).
        MPIDICT_CHECK_MSG(latest == whole, "total_order latest-5 in " + std::to_string(latest) + " parts, whole list " +
                                               std::to_string(whole) + where);
    }
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
}

void patterns(int rank, int size, mode_type mode) {
    using cell = std::array<std::int32_t, 2>;
    mpidict::skiplist_map_config config;
    config.granularity = 8;
    config.consistency = mode;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    mpidict::skiplist_map<cell, std::int64_t> map(MPI_COMM_WORLD, config);
    std::map<cell, std::int64_t> everything;
    std::vector<cell> mine;
    std::vector<std::int64_t> values;
    int index = 0;
    for (std::int32_t x = -3; x < 37; ++x)
        for (std::int32_t y = 0; y < 20; ++y, ++index) {
            everything[cell{x, y}] = index;
            if (index % size == rank) {
                mine.push_back(cell{x, y});
                values.push_back(index);
            }
        }
    (void)map.insert_many(std::span<const cell>(mine), std::span<const std::int64_t>(values));
    map.flush();
    const std::string where = std::string(" (") + name_of(mode) + ", " + std::to_string(size) + " ranks)";
    auto filter = [&](const mpidict::key_pattern& pattern, std::uint64_t limit) {
        std::vector<std::pair<cell, std::int64_t>> out;
        for (auto it = everything.rbegin(); it != everything.rend() && (limit == 0 || out.size() < limit); ++it) {
            std::string encoded;
            mpidict::ordered_codec<cell>::encode(it->first, encoded);
            if (pattern.matches(encoded))
                out.push_back(*it);
        }
        return out;
    };
    for (const char* text : {"*.3", "[2,30].[5,7]", "[-3,0].*", "36.*", "[40,50].*", "*.[18,]", "[5,9].[,2]", "*.*"}) {
        const auto pattern = mpidict::key_pattern::parse<cell>(text);
        for (const std::uint64_t limit : {1, 2, 7, 0}) {
            const auto got = map.match(pattern, {.limit = limit, .descending = true}).get();
            const auto expected = filter(pattern, limit);
            MPIDICT_CHECK_MSG(got == expected, std::string("match ") + text + " descending, limit " +
                                                   std::to_string(limit) + where + ": " + std::to_string(got.size()) +
                                                   " entries, expected " + std::to_string(expected.size()));
            std::vector<std::pair<cell, std::int64_t>> streamed;
            map.match(
                pattern, [&](const cell& key, const std::int64_t& value) { streamed.emplace_back(key, value); },
                {.limit = limit, .descending = true});
            MPIDICT_CHECK_MSG(streamed == expected, std::string("streaming match ") + text + " descending" + where);
        }
    }
    // Jumps: the latest 2 of one y per x come from about 2 nodes, not the 40+
    // nodes between them and the end of the list.
    const auto parts = parts_of(map, [&] {
        if (rank == 0)
            MPIDICT_CHECK(map.match("*.3", {.limit = 2, .descending = true}).get() ==
                          filter(mpidict::key_pattern::parse<cell>("*.3"), 2));
    });
    if (rank == 0 && std::getenv("SKIPLIST_TEST_VERBOSE"))
        std::fprintf(stderr, "%s: match *.3 latest-2 in %lld parts\n", where.c_str(), static_cast<long long>(parts));
    if (mode != mode_type::total_order)
        MPIDICT_CHECK_MSG(parts <= 4, "match *.3 descending, limit 2, answered in " + std::to_string(parts) +
                                          " parts" + where);
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(150), "mpi_skiplist_map_latest");
        for (const mode_type mode : {mode_type::sequential, mode_type::none, mode_type::total_order}) {
            ranges(rank, size, mode);
            patterns(rank, size, mode);
        }
    });
}
