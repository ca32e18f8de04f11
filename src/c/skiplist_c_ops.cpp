// The C API of skiplist_map, part 3 (include/mpidict/c/skiplist.h, issue 49
// items 5 and 6): expiry in milliseconds (insert / async_insert with a time to
// live, the TTL read as Redis PTTL, expire, persist; insert_many with a TTL is
// in skiplist_c.cpp beside insert_many) and count / erase_range.  Every entry
// point validates its arguments, then runs inside guarded (errors as codes and
// mpidict_last_error()), as skiplist_c.cpp does.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "skiplist_internal.hpp"

namespace {

using namespace mpidict::c_skiplist;
using std::chrono::milliseconds;

template <class Map, class Key>
int insert_ttl(mpidict_skiplist* list, Map& map, const Key& key, const void* value, std::size_t value_bytes,
               std::int64_t ttl_ms, int* stored, int* replaced, const char* function) {
    if (const int code = check_value(list, value, value_bytes, function))
        return code;
    return guarded(function, [&] {
        const auto result = map.insert(key, as_string(value, value_bytes), milliseconds(ttl_ms)).get();
        if (!result.stored && ttl_ms > 0)  // refused for space (a ttl <= 0 stores nothing: not an error)
            return full(map, function);
        if (stored != nullptr)
            *stored = result.stored ? 1 : 0;
        if (replaced != nullptr)
            *replaced = result.replaced ? 1 : 0;
        return MPIDICT_OK;
    });
}

template <class Map, class Key>
int async_insert_ttl(mpidict_skiplist* list, Map& map, const Key& key, const void* value, std::size_t value_bytes,
                     std::int64_t ttl_ms, const char* function) {
    if (const int code = check_value(list, value, value_bytes, function))
        return code;
    return guarded(function, [&] {
        map.async_insert(key, as_string(value, value_bytes), milliseconds(ttl_ms));
        return MPIDICT_OK;
    });
}

template <class Map, class Key>
int pttl(Map& map, const Key& key, std::int64_t* ms, const char* function) {
    if (ms == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "ms is NULL");
    return guarded(function, [&] {
        *ms = static_cast<std::int64_t>(map.ttl(key).get().count());
        return MPIDICT_OK;
    });
}

template <class Map, class Key>
int expire(Map& map, const Key& key, std::int64_t ttl_ms, int* existed, const char* function) {
    return guarded_flag(function, existed, [&] { return map.expire(key, milliseconds(ttl_ms)).get(); });
}

template <class Map, class Key>
int persist(Map& map, const Key& key, int* had_deadline, const char* function) {
    return guarded_flag(function, had_deadline, [&] { return map.persist(key).get(); });
}

}  // namespace

// ---- INT64 keys ----------------------------------------------------------------------------

extern "C" int mpidict_skiplist_insert_ttl_i64(mpidict_skiplist* list, int64_t key, const void* value,
                                               size_t value_bytes, int64_t ttl_ms, int* stored, int* replaced) {
    constexpr const char* function = "mpidict_skiplist_insert_ttl_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return insert_ttl(list, *list->ints, std::int64_t{key}, value, value_bytes, ttl_ms, stored, replaced, function);
}

extern "C" int mpidict_skiplist_async_insert_ttl_i64(mpidict_skiplist* list, int64_t key, const void* value,
                                                     size_t value_bytes, int64_t ttl_ms) {
    constexpr const char* function = "mpidict_skiplist_async_insert_ttl_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return async_insert_ttl(list, *list->ints, std::int64_t{key}, value, value_bytes, ttl_ms, function);
}

extern "C" int mpidict_skiplist_pttl_i64(mpidict_skiplist* list, int64_t key, int64_t* ms) {
    constexpr const char* function = "mpidict_skiplist_pttl_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return pttl(*list->ints, std::int64_t{key}, ms, function);
}

extern "C" int mpidict_skiplist_expire_i64(mpidict_skiplist* list, int64_t key, int64_t ttl_ms, int* existed) {
    constexpr const char* function = "mpidict_skiplist_expire_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return expire(*list->ints, std::int64_t{key}, ttl_ms, existed, function);
}

extern "C" int mpidict_skiplist_persist_i64(mpidict_skiplist* list, int64_t key, int* had_deadline) {
    constexpr const char* function = "mpidict_skiplist_persist_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return persist(*list->ints, std::int64_t{key}, had_deadline, function);
}

extern "C" int mpidict_skiplist_count_i64(mpidict_skiplist* list, int64_t lo, int64_t hi, unsigned flags,
                                          uint64_t* count) {
    constexpr const char* function = "mpidict_skiplist_count_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return counted(*list->ints, std::int64_t{lo}, std::int64_t{hi}, flags, count, false, function);
}

extern "C" int mpidict_skiplist_erase_range_i64(mpidict_skiplist* list, int64_t lo, int64_t hi, unsigned flags,
                                                uint64_t* erased) {
    constexpr const char* function = "mpidict_skiplist_erase_range_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return counted(*list->ints, std::int64_t{lo}, std::int64_t{hi}, flags, erased, true, function);
}

// ---- BYTES keys ----------------------------------------------------------------------------

extern "C" int mpidict_skiplist_insert_ttl_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                                 const void* value, size_t value_bytes, int64_t ttl_ms, int* stored,
                                                 int* replaced) {
    constexpr const char* function = "mpidict_skiplist_insert_ttl_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return insert_ttl(list, *list->bytes, as_string(key, key_bytes), value, value_bytes, ttl_ms, stored, replaced,
                      function);
}

extern "C" int mpidict_skiplist_async_insert_ttl_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                                       const void* value, size_t value_bytes, int64_t ttl_ms) {
    constexpr const char* function = "mpidict_skiplist_async_insert_ttl_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return async_insert_ttl(list, *list->bytes, as_string(key, key_bytes), value, value_bytes, ttl_ms, function);
}

extern "C" int mpidict_skiplist_pttl_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes, int64_t* ms) {
    constexpr const char* function = "mpidict_skiplist_pttl_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return pttl(*list->bytes, as_string(key, key_bytes), ms, function);
}

extern "C" int mpidict_skiplist_expire_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                             int64_t ttl_ms, int* existed) {
    constexpr const char* function = "mpidict_skiplist_expire_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return expire(*list->bytes, as_string(key, key_bytes), ttl_ms, existed, function);
}

extern "C" int mpidict_skiplist_persist_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                              int* had_deadline) {
    constexpr const char* function = "mpidict_skiplist_persist_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return persist(*list->bytes, as_string(key, key_bytes), had_deadline, function);
}

extern "C" int mpidict_skiplist_count_bytes(mpidict_skiplist* list, const void* lo, size_t lo_bytes, const void* hi,
                                            size_t hi_bytes, unsigned flags, uint64_t* count) {
    constexpr const char* function = "mpidict_skiplist_count_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(lo, lo_bytes, "lo", function))
        return code;
    if (const int code = check_bytes(hi, hi_bytes, "hi", function))
        return code;
    return counted(*list->bytes, as_string(lo, lo_bytes), as_string(hi, hi_bytes), flags, count, false, function);
}

extern "C" int mpidict_skiplist_erase_range_bytes(mpidict_skiplist* list, const void* lo, size_t lo_bytes,
                                                  const void* hi, size_t hi_bytes, unsigned flags, uint64_t* erased) {
    constexpr const char* function = "mpidict_skiplist_erase_range_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(lo, lo_bytes, "lo", function))
        return code;
    if (const int code = check_bytes(hi, hi_bytes, "hi", function))
        return code;
    return counted(*list->bytes, as_string(lo, lo_bytes), as_string(hi, hi_bytes), flags, erased, true, function);
}
