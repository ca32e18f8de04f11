/*
 * The C API with a progress thread (options.progress_thread = 1), from C at
 * 1..4 ranks under MPI_THREAD_MULTIPLE.  The last rank owns a key and goes quiet
 * (sleeps, no library calls) right after a barrier; rank 0 then finds the key
 * and must get its answer while that rank is still asleep, which only its
 * progress thread can give.  Then 20 maps are created and destroyed in a row
 * with progress threads (teardown must not deadlock).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpidict/c/mpidict.h>

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "c_check.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char** argv) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    if (provided < MPI_THREAD_MULTIPLE) {
        if (g_rank == 0)
            printf("SKIP: this MPI provides no MPI_THREAD_MULTIPLE\n");
        MPI_Finalize();
        return 0;
    }
    mpidict_map_options options;
    CHECK(mpidict_map_options_init(&options) == MPIDICT_OK);
    CHECK(options.progress_thread == 0);
    options.progress_thread = 1;
    mpidict_map* map = NULL;
    CHECK(mpidict_map_create(MPI_COMM_WORLD, 8, 1, &options, &map) == MPIDICT_OK);

    const int quiet = g_size - 1;
    const int64_t key = 7;
    const int64_t value = 4242;
    if (g_rank == quiet)
        CHECK(mpidict_map_insert(map, quiet, key, &value, 1, NULL) == MPIDICT_OK);
    CHECK(mpidict_map_flush(map) == MPIDICT_OK);
    MPI_Barrier(MPI_COMM_WORLD);  /* legal: MPI_THREAD_MULTIPLE */
    const double sleep_seconds = 0.3;
    double woke = 0;
    if (g_rank == quiet) {
        const double start = now();
        struct timespec nap = {0, 300000000L};
        nanosleep(&nap, NULL);
        woke = start + sleep_seconds;
    }
    if (g_rank == 0 && g_size > 1) {
        int64_t found = 0;
        size_t count = 0;
        mpidict_request* request = NULL;
        const double start = now();
        CHECK(mpidict_map_find(map, quiet, key, &found, 1, &request) == MPIDICT_OK);
        CHECK(mpidict_request_wait(&request, 1, &count) == MPIDICT_OK);
        const double answered = now() - start;
        CHECK(count == 1 && found == value);
        CHECK(answered < sleep_seconds * 0.8);  /* the quiet rank's thread answered */
    }
    (void)woke;
    CHECK(mpidict_map_free(&map) == MPIDICT_OK);

    /* Refused arguments with a thread asked for: no map, no thread left behind. */
    CHECK_ERROR(mpidict_map_create(MPI_COMM_WORLD, 0, 1, &options, &map), MPIDICT_ERR_ARGUMENT, "value_size = 0");
    CHECK(map == NULL);
    for (int round = 0; round < 20; ++round) {
        CHECK(mpidict_map_create(MPI_COMM_WORLD, 4, 2, &options, &map) == MPIDICT_OK);
        const int32_t items[2] = {round, g_rank};
        CHECK(mpidict_map_insert(map, MPIDICT_TARGET_AUTO, round * 100 + g_rank, items, 1, NULL) == MPIDICT_OK);
        if (round % 2 == 0)
            CHECK(mpidict_map_flush(map) == MPIDICT_OK);
        CHECK(mpidict_map_free(&map) == MPIDICT_OK);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0)
        printf("PASS: c_api_progress at %d ranks\n", g_size);
    MPI_Finalize();
    return 0;
}
