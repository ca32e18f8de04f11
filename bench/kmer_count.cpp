// k-mer counting three ways with hash_map (issue 16): the same k-mers of a word
// list counted by
//   append    async_insert(kmer, 1), then each owner counts a key's values;
//   visitor   async_visit with a registered visitor adding to the key's value
//             (the values are copied out and written back);
//   lambda    async_visit with a lambda adding in place (values_ref);
//   reduce    async_reduce(kmer, 1) (std::plus, combined at the origin);
// and two serial baselines on rank 0 over all k-mers (the other ranks wait
// yielding their cores): std::unordered_map (node-based, the seed's) and
// absl::flat_hash_map reserved for the distinct k-mers (the one a user would write;
// built with Debian's abseil when present).  Each repetition runs the serial
// baselines and the distributed methods in alternating order.
//
// Each rank takes every p-th line of --input and every substring of --k bytes
// of it (a k-mer, k <= 8, packed into a uint64).  One repetition of a method
// is a fresh map, the inserts, flush, and the counts in place (for append: one
// pass over the shard), from a barrier to a barrier.  Every method's total and
// its top 10 must equal the serial count's (exit 1 otherwise).  Medians of --reps;
// ratios in the same run.  Beside the rates, the processor time (this process's,
// CLOCK_PROCESS_CPUTIME_ID) of the flat serial loop and of one repetition of each
// method on its busiest rank: on a loaded machine the wall-clock ratio moves
// with each side's share of the cores, the work does not.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <mpi.h>

#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/support/yielding.hpp"

#if MPIDICT_BENCH_HAVE_ABSL
#include <absl/container/flat_hash_map.h>
#endif

namespace {

constexpr char bench_name[] = "kmer_count";
constexpr char description[] =
    "k-mer counting with hash_map: appending 1s, a registered visitor, a lambda visitor and\n"
    "async_reduce, beside serial std::unordered_map and absl::flat_hash_map counts on rank 0\n"
    "(interleaved with the methods).  JSON lines on stdout (rank 0), a table on stderr; exit 1 if\n"
    "a method's total or top 10 differs from the serial count.";

struct settings {
    std::string input = "/usr/share/dict/dutch";   // Debian wdutch (data/README.md)
    std::uint64_t k = 5;
    std::uint64_t reps = 3;
    bool only_reduce = false;  // for profiling the reduce path alone
};

void declare(mpidict::support::option_parser& parser, settings& s) {
    parser.add_text("input", &s.input, "a text file; every line is split into k-mers", "FILE")
        .add_count("k", &s.k, "k-mer length in bytes", 1, 8, "K")
        .add_count("reps", &s.reps, "repetitions; medians are reported", 1, 1000, "R")
        .add_flag("only-reduce", &s.only_reduce,
                  "run only the async_reduce method (and the serial baselines): for profiling it");
}

using mpidict::bench::json_object;
using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

double cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}
using entry = std::pair<std::uint64_t, std::uint64_t>;  // (count, k-mer)

std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path);
    if (!in)
        throw mpidict::invalid_argument_error("kmer_count: cannot open " + path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);)
        lines.push_back(std::move(line));
    return lines;
}

std::vector<std::uint64_t> kmers_of(const std::vector<std::string>& lines, std::size_t k, int rank, int size) {
    std::vector<std::uint64_t> out;
    for (std::size_t i = static_cast<std::size_t>(rank); i < lines.size(); i += static_cast<std::size_t>(size)) {
        const std::string& line = lines[i];
        for (std::size_t start = 0; start + k <= line.size(); ++start) {
            std::uint64_t packed = 0;
            std::memcpy(&packed, line.data() + start, k);
            out.push_back(packed);
        }
    }
    return out;
}

// The 10 largest (count, k-mer) pairs, largest first (ties: larger k-mer first).
std::vector<entry> top10(std::vector<entry> candidates) {
    const std::size_t n = std::min<std::size_t>(10, candidates.size());
    std::partial_sort(candidates.begin(), candidates.begin() + static_cast<std::ptrdiff_t>(n), candidates.end(),
                      std::greater<>());
    candidates.resize(n);
    return candidates;
}

struct tally {
    std::uint64_t total = 0;
    std::vector<entry> top;
};

// Every rank's local top 10 and total, merged on every rank.
tally merge(MPI_Comm comm, int size, std::uint64_t total, const std::vector<entry>& local) {
    std::vector<entry> padded = local;
    padded.resize(10, entry{0, 0});
    std::vector<entry> all(10 * static_cast<std::size_t>(size));
    MPI_Allgather(padded.data(), 20, MPI_UINT64_T, all.data(), 20, MPI_UINT64_T, comm);
    tally result;
    MPI_Allreduce(&total, &result.total, 1, MPI_UINT64_T, MPI_SUM, comm);
    all.erase(std::remove(all.begin(), all.end(), entry{0, 0}), all.end());
    result.top = top10(std::move(all));
    return result;
}

// Counts in the shard: a key's count is its one value, or (append) how many values it has.
tally count_shard(MPI_Comm comm, int size, const map_type& map, bool count_values) {
    std::vector<entry> local;
    std::uint64_t total = 0;
    map.local_for_each([&](std::uint64_t key, const map_type::values_view& values) {
        const std::uint64_t n = count_values ? values.size() : values[0];
        total += n;
        local.emplace_back(n, key);
        if (local.size() >= 1024)
            local = top10(std::move(local));
    });
    return merge(comm, size, total, top10(std::move(local)));
}

std::uint64_t add(map_type::visit_context&, const std::uint64_t&, std::vector<std::uint64_t>& values,
                  const std::uint64_t& amount) {
    if (values.empty())
        values.push_back(0);
    values[0] += amount;
    return 0;
}

// The 10 most frequent k-mers of a serial count (a map k-mer -> count).
template <class Map>
std::vector<entry> top10_of(const Map& counts) {
    std::vector<entry> pairs;
    pairs.reserve(counts.size());
    for (const auto& [kmer, n] : counts)
        pairs.emplace_back(n, kmer);
    return top10(std::move(pairs));
}

// The one-core baselines, each in a function of its own that is never inlined:
// inside run() their loops were laid out beside the inlined async_reduce, and the
// flat loop's rate moved with that code (stop 65: 37-62 M k-mers/s in one build,
// 42-66 M/s in another, from the same source).
[[gnu::noinline]] std::vector<entry> count_unordered(const std::vector<std::uint64_t>& kmers, std::size_t& distinct) {
    std::unordered_map<std::uint64_t, std::uint64_t> counts;
    for (std::uint64_t kmer : kmers)
        ++counts[kmer];
    distinct = counts.size();
    return top10_of(counts);
}

#if MPIDICT_BENCH_HAVE_ABSL
[[gnu::noinline]] std::vector<entry> count_flat(const std::vector<std::uint64_t>& kmers, std::size_t distinct) {
    absl::flat_hash_map<std::uint64_t, std::uint64_t> flat;
    flat.reserve(distinct);
    for (std::uint64_t kmer : kmers)
        ++flat[kmer];
    return top10_of(flat);
}
#endif

int run(const settings& s, const mpidict::bench::world& w) {
    const std::vector<std::string> lines = read_lines(s.input);
    const std::vector<std::uint64_t> kmers = kmers_of(lines, s.k, w.rank, w.size);
    mpidict::bench::report out(bench_name, w.size, 0, w.rank == 0);
    out.context().add("input", s.input).add("k", s.k);

    // Serial baselines on rank 0 over every k-mer of the file; the first run of
    // the node-based one gives the expected counts.
    tally expected;
    std::vector<double> serial_seconds, flat_seconds, flat_cpu_seconds;
    std::vector<std::uint64_t> everything;
    std::size_t distinct = 0;
    if (w.rank == 0)
        everything = kmers_of(lines, s.k, 0, 1);
    const auto run_serial = [&](bool first) {
        if (w.rank == 0) {
            double start = MPI_Wtime();
            std::size_t counted = 0;
            std::vector<entry> top = count_unordered(everything, counted);
            serial_seconds.push_back(MPI_Wtime() - start);
            if (first) {
                expected.top = top;
                expected.total = everything.size();
                distinct = counted;
            } else if (top != expected.top) {
                throw mpidict::error("kmer_count: the serial unordered_map's top 10 changed between repetitions");
            }
#if MPIDICT_BENCH_HAVE_ABSL
            start = MPI_Wtime();
            const double cpu_start = cpu_seconds();
            top = count_flat(everything, distinct);
            flat_seconds.push_back(MPI_Wtime() - start);
            flat_cpu_seconds.push_back(cpu_seconds() - cpu_start);
            if (top != expected.top)
                throw mpidict::error("kmer_count: the serial flat_hash_map's top 10 differs from unordered_map's");
#endif
        }
        mpidict::support::barrier_yielding(w.comm);
    };
    run_serial(true);
    MPI_Bcast(&expected.total, 1, MPI_UINT64_T, 0, w.comm);
    expected.top.resize(10);
    MPI_Bcast(expected.top.data(), 20, MPI_UINT64_T, 0, w.comm);

    enum method { append, visitor, lambda, reduce };
    const char* names[] = {"append", "visitor", "lambda", "reduce"};
    std::vector<double> seconds[4];
    bool ok = true;
    std::uint64_t combined = 0;
    std::vector<double> cpu_seconds_of[4];  // per method and repetition, the busiest rank's
    for (std::uint64_t rep = 0; rep < s.reps; ++rep) {
        if (rep % 2 == 0 && rep > 0)
            run_serial(false);  // even repetitions: the serial baselines first (rep 0's ran above)
        // The four methods in an order that rotates with the repetition, so none
        // always runs first (or right after the serial baselines).
        for (int slot = 0; slot < 4; ++slot) {
            const int m = static_cast<int>((static_cast<std::uint64_t>(slot) + rep) % 4);
            if (s.only_reduce && m != reduce)
                continue;
            MPI_Barrier(w.comm);
            const double start = MPI_Wtime();
            const double cpu_start = cpu_seconds();
            map_type map(w.comm);
            if (m == append) {
                for (std::uint64_t kmer : kmers)
                    map.async_insert(kmer, 1);
            } else if (m == visitor) {
                const auto adder = map.register_visitor("add", &add);
                for (std::uint64_t kmer : kmers)
                    map.async_visit(kmer, adder, std::uint64_t{1});
            } else if (m == lambda) {
                for (std::uint64_t kmer : kmers)
                    map.async_visit(kmer, [](const std::uint64_t&, map_type::values_ref& values) {
                        if (values.empty())
                            values.push_back(1);
                        else
                            ++values[0];
                    });
            } else {
                for (std::uint64_t kmer : kmers)
                    map.async_reduce(kmer, 1);
            }
            map.flush();
            const tally got = count_shard(w.comm, w.size, map, m == append);
            MPI_Barrier(w.comm);
            seconds[m].push_back(MPI_Wtime() - start);
            double cpu = cpu_seconds() - cpu_start, busiest = 0;
            MPI_Allreduce(&cpu, &busiest, 1, MPI_DOUBLE, MPI_MAX, w.comm);
            cpu_seconds_of[m].push_back(busiest);
            if (m == reduce)
                combined = map.async_reduces_combined();
            if (got.total != expected.total || got.top != expected.top) {
                ok = false;
                if (w.rank == 0)
                    std::fprintf(stderr, "%s: %s counted %llu k-mers (expected %llu) or a different top 10\n",
                                 bench_name, names[m], static_cast<unsigned long long>(got.total),
                                 static_cast<unsigned long long>(expected.total));
            }
            map.destroy();
        }
        if (rep % 2 == 1)
            run_serial(false);  // odd repetitions: last
    }
    const auto median = [](const std::vector<double>& v) { return mpidict::bench::summary::of(v).median; };
    const double total = static_cast<double>(expected.total);
    auto rates = [&](const std::vector<double>& secs) {
        std::vector<double> r;
        for (double t : secs)
            r.push_back(total / t);
        return r;
    };
    for (int m : {append, visitor, lambda, reduce})
        if (!seconds[m].empty())
            out.figure(std::string(names[m]) + "_rate", rates(seconds[m]), "kmers/s");
    if (w.rank == 0) {
        out.figure("serial_unordered_map_rate", rates(serial_seconds), "kmers/s",
                   json_object().add("what", "std::unordered_map, not reserved (node-based; the seed's baseline)"));
        if (flat_seconds.empty())
            out.skipped("serial_flat_hash_map_rate", "kmers/s", "built without abseil (Debian libabsl-dev)");
        else
            out.figure("serial_flat_hash_map_rate", rates(flat_seconds), "kmers/s",
                       json_object().add("what", "absl::flat_hash_map reserved for the distinct k-mers"));
    }
    if (w.rank == 0 && !flat_cpu_seconds.empty())
        out.figure("serial_flat_cpu_seconds", flat_cpu_seconds, "s",
                   json_object().add("what", "processor time of the flat serial loop (rank 0)"));
    out.figure("reduce_cpu_seconds_busiest_rank", cpu_seconds_of[reduce], "s",
               json_object().add("what", "processor time of one async_reduce repetition on its busiest rank"));
    for (int m : {append, visitor, lambda})
        if (!cpu_seconds_of[m].empty())
            out.figure(std::string(names[m]) + "_cpu_seconds_busiest_rank", cpu_seconds_of[m], "s",
                       json_object().add("what", "processor time of one repetition on its busiest rank"));
    out.figure("kmers", total, "count");
    out.figure("reduces_combined_rank0", static_cast<double>(combined), "count");
    if (!s.only_reduce) {
        const auto beside = [&](int ours) {
            return json_object()
                .add("ours_rate", total / median(seconds[ours]))
                .add("baseline_rate", total / median(seconds[append]));
        };
        out.ratio("reduce_vs_append", median(seconds[append]) / median(seconds[reduce]), ">= 1.0",
                  median(seconds[reduce]) <= median(seconds[append]), beside(reduce));
        out.ratio("visitor_vs_append", median(seconds[append]) / median(seconds[visitor]), "(reported)", true,
                  beside(visitor));
        out.ratio("lambda_vs_append", median(seconds[append]) / median(seconds[lambda]), "(reported)", true,
                  beside(lambda));
    }
    if (w.rank == 0) {
        out.ratio("reduce_vs_serial", median(serial_seconds) / median(seconds[reduce]), "(reported)", true,
                  json_object()
                      .add("baseline", "serial_unordered_map_rate")
                      .add("ours_rate", total / median(seconds[reduce]))
                      .add("baseline_rate", total / median(serial_seconds)));
        if (!flat_seconds.empty())
            out.ratio("reduce_vs_serial_flat", median(flat_seconds) / median(seconds[reduce]), ">= 1.0",
                      median(seconds[reduce]) <= median(flat_seconds),
                      json_object()
                          .add("baseline", "serial_flat_hash_map_rate")
                          .add("ours_rate", total / median(seconds[reduce]))
                          .add("baseline_rate", total / median(flat_seconds)));
    }
    if (w.rank == 0) {
        std::string top;
        for (const entry& e : expected.top) {
            char text[9] = {};
            std::memcpy(text, &e.second, s.k);
            top += std::string(" ") + text + "=" + std::to_string(e.first);
        }
        out.note("top 10:" + top);
    }
    out.print_table();
    return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(argc, argv, bench_name, description, declare, run);
}
