// The checkpoint manifest: reading it safely and checking everything it says
// before a byte of data is trusted (src/checkpoint/manifest.hpp).
//
// A manifest is input: a load, `mpidict inspect` and the fuzzer (tests/fuzz)
// all go through parse_manifest, which refuses, naming the field: numbers that
// are not 64-bit unsigned integers in their range, a shard listed twice or
// missing, files that are not this checkpoint's data files, columns whose
// layout the container cannot load, byte ranges that overlap, and entry counts
// that disagree.

#include "manifest.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <limits>
#include <functional>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

namespace mpidict::detail::checkpoint {

namespace {
using json = nlohmann::ordered_json;

std::string file_kind(mode_t mode) {
    if (S_ISDIR(mode))
        return "a directory";
    if (S_ISFIFO(mode))
        return "a FIFO (named pipe)";
    if (S_ISSOCK(mode))
        return "a socket";
    if (S_ISCHR(mode))
        return "a character device";
    if (S_ISBLK(mode))
        return "a block device";
    if (S_ISLNK(mode))
        return "a symbolic link";
    return "not a regular file";
}

// A JSON number that is an unsigned integer no larger than `most`; the error names the field.
std::uint64_t unsigned_field(const json& object, const char* name, std::uint64_t most, const std::string& where) {
    if (!object.is_object() || !object.contains(name))
        throw checkpoint_error(where + " has no field \"" + name + "\"");
    const json& value = object.at(name);
    if (!value.is_number_unsigned() && !(value.is_number_integer() && value.get<std::int64_t>() >= 0))
        throw checkpoint_error(where + ": \"" + name + "\" is " + value.dump().substr(0, 40) +
                               ", not a whole number from 0 to " + std::to_string(most));
    const auto number = value.get<std::uint64_t>();
    if (number > most)
        throw checkpoint_error(where + ": \"" + name + "\" is " + std::to_string(number) + ", more than " +
                               std::to_string(most));
    return number;
}

std::string string_field(const json& object, const char* name, const std::string& where) {
    if (!object.is_object() || !object.contains(name) || !object.at(name).is_string())
        throw checkpoint_error(where + ": \"" + name + "\" is missing or not a string");
    return object.at(name).get<std::string>();
}

// The width of the fixed-width type names every container writes.
std::uint64_t known_width(const std::string& type) {
    static const std::map<std::string, std::uint64_t, std::less<>> widths = {
        {"bool", sizeof(bool)}, {"int8", 1},  {"int16", 2},  {"int32", 4},   {"int64", 8},   {"uint8", 1},
        {"uint16", 2},          {"uint32", 4}, {"uint64", 8}, {"float32", 4}, {"float64", 8}, {"string", 0},
        {"bytes", 0}};
    const auto found = widths.find(type);
    return found == widths.end() ? ~std::uint64_t{0} : found->second;
}

// The columns a load of this container and these types reads, in order
// (columns_for in checkpoint.hpp, from the manifest's own description).
std::vector<column_spec> implied_columns(const parsed_manifest& m) {
    std::vector<column_spec> out;
    auto add = [&](const std::string& name, const std::string& type, std::uint64_t width) {
        if (width == 0) {
            out.push_back({name + ".offsets", "uint64", 8, 0});
            out.push_back({name + ".data", type, 1, 0});
        } else {
            out.push_back({name, type, static_cast<std::uint32_t>(width), 0});
        }
    };
    add("keys", m.key_type, m.key_bytes);
    if (m.multi_valued)
        out.push_back({"value_counts", "uint64", 8, 0});
    if (!m.value_type.empty())
        add("values", m.value_type, m.value_bytes);
    if (m.container == "skiplist_map")
        out.push_back({"expiry", "float64", 8, 0});
    return out;
}

}  // namespace

bool column_bytes(std::uint64_t count, std::uint64_t width, std::uint64_t& bytes) {
    if (width != 0 && count > (std::numeric_limits<std::uint64_t>::max() >> 2) / width)
        return false;
    bytes = count * width;
    return true;
}

bool data_file_generation(const std::string& name, std::uint64_t& generation) {
    if (name.size() < 9 || name.rfind("data-", 0) != 0 || !name.ends_with(".bin"))
        return false;
    const char* first = name.data() + 5;
    const char* last = name.data() + name.size() - 4;
    const auto [end, code] = std::from_chars(first, last, generation);
    if (code != std::errc() || end == first)
        return false;
    if (end == last)
        return true;
    if (*end != '-' || end + 1 == last || end[1] != 'r')
        return false;
    std::uint64_t rank = 0;
    const auto [rank_end, rank_code] = std::from_chars(end + 2, last, rank);
    return rank_code == std::errc() && rank_end == last && rank_end != end + 2;
}

std::string type_phrase(const std::string& type, std::uint64_t bytes) {
    return type + (bytes == 0 ? " (variable length)" : " (" + std::to_string(bytes) + " bytes)");
}

void require_regular_file(const fs::path& path, const std::string& what) {
    struct stat info {};
    if (::stat(path.c_str(), &info) != 0)
        throw checkpoint_error(what + ": " + path.string() + " cannot be examined: " + std::strerror(errno));
    if (!S_ISREG(info.st_mode))
        throw checkpoint_error(what + ": " + path.string() + " is " + file_kind(info.st_mode) +
                               ", not a regular file");
}

std::string read_regular_file(const fs::path& path, std::uint64_t limit, const std::string& what) {
    // O_NONBLOCK: opening a FIFO must not wait for a writer; the kind is checked
    // on the descriptor, so what is read is what was checked.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        throw checkpoint_error(what + " (" + path.string() + " cannot be opened: " + std::strerror(errno) + ")");
    struct stat info {};
    std::string problem;
    if (::fstat(fd, &info) != 0)
        problem = path.string() + " cannot be examined: " + std::strerror(errno);
    else if (!S_ISREG(info.st_mode))
        problem = path.string() + " is " + file_kind(info.st_mode) + ", not a regular file";
    else if (static_cast<std::uint64_t>(info.st_size) > limit)
        problem = path.string() + " is " + std::to_string(info.st_size) + " bytes, more than the " +
                  std::to_string(limit) + " a manifest may have";
    std::string text;
    if (problem.empty()) {
        text.resize(static_cast<std::size_t>(info.st_size));
        std::size_t done = 0;
        while (done < text.size()) {
            const ssize_t got = ::read(fd, text.data() + done, text.size() - done);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0) {
                problem = path.string() + (got < 0 ? std::string(" cannot be read: ") + std::strerror(errno)
                                                   : std::string(" shrank while it was read"));
                break;
            }
            done += static_cast<std::size_t>(got);
        }
    }
    ::close(fd);
    if (!problem.empty())
        throw checkpoint_error(problem);
    return text;
}

std::string read_manifest(const fs::path& directory) {
    const fs::path path = directory / manifest_name;
    return read_regular_file(path, max_manifest_bytes, "no checkpoint here");
}

parsed_manifest parse_manifest(const std::string& text, const std::string& manifest_path, const description* expected,
                               const std::vector<column_spec>* expected_columns) {
    parsed_manifest out;
    const std::string& where = manifest_path;
    constexpr std::uint64_t most_ranks = std::numeric_limits<int>::max();
    constexpr std::uint64_t most_bytes = std::uint64_t{1} << 62;
    try {
        json manifest;
        try {
            manifest = json::parse(text);
        } catch (const json::parse_error& failure) {
            throw checkpoint_error(manifest_path + " is not valid JSON (" + failure.what() + ")");
        }
        if (!manifest.is_object() || !manifest.contains("format") || !manifest.at("format").is_string() ||
            manifest.at("format").get<std::string>() != format_name)
            throw checkpoint_error(manifest_path + " is not an mpidict checkpoint manifest (no \"format\": \"" +
                                   std::string(format_name) + "\")");
        const auto version = unsigned_field(manifest, "version", std::numeric_limits<std::uint64_t>::max(), where);
        if (version > format_version)
            throw checkpoint_error(manifest_path + " has format version " + std::to_string(version) +
                                   ", newer than this mpidict reads (" + std::to_string(format_version) +
                                   "); load it with a newer mpidict");
        const std::string native = std::endian::native == std::endian::little ? "little" : "big";
        if (const std::string order = string_field(manifest, "byte_order", where); order != native)
            throw checkpoint_error(manifest_path + " was written on a " + order.substr(0, 20) +
                                   "-endian machine; this one is " + native + "-endian");
        const std::string container = string_field(manifest, "container", where);
        if (expected && container != expected->container)
            throw checkpoint_error(manifest_path + " holds a " + container.substr(0, 40) + ", not a " +
                                   expected->container);
        if (container != "hash_map" && container != "linear_hash_map" && container != "skiplist_map" &&
            container != "rma_hash_set")
            throw checkpoint_error(manifest_path + ": \"container\" is '" + container.substr(0, 40) +
                                   "', not one of hash_map, linear_hash_map, skiplist_map, rma_hash_set");
        if (!manifest.contains("key"))
            throw checkpoint_error(where + " has no field \"key\"");
        out.key_type = string_field(manifest.at("key"), "type", where + ": key");
        out.key_bytes = unsigned_field(manifest.at("key"), "bytes", std::uint64_t{1} << 30, where + ": key");
        if (expected && (out.key_type != expected->key_type || out.key_bytes != expected->key_bytes))
            throw checkpoint_error(manifest_path + ": the saved keys are " + type_phrase(out.key_type, out.key_bytes) +
                                   ", this " + expected->container + "'s keys are " +
                                   type_phrase(expected->key_type, expected->key_bytes));
        const bool values_expected = expected && !expected->value_type.empty();
        if (values_expected || manifest.contains("value")) {
            if (!manifest.contains("value"))
                throw checkpoint_error(where + " has no field \"value\"");
            out.value_type = string_field(manifest.at("value"), "type", where + ": value");
            out.value_bytes = unsigned_field(manifest.at("value"), "bytes", std::uint64_t{1} << 30, where + ": value");
            if (out.value_type.empty())
                throw checkpoint_error(where + ": value type is empty");
        }
        if (values_expected && (out.value_type != expected->value_type || out.value_bytes != expected->value_bytes))
            throw checkpoint_error(manifest_path + ": the saved values are " + type_phrase(out.value_type, out.value_bytes) +
                                   ", this " + expected->container + "'s values are " +
                                   type_phrase(expected->value_type, expected->value_bytes));
        if (!manifest.contains("multi_valued") || !manifest.at("multi_valued").is_boolean())
            throw checkpoint_error(where + ": \"multi_valued\" is missing or not true/false");
        out.multi_valued = manifest.at("multi_valued").get<bool>();
        if (expected && out.multi_valued != expected->multi_valued)
            throw checkpoint_error(manifest_path + ": multi_valued disagrees with the container");
        out.container = container;
        // What the container itself implies (a load of it requires the same).
        if (out.multi_valued != (container == "hash_map"))
            throw checkpoint_error(where + ": \"multi_valued\" is " + (out.multi_valued ? "true" : "false") +
                                   ", but a " + container + " is " + (out.multi_valued ? "not " : "") + "multi-valued");
        if (out.value_type.empty() != (container == "rma_hash_set"))
            throw checkpoint_error(where + ": a " + container + (out.value_type.empty() ? " needs" : " has no") +
                                   " \"value\"");
        for (const auto& [type, bytes, role] : {std::tuple{out.key_type, out.key_bytes, "key"},
                                                std::tuple{out.value_type, out.value_bytes, "value"}})
            // (Wider than 8 bytes: __int128 and long double carry the names int64 and
            // float64 in checkpoints of older versions; accepted.)
            if (const std::uint64_t width = known_width(type); width != ~std::uint64_t{0} && width != bytes &&
                                                               (bytes <= 8 || width == 0))
                throw checkpoint_error(where + ": the " + role + " type " + type + " has " + std::to_string(width) +
                                       " bytes, not " + std::to_string(bytes));

        out.ranks = static_cast<int>(unsigned_field(manifest, "ranks", most_ranks, where));
        out.generation = unsigned_field(manifest, "generation", std::numeric_limits<std::uint64_t>::max(), where);
        const std::string layout = string_field(manifest, "layout", where);
        if (layout != "shared_file" && layout != "file_per_rank")
            throw checkpoint_error(where + ": \"layout\" is '" + layout.substr(0, 40) +
                                   "', not shared_file or file_per_rank");
        const std::uint64_t declared_entries =
            unsigned_field(manifest, "entries", std::numeric_limits<std::uint64_t>::max(), where);
        if (!manifest.contains("shards") || !manifest.at("shards").is_array())
            throw checkpoint_error(where + ": \"shards\" is missing or not a list");
        const json& listed = manifest.at("shards");
        if (out.ranks < 1 || listed.size() != static_cast<std::size_t>(out.ranks))
            throw checkpoint_error(manifest_path + " lists " + std::to_string(listed.size()) + " shards for " +
                                   std::to_string(out.ranks) + " ranks");
        const std::vector<column_spec> implied = implied_columns(out);
        const std::vector<column_spec>& wanted = expected_columns ? *expected_columns : implied;
        std::vector<bool> seen(static_cast<std::size_t>(out.ranks), false);
        // Byte ranges per file, to refuse overlaps: (offset, end, shard, column).
        std::map<std::string, std::vector<std::tuple<std::uint64_t, std::uint64_t, int, std::string>>> ranges;
        std::uint64_t total = 0;
        for (const json& item : listed) {
            shard_info shard;
            shard.rank = static_cast<int>(unsigned_field(item, "rank", static_cast<std::uint64_t>(out.ranks - 1),
                                                         where + ": a shard"));
            const std::string name = where + ": shard " + std::to_string(shard.rank);
            if (seen[static_cast<std::size_t>(shard.rank)])
                throw checkpoint_error(name + " is listed twice");
            seen[static_cast<std::size_t>(shard.rank)] = true;
            shard.file = string_field(item, "file", name);
            shard.entries = unsigned_field(item, "entries", most_bytes, name);
            const std::string own = "data-" + std::to_string(out.generation) +
                                    (layout == "shared_file" ? std::string() : "-r" + std::to_string(shard.rank)) +
                                    ".bin";
            std::uint64_t ignored = 0;
            if (shard.file.find('/') != std::string::npos || !data_file_generation(shard.file, ignored))
                throw checkpoint_error(name + " names the file '" + shard.file.substr(0, 80) +
                                       "', which is not a data file of a checkpoint");
            if (shard.file != own)
                throw checkpoint_error(name + " names the file '" + shard.file + "'; a " + layout +
                                       " checkpoint of generation " + std::to_string(out.generation) + " keeps it in " +
                                       own);
            if (!item.contains("columns") || !item.at("columns").is_array())
                throw checkpoint_error(name + ": \"columns\" is missing or not a list");
            const json& columns = item.at("columns");
            if (columns.size() != wanted.size())
                throw checkpoint_error(name + " has " + std::to_string(columns.size()) + " columns, expected " +
                                       std::to_string(wanted.size()));
            for (std::size_t index = 0; index < columns.size(); ++index) {
                const json& c = columns[index];
                const std::string column_where = name + " column " + std::to_string(index);
                shard_column column;
                column.spec.name = string_field(c, "name", column_where);
                column.spec.type = string_field(c, "type", column_where);
                column.spec.width = static_cast<std::uint32_t>(unsigned_field(c, "width", std::uint64_t{1} << 30, column_where));
                column.spec.count = unsigned_field(c, "count", most_bytes, column_where);
                column.offset = unsigned_field(c, "offset", most_bytes, column_where);
                column.bytes = unsigned_field(c, "bytes", most_bytes, column_where);
                column.crc = static_cast<std::uint32_t>(unsigned_field(c, "crc32", 0xffffffffu, column_where));
                // Without the container's own columns, the element type of the keys and
                // values columns is not known (bindings store int64 or float64 in uint64
                // columns and name the user's type in "key"/"value"): names and widths are.
                const bool type_known = expected_columns != nullptr || wanted[index].name.ends_with(".offsets") ||
                                        wanted[index].name == "value_counts" || wanted[index].name == "expiry";
                if (column.spec.name != wanted[index].name ||
                    (type_known && column.spec.type != wanted[index].type) || column.spec.width != wanted[index].width)
                    throw checkpoint_error(manifest_path + ": shard " + std::to_string(shard.rank) + " column " +
                                           std::to_string(index) + " is '" + column.spec.name.substr(0, 40) + "' of " +
                                           column.spec.type.substr(0, 40) + " (" + std::to_string(column.spec.width) +
                                           " bytes wide), expected '" + wanted[index].name + "' of " +
                                           wanted[index].type + " (" + std::to_string(wanted[index].width) + ")");
                std::uint64_t bytes = 0;
                if (!column_bytes(column.spec.count, column.spec.width, bytes) || bytes != column.bytes ||
                    column.offset > most_bytes - column.bytes)
                    throw checkpoint_error(manifest_path + ": shard " + std::to_string(shard.rank) + " column " +
                                           column.spec.name + " has inconsistent sizes (count " +
                                           std::to_string(column.spec.count) + " x width " +
                                           std::to_string(column.spec.width) + " is not bytes " +
                                           std::to_string(column.bytes) + ")");
                // Element counts follow from the entries (values are checked against value_counts later).
                const std::uint64_t entries = shard.entries;
                const bool per_entry = column.spec.name == "keys" || column.spec.name == "value_counts" ||
                                       column.spec.name == "expiry" ||
                                       (column.spec.name == "values" && !out.multi_valued);
                const bool offsets_per_entry =
                    column.spec.name == "keys.offsets" || (column.spec.name == "values.offsets" && !out.multi_valued);
                if ((per_entry && column.spec.count != entries) ||
                    (offsets_per_entry && column.spec.count != entries + 1) ||
                    (column.spec.name == "values.offsets" && column.spec.count == 0))
                    throw checkpoint_error(manifest_path + ": shard " + std::to_string(shard.rank) + " column " +
                                           column.spec.name + " has " + std::to_string(column.spec.count) +
                                           " elements for " + std::to_string(entries) + " entries");
                if (column.bytes > 0)
                    ranges[shard.file].emplace_back(column.offset, column.offset + column.bytes, shard.rank,
                                                    column.spec.name);
                shard.columns.push_back(std::move(column));
            }
            total += shard.entries;
            out.shards.push_back(std::move(shard));
        }
        // Every shard 0 .. ranks-1 appears once (the count is ranks, none twice), in any order.
        std::sort(out.shards.begin(), out.shards.end(),
                  [](const shard_info& a, const shard_info& b) { return a.rank < b.rank; });
        if (total != declared_entries)
            throw checkpoint_error(where + ": \"entries\" is " + std::to_string(declared_entries) +
                                   ", but the shards hold " + std::to_string(total));
        for (auto& [file, spans] : ranges) {
            std::sort(spans.begin(), spans.end());
            for (std::size_t i = 1; i < spans.size(); ++i)
                if (std::get<0>(spans[i]) < std::get<1>(spans[i - 1]))
                    throw checkpoint_error(where + ": in " + file + ", column " + std::get<3>(spans[i - 1]) +
                                           " of shard " + std::to_string(std::get<2>(spans[i - 1])) + " (bytes " +
                                           std::to_string(std::get<0>(spans[i - 1])) + " to " +
                                           std::to_string(std::get<1>(spans[i - 1])) + ") and column " +
                                           std::get<3>(spans[i]) + " of shard " + std::to_string(std::get<2>(spans[i])) +
                                           " (from byte " + std::to_string(std::get<0>(spans[i])) + ") overlap");
        }
        out.entries = total;
    } catch (const json::exception& failure) {
        throw checkpoint_error(manifest_path + " is malformed (" + failure.what() + ")");
    }
    return out;
}

namespace {

// Reads a column of one file front to back: next(n) gives the next n bytes.
class column_cursor {
public:
    column_cursor(MPI_File file, std::uint64_t offset, std::uint64_t bytes)
        : m_file(file), m_position(offset), m_left(bytes) {}
    const std::byte* next(std::size_t bytes) {
        if (m_end - m_start < bytes) {
            const std::size_t have = m_end - m_start;
            if (bytes - have > m_left)
                throw checkpoint_error("a keys column ends early");
            if (have > 0)
                std::memmove(m_buffer.data(), m_buffer.data() + m_start, have);
            m_start = 0;
            m_end = have;
            const std::size_t wanted = std::max<std::size_t>(bytes, std::size_t{1} << 18);
            if (m_buffer.size() < wanted)
                m_buffer.resize(wanted);
            const auto piece =
                static_cast<std::size_t>(std::min<std::uint64_t>(m_left, m_buffer.size() - m_end));
            MPI_Status status;
            int got = 0;
            if (MPI_File_read_at(m_file, static_cast<MPI_Offset>(m_position), m_buffer.data() + m_end,
                                 static_cast<int>(piece), MPI_BYTE, &status) != MPI_SUCCESS ||
                MPI_Get_count(&status, MPI_BYTE, &got) != MPI_SUCCESS || got != static_cast<int>(piece))
                throw checkpoint_error("reading a keys column failed");
            m_position += piece;
            m_left -= piece;
            m_end += piece;
        }
        const std::byte* out = m_buffer.data() + m_start;
        m_start += bytes;
        return out;
    }

private:
    MPI_File m_file;
    std::uint64_t m_position, m_left;
    std::vector<std::byte> m_buffer;
    std::size_t m_start = 0, m_end = 0;
};

}  // namespace

std::uint64_t count_distinct_keys(const std::vector<shard_info>& shards,
                                  const std::map<std::string, std::shared_ptr<open_file>>& files) {
    std::vector<std::uint64_t> hashes;
    const std::hash<std::string_view> hash;
    for (const shard_info& shard : shards) {
        const shard_column* keys = nullptr;
        const shard_column* offsets = nullptr;
        const shard_column* data = nullptr;
        for (const shard_column& column : shard.columns) {
            if (column.spec.name == "keys")
                keys = &column;
            else if (column.spec.name == "keys.offsets")
                offsets = &column;
            else if (column.spec.name == "keys.data")
                data = &column;
        }
        const MPI_File file = files.at(shard.file)->handle;
        if (keys != nullptr) {
            column_cursor in(file, keys->offset, keys->bytes);
            for (std::uint64_t i = 0; i < keys->spec.count; ++i)
                hashes.push_back(hash(std::string_view(reinterpret_cast<const char*>(in.next(keys->spec.width)),
                                                       keys->spec.width)));
        } else if (offsets != nullptr && data != nullptr) {
            column_cursor ends(file, offsets->offset, offsets->bytes);
            column_cursor bytes(file, data->offset, data->bytes);
            std::uint64_t previous = 0;
            std::memcpy(&previous, ends.next(8), 8);
            for (std::uint64_t i = 1; i < offsets->spec.count; ++i) {
                std::uint64_t end = 0;
                std::memcpy(&end, ends.next(8), 8);
                const auto length = static_cast<std::size_t>(end - previous);  // increasing: verified
                hashes.push_back(hash(std::string_view(reinterpret_cast<const char*>(bytes.next(length)), length)));
                previous = end;
            }
        }
    }
    std::sort(hashes.begin(), hashes.end());
    return static_cast<std::uint64_t>(std::unique(hashes.begin(), hashes.end()) - hashes.begin());
}

}  // namespace mpidict::detail::checkpoint

namespace mpidict::detail::checkpoint {
void check_manifest_text(const std::string& text) { (void)parse_manifest(text, "manifest.json", nullptr, nullptr); }
}  // namespace mpidict::detail::checkpoint
