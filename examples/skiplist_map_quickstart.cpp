// The quick start of docs/skiplist_map.md (scripts/check_doc_examples.py checks
// that the page shows this file's marked lines verbatim).  Run at 2 ranks by CTest.

#include <cstdint>
#include <cstdio>
#include <optional>

#include <mpi.h>

#include <mpidict/skiplist_map.hpp>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int failures = 0;
    {
        // doc-begin
        mpidict::skiplist_map<std::int64_t, double> map(MPI_COMM_WORLD);  // collective
        map.insert(42, 1.5).get();                       // insert or replace
        bool fresh = map.insert_if_absent(7, 2.0).get(); // false if 7 was there
        std::optional<double> v = map.find(42).get();
        map.async_erase(7);                              // fire-and-forget
        map.flush();                                     // collective: everything applied
        auto part = map.range(0, 100, {.limit = 10}).get();          // [0, 100], first 10
        auto last = map.range(0, 100, {.limit = 3, .descending = true}).get();
        // doc-end
        // Every rank did the same: 42 is there, 7 was erased by someone after its
        // insert (whichever rank's erase came last), and the ranges agree.
        if (!v || *v != 1.5 || part.empty() || part.front().first != 42 || last.size() != part.size())
            ++failures;
        if (map.find(7).get().has_value())
            ++failures;
        (void)fresh;
        map.flush();
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        std::printf("%s\n", total == 0 ? "skiplist_map quick start: ok" : "skiplist_map quick start: FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
