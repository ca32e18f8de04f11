// Word count with a top 10 (docs/coming_from_ygm.md): every rank reads its
// share of the lines of a text, counts words with async_reduce (combined at the
// origin: one record per distinct word per buffer), and every rank gets the
// ten most frequent words from gather_topk.  Without a file it counts a text it
// makes up (word i of a vocabulary of 50 appears 50 - i times on every rank) and
// checks the answer.  Run at 2 ranks by CTest; `mpiexec -n 4 word_count FILE`
// counts a file.

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include <mpidict/hash_map.hpp>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    std::vector<std::string> lines;
    if (argc > 1) {
        std::ifstream in(argv[1]);
        std::string line;
        for (long number = 0; std::getline(in, line); ++number)
            if (number % ranks == rank)  // every rank its share of the lines
                lines.push_back(line);
    } else {
        for (int word = 0; word < 50; ++word)
            for (int copy = 0; copy < 50 - word; ++copy)
                lines.push_back("word" + std::to_string(word));
    }
    int failures = 0;
    {
        // doc-begin count
        mpidict::hash_map<std::string, std::uint64_t> counts(MPI_COMM_WORLD);
        for (const std::string& line : lines) {
            std::istringstream words(line);
            for (std::string word; words >> word;)
                counts.async_reduce(word, 1);   // std::plus by default; a new word starts at 1
        }
        counts.flush();
        using entry = std::pair<std::string, std::uint64_t>;
        const std::vector<entry> top = counts.gather_topk(10, [](const entry& a, const entry& b) {
            return a.second > b.second;          // every rank gets the same ten
        });
        // doc-end count
        if (rank == 0)
            for (const auto& [word, n] : top)
                std::printf("%8llu %s\n", static_cast<unsigned long long>(n), word.c_str());
        if (argc <= 1) {
            for (std::size_t i = 0; i < top.size(); ++i)
                if (top[i].first != "word" + std::to_string(i) || top[i].second != (50 - i) * std::uint64_t(ranks))
                    ++failures;
            if (top.size() != 10 || counts.global_size() != 50)
                ++failures;
        }
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("word count: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
