// The checks of a checkpoint's column bytes: see column_check.hpp.

#include "column_check.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>

#include <zlib.h>
#if defined(MPIDICT_HAVE_LIBDEFLATE)
#include <libdeflate.h>
#endif

namespace mpidict::detail::checkpoint {

std::string hex32(std::uint32_t value) {
    char text[16];
    std::snprintf(text, sizeof text, "0x%08x", value);
    return text;
}

std::uint32_t crc_update(std::uint32_t crc, const std::byte* data, std::size_t bytes) {
#if defined(MPIDICT_HAVE_LIBDEFLATE)
    return libdeflate_crc32(crc, data, bytes);  // zlib's CRC-32, faster (CMakeLists.txt)
#else
    while (bytes > 0) {
        const std::size_t piece = std::min(bytes, max_io_bytes);
        crc = static_cast<std::uint32_t>(
            ::crc32(crc, reinterpret_cast<const Bytef*>(data), static_cast<uInt>(piece)));
        data += piece;
        bytes -= piece;
    }
    return crc;
#endif
}

std::string name_of(const shard_info& shard) {
    return "shard " + std::to_string(shard.rank) + " (file " + shard.file + ")";
}

void check_columns_agree(const shard_info& shard, const std::vector<column_check>& checks) {
    std::map<std::string, std::uint64_t> offsets_end;
    bool have_counts = false;
    std::uint64_t counted_values = 0;
    for (const column_check& c : checks) {
        if (c.offsets)
            offsets_end[c.column->spec.name.substr(0, c.column->spec.name.size() - 8)] = c.previous;
        if (c.counts) {
            have_counts = true;
            counted_values = c.counted;
        }
    }
    const std::string shard_name = name_of(shard);
    for (const shard_column& column : shard.columns) {
        if (column.spec.name.ends_with(".data")) {
            const std::string base = column.spec.name.substr(0, column.spec.name.size() - 5);
            if (offsets_end[base] != column.spec.count)
                throw checkpoint_error(shard_name + ": column " + base + ".offsets ends at " +
                                       std::to_string(offsets_end[base]) + ", but " + column.spec.name + " holds " +
                                       std::to_string(column.spec.count) + " bytes");
        }
        if (have_counts && (column.spec.name == "values" || column.spec.name == "values.offsets")) {
            const std::uint64_t values = column.spec.name == "values" ? column.spec.count : column.spec.count - 1;
            if (values != counted_values)
                throw checkpoint_error(shard_name + ": value_counts add up to " + std::to_string(counted_values) +
                                       ", but the values column holds " + std::to_string(values));
        }
    }
}

const std::byte* map_file(const std::filesystem::path& path, std::uint64_t size) {
    if (size == 0 || size > std::numeric_limits<std::size_t>::max())
        return nullptr;
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return nullptr;
    void* at = ::mmap(nullptr, static_cast<std::size_t>(size), PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    ::close(fd);
    if (at == MAP_FAILED)
        return nullptr;
    ::madvise(at, static_cast<std::size_t>(size), MADV_SEQUENTIAL);
    return static_cast<const std::byte*>(at);
}


}  // namespace mpidict::detail::checkpoint
