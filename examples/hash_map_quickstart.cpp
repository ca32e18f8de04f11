// The quick start of docs/hash_map.md (scripts/check_doc_examples.py checks that
// the page shows this file's marked lines verbatim).  Run at 2 ranks by CTest.

#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include <mpi.h>

#include <mpidict/hash_map.hpp>

int main(int argc, char** argv) {
    // doc-begin
    MPI_Init(&argc, &argv);
    mpidict::hash_map_config config;
    config.expected_keys_per_rank = 1'000'000;          // capacity hint
    mpidict::hash_map<std::uint64_t, double> map(MPI_COMM_WORLD, config);   // collective

    map.async_insert(42, 3.5);                 // fire-and-forget, applied by the next flush
    std::vector<double> values{1.0, 2.0, 3.0};
    auto stored = map.insert(7, std::span<const double>(values));   // request<insert_result>
    map.flush();                               // collective: everything above is applied

    std::vector<double> found = map.find(42).get();   // every value of 42, insertion order
    std::vector<double> taken = map.take(7, 2).get(); // removes 2 of key 7's values, oldest first
    bool fresh = map.insert_if_absent(9, 1.0).get();  // visited-set primitive
    // doc-end
    // Every rank ran the same lines: 42 holds one 3.5 per rank, 7 got three
    // values per rank and each rank took two of them.
    int ranks = 0, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int failures = 0;
    if (stored.get().stored != 3 || found.size() != static_cast<std::size_t>(ranks) || found.front() != 3.5 ||
        taken.size() != 2)
        ++failures;
    int fresh_count = fresh ? 1 : 0, fresh_total = 0;
    map.flush();
    if (map.global_size() != 3)  // keys 42, 7 and 9
        ++failures;
    if (map.find(42).get().size() != static_cast<std::size_t>(ranks) ||
        map.find(7).get().size() != static_cast<std::size_t>(ranks))
        ++failures;
    // A plain MPI collective only after a flush: a rank blocked in MPI_Allreduce
    // answers no requests, and another rank may still wait for its find.
    map.flush();
    MPI_Allreduce(&fresh_count, &fresh_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (fresh_total != 1)  // exactly one rank inserted 9
        ++failures;
    // doc-begin teardown
    map.destroy();                             // collective (the destructor does it too)
    MPI_Finalize();
    // doc-end teardown
    int total = failures;  // (MPI is finalized: each rank reports its own)
    std::printf("hash_map quick start on rank %d: %s\n", rank, total == 0 ? "ok" : "FAILED");
    return total == 0 ? 0 : 1;
}
