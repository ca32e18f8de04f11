// The map's own collective queries (global_size, global_value_count) must keep
// answering other ranks while they wait for the
// collective to complete: a rank may enter one while another rank still waits on
// a request this rank owns (the other rank will join the collective as soon as its
// answer arrives).  "Every library call makes progress" (docs/architecture.md, Runtime contract).
//
// Pins a core bug found by mpi_hash_map_basic: these calls block in a plain
// MPI_Allreduce without progress (and, with a progress thread, while holding the
// engine lock), so the job deadlocks.  The watchdog turns the hang into a failure.

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

int identity(map_type::visit_context&, const std::uint64_t&, std::vector<std::uint64_t>& values, const int&) {
    return static_cast<int>(values.size());
}

// Every rank but 0 first waits for an answer from rank 0; rank 0 goes straight
// into the collective.
void answer_then_collective(map_type& map, int rank, std::uint64_t key) {
    if (rank != 0)
        MPIDICT_CHECK(map.find(mpidict::target_rank{0}, key).get() == std::vector<std::uint64_t>{key});
}

void run(int rank, int size, bool progress_thread) {
    mpidict::hash_map_config settings;
    settings.runtime.progress_thread = progress_thread;
    map_type map(MPI_COMM_WORLD, settings);
    if (rank == 0)
        for (std::uint64_t key = 1; key <= 3; ++key)
            map.async_insert(mpidict::target_rank{0}, key, key);
    map.flush();

    answer_then_collective(map, rank, 1);
    MPIDICT_CHECK(map.global_size() == 3);

    answer_then_collective(map, rank, 2);
    MPIDICT_CHECK(map.global_value_count() == 3);

    // register_visitor is a set-up collective (it serves nobody while it waits, so
    // a visitor's id is known before any visit runs): call it after a flush.
    answer_then_collective(map, rank, 3);
    map.flush();
    const auto visitor = map.register_visitor("identity", &identity);
    MPIDICT_CHECK(map.visit(mpidict::target_rank{0}, 1, visitor, 0).get() == 1);
    map.flush();
    map.destroy();
    (void)size;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(20), "mpi_hash_map_collective_progress");
        run(rank, size, false);
        run(rank, size, true);
    });
}
