#pragma once
// What the C API's skiplist translation units share (skiplist_c.cpp: create,
// point operations, batches, ranges; skiplist_c_query.cpp: range flags, match,
// find_many, consistency modes): the handle and the argument checks.

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "c_support.hpp"
#include "mpidict/c/skiplist.h"
#include "mpidict/skiplist_map.hpp"

namespace mpidict::c_skiplist {

using int_map = mpidict::skiplist_map<std::int64_t, std::string>;
using bytes_map = mpidict::skiplist_map<std::string, std::string>;

inline constexpr std::uint64_t list_magic = 0x316c7369'6469706dULL;  // "mpidisl1"

}  // namespace mpidict::c_skiplist

struct mpidict_skiplist {
    std::uint64_t magic = mpidict::c_skiplist::list_magic;
    int kind = MPIDICT_SKIPLIST_INT64;
    std::size_t value_size = 0;
    int rank = 0;
    int size = 1;
    bool destroyed = false;
    std::unique_ptr<mpidict::c_skiplist::int_map> ints;
    std::unique_ptr<mpidict::c_skiplist::bytes_map> bytes;
};

namespace mpidict::c_skiplist {

using mpidict::c_detail::fail;
using mpidict::c_detail::guarded;

inline int check_list(const mpidict_skiplist* list, const char* function) {
    if (list == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "list is NULL");
    if (list->magic != list_magic)
        return fail(MPIDICT_ERR_ARGUMENT, function, "list is not a live mpidict_skiplist handle (freed or corrupt)");
    return MPIDICT_OK;
}

// A live list (not destroyed), of either key kind.
inline int check_live(const mpidict_skiplist* list, const char* function) {
    if (const int code = check_list(list, function))
        return code;
    if (list->destroyed)
        return fail(MPIDICT_ERR_DESTROYED, function, "the list was destroyed by mpidict_skiplist_destroy");
    return MPIDICT_OK;
}

// A live list of the given key kind.
inline int check_use(const mpidict_skiplist* list, int kind, const char* function) {
    if (const int code = check_live(list, function))
        return code;
    if (list->kind != kind)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    std::string("this is a function for ") +
                        (kind == MPIDICT_SKIPLIST_INT64 ? "MPIDICT_SKIPLIST_INT64" : "MPIDICT_SKIPLIST_BYTES") +
                        " lists; the list was created with " +
                        (list->kind == MPIDICT_SKIPLIST_INT64 ? "MPIDICT_SKIPLIST_INT64" : "MPIDICT_SKIPLIST_BYTES"));
    return MPIDICT_OK;
}

inline int check_bytes(const void* data, std::size_t size, const char* what, const char* function) {
    if (data == nullptr && size != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, std::string(what) + " is NULL with " + std::to_string(size) +
                                                        " bytes");
    return MPIDICT_OK;
}

// The packed BYTES keys of a batch call (key i is key_bytes[i] bytes long, the
// keys back to back from `keys`) copied into `out`; a NULL `key_bytes` or
// `keys` that should hold bytes is refused, naming the key.  Call inside
// guarded() (copying may throw std::bad_alloc).
inline int unpack_keys(const void* keys, const std::size_t* key_bytes, std::size_t count, std::vector<std::string>& out,
                       const char* function) {
    if (key_bytes == nullptr && count != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, "key_bytes is NULL with count " + std::to_string(count));
    out.clear();
    out.reserve(count);
    const char* at = static_cast<const char*>(keys);
    std::size_t total = 0;
    for (std::size_t i = 0; i < count; ++i) {
        if (at == nullptr && key_bytes[i] != 0)
            return fail(MPIDICT_ERR_ARGUMENT, function, "keys is NULL with " + std::to_string(key_bytes[i]) +
                                                            " bytes for key " + std::to_string(i));
        out.emplace_back(key_bytes[i] == 0 ? std::string() : std::string(at + total, key_bytes[i]));
        total += key_bytes[i];
    }
    return MPIDICT_OK;
}

inline int check_value(const mpidict_skiplist* list, const void* value, std::size_t value_bytes, const char* function) {
    if (const int code = check_bytes(value, value_bytes, "value", function))
        return code;
    if (list->value_size != 0 && value_bytes != list->value_size)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "value of " + std::to_string(value_bytes) + " bytes; this list's values have value_size = " +
                        std::to_string(list->value_size) + " bytes");
    return MPIDICT_OK;
}

inline std::string as_string(const void* data, std::size_t size) {
    return size == 0 ? std::string() : std::string(static_cast<const char*>(data), size);
}

// A refused insert (list_full): MPIDICT_ERR_FULL with what to change.
template <class Map>
inline int full(const Map& map, const char* function) {
    const auto& config = map.settings();
    std::string message = map.last_refusal();  // names the limit that stopped the server ranks
    if (message.empty())
        message = "the list is full (list_full): no free node on any server rank (node_slots_per_rank = " +
                  std::to_string(config.node_slots_per_rank) + ", G = " + std::to_string(config.granularity) +
                  " keys per node); the insert was not applied";
    return fail(MPIDICT_ERR_FULL, function, message);
}

template <class Entries>
int visit_all(const Entries& entries, mpidict_skiplist_visitor visit, void* context, std::size_t* count) {
    std::size_t visited = 0;
    for (const auto& [key, value] : entries) {
        ++visited;
        int stop = 0;
        if constexpr (std::is_same_v<std::decay_t<decltype(key)>, std::int64_t>)
            stop = visit(&key, sizeof key, value.data(), value.size(), context);
        else
            stop = visit(key.data(), key.size(), value.data(), value.size(), context);
        if (stop != 0)
            break;
    }
    if (count != nullptr)
        *count = visited;
    return MPIDICT_OK;
}

// A call whose answer is yes or no (insert_if_absent, erase, expire, persist):
// `body` runs inside guarded and its answer goes to *out (1 or 0) when out is
// not NULL.
template <class Body>
int guarded_flag(const char* function, int* out, Body&& body) noexcept {
    return guarded(function, [&] {
        const bool yes = body();
        if (out != nullptr)
            *out = yes ? 1 : 0;
        return MPIDICT_OK;
    });
}

// ---- reads shared by the list and its snapshots (skiplist_c_snapshot.cpp) ----------
// `Map` is a list, or snapshot_reads over a snapshot: find(key), range(lo, hi,
// options), range_from(lo, options) and count(lo, hi, options) whose results
// have get().

template <class Map, class Key>
int find(Map& map, const Key& key, void* out_value, std::size_t capacity, std::size_t* value_bytes, int* found,
         const char* function) {
    if (found == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "found is NULL");
    if (out_value == nullptr && capacity != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "out_value is NULL with capacity " + std::to_string(capacity));
    return guarded(function, [&] {
        const auto value = map.find(key).get();
        *found = value ? 1 : 0;
        if (value) {
            if (capacity != 0 && !value->empty())
                std::memcpy(out_value, value->data(), std::min(capacity, value->size()));
            if (value_bytes != nullptr)
                *value_bytes = value->size();
        } else if (value_bytes != nullptr) {
            *value_bytes = 0;
        }
        return MPIDICT_OK;
    });
}

inline constexpr unsigned known_flags =
    MPIDICT_SKIPLIST_DESCENDING | MPIDICT_SKIPLIST_AFTER_LO | MPIDICT_SKIPLIST_BEFORE_HI | MPIDICT_SKIPLIST_FROM;

inline int check_flags(unsigned flags, unsigned allowed, const char* function) {
    if ((flags & ~allowed) == 0)
        return MPIDICT_OK;
    char text[96];
    std::snprintf(text, sizeof text, "flags 0x%x are not flags of this function (it takes 0x%x)", flags & ~allowed,
                  allowed);
    return fail(MPIDICT_ERR_ARGUMENT, function, text);
}

inline mpidict::range_options options_of(std::uint64_t limit, unsigned flags) {
    mpidict::range_options options;
    options.limit = limit;
    options.descending = (flags & MPIDICT_SKIPLIST_DESCENDING) != 0;
    options.after_lo = (flags & MPIDICT_SKIPLIST_AFTER_LO) != 0;
    options.before_hi = (flags & MPIDICT_SKIPLIST_BEFORE_HI) != 0 && (flags & MPIDICT_SKIPLIST_FROM) == 0;
    return options;
}

template <class Map, class Key>
int range_flags(Map& map, const Key& lo, const Key& hi, std::uint64_t limit, unsigned flags,
                mpidict_skiplist_visitor visit, void* context, std::size_t* count, const char* function) {
    if (const int code = check_flags(flags, known_flags, function))
        return code;
    if (visit == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "visit is NULL");
    if (count != nullptr)
        *count = 0;
    const bool from = (flags & MPIDICT_SKIPLIST_FROM) != 0;
    if (!from && lo > hi)
        return MPIDICT_OK;  // an empty range
    return guarded(function, [&] {
        const auto options = options_of(limit, flags);
        const auto entries = from ? map.range_from(lo, options).get() : map.range(lo, hi, options).get();
        return visit_all(entries, visit, context, count);
    });
}

// count / erase_range: flags MPIDICT_SKIPLIST_AFTER_LO and _BEFORE_HI only (a
// count has no order, and C++'s count has no range_from).
template <class Map, class Key>
int counted(Map& map, const Key& lo, const Key& hi, unsigned flags, std::uint64_t* out, bool erase,
            const char* function) {
    constexpr unsigned allowed = MPIDICT_SKIPLIST_AFTER_LO | MPIDICT_SKIPLIST_BEFORE_HI;
    if ((flags & ~allowed) != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "flags " + std::to_string(flags & ~allowed) +
                        " are not flags of this function (it takes MPIDICT_SKIPLIST_AFTER_LO and _BEFORE_HI)");
    if (out == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, erase ? "erased is NULL" : "count is NULL");
    *out = 0;
    if (lo > hi)
        return MPIDICT_OK;  // an empty interval
    return guarded(function, [&] {
        mpidict::range_options options;
        options.after_lo = (flags & MPIDICT_SKIPLIST_AFTER_LO) != 0;
        options.before_hi = (flags & MPIDICT_SKIPLIST_BEFORE_HI) != 0;
        if constexpr (requires { map.erase_range(lo, hi, options); })
            *out = erase ? map.erase_range(lo, hi, options).get() : map.count(lo, hi, options).get();
        else
            *out = map.count(lo, hi, options).get();  // a snapshot: read only
        return MPIDICT_OK;
    });
}

}  // namespace mpidict::c_skiplist
