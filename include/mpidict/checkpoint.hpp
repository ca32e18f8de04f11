#pragma once
// Checkpoints: a container saved to a directory and loaded back, on the same or
// another number of ranks (docs/checkpoint.md has the format and the reasons).
//
//   map.save("run/ckpt");             // collective; every rank writes its shard
//   other.load("run/ckpt");           // collective; `other` may span another p
//
// A checkpoint directory holds manifest.json (what the container is, its
// tunables, one entry per shard with each column's file, offset, length and
// CRC-32) and the data: one file written collectively with MPI-IO (the default
// layout) or one file per rank.  A shard is the saving rank's entries as
// columns (keys, per-key value counts for multi-valued maps, values, expiry
// times for skiplist_map), each a flat array of one fixed-width type, so numpy
// reads them directly (python/mpidict/checkpoint.py).  Byte strings are an
// offsets column (count + 1 uint64s) and a data column.
//
// Atomicity.  save() writes data files under a new generation's name and
// replaces manifest.json by rename last; a save that fails or is killed
// before that leaves the previous checkpoint as it was, and the next save
// removes what it left behind.  load() checks the manifest, the types, every
// file's size and every column's checksum and structure on all ranks before it
// stores anything; a load that fails on one rank fails on all, with the message
// of the rank that found the problem, and leaves the container empty.
//
// Everything here except the templates lives in src/checkpoint/checkpoint.cpp.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <mpi.h>

#include "mpidict/error.hpp"

namespace mpidict {

// A checkpoint could not be written or read: a missing or truncated file, a
// checksum that does not match, a type or format the container cannot take.
class checkpoint_error : public error {
public:
    using error::error;
};

enum class checkpoint_layout {
    shared_file,    // one data file; ranks write their shards at offsets from MPI_Exscan
    file_per_rank,  // one data file per saving rank
};

struct checkpoint_options {
    checkpoint_layout layout = checkpoint_layout::shared_file;
    // Per-rank buffer for streaming columns to and from the files (split between
    // the columns; at least 64 KiB each).
    std::size_t buffer_bytes = std::size_t{8} << 20;
    // The key and value type names written to (save) and expected in (load) the
    // manifest instead of checkpoint_type's; for bindings that keep several user
    // types in one C++ type (Python's int64 and float64 both as uint64 bits).
    std::string key_type_name{};
    std::string value_type_name{};
};

// The portable name of a key or value type in a checkpoint's manifest: "int64",
// "uint32", "float64", "bool", "string" (std::string), "bytes"
// (std::vector<std::byte>) or "raw" (any other trivially copyable type; the
// manifest gives its size).  Specialise it to name a type of your own, so that
// a checkpoint of map<my_point, ...> cannot be loaded into map<other_16_bytes>:
//   template <> struct mpidict::checkpoint_type<my_point> {
//       static constexpr std::string_view name = "my_point";
//   };
template <class T, class Enable = void>
struct checkpoint_type {
    static constexpr std::string_view name = [] {
        if constexpr (std::is_same_v<T, bool>)
            return std::string_view("bool");
        else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>)
            return sizeof(T) == 1   ? std::string_view("int8")
                   : sizeof(T) == 2 ? std::string_view("int16")
                   : sizeof(T) == 4 ? std::string_view("int32")
                                    : std::string_view("int64");
        else if constexpr (std::is_integral_v<T>)
            return sizeof(T) == 1   ? std::string_view("uint8")
                   : sizeof(T) == 2 ? std::string_view("uint16")
                   : sizeof(T) == 4 ? std::string_view("uint32")
                                    : std::string_view("uint64");
        else if constexpr (std::is_floating_point_v<T>)
            return sizeof(T) == 4 ? std::string_view("float32") : std::string_view("float64");
        else if constexpr (std::is_same_v<T, std::string>)
            return std::string_view("string");
        else if constexpr (std::is_same_v<T, std::vector<std::byte>>)
            return std::string_view("bytes");
        else
            return std::string_view("raw");
    }();
};

// What a checkpoint directory holds, read without a container (and without
// collectives: any one process can call it, e.g. `mpidict inspect`).
struct checkpoint_summary {
    std::string manifest;      // the manifest's text
    std::string container;     // "hash_map", ...
    std::string key_type;
    std::uint64_t key_bytes = 0;    // 0: variable length
    std::string value_type;         // empty: a set
    std::uint64_t value_bytes = 0;
    bool multi_valued = false;
    int ranks = 0;                  // saved at
    std::uint64_t entries = 0;
    std::uint64_t data_bytes = 0;   // of every column
    std::size_t columns = 0;        // over all shards
    std::string problem;            // empty: every check passed
};
// Reads the manifest of `directory` and, with `verify`, checks every shard's
// file, size, checksums and structure as load() would.  Never throws for a
// damaged checkpoint: the first problem found is in `problem`.  Needs MPI
// initialised (it reads through MPI-IO on MPI_COMM_SELF).
checkpoint_summary inspect_checkpoint(const std::string& directory, bool verify = true);

namespace detail::checkpoint {

inline constexpr std::uint32_t format_version = 1;

// Checks a manifest's text as load() and inspect_checkpoint() do (no files are
// opened); throws checkpoint_error naming the problem.  For the fuzzer.
void check_manifest_text(const std::string& text);

// How a key or value type is stored: one fixed-width column, or (byte strings)
// an offsets column and a data column.  Containers may specialise it for key
// types that are neither (skiplist_map's tuple keys).
template <class T, class Enable = void>
struct column_codec {
    static_assert(std::is_trivially_copyable_v<T>,
                  "mpidict checkpoints store trivially copyable types, std::string and std::vector<std::byte>.");
    static constexpr bool variable = false;
    static constexpr std::size_t width = sizeof(T);
    static void write(std::byte* out, const T& value) { std::memcpy(out, &value, sizeof(T)); }
    static T read(const std::byte* in) {
        T value;
        std::memcpy(static_cast<void*>(&value), in, sizeof(T));
        return value;
    }
};
template <class T>
struct column_codec<T, std::enable_if_t<std::is_same_v<T, std::string> || std::is_same_v<T, std::vector<std::byte>>>> {
    static constexpr bool variable = true;
    static constexpr std::size_t width = 0;
    static std::span<const std::byte> bytes(const T& value) { return std::as_bytes(std::span(value.data(), value.size())); }
    static T read(std::span<const std::byte> in) {
        T value(in.size(), typename T::value_type{});
        if (!in.empty())
            std::memcpy(value.data(), in.data(), in.size());
        return value;
    }
};

// One physical column: a flat array of `count` elements of `width` bytes.
struct column_spec {
    std::string name;
    std::string type;
    std::uint32_t width = 0;
    std::uint64_t count = 0;
};

// What a checkpoint holds; load() compares everything but the tunables.
struct description {
    std::string container;  // "hash_map", "linear_hash_map", "skiplist_map", "rma_hash_set"
    std::string key_type;
    std::uint64_t key_bytes = 0;    // 0: variable length
    std::string value_type;         // empty: no values (a set)
    std::uint64_t value_bytes = 0;  // 0: variable length (or no values)
    bool multi_valued = false;
    std::vector<std::pair<std::string, std::string>> tunables;  // informative
};

// Collective when every rank passes: if any rank's `problem` is non-empty, every
// rank throws checkpoint_error with the message of the lowest such rank.
void agree(MPI_Comm communicator, const std::string& problem);

// Writes one checkpoint.  Construct collectively, append each column's bytes in
// order (columns may interleave), then commit() collectively.  Destroying an
// uncommitted writer closes its files without collectives and leaves the
// directory's previous checkpoint in force.
class writer {
public:
    writer(MPI_Comm communicator, const std::string& directory, description what, std::vector<column_spec> columns,
           std::uint64_t entries, const checkpoint_options& options);
    ~writer();
    writer(const writer&) = delete;
    writer& operator=(const writer&) = delete;

    void append(std::size_t column, const void* data, std::size_t bytes);
    template <class T>
    void append_value(std::size_t column, const T& value) {
        append(column, &value, sizeof(T));
    }
    // Collective.  Flushes, syncs and closes the data, then publishes the manifest.
    void commit();

private:
    struct state;
    std::unique_ptr<state> m;
};

// When a reader checks the dealt shards' checksums and column structure:
// `before` in its constructor (a first full read of every column; nothing is
// handed out unchecked), or `while_reading`: the constructor checks files and
// sizes only, every stream checks the bytes it reads as it reads them (the
// CRC-32 once its column is read to the end), and finish() checks the rest.  A
// container loads with while_reading only if it can undo what it stored from a
// shard that then fails (hash_map: it empties the map).
enum class verification { before, while_reading };

// Reads one checkpoint.  The constructor is collective: it reads the manifest on
// rank 0, checks it against `expected` on every rank, deals the shards out
// (shard s to readers[s % readers.size()]; no readers: every rank) and verifies each dealt shard's files, sizes,
// checksums and column structure; it throws on every rank if any rank failed.
class reader {
public:
    reader(MPI_Comm communicator, const std::string& directory, const description& expected,
           const std::vector<column_spec>& expected_columns, const checkpoint_options& options,
           const std::vector<int>& readers = {}, verification when = verification::before);
    ~reader();
    reader(const reader&) = delete;
    reader& operator=(const reader&) = delete;

    std::size_t shards() const;                     // dealt to this rank
    std::uint64_t entries(std::size_t shard) const;  // entries of that shard
    std::uint64_t total_entries() const;            // over all shards
    int saved_ranks() const;
    const std::string& manifest_text() const;

    // A sequential view of one column of one dealt shard, read in chunks.
    class stream {
    public:
        stream();
        stream(stream&&) noexcept;
        stream& operator=(stream&&) noexcept;
        ~stream();
        // The next `bytes` bytes of the column, valid until the next call.
        const std::byte* next(std::size_t bytes);
        // The next whole elements of `width` bytes, at least one and at most
        // `most` (as many as are buffered), valid until the next call.
        std::span<const std::byte> next_run(std::size_t width, std::size_t most);

    private:
        friend class reader;
        struct state;
        std::unique_ptr<state> m;
    };
    stream open(std::size_t shard, std::string_view column);
    // Local.  With verification::while_reading, call once the streams are done:
    // checks what they did not (a column not read to its end is read and
    // checked now, and the columns against each other); throws checkpoint_error.
    void finish();

private:
    struct state;
    std::unique_ptr<state> m;
};

// Test-only fault injection, from the environment variable
// MPIDICT_CHECKPOINT_FAULT: "fail-before-manifest" makes commit() fail on every
// rank after the data is written; "exit-during-write" makes every rank exit
// (status 86) after writing its first chunk of data; "no-map" makes a
// verification::while_reading reader read through MPI-IO, not a mapping.

// ---- the columns of a container's entries -------------------------------------

// Entries are (key, values...) with optional per-entry counts and expiry times.
struct layout_flags {
    bool has_values = true;
    bool multi_valued = false;
    bool has_expiry = false;
};

// Sizes gathered by a first pass over the local entries.
struct entry_totals {
    std::uint64_t keys = 0;
    std::uint64_t values = 0;
    std::uint64_t key_bytes = 0;    // of variable-length keys
    std::uint64_t value_bytes = 0;  // of variable-length values
};

template <class K, class V>
std::vector<column_spec> columns_for(layout_flags flags, const entry_totals& totals) {
    std::vector<column_spec> out;
    auto add = [&](std::string name, std::string type, std::size_t width, std::uint64_t count, bool variable,
                   std::uint64_t data_bytes) {
        if (variable) {
            out.push_back({name + ".offsets", "uint64", 8, count + 1});
            out.push_back({name + ".data", std::move(type), 1, data_bytes});
        } else {
            out.push_back({std::move(name), std::move(type), static_cast<std::uint32_t>(width), count});
        }
    };
    add("keys", std::string(checkpoint_type<K>::name), column_codec<K>::width, totals.keys, column_codec<K>::variable,
        totals.key_bytes);
    if (flags.multi_valued)
        out.push_back({"value_counts", "uint64", 8, totals.keys});
    if (flags.has_values)
        add("values", std::string(checkpoint_type<V>::name), column_codec<V>::width, totals.values,
            column_codec<V>::variable, totals.value_bytes);
    if (flags.has_expiry)
        out.push_back({"expiry", "float64", 8, totals.keys});
    return out;
}

template <class K, class V>
description describe(std::string container, layout_flags flags, const checkpoint_options& options = {}) {
    description d;
    d.container = std::move(container);
    d.key_type = std::string(checkpoint_type<K>::name);
    d.key_bytes = column_codec<K>::width;
    if (flags.has_values) {
        d.value_type = std::string(checkpoint_type<V>::name);
        d.value_bytes = column_codec<V>::width;
    }
    d.multi_valued = flags.multi_valued;
    if (!options.key_type_name.empty())
        d.key_type = options.key_type_name;
    if (!options.value_type_name.empty() && flags.has_values)
        d.value_type = options.value_type_name;
    return d;
}

template <class T>
void add_totals(const T& value, std::uint64_t& bytes) {
    if constexpr (column_codec<T>::variable)
        bytes += column_codec<T>::bytes(value).size();
}

// Streams entries into a writer's columns, in the order columns_for gives them.
// Each column is staged here in pieces of stage_bytes, so the writer is called
// once a piece rather than once an element.
template <class K, class V>
class entry_writer {
public:
    entry_writer(writer& out, layout_flags flags) : m_out(out) {
        std::size_t next = 0;
        m_key = next;
        next += column_codec<K>::variable ? 2 : 1;
        if (flags.multi_valued)
            m_count = next++;
        if (flags.has_values) {
            m_value = next;
            next += column_codec<V>::variable ? 2 : 1;
        }
        if (flags.has_expiry)
            m_expiry = next++;
        m_stages.resize(next);
        for (auto& stage : m_stages)
            stage.reserve(stage_bytes);
        if constexpr (column_codec<K>::variable)
            put_raw(m_key, std::uint64_t{0});
        if constexpr (column_codec<V>::variable)
            if (flags.has_values)
                put_raw(m_value, std::uint64_t{0});
    }
    entry_writer(const entry_writer&) = delete;
    entry_writer& operator=(const entry_writer&) = delete;
    // Hands what is staged to the writer (call before writer::commit()).
    void finish() {
        for (std::size_t column = 0; column < m_stages.size(); ++column)
            drain(column);
    }

    void key(const K& key) { put(m_key, key, m_key_end); }
    void count(std::uint64_t values) { put_raw(m_count, values); }
    void value(const V& value) { put(m_value, value, m_value_end); }
    void expiry(double at) { put_raw(m_expiry, at); }

private:
    static constexpr std::size_t stage_bytes = std::size_t{64} << 10;

    void drain(std::size_t column) {
        auto& stage = m_stages[column];
        if (!stage.empty())
            m_out.append(column, stage.data(), stage.size());
        stage.clear();
    }
    void put_bytes(std::size_t column, const std::byte* data, std::size_t bytes) {
        auto& stage = m_stages[column];
        if (stage.size() + bytes > stage_bytes) {
            drain(column);
            if (bytes > stage_bytes) {
                m_out.append(column, data, bytes);
                return;
            }
        }
        stage.insert(stage.end(), data, data + bytes);
    }
    template <class T>
    void put_raw(std::size_t column, const T& item) {
        put_bytes(column, reinterpret_cast<const std::byte*>(&item), sizeof(T));
    }
    template <class T>
    void put(std::size_t column, const T& item, std::uint64_t& end) {
        if constexpr (column_codec<T>::variable) {
            const auto bytes = column_codec<T>::bytes(item);
            end += bytes.size();
            put_raw(column, end);
            put_bytes(column + 1, bytes.data(), bytes.size());
        } else {
            std::array<std::byte, column_codec<T>::width> buffer;
            column_codec<T>::write(buffer.data(), item);
            put_bytes(column, buffer.data(), buffer.size());
        }
    }
    writer& m_out;
    std::size_t m_key = 0, m_count = 0, m_value = 0, m_expiry = 0;
    std::uint64_t m_key_end = 0, m_value_end = 0;
    std::vector<std::vector<std::byte>> m_stages;
};

// Collective.  Writes one checkpoint: `fill(entries)` streams this rank's
// entries (in the order columns_for gives the columns), then everything is
// handed to the writer and committed.
template <class K, class V, class Fill>
void write_entries(MPI_Comm comm, const std::string& directory, description what, layout_flags flags,
                   const entry_totals& totals, const checkpoint_options& options, Fill&& fill) {
    writer out(comm, directory, std::move(what), columns_for<K, V>(flags, totals), totals.keys, options);
    entry_writer<K, V> entries(out, flags);
    fill(entries);
    entries.finish();
    out.commit();
}

// Streams the entries of one dealt shard back out of a reader.
template <class K, class V>
class entry_reader {
public:
    entry_reader(reader& in, std::size_t shard, layout_flags flags) : m_flags(flags) {
        open(in, shard, "keys", m_keys, m_key_offsets, m_key_end, column_codec<K>::variable);
        if (flags.multi_valued)
            m_counts = in.open(shard, "value_counts");
        if (flags.has_values)
            open(in, shard, "values", m_values, m_value_offsets, m_value_end, column_codec<V>::variable);
        if (flags.has_expiry)
            m_expiry = in.open(shard, "expiry");
    }
    K key() { return get<K>(m_keys, m_key_offsets, m_key_end); }
    std::uint64_t count() { return load<std::uint64_t>(m_counts); }
    V value() { return get<V>(m_values, m_value_offsets, m_value_end); }
    double expiry() { return load<double>(m_expiry); }
    // The next `n` keys, counts or values in bulk (fixed-width types only): one
    // call per buffered run, not one an element.
    void keys(K* out, std::size_t n) { runs(m_keys, out, n); }
    void counts(std::uint64_t* out, std::size_t n) { runs(m_counts, out, n); }
    void values(V* out, std::size_t n) { runs(m_values, out, n); }

private:
    template <class T>
    static void runs(reader::stream& from, T* out, std::size_t n) {
        static_assert(!column_codec<T>::variable, "bulk reads are for fixed-width columns");
        constexpr std::size_t width = column_codec<T>::width;
        while (n > 0) {
            const std::span<const std::byte> run = from.next_run(width, n);
            const std::size_t got = run.size() / width;
            for (std::size_t i = 0; i < got; ++i)
                out[i] = column_codec<T>::read(run.data() + i * width);
            out += got;
            n -= got;
        }
    }
    template <class T>
    static T load(reader::stream& from) {
        T value;
        std::memcpy(&value, from.next(sizeof(T)), sizeof(T));
        return value;
    }
    static void open(reader& in, std::size_t shard, const std::string& name, reader::stream& data,
                     reader::stream& offsets, std::uint64_t& end, bool variable) {
        if (variable) {
            offsets = in.open(shard, name + ".offsets");
            data = in.open(shard, name + ".data");
            end = load<std::uint64_t>(offsets);  // 0, checked by the reader
        } else {
            data = in.open(shard, name);
        }
    }
    template <class T>
    static T get(reader::stream& data, reader::stream& offsets, std::uint64_t& end) {
        if constexpr (column_codec<T>::variable) {
            const std::uint64_t next = load<std::uint64_t>(offsets);  // monotonic, checked by the reader
            const std::size_t length = static_cast<std::size_t>(next - end);
            end = next;
            return column_codec<T>::read(std::span<const std::byte>(data.next(length), length));
        } else {
            return column_codec<T>::read(data.next(column_codec<T>::width));
        }
    }
    layout_flags m_flags;
    reader::stream m_keys, m_key_offsets, m_counts, m_values, m_value_offsets, m_expiry;
    std::uint64_t m_key_end = 0, m_value_end = 0;
};

// The load of a container that stores entries by its own inserts and takes
// them back by erasing them (linear_hash_map, skiplist_map).  Collective:
// inserts every entry of the dealt shards (insert(key, value, expiry); expiry 0
// without an expiry column), flushes, and if any rank failed or refused_total()
// (collective) counts refusals, every reader erases its shards' keys again and
// every rank throws checkpoint_error.
template <class K, class V, class Insert, class Erase, class Flush, class RefusedTotal>
void load_by_inserts(MPI_Comm comm, reader& in, layout_flags flags, const std::string& directory, Insert&& insert,
                     Erase&& erase, Flush&& flush, RefusedTotal&& refused_total, std::string_view refusal) {
    std::string problem;
    try {
        for (std::size_t shard = 0; shard < in.shards(); ++shard) {
            entry_reader<K, V> entries(in, shard, flags);
            for (std::uint64_t entry = 0; entry < in.entries(shard); ++entry) {
                const K key = entries.key();
                const V value = entries.value();
                insert(key, value, flags.has_expiry ? entries.expiry() : 0.0);
            }
        }
    } catch (const std::exception& failure) {
        problem = "mpidict: checkpoint " + directory + ": loading failed: " + failure.what();
    }
    flush();
    if (const std::uint64_t refused = refused_total(); problem.empty() && refused != 0)
        problem = "mpidict: checkpoint " + directory + ": " + std::to_string(refused) +
                  " of the saved entries were refused: " + std::string(refusal);
    try {
        agree(comm, problem);
    } catch (const checkpoint_error& failure) {
        for (std::size_t shard = 0; shard < in.shards(); ++shard) {
            entry_reader<K, V> entries(in, shard, flags);
            for (std::uint64_t entry = 0; entry < in.entries(shard); ++entry) {
                const K key = entries.key();
                entries.value();
                if (flags.has_expiry)
                    entries.expiry();
                try {
                    erase(key);
                } catch (const error&) {
                    // A key this container refuses (too long here) was never stored.
                }
            }
        }
        flush();
        throw checkpoint_error(std::string(failure.what()) + "; the map is left empty");
    }
}

// The communicator a container's checkpoint runs on: a duplicate, so file I/O
// collectives never meet the container's own traffic.  Throws for a container
// over a simulated transport.
class communicator_copy {
public:
    communicator_copy(MPI_Comm communicator, std::string_view container);
    ~communicator_copy();
    communicator_copy(const communicator_copy&) = delete;
    communicator_copy& operator=(const communicator_copy&) = delete;
    MPI_Comm get() const { return m_comm; }

private:
    MPI_Comm m_comm = MPI_COMM_NULL;
};

}  // namespace detail::checkpoint
}  // namespace mpidict
