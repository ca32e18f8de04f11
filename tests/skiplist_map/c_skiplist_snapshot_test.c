/*
 * The skip list's C API, part 4: consistent snapshots (issue 49, item 6), from C
 * at 1..4 ranks in each consistency mode.  Every rank inserts its keys
 * (k % size == rank, value 10 k), some of them with async inserts still
 * buffered, takes a snapshot, then overwrites every key (value -1) and erases
 * some: finds, ranges (flags), counts, the sizes and this rank's slice must all
 * show the state at the cut.  A BYTES list's snapshot; bad handles and the
 * wrong key kind; release (a NULL handle after); reads after the list was
 * destroyed.  A failed check aborts the job.
 */
#include <mpidict/c/skiplist.h>

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../c/c_check.h"

enum { per_rank = 40 };

struct slice_visit {
    int64_t last;
    size_t entries;
};

/* An entry of the cut (value 10 k): its key. */
static int64_t entry_key(const void* key, size_t key_bytes, const void* value, size_t value_bytes) {
    int64_t k = 0, v = 0;
    CHECK(key_bytes == sizeof k && value_bytes == sizeof v);
    memcpy(&k, key, sizeof k);
    memcpy(&v, value, sizeof v);
    CHECK(v == 10 * k);
    return k;
}

/* Ascending visits. */
static int check_entry(const void* key, size_t key_bytes, const void* value, size_t value_bytes, void* context) {
    struct slice_visit* state = (struct slice_visit*)context;
    const int64_t k = entry_key(key, key_bytes, value, value_bytes);
    if (state->entries > 0)
        CHECK(k > state->last);
    state->last = k;
    ++state->entries;
    return 0;
}

/* Descending visits of [lo, hi) with a limit: hi - 1, hi - 2, ... */
static int check_desc(const void* key, size_t key_bytes, const void* value, size_t value_bytes, void* context) {
    struct slice_visit* state = (struct slice_visit*)context;
    CHECK(entry_key(key, key_bytes, value, value_bytes) == state->last - 1 - (int64_t)state->entries);
    ++state->entries;
    return 0;
}

static int count_only(const void* key, size_t key_bytes, const void* value, size_t value_bytes, void* context) {
    (void)key;
    (void)key_bytes;
    (void)value;
    (void)value_bytes;
    (void)context;
    return 0;
}

static void int_snapshot(int mode) {
    mpidict_skiplist* list = NULL;
    mpidict_skiplist_snapshot* snap = NULL;
    mpidict_skiplist_options options;
    struct slice_visit state = {0, 0};
    const int64_t universe = (int64_t)per_rank * g_size;
    int64_t k, v, lo, hi;
    uint64_t total = 0, counted = 0;
    size_t local = 0, visited = 0, value_bytes = 0;
    int found = 0;
    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.granularity = 4;
    options.consistency = mode;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(int64_t), &options, &list));
    for (k = g_rank; k < universe; k += g_size) {
        v = 10 * k;
        if (k % 3 == 0)
            CHECK_OK(mpidict_skiplist_async_insert_i64(list, k, &v, sizeof v)); /* the snapshot flushes first */
        else
            CHECK_OK(mpidict_skiplist_insert_i64(list, k, &v, sizeof v, NULL));
    }
    CHECK_OK(mpidict_skiplist_snapshot_take(list, &snap));
    CHECK(snap != NULL);
    /* Writes after the cut. */
    for (k = g_rank; k < universe; k += g_size) {
        v = -1;
        if (k % 4 == 0)
            CHECK_OK(mpidict_skiplist_erase_i64(list, k, NULL));
        else
            CHECK_OK(mpidict_skiplist_insert_i64(list, k, &v, sizeof v, NULL));
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_find_i64(list, 1, &v, sizeof v, NULL, &found));
    CHECK(found && v == -1);
    /* Reads at the cut, every key of every rank. */
    for (k = 0; k < universe + 3; ++k) {
        CHECK_OK(mpidict_skiplist_snapshot_find_i64(snap, k, &v, sizeof v, &value_bytes, &found));
        CHECK(found == (k < universe));
        if (found)
            CHECK(v == 10 * k && value_bytes == sizeof v);
    }
    lo = 3;
    hi = universe - 2;
    CHECK_OK(mpidict_skiplist_snapshot_range_i64(snap, lo, hi, 0, 0, check_entry, &state, &visited));
    CHECK_EQ_SIZE(visited, (size_t)(hi - lo + 1));
    state.last = hi;
    state.entries = 0;
    CHECK_OK(mpidict_skiplist_snapshot_range_i64(snap, lo, hi, 5, MPIDICT_SKIPLIST_DESCENDING | MPIDICT_SKIPLIST_BEFORE_HI,
                                                 check_desc, &state, &visited));
    CHECK_EQ_SIZE(visited, 5);
    CHECK_OK(mpidict_skiplist_snapshot_count_i64(snap, lo, hi, MPIDICT_SKIPLIST_AFTER_LO, &counted));
    CHECK(counted == (uint64_t)(hi - lo));
    CHECK_OK(mpidict_skiplist_snapshot_size(snap, &total, &local));
    CHECK(total == (uint64_t)universe);
    state.entries = 0;
    CHECK_OK(mpidict_skiplist_snapshot_local_visit(snap, check_entry, &state, &visited));
    CHECK_EQ_SIZE(visited, local);
    {
        unsigned long long mine = (unsigned long long)local, all = 0;
        CHECK_OK(mpidict_skiplist_flush(list)); /* others may still read from this rank: serve them first */
        MPI_Allreduce(&mine, &all, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        CHECK(all == (unsigned long long)universe);
    }
    /* Bad input. */
    CHECK_ERROR(mpidict_skiplist_snapshot_find_bytes(snap, "a", 1, NULL, 0, NULL, &found), MPIDICT_ERR_ARGUMENT,
                "MPIDICT_SKIPLIST_BYTES");
    CHECK_ERROR(mpidict_skiplist_snapshot_find_i64(snap, 1, NULL, 0, NULL, NULL), MPIDICT_ERR_ARGUMENT, "found is NULL");
    CHECK_ERROR(mpidict_skiplist_snapshot_range_i64(snap, 0, 1, 0, 0x100u, check_entry, &state, NULL),
                MPIDICT_ERR_ARGUMENT, "flags");
    CHECK_ERROR(mpidict_skiplist_snapshot_take(list, NULL), MPIDICT_ERR_ARGUMENT, "snapshot is NULL");
    CHECK_OK(mpidict_skiplist_snapshot_release(&snap));
    CHECK(snap == NULL);
    CHECK_OK(mpidict_skiplist_snapshot_release(&snap)); /* NULL: nothing */
    /* A snapshot outliving its list's destroy: reads fail, release only frees. */
    CHECK_OK(mpidict_skiplist_snapshot_take(list, &snap));
    CHECK_OK(mpidict_skiplist_destroy(list));
    CHECK_ERROR(mpidict_skiplist_snapshot_find_i64(snap, 1, &v, sizeof v, NULL, &found), MPIDICT_ERR_DESTROYED,
                "destroyed");
    CHECK_OK(mpidict_skiplist_snapshot_release(&snap));
    CHECK_OK(mpidict_skiplist_free(&list));
}

static void bytes_snapshot(void) {
    mpidict_skiplist* list = NULL;
    mpidict_skiplist_snapshot* snap = NULL;
    mpidict_skiplist_options options;
    char key[16], value[16];
    size_t value_bytes = 0, visited = 0;
    uint64_t counted = 0;
    int found = 0;
    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.granularity = 4;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_BYTES, 0, &options, &list));
    sprintf(key, "r%02d", g_rank);
    CHECK_OK(mpidict_skiplist_insert_bytes(list, key, strlen(key), "old", 3, NULL));
    CHECK_OK(mpidict_skiplist_snapshot_take(list, &snap));
    CHECK_OK(mpidict_skiplist_insert_bytes(list, key, strlen(key), "new", 3, NULL));
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_snapshot_find_bytes(snap, key, strlen(key), value, sizeof value, &value_bytes, &found));
    CHECK(found && value_bytes == 3 && memcmp(value, "old", 3) == 0);
    CHECK_OK(mpidict_skiplist_snapshot_count_bytes(snap, "r", 1, "s", 1, 0, &counted));
    CHECK(counted == (uint64_t)g_size);
    CHECK_OK(mpidict_skiplist_snapshot_range_bytes(snap, "r", 1, NULL, 0, 0, MPIDICT_SKIPLIST_FROM, count_only, NULL,
                                                   &visited));
    CHECK_EQ_SIZE(visited, (size_t)g_size);
    CHECK_ERROR(mpidict_skiplist_snapshot_range_i64(snap, 0, 1, 0, 0, count_only, NULL, NULL), MPIDICT_ERR_ARGUMENT,
                "MPIDICT_SKIPLIST_INT64");
    CHECK_OK(mpidict_skiplist_snapshot_release(&snap));
    CHECK_ERROR(mpidict_skiplist_snapshot_size(NULL, NULL, NULL), MPIDICT_ERR_ARGUMENT, "snapshot is NULL");
    CHECK_OK(mpidict_skiplist_free(&list));
}

int main(int argc, char** argv) {
    int mode;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    for (mode = MPIDICT_SKIPLIST_TOTAL_ORDER; mode <= MPIDICT_SKIPLIST_NONE; ++mode)
        int_snapshot(mode);
    bytes_snapshot();
    if (g_rank == 0)
        printf("c_skiplist_snapshot: snapshots checked in every mode at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
