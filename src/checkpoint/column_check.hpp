#pragma once
// The checks of a checkpoint's column bytes (src/checkpoint/checkpoint.cpp):
// the CRC-32 (libdeflate's when built with it, else zlib's), the structure of
// offsets and value_counts columns, the columns of a shard against each other,
// and a data file mapped for reading.  Internal to src/checkpoint.

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "manifest.hpp"
#include "mpidict/error.hpp"

namespace mpidict::detail::checkpoint {

std::string hex32(std::uint32_t value);
std::uint32_t crc_update(std::uint32_t crc, const std::byte* data, std::size_t bytes);
std::string name_of(const shard_info& shard);

// The checks of one column's bytes, fed as they are read (verify_shard, or a
// stream under verification::while_reading).
struct column_check {
    std::string shard_name;
    const shard_column* column = nullptr;
    bool offsets = false;          // an .offsets column: increasing from 0
    bool counts = false;           // value_counts: no 0, no overflow
    std::uint32_t crc = 0;
    std::uint64_t bytes_seen = 0;  // fed to the CRC
    std::uint64_t elements = 0;    // 8-byte elements checked
    std::uint64_t previous = 0;    // the last offset
    std::uint64_t counted = 0;     // the counts' sum
    bool done = false;             // every byte fed and the CRC matched

    column_check(std::string shard, const shard_column& c)
        : shard_name(std::move(shard)), column(&c), offsets(c.spec.name.ends_with(".offsets")),
          counts(c.spec.name == "value_counts") {}

    // The column's bytes [bytes_seen, bytes_seen + size): `data` holds them
    // and, before them, every byte of an element not yet checked.
    void feed(const std::byte* data, std::size_t size) {
        crc = crc_update(crc, data, size);
        const std::uint64_t end = bytes_seen + size;
        if (offsets || counts) {
            const std::byte* base = data - static_cast<std::ptrdiff_t>(bytes_seen - elements * 8);
            for (std::size_t at = 0; (elements + 1) * 8 <= end; at += 8) {
                std::uint64_t value = 0;
                std::memcpy(&value, base + at, 8);
                check(value);
            }
        }
        bytes_seen = end;
        if (bytes_seen == column->bytes) {
            if (crc != column->crc)
                throw checkpoint_error(shard_name + " is corrupt: column " + column->spec.name + " has CRC-32 " +
                                       hex32(crc) + ", the manifest says " + hex32(column->crc));
            done = true;
        }
    }
    void check(std::uint64_t value) {
        if (offsets) {
            if (value < previous || (elements == 0 && value != 0))
                throw checkpoint_error(shard_name + ": column " + column->spec.name +
                                       " is not a list of increasing offsets from 0");
            previous = value;
        } else {
            if (value == 0)
                throw checkpoint_error(shard_name + ": value_counts holds a 0 at entry " + std::to_string(elements) +
                                       " (every saved key has a value)");
            if (value > std::numeric_limits<std::uint64_t>::max() - counted)
                throw checkpoint_error(shard_name + ": value_counts overflow");
            counted += value;
        }
        ++elements;
    }
};

// The columns of one shard against each other, once each was checked alone.
void check_columns_agree(const shard_info& shard, const std::vector<column_check>& checks);

// The whole file mapped read-only and faulted in (the page cache's pages, no
// copy), or null if it cannot be (then the streams read through MPI-IO).
const std::byte* map_file(const std::filesystem::path& path, std::uint64_t size);

}  // namespace mpidict::detail::checkpoint
