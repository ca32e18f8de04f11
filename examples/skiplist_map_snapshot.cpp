// The snapshot example of docs/skiplist_map.md, "Snapshots" (scripts/check_doc_examples.py
// checks that the page shows this file's marked lines verbatim).  Run at 2 ranks by CTest.

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include <mpi.h>

#include <mpidict/skiplist_map.hpp>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int failures = 0;
    {
        mpidict::skiplist_map<std::int64_t, std::string> prices(MPI_COMM_WORLD);
        prices.insert(100 + rank, "open").get();
        // doc-begin
        auto snap = prices.snapshot();                    // collective: the cut is this call
        prices.insert(100 + rank, "changed").get();       // later writes...
        prices.async_erase(100);
        prices.flush();
        std::optional<std::string> was = snap.find(100);  // ...are not seen: "open"
        auto page = snap.range(0, 1000, {.limit = 10});   // ranges, counts, descending, paging
        std::size_t mine = 0;
        snap.for_all([&](std::int64_t, const std::string&) { ++mine; });  // this rank's slice, in key order
        snap.release();                                   // collective (or the destructor)
        // doc-end
        int ranks = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &ranks);
        if (!was || *was != "open" || page.size() != static_cast<std::size_t>(ranks))
            ++failures;
        for (const auto& [key, value] : page)
            failures += value != "open";
        unsigned long long local = mine, total = 0;
        prices.flush();  // serve reads still on their way before an MPI collective of our own
        MPI_Allreduce(&local, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        failures += total != static_cast<unsigned long long>(ranks);
        if (prices.find(100).get().has_value())
            ++failures;
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("%s\n", all == 0 ? "skiplist_map snapshot: ok" : "skiplist_map snapshot: FAILED");
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
