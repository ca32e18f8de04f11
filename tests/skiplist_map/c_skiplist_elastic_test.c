/*
 * The skip list's C API, part 5: rebalancing, growing and draining (issue 44),
 * from C at 1..4 ranks in each consistency mode.  A list starts on one server
 * rank (initial_servers = 1) and grows onto the others at the flush after an
 * insert_many passes grow_entries; mpidict_skiplist_rebalance by entries and
 * by requests; online moves (mpidict_skiplist_local_rebalance) while every rank
 * finds; a drain of the last rank leaves it empty.  After every step each
 * key is found with its value and the global size is the number of keys.  Bad
 * input (an unknown metric, a target below 1, a rank that is not a server, the
 * only server, ranks disagreeing on the metric, a NULL result where one is
 * needed, a destroyed list) gets an error on every rank and loses nothing.  A
 * failed check aborts the job.
 */
#include <mpidict/c/skiplist.h>

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../c/c_check.h"

enum { per_rank = 120 };

/* Every key of every rank found with value 3 k + 1; the global size matches. */
static void check_all(mpidict_skiplist* list) {
    const int64_t universe = (int64_t)per_rank * g_size;
    int64_t k, v = 0;
    size_t value_bytes = 0, total = 0;
    int found = 0;
    for (k = g_rank; k < universe; k += g_size) {
        CHECK_OK(mpidict_skiplist_find_i64(list, k, &v, sizeof v, &value_bytes, &found));
        CHECK(found && value_bytes == sizeof v && v == 3 * k + 1);
    }
    CHECK_OK(mpidict_skiplist_global_size(list, &total));
    CHECK_EQ_SIZE(total, (size_t)universe);
}

static int is_server(const mpidict_skiplist* list, int rank) {
    int ranks[64];
    size_t count = 0, i;
    CHECK_OK(mpidict_skiplist_active_servers(list, ranks, 64, &count));
    CHECK(count <= 64);
    for (i = 0; i < count; ++i)
        if (ranks[i] == rank)
            return 1;
    return 0;
}

static void elastic(int mode) {
    mpidict_skiplist* list = NULL;
    mpidict_skiplist_options options;
    mpidict_skiplist_rebalance_result result;
    int64_t keys[per_rank], values[per_rank];
    uint64_t stored = 0, refused = 0;
    size_t count = 0, local = 0, i;
    int first = -1, metric;
    CHECK_OK(mpidict_skiplist_options_init(&options));
    CHECK(options.initial_servers == 0 && options.grow_entries == ((uint64_t)1 << 20) &&
          options.grow_memory_fraction == 0.5 && options.rebalance_threshold == 0 &&
          options.online_rebalance == 0 && options.online_rebalance_seconds == 0.2);
    options.granularity = 4;
    options.consistency = mode;
    options.initial_servers = 1;
    options.grow_entries = 50;
    CHECK_OK(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(int64_t), &options, &list));

    /* One server at the start; nothing moved yet. */
    CHECK_OK(mpidict_skiplist_active_servers(list, NULL, 0, &count));
    CHECK_EQ_SIZE(count, 1);
    CHECK_OK(mpidict_skiplist_active_servers(list, &first, 1, NULL));
    CHECK(first == 0);
    CHECK_OK(mpidict_skiplist_last_rebalance(list, &result));
    CHECK(result.moved_nodes == 0 && result.servers_added == 0);

    /* Growth: per_rank * size entries >= grow_entries on the one server wake every other rank. */
    for (i = 0; i < per_rank; ++i) {
        keys[i] = (int64_t)i * g_size + g_rank;
        values[i] = 3 * keys[i] + 1;
    }
    CHECK_OK(mpidict_skiplist_insert_many_i64(list, keys, per_rank, values, NULL, &stored, &refused, NULL));
    CHECK(stored == per_rank && refused == 0);
    CHECK_OK(mpidict_skiplist_flush(list));
    CHECK_OK(mpidict_skiplist_last_rebalance(list, &result));
    CHECK_OK(mpidict_skiplist_active_servers(list, NULL, 0, &count));
    CHECK_EQ_SIZE(count, (size_t)g_size);
    CHECK_EQ_SIZE(result.servers_added, (size_t)(g_size - 1));
    /* At one rank no flush grew or moved anything: last_rebalance is empty. */
    CHECK_EQ_SIZE(result.servers, g_size > 1 ? (size_t)g_size : 0);
    if (getenv("C_ELASTIC_VERBOSE") != NULL)
        printf("[rank %d] mode %d grew: moved %llu nodes %llu entries %llu bytes, refused %llu, ratio %.3f -> %.3f\n",
               g_rank, mode, (unsigned long long)result.moved_nodes, (unsigned long long)result.moved_entries,
               (unsigned long long)result.moved_bytes, (unsigned long long)result.refused_nodes,
               result.entries_ratio_before, result.entries_ratio_after);
    if (g_size > 1)
        CHECK(result.moved_nodes > 0 && result.moved_entries > 0 && result.moved_bytes > 0 &&
              result.entries_ratio_before > result.entries_ratio_after);
    check_all(list);

    /* Rebalancing by entries and by requests: what moved is reported alike everywhere; nothing is lost. */
    for (metric = MPIDICT_SKIPLIST_METRIC_ENTRIES; metric <= MPIDICT_SKIPLIST_METRIC_REQUESTS; ++metric) {
        uint64_t mine[2], low[2], high[2];
        CHECK_OK(mpidict_skiplist_rebalance(list, metric, 1.05, &result));
        CHECK_EQ_SIZE(result.servers, (size_t)g_size);
        CHECK(result.load_ratio_after >= 1.0 - 1e-9 || result.servers == 0);
        CHECK(result.seconds >= 0);
        mine[0] = result.moved_nodes;
        mine[1] = result.moved_entries;
        MPI_Allreduce(mine, low, 2, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(mine, high, 2, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        CHECK(low[0] == high[0] && low[1] == high[1]);
        check_all(list);
    }
    CHECK_OK(mpidict_skiplist_rebalance(list, MPIDICT_SKIPLIST_METRIC_ENTRIES, 1.05, NULL));

    /* Online moves (not collective): rank 0 starts moving up to 3 idle nodes to the last rank while every
     * rank goes on finding; the flush settles them; nothing is lost.  At one rank there is nowhere to go. */
    {
        size_t started = 99;
        CHECK_OK(mpidict_skiplist_local_rebalance(list, g_rank == 0 ? 3 : 0, g_size - 1, &started));
        CHECK(started <= (g_rank == 0 && g_size > 1 ? 3u : 0u));
        check_all(list);
        CHECK_OK(mpidict_skiplist_flush(list));
        check_all(list);
        CHECK_ERROR(mpidict_skiplist_local_rebalance(list, 1, g_size, NULL), MPIDICT_ERR_ARGUMENT,
                    "is outside");
        CHECK_ERROR(mpidict_skiplist_local_rebalance(list, 1, -2, NULL), MPIDICT_ERR_ARGUMENT, "is outside");
    }

    /* Bad input: an error on every rank, nothing lost, nothing waiting. */
    CHECK_ERROR(mpidict_skiplist_rebalance(list, 7, 1.1, &result), MPIDICT_ERR_ARGUMENT, "metric 7");
    CHECK_ERROR(mpidict_skiplist_rebalance(list, MPIDICT_SKIPLIST_METRIC_ENTRIES, 0.5, &result),
                MPIDICT_ERR_ARGUMENT, "must be at least 1");
    CHECK_ERROR(mpidict_skiplist_drain(list, g_size, &result), MPIDICT_ERR_ARGUMENT, "is not an active server");
    CHECK_ERROR(mpidict_skiplist_last_rebalance(list, NULL), MPIDICT_ERR_ARGUMENT, "result is NULL");
    CHECK_ERROR(mpidict_skiplist_active_servers(list, NULL, 3, &count), MPIDICT_ERR_ARGUMENT, "ranks is NULL");
    if (g_size > 1) {
        /* Rank 0 alone names a metric C++ does not know: every rank fails, rank 0 naming its metric. */
        const int code = mpidict_skiplist_rebalance(list, g_rank == 0 ? 9 : MPIDICT_SKIPLIST_METRIC_ENTRIES, 1.1,
                                                    &result);
        CHECK(code != MPIDICT_OK);
        if (g_rank == 0)
            CHECK(strstr(mpidict_last_error(), "metric 9") != NULL);
    }
    check_all(list);

    /* Drain the last rank: it holds nothing and is no server any more; every key is still there. */
    if (g_size > 1) {
        CHECK_OK(mpidict_skiplist_drain(list, g_size - 1, &result));
        CHECK_EQ_SIZE(result.servers, (size_t)(g_size - 1));
        CHECK(!is_server(list, g_size - 1));
        if (g_rank == g_size - 1) {
            CHECK_OK(mpidict_skiplist_local_size(list, &local));
            CHECK_EQ_SIZE(local, 0);
        }
        check_all(list);
    } else {
        CHECK_ERROR(mpidict_skiplist_drain(list, 0, &result), MPIDICT_ERR_ARGUMENT, "only active server");
        check_all(list);
    }

    CHECK_OK(mpidict_skiplist_destroy(list));
    CHECK_ERROR(mpidict_skiplist_rebalance(list, 0, 1.1, NULL), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_ERROR(mpidict_skiplist_drain(list, 0, NULL), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_ERROR(mpidict_skiplist_local_rebalance(list, 1, -1, NULL), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_ERROR(mpidict_skiplist_active_servers(list, NULL, 0, &count), MPIDICT_ERR_DESTROYED, "destroyed");
    CHECK_OK(mpidict_skiplist_free(&list));
    CHECK_ERROR(mpidict_skiplist_rebalance(NULL, 0, 1.1, NULL), MPIDICT_ERR_ARGUMENT, "list is NULL");
}

int main(int argc, char** argv) {
    int mode;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    for (mode = MPIDICT_SKIPLIST_TOTAL_ORDER; mode <= MPIDICT_SKIPLIST_NONE; ++mode)
        elastic(mode);
    if (g_rank == 0)
        printf("c_skiplist_elastic: growth, rebalance and drain checked in every mode at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
