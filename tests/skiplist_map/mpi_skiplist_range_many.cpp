// range_many (issue 49, item 6: several ranges in one call) at 1-4 ranks in
// every consistency mode: each rank asks 150 random ranges (empty ones, lo > hi,
// limits, descending, after_lo / before_hi) in one call at windows 1, 3 and the
// default, in both forms (the lists, and the streamed callback, which must see
// the indexes in order), against a std::map model of the whole list; and an
// empty span.  Every rank queries at once.

#include <algorithm>
#include <cstdint>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"
#include "mpidict/skiplist_range_many.hpp"
#include "spread_keys.hpp"

namespace {

using mode_type = mpidict::skiplist_consistency;
using map_type = mpidict::skiplist_map<std::int64_t, std::int64_t>;
using entries = map_type::entry_list;

entries expect(const std::map<std::int64_t, std::int64_t>& model, std::int64_t lo, std::int64_t hi,
               const mpidict::range_options& options) {
    entries all;
    for (auto it = model.lower_bound(lo); it != model.end() && it->first <= hi; ++it) {
        if ((options.after_lo && it->first == lo) || (options.before_hi && it->first == hi))
            continue;
        all.push_back(*it);
    }
    if (options.descending)
        std::reverse(all.begin(), all.end());
    if (options.limit != 0 && all.size() > options.limit)
        all.resize(options.limit);
    return all;
}

std::string describe(const entries& list) {
    std::string text = std::to_string(list.size()) + " entries";
    for (std::size_t i = 0; i < list.size() && i < 3; ++i)
        text += " (" + std::to_string(list[i].first) + "," + std::to_string(list[i].second) + ")";
    return text;
}

void run(int rank, int size, mode_type mode) {
    mpidict::skiplist_map_config config;
    config.granularity = 8;
    config.consistency = mode;
    map_type map(MPI_COMM_WORLD, config);
    constexpr std::int64_t per_rank = 300;
    std::map<std::int64_t, std::int64_t> model;
    const auto [keys, values] = spread_keys(model, rank, size, per_rank, 3);  // gaps between keys
    map.insert_many(std::span<const std::int64_t>(keys), std::span<const std::int64_t>(values));
    map.flush();

    const std::int64_t top = size * per_rank * 3;
    std::mt19937_64 random(1234 + static_cast<unsigned>(rank));
    for (int round = 0; round < 4; ++round) {
        mpidict::range_options options;
        options.limit = round == 0 ? 0 : random() % 7;
        options.descending = round % 2 == 1;
        options.after_lo = random() % 2 == 0;
        options.before_hi = random() % 2 == 0;
        std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
        for (int i = 0; i < 150; ++i) {
            const std::int64_t lo = static_cast<std::int64_t>(random() % (top + 40)) - 20;
            const std::int64_t width = static_cast<std::int64_t>(random() % 60) - 5;  // some lo > hi
            ranges.emplace_back(lo, lo + width);
        }
        const std::span<const std::pair<std::int64_t, std::int64_t>> span(ranges);
        for (const std::size_t window : {std::size_t{1}, std::size_t{3}, std::size_t{0}}) {
            const auto lists = mpidict::range_many(map, span, options, window);
            MPIDICT_CHECK(lists.size() == ranges.size());
            for (std::size_t i = 0; i < ranges.size(); ++i) {
                const entries want = expect(model, ranges[i].first, ranges[i].second, options);
                MPIDICT_CHECK_MSG(lists[i] == want, "range_many window " + std::to_string(window) + " range " +
                                                        std::to_string(i) + " [" + std::to_string(ranges[i].first) +
                                                        ", " + std::to_string(ranges[i].second) + "]: " +
                                                        describe(lists[i]) + " expected " + describe(want));
            }
        }
        std::size_t next = 0;
        mpidict::range_many(
            map, span,
            [&](std::size_t index, entries&& got) {
                MPIDICT_CHECK_MSG(index == next, "streamed range_many out of order");
                ++next;
                MPIDICT_CHECK(got == expect(model, ranges[index].first, ranges[index].second, options));
            },
            options, 5);
        MPIDICT_CHECK(next == ranges.size());
    }
    MPIDICT_CHECK(mpidict::range_many(map, std::span<const std::pair<std::int64_t, std::int64_t>>()).empty());
    map.flush();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "mpi_skiplist_range_many");
        for (const mode_type mode : {mode_type::sequential, mode_type::none, mode_type::total_order})
            run(rank, size, mode);
    });
}
