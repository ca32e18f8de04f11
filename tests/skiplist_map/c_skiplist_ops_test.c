/*
 * The skip list's C API, part 3 (issue 49, items 5 and 6), from C at 1..4 ranks,
 * in each consistency mode:
 *
 *   count / erase_range  each rank's own region counted with each flag, a slice
 *                        erased (then absent, a second erase_range 0), the
 *                        whole list counted by every rank after a flush; an
 *                        empty interval, bad flags, NULL outputs, the wrong kind.
 *   range_many           five ranges of the region at once (an empty one, lo > hi,
 *                        one stopped by its visitor), counts and order; limit with
 *                        descending and after_lo; BYTES form; bad flags, NULLs.
 *   expiry (ms)          insert_ttl (PTTL within the TTL), pttl -2 / -1,
 *                        persist, expire, a ttl <= 0 storing nothing and
 *                        keeping the old value, insert_many_ttl (fresh and
 *                        past), async_insert_ttl, and 1 ms deadlines gone after
 *                        a short wait (find, pttl, count); BYTES forms.
 * Every rank works on its own keys (rank * 1000 + i) and checks its results; a
 * failed check aborts the job.
 */
#include <mpidict/c/skiplist.h>

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c/c_check.h"

enum { region = 50 };
static const int64_t hour_ms = 3600000;

/* Waits `seconds` on the wall clock (ISO C has no sleep). */
static void wait_seconds(double seconds) {
    const double until = MPI_Wtime() + seconds;
    while (MPI_Wtime() < until) {
    }
}

struct many_visit {
    size_t last_range;
    int64_t last_key;
    size_t entries;
};

/* Descending visits: range 0 of [base, base + 4] after lo, limit 2, gives base + 4, base + 3. */
static int check_many_desc(size_t range, const void* key, size_t key_bytes, const void* value, size_t value_bytes,
                           void* context) {
    struct many_visit* state = (struct many_visit*)context;
    int64_t k = 0;
    (void)value;
    (void)value_bytes;
    CHECK(key_bytes == sizeof k);
    memcpy(&k, key, sizeof k);
    CHECK(range == 0);
    CHECK(k == (int64_t)g_rank * 1000 + 4 - (int64_t)state->entries);
    ++state->entries;
    return 0;
}

static void check_pttl_within(int64_t ms, int64_t ttl) {
    CHECK(ms > 0);
    CHECK(ms <= ttl);
    CHECK(ms > ttl - 600000); /* ten minutes of slack for a loaded machine */
}

static int check_many(size_t range, const void* key, size_t key_bytes, const void* value, size_t value_bytes,
                      void* context) {
    struct many_visit* state = (struct many_visit*)context;
    int64_t k = 0, v = 0;
    CHECK(key_bytes == sizeof k && value_bytes == sizeof v);
    memcpy(&k, key, sizeof k);
    memcpy(&v, value, sizeof v);
    CHECK(range >= state->last_range);
    if (range == state->last_range && state->entries > 0)
        CHECK(k > state->last_key);
    CHECK(v == k - (int64_t)g_rank * 1000);
    state->last_range = range;
    state->last_key = k;
    ++state->entries;
    return range == 3 && k >= (int64_t)g_rank * 1000 + 42; /* stops range 3 after key 42 */
}

/* range_many over this rank's region: ranges in index order, counts per range, one stopped early. */
static void ranges_at_once(mpidict_skiplist* list) {
    const int64_t base = (int64_t)g_rank * 1000;
    const int64_t lo[5] = {base, base + 10, base + 30, base + 40, base + 9};
    const int64_t hi[5] = {base + 4, base + 10, base + 29, base + 49, base + 8};
    size_t counts[5] = {9, 9, 9, 9, 9};
    struct many_visit state = {0, 0, 0};
    CHECK_OK(mpidict_skiplist_range_many_i64(list, lo, hi, 5, 0, 0, 2, check_many, &state, counts));
    CHECK(counts[0] == 5 && counts[1] == 1 && counts[2] == 0 && counts[3] == 3 && counts[4] == 0);
    CHECK(state.entries == 9);
    memset(&state, 0, sizeof state);
    CHECK_OK(mpidict_skiplist_range_many_i64(list, lo, hi, 2, 2, MPIDICT_SKIPLIST_DESCENDING | MPIDICT_SKIPLIST_AFTER_LO,
                                             0, check_many_desc, &state, counts));
    CHECK(counts[0] == 2 && counts[1] == 0);
    CHECK_ERROR(mpidict_skiplist_range_many_i64(list, lo, hi, 2, 0, MPIDICT_SKIPLIST_FROM, 0, check_many, &state, NULL),
                MPIDICT_ERR_ARGUMENT, "not flags of this function");
    CHECK_ERROR(mpidict_skiplist_range_many_i64(list, NULL, hi, 2, 0, 0, 0, check_many, &state, NULL),
                MPIDICT_ERR_ARGUMENT, "lo is NULL");
    CHECK_ERROR(mpidict_skiplist_range_many_i64(list, lo, hi, 2, 0, 0, 0, NULL, &state, NULL), MPIDICT_ERR_ARGUMENT,
                "visit is NULL");
}

static void count_and_erase(mpidict_skiplist* list) {
    const int64_t base = (int64_t)g_rank * 1000;
    int64_t keys[region];
    int64_t values[region];
    uint64_t stored = 0, counted = 0, erased = 0;
    size_t total = 0;
    int found = 0, i;
    for (i = 0; i < region; ++i) {
        keys[i] = base + i;
        values[i] = i;
    }
    CHECK_OK(mpidict_skiplist_insert_many_i64(list, keys, region, values, NULL, &stored, NULL, NULL));
    CHECK(stored == region);
    ranges_at_once(list);
    CHECK_OK(mpidict_skiplist_count_i64(list, base, base + region - 1, 0, &counted));
    CHECK_EQ_SIZE(counted, region);
    CHECK_OK(mpidict_skiplist_count_i64(list, base, base + region - 1, MPIDICT_SKIPLIST_AFTER_LO, &counted));
    CHECK_EQ_SIZE(counted, region - 1);
    CHECK_OK(mpidict_skiplist_count_i64(list, base, base + region - 1,
                                        MPIDICT_SKIPLIST_AFTER_LO | MPIDICT_SKIPLIST_BEFORE_HI, &counted));
    CHECK_EQ_SIZE(counted, region - 2);
    CHECK_OK(mpidict_skiplist_count_i64(list, base + 5, base + 4, 0, &counted)); /* empty interval */
    CHECK_EQ_SIZE(counted, 0);

    CHECK_OK(mpidict_skiplist_flush(list)); /* every rank's region is in */
    CHECK_OK(mpidict_skiplist_count_i64(list, INT64_MIN, INT64_MAX, 0, &counted));
    CHECK_EQ_SIZE(counted, (size_t)region * (size_t)g_size);
    CHECK_OK(mpidict_skiplist_flush(list)); /* no rank erases before every rank counted */

    CHECK_OK(mpidict_skiplist_erase_range_i64(list, base + 10, base + 20, MPIDICT_SKIPLIST_BEFORE_HI, &erased));
    CHECK_EQ_SIZE(erased, 10);
    CHECK_OK(mpidict_skiplist_find_i64(list, base + 15, NULL, 0, NULL, &found));
    CHECK(found == 0);
    CHECK_OK(mpidict_skiplist_find_i64(list, base + 20, NULL, 0, NULL, &found));
    CHECK(found == 1);
    CHECK_OK(mpidict_skiplist_erase_range_i64(list, base + 10, base + 19, 0, &erased));
    CHECK_EQ_SIZE(erased, 0);
    CHECK_OK(mpidict_skiplist_count_i64(list, base, base + region - 1, 0, &counted));
    CHECK_EQ_SIZE(counted, region - 10);

    CHECK_ERROR(mpidict_skiplist_count_i64(list, 0, 1, MPIDICT_SKIPLIST_DESCENDING, &counted), MPIDICT_ERR_ARGUMENT,
                "not flags of this function");
    CHECK_ERROR(mpidict_skiplist_erase_range_i64(list, 0, 1, MPIDICT_SKIPLIST_FROM, &erased), MPIDICT_ERR_ARGUMENT,
                "not flags of this function");
    CHECK_ERROR(mpidict_skiplist_count_i64(list, 0, 1, 0, NULL), MPIDICT_ERR_ARGUMENT, "count is NULL");
    CHECK_ERROR(mpidict_skiplist_count_bytes(list, "a", 1, "b", 1, 0, &counted), MPIDICT_ERR_ARGUMENT,
                "MPIDICT_SKIPLIST_BYTES lists");

    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_global_size(list, &total));
    CHECK_EQ_SIZE(total, (size_t)(region - 10) * (size_t)g_size);
    /* clean up for the expiry part: the whole region */
    CHECK_OK(mpidict_skiplist_erase_range_i64(list, base, base + 999, 0, &erased));
    CHECK_EQ_SIZE(erased, region - 10);
    CHECK_OK(mpidict_skiplist_flush(list));
}

static void expiry(mpidict_skiplist* list) {
    const int64_t base = (int64_t)g_rank * 1000 + 100;
    int64_t value = 7, ms = 0, out = 0, keys[20], values[20];
    int stored = -1, replaced = -1, existed = -1, had = -1, found = -1, i;
    uint64_t many = 0, refused = 0, counted = 0;
    size_t value_bytes = 0;

    /* insert with a TTL; PTTL within it; absent and no-deadline answers */
    CHECK_OK(mpidict_skiplist_insert_ttl_i64(list, base, &value, sizeof value, hour_ms, &stored, &replaced));
    CHECK(stored == 1 && replaced == 0);
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base, &ms));
    check_pttl_within(ms, hour_ms);
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base + 50, &ms));
    CHECK(ms == MPIDICT_SKIPLIST_TTL_NO_KEY);
    CHECK_OK(mpidict_skiplist_insert_i64(list, base + 1, &value, sizeof value, NULL));
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base + 1, &ms));
    CHECK(ms == MPIDICT_SKIPLIST_TTL_NO_EXPIRY);

    /* persist, expire */
    CHECK_OK(mpidict_skiplist_persist_i64(list, base, &had));
    CHECK(had == 1);
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base, &ms));
    CHECK(ms == MPIDICT_SKIPLIST_TTL_NO_EXPIRY);
    CHECK_OK(mpidict_skiplist_persist_i64(list, base, &had));
    CHECK(had == 0);
    CHECK_OK(mpidict_skiplist_expire_i64(list, base + 1, 2 * hour_ms, &existed));
    CHECK(existed == 1);
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base + 1, &ms));
    check_pttl_within(ms, 2 * hour_ms);
    CHECK_OK(mpidict_skiplist_expire_i64(list, base + 50, hour_ms, &existed));
    CHECK(existed == 0);

    /* a ttl <= 0 stores nothing and keeps the old value (and its deadline) */
    value = 8;
    CHECK_OK(mpidict_skiplist_insert_ttl_i64(list, base + 1, &value, sizeof value, 0, &stored, &replaced));
    CHECK(stored == 0 && replaced == 0);
    CHECK_OK(mpidict_skiplist_insert_ttl_i64(list, base + 1, &value, sizeof value, -5, &stored, NULL));
    CHECK(stored == 0);
    CHECK_OK(mpidict_skiplist_find_i64(list, base + 1, &out, sizeof out, &value_bytes, &found));
    CHECK(found == 1 && out == 7 && value_bytes == sizeof out);
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base + 1, &ms));
    check_pttl_within(ms, 2 * hour_ms);
    CHECK_OK(mpidict_skiplist_insert_ttl_i64(list, base + 2, &value, sizeof value, -1, &stored, NULL));
    CHECK(stored == 0);
    CHECK_OK(mpidict_skiplist_find_i64(list, base + 2, NULL, 0, NULL, &found));
    CHECK(found == 0);

    /* insert_many with one TTL */
    for (i = 0; i < 20; ++i) {
        keys[i] = base + 10 + i;
        values[i] = i;
    }
    CHECK_OK(mpidict_skiplist_insert_many_ttl_i64(list, keys, 20, values, NULL, hour_ms, &many, &refused, NULL));
    CHECK(many == 20 && refused == 0);
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base + 25, &ms));
    check_pttl_within(ms, hour_ms);
    CHECK_OK(mpidict_skiplist_insert_many_ttl_i64(list, keys, 20, values, NULL, 0, &many, &refused, NULL));
    CHECK(many == 0 && refused == 0);
    CHECK_OK(mpidict_skiplist_insert_many_ttl_i64(list, keys, 10, values, NULL, 1, &many, NULL, NULL)); /* 1 ms */
    CHECK(many == 10);

    /* async forms */
    CHECK_OK(mpidict_skiplist_async_insert_ttl_i64(list, base + 3, &value, sizeof value, hour_ms));
    CHECK_OK(mpidict_skiplist_async_insert_ttl_i64(list, base + 4, &value, sizeof value, 0));
    CHECK_OK(mpidict_skiplist_async_insert_ttl_i64(list, base + 5, &value, sizeof value, 1));
    CHECK_OK(mpidict_skiplist_insert_ttl_i64(list, base + 6, &value, sizeof value, 1, &stored, NULL));
    CHECK(stored == 1);
    CHECK_OK(mpidict_skiplist_expire_i64(list, base, 1, &existed));
    CHECK(existed == 1);
    CHECK_OK(mpidict_skiplist_flush(list));
    wait_seconds(0.05);

    /* the 1 ms deadlines have passed: gone for every operation */
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base + 3, &ms));
    check_pttl_within(ms, hour_ms);
    CHECK_OK(mpidict_skiplist_find_i64(list, base + 4, NULL, 0, NULL, &found));
    CHECK(found == 0);
    CHECK_OK(mpidict_skiplist_find_i64(list, base + 5, NULL, 0, NULL, &found));
    CHECK(found == 0);
    CHECK_OK(mpidict_skiplist_pttl_i64(list, base + 6, &ms));
    CHECK(ms == MPIDICT_SKIPLIST_TTL_NO_KEY);
    CHECK_OK(mpidict_skiplist_find_i64(list, base, NULL, 0, NULL, &found));
    CHECK(found == 0);
    CHECK_OK(mpidict_skiplist_count_i64(list, base + 10, base + 29, 0, &counted));
    CHECK_EQ_SIZE(counted, 10); /* keys 0..9 of the batch took the 1 ms TTL */
    CHECK_OK(mpidict_skiplist_expire_i64(list, base + 3, -1, &existed)); /* a passed deadline removes it */
    CHECK(existed == 1);
    CHECK_OK(mpidict_skiplist_find_i64(list, base + 3, NULL, 0, NULL, &found));
    CHECK(found == 0);

    CHECK_ERROR(mpidict_skiplist_pttl_i64(list, base, NULL), MPIDICT_ERR_ARGUMENT, "ms is NULL");
    CHECK_ERROR(mpidict_skiplist_insert_ttl_i64(list, base, &value, 3, hour_ms, NULL, NULL), MPIDICT_ERR_ARGUMENT,
                "value_size");
    CHECK_ERROR(mpidict_skiplist_pttl_bytes(list, "k", 1, &ms), MPIDICT_ERR_ARGUMENT, "MPIDICT_SKIPLIST_BYTES lists");
    CHECK_OK(mpidict_skiplist_flush(list));
}

static int count_bytes_entries(size_t range, const void* key, size_t key_bytes, const void* value,
                               size_t value_bytes, void* context) {
    (void)range, (void)key, (void)key_bytes, (void)value, (void)value_bytes, (void)context;
    return 0;
}

static void bytes_forms(int mode) {
    mpidict_skiplist* list = NULL;
    mpidict_skiplist_options options;
    char key[16], keys[40];
    size_t key_bytes[4] = {10, 10, 10, 10};
    int stored = -1, existed = -1, had = -1, found = -1;
    int64_t ms = 0;
    uint64_t counted = 0, erased = 0, many = 0;
    int i;
    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.granularity = 4;
    options.consistency = mode;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_BYTES, 0, &options, &list));
    for (i = 0; i < 4; ++i)
        sprintf(keys + 10 * i, "r%02dk%05d", g_rank, i);
    CHECK_ERROR(mpidict_skiplist_insert_many_ttl_bytes(list, keys, key_bytes, 4, "abcd", NULL, hour_ms, &many, NULL,
                                                       NULL),
                MPIDICT_ERR_ARGUMENT, "value_bytes is NULL");
    {
        size_t value_bytes[4] = {1, 1, 1, 1};
        CHECK_OK(mpidict_skiplist_insert_many_ttl_bytes(list, keys, key_bytes, 4, "abcd", value_bytes, hour_ms, &many,
                                                        NULL, NULL));
        CHECK(many == 4);
    }
    sprintf(key, "r%02dk%05d", g_rank, 2);
    CHECK_OK(mpidict_skiplist_pttl_bytes(list, key, 10, &ms));
    check_pttl_within(ms, hour_ms);
    CHECK_OK(mpidict_skiplist_persist_bytes(list, key, 10, &had));
    CHECK(had == 1);
    CHECK_OK(mpidict_skiplist_pttl_bytes(list, key, 10, &ms));
    CHECK(ms == MPIDICT_SKIPLIST_TTL_NO_EXPIRY);
    CHECK_OK(mpidict_skiplist_expire_bytes(list, key, 10, hour_ms, &existed));
    CHECK(existed == 1);
    sprintf(key, "r%02dk%05d", g_rank, 9);
    CHECK_OK(mpidict_skiplist_insert_ttl_bytes(list, key, 10, "z", 1, hour_ms, &stored, NULL));
    CHECK(stored == 1);
    CHECK_OK(mpidict_skiplist_insert_ttl_bytes(list, key, 10, "y", 1, 0, &stored, NULL));
    CHECK(stored == 0);
    CHECK_OK(mpidict_skiplist_async_insert_ttl_bytes(list, "", 0, "e", 1, hour_ms));
    sprintf(key, "r%02d", g_rank);
    {
        char high[8];
        sprintf(high, "r%02d~", g_rank);
        CHECK_OK(mpidict_skiplist_count_bytes(list, key, 3, high, 4, 0, &counted));
        CHECK_EQ_SIZE(counted, 5);
        CHECK_OK(mpidict_skiplist_erase_range_bytes(list, keys, 10, keys + 20, 10, MPIDICT_SKIPLIST_AFTER_LO, &erased));
        CHECK_EQ_SIZE(erased, 2);
        CHECK_OK(mpidict_skiplist_count_bytes(list, key, 3, high, 4, 0, &counted));
        CHECK_EQ_SIZE(counted, 3);
        {
            size_t lo_bytes[2] = {3, 10}, hi_bytes[2] = {4, 10}, counts[2] = {0, 0};
            char lows[16], highs[16];
            memcpy(lows, key, 3);
            memcpy(lows + 3, keys + 30, 10);
            memcpy(highs, high, 4);
            memcpy(highs + 4, keys + 30, 10);
            CHECK_OK(mpidict_skiplist_range_many_bytes(list, lows, lo_bytes, highs, hi_bytes, 2, 0, 0, 0,
                                                       count_bytes_entries, NULL, counts));
            CHECK(counts[0] == 3 && counts[1] == 1);
        }
    }
    CHECK_OK(mpidict_skiplist_find_bytes(list, keys + 10, 10, NULL, 0, NULL, &found));
    CHECK(found == 0);
    CHECK_ERROR(mpidict_skiplist_count_bytes(list, NULL, 3, "b", 1, 0, &counted), MPIDICT_ERR_ARGUMENT, "lo is NULL");
    CHECK_ERROR(mpidict_skiplist_count_i64(list, 0, 1, 0, &counted), MPIDICT_ERR_ARGUMENT,
                "MPIDICT_SKIPLIST_INT64 lists");
    CHECK_OK(mpidict_skiplist_flush(list));
    {
        size_t total = 0;
        CHECK_OK(mpidict_skiplist_global_size(list, &total));
        CHECK_EQ_SIZE(total, 3 * (size_t)g_size + 1); /* 3 per rank and the empty key (one key for all ranks) */
    }
    CHECK_OK(mpidict_skiplist_free(&list));
}

int main(int argc, char** argv) {
    int mode;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    for (mode = MPIDICT_SKIPLIST_TOTAL_ORDER; mode <= MPIDICT_SKIPLIST_NONE; ++mode) {
        mpidict_skiplist* list = NULL;
        mpidict_skiplist_options options;
        CHECK_OK(mpidict_skiplist_options_init(&options));
        options.granularity = 4;
        options.consistency = mode;
        CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(int64_t), &options, &list));
        count_and_erase(list);
        expiry(list);
        CHECK_OK(mpidict_skiplist_free(&list));
        bytes_forms(mode);
    }
    if (g_rank == 0)
        printf("c_skiplist_ops: count, erase_range and expiry checked in every mode at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
