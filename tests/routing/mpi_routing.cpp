// Grid routing (runtime::config::routing) against direct routing: the same
// operations give the same answers in both, records really take two hops under
// grid routing at 3+ ranks, each rank keeps outboxes for its row and column
// only, and ranks that disagree on the routing are refused together.

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using mpidict::runtime::routing_mode;
constexpr std::uint64_t keys_per_rank = 3000;
constexpr std::uint64_t shared_keys = 40;
constexpr std::uint64_t shared_base = std::uint64_t{1} << 40;  // reduced keys: shared_base + 0 .. shared_keys - 1

std::uint64_t key_of(int rank, std::uint64_t index) { return std::uint64_t(rank) * 1000003u + index * 7u + 1u; }

// Everything one hash_map run answers, for comparing the two routings.
struct answers {
    std::vector<std::uint64_t> neighbour_values;      // find of every key of rank+1
    std::vector<std::uint64_t> blocking_values;       // single finds, each waited on
    std::vector<std::pair<std::uint64_t, std::uint64_t>> totals;  // gather_all of the reduced keys
    std::uint64_t global_size = 0;
    std::int64_t forwarded = 0;                       // records forwarded, summed over ranks
    std::int64_t peers = 0;                           // outboxes kept, summed over ranks
};

// `fill`: 0 for 1 KiB buffers (many messages, so groups of every kind split
// across them); otherwise 16 KiB buffers that leave at `fill` bytes
// (config::total_outbox_bytes = fill x peers).
answers run_hash_map(routing_mode routing, int rank, int size, std::size_t fill = 0) {
    mpidict::hash_map_config config;
    config.runtime.routing = routing;
    config.runtime.buffer_bytes = fill == 0 ? 1024 : 16384;
    config.runtime.total_outbox_bytes = fill == 0 ? 0 : fill * static_cast<std::size_t>(size);
    mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
    // Under grid routing a rank has fewer than `size` peers, so the mark may
    // come out above `fill` (never above B, never below 4 KiB).
    const std::size_t peers = map.engine().peer_count();
    const std::size_t mark = fill == 0 ? 1024 : std::min<std::size_t>(16384, fill * std::size_t(size) / peers);
    MPIDICT_CHECK_MSG(map.engine().outbox_fill_bytes() == mark,
                      "fill mark " + std::to_string(map.engine().outbox_fill_bytes()) + ", expected " +
                          std::to_string(mark));
    answers out;
    for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
        const std::uint64_t key = key_of(rank, index);
        map.async_insert(key, key * 3);
        map.async_reduce(shared_base + index % shared_keys, index + std::uint64_t(rank));
    }
    map.flush();
    out.global_size = map.global_size();

    std::vector<std::uint64_t> keys;
    const int neighbour = (rank + 1) % size;
    for (std::uint64_t index = 0; index < keys_per_rank; ++index)
        keys.push_back(key_of(neighbour, index));
    out.neighbour_values.assign(keys.size(), 0);
    map.find_many(std::span<const std::uint64_t>(keys), 1, [&](std::size_t at, const auto& values) {
        MPIDICT_CHECK(values.size() == 1);
        if (values.size() == 1)
            out.neighbour_values[at] = values[0];
    });
    // Latency mode: every rank waits on single finds of the rank farthest off
    // in the grid while the others do the same (each answer may need a corner
    // that is itself waiting).
    const int far = size - 1 - rank;
    for (std::uint64_t index = 0; index < 50; ++index) {
        const auto values = map.find(key_of(far, index * 13)).get();
        out.blocking_values.push_back(values.size() == 1 ? values[0] : 0);
    }
    map.flush();
    out.totals.clear();
    for (const auto& [key, value] : map.gather_all())
        if (key >= shared_base)
            out.totals.emplace_back(key - shared_base, value);
    std::sort(out.totals.begin(), out.totals.end());
    // No message passed the mark (every record here is far smaller than it).
    MPIDICT_CHECK_MSG(map.stats().bytes_sent <= map.stats().messages_sent * mark,
                      std::to_string(map.stats().bytes_sent) + " bytes in " +
                          std::to_string(map.stats().messages_sent) + " messages, mark " + std::to_string(mark));
    out.forwarded = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(map.stats().records_forwarded));
    out.peers = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(map.engine().peer_count()));
    MPIDICT_CHECK(map.engine().routing() == (routing == routing_mode::grid && size > 2 ? routing_mode::grid
                                                                                    : routing_mode::direct));
    map.destroy();
    return out;
}

void hash_map_both_ways(int rank, int size) {
    const answers direct = run_hash_map(routing_mode::direct, rank, size);
    const answers grid = run_hash_map(routing_mode::grid, rank, size);
    // Outboxes that leave at 4 KiB of 16 KiB buffers (config::total_outbox_bytes).
    for (const routing_mode routing : {routing_mode::direct, routing_mode::grid}) {
        const answers early = run_hash_map(routing, rank, size, 4096);
        MPIDICT_CHECK(early.global_size == direct.global_size);
        MPIDICT_CHECK(early.neighbour_values == direct.neighbour_values);
        MPIDICT_CHECK(early.blocking_values == direct.blocking_values);
        MPIDICT_CHECK(early.totals == direct.totals);
    }
    // The serial answer.
    MPIDICT_CHECK(direct.global_size == std::uint64_t(size) * keys_per_rank + std::min<std::uint64_t>(shared_keys, keys_per_rank));
    for (std::uint64_t index = 0; index < keys_per_rank; ++index)
        MPIDICT_CHECK(direct.neighbour_values[index] == key_of((rank + 1) % size, index) * 3);
    for (std::uint64_t index = 0; index < 50; ++index)
        MPIDICT_CHECK(direct.blocking_values[index] == key_of(size - 1 - rank, index * 13) * 3);
    MPIDICT_CHECK(direct.totals.size() == shared_keys);
    for (const auto& [key, total] : direct.totals) {
        std::uint64_t expected = 0;
        for (int r = 0; r < size; ++r)
            for (std::uint64_t index = key; index < keys_per_rank; index += shared_keys)
                expected += index + std::uint64_t(r);
        MPIDICT_CHECK(total == expected);
    }
    // Grid routing answers the same.
    MPIDICT_CHECK(grid.global_size == direct.global_size);
    MPIDICT_CHECK(grid.neighbour_values == direct.neighbour_values);
    MPIDICT_CHECK(grid.blocking_values == direct.blocking_values);
    MPIDICT_CHECK(grid.totals == direct.totals);
    // ... and really routes.  4 ranks: a 2 x 2 grid, 3 peers each.  3 ranks:
    // rows {0, 1} and {2}; 1 reaches 2 through 0, 2 reaches 1 directly (the
    // rank above its row's gap), so the peers are {0, 1, 2}, {0, 1}, {0, 1, 2}.
    MPIDICT_CHECK(direct.forwarded == 0);
    MPIDICT_CHECK(direct.peers == std::int64_t(size) * size);
    if (size >= 3) {
        MPIDICT_CHECK_MSG(grid.forwarded > 0, "grid routing forwarded no record");
        const std::int64_t expected_peers = size == 3 ? 3 + 2 + 3 : 4 * 3;
        if (size <= 4)
            MPIDICT_CHECK_MSG(grid.peers == expected_peers, "peers " + std::to_string(grid.peers));
    } else {
        MPIDICT_CHECK(grid.forwarded == 0);
    }
}

// Ordered and LH*LH containers keep their answers under grid routing too.
void other_containers(int rank, int size) {
    for (routing_mode routing : {routing_mode::direct, routing_mode::grid}) {
        mpidict::linear_hash_map_config lh_config;
        lh_config.runtime.routing = routing;
        mpidict::linear_hash_map<std::uint64_t, std::uint64_t> lh(MPI_COMM_WORLD, lh_config);
        mpidict::skiplist_map_config sl_config;
        sl_config.runtime.routing = routing;
        sl_config.granularity = 8;
        sl_config.max_key_bytes = 8;
        sl_config.max_value_bytes = 8;
        mpidict::skiplist_map<std::uint64_t, std::uint64_t> sl(MPI_COMM_WORLD, sl_config);
        for (std::uint64_t index = 0; index < 400; ++index) {
            const std::uint64_t key = index * std::uint64_t(size) + std::uint64_t(rank);
            lh.async_insert(key, key + 5);
            sl.async_insert(key, key + 9);
        }
        lh.flush();
        sl.flush();
        MPIDICT_CHECK(lh.global_size() == 400u * std::uint64_t(size));
        MPIDICT_CHECK(sl.global_size() == 400u * std::uint64_t(size));
        // One container at a time: a rank answers only inside calls of the
        // container that asks (a wait on lh serves no sl request).
        for (std::uint64_t index = 0; index < 60; ++index) {
            const std::uint64_t key = index * 5 * std::uint64_t(size) + std::uint64_t(size - 1 - rank);
            const auto found = lh.find(key).get();
            MPIDICT_CHECK(found.has_value() && *found == key + 5);
        }
        lh.flush();
        for (std::uint64_t index = 0; index < 60; ++index) {
            const std::uint64_t key = index * 5 * std::uint64_t(size) + std::uint64_t(size - 1 - rank);
            const auto ordered = sl.find(key).get();
            MPIDICT_CHECK(ordered.has_value() && *ordered == key + 9);
        }
        const auto range = sl.range_from(0).get();
        MPIDICT_CHECK(range.size() == 400u * std::size_t(size));
        MPIDICT_CHECK(std::is_sorted(range.begin(), range.end()));
        sl.destroy();
        lh.destroy();
    }
}

// Ranks that disagree on the routing are refused on every rank (at 2 ranks
// both routings are direct, so they agree).
void disagreement(int rank, int size) {
    mpidict::hash_map_config config;
    config.runtime.routing = rank == 0 ? routing_mode::direct : routing_mode::grid;
    bool refused = false;
    try {
        mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
        map.destroy();
    } catch (const mpidict::collective_mismatch_error& problem) {
        refused = std::string(problem.what()).find("routing") != std::string::npos;
    }
    MPIDICT_CHECK(refused == (size >= 3));
    // A bad MPIDICT_ROUTING text names itself.
    bool named = false;
    try {
        (void)mpidict::runtime::parse_routing("diagonal");
    } catch (const mpidict::invalid_argument_error& problem) {
        named = std::string(problem.what()).find("'diagonal'") != std::string::npos;
    }
    MPIDICT_CHECK(named);
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(120), "mpi_routing");
        hash_map_both_ways(rank, size);
        other_containers(rank, size);
        disagreement(rank, size);
    });
}
