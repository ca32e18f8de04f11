// insert_if_absent as a visited set: every rank tries to claim the same keys at the
// same time (each in a different order); exactly one attempt per key wins, the
// stored value is the winner's, and every later attempt loses.

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::int32_t>;

constexpr std::uint64_t key_count = 300;

std::uint64_t key_at(std::uint64_t i) { return 5000 + i * 3; }

void request_form(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    // Start every attempt before waiting for any, in a rank-specific order.
    std::vector<std::uint64_t> order;
    for (std::uint64_t i = 0; i < key_count; ++i)
        order.push_back(key_at((i * 7 + static_cast<std::uint64_t>(rank) * key_count / static_cast<std::uint64_t>(size)) % key_count));
    std::vector<mpidict::request<bool>> attempts;
    for (std::uint64_t key : order)
        attempts.push_back(map.insert_if_absent(key, rank));
    std::vector<std::uint64_t> won;
    for (std::size_t i = 0; i < order.size(); ++i)
        if (attempts[i].get())
            won.push_back(order[i]);
    map.flush();

    const std::int64_t total_won = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(won.size()));
    MPIDICT_CHECK_MSG(total_won == static_cast<std::int64_t>(key_count), "wins " + std::to_string(total_won));

    // The stored value is the winner's; nobody else's value was added.
    for (std::uint64_t key : won)
        MPIDICT_CHECK(map.find(key).get() == std::vector<std::int32_t>{rank});
    std::size_t single = 0;
    for (std::uint64_t i = 0; i < key_count; ++i)
        single += map.find(key_at(i)).get().size() == 1 ? 1 : 0;
    MPIDICT_CHECK(single == key_count);

    // Once present, every attempt loses, from every rank.
    for (std::uint64_t i = 0; i < key_count; i += 17)
        MPIDICT_CHECK(!map.insert_if_absent(key_at(i), -1).get());
    map.flush();
    MPIDICT_CHECK(map.global_value_count() == key_count);

    // After a take empties a key it can be claimed again (exactly once).
    if (rank == 0)
        MPIDICT_CHECK(map.take(key_at(0)).get().size() == 1);
    map.flush();
    const bool reclaimed = map.insert_if_absent(key_at(0), 100 + rank).get();
    map.flush();
    MPIDICT_CHECK(mpidict::testing::sum_over_ranks(reclaimed ? 1 : 0) == 1);
    map.destroy();
}

void async_form(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    // Fire-and-forget claims from everyone, plus explicit-target claims.
    for (std::uint64_t i = 0; i < key_count; ++i)
        map.async_insert_if_absent(key_at((i + static_cast<std::uint64_t>(rank) * 11) % key_count), rank);
    const mpidict::target_rank root{0};
    for (std::uint64_t i = 0; i < 50; ++i)
        map.async_insert_if_absent(root, 900000 + i, rank);
    map.flush();
    for (std::uint64_t i = 0; i < key_count; ++i) {
        const std::vector<std::int32_t> values = map.find(key_at(i)).get();
        MPIDICT_CHECK(values.size() == 1 && values[0] >= 0 && values[0] < size);
    }
    for (std::uint64_t i = 0; i < 50; ++i)
        MPIDICT_CHECK(map.find(root, 900000 + i).get().size() == 1);
    map.flush();
    MPIDICT_CHECK(map.global_value_count() == key_count + 50);
    MPIDICT_CHECK(map.async_rejected() == 0);  // losing a claim is not a rejection
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_insert_if_absent");
        request_form(rank, size);
        async_form(rank, size);
    });
}
