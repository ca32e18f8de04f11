// patterns: the three communication patterns of CSE_Hash (seed 000 §3) and the
// release-queue study of seed 001 Table 1, against MPI one-sided operations in
// the same run.
//
// Key set (as the paper): m unique random 32-bit keys in [0, 7,000,000), the
// same unsorted sequence on every rank (mt19937_64 from --seed).  Each key
// carries n 32-bit values, value j of key k = 8k + j.  Three loops run in
// sequence -- insert, find, take -- each blocked by L: start L request
// operations (hash_map::insert / find / take), then wait for all L; at the end
// flush() (collective).
//
//   1n  rank 0 originates every operation; key k lives on rank k % p (cyclic).
//   nn  rank i originates block i of the sequence ([m/p*i, m/p*(i+1)); the last
//       rank also takes the remainder); key k lives on rank k % p.
//   n1  as nn, but every operation goes to rank 0 (target_rank{0}).
//
// Times (seed 000 §2.1), per rank, with our own clock, divided by the number of
// values the rank originated:
//   initiation  time inside the starting calls (insert/find/take);
//   completion  initiation + time inside the waits;
//   barrier     completion + time inside the final flush() and MPI_Barrier.
// Each per-rank time is the median over --reps; a figure's value is the mean
// over originating ranks, and the JSON line carries "per_rank" (null for a rank
// that originated nothing) and "max_rank".
//
// Baseline, same keys, same blocking: a window of int32 on every rank indexed
// by key (cyclic: slot (k / p) * n + j on rank k % p; n1: slot k * n + j on rank
// 0), passive target (MPI_Win_lock_all), MPI_Win_flush_all after every L
// operations, then MPI_Win_flush_all + MPI_Barrier as the barrier phase.
// insert = MPI_Put, find = MPI_Get, take = MPI_Get_accumulate(MPI_REPLACE) of
// zeros (an atomic fetch-and-clear).  Ratios ours / baseline per pattern, op
// and phase.
//
// --study release-queue: seed 001 Table 1.  The nn pattern with one value per
// key (n = 1), L = 100, for K = release_queue = 0, 1, 128: initiation and
// completion time per value of insert and take (no baseline).
//
// Verification: every insert stores all n values, every find returns exactly
// the n values inserted, every take returns them once, after the take loop no
// value is left anywhere (a find over every key after take must be empty is
// implied by local_value_count() == 0 on every rank), and the global sums of
// found and taken values equal the expected checksum.  The baseline is checked
// the same way.  Any mismatch: message on stderr and exit 1.
//
// Usage: patterns [--keys m] [--values-per-key n] [--blocking-factor L]
//          [--release-queue q] [--pattern 1n|nn|n1|all] [--seed S] [--reps R]
//          [--study patterns|release-queue] [--no-baseline] [--buffer-bytes B]
//          [--corrupt-expected-checksum]  (tests the verification: must exit 1)

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpidict/support/host.hpp"
#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using key_type = std::uint32_t;
using value_type = std::int32_t;
using map_type = mpidict::hash_map<key_type, value_type>;
using mpidict::bench::json_object;
using clock_type = std::chrono::steady_clock;

constexpr char bench_name[] = "patterns";
constexpr std::uint32_t key_range = 7'000'000;
constexpr std::uint32_t max_values_per_key = 8;

enum class pattern { one_to_n, n_to_n, n_to_one };
enum class operation { insert, find, take };
constexpr operation all_operations[] = {operation::insert, operation::find, operation::take};

const char* pattern_name(pattern p) {
    switch (p) {
    case pattern::one_to_n: return "1n";
    case pattern::n_to_n: return "nn";
    case pattern::n_to_one: return "n1";
    }
    return "?";
}
const char* operation_name(operation o) {
    switch (o) {
    case operation::insert: return "insert";
    case operation::find: return "find";
    case operation::take: return "take";
    }
    return "?";
}

struct settings {
    std::uint64_t keys = 100'000;
    std::uint32_t values_per_key = 1;
    std::size_t blocking_factor = 100;
    std::size_t release_queue = 128;
    std::size_t buffer_bytes = mpidict::runtime::config{}.buffer_bytes;
    std::vector<pattern> patterns{pattern::one_to_n, pattern::n_to_n, pattern::n_to_one};
    std::uint64_t seed = 2002;
    std::size_t reps = 3;
    bool release_queue_study = false;
    bool baseline = true;
    bool corrupt_expected_checksum = false;
};

using mpidict::bench::world;

double seconds_since(clock_type::time_point start) {
    return std::chrono::duration<double>(clock_type::now() - start).count();
}

// Seconds spent by one rank in one loop.
struct phase_seconds {
    double initiation = 0;
    double wait = 0;
    double flush = 0;
};

// The same m unique keys in [0, key_range) on every rank.
std::vector<key_type> make_keys(std::uint64_t m, std::uint64_t seed) {
    if (m > key_range)
        throw std::invalid_argument("--keys " + std::to_string(m) + " exceeds the key range " +
                                    std::to_string(key_range));
    std::vector<key_type> keys;
    keys.reserve(m);
    std::vector<bool> used(key_range, false);
    std::mt19937_64 generator(seed);
    std::uniform_int_distribution<key_type> draw(0, key_range - 1);
    while (keys.size() < m) {
        const key_type k = draw(generator);
        if (!used[k]) {
            used[k] = true;
            keys.push_back(k);
        }
    }
    return keys;
}

value_type value_of(key_type key, std::uint32_t j) { return static_cast<value_type>(key * 8 + j); }

// The slice of the key sequence this rank originates.
struct block {
    std::size_t begin = 0;
    std::size_t end = 0;
    std::size_t size() const { return end - begin; }
};

block my_block(pattern p, std::size_t m, const world& w) {
    if (p == pattern::one_to_n)
        return w.rank == 0 ? block{0, m} : block{0, 0};
    const std::size_t per = m / static_cast<std::size_t>(w.size);
    const std::size_t begin = per * static_cast<std::size_t>(w.rank);
    const std::size_t end = w.rank == w.size - 1 ? m : begin + per;
    return block{begin, end};
}

// What one run of the three loops measured on this rank, plus its checks.
struct run_result {
    phase_seconds phases[3];
    std::uint64_t values_originated = 0;
    std::uint64_t found_sum = 0;
    std::uint64_t taken_sum = 0;
    std::uint64_t errors = 0;  // local verification failures
};

void report_error(std::uint64_t& errors, const world& w, const char* what, key_type key) {
    if (errors < 5)
        std::fprintf(stderr, "%s: rank %d: %s (key %u)\n", bench_name, w.rank, what, key);
    ++errors;
}

// ---- ours --------------------------------------------------------------------

run_result run_ours(pattern p, const settings& s, const std::vector<key_type>& keys, std::size_t release_queue,
                    std::span<const operation> operations, const world& w) {
    const std::uint32_t n = s.values_per_key;
    const std::size_t L = s.blocking_factor;
    mpidict::hash_map_config config;
    config.runtime.blocking_factor = std::max<std::size_t>(L, 1);
    config.runtime.release_queue = release_queue;
    config.runtime.buffer_bytes = s.buffer_bytes;
    config.place = mpidict::placement::cyclic;
    const std::size_t owned = p == pattern::n_to_one ? (w.rank == 0 ? keys.size() : 0)
                                                     : keys.size() / static_cast<std::size_t>(w.size) + 1;
    config.expected_keys_per_rank = owned + owned / 8 + 16;
    map_type map(w.comm, config);

    const block mine = my_block(p, keys.size(), w);
    run_result result;
    result.values_originated = mine.size() * n;
    auto target_of = [&](key_type key) {
        return mpidict::target_rank{p == pattern::n_to_one ? 0 : map.owner(key)};
    };
    std::vector<value_type> staged(n);

    for (const operation op : operations) {
        phase_seconds& phase = result.phases[static_cast<int>(op)];
        MPI_Barrier(w.comm);
        if (op == operation::insert) {
            std::vector<mpidict::request<mpidict::insert_result>> pending;
            std::vector<key_type> pending_keys;
            pending.reserve(L);
            for (std::size_t i = mine.begin; i < mine.end;) {
                const auto start = clock_type::now();
                for (; i < mine.end && pending.size() < L; ++i) {
                    const key_type key = keys[i];
                    for (std::uint32_t j = 0; j < n; ++j)
                        staged[j] = value_of(key, j);
                    pending.push_back(map.insert(target_of(key), key, std::span<const value_type>(staged)));
                    pending_keys.push_back(key);
                }
                phase.initiation += seconds_since(start);
                const auto waiting = clock_type::now();
                for (auto& r : pending)
                    r.wait();
                phase.wait += seconds_since(waiting);
                for (std::size_t r = 0; r < pending.size(); ++r) {
                    const mpidict::insert_result stored = pending[r].get();
                    if (stored.requested != n || stored.stored != n)
                        report_error(result.errors, w, "insert did not store every value", pending_keys[r]);
                }
                pending.clear();
                pending_keys.clear();
            }
        } else {
            std::vector<mpidict::request<std::vector<value_type>>> pending;
            std::vector<key_type> pending_keys;
            pending.reserve(L);
            for (std::size_t i = mine.begin; i < mine.end;) {
                const auto start = clock_type::now();
                for (; i < mine.end && pending.size() < L; ++i) {
                    const key_type key = keys[i];
                    pending.push_back(op == operation::find ? map.find(target_of(key), key, n)
                                                            : map.take(target_of(key), key, n));
                    pending_keys.push_back(key);
                }
                phase.initiation += seconds_since(start);
                const auto waiting = clock_type::now();
                for (auto& r : pending)
                    r.wait();
                phase.wait += seconds_since(waiting);
                for (std::size_t r = 0; r < pending.size(); ++r) {
                    const key_type key = pending_keys[r];
                    const std::vector<value_type> values = pending[r].get();
                    if (values.size() != n)
                        report_error(result.errors, w, "wrong number of values returned", key);
                    for (std::size_t j = 0; j < values.size(); ++j) {
                        if (values[j] != value_of(key, static_cast<std::uint32_t>(j)))
                            report_error(result.errors, w, "wrong value returned", key);
                        (op == operation::find ? result.found_sum : result.taken_sum) +=
                            static_cast<std::uint64_t>(values[j]);
                    }
                }
                pending.clear();
                pending_keys.clear();
            }
        }
        const auto flushing = clock_type::now();
        map.flush();
        MPI_Barrier(w.comm);
        phase.flush += seconds_since(flushing);
    }
    // Taken exactly once: nothing may be left anywhere.
    if (std::find(operations.begin(), operations.end(), operation::take) != operations.end() &&
        map.local_value_count() != 0) {
        std::fprintf(stderr, "%s: rank %d: %zu values left after take\n", bench_name, w.rank, map.local_value_count());
        ++result.errors;
    }
    map.destroy();
    return result;
}

// ---- baseline: MPI one-sided ---------------------------------------------------

run_result run_baseline(pattern p, const settings& s, const std::vector<key_type>& keys, const world& w) {
    const std::uint32_t n = s.values_per_key;
    const std::size_t L = s.blocking_factor;
    const auto size = static_cast<std::uint64_t>(w.size);
    const std::uint64_t slots =
        p == pattern::n_to_one ? (w.rank == 0 ? std::uint64_t{key_range} * n : 0) : (key_range / size + 1) * n;
    value_type* window_memory = nullptr;
    MPI_Win window;
    MPI_Win_allocate(static_cast<MPI_Aint>(slots * sizeof(value_type)), sizeof(value_type), MPI_INFO_NULL, w.comm,
                     &window_memory, &window);
    if (slots > 0)
        std::memset(window_memory, 0, slots * sizeof(value_type));

    auto owner_of = [&](key_type key) { return p == pattern::n_to_one ? 0 : static_cast<int>(key % size); };
    auto slot_of = [&](key_type key) -> MPI_Aint {
        return static_cast<MPI_Aint>(p == pattern::n_to_one ? std::uint64_t{key} * n : (key / size) * n);
    };

    const block mine = my_block(p, keys.size(), w);
    run_result result;
    result.values_originated = mine.size() * n;
    // One origin/result slot per operation of the whole loop, never reused
    // within a loop, and results read only after MPI_Win_unlock_all: MPICH 4.0.2
    // was seen (N-N, L = 100) to let blocked-and-reused buffers be read or
    // overwritten after MPI_Win_flush_all had returned, so correctness here
    // rests on unlock_all alone; the timings still flush every L operations.
    std::vector<value_type> origin(mine.size() * n);
    std::vector<value_type> fetched(mine.size() * n);
    const std::vector<value_type> zeros(n, 0);

    for (const operation op : all_operations) {
        phase_seconds& phase = result.phases[static_cast<int>(op)];
        MPI_Barrier(w.comm);
        MPI_Win_lock_all(0, window);
        for (std::size_t i = mine.begin; i < mine.end;) {
            const auto start = clock_type::now();
            for (std::size_t b = 0; i < mine.end && b < L; ++i, ++b) {
                const key_type key = keys[i];
                const std::size_t at = (i - mine.begin) * n;
                if (op == operation::insert) {
                    for (std::uint32_t j = 0; j < n; ++j)
                        origin[at + j] = value_of(key, j);
                    MPI_Put(&origin[at], static_cast<int>(n), MPI_INT32_T, owner_of(key), slot_of(key),
                            static_cast<int>(n), MPI_INT32_T, window);
                } else if (op == operation::find) {
                    MPI_Get(&fetched[at], static_cast<int>(n), MPI_INT32_T, owner_of(key), slot_of(key),
                            static_cast<int>(n), MPI_INT32_T, window);
                } else {
                    MPI_Get_accumulate(zeros.data(), static_cast<int>(n), MPI_INT32_T, &fetched[at],
                                       static_cast<int>(n), MPI_INT32_T, owner_of(key), slot_of(key),
                                       static_cast<int>(n), MPI_INT32_T, MPI_REPLACE, window);
                }
            }
            phase.initiation += seconds_since(start);
            const auto waiting = clock_type::now();
            MPI_Win_flush_all(window);
            phase.wait += seconds_since(waiting);
        }
        const auto flushing = clock_type::now();
        MPI_Win_flush_all(window);
        MPI_Barrier(w.comm);
        phase.flush += seconds_since(flushing);
        MPI_Win_unlock_all(window);
        MPI_Barrier(w.comm);
        if (op != operation::insert) {
            for (std::size_t k = mine.begin; k < mine.end; ++k) {
                const value_type* got = &fetched[(k - mine.begin) * n];
                for (std::uint32_t j = 0; j < n; ++j) {
                    if (got[j] != value_of(keys[k], j))
                        report_error(result.errors, w, "baseline: wrong value fetched", keys[k]);
                    (op == operation::find ? result.found_sum : result.taken_sum) +=
                        static_cast<std::uint64_t>(got[j]);
                }
            }
        }
    }
    // After the take loop every slot must be zero again.
    for (std::uint64_t slot = 0; slot < slots; ++slot) {
        if (window_memory[slot] != 0) {
            std::fprintf(stderr, "%s: rank %d: baseline slot %llu not cleared by take\n", bench_name, w.rank,
                         static_cast<unsigned long long>(slot));
            ++result.errors;
            break;
        }
    }
    MPI_Win_free(&window);
    return result;
}

// ---- reduction and reporting ----------------------------------------------------

// Per-rank seconds per value (NaN where a rank originated nothing), per operation
// and phase (initiation, completion, barrier): [op][phase][rank], medians over reps.
struct per_rank_times {
    std::vector<double> us_per_value[3][3];
};

per_rank_times gather(const std::vector<run_result>& reps, const world& w) {
    per_rank_times out;
    for (int op = 0; op < 3; ++op) {
        double mine[3];
        for (int phase = 0; phase < 3; ++phase) {
            std::vector<double> samples;
            for (const run_result& r : reps) {
                const phase_seconds& t = r.phases[op];
                const double cumulative[3] = {t.initiation, t.initiation + t.wait, t.initiation + t.wait + t.flush};
                samples.push_back(r.values_originated == 0
                                      ? NAN
                                      : cumulative[phase] * 1e6 / static_cast<double>(r.values_originated));
            }
            mine[phase] = mpidict::bench::summary::of(samples).median;
        }
        std::vector<double> all(3 * static_cast<std::size_t>(w.size));
        MPI_Gather(mine, 3, MPI_DOUBLE, all.data(), 3, MPI_DOUBLE, 0, w.comm);
        for (int phase = 0; phase < 3; ++phase)
            for (int r = 0; r < w.size; ++r)
                out.us_per_value[op][phase].push_back(all[static_cast<std::size_t>(r) * 3 + phase]);
    }
    return out;
}

double mean_of(const std::vector<double>& values) {
    double sum = 0;
    int count = 0;
    for (const double v : values)
        if (std::isfinite(v)) {
            sum += v;
            ++count;
        }
    return count ? sum / count : NAN;
}
double max_of(const std::vector<double>& values) {
    double best = NAN;
    for (const double v : values)
        if (std::isfinite(v) && !(v <= best))
            best = v;
    return best;
}

constexpr const char* phase_names[] = {"initiation", "completion", "barrier"};

// Sums every rank's checks; true when everything verified.
bool verify(const std::vector<run_result>& reps, const char* what, const settings& s, const world& w,
            std::uint64_t expected_sum) {
    std::uint64_t local[3] = {0, 0, 0};
    for (const run_result& r : reps) {
        local[0] += r.errors;
        local[1] += r.found_sum;
        local[2] += r.taken_sum;
    }
    std::uint64_t global[3];
    MPI_Allreduce(local, global, 3, MPI_UINT64_T, MPI_SUM, w.comm);
    const std::uint64_t expected = expected_sum * reps.size() + (s.corrupt_expected_checksum ? 1 : 0);
    const bool ok = global[0] == 0 && global[1] == expected && global[2] == expected;
    if (!ok && w.rank == 0)
        std::fprintf(stderr,
                     "%s: %s verification FAILED: %llu errors, found sum %llu, taken sum %llu, expected %llu\n",
                     bench_name, what, static_cast<unsigned long long>(global[0]),
                     static_cast<unsigned long long>(global[1]), static_cast<unsigned long long>(global[2]),
                     static_cast<unsigned long long>(expected));
    return ok;
}

std::uint64_t expected_checksum(const std::vector<key_type>& keys, std::uint32_t n) {
    std::uint64_t sum = 0;
    for (const key_type k : keys)
        for (std::uint32_t j = 0; j < n; ++j)
            sum += static_cast<std::uint64_t>(value_of(k, j));
    return sum;
}

int run_patterns(const settings& s, const world& w, mpidict::bench::report& out) {
    const std::vector<key_type> keys = make_keys(s.keys, s.seed);
    const std::uint64_t expected = expected_checksum(keys, s.values_per_key);
    bool ok = true;
    for (const pattern p : s.patterns) {
        std::vector<run_result> ours, theirs;
        // Warm-up: one small untimed round of ours.
        {
            const std::vector<key_type> warm(keys.begin(), keys.begin() + std::min<std::size_t>(keys.size(), 1000));
            (void)run_ours(p, s, warm, s.release_queue, all_operations, w);
        }
        for (std::size_t rep = 0; rep < s.reps; ++rep) {
            // Alternate which goes first.
            if (s.baseline && rep % 2 == 1)
                theirs.push_back(run_baseline(p, s, keys, w));
            ours.push_back(run_ours(p, s, keys, s.release_queue, all_operations, w));
            if (s.baseline && rep % 2 == 0)
                theirs.push_back(run_baseline(p, s, keys, w));
        }
        const std::string label = pattern_name(p);
        ok = verify(ours, (label + " hash_map").c_str(), s, w, expected) && ok;
        if (s.baseline)
            ok = verify(theirs, (label + " MPI one-sided").c_str(), s, w, expected) && ok;
        const per_rank_times ours_times = gather(ours, w);
        per_rank_times their_times;
        if (s.baseline)
            their_times = gather(theirs, w);
        constexpr const char* baseline_ops[] = {"put", "get", "get_accumulate"};
        for (int op = 0; op < 3; ++op) {
            for (int phase = 0; phase < 3; ++phase) {
                const std::string stem = label + "_" + operation_name(all_operations[op]) + "_" + phase_names[phase];
                const auto& mine = ours_times.us_per_value[op][phase];
                json_object extra;
                extra.add("pattern", label)
                    .add("op", operation_name(all_operations[op]))
                    .add("phase", phase_names[phase])
                    .add("impl", "hash_map")
                    .add("per_rank", mine)
                    .add("max_rank", max_of(mine));
                out.figure(stem + "_us_per_value", mean_of(mine), "us", extra);
                if (!s.baseline)
                    continue;
                const auto& base = their_times.us_per_value[op][phase];
                json_object base_extra;
                base_extra.add("pattern", label)
                    .add("op", operation_name(all_operations[op]))
                    .add("phase", phase_names[phase])
                    .add("impl", std::string("mpi_") + baseline_ops[op])
                    .add("per_rank", base)
                    .add("max_rank", max_of(base));
                out.figure(stem + "_mpi_us_per_value", mean_of(base), "us", base_extra);
                const double ratio = mean_of(mine) / mean_of(base);
                json_object ratio_extra;
                ratio_extra.add("pattern", label)
                    .add("op", operation_name(all_operations[op]))
                    .add("phase", phase_names[phase])
                    .add("baseline", std::string("MPI_") + baseline_ops[op])
                    .add("ours_us_per_value", mean_of(mine))
                    .add("baseline_us_per_value", mean_of(base));
                // The paper's claim: as effective as the low-level one-sided put.  A
                // reference, not enforced: active messages do strictly more work.
                out.ratio(stem + "_vs_mpi", ratio, "informational", true, ratio_extra);
            }
        }
    }
    return ok ? 0 : 1;
}

int run_release_queue_study(settings s, const world& w, mpidict::bench::report& out) {
    s.values_per_key = 1;
    const std::vector<key_type> keys = make_keys(s.keys, s.seed);
    const std::uint64_t expected = expected_checksum(keys, 1);
    constexpr std::size_t queue_sizes[] = {0, 1, 128};
    constexpr operation studied[] = {operation::insert, operation::take};
    bool ok = true;
    for (const std::size_t K : queue_sizes) {
        std::vector<run_result> reps;
        {
            const std::vector<key_type> warm(keys.begin(), keys.begin() + std::min<std::size_t>(keys.size(), 1000));
            (void)run_ours(pattern::n_to_n, s, warm, K, studied, w);
        }
        for (std::size_t rep = 0; rep < s.reps; ++rep)
            reps.push_back(run_ours(pattern::n_to_n, s, keys, K, studied, w));
        for (run_result& r : reps)
            r.found_sum = r.taken_sum;  // this study has no find loop
        ok = verify(reps, ("release queue K=" + std::to_string(K)).c_str(), s, w, expected) && ok;
        const per_rank_times times = gather(reps, w);
        for (const operation op : studied) {
            for (int phase = 0; phase < 2; ++phase) {
                const auto& mine = times.us_per_value[static_cast<int>(op)][phase];
                json_object extra;
                extra.add("study", "release_queue")
                    .add("release_queue", K)
                    .add("op", operation_name(op))
                    .add("phase", phase_names[phase])
                    .add("per_rank", mine)
                    .add("max_rank", max_of(mine));
                out.figure("release_queue_" + std::to_string(K) + "_" + operation_name(op) + "_" + phase_names[phase] +
                               "_us_per_value",
                           mean_of(mine), "us", extra);
            }
        }
    }
    return ok ? 0 : 1;
}

constexpr char description[] =
    "Seed 000 section 3's communication patterns (1-N, N-N, N-1) on hash_map against MPI\n"
    "one-sided operations in the same run, or (--study release-queue) seed 001 Table 1.\n"
    "JSON lines on stdout (rank 0), a table on stderr; exit 1 on a wrong result.";

void declare(mpidict::support::option_parser& parser, settings& s) {
    using mpidict::support::usage_error;
    parser.add_count("keys", &s.keys, "keys (m)", 1, key_range, "m")
        .add_count("values-per-key", &s.values_per_key, "values per key (n)", 1, max_values_per_key, "n")
        .add_count("blocking-factor", &s.blocking_factor, "outstanding requests per rank", 1, SIZE_MAX, "L")
        .add_count("release-queue", &s.release_queue, "sent buffers awaiting release", 0, SIZE_MAX, "q")
        .add_custom("pattern", "1n|nn|n1|all", "the communication patterns to run", "all",
                    [&s](std::string_view value) {
                        if (value == "all")
                            s.patterns = {pattern::one_to_n, pattern::n_to_n, pattern::n_to_one};
                        else if (value == "1n")
                            s.patterns = {pattern::one_to_n};
                        else if (value == "nn")
                            s.patterns = {pattern::n_to_n};
                        else if (value == "n1")
                            s.patterns = {pattern::n_to_one};
                        else
                            throw usage_error("--pattern: '" + std::string(value) + "' is not one of 1n, nn, n1, all");
                    })
        .add_count("seed", &s.seed, "seed of the keys", 0, UINT64_MAX, "S")
        .add_count("reps", &s.reps, "repetitions; medians are reported", 1, SIZE_MAX, "R")
        .add_count("buffer-bytes", &s.buffer_bytes, "runtime message size", 0, SIZE_MAX, "B")
        .add_custom("study", "patterns|release-queue", "what to measure", "patterns",
                    [&s](std::string_view value) {
                        if (value != "patterns" && value != "release-queue")
                            throw usage_error("--study: '" + std::string(value) +
                                              "' is not one of patterns, release-queue");
                        s.release_queue_study = value == "release-queue";
                    })
        .add_flag("no-baseline", &s.baseline, "skip the MPI one-sided baseline", false)
        .add_flag("corrupt-expected-checksum", &s.corrupt_expected_checksum,
                  "tests the verification: must exit 1");
}

int run(const settings& s, const world& w) {
    mpidict::bench::report out(bench_name, w.size, s.seed, w.rank == 0);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string mpi_version(version, static_cast<std::size_t>(length));
    if (const auto newline = mpi_version.find('\n'); newline != std::string::npos)
        mpi_version.resize(newline);
    out.context()
        .add("study", s.release_queue_study ? "release_queue" : "patterns")
        .add("keys", s.keys)
        .add("values_per_key", s.release_queue_study ? 1u : s.values_per_key)
        .add("value_bytes", sizeof(value_type))
        .add("blocking_factor", s.blocking_factor)
        .add("release_queue", s.release_queue)
        .add("buffer_bytes", s.buffer_bytes)
        .add("reps", s.reps)
        .add("mpi", mpi_version)
        .add("load_average", mpidict::support::read_load_average());
    const int status = s.release_queue_study ? run_release_queue_study(s, w, out) : run_patterns(s, w, out);
    if (status != 0)
        out.note("verification FAILED: exit 1");
    out.print_table();
    return status;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(argc, argv, bench_name, description, declare, run);
}
