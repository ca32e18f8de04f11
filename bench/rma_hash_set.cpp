// rma_hash_set: seed 002's distributed hash table benchmark (Maynard, "Comparing
// UPC and one-sided MPI: a distributed hash table for GAP", Tables 1, 2 and 4),
// with the three visited-set backends of this library in one run.
//
// Each rank creates `local volume` (LV) integer objects of B bytes from random
// elements (a bijective mix of (rank, index), so all p * LV objects are
// distinct), hashes and inserts them, then probes the table three more times
// for all of them: four visits per object.  Timed from a barrier to a barrier
// (the slowest rank), per backend:
//
//   rma_owner_lock  rma_hash_set, seed 002's MPI strategy: an exclusive lock on
//                   the owner around each probe sequence (the baseline: it is
//                   the paper's MPI code)
//   rma_lock_free   rma_hash_set, compare-and-swap claims, lock-free reads
//   hash_map        the active-message hash_map: async_insert_if_absent + flush,
//                   then find_many for each probe pass (aggregated messages)
//
// One object at a time for the rma backends (insert_if_absent, contains), as in
// the paper.  On one node the rma backends use a shared-memory window with
// direct atomics; --access-rma forces MPI_Win_allocate + MPI RMA.  Also a
// serial reference: one std::unordered_set doing one rank's four visits.
//
// Default grid: LV in {10k, 25k, 50k, 100k} at 8-byte objects (Tables 1/2)
// and B in {4, 8, 16, 32} at LV = 100k (Table 4); --full runs every pair.
// Figures: "four_visits_seconds" (median of --reps, min, max) per backend, LV
// and B; "visit_rate" (4 p LV / median); ratios of each backend over
// rma_owner_lock.  Checksums: every object inserted exactly once over all
// ranks, every probe finds every object; a mismatch exits 1.
//
// Usage: rma_hash_set [--volume LV] [--object-bytes B] [--full] [--reps R]
//          [--seed S] [--max-load X] [--access-rma] [--no-hash-map]
//          [--no-lock-free] [--no-owner-lock] [--no-serial]

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <map>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/mpi_main.hpp"
#include "mpidict/support/host.hpp"
#include "common/report.hpp"
#include "mpidict/support/yielding.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/rma_hash_set.hpp"

namespace {

using mpidict::bench::json_object;

constexpr char bench_name[] = "rma_hash_set";

struct settings {
    std::uint64_t volume = 0;        // --volume; 0: the paper's list
    std::uint64_t object_bytes = 0;  // --object-bytes; 0: every size
    bool full = false;               // every (volume, size) pair
    std::vector<std::pair<std::uint64_t, int>> grid;  // (local volume, object bytes), from the three above
    std::uint64_t reps = 3;
    std::uint64_t seed = 2012;
    double max_load = 0.5;
    bool access_rma = false;
    bool hash_map = true;
    bool lock_free = true;
    bool owner_lock = true;
    bool serial = true;
};

template <std::size_t Words>
struct object {
    std::array<std::uint32_t, Words> words;
    bool operator==(const object&) const = default;
};

template <class T>
struct object_hash {
    std::size_t operator()(const T& value) const { return static_cast<std::size_t>(mpidict::hasher<T>{}(value)); }
};

// murmur3's 32-bit finaliser: a bijection, so distinct inputs stay distinct.
constexpr std::uint32_t mix32(std::uint32_t x) {
    x ^= x >> 16;
    x *= 0x85ebca6bU;
    x ^= x >> 13;
    x *= 0xc2b2ae35U;
    x ^= x >> 16;
    return x;
}

// The i-th object of `rank`: distinct over (rank, i) for p * LV < 2^32.
template <class T>
T make_object(std::uint64_t seed, int rank, std::uint64_t volume, std::uint64_t index) {
    const std::uint64_t unique = static_cast<std::uint64_t>(rank) * volume + index;
    T result{};
    if constexpr (sizeof(T) == 4) {
        result.words[0] = mix32(static_cast<std::uint32_t>(unique) ^ static_cast<std::uint32_t>(seed));
    } else {
        const std::uint64_t head = mpidict::mix64(unique ^ (seed << 32));
        result.words[0] = static_cast<std::uint32_t>(head);
        result.words[1] = static_cast<std::uint32_t>(head >> 32);
        std::uint64_t filler = mpidict::mix64(head + 0x9e3779b97f4a7c15ULL);
        for (std::size_t word = 2; word < result.words.size(); ++word) {
            result.words[word] = static_cast<std::uint32_t>(filler);
            filler = mpidict::mix64(filler);
        }
    }
    return result;
}

using mpidict::support::barrier_yielding;
using mpidict::support::wait_yielding;

std::uint64_t sum(MPI_Comm comm, std::uint64_t value) {
    std::uint64_t total = 0;
    MPI_Request request = MPI_REQUEST_NULL;
    MPI_Iallreduce(&value, &total, 1, MPI_UINT64_T, MPI_SUM, comm, &request);
    wait_yielding(request);
    return total;
}

struct outcome {
    double seconds = 0;
    std::uint64_t inserted = 0;  // this rank's "was new" answers
    std::uint64_t found = 0;     // this rank's successful probes
    bool shared_memory = false;
};

template <class T>
outcome run_rma(MPI_Comm comm, const std::vector<T>& objects, mpidict::rma_sync sync, const settings& s) {
    mpidict::rma_hash_set_config config;
    config.expected_per_rank = objects.size() + objects.size() / 16 + 64;
    config.max_load = s.max_load;
    config.sync = sync;
    config.access = s.access_rma ? mpidict::rma_access::mpi_rma : mpidict::rma_access::automatic;
    mpidict::rma_hash_set<T> set(comm, config);
    outcome result;
    result.shared_memory = set.shared_memory();
    barrier_yielding(comm);
    const double start = MPI_Wtime();
    for (const T& each : objects)
        result.inserted += set.insert_if_absent(each).get() ? 1 : 0;
    for (int pass = 0; pass < 3; ++pass)
        for (const T& each : objects)
            result.found += set.contains(each).get() ? 1 : 0;
    barrier_yielding(comm);
    result.seconds = MPI_Wtime() - start;
    set.destroy();
    return result;
}

template <class T>
outcome run_hash_map(MPI_Comm comm, const std::vector<T>& objects) {
    mpidict::hash_map_config config;
    config.expected_keys_per_rank = objects.size() + objects.size() / 16 + 64;
    mpidict::hash_map<T, std::uint8_t> map(comm, config);
    outcome result;
    barrier_yielding(comm);
    const double start = MPI_Wtime();
    // "Was new" comes back through requests; issue them in windows so the
    // request table stays bounded, as a visited-set user would.
    constexpr std::size_t window = 2048;
    std::vector<mpidict::request<bool>> pending;
    pending.reserve(window);
    for (const T& each : objects) {
        pending.push_back(map.insert_if_absent(each, std::uint8_t{1}));
        if (pending.size() == window) {
            for (auto& request : pending)
                result.inserted += request.get() ? 1 : 0;
            pending.clear();
        }
    }
    for (auto& request : pending)
        result.inserted += request.get() ? 1 : 0;
    pending.clear();
    map.flush();
    for (int pass = 0; pass < 3; ++pass)
        map.find_many(std::span<const T>(objects), 1, [&](std::size_t, std::span<const std::uint8_t> values) {
            result.found += values.empty() ? 0 : 1;
        });
    map.flush();
    result.seconds = MPI_Wtime() - start;
    map.destroy();
    return result;
}

template <class T>
outcome run_serial(const std::vector<T>& objects) {
    outcome result;
    const double start = MPI_Wtime();
    std::unordered_set<T, object_hash<T>> set;
    set.reserve(objects.size());
    for (const T& each : objects)
        result.inserted += set.insert(each).second ? 1 : 0;
    for (int pass = 0; pass < 3; ++pass)
        for (const T& each : objects)
            result.found += set.contains(each) ? 1 : 0;
    result.seconds = MPI_Wtime() - start;
    return result;
}

struct point_key {
    std::uint64_t volume;
    int bytes;
    bool operator<(const point_key& other) const {
        return volume != other.volume ? volume < other.volume : bytes < other.bytes;
    }
};

class runner {
public:
    runner(const settings& s, MPI_Comm comm, int rank, int size)
        : m_settings(s), m_comm(comm), m_rank(rank), m_size(size), m_out(bench_name, size, s.seed, rank == 0) {
        m_out.context()
            .add("max_load", s.max_load)
            .add("forced_mpi_rma", s.access_rma)
            .add("load_average", mpidict::support::read_load_average());
    }

    template <class T>
    void measure(std::uint64_t volume) {
        std::vector<T> objects;
        objects.reserve(volume);
        for (std::uint64_t index = 0; index < volume; ++index)
            objects.push_back(make_object<T>(m_settings.seed, m_rank, volume, index));
        const int bytes = static_cast<int>(sizeof(T));
        const std::uint64_t total = volume * static_cast<std::uint64_t>(m_size);

        struct entry {
            const char* name;
            bool enabled;
            bool distributed;
        };
        const entry backends[] = {{"rma_owner_lock", m_settings.owner_lock, true},
                                  {"rma_lock_free", m_settings.lock_free, true},
                                  {"hash_map", m_settings.hash_map, true},
                                  {"serial_unordered_set", m_settings.serial, false}};
        // Repetitions outside, backends inside in an order that rotates with the
        // repetition, so no backend always runs first or right after another.
        constexpr std::size_t backend_count = sizeof(backends) / sizeof(backends[0]);
        std::vector<double> samples_of[backend_count];
        bool shared_memory_of[backend_count] = {};
        for (std::uint64_t rep = 0; rep < m_settings.reps; ++rep) {
            for (std::size_t slot = 0; slot < backend_count; ++slot) {
                const std::size_t which = (slot + rep) % backend_count;
                const entry& backend = backends[which];
                if (!backend.enabled)
                    continue;
                std::vector<double>& samples = samples_of[which];
                bool& shared_memory = shared_memory_of[which];
                outcome result;
                const std::string name = backend.name;
                if (name == "rma_owner_lock")
                    result = run_rma(m_comm, objects, mpidict::rma_sync::owner_lock, m_settings);
                else if (name == "rma_lock_free")
                    result = run_rma(m_comm, objects, mpidict::rma_sync::lock_free, m_settings);
                else if (name == "hash_map")
                    result = run_hash_map(m_comm, objects);
                else if (m_rank == 0)
                    result = run_serial(objects);
                // Ranks idle during the serial run wait here yielding their cores.
                barrier_yielding(m_comm);
                shared_memory = result.shared_memory;
                // Checksums: every object new exactly once, every probe found.
                const std::uint64_t inserted = backend.distributed ? sum(m_comm, result.inserted) : result.inserted;
                const std::uint64_t found = backend.distributed ? sum(m_comm, result.found) : result.found;
                const std::uint64_t want = backend.distributed ? total : volume;
                if (m_rank == 0 && (inserted != want || found != 3 * want)) {
                    std::fprintf(stderr,
                                 "%s: CHECKSUM MISMATCH [%s, LV %llu, %d bytes]: %llu inserted (want %llu), %llu "
                                 "found (want %llu)\n",
                                 bench_name, backend.name, static_cast<unsigned long long>(volume), bytes,
                                 static_cast<unsigned long long>(inserted), static_cast<unsigned long long>(want),
                                 static_cast<unsigned long long>(found), static_cast<unsigned long long>(3 * want));
                    m_failed = true;
                }
                samples.push_back(result.seconds);
            }
        }
        for (std::size_t which = 0; which < backend_count; ++which) {
            const entry& backend = backends[which];
            if (!backend.enabled)
                continue;
            const std::vector<double>& samples = samples_of[which];
            const bool shared_memory = shared_memory_of[which];
            const double median = mpidict::bench::summary::of(samples).median;
            m_medians[{volume, bytes}][backend.name] = median;
            json_object extra;
            extra.add("backend", backend.name).add("local_volume", volume).add("object_bytes", bytes);
            if (std::string(backend.name).starts_with("rma"))
                extra.add("access", shared_memory ? "shared_memory" : "mpi_rma");
            if (!backend.distributed)
                extra.add("note", "one process, one rank's objects");
            m_out.figure("four_visits_seconds", samples, "s", extra);
            const double visits = 4.0 * static_cast<double>(backend.distributed ? total : volume);
            m_out.figure("visit_rate", visits / median, "ops/s", extra);
        }
        auto& medians = m_medians[{volume, bytes}];
        if (medians.contains("rma_owner_lock")) {
            for (const char* name : {"rma_lock_free", "hash_map"}) {
                if (!medians.contains(name))
                    continue;
                json_object extra;
                extra.add("backend", name).add("baseline", "rma_owner_lock").add("local_volume", volume).add(
                    "object_bytes", bytes).add("ours_seconds", medians.at(name)).add("baseline_seconds",
                                                                                    medians.at("rma_owner_lock"));
                const double speedup = medians.at("rma_owner_lock") / medians.at(name);
                m_out.figure(std::string(name) + "_speedup_vs_owner_lock", speedup, "ratio", extra);
            }
        }
    }

    void run() {
        for (const auto& [volume, bytes] : m_settings.grid) {
            switch (bytes) {
            case 4: measure<object<1>>(volume); break;
            case 8: measure<object<2>>(volume); break;
            case 16: measure<object<4>>(volume); break;
            default: measure<object<8>>(volume); break;
            }
        }
        if (m_rank != 0)
            return;
        // The paper's tables: time (s) per backend by local volume and by object size.
        const char* names[] = {"rma_owner_lock", "rma_lock_free", "hash_map", "serial_unordered_set"};
        std::fprintf(stderr, "\n%s: seconds for four visits of LV objects per rank, %d ranks (median of %llu)\n",
                     bench_name, m_size, static_cast<unsigned long long>(m_settings.reps));
        std::fprintf(stderr, "  %8s %5s %14s %14s %14s %14s %10s %10s\n", "LV", "bytes", names[0], names[1], names[2],
                     "serial(1 rank)", "lf/owner", "hm/owner");
        for (const auto& [where, medians] : m_medians) {
            std::fprintf(stderr, "  %8llu %5d", static_cast<unsigned long long>(where.volume), where.bytes);
            for (const char* name : names) {
                if (medians.contains(name))
                    std::fprintf(stderr, " %14.4f", medians.at(name));
                else
                    std::fprintf(stderr, " %14s", "-");
            }
            for (const char* name : {"rma_lock_free", "hash_map"}) {
                if (medians.contains(name) && medians.contains("rma_owner_lock"))
                    std::fprintf(stderr, " %9.2fx", medians.at("rma_owner_lock") / medians.at(name));
                else
                    std::fprintf(stderr, " %10s", "-");
            }
            std::fprintf(stderr, "\n");
        }
        std::fprintf(stderr, "  (lf/owner, hm/owner: speedup of rma_lock_free and hash_map over rma_owner_lock)\n");
    }

    bool failed() const { return m_failed; }
    mpidict::bench::report& out() { return m_out; }

private:
    const settings& m_settings;
    MPI_Comm m_comm;
    int m_rank;
    int m_size;
    mpidict::bench::report m_out;
    std::map<point_key, std::map<std::string, double>> m_medians;
    bool m_failed = false;
};

constexpr char description[] =
    "Seed 002's distributed hash table benchmark (Tables 1, 2 and 4): rma_hash_set with both\n"
    "strategies against hash_map and a serial set in the same run.  JSON lines on stdout\n"
    "(rank 0), a table on stderr; exit 1 if a result is wrong.";

void declare(mpidict::support::option_parser& parser, settings& s) {
    using mpidict::support::usage_error;
    parser.add_count("volume", &s.volume, "objects per rank (LV); 0: 10000, 25000, 50000, 100000", 0, UINT64_MAX,
                     "LV")
        .add_custom("object-bytes", "B", "object size: 4, 8, 16 or 32; 0: every size", "0",
                    [&s](std::string_view text) {
                        const std::uint64_t bytes = mpidict::support::parse_count(text, "--object-bytes");
                        if (bytes != 0 && bytes != 4 && bytes != 8 && bytes != 16 && bytes != 32)
                            throw usage_error("--object-bytes: " + std::to_string(bytes) +
                                              " is not one of 4, 8, 16, 32");
                        s.object_bytes = bytes;
                    })
        .add_flag("full", &s.full, "every (volume, size) pair, not only Tables 1/2 and 4")
        .add_count("reps", &s.reps, "repetitions; medians are reported", 1, UINT64_MAX, "R")
        .add_count("seed", &s.seed, "seed of the objects", 0, UINT64_MAX, "S")
        .add_real("max-load", &s.max_load, "sizing load factor in (0, 1]", 1e-9, 1)
        .add_flag("access-rma", &s.access_rma, "force MPI RMA windows (not shared memory)")
        .add_flag("no-hash-map", &s.hash_map, "skip the hash_map baseline", false)
        .add_flag("no-lock-free", &s.lock_free, "skip the lock-free strategy", false)
        .add_flag("no-owner-lock", &s.owner_lock, "skip the owner-lock strategy", false)
        .add_flag("no-serial", &s.serial, "skip the serial baseline", false)
        .add_check([&s] {
            const std::vector<std::uint64_t> volumes = s.volume != 0 ? std::vector<std::uint64_t>{s.volume}
                                                                      : std::vector<std::uint64_t>{10000, 25000,
                                                                                                   50000, 100000};
            const std::vector<int> sizes = s.object_bytes != 0 ? std::vector<int>{static_cast<int>(s.object_bytes)}
                                                                : std::vector<int>{4, 8, 16, 32};
            for (const std::uint64_t v : volumes)
                for (const int b : sizes)
                    // Default: Tables 1/2 (every LV at 8 bytes) and Table 4 (every size at the largest LV).
                    if (s.full || s.volume != 0 || s.object_bytes != 0 || b == 8 || v == volumes.back())
                        s.grid.emplace_back(v, b);
        });
}

int run(const settings& s, const mpidict::bench::world& w) {
    for (const auto& [volume, bytes] : s.grid) {
        if (volume * static_cast<std::uint64_t>(w.size) >= (std::uint64_t{1} << 32)) {
            if (w.rank == 0)
                std::fprintf(stderr, "%s: error: --volume x ranks must stay below 2^32 (distinct objects)\n",
                             bench_name);
            return mpidict::support::exit_usage;
        }
    }
    runner bench(s, w.comm, w.rank, w.size);
    bench.run();
    if (w.rank == 0) {
        const auto memory = mpidict::support::read_process_memory();
        bench.out().figure("peak_rss_rank0", static_cast<double>(memory.peak_rss_bytes), "bytes");
    }
    int failed = bench.failed() ? 1 : 0;
    MPI_Bcast(&failed, 1, MPI_INT, 0, w.comm);
    return failed;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(argc, argv, bench_name, description, declare, run);
}
