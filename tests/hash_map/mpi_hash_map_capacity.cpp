// Per-rank capacity limits: an insert that reaches the limit stores an exact
// prefix of its values and reports how many; the rest are reported not stored and
// nothing already stored changes.  Async inserts beyond the limit are counted back
// at the origin (async_rejected) and at the owner (local_rejected), exactly.
//
// Each owner is sent to by exactly one rank where exact per-call counts are
// checked (rank r targets rank r+1), so the counts do not depend on timing.

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using mpidict::insert_result;
using mpidict::target_rank;

// A one-value span (insert with an explicit target takes a span).
template <class V>
struct one {
    explicit one(V v) : value(std::move(v)) {}
    operator std::span<const V>() const { return std::span<const V>(&value, 1); }
    V value;
};

// Each rank's shard is filled by its neighbour: once this rank has read its shard
// after a flush, hold the neighbour back until then (flush returns at different
// times on different ranks).
void local_checks_done() { MPI_Barrier(MPI_COMM_WORLD); }

std::vector<std::uint64_t> sequence(std::uint64_t first, std::size_t count) {
    std::vector<std::uint64_t> values(count);
    for (std::size_t i = 0; i < count; ++i)
        values[i] = first + i;
    return values;
}

void capacity_values(int rank, int size) {
    constexpr std::size_t capacity = 10;
    mpidict::hash_map_config settings;
    settings.capacity_values = capacity;
    mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, settings);
    const target_rank to{(rank + 1) % size};
    const std::uint64_t key_a = 1000 + static_cast<std::uint64_t>(rank);
    const std::uint64_t key_b = 2000 + static_cast<std::uint64_t>(rank);
    const std::uint64_t key_c = 3000 + static_cast<std::uint64_t>(rank);

    const std::vector<std::uint64_t> first = sequence(100, 6);
    const insert_result a = map.insert(to, key_a, std::span<const std::uint64_t>(first)).get();
    MPIDICT_CHECK(a.requested == 6 && a.stored == 6 && a.complete());

    // 7 more values but only 4 fit: stored is exactly 4, the first 4.
    const std::vector<std::uint64_t> second = sequence(200, 7);
    auto partial_request = map.insert(to, key_b, std::span<const std::uint64_t>(second));
    MPIDICT_CHECK(partial_request.count() == 4);
    const insert_result b = partial_request.get();
    MPIDICT_CHECK_MSG(b.requested == 7 && b.stored == 4,
                      "requested " + std::to_string(b.requested) + " stored " + std::to_string(b.stored));
    MPIDICT_CHECK(!b.complete());
    MPIDICT_CHECK(b.not_stored() == 3);

    // Full: one more value to an existing key and a new key are both refused.
    const insert_result c = map.insert(to, key_a, one(std::uint64_t{999})).get();
    MPIDICT_CHECK(c.requested == 1 && c.stored == 0);
    const insert_result d = map.insert(to, key_c, one(std::uint64_t{999})).get();
    MPIDICT_CHECK(d.requested == 1 && d.stored == 0);
    MPIDICT_CHECK(!map.insert_if_absent(to, key_c, 999).get());  // no room: not inserted

    // Previously stored values are untouched; the stored prefix is the first 4.
    MPIDICT_CHECK(map.find(to, key_a).get() == first);
    MPIDICT_CHECK(map.find(to, key_b).get() == sequence(200, 4));
    MPIDICT_CHECK(map.find(to, key_c).get().empty());
    map.flush();
    MPIDICT_CHECK_MSG(map.local_value_count() == capacity, "local_value_count " + std::to_string(map.local_value_count()) + " local_size " + std::to_string(map.local_size()));
    MPIDICT_CHECK_MSG(map.local_rejected() == 3 + 1 + 1 + 1, "local_rejected " + std::to_string(map.local_rejected()));
    MPIDICT_CHECK(map.async_rejected() == 0);  // request forms report through their results
    local_checks_done();

    // take frees room: exactly as many values fit again.
    MPIDICT_CHECK(map.take(to, key_a, 2).get() == sequence(100, 2));
    const std::vector<std::uint64_t> third = sequence(300, 5);
    const insert_result e = map.insert(to, key_a, std::span<const std::uint64_t>(third)).get();
    MPIDICT_CHECK(e.requested == 5 && e.stored == 2);
    std::vector<std::uint64_t> expected_a = sequence(102, 4);
    expected_a.push_back(300);
    expected_a.push_back(301);
    MPIDICT_CHECK(map.find(to, key_a).get() == expected_a);
    // erase frees the whole key.
    MPIDICT_CHECK(map.erase(to, key_b).get() == 4);
    MPIDICT_CHECK(map.insert(to, key_c, std::span<const std::uint64_t>(third)).get().stored == 4);
    map.flush();
    MPIDICT_CHECK(map.local_value_count() == capacity);
    map.destroy();
}

void capacity_bytes(int rank, int size) {
    // Payload bytes: key bytes once per key (8 for uint64) plus each value's length.
    constexpr std::size_t capacity = 100;
    mpidict::hash_map_config settings;
    settings.capacity_bytes = capacity;
    mpidict::hash_map<std::uint64_t, std::string> map(MPI_COMM_WORLD, settings);
    const target_rank to{(rank + 1) % size};
    const std::uint64_t key_a = 10 + static_cast<std::uint64_t>(rank);
    const std::uint64_t key_b = 50 + static_cast<std::uint64_t>(rank);

    std::vector<std::string> values;
    for (int i = 0; i < 10; ++i)
        values.push_back(std::string(10, static_cast<char>('a' + i)));
    // 8 + 10k <= 100  ->  k = 9 of 10 fit (98 bytes).
    const insert_result a = map.insert(to, key_a, std::span<const std::string>(values)).get();
    MPIDICT_CHECK_MSG(a.requested == 10 && a.stored == 9, "stored " + std::to_string(a.stored));
    // A new key needs 8 + 1 bytes: refused.
    MPIDICT_CHECK(map.insert(to, key_b, one(std::string("x"))).get().stored == 0);
    // Exactly the 2 remaining bytes on the existing key: accepted; then full.
    MPIDICT_CHECK(map.insert(to, key_a, one(std::string("yz"))).get().stored == 1);
    MPIDICT_CHECK(map.insert(to, key_a, one(std::string("!"))).get().stored == 0);
    // An empty string costs nothing and still fits on an existing key.
    MPIDICT_CHECK(map.insert(to, key_a, one(std::string())).get().stored == 1);

    std::vector<std::string> expected(values.begin(), values.begin() + 9);
    expected.push_back("yz");
    expected.push_back("");
    MPIDICT_CHECK(map.find(to, key_a).get() == expected);
    MPIDICT_CHECK(map.find(to, key_b).get().empty());
    map.flush();
    MPIDICT_CHECK_MSG(map.local_payload_bytes() == capacity, "payload " + std::to_string(map.local_payload_bytes()));
    MPIDICT_CHECK(map.local_rejected() == 1 + 1 + 1);
    local_checks_done();

    // Taking a 10-byte value frees 10 bytes: a 10-byte value fits, an 11-byte one not.
    MPIDICT_CHECK(map.take(to, key_a, 1).get() == std::vector<std::string>{values[0]});
    MPIDICT_CHECK(map.insert(to, key_a, one(std::string(11, 'q'))).get().stored == 0);
    MPIDICT_CHECK(map.insert(to, key_a, one(std::string(10, 'q'))).get().stored == 1);
    // Erasing the key frees its values and its key bytes.
    MPIDICT_CHECK(map.erase(to, key_a).get() == 11);
    map.flush();
    MPIDICT_CHECK(map.local_payload_bytes() == 0);
    local_checks_done();
    MPIDICT_CHECK(map.insert(to, key_b, one(std::string(92, 'w'))).get().stored == 1);  // 8 + 92 = 100
    map.flush();
    MPIDICT_CHECK(map.local_payload_bytes() == capacity);
    map.destroy();
}

// Async inserts beyond the capacity: the origin learns the exact number refused.
void async_rejections(int rank, int size) {
    constexpr std::size_t capacity = 20;
    constexpr std::size_t sent = 45;
    {
        // One origin per owner: per-rank counts are exact.
        mpidict::hash_map_config settings;
        settings.capacity_values = capacity;
        mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, settings);
        const target_rank to{(rank + 1) % size};
        // 25 single-value inserts (fixed-size fast path), then 20 in spans of 5.
        for (std::uint64_t i = 0; i < 25; ++i)
            map.async_insert(to, i % 7, i);
        for (std::uint64_t i = 0; i < 4; ++i) {
            const std::vector<std::uint64_t> values = sequence(1000 + 5 * i, 5);
            map.async_insert(to, 100 + i, std::span<const std::uint64_t>(values));
        }
        map.flush();
        MPIDICT_CHECK_MSG(map.async_rejected() == sent - capacity,
                          "async_rejected " + std::to_string(map.async_rejected()));
        MPIDICT_CHECK_MSG(map.local_rejected() == sent - capacity,
                          "local_rejected " + std::to_string(map.local_rejected()));
        MPIDICT_CHECK(map.local_value_count() == capacity);
        // The first 20 arrived first and were kept: the 25 singles hit the limit at i = 20.
        std::size_t kept_singles = 0;
        for (std::uint64_t key = 0; key < 7; ++key)
            kept_singles += map.local_find(key).size();
        MPIDICT_CHECK(kept_singles == capacity);
        for (std::uint64_t key = 100; key < 104; ++key)
            MPIDICT_CHECK(!map.local_contains(key));
        local_checks_done();
        // More async inserts: all refused, all counted.
        map.async_insert(to, 0, 77);
        map.flush();
        MPIDICT_CHECK(map.async_rejected() == sent - capacity + 1);
        MPIDICT_CHECK(map.local_value_count() == capacity);
        map.destroy();
    }
    {
        // Every rank to every owner by hash: per-owner refusals are exact; the
        // origins' async_rejected sum to the same total.
        mpidict::hash_map_config settings;
        settings.capacity_values = capacity;
        mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, settings);
        constexpr std::uint64_t per_rank = 60;
        std::vector<std::int64_t> received(static_cast<std::size_t>(size), 0);
        for (int origin = 0; origin < size; ++origin)
            for (std::uint64_t i = 0; i < per_rank; ++i)
                ++received[static_cast<std::size_t>(map.owner(static_cast<std::uint64_t>(origin) * 1000 + i % 13))];
        for (std::uint64_t i = 0; i < per_rank; ++i)
            map.async_insert(static_cast<std::uint64_t>(rank) * 1000 + i % 13, i);
        map.flush();
        const std::int64_t mine = received[static_cast<std::size_t>(rank)];
        const std::int64_t expected_refused = mine > static_cast<std::int64_t>(capacity) ? mine - static_cast<std::int64_t>(capacity) : 0;
        MPIDICT_CHECK_MSG(static_cast<std::int64_t>(map.local_rejected()) == expected_refused,
                          "local_rejected " + std::to_string(map.local_rejected()) + " expected " +
                              std::to_string(expected_refused));
        MPIDICT_CHECK(static_cast<std::int64_t>(map.local_value_count()) == mine - expected_refused);
        const std::int64_t total_refused = mpidict::testing::sum_over_ranks(expected_refused);
        MPIDICT_CHECK(mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(map.async_rejected())) == total_refused);
        MPIDICT_CHECK(mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(map.local_rejected())) == total_refused);
        map.destroy();
    }
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(60), "mpi_hash_map_capacity");
        capacity_values(rank, size);
        capacity_bytes(rank, size);
        async_rejections(rank, size);
    });
}
