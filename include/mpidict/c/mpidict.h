/*
 * mpidict C API: a distributed multi-valued hash map for C (and Fortran-via-C)
 * programs, in the spirit of CSE_Hash's HASH_Insert / HASH_Find / HASH_Delete /
 * HASH_Wait / HASH_Flush (seed 000, section 2).
 *
 * Model.  A map is created collectively over an MPI communicator.  Keys are
 * int64_t (mpidict_map_create) or byte strings of any length that fits in one
 * message (mpidict_map_create_bytes; every keyed function then has a _bytes
 * form taking `const void* key, size_t key_length`, and the int64_t form
 * returns MPIDICT_ERR_ARGUMENT, as the _bytes form does on an int64_t map).
 * A key maps to a sequence of *items* in insertion order; an item is
 * `values_per_key` values of `value_size` bytes each (a sparse-matrix entry
 * stored as a (column, value) pair is 2 values of 4 bytes), so every item has
 * item_bytes = value_size * values_per_key bytes and arrays of items are
 * contiguous: item i of a call lives at ((char*)items + i * item_bytes).
 *
 * Placement.  Each operation names a target rank; MPIDICT_TARGET_AUTO (-1)
 * uses the map's placement (hash of the key, or key % p for cyclic).  A find or
 * delete must name the rank the items were inserted on.
 *
 * Completion.  mpidict_map_insert / mpidict_map_find / mpidict_map_take only start an
 * operation.  With a request pointer, the operation is complete when
 * mpidict_request_wait (or a successful mpidict_request_test) returns for that request; the
 * request then says how many items were processed (stored, found or removed),
 * and find/delete have written their items to out_items.  With a NULL request
 * pointer the operation is fire-and-forget and complete when the next
 * collective mpidict_map_flush (or mpidict_map_destroy) returns on this rank;
 * out_items must stay valid until then.  Input arrays may be reused as soon as
 * the starting call returns (the items are copied into a message buffer).
 *
 * Limits.  One operation travels in one message: an insert carries, and a
 * find/delete returns, at most mpidict_map_max_items() items (it grows with
 * options.buffer_bytes).  A per-rank capacity limit is not an error: an insert
 * that reaches it stores a prefix of its items and its request reports how many
 * (fire-and-forget rejections are counted in mpidict_statistics.async_rejected).
 *
 * Errors.  Every function returns MPIDICT_OK (0) or an error code;
 * mpidict_last_error() gives a message naming the offending value and the
 * limit, for the last failure on the calling thread.  No C++ exception crosses
 * this interface.  After MPIDICT_ERR_MPI or MPIDICT_ERR_INTERNAL the map
 * should be considered unusable (call MPI_Abort).
 *
 * Threads.  One thread at a time calls functions on a given map and its
 * requests.  Collective functions (create, destroy, flush, global_size) must be
 * called by every rank of the communicator in the same order.
 */
#ifndef MPIDICT_C_MPIDICT_H
#define MPIDICT_C_MPIDICT_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- error codes --------------------------------------------------------- */

#define MPIDICT_OK 0
#define MPIDICT_ERR_ARGUMENT 1  /* bad argument: NULL, out of range, too large for one message */
#define MPIDICT_ERR_DESTROYED 2 /* the map was destroyed by mpidict_map_destroy */
#define MPIDICT_ERR_MPI 3       /* an MPI call failed; the message carries MPI's text */
#define MPIDICT_ERR_MISMATCH 4  /* ranks disagree in a collective call (sizes, placement, ...) */
#define MPIDICT_ERR_NO_MEMORY 5 /* an allocation failed */
#define MPIDICT_ERR_INTERNAL 6  /* a corrupt message or another internal failure */
#define MPIDICT_ERR_FULL 7      /* skiplist: no free node on any server rank (list_full); nothing was applied */

/* ---- constants ------------------------------------------------------------ */

/* Target rank meaning "the rank the map's placement chooses for this key". */
#define MPIDICT_TARGET_AUTO (-1)

/* max_items for mpidict_map_take with out_items == NULL: remove every item. */
#define MPIDICT_ALL_ITEMS SIZE_MAX

#define MPIDICT_PLACEMENT_HASH 0   /* owner = hash(key) mod p (default) */
#define MPIDICT_PLACEMENT_CYCLIC 1 /* owner = key mod p (key read as unsigned) */

#define MPIDICT_ROUTING_AUTOMATIC 0 /* direct below 128 ranks, grid from there (MPIDICT_ROUTING overrides) */
#define MPIDICT_ROUTING_DIRECT 1    /* one buffer per destination rank */
#define MPIDICT_ROUTING_GRID 2      /* through a corner rank of a sqrt(p) grid: O(sqrt p) buffers per rank */

/* ---- handles --------------------------------------------------------------- */

typedef struct mpidict_map mpidict_map;         /* opaque */
/* A key as mpidict_map_local_for_each shows it: `integer` for int64_t maps, `bytes`
 * and `length` for byte-string maps (the other members are 0 / NULL). */
typedef struct mpidict_key {
    int64_t integer;
    const void* bytes;
    size_t length;
} mpidict_key;
/* Called by mpidict_map_local_for_each with a key, its n_items items (contiguous,
 * item_bytes each; valid during the call) and the caller's pointer.  Return 0
 * to go on, anything else to stop.  It must not call functions on the map. */
typedef int (*mpidict_foreach_fn)(const mpidict_key* key, const void* items, size_t n_items, void* user_data);
typedef struct mpidict_request mpidict_request; /* opaque */

typedef struct mpidict_map_options {
    size_t buffer_bytes;           /* B: bytes per message (per destination buffer); same on all ranks */
    size_t blocking_factor;        /* L: requests outstanding per rank before a start makes progress */
    size_t release_queue;          /* q: sent buffers awaiting release by MPI */
    size_t capacity_values;        /* per-rank limit on stored items (0: none) */
    size_t capacity_bytes;         /* per-rank limit on stored key + item bytes (0: none) */
    int placement;                 /* MPIDICT_PLACEMENT_HASH or MPIDICT_PLACEMENT_CYCLIC; same on all ranks */
    size_t expected_keys_per_rank; /* sizing hint for the local table (0: grow as needed) */
    int progress_thread;           /* 1: a background thread answers other ranks while this one computes
                                      (MPI initialised with MPI_THREAD_MULTIPLE, or MPI_THREAD_SERIALIZED
                                      if the program makes no MPI calls of its own while the map lives);
                                      0: answers only inside mpidict calls (default) */
    int routing;                   /* MPIDICT_ROUTING_AUTOMATIC (default: grid from 128 ranks on),
                                      MPIDICT_ROUTING_DIRECT or MPIDICT_ROUTING_GRID (docs/runtime.md,
                                      "Routing"); the routing in effect must agree on all ranks */
} mpidict_map_options;

/* Per operation kind (delete counts both forms). */
typedef struct mpidict_op_statistics {
    uint64_t operations;       /* started on this rank, with or without a request */
    uint64_t requests;         /* of which with a request */
    uint64_t items;            /* items processed by the requests that completed */
    double initiation_seconds; /* time inside the starting calls */
    double completion_seconds; /* time inside wait/test */
} mpidict_op_statistics;

typedef struct mpidict_statistics {
    mpidict_op_statistics op_insert;
    mpidict_op_statistics op_find;
    mpidict_op_statistics op_delete;
    uint64_t messages_sent;
    uint64_t messages_received;
    uint64_t bytes_sent;
    uint64_t bytes_received;
    uint64_t waits;          /* waits that had to make progress */
    uint64_t window_stalls;  /* starts that waited because L requests were outstanding */
    uint64_t queue_stalls;   /* sends that waited because q buffers were in flight */
    uint64_t flushes;
    double barrier_seconds;  /* time inside mpidict_map_flush (and destroy) */
    uint64_t async_rejected; /* this rank's fire-and-forget items refused by a capacity limit
                                (complete after mpidict_map_flush) */
    uint64_t local_rejected; /* items this rank refused as owner because of its capacity limit */
    size_t local_keys;       /* keys in this rank's shard (0 after destroy) */
    size_t local_items;      /* items in this rank's shard (0 after destroy) */
    size_t buffer_bytes_high_water;
    size_t outstanding_requests_high_water;
} mpidict_statistics;

/* ---- errors ------------------------------------------------------------------ */

/* The message of the last failure on the calling thread ("" if none yet).
 * Valid until the next failing call on this thread. */
const char* mpidict_last_error(void);

/* "MPIDICT_OK", "MPIDICT_ERR_ARGUMENT", ...; "MPIDICT_ERR_UNKNOWN" otherwise. */
const char* mpidict_error_name(int code);

/* ---- maps ---------------------------------------------------------------------- */

/* Fills *options with the defaults (B = 64 KiB, L = 4096, q = 8, no capacity
 * limit, hash placement). */
int mpidict_map_options_init(mpidict_map_options* options);

/* Collective.  Creates a map over a duplicate of `comm` whose items are
 * values_per_key values of value_size bytes.  options may be NULL (defaults).
 * Every rank must pass the same value_size, values_per_key, buffer_bytes and
 * placement; if any rank's arguments are invalid or they
 * disagree, every rank returns an error and *out is NULL. */
int mpidict_map_create(MPI_Comm comm, size_t value_size, size_t values_per_key,
                       const mpidict_map_options* options, mpidict_map** out);
/* Collective.  The same with byte-string keys (hash placement only). */
int mpidict_map_create_bytes(MPI_Comm comm, size_t value_size, size_t values_per_key,
                             const mpidict_map_options* options, mpidict_map** out);

/* Collective.  Completes every pending operation (as mpidict_map_flush), then frees
 * the stored data and the communicator.  The handle stays valid: insert, find,
 * delete, flush, local_find and local/global_size on it return
 * MPIDICT_ERR_DESTROYED, while mpidict_request_wait/mpidict_request_test on its requests (all
 * complete by now), rank, owner, item_bytes, max_items, the statistics and
 * mpidict_map_free still work.  A second call returns MPIDICT_OK and does
 * nothing. */
int mpidict_map_destroy(mpidict_map* map);

/* Releases the handle and sets *map to NULL.  If the map was not destroyed yet
 * this destroys it first and is then collective.  Requests still held stay
 * valid until waited on or freed.  *map == NULL is allowed (no-op). */
int mpidict_map_free(mpidict_map** map);

/* Local.  This rank and the size of the map's communicator. */
int mpidict_map_rank(const mpidict_map* map, int* rank, int* size);

/* Local.  The rank that owns `key` under the map's placement. */
int mpidict_map_owner(const mpidict_map* map, int64_t key, int* rank);
int mpidict_map_owner_bytes(const mpidict_map* map, const void* key, size_t key_length, int* rank);

/* Local.  Bytes per item, and the largest n_items / max_items one operation may
 * carry (bounded by options.buffer_bytes; for byte-string keys, with an empty
 * key: each byte of a key leaves room for fewer items). */
int mpidict_map_item_bytes(const mpidict_map* map, size_t* item_bytes);
int mpidict_map_max_items(const mpidict_map* map, size_t* max_items);

/* Local.  Keys and items in this rank's shard (either pointer may be NULL). */
int mpidict_map_local_size(const mpidict_map* map, size_t* keys, size_t* items);

/* Collective.  Keys and items over all ranks (either pointer may be NULL). */
int mpidict_map_global_size(mpidict_map* map, size_t* keys, size_t* items);

/* Local.  Copies up to max_items of `key`'s items held in this rank's shard into
 * out_items, without messages; *count (may be NULL) gets how many. */
int mpidict_map_local_find(const mpidict_map* map, int64_t key, void* out_items, size_t max_items,
                       size_t* count);
int mpidict_map_local_find_bytes(const mpidict_map* map, const void* key, size_t key_length, void* out_items,
                             size_t max_items, size_t* count);
/* Local.  Calls fn on every key of this rank's shard with its items, in no
 * particular order, until fn returns non-zero.  No messages; other ranks'
 * operations are not applied meanwhile (call mpidict_map_flush first to see them
 * all).  With every rank calling it after a flush, each key is seen once. */
int mpidict_map_local_for_each(const mpidict_map* map, mpidict_foreach_fn fn, void* user_data);

/* Local.  This rank's counters; reset zeroes them. */
int mpidict_map_statistics(const mpidict_map* map, mpidict_statistics* out);
int mpidict_map_reset_statistics(mpidict_map* map);

/* ---- operations ----------------------------------------------------------------- */

/* Starts appending n_items items (contiguous, item_bytes each) to `key` at
 * `target` (MPIDICT_TARGET_AUTO: the map's placement).  n_items may be 0.  The
 * request's count is the number of items stored, a prefix of the call's items;
 * it is smaller than n_items only when a capacity limit was reached.
 * req == NULL: fire-and-forget, applied by the next mpidict_map_flush. */
int mpidict_map_insert(mpidict_map* map, int target, int64_t key, const void* items, size_t n_items,
                   mpidict_request** req);
int mpidict_map_insert_bytes(mpidict_map* map, int target, const void* key, size_t key_length, const void* items,
                         size_t n_items, mpidict_request** req);

/* Starts reading up to max_items of `key`'s items, oldest first, into out_items
 * (room for max_items items).  The request's count is the number of items
 * written (0 if the key is absent).  out_items may be NULL only if max_items is
 * 0.  req == NULL: the items are written by the next mpidict_map_flush. */
int mpidict_map_find(mpidict_map* map, int target, int64_t key, void* out_items, size_t max_items,
                 mpidict_request** req);
int mpidict_map_find_bytes(mpidict_map* map, int target, const void* key, size_t key_length, void* out_items,
                       size_t max_items, mpidict_request** req);

/* Starts removing up to max_items of `key`'s items, oldest first, atomically at
 * the owner, and writes them into out_items.  The request's count is the number
 * of items removed.  out_items may be NULL: the removed items are discarded;
 * with out_items == NULL and max_items == MPIDICT_ALL_ITEMS every item of the
 * key is removed (no limit, nothing travels back).
 * req == NULL: complete (and out_items written) by the next mpidict_map_flush. */
int mpidict_map_take(mpidict_map* map, int target, int64_t key, void* out_items, size_t max_items,
                   mpidict_request** req);
int mpidict_map_take_bytes(mpidict_map* map, int target, const void* key, size_t key_length, void* out_items,
                         size_t max_items, mpidict_request** req);
/* Starts storing one item under `key` only if the key has no items (the
 * visited-set primitive): exactly one of several concurrent attempts wins.
 * The request's count is 1 if this call stored it, else 0 (present, or
 * refused by a capacity limit).  req == NULL: applied by the next flush. */
int mpidict_map_insert_if_absent(mpidict_map* map, int target, int64_t key, const void* item, mpidict_request** req);
int mpidict_map_insert_if_absent_bytes(mpidict_map* map, int target, const void* key, size_t key_length,
                                   const void* item, mpidict_request** req);
/* Starts counting `key`'s items at its owner; the request's count is the
 * number (0: absent).  req must not be NULL. */
int mpidict_map_count(mpidict_map* map, int target, int64_t key, mpidict_request** req);
int mpidict_map_count_bytes(mpidict_map* map, int target, const void* key, size_t key_length, mpidict_request** req);

/* Waits for the n requests in reqs[0..n), writes each one's item count to
 * counts[i] (counts may be NULL), frees them and sets reqs[i] to NULL.  NULL
 * entries count as complete with 0 items.  On failure, requests before the
 * failing one were completed and freed; it and the ones after are untouched. */
int mpidict_request_wait(mpidict_request** reqs, size_t n, size_t* counts);

/* Makes progress and tests the n requests.  If all are complete, *flag = 1 and
 * it acts as mpidict_request_wait; otherwise *flag = 0 and nothing is freed. */
int mpidict_request_test(mpidict_request** reqs, size_t n, int* flag, size_t* counts);

/* Abandons a request (its result, if it arrives, is discarded; an insert still
 * happens) and sets *req to NULL.  *req == NULL is allowed. */
int mpidict_request_free(mpidict_request** req);

/* Collective.  Returns when every operation started on any rank before the call
 * has been applied and answered, and every fire-and-forget find/delete of this
 * rank has written its items. */
int mpidict_map_flush(mpidict_map* map);

/* ---- names before issue 40 (deprecated) ------------------------------------------ */

/* Every function on a map is mpidict_map_*, every function on a request
 * mpidict_request_* (as mpidict_skiplist_* in skiplist.h).  The old names still
 * work and will be removed in a later version. */
#if defined(__GNUC__) || defined(__clang__)
#define MPIDICT_RENAMED(new_name) __attribute__((deprecated("renamed " #new_name)))
#else
#define MPIDICT_RENAMED(new_name)
#endif
MPIDICT_RENAMED(mpidict_map_insert_if_absent_bytes) int mpidict_insert_if_absent_bytes(mpidict_map* map, int target, const void* key, size_t key_length, const void* item, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_insert_if_absent) int mpidict_insert_if_absent(mpidict_map* map, int target, int64_t key, const void* item, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_insert_bytes) int mpidict_insert_bytes(mpidict_map* map, int target, const void* key, size_t key_length, const void* items, size_t n_items, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_insert) int mpidict_insert(mpidict_map* map, int target, int64_t key, const void* items, size_t n_items, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_find_bytes) int mpidict_find_bytes(mpidict_map* map, int target, const void* key, size_t key_length, void* out_items, size_t max_items, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_find) int mpidict_find(mpidict_map* map, int target, int64_t key, void* out_items, size_t max_items, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_take_bytes) int mpidict_delete_bytes(mpidict_map* map, int target, const void* key, size_t key_length, void* out_items, size_t max_items, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_take) int mpidict_delete(mpidict_map* map, int target, int64_t key, void* out_items, size_t max_items, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_count_bytes) int mpidict_count_bytes(mpidict_map* map, int target, const void* key, size_t key_length, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_count) int mpidict_count(mpidict_map* map, int target, int64_t key, mpidict_request** req);
MPIDICT_RENAMED(mpidict_map_flush) int mpidict_flush(mpidict_map* map);
MPIDICT_RENAMED(mpidict_map_local_find_bytes) int mpidict_local_find_bytes(const mpidict_map* map, const void* key, size_t key_length, void* out_items, size_t max_items, size_t* count);
MPIDICT_RENAMED(mpidict_map_local_find) int mpidict_local_find(const mpidict_map* map, int64_t key, void* out_items, size_t max_items, size_t* count);
MPIDICT_RENAMED(mpidict_map_local_for_each) int mpidict_local_foreach(const mpidict_map* map, mpidict_foreach_fn fn, void* user_data);
MPIDICT_RENAMED(mpidict_request_wait) int mpidict_wait(mpidict_request** reqs, size_t n, size_t* counts);
MPIDICT_RENAMED(mpidict_request_test) int mpidict_test(mpidict_request** reqs, size_t n, int* flag, size_t* counts);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MPIDICT_C_MPIDICT_H */
