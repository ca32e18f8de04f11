// Regression (issue 49, item 3): a rank waiting in one container did not serve
// the others.  A C program created a second skip list while another rank was
// still waiting in a range on the first: rank 1 sat in the collective create
// (MPI_Allreduce) of list 2, rank 0 waited for rank 1 to answer on list 1, and
// the job hung in 2 of 3 runs.  The same held for any two containers: a rank
// waiting on map A for a rank that waits on map B hung both.
//
// Now every wait of the library on this thread (a request, flush, collective
// construction and destruction, the C API's create) also serves every other
// container this thread created.  Each scenario below makes the ranks wait in
// different containers at the same time, so without that rule it hangs (the
// watchdog turns the hang into a failed job).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <thread>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/c/skiplist.h"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/rma_hash_set.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using mpidict::testing::key_owned_by;

int g_rank = 0, g_size = 1;

bool waits_first() { return g_rank % 2 == 0; }
int neighbour() { return g_rank % 2 == 0 ? (g_rank + 1) % g_size : g_rank - 1; }

// Gives the other ranks time to enter their part first: the test is about a
// rank that waits on a container while another is already elsewhere.
void let_others_go_first() { std::this_thread::sleep_for(std::chrono::milliseconds(50)); }

// 1. Crossing waits: even ranks wait on `a` for their odd neighbour, odd ranks
//    on `b` for their even neighbour, at the same time.
void crossing_waits(mpidict::hash_map<std::int64_t, std::int64_t>& a,
                    mpidict::hash_map<std::int64_t, std::int64_t>& b) {
    const std::int64_t mine = key_owned_by(a, g_rank, 1000 * g_rank);
    a.insert(mine, 10 * mine).get();
    b.insert(mine, 20 * mine).get();
    const std::int64_t other_key = [&] {
        // The neighbour's key, as it computed it.
        const int other = neighbour();
        return key_owned_by(a, other, 1000 * other);
    }();
    a.flush();
    if (waits_first()) {
        const std::vector<std::int64_t> values = a.find(other_key).get();
        MPIDICT_CHECK_MSG(values.size() == 1 && values[0] == 10 * other_key, "a.find of the neighbour's key");
    } else {
        let_others_go_first();
        const std::vector<std::int64_t> values = b.find(other_key).get();
        MPIDICT_CHECK_MSG(values.size() == 1 && values[0] == 20 * other_key, "b.find of the neighbour's key");
    }
    a.flush();
    b.flush();
}

// 2. Construction and destruction while another rank waits: even ranks wait on
//    `a` for their neighbour, which is already constructing (then destroying)
//    another container of kind Map.
template <class Make>
void collective_while_waiting(mpidict::hash_map<std::int64_t, std::int64_t>& a, const char* what, Make&& make) {
    const int other = neighbour();
    const std::int64_t other_key = key_owned_by(a, other, 1000 * other);
    if (waits_first()) {
        let_others_go_first();
        MPIDICT_CHECK_MSG(a.find(other_key).get().size() == 1, what);
    }
    {
        auto made = make();  // collective construction
        if (waits_first()) {
            let_others_go_first();
            MPIDICT_CHECK_MSG(a.find(other_key).get().size() == 1, what);
        }
    }  // collective destruction: the odd ranks are here while the even ones wait above
    a.flush();
}

// 4. Not re-entered: an even rank iterates b's local table and, for each of its
//    first entries, waits on `a` for its neighbour, while the odd neighbour
//    floods b with inserts to it and then serves in b.flush().  The waits on
//    `a` serve other containers, but not b, which this thread is inside: its
//    table must not change under the iteration.
void no_service_inside_a_call(mpidict::hash_map<std::int64_t, std::int64_t>& a,
                              mpidict::hash_map<std::int64_t, std::int64_t>& b) {
    const int other = neighbour();
    const std::int64_t other_key = key_owned_by(a, other, 1000 * other);
    if (waits_first() && other != g_rank) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the flood starts
        const std::size_t before = b.local_size();
        std::size_t visited = 0;
        b.local_for_each([&](const std::int64_t&, const auto&) {
            if (visited++ < 5)
                MPIDICT_CHECK_MSG(a.find(other_key).get().size() == 1, "a.find inside b.local_for_each");
            MPIDICT_CHECK_MSG(b.local_size() == before, "b changed under its own local_for_each");
        });
        MPIDICT_CHECK_MSG(visited == before, "local_for_each visited every entry it started with");
    } else if (!waits_first()) {
        std::int64_t key = 1'000'000;
        for (int sent = 0; sent < 20000; ++key)
            if (b.owner(key) == other) {
                b.async_insert(key, key);
                ++sent;
            }
    }
    b.flush();
    a.flush();
}

// Checks a C call; on failure names mpidict_last_error() and ends the job
// (the other ranks would wait for this one).
void c_ok(int code, const char* what) {
    if (code == MPIDICT_OK)
        return;
    std::fprintf(stderr, "[rank %d] %s returned %d: %s\n", g_rank, what, code, mpidict_last_error());
    MPI_Abort(MPI_COMM_WORLD, 1);
}

// 3. The C API: list 2 is created while another rank waits in a range on list 1.
void c_create_while_waiting(mpidict::hash_map<std::int64_t, std::int64_t>& a) {
    mpidict_skiplist_options options;
    mpidict_skiplist_options_init(&options);
    mpidict_skiplist* first = nullptr;
    c_ok(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(std::int64_t), &options, &first), "create list 1");
    const std::int64_t value = g_rank;
    for (std::int64_t key = g_rank; key < 64; key += g_size)
        c_ok(mpidict_skiplist_insert_i64(first, key, &value, sizeof value, nullptr), "insert into list 1");
    c_ok(mpidict_skiplist_flush(first), "flush list 1");
    mpidict_skiplist* second = nullptr;
    if (waits_first()) {
        let_others_go_first();
        std::size_t count = 0;
        c_ok(mpidict_skiplist_range_i64(
                 first, 0, 63, 0, 0, [](const void*, std::size_t, const void*, std::size_t, void*) { return 0; },
                 nullptr, &count),
             "range on list 1");
        MPIDICT_CHECK_MSG(count == 64, "the range saw every key");
    }
    c_ok(mpidict_skiplist_create(MPI_COMM_WORLD, MPIDICT_SKIPLIST_INT64, sizeof(std::int64_t), &options, &second), "create list 2");
    if (waits_first()) {
        let_others_go_first();
        MPIDICT_CHECK_MSG(a.find(key_owned_by(a, neighbour(), 1000 * neighbour())).get().size() == 1,
                          "a.find while the neighbour destroys list 2");
    }
    c_ok(mpidict_skiplist_free(&second), "destroy list 2");
    c_ok(mpidict_skiplist_free(&first), "destroy list 1");
    a.flush();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        g_rank = rank;
        g_size = size;
        const mpidict::testing::watchdog dog(g_rank, std::chrono::seconds(90), "containers_serve_each_other");
        mpidict::hash_map<std::int64_t, std::int64_t> a(MPI_COMM_WORLD);
        mpidict::hash_map<std::int64_t, std::int64_t> b(MPI_COMM_WORLD);
        crossing_waits(a, b);
        collective_while_waiting(
            a, "hash_map", [] { return std::make_unique<mpidict::hash_map<std::int64_t, int>>(MPI_COMM_WORLD); });
        collective_while_waiting(a, "skiplist_map", [] {
            return std::make_unique<mpidict::skiplist_map<std::int64_t, int>>(MPI_COMM_WORLD);
        });
        collective_while_waiting(a, "linear_hash_map", [] {
            return std::make_unique<mpidict::linear_hash_map<std::int64_t, int>>(MPI_COMM_WORLD);
        });
        collective_while_waiting(a, "rma_hash_set",
                                 [] { return std::make_unique<mpidict::rma_hash_set<std::int64_t>>(MPI_COMM_WORLD); });
        c_create_while_waiting(a);
        no_service_inside_a_call(a, b);
    });
}
