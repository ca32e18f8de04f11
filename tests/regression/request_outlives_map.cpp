// Regression (issue 18, item 9): a request that outlived its map read freed
// memory (ASan: heap use-after-free; the plain build printed a message read
// from freed memory), and two threads using one map without the progress thread
// ended in a UCX assertion, a 60 s hang or a double free.  Now get() on such a
// request throws use_after_destroy_error and destroying it is harmless, and a
// second thread entering a container while another thread is inside it gets an
// error (the container is unharmed).

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

map_type* g_map = nullptr;
std::string g_second_thread_error;

// Runs inside the engine (a handler, on the thread that waits in get()); a
// second thread tries to use the same map meanwhile.
std::uint64_t enter_from_another_thread(map_type::visit_context&, const std::uint64_t&, std::vector<std::uint64_t>& values,
                                        const std::uint64_t&) {
    std::thread second([] {
        try {
            g_map->async_insert(999, 1);
        } catch (const mpidict::error& problem) {
            g_second_thread_error = problem.what();
        }
    });
    second.join();
    return values.empty() ? 0 : values.front();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "request_outlives_map");
        const auto own = static_cast<std::uint64_t>(rank);
        {
            mpidict::request<std::vector<std::uint64_t>> orphan;
            mpidict::request<std::vector<std::uint64_t>> orphan_unread;
            {
                map_type map(MPI_COMM_WORLD);
                map.async_insert(mpidict::target_rank{rank}, own, 5);
                map.flush();
                // Started but never waited for before the map goes away.
                orphan = map.find(mpidict::target_rank{(rank + 1) % size}, own);
                orphan_unread = map.find(mpidict::target_rank{rank}, own);
                map.flush();
            }
            std::string message;
            try {
                (void)orphan.get();
            } catch (const mpidict::use_after_destroy_error& problem) {
                message = problem.what();
            }
            MPIDICT_CHECK_MSG(message.find("no longer exists") != std::string::npos, "orphan get(): " + message);
            // orphan_unread is destroyed here, after its map: nothing happens.
        }
        {
            mpidict::hash_map_config cyclic;
            cyclic.place = mpidict::placement::cyclic;  // key r lives on rank r
            map_type map(MPI_COMM_WORLD, cyclic);
            g_map = &map;
            auto visitor = map.register_visitor<std::uint64_t, std::uint64_t>("enter_from_another_thread",
                                                                              &enter_from_another_thread);
            map.async_insert(mpidict::target_rank{rank}, own, 3);
            map.flush();
            const std::uint64_t seen = map.visit(own, visitor, std::uint64_t{0}).get();
            MPIDICT_CHECK(seen == 3);
            MPIDICT_CHECK_MSG(g_second_thread_error.find("two threads entered one container") != std::string::npos,
                              "second thread: '" + g_second_thread_error + "'");
            // The map is unharmed and usable from this thread.
            map.flush();
            MPIDICT_CHECK(map.global_size() == static_cast<std::size_t>(size));
            MPIDICT_CHECK(map.find(mpidict::target_rank{rank}, own).get() == std::vector<std::uint64_t>{3});
            map.flush();
            g_map = nullptr;
        }
    });
}
