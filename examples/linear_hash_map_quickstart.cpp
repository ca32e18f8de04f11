// The quick start of docs/linear_hash_map.md (scripts/check_doc_examples.py
// checks that the page shows this file's marked lines verbatim).  Run at 2 ranks
// by CTest; any number of ranks works.

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include <mpi.h>

#include <mpidict/linear_hash_map.hpp>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int ranks = 0, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int failures = 0;
    {
        // doc-begin
        std::vector<int> servers;
        for (int r = ranks - 1; r >= 0; --r)
            servers.push_back(r);                            // the last rank holds bucket 0
        mpidict::linear_hash_map_config config;
        config.server_ranks = servers;                       // activation order: bucket a on server_ranks[a]
        config.client_ranks = std::vector<int>{0};           // who may start operations (default: every rank)
        config.initial_servers = 1;                          // N: active at the start
        config.server_capacity_bytes = 64u << 10;            // key + value payload bytes per server
        mpidict::linear_hash_map<std::string, std::string> words(MPI_COMM_WORLD, config);  // collective

        if (words.is_client()) {
            mpidict::replace_result r = words.insert("fiets", std::string(1024, 'x')).get();
            if (!r.stored) { /* the answering server was full and no dormant server was left */ }
            std::optional<std::string> v = words.find("fiets").get();
            for (int i = 0; i < 200; ++i)
                words.async_insert("word" + std::to_string(i), std::string(500, 'y'));  // done by the next flush()
        }
        words.flush();                               // collective: everything answered, no split in progress
        mpidict::linear_hash_map_statistics s = words.gather_statistics();  // collective: splits, servers, forwards, IAMs
        // doc-end
        // 101 KB of payload against 64 KiB per server: the file must have split
        // onto a second server when there is one (split_load 0.8).
        if (ranks > 1 && s.splits.empty())
            ++failures;
        std::uint64_t entries = 0;
        for (const auto& server : s.servers)
            entries += server.entries;
        if (entries != 201)
            ++failures;
        if (words.is_client() && words.find("word7").get() != std::string(500, 'y'))
            ++failures;
        words.flush();
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("linear_hash_map quick start: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
