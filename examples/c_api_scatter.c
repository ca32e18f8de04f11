/* The matrix scatter of docs/c_api.md (seed 000, Figure 2), as a whole program:
 * scripts/check_doc_examples.py checks that the page shows the marked lines
 * verbatim.  Run at 2 ranks by CTest; any number of ranks works. */

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <mpi.h>

#include <mpidict/c/mpidict.h>

enum { m = 3, L = 4 }; /* items per row; inserts in flight at a time */

int main(int argc, char** argv) {
    int rank = 0, p = 1, failures = 0, total = 0;
    const int64_t nrows = 24;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    {
        // doc-begin create
        typedef struct { int32_t column; float value; } entry;   /* one item: 2 values of 4 bytes */

        mpidict_map_options options;
        mpidict_map* a = NULL;
        mpidict_map_options_init(&options);
        options.placement = MPIDICT_PLACEMENT_CYCLIC;
        if (mpidict_map_create(MPI_COMM_WORLD, 4, 2, &options, &a) != MPIDICT_OK) {
            fprintf(stderr, "%s\n", mpidict_last_error());
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        // doc-end create
        entry batch[L * m];
        entry out[m];
        mpidict_request* reqs[L];
        size_t counts[L];
        const int64_t my_row = rank == 0 ? p : rank; /* a row the cyclic deal gives this rank */
        size_t found = 0;
        /* Rank 0 reads the matrix: row i has m non-zeros (i * 10 + j, i + j / 10). */
        if (rank == 0) {
            int64_t i;
            int j;
            for (i = 1; i <= nrows; ++i) {
                entry row[m];
                for (j = 0; j < m; ++j) {
                    row[j].column = (int32_t)(i * 10 + j);
                    row[j].value = (float)i + (float)j / 10.0f;
                }
                mpidict_map_insert(a, 0, i, row, m, NULL);
            }
        }
        mpidict_map_flush(a);
        // doc-begin scatter
        /* Rank 0 already holds every row of A in its own shard (target 0).
         * Deal the rows out cyclically, L inserts in flight at a time. */
        if (rank == 0) {
            size_t nsent = 0, n;
            for (int64_t i = 1; i <= nrows; ++i) {
                int target = (int)(i % p);
                if (target != 0) {
                    mpidict_request* take;
                    entry* row = &batch[nsent * m];          /* room for m items per row */
                    mpidict_map_take(a, 0, i, row, m, &take);  /* hash_delete_x */
                    mpidict_request_wait(&take, 1, &n);              /* n = items of row i */
                    mpidict_map_insert(a, target, i, row, n, &reqs[nsent]);   /* HASH_Insert */
                    nsent++;
                }
                if (nsent == L || (i == nrows && nsent > 0)) {
                    mpidict_request_wait(reqs, nsent, counts);       /* HASH_Wait: counts[k] = items stored */
                    nsent = 0;
                }
            }
        }
        mpidict_map_flush(a);                                    /* HASH_Flush: collective */

        /* Every rank now finds its rows locally or through the map. */
        mpidict_request* req;
        size_t n;
        mpidict_map_find(a, MPIDICT_TARGET_AUTO, my_row, out, m, &req);
        mpidict_request_wait(&req, 1, &n);

        mpidict_map_free(&a);                                /* collective: destroys, then frees */
        // doc-end scatter
        found = n;
        if (my_row <= nrows) {
            int j;
            if (found != m)
                ++failures;
            for (j = 0; j < m && j < (int)found; ++j)
                if (out[j].column != (int32_t)(my_row * 10 + j) || out[j].value != (float)my_row + (float)j / 10.0f)
                    ++failures;
        }
        if (a != NULL)
            ++failures;
    }
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("C API scatter: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
