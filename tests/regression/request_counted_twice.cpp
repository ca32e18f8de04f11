// Regression: one linear_hash_map::insert request was counted as two requests in
// the statistics (the engine counts a request when it opens its slot, and the
// container counted it again), while hash_map counted one.  Every container now
// leaves the request count to the engine; this pins one count per request, per
// operation kind, for both containers, and that fire-and-forget forms count as
// operations but not as requests.

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"

namespace {

template <class Map, class Kind>
void expect_counts(const Map& map, Kind kind, std::uint64_t operations, std::uint64_t requests, const char* what) {
    const auto& counters = map.stats()[kind];
    MPIDICT_CHECK_MSG(counters.operations == operations,
                      std::string(what) + ": operations " + std::to_string(counters.operations) + ", expected " +
                          std::to_string(operations));
    MPIDICT_CHECK_MSG(counters.requests == requests,
                      std::string(what) + ": requests " + std::to_string(counters.requests) + ", expected " +
                          std::to_string(requests));
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "request_counted_twice");
        constexpr std::uint64_t requests = 5;
        constexpr std::uint64_t fire_and_forget = 3;
        {
            mpidict::linear_hash_map_config config;
            mpidict::linear_hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
            const std::uint64_t base = 1000 * static_cast<std::uint64_t>(rank + 1);
            for (std::uint64_t i = 0; i < requests; ++i)
                map.insert(base + i, i).get();
            for (std::uint64_t i = 0; i < fire_and_forget; ++i)
                map.async_insert(base + 100 + i, i);
            for (std::uint64_t i = 0; i < requests; ++i)
                MPIDICT_CHECK(map.find(base + i).get() == i);
            map.flush();
            using op = mpidict::linear_hash_map_op;
            expect_counts(map, op::insert, requests + fire_and_forget, requests, "linear_hash_map insert");
            expect_counts(map, op::find, requests, requests, "linear_hash_map find");
            expect_counts(map, op::erase, 0, 0, "linear_hash_map erase");
            MPIDICT_CHECK(map.stats().kind_names == std::vector<std::string>({"insert", "find", "erase"}));
        }
        {
            mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD);
            const std::uint64_t base = 1000 * static_cast<std::uint64_t>(rank + 1);
            for (std::uint64_t i = 0; i < requests; ++i)
                map.insert(base + i, i).get();
            for (std::uint64_t i = 0; i < fire_and_forget; ++i)
                map.async_insert(base + 100 + i, i);
            for (std::uint64_t i = 0; i < requests; ++i)
                MPIDICT_CHECK(map.find(base + i).get() == std::vector<std::uint64_t>{i});
            map.flush();
            using op = mpidict::hash_map_op;
            expect_counts(map, op::insert, requests + fire_and_forget, requests, "hash_map insert");
            expect_counts(map, op::find, requests, requests, "hash_map find");
            MPIDICT_CHECK(map.stats().find("take") != nullptr && map.stats().find("take")->operations == 0);
            MPIDICT_CHECK(map.stats().find("range") == nullptr);
        }
        (void)size;
    });
}
