// Regression (issue 48, items 6-11): checkpoints trusted their manifest and
// their directory.
//
//   6   a manifest listing shard 0 twice, more shards than were saved, a values
//       column on top of the keys column, a wrong total: load accepted and
//       `inspect` said "verified"; with CRCs recomputed, a key saved twice and a
//       value count of 0 were accepted; inspect called layouts verified that no
//       load takes (here: a hash_map's columns under "linear_hash_map")
//   7   DIR/manifest.json.tmp as a link to a file outside DIR: save overwrote
//       that file and made manifest.json the link
//   8   save deleted DIR/data-1.bin and DIR/data-7-r3.bin, which no manifest named
//   9   a FIFO in place of a data file (or the manifest) hung inspect and every
//       rank of load
//   10  a 5 GB sparse manifest was read whole before its size was checked
//   11  manifest numbers were truncated to 32 bits (crc32 + 2^32, width 8 + 2^32
//       accepted; ranks = 2^40 read as 0)
// Now each is refused by load (on every rank, map left empty) and by
// inspect_checkpoint, with a message naming the problem; save writes only
// regular files of its own and deletes only what a manifest or journal of this
// checkpoint named.  1-4 ranks.

#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "mpi_test_util.hpp"
#include "mpidict/checkpoint.hpp"
#include "mpidict/hash_map.hpp"

namespace fs = std::filesystem;
using json = nlohmann::ordered_json;
using map_type = mpidict::hash_map<std::uint64_t, std::int64_t>;

namespace {

std::uint32_t crc32_of(const std::string& bytes) {
    std::uint32_t crc = 0xffffffffu;
    for (const unsigned char c : bytes) {
        crc ^= c;
        for (int bit = 0; bit < 8; ++bit)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::ostringstream all;
    all << in.rdbuf();
    return all.str();
}

void write_file(const fs::path& path, const std::string& text) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << text;
}

int g_rank = 0;

void barrier() { MPI_Barrier(MPI_COMM_WORLD); }

// Copies the base checkpoint to `directory` and lets `damage` change it (rank 0).
void prepare(const fs::path& base, const fs::path& directory, const std::function<void(const fs::path&)>& damage) {
    if (g_rank == 0) {
        fs::remove_all(directory);
        fs::create_directories(directory);
        for (const auto& item : fs::directory_iterator(base))
            fs::copy_file(item.path(), directory / item.path().filename());
        damage(directory);
    }
    barrier();
}

void edit_manifest(const fs::path& directory, const std::function<void(json&)>& change) {
    json manifest = json::parse(read_file(directory / "manifest.json"));
    change(manifest);
    write_file(directory / "manifest.json", manifest.dump(1));
}

// Rewrites one column of shard 0 in its data file and its CRC in the manifest.
void edit_column(const fs::path& directory, const std::string& column_name,
                 const std::function<void(std::string&)>& change) {
    json manifest = json::parse(read_file(directory / "manifest.json"));
    json& shard = manifest["shards"][0];
    const fs::path file = directory / shard["file"].get<std::string>();
    std::string data = read_file(file);
    for (json& column : shard["columns"]) {
        if (column["name"] != column_name)
            continue;
        const auto offset = column["offset"].get<std::size_t>();
        const auto bytes = column["bytes"].get<std::size_t>();
        std::string piece = data.substr(offset, bytes);
        change(piece);
        data.replace(offset, bytes, piece);
        column["crc32"] = crc32_of(piece);
    }
    write_file(file, data);
    write_file(directory / "manifest.json", manifest.dump(1));
}

// load must throw checkpoint_error naming `needle` on every rank and leave the map
// empty; inspect_checkpoint must refuse with the same words.
void expect_refused(const char* what, const fs::path& directory, const std::string& needle) {
    map_type map(MPI_COMM_WORLD);
    const std::string message = mpidict::testing::expect_error<mpidict::checkpoint_error>(
        what, [&] { map.load(directory.string()); }, {needle}, __FILE__, __LINE__);
    MPIDICT_CHECK_MSG(map.global_size() == 0, std::string(what) + ": the map is left empty");
    if (g_rank == 0) {
        const mpidict::checkpoint_summary summary = mpidict::inspect_checkpoint(directory.string());
        MPIDICT_CHECK_MSG(summary.problem.find(needle) != std::string::npos,
                          std::string(what) + ": inspect says '" + summary.problem + "'");
        std::printf("%-34s load: %.150s\n", what, message.c_str());
    }
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "checkpoint_manifest_trusted");
        g_rank = rank;
        long long job = rank == 0 ? static_cast<long long>(::getpid()) : 0;
        MPI_Bcast(&job, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
        const fs::path root = fs::temp_directory_path() / ("mpidict-ckprobe-" + std::to_string(job));
        const fs::path base = root / "base";
        if (rank == 0)
            fs::create_directories(root);
        barrier();
        {
            map_type map(MPI_COMM_WORLD);
            for (std::uint64_t key = static_cast<std::uint64_t>(rank); key < 400; key += static_cast<std::uint64_t>(size)) {
                map.async_insert(key, static_cast<std::int64_t>(key));
                map.async_insert(key, -static_cast<std::int64_t>(key));
            }
            map.flush();
            map.save(base.string());
            map.destroy();
        }
        {   // the good copy loads
            map_type map(MPI_COMM_WORLD);
            map.load(base.string());
            MPIDICT_CHECK(map.global_size() == 400);
            map.destroy();
        }
        const int shards = size;

        // ---- item 6 --------------------------------------------------------------
        prepare(base, root / "twice", [&](const fs::path& d) {
            edit_manifest(d, [&](json& m) {
                if (shards == 1) {
                    m["ranks"] = 2;
                    m["shards"].push_back(m["shards"][0]);
                } else {
                    m["shards"][1] = m["shards"][0];
                }
            });
        });
        expect_refused("shard 0 listed twice", root / "twice", "shard 0 is listed twice");

        prepare(base, root / "extra", [&](const fs::path& d) {
            edit_manifest(d, [&](json& m) {
                json extra = m["shards"][static_cast<std::size_t>(shards - 1)];
                extra["rank"] = shards;
                m["shards"].push_back(extra);
                m["ranks"] = shards + 1;
                m["entries"] = m["entries"].get<std::uint64_t>() + extra["entries"].get<std::uint64_t>();
            });
        });
        expect_refused("one shard more than saved", root / "extra", "overlap");

        prepare(base, root / "values_on_keys", [&](const fs::path& d) {
            edit_manifest(d, [&](json& m) {
                json& columns = m["shards"][0]["columns"];
                columns[2]["offset"] = columns[0]["offset"];
                columns[2]["crc32"] = columns[0]["crc32"];
            });
        });
        expect_refused("values over the keys", root / "values_on_keys", "overlap");

        prepare(base, root / "total", [&](const fs::path& d) {
            edit_manifest(d, [&](json& m) { m["entries"] = 2 * m["entries"].get<std::uint64_t>(); });
        });
        expect_refused("a total that disagrees", root / "total", "but the shards hold");

        prepare(base, root / "duplicate_key", [&](const fs::path& d) {
            edit_column(d, "keys", [](std::string& keys) {
                if (keys.size() >= 16)
                    keys.replace(8, 8, keys.substr(0, 8));  // key 1 := key 0
            });
        });
        expect_refused("a key saved twice (CRC recomputed)", root / "duplicate_key", "saved more than once");

        prepare(base, root / "zero_count", [&](const fs::path& d) {
            edit_column(d, "value_counts", [](std::string& counts) {
                std::uint64_t first = 0, second = 0;
                std::memcpy(&first, counts.data(), 8);
                std::memcpy(&second, counts.data() + 8, 8);
                second += first;
                first = 0;
                std::memcpy(counts.data(), &first, 8);
                std::memcpy(counts.data() + 8, &second, 8);
            });
        });
        expect_refused("a value count of 0 (CRC recomputed)", root / "zero_count", "value_counts holds a 0");

        prepare(base, root / "other_container", [&](const fs::path& d) {
            edit_manifest(d, [&](json& m) {
                m["container"] = "linear_hash_map";
                m["multi_valued"] = false;
            });
        });
        if (rank == 0) {
            const auto summary = mpidict::inspect_checkpoint((root / "other_container").string());
            MPIDICT_CHECK_MSG(summary.problem.find("columns, expected") != std::string::npos,
                              "a layout no load takes: inspect says '" + summary.problem + "'");
        }

        // ---- item 11 -------------------------------------------------------------
        prepare(base, root / "crc33", [&](const fs::path& d) {
            edit_manifest(d, [&](json& m) {
                json& c = m["shards"][0]["columns"][0];
                c["crc32"] = c["crc32"].get<std::uint64_t>() + (std::uint64_t{1} << 32);
            });
        });
        expect_refused("crc32 + 2^32", root / "crc33", "\"crc32\" is");

        prepare(base, root / "width", [&](const fs::path& d) {
            edit_manifest(d, [&](json& m) {
                m["shards"][0]["columns"][0]["width"] = 8 + (std::uint64_t{1} << 32);
            });
        });
        expect_refused("width 8 + 2^32", root / "width", "\"width\" is");

        prepare(base, root / "ranks", [&](const fs::path& d) {
            edit_manifest(d, [&](json& m) { m["ranks"] = std::uint64_t{1} << 40; });
        });
        expect_refused("ranks 2^40", root / "ranks", "\"ranks\" is 1099511627776");

        // ---- item 9 --------------------------------------------------------------
        prepare(base, root / "fifo", [&](const fs::path& d) {
            const json m = json::parse(read_file(d / "manifest.json"));
            const fs::path data = d / m["shards"][0]["file"].get<std::string>();
            fs::remove(data);
            MPIDICT_CHECK(::mkfifo(data.c_str(), 0600) == 0);
        });
        expect_refused("a FIFO for a data file", root / "fifo", "FIFO");

        prepare(base, root / "fifo_manifest", [&](const fs::path& d) {
            fs::remove(d / "manifest.json");
            MPIDICT_CHECK(::mkfifo((d / "manifest.json").c_str(), 0600) == 0);
        });
        expect_refused("a FIFO for the manifest", root / "fifo_manifest", "FIFO");

        // ---- item 10 -------------------------------------------------------------
        prepare(base, root / "huge", [&](const fs::path& d) {
            fs::resize_file(d / "manifest.json", std::uintmax_t{5} << 30);  // sparse
        });
        expect_refused("a 5 GiB (sparse) manifest", root / "huge", "more than the");

        // ---- item 7 --------------------------------------------------------------
        const fs::path victim = root / "victim.txt";
        const fs::path linked = root / "linked";
        if (rank == 0) {
            write_file(victim, "precious\n");
            fs::create_directories(linked);
            fs::create_symlink(victim, linked / "manifest.json.tmp");
        }
        barrier();
        {
            map_type map(MPI_COMM_WORLD);
            map.async_insert(static_cast<std::uint64_t>(rank), 1);
            map.flush();
            map.save(linked.string());
            map.destroy();
        }
        if (rank == 0) {
            MPIDICT_CHECK_MSG(read_file(victim) == "precious\n", "the link's target is untouched");
            MPIDICT_CHECK_MSG(fs::is_regular_file(fs::symlink_status(linked / "manifest.json")),
                              "manifest.json is a regular file, not the link");
        }

        // ---- item 8 --------------------------------------------------------------
        const fs::path mine = root / "users";
        if (rank == 0) {
            fs::create_directories(mine);
            write_file(mine / "data-1.bin", "the user's\n");
            write_file(mine / "data-7-r3.bin", "the user's too\n");
        }
        barrier();
        for (int round = 0; round < 2; ++round) {
            map_type map(MPI_COMM_WORLD);
            map.async_insert(static_cast<std::uint64_t>(rank + round), 1);
            map.flush();
            map.save(mine.string(), {mpidict::checkpoint_layout::file_per_rank});
            map.destroy();
        }
        if (rank == 0) {
            MPIDICT_CHECK_MSG(read_file(mine / "data-1.bin") == "the user's\n", "data-1.bin is kept");
            MPIDICT_CHECK_MSG(read_file(mine / "data-7-r3.bin") == "the user's too\n", "data-7-r3.bin is kept");
            int data_files = 0;
            for (const auto& item : fs::directory_iterator(mine))
                data_files += item.path().filename().string().rfind("data-", 0) == 0;
            MPIDICT_CHECK_MSG(data_files == 2 + size, "the first save's files went: " + std::to_string(data_files) +
                                                          " data files");
        }
        {
            map_type map(MPI_COMM_WORLD);
            map.load(mine.string());
            MPIDICT_CHECK(map.global_size() == static_cast<std::size_t>(size));
            map.destroy();
        }
        barrier();
        if (rank == 0)
            fs::remove_all(root);
    });
}
