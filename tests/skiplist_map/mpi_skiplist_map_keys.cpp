// skiplist_map with other key types and features at 1-4 ranks: byte-string keys
// with prefix queries, multi-dimensional keys (std::array<double, 3>) with box-like
// ranges over the first dimension, negative doubles, expiry (TTL) of entries that
// are never returned once expired and are removed by their nodes (by the system
// clock and by a simulated expiry_clock), and bad input
// (keys and values over their limits, NaN keys, configurations that cannot work)
// with clear errors and nothing stored lost.

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <map>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

void strings_and_prefixes(int rank, int size) {
    mpidict::skiplist_map_config config;
    config.granularity = 3;
    config.max_key_bytes = 32;
    config.max_value_bytes = 64;
    mpidict::skiplist_map<std::string, std::string> map(MPI_COMM_WORLD, config);
    const std::vector<std::string> stems = {"apple", "apricot", "banana", "band", "bandana", "can", "", "zz", "a"};
    std::map<std::string, std::string> everything;
    for (int r = 0; r < size; ++r)
        for (const auto& stem : stems)
            everything[stem + "#" + std::to_string(r)] = "v" + stem + std::to_string(r);
    everything[std::string("ap\0x", 4)] = "embedded zero";
    for (const auto& stem : stems) {
        const std::string key = stem + "#" + std::to_string(rank);
        MPIDICT_CHECK(map.insert_if_absent(key, everything[key]).get());
    }
    if (rank == 0)
        map.insert(std::string("ap\0x", 4), "embedded zero").get();
    map.flush();
    auto expect_prefix = [&](const std::string& prefix) {
        std::vector<std::pair<std::string, std::string>> expected;
        for (const auto& entry : everything)
            if (entry.first.compare(0, prefix.size(), prefix) == 0)
                expected.push_back(entry);
        const auto got = map.prefix(prefix).get();
        MPIDICT_CHECK_MSG(got == expected, "prefix '" + prefix + "': " + std::to_string(got.size()) + " entries, expected " +
                                               std::to_string(expected.size()));
        const auto last_two = map.prefix(prefix, {.limit = 2, .descending = true}).get();
        MPIDICT_CHECK(last_two.size() == std::min<std::size_t>(2, expected.size()));
        for (std::size_t i = 0; i < last_two.size(); ++i)
            MPIDICT_CHECK(last_two[i] == expected[expected.size() - 1 - i]);
        std::vector<std::pair<std::string, std::string>> streamed;
        const std::size_t count = map.prefix(
            prefix, [&](const std::string& key, const std::string& value) { streamed.emplace_back(key, value); });
        MPIDICT_CHECK_MSG(streamed == expected && count == expected.size(), "streaming prefix '" + prefix + "'");
    };
    for (const char* prefix : {"ap", "band", "b", "", "zz#", "q", "a"})
        expect_prefix(prefix);
    expect_prefix(std::string("ap\0", 3));
    expect_prefix(std::string("\xff", 1));
    const auto between = map.range(std::string("apricot"), std::string("band#")).get();
    std::vector<std::pair<std::string, std::string>> expected(everything.lower_bound("apricot"),
                                                              everything.upper_bound("band#"));
    MPIDICT_CHECK(between == expected);
    // A key over max_key_bytes is refused on the caller; nothing changes.
    bool refused = false;
    try {
        map.insert(std::string(33, 'k'), "x");
    } catch (const mpidict::invalid_argument_error& problem) {
        refused = std::string(problem.what()).find("max_key_bytes") != std::string::npos;
    }
    MPIDICT_CHECK(refused);
    refused = false;
    try {
        map.insert("ok", std::string(65, 'v'));
    } catch (const mpidict::invalid_argument_error& problem) {
        refused = std::string(problem.what()).find("max_value_bytes") != std::string::npos;
    }
    MPIDICT_CHECK(refused);
    map.flush();
    MPIDICT_CHECK(map.global_size() == everything.size());
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
}

void multi_dimensional(int rank, int size) {
    using point = std::array<double, 3>;
    mpidict::skiplist_map_config config;
    config.granularity = 8;
    config.max_key_bytes = 24;
    config.max_value_bytes = 8;
    mpidict::skiplist_map<point, std::int64_t> map(MPI_COMM_WORLD, config);
    std::map<point, std::int64_t> everything;
    for (int r = 0; r < size; ++r)
        for (int i = 0; i < 60; ++i) {
            const point p{-74.5 + (i % 7) * 0.5 - r * 0.01, 40.0 + (i / 7) * -1.25, (i % 3) - 1.0};
            everything[p] = r * 1000 + i;
        }
    for (int i = 0; i < 60; ++i) {
        const point p{-74.5 + (i % 7) * 0.5 - rank * 0.01, 40.0 + (i / 7) * -1.25, (i % 3) - 1.0};
        map.async_insert(p, rank * 1000 + i);
    }
    map.flush();
    const point lo{-74.0, -1e300, -1e300};
    const point hi{-72.5, 1e300, 1e300};
    const auto got = map.range(lo, hi).get();
    std::vector<std::pair<point, std::int64_t>> expected(everything.lower_bound(lo), everything.upper_bound(hi));
    MPIDICT_CHECK_MSG(got == expected, "box range: " + std::to_string(got.size()) + " entries, expected " +
                                           std::to_string(expected.size()));
    for (const auto& entry : everything) {
        const auto found = map.find(entry.first).get();
        MPIDICT_CHECK(found && *found == entry.second);
    }
    bool refused = false;
    try {
        map.insert(point{std::nan(""), 0, 0}, 1);
    } catch (const mpidict::invalid_argument_error& problem) {
        refused = std::string(problem.what()).find("NaN") != std::string::npos;
    }
    MPIDICT_CHECK(refused);
    // -0.0 and +0.0 are one key.
    if (rank == 0) {
        MPIDICT_CHECK(map.insert_if_absent(point{-0.0, 0, 0}, 7).get());
        MPIDICT_CHECK(!map.insert_if_absent(point{0.0, 0, 0}, 8).get());
        MPIDICT_CHECK(map.erase(point{0.0, -0.0, 0}).get());
    }
    map.flush();
    MPIDICT_CHECK(map.global_size() == everything.size());
}

void expiry(int rank, int size) {
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    mpidict::skiplist_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
    using clock = std::chrono::system_clock;
    const auto soon = clock::now() + std::chrono::milliseconds(1500);
    const auto later = clock::now() + std::chrono::hours(1);
    for (std::uint64_t i = 0; i < 40; ++i) {
        const std::uint64_t key = i * static_cast<std::uint64_t>(size) + static_cast<std::uint64_t>(rank);
        if (i % 2 == 0)
            map.insert(key, key, soon).get();
        else if (i % 4 == 1)
            map.insert(key, key, later).get();
        else
            map.insert(key, key).get();
    }
    map.flush();
    // i = 0: visible until its deadline (checked only if the answer came before it;
    // a loaded machine may take longer than that to get here).
    const bool visible = map.find(static_cast<std::uint64_t>(rank)).get().has_value();
    if (clock::now() < soon)
        MPIDICT_CHECK(visible);
    std::this_thread::sleep_until(soon + std::chrono::milliseconds(50));
    // Expired entries are never returned, by find or by range.
    MPIDICT_CHECK(!map.find(static_cast<std::uint64_t>(rank)).get().has_value());
    const auto all = map.range_from(0).get();
    MPIDICT_CHECK(all.size() == static_cast<std::size_t>(20 * size));
    for (const auto& [key, value] : all)
        MPIDICT_CHECK(((key - static_cast<std::uint64_t>(key % size)) / size) % 2 == 1);
    // flush() removes the rest at their nodes.
    map.flush();
    MPIDICT_CHECK(map.global_size() == static_cast<std::size_t>(20 * size));
    std::int64_t entries = static_cast<std::int64_t>(map.local_statistics().entries);
    std::int64_t total = 0;
    MPI_Allreduce(&entries, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    MPIDICT_CHECK(total == 20 * size);
    // An expiry in the past: not stored (stored = false), never visible.
    MPIDICT_CHECK(!map.insert(1000000 + static_cast<std::uint64_t>(rank), 1, clock::now() - std::chrono::seconds(5))
                       .get()
                       .stored);
    MPIDICT_CHECK(!map.find(1000000 + static_cast<std::uint64_t>(rank)).get().has_value());
    map.flush();
}

// expiry_clock: the map judges expiry by a clock the program keeps (here a
// simulated time in 2013 that every rank advances at the same collective
// points), so which entries are gone is exact, unlike with the system clock.
void expiry_by_simulated_clock(int rank, int size) {
    using clock = std::chrono::system_clock;
    const clock::time_point start = clock::time_point(std::chrono::seconds(1356998400));  // 2013-01-01 UTC
    clock::time_point simulated = start;
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    config.expiry_clock = [&simulated] { return simulated; };
    mpidict::skiplist_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
    // Key k (from every rank) expires k minutes after the start; 0 never.
    for (std::uint64_t i = 0; i < 30; ++i) {
        const std::uint64_t key = i * static_cast<std::uint64_t>(size) + static_cast<std::uint64_t>(rank);
        if (key == 0)
            map.insert(key, key).get();
        else
            map.insert(key, key, start + std::chrono::minutes(key)).get();
    }
    map.flush();
    const std::uint64_t total = 30 * static_cast<std::uint64_t>(size);
    // Deadlines that lie in the past of the system clock mean nothing here.
    MPIDICT_CHECK(map.range_from(0).get().size() == total);
    for (const std::uint64_t minutes : {std::uint64_t{1}, std::uint64_t{7}, total / 2, total + 1}) {
        // Every rank moves its clock, then global_size() (collective; it counts
        // what has not expired) keeps any rank from querying before all have.
        // A barrier would not do: a rank waiting in it answers no one.
        simulated = start + std::chrono::minutes(minutes);
        // Keys 1..minutes have expired (a deadline equal to now is past).
        const std::uint64_t live = minutes >= total ? 1 : total - minutes;
        MPIDICT_CHECK(map.global_size() == live);
        const auto all = map.range_from(0).get();
        MPIDICT_CHECK(all.size() == live);
        MPIDICT_CHECK(all.front().first == 0);
        if (live > 1)
            MPIDICT_CHECK(all[1].first == minutes + 1);
        MPIDICT_CHECK(!map.find(minutes).get().has_value());
        map.flush();  // removes them at their nodes
        std::int64_t entries = static_cast<std::int64_t>(map.local_statistics().entries);
        std::int64_t stored = 0;
        MPI_Allreduce(&entries, &stored, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        MPIDICT_CHECK(stored == static_cast<std::int64_t>(live));
    }
}

void bad_configurations(int rank, int size) {
    auto expect_refused = [&](const mpidict::skiplist_map_config& config, const char* words) {
        bool refused = false;
        try {
            mpidict::skiplist_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
        } catch (const mpidict::invalid_argument_error& problem) {
            refused = std::string(problem.what()).find(words) != std::string::npos;
            if (!refused)
                std::fprintf(stderr, "[rank %d] unexpected message: %s\n", rank, problem.what());
        }
        MPIDICT_CHECK_MSG(refused, words);
    };
    mpidict::skiplist_map_config config;
    config.granularity = 0;
    expect_refused(config, "granularity");
    config = {};
    config.max_height = 40;
    expect_refused(config, "max_height");
    config = {};
    config.tower_probability = 1.0;
    expect_refused(config, "tower_probability");
    config = {};
    config.server_ranks = std::vector<int>{};
    expect_refused(config, "no server rank");
    config = {};
    config.server_ranks = std::vector<int>{size};
    expect_refused(config, "outside the communicator");
    config = {};
    config.granularity = 4096;
    config.max_value_bytes = 1 << 20;
    expect_refused(config, "buffer_bytes >=");
    // A list hosted on one rank serves every caller.
    config = {};
    config.server_ranks = std::vector<int>{size - 1};
    config.granularity = 2;
    mpidict::skiplist_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
    for (std::uint64_t i = 0; i < 20; ++i)
        map.insert(i * static_cast<std::uint64_t>(size) + static_cast<std::uint64_t>(rank), i).get();
    map.flush();
    MPIDICT_CHECK(map.global_size() == static_cast<std::size_t>(20 * size));
    MPIDICT_CHECK((rank == size - 1) == (map.local_statistics().nodes > 0));
}

}  // namespace

// Pattern queries (match): every entry in the box, in order, against a filter of
// the model; the query skips the nodes between matching runs (fewer parts than a
// plain range over the same bounds); limits, descending, bad patterns.
void patterns(int rank, int size) {
    using cell = std::array<std::int32_t, 3>;
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.max_key_bytes = 12;
    config.max_value_bytes = 8;
    mpidict::skiplist_map<cell, std::int64_t> map(MPI_COMM_WORLD, config);
    std::map<cell, std::int64_t> everything;
    std::vector<cell> mine;
    std::vector<std::int64_t> values;
    int index = 0;
    for (std::int32_t x = -2; x < 8; ++x)
        for (std::int32_t y = 0; y < 10; ++y)
            for (std::int32_t z = 0; z < 4; ++z, ++index) {
                everything[cell{x, y, z}] = index;
                if (index % size == rank) {
                    mine.push_back(cell{x, y, z});
                    values.push_back(index);
                }
            }
    (void)map.insert_many(std::span<const cell>(mine), std::span<const std::int64_t>(values));
    map.flush();
    auto filter = [&](const mpidict::key_pattern& pattern) {
        std::vector<std::pair<cell, std::int64_t>> out;
        for (const auto& [key, value] : everything) {
            std::string encoded;
            mpidict::ordered_codec<cell>::encode(key, encoded);
            if (pattern.matches(encoded))
                out.emplace_back(key, value);
        }
        return out;
    };
    auto total = [](std::int64_t mine_count) {
        std::int64_t sum = 0;
        MPI_Allreduce(&mine_count, &sum, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
        return sum;
    };
    auto parts_of = [&](auto&& query) {
        map.flush();
        const auto before = total(static_cast<std::int64_t>(map.local_statistics().range_parts));
        auto result = query();
        map.flush();
        const auto after = total(static_cast<std::int64_t>(map.local_statistics().range_parts));
        return std::make_pair(result, after - before);
    };
    for (const char* text : {"3.[2,5].*", "[1,4].4.[0,2]", "*.*.3", "2.3.1", "[20,30].*.*", "[-2,0].[8,].[3,]", "*.*.*"}) {
        const auto pattern = mpidict::key_pattern::parse<cell>(text);
        const auto expected = filter(pattern);
        const auto got = map.match(text).get();
        MPIDICT_CHECK_MSG(got == expected, std::string("match ") + text + ": " + std::to_string(got.size()) +
                                               " entries, expected " + std::to_string(expected.size()));
        // Streaming: the same entries, in order, to a callback.
        std::vector<std::pair<cell, std::int64_t>> streamed;
        const std::size_t count =
            map.match(pattern, [&](const cell& key, const std::int64_t& value) { streamed.emplace_back(key, value); });
        MPIDICT_CHECK_MSG(streamed == expected && count == expected.size(),
                          std::string("streaming match ") + text + ": " + std::to_string(streamed.size()) + " entries");
        auto limited = map.match(pattern, {.limit = 5}).get();
        MPIDICT_CHECK_MSG(limited.size() == std::min<std::size_t>(5, expected.size()) &&
                              std::equal(limited.begin(), limited.end(), expected.begin()),
                          std::string("match ") + text + " with a limit");
        auto last = map.match(pattern, {.limit = 3, .descending = true}).get();
        MPIDICT_CHECK_MSG(last.size() == std::min<std::size_t>(3, expected.size()) &&
                              std::equal(last.begin(), last.end(), expected.rbegin()),
                          std::string("match ") + text + " descending");
    }
    // Skipping: a pattern with one y per x answers from far fewer nodes than a
    // plain range over the same bounds (only rank 0 queries; the others wait).
    std::int64_t pattern_parts = 0, range_parts = 0;
    const auto [matched, with_pattern] = parts_of([&] {
        return rank == 0 ? map.match("[0,5].7.*").get() : decltype(map.match("0.0.0").get()){};
    });
    const auto [ranged, with_range] = parts_of([&] {
        return rank == 0 ? map.range(cell{0, 7, 0}, cell{5, 7, 3}).get() : decltype(map.match("0.0.0").get()){};
    });
    pattern_parts = with_pattern;
    range_parts = with_range;
    if (rank == 0) {
        MPIDICT_CHECK_MSG(matched == filter(mpidict::key_pattern::parse<cell>("[0,5].7.*")) && matched.size() == 24,
                          "match [0,5].7.* found " + std::to_string(matched.size()) + " entries");
        MPIDICT_CHECK(ranged.size() > matched.size());
    }
    if (rank == 0 && std::getenv("SKIPLIST_TEST_VERBOSE"))
        std::fprintf(stderr, "match [0,5].7.*: %lld parts; range over the same bounds: %lld parts\n",
                     static_cast<long long>(pattern_parts), static_cast<long long>(range_parts));
    MPIDICT_CHECK_MSG(pattern_parts * 2 < range_parts, "the pattern query answered from " +
                                                           std::to_string(pattern_parts) + " nodes, the range from " +
                                                           std::to_string(range_parts));
    // Bad patterns: named, nothing changes.
    bool syntax = false;
    try {
        (void)map.match("3.[2,");
    } catch (const mpidict::pattern_syntax_error& problem) {
        syntax = std::string(problem.what()).find("position") != std::string::npos;
    }
    MPIDICT_CHECK(syntax);
    bool wrong_type = false;
    try {
        (void)map.match(mpidict::key_pattern::for_key<std::array<double, 2>>());
    } catch (const mpidict::invalid_argument_error& problem) {
        wrong_type = std::string(problem.what()).find("key type") != std::string::npos;
    }
    MPIDICT_CHECK(wrong_type);
    map.flush();
    MPIDICT_CHECK(map.global_size() == everything.size());
}

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(150), "mpi_skiplist_map_keys");
        strings_and_prefixes(rank, size);
        multi_dimensional(rank, size);
        patterns(rank, size);
        expiry(rank, size);
        expiry_by_simulated_clock(rank, size);
        bad_configurations(rank, size);
    });
}
