/*
 * The C API's byte-string keys, insert-if-absent, count and local iteration,
 * from C at 1..4 ranks.  The first failed check aborts the job (MPI_Abort).
 *
 *   words      every rank inserts the same words (byte-string keys, some with
 *              embedded zero bytes) with its rank as the item; each word then
 *              has p items, found from every rank; count agrees; delete works.
 *   visited    insert_if_absent from every rank on the same keys: exactly one
 *              winner per key over all ranks, for int64 and byte-string maps.
 *   foreach    mpidict_map_local_for_each after a flush sees every key once over all
 *              ranks, with its items, and stops when the callback says so.
 *   errors     the int64 form on a byte map and the reverse, a NULL key with a
 *              length, a key too long for a message, cyclic placement with
 *              byte keys, count without a request.
 */
#include <mpidict/c/mpidict.h>

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c_check.h"

#define WORDS 40

/* Word i: "w<i>" followed by a zero byte and i % 3 more bytes. */
static size_t make_word(int i, char* out) {
    size_t length = (size_t)sprintf(out, "w%d", i);
    out[length++] = '\0';
    for (int extra = 0; extra < i % 3; ++extra)
        out[length++] = (char)('a' + extra);
    return length;
}

static long sum_over_ranks(long value) {
    long total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

static void words(void) {
    mpidict_map* map = NULL;
    CHECK_OK(mpidict_map_create_bytes(MPI_COMM_WORLD, sizeof(int64_t), 1, NULL, &map));
    char word[32];
    const int64_t mine = g_rank;
    for (int i = 0; i < WORDS; ++i) {
        size_t length = make_word(i, word);
        CHECK_OK(mpidict_map_insert_bytes(map, MPIDICT_TARGET_AUTO, word, length, &mine, 1, NULL));
    }
    CHECK_OK(mpidict_map_flush(map));
    size_t keys = 0;
    size_t items = 0;
    CHECK_OK(mpidict_map_global_size(map, &keys, &items));
    CHECK(keys == WORDS && items == (size_t)WORDS * (size_t)g_size);
    for (int i = 0; i < WORDS; ++i) {
        size_t length = make_word(i, word);
        int64_t found[8];
        mpidict_request* requests[2] = {NULL, NULL};
        size_t counts[2] = {0, 0};
        CHECK_OK(mpidict_map_find_bytes(map, MPIDICT_TARGET_AUTO, word, length, found, 8, &requests[0]));
        CHECK_OK(mpidict_map_count_bytes(map, MPIDICT_TARGET_AUTO, word, length, &requests[1]));
        CHECK_OK(mpidict_request_wait(requests, 2, counts));
        CHECK(counts[0] == (size_t)g_size && counts[1] == (size_t)g_size);
        long seen = 0;
        for (size_t k = 0; k < counts[0]; ++k)
            seen |= 1L << found[k];
        CHECK(seen == (1L << g_size) - 1);
        int owner = -1;
        CHECK_OK(mpidict_map_owner_bytes(map, word, length, &owner));
        if (owner == g_rank) {
            size_t local = 0;
            CHECK_OK(mpidict_map_local_find_bytes(map, word, length, found, 8, &local));
            CHECK(local == (size_t)g_size);
        }
    }
    /* A prefix of a key is another key: absent. */
    mpidict_request* request = NULL;
    size_t count = 99;
    CHECK_OK(mpidict_map_count_bytes(map, MPIDICT_TARGET_AUTO, "w1", 2, &request));
    CHECK_OK(mpidict_request_wait(&request, 1, &count));
    CHECK(count == 0);
    CHECK_OK(mpidict_map_flush(map));
    if (g_rank == 0)
        for (int i = 0; i < WORDS; i += 2) {
            size_t length = make_word(i, word);
            CHECK_OK(mpidict_map_take_bytes(map, MPIDICT_TARGET_AUTO, word, length, NULL, MPIDICT_ALL_ITEMS, NULL));
        }
    CHECK_OK(mpidict_map_flush(map));
    CHECK_OK(mpidict_map_global_size(map, &keys, NULL));
    CHECK(keys == WORDS / 2);

    /* Errors name the problem and change nothing. */
    CHECK_ERROR(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, 5, &mine, 1, NULL), MPIDICT_ERR_ARGUMENT, "byte-string keys");
    CHECK_ERROR(mpidict_map_insert_bytes(map, MPIDICT_TARGET_AUTO, NULL, 3, &mine, 1, NULL), MPIDICT_ERR_ARGUMENT, "key is NULL");
    {
        size_t most = 0;
        CHECK_OK(mpidict_map_max_items(map, &most));
        char* huge = (char*)calloc(1u << 17, 1);
        CHECK(huge != NULL);
        CHECK_ERROR(mpidict_map_find_bytes(map, MPIDICT_TARGET_AUTO, huge, 1u << 17, NULL, 0, NULL), MPIDICT_ERR_ARGUMENT, "key_length");
        free(huge);
    }
    CHECK_ERROR(mpidict_map_count_bytes(map, MPIDICT_TARGET_AUTO, "x", 1, NULL), MPIDICT_ERR_ARGUMENT, "req is NULL");
    CHECK_OK(mpidict_map_flush(map));
    CHECK_OK(mpidict_map_global_size(map, &keys, NULL));
    CHECK(keys == WORDS / 2);
    CHECK_OK(mpidict_map_free(&map));

    mpidict_map_options options;
    CHECK_OK(mpidict_map_options_init(&options));
    options.placement = MPIDICT_PLACEMENT_CYCLIC;
    CHECK_ERROR(mpidict_map_create_bytes(MPI_COMM_WORLD, 8, 1, &options, &map), MPIDICT_ERR_ARGUMENT, "needs integer keys");
    CHECK(map == NULL);
}

static void visited(int byte_keys) {
    mpidict_map* map = NULL;
    if (byte_keys)
        CHECK_OK(mpidict_map_create_bytes(MPI_COMM_WORLD, 4, 1, NULL, &map));
    else
        CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, 4, 1, NULL, &map));
    enum { keys = 100 };
    mpidict_request* requests[keys];
    size_t won[keys];
    const int32_t item = g_rank;
    for (int i = 0; i < keys; ++i) {
        /* Every rank in its own order. */
        int key = (i * 7 + g_rank * 13) % keys;
        char word[16];
        if (byte_keys) {
            size_t length = (size_t)sprintf(word, "k%d", key);
            CHECK_OK(mpidict_map_insert_if_absent_bytes(map, MPIDICT_TARGET_AUTO, word, length, &item, &requests[i]));
        } else {
            CHECK_OK(mpidict_map_insert_if_absent(map, MPIDICT_TARGET_AUTO, key, &item, &requests[i]));
        }
    }
    CHECK_OK(mpidict_request_wait(requests, keys, won));
    /* Flush before an MPI collective: a rank answers others only inside the library. */
    CHECK_OK(mpidict_map_flush(map));
    long wins = 0;
    for (int i = 0; i < keys; ++i)
        wins += (long)won[i];
    CHECK(sum_over_ranks(wins) == keys);
    size_t items = 0;
    CHECK_OK(mpidict_map_global_size(map, NULL, &items));
    CHECK(items == keys);
    if (!byte_keys) {
        CHECK_ERROR(mpidict_map_insert_if_absent_bytes(map, MPIDICT_TARGET_AUTO, "k", 1, &item, NULL), MPIDICT_ERR_ARGUMENT, "int64_t keys");
        CHECK_ERROR(mpidict_map_insert_if_absent(map, MPIDICT_TARGET_AUTO, 1, NULL, NULL), MPIDICT_ERR_ARGUMENT, "item is NULL");
    }
    CHECK_OK(mpidict_map_free(&map));
}

struct tally {
    long keys;
    long items;
    long key_sum;
    int stop_after;
};

static int count_entry(const mpidict_key* key, const void* items, size_t n_items, void* user_data) {
    struct tally* t = (struct tally*)user_data;
    const int64_t* values = (const int64_t*)items;
    CHECK(key->bytes == NULL && key->length == 0);
    for (size_t i = 0; i < n_items; ++i)
        CHECK(values[i] == key->integer * 10 + (int64_t)i);
    t->keys += 1;
    t->items += (long)n_items;
    t->key_sum += (long)key->integer;
    return t->stop_after > 0 && t->keys >= t->stop_after;
}

static void foreach(void) {
    mpidict_map* map = NULL;
    CHECK_OK(mpidict_map_create(MPI_COMM_WORLD, 8, 1, NULL, &map));
    enum { keys = 90 };
    for (int key = g_rank; key < keys; key += g_size)
        for (int i = 0; i <= key % 3; ++i) {
            int64_t value = key * 10 + i;
            CHECK_OK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, key, &value, 1, NULL));
        }
    CHECK_OK(mpidict_map_flush(map));
    struct tally all = {0, 0, 0, 0};
    CHECK_OK(mpidict_map_local_for_each(map, count_entry, &all));
    CHECK(sum_over_ranks(all.keys) == keys);
    CHECK(sum_over_ranks(all.items) == keys * 2); /* 1 + 2 + 3 items per 3 keys */
    CHECK(sum_over_ranks(all.key_sum) == keys * (keys - 1) / 2);
    struct tally first = {0, 0, 0, 1};
    CHECK_OK(mpidict_map_local_for_each(map, count_entry, &first));
    CHECK(first.keys == (all.keys > 0 ? 1 : 0));
    CHECK_ERROR(mpidict_map_local_for_each(map, NULL, NULL), MPIDICT_ERR_ARGUMENT, "fn is NULL");
    CHECK_OK(mpidict_map_free(&map));
}

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    words();
    visited(0);
    visited(1);
    foreach();
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("PASS: c_api_keys at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
