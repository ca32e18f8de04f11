/*
 * mpidict C API, ordered part: a distributed skip list (mpidict::skiplist_map,
 * seed 004) for C programs.  Error codes, mpidict_last_error() and
 * mpidict_error_name() are those of mpidict.h (included).
 *
 * Model.  A skip list is created collectively over an MPI communicator with one
 * key kind for its whole life:
 *   MPIDICT_SKIPLIST_INT64  keys are int64_t, ordered numerically;
 *   MPIDICT_SKIPLIST_BYTES  keys are byte strings (0 to max_key_bytes bytes,
 *                           zeros allowed), ordered lexicographically by
 *                           unsigned byte, a prefix before its extensions.
 * A value is a byte string of 0 to max_value_bytes bytes; with value_size > 0
 * every value must have exactly value_size bytes.  Use the _i64 functions on an
 * INT64 list and the _bytes functions on a BYTES list (the other kind returns
 * MPIDICT_ERR_ARGUMENT).
 *
 * Completion.  insert / insert_if_absent / insert_many / find / erase / range /
 * prefix wait for their answer and return it.  The async_ forms only start the
 * operation (an async insert may wait in a batch at the caller until the batch
 * fills or this rank calls anything else on the list: skiplist_map.md,
 * "async_insert batches");
 * it is applied by the next collective mpidict_skiplist_flush (an async insert
 * refused because the list was full is counted by mpidict_skiplist_async_rejected).
 * Any rank may call any operation at any time; the other ranks serve requests
 * while they are inside any mpidict call that waits (on this list or on any
 * other container they created, including a collective create or destroy of
 * another one), so a rank that computes for
 * a long time between calls delays the others.
 *
 * Ranges.  range_i64 / range_bytes visit every entry with lo <= key <= hi, and
 * prefix every entry whose key starts with the given bytes, in ascending key
 * order (descending if asked), at most `limit` of them (0: all; descending with
 * a limit gives the largest keys).  The visitor is called once per entry, on
 * the calling rank, after the range is complete; its pointers are valid only
 * during the call; a non-zero return value stops the visit (the function still
 * returns MPIDICT_OK).  *count (may be NULL) gets the number of entries visited.
 *
 * Full list.  An insert that needs a new node when no server rank has a free
 * slot is refused and not applied; nothing stored is lost.  insert returns
 * MPIDICT_ERR_FULL (the C form of the C++ result's stored = false: it has no
 * other output for it); insert_if_absent returns MPIDICT_OK with *inserted = 0,
 * as for a key already there (docs/architecture.md, "Contracts"); async
 * inserts are counted by mpidict_skiplist_async_rejected.
 *
 * Threads.  One thread at a time calls functions on a given list.  Collective
 * functions (create, destroy, free, flush, global_size) must be called by every
 * rank of the communicator in the same order.
 */
#ifndef MPIDICT_C_SKIPLIST_H
#define MPIDICT_C_SKIPLIST_H

#include <stddef.h>
#include <stdint.h>

#include <mpi.h>

#include "mpidict/c/mpidict.h"

#ifdef __cplusplus
extern "C" {
#endif

#define MPIDICT_SKIPLIST_INT64 0
#define MPIDICT_SKIPLIST_BYTES 1

typedef struct mpidict_skiplist mpidict_skiplist; /* opaque */

typedef struct mpidict_skiplist_options {
    size_t granularity;        /* G: keys per node before it splits (default 64) */
    size_t node_slots_per_rank; /* P: hard limit on the nodes one rank hosts, 0: none (default 0) */
    unsigned max_height;       /* tallest tower (default 16) */
    double tower_probability;  /* P(height > h | height >= h) (default 0.5) */
    size_t max_key_bytes;      /* BYTES lists: longest key (default 256) */
    size_t max_value_bytes;    /* longest value (default 1024) */
    size_t buffer_bytes;       /* bytes per message (default: the runtime's, raised to what G needs) */
    /* Resident bytes of a rank past which it hosts no new node; 0: automatic
       (3/4 of the node's memory over the ranks on it), SIZE_MAX: none. */
    size_t memory_limit_per_rank; /* (default 0) */
    /* This rank's consistency mode to start in (skiplist_map.md "Consistency
       modes"): MPIDICT_SKIPLIST_TOTAL_ORDER, _SEQUENTIAL (default) or _NONE;
       mpidict_skiplist_set_consistency changes it later. */
    int consistency;
    /* Elastic servers (skiplist_map.md "Rebalancing, growing and draining"):
       server ranks active at the start (0: every rank); a flush wakes dormant
       ones when every active server holds grow_entries entries or passes
       grow_memory_fraction of its memory limit; rebalance_threshold > 0: a
       flush also moves nodes when entries' max/mean over the servers passes it
       (0: off).  Defaults 0, 2^20, 0.5, 0. */
    size_t initial_servers;
    uint64_t grow_entries;
    double grow_memory_fraction;
    double rebalance_threshold;
    /* Online moves' policy (skiplist_map.md "Online moves"): a server whose
       request rate passes online_rebalance x the mean of the rates the servers
       send each other every online_rebalance_seconds moves up to two nodes
       while operations go on.  0 (off; else at least 1, the same on or off on
       every rank), 0.2 s. */
    double online_rebalance;
    double online_rebalance_seconds;
} mpidict_skiplist_options;

/* Consistency modes (the values of C++'s skiplist_consistency). */
#define MPIDICT_SKIPLIST_TOTAL_ORDER 0
#define MPIDICT_SKIPLIST_SEQUENTIAL 1
#define MPIDICT_SKIPLIST_NONE 2

/* Flags of the _flags ranges and of match (OR them; C++'s range_options). */
#define MPIDICT_SKIPLIST_DESCENDING 0x1u /* largest key first; with a limit, the largest keys ("latest N") */
#define MPIDICT_SKIPLIST_AFTER_LO 0x2u   /* lo itself excluded: the next ascending page after its last key */
#define MPIDICT_SKIPLIST_BEFORE_HI 0x4u  /* hi itself excluded: the next descending page below its last key */
#define MPIDICT_SKIPLIST_FROM 0x8u       /* no upper end: every key >= lo (C++ range_from); hi is ignored */

/* Visits one entry of a range.  For an INT64 list, key points to an int64_t
 * (key_bytes == 8).  Return 0 to go on, non-zero to stop. */
typedef int (*mpidict_skiplist_visitor)(const void* key, size_t key_bytes, const void* value, size_t value_bytes,
                                        void* context);

/* Fills *options with the defaults. */
int mpidict_skiplist_options_init(mpidict_skiplist_options* options);

/* Collective.  Creates a list over a duplicate of `comm`.  key_kind is
 * MPIDICT_SKIPLIST_INT64 or MPIDICT_SKIPLIST_BYTES; value_size is the exact
 * size of every value, or 0 for values of any size up to max_value_bytes.
 * options may be NULL (defaults).  Every rank must pass the same arguments. */
int mpidict_skiplist_create(MPI_Comm comm, int key_kind, size_t value_size, const mpidict_skiplist_options* options,
                            mpidict_skiplist** out);

/* Collective.  Completes pending operations and frees the stored data; later
 * operations return MPIDICT_ERR_DESTROYED.  A second call does nothing. */
int mpidict_skiplist_destroy(mpidict_skiplist* list);

/* Releases the handle (destroying the list first if needed, then it is
 * collective) and sets *list to NULL.  *list == NULL is allowed. */
int mpidict_skiplist_free(mpidict_skiplist** list);

/* Local.  This rank and the size of the list's communicator. */
int mpidict_skiplist_rank(const mpidict_skiplist* list, int* rank, int* size);

/* ---- INT64 keys -------------------------------------------------------------- */

/* Inserts or replaces; *replaced (may be NULL) is 1 if the key was there. */
int mpidict_skiplist_insert_i64(mpidict_skiplist* list, int64_t key, const void* value, size_t value_bytes,
                                int* replaced);
/* Inserts only if the key is absent; *inserted (may be NULL) is 1 if it was new. */
int mpidict_skiplist_insert_if_absent_i64(mpidict_skiplist* list, int64_t key, const void* value,
                                          size_t value_bytes, int* inserted);
int mpidict_skiplist_async_insert_i64(mpidict_skiplist* list, int64_t key, const void* value, size_t value_bytes);
/* *found is 1 if the key is there; then up to `capacity` bytes of its value are
 * copied to out_value and *value_bytes (may be NULL) gets its full size (a
 * value larger than capacity is truncated, as snprintf does). */
int mpidict_skiplist_find_i64(mpidict_skiplist* list, int64_t key, void* out_value, size_t capacity,
                              size_t* value_bytes, int* found);
/* *erased (may be NULL) is 1 if the key was there. */
int mpidict_skiplist_erase_i64(mpidict_skiplist* list, int64_t key, int* erased);
int mpidict_skiplist_async_erase_i64(mpidict_skiplist* list, int64_t key);
int mpidict_skiplist_range_i64(mpidict_skiplist* list, int64_t lo, int64_t hi, uint64_t limit, int descending,
                               mpidict_skiplist_visitor visit, void* context, size_t* count);

/* Batch insert (the C++ insert_many: the keys sorted and sent as runs per node,
 * the fastest way to load a list).  Inserts or replaces keys[i] -> value i for
 * i < count, in index order where a key repeats (its last value wins), and
 * returns once every pair is answered.  Values are packed back to back at
 * `values`: value i has value_bytes[i] bytes and starts where value i - 1 ends;
 * value_bytes may be NULL on a list with value_size > 0 (value i is then at
 * values + i * value_size).  A pair refused because the list was full is not
 * applied (nothing stored is lost) and is not an error: *stored and *refused
 * (each may be NULL) count the pairs, and refused_indexes (may be NULL; else
 * room for count entries) gets the refused pairs' indexes, ascending.  Bad
 * input (a wrong value size, a NULL array with count > 0) stores nothing and
 * returns MPIDICT_ERR_ARGUMENT naming the pair.  Local; other ranks are served
 * while it waits. */
int mpidict_skiplist_insert_many_i64(mpidict_skiplist* list, const int64_t* keys, size_t count, const void* values,
                                     const size_t* value_bytes, uint64_t* stored, uint64_t* refused,
                                     size_t* refused_indexes);

/* As mpidict_skiplist_range_i64, with flags (MPIDICT_SKIPLIST_DESCENDING,
 * _AFTER_LO, _BEFORE_HI, _FROM).  Paging: a page cut by `limit` resumes with
 * lo = its last key and _AFTER_LO (descending: hi = its last key and _BEFORE_HI). */
int mpidict_skiplist_range_flags_i64(mpidict_skiplist* list, int64_t lo, int64_t hi, uint64_t limit, unsigned flags,
                                     mpidict_skiplist_visitor visit, void* context, size_t* count);
/* Visits one entry of range number `range` of a range_many call. */
typedef int (*mpidict_skiplist_many_visitor)(size_t range, const void* key, size_t key_bytes, const void* value,
                                             size_t value_bytes, void* context);
/* Several ranges in one call (C++ mpidict::range_many): range i is
 * [lo[i], hi[i]] with the same limit and flags for all (MPIDICT_SKIPLIST_DESCENDING,
 * _AFTER_LO, _BEFORE_HI), up to `window` ranges in flight (0: 16).  The entries
 * are visited range by range in index order (visit gets the range's index); a
 * non-zero return stops that range's visit, the others go on.  counts (may be
 * NULL; else room for count) gets each range's entries visited.  lo > hi: an
 * empty range.  Each is a range with a range's promise, not one snapshot. */
int mpidict_skiplist_range_many_i64(mpidict_skiplist* list, const int64_t* lo, const int64_t* hi, size_t count,
                                    uint64_t limit, unsigned flags, size_t window, mpidict_skiplist_many_visitor visit,
                                    void* context, size_t* counts);
/* As range_many_i64; the bounds packed back to back (lo i has lo_bytes[i] bytes). */
int mpidict_skiplist_range_many_bytes(mpidict_skiplist* list, const void* lo, const size_t* lo_bytes, const void* hi,
                                      const size_t* hi_bytes, size_t count, uint64_t limit, unsigned flags,
                                      size_t window, mpidict_skiplist_many_visitor visit, void* context,
                                      size_t* counts);
/* Pattern query (docs/skiplist_map.md "Pattern queries") on an INT64 list: a
 * one-dimensional pattern in the text form, e.g. "[100,200)", "(5,]", "42",
 * "*".  Visits the matching entries in key order (flags: MPIDICT_SKIPLIST_DESCENDING
 * only), at most `limit` (0: all), as range_i64 does.  A syntax error returns
 * MPIDICT_ERR_ARGUMENT naming the position.  BYTES lists have no numeric
 * dimensions: MPIDICT_ERR_ARGUMENT (use prefix or range_bytes). */
int mpidict_skiplist_match(mpidict_skiplist* list, const char* pattern, uint64_t limit, unsigned flags,
                           mpidict_skiplist_visitor visit, void* context, size_t* count);
/* Batch lookup (the C++ find_many: up to caller_window keys in flight, answered
 * in index order).  found[i] (room for count) is 1 if keys[i] is there; its
 * value is copied to out_values + i * value_capacity, truncated to
 * value_capacity bytes (as find does; out_values may be NULL when
 * value_capacity is 0), and value_bytes[i] (may be NULL; else room for count)
 * gets its full size (0 when not found).  Local; other ranks are served while
 * it waits. */
int mpidict_skiplist_find_many_i64(mpidict_skiplist* list, const int64_t* keys, size_t count, void* out_values,
                                   size_t value_capacity, size_t* value_bytes, int* found);

/* ---- BYTES keys --------------------------------------------------------------- */

int mpidict_skiplist_insert_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes, const void* value,
                                  size_t value_bytes, int* replaced);
int mpidict_skiplist_insert_if_absent_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                            const void* value, size_t value_bytes, int* inserted);
int mpidict_skiplist_async_insert_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                        const void* value, size_t value_bytes);
int mpidict_skiplist_find_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes, void* out_value,
                                size_t capacity, size_t* value_bytes, int* found);
int mpidict_skiplist_erase_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes, int* erased);
int mpidict_skiplist_async_erase_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes);
int mpidict_skiplist_range_bytes(mpidict_skiplist* list, const void* lo, size_t lo_bytes, const void* hi,
                                 size_t hi_bytes, uint64_t limit, int descending, mpidict_skiplist_visitor visit,
                                 void* context, size_t* count);
/* As mpidict_skiplist_insert_many_i64; the keys are packed back to back too:
 * key i has key_bytes[i] bytes and starts where key i - 1 ends. */
int mpidict_skiplist_insert_many_bytes(mpidict_skiplist* list, const void* keys, const size_t* key_bytes,
                                       size_t count, const void* values, const size_t* value_bytes, uint64_t* stored,
                                       uint64_t* refused, size_t* refused_indexes);
/* As mpidict_skiplist_range_bytes, with flags (as range_flags_i64). */
int mpidict_skiplist_range_flags_bytes(mpidict_skiplist* list, const void* lo, size_t lo_bytes, const void* hi,
                                       size_t hi_bytes, uint64_t limit, unsigned flags, mpidict_skiplist_visitor visit,
                                       void* context, size_t* count);
/* As mpidict_skiplist_find_many_i64; the keys packed back to back (key i has
 * key_bytes[i] bytes and starts where key i - 1 ends). */
int mpidict_skiplist_find_many_bytes(mpidict_skiplist* list, const void* keys, const size_t* key_bytes, size_t count,
                                     void* out_values, size_t value_capacity, size_t* value_bytes, int* found);
/* Every entry whose key starts with prefix[0..prefix_bytes) (prefix_bytes may be 0: all). */
int mpidict_skiplist_prefix(mpidict_skiplist* list, const void* prefix, size_t prefix_bytes, uint64_t limit,
                            int descending, mpidict_skiplist_visitor visit, void* context, size_t* count);

/* ---- expiry (milliseconds, as Redis PTTL) -------------------------------------------- */
/* skiplist_map.md "Expiry".  A time to live counts milliseconds from now (by the
 * system clock); an expired entry is seen by no operation and is removed by a
 * later flush.  A ttl_ms <= 0 is a deadline already passed: the insert stores
 * and changes nothing (an existing value stays), *stored = 0, MPIDICT_OK (as the
 * C++ duration forms; Python's ttl= does the same).  An insert without a TTL
 * clears the key's deadline (Redis SET). */

/* insert with a time to live; *stored (may be NULL) is 1 if stored, *replaced
 * (may be NULL) 1 if the key was there.  A list full: MPIDICT_ERR_FULL as insert. */
int mpidict_skiplist_insert_ttl_i64(mpidict_skiplist* list, int64_t key, const void* value, size_t value_bytes,
                                    int64_t ttl_ms, int* stored, int* replaced);
int mpidict_skiplist_insert_ttl_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes, const void* value,
                                      size_t value_bytes, int64_t ttl_ms, int* stored, int* replaced);
int mpidict_skiplist_async_insert_ttl_i64(mpidict_skiplist* list, int64_t key, const void* value,
                                          size_t value_bytes, int64_t ttl_ms);
int mpidict_skiplist_async_insert_ttl_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes,
                                            const void* value, size_t value_bytes, int64_t ttl_ms);
/* insert_many with one time to live for every pair (on insert_many's own path);
 * arguments and results as mpidict_skiplist_insert_many_i64 / _bytes. */
int mpidict_skiplist_insert_many_ttl_i64(mpidict_skiplist* list, const int64_t* keys, size_t count,
                                         const void* values, const size_t* value_bytes, int64_t ttl_ms,
                                         uint64_t* stored, uint64_t* refused, size_t* refused_indexes);
int mpidict_skiplist_insert_many_ttl_bytes(mpidict_skiplist* list, const void* keys, const size_t* key_bytes,
                                           size_t count, const void* values, const size_t* value_bytes,
                                           int64_t ttl_ms, uint64_t* stored, uint64_t* refused,
                                           size_t* refused_indexes);
/* The key's time left in milliseconds, rounded up (Redis PTTL): *ms = -2 if the
 * key is absent (or expired), -1 if it has no deadline. */
#define MPIDICT_SKIPLIST_TTL_NO_KEY (-2)
#define MPIDICT_SKIPLIST_TTL_NO_EXPIRY (-1)
int mpidict_skiplist_pttl_i64(mpidict_skiplist* list, int64_t key, int64_t* ms);
int mpidict_skiplist_pttl_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes, int64_t* ms);
/* Sets the key's deadline ttl_ms from now (Redis PEXPIRE); *existed (may be
 * NULL) is 1 if the key was there.  ttl_ms <= 0 removes the key. */
int mpidict_skiplist_expire_i64(mpidict_skiplist* list, int64_t key, int64_t ttl_ms, int* existed);
int mpidict_skiplist_expire_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes, int64_t ttl_ms,
                                  int* existed);
/* Removes the key's deadline (Redis PERSIST); *had_deadline (may be NULL) is 1
 * if it had one. */
int mpidict_skiplist_persist_i64(mpidict_skiplist* list, int64_t key, int* had_deadline);
int mpidict_skiplist_persist_bytes(mpidict_skiplist* list, const void* key, size_t key_bytes, int* had_deadline);

/* ---- counting and erasing a range ------------------------------------------------------ */
/* skiplist_map.md "Counting and erasing a range": the entries with lo <= key <=
 * hi (flags MPIDICT_SKIPLIST_AFTER_LO / _BEFORE_HI exclude an end; no other
 * flag) counted (Redis ZCOUNT) or erased (ZREMRANGEBYSCORE, RocksDB DeleteRange)
 * at their nodes: no entry travels.  *count / *erased (not NULL) gets the
 * number; lo > hi is an empty interval (0).  Ordered as a range in every mode. */
int mpidict_skiplist_count_i64(mpidict_skiplist* list, int64_t lo, int64_t hi, unsigned flags, uint64_t* count);
int mpidict_skiplist_erase_range_i64(mpidict_skiplist* list, int64_t lo, int64_t hi, unsigned flags,
                                     uint64_t* erased);
int mpidict_skiplist_count_bytes(mpidict_skiplist* list, const void* lo, size_t lo_bytes, const void* hi,
                                 size_t hi_bytes, unsigned flags, uint64_t* count);
int mpidict_skiplist_erase_range_bytes(mpidict_skiplist* list, const void* lo, size_t lo_bytes, const void* hi,
                                       size_t hi_bytes, unsigned flags, uint64_t* erased);

/* ---- the whole list -------------------------------------------------------------- */

/* Collective.  Returns when every operation started anywhere has been applied. */
int mpidict_skiplist_flush(mpidict_skiplist* list);
/* Local.  Entries held by the nodes this rank hosts. */
int mpidict_skiplist_local_size(const mpidict_skiplist* list, size_t* entries);
/* Collective.  Flushes (pending operations and online moves), then the entries over all ranks. */
int mpidict_skiplist_global_size(mpidict_skiplist* list, size_t* entries);
/* Local.  This rank's async inserts refused because the list was full (known after a flush). */
int mpidict_skiplist_async_rejected(const mpidict_skiplist* list, uint64_t* rejected);
/* Local.  This rank's consistency mode (options.consistency until changed).
 * set_consistency first waits until this rank's earlier operations on the list
 * have completed (other ranks are served meanwhile), so each mode's promise
 * covers exactly the operations started in it (C++ set_consistency). */
int mpidict_skiplist_consistency(const mpidict_skiplist* list, int* mode);
int mpidict_skiplist_set_consistency(mpidict_skiplist* list, int mode);

/* ---- rebalancing, growing and draining ------------------------------------------- */
/* skiplist_map.md "Rebalancing, growing and draining" (C++ rebalance, drain,
 * last_rebalance, active_servers).  Nodes move between server ranks at a flush
 * with nothing in flight, so every mode keeps its promises. */
#define MPIDICT_SKIPLIST_METRIC_ENTRIES 0  /* balance the entries the servers hold */
#define MPIDICT_SKIPLIST_METRIC_REQUESTS 1 /* balance the requests their nodes handled since the last rebalance */

/* What a rebalance, a drain or a flush that grew did; the same on every rank.
 * Ratios are max/mean over the active servers afterwards. */
typedef struct mpidict_skiplist_rebalance_result {
    uint64_t moved_nodes;    /* nodes that changed rank */
    uint64_t moved_entries;  /* entries they carried */
    uint64_t moved_bytes;    /* record bytes sent to move them */
    uint64_t refused_nodes;  /* moves a destination could not take (its capacity): the node stayed */
    uint64_t servers_added;  /* dormant ranks that became servers */
    int head_moved;          /* 1: the head node moved (a drain of its rank) */
    size_t servers;          /* active server ranks afterwards */
    double entries_ratio_before, entries_ratio_after;
    double load_ratio_before, load_ratio_after; /* of the metric balanced */
    double seconds;          /* wall time of the call on this rank */
} mpidict_skiplist_rebalance_result;

/* Collective (every rank passes the same metric and target).  Flushes, then
 * moves nodes from the most loaded server ranks to the least until max/mean of
 * the metric is near 1; nothing moves while it is at or below target (>= 1;
 * C++'s default 1.1).  *result may be NULL. */
int mpidict_skiplist_rebalance(mpidict_skiplist* list, int metric, double target,
                               mpidict_skiplist_rebalance_result* result);
/* Collective (the same rank everywhere).  Moves every node off `rank` (an active
 * server, not the only one), which then stops being a server (a later growth may
 * wake it again).  *result may be NULL. */
int mpidict_skiplist_drain(mpidict_skiplist* list, int rank, mpidict_skiplist_rebalance_result* result);
/* Local, not collective.  Starts moving up to `nodes` of this rank's idle nodes
 * (most requested first) to rank `to` (-1: the other active servers in turn;
 * this rank or one that is no active server: none) while operations go on;
 * *started (may be NULL) gets the moves started.  Requests keep their order
 * through the old place; the next flush settles the moves.  A rank outside the
 * communicator: MPIDICT_ERR_ARGUMENT on this rank only. */
int mpidict_skiplist_local_rebalance(mpidict_skiplist* list, size_t nodes, int to, size_t* started);
/* Local.  What the last rebalance, drain or flush that grew or moved did. */
int mpidict_skiplist_last_rebalance(const mpidict_skiplist* list, mpidict_skiplist_rebalance_result* result);
/* Local.  The active server ranks, in the order C++'s active_servers() gives
 * (the initial ones, then ranks as they woke): *count (may be NULL) gets how
 * many; up to `capacity` of them go to ranks (NULL allowed when capacity is 0). */
int mpidict_skiplist_active_servers(const mpidict_skiplist* list, int* ranks, size_t capacity, size_t* count);

/* ---- consistent snapshots --------------------------------------------------------- */
/* skiplist_map.md "Snapshots" (C++ skiplist_map::snapshot()).  A snapshot is
 * taken collectively: reads through it see the list as it was when every rank
 * made the call (every operation started before it, async ones included, and
 * nothing started after), whatever is inserted, erased or expires later.  Each
 * rank holds one slice of it in key order (rank r's keys below rank r + 1's).
 * Reads are local (other ranks are served while they wait) and take the list's
 * key kind (_i64 on an INT64 list's snapshot, _bytes on a BYTES list's).
 * Release every snapshot collectively, before or after destroying its list;
 * reads after the list was destroyed return MPIDICT_ERR_DESTROYED.  Cost: a
 * copy of the entries while it is held. */
typedef struct mpidict_skiplist_snapshot mpidict_skiplist_snapshot; /* opaque */

/* Collective.  *snapshot gets a new snapshot of `list`. */
int mpidict_skiplist_snapshot_take(mpidict_skiplist* list, mpidict_skiplist_snapshot** snapshot);
/* Collective (every rank releases the same snapshots in the same order).
 * Frees the copy and the handle and sets *snapshot to NULL; NULL does nothing. */
int mpidict_skiplist_snapshot_release(mpidict_skiplist_snapshot** snapshot);
/* As mpidict_skiplist_find_i64 / _bytes, at the snapshot's cut. */
int mpidict_skiplist_snapshot_find_i64(mpidict_skiplist_snapshot* snapshot, int64_t key, void* out_value,
                                       size_t capacity, size_t* value_bytes, int* found);
int mpidict_skiplist_snapshot_find_bytes(mpidict_skiplist_snapshot* snapshot, const void* key, size_t key_bytes,
                                         void* out_value, size_t capacity, size_t* value_bytes, int* found);
/* As mpidict_skiplist_range_flags_i64 / _bytes (flags DESCENDING, AFTER_LO,
 * BEFORE_HI, FROM), at the cut. */
int mpidict_skiplist_snapshot_range_i64(mpidict_skiplist_snapshot* snapshot, int64_t lo, int64_t hi, uint64_t limit,
                                        unsigned flags, mpidict_skiplist_visitor visit, void* context, size_t* count);
int mpidict_skiplist_snapshot_range_bytes(mpidict_skiplist_snapshot* snapshot, const void* lo, size_t lo_bytes,
                                          const void* hi, size_t hi_bytes, uint64_t limit, unsigned flags,
                                          mpidict_skiplist_visitor visit, void* context, size_t* count);
/* As mpidict_skiplist_count_i64 / _bytes (flags AFTER_LO, BEFORE_HI), at the cut. */
int mpidict_skiplist_snapshot_count_i64(mpidict_skiplist_snapshot* snapshot, int64_t lo, int64_t hi, unsigned flags,
                                        uint64_t* count);
int mpidict_skiplist_snapshot_count_bytes(mpidict_skiplist_snapshot* snapshot, const void* lo, size_t lo_bytes,
                                          const void* hi, size_t hi_bytes, unsigned flags, uint64_t* count);
/* Local.  *entries (may be NULL): the whole snapshot's; *local_entries (may be
 * NULL): this rank's slice's. */
int mpidict_skiplist_snapshot_size(const mpidict_skiplist_snapshot* snapshot, uint64_t* entries,
                                   size_t* local_entries);
/* Local.  Visits this rank's slice in key order (a non-zero return stops);
 * *count (may be NULL) gets the entries visited.  Every rank visiting its own
 * visits the whole snapshot once. */
int mpidict_skiplist_snapshot_local_visit(const mpidict_skiplist_snapshot* snapshot, mpidict_skiplist_visitor visit,
                                          void* context, size_t* count);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MPIDICT_C_SKIPLIST_H */
