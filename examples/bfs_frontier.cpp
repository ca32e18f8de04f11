// Breadth-first search with a frontier (docs/coming_from_ygm.md): the graph is
// a 2D grid of side n with a few long edges, held as a hash_map from vertex to
// neighbours; distances live in a second hash_map, set by a lambda visitor at
// each vertex's owner the first time it is reached (async_visit: no reply, no
// registration).  Each level ends with a flush; the vertices a rank owns that
// got their distance in this level are its next frontier.  Every rank checks the
// distances it owns against a serial BFS.  Run at 2 ranks by CTest.

#include <cstdint>
#include <cstdio>
#include <deque>
#include <vector>

#include <mpi.h>

#include <mpidict/hash_map.hpp>

namespace {

constexpr std::uint64_t side = 40;
constexpr std::uint64_t vertices = side * side;

std::vector<std::uint64_t> neighbours_of(std::uint64_t v) {
    std::vector<std::uint64_t> out;
    const std::uint64_t x = v % side, y = v / side;
    if (x + 1 < side) out.push_back(v + 1);
    if (x > 0) out.push_back(v - 1);
    if (y + 1 < side) out.push_back(v + side);
    if (y > 0) out.push_back(v - side);
    if (v % 97 == 0) out.push_back((v * 31 + 7) % vertices);  // a few long edges (one way)
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    int failures = 0;
    {
        // doc-begin bfs
        using map = mpidict::hash_map<std::uint64_t, std::uint64_t>;
        map graph(MPI_COMM_WORLD);      // vertex -> its neighbours (one value each)
        map distance(MPI_COMM_WORLD);   // vertex -> its distance from the source
        int ranks = graph.num_ranks();
        for (std::uint64_t v = static_cast<std::uint64_t>(rank); v < vertices; v += static_cast<std::uint64_t>(ranks))
            for (std::uint64_t w : neighbours_of(v))
                graph.async_insert(v, w);
        graph.flush();

        std::vector<std::uint64_t> frontier;      // the vertices of this level that this rank owns
        if (distance.owner(0) == rank) {
            frontier.push_back(0);
            distance.async_insert(0, 0);
        }
        distance.flush();
        for (std::uint64_t level = 1;; ++level) {
            for (std::uint64_t v : frontier)
                for (std::uint64_t w : graph.local_find(v))   // v's neighbours are here: v is ours
                    distance.async_visit(w, [](const std::uint64_t&, map::values_ref& d, std::uint64_t next) {
                        if (d.empty())
                            d.push_back(next);      // first reached: at most once per vertex
                    }, level);
            distance.flush();
            frontier.clear();
            distance.local_for_each([&](std::uint64_t v, const map::values_view& d) {
                if (d[0] == level)
                    frontier.push_back(v);
            });
            std::uint64_t reached = frontier.size(), total = 0;
            MPI_Allreduce(&reached, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
            if (total == 0)
                break;
        }
        // doc-end bfs
        // A serial BFS on every rank; each rank checks the vertices it owns.
        std::vector<std::uint64_t> expected(vertices, UINT64_MAX);
        std::deque<std::uint64_t> queue{0};
        expected[0] = 0;
        while (!queue.empty()) {
            const std::uint64_t v = queue.front();
            queue.pop_front();
            for (std::uint64_t w : neighbours_of(v))
                if (expected[w] == UINT64_MAX) {
                    expected[w] = expected[v] + 1;
                    queue.push_back(w);
                }
        }
        std::size_t owned = 0;
        distance.local_for_each([&](std::uint64_t v, const map::values_view& d) {
            ++owned;
            if (d.size() != 1 || d[0] != expected[v])
                ++failures;
        });
        if (distance.global_size() != vertices)
            ++failures;
        (void)owned;
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        std::printf("bfs with a frontier: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
