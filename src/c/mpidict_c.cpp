// The C API (include/mpidict/c/mpidict.h) over mpidict::hash_map.
//
// Representation.  A C item (values_per_key values of value_size bytes) is one
// value of a hash_map<std::int64_t, V>.  For the common item sizes (4, 8, 12,
// 16, 24 and 32 bytes) V is std::array<std::byte, N>: items travel as raw
// bytes (no length prefix), a single-item fire-and-forget insert takes the
// map's fixed-size fast path, and a key with one item lives entirely in its
// table slot.  Other sizes use V = std::string with fixed_value_bytes set, so a
// value of the wrong length can never be stored.  typed_backend<V> implements
// the size-independent interface `backend` for each V; the C functions only
// see `backend`.
//
// Requests.  A C request owns an `operation` (the hash_map request plus where
// its items go) and a shared_ptr to the backend, so a request stays valid after
// mpidict_map_free until it is waited on or freed.  Fire-and-forget finds and
// deletes (req == NULL) are kept on the map and completed by mpidict_map_flush.
//
// Safety.  Every entry point validates its arguments before it touches the
// hash_map, so a bad argument is reported without side effects, and converts
// every exception into an error code and a thread-local message.  Nothing
// throws across extern "C".

//
// Files: this one holds the extern "C" functions and their argument checks;
// map_internal.hpp the shared declarations (keys, operations, the `backend`
// interface, the handles); map_backend.cpp the typed backends.

#include "mpidict/c/mpidict.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "map_internal.hpp"
#include "mpidict/runtime/serving.hpp"

using namespace mpidict::c_map;

namespace {

int check_map(const mpidict_map* map, const char* function, bool must_be_alive) {
    if (map == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "map is NULL");
    if (map->magic != map_magic)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "map is not a live mpidict_map handle (already freed, or not from mpidict_map_create)");
    if (must_be_alive && map->store->destroyed())
        return fail(MPIDICT_ERR_DESTROYED, function,
                    "the map was destroyed by mpidict_map_destroy; only wait/test on its requests, its statistics "
                    "and mpidict_map_free remain");
    return MPIDICT_OK;
}

// Checks that the key is of the map's kind and fits in one message with
// n_items items; then resolves the target rank.
int check_key(const mpidict_map& map, const c_key& key, bool byte_key, const char* function) {
    if (byte_key != map.store->byte_keys())
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    byte_key ? std::string("this map has int64_t keys (mpidict_map_create); call the function "
                                           "without the _bytes suffix")
                             : std::string("this map has byte-string keys (mpidict_map_create_bytes); call the "
                                           "_bytes form of this function"));
    if (byte_key && key.bytes == nullptr && key.length != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, "key is NULL but key_length = " + str(key.length));
    if (byte_key && key.length > map.max_key_bytes)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "key_length = " + str(key.length) + " exceeds the " + str(map.max_key_bytes) +
                        " bytes a key may have in one message with one item (buffer_bytes = " +
                        str(map.buffer_bytes) + ")");
    return MPIDICT_OK;
}

// The most items one operation on `key` may carry.
std::size_t max_items_for(const mpidict_map& map, const c_key& key) {
    if (!map.store->byte_keys())
        return map.max_items;
    const std::size_t overhead = per_operation_overhead_bytes - sizeof(key_type) + sizeof(std::uint32_t) + key.length;
    return map.buffer_bytes > overhead ? (map.buffer_bytes - overhead) / map.store->wire_item_bytes() : 0;
}

int resolve_target(const mpidict_map& map, int target, const c_key& key, const char* function, int& resolved) {
    if (target == MPIDICT_TARGET_AUTO) {
        resolved = map.store->owner(key);
        return MPIDICT_OK;
    }
    if (target < 0 || target >= map.store->size())
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "target = " + std::to_string(target) + " is outside " +
                        mpidict::detail::communicator_of(map.store->size()) +
                        " (use MPIDICT_TARGET_AUTO = -1 for the map's placement)");
    resolved = target;
    return MPIDICT_OK;
}

std::string message_limit(const mpidict_map& map, std::string_view name, std::size_t value, std::size_t most) {
    return std::string(name) + " = " + str(value) + " exceeds the " + str(most) + " items of " + str(map.item_bytes) +
           " bytes one message carries (buffer_bytes = " + str(map.buffer_bytes) +
           (map.store->byte_keys() ? ", with this key" : "") + "); split the operation or raise options.buffer_bytes";
}

// Hands a started operation to the caller, or keeps it on the map to be
// completed by the next flush.
int deliver(mpidict_map& map, std::unique_ptr<operation> work, mpidict_request** req) {
    if (req == nullptr) {
        map.detached.push_back(std::move(work));
        return MPIDICT_OK;
    }
    auto handle = std::make_unique<mpidict_request>();
    handle->store = map.store;
    handle->work = std::move(work);
    *req = handle.release();
    return MPIDICT_OK;
}

void complete_detached(mpidict_map& map) {
    while (!map.detached.empty()) {
        map.detached.back()->finish();
        map.detached.pop_back();
    }
}

void release_request(mpidict_request*& request) {
    request->magic = 0;
    delete request;
    request = nullptr;
}

int check_requests(mpidict_request** reqs, std::size_t n, const char* function) {
    if (reqs == nullptr && n != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, "reqs is NULL but n = " + str(n));
    for (std::size_t index = 0; index < n; ++index)
        if (reqs[index] != nullptr && reqs[index]->magic != request_magic)
            return fail(MPIDICT_ERR_ARGUMENT, function,
                        "reqs[" + str(index) + "] is not a live mpidict_request (already waited on or freed?)");
    return MPIDICT_OK;
}

// Waits for reqs[0..n) in order; see mpidict_request_wait.
int complete_requests(mpidict_request** reqs, std::size_t n, std::size_t* counts, const char* function) {
    for (std::size_t index = 0; index < n; ++index) {
        mpidict_request*& request = reqs[index];
        if (request == nullptr) {
            if (counts != nullptr)
                counts[index] = 0;
            continue;
        }
        std::size_t count = 0;
        const int code = guarded(function, [&] {
            count = request->work->finish();
            return MPIDICT_OK;
        });
        if (code != MPIDICT_OK)
            return code;
        if (counts != nullptr)
            counts[index] = count;
        release_request(request);
    }
    return MPIDICT_OK;
}

}  // namespace

// ---- errors -------------------------------------------------------------------------

extern "C" const char* mpidict_last_error(void) {
    return mpidict::c_detail::last_error();
}

extern "C" const char* mpidict_error_name(int code) {
    switch (code) {
        case MPIDICT_OK: return "MPIDICT_OK";
        case MPIDICT_ERR_ARGUMENT: return "MPIDICT_ERR_ARGUMENT";
        case MPIDICT_ERR_DESTROYED: return "MPIDICT_ERR_DESTROYED";
        case MPIDICT_ERR_MPI: return "MPIDICT_ERR_MPI";
        case MPIDICT_ERR_MISMATCH: return "MPIDICT_ERR_MISMATCH";
        case MPIDICT_ERR_NO_MEMORY: return "MPIDICT_ERR_NO_MEMORY";
        case MPIDICT_ERR_INTERNAL: return "MPIDICT_ERR_INTERNAL";
        case MPIDICT_ERR_FULL: return "MPIDICT_ERR_FULL";
        default: return "MPIDICT_ERR_UNKNOWN";
    }
}

// ---- maps ---------------------------------------------------------------------------

extern "C" int mpidict_map_options_init(mpidict_map_options* options) {
    if (options == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, "mpidict_map_options_init", "options is NULL");
    const mpidict::runtime::config runtime_defaults{};
    *options = mpidict_map_options{};
    options->buffer_bytes = runtime_defaults.buffer_bytes;
    options->blocking_factor = runtime_defaults.blocking_factor;
    options->release_queue = runtime_defaults.release_queue;
    options->capacity_values = 0;
    options->capacity_bytes = 0;
    options->placement = MPIDICT_PLACEMENT_HASH;
    options->expected_keys_per_rank = 0;
    options->progress_thread = 0;
    options->routing = MPIDICT_ROUTING_AUTOMATIC;
    return MPIDICT_OK;
}

namespace {

int create_map(MPI_Comm comm, size_t value_size, size_t values_per_key, const mpidict_map_options* options,
               mpidict_map** out, bool byte_keys, const char* function) {
    return guarded(function, [&]() -> int {
        if (out != nullptr)
            *out = nullptr;
        int initialised = 0;
        int finalised = 0;
        MPI_Initialized(&initialised);
        MPI_Finalized(&finalised);
        if (!initialised || finalised)
            return fail(MPIDICT_ERR_ARGUMENT, function,
                        "MPI is not initialised (or already finalised); call MPI_Init first");
        if (comm == MPI_COMM_NULL)
            return fail(MPIDICT_ERR_ARGUMENT, function, "comm is MPI_COMM_NULL");
        int rank = 0;
        MPI_Comm_rank(comm, &rank);

        // Local validation; the verdict is then agreed on by every rank so that
        // no rank enters the collective construction while another gave up.
        mpidict_map_options settings;
        mpidict_map_options_init(&settings);
        if (options != nullptr)
            settings = *options;
        std::string problem;
        std::size_t item_bytes = 0;
        if (out == nullptr) {
            problem = "out is NULL";
        } else if (value_size == 0) {
            problem = "value_size = 0; a value needs at least 1 byte";
        } else if (values_per_key == 0) {
            problem = "values_per_key = 0; an item needs at least 1 value";
        } else if (values_per_key > std::numeric_limits<std::size_t>::max() / value_size) {
            problem = "value_size * values_per_key = " + str(value_size) + " * " + str(values_per_key) +
                      " overflows size_t";
        } else if (settings.buffer_bytes < minimum_buffer_bytes || settings.buffer_bytes > maximum_buffer_bytes) {
            problem = "options.buffer_bytes = " + str(settings.buffer_bytes) + " is outside [" +
                      str(minimum_buffer_bytes) + ", " + str(maximum_buffer_bytes) + "]";
        } else if (settings.blocking_factor == 0) {
            problem = "options.blocking_factor = 0; at least 1 request must be allowed in flight";
        } else if (settings.routing != MPIDICT_ROUTING_AUTOMATIC && settings.routing != MPIDICT_ROUTING_DIRECT &&
                   settings.routing != MPIDICT_ROUTING_GRID) {
            problem = "options.routing = " + std::to_string(settings.routing) +
                      " is none of MPIDICT_ROUTING_AUTOMATIC, MPIDICT_ROUTING_DIRECT, MPIDICT_ROUTING_GRID";
        } else if (settings.placement != MPIDICT_PLACEMENT_HASH && settings.placement != MPIDICT_PLACEMENT_CYCLIC) {
            problem = "options.placement = " + std::to_string(settings.placement) +
                      " is neither MPIDICT_PLACEMENT_HASH (0) nor MPIDICT_PLACEMENT_CYCLIC (1)";
        } else if (byte_keys && settings.placement == MPIDICT_PLACEMENT_CYCLIC) {
            problem = "options.placement = MPIDICT_PLACEMENT_CYCLIC needs integer keys; a map with byte-string keys "
                      "places them by hash";
        } else {
            item_bytes = value_size * values_per_key;
            // An item must fit in one message with its headers (string items carry
            // a 4-byte length).
            const std::size_t largest = settings.buffer_bytes - per_operation_overhead_bytes - sizeof(std::uint32_t);
            if (item_bytes > largest)
                problem = "an item of value_size * values_per_key = " + str(item_bytes) +
                          " bytes does not fit in one message: options.buffer_bytes = " + str(settings.buffer_bytes) +
                          " holds items of at most " + str(largest) + " bytes";
        }

        enum { failed, value_size_slot, per_key_slot, placement_slot, buffer_slot, fields };
        std::int64_t local[2 * fields + 1] = {};
        local[failed] = problem.empty() ? 0 : 1;
        local[value_size_slot] = static_cast<std::int64_t>(value_size);
        local[per_key_slot] = static_cast<std::int64_t>(values_per_key);
        local[placement_slot] = settings.placement;
        local[buffer_slot] = static_cast<std::int64_t>(settings.buffer_bytes);
        for (int field = 0; field < fields; ++field)
            local[fields + field] = -local[field];
        local[2 * fields] = problem.empty() ? std::numeric_limits<std::int64_t>::min() : -std::int64_t{rank};
        std::int64_t agreed[2 * fields + 1] = {};
        // Serving the containers that exist meanwhile (runtime/serving.hpp).
        mpidict::runtime::allreduce_serving(local, agreed, 2 * fields + 1, MPI_INT64_T, MPI_MAX, comm,
                                            "MPI_Iallreduce");
        if (!problem.empty())
            return fail(MPIDICT_ERR_ARGUMENT, function, problem);
        if (agreed[failed] != 0)
            return fail(MPIDICT_ERR_ARGUMENT, function,
                        "rank " + std::to_string(-agreed[2 * fields]) +
                            " rejected its arguments (its mpidict_last_error() says why); no map was created");
        static constexpr const char* names[fields] = {"", "value_size", "values_per_key", "options.placement",
                                                      "options.buffer_bytes"};
        for (int field = value_size_slot; field < fields; ++field) {
            const std::int64_t largest = agreed[field];
            const std::int64_t smallest = -agreed[fields + field];
            if (largest != smallest)
                return fail(MPIDICT_ERR_MISMATCH, function,
                            std::string("ranks disagree on ") + names[field] + ": values from " +
                                std::to_string(smallest) + " to " + std::to_string(largest) +
                                "; every rank must pass the same; no map was created");
        }

        mpidict::hash_map_config config;
        config.runtime.buffer_bytes = settings.buffer_bytes;
        config.runtime.blocking_factor = settings.blocking_factor;
        config.runtime.release_queue = settings.release_queue;
        config.place = settings.placement == MPIDICT_PLACEMENT_CYCLIC ? mpidict::placement::cyclic
                                                                      : mpidict::placement::hash;
        config.expected_keys_per_rank = settings.expected_keys_per_rank;
        config.runtime.progress_thread = settings.progress_thread != 0;
        config.runtime.routing = settings.routing == MPIDICT_ROUTING_GRID     ? mpidict::runtime::routing_mode::grid
                                 : settings.routing == MPIDICT_ROUTING_DIRECT ? mpidict::runtime::routing_mode::direct
                                                                              : mpidict::runtime::routing_mode::automatic;
        config.capacity_values = settings.capacity_values;
        config.capacity_bytes = settings.capacity_bytes;

        auto map = std::make_unique<mpidict_map>();
        map->store = byte_keys ? make_backend<std::string>(comm, config, item_bytes)
                               : make_backend<key_type>(comm, config, item_bytes);
        map->item_bytes = item_bytes;
        map->buffer_bytes = settings.buffer_bytes;
        map->max_items = byte_keys ? max_items_for(*map, c_key{})
                                   : (settings.buffer_bytes - per_operation_overhead_bytes) / map->store->wire_item_bytes();
        // A byte key travels as a 4-byte length and its bytes instead of 8 bytes.
        const std::size_t room = settings.buffer_bytes - per_operation_overhead_bytes + sizeof(key_type) -
                                 sizeof(std::uint32_t);
        map->max_key_bytes = byte_keys && room > map->store->wire_item_bytes() ? room - map->store->wire_item_bytes() : 0;
        *out = map.release();
        return MPIDICT_OK;
    });
}

}  // namespace

extern "C" int mpidict_map_create(MPI_Comm comm, size_t value_size, size_t values_per_key,
                                  const mpidict_map_options* options, mpidict_map** out) {
    return create_map(comm, value_size, values_per_key, options, out, false, "mpidict_map_create");
}

extern "C" int mpidict_map_create_bytes(MPI_Comm comm, size_t value_size, size_t values_per_key,
                                        const mpidict_map_options* options, mpidict_map** out) {
    return create_map(comm, value_size, values_per_key, options, out, true, "mpidict_map_create_bytes");
}

extern "C" int mpidict_map_destroy(mpidict_map* map) {
    static constexpr const char* function = "mpidict_map_destroy";
    if (const int code = check_map(map, function, false); code != MPIDICT_OK)
        return code;
    return guarded(function, [&] {
        if (!map->store->destroyed())
            map->store->destroy();
        complete_detached(*map);
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_map_free(mpidict_map** map) {
    static constexpr const char* function = "mpidict_map_free";
    if (map == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "map is NULL (pass the address of the handle)");
    if (*map == nullptr)
        return MPIDICT_OK;
    if (const int code = check_map(*map, function, false); code != MPIDICT_OK)
        return code;
    if (const int code = mpidict_map_destroy(*map); code != MPIDICT_OK)
        return code;
    (*map)->magic = 0;
    delete *map;
    *map = nullptr;
    return MPIDICT_OK;
}

extern "C" int mpidict_map_rank(const mpidict_map* map, int* rank, int* size) {
    static constexpr const char* function = "mpidict_map_rank";
    if (const int code = check_map(map, function, false); code != MPIDICT_OK)
        return code;
    if (rank != nullptr)
        *rank = map->store->rank();
    if (size != nullptr)
        *size = map->store->size();
    return MPIDICT_OK;
}

namespace {

int owner_of(const mpidict_map* map, const c_key& key, bool byte_key, int* rank, const char* function) {
    if (const int code = check_map(map, function, false); code != MPIDICT_OK)
        return code;
    if (const int code = check_key(*map, key, byte_key, function); code != MPIDICT_OK)
        return code;
    if (rank == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "rank is NULL");
    *rank = map->store->owner(key);
    return MPIDICT_OK;
}

}  // namespace

extern "C" int mpidict_map_owner(const mpidict_map* map, int64_t key, int* rank) {
    return owner_of(map, c_key{key}, false, rank, "mpidict_map_owner");
}

extern "C" int mpidict_map_owner_bytes(const mpidict_map* map, const void* key, size_t key_length, int* rank) {
    return owner_of(map, c_key{0, static_cast<const std::byte*>(key), key_length}, true, rank,
                    "mpidict_map_owner_bytes");
}

extern "C" int mpidict_map_item_bytes(const mpidict_map* map, size_t* item_bytes) {
    static constexpr const char* function = "mpidict_map_item_bytes";
    if (const int code = check_map(map, function, false); code != MPIDICT_OK)
        return code;
    if (item_bytes == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "item_bytes is NULL");
    *item_bytes = map->item_bytes;
    return MPIDICT_OK;
}

extern "C" int mpidict_map_max_items(const mpidict_map* map, size_t* max_items) {
    static constexpr const char* function = "mpidict_map_max_items";
    if (const int code = check_map(map, function, false); code != MPIDICT_OK)
        return code;
    if (max_items == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "max_items is NULL");
    *max_items = map->max_items;
    return MPIDICT_OK;
}

extern "C" int mpidict_map_local_size(const mpidict_map* map, size_t* keys, size_t* items) {
    static constexpr const char* function = "mpidict_map_local_size";
    if (const int code = check_map(map, function, true); code != MPIDICT_OK)
        return code;
    if (keys != nullptr)
        *keys = map->store->local_keys();
    if (items != nullptr)
        *items = map->store->local_items();
    return MPIDICT_OK;
}

extern "C" int mpidict_map_global_size(mpidict_map* map, size_t* keys, size_t* items) {
    static constexpr const char* function = "mpidict_map_global_size";
    if (const int code = check_map(map, function, true); code != MPIDICT_OK)
        return code;
    return guarded(function, [&] {
        map->store->global_size(keys, items);
        return MPIDICT_OK;
    });
}

namespace {

int local_find(const mpidict_map* map, const c_key& key, bool byte_key, void* out_items, size_t max_items,
               size_t* count, const char* function) {
    if (const int code = check_map(map, function, true); code != MPIDICT_OK)
        return code;
    if (const int code = check_key(*map, key, byte_key, function); code != MPIDICT_OK)
        return code;
    if (out_items == nullptr && max_items != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "out_items is NULL but max_items = " + str(max_items) + " (pass max_items = 0 or a buffer)");
    return guarded(function, [&] {
        const std::size_t found = map->store->local_find(key, static_cast<std::byte*>(out_items), max_items);
        if (count != nullptr)
            *count = found;
        return MPIDICT_OK;
    });
}

}  // namespace

extern "C" int mpidict_map_local_find(const mpidict_map* map, int64_t key, void* out_items, size_t max_items,
                                  size_t* count) {
    return local_find(map, c_key{key}, false, out_items, max_items, count, "mpidict_map_local_find");
}

extern "C" int mpidict_map_local_find_bytes(const mpidict_map* map, const void* key, size_t key_length, void* out_items,
                                        size_t max_items, size_t* count) {
    return local_find(map, c_key{0, static_cast<const std::byte*>(key), key_length}, true, out_items, max_items,
                      count, "mpidict_map_local_find_bytes");
}

extern "C" int mpidict_map_local_for_each(const mpidict_map* map, mpidict_foreach_fn fn, void* user_data) {
    static constexpr const char* function = "mpidict_map_local_for_each";
    if (const int code = check_map(map, function, true); code != MPIDICT_OK)
        return code;
    if (fn == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "fn is NULL");
    return guarded(function, [&] {
        map->store->local_foreach(fn, user_data);
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_map_statistics(const mpidict_map* map, mpidict_statistics* out) {
    static constexpr const char* function = "mpidict_map_statistics";
    if (const int code = check_map(map, function, false); code != MPIDICT_OK)
        return code;
    if (out == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "out is NULL");
    return guarded(function, [&] {
        map->store->statistics(*out);
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_map_reset_statistics(mpidict_map* map) {
    static constexpr const char* function = "mpidict_map_reset_statistics";
    if (const int code = check_map(map, function, false); code != MPIDICT_OK)
        return code;
    return guarded(function, [&] {
        map->store->reset_statistics();
        return MPIDICT_OK;
    });
}

// ---- operations -------------------------------------------------------------------------

namespace {

// The checks every keyed operation starts with; `owner` gets the target rank.
int start_keyed(mpidict_map* map, int target, const c_key& key, bool byte_key, const char* function, int& owner) {
    if (const int code = check_map(map, function, true); code != MPIDICT_OK)
        return code;
    if (const int code = check_key(*map, key, byte_key, function); code != MPIDICT_OK)
        return code;
    return resolve_target(*map, target, key, function, owner);
}

int insert_items(mpidict_map* map, int target, const c_key& key, bool byte_key, const void* items, size_t n_items,
                 mpidict_request** req, const char* function) {
    int owner = 0;
    if (const int code = start_keyed(map, target, key, byte_key, function, owner); code != MPIDICT_OK)
        return code;
    if (items == nullptr && n_items != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function, "items is NULL but n_items = " + str(n_items));
    if (const std::size_t most = max_items_for(*map, key); n_items > most)
        return fail(MPIDICT_ERR_ARGUMENT, function, message_limit(*map, "n_items", n_items, most));
    if (req != nullptr)
        *req = nullptr;
    return guarded(function, [&] {
        const auto* bytes = static_cast<const std::byte*>(items);
        if (req == nullptr) {
            map->store->async_insert(owner, key, bytes, n_items);
            return MPIDICT_OK;
        }
        return deliver(*map, map->store->insert(owner, key, bytes, n_items), req);
    });
}

int find_items(mpidict_map* map, int target, const c_key& key, bool byte_key, void* out_items, size_t max_items,
               mpidict_request** req, const char* function) {
    int owner = 0;
    if (const int code = start_keyed(map, target, key, byte_key, function, owner); code != MPIDICT_OK)
        return code;
    if (out_items == nullptr && max_items != 0)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    "out_items is NULL but max_items = " + str(max_items) + " (pass max_items = 0 or a buffer)");
    if (const std::size_t most = max_items_for(*map, key); max_items > most)
        return fail(MPIDICT_ERR_ARGUMENT, function, message_limit(*map, "max_items", max_items, most));
    if (req != nullptr)
        *req = nullptr;
    return guarded(function, [&] {
        return deliver(*map, map->store->find(owner, key, static_cast<std::byte*>(out_items), max_items), req);
    });
}

int delete_items(mpidict_map* map, int target, const c_key& key, bool byte_key, void* out_items, size_t max_items,
                 mpidict_request** req, const char* function) {
    int owner = 0;
    if (const int code = start_keyed(map, target, key, byte_key, function, owner); code != MPIDICT_OK)
        return code;
    const bool remove_all = out_items == nullptr && max_items == MPIDICT_ALL_ITEMS;
    if (const std::size_t most = max_items_for(*map, key); !remove_all && max_items > most)
        return fail(MPIDICT_ERR_ARGUMENT, function,
                    message_limit(*map, "max_items", max_items, most) +
                        (out_items == nullptr ? "" : " (MPIDICT_ALL_ITEMS needs out_items = NULL)"));
    if (req != nullptr)
        *req = nullptr;
    return guarded(function, [&] {
        if (remove_all) {
            if (req == nullptr) {
                map->store->async_erase(owner, key);
                return MPIDICT_OK;
            }
            return deliver(*map, map->store->erase(owner, key), req);
        }
        return deliver(*map, map->store->take(owner, key, static_cast<std::byte*>(out_items), max_items), req);
    });
}

int insert_item_if_absent(mpidict_map* map, int target, const c_key& key, bool byte_key, const void* item,
                          mpidict_request** req, const char* function) {
    int owner = 0;
    if (const int code = start_keyed(map, target, key, byte_key, function, owner); code != MPIDICT_OK)
        return code;
    if (item == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "item is NULL");
    if (req != nullptr)
        *req = nullptr;
    return guarded(function, [&] {
        const auto* bytes = static_cast<const std::byte*>(item);
        if (req == nullptr) {
            map->store->async_insert_if_absent(owner, key, bytes);
            return MPIDICT_OK;
        }
        return deliver(*map, map->store->insert_if_absent(owner, key, bytes), req);
    });
}

int count_items(mpidict_map* map, int target, const c_key& key, bool byte_key, mpidict_request** req,
                const char* function) {
    int owner = 0;
    if (const int code = start_keyed(map, target, key, byte_key, function, owner); code != MPIDICT_OK)
        return code;
    if (req == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "req is NULL; the count arrives through the request");
    *req = nullptr;
    return guarded(function, [&] { return deliver(*map, map->store->count(owner, key), req); });
}

c_key bytes_key(const void* key, size_t key_length) {
    return c_key{0, static_cast<const std::byte*>(key), key_length};
}

}  // namespace

extern "C" int mpidict_map_insert(mpidict_map* map, int target, int64_t key, const void* items, size_t n_items,
                              mpidict_request** req) {
    return insert_items(map, target, c_key{key}, false, items, n_items, req, "mpidict_map_insert");
}
extern "C" int mpidict_map_insert_bytes(mpidict_map* map, int target, const void* key, size_t key_length,
                                    const void* items, size_t n_items, mpidict_request** req) {
    return insert_items(map, target, bytes_key(key, key_length), true, items, n_items, req, "mpidict_map_insert_bytes");
}

extern "C" int mpidict_map_find(mpidict_map* map, int target, int64_t key, void* out_items, size_t max_items,
                            mpidict_request** req) {
    return find_items(map, target, c_key{key}, false, out_items, max_items, req, "mpidict_map_find");
}
extern "C" int mpidict_map_find_bytes(mpidict_map* map, int target, const void* key, size_t key_length, void* out_items,
                                  size_t max_items, mpidict_request** req) {
    return find_items(map, target, bytes_key(key, key_length), true, out_items, max_items, req, "mpidict_map_find_bytes");
}

extern "C" int mpidict_map_take(mpidict_map* map, int target, int64_t key, void* out_items, size_t max_items,
                              mpidict_request** req) {
    return delete_items(map, target, c_key{key}, false, out_items, max_items, req, "mpidict_map_take");
}
extern "C" int mpidict_map_take_bytes(mpidict_map* map, int target, const void* key, size_t key_length,
                                    void* out_items, size_t max_items, mpidict_request** req) {
    return delete_items(map, target, bytes_key(key, key_length), true, out_items, max_items, req,
                        "mpidict_map_take_bytes");
}

extern "C" int mpidict_map_insert_if_absent(mpidict_map* map, int target, int64_t key, const void* item,
                                        mpidict_request** req) {
    return insert_item_if_absent(map, target, c_key{key}, false, item, req, "mpidict_map_insert_if_absent");
}
extern "C" int mpidict_map_insert_if_absent_bytes(mpidict_map* map, int target, const void* key, size_t key_length,
                                              const void* item, mpidict_request** req) {
    return insert_item_if_absent(map, target, bytes_key(key, key_length), true, item, req,
                                 "mpidict_map_insert_if_absent_bytes");
}

extern "C" int mpidict_map_count(mpidict_map* map, int target, int64_t key, mpidict_request** req) {
    return count_items(map, target, c_key{key}, false, req, "mpidict_map_count");
}
extern "C" int mpidict_map_count_bytes(mpidict_map* map, int target, const void* key, size_t key_length,
                                   mpidict_request** req) {
    return count_items(map, target, bytes_key(key, key_length), true, req, "mpidict_map_count_bytes");
}

extern "C" int mpidict_request_wait(mpidict_request** reqs, size_t n, size_t* counts) {
    static constexpr const char* function = "mpidict_request_wait";
    if (const int code = check_requests(reqs, n, function); code != MPIDICT_OK)
        return code;
    return complete_requests(reqs, n, counts, function);
}

extern "C" int mpidict_request_test(mpidict_request** reqs, size_t n, int* flag, size_t* counts) {
    static constexpr const char* function = "mpidict_request_test";
    if (flag == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "flag is NULL");
    *flag = 0;
    if (const int code = check_requests(reqs, n, function); code != MPIDICT_OK)
        return code;
    bool all_done = true;
    const int code = guarded(function, [&] {
        for (std::size_t index = 0; index < n && all_done; ++index)
            if (reqs[index] != nullptr && !reqs[index]->work->test())
                all_done = false;
        return MPIDICT_OK;
    });
    if (code != MPIDICT_OK || !all_done)
        return code;
    *flag = 1;
    return complete_requests(reqs, n, counts, function);
}

extern "C" int mpidict_request_free(mpidict_request** req) {
    static constexpr const char* function = "mpidict_request_free";
    if (req == nullptr)
        return fail(MPIDICT_ERR_ARGUMENT, function, "req is NULL (pass the address of the handle)");
    if (*req == nullptr)
        return MPIDICT_OK;
    if ((*req)->magic != request_magic)
        return fail(MPIDICT_ERR_ARGUMENT, function, "*req is not a live mpidict_request (already waited on or freed?)");
    return guarded(function, [&] {
        release_request(*req);
        return MPIDICT_OK;
    });
}

extern "C" int mpidict_map_flush(mpidict_map* map) {
    static constexpr const char* function = "mpidict_map_flush";
    if (const int code = check_map(map, function, true); code != MPIDICT_OK)
        return code;
    return guarded(function, [&] {
        map->store->flush();
        complete_detached(*map);
        return MPIDICT_OK;
    });
}

// ---- names before issue 40 (deprecated in mpidict.h) ------------------------------

extern "C" int mpidict_insert_if_absent_bytes(mpidict_map* map, int target, const void* key, size_t key_length, const void* item, mpidict_request** req) { return mpidict_map_insert_if_absent_bytes(map, target, key, key_length, item, req); }
extern "C" int mpidict_insert_if_absent(mpidict_map* map, int target, int64_t key, const void* item, mpidict_request** req) { return mpidict_map_insert_if_absent(map, target, key, item, req); }
extern "C" int mpidict_insert_bytes(mpidict_map* map, int target, const void* key, size_t key_length, const void* items, size_t n_items, mpidict_request** req) { return mpidict_map_insert_bytes(map, target, key, key_length, items, n_items, req); }
extern "C" int mpidict_insert(mpidict_map* map, int target, int64_t key, const void* items, size_t n_items, mpidict_request** req) { return mpidict_map_insert(map, target, key, items, n_items, req); }
extern "C" int mpidict_find_bytes(mpidict_map* map, int target, const void* key, size_t key_length, void* out_items, size_t max_items, mpidict_request** req) { return mpidict_map_find_bytes(map, target, key, key_length, out_items, max_items, req); }
extern "C" int mpidict_find(mpidict_map* map, int target, int64_t key, void* out_items, size_t max_items, mpidict_request** req) { return mpidict_map_find(map, target, key, out_items, max_items, req); }
extern "C" int mpidict_delete_bytes(mpidict_map* map, int target, const void* key, size_t key_length, void* out_items, size_t max_items, mpidict_request** req) { return mpidict_map_take_bytes(map, target, key, key_length, out_items, max_items, req); }
extern "C" int mpidict_delete(mpidict_map* map, int target, int64_t key, void* out_items, size_t max_items, mpidict_request** req) { return mpidict_map_take(map, target, key, out_items, max_items, req); }
extern "C" int mpidict_count_bytes(mpidict_map* map, int target, const void* key, size_t key_length, mpidict_request** req) { return mpidict_map_count_bytes(map, target, key, key_length, req); }
extern "C" int mpidict_count(mpidict_map* map, int target, int64_t key, mpidict_request** req) { return mpidict_map_count(map, target, key, req); }
extern "C" int mpidict_flush(mpidict_map* map) { return mpidict_map_flush(map); }
extern "C" int mpidict_local_find_bytes(const mpidict_map* map, const void* key, size_t key_length, void* out_items, size_t max_items, size_t* count) { return mpidict_map_local_find_bytes(map, key, key_length, out_items, max_items, count); }
extern "C" int mpidict_local_find(const mpidict_map* map, int64_t key, void* out_items, size_t max_items, size_t* count) { return mpidict_map_local_find(map, key, out_items, max_items, count); }
extern "C" int mpidict_local_foreach(const mpidict_map* map, mpidict_foreach_fn fn, void* user_data) { return mpidict_map_local_for_each(map, fn, user_data); }
extern "C" int mpidict_wait(mpidict_request** reqs, size_t n, size_t* counts) { return mpidict_request_wait(reqs, n, counts); }
extern "C" int mpidict_test(mpidict_request** reqs, size_t n, int* flag, size_t* counts) { return mpidict_request_test(reqs, n, flag, counts); }
