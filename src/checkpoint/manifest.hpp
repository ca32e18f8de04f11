#pragma once
// Inside the checkpoint implementation: the manifest (read, parsed and checked)
// and the safe file helpers that checkpoint.cpp's writer and reader share.
// Not installed.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"

namespace mpidict::detail::checkpoint {

namespace fs = std::filesystem;

inline constexpr std::string_view format_name = "mpidict-checkpoint";
inline constexpr std::string_view manifest_name = "manifest.json";
inline constexpr std::size_t max_io_bytes = std::size_t{1} << 30;  // below MPI-IO's int count
// The largest manifest read: about 1 KiB per shard, so 2^18 saving ranks.
inline constexpr std::uint64_t max_manifest_bytes = std::uint64_t{256} << 20;

// Bytes of a column, or false if count x width does not fit in 62 bits.
bool column_bytes(std::uint64_t count, std::uint64_t width, std::uint64_t& bytes);
// Data file names: data-<generation>.bin (shared) or data-<generation>-r<rank>.bin.
bool data_file_generation(const std::string& name, std::uint64_t& generation);
std::string type_phrase(const std::string& type, std::uint64_t bytes);

// A small regular file's bytes, at most `limit`: refuses (checkpoint_error
// naming `what` and the reason) a file that is missing, not a regular file (a
// FIFO, a directory, a device: checked before anything is read, so nothing
// blocks), or larger than `limit`.  `missing` is the message start used when
// the file does not exist.
std::string read_regular_file(const fs::path& path, std::uint64_t limit, const std::string& what);
// Throws checkpoint_error unless `path` is a regular file (following links).
void require_regular_file(const fs::path& path, const std::string& what);

struct shard_column {
    column_spec spec;
    std::uint64_t offset = 0;
    std::uint64_t bytes = 0;
    std::uint32_t crc = 0;
};
struct shard_info {
    int rank = 0;
    std::string file;
    std::uint64_t entries = 0;
    std::vector<shard_column> columns;
};
struct open_file {
    MPI_File handle = MPI_FILE_NULL;
    std::uint64_t size = 0;
    // A read-only mapping of the whole file (reader::open under
    // verification::while_reading), or null: read through MPI-IO.
    const std::byte* mapped = nullptr;
    bool map_tried = false;
};
struct parsed_manifest {
    std::string container;
    std::string key_type;
    std::uint64_t key_bytes = 0;
    std::string value_type;  // empty: no values (a set)
    std::uint64_t value_bytes = 0;
    bool multi_valued = false;
    int ranks = 0;
    std::uint64_t generation = 0;
    std::uint64_t entries = 0;
    std::vector<shard_info> shards;
};

// How many distinct keys the shards' keys columns hold (by 64-bit hash of their
// bytes), reading `files` (opened by the verification).  For inspect_checkpoint,
// which refuses a hash_map checkpoint with a key saved twice as load does.
std::uint64_t count_distinct_keys(const std::vector<shard_info>& shards,
                                  const std::map<std::string, std::shared_ptr<open_file>>& files);

// The manifest's text (rank 0 reads it): a regular file of at most max_manifest_bytes.
std::string read_manifest(const fs::path& directory);
// Checks a manifest, and against what a container expects when it says so;
// throws checkpoint_error naming the problem.  Without `expected`, the column
// layout the manifest's own description implies is required (what a load of
// that container would require), so inspect refuses exactly what load refuses.
parsed_manifest parse_manifest(const std::string& text, const std::string& manifest_path,
                               const description* expected, const std::vector<column_spec>* expected_columns);

}  // namespace mpidict::detail::checkpoint
