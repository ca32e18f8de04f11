// Checkpoint bandwidth (issue 20): hash_map<uint64, uint64>::save and load
// beside a plain sequential write and read of the same bytes, in the same run.
//
// Every rank holds --keys-per-rank keys of one value.  One repetition:
//   write     each rank writes as many bytes as its shard (keys, value counts,
//             values: 24 bytes a key) to a file of its own with write(2) in
//             8 MiB pieces, then fsync(2): the dd-like baseline;
//   save      map.save(DIR) with the shared-file layout (MPI-IO, one file) and
//             again with one file per rank; both fsync before they publish;
//   read      each rank reads its baseline file back with read(2);
//   load      a new map.load(DIR) at the same rank count (every check, the
//             checksums, and every entry into the table), then the old map
//             goes and the loaded one is verified;
//   read checkpoint
//             each rank read(2)s its share of the very files load reads (the
//             checkpoint's data files, split into equal byte ranges), in the
//             same page-cache state as load: both warm (just saved), or with
//             --drop-cache both after posix_fadvise(DONTNEED) of those files.
//             Load and this read alternate which runs first.
// Bandwidth is the bytes of all ranks over the slowest rank's time (from a
// barrier to a barrier).  Medians of --reps; ratios against the baseline write
// (the target: save >= 0.5x) and, for load, against the read of the same bytes
// (the target: load >= 0.5x, issue 52; the old load_vs_write is still printed).

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/checkpoint.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/local/multi_table.hpp"

namespace {

constexpr char bench_name[] = "checkpoint";
constexpr char description[] =
    "hash_map save and load bandwidth beside a plain sequential write and read of the same\n"
    "bytes (write(2) + fsync, read(2)) in the same run.  JSON lines on stdout (rank 0), a table\n"
    "on stderr; exit 1 if a loaded map differs from the saved one.";

struct settings {
    std::uint64_t keys_per_rank = 4'000'000;
    std::uint64_t reps = 3;
    std::uint64_t seed = 1;
    std::string directory = "mpidict_checkpoint_bench";
    bool keep = false;
    bool drop_cache = false;
    std::uint64_t buffer_bytes = mpidict::checkpoint_options{}.buffer_bytes;
};

void declare(mpidict::support::option_parser& parser, settings& s) {
    parser.add_count("keys-per-rank", &s.keys_per_rank, "keys (8 bytes, one 8-byte value each) per rank", 1,
                     std::uint64_t{1} << 32)
        .add_count("reps", &s.reps, "repetitions; medians are reported", 1, 1000, "R")
        .add_count("seed", &s.seed, "seed of the keys", 0, UINT64_MAX, "S")
        .add_text("dir", &s.directory, "scratch directory for the checkpoints and baseline files (removed after)",
                  "DIR")
        .add_flag("keep", &s.keep, "keep the scratch directory")
        .add_count("buffer-bytes", &s.buffer_bytes, "checkpoint_options::buffer_bytes of the loads (read buffers)",
                   std::uint64_t{1} << 16, std::uint64_t{1} << 30, "B")
        .add_flag("drop-cache", &s.drop_cache,
                  "posix_fadvise(DONTNEED) the checkpoint's files before each load and each read of them");
}

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;
constexpr std::size_t piece_bytes = std::size_t{8} << 20;

using mpidict::bench::json_object;
using mpidict::bench::max_over_ranks;

// Times `body` from a barrier to a barrier; the slowest rank's seconds.
template <class Body>
double timed(MPI_Comm comm, Body&& body) {
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    body();
    MPI_Barrier(comm);
    return max_over_ranks(MPI_Wtime() - start, comm);
}

// This process's CPU seconds (user + system, every thread) since some start.
double process_cpu_seconds() {
    timespec now{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &now);
    return static_cast<double>(now.tv_sec) + static_cast<double>(now.tv_nsec) * 1e-9;
}

void posix_write(const std::string& path, std::uint64_t bytes, const std::vector<std::byte>& piece) {
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        throw std::runtime_error("cannot create " + path + ": " + std::strerror(errno));
    while (bytes > 0) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(bytes, piece.size()));
        const ssize_t wrote = ::write(fd, piece.data(), n);
        if (wrote <= 0)
            throw std::runtime_error("write to " + path + " failed: " + std::strerror(errno));
        bytes -= static_cast<std::uint64_t>(wrote);
    }
    if (::fsync(fd) != 0 || ::close(fd) != 0)
        throw std::runtime_error("fsync/close of " + path + " failed: " + std::strerror(errno));
}

std::uint64_t posix_read(const std::string& path, std::vector<std::byte>& piece) {
    const int fd = ::open(path.c_str(), O_RDONLY);
    if (fd < 0)
        throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
    std::uint64_t total = 0;
    std::uint64_t sum = 0;
    for (;;) {
        const ssize_t got = ::read(fd, piece.data(), piece.size());
        if (got < 0)
            throw std::runtime_error("read of " + path + " failed: " + std::strerror(errno));
        if (got == 0)
            break;
        total += static_cast<std::uint64_t>(got);
        sum += static_cast<std::uint64_t>(piece[static_cast<std::size_t>(got) - 1]);  // touch what was read
    }
    ::close(fd);
    static volatile std::uint64_t sink = 0;
    sink = sink + sum;  // keeps the reads
    return total;
}

// The checkpoint's data files (data-*.bin), sorted by name, with their sizes.
std::vector<std::pair<std::string, std::uint64_t>> data_files(const std::string& directory) {
    std::vector<std::pair<std::string, std::uint64_t>> files;
    for (const auto& entry : std::filesystem::directory_iterator(directory)) {
        const std::string name = entry.path().filename().string();
        if (entry.is_regular_file() && name.rfind("data-", 0) == 0 && name.size() > 4 &&
            name.compare(name.size() - 4, 4, ".bin") == 0)
            files.emplace_back(entry.path().string(), entry.file_size());
    }
    std::sort(files.begin(), files.end());
    return files;
}

// Drops the page cache of the checkpoint's files (clean pages: they were synced).
void drop_cache(const std::string& directory) {
    for (const auto& [path, size] : data_files(directory)) {
        const int fd = ::open(path.c_str(), O_RDONLY);
        if (fd < 0)
            continue;
        ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        ::close(fd);
    }
}

// This rank's share of the bytes of the checkpoint's data files: the
// concatenation of the files split into `size` equal byte ranges, read with
// pread(2) in 8 MiB pieces.  Returns the bytes read.
std::uint64_t read_share(const std::string& directory, int rank, int size, std::vector<std::byte>& piece) {
    const auto files = data_files(directory);
    std::uint64_t total = 0;
    for (const auto& file : files)
        total += file.second;
    const std::uint64_t begin = total * static_cast<std::uint64_t>(rank) / static_cast<std::uint64_t>(size);
    const std::uint64_t end = total * static_cast<std::uint64_t>(rank + 1) / static_cast<std::uint64_t>(size);
    std::uint64_t offset = 0, got_total = 0, sum = 0;
    for (const auto& [path, bytes] : files) {
        const std::uint64_t from = std::max(begin, offset), to = std::min(end, offset + bytes);
        if (from < to) {
            const int fd = ::open(path.c_str(), O_RDONLY);
            if (fd < 0)
                throw std::runtime_error("cannot open " + path + ": " + std::strerror(errno));
            for (std::uint64_t at = from; at < to;) {
                const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(to - at, piece.size()));
                const ssize_t got = ::pread(fd, piece.data(), n, static_cast<off_t>(at - offset));
                if (got <= 0)
                    throw std::runtime_error("read of " + path + " failed: " + std::strerror(errno));
                at += static_cast<std::uint64_t>(got);
                got_total += static_cast<std::uint64_t>(got);
                sum += static_cast<std::uint64_t>(piece[static_cast<std::size_t>(got) - 1]);
            }
            ::close(fd);
        }
        offset += bytes;
    }
    static volatile std::uint64_t sink = 0;
    sink = sink + sum;  // keeps the reads
    return got_total;
}

std::unique_ptr<map_type> filled_map(const settings& s, const mpidict::bench::world& w) {
    mpidict::hash_map_config config;
    config.expected_keys_per_rank = s.keys_per_rank + s.keys_per_rank / 8;
    auto map = std::make_unique<map_type>(w.comm, config);
    const std::uint64_t first = s.keys_per_rank * static_cast<std::uint64_t>(w.rank);
    for (std::uint64_t i = 0; i < s.keys_per_rank; ++i) {
        const std::uint64_t key = mpidict::mix64((first + i) ^ s.seed);
        map->async_insert(key, key ^ 0x5bd1e995);
    }
    map->flush();
    return map;
}

// Every entry this rank holds is a generated one (value matches key) and the
// total is right.  Collective.
bool verified(map_type& map, const settings& s, const mpidict::bench::world& w) {
    std::uint64_t wrong = 0;
    map.local_for_each([&](std::uint64_t key, const map_type::values_view& values) {
        wrong += values.size() != 1 || values[0] != (key ^ 0x5bd1e995);
    });
    std::uint64_t all_wrong = 0;
    MPI_Allreduce(&wrong, &all_wrong, 1, MPI_UINT64_T, MPI_SUM, w.comm);
    return all_wrong == 0 && map.global_size() == s.keys_per_rank * static_cast<std::uint64_t>(w.size);
}

int run(const settings& s, const mpidict::bench::world& w) {
    namespace fs = std::filesystem;
    const fs::path root = s.directory;
    if (w.rank == 0)
        fs::create_directories(root);
    MPI_Barrier(w.comm);
    const std::string shared_dir = (root / "shared").string();
    const std::string per_rank_dir = (root / "per_rank").string();
    const std::string baseline = (root / ("baseline-r" + std::to_string(w.rank))).string();
    const std::uint64_t shard_bytes = 24 * s.keys_per_rank;  // keys, value counts, values
    const double total_bytes = static_cast<double>(shard_bytes) * w.size;
    std::uint64_t checkpoint_bytes = 0;  // the data files' bytes, as read back

    mpidict::bench::report out(bench_name, w.size, s.seed, w.rank == 0);
    out.context().add("keys_per_rank", s.keys_per_rank).add("bytes_per_rank", shard_bytes).add("reps", s.reps);

    std::vector<std::byte> piece(piece_bytes, std::byte{0x5a});
    std::vector<double> write_bw, read_bw, shared_bw, per_rank_bw, load_bw, read_same_bw;
    // CPU milliseconds of the load and of the read of the same files (the most
    // over the ranks; waits in MPI count where they spin): on a loaded machine
    // the wall-clock rates move with the scheduler, these mostly do not.
    std::vector<double> load_cpu_ms, read_same_cpu_ms;
    std::unique_ptr<map_type> map = filled_map(s, w);
    bool ok = verified(*map, s, w);
    mpidict::checkpoint_options per_rank;
    per_rank.layout = mpidict::checkpoint_layout::file_per_rank;
    mpidict::checkpoint_options load_options;
    load_options.buffer_bytes = static_cast<std::size_t>(s.buffer_bytes);
    for (std::uint64_t rep = 0; rep < s.reps && ok; ++rep) {
        // The baselines and the saves: this order in even repetitions, reversed in
        // odd ones (the read reads the baseline file an earlier repetition wrote).
        const std::function<void()> steps[] = {
            [&] { write_bw.push_back(total_bytes / timed(w.comm, [&] { posix_write(baseline, shard_bytes, piece); }) / 1e6); },
            [&] { shared_bw.push_back(total_bytes / timed(w.comm, [&] { map->save(shared_dir); }) / 1e6); },
            [&] { per_rank_bw.push_back(total_bytes / timed(w.comm, [&] { map->save(per_rank_dir, per_rank); }) / 1e6); },
            [&] { read_bw.push_back(total_bytes / timed(w.comm, [&] { posix_read(baseline, piece); }) / 1e6); }};
        for (std::size_t step = 0; step < 4; ++step)
            steps[rep % 2 == 0 ? step : 3 - step]();
        // Load, and the read of the same files, in alternating order and the same cache state.
        const std::string& source = rep % 2 == 0 ? shared_dir : per_rank_dir;
        const auto prepare = [&] {
            if (s.drop_cache && w.rank == 0)
                drop_cache(source);
            MPI_Barrier(w.comm);
        };
        const auto read_same = [&] {
            prepare();
            std::uint64_t bytes = 0;
            double cpu = 0;
            const double seconds = timed(w.comm, [&] {
                cpu = process_cpu_seconds();
                bytes = read_share(source, w.rank, w.size, piece);
                cpu = process_cpu_seconds() - cpu;
            });
            read_same_cpu_ms.push_back(max_over_ranks(cpu, w.comm) * 1e3);
            std::uint64_t all = 0;
            MPI_Allreduce(&bytes, &all, 1, MPI_UINT64_T, MPI_SUM, w.comm);
            read_same_bw.push_back(static_cast<double>(all) / seconds / 1e6);
            checkpoint_bytes = all;
        };
        mpidict::hash_map_config config;
        config.expected_keys_per_rank = s.keys_per_rank + s.keys_per_rank / 8;
        auto loaded = std::make_unique<map_type>(w.comm, config);
        const auto load = [&] {
            prepare();
            double cpu = 0;
            load_bw.push_back(total_bytes / timed(w.comm, [&] {
                                  cpu = process_cpu_seconds();
                                  loaded->load(source, load_options);
                                  cpu = process_cpu_seconds() - cpu;
                              }) /
                              1e6);
            load_cpu_ms.push_back(max_over_ranks(cpu, w.comm) * 1e3);
        };
        if (rep % 2 == 0) {
            read_same();
            load();
        } else {
            load();
            read_same();
        }
        map.reset();  // collective destroy of the old map
        map = std::move(loaded);
        ok = verified(*map, s, w);
    }
    // What bounds load: the same pairs inserted into a fresh reserved local table
    // (multi_table, the shard's own kind) from memory, no file, no checks.
    std::vector<double> table_bw;
    if (ok) {
        std::vector<std::pair<std::uint64_t, std::uint64_t>> pairs;
        pairs.reserve(s.keys_per_rank);
        map->local_for_each([&](std::uint64_t key, const map_type::values_view& values) {
            for (const std::uint64_t v : values)
                pairs.emplace_back(key, v);
        });
        // The table is built (and its pages faulted in) before the clock starts, as
        // the loaded map's is: load's table is sized by the map's constructor.
        for (std::uint64_t rep = 0; rep < s.reps; ++rep) {
            mpidict::local::multi_table<std::uint64_t, std::uint64_t> table(pairs.size());
            table_bw.push_back(total_bytes / timed(w.comm, [&] {
                                   for (const auto& [key, value] : pairs)
                                       table.append(key, value);
                               }) /
                               1e6);
            if (table.value_count() != pairs.size())  // the baseline is verified like the load
                throw std::runtime_error("multi_table baseline holds " + std::to_string(table.value_count()) +
                                         " values, not " + std::to_string(pairs.size()));
        }
    }
    if (!ok) {
        if (w.rank == 0)
            std::fprintf(stderr, "%s: error: the loaded map differs from the saved one\n", bench_name);
        return 1;
    }
    const auto median = [](const std::vector<double>& v) { return mpidict::bench::summary::of(v).median; };
    out.figure("baseline_write_bandwidth", write_bw, "MB/s");
    out.figure("save_shared_file_bandwidth", shared_bw, "MB/s");
    out.figure("save_file_per_rank_bandwidth", per_rank_bw, "MB/s");
    out.figure("baseline_read_bandwidth", read_bw, "MB/s");
    out.figure("load_bandwidth", load_bw, "MB/s",
               json_object().add("what", "the column bytes (24 a key) over the load's time"));
    out.figure("read_checkpoint_bandwidth", read_same_bw, "MB/s",
               json_object()
                   .add("what", "read(2) of the checkpoint's data files, each rank an equal byte range")
                   .add("bytes", checkpoint_bytes)
                   .add("cache", s.drop_cache ? "dropped (posix_fadvise DONTNEED) before load and read" : "warm for both"));
    out.ratio("save_shared_file_vs_write", median(shared_bw) / median(write_bw), ">= 0.5",
              median(shared_bw) >= 0.5 * median(write_bw),
              json_object().add("ours_MBps", median(shared_bw)).add("baseline_MBps", median(write_bw)));
    out.ratio("save_file_per_rank_vs_write", median(per_rank_bw) / median(write_bw), ">= 0.5",
              median(per_rank_bw) >= 0.5 * median(write_bw),
              json_object().add("ours_MBps", median(per_rank_bw)).add("baseline_MBps", median(write_bw)));
    // Load against a read of the bytes it reads: the checkpoint's files, same cache state.
    const double load_seconds_per_byte = 1.0 / median(load_bw) * total_bytes / static_cast<double>(checkpoint_bytes);
    const double load_vs_read_same = (1.0 / load_seconds_per_byte) / median(read_same_bw);
    out.ratio("load_vs_read_checkpoint", load_vs_read_same, ">= 0.5", load_vs_read_same >= 0.5,
              json_object()
                  .add("ours_MBps", 1.0 / load_seconds_per_byte)
                  .add("baseline_MBps", median(read_same_bw))
                  .add("what", "load's rate in the checkpoint's own bytes over read(2) of those files"));
    out.figure("load_cpu_ms", load_cpu_ms, "ms",
               json_object().add("what", "CPU time of one load (user + system, the most over the ranks)"));
    out.figure("read_checkpoint_cpu_ms", read_same_cpu_ms, "ms",
               json_object().add("what", "CPU time of the read(2) of the same files (the most over the ranks)"));
    out.ratio("load_vs_read_checkpoint_cpu", median(read_same_cpu_ms) / median(load_cpu_ms), "(reported)", true,
              json_object()
                  .add("ours_ms", median(load_cpu_ms))
                  .add("baseline_ms", median(read_same_cpu_ms))
                  .add("what", "the read's CPU time over the load's: the wall-clock ratio without the scheduler"));
    out.figure("table_insert_bandwidth", table_bw, "MB/s",
               json_object().add("what", "the shard's pairs into a fresh reserved multi_table from memory (built before the clock, as load's): load's floor"));
    out.ratio("load_vs_table_insert", median(load_bw) / median(table_bw), "(reported: what bounds load)", true,
              json_object().add("ours_MBps", median(load_bw)).add("baseline_MBps", median(table_bw)));
    out.ratio("load_vs_write", median(load_bw) / median(write_bw), "(reported; not the judged figure)", true,
              json_object().add("ours_MBps", median(load_bw)).add("baseline_MBps", median(write_bw)));
    out.ratio("load_vs_read", median(load_bw) / median(read_bw), "(reported)", true,
              json_object().add("ours_MBps", median(load_bw)).add("baseline_MBps", median(read_bw)));
    out.print_table();
    map.reset();
    MPI_Barrier(w.comm);
    if (w.rank == 0 && !s.keep)
        fs::remove_all(root);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(argc, argv, bench_name, description, declare, run);
}
