// The C API of skiplist_map (include/mpidict/c/skiplist.h).
//
// Representation.  An INT64 list is a skiplist_map<std::int64_t, std::string>,
// a BYTES list a skiplist_map<std::string, std::string>; values are byte
// strings either way, and a list with value_size > 0 checks every value's size
// here, before anything travels.  Every entry point validates its arguments,
// then runs inside c_detail::guarded, which turns exceptions into error codes
// (list_full into MPIDICT_ERR_FULL) and the thread-local message.

#include "mpidict/c/skiplist.h"

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <span>
#include <utility>
#include <vector>

#include "c_support.hpp"
#include "skiplist_internal.hpp"
#include "mpidict/runtime/serving.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using namespace mpidict::c_skiplist;

template <class Map, class Key>
int insert(mpidict_skiplist* list, Map& map, const Key& key, const void* value, std::size_t value_bytes,
           int* replaced, const char* function) {
    if (const int code = check_value(list, value, value_bytes, function))
        return code;
    return guarded(function, [&] {
        const auto result = map.insert(key, as_string(value, value_bytes)).get();
        if (!result.stored)  // C's form of stored = false: this function has no other way to say it
            return full(map, function);
        if (replaced != nullptr)
            *replaced = result.replaced ? 1 : 0;
        return MPIDICT_OK;
    });
}

template <class Map, class Key>
int insert_if_absent(mpidict_skiplist* list, Map& map, const Key& key, const void* value, std::size_t value_bytes,
                     int* inserted, const char* function) {
    if (const int code = check_value(list, value, value_bytes, function))
        return code;
    return guarded_flag(function, inserted,
                        [&] { return map.insert_if_absent(key, as_string(value, value_bytes)).get(); });
}

template <class Map, class Key>
int async_insert(mpidict_skiplist* list, Map& map, const Key& key, const void* value, std::size_t value_bytes,
                 const char* function) {
    if (const int code = check_value(list, value, value_bytes, function))
        return code;
    return guarded(function, [&] {
        map.async_insert(key, as_string(value, value_bytes));
        return MPIDICT_OK;
    });
}

// insert_many: the values (packed back to back, or value_size each), checked
// before anything travels, then the C++ insert_many.
template <class Map, class Key>
int insert_many(mpidict_skiplist* list, Map& map, std::span<const Key> keys, const void* values,
                const std::size_t* value_bytes, std::uint64_t* stored, std::uint64_t* refused,
                std::size_t* refused_indexes, const char* function, const std::int64_t* ttl_ms = nullptr) {
    const std::size_t count = keys.size();
    if (value_bytes == nullptr && list->value_size == 0 && count != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "value_bytes is NULL, but this list's values have no fixed size (value_size = 0)");
    std::vector<std::string> copied;
    return guarded(function, [&] {
        copied.reserve(count);
        const char* at = static_cast<const char*>(values);
        std::size_t total = 0;
        for (std::size_t i = 0; i < count; ++i) {
            const std::size_t bytes = value_bytes != nullptr ? value_bytes[i] : list->value_size;
            if (list->value_size != 0 && bytes != list->value_size)
                return fail(MPIDICT_ERR_ARGUMENT, function,
                            "value " + std::to_string(i) + " has " + std::to_string(bytes) +
                                " bytes; this list's values have value_size = " + std::to_string(list->value_size) +
                                " bytes (nothing was stored)");
            if (at == nullptr && bytes != 0)
                return fail(MPIDICT_ERR_ARGUMENT, function, "values is NULL with " + std::to_string(bytes) +
                                                                " bytes for value " + std::to_string(i));
            copied.emplace_back(bytes == 0 ? std::string() : std::string(at + total, bytes));
            total += bytes;
        }
        const auto result = ttl_ms == nullptr
                                ? map.insert_many(keys, std::span<const std::string>(copied))
                                : map.insert_many(keys, std::span<const std::string>(copied),
                                                  std::chrono::milliseconds(*ttl_ms));
        if (stored != nullptr)
            *stored = result.stored;
        if (refused != nullptr)
            *refused = result.refused;
        if (refused_indexes != nullptr)
            std::copy(result.refused_indexes.begin(), result.refused_indexes.end(), refused_indexes);
        return MPIDICT_OK;
    });
}

template <class Map, class Key>
int erase(Map& map, const Key& key, int* erased, const char* function) {
    return guarded_flag(function, erased, [&] { return map.erase(key).get(); });
}

}  // namespace

extern "C" int mpidict_skiplist_options_init(mpidict_skiplist_options* options) {
    if (options == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, "mpidict_skiplist_options_init", "options is NULL");
    const mpidict::skiplist_map_config defaults;
    options->granularity = defaults.granularity;
    options->node_slots_per_rank = defaults.node_slots_per_rank;
    options->memory_limit_per_rank = defaults.memory_limit_per_rank;
    options->max_height = defaults.max_height;
    options->tower_probability = defaults.tower_probability;
    options->max_key_bytes = defaults.max_key_bytes;
    options->max_value_bytes = defaults.max_value_bytes;
    options->buffer_bytes = 0;
    options->consistency = static_cast<int>(defaults.consistency);
    options->initial_servers = defaults.initial_servers;
    options->grow_entries = defaults.grow_entries;
    options->grow_memory_fraction = defaults.grow_memory_fraction;
    options->rebalance_threshold = defaults.rebalance_threshold;
    options->online_rebalance = defaults.online_rebalance;
    options->online_rebalance_seconds = defaults.online_rebalance_seconds;
    return MPIDICT_OK;
}

extern "C" int mpidict_skiplist_create(MPI_Comm comm, int key_kind, size_t value_size,
                                       const mpidict_skiplist_options* options, mpidict_skiplist** out) {
    constexpr const char* function = "mpidict_skiplist_create";
    if (out != nullptr)
        *out = nullptr;
    mpidict_skiplist_options settings;
    mpidict_skiplist_options_init(&settings);
    if (options != nullptr)
        settings = *options;
    // Every rank checks its own arguments, then the ranks agree on the verdict
    // (and on the key kind and value size) before the collective construction,
    // so a rank that refuses cannot leave the others waiting in it.
    int code = MPIDICT_OK;
    if (out == nullptr)
        code = fail(MPIDICT_ERR_ARGUMENT, function, "out is NULL");
    else if (key_kind != MPIDICT_SKIPLIST_INT64 && key_kind != MPIDICT_SKIPLIST_BYTES)
        code = fail(MPIDICT_ERR_ARGUMENT, function,
                    "key_kind " + std::to_string(key_kind) +
                        " is neither MPIDICT_SKIPLIST_INT64 (0) nor MPIDICT_SKIPLIST_BYTES (1)");
    else if (settings.consistency < MPIDICT_SKIPLIST_TOTAL_ORDER || settings.consistency > MPIDICT_SKIPLIST_NONE)
        code = fail(MPIDICT_ERR_ARGUMENT, function,
                    "options->consistency " + std::to_string(settings.consistency) +
                        " is none of MPIDICT_SKIPLIST_TOTAL_ORDER (0), MPIDICT_SKIPLIST_SEQUENTIAL (1), "
                        "MPIDICT_SKIPLIST_NONE (2)");
    else if (value_size > settings.max_value_bytes)
        code = fail(MPIDICT_ERR_ARGUMENT, function,
                    "value_size " + std::to_string(value_size) + " exceeds max_value_bytes = " +
                        std::to_string(settings.max_value_bytes));
    const long long mine[5] = {code != MPIDICT_OK ? 1 : 0, key_kind, static_cast<long long>(value_size), -key_kind,
                               -static_cast<long long>(value_size)};
    long long agreed[5] = {0, 0, 0, 0, 0};
    // Serving the containers that exist meanwhile: another rank may still wait
    // on one of them for this rank (runtime/serving.hpp).
    try {
        mpidict::runtime::allreduce_serving(mine, agreed, 5, MPI_LONG_LONG, MPI_MAX, comm, "MPI_Iallreduce");
    } catch (const std::exception& problem) {
        return fail(MPIDICT_ERR_MPI, function, std::string("MPI_Iallreduce on the communicator failed: ") + problem.what());
    }
    if (code != MPIDICT_OK)
        return code;
    if (agreed[0] != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "another rank rejected its arguments (its mpidict_last_error() says why); no list was created");
    if (agreed[1] != -agreed[3] || agreed[2] != -agreed[4])
        return fail(MPIDICT_ERR_MISMATCH, function,
                    "ranks disagree on key_kind or value_size; every rank must pass the same; no list was created");
    return guarded(function, [&] {
        mpidict::skiplist_map_config config;
        config.granularity = settings.granularity;
        config.node_slots_per_rank = settings.node_slots_per_rank;
        config.memory_limit_per_rank = settings.memory_limit_per_rank;
        config.max_height = settings.max_height;
        config.tower_probability = settings.tower_probability;
        config.max_key_bytes = key_kind == MPIDICT_SKIPLIST_INT64 ? sizeof(std::int64_t) : settings.max_key_bytes;
        config.max_value_bytes = value_size != 0 ? value_size : settings.max_value_bytes;
        config.consistency = static_cast<mpidict::skiplist_consistency>(settings.consistency);
        config.initial_servers = settings.initial_servers;
        config.grow_entries = settings.grow_entries;
        config.grow_memory_fraction = settings.grow_memory_fraction;
        config.rebalance_threshold = settings.rebalance_threshold;
        config.online_rebalance = settings.online_rebalance;
        config.online_rebalance_seconds = settings.online_rebalance_seconds;
        config.runtime.buffer_bytes = settings.buffer_bytes != 0
                                          ? settings.buffer_bytes
                                          : std::max(config.runtime.buffer_bytes, config.required_buffer_bytes());
        auto list = std::make_unique<mpidict_skiplist>();
        list->kind = key_kind;
        list->value_size = value_size;
        if (key_kind == MPIDICT_SKIPLIST_INT64) {
            list->ints = std::make_unique<int_map>(comm, config);
            list->rank = list->ints->rank();
            list->size = list->ints->num_ranks();
        } else {
            list->bytes = std::make_unique<bytes_map>(comm, config);
            list->rank = list->bytes->rank();
            list->size = list->bytes->num_ranks();
        }
        *out = list.release();
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_destroy(mpidict_skiplist* list) {
    constexpr const char* function = "mpidict_skiplist_destroy";
    if (const int code = check_list(list, function))
        return code;
    if (list->destroyed)
        return MPIDICT_OK;
    list->destroyed = true;
    return guarded(function, [&] {
        if (list->ints)
            list->ints->destroy();
        if (list->bytes)
            list->bytes->destroy();
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_free(mpidict_skiplist** list) {
    constexpr const char* function = "mpidict_skiplist_free";
    if (list == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "list is NULL");
    if (*list == nullptr)
        return MPIDICT_OK;
    if (const int code = check_list(*list, function))
        return code;
    const int code = mpidict_skiplist_destroy(*list);
    (*list)->magic = 0;
    delete *list;
    *list = nullptr;
    return code;
}

extern "C" int mpidict_skiplist_rank(const mpidict_skiplist* list, int* rank, int* size) {
    if (const int code = check_list(list, "mpidict_skiplist_rank"))
        return code;
    if (rank != nullptr)
        *rank = list->rank;
    if (size != nullptr)
        *size = list->size;
    return MPIDICT_OK;
}

// ---- INT64 keys -------------------------------------------------------------------

extern "C" int mpidict_skiplist_insert_i64(mpidict_skiplist* list, int64_t key, const void* value,
                                           size_t value_bytes, int* replaced) {
    constexpr const char* function = "mpidict_skiplist_insert_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return insert(list, *list->ints, std::int64_t{key}, value, value_bytes, replaced, function);
}

extern "C" int mpidict_skiplist_insert_if_absent_i64(mpidict_skiplist* list, int64_t key, const void* value,
                                                     size_t value_bytes, int* inserted) {
    constexpr const char* function = "mpidict_skiplist_insert_if_absent_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return insert_if_absent(list, *list->ints, std::int64_t{key}, value, value_bytes, inserted, function);
}

extern "C" int mpidict_skiplist_async_insert_i64(mpidict_skiplist* list, int64_t key, const void* value,
                                                 size_t value_bytes) {
    constexpr const char* function = "mpidict_skiplist_async_insert_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return async_insert(list, *list->ints, std::int64_t{key}, value, value_bytes, function);
}

extern "C" int mpidict_skiplist_insert_many_i64(mpidict_skiplist* list, const int64_t* keys, size_t count,
                                                const void* values, const size_t* value_bytes, uint64_t* stored,
                                                uint64_t* refused, size_t* refused_indexes) {
    constexpr const char* function = "mpidict_skiplist_insert_many_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    if (keys == nullptr && count != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, "keys is NULL with count " + std::to_string(count));
    return insert_many(list, *list->ints, std::span<const std::int64_t>(keys, count), values, value_bytes, stored,
                       refused, refused_indexes, function);
}

extern "C" int mpidict_skiplist_insert_many_ttl_i64(mpidict_skiplist* list, const int64_t* keys, size_t count,
                                                    const void* values, const size_t* value_bytes, int64_t ttl_ms,
                                                    uint64_t* stored, uint64_t* refused, size_t* refused_indexes) {
    constexpr const char* function = "mpidict_skiplist_insert_many_ttl_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    if (keys == nullptr && count != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, "keys is NULL with count " + std::to_string(count));
    const std::int64_t ttl = ttl_ms;
    return insert_many(list, *list->ints, std::span<const std::int64_t>(keys, count), values, value_bytes, stored,
                       refused, refused_indexes, function, &ttl);
}

extern "C" int mpidict_skiplist_find_i64(mpidict_skiplist* list, int64_t key, void* out_value, size_t capacity,
                                         size_t* value_bytes, int* found) {
    constexpr const char* function = "mpidict_skiplist_find_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return find(*list->ints, std::int64_t{key}, out_value, capacity, value_bytes, found, function);
}

extern "C" int mpidict_skiplist_erase_i64(mpidict_skiplist* list, int64_t key, int* erased) {
    constexpr const char* function = "mpidict_skiplist_erase_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return erase(*list->ints, std::int64_t{key}, erased, function);
}

extern "C" int mpidict_skiplist_async_erase_i64(mpidict_skiplist* list, int64_t key) {
    constexpr const char* function = "mpidict_skiplist_async_erase_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    return guarded(function, [&] {
        list->ints->async_erase(std::int64_t{key});
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_range_i64(mpidict_skiplist* list, int64_t lo, int64_t hi, uint64_t limit,
                                          int descending, mpidict_skiplist_visitor visit, void* context,
                                          size_t* count) {
    constexpr const char* function = "mpidict_skiplist_range_i64";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_INT64, function))
        return code;
    if (visit == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "visit is NULL");
    if (count != nullptr)
        *count = 0;
    if (lo > hi)
        return MPIDICT_OK;  // an empty range
    return guarded(function, [&] {
        const auto entries = list->ints->range(lo, hi, {limit, descending != 0}).get();
        return visit_all(entries, visit, context, count);
    });
}

// ---- BYTES keys ---------------------------------------------------------------------

extern "C" int mpidict_skiplist_insert_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                             const void* value, size_t value_bytes, int* replaced) {
    constexpr const char* function = "mpidict_skiplist_insert_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return insert(list, *list->bytes, as_string(key, key_bytes), value, value_bytes, replaced, function);
}

extern "C" int mpidict_skiplist_insert_if_absent_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                                       const void* value, size_t value_bytes, int* inserted) {
    constexpr const char* function = "mpidict_skiplist_insert_if_absent_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return insert_if_absent(list, *list->bytes, as_string(key, key_bytes), value, value_bytes, inserted, function);
}

extern "C" int mpidict_skiplist_async_insert_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                                   const void* value, size_t value_bytes) {
    constexpr const char* function = "mpidict_skiplist_async_insert_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return async_insert(list, *list->bytes, as_string(key, key_bytes), value, value_bytes, function);
}

extern "C" int mpidict_skiplist_insert_many_bytes(mpidict_skiplist* list, const void* keys, const size_t* key_bytes,
                                                  size_t count, const void* values, const size_t* value_bytes,
                                                  uint64_t* stored, uint64_t* refused, size_t* refused_indexes) {
    constexpr const char* function = "mpidict_skiplist_insert_many_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    std::vector<std::string> copied;
    return guarded(function, [&] {
        if (const int code = unpack_keys(keys, key_bytes, count, copied, function))
            return code;
        return insert_many(list, *list->bytes, std::span<const std::string>(copied), values, value_bytes, stored,
                           refused, refused_indexes, function);
    });
}

extern "C" int mpidict_skiplist_insert_many_ttl_bytes(mpidict_skiplist* list, const void* keys,
                                                      const size_t* key_bytes, size_t count, const void* values,
                                                      const size_t* value_bytes, int64_t ttl_ms, uint64_t* stored,
                                                      uint64_t* refused, size_t* refused_indexes) {
    constexpr const char* function = "mpidict_skiplist_insert_many_ttl_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    std::vector<std::string> copied;
    const std::int64_t ttl = ttl_ms;
    return guarded(function, [&] {
        if (const int code = unpack_keys(keys, key_bytes, count, copied, function))
            return code;
        return insert_many(list, *list->bytes, std::span<const std::string>(copied), values, value_bytes, stored,
                           refused, refused_indexes, function, &ttl);
    });
}

extern "C" int mpidict_skiplist_find_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                           void* out_value, size_t capacity, size_t* value_bytes, int* found) {
    constexpr const char* function = "mpidict_skiplist_find_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return find(*list->bytes, as_string(key, key_bytes), out_value, capacity, value_bytes, found, function);
}

extern "C" int mpidict_skiplist_erase_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                            int* erased) {
    constexpr const char* function = "mpidict_skiplist_erase_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return erase(*list->bytes, as_string(key, key_bytes), erased, function);
}

extern "C" int mpidict_skiplist_async_erase_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes) {
    constexpr const char* function = "mpidict_skiplist_async_erase_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(key, key_bytes, "key", function))
        return code;
    return guarded(function, [&] {
        list->bytes->async_erase(as_string(key, key_bytes));
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_range_bytes(mpidict_skiplist* list, const void* lo, size_t lo_bytes, const void* hi,
                                            size_t hi_bytes, uint64_t limit, int descending,
                                            mpidict_skiplist_visitor visit, void* context, size_t* count) {
    constexpr const char* function = "mpidict_skiplist_range_bytes";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(lo, lo_bytes, "lo", function))
        return code;
    if (const int code = check_bytes(hi, hi_bytes, "hi", function))
        return code;
    if (visit == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "visit is NULL");
    if (count != nullptr)
        *count = 0;
    const std::string low = as_string(lo, lo_bytes);
    const std::string high = as_string(hi, hi_bytes);
    if (low > high)
        return MPIDICT_OK;  // an empty range
    return guarded(function, [&] {
        const auto entries = list->bytes->range(low, high, {limit, descending != 0}).get();
        return visit_all(entries, visit, context, count);
    });
}

extern "C" int mpidict_skiplist_prefix(mpidict_skiplist* list, const void* prefix, size_t prefix_bytes,
                                       uint64_t limit, int descending, mpidict_skiplist_visitor visit, void* context,
                                       size_t* count) {
    constexpr const char* function = "mpidict_skiplist_prefix";
    if (const int code = check_use(list, MPIDICT_SKIPLIST_BYTES, function))
        return code;
    if (const int code = check_bytes(prefix, prefix_bytes, "prefix", function))
        return code;
    if (visit == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "visit is NULL");
    if (count != nullptr)
        *count = 0;
    return guarded(function, [&] {
        const auto entries = list->bytes->prefix(as_string(prefix, prefix_bytes), {limit, descending != 0}).get();
        return visit_all(entries, visit, context, count);
    });
}

// ---- the whole list ---------------------------------------------------------------------

extern "C" int mpidict_skiplist_flush(mpidict_skiplist* list) {
    constexpr const char* function = "mpidict_skiplist_flush";
    if (const int code = check_list(list, function))
        return code;
    if (list->destroyed)
        return fail(MPIDICT_ERR_DESTROYED, function, "the list was destroyed by mpidict_skiplist_destroy");
    return guarded(function, [&] {
        if (list->ints)
            list->ints->flush();
        else
            list->bytes->flush();
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_local_size(const mpidict_skiplist* list, size_t* entries) {
    constexpr const char* function = "mpidict_skiplist_local_size";
    if (const int code = check_list(list, function))
        return code;
    if (entries == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "entries is NULL");
    if (list->destroyed) {
        *entries = 0;
        return MPIDICT_OK;
    }
    return guarded(function, [&] {
        *entries = list->ints ? list->ints->local_size() : list->bytes->local_size();
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_global_size(mpidict_skiplist* list, size_t* entries) {
    constexpr const char* function = "mpidict_skiplist_global_size";
    if (const int code = check_list(list, function))
        return code;
    if (entries == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "entries is NULL");
    if (list->destroyed)
        return fail(MPIDICT_ERR_DESTROYED, function, "the list was destroyed by mpidict_skiplist_destroy");
    return guarded(function, [&] {
        *entries = list->ints ? list->ints->global_size() : list->bytes->global_size();
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_skiplist_async_rejected(const mpidict_skiplist* list, uint64_t* rejected) {
    constexpr const char* function = "mpidict_skiplist_async_rejected";
    if (const int code = check_list(list, function))
        return code;
    if (rejected == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "rejected is NULL");
    return guarded(function, [&] {
        *rejected = list->ints ? list->ints->async_rejected() : list->bytes->async_rejected();
        return MPIDICT_OK;
    });
}
