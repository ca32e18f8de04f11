// The C API of skiplist_map, part 4 (include/mpidict/c/skiplist.h): consistent
// snapshots.  A handle holds the C++ skiplist_snapshot of its list's key kind;
// the reads go through the same helpers as the list's own (skiplist_internal.hpp),
// over snapshot_reads, whose results are already complete.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "skiplist_internal.hpp"

namespace mpidict::c_skiplist {

inline constexpr std::uint64_t snapshot_magic = 0x31706e73'6469706dULL;  // "mpidsnp1"

}  // namespace mpidict::c_skiplist

struct mpidict_skiplist_snapshot {
    std::uint64_t magic = mpidict::c_skiplist::snapshot_magic;
    int kind = MPIDICT_SKIPLIST_INT64;
    std::optional<mpidict::skiplist_snapshot<std::int64_t, std::string>> ints;
    std::optional<mpidict::skiplist_snapshot<std::string, std::string>> bytes;
};

namespace {

using namespace mpidict::c_skiplist;

// A result that is already there (the snapshot's reads return values, the
// list's return requests): get() hands it over.
template <class T>
struct ready {
    T value;
    T get() { return std::move(value); }
};

// The shared read helpers' view of a snapshot.
template <class Snapshot>
struct snapshot_reads {
    Snapshot& snapshot;
    template <class Key>
    auto find(const Key& key) {
        return ready<decltype(snapshot.find(key))>{snapshot.find(key)};
    }
    template <class Key>
    auto range(const Key& lo, const Key& hi, const mpidict::range_options& options) {
        return ready<decltype(snapshot.range(lo, hi, options))>{snapshot.range(lo, hi, options)};
    }
    template <class Key>
    auto range_from(const Key& lo, const mpidict::range_options& options) {
        return ready<decltype(snapshot.range_from(lo, options))>{snapshot.range_from(lo, options)};
    }
    template <class Key>
    ready<std::uint64_t> count(const Key& lo, const Key& hi, const mpidict::range_options& options) {
        return {snapshot.count(lo, hi, options)};
    }
};
template <class Snapshot>
snapshot_reads(Snapshot&) -> snapshot_reads<Snapshot>;

int check_snapshot(const mpidict_skiplist_snapshot* snapshot, int kind, const char* function) {
    if (snapshot == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "snapshot is NULL");
    if (snapshot->magic != snapshot_magic)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "snapshot is not a live mpidict_skiplist_snapshot handle (released or corrupt)");
    if (kind >= 0 && snapshot->kind != kind)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    std::string("this is a function for snapshots of ") +
                        (kind == MPIDICT_SKIPLIST_INT64 ? "MPIDICT_SKIPLIST_INT64" : "MPIDICT_SKIPLIST_BYTES") +
                        " lists; this snapshot's list was created with " +
                        (snapshot->kind == MPIDICT_SKIPLIST_INT64 ? "MPIDICT_SKIPLIST_INT64" : "MPIDICT_SKIPLIST_BYTES"));
    return MPIDICT_OK;
}

std::string bytes_or_empty(const void* data, std::size_t size) { return as_string(data, size); }

}  // namespace

extern "C" int mpidict_skiplist_snapshot_take(mpidict_skiplist* list, mpidict_skiplist_snapshot** snapshot) {
    constexpr const char* function = "mpidict_skiplist_snapshot_take";
    if (const int code = check_list(list, function))
        return code;
    if (list->destroyed)
        return fail(MPIDICT_ERR_DESTROYED, function, "the list was destroyed by mpidict_skiplist_destroy");
    if (snapshot == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "snapshot is NULL");
    *snapshot = nullptr;
    return guarded(function, [&] {
        auto made = std::make_unique<mpidict_skiplist_snapshot>();
        made->kind = list->kind;
        if (list->kind == MPIDICT_SKIPLIST_INT64)
            made->ints.emplace(list->ints->snapshot());
        else
            made->bytes.emplace(list->bytes->snapshot());
        *snapshot = made.release();
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_snapshot_release(mpidict_skiplist_snapshot** snapshot) {
    constexpr const char* function = "mpidict_skiplist_snapshot_release";
    if (snapshot == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "snapshot is NULL (pass the address of the handle)");
    if (*snapshot == nullptr)
        return MPIDICT_OK;
    if (const int code = check_snapshot(*snapshot, -1, function))
        return code;
    std::unique_ptr<mpidict_skiplist_snapshot> owned(*snapshot);
    *snapshot = nullptr;
    owned->magic = 0;
    return guarded(function, [&] {
        // A list already destroyed freed the copy: then there is nothing to release.
        const auto release = [](auto& held) {
            if (held && held->valid()) {
                try {
                    held->release();
                } catch (const mpidict::use_after_destroy_error&) {
                    held->detach();
                }
            }
        };
        release(owned->ints);
        release(owned->bytes);
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_snapshot_find_i64(mpidict_skiplist_snapshot* snapshot, int64_t key, void* out_value,
                                                  size_t capacity, size_t* value_bytes, int* found) {
    constexpr const char* function = "mpidict_skiplist_snapshot_find_i64";
    if (const int code = check_snapshot(snapshot, MPIDICT_SKIPLIST_INT64, function))
        return code;
    snapshot_reads reads{*snapshot->ints};
    return find(reads, std::int64_t{key}, out_value, capacity, value_bytes, found, function);
}

extern "C" int mpidict_skiplist_snapshot_find_bytes(mpidict_skiplist_snapshot* snapshot, const void* key,
                                                    size_t key_bytes, void* out_value, size_t capacity,
                                                    size_t* value_bytes, int* found) {
    constexpr const char* function = "mpidict_skiplist_snapshot_find_bytes";
    if (const int code = check_snapshot(snapshot, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    snapshot_reads reads{*snapshot->bytes};
    return find(reads, bytes_or_empty(key, key_bytes), out_value, capacity, value_bytes, found, function);
}

extern "C" int mpidict_skiplist_snapshot_range_i64(mpidict_skiplist_snapshot* snapshot, int64_t lo, int64_t hi,
                                                   uint64_t limit, unsigned flags, mpidict_skiplist_visitor visit,
                                                   void* context, size_t* count) {
    constexpr const char* function = "mpidict_skiplist_snapshot_range_i64";
    if (const int code = check_snapshot(snapshot, MPIDICT_SKIPLIST_INT64, function))
        return code;
    snapshot_reads reads{*snapshot->ints};
    return range_flags(reads, std::int64_t{lo}, std::int64_t{hi}, limit, flags, visit, context, count, function);
}

extern "C" int mpidict_skiplist_snapshot_range_bytes(mpidict_skiplist_snapshot* snapshot, const void* lo,
                                                     size_t lo_bytes, const void* hi, size_t hi_bytes, uint64_t limit,
                                                     unsigned flags, mpidict_skiplist_visitor visit, void* context,
                                                     size_t* count) {
    constexpr const char* function = "mpidict_skiplist_snapshot_range_bytes";
    if (const int code = check_snapshot(snapshot, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(lo, lo_bytes, "lo", function))
        return code;
    const bool from = (flags & MPIDICT_SKIPLIST_FROM) != 0;
    if (!from)
        if (const int code = check_bytes(hi, hi_bytes, "hi", function))
            return code;
    snapshot_reads reads{*snapshot->bytes};
    return range_flags(reads, bytes_or_empty(lo, lo_bytes), from ? std::string() : bytes_or_empty(hi, hi_bytes), limit,
                       flags, visit, context, count, function);
}

extern "C" int mpidict_skiplist_snapshot_count_i64(mpidict_skiplist_snapshot* snapshot, int64_t lo, int64_t hi,
                                                   unsigned flags, uint64_t* count) {
    constexpr const char* function = "mpidict_skiplist_snapshot_count_i64";
    if (const int code = check_snapshot(snapshot, MPIDICT_SKIPLIST_INT64, function))
        return code;
    snapshot_reads reads{*snapshot->ints};
    return counted(reads, std::int64_t{lo}, std::int64_t{hi}, flags, count, false, function);
}

extern "C" int mpidict_skiplist_snapshot_count_bytes(mpidict_skiplist_snapshot* snapshot, const void* lo,
                                                     size_t lo_bytes, const void* hi, size_t hi_bytes, unsigned flags,
                                                     uint64_t* count) {
    constexpr const char* function = "mpidict_skiplist_snapshot_count_bytes";
    if (const int code = check_snapshot(snapshot, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(lo, lo_bytes, "lo", function))
        return code;
    if (const int code = check_bytes(hi, hi_bytes, "hi", function))
        return code;
    snapshot_reads reads{*snapshot->bytes};
    return counted(reads, bytes_or_empty(lo, lo_bytes), bytes_or_empty(hi, hi_bytes), flags, count, false, function);
}

extern "C" int mpidict_skiplist_snapshot_size(const mpidict_skiplist_snapshot* snapshot, uint64_t* entries,
                                              size_t* local_entries) {
    constexpr const char* function = "mpidict_skiplist_snapshot_size";
    if (const int code = check_snapshot(snapshot, -1, function))
        return code;
    return guarded(function, [&] {
        const auto sizes = [&](const auto& held) {
            if (entries != nullptr)
                *entries = held->size();
            if (local_entries != nullptr)
                *local_entries = held->local_size();
        };
        if (snapshot->kind == MPIDICT_SKIPLIST_INT64)
            sizes(snapshot->ints);
        else
            sizes(snapshot->bytes);
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_snapshot_local_visit(const mpidict_skiplist_snapshot* snapshot,
                                                     mpidict_skiplist_visitor visit, void* context, size_t* count) {
    constexpr const char* function = "mpidict_skiplist_snapshot_local_visit";
    if (const int code = check_snapshot(snapshot, -1, function))
        return code;
    if (visit == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "visit is NULL");
    if (count != nullptr)
        *count = 0;
    return guarded(function, [&] {
        const auto slice = [&](const auto& held) {
            std::size_t visited = 0;
            bool stopped = false;
            held->for_all([&](const auto& key, const std::string& value) {
                if (stopped)
                    return;
                ++visited;
                if constexpr (std::is_same_v<std::decay_t<decltype(key)>, std::int64_t>)
                    stopped = visit(&key, sizeof key, value.data(), value.size(), context) != 0;
                else
                    stopped = visit(key.data(), key.size(), value.data(), value.size(), context) != 0;
            });
            if (count != nullptr)
                *count = visited;
            return MPIDICT_OK;
        };
        return snapshot->kind == MPIDICT_SKIPLIST_INT64 ? slice(snapshot->ints) : slice(snapshot->bytes);
    });
}
