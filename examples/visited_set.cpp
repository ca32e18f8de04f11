// A visited set with rma_hash_set (docs/coming_from_ygm.md): the orbit of 1
// under x -> 3x + 1 and x -> x * x + 5 (mod a prime), found by a distributed
// traversal.  A rank claims a point with insert_if_absent_many (one-sided: the
// owner need not take part) and expands only the points it claimed, so every
// point is expanded once over all ranks.  Work moves round-robin by an
// all-to-all of the next frontier.  Checked against a serial traversal.  Run at
// 2 ranks by CTest.

#include <cstdint>
#include <cstdio>
#include <span>
#include <unordered_set>
#include <vector>

#include <mpi.h>

#include <mpidict/rma_hash_set.hpp>

namespace {

constexpr std::uint64_t prime = 100'003;

std::uint64_t step_a(std::uint64_t x) { return (3 * x + 1) % prime; }
std::uint64_t step_b(std::uint64_t x) { return (x * x + 5) % prime; }

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    int failures = 0;
    {
        // doc-begin visited
        mpidict::rma_hash_set_config config;
        config.expected_per_rank = 2 * prime / static_cast<std::uint64_t>(ranks) + 1024;
        mpidict::rma_hash_set<std::uint64_t> visited(MPI_COMM_WORLD, config);
        std::vector<std::uint64_t> frontier;
        if (rank == 0)
            frontier.push_back(1);
        std::uint64_t expanded = 0;
        for (;;) {
            // Claim the frontier: a point is ours to expand if we inserted it first.
            const auto claimed = visited.insert_if_absent_many(std::span<const std::uint64_t>(frontier));
            std::vector<std::uint64_t> next;
            for (std::size_t i = 0; i < frontier.size(); ++i) {
                if (claimed.status[i] != mpidict::insert_status::inserted)
                    continue;
                ++expanded;
                next.push_back(step_a(frontier[i]));
                next.push_back(step_b(frontier[i]));
            }
            // Spread the next level round-robin over the ranks (any split works).
            std::vector<int> send_counts(ranks), send_offsets(ranks), receive_counts(ranks), receive_offsets(ranks);
            for (std::size_t i = 0; i < next.size(); ++i)
                ++send_counts[i % static_cast<std::size_t>(ranks)];
            std::vector<std::uint64_t> ordered(next.size());
            for (int r = 0, offset = 0; r < ranks; offset += send_counts[r], ++r)
                send_offsets[r] = offset;
            std::vector<int> fill = send_offsets;
            for (std::size_t i = 0; i < next.size(); ++i)
                ordered[static_cast<std::size_t>(fill[i % static_cast<std::size_t>(ranks)]++)] = next[i];
            MPI_Alltoall(send_counts.data(), 1, MPI_INT, receive_counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
            int received = 0;
            for (int r = 0; r < ranks; ++r) {
                receive_offsets[r] = received;
                received += receive_counts[r];
            }
            frontier.resize(static_cast<std::size_t>(received));
            MPI_Alltoallv(ordered.data(), send_counts.data(), send_offsets.data(), MPI_UINT64_T, frontier.data(),
                          receive_counts.data(), receive_offsets.data(), MPI_UINT64_T, MPI_COMM_WORLD);
            long mine = static_cast<long>(frontier.size()), total = 0;
            MPI_Allreduce(&mine, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (total == 0)
                break;
        }
        visited.barrier();
        // doc-end visited
        std::unordered_set<std::uint64_t> orbit{1};
        std::vector<std::uint64_t> stack{1};
        while (!stack.empty()) {
            const std::uint64_t x = stack.back();
            stack.pop_back();
            for (std::uint64_t y : {step_a(x), step_b(x)})
                if (orbit.insert(y).second)
                    stack.push_back(y);
        }
        std::uint64_t total_expanded = 0;
        MPI_Allreduce(&expanded, &total_expanded, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
        if (visited.global_size() != orbit.size() || total_expanded != orbit.size())
            ++failures;
        if (rank == 0)
            std::printf("orbit of 1: %zu points\n", orbit.size());
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("visited set: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
