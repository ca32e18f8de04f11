// The quick start of docs/rma_hash_set.md (scripts/check_doc_examples.py checks
// that the page shows this file's marked lines verbatim).  Run at 2 ranks by CTest.

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <span>
#include <vector>

#include <mpi.h>

#include <mpidict/rma_hash_set.hpp>

int main(int argc, char** argv) {
    int failures = 0;
    int rank = 0;
    // doc-begin
    MPI_Init(&argc, &argv);
    mpidict::rma_hash_set_config config;
    config.expected_per_rank = 1'000;            // slots = expected / max_load (0.5)
    config.sync = mpidict::rma_sync::lock_free;  // or owner_lock (seed 002's strategy)
    mpidict::rma_hash_set<std::array<std::uint32_t, 2>> set(MPI_COMM_WORLD, config);  // collective

    std::array<std::uint32_t, 2> point{3, 4};
    bool fresh = set.insert_if_absent(point).get();  // true: it was new (the request is complete on return)
    bool seen  = set.contains(point).get();       // a request, as everywhere (complete on return)
    std::vector<std::array<std::uint32_t, 2>> points{{1, 2}, {3, 4}, {5, 6}};
    auto batch = set.insert_if_absent_many(std::span<const std::array<std::uint32_t, 2>>(points));
    for (std::size_t i : batch.not_inserted_indices) { (void)points[i]; /* not stored: its owner is full */ }
    set.barrier();                               // collective; then local_for_each sees everything
    // doc-end
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    // Every rank inserted the same points: exactly one rank found {3, 4} new.
    int fresh_count = fresh ? 1 : 0, fresh_total = 0;
    MPI_Allreduce(&fresh_count, &fresh_total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (fresh_total != 1 || !seen || batch.not_inserted != 0 || batch.inserted + batch.present != 3)
        ++failures;
    std::size_t local = 0;
    set.local_for_each([&](const std::array<std::uint32_t, 2>&) { ++local; });
    unsigned long long local_count = local, total_count = 0;
    MPI_Allreduce(&local_count, &total_count, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
    if (total_count != 3 || set.global_size() != 3)
        ++failures;
    // doc-begin teardown
    set.destroy();                               // collective (the destructor does it too)
    // doc-end teardown
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("rma_hash_set quick start: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
