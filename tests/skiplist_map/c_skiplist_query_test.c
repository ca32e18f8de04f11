/*
 * The skip list's C API, part 2 (issue 49, item 6), from C at 1..4 ranks:
 *
 *   range flags  random ranges with MPIDICT_SKIPLIST_DESCENDING, _AFTER_LO,
 *                _BEFORE_HI, _FROM and limits against the known key set, on
 *                int64 and byte keys; paging the whole list up and down.
 *   match        one-dimensional patterns (closed, half-open, open, exact, '*'),
 *                limits and descending; syntax errors named; BYTES lists refused.
 *   find_many    every key and some absent ones, int64 and byte keys, values
 *                truncated to value_capacity with full sizes reported.
 *   consistency  each mode at create (options.consistency) and by
 *                set_consistency, operations in each checked; bad modes refused.
 * Every rank checks its own results; a failed check aborts the job.
 */
#include <mpidict/c/skiplist.h>

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c/c_check.h"

enum { keys_per_rank = 120, most = 4096 };

struct int_visit {
    int64_t keys[most];
    size_t seen;
};

/* A small LCG (rand_r is not ISO C). */
static unsigned next_random(unsigned* state) {
    *state = *state * 1103515245u + 12345u;
    return (*state >> 8) & 0xffffffu;
}

static int collect(const void* key, size_t key_bytes, const void* value, size_t value_bytes, void* context) {
    struct int_visit* state = (struct int_visit*)context;
    int64_t k;
    int64_t v;
    CHECK(key_bytes == sizeof(int64_t) && value_bytes == sizeof(int64_t));
    CHECK(state->seen < most);
    memcpy(&k, key, sizeof k);
    memcpy(&v, value, sizeof v);
    CHECK(v == 7 * k);
    state->keys[state->seen++] = k;
    return 0;
}

/* Keys 2 * i for i < total (odd numbers absent). */
static size_t expected_keys(int64_t lo, int64_t hi, int64_t total, uint64_t limit, unsigned flags, int64_t* out) {
    size_t n = 0;
    int64_t k;
    const int descending = (flags & MPIDICT_SKIPLIST_DESCENDING) != 0;
    const int64_t top = (flags & MPIDICT_SKIPLIST_FROM) ? INT64_MAX : hi;
    if (!descending) {
        for (k = 0; k < 2 * total; k += 2)
            if (k >= lo && k <= top && !((flags & MPIDICT_SKIPLIST_AFTER_LO) && k == lo) &&
                !((flags & MPIDICT_SKIPLIST_BEFORE_HI) && !(flags & MPIDICT_SKIPLIST_FROM) && k == hi) &&
                (limit == 0 || n < limit))
                out[n++] = k;
    } else {
        for (k = 2 * total - 2; k >= 0; k -= 2)
            if (k >= lo && k <= top && !((flags & MPIDICT_SKIPLIST_AFTER_LO) && k == lo) &&
                !((flags & MPIDICT_SKIPLIST_BEFORE_HI) && !(flags & MPIDICT_SKIPLIST_FROM) && k == hi) &&
                (limit == 0 || n < limit))
                out[n++] = k;
    }
    return n;
}

static void check_same(const struct int_visit* visit, size_t count, const int64_t* expected, size_t n) {
    size_t i;
    CHECK(count == n && visit->seen == n);
    for (i = 0; i < n; ++i)
        CHECK(visit->keys[i] == expected[i]);
}

static mpidict_skiplist* int_list(int mode) {
    mpidict_skiplist_options options;
    mpidict_skiplist* list = NULL;
    const int64_t total = (int64_t)keys_per_rank * g_size;
    int64_t key;
    CHECK_OK(mpidict_skiplist_options_init(&options));
    CHECK(options.consistency == MPIDICT_SKIPLIST_SEQUENTIAL);
    options.granularity = 4;
    options.consistency = mode;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(int64_t), &options, &list));
    for (key = g_rank; key < total; key += g_size) {
        const int64_t k = 2 * key;
        const int64_t v = 7 * k;
        CHECK_OK(mpidict_skiplist_insert_i64(list, k, &v, sizeof v, NULL));
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    return list;
}

static void test_range_flags_and_match(int mode) {
    const int64_t total = (int64_t)keys_per_rank * g_size;
    mpidict_skiplist* list = int_list(mode);
    struct int_visit* visit = (struct int_visit*)calloc(1, sizeof *visit);
    int64_t* expected = (int64_t*)malloc(most * sizeof(int64_t));
    size_t count;
    size_t n;
    int trial;
    int got_mode = -1;
    unsigned seed = 12345u + (unsigned)g_rank;
    CHECK(visit != NULL && expected != NULL);
    CHECK_OK(mpidict_skiplist_consistency(list, &got_mode));
    CHECK(got_mode == mode);

    for (trial = 0; trial < 60; ++trial) {
        int64_t lo = (int64_t)(next_random(&seed) % (unsigned)(2 * total + 4)) - 2;
        int64_t hi = (int64_t)(next_random(&seed) % (unsigned)(2 * total + 4)) - 2;
        const unsigned flags = (unsigned)(next_random(&seed) % 16u);
        const uint64_t limit = (uint64_t)(next_random(&seed) % 3u == 0 ? 0 : next_random(&seed) % 9u + 1u);
        if (trial % 7 == 0)
            lo = hi = 2 * (int64_t)(next_random(&seed) % (unsigned)total); /* one key, maybe excluded */
        visit->seen = 0;
        CHECK_OK(mpidict_skiplist_range_flags_i64(list, lo, hi, limit, flags, collect, visit, &count));
        n = (lo > hi && !(flags & MPIDICT_SKIPLIST_FROM)) ? 0 : expected_keys(lo, hi, total, limit, flags, expected);
        check_same(visit, count, expected, n);
    }

    /* Paging the whole list: up with AFTER_LO, down with BEFORE_HI, 7 a page. */
    {
        int64_t resume = INT64_MIN;
        unsigned flags = MPIDICT_SKIPLIST_FROM;
        size_t at = 0;
        for (;;) {
            visit->seen = 0;
            CHECK_OK(mpidict_skiplist_range_flags_i64(list, resume, 0, 7, flags, collect, visit, &count));
            for (n = 0; n < count; ++n)
                CHECK(visit->keys[n] == 2 * (int64_t)(at + n));
            at += count;
            if (count < 7)
                break;
            resume = visit->keys[count - 1];
            flags = MPIDICT_SKIPLIST_FROM | MPIDICT_SKIPLIST_AFTER_LO;
        }
        CHECK(at == (size_t)total);
        resume = INT64_MAX;
        flags = MPIDICT_SKIPLIST_DESCENDING;
        at = 0;
        for (;;) {
            visit->seen = 0;
            CHECK_OK(mpidict_skiplist_range_flags_i64(list, INT64_MIN, resume, 7, flags, collect, visit, &count));
            for (n = 0; n < count; ++n)
                CHECK(visit->keys[n] == 2 * (total - 1 - (int64_t)(at + n)));
            at += count;
            if (count < 7)
                break;
            resume = visit->keys[count - 1];
            flags = MPIDICT_SKIPLIST_DESCENDING | MPIDICT_SKIPLIST_BEFORE_HI;
        }
        CHECK(at == (size_t)total);
    }

    /* match: the same sets as ranges. */
    visit->seen = 0;
    CHECK_OK(mpidict_skiplist_match(list, "[10,20)", 0, 0, collect, visit, &count));
    n = expected_keys(10, 20, total, 0, MPIDICT_SKIPLIST_BEFORE_HI, expected);
    check_same(visit, count, expected, n);
    visit->seen = 0;
    CHECK_OK(mpidict_skiplist_match(list, "(10,]", 3, MPIDICT_SKIPLIST_DESCENDING, collect, visit, &count));
    n = expected_keys(11, INT64_MAX, total, 3, MPIDICT_SKIPLIST_DESCENDING, expected);
    check_same(visit, count, expected, n);
    visit->seen = 0;
    CHECK_OK(mpidict_skiplist_match(list, "42", 0, 0, collect, visit, &count));
    CHECK(count == 1 && visit->keys[0] == 42);
    visit->seen = 0;
    CHECK_OK(mpidict_skiplist_match(list, "*", 5, 0, collect, visit, &count));
    n = expected_keys(INT64_MIN, INT64_MAX, total, 5, 0, expected);
    check_same(visit, count, expected, n);
    visit->seen = 0;
    CHECK_OK(mpidict_skiplist_match(list, "[1,1]", 0, 0, collect, visit, &count));
    CHECK(count == 0 && visit->seen == 0);
    CHECK_ERROR(mpidict_skiplist_match(list, "[5,", 0, 0, collect, visit, &count), MPIDICT_ERR_ARGUMENT, "position");
    CHECK_ERROR(mpidict_skiplist_match(list, "1.2", 0, 0, collect, visit, &count), MPIDICT_ERR_ARGUMENT,
                "dimension");
    CHECK_ERROR(mpidict_skiplist_match(list, "[5,5)", 0, 0, collect, visit, &count), MPIDICT_ERR_ARGUMENT, "empty");
    CHECK_ERROR(mpidict_skiplist_match(list, NULL, 0, 0, collect, visit, &count), MPIDICT_ERR_ARGUMENT,
                "pattern is NULL");
    CHECK_ERROR(mpidict_skiplist_match(list, "*", 0, MPIDICT_SKIPLIST_AFTER_LO, collect, visit, &count),
                MPIDICT_ERR_ARGUMENT, "not flags of this function");
    CHECK_ERROR(mpidict_skiplist_range_flags_i64(list, 0, 1, 0, 0x40u, collect, visit, &count), MPIDICT_ERR_ARGUMENT,
                "flags 0x40");
    CHECK_ERROR(mpidict_skiplist_range_flags_i64(list, 0, 1, 0, 0, NULL, visit, &count), MPIDICT_ERR_ARGUMENT,
                "visit is NULL");

    /* find_many: present keys, absent ones, truncation. */
    {
        enum { probes = 50 };
        int64_t keys[probes];
        int64_t values[probes];
        size_t sizes[probes];
        int found[probes];
        char small[probes * 3];
        int i;
        for (i = 0; i < probes; ++i)
            keys[i] = (int64_t)(next_random(&seed) % (unsigned)(2 * total + 10)) - 5;
        CHECK_OK(mpidict_skiplist_find_many_i64(list, keys, probes, values, sizeof(int64_t), sizes, found));
        for (i = 0; i < probes; ++i) {
            const int present = keys[i] >= 0 && keys[i] < 2 * total && keys[i] % 2 == 0;
            CHECK(found[i] == present);
            CHECK(sizes[i] == (present ? sizeof(int64_t) : 0));
            CHECK(!present || values[i] == 7 * keys[i]);
        }
        CHECK_OK(mpidict_skiplist_find_many_i64(list, keys, probes, small, 3, NULL, found));
        for (i = 0; i < probes; ++i)
            if (found[i]) {
                const int64_t v = 7 * keys[i];
                CHECK(memcmp(small + 3 * i, &v, 3) == 0);
            }
        CHECK_OK(mpidict_skiplist_find_many_i64(list, keys, probes, NULL, 0, NULL, found));
        CHECK_OK(mpidict_skiplist_find_many_i64(list, NULL, 0, NULL, 0, NULL, NULL));
        CHECK_ERROR(mpidict_skiplist_find_many_i64(list, keys, probes, NULL, 8, NULL, found), MPIDICT_ERR_ARGUMENT,
                    "out_values is NULL");
        CHECK_ERROR(mpidict_skiplist_find_many_i64(list, keys, probes, values, 8, NULL, NULL), MPIDICT_ERR_ARGUMENT,
                    "found is NULL");
        CHECK_ERROR(mpidict_skiplist_find_many_i64(list, NULL, 3, values, 8, NULL, found), MPIDICT_ERR_ARGUMENT,
                    "keys is NULL");
    }

    /* Each mode by set_consistency, then an operation in it. */
    {
        int next;
        for (next = MPIDICT_SKIPLIST_TOTAL_ORDER; next <= MPIDICT_SKIPLIST_NONE; ++next) {
            int64_t v = 7 * 4;
            int flag = 0;
            CHECK_OK(mpidict_skiplist_set_consistency(list, next));
            CHECK_OK(mpidict_skiplist_consistency(list, &got_mode));
            CHECK(got_mode == next);
            CHECK_OK(mpidict_skiplist_find_i64(list, 4, &v, sizeof v, NULL, &flag));
            CHECK(flag == 1 && v == 28);
            visit->seen = 0;
            CHECK_OK(mpidict_skiplist_range_flags_i64(list, 0, 40, 4, MPIDICT_SKIPLIST_DESCENDING, collect, visit,
                                                      &count));
            CHECK(count == 4 && visit->keys[0] == 40 && visit->keys[3] == 34);
        }
        CHECK_ERROR(mpidict_skiplist_set_consistency(list, 3), MPIDICT_ERR_ARGUMENT, "none of");
        CHECK_ERROR(mpidict_skiplist_consistency(list, NULL), MPIDICT_ERR_ARGUMENT, "mode is NULL");
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_free(&list));
    CHECK_ERROR(mpidict_skiplist_set_consistency(NULL, 0), MPIDICT_ERR_ARGUMENT, "list is NULL");
    free(expected);
    free(visit);
}

/* ---- byte keys ----------------------------------------------------------------- */

struct bytes_visit {
    char keys[64][8];
    size_t key_bytes[64];
    size_t seen;
};

static int collect_bytes(const void* key, size_t key_bytes, const void* value, size_t value_bytes, void* context) {
    struct bytes_visit* state = (struct bytes_visit*)context;
    (void)value;
    CHECK(state->seen < 64 && key_bytes <= 8 && value_bytes == 1);
    memcpy(state->keys[state->seen], key, key_bytes);
    state->key_bytes[state->seen++] = key_bytes;
    return 0;
}

/* In unsigned lexicographic order (a prefix first). */
static const char* const byte_keys[] = {"", "\0", "a", "ab", "ab\0", "abc", "abd", "b", "\xff"};
static const size_t byte_key_sizes[] = {0, 1, 1, 2, 3, 3, 3, 1, 1};
enum { byte_key_count = 9 };

static void check_bytes_visit(const struct bytes_visit* visit, size_t count, size_t first, size_t n, int down) {
    size_t i;
    CHECK(count == n && visit->seen == n);
    for (i = 0; i < n; ++i) {
        const size_t at = down ? first - i : first + i;
        CHECK(visit->key_bytes[i] == byte_key_sizes[at]);
        CHECK(memcmp(visit->keys[i], byte_keys[at], byte_key_sizes[at]) == 0);
    }
}

static void test_byte_keys(void) {
    mpidict_skiplist* list = NULL;
    struct bytes_visit visit;
    size_t count;
    size_t i;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_BYTES, 1, NULL, &list));
    for (i = (size_t)g_rank; i < byte_key_count; i += (size_t)g_size) {
        const char v = (char)i;
        CHECK_OK(mpidict_skiplist_insert_bytes(list, byte_keys[i], byte_key_sizes[i], &v, 1, NULL));
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    visit.seen = 0; /* ("a", "abd"): after_lo and before_hi */
    CHECK_OK(mpidict_skiplist_range_flags_bytes(list, "a", 1, "abd", 3, 0,
                                                MPIDICT_SKIPLIST_AFTER_LO | MPIDICT_SKIPLIST_BEFORE_HI, collect_bytes,
                                                &visit, &count));
    check_bytes_visit(&visit, count, 3, 3, 0); /* "ab", "ab" NUL, "abc" */
    visit.seen = 0; /* from "ab\0" on, descending, 3: the largest three */
    CHECK_OK(mpidict_skiplist_range_flags_bytes(list, "ab\0", 3, NULL, 0, 3,
                                                MPIDICT_SKIPLIST_FROM | MPIDICT_SKIPLIST_DESCENDING, collect_bytes,
                                                &visit, &count));
    check_bytes_visit(&visit, count, 8, 3, 1);
    visit.seen = 0; /* from "" with after_lo: all but the empty key */
    CHECK_OK(mpidict_skiplist_range_flags_bytes(list, NULL, 0, NULL, 0, 0,
                                                MPIDICT_SKIPLIST_FROM | MPIDICT_SKIPLIST_AFTER_LO, collect_bytes,
                                                &visit, &count));
    check_bytes_visit(&visit, count, 1, byte_key_count - 1, 0);
    CHECK_ERROR(mpidict_skiplist_range_flags_bytes(list, NULL, 2, "b", 1, 0, 0, collect_bytes, &visit, &count),
                MPIDICT_ERR_ARGUMENT, "lo is NULL");
    CHECK_ERROR(mpidict_skiplist_match(list, "*", 0, 0, collect_bytes, &visit, &count), MPIDICT_ERR_ARGUMENT,
                "pattern queries need numeric keys");
    CHECK_ERROR(mpidict_skiplist_range_flags_i64(list, 0, 1, 0, 0, collect_bytes, &visit, &count),
                MPIDICT_ERR_ARGUMENT, "MPIDICT_SKIPLIST_INT64");
    {
        /* find_many over every key, packed, and two absent ones. */
        char packed[64];
        size_t sizes[byte_key_count + 2];
        size_t value_sizes[byte_key_count + 2];
        char values[byte_key_count + 2];
        int found[byte_key_count + 2];
        size_t at = 0;
        for (i = 0; i < byte_key_count; ++i) {
            memcpy(packed + at, byte_keys[i], byte_key_sizes[i]);
            at += byte_key_sizes[i];
            sizes[i] = byte_key_sizes[i];
        }
        memcpy(packed + at, "zz", 2);
        sizes[byte_key_count] = 2;
        memcpy(packed + at + 2, "ab\0\0", 4);
        sizes[byte_key_count + 1] = 4;
        CHECK_OK(mpidict_skiplist_find_many_bytes(list, packed, sizes, byte_key_count + 2, values, 1, value_sizes,
                                                  found));
        for (i = 0; i < byte_key_count; ++i)
            CHECK(found[i] == 1 && value_sizes[i] == 1 && values[i] == (char)i);
        CHECK(found[byte_key_count] == 0 && found[byte_key_count + 1] == 0 && value_sizes[byte_key_count] == 0);
        CHECK_ERROR(mpidict_skiplist_find_many_bytes(list, packed, NULL, 2, values, 1, NULL, found),
                    MPIDICT_ERR_ARGUMENT, "key_bytes is NULL");
        CHECK_ERROR(mpidict_skiplist_find_many_bytes(list, NULL, sizes, 3, values, 1, NULL, found),
                    MPIDICT_ERR_ARGUMENT, "keys is NULL");
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_free(&list));
}

static void test_bad_mode_at_create(void) {
    mpidict_skiplist_options options;
    mpidict_skiplist* list = NULL;
    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.consistency = g_rank == 0 ? 7 : MPIDICT_SKIPLIST_NONE; /* one rank's bad mode: every rank refuses */
    if (g_rank == 0)
        CHECK_ERROR(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, 0, &options, &list),
                    MPIDICT_ERR_ARGUMENT, "options->consistency 7");
    else
        CHECK_ERROR(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, 0, &options, &list),
                    MPIDICT_ERR_ARGUMENT, "another rank");
    CHECK(list == NULL);
}

int main(int argc, char** argv) {
    const char* expected_ranks;
    int mode;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    expected_ranks = getenv("MPIDICT_TEST_RANKS");
    if (expected_ranks != NULL && atoi(expected_ranks) != g_size) {
        fprintf(stderr, "expected %s ranks, got %d\n", expected_ranks, g_size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    test_bad_mode_at_create();
    for (mode = MPIDICT_SKIPLIST_TOTAL_ORDER; mode <= MPIDICT_SKIPLIST_NONE; ++mode)
        test_range_flags_and_match(mode);
    test_byte_keys();
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("c_skiplist_query: all checks passed at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
