// local_table: the serial table behind each hash_map shard, measured against
// the alternatives we could have used instead.
//
// Contenders (8-byte keys, 8-byte values, each with and without a reserve()):
//   multi_table      mpidict::local::multi_table<uint64_t, uint64_t> (ours:
//                    multi-valued, 24-byte slots, linear probing, maximum load 0.58)
//   absl_flat        absl::flat_hash_map<uint64_t, uint64_t> (Debian's abseil):
//                    single-valued, so a lower bound on what abseil would cost us
//   absl_flat_huge   absl_flat with our allocator (detail/huge_pages.hpp: arrays of
//                    4 MiB and more get MADV_HUGEPAGE, as multi_table's do), so the
//                    ratio compares the tables, not the page size (issue 52)
//   absl_flat_multi  absl::flat_hash_map<uint64_t, absl::InlinedVector<uint64_t, 1>>:
//                    the multi-valued equivalent we would actually have to store
//   multi_table_875  multi_table at abseil's maximum load, 7/8 (the same load
//                    factor; abseil's cannot be set, so ours is raised to it)
//   unordered_map    std::unordered_map<uint64_t, uint64_t> (node-based reference)
// The abseil rows are left out when the build did not find abseil.
//
// Each repetition runs every contender once, in alternating order (forward on
// even repetitions, backward on odd ones), after one warm-up round.
// Per contender and repetition: build (construct + reserve + insert N random
// keys, so page faults of a reserved array count where they happen), find every
// key (hits, each value checked), find N absent keys (misses), and heap bytes
// per stored pair at the end and at the peak of the build.  Heap bytes come from
// replacing the global operator new/delete in this binary: each live block
// counts malloc_usable_size + 8 (glibc's chunk header), i.e. what malloc really
// holds.  Hash functions are each library's default (std::hash is the identity
// on integers; keys are random, so that does not hurt it).
//
// Output: JSON lines with metric "<table>_<reserved|unreserved>_<figure>" and
// fields "table", "reserved"; ratios multi_table/absl_flat* for the reserved case,
// each beside both rates.
// A wrong lookup result exits 1.
//
// Usage: local_table [--keys N] [--reps R] [--seed S]

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpidict/support/host.hpp"
#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"
#include "common/report.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/local/multi_table.hpp"
#include "mpidict/detail/huge_pages.hpp"

#if MPIDICT_BENCH_HAVE_ABSL
#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#endif

// ---- heap accounting (this binary only) ------------------------------------------

namespace {
std::size_t g_heap_bytes = 0;
std::size_t g_heap_peak_bytes = 0;

void* counted(void* block) {
    if (!block)
        throw std::bad_alloc();
    g_heap_bytes += malloc_usable_size(block) + sizeof(std::size_t);
    if (g_heap_bytes > g_heap_peak_bytes)
        g_heap_peak_bytes = g_heap_bytes;
    return block;
}

void* counted_allocate(std::size_t size) { return counted(std::malloc(size == 0 ? 1 : size)); }

// The aligned forms (multi_table's arrays of 2 MiB and more, detail/huge_pages.hpp).
void* counted_allocate_aligned(std::size_t size, std::align_val_t alignment) {
    void* block = nullptr;
    if (posix_memalign(&block, std::max(sizeof(void*), static_cast<std::size_t>(alignment)), size == 0 ? 1 : size) != 0)
        block = nullptr;
    return counted(block);
}

void counted_free(void* block) noexcept {
    if (!block)
        return;
    g_heap_bytes -= malloc_usable_size(block) + sizeof(std::size_t);
    std::free(block);
}
}  // namespace

void* operator new(std::size_t size) { return counted_allocate(size); }
void* operator new[](std::size_t size) { return counted_allocate(size); }
void* operator new(std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return counted_allocate(size);
    } catch (...) {
        return nullptr;
    }
}
void* operator new[](std::size_t size, const std::nothrow_t&) noexcept {
    try {
        return counted_allocate(size);
    } catch (...) {
        return nullptr;
    }
}
void operator delete(void* block) noexcept { counted_free(block); }
void operator delete[](void* block) noexcept { counted_free(block); }
void operator delete(void* block, std::size_t) noexcept { counted_free(block); }
void operator delete[](void* block, std::size_t) noexcept { counted_free(block); }
void operator delete(void* block, const std::nothrow_t&) noexcept { counted_free(block); }
void operator delete[](void* block, const std::nothrow_t&) noexcept { counted_free(block); }
void* operator new(std::size_t size, std::align_val_t alignment) { return counted_allocate_aligned(size, alignment); }
void* operator new[](std::size_t size, std::align_val_t alignment) { return counted_allocate_aligned(size, alignment); }
void operator delete(void* block, std::align_val_t) noexcept { counted_free(block); }
void operator delete[](void* block, std::align_val_t) noexcept { counted_free(block); }
void operator delete(void* block, std::size_t, std::align_val_t) noexcept { counted_free(block); }
void operator delete[](void* block, std::size_t, std::align_val_t) noexcept { counted_free(block); }

namespace {

using key_type = std::uint64_t;
using value_type = std::uint64_t;
using mpidict::bench::json_object;

constexpr char bench_name[] = "local_table";

constexpr std::uint64_t splitmix_mix(std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}
// Distinct indices give distinct keys (odd step, bijective mix).
constexpr key_type key_at(std::uint64_t seed, std::uint64_t index) {
    return splitmix_mix(seed + (index + 1) * 0x9e3779b97f4a7c15ULL);
}
constexpr value_type value_of(key_type key) { return mpidict::mix64(key ^ 0x6a09e667f3bcc909ULL); }

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// ---- the contenders, behind one small interface ---------------------------------------

struct ours {
    static constexpr const char* name = "multi_table";
    mpidict::local::multi_table<key_type, value_type> table;
    explicit ours(std::size_t reserve) : table(reserve) {}
    void insert(key_type key, value_type value) { table.append(key, value); }
    // Returns the first value, or `absent`.
    value_type find(key_type key, value_type absent) const {
        const auto found = table.find(key);
        return found.empty() ? absent : found[0];
    }
    std::size_t size() const { return table.size(); }
};

// Ours at abseil's maximum load (7/8), so the two compare at the same load
// factor too (issue 52): abseil's cannot be lowered to ours, ours can be raised.
struct ours_dense {
    static constexpr const char* name = "multi_table_875";
    mpidict::local::multi_table<key_type, value_type> table;
    explicit ours_dense(std::size_t reserve) : table(reserve, 0.875) {}
    void insert(key_type key, value_type value) { table.append(key, value); }
    value_type find(key_type key, value_type absent) const {
        const auto found = table.find(key);
        return found.empty() ? absent : found[0];
    }
    std::size_t size() const { return table.size(); }
};

struct standard {
    static constexpr const char* name = "unordered_map";
    std::unordered_map<key_type, value_type> table;
    explicit standard(std::size_t reserve) {
        if (reserve)
            table.reserve(reserve);
    }
    void insert(key_type key, value_type value) { table.emplace(key, value); }
    value_type find(key_type key, value_type absent) const {
        const auto found = table.find(key);
        return found == table.end() ? absent : found->second;
    }
    std::size_t size() const { return table.size(); }
};

#if MPIDICT_BENCH_HAVE_ABSL
struct abseil {
    static constexpr const char* name = "absl_flat";
    absl::flat_hash_map<key_type, value_type> table;
    explicit abseil(std::size_t reserve) {
        if (reserve)
            table.reserve(reserve);
    }
    void insert(key_type key, value_type value) { table.emplace(key, value); }
    value_type find(key_type key, value_type absent) const {
        const auto found = table.find(key);
        return found == table.end() ? absent : found->second;
    }
    std::size_t size() const { return table.size(); }
};

// abseil's table on the allocator multi_table uses (huge pages for large arrays).
struct abseil_huge {
    static constexpr const char* name = "absl_flat_huge";
    using allocator = mpidict::detail::huge_page_allocator<std::pair<const key_type, value_type>>;
    absl::flat_hash_map<key_type, value_type, absl::Hash<key_type>, std::equal_to<key_type>, allocator> table;
    explicit abseil_huge(std::size_t reserve) {
        if (reserve)
            table.reserve(reserve);
    }
    void insert(key_type key, value_type value) { table.emplace(key, value); }
    value_type find(key_type key, value_type absent) const {
        const auto found = table.find(key);
        return found == table.end() ? absent : found->second;
    }
    std::size_t size() const { return table.size(); }
};

struct abseil_multi {
    static constexpr const char* name = "absl_flat_multi";
    absl::flat_hash_map<key_type, absl::InlinedVector<value_type, 1>> table;
    explicit abseil_multi(std::size_t reserve) {
        if (reserve)
            table.reserve(reserve);
    }
    void insert(key_type key, value_type value) { table[key].push_back(value); }
    value_type find(key_type key, value_type absent) const {
        const auto found = table.find(key);
        return found == table.end() ? absent : found->second[0];
    }
    std::size_t size() const { return table.size(); }
};
#endif

struct measurement {
    std::vector<double> insert_rate, find_hit_rate, find_miss_rate, bytes_per_pair, peak_bytes_per_pair;
};

// One repetition of every figure for `Table`; false if a lookup was wrong.
template <class Table>
bool measure(const std::vector<key_type>& keys, const std::vector<key_type>& absent_keys, bool reserved,
             measurement& into) {
    const double n = static_cast<double>(keys.size());
    const std::size_t heap_before = g_heap_bytes;
    g_heap_peak_bytes = g_heap_bytes;
    bool ok = true;
    {
        double start = now_seconds();
        Table table(reserved ? keys.size() : 0);
        for (const key_type key : keys)
            table.insert(key, value_of(key));
        const double build_seconds = now_seconds() - start;
        // Read the heap before the result vectors below allocate.
        const auto held = static_cast<double>(g_heap_bytes - heap_before);
        const auto peak = static_cast<double>(g_heap_peak_bytes - heap_before);
        into.insert_rate.push_back(n / build_seconds);
        into.bytes_per_pair.push_back(held / n);
        into.peak_bytes_per_pair.push_back(peak / n);
        ok = ok && table.size() == keys.size();

        constexpr value_type absent = 0x5eed5eed5eed5eedULL;
        std::uint64_t sum = 0, expected = 0;
        start = now_seconds();
        for (const key_type key : keys)
            sum += table.find(key, absent);
        into.find_hit_rate.push_back(n / (now_seconds() - start));
        for (const key_type key : keys)
            expected += value_of(key);
        ok = ok && sum == expected;

        std::uint64_t misses = 0;
        start = now_seconds();
        for (const key_type key : absent_keys)
            misses += table.find(key, absent) == absent ? 1 : 0;
        into.find_miss_rate.push_back(static_cast<double>(absent_keys.size()) / (now_seconds() - start));
        ok = ok && misses == absent_keys.size();
    }
    return ok;
}

// One contender: its name and its measurements, one per repetition.
struct contender {
    std::string name;
    bool (*measure_once)(const std::vector<key_type>&, const std::vector<key_type>&, bool, measurement&);
    measurement m;
    bool ok = true;
};

template <class Table>
contender contender_for() {
    return contender{Table::name, &measure<Table>, {}, true};
}

void report_contender(mpidict::bench::report& out, const contender& c, bool reserved) {
    const std::string prefix = c.name + (reserved ? "_reserved_" : "_unreserved_");
    json_object fields;
    fields.add("table", c.name).add("reserved", reserved);
    out.figure(prefix + "insert_rate", c.m.insert_rate, "ops/s",
               json_object(fields).add("what", "construct + reserve + insert every key"));
    out.figure(prefix + "find_hit_rate", c.m.find_hit_rate, "ops/s", fields);
    out.figure(prefix + "find_miss_rate", c.m.find_miss_rate, "ops/s", fields);
    out.figure(prefix + "bytes_per_pair", c.m.bytes_per_pair, "bytes",
               json_object(fields).add("what", "heap bytes held after the build / pairs"));
    out.figure(prefix + "peak_bytes_per_pair", c.m.peak_bytes_per_pair, "bytes",
               json_object(fields).add("what", "heap high-water mark during the build / pairs"));
    if (!c.ok)
        out.note(prefix + "lookups returned WRONG results");
}

int run(int argc, char** argv) {
    std::uint64_t n = 4'000'000;
    std::uint64_t reps = 3;
    std::uint64_t seed = 20240601;
    mpidict::support::option_parser parser(
        "local_table [options]",
        "The local table (local/multi_table.hpp) against std::unordered_map and, when found,\n"
        "abseil's flat_hash_map, one process.  JSON lines on stdout, a table on stderr; exit 1\n"
        "on a wrong lookup result.");
    parser.add_count("keys", &n, "keys inserted and found", 1)
        .add_count("reps", &reps, "repetitions; medians are reported", 1, UINT64_MAX, "R")
        .add_count("seed", &seed, "seed of the keys", 0, UINT64_MAX, "S");
    try {
        if (!parser.parse(mpidict::support::arguments_of(argc, argv))) {
            std::fputs(parser.help().c_str(), stdout);
            return mpidict::support::exit_success;
        }
    } catch (const mpidict::support::usage_error& problem) {
        std::fprintf(stderr, "%s: error: %s\nRun '%s --help' for usage.\n", bench_name, problem.what(), bench_name);
        return mpidict::support::exit_usage;
    }

    mpidict::bench::report out(bench_name, 1, seed, true);
    out.context()
        .add("keys", n)
        .add("key_bytes", sizeof(key_type))
        .add("value_bytes", sizeof(value_type))
        .add("load_average_at_start", mpidict::support::read_load_average());

    std::vector<key_type> keys(n), absent_keys(n);
    for (std::uint64_t index = 0; index < n; ++index) {
        keys[index] = key_at(seed, index);
        absent_keys[index] = key_at(seed, n + index);  // never inserted
    }

    std::vector<std::pair<std::string, measurement>> results;
    bool ok = true;
    for (const bool reserved : {true, false}) {
        std::vector<contender> contenders{contender_for<ours>(), contender_for<ours_dense>()};
#if MPIDICT_BENCH_HAVE_ABSL
        contenders.push_back(contender_for<abseil>());
        contenders.push_back(contender_for<abseil_huge>());
        contenders.push_back(contender_for<abseil_multi>());
#endif
        contenders.push_back(contender_for<standard>());
        for (contender& c : contenders) {  // warm-up round, not reported
            measurement scratch;
            c.ok = c.measure_once(keys, absent_keys, reserved, scratch) && c.ok;
        }
        for (std::uint64_t rep = 0; rep < reps; ++rep)
            for (std::size_t i = 0; i < contenders.size(); ++i) {
                contender& c = contenders[rep % 2 == 0 ? i : contenders.size() - 1 - i];
                c.ok = c.measure_once(keys, absent_keys, reserved, c.m) && c.ok;
            }
        for (const contender& c : contenders) {
            report_contender(out, c, reserved);
            ok = ok && c.ok;
            results.emplace_back(c.name + (reserved ? "_reserved_" : "_unreserved_"), c.m);
        }
    }
#if MPIDICT_BENCH_HAVE_ABSL
    // Ours against abseil, reserved, per figure (> 1: ours faster / smaller for
    // bytes < 1), each beside both sides' medians.
    auto find_result = [&](const std::string& prefix) -> const measurement& {
        for (const auto& [name, m] : results)
            if (name == prefix)
                return m;
        throw std::logic_error("no result for " + prefix);
    };
    const std::pair<const char*, const char*> pairs[] = {{"multi_table", "absl_flat"},
                                                         {"multi_table", "absl_flat_huge"},
                                                         {"multi_table", "absl_flat_multi"},
                                                         {"multi_table_875", "absl_flat_huge"}};
    for (const auto& [ours_name, other] : pairs) {
        const measurement& mine = find_result(std::string(ours_name) + "_reserved_");
        const measurement& theirs = find_result(std::string(other) + "_reserved_");
        auto median = [](const std::vector<double>& samples) { return mpidict::bench::summary::of(samples).median; };
        const std::string prefix = std::string(ours_name) + "_vs_" + other + "_";
        const auto ratio = [&](const char* figure, const std::vector<double>& a, const std::vector<double>& b,
                               const char* what) {
            json_object fields;
            fields.add("table", ours_name).add("against", other).add("reserved", true).add("ours", median(a)).add("theirs", median(b))
                .add("what", what).add("load_1m", mpidict::bench::report::load_1m());
            out.figure(prefix + figure, median(a) / median(b), "ratio", fields);
        };
        ratio("insert", mine.insert_rate, theirs.insert_rate, "rate ratio, > 1: multi_table faster");
        ratio("find_hit", mine.find_hit_rate, theirs.find_hit_rate, "rate ratio, > 1: multi_table faster");
        ratio("find_miss", mine.find_miss_rate, theirs.find_miss_rate, "rate ratio, > 1: multi_table faster");
        ratio("bytes", mine.bytes_per_pair, theirs.bytes_per_pair, "bytes per pair ratio, < 1: multi_table smaller");
    }
#else
    out.note("abseil not found at configure time: absl_flat rows skipped");
#endif
    if (!ok)
        out.note("lookup verification FAILED: exit 1");
    out.print_table();
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    try {
        return run(argc, argv);
    } catch (const std::exception& problem) {
        std::fprintf(stderr, "%s: error: %s\n", bench_name, problem.what());
        return mpidict::support::exit_failure;
    }
}
