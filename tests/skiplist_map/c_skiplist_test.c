/*
 * The skip list's C API (include/mpidict/c/skiplist.h), exercised from C at
 * 1..4 ranks.  Every rank checks its own results; a failed check prints what it
 * expected and aborts the job with MPI_Abort (no rank is left in a collective).
 *
 *   int64 keys   every rank inserts its share (a small G, so nodes split
 *                often); every rank finds every key, replaces, insert_if_absent
 *                on duplicates, erases a share (sync and async), and checks
 *                ranges ascending, descending, with limits and a visitor that
 *                stops early, against the known key set.
 *   byte keys    keys with embedded zeros and prefixes of one another; prefix
 *                queries and byte ranges in unsigned lexicographic order.
 *   list full    a list with few node slots: inserts until MPIDICT_ERR_FULL,
 *                then every key stored before is still there.
 *   errors       wrong value size, wrong key kind, NULL arguments, bad key
 *                kind at create, use after destroy.
 *   insert_many  batch inserts (int64 and byte keys, fixed and packed
 *                variable-size values, a repeated key's last value wins,
 *                bad input refused naming the pair, list_full counted with
 *                the refused indexes, nothing stored lost).
 */
#include <mpidict/c/skiplist.h>

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c/c_check.h"

enum { keys_per_rank = 150 };

/* ---- range visitors ---------------------------------------------------------- */

struct int_visit {
    int64_t keys[4096];
    int64_t values[4096];
    size_t seen;
    size_t stop_after; /* 0: never stop */
};

static int collect_int(const void* key, size_t key_bytes, const void* value, size_t value_bytes, void* context) {
    struct int_visit* state = (struct int_visit*)context;
    CHECK(key_bytes == sizeof(int64_t));
    CHECK(value_bytes == sizeof(int64_t));
    CHECK(state->seen < 4096);
    memcpy(&state->keys[state->seen], key, sizeof(int64_t));
    memcpy(&state->values[state->seen], value, sizeof(int64_t));
    ++state->seen;
    return state->stop_after != 0 && state->seen == state->stop_after;
}

static int erased_key(int64_t key) { return key % 5 == 0; }

static void test_int_keys(void) {
    mpidict_skiplist_options options;
    mpidict_skiplist* list = NULL;
    const int64_t total = (int64_t)keys_per_rank * g_size;
    int64_t key;
    int64_t value;
    int flag;
    size_t bytes;
    size_t count;
    size_t entries;
    struct int_visit* visit = (struct int_visit*)calloc(1, sizeof *visit);
    CHECK(visit != NULL);

    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.granularity = 4; /* many nodes, many splits */
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(int64_t), &options, &list));

    /* Each rank inserts keys rank, rank + p, ... (interleaved: every node is
     * written by every rank); values are 3 * key. */
    for (key = g_rank; key < total; key += g_size) {
        value = 3 * key;
        if (key % 2 == 0) {
            CHECK_OK(mpidict_skiplist_insert_i64(list, key, &value, sizeof value, &flag));
            CHECK(flag == 0);
        } else {
            CHECK_OK(mpidict_skiplist_async_insert_i64(list, key, &value, sizeof value));
        }
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_global_size(list, &entries));
    CHECK(entries == (size_t)total);

    for (key = 0; key < total; ++key) {
        value = -1;
        CHECK_OK(mpidict_skiplist_find_i64(list, key, &value, sizeof value, &bytes, &flag));
        CHECK(flag == 1 && bytes == sizeof value && value == 3 * key);
    }
    CHECK_OK(mpidict_skiplist_find_i64(list, total + 7, &value, sizeof value, &bytes, &flag));
    CHECK(flag == 0 && bytes == 0);
    /* A too small buffer: truncated copy, full size reported. */
    {
        char small[3] = {0, 0, 0};
        int64_t expected = 3 * (total - 1);
        CHECK_OK(mpidict_skiplist_find_i64(list, total - 1, small, sizeof small, &bytes, &flag));
        CHECK(flag == 1 && bytes == sizeof(int64_t) && memcmp(small, &expected, sizeof small) == 0);
    }
    CHECK_OK(mpidict_skiplist_flush(list));

    /* Duplicates: insert_if_absent refuses, insert replaces (rank 0 only, then restore). */
    if (g_rank == 0) {
        value = 99;
        CHECK_OK(mpidict_skiplist_insert_if_absent_i64(list, 1, &value, sizeof value, &flag));
        CHECK(flag == 0);
        CHECK_OK(mpidict_skiplist_insert_i64(list, 1, &value, sizeof value, &flag));
        CHECK(flag == 1);
        CHECK_OK(mpidict_skiplist_find_i64(list, 1, &value, sizeof value, NULL, &flag));
        CHECK(flag == 1 && value == 99);
        value = 3;
        CHECK_OK(mpidict_skiplist_insert_i64(list, 1, &value, sizeof value, &flag));
        CHECK(flag == 1);
        value = 3 * (total + 1);
        CHECK_OK(mpidict_skiplist_insert_if_absent_i64(list, total + 1, &value, sizeof value, &flag));
        CHECK(flag == 1);
        CHECK_OK(mpidict_skiplist_erase_i64(list, total + 1, &flag));
        CHECK(flag == 1);
        CHECK_OK(mpidict_skiplist_erase_i64(list, total + 1, &flag));
        CHECK(flag == 0);
    }
    CHECK_OK(mpidict_skiplist_flush(list));

    /* Erase every key divisible by 5, each by the rank that inserted it. */
    for (key = g_rank; key < total; key += g_size) {
        if (!erased_key(key))
            continue;
        if (key % 2 == 0) {
            CHECK_OK(mpidict_skiplist_erase_i64(list, key, &flag));
            CHECK(flag == 1);
        } else {
            CHECK_OK(mpidict_skiplist_async_erase_i64(list, key));
        }
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_global_size(list, &entries));
    CHECK(entries == (size_t)(total - (total + 4) / 5));

    /* Ranges against the known set, from every rank. */
    {
        const int64_t lo = total / 4 - 3;
        const int64_t hi = total / 2 + 2;
        size_t expected = 0;
        size_t index;
        int64_t previous;
        for (key = lo; key <= hi; ++key)
            expected += !erased_key(key);

        visit->seen = 0;
        visit->stop_after = 0;
        CHECK_OK(mpidict_skiplist_range_i64(list, lo, hi, 0, 0, collect_int, visit, &count));
        CHECK(count == expected && visit->seen == expected);
        previous = lo - 1;
        for (index = 0; index < visit->seen; ++index) {
            CHECK(visit->keys[index] > previous && visit->keys[index] <= hi);
            CHECK(!erased_key(visit->keys[index]) && visit->values[index] == 3 * visit->keys[index]);
            for (key = previous + 1; key < visit->keys[index]; ++key)
                CHECK(erased_key(key)); /* nothing in between was skipped */
            previous = visit->keys[index];
        }

        /* Descending, the 7 largest. */
        visit->seen = 0;
        CHECK_OK(mpidict_skiplist_range_i64(list, lo, hi, 7, 1, collect_int, visit, &count));
        CHECK(count == 7 || (expected < 7 && count == expected));
        previous = hi + 1;
        for (index = 0; index < visit->seen; ++index) {
            CHECK(visit->keys[index] < previous && !erased_key(visit->keys[index]));
            for (key = previous - 1; key > visit->keys[index]; --key)
                CHECK(erased_key(key));
            previous = visit->keys[index];
        }

        /* Ascending with a limit, and a visitor that stops after 3. */
        visit->seen = 0;
        CHECK_OK(mpidict_skiplist_range_i64(list, lo, hi, 5, 0, collect_int, visit, &count));
        CHECK(count == 5 && visit->keys[0] == (erased_key(lo) ? lo + 1 : lo));
        visit->seen = 0;
        visit->stop_after = 3;
        CHECK_OK(mpidict_skiplist_range_i64(list, lo, hi, 0, 0, collect_int, visit, &count));
        CHECK(count == 3 && visit->seen == 3);

        /* Empty ranges. */
        visit->seen = 0;
        visit->stop_after = 0;
        CHECK_OK(mpidict_skiplist_range_i64(list, hi, lo, 0, 0, collect_int, visit, &count));
        CHECK(count == 0 && visit->seen == 0);
        CHECK_OK(mpidict_skiplist_range_i64(list, total, INT64_MAX, 0, 0, collect_int, visit, &count));
        CHECK(count == 0);
        CHECK_OK(mpidict_skiplist_range_i64(list, INT64_MIN, -1, 0, 0, collect_int, visit, &count));
        CHECK(count == 0);
    }

    /* Errors that name the problem; the list keeps working. */
    value = 1;
    CHECK_ERROR(mpidict_skiplist_insert_i64(list, 1, &value, 4, NULL), MPIDICT_ERR_ARGUMENT, "value_size = 8");
    CHECK_ERROR(mpidict_skiplist_insert_bytes(list, "k", 1, &value, sizeof value, NULL), MPIDICT_ERR_ARGUMENT,
                "MPIDICT_SKIPLIST_BYTES lists");
    CHECK_ERROR(mpidict_skiplist_find_i64(list, 1, &value, sizeof value, NULL, NULL), MPIDICT_ERR_ARGUMENT,
                "found is NULL");
    CHECK_ERROR(mpidict_skiplist_range_i64(list, 0, 1, 0, 0, NULL, NULL, NULL), MPIDICT_ERR_ARGUMENT,
                "visit is NULL");
    CHECK_ERROR(mpidict_skiplist_insert_i64(NULL, 1, &value, sizeof value, NULL), MPIDICT_ERR_ARGUMENT,
                "list is NULL");
    CHECK_OK(mpidict_skiplist_find_i64(list, 2, &value, sizeof value, NULL, &flag));
    CHECK(flag == 1 && value == 6);

    CHECK_OK(mpidict_skiplist_destroy(list));
    CHECK_ERROR(mpidict_skiplist_insert_i64(list, 1, &value, sizeof value, NULL), MPIDICT_ERR_DESTROYED,
                "destroyed");
    CHECK_OK(mpidict_skiplist_destroy(list));
    CHECK_OK(mpidict_skiplist_free(&list));
    CHECK(list == NULL);
    free(visit);
}

/* ---- byte-string keys ------------------------------------------------------- */

struct bytes_visit {
    char keys[64][16];
    size_t key_bytes[64];
    size_t seen;
};

static int collect_bytes(const void* key, size_t key_bytes, const void* value, size_t value_bytes, void* context) {
    struct bytes_visit* state = (struct bytes_visit*)context;
    CHECK(state->seen < 64 && key_bytes <= 16);
    /* Every value is its key's length, as one byte. */
    CHECK(value_bytes == 1 && *(const unsigned char*)value == (unsigned char)key_bytes);
    memcpy(state->keys[state->seen], key, key_bytes);
    state->key_bytes[state->seen] = key_bytes;
    ++state->seen;
    return 0;
}

/* Keys in their unsigned lexicographic order. */
static const char* const byte_keys[] = {"", "\0", "a", "ab", "ab\0", "ab\0c", "abc", "abd", "ab\x7f", "ab\x80", "b", "\xff"};
static const size_t byte_key_sizes[] = {0, 1, 1, 2, 3, 4, 3, 3, 3, 3, 1, 1};
enum { byte_key_count = 12 };

static void check_visit(const struct bytes_visit* visit, size_t first, size_t count, int descending) {
    size_t index;
    CHECK(visit->seen == count);
    for (index = 0; index < count; ++index) {
        const size_t expected = descending ? first + count - 1 - index : first + index;
        CHECK(visit->key_bytes[index] == byte_key_sizes[expected]);
        CHECK(memcmp(visit->keys[index], byte_keys[expected], byte_key_sizes[expected]) == 0);
    }
}

static void test_byte_keys(void) {
    mpidict_skiplist* list = NULL;
    struct bytes_visit visit;
    size_t count;
    size_t index;
    int flag;
    unsigned char value;
    mpidict_skiplist_options options;

    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.granularity = 2;
    options.max_key_bytes = 16;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_BYTES, 1, &options, &list));
    /* Rank r inserts keys r, r + p, ... in reverse order. */
    for (index = byte_key_count; index-- > 0;) {
        if ((int)(index % (size_t)g_size) != g_rank)
            continue;
        value = (unsigned char)byte_key_sizes[index];
        CHECK_OK(mpidict_skiplist_insert_bytes(list, byte_keys[index], byte_key_sizes[index], &value, 1, &flag));
        CHECK(flag == 0);
    }
    CHECK_OK(mpidict_skiplist_flush(list));

    memset(&visit, 0, sizeof visit);
    CHECK_OK(mpidict_skiplist_prefix(list, "ab", 2, 0, 0, collect_bytes, &visit, &count));
    check_visit(&visit, 3, 7, 0); /* "ab" .. "abd" */
    memset(&visit, 0, sizeof visit);
    CHECK_OK(mpidict_skiplist_prefix(list, "ab\0", 3, 0, 1, collect_bytes, &visit, &count));
    check_visit(&visit, 4, 2, 1);
    memset(&visit, 0, sizeof visit);
    CHECK_OK(mpidict_skiplist_prefix(list, "", 0, 0, 0, collect_bytes, &visit, &count));
    check_visit(&visit, 0, byte_key_count, 0);
    memset(&visit, 0, sizeof visit);
    CHECK_OK(mpidict_skiplist_prefix(list, "\xff", 1, 0, 0, collect_bytes, &visit, &count));
    check_visit(&visit, 11, 1, 0);
    memset(&visit, 0, sizeof visit);
    CHECK_OK(mpidict_skiplist_prefix(list, "ab", 2, 3, 1, collect_bytes, &visit, &count));
    check_visit(&visit, 7, 3, 1); /* the 3 largest with prefix "ab" */
    memset(&visit, 0, sizeof visit);
    CHECK_OK(mpidict_skiplist_range_bytes(list, "a", 1, "ab\x7f", 3, 0, 0, collect_bytes, &visit, &count));
    check_visit(&visit, 2, 7, 0);
    memset(&visit, 0, sizeof visit);
    CHECK_OK(mpidict_skiplist_range_bytes(list, "", 0, "\0", 1, 0, 0, collect_bytes, &visit, &count));
    check_visit(&visit, 0, 2, 0);

    for (index = 0; index < byte_key_count; ++index) {
        size_t bytes = 0;
        value = 0;
        CHECK_OK(mpidict_skiplist_find_bytes(list, byte_keys[index], byte_key_sizes[index], &value, 1, &bytes, &flag));
        CHECK(flag == 1 && bytes == 1 && value == byte_key_sizes[index]);
    }
    CHECK_OK(mpidict_skiplist_find_bytes(list, "ab\0\0", 4, &value, 1, NULL, &flag));
    CHECK(flag == 0);
    CHECK_ERROR(mpidict_skiplist_insert_bytes(list, "0123456789abcdefg", 17, &value, 1, NULL), MPIDICT_ERR_ARGUMENT,
                "max_key_bytes = 16");
    CHECK_ERROR(mpidict_skiplist_insert_bytes(list, NULL, 3, &value, 1, NULL), MPIDICT_ERR_ARGUMENT,
                "key is NULL");
    CHECK_ERROR(mpidict_skiplist_erase_i64(list, 3, NULL), MPIDICT_ERR_ARGUMENT, "MPIDICT_SKIPLIST_INT64 lists");
    CHECK_OK(mpidict_skiplist_flush(list));

    /* Erase from the last rank, async; the others see it after the flush. */
    if (g_rank == g_size - 1) {
        CHECK_OK(mpidict_skiplist_async_erase_bytes(list, "ab\0", 3));
        CHECK_OK(mpidict_skiplist_erase_bytes(list, "abc", 3, &flag));
        CHECK(flag == 1);
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    memset(&visit, 0, sizeof visit);
    CHECK_OK(mpidict_skiplist_prefix(list, "ab", 2, 0, 0, collect_bytes, &visit, &count));
    CHECK(count == 5 && visit.key_bytes[1] == 4 && visit.key_bytes[2] == 3 && visit.keys[2][2] == 'd');
    CHECK_OK(mpidict_skiplist_free(&list));
}

/* ---- a full list -------------------------------------------------------------- */

static void test_list_full(void) {
    mpidict_skiplist* list = NULL;
    mpidict_skiplist_options options;
    int64_t key;
    int64_t stored = 0;
    int64_t total = 0;
    int code = MPIDICT_OK;
    size_t entries;
    uint64_t rejected = 1;

    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.granularity = 2;
    options.node_slots_per_rank = 3;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, 0, &options, &list));
    if (g_rank == 0) {
        /* At most 3 nodes per rank (and the head) of at most 2 keys each. */
        for (key = 0; key <= 20 * (int64_t)g_size + 10; ++key) {
            code = mpidict_skiplist_insert_i64(list, key * 10, &key, sizeof key, NULL);
            if (code != MPIDICT_OK)
                break;
            ++stored;
        }
        CHECK(code == MPIDICT_ERR_FULL);
        CHECK(strstr(mpidict_last_error(), "list_full") != NULL);
        CHECK(strstr(mpidict_last_error(), "node_slots_per_rank = 3") != NULL);
        CHECK(strcmp(mpidict_error_name(MPIDICT_ERR_FULL), "MPIDICT_ERR_FULL") == 0);
        {
            /* insert_if_absent: the refusal is a result, as for a key already there. */
            int inserted = 1;
            CHECK_OK(mpidict_skiplist_insert_if_absent_i64(list, stored * 10, &key, sizeof key, &inserted));
            CHECK(inserted == 0);
        }
        /* Everything stored before is still there. */
        for (key = 0; key < stored; ++key) {
            int64_t value = -1;
            int flag = 0;
            CHECK_OK(mpidict_skiplist_find_i64(list, key * 10, &value, sizeof value, NULL, &flag));
            CHECK(flag == 1 && value == key);
        }
        CHECK_OK(mpidict_skiplist_find_i64(list, stored * 10, &key, sizeof key, NULL, &code));
        CHECK(code == 0); /* the refused key is not there */
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    MPI_Allreduce(&stored, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    CHECK_OK(mpidict_skiplist_global_size(list, &entries));
    CHECK(entries == (size_t)total && total > 0);
    CHECK_OK(mpidict_skiplist_async_rejected(list, &rejected));
    CHECK(rejected == 0);
    CHECK_OK(mpidict_skiplist_free(&list));
}

static void test_create_errors(void) {
    mpidict_skiplist* list = (mpidict_skiplist*)&g_rank; /* create sets it to NULL on failure */
    CHECK_ERROR(mpidict_skiplist_create(MPI_COMM_WORLD, 7, 0, NULL, &list), MPIDICT_ERR_ARGUMENT, "key_kind 7");
    CHECK(list == NULL);
    CHECK_ERROR(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, 1u << 20, NULL, &list),
                MPIDICT_ERR_ARGUMENT, "exceeds max_value_bytes");
    CHECK_ERROR(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, 0, NULL, NULL), MPIDICT_ERR_ARGUMENT,
                "out is NULL");
    CHECK_ERROR(mpidict_skiplist_options_init(NULL), MPIDICT_ERR_ARGUMENT, "options is NULL");
    if (g_size > 1) {
        /* One rank refuses: every rank returns an error, none hangs. */
        if (g_rank == 0) {
            CHECK_ERROR(mpidict_skiplist_create(MPI_COMM_WORLD, 5, 0, NULL, &list), MPIDICT_ERR_ARGUMENT,
                        "key_kind 5");
        } else {
            CHECK_ERROR(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, 0, NULL, &list),
                        MPIDICT_ERR_ARGUMENT, "another rank rejected");
        }
        CHECK(list == NULL);
        CHECK_ERROR(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, g_rank == 0 ? 8 : 16, NULL,
                                            &list),
                    MPIDICT_ERR_MISMATCH, "ranks disagree on key_kind or value_size");
        CHECK(list == NULL);
    }
}

enum { batch_keys = 700 };

static void test_insert_many(void) {
    mpidict_skiplist* list = NULL;
    mpidict_skiplist_options options;
    static int64_t keys[batch_keys + 1];
    static int64_t values[batch_keys + 1];
    static char packed[8 * batch_keys];
    static size_t sizes[batch_keys];
    static size_t refused_at[4 * batch_keys];
    uint64_t stored = 0, refused = 9;
    size_t entries = 0, at = 0, found_count = 0;
    int64_t i, value;
    int flag;

    /* Fixed-size values (value_bytes NULL), one key twice: the last value wins. */
    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.granularity = 4;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(int64_t), &options, &list));
    for (i = 0; i < batch_keys; ++i) {
        keys[i] = i * g_size + g_rank;
        values[i] = 5 * keys[i];
    }
    keys[batch_keys] = keys[3];
    values[batch_keys] = -7;
    CHECK_OK(mpidict_skiplist_insert_many_i64(list, keys, batch_keys + 1, values, NULL, &stored, &refused, NULL));
    CHECK(stored == batch_keys + 1 && refused == 0);
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_global_size(list, &entries));
    CHECK(entries == (size_t)batch_keys * (size_t)g_size);
    for (i = 0; i < batch_keys; ++i) {
        const int64_t key = i * g_size + (g_rank + 1) % g_size; /* the next rank's keys */
        CHECK_OK(mpidict_skiplist_find_i64(list, key, &value, sizeof value, NULL, &flag));
        CHECK(flag == 1 && value == (i == 3 ? -7 : 5 * key));
    }
    /* Bad input stores nothing and names the pair. */
    CHECK_ERROR(mpidict_skiplist_insert_many_i64(list, NULL, 2, values, NULL, NULL, NULL, NULL), MPIDICT_ERR_ARGUMENT,
                "keys is NULL");
    sizes[0] = 8;
    sizes[1] = 8;
    sizes[2] = 4;
    keys[0] = -1000000 - g_rank;
    CHECK_ERROR(mpidict_skiplist_insert_many_i64(list, keys, 3, values, sizes, NULL, NULL, NULL),
                MPIDICT_ERR_ARGUMENT, "value 2 has 4 bytes");
    CHECK_OK(mpidict_skiplist_find_i64(list, keys[0], &value, sizeof value, NULL, &flag));
    CHECK(flag == 0);
    CHECK_OK(mpidict_skiplist_insert_many_i64(list, NULL, 0, NULL, NULL, &stored, NULL, NULL));
    CHECK(stored == 0);
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_free(&list));

    /* Values of any size, packed back to back; byte keys packed too. */
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_BYTES, 0, &options, &list));
    CHECK_ERROR(mpidict_skiplist_insert_many_bytes(list, packed, sizes, 1, packed, NULL, NULL, NULL, NULL),
                MPIDICT_ERR_ARGUMENT, "value_bytes is NULL");
    {
        static char key_bytes_packed[8 * batch_keys];
        static size_t key_sizes[batch_keys];
        size_t key_at = 0;
        for (i = 0; i < batch_keys; ++i) {
            /* key: rank byte, a zero byte, then i in big-endian (2 bytes); value: i % 6 bytes of i */
            key_bytes_packed[key_at] = (char)g_rank;
            key_bytes_packed[key_at + 1] = 0;
            key_bytes_packed[key_at + 2] = (char)(i >> 8);
            key_bytes_packed[key_at + 3] = (char)(i & 0xff);
            key_sizes[i] = 4;
            key_at += 4;
            sizes[i] = (size_t)(i % 6);
            memset(packed + at, (int)(i & 0x7f), sizes[i]);
            at += sizes[i];
        }
        CHECK_OK(mpidict_skiplist_insert_many_bytes(list, key_bytes_packed, key_sizes, batch_keys, packed, sizes,
                                                    &stored, &refused, NULL));
        CHECK(stored == batch_keys && refused == 0);
        CHECK_OK(mpidict_skiplist_flush(list));
        for (i = 0; i < batch_keys; ++i) {
            char got[8];
            size_t bytes = 99;
            char expected[8];
            memset(expected, (int)(i & 0x7f), sizeof expected);
            CHECK_OK(mpidict_skiplist_find_bytes(list, key_bytes_packed + 4 * i, 4, got, sizeof got, &bytes, &flag));
            CHECK(flag == 1 && bytes == (size_t)(i % 6) && memcmp(got, expected, bytes) == 0);
        }
    }
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_free(&list));

    /* list_full: nodes for a few keys; every pair stored (found) or refused (named). */
    CHECK_OK(mpidict_skiplist_options_init(&options));
    options.granularity = 2;
    options.node_slots_per_rank = 3;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(int64_t), &options, &list));
    for (i = 0; i < batch_keys; ++i) {
        keys[i] = i * g_size + g_rank;
        values[i] = 3 * keys[i];
    }
    CHECK_OK(mpidict_skiplist_insert_many_i64(list, keys, batch_keys, values, NULL, &stored, &refused, refused_at));
    CHECK(stored + refused == batch_keys && refused > 0);
    CHECK_OK(mpidict_skiplist_flush(list));
    at = 0;
    for (i = 0; i < batch_keys; ++i) {
        const int named = at < refused && refused_at[at] == (size_t)i;
        if (named) {
            CHECK(at == 0 || refused_at[at - 1] < refused_at[at]);
            ++at;
        }
        CHECK_OK(mpidict_skiplist_find_i64(list, keys[i], &value, sizeof value, NULL, &flag));
        CHECK(flag == !named);
        CHECK(!flag || value == 3 * keys[i]);
        found_count += (size_t)flag;
    }
    CHECK(at == refused && found_count == stored);
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_free(&list));
}

int main(int argc, char** argv) {
    const char* expected_ranks;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    expected_ranks = getenv("MPIDICT_TEST_RANKS");
    if (expected_ranks != NULL && atoi(expected_ranks) != g_size) {
        fprintf(stderr, "expected %s ranks, got %d\n", expected_ranks, g_size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    test_create_errors();
    test_int_keys();
    test_byte_keys();
    test_list_full();
    test_insert_many();
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("c_skiplist: all checks passed at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
