// Requests: test() polling until done; wait_all over a span and over a mixed
// pack; count(); abandoning unfinished requests (destroying them) is safe, their
// replies are discarded and the slot comes back; blocking factor L = 1 works and
// never lets more than one request be outstanding.

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

std::uint64_t key_of(int rank, std::uint64_t index) { return static_cast<std::uint64_t>(rank) * 10007 + index; }

void polling_and_wait_all(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    const int neighbour = (rank + 1) % size;
    for (std::uint64_t i = 0; i < 40; ++i) {
        const std::uint64_t values[] = {i, i + 1, i + 2};
        map.async_insert(key_of(rank, i), std::span<const std::uint64_t>(values, 1 + i % 3));
    }
    map.flush();

    // test() until done, on keys owned anywhere.
    std::uint64_t polls = 0;
    for (std::uint64_t i = 0; i < 40; ++i) {
        auto request = map.find(key_of(neighbour, i));
        MPIDICT_CHECK(request.valid());
        while (!request.test())
            ++polls;
        MPIDICT_CHECK(request.test());  // stays done
        MPIDICT_CHECK(request.count() == 1 + i % 3);
        const std::vector<std::uint64_t> values = request.get();
        MPIDICT_CHECK(values.size() == 1 + i % 3 && values[0] == i);
        MPIDICT_CHECK(!request.valid());  // get() consumed it
    }
    (void)polls;

    // wait_all over a span of requests of one type.
    std::vector<mpidict::request<std::vector<std::uint64_t>>> finds;
    for (std::uint64_t i = 0; i < 40; ++i)
        finds.push_back(map.find(key_of(neighbour, i), 2));
    mpidict::wait_all(std::span<mpidict::request<std::vector<std::uint64_t>>>(finds));
    for (std::uint64_t i = 0; i < 40; ++i) {
        MPIDICT_CHECK(finds[i].test());
        MPIDICT_CHECK(finds[i].get().size() == std::min<std::uint64_t>(2, 1 + i % 3));
    }
    // wait_all skips empty (consumed) requests.
    mpidict::wait_all(std::span<mpidict::request<std::vector<std::uint64_t>>>(finds));

    map.flush();  // everyone has read; the erase below changes what they read

    // wait_all over a pack of different request types.
    const std::uint64_t fresh = key_of(rank, 500);
    const std::uint64_t value = 9;
    auto inserted = map.insert(fresh, std::span<const std::uint64_t>(&value, 1));
    auto claimed = map.insert_if_absent(key_of(rank, 501), 1);
    auto found = map.find(key_of(neighbour, 0));
    auto erased = map.erase(key_of(rank, 39));
    mpidict::wait_all(inserted, claimed, found, erased);
    MPIDICT_CHECK(inserted.test() && claimed.test() && found.test() && erased.test());
    MPIDICT_CHECK(inserted.get().stored == 1);
    MPIDICT_CHECK(claimed.get());
    MPIDICT_CHECK(found.get() == std::vector<std::uint64_t>{0});
    MPIDICT_CHECK(erased.get() == 1 + 39 % 3);

    // A moved-from or consumed request refuses politely.
    auto moved = map.find(fresh);
    auto target = std::move(moved);
    MPIDICT_CHECK(!moved.valid());
    MPIDICT_EXPECT_ERROR(mpidict::error, moved.wait(), "empty request");
    MPIDICT_CHECK(target.get() == std::vector<std::uint64_t>{9});
    MPIDICT_EXPECT_ERROR(mpidict::error, target.get(), "empty request");
    map.flush();
    map.destroy();
}

void abandoned_requests(int rank, int size, std::size_t blocking_factor) {
    mpidict::hash_map_config settings;
    settings.runtime.blocking_factor = blocking_factor;
    map_type map(MPI_COMM_WORLD, settings);
    const int neighbour = (rank + 1) % size;
    const std::uint64_t a = key_of(rank, 1);
    const std::uint64_t b = key_of(rank, 2);
    const std::uint64_t a_values[] = {1, 2, 3};
    map.async_insert(a, std::span<const std::uint64_t>(a_values));
    map.async_insert(b, 99);
    map.flush();

    // Abandon finds of A (other rank's copy) and take nothing; then ask for B.  The
    // reply for B must be B's, never a late reply for an abandoned A.
    for (int round = 0; round < 100; ++round) {
        {
            auto dropped = map.find(key_of(neighbour, 1));
            auto dropped_insert = map.insert_if_absent(key_of(rank, 3), 0);  // applied even though abandoned
        }
        auto kept = map.find(key_of(neighbour, 2));
        MPIDICT_CHECK_MSG(kept.get() == std::vector<std::uint64_t>{99}, "round " + std::to_string(round));
    }
    map.flush();
    MPIDICT_CHECK(map.engine().outstanding_requests() == 0);  // abandoned slots came back
    MPIDICT_CHECK(map.find(a).get() == (std::vector<std::uint64_t>{1, 2, 3}));  // a find changes nothing
    MPIDICT_CHECK(map.find(key_of(rank, 3)).get() == std::vector<std::uint64_t>{0});
    // Abandoned take still removes (the operation ran; only its answer was dropped).
    { auto dropped_take = map.take(a, 1); }
    map.flush();
    MPIDICT_CHECK(map.find(a).get() == (std::vector<std::uint64_t>{2, 3}));
    // Abandoned requests hold their slot until their reply arrives, so with a large
    // window they may pile up; with L = 1 there is never more than one.
    if (blocking_factor == 1)
        MPIDICT_CHECK_MSG(map.stats().outstanding_requests_high_water == 1,
                          "high water " + std::to_string(map.stats().outstanding_requests_high_water));
    map.flush();
    map.destroy();
}

void blocking_factor_one(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.runtime.blocking_factor = 1;
    map_type map(MPI_COMM_WORLD, settings);
    const int neighbour = (rank + 1) % size;
    // Start 120 requests without waiting: each start waits for the previous answer.
    std::vector<mpidict::request<mpidict::insert_result>> inserts;
    for (std::uint64_t i = 0; i < 120; ++i) {
        const std::uint64_t value = i * 2;
        inserts.push_back(map.insert(key_of(rank, i), std::span<const std::uint64_t>(&value, 1)));
        MPIDICT_CHECK(map.engine().outstanding_requests() <= 1);
    }
    for (auto& request : inserts)
        MPIDICT_CHECK(request.get().stored == 1);
    map.flush();
    std::vector<mpidict::request<std::vector<std::uint64_t>>> finds;
    for (std::uint64_t i = 0; i < 120; ++i)
        finds.push_back(map.find(key_of(neighbour, i)));
    for (std::uint64_t i = 0; i < 120; ++i)
        MPIDICT_CHECK(finds[i].get() == std::vector<std::uint64_t>{i * 2});
    const mpidict::runtime::statistics& stats = map.stats();
    MPIDICT_CHECK_MSG(stats.outstanding_requests_high_water == 1,
                      "high water " + std::to_string(stats.outstanding_requests_high_water));
    MPIDICT_CHECK(stats.window_stalls > 0);
    // Async forms are not limited by L.
    for (std::uint64_t i = 0; i < 500; ++i)
        map.async_insert(key_of(rank, 1000 + i), i);
    map.flush();
    MPIDICT_CHECK(map.global_value_count() == static_cast<std::size_t>(size) * 620);
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_requests");
        polling_and_wait_all(rank, size);
        abandoned_requests(rank, size, 1);
        abandoned_requests(rank, size, 4096);
        blocking_factor_one(rank, size);
    });
}
