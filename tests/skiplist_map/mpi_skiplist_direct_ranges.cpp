// Direct ranges (issue 42): in modes sequential and none an ascending range
// with a limit goes straight to the nodes its caller's directory names
// (src/skiplist/caller_ranges.cpp, "Direct ranges").  At 1-4 ranks, G = 4 (many
// nodes), every mode (total_order as the reference path), each rank checks
// random ranges against a std::map model of the whole list:
//   - a cold directory (only what the load taught it), then a warm one (after
//     find_many of every key);
//   - stale entries: more keys inserted after the directory was warmed split
//     nodes (the entries' nodes get new successors), and erase_range of whole
//     stretches followed by flush() unlinks emptied nodes (entries naming dead
//     nodes: their pieces fall back to the head);
//   - limits of 1 to beyond the list's size (the batches run off the
//     directory's end), bounded and open ranges, after_lo / before_hi, empty
//     ranges (lo > hi, [k, k) with after_lo), starts below the first key and
//     above the last;
//   - 16 ranges in flight at once, and a caller's own insert right before a
//     range over its key (read-your-writes in sequential and total_order);
//   - big batches (G = 1: about 256 nodes per batch) of overlapping ranges in
//     flight together (big_batches).

#include <algorithm>
#include <cstdint>
#include <deque>
#include <map>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"
#include "spread_keys.hpp"

namespace {

using mode_type = mpidict::skiplist_consistency;
using map_type = mpidict::skiplist_map<std::int64_t, std::int64_t>;
using entries = map_type::entry_list;
using model_type = std::map<std::int64_t, std::int64_t>;

entries expect(const model_type& model, std::int64_t lo, const std::int64_t* hi, const mpidict::range_options& options) {
    entries all;
    for (auto it = model.lower_bound(lo); it != model.end() && (hi == nullptr || it->first <= *hi); ++it) {
        if ((options.after_lo && it->first == lo) || (hi != nullptr && options.before_hi && it->first == *hi))
            continue;
        all.push_back(*it);
        if (options.limit != 0 && all.size() == options.limit)
            break;
    }
    return all;
}

std::string describe(const entries& list) {
    std::string text = std::to_string(list.size()) + " entries";
    for (std::size_t i = 0; i < list.size() && i < 3; ++i)
        text += " (" + std::to_string(list[i].first) + "," + std::to_string(list[i].second) + ")";
    return text;
}

// 120 random ranges, 16 in flight, each checked against the model.
void check_ranges(map_type& map, const model_type& model, std::mt19937_64& random, std::int64_t top,
                  const std::string& phase) {
    struct query {
        std::int64_t lo, hi;
        bool bounded;
        mpidict::range_options options;
        mpidict::request<entries> answer;
    };
    std::deque<query> pending;
    const auto take = [&] {
        query& q = pending.front();
        const entries got = q.answer.get();
        const entries want = expect(model, q.lo, q.bounded ? &q.hi : nullptr, q.options);
        MPIDICT_CHECK_MSG(got == want, phase + ": range [" + std::to_string(q.lo) + ", " +
                                           (q.bounded ? std::to_string(q.hi) : std::string("end")) + "] limit " +
                                           std::to_string(q.options.limit) + (q.options.after_lo ? " after_lo" : "") +
                                           (q.options.before_hi ? " before_hi" : "") + ": " + describe(got) +
                                           " expected " + describe(want));
        pending.pop_front();
    };
    for (int i = 0; i < 120; ++i) {
        query q{};
        q.lo = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(top + 40)) - 20;
        const int shape = static_cast<int>(random() % 8);
        q.bounded = shape < 4;
        q.hi = shape == 0 ? q.lo - 1 - static_cast<std::int64_t>(random() % 5)  // empty: lo > hi
               : shape == 1 ? q.lo                                                // one key, or empty with after_lo
                            : q.lo + static_cast<std::int64_t>(random() % 400);
        const int limit_kind = static_cast<int>(random() % 4);
        q.options.limit = limit_kind == 0 ? 1 + random() % 3
                          : limit_kind == 1 ? 1 + random() % 60
                          : limit_kind == 2 ? 100 + random() % 400
                                            : static_cast<std::uint64_t>(model.size()) + 10;  // beyond the list
        q.options.after_lo = random() % 3 == 0;
        q.options.before_hi = q.bounded && random() % 3 == 0;
        q.answer = q.bounded ? map.range(q.lo, q.hi, q.options) : map.range_from(q.lo, q.options);
        pending.push_back(std::move(q));
        if (pending.size() == 16)
            take();
    }
    while (!pending.empty())
        take();
}

void run(int rank, int size, mode_type mode) {
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.consistency = mode;
    map_type map(MPI_COMM_WORLD, config);
    constexpr std::int64_t per_rank = 400;
    const std::int64_t top = size * per_rank * 4;
    model_type model;
    // Every rank's keys r + size * (4i + offset) go into the model; this rank
    // inserts its own (value key * 7) in one batch.
    auto insert_keys = [&](std::int64_t offset) {
        const auto [keys, values] = spread_keys(model, rank, size, per_rank, 4, offset);
        map.insert_many(std::span<const std::int64_t>(keys), std::span<const std::int64_t>(values));
        map.flush();
    };
    insert_keys(0);  // gaps: later inserts land between
    std::mt19937_64 random(4242 + static_cast<unsigned>(rank) * 31 + static_cast<unsigned>(mode));
    const std::string name = std::string(mpidict::to_string(mode));
    check_ranges(map, model, random, top, name + " cold directory");
    map.flush();

    // Warm: every key looked up (the answers teach the directory its nodes).
    std::vector<std::int64_t> all;
    for (const auto& [key, value] : model)
        all.push_back(key);
    std::size_t found = 0;
    map.find_many(std::span<const std::int64_t>(all), [&](std::size_t, const std::optional<std::int64_t>& v) {
        found += v.has_value();
    });
    MPIDICT_CHECK(found == all.size());
    map.flush();
    check_ranges(map, model, random, top, name + " warm directory");
    map.flush();

    // Stale: keys between the old ones split the nodes the directory names.
    insert_keys(2);
    check_ranges(map, model, random, top, name + " nodes split since");
    map.flush();

    // Dead: whole stretches erased (rank 0 asks), emptied nodes unlinked by flush.
    if (rank == 0)
        for (std::int64_t lo = top / 8; lo < top; lo += top / 4)
            (void)map.erase_range(lo, lo + top / 10).get();
    map.flush();
    for (std::int64_t lo = top / 8; lo < top; lo += top / 4)
        model.erase(model.lower_bound(lo), model.upper_bound(lo + top / 10));
    check_ranges(map, model, random, top, name + " nodes unlinked since");
    map.flush();

    // Read-your-writes: this caller's insert, then a range over its key, in flight together.
    if (mode != mode_type::none) {
        for (int i = 0; i < 40; ++i) {
            const std::int64_t key = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(top)) * size + rank;
            const std::int64_t value = 1000000 + i;
            (void)map.insert(key, value);  // still in flight when the range leaves
            const entries got = map.range_from(key, {.limit = 1 + static_cast<std::uint64_t>(i % 5)}).get();
            MPIDICT_CHECK_MSG(!got.empty() && got.front().first == key && got.front().second == value,
                              name + ": a range after this caller's insert of " + std::to_string(key) + " returned " +
                                  describe(got));
        }
    }
    map.flush();
}

// Big batches: G = 1, so a range of 300 asks about 256 nodes at once (the most
// one batch sends); 16 overlapping range_from in flight go ahead of one another
// while the sends fill buffers, and serving incoming records inside a send
// finishes earlier ranges (a range marked as gone ahead only after it had left
// waited forever for their reads).
void big_batches(int rank, int size, mode_type mode) {
    mpidict::skiplist_map_config config;
    config.granularity = 1;
    config.consistency = mode;
    // Small buffers: a batch's sends fill them and serve incoming records.
    config.runtime.buffer_bytes = std::max<std::size_t>(2048, config.required_buffer_bytes());
    map_type map(MPI_COMM_WORLD, config);
    constexpr std::int64_t per_rank = 1500;
    model_type model;
    const auto [keys, values] = spread_keys(model, rank, size, per_rank, 1);
    map.insert_many(std::span<const std::int64_t>(keys), std::span<const std::int64_t>(values));
    map.flush();
    std::size_t found = 0;
    map.find_many(std::span<const std::int64_t>(keys), [&](std::size_t, const std::optional<std::int64_t>& v) {
        found += v.has_value();
    });
    MPIDICT_CHECK(found == keys.size());
    map.flush();
    std::mt19937_64 random(777 + static_cast<unsigned>(rank));
    std::deque<std::pair<std::int64_t, mpidict::request<entries>>> pending;
    const mpidict::range_options options{.limit = 300};
    const auto take = [&] {
        const entries got = pending.front().second.get();
        const entries want = expect(model, pending.front().first, nullptr, options);
        MPIDICT_CHECK_MSG(got == want, "big batches: range_from(" + std::to_string(pending.front().first) +
                                           ", limit 300): " + describe(got) + " expected " + describe(want));
        pending.pop_front();
    };
    for (int i = 0; i < 64; ++i) {
        const std::int64_t lo = static_cast<std::int64_t>(random() % static_cast<std::uint64_t>(size * per_rank / 2));
        pending.emplace_back(lo, map.range_from(lo, options));
        if (pending.size() == 16)
            take();
    }
    while (!pending.empty())
        take();
    map.flush();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "mpi_skiplist_direct_ranges");
        for (const mode_type mode : {mode_type::sequential, mode_type::none, mode_type::total_order})
            run(rank, size, mode);
        for (const mode_type mode : {mode_type::sequential, mode_type::none})
            big_batches(rank, size, mode);
    });
}
