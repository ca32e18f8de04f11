/*
 * The checks the C API's tests share: the first failed check prints what it
 * expected (and mpidict_last_error()) and aborts the whole job with MPI_Abort,
 * so no rank is left waiting in a collective.  Set g_rank (and g_size) in main.
 */
#ifndef MPIDICT_TESTS_C_CHECK_H
#define MPIDICT_TESTS_C_CHECK_H

#include <mpidict/c/mpidict.h>

#include <mpi.h>

#include <stdio.h>
#include <string.h>

static int g_rank = 0;
static int g_size = 1;

/* Reports a failed check on this rank and aborts the job. */
static void fail_here(const char* file, int line, const char* what, const char* detail) {
    fprintf(stderr, "[rank %d] CHECK FAILED %s:%d: %s %s\n  mpidict_last_error: %s\n", g_rank, file, line, what,
            detail, mpidict_last_error());
    fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

#define CHECK(condition)                                           \
    do {                                                           \
        if (!(condition))                                          \
            fail_here(__FILE__, __LINE__, #condition, "is false"); \
    } while (0)

/* The call must succeed. */
#define CHECK_OK(call)                                                                \
    do {                                                                              \
        int check_code_ = (call);                                                     \
        if (check_code_ != MPIDICT_OK)                                                \
            fail_here(__FILE__, __LINE__, #call, mpidict_error_name(check_code_));    \
    } while (0)

static void check_error(const char* file, int line, const char* call, int actual, int expected, const char* text) {
    char detail[512];
    if (actual != expected) {
        sprintf(detail, "returned %s, expected %s", mpidict_error_name(actual), mpidict_error_name(expected));
        fail_here(file, line, call, detail);
    }
    if (strstr(mpidict_last_error(), text) == NULL) {
        sprintf(detail, "left a message without \"%.400s\"", text);
        fail_here(file, line, call, detail);
    }
}

/* The call must fail with `code` and a message containing `text`. */
#define CHECK_ERROR(call, code, text) check_error(__FILE__, __LINE__, #call, (call), (code), (text))

#define CHECK_EQ_SIZE(actual, expected)                                                            \
    do {                                                                                           \
        size_t check_actual_ = (size_t)(actual);                                                   \
        size_t check_expected_ = (size_t)(expected);                                               \
        if (check_actual_ != check_expected_) {                                                    \
            char check_detail_[128];                                                               \
            sprintf(check_detail_, "is %lu, expected %lu", (unsigned long)check_actual_,           \
                    (unsigned long)check_expected_);                                               \
            fail_here(__FILE__, __LINE__, #actual, check_detail_);                                 \
        }                                                                                          \
    } while (0)

#endif /* MPIDICT_TESTS_C_CHECK_H */
