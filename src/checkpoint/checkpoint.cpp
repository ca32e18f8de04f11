// Checkpoint files: the writer, the reader and the manifest (include/mpidict/checkpoint.hpp).
//
// Every step that can fail on one rank only records the problem; the ranks then
// agree (one MPI_Allreduce, and a broadcast of the message when there is one)
// and all throw together, so no rank is left waiting in the next collective.

#include "mpidict/checkpoint.hpp"

#include "column_check.hpp"
#include "manifest.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace mpidict::detail::checkpoint {
namespace {

using json = nlohmann::ordered_json;  // keeps the manifest's fields in the order written

constexpr std::size_t min_column_buffer = std::size_t{64} << 10;

std::string mpi_message(int code) {
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        return "MPI error " + std::to_string(code);
    return std::string(text, static_cast<std::size_t>(length));
}

std::string fault_setting() {
    const char* value = std::getenv("MPIDICT_CHECKPOINT_FAULT");
    return value != nullptr ? std::string(value) : std::string();
}

std::uint64_t padded(std::uint64_t bytes) { return (bytes + 7) / 8 * 8; }

std::string utc_now() {
    const std::time_t now = std::time(nullptr);
    std::tm parts{};
    gmtime_r(&now, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

// Rank 0's message when some rank has a problem; every rank gets the same text.
std::string agreed_problem(MPI_Comm communicator, const std::string& problem) {
    int rank = 0, size = 1;
    MPI_Comm_rank(communicator, &rank);
    MPI_Comm_size(communicator, &size);
    const int mine = problem.empty() ? size : rank;
    int first = size;
    if (const int code = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, communicator); code != MPI_SUCCESS)
        throw mpi_error("mpidict: checkpoint: MPI_Allreduce failed: " + mpi_message(code));
    if (first == size)
        return {};
    std::uint64_t length = rank == first ? problem.size() : 0;
    MPI_Bcast(&length, 1, MPI_UINT64_T, first, communicator);
    std::string text(static_cast<std::size_t>(length), '\0');
    if (rank == first)
        text = problem;
    if (length > 0)
        MPI_Bcast(text.data(), static_cast<int>(std::min<std::uint64_t>(length, max_io_bytes)), MPI_CHAR, first,
                  communicator);
    if (rank != first)
        text += " (found on rank " + std::to_string(first) + ")";
    return text;
}

// A new file: whatever is at `path` (a stale file, or a link that would send the
// text elsewhere) is removed first, never followed; O_EXCL | O_NOFOLLOW refuse
// one that appears in between.
void write_text_file_synced(const fs::path& path, const std::string& text) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT)
        throw checkpoint_error("cannot replace " + path.string() + ": " + std::strerror(errno));
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        throw checkpoint_error("cannot create " + path.string() + ": " + std::strerror(errno));
    std::size_t done = 0;
    while (done < text.size()) {
        const ssize_t wrote = ::write(fd, text.data() + done, text.size() - done);
        if (wrote < 0) {
            if (errno == EINTR)
                continue;
            const std::string why = std::strerror(errno);
            ::close(fd);
            throw checkpoint_error("cannot write " + path.string() + ": " + why);
        }
        done += static_cast<std::size_t>(wrote);
    }
    if (::fsync(fd) != 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw checkpoint_error("cannot sync " + path.string() + ": " + why);
    }
    if (::close(fd) != 0)
        throw checkpoint_error("cannot close " + path.string() + ": " + std::strerror(errno));
}

void sync_directory(const fs::path& directory) {
    const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        ::fsync(fd);  // best effort: some file systems refuse fsync on directories
        ::close(fd);
    }
}

// The data files a manifest or a save's journal names (names of data files
// only, nothing with a '/'); nothing if it cannot be read.
std::vector<std::string> named_data_files(const fs::path& path, std::uint64_t* generation = nullptr) {
    std::vector<std::string> out;
    try {
        const json listed = json::parse(read_regular_file(path, max_manifest_bytes, "checkpoint file"));
        if (generation != nullptr && listed.contains("generation") && listed.at("generation").is_number_unsigned())
            *generation = listed.at("generation").get<std::uint64_t>();
        auto keep = [&](const json& name) {
            std::uint64_t ignored = 0;
            if (name.is_string() && name.get<std::string>().find('/') == std::string::npos &&
                data_file_generation(name.get<std::string>(), ignored))
                out.push_back(name.get<std::string>());
        };
        if (listed.contains("shards") && listed.at("shards").is_array())
            for (const json& shard : listed.at("shards"))
                if (shard.is_object() && shard.contains("file"))
                    keep(shard.at("file"));
        if (listed.contains("files") && listed.at("files").is_array())
            for (const json& name : listed.at("files"))
                keep(name);
    } catch (const std::exception&) {
        // An unreadable old manifest or journal names nothing: nothing of it is deleted.
    }
    return out;
}

// A save's journal: written before its data files exist, naming them, so that
// a later save may delete what an abandoned one left (and nothing else).
constexpr std::string_view journal_prefix = "manifest.json.pending-";

json describe_json(const description& what) {
    json tunables = json::object();
    for (const auto& [name, value] : what.tunables)
        tunables[name] = value;
    json out = {{"container", what.container},
                {"key", {{"type", what.key_type}, {"bytes", what.key_bytes}}},
                {"multi_valued", what.multi_valued},
                {"tunables", tunables}};
    if (!what.value_type.empty())
        out["value"] = {{"type", what.value_type}, {"bytes", what.value_bytes}};
    return out;
}


}  // namespace

void agree(MPI_Comm communicator, const std::string& problem) {
    std::string text = agreed_problem(communicator, problem);
    if (!text.empty())
        throw checkpoint_error(text);
}

communicator_copy::communicator_copy(MPI_Comm communicator, std::string_view container) {
    if (communicator == MPI_COMM_NULL)
        throw invalid_argument_error("mpidict: " + std::string(container) +
                                     " checkpoints need an MPI communicator (this one runs over a simulated transport)");
    if (const int code = MPI_Comm_dup(communicator, &m_comm); code != MPI_SUCCESS)
        throw mpi_error("mpidict: checkpoint: MPI_Comm_dup failed: " + mpi_message(code));
    MPI_Comm_set_errhandler(m_comm, MPI_ERRORS_RETURN);
}

communicator_copy::~communicator_copy() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized && m_comm != MPI_COMM_NULL)
        MPI_Comm_free(&m_comm);
}

// =============================================================================
// writer
// =============================================================================

struct writer::state {
    struct column {
        column_spec spec;
        std::uint64_t bytes = 0;         // count x width
        std::uint64_t file_offset = 0;   // absolute, in the data file
        std::uint64_t written = 0;       // appended so far
        std::uint64_t flushed = 0;       // on disk so far
        std::uint32_t crc = 0;
        std::vector<std::byte> buffer;
        std::size_t capacity = 0;
    };

    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
    fs::path directory;
    description what;
    checkpoint_options options;
    std::uint64_t generation = 0;
    std::uint64_t entries = 0;
    std::uint64_t shard_offset = 0;
    std::uint64_t shard_bytes = 0;
    std::string file_name;
    MPI_File file = MPI_FILE_NULL;
    bool shared = true;
    bool committed = false;
    bool exit_fault = false;
    std::vector<column> columns;
    std::vector<std::string> old_files;  // rank 0: the data files the previous manifest named
    std::string problem;  // first local failure; reported at commit()

    void write_out(column& c) {
        if (c.buffer.empty())
            return;
        c.crc = crc_update(c.crc, c.buffer.data(), c.buffer.size());
        if (problem.empty()) {
            MPI_Status status;
            const int code = MPI_File_write_at(file, static_cast<MPI_Offset>(c.file_offset + c.flushed),
                                               c.buffer.data(), static_cast<int>(c.buffer.size()), MPI_BYTE, &status);
            if (code != MPI_SUCCESS)
                problem = "mpidict: checkpoint " + directory.string() + ": writing " + file_name + " failed: " +
                          mpi_message(code);
            if (exit_fault)
                std::_Exit(86);
        }
        c.flushed += c.buffer.size();
        c.buffer.clear();
    }
};

writer::writer(MPI_Comm communicator, const std::string& directory, description what,
               std::vector<column_spec> columns, std::uint64_t entries, const checkpoint_options& options)
    : m(std::make_unique<state>()) {
    m->comm = communicator;
    MPI_Comm_rank(communicator, &m->rank);
    MPI_Comm_size(communicator, &m->size);
    m->directory = directory;
    m->what = std::move(what);
    m->options = options;
    m->entries = entries;
    m->shared = options.layout == checkpoint_layout::shared_file;
    m->exit_fault = fault_setting() == "exit-during-write";
    const std::string where = "mpidict: checkpoint " + directory;

    // Rank 0 makes the directory and picks a generation above every one in it.
    std::string problem;
    std::uint64_t generation = 1;
    if (directory.empty()) {
        problem = "mpidict: checkpoint: the directory name is empty";
    } else if (m->rank == 0) {
        std::error_code failure;
        fs::create_directories(m->directory, failure);
        if (failure) {
            problem = where + ": cannot create the directory: " + failure.message();
        } else if (!fs::is_directory(m->directory, failure)) {
            problem = where + ": exists and is not a directory";
        } else {
            for (const auto& item : fs::directory_iterator(m->directory, failure)) {
                const std::string name = item.path().filename().string();
                std::uint64_t found = 0;
                if (data_file_generation(name, found) && found >= generation)
                    generation = found + 1;
                if (name.rfind(journal_prefix, 0) == 0) {
                    const auto [end, code] =
                        std::from_chars(name.data() + journal_prefix.size(), name.data() + name.size(), found);
                    if (code == std::errc() && found >= generation)
                        generation = found + 1;
                }
            }
            std::uint64_t old_generation = 0;
            m->old_files = named_data_files(m->directory / manifest_name, &old_generation);
            if (old_generation != std::numeric_limits<std::uint64_t>::max())
                generation = std::max<std::uint64_t>(generation, old_generation + 1);
            if (failure)
                problem = where + ": cannot list the directory: " + failure.message();
            if (problem.empty() && generation == std::numeric_limits<std::uint64_t>::max())
                problem = where + ": no generation number is left";
            if (problem.empty()) {
                json files = json::array();
                for (int r = 0; r < (m->shared ? 1 : m->size); ++r)
                    files.push_back("data-" + std::to_string(generation) +
                                    (m->shared ? std::string() : "-r" + std::to_string(r)) + ".bin");
                try {
                    write_text_file_synced(
                        m->directory / (std::string(journal_prefix) + std::to_string(generation)),
                        json{{"format", "mpidict-checkpoint-journal"}, {"generation", generation}, {"files", files}}
                                .dump() + "\n");
                } catch (const checkpoint_error& failure_to_write) {
                    problem = where + ": " + failure_to_write.what();
                }
            }
        }
    }
    agree(communicator, problem);
    MPI_Bcast(&generation, 1, MPI_UINT64_T, 0, communicator);
    m->generation = generation;

    // This rank's columns, each padded to 8 bytes, one after another.
    std::uint64_t offset = 0;
    for (column_spec& spec : columns) {
        state::column c;
        if (!column_bytes(spec.count, spec.width, c.bytes) || offset > (std::uint64_t{1} << 62) - padded(c.bytes))
            problem = where + ": column " + spec.name + " of " + std::to_string(spec.count) + " elements is too large";
        c.file_offset = offset;
        offset += padded(c.bytes);
        c.spec = std::move(spec);
        m->columns.push_back(std::move(c));
    }
    m->shard_bytes = offset;
    agree(communicator, problem);
    const std::size_t per_column =
        std::clamp(options.buffer_bytes / std::max<std::size_t>(1, m->columns.size()), min_column_buffer, max_io_bytes);
    for (auto& c : m->columns) {
        c.capacity = static_cast<std::size_t>(std::min<std::uint64_t>(per_column, std::max<std::uint64_t>(c.bytes, 1)));
        c.buffer.reserve(c.capacity);
    }

    // The data file: shared (offsets by exclusive scan) or this rank's own.
    if (m->shared) {
        MPI_Exscan(&m->shard_bytes, &m->shard_offset, 1, MPI_UINT64_T, MPI_SUM, communicator);
        if (m->rank == 0)
            m->shard_offset = 0;
        m->file_name = "data-" + std::to_string(generation) + ".bin";
    } else {
        m->file_name = "data-" + std::to_string(generation) + "-r" + std::to_string(m->rank) + ".bin";
    }
    for (auto& c : m->columns)
        c.file_offset += m->shard_offset;
    const std::string path = (m->directory / m->file_name).string();
    const int code = MPI_File_open(m->shared ? communicator : MPI_COMM_SELF, path.c_str(),
                                   MPI_MODE_CREATE | MPI_MODE_WRONLY, MPI_INFO_NULL, &m->file);
    if (code != MPI_SUCCESS) {
        m->file = MPI_FILE_NULL;
        problem = where + ": cannot create " + m->file_name + ": " + mpi_message(code);
    }
    int opened = m->file != MPI_FILE_NULL ? 1 : 0, all_opened = 0;
    MPI_Allreduce(&opened, &all_opened, 1, MPI_INT, MPI_MIN, communicator);
    const std::string agreed = agreed_problem(communicator, problem);
    if (!agreed.empty()) {
        if (m->file != MPI_FILE_NULL && (!m->shared || all_opened))
            MPI_File_close(&m->file);  // collective for the shared file: every rank has it open
        m->file = MPI_FILE_NULL;
        throw checkpoint_error(agreed);
    }
}

writer::~writer() {
    // Uncommitted: a file of our own can be closed locally; the shared file's
    // close is collective, so it is left to MPI_Finalize.
    if (m && m->file != MPI_FILE_NULL && !m->shared) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized)
            MPI_File_close(&m->file);
    }
}

void writer::append(std::size_t index, const void* data, std::size_t bytes) {
    MPIDICT_ASSERT(index < m->columns.size(), "checkpoint column out of range");
    state::column& c = m->columns[index];
    if (bytes > c.bytes - c.written) {
        if (m->problem.empty())
            m->problem = "mpidict: checkpoint " + m->directory.string() + ": column " + c.spec.name +
                         " got more than its " + std::to_string(c.bytes) + " bytes (the container changed while it was saved?)";
        return;
    }
    c.written += bytes;
    const auto* in = static_cast<const std::byte*>(data);
    while (bytes > 0) {
        const std::size_t piece = std::min(bytes, c.capacity - c.buffer.size());
        c.buffer.insert(c.buffer.end(), in, in + piece);
        in += piece;
        bytes -= piece;
        if (c.buffer.size() == c.capacity)
            m->write_out(c);
    }
}

void writer::commit() {
    MPIDICT_ASSERT(!m->committed, "checkpoint writer committed twice");
    m->committed = true;
    const std::string where = "mpidict: checkpoint " + m->directory.string();
    for (auto& c : m->columns) {
        m->write_out(c);
        if (c.written != c.bytes && m->problem.empty())
            m->problem = where + ": column " + c.spec.name + " got " + std::to_string(c.written) + " of its " +
                         std::to_string(c.bytes) + " bytes (the container changed while it was saved?)";
    }
    // Data to disk, then closed (both collective for the shared file).
    if (const int code = MPI_File_sync(m->file); code != MPI_SUCCESS && m->problem.empty())
        m->problem = where + ": syncing " + m->file_name + " failed: " + mpi_message(code);
    if (const int code = MPI_File_close(&m->file); code != MPI_SUCCESS && m->problem.empty())
        m->problem = where + ": closing " + m->file_name + " failed: " + mpi_message(code);
    m->file = MPI_FILE_NULL;
    agree(m->comm, m->problem);

    // Every shard's description, to rank 0.
    json shard = {{"rank", m->rank}, {"file", m->file_name}, {"entries", m->entries}};
    json columns = json::array();
    for (const auto& c : m->columns)
        columns.push_back({{"name", c.spec.name},
                           {"type", c.spec.type},
                           {"width", c.spec.width},
                           {"count", c.spec.count},
                           {"offset", c.file_offset},
                           {"bytes", c.bytes},
                           {"crc32", c.crc}});
    shard["columns"] = std::move(columns);
    const std::string text = shard.dump();
    const int length = static_cast<int>(text.size());
    std::vector<int> lengths(m->rank == 0 ? static_cast<std::size_t>(m->size) : 0);
    MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, m->comm);
    std::vector<int> displacements(lengths.size());
    std::string all;
    if (m->rank == 0) {
        std::size_t total = 0;
        for (std::size_t r = 0; r < lengths.size(); ++r) {
            displacements[r] = static_cast<int>(total);
            total += static_cast<std::size_t>(lengths[r]);
        }
        all.resize(total);
    }
    MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), displacements.data(), MPI_CHAR, 0, m->comm);

    std::string problem;
    if (m->rank == 0) {
        try {
            json manifest = {{"format", format_name}, {"version", format_version}};
            manifest.update(describe_json(m->what));
            manifest["byte_order"] = std::endian::native == std::endian::little ? "little" : "big";
            manifest["ranks"] = m->size;
            manifest["layout"] = m->shared ? "shared_file" : "file_per_rank";
            manifest["generation"] = m->generation;
            manifest["created"] = utc_now();
            std::uint64_t entries = 0;
            json shards = json::array();
            for (std::size_t r = 0; r < lengths.size(); ++r) {
                json one = json::parse(all.substr(static_cast<std::size_t>(displacements[r]),
                                                  static_cast<std::size_t>(lengths[r])));
                entries += one["entries"].get<std::uint64_t>();
                shards.push_back(std::move(one));
            }
            manifest["entries"] = entries;
            manifest["shards"] = std::move(shards);
            if (fault_setting() == "fail-before-manifest")
                throw checkpoint_error("test fault: failing before the manifest is written");
            const fs::path temporary = m->directory / (std::string(manifest_name) + ".tmp");
            write_text_file_synced(temporary, manifest.dump(1) + "\n");
            std::error_code failure;
            fs::rename(temporary, m->directory / manifest_name, failure);
            if (failure)
                throw checkpoint_error("cannot rename " + temporary.string() + ": " + failure.message());
            sync_directory(m->directory);
            // The new manifest is in force: the data files the previous one
            // named and those abandoned saves' journals named go, with the
            // journals; files no manifest or journal of this checkpoint named
            // (a user's, say) stay.
            std::set<std::string> keep;
            for (const json& shard : manifest["shards"])
                keep.insert(shard["file"].get<std::string>());
            std::vector<std::string> doomed = m->old_files;
            std::vector<fs::path> journals;
            for (const auto& item : fs::directory_iterator(m->directory, failure))
                if (item.path().filename().string().rfind(journal_prefix, 0) == 0) {
                    journals.push_back(item.path());
                    for (std::string& name : named_data_files(item.path()))
                        doomed.push_back(std::move(name));
                }
            for (const std::string& name : doomed)
                if (keep.count(name) == 0)
                    fs::remove(m->directory / name, failure);
            for (const fs::path& journal : journals)
                fs::remove(journal, failure);
        } catch (const std::exception& failure) {
            problem = where + ": " + failure.what();
        }
    }
    agree(m->comm, problem);
}

// =============================================================================
// reader
// =============================================================================

namespace {


// Checks one shard's files, sizes, checksums and column structure (without
// `read_columns`: files and sizes only); throws checkpoint_error naming the
// problem.  Opens (and keeps in `files`) its data file.
void verify_shard(const fs::path& directory, const shard_info& shard,
                  std::map<std::string, std::shared_ptr<open_file>>& files, bool read_columns = true) {
    const std::string shard_name = name_of(shard);
    auto& file = files[shard.file];
    if (!file) {
        file = std::make_shared<open_file>();
        const std::string path = (directory / shard.file).string();
        if (std::error_code failure; !fs::exists(path, failure))
            throw checkpoint_error(shard_name + " is missing: " + path + " does not exist");
        require_regular_file(path, shard_name);  // a FIFO would block the open
        if (const int code = MPI_File_open(MPI_COMM_SELF, path.c_str(), MPI_MODE_RDONLY, MPI_INFO_NULL, &file->handle);
            code != MPI_SUCCESS) {
            file->handle = MPI_FILE_NULL;
            throw checkpoint_error(shard_name + " is unreadable: " + mpi_message(code));
        }
        MPI_Offset bytes = 0;
        MPI_File_get_size(file->handle, &bytes);
        file->size = static_cast<std::uint64_t>(bytes);
    }
    for (const shard_column& column : shard.columns)
        if (column.offset + column.bytes > file->size)
            throw checkpoint_error(shard_name + " is truncated: column " + column.spec.name + " needs bytes " +
                                   std::to_string(column.offset) + " to " + std::to_string(column.offset + column.bytes) +
                                   ", the file has " + std::to_string(file->size));
    if (!read_columns)
        return;
    std::vector<column_check> checks;
    std::vector<std::byte> chunk(min_column_buffer * 4);
    for (const shard_column& column : shard.columns) {
        column_check& check = checks.emplace_back(shard_name, column);
        std::uint64_t done = 0;
        std::size_t carried = 0;  // bytes of an unchecked element kept at the chunk's front
        while (done < column.bytes) {
            const std::size_t piece =
                static_cast<std::size_t>(std::min<std::uint64_t>(column.bytes - done, chunk.size() - carried));
            MPI_Status status;
            int got = 0;
            const int code = MPI_File_read_at(file->handle, static_cast<MPI_Offset>(column.offset + done),
                                              chunk.data() + carried, static_cast<int>(piece), MPI_BYTE, &status);
            if (code == MPI_SUCCESS)
                MPI_Get_count(&status, MPI_BYTE, &got);
            if (code != MPI_SUCCESS || got != static_cast<int>(piece))
                throw checkpoint_error(shard_name + ": reading column " + column.spec.name + " failed" +
                                       (code != MPI_SUCCESS ? ": " + mpi_message(code) : std::string(" (short read)")));
            check.feed(chunk.data() + carried, piece);
            done += piece;
            const std::size_t filled = carried + piece;
            carried = check.offsets || check.counts ? static_cast<std::size_t>(check.bytes_seen - check.elements * 8) : 0;
            if (carried > 0)
                std::memmove(chunk.data(), chunk.data() + filled - carried, carried);
        }
        if (column.bytes == 0 && column.crc != 0)
            throw checkpoint_error(shard_name + " is corrupt: column " + column.spec.name + " has CRC-32 " + hex32(0) +
                                   ", the manifest says " + hex32(column.crc));
    }
    check_columns_agree(shard, checks);
}

}  // namespace

struct reader::state {
    MPI_Comm comm = MPI_COMM_NULL;
    int rank = 0;
    int size = 1;
    fs::path directory;
    checkpoint_options options;
    std::string manifest_text;
    int saved_ranks = 0;
    std::uint64_t total_entries = 0;
    std::vector<shard_info> dealt;
    std::map<std::string, std::shared_ptr<open_file>> files;
    verification when = verification::before;
    std::vector<std::vector<column_check>> checks;  // while_reading: per dealt shard, per column

    std::string where() const { return "mpidict: checkpoint " + directory.string(); }
};

struct reader::stream::state {
    std::shared_ptr<open_file> file;
    std::string name;
    std::uint64_t position = 0;  // next file offset to read
    std::uint64_t left = 0;      // column bytes not yet read from the file
    std::vector<std::byte> buffer;
    std::size_t start = 0, end = 0;
    std::size_t capacity = 0;
    column_check* check = nullptr;  // while_reading: fed every byte read
    // A mapped file: the column's bytes in place, `start` of them consumed and
    // `fed` of them checked (fed ahead in pieces of feed_bytes); no buffer.
    const std::byte* mapped = nullptr;
    std::uint64_t length = 0, fed = 0;
    static constexpr std::uint64_t feed_bytes = std::uint64_t{256} << 10;

    // Checks (feeds) the mapped bytes up to at least `until` (at most the column's end).
    void feed_to(std::uint64_t until) {
        if (check == nullptr || until <= fed)
            return;
        const std::uint64_t to = std::min(length, std::max(until, fed + feed_bytes));
        check->feed(mapped + fed, static_cast<std::size_t>(to - fed));
        fed = to;
    }
};

reader::stream::stream() = default;
reader::stream::stream(stream&&) noexcept = default;
reader::stream& reader::stream::operator=(stream&&) noexcept = default;
reader::stream::~stream() = default;

const std::byte* reader::stream::next(std::size_t bytes) {
    static constexpr std::byte nothing{};
    if (bytes == 0)
        return &nothing;
    state& s = *m;
    if (s.mapped != nullptr) {
        if (bytes > s.length - s.start)
            throw decode_error("mpidict: checkpoint column " + s.name + " ends early");
        s.feed_to(s.start + bytes);
        const std::byte* out = s.mapped + s.start;
        s.start += bytes;
        return out;
    }
    if (s.end - s.start < bytes) {
        const std::size_t have = s.end - s.start;
        if (bytes - have > s.left)
            throw decode_error("mpidict: checkpoint column " + s.name + " ends early");
        if (s.start > 0 && have > 0)
            std::memmove(s.buffer.data(), s.buffer.data() + s.start, have);
        s.start = 0;
        s.end = have;
        const std::size_t wanted = std::max(bytes, std::min<std::size_t>(s.capacity, have + s.left));
        if (s.buffer.size() < wanted)
            s.buffer.resize(wanted);
        while (s.end < bytes || (s.end < s.buffer.size() && s.left > 0)) {
            const std::size_t piece = static_cast<std::size_t>(
                std::min<std::uint64_t>({s.left, s.buffer.size() - s.end, max_io_bytes}));
            if (piece == 0)
                break;
            MPI_Status status;
            const int code = MPI_File_read_at(s.file->handle, static_cast<MPI_Offset>(s.position),
                                              s.buffer.data() + s.end, static_cast<int>(piece), MPI_BYTE, &status);
            int got = 0;
            if (code == MPI_SUCCESS)
                MPI_Get_count(&status, MPI_BYTE, &got);
            if (code != MPI_SUCCESS || got != static_cast<int>(piece))
                throw checkpoint_error("mpidict: checkpoint column " + s.name + ": read failed" +
                                       (code != MPI_SUCCESS ? ": " + mpi_message(code) : std::string(" (short read)")));
            s.position += piece;
            s.left -= piece;
            s.end += piece;
        }
        if (s.check != nullptr && s.end > have)
            s.check->feed(s.buffer.data() + have, s.end - have);
        if (s.end < bytes)
            throw decode_error("mpidict: checkpoint column " + s.name + " ends early");
    }
    const std::byte* out = s.buffer.data() + s.start;
    s.start += bytes;
    return out;
}

std::span<const std::byte> reader::stream::next_run(std::size_t width, std::size_t most) {
    state& s = *m;
    if (s.mapped != nullptr) {
        if (width > s.length - s.start)
            throw decode_error("mpidict: checkpoint column " + s.name + " ends early");
        s.feed_to(s.start + width);
        const std::size_t elements =
            std::min<std::size_t>(most, static_cast<std::size_t>(((s.check ? s.fed : s.length) - s.start) / width));
        const std::span<const std::byte> out(s.mapped + s.start, elements * width);
        s.start += elements * width;
        return out;
    }
    if (s.end - s.start < width) {
        next(width);  // fills the buffer with at least one element ...
        s.start -= width;  // ... which stays unread here
    }
    const std::size_t elements = std::min(most, (s.end - s.start) / width);
    const std::span<const std::byte> out(s.buffer.data() + s.start, elements * width);
    s.start += elements * width;
    return out;
}

reader::reader(MPI_Comm communicator, const std::string& directory, const description& expected,
               const std::vector<column_spec>& expected_columns, const checkpoint_options& options,
               const std::vector<int>& readers, verification when)
    : m(std::make_unique<state>()) {
    m->when = when;
    m->comm = communicator;
    MPI_Comm_rank(communicator, &m->rank);
    MPI_Comm_size(communicator, &m->size);
    m->directory = directory;
    m->options = options;
    const std::string where = m->where();

    // Rank 0 reads the manifest; everyone gets its text.
    std::string problem;
    std::string text;
    if (m->rank == 0) {
        try {
            text = read_manifest(m->directory);
        } catch (const checkpoint_error& failure) {
            problem = where + ": " + failure.what();
        }
    }
    agree(communicator, problem);
    std::uint64_t length = text.size();
    MPI_Bcast(&length, 1, MPI_UINT64_T, 0, communicator);
    text.resize(static_cast<std::size_t>(length));
    MPI_Bcast(text.data(), static_cast<int>(length), MPI_CHAR, 0, communicator);
    m->manifest_text = text;

    // Every rank checks the manifest (they all get the same verdict).
    parsed_manifest manifest;
    try {
        manifest = parse_manifest(text, (m->directory / manifest_name).string(), &expected, &expected_columns);
    } catch (const checkpoint_error& failure) {
        problem = where + ": " + failure.what();
    }
    agree(communicator, problem);
    m->saved_ranks = manifest.ranks;
    m->total_entries = manifest.entries;

    // Deal the shards and verify the dealt ones: files, sizes, checksums, structure.
    std::vector<int> dealers = readers;
    if (dealers.empty())
        for (int r = 0; r < m->size; ++r)
            dealers.push_back(r);
    for (std::size_t s = 0; s < manifest.shards.size(); ++s)
        if (dealers[s % dealers.size()] == m->rank)
            m->dealt.push_back(manifest.shards[s]);
    try {
        for (const shard_info& shard : m->dealt)
            verify_shard(m->directory, shard, m->files, when == verification::before);
        if (when == verification::while_reading)
            for (const shard_info& shard : m->dealt) {
                auto& checks = m->checks.emplace_back();
                checks.reserve(shard.columns.size());  // streams point into it
                for (const shard_column& column : shard.columns)
                    checks.emplace_back(name_of(shard), column);
            }
    } catch (const error& failure) {
        problem = where + ": " + failure.what();
    }
    agree(communicator, problem);
}

reader::~reader() {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized)
        return;
    for (auto& [name, file] : m->files) {
        if (file && file->mapped != nullptr)
            ::munmap(const_cast<std::byte*>(file->mapped), static_cast<std::size_t>(file->size));
        if (file && file->handle != MPI_FILE_NULL)
            MPI_File_close(&file->handle);
    }
}

std::size_t reader::shards() const { return m->dealt.size(); }
std::uint64_t reader::entries(std::size_t shard) const { return m->dealt.at(shard).entries; }
std::uint64_t reader::total_entries() const { return m->total_entries; }
int reader::saved_ranks() const { return m->saved_ranks; }
const std::string& reader::manifest_text() const { return m->manifest_text; }

reader::stream reader::open(std::size_t shard, std::string_view column) {
    const shard_info& info = m->dealt.at(shard);
    for (const shard_column& c : info.columns) {
        if (c.spec.name != column)
            continue;
        stream out;
        out.m = std::make_unique<stream::state>();
        out.m->file = m->files.at(info.file);
        out.m->name = std::string(column) + " of shard " + std::to_string(info.rank);
        out.m->position = c.offset;
        out.m->left = c.bytes;
        out.m->capacity = std::clamp<std::size_t>(m->options.buffer_bytes / std::max<std::size_t>(1, info.columns.size()),
                                                  min_column_buffer, max_io_bytes);
        if (m->when == verification::while_reading) {
            column_check& check = m->checks.at(shard).at(static_cast<std::size_t>(&c - info.columns.data()));
            if (check.bytes_seen != 0)
                throw checkpoint_error(m->where() + ": column " + out.m->name + " opened twice while being verified");
            out.m->check = &check;
            open_file& file = *out.m->file;
            if (!file.map_tried) {
                file.map_tried = true;
                if (fault_setting() != "no-map")
                    file.mapped = map_file(m->directory / info.file, file.size);
            }
            if (file.mapped != nullptr) {
                out.m->mapped = file.mapped + c.offset;
                out.m->length = c.bytes;
            }
        }
        return out;
    }
    throw checkpoint_error(m->where() + ": shard " + std::to_string(info.rank) + " has no column " + std::string(column));
}

void reader::finish() {
    if (m->when != verification::while_reading)
        return;
    for (std::size_t shard = 0; shard < m->dealt.size(); ++shard) {
        const auto& checks = m->checks[shard];
        if (std::all_of(checks.begin(), checks.end(), [](const column_check& c) { return c.done; }))
            check_columns_agree(m->dealt[shard], checks);
        else
            verify_shard(m->directory, m->dealt[shard], m->files);  // what the streams left: read it all
    }
}

}  // namespace mpidict::detail::checkpoint

namespace mpidict {

checkpoint_summary inspect_checkpoint(const std::string& directory, bool verify) {
    namespace ck = detail::checkpoint;
    checkpoint_summary out;
    std::map<std::string, std::shared_ptr<ck::open_file>> files;
    try {
        out.manifest = ck::read_manifest(directory);
        const ck::parsed_manifest manifest =
            ck::parse_manifest(out.manifest, (ck::fs::path(directory) / ck::manifest_name).string(), nullptr, nullptr);
        out.container = manifest.container;
        out.key_type = manifest.key_type;
        out.key_bytes = manifest.key_bytes;
        out.value_type = manifest.value_type;
        out.value_bytes = manifest.value_bytes;
        out.multi_valued = manifest.multi_valued;
        out.ranks = manifest.ranks;
        out.entries = manifest.entries;
        for (const ck::shard_info& shard : manifest.shards)
            for (const ck::shard_column& column : shard.columns) {
                out.data_bytes += column.bytes;
                ++out.columns;
            }
        if (verify) {
            for (const ck::shard_info& shard : manifest.shards)
                ck::verify_shard(directory, shard, files);
            // hash_map's load refuses a key saved twice (it counts the keys it stored).
            if (const std::uint64_t distinct = manifest.container == "hash_map"
                                                   ? ck::count_distinct_keys(manifest.shards, files)
                                                   : manifest.entries;
                distinct != manifest.entries)
                throw checkpoint_error("the manifest lists " + std::to_string(manifest.entries) + " keys, but only " +
                                       std::to_string(distinct) + " are distinct: a key is saved more than once");
        }
    } catch (const std::exception& failure) {
        out.problem = "mpidict: checkpoint " + directory + ": " + failure.what();
    }
    int finalized = 0;
    MPI_Finalized(&finalized);
    for (auto& [name, file] : files)
        if (!finalized && file && file->handle != MPI_FILE_NULL)
            MPI_File_close(&file->handle);
    return out;
}

}  // namespace mpidict
