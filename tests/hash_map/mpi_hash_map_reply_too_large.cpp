// A find or take whose answer would not fit in one message (B = 1024; two
// 600-byte values need 1208 reply bytes, one message holds 1004) is a user error:
// it must raise mpidict::error on the CALLING rank with a message naming the
// sizes, leave the owner running and its data untouched (nothing taken), and leave
// no request slot behind; the same lookup with a smaller limit then works.
// (docs/architecture.md, Errors and bad input: "raise a clear exception on the calling rank";
// "No input may crash or hang the job, or lose stored data".)
//
// Pins a core bug: the owner's handler throws, so at >= 2 ranks the exception
// surfaces on the owner (inside whatever library call it is making, e.g. flush)
// and the job dies, while the caller would wait forever.

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::string>;

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(30), "mpi_hash_map_reply_too_large");
        mpidict::hash_map_config settings;
        settings.runtime.buffer_bytes = 1024;
        map_type map(MPI_COMM_WORLD, settings);
        const int owner = size - 1;
        const mpidict::target_rank to{owner};
        const std::string first(600, 'a');
        const std::string second(600, 'b');
        if (rank == 0) {
            map.async_insert(to, 1, first);
            map.async_insert(to, 1, second);
        }
        map.flush();

        if (rank == 0) {
            MPIDICT_EXPECT_ERROR(mpidict::error, map.find(to, 1).get(), "1208", "1004");
            MPIDICT_EXPECT_ERROR(mpidict::error, map.take(to, 1).get(), "1208", "1004");
            // With a limit that fits, the lookup works and nothing was taken.
            MPIDICT_CHECK(map.find(to, 1, 1).get() == std::vector<std::string>{first});
            MPIDICT_CHECK(map.take(to, 1, 1).get() == std::vector<std::string>{first});
            MPIDICT_CHECK(map.find(to, 1).get() == std::vector<std::string>{second});
        }
        map.flush();
        MPIDICT_CHECK(map.engine().outstanding_requests() == 0);
        MPIDICT_CHECK(map.global_value_count() == 1);
        map.destroy();
    });
}
