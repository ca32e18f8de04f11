// The example of docs/checkpoint.md (scripts/check_doc_examples.py checks that
// the page shows this file's marked lines verbatim).  Run at 2 ranks by CTest,
// which then reads the checkpoint from Python (examples/read_checkpoint.py).
//
//   checkpoint_restart DIR     counts words into a hash_map, saves it to DIR,
//                              loads it into a new map and checks the counts

#include <cstdint>
#include <cstdio>
#include <string>

#include <mpi.h>

#include <mpidict/checkpoint.hpp>
#include <mpidict/hash_map.hpp>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    const std::string directory = argc > 1 ? argv[1] : "checkpoint_example";
    int failures = 0;
    {
        // doc-begin
        using counts = mpidict::hash_map<std::string, std::uint64_t>;
        {
            counts seen(MPI_COMM_WORLD);
            for (int i = 0; i < 1000; ++i)
                seen.async_insert(std::to_string((i * 7 + rank) % 300), 1);  // one value per sighting
            seen.save(directory);  // collective: flush, write every shard, then publish the manifest
        }
        // ... later, perhaps in another job on another number of ranks:
        counts restored(MPI_COMM_WORLD);
        try {
            restored.load(directory);  // collective: checks everything, then every key goes to its owner
        } catch (const mpidict::checkpoint_error& problem) {
            // missing, truncated or corrupt shard, other types, newer format: thrown
            // on every rank, with the message of the rank that found it; map left empty
            if (rank == 0)
                std::fprintf(stderr, "cannot restart: %s\n", problem.what());
        }
        // doc-end
        std::uint64_t sightings = 0;
        restored.for_all([&](const std::string&, const counts::values_view& values) { sightings += values.size(); });
        std::uint64_t total = 0;
        MPI_Allreduce(&sightings, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (total != 1000u * static_cast<std::uint64_t>(ranks) || restored.global_size() != 300)
            ++failures;
    }
    int all = 0;
    MPI_Allreduce(&failures, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("%s\n", all == 0 ? "checkpoint_restart: ok" : "checkpoint_restart: FAILED");
    MPI_Finalize();
    return all == 0 ? 0 : 1;
}
