// Weak scaling (issue 21): a fixed number of keys per rank, timed with
// MPI_Wtime so that the same binary measures wall-clock time under MPI and
// simulated time under SimGrid SMPI (scripts/simulate.sh builds it with
// smpicxx and runs it on a described cluster at 16-1024 ranks).
//
// Phases, each from a barrier to the slowest rank's end:
//   empty_flush        one hash_map flush with nothing to send (the fixed cost)
//   hash_map_insert    async_insert of every key, then flush (also the slowest
//                      rank's time to its last async_insert: _stream_seconds)
//   hash_map_find      find_many of every key (all hits, values checked; not
//                      with --phases hash_map_insert)
//   rma_hash_set_insert insert_if_absent_many of every key
//   linear_hash_map_grow  inserts into an LH*LH file that starts on one server
//                      and must grow to every rank (server capacity sized so)
//   skiplist_*         skiplist_map: insert_many, find_many per consistency
//                      mode, ranges of 100 / 1,000 / 10,000, the 20/20/60 mix,
//                      pattern queries D = 1..6 (scaling_skiplist.cpp; only
//                      with --phases skiplist or one of its parts)
// Besides the times and rates: the reductions the insert phase's flush took
// (hash_map_insert_flush_rounds), per-rank buffer memory (the engine's
// buffer_bytes_high_water, largest over ranks), the outboxes a rank keeps
// (peer_count) and the messages a rank sends (mean), under the routing asked
// for (--routing direct | grid | automatic).  Exits non-zero on a wrong answer.

#include <algorithm>
#include <cstdio>
#include <cstdint>
#include <string>
#include <vector>

#include <mpi.h>

#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/rma_hash_set.hpp"
#include "scaling_skiplist.hpp"

namespace {

constexpr char bench_name[] = "scaling";
constexpr char description[] =
    "Weak scaling of hash_map insert and find, rma_hash_set insert and linear_hash_map growth\n"
    "(fixed keys per rank), timed with MPI_Wtime (simulated time under SMPI), with per-rank\n"
    "buffer memory and message counts.  JSON lines on stdout (rank 0), a table on stderr.";

struct settings {
    std::uint64_t keys_per_rank = 20000;
    std::uint64_t buffer_bytes = 64 * 1024;
    std::uint64_t total_outbox_bytes = mpidict::runtime::config{}.total_outbox_bytes;
    std::uint64_t seed = 1;
    std::string routing = "automatic";
    std::string phases = "all";
    double record_cost_ns = 0;
    double message_cost_ns = 0;
    mpidict::bench::scaling::skiplist_settings skiplist{};
};

void declare(mpidict::support::option_parser& parser, settings& s) {
    parser.add_count("keys-per-rank", &s.keys_per_rank, "keys each rank inserts and finds", 1, 1u << 30, "N")
        .add_count("buffer-bytes", &s.buffer_bytes, "engine buffer size B", 256, 1u << 30, "B")
        .add_count("total-outbox-bytes", &s.total_outbox_bytes,
                   "T: bytes a rank's outboxes hold together before each leaves early (0: no limit)", 0, 1ull << 40,
                   "T")
        .add_count("seed", &s.seed, "key seed", 0, ~std::uint64_t{0}, "S")
        .add_choice("routing", &s.routing, {"automatic", "direct", "grid"}, "engine routing (runtime::config)")
        .add_choice("phases", &s.phases,
                    {"all", "hash_map", "hash_map_insert", "rma", "linear", "skiplist", "skiplist_core",
                     "skiplist_ranges", "skiplist_mix", "skiplist_patterns"},
                    "which containers to run (hash_map_insert: hash_map without the find phase; skiplist: every "
                    "skiplist_map phase, skiplist_core: its insert_many and find_many per mode; all: every "
                    "container but skiplist_map)")
        .add_count("total-order-keys", &s.skiplist.total_order_keys,
                   "skiplist: keys per rank looked up in mode total_order (all through the head)", 1, 1u << 30, "K")
        .add_count("range-entries", &s.skiplist.range_entries,
                   "skiplist: entries per rank per range size R (R = 100, 1000, 10000: range-entries / R queries)", 1,
                   1u << 30, "E")
        .add_count("mix-operations", &s.skiplist.mix_operations,
                   "skiplist: operations per rank of the 60% find / 20% insert / 20% erase mix", 1, 1u << 30, "M")
        .add_count("pattern-queries", &s.skiplist.pattern_queries,
                   "skiplist: match() queries per rank for each D = 1..6", 1, 1u << 20, "Q")
        .add_count("window", &s.skiplist.window, "skiplist: requests in flight per rank (ranges, mix, patterns)", 1,
                   1u << 20, "W")
        .add_real("record-cost-ns", &s.record_cost_ns,
                  "SimGrid builds only: simulated ns of computation per record packed into a message and per "
                  "record handled (docs/scaling.md, \"Time model\"); 0 charges none",
                  0, 1e6, "NS")
        .add_real("message-cost-ns", &s.message_cost_ns,
                  "SimGrid builds only: simulated ns of computation per message sent to or received from another "
                  "rank; 0 charges none",
                  0, 1e9, "NS");
}

using mpidict::bench::slowest_seconds;

std::uint64_t largest(MPI_Comm comm, std::uint64_t value) {
    std::uint64_t result = 0;
    MPI_Allreduce(&value, &result, 1, MPI_UINT64_T, MPI_MAX, comm);
    return result;
}

std::uint64_t total(MPI_Comm comm, std::uint64_t value) {
    std::uint64_t result = 0;
    MPI_Allreduce(&value, &result, 1, MPI_UINT64_T, MPI_SUM, comm);
    return result;
}

// What one engine did: its largest buffer memory and outbox count over ranks,
// and the messages a rank sent on average.
void report_engine(mpidict::bench::report& out, MPI_Comm comm, int ranks, const std::string& prefix,
                   const mpidict::runtime::engine& engine) {
    const auto& stats = engine.stats();
    out.figure(prefix + "_buffer_bytes_high_water", static_cast<double>(largest(comm, stats.buffer_bytes_high_water)),
               "bytes");
    out.figure(prefix + "_messages_per_rank",
               static_cast<double>(total(comm, stats.messages_sent)) / static_cast<double>(ranks), "messages");
    out.figure(prefix + "_records_forwarded_per_rank",
               static_cast<double>(total(comm, stats.records_forwarded)) / static_cast<double>(ranks), "records");
    out.figure(prefix + "_peers", static_cast<double>(largest(comm, engine.peer_count())), "outboxes");
}

int run(const settings& s, const mpidict::bench::world& w) {
    mpidict::bench::report out(bench_name, w.size, s.seed, w.rank == 0);
    mpidict::runtime::config runtime;
    runtime.buffer_bytes = s.buffer_bytes;
    runtime.total_outbox_bytes = s.total_outbox_bytes;
    runtime.routing = mpidict::runtime::parse_routing(s.routing);
#if MPIDICT_SMPI
    mpidict::runtime::set_simulated_costs(s.record_cost_ns * 1e-9, s.message_cost_ns * 1e-9);
#else
    if (s.record_cost_ns != 0 || s.message_cost_ns != 0) {
        if (w.rank == 0)
            std::fprintf(stderr, "scaling: --record-cost-ns and --message-cost-ns need a SimGrid SMPI build "
                                 "(-DMPIDICT_SMPI=ON); outside a simulation computation costs what it costs\n");
        return 2;
    }
#endif
    const std::uint64_t n = s.keys_per_rank;
    std::vector<std::uint64_t> keys(n);
    for (std::uint64_t index = 0; index < n; ++index)
        keys[index] = mpidict::mix64(s.seed * 0x9e3779b97f4a7c15ULL ^ (std::uint64_t(w.rank) << 40) ^ index);
    const double all_keys = static_cast<double>(n) * w.size;
    out.context().add("keys_per_rank", n).add("buffer_bytes", s.buffer_bytes)
        .add("total_outbox_bytes", s.total_outbox_bytes).add("record_cost_ns", s.record_cost_ns)
        .add("message_cost_ns", s.message_cost_ns);
    std::uint64_t wrong = 0;

    if (s.phases == "all" || s.phases == "hash_map" || s.phases == "hash_map_insert") {
        mpidict::hash_map_config config;
        config.runtime = runtime;
        config.expected_keys_per_rank = n;
        mpidict::hash_map<std::uint64_t, std::uint64_t> map(w.comm, config);
        out.context().add("routing", std::string(mpidict::runtime::routing_name(map.engine().routing())));
        // What a phase pays regardless of its keys: one flush with nothing to
        // send (its termination detection: two reductions, as after any traffic).
        out.figure("empty_flush_seconds", slowest_seconds(w.comm, [&] { map.flush(); }), "s");
        const auto rounds_before = map.stats().flush_rounds;
        double streamed = 0;  // this rank's time to its last async_insert
        const double insert = slowest_seconds(w.comm, [&] {
            const double start = MPI_Wtime();
            for (const std::uint64_t key : keys)
                map.async_insert(key, key ^ 0x5555);
            streamed = MPI_Wtime() - start;
            map.flush();
        });
        out.figure("hash_map_insert_seconds", insert, "s");
        // How the phase splits: the slowest rank's stream, and the rest (the
        // flush: what was left in buffers, forwarding it, termination).
        out.figure("hash_map_insert_stream_seconds", mpidict::bench::max_over_ranks(streamed, w.comm), "s");
        out.figure("hash_map_insert_messages_per_rank",
                   static_cast<double>(total(w.comm, map.stats().messages_sent)) / w.size, "messages");
        out.figure("hash_map_insert_rate", all_keys / insert, "ops/s");
        // Reductions its flush took (the same on every rank).
        out.figure("hash_map_insert_flush_rounds", static_cast<double>(map.stats().flush_rounds - rounds_before),
                   "rounds");
        const std::uint64_t stored = map.global_size();
        wrong += stored == n * std::uint64_t(w.size) ? 0 : 1;
        if (s.phases != "hash_map_insert") {
            const double find = slowest_seconds(w.comm, [&] {
                map.find_many(std::span<const std::uint64_t>(keys), 1, [&](std::size_t at, const auto& values) {
                    if (values.size() != 1 || values[0] != (keys[at] ^ 0x5555))
                        ++wrong;
                });
                map.flush();
            });
            out.figure("hash_map_find_seconds", find, "s");
            out.figure("hash_map_find_rate", all_keys / find, "ops/s");
        }
        report_engine(out, w.comm, w.size, "hash_map", map.engine());
        map.destroy();
    }
    if (s.phases == "all" || s.phases == "rma") {
        mpidict::rma_hash_set_config config;
        config.expected_per_rank = n;
        mpidict::rma_hash_set<std::uint64_t> set(w.comm, config);
        std::uint64_t inserted = 0;
        const double insert = slowest_seconds(w.comm, [&] {
            inserted = set.insert_if_absent_many(std::span<const std::uint64_t>(keys)).inserted;
            set.flush();
        });
        out.figure("rma_hash_set_insert_seconds", insert, "s");
        out.figure("rma_hash_set_insert_rate", all_keys / insert, "ops/s");
        wrong += total(w.comm, inserted) == n * std::uint64_t(w.size) ? 0 : 1;
        set.destroy();
    }
    if (s.phases == "all" || s.phases == "linear") {
        mpidict::linear_hash_map_config config;
        config.runtime = runtime;
        // The file starts on p / 16 servers (at least one) of 8 ranks' worth of
        // pairs each (16 payload bytes a pair) and must grow, split by split,
        // to about p / 6 servers.  Keys go in 16 rounds, each ended by a flush
        // (which also waits for a split in progress): a server's capacity is
        // a hard limit, so a burst of every rank's keys at one server would be
        // refused rather than wait for splits.
        config.initial_servers = std::max(1, w.size / 16);
        config.server_capacity_bytes = std::max<std::size_t>(std::size_t(n) * 128, 4096);
        config.max_key_bytes = 8;
        config.max_value_bytes = 8;
        mpidict::linear_hash_map<std::uint64_t, std::uint64_t> map(w.comm, config);
        constexpr std::uint64_t rounds = 16;
        const double grow = slowest_seconds(w.comm, [&] {
            for (std::uint64_t round = 0; round < rounds; ++round) {
                for (std::uint64_t index = round * n / rounds; index < (round + 1) * n / rounds; ++index)
                    map.async_insert(keys[index], keys[index]);
                map.flush();
            }
        });
        out.figure("linear_hash_map_grow_seconds", grow, "s");
        out.figure("linear_hash_map_grow_rate", all_keys / grow, "ops/s");
        const std::uint64_t stored = map.global_size();
        const std::uint64_t refused = total(w.comm, map.async_rejected());
        out.figure("linear_hash_map_refused", static_cast<double>(refused), "inserts");
        if (stored + refused != n * std::uint64_t(w.size)) {
            ++wrong;
            if (w.rank == 0)
                std::fprintf(stderr, "scaling: linear_hash_map holds %llu pairs and refused %llu, expected %llu\n",
                             static_cast<unsigned long long>(stored), static_cast<unsigned long long>(refused),
                             static_cast<unsigned long long>(n * w.size));
        }
        const auto file = map.gather_statistics();
        out.figure("linear_hash_map_servers", static_cast<double>(file.servers_active), "servers");
        report_engine(out, w.comm, w.size, "linear_hash_map", map.engine());
        map.destroy();
    }
    if (mpidict::bench::scaling::is_skiplist_phase(s.phases)) {
        mpidict::bench::scaling::skiplist_settings list = s.skiplist;
        list.keys_per_rank = n;
        list.seed = s.seed;
        list.phases = s.phases;
        list.runtime = runtime;
        wrong += mpidict::bench::scaling::run_skiplist_phases(list, w, out);
    }
    const std::uint64_t failures = total(w.comm, wrong);
    out.figure("wrong_answers", static_cast<double>(failures), "count");
    out.print_table();
    return failures == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(argc, argv, bench_name, description, declare, run);
}
