// The C API of skiplist_map, part 2 (include/mpidict/c/skiplist.h): ranges
// with flags (paging, range_from), match, find_many and the consistency modes.
// Every entry point validates its arguments, then runs inside guarded (errors
// as codes and mpidict_last_error()), as skiplist_c.cpp does.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "mpidict/skiplist_range_many.hpp"
#include "skiplist_internal.hpp"

namespace {

using namespace mpidict::c_skiplist;

// find_many: results in index order, each value copied (truncated) to its slot.
template <class Map, class Key>
int find_many(Map& map, std::span<const Key> keys, void* out_values, std::size_t value_capacity,
              std::size_t* value_bytes, int* found, const char* function) {
    if (found == nullptr && !keys.empty())
        return fail(MPIDICT_ERR_ARGUMENT, function, "found is NULL");
    if (out_values == nullptr && value_capacity != 0 && !keys.empty())
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "out_values is NULL with value_capacity " + std::to_string(value_capacity));
    if (value_capacity != 0 && keys.size() > SIZE_MAX / value_capacity)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    std::to_string(keys.size()) + " values of value_capacity " + std::to_string(value_capacity) +
                        " bytes overflow size_t");
    return guarded(function, [&] {
        char* out = static_cast<char*>(out_values);
        map.find_many(keys, [&](std::size_t i, const std::optional<std::string>& value) {
            found[i] = value ? 1 : 0;
            if (value_bytes != nullptr)
                value_bytes[i] = value ? value->size() : 0;
            if (value && value_capacity != 0 && !value->empty())
                std::memcpy(out + i * value_capacity, value->data(), std::min(value_capacity, value->size()));
        });
        return MPIDICT_OK;
    });
}

// range_many: the ranges' entries visited range by range in index order,
// each range's visit stopped by a non-zero return (the other ranges go on).
template <class Map, class Key>
int range_many(Map& map, std::span<const std::pair<Key, Key>> ranges, std::uint64_t limit, unsigned flags,
               std::size_t window, mpidict_skiplist_many_visitor visit, void* context, std::size_t* counts,
               const char* function) {
    constexpr unsigned allowed = MPIDICT_SKIPLIST_DESCENDING | MPIDICT_SKIPLIST_AFTER_LO | MPIDICT_SKIPLIST_BEFORE_HI;
    if (const int code = check_flags(flags, allowed, function))
        return code;
    if (visit == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "visit is NULL");
    return guarded(function, [&] {
        mpidict::range_many(
            map, ranges,
            [&](std::size_t index, auto&& entries) {
                std::size_t visited = 0;
                for (const auto& [key, value] : entries) {
                    ++visited;
                    int stop = 0;
                    if constexpr (std::is_same_v<Key, std::int64_t>)
                        stop = visit(index, &key, sizeof key, value.data(), value.size(), context);
                    else
                        stop = visit(index, key.data(), key.size(), value.data(), value.size(), context);
                    if (stop != 0)
                        break;
                }
                if (counts != nullptr)
                    counts[index] = visited;
            },
            options_of(limit, flags), window);
        return MPIDICT_OK;
    });
}

}  // namespace

extern "C" int mpidict_skiplist_range_many_i64(mpidict_skiplist* list, const int64_t* lo, const int64_t* hi,
                                               size_t count, uint64_t limit, unsigned flags, size_t window,
                                               mpidict_skiplist_many_visitor visit, void* context, size_t* counts) {
    constexpr const char* function = "mpidict_skiplist_range_many_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    if ((lo == nullptr || hi == nullptr) && count != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    std::string(lo == nullptr ? "lo" : "hi") + " is NULL with count " + std::to_string(count));
    std::vector<std::pair<std::int64_t, std::int64_t>> ranges;
    const int code = guarded(function, [&] {
        ranges.reserve(count);
        for (std::size_t i = 0; i < count; ++i)
            ranges.emplace_back(lo[i], hi[i]);
        return MPIDICT_OK;
    });
    if (code != MPIDICT_OK)
        return code;
    return range_many(*list->ints, std::span<const std::pair<std::int64_t, std::int64_t>>(ranges), limit, flags,
                      window, visit, context, counts, function);
}

extern "C" int mpidict_skiplist_range_many_bytes(mpidict_skiplist* list, const void* lo, const size_t* lo_bytes,
                                                 const void* hi, const size_t* hi_bytes, size_t count,
                                                 uint64_t limit, unsigned flags, size_t window,
                                                 mpidict_skiplist_many_visitor visit, void* context,
                                                 size_t* counts) {
    constexpr const char* function = "mpidict_skiplist_range_many_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    std::vector<std::string> lows, highs;
    std::vector<std::pair<std::string, std::string>> ranges;
    const int code = guarded(function, [&] {
        if (const int bad = unpack_keys(lo, lo_bytes, count, lows, function))
            return bad;
        if (const int bad = unpack_keys(hi, hi_bytes, count, highs, function))
            return bad;
        ranges.reserve(count);
        for (std::size_t i = 0; i < count; ++i)
            ranges.emplace_back(std::move(lows[i]), std::move(highs[i]));
        return MPIDICT_OK;
    });
    if (code != MPIDICT_OK)
        return code;
    return range_many(*list->bytes, std::span<const std::pair<std::string, std::string>>(ranges), limit, flags,
                      window, visit, context, counts, function);
}

extern "C" int mpidict_skiplist_range_flags_i64(mpidict_skiplist* list, int64_t lo, int64_t hi, uint64_t limit,
                                                unsigned flags, mpidict_skiplist_visitor visit, void* context,
                                                size_t* count) {
    constexpr const char* function = "mpidict_skiplist_range_flags_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return range_flags(*list->ints, std::int64_t{lo}, std::int64_t{hi}, limit, flags, visit, context, count,
                       function);
}

extern "C" int mpidict_skiplist_range_flags_bytes(mpidict_skiplist* list, const void* lo, size_t lo_bytes,
                                                  const void* hi, size_t hi_bytes, uint64_t limit, unsigned flags,
                                                  mpidict_skiplist_visitor visit, void* context, size_t* count) {
    constexpr const char* function = "mpidict_skiplist_range_flags_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(lo, lo_bytes, "lo", function))
        return code;
    if ((flags & MPIDICT_SKIPLIST_FROM) == 0)
        if (const int code = check_bytes(hi, hi_bytes, "hi", function))
            return code;
    const std::string high = (flags & MPIDICT_SKIPLIST_FROM) != 0 ? std::string() : as_string(hi, hi_bytes);
    return range_flags(*list->bytes, as_string(lo, lo_bytes), high, limit, flags, visit, context, count, function);
}

extern "C" int mpidict_skiplist_match(mpidict_skiplist* list, const char* pattern, uint64_t limit, unsigned flags,
                                      mpidict_skiplist_visitor visit, void* context, size_t* count) {
    constexpr const char* function = "mpidict_skiplist_match";
    if (const int code = check_list(list, function))
        return code;
    if (!list->destroyed && list->kind == MPIDICT_SKIPLIST_BYTES)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "pattern queries need numeric keys; this is an MPIDICT_SKIPLIST_BYTES list (use "
                    "mpidict_skiplist_prefix or mpidict_skiplist_range_bytes)");
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    if (pattern == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "pattern is NULL");
    if (const int code = check_flags(flags, MPIDICT_SKIPLIST_DESCENDING, function))
        return code;
    if (visit == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "visit is NULL");
    if (count != nullptr)
        *count = 0;
    return guarded(function, [&] {
        const auto entries = list->ints->match(std::string_view(pattern), options_of(limit, flags)).get();
        return visit_all(entries, visit, context, count);
    });
}

extern "C" int mpidict_skiplist_find_many_i64(mpidict_skiplist* list, const int64_t* keys, size_t count,
                                              void* out_values, size_t value_capacity, size_t* value_bytes,
                                              int* found) {
    constexpr const char* function = "mpidict_skiplist_find_many_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    if (keys == nullptr && count != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, "keys is NULL with count " + std::to_string(count));
    return find_many(*list->ints, std::span<const std::int64_t>(keys, count), out_values, value_capacity,
                     value_bytes, found, function);
}

extern "C" int mpidict_skiplist_find_many_bytes(mpidict_skiplist* list, const void* keys, const size_t* key_bytes,
                                                size_t count, void* out_values, size_t value_capacity,
                                                size_t* value_bytes, int* found) {
    constexpr const char* function = "mpidict_skiplist_find_many_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    std::vector<std::string> copied;
    const int code = guarded(function, [&] { return unpack_keys(keys, key_bytes, count, copied, function); });
    if (code != MPIDICT_OK)
        return code;
    return find_many(*list->bytes, std::span<const std::string>(copied), out_values, value_capacity, value_bytes,
                     found, function);
}

extern "C" int mpidict_skiplist_consistency(const mpidict_skiplist* list, int* mode) {
    constexpr const char* function = "mpidict_skiplist_consistency";
    if (const int code = check_list(list, function))
        return code;
    if (mode == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "mode is NULL");
    if (list->destroyed)
        return fail(MPIDICT_ERR_DESTROYED, function, "the list was destroyed by mpidict_skiplist_destroy");
    *mode = static_cast<int>(list->ints ? list->ints->consistency() : list->bytes->consistency());
    return MPIDICT_OK;
}

extern "C" int mpidict_skiplist_set_consistency(mpidict_skiplist* list, int mode) {
    constexpr const char* function = "mpidict_skiplist_set_consistency";
    if (const int code = check_list(list, function))
        return code;
    if (list->destroyed)
        return fail(MPIDICT_ERR_DESTROYED, function, "the list was destroyed by mpidict_skiplist_destroy");
    if (mode < MPIDICT_SKIPLIST_TOTAL_ORDER || mode > MPIDICT_SKIPLIST_NONE)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "mode " + std::to_string(mode) +
                        " is none of MPIDICT_SKIPLIST_TOTAL_ORDER (0), MPIDICT_SKIPLIST_SEQUENTIAL (1), "
                        "MPIDICT_SKIPLIST_NONE (2)");
    return guarded(function, [&] {
        const auto value = static_cast<mpidict::skiplist_consistency>(mode);
        if (list->ints)
            list->ints->set_consistency(value);
        else
            list->bytes->set_consistency(value);
        return MPIDICT_OK;
    });
}
