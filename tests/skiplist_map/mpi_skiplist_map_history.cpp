// Histories of skiplist_map operations from a real MPI run, checked against the
// promise of a consistency mode by tools/histcheck (Porcupine for
// linearizability, an exact per-key program-order search, the reply order).
// Every rank is a caller on a small shared key space with several requests in
// flight (history_workload.hpp); each round builds a fresh map with a random
// shape (G from 1 to 4, so nodes split while the callers run), writes one
// history file on rank 0, and rank 0 runs the checker over all of them.
//
//   mpiexec -n 3 mpi_skiplist_map_history --mode total_order --checker build/tools/histcheck/histcheck
//   ... --break --expect-reject      the mode broken on purpose: some history must be rejected
//
// Options: --mode total_order|sequential|none, --rounds N (default 6), --out DIR
// (default: a fresh directory under $TMPDIR), --checker PATH, --break,
// --expect-reject, --seed S, --range-runs (runs of range_from queries in flight
// together against writes: history_workload.hpp), --trust-ranges (test only:
// mode sequential skips the check of ranges that went ahead of earlier ones,
// src/skiplist/caller_ranges.cpp; with --expect-reject).
//
//   mpiexec -n 3 mpi_skiplist_map_history --mode sequential --range-runs --checker ...
//   ... --range-runs --trust-ranges --expect-reject

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "history_workload.hpp"
#include "mpi_test_util.hpp"

namespace {

using namespace mpidict;
using namespace mpidict::history_test;

struct options {
    skiplist_consistency mode = skiplist_consistency::sequential;
    int rounds = 6;
    std::string out;
    std::string checker;
    bool broken = false;
    bool expect_reject = false;
    bool range_runs = false;
    bool trust_ranges = false;
    bool elastic = false;      // issue 44: rebalance and drain while requests are open (history_workload.hpp)
    bool break_moves = false;  // with --elastic: every moved node loses an entry (MPIDICT_SKIPLIST_BREAK_REBALANCE_FOR_TESTING)
    bool online = false;       // online moves (local_rebalance) while requests are open; with --break-moves a stub serves
    std::uint64_t seed = 1;
};

options parse(int argc, char** argv) {
    options o;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc)
                throw std::runtime_error(arg + " needs a value");
            return argv[++i];
        };
        if (arg == "--mode") {
            const std::string m = next();
            const auto mode = mpidict::skiplist_consistency_named(m);
            if (!mode)
                throw std::runtime_error("unknown --mode " + m);
            o.mode = *mode;
        } else if (arg == "--rounds") {
            o.rounds = std::stoi(next());
        } else if (arg == "--out") {
            o.out = next();
        } else if (arg == "--checker") {
            o.checker = next();
        } else if (arg == "--break") {
            o.broken = true;
        } else if (arg == "--expect-reject") {
            o.expect_reject = true;
        } else if (arg == "--range-runs") {
            o.range_runs = true;
        } else if (arg == "--elastic") {
            o.elastic = true;
        } else if (arg == "--online") {
            o.online = true;
        } else if (arg == "--break-moves") {
            o.break_moves = true;
        } else if (arg == "--trust-ranges") {
            o.trust_ranges = true;
        } else if (arg == "--seed") {
            o.seed = std::stoull(next());
        } else {
            throw std::runtime_error("unknown option " + arg);
        }
    }
    return o;
}

std::string gather_text(const std::string& mine, int rank, int size) {
    int length = static_cast<int>(mine.size());
    std::vector<int> lengths(static_cast<std::size_t>(size));
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    std::vector<int> offsets(static_cast<std::size_t>(size), 0);
    int total = 0;
    for (int r = 0; r < size; ++r) {
        offsets[static_cast<std::size_t>(r)] = total;
        total += lengths[static_cast<std::size_t>(r)];
    }
    std::string all(rank == 0 ? static_cast<std::size_t>(total) : 0, '\0');
    MPI_Gatherv(mine.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                MPI_COMM_WORLD);
    return all;
}

}  // namespace

int main(int argc, char** argv) {
    const options o = parse(argc, argv);
    if (o.break_moves)  // before any map exists
        ::setenv(o.online ? "MPIDICT_SKIPLIST_BREAK_ONLINE_MOVES_FOR_TESTING" : "MPIDICT_SKIPLIST_BREAK_REBALANCE_FOR_TESTING",
                 "1", 1);
    if (o.trust_ranges)
        ::setenv("MPIDICT_SKIPLIST_TRUST_RANGES_FOR_TESTING", "1", 1);  // before any map exists
    return mpidict::testing::run_mpi_test(argc, argv, [&](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(150), "mpi_skiplist_map_history");
        std::string directory = o.out;
        if (rank == 0 && directory.empty()) {
            const char* tmp = std::getenv("TMPDIR");
            directory = std::string(tmp ? tmp : "/tmp") + "/mpidict-history-" + to_string(o.mode) +
                        (o.broken || o.trust_ranges || o.break_moves ? "-broken-" : "-") + (o.range_runs ? "runs-" : "") + (o.elastic ? "elastic-" : "") + (o.online ? "online-" : "") + std::to_string(size) + "-" +
                        std::to_string(static_cast<long long>(::getpid()));
        }
        std::vector<std::string> files;
        long long moved_online = 0;  // online moves shipped by this rank, all rounds
        if (rank == 0)
            std::filesystem::create_directories(directory);
        for (int round = 0; round < o.rounds; ++round) {
            std::mt19937_64 random(o.seed * 1000003 + static_cast<std::uint64_t>(round) * 7919 +
                                   static_cast<std::uint64_t>(rank));
            std::mt19937_64 shared(o.seed * 31 + static_cast<std::uint64_t>(round));
            workload_shape shape;
            shape.ranges = round % 2 == 0;  // ranges and matches in every mode (issue 42)
            shape.counts = round % 2 == 1;  // count and erase_range in every mode (issue 49)
            shape.window = 1 + static_cast<int>(shared() % 6);
            shape.keys = 8 + static_cast<int>(shared() % 8);
            if (o.range_runs) {
                shape.ranges = false;
                shape.range_runs = true;
                shape.window = 4 + static_cast<int>(shared() % 4);
            }
            skiplist_map_config config;
            config.granularity = 1 + shared() % 4;
            config.max_height = 2 + static_cast<unsigned>(shared() % 4);
            if (const char* height = std::getenv("HISTORY_MAX_HEIGHT"))
                config.max_height = static_cast<unsigned>(std::atoi(height));
            config.max_key_bytes = 8;
            config.max_value_bytes = 8;
            config.consistency = o.mode;
            config.break_consistency_for_testing = o.broken;
            config.seed = o.seed + static_cast<std::uint64_t>(round);
            // find_many in every mode; in every other round a small window, so a
            // total_order find_many leaves in several chunks (caller_batch.cpp).
            shape.find_many = true;
            if (round % 2 == 1)
                config.caller_window = 1 + shared() % 8;
            if (o.elastic)
                elastic_config(config, static_cast<std::uint64_t>(round));
            map_type map(MPI_COMM_WORLD, config);
            if (o.online)
                shape.midway = online_steps(map, o.elastic);
            else if (o.elastic)
                shape.midway = elastic_steps(map);
            auto now = [] {
                return static_cast<std::int64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                                     std::chrono::steady_clock::now().time_since_epoch())
                                                     .count());
            };
            auto below = [&](std::uint64_t bound) { return bound == 0 ? 0 : random() % bound; };
            std::string mine = run_workload(map, shape, rank, now, below, [] { std::this_thread::yield(); });
            map.flush();
            mine += final_reads(map, shape, rank, now, final_reads_first_seq(shape));
            map.flush();
            MPIDICT_CHECK_MSG(map.check_local_invariants().empty() || o.broken, map.check_local_invariants());
            moved_online += static_cast<long long>(map.local_statistics().online_moves);
            const std::string all = gather_text(mine, rank, size);
            if (rank == 0) {
                const std::string path = directory + "/round-" + std::to_string(round) + ".jsonl";
                std::ofstream(path) << all;
                files.push_back(path);
            }
            map.destroy();
        }
        int verdict = 0;
        long long moved_total = 0;
        MPI_Reduce(&moved_online, &moved_total, 1, MPI_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
        if (rank == 0 && o.online)
            std::printf("online moves: %lld nodes shipped while requests were open\n", moved_total);
        if (rank == 0) {
            if (o.checker.empty()) {
                std::printf("histories written to %s (no --checker given)\n", directory.c_str());
            } else {
                std::string command = o.checker + " --quiet --mode " + to_string(o.mode) +
                                      (o.expect_reject ? " --expect-reject" : "");
                for (const auto& f : files)
                    command += " " + f;
                std::fflush(stdout);
                const int status = std::system(command.c_str());
                verdict = status == 0 ? 0 : 1;
                std::printf("checker %s %s\n", verdict == 0 ? "agreed:" : "FAILED:", command.c_str());
                if (verdict == 0 && std::getenv("MPIDICT_KEEP_HISTORIES") == nullptr)
                    std::filesystem::remove_all(directory);
            }
        }
        MPI_Bcast(&verdict, 1, MPI_INT, 0, MPI_COMM_WORLD);
        MPIDICT_CHECK_MSG(verdict == 0, "the history checker disagreed (see above)");
    });
}
