/*
 * The C API, exercised from C at 1..4 ranks.  Every rank checks its own
 * results; the first failed check prints what it expected and aborts the whole
 * job with MPI_Abort, so no rank is left waiting in a collective.
 *
 *   matrix scatter  seed 000's Figure 2 in miniature: rank 0 holds a sparse
 *                   matrix as rows of (column, value) pairs, deletes each row
 *                   that belongs elsewhere and inserts it at row % p with an
 *                   explicit target, waiting every L requests, then flushes;
 *                   every rank checks the rows it owns.
 *   find/delete     counts, limits, order, absent keys, test(), fire-and-forget
 *                   find/delete completed by flush, for item sizes that use the
 *                   fixed-size and the string representation.
 *   capacity        partial counts from capacity_values and capacity_bytes,
 *                   async rejections in the statistics.
 *   limits          the largest insert/find one message carries, and one more.
 *   errors          bad arguments, NULL handles, disagreeing ranks at create,
 *                   use after destroy, and the map still working afterwards.
 *   old names       the names before issue 40 (mpidict_insert, mpidict_wait,
 *                   ...; deprecated) still do what the mpidict_map_* and
 *                   mpidict_request_* ones do.
 */
#include <mpidict/c/mpidict.h>

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_check.h"

static void* checked_malloc(size_t bytes) {
    void* memory = malloc(bytes == 0 ? 1 : bytes);
    if (memory == NULL) {
        fprintf(stderr, "[rank %d] out of memory (%lu bytes)\n", g_rank, (unsigned long)bytes);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    return memory;
}

/* ---- matrix scatter (seed 000, Figures 1 and 2) ----------------------------- */

typedef struct entry {
    int32_t column;
    float value;
} entry; /* one item: 2 values of 4 bytes */

enum { matrix_rows = 150, matrix_columns = 40, max_row_nonzeros = 6, blocking_factor_l = 8 };

static size_t row_nonzeros(int64_t row) { return (size_t)(1 + (row * 7) % max_row_nonzeros); }
static entry row_entry(int64_t row, size_t index) {
    entry e;
    e.column = (int32_t)((row * 13 + (int64_t)index * 5) % matrix_columns);
    e.value = (float)row + 0.25f * (float)index;
    return e;
}

static void check_row(const entry* items, size_t count, int64_t row) {
    size_t index;
    CHECK_EQ_SIZE(count, row_nonzeros(row));
    for (index = 0; index < count; ++index) {
        const entry expected = row_entry(row, index);
        CHECK(items[index].column == expected.column);
        CHECK(items[index].value == expected.value);
    }
}

static void test_matrix_scatter(void) {
    mpidict_map_options options;
    mpidict_map* map = NULL;
    mpidict_request* reqs[blocking_factor_l];
    size_t counts[blocking_factor_l];
    entry* batch = (entry*)checked_malloc(sizeof(entry) * blocking_factor_l * max_row_nonzeros);
    entry found[max_row_nonzeros];
    size_t nnz = 0;
    size_t keys = 0;
    size_t items = 0;
    int64_t row;
    mpidict_statistics stats;

    CHECK_OK(mpidict_map_options_init(&options));
    options.placement = MPIDICT_PLACEMENT_CYCLIC;
    options.blocking_factor = blocking_factor_l;
    options.buffer_bytes = 1024; /* small: many messages even for this small matrix */
    options.routing = 7;
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, sizeof(int32_t), 2, &options, &map), MPIDICT_ERR_ARGUMENT,
                "options.routing = 7");
    options.routing = MPIDICT_ROUTING_GRID; /* through corner ranks from 3 ranks on: same answers */
    CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, sizeof(int32_t), 2, &options, &map));
    CHECK(sizeof(entry) == 8);
    {
        int map_rank = -1;
        int map_size = -1;
        CHECK_OK(mpidict_map_rank(map, &map_rank, &map_size));
        CHECK(map_rank == g_rank && map_size == g_size);
    }

    /* Figure 1: P0 reads the matrix (coordinate storage) into its own shard,
     * one non-zero at a time. */
    if (g_rank == 0) {
        for (row = 1; row <= matrix_rows; ++row) {
            size_t index;
            for (index = 0; index < row_nonzeros(row); ++index) {
                entry one = row_entry(row, index);
                CHECK_OK(mpidict_map_insert(map, 0, row, &one, 1, NULL));
                ++nnz;
            }
        }
    }
    CHECK_OK(mpidict_map_flush(map));
    if (g_rank == 0) {
        CHECK_OK(mpidict_map_local_size(map, &keys, &items));
        CHECK_EQ_SIZE(keys, matrix_rows);
        CHECK_EQ_SIZE(items, nnz);
    }

    /* Figure 2: P0 deals the rows cyclically, L inserts in flight at a time. */
    if (g_rank == 0) {
        size_t nsent = 0;
        for (row = 1; row <= matrix_rows; ++row) {
            const int target = (int)(row % g_size);
            if (target != 0) {
                entry* slot = &batch[nsent * max_row_nonzeros];
                mpidict_request* take = NULL;
                size_t n = 0;
                CHECK_OK(mpidict_map_take(map, 0, row, slot, max_row_nonzeros, &take));
                CHECK_OK(mpidict_request_wait(&take, 1, &n));
                CHECK(take == NULL);
                check_row(slot, n, row);
                CHECK_OK(mpidict_map_insert(map, target, row, slot, n, &reqs[nsent]));
                ++nsent;
            }
            if (nsent == blocking_factor_l || (row == matrix_rows && nsent > 0)) {
                size_t index;
                CHECK_OK(mpidict_request_wait(reqs, nsent, counts));
                for (index = 0; index < nsent; ++index) {
                    CHECK(reqs[index] == NULL);
                    CHECK(counts[index] >= 1 && counts[index] <= max_row_nonzeros);
                }
                nsent = 0;
            }
        }
    }
    CHECK_OK(mpidict_map_flush(map));

    /* Every rank checks the rows it owns, locally and through a find at itself,
     * and that the cyclic placement agrees with the explicit targets. */
    for (row = 1; row <= matrix_rows; ++row) {
        int owner = -1;
        size_t count = 0;
        CHECK_OK(mpidict_map_owner(map, row, &owner));
        CHECK(owner == (int)(row % g_size));
        CHECK_OK(mpidict_map_local_find(map, row, found, max_row_nonzeros, &count));
        if (owner == g_rank) {
            mpidict_request* req = NULL;
            check_row(found, count, row);
            memset(found, 0, sizeof found);
            CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, row, found, max_row_nonzeros, &req));
            CHECK_OK(mpidict_request_wait(&req, 1, &count));
            check_row(found, count, row);
        } else {
            CHECK_EQ_SIZE(count, 0); /* P0 no longer holds rows it dealt out */
        }
    }
    nnz = 0;
    for (row = 1; row <= matrix_rows; ++row)
        nnz += row_nonzeros(row);
    CHECK_OK(mpidict_map_global_size(map, &keys, &items));
    CHECK_EQ_SIZE(keys, matrix_rows);
    CHECK_EQ_SIZE(items, nnz);

    CHECK_OK(mpidict_map_statistics(map, &stats));
    if (g_rank == 0) {
        CHECK(stats.op_insert.operations >= (uint64_t)nnz);
        CHECK(stats.op_delete.requests == (uint64_t)(matrix_rows - matrix_rows / g_size));
        CHECK(stats.flushes >= 2);
    }
    CHECK_OK(mpidict_map_free(&map));
    CHECK(map == NULL);
    free(batch);
}

/* ---- find / delete ------------------------------------------------------------ */

/* Item `index` of `key`: item_bytes bytes derived from both. */
static void make_item(unsigned char* out, size_t item_bytes, int64_t key, size_t index) {
    size_t byte;
    for (byte = 0; byte < item_bytes; ++byte)
        out[byte] = (unsigned char)(key * 31 + (int64_t)index * 7 + (int64_t)byte * 3 + 1);
}

static void make_items(unsigned char* out, size_t item_bytes, int64_t key, size_t first, size_t n) {
    size_t index;
    for (index = 0; index < n; ++index)
        make_item(out + index * item_bytes, item_bytes, key, first + index);
}

/* out[0..count) must be items first..first+count of key. */
static void check_items(const unsigned char* out, size_t item_bytes, int64_t key, size_t first, size_t count) {
    unsigned char* expected = (unsigned char*)checked_malloc(item_bytes);
    size_t index;
    for (index = 0; index < count; ++index) {
        make_item(expected, item_bytes, key, first + index);
        CHECK(memcmp(out + index * item_bytes, expected, item_bytes) == 0);
    }
    free(expected);
}

static void test_find_delete(size_t value_size, size_t values_per_key) {
    const size_t item_bytes = value_size * values_per_key;
    const int64_t mine = 1000 + g_rank;
    const int64_t next = 1000 + (g_rank + 1) % g_size;
    const int64_t async_mine = 5000 + g_rank;
    const int64_t async_next = 5000 + (g_rank + 1) % g_size;
    const size_t n_mine = 10;
    const size_t n_async = 3;
    mpidict_map_options options;
    mpidict_map* map = NULL;
    unsigned char* items = (unsigned char*)checked_malloc(item_bytes * 32);
    unsigned char* out = (unsigned char*)checked_malloc(item_bytes * 32);
    unsigned char* detached = (unsigned char*)checked_malloc(item_bytes * 32);
    mpidict_request* reqs[4];
    size_t counts[4];
    size_t reported = 0;
    size_t count = 0;
    size_t keys = 0;
    int flag = 0;
    int spins = 0;

    CHECK_OK(mpidict_map_options_init(&options));
    options.expected_keys_per_rank = 4;
    CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, value_size, values_per_key, &options, &map));
    CHECK_OK(mpidict_map_item_bytes(map, &reported));
    CHECK_EQ_SIZE(reported, item_bytes);

    /* Each rank inserts its key in two calls (appending), and another key
     * fire-and-forget. */
    make_items(items, item_bytes, mine, 0, n_mine);
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, mine, items, 4, &reqs[0]));
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, mine, items + 4 * item_bytes, n_mine - 4, &reqs[1]));
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, mine, items, 0, &reqs[2])); /* empty insert */
    reqs[3] = NULL;                                                                   /* NULL entries are fine */
    CHECK_OK(mpidict_request_wait(reqs, 4, counts));
    CHECK_EQ_SIZE(counts[0], 4);
    CHECK_EQ_SIZE(counts[1], n_mine - 4);
    CHECK_EQ_SIZE(counts[2], 0);
    CHECK_EQ_SIZE(counts[3], 0);
    CHECK(reqs[0] == NULL && reqs[1] == NULL && reqs[2] == NULL);
    make_items(items, item_bytes, async_mine, 0, n_async);
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, async_mine, items, n_async, NULL));
    CHECK_OK(mpidict_map_flush(map));

    /* find with counts and limits, on the next rank's keys. */
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, next, out, 4, &reqs[0]));
    CHECK_OK(mpidict_request_wait(reqs, 1, &count));
    CHECK_EQ_SIZE(count, 4);
    check_items(out, item_bytes, next, 0, 4);
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, next, out, 32, &reqs[0]));
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, -77, out + 16 * item_bytes, 8, &reqs[1])); /* absent */
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, async_next, out + 24 * item_bytes, 8, &reqs[2]));
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, next, NULL, 0, &reqs[3])); /* nothing asked */
    CHECK_OK(mpidict_request_wait(reqs, 4, counts));
    CHECK_EQ_SIZE(counts[0], n_mine);
    check_items(out, item_bytes, next, 0, n_mine);
    CHECK_EQ_SIZE(counts[1], 0);
    CHECK_EQ_SIZE(counts[2], n_async);
    check_items(out + 24 * item_bytes, item_bytes, async_next, 0, n_async);
    CHECK_EQ_SIZE(counts[3], 0);

    /* mpidict_request_test until complete. */
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, next, out, 2, &reqs[0]));
    for (;;) {
        CHECK_OK(mpidict_request_test(reqs, 1, &flag, &count));
        if (flag)
            break;
        CHECK(reqs[0] != NULL);
        ++spins;
        CHECK(spins < 100000000);
    }
    CHECK(reqs[0] == NULL);
    CHECK_EQ_SIZE(count, 2);
    check_items(out, item_bytes, next, 0, 2);

    /* A fire-and-forget find writes its items by the next flush. */
    memset(detached, 0xAB, item_bytes * 32);
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, next, detached, 32, NULL));
    CHECK_OK(mpidict_map_flush(map));
    check_items(detached, item_bytes, next, 0, n_mine);
    CHECK(detached[n_mine * item_bytes] == 0xAB); /* nothing written past the items */

    /* delete returns the items, oldest first; afterwards find returns 0.  Each
     * rank deletes only its own keys, so nothing races with the finds above
     * (they completed before the flush). */
    CHECK_OK(mpidict_map_take(map, MPIDICT_TARGET_AUTO, mine, out, 3, &reqs[0]));
    CHECK_OK(mpidict_request_wait(reqs, 1, &count));
    CHECK_EQ_SIZE(count, 3);
    check_items(out, item_bytes, mine, 0, 3);
    CHECK_OK(mpidict_map_take(map, MPIDICT_TARGET_AUTO, mine, out, 32, &reqs[0]));
    CHECK_OK(mpidict_request_wait(reqs, 1, &count));
    CHECK_EQ_SIZE(count, n_mine - 3);
    check_items(out, item_bytes, mine, 3, n_mine - 3);
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, mine, out, 32, &reqs[0]));
    CHECK_OK(mpidict_request_wait(reqs, 1, &count));
    CHECK_EQ_SIZE(count, 0);
    CHECK_OK(mpidict_map_take(map, MPIDICT_TARGET_AUTO, mine, out, 32, &reqs[0])); /* already gone */
    CHECK_OK(mpidict_request_wait(reqs, 1, &count));
    CHECK_EQ_SIZE(count, 0);

    /* Delete everything without a buffer. */
    CHECK_OK(mpidict_map_take(map, MPIDICT_TARGET_AUTO, async_mine, NULL, MPIDICT_ALL_ITEMS, &reqs[0]));
    CHECK_OK(mpidict_request_wait(reqs, 1, &count));
    CHECK_EQ_SIZE(count, n_async);
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, async_mine, out, 32, &reqs[0]));
    CHECK_OK(mpidict_request_wait(reqs, 1, &count));
    CHECK_EQ_SIZE(count, 0);

    /* Fire-and-forget deletes: one into a buffer, one of everything. */
    make_items(items, item_bytes, mine, 0, 5);
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, mine, items, 5, NULL));
    make_items(items, item_bytes, async_mine, 0, 2);
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, async_mine, items, 2, NULL));
    CHECK_OK(mpidict_map_flush(map));
    CHECK_OK(mpidict_map_take(map, MPIDICT_TARGET_AUTO, mine, NULL, 2, &reqs[0])); /* remove 2, discard them */
    CHECK_OK(mpidict_request_wait(reqs, 1, &count));
    CHECK_EQ_SIZE(count, 2);
    memset(detached, 0xAB, item_bytes * 32);
    CHECK_OK(mpidict_map_take(map, MPIDICT_TARGET_AUTO, mine, detached, 32, NULL));
    CHECK_OK(mpidict_map_take(map, MPIDICT_TARGET_AUTO, async_mine, NULL, MPIDICT_ALL_ITEMS, NULL));
    CHECK_OK(mpidict_map_flush(map));
    check_items(detached, item_bytes, mine, 2, 3);
    CHECK(detached[3 * item_bytes] == 0xAB);
    CHECK_OK(mpidict_map_global_size(map, &keys, &count));
    CHECK_EQ_SIZE(keys, 0);
    CHECK_EQ_SIZE(count, 0);

    CHECK_OK(mpidict_map_destroy(map));
    CHECK_OK(mpidict_map_free(&map));
    free(items);
    free(out);
    free(detached);
}

/* ---- capacity ----------------------------------------------------------------- */

static void test_capacity(void) {
    mpidict_map_options options;
    mpidict_map* map = NULL;
    uint64_t items[16];
    uint64_t out[16];
    mpidict_request* req = NULL;
    size_t count = 0;
    size_t keys = 0;
    size_t stored = 0;
    mpidict_statistics stats;
    size_t index;

    for (index = 0; index < 16; ++index)
        items[index] = 100 * (uint64_t)g_rank + index;

    /* At most 5 items per rank. */
    CHECK_OK(mpidict_map_options_init(&options));
    options.capacity_values = 5;
    CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, sizeof(uint64_t), 1, &options, &map));
    CHECK_OK(mpidict_map_insert(map, g_rank, 1, items, 8, &req));
    CHECK_OK(mpidict_request_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 5); /* a prefix was stored: a partial count, not an error */
    CHECK_OK(mpidict_map_insert(map, g_rank, 2, items, 3, &req));
    CHECK_OK(mpidict_request_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 0);
    CHECK_OK(mpidict_map_insert(map, g_rank, 3, items, 4, NULL)); /* rejected; counted at flush */
    CHECK_OK(mpidict_map_flush(map));
    CHECK_OK(mpidict_map_find(map, g_rank, 1, out, 16, &req));
    CHECK_OK(mpidict_request_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 5);
    CHECK(memcmp(out, items, 5 * sizeof(uint64_t)) == 0); /* the first five, in order */
    CHECK_OK(mpidict_map_local_size(map, &keys, &stored));
    CHECK_EQ_SIZE(keys, 1);
    CHECK_EQ_SIZE(stored, 5);
    CHECK_OK(mpidict_map_statistics(map, &stats));
    CHECK(stats.async_rejected == 4);
    CHECK(stats.local_rejected == 3 + 3 + 4);
    /* Deleting makes room again. */
    CHECK_OK(mpidict_map_take(map, g_rank, 1, out, 2, &req));
    CHECK_OK(mpidict_request_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 2);
    CHECK_OK(mpidict_map_insert(map, g_rank, 2, items, 3, &req));
    CHECK_OK(mpidict_request_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 2);
    CHECK_OK(mpidict_map_free(&map));

    /* At most 32 bytes per rank: a new key costs 8 bytes, each item 8. */
    CHECK_OK(mpidict_map_options_init(&options));
    options.capacity_bytes = 32;
    CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, sizeof(uint32_t), 2, &options, &map));
    CHECK_OK(mpidict_map_insert(map, g_rank, 7, items, 5, &req));
    CHECK_OK(mpidict_request_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 3);
    CHECK_OK(mpidict_map_free(&map));
}

/* ---- limits of one message ---------------------------------------------------- */

static void test_message_limits(void) {
    mpidict_map_options options;
    mpidict_map* map = NULL;
    size_t max_items = 0;
    size_t count = 0;
    size_t item_bytes = 0;
    unsigned char* items;
    unsigned char* out;
    mpidict_request* req = NULL;
    char expected[64];
    const size_t sizes[2] = {8, 7}; /* fixed-size and string representation */
    size_t variant;

    for (variant = 0; variant < 2; ++variant) {
        CHECK_OK(mpidict_map_options_init(&options));
        options.buffer_bytes = 4096;
        CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, sizes[variant], 1, &options, &map));
        CHECK_OK(mpidict_map_max_items(map, &max_items));
        CHECK_OK(mpidict_map_item_bytes(map, &item_bytes));
        CHECK(max_items > 100 && max_items * item_bytes < 4096);
        items = (unsigned char*)checked_malloc((max_items + 1) * item_bytes);
        out = (unsigned char*)checked_malloc((max_items + 1) * item_bytes);
        make_items(items, item_bytes, 42, 0, max_items + 1);

        /* The largest insert and find succeed, both ways. */
        CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 42 + g_rank, items, max_items, &req));
        CHECK_OK(mpidict_request_wait(&req, 1, &count));
        CHECK_EQ_SIZE(count, max_items);
        CHECK_OK(mpidict_map_flush(map));
        CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, 42 + (g_rank + 1) % g_size, out, max_items, &req));
        CHECK_OK(mpidict_request_wait(&req, 1, &count));
        CHECK_EQ_SIZE(count, max_items);
        CHECK(memcmp(out, items, max_items * item_bytes) == 0);

        /* One more is refused, naming the value and the limit. */
        sprintf(expected, "n_items = %lu", (unsigned long)(max_items + 1));
        CHECK_ERROR(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 43, items, max_items + 1, &req), MPIDICT_ERR_ARGUMENT,
                    expected);
        CHECK(req == NULL);
        sprintf(expected, "the %lu items", (unsigned long)max_items);
        CHECK(strstr(mpidict_last_error(), expected) != NULL);
        CHECK(strstr(mpidict_last_error(), "buffer_bytes = 4096") != NULL);
        CHECK_ERROR(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 43, items, max_items + 1, NULL), MPIDICT_ERR_ARGUMENT,
                    "n_items");
        sprintf(expected, "max_items = %lu", (unsigned long)(max_items + 1));
        CHECK_ERROR(mpidict_map_find(map, MPIDICT_TARGET_AUTO, 42, out, max_items + 1, &req), MPIDICT_ERR_ARGUMENT,
                    expected);
        CHECK_ERROR(mpidict_map_take(map, MPIDICT_TARGET_AUTO, 42, out, max_items + 1, &req), MPIDICT_ERR_ARGUMENT,
                    expected);
        CHECK_ERROR(mpidict_map_take(map, MPIDICT_TARGET_AUTO, 42, out, MPIDICT_ALL_ITEMS, &req),
                    MPIDICT_ERR_ARGUMENT, "MPIDICT_ALL_ITEMS needs out_items = NULL");

        /* The refused calls left nothing behind: the key still has its items. */
        CHECK_OK(mpidict_map_flush(map));
        CHECK_OK(mpidict_map_take(map, MPIDICT_TARGET_AUTO, 42 + g_rank, NULL, MPIDICT_ALL_ITEMS, &req));
        CHECK_OK(mpidict_request_wait(&req, 1, &count));
        CHECK_EQ_SIZE(count, max_items);
        CHECK_OK(mpidict_map_free(&map));
        free(items);
        free(out);
    }
}

/* ---- errors -------------------------------------------------------------------- */

static void test_errors(void) {
    mpidict_map_options options;
    mpidict_map* map = NULL;
    mpidict_map* bad = (mpidict_map*)&options; /* scribbled-on value of map: pointer to something else */
    mpidict_request* req = NULL;
    mpidict_request* pending = NULL;
    mpidict_request* reqs[2] = {NULL, NULL};
    uint64_t items[4] = {1, 2, 3, 4};
    uint64_t out[4] = {0, 0, 0, 0};
    size_t count = 0;
    int flag = 0;
    int round;
    char expected[64];
    mpidict_statistics stats;

    /* Names. */
    CHECK(strcmp(mpidict_error_name(MPIDICT_OK), "MPIDICT_OK") == 0);
    CHECK(strcmp(mpidict_error_name(MPIDICT_ERR_ARGUMENT), "MPIDICT_ERR_ARGUMENT") == 0);
    CHECK(strcmp(mpidict_error_name(MPIDICT_ERR_DESTROYED), "MPIDICT_ERR_DESTROYED") == 0);
    CHECK(strcmp(mpidict_error_name(MPIDICT_ERR_MPI), "MPIDICT_ERR_MPI") == 0);
    CHECK(strcmp(mpidict_error_name(MPIDICT_ERR_MISMATCH), "MPIDICT_ERR_MISMATCH") == 0);
    CHECK(strcmp(mpidict_error_name(99), "MPIDICT_ERR_UNKNOWN") == 0);
    CHECK_ERROR(mpidict_map_options_init(NULL), MPIDICT_ERR_ARGUMENT, "options is NULL");

    /* create: bad arguments on every rank, on one rank, and ranks that disagree.
     * Every rank gets an error and no map. */
    map = bad;
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 0, 2, NULL, &map), MPIDICT_ERR_ARGUMENT, "value_size = 0");
    CHECK(map == NULL);
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 4, 0, NULL, &map), MPIDICT_ERR_ARGUMENT, "values_per_key = 0");
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 4, 1, NULL, NULL), MPIDICT_ERR_ARGUMENT, "out is NULL");
    CHECK_ERROR(mpidict_map_create(MPI_COMM_NULL, 4, 1, NULL, &map), MPIDICT_ERR_ARGUMENT, "MPI_COMM_NULL");
    CHECK_OK(mpidict_map_options_init(&options));
    options.buffer_bytes = 256;
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 300, 1, &options, &map), MPIDICT_ERR_ARGUMENT,
                "value_size * values_per_key = 300 bytes does not fit");
    options.buffer_bytes = 16;
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 4, 1, &options, &map), MPIDICT_ERR_ARGUMENT,
                "options.buffer_bytes = 16 is outside");
    CHECK_OK(mpidict_map_options_init(&options));
    options.placement = 7;
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 4, 1, &options, &map), MPIDICT_ERR_ARGUMENT,
                "options.placement = 7");
    options.placement = MPIDICT_PLACEMENT_HASH;
    options.blocking_factor = 0;
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 4, 1, &options, &map), MPIDICT_ERR_ARGUMENT,
                "options.blocking_factor = 0");
    if (g_size > 1) {
        /* Only the last rank passes a bad value: the others learn which rank. */
        const size_t value_size = g_rank == g_size - 1 ? 0 : 4;
        sprintf(expected, "rank %d rejected", g_size - 1);
        CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, value_size, 1, NULL, &map), MPIDICT_ERR_ARGUMENT,
                    g_rank == g_size - 1 ? "value_size = 0" : expected);
        CHECK(map == NULL);
        /* Valid everywhere but different. */
        CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, g_rank == 0 ? 4 : 8, 1, NULL, &map), MPIDICT_ERR_MISMATCH,
                    "ranks disagree on value_size");
        CHECK(map == NULL);
        CHECK_OK(mpidict_map_options_init(&options));
        options.placement = g_rank == 0 ? MPIDICT_PLACEMENT_CYCLIC : MPIDICT_PLACEMENT_HASH;
        CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 8, 1, &options, &map), MPIDICT_ERR_MISMATCH,
                    "ranks disagree on options.placement");
        CHECK(map == NULL);
    }

    /* NULL handles. */
    CHECK_ERROR(mpidict_map_insert(NULL, 0, 1, items, 1, &req), MPIDICT_ERR_ARGUMENT, "map is NULL");
    CHECK_ERROR(mpidict_map_find(NULL, 0, 1, out, 1, &req), MPIDICT_ERR_ARGUMENT, "map is NULL");
    CHECK_ERROR(mpidict_map_take(NULL, 0, 1, out, 1, &req), MPIDICT_ERR_ARGUMENT, "map is NULL");
    CHECK_ERROR(mpidict_map_flush(NULL), MPIDICT_ERR_ARGUMENT, "map is NULL");
    CHECK_ERROR(mpidict_map_destroy(NULL), MPIDICT_ERR_ARGUMENT, "map is NULL");
    CHECK_ERROR(mpidict_map_local_size(NULL, &count, NULL), MPIDICT_ERR_ARGUMENT, "map is NULL");
    CHECK_ERROR(mpidict_map_statistics(NULL, &stats), MPIDICT_ERR_ARGUMENT, "map is NULL");
    CHECK_ERROR(mpidict_map_free(NULL), MPIDICT_ERR_ARGUMENT, "map is NULL");
    map = NULL;
    CHECK_OK(mpidict_map_free(&map)); /* freeing NULL is a no-op */
    CHECK_ERROR(mpidict_map_insert(bad, 0, 1, items, 1, &req), MPIDICT_ERR_ARGUMENT, "not a live mpidict_map");
    CHECK_ERROR(mpidict_request_wait(NULL, 1, &count), MPIDICT_ERR_ARGUMENT, "reqs is NULL");
    CHECK_OK(mpidict_request_wait(NULL, 0, NULL));
    CHECK_OK(mpidict_request_wait(reqs, 2, NULL)); /* NULL entries */
    CHECK_ERROR(mpidict_request_test(reqs, 2, NULL, NULL), MPIDICT_ERR_ARGUMENT, "flag is NULL");
    CHECK_OK(mpidict_request_test(reqs, 2, &flag, NULL));
    CHECK(flag == 1);
    CHECK_ERROR(mpidict_request_free(NULL), MPIDICT_ERR_ARGUMENT, "req is NULL");
    CHECK_OK(mpidict_request_free(&req)); /* *req == NULL */

    /* Bad operation arguments on a live map, with a window of 2 requests: the
     * refused calls must not use up the window (the map keeps working). */
    CHECK_OK(mpidict_map_options_init(&options));
    options.blocking_factor = 2;
    CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, sizeof(uint64_t), 1, &options, &map));
    for (round = 0; round < 5; ++round) {
        /* "of 1 rank", not "of 1 ranks" */
        sprintf(expected, "target = %d is outside the communicator of %d rank%s", g_size, g_size,
                g_size == 1 ? "" : "s");
        CHECK_ERROR(mpidict_map_insert(map, g_size, 1, items, 1, &req), MPIDICT_ERR_ARGUMENT, expected);
        CHECK_ERROR(mpidict_map_find(map, g_size, 1, out, 1, &req), MPIDICT_ERR_ARGUMENT, expected);
        CHECK_ERROR(mpidict_map_take(map, -2, 1, out, 1, &req), MPIDICT_ERR_ARGUMENT, "target = -2");
        CHECK_ERROR(mpidict_map_insert(map, 0, 1, NULL, 2, &req), MPIDICT_ERR_ARGUMENT, "items is NULL but n_items = 2");
        CHECK_ERROR(mpidict_map_find(map, 0, 1, NULL, 3, &req), MPIDICT_ERR_ARGUMENT,
                    "out_items is NULL but max_items = 3");
        CHECK_ERROR(mpidict_map_local_find(map, 1, NULL, 3, &count), MPIDICT_ERR_ARGUMENT, "out_items is NULL");
        CHECK(req == NULL);
    }
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 10 + g_rank, items, 4, &reqs[0]));
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 20 + g_rank, items, 2, &reqs[1]));
    CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 30 + g_rank, items, 1, &req)); /* waits for the window */
    CHECK_OK(mpidict_request_wait(reqs, 2, NULL));
    CHECK_OK(mpidict_request_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 1);
    CHECK_OK(mpidict_map_flush(map));
    /* An abandoned request does not disturb the others. */
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, 10 + g_rank, out, 4, &req));
    CHECK_OK(mpidict_request_free(&req));
    CHECK(req == NULL);

    /* Use after destroy: a request started before destroy is complete after it. */
    CHECK_OK(mpidict_map_find(map, MPIDICT_TARGET_AUTO, 10 + g_rank, out, 4, &pending));
    CHECK_OK(mpidict_map_destroy(map));
    CHECK_ERROR(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 1, items, 1, &req), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK(req == NULL);
    CHECK_ERROR(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 1, items, 1, NULL), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_ERROR(mpidict_map_find(map, MPIDICT_TARGET_AUTO, 1, out, 1, &req), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_ERROR(mpidict_map_take(map, MPIDICT_TARGET_AUTO, 1, NULL, MPIDICT_ALL_ITEMS, NULL), MPIDICT_ERR_DESTROYED,
                "destroyed");
    CHECK_ERROR(mpidict_map_flush(map), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_ERROR(mpidict_map_local_size(map, &count, NULL), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_ERROR(mpidict_map_global_size(map, &count, NULL), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_ERROR(mpidict_map_local_find(map, 1, out, 1, &count), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_OK(mpidict_map_destroy(map)); /* again: nothing to do */
    CHECK_OK(mpidict_map_statistics(map, &stats));
    CHECK(stats.local_keys == 0 && stats.local_items == 0);
    CHECK(stats.op_find.requests >= 2);
    CHECK_OK(mpidict_map_free(&map));
    CHECK(map == NULL);
    memset(out, 0, sizeof out);
    CHECK_OK(mpidict_request_wait(&pending, 1, &count)); /* outlives the map handle */
    CHECK_EQ_SIZE(count, 4);
    CHECK(memcmp(out, items, sizeof items) == 0);
}

/* ---- the names before issue 40 ------------------------------------------------ */

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif
static void test_old_names(void) {
    mpidict_map* map = NULL;
    uint64_t item = 40 + (uint64_t)g_rank;
    uint64_t out[2] = {0, 0};
    mpidict_request* req = NULL;
    size_t count = 0;
    int flag = 0;

    CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, sizeof(uint64_t), 1, NULL, &map));
    CHECK_OK(mpidict_insert(map, MPIDICT_TARGET_AUTO, g_rank, &item, 1, &req));
    CHECK_OK(mpidict_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 1);
    CHECK_OK(mpidict_insert_if_absent(map, MPIDICT_TARGET_AUTO, g_rank, &item, &req));
    CHECK_OK(mpidict_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 0);
    CHECK_OK(mpidict_flush(map));
    CHECK_OK(mpidict_count(map, MPIDICT_TARGET_AUTO, g_rank, &req));
    do {
        CHECK_OK(mpidict_test(&req, 1, &flag, &count));
    } while (!flag);
    CHECK_EQ_SIZE(count, 1);
    CHECK_OK(mpidict_find(map, MPIDICT_TARGET_AUTO, g_rank, out, 2, &req));
    CHECK_OK(mpidict_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 1);
    CHECK(out[0] == item);
    CHECK_OK(mpidict_delete(map, MPIDICT_TARGET_AUTO, g_rank, NULL, MPIDICT_ALL_ITEMS, &req));
    CHECK_OK(mpidict_wait(&req, 1, &count));
    CHECK_EQ_SIZE(count, 1);
    CHECK_OK(mpidict_flush(map));
    CHECK_OK(mpidict_local_find(map, g_rank, out, 2, &count));
    CHECK_EQ_SIZE(count, 0);
    CHECK_OK(mpidict_map_free(&map));
}
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic pop
#endif

int main(int argc, char** argv) {
    const char* expected_ranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    expected_ranks = getenv("MPIDICT_TEST_RANKS");
    if (expected_ranks != NULL && atoi(expected_ranks) != g_size) {
        fprintf(stderr, "[rank %d] launched with %d ranks but the test expects %s\n", g_rank, g_size, expected_ranks);
        MPI_Abort(MPI_COMM_WORLD, 3);
    }
    CHECK(strcmp(mpidict_last_error(), "") == 0);

    test_matrix_scatter();
    test_find_delete(4, 2);  /* 8-byte items: fixed-size representation */
    test_find_delete(4, 3);  /* 12 bytes */
    test_find_delete(1, 1);  /* 1 byte: string representation */
    test_find_delete(5, 1);  /* 5 bytes: string representation */
    test_find_delete(3, 11); /* 33 bytes: string representation, beyond the short-string buffer */
    test_capacity();
    test_message_limits();
    test_errors();
    test_old_names();

    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("PASS: c_api at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
