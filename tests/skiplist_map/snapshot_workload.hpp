#pragma once
// The consistent-snapshot check shared by the MPI test
// (mpi_skiplist_snapshot.cpp) and the simulation (tests/sim/sim_skiplist_snapshot.cpp).
//
// Every rank writes its own keys (key % ranks == rank) before the cut in every
// form the map has: insert_many, blocking insert and erase, an insert whose
// deadline passes before the cut, one whose deadline passes after it, and
// async_insert right before snapshot() with no flush.  The state at the cut is
// therefore a function of the key (model_at_cut), the same on every rank.
// After the cut every rank overwrites, erases, range-erases, inserts new keys
// and lets deadlines pass, while it reads through the snapshot: finds, ranges
// (ascending, descending, limits, after_lo / before_hi, range_from, streamed),
// counts; every answer is compared with the model at the cut.  Then the
// slices (for_all) must be the model once, in key order over the ranks; a
// second snapshot taken after the writes must be the new state while the first
// still answers the old one; released and destroyed snapshots must throw.
//
// Broken variants the check must reject:
//   skip_flush  snapshot() does not flush first (test-only switch): the async
//               inserts still buffered are missing from the copy;
//   live_reads  the reads go to the live map instead of the snapshot: they see
//               the writes made after the cut.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mpidict/skiplist_map.hpp"

namespace mpidict::snapshot_test {

enum class broken { none, skip_flush, live_reads };

using key_type = std::int64_t;
using map_type = skiplist_map<key_type, std::int64_t>;
using entry_list = map_type::entry_list;

// The deterministic part of the workload.
inline constexpr key_type keys_per_rank = 48;

// What the map holds at the cut for `key` (nothing: erased, never written, or
// its deadline passed before the cut).
inline std::optional<std::int64_t> model_at_cut(key_type key) {
    if (key % 5 == 0)
        return std::nullopt;  // erased before the cut
    if (key % 11 == 0)
        return std::nullopt;  // deadline passed before the cut
    if (key % 3 == 0)
        return key * 10 + 2;  // async_insert right before snapshot()
    if (key % 7 == 0)
        return key * 10 + 3;  // deadline passes after the cut
    return key * 10 + 1;
}
// What it holds after the writes made after the cut (the second snapshot).
inline bool overwritten_after_cut(key_type key) { return key % 4 == 3 && key % 7 != 0; }
inline std::optional<std::int64_t> model_after(key_type key, key_type universe) {
    if (key >= universe)
        return key % 2 == 0 ? std::optional<std::int64_t>(key * 10 + 7) : std::nullopt;  // new keys
    if (key % 4 == 1)
        return std::nullopt;  // erased after the cut
    if (key >= universe / 2 && key <= universe / 2 + 9)
        return std::nullopt;  // erase_range after the cut
    if (overwritten_after_cut(key))
        return key * 10 + 9;
    if (key % 7 == 0 && key % 3 != 0 && key % 5 != 0 && key % 11 != 0)
        return std::nullopt;  // its deadline passed after the cut
    return model_at_cut(key);
}

struct counters {
    std::uint64_t checks = 0;
    std::uint64_t failures = 0;
};

// Runs the scenario on one rank.  `fail(what)` reports a failed check (it may
// return: the scenario keeps its collective calls in step); `clock` is this
// rank's expiry clock (the map's config.expiry_clock reads it); `random(n)`
// draws from [0, n), differently per rank.
template <class Fail, class Random>
void run(map_type& map, int rank, int ranks, double& clock, broken variant, Fail&& fail, Random&& random,
         counters& count) {
    const key_type universe = keys_per_rank * ranks;
    const auto check = [&](bool good, const std::string& what) {
        ++count.checks;
        if (!good) {
            ++count.failures;
            fail(what);
        }
    };
    const auto at = [](double seconds) {
        return std::chrono::system_clock::time_point(
            std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds)));
    };
    std::vector<key_type> mine;
    for (key_type key = rank; key < universe; key += ranks)
        mine.push_back(key);

    // ---- before the cut ----------------------------------------------------
    std::vector<std::int64_t> values;
    for (key_type key : mine)
        values.push_back(key * 10 + 1);
    (void)map.insert_many(std::span<const key_type>(mine), std::span<const std::int64_t>(values));
    for (key_type key : mine) {
        if (key % 5 == 0)
            (void)map.erase(key).get();
        else if (key % 11 == 0)
            (void)map.insert(key, key * 10 + 4, at(clock + 1)).get();  // passes before the cut
        else if (key % 7 == 0 && key % 3 != 0)
            (void)map.insert(key, key * 10 + 3, at(clock + 100)).get();  // passes after it
    }
    map.flush();
    clock += 2;  // the every-11th keys' deadlines pass
    for (key_type key : mine)
        if (key % 3 == 0 && key % 5 != 0 && key % 11 != 0)
            map.async_insert(key, key * 10 + 2);  // no flush: snapshot() must include them

    // ---- the cut -----------------------------------------------------------
    if (variant == broken::skip_flush)
        map.set_fault_snapshot_skip_flush(true);
    auto snap = map.snapshot();
    map.set_fault_snapshot_skip_flush(false);
    map.flush();  // the broken variant's buffered inserts land now, after the cut

    std::map<key_type, std::int64_t> at_cut;
    for (key_type key = 0; key < universe; ++key)
        if (const auto value = model_at_cut(key))
            at_cut[key] = *value;

    // Reads through the snapshot (or, broken, through the live map).
    const auto find = [&](key_type key) -> std::optional<std::int64_t> {
        if (variant == broken::live_reads)
            return map.find(key).get();
        return snap.find(key);
    };
    const auto range = [&](key_type lo, key_type hi, range_options options) -> entry_list {
        if (variant == broken::live_reads)
            return map.range(lo, hi, options).get();
        return snap.range(lo, hi, options);
    };
    const auto expect_range = [&](key_type lo, key_type hi, range_options options) {
        entry_list out;
        const auto inside = [&](key_type key) {
            return key >= lo && key <= hi && !(options.after_lo && key == lo) && !(options.before_hi && key == hi);
        };
        if (options.descending) {
            for (auto it = at_cut.rbegin(); it != at_cut.rend(); ++it)
                if (inside(it->first) && (options.limit == 0 || out.size() < options.limit))
                    out.emplace_back(it->first, it->second);
        } else {
            for (const auto& [key, value] : at_cut)
                if (inside(key) && (options.limit == 0 || out.size() < options.limit))
                    out.emplace_back(key, value);
        }
        return out;
    };
    const auto read_some = [&](const char* when) {
        const std::string where = std::string(" (") + when + ", rank " + std::to_string(rank) + ")";
        for (int probe = 0; probe < 12; ++probe) {
            const key_type key = static_cast<key_type>(random(static_cast<std::uint64_t>(universe + 4)));
            // Values are positive: -1 stands for "absent" (no optional compares, no false warnings).
            const std::int64_t got = find(key).value_or(-1);
            const auto found = at_cut.find(key);
            const std::int64_t want = found == at_cut.end() ? -1 : found->second;
            check(got == want, "find(" + std::to_string(key) + ") = " + std::to_string(got) + ", at the cut " +
                                   std::to_string(want) + " (-1: absent)" + where);
        }
        for (int probe = 0; probe < 4; ++probe) {
            key_type lo = static_cast<key_type>(random(static_cast<std::uint64_t>(universe)));
            key_type hi = lo + static_cast<key_type>(random(static_cast<std::uint64_t>(universe)));
            range_options options;
            options.limit = random(3) == 0 ? 1 + random(8) : 0;
            options.descending = random(2) == 0;
            options.after_lo = random(4) == 0;
            options.before_hi = random(4) == 0;
            const entry_list got = range(lo, hi, options);
            check(got == expect_range(lo, hi, options),
                  "range(" + std::to_string(lo) + ", " + std::to_string(hi) + ", limit " +
                      std::to_string(options.limit) + (options.descending ? ", descending" : "") + ") returned " +
                      std::to_string(got.size()) + " entries differing from the cut's " +
                      std::to_string(expect_range(lo, hi, options).size()) + where);
        }
        if (variant != broken::live_reads) {
            const key_type lo = static_cast<key_type>(random(static_cast<std::uint64_t>(universe)));
            const key_type hi = lo + 20;
            check(snap.count(lo, hi) == expect_range(lo, hi, {}).size(), "count(" + std::to_string(lo) + ")" + where);
            entry_list streamed;
            snap.range_from(lo, [&](const key_type& key, const std::int64_t& value) { streamed.emplace_back(key, value); });
            check(streamed == expect_range(lo, universe, {}), "range_from streamed" + where);
        }
    };

    // ---- after the cut: writes and reads interleaved -------------------------
    read_some("right after the cut");
    for (key_type key : mine) {
        if (overwritten_after_cut(key))
            map.async_insert(key, key * 10 + 9);
        else if (key % 4 == 1)
            map.async_erase(key);
    }
    read_some("with overwrites and erases in flight");
    map.flush();
    read_some("after the overwrites");
    if (rank == 0)
        (void)map.erase_range(universe / 2, universe / 2 + 9).get();
    for (key_type key = universe + rank; key < universe + 40; key += ranks)
        if (key % 2 == 0)
            (void)map.insert(key, key * 10 + 7).get();  // beyond the snapshot's keys
    clock += 200;  // the every-7th keys' deadlines pass
    map.flush();
    read_some("after erase_range, new keys and expiries");

    // The live map did change (else the check above proves nothing).
    for (key_type key : mine) {
        const auto live = map.find(key).get();
        check(live == model_after(key, universe),
              "the live map after the writes: key " + std::to_string(key) + " = " + (live ? std::to_string(*live) : "none"));
    }

    if (variant == broken::live_reads)
        return;  // the rest reads the snapshot's own slices

    // ---- slices: together the cut, once, in key order over the ranks ----------
    check(snap.size() == at_cut.size(),
          "size() = " + std::to_string(snap.size()) + ", the cut held " + std::to_string(at_cut.size()));
    std::int64_t local[3] = {static_cast<std::int64_t>(snap.local_size()), std::numeric_limits<std::int64_t>::max(),
                             std::numeric_limits<std::int64_t>::min()};
    bool slice_good = true;
    std::optional<key_type> previous;
    snap.for_all([&](const key_type& key, const std::int64_t& value) {
        slice_good = slice_good && at_cut.count(key) && at_cut[key] == value && (!previous || *previous < key);
        previous = key;
        local[1] = std::min<std::int64_t>(local[1], key);
        local[2] = std::max<std::int64_t>(local[2], key);
    });
    check(slice_good, "this rank's slice is not a sorted part of the cut (rank " + std::to_string(rank) + ")");
    std::int64_t total = 0;
    map.engine().sum(std::span<const std::int64_t>(local, 1), std::span<std::int64_t>(&total, 1), "slices");
    check(static_cast<std::size_t>(total) == at_cut.size(), "the slices hold " + std::to_string(total) + " entries");
    // Rank r's keys all below rank r + 1's.
    const auto bounds = map.engine().exchange(runtime::engine::all_ranks, [&](const runtime::engine::exchange_sink& send) {
        send(std::as_bytes(std::span<const std::int64_t>(local, 3)));
    });
    std::int64_t highest_before = std::numeric_limits<std::int64_t>::min();
    for (const auto& record : bounds.records) {
        std::int64_t seen[3];
        std::memcpy(seen, bounds.bytes(record).data(), sizeof seen);
        if (seen[0] == 0)
            continue;
        check(seen[1] > highest_before, "rank " + std::to_string(record.source) + "'s slice starts at " +
                                            std::to_string(seen[1]) + ", below an earlier rank's " +
                                            std::to_string(highest_before));
        highest_before = seen[2];
    }

    // ---- a second snapshot sees the new state; the first still the old one ---
    {
        auto later = map.snapshot();
        for (key_type key = 0; key < universe + 40; key += 1 + static_cast<key_type>(random(5))) {
            const auto got = later.find(key);
            check(got == model_after(key, universe), "the second snapshot's find(" + std::to_string(key) + ")");
        }
        const key_type key = static_cast<key_type>(random(static_cast<std::uint64_t>(universe)));
        check(snap.find(key) == model_at_cut(key), "the first snapshot with a second one held");
        auto moved = std::move(later);
        check(!later.valid() && moved.valid(), "a moved snapshot");
    }  // released by its destructor (collective)

    snap.release();
    bool threw = false;
    try {
        (void)snap.find(0);
    } catch (const use_after_destroy_error&) {
        threw = true;
    }
    check(threw, "find on a released snapshot must throw use_after_destroy_error");
}

}  // namespace mpidict::snapshot_test
