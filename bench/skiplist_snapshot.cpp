// skiplist_map's consistent snapshots (docs/skiplist_map.md "Snapshots"): what
// taking and holding one costs, and how fast reads through it go beside the same
// reads of the live map in the same run (interleaved, medians of --reps).
//
//   take      snapshot() on a map of --keys-per-rank keys per rank, from a barrier
//             to the slowest rank's return, beside flush() (the collective every
//             snapshot starts with) and beside copying this rank's entries into a
//             sorted std::vector (the local copy a user would write, which is not
//             a consistent cut of the whole map and does not redistribute)
//   memory    resident bytes gained while one snapshot is held, per entry, and
//             the copy's own bytes (local_bytes) per entry
//   find      --reads blocking finds of keys present, through the snapshot and
//             through the live map (find(k).get()), ops/s per rank
//   range     ranges of 1,000 entries, through both, entries/s per rank
//
//   mpiexec -n 2 build/bench/skiplist_snapshot --keys-per-rank 1000000

#include <algorithm>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/skiplist_map.hpp"
#include "mpidict/support/host.hpp"

namespace {

constexpr char bench_name[] = "skiplist_snapshot";
constexpr char description[] =
    "skiplist_map snapshots: the time to take one (beside flush and a local sorted copy), the memory\n"
    "one holds, and finds and ranges through it beside the live map's. JSON lines on stdout (rank 0),\n"
    "a table on stderr.";

struct settings {
    std::uint64_t keys_per_rank = 200000;
    std::uint64_t reads = 20000;
    std::uint64_t ranges = 200;
    std::uint64_t reps = 3;
};

void declare(mpidict::support::option_parser& parser, settings& s) {
    parser.add_count("keys-per-rank", &s.keys_per_rank, "keys each rank inserts", 1000, 1ull << 32, "N");
    parser.add_count("reads", &s.reads, "blocking finds per rank and repetition", 1, 1ull << 32, "R");
    parser.add_count("ranges", &s.ranges, "ranges of 1,000 entries per rank and repetition", 1, 1ull << 32, "Q");
    parser.add_count("reps", &s.reps, "repetitions; medians are reported", 1, 1000, "R");
}

using mpidict::bench::slowest_seconds;
using key_type = std::int64_t;

int run(const settings& s, const mpidict::bench::world& w) {
    mpidict::bench::report out(bench_name, w.size, s.keys_per_rank, w.rank == 0);
    mpidict::skiplist_map<key_type, std::int64_t> map(w.comm);
    const std::uint64_t total_keys = s.keys_per_rank * static_cast<std::uint64_t>(w.size);
    // Key i is i * 7 (gaps between keys); this rank inserts i = rank, rank + p, ...
    std::vector<key_type> keys;
    keys.reserve(s.keys_per_rank);
    for (std::uint64_t i = static_cast<std::uint64_t>(w.rank); i < total_keys; i += static_cast<std::uint64_t>(w.size))
        keys.push_back(static_cast<key_type>(i * 7));
    std::shuffle(keys.begin(), keys.end(), std::mt19937_64(42 + static_cast<std::uint64_t>(w.rank)));
    (void)map.insert_many(std::span<const key_type>(keys), std::span<const key_type>(keys));
    map.flush();

    std::mt19937_64 random(7 + static_cast<std::uint64_t>(w.rank));
    std::vector<key_type> probes(s.reads);
    for (auto& k : probes)
        k = static_cast<key_type>(random() % total_keys * 7);
    std::vector<key_type> starts(s.ranges);
    const std::uint64_t span_keys = 1000;
    for (auto& k : starts)
        k = static_cast<key_type>(random() % (total_keys - std::min(total_keys, span_keys)) * 7);

    std::vector<double> take, flush, local_copy, rss_per_entry, copy_per_entry;
    std::vector<double> snap_find, live_find, snap_range, live_range;
    for (std::uint64_t rep = 0; rep < s.reps; ++rep) {
        flush.push_back(slowest_seconds(w.comm, [&] { map.flush(); }));
        local_copy.push_back(slowest_seconds(w.comm, [&] {
            std::vector<std::pair<key_type, std::int64_t>> copy;
            copy.reserve(map.local_size());
            map.local_for_each([&](const key_type& k, const std::int64_t& v) { copy.emplace_back(k, v); });
            std::sort(copy.begin(), copy.end());
        }));
        map.flush();
        const auto before = mpidict::support::read_process_memory().rss_bytes;
        mpidict::skiplist_snapshot<key_type, std::int64_t> snap;
        take.push_back(slowest_seconds(w.comm, [&] { snap = map.snapshot(); }));
        const auto after = mpidict::support::read_process_memory().rss_bytes;
        rss_per_entry.push_back(mpidict::bench::sum_over_ranks(double(after) - double(before), w.comm) / double(total_keys));
        copy_per_entry.push_back(mpidict::bench::sum_over_ranks(double(snap.local_bytes()), w.comm) / double(total_keys));
        // Reads, interleaved, each checked: the snapshot's first in even
        // repetitions, the live map's first in odd ones.
        const bool live_first = rep % 2 == 1;
        const auto in_order = [live_first](auto&& snap_side, auto&& live_side) {
            double snap_time = 0, live_time = 0;
            if (live_first)
                live_time = live_side();
            snap_time = snap_side();
            if (!live_first)
                live_time = live_side();
            return std::pair{snap_time, live_time};
        };
        std::uint64_t wrong = 0;
        const auto [snap_seconds, live_seconds] = in_order(
            [&] {
                return slowest_seconds(w.comm, [&] {
                    for (key_type k : probes)
                        wrong += snap.find(k).value_or(-1) != k;
                    map.flush();
                });
            },
            [&] {
                return slowest_seconds(w.comm, [&] {
                    for (key_type k : probes)
                        wrong += map.find(k).get().value_or(-1) != k;
                    map.flush();
                });
            });
        snap_find.push_back(double(s.reads) / snap_seconds);
        live_find.push_back(double(s.reads) / live_seconds);
        std::uint64_t snap_entries = 0, live_entries = 0;
        const auto [snap_range_seconds, live_range_seconds] = in_order(
            [&] {
                return slowest_seconds(w.comm, [&] {
                    for (key_type lo : starts)
                        snap_entries += snap.range(lo, lo + key_type(span_keys * 7 - 1)).size();
                    map.flush();
                });
            },
            [&] {
                return slowest_seconds(w.comm, [&] {
                    for (key_type lo : starts)
                        live_entries += map.range(lo, lo + key_type(span_keys * 7 - 1)).get().size();
                    map.flush();
                });
            });
        if (wrong != 0 || snap_entries != live_entries || snap_entries != s.ranges * span_keys)
            throw std::runtime_error("skiplist_snapshot: " + std::to_string(wrong) + " wrong finds, ranges gave " +
                                     std::to_string(snap_entries) + " and " + std::to_string(live_entries) +
                                     " entries, expected " + std::to_string(s.ranges * span_keys));
        snap_range.push_back(double(snap_entries) / snap_range_seconds);
        live_range.push_back(double(live_entries) / live_range_seconds);
        snap.release();
    }
    const auto ms = [](std::vector<double> v) {
        for (double& x : v)
            x *= 1e3;
        return v;
    };
    const auto median = [](const std::vector<double>& v) { return mpidict::bench::summary::of(v).median; };
    out.figure("take", ms(take), "ms");
    out.figure("flush", ms(flush), "ms");
    out.figure("local_sorted_copy", ms(local_copy), "ms");
    out.figure("take_ns_per_entry", median(take) * 1e9 / double(total_keys) * w.size, "ns");
    out.figure("rss_per_entry_held", rss_per_entry, "B");
    out.figure("copy_bytes_per_entry", copy_per_entry, "B");
    out.figure("snapshot_find", snap_find, "ops/s");
    out.figure("live_find", live_find, "ops/s");
    out.figure("snapshot_range_1000", snap_range, "entries/s");
    out.figure("live_range_1000", live_range, "entries/s");
    out.ratio("take_vs_local_sorted_copy", median(take) / median(local_copy), "(reported)", true,
              mpidict::bench::json_object().add("ours_ms", median(take) * 1e3).add("baseline_ms", median(local_copy) * 1e3));
    out.ratio("snapshot_find_vs_live", median(snap_find) / median(live_find), "(reported)", true,
              mpidict::bench::json_object().add("ours_rate", median(snap_find)).add("baseline_rate", median(live_find)));
    out.ratio("snapshot_range_vs_live", median(snap_range) / median(live_range), "(reported)", true,
              mpidict::bench::json_object().add("ours_rate", median(snap_range)).add("baseline_rate", median(live_range)));
    out.print_table();
    map.destroy();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(argc, argv, bench_name, description, declare, run);
}
