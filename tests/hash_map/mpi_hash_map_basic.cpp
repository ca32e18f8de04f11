// insert / find / take / erase on hash_map with one and several values per key,
// through the request forms and the async forms, checked from the inserting rank
// and from another rank.  take returns the oldest values first and removes them;
// find honours its limit; erase reports how many values it removed.

#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

constexpr std::uint64_t keys_per_rank = 96;

std::uint64_t key_of(int rank, std::uint64_t index) { return (static_cast<std::uint64_t>(rank) + 1) * 1000000 + index; }
std::size_t values_of(std::uint64_t index) { return 1 + index % 5; }
std::uint64_t value_of(std::uint64_t key, std::size_t position) { return key * 16 + position; }

std::vector<std::uint64_t> expected_values(int rank, std::uint64_t index, std::size_t from = 0) {
    std::vector<std::uint64_t> values;
    const std::uint64_t key = key_of(rank, index);
    for (std::size_t position = from; position < values_of(index); ++position)
        values.push_back(value_of(key, position));
    return values;
}

// What remains of key (rank, index) after the removal phase below.
std::vector<std::uint64_t> remaining_after_removal(int rank, std::uint64_t index) {
    switch (index % 4) {
        case 0: return expected_values(rank, index, 1);      // take(key, 1)
        case 1: return {};                                    // take(key)
        case 2: return {};                                    // erase(key)
        default: return index % 8 == 7 ? expected_values(rank, index) : std::vector<std::uint64_t>{};  // async_erase
    }
}

void insert_phase(map_type& map, int rank) {
    std::vector<mpidict::request<mpidict::insert_result>> pending;
    for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
        const std::uint64_t key = key_of(rank, index);
        const std::vector<std::uint64_t> values = expected_values(rank, index);
        switch (index % 4) {
            case 0:  // request form, one value per call; some waited at once, some later
                for (std::uint64_t value : values) {
                    if (index % 8 == 0) {
                        const mpidict::insert_result result = map.insert(key, value).get();
                        MPIDICT_CHECK(result.requested == 1 && result.stored == 1 && result.complete());
                    } else {
                        pending.push_back(map.insert(key, value));
                    }
                }
                break;
            case 1: {  // request form, all values in one call
                auto request = map.insert(key, std::span<const std::uint64_t>(values));
                MPIDICT_CHECK(request.count() == values.size());
                const mpidict::insert_result result = request.get();
                MPIDICT_CHECK(result.requested == values.size());
                MPIDICT_CHECK(result.stored == values.size());
                MPIDICT_CHECK(result.not_stored() == 0);
                break;
            }
            case 2:  // async, one value per call
                for (std::uint64_t value : values)
                    map.async_insert(key, value);
                break;
            default:  // async, all values in one call
                map.async_insert(key, std::span<const std::uint64_t>(values));
                break;
        }
    }
    for (auto& request : pending) {
        const mpidict::insert_result result = request.get();
        MPIDICT_CHECK(result.requested == 1 && result.stored == 1);
    }
}

void check_full_contents(map_type& map, int owner_rank) {
    for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
        const std::uint64_t key = key_of(owner_rank, index);
        const std::vector<std::uint64_t> all = expected_values(owner_rank, index);
        MPIDICT_CHECK_MSG(map.find(key).get() == all, "key " + std::to_string(key));
        auto counted = map.find(key);
        MPIDICT_CHECK(counted.count() == all.size());
        MPIDICT_CHECK(counted.get().size() == all.size());
        // limit n: the first n values in insertion order
        for (std::size_t limit : {std::size_t{0}, std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{50}}) {
            const std::vector<std::uint64_t> prefix(all.begin(),
                                                    all.begin() + static_cast<std::ptrdiff_t>(std::min(limit, all.size())));
            MPIDICT_CHECK_MSG(map.find(key, limit).get() == prefix,
                              "key " + std::to_string(key) + " limit " + std::to_string(limit));
        }
    }
    // A key nobody inserted.
    MPIDICT_CHECK(map.find(key_of(owner_rank, keys_per_rank + 5)).get().empty());
    MPIDICT_CHECK(map.find(key_of(owner_rank, keys_per_rank + 5)).count() == 0);
}

void removal_phase(map_type& map, int rank) {
    for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
        const std::uint64_t key = key_of(rank, index);
        const std::vector<std::uint64_t> all = expected_values(rank, index);
        switch (index % 4) {
            case 0: {
                const std::vector<std::uint64_t> oldest = map.take(key, 1).get();
                MPIDICT_CHECK(oldest == std::vector<std::uint64_t>{all.front()});
                MPIDICT_CHECK(map.find(key).get() == expected_values(rank, index, 1));
                break;
            }
            case 1: {
                MPIDICT_CHECK(map.take(key).get() == all);
                MPIDICT_CHECK(map.find(key).get().empty());
                MPIDICT_CHECK(map.take(key).get().empty());  // nothing left to take
                break;
            }
            case 2: {
                MPIDICT_CHECK(map.erase(key).get() == all.size());
                MPIDICT_CHECK(map.find(key).get().empty());
                MPIDICT_CHECK(map.erase(key).get() == 0);
                break;
            }
            default:
                if (index % 8 != 7)
                    map.async_erase(key);
                break;
        }
    }
}

void check_after_removal(map_type& map, int owner_rank) {
    for (std::uint64_t index = 0; index < keys_per_rank; ++index) {
        const std::uint64_t key = key_of(owner_rank, index);
        MPIDICT_CHECK_MSG(map.find(key).get() == remaining_after_removal(owner_rank, index),
                          "key " + std::to_string(key));
    }
}

// take is oldest first across separate inserts, and a take of more than exists
// returns what there is.
void take_order(map_type& map, int rank) {
    const std::uint64_t key = key_of(rank, 900);
    for (std::uint64_t value : {10, 11, 12})
        map.async_insert(key, value);
    MPIDICT_CHECK(map.take(key, 1).get() == std::vector<std::uint64_t>{10});
    const std::uint64_t more[] = {13, 14};
    MPIDICT_CHECK(map.insert(key, std::span<const std::uint64_t>(more)).get().stored == 2);
    MPIDICT_CHECK(map.take(key, 2).get() == (std::vector<std::uint64_t>{11, 12}));
    MPIDICT_CHECK(map.take(key, 100).get() == (std::vector<std::uint64_t>{13, 14}));
    MPIDICT_CHECK(map.find(key).get().empty());
    MPIDICT_CHECK(!map.local_contains(key));  // true even on the owner: the key is gone
}

void string_map(int rank, int size) {
    mpidict::hash_map<std::string, std::string> map(MPI_COMM_WORLD);
    auto key = [](int r, int i) { return "key/" + std::to_string(r) + "/" + std::to_string(i); };
    auto value = [](int r, int i, int j) { return std::string(static_cast<std::size_t>(j * 7 % 23), 'a' + static_cast<char>(j)) + std::to_string(r * 100 + i); };
    for (int i = 0; i < 20; ++i) {
        std::vector<std::string> values;
        for (int j = 0; j < 1 + i % 4; ++j)
            values.push_back(value(rank, i, j));
        if (i % 2 == 0)
            MPIDICT_CHECK(map.insert(key(rank, i), std::span<const std::string>(values)).get().stored == values.size());
        else
            map.async_insert(key(rank, i), std::span<const std::string>(values));
    }
    map.async_insert(key(rank, 99), std::string());  // empty value is a value
    map.flush();
    const int other = (rank + 1) % size;
    for (int i = 0; i < 20; ++i) {
        std::vector<std::string> values;
        for (int j = 0; j < 1 + i % 4; ++j)
            values.push_back(value(other, i, j));
        MPIDICT_CHECK(map.find(key(other, i)).get() == values);
    }
    MPIDICT_CHECK(map.find(key(other, 99)).get() == std::vector<std::string>{std::string()});
    map.flush();
    // take from our own keys: oldest first
    for (int i = 0; i < 20; ++i) {
        const std::vector<std::string> first = map.take(key(rank, i), 1).get();
        MPIDICT_CHECK(first == std::vector<std::string>{value(rank, i, 0)});
    }
    map.flush();
    MPIDICT_CHECK(map.global_value_count() ==
                  static_cast<std::size_t>(size) * (5 * (0 + 1 + 2 + 3) + 1));  // 20 keys, 1+i%4 values, minus one each, plus the empty value
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(60), "mpi_hash_map_basic");
        const int neighbour = (rank + 1) % size;
        {
            map_type map(MPI_COMM_WORLD);
            insert_phase(map, rank);
            map.flush();

            std::size_t expected_total = 0;
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                expected_total += values_of(index);
            MPIDICT_CHECK(map.global_value_count() == expected_total * static_cast<std::size_t>(size));
            MPIDICT_CHECK(map.global_size() == keys_per_rank * static_cast<std::size_t>(size));

            check_full_contents(map, rank);
            check_full_contents(map, neighbour);
            map.flush();

            removal_phase(map, rank);
            map.flush();
            check_after_removal(map, rank);
            check_after_removal(map, neighbour);
            // global_value_count is a blocking collective: finish the finds first
            // (see mpi_hash_map_collective_progress for what happens otherwise).
            map.flush();

            std::size_t remaining = 0;
            for (std::uint64_t index = 0; index < keys_per_rank; ++index)
                remaining += remaining_after_removal(rank, index).size();
            MPIDICT_CHECK(map.global_value_count() ==
                          static_cast<std::size_t>(mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(remaining))));

            map.flush();
            take_order(map, rank);
            map.flush();
            MPIDICT_CHECK(map.engine().outstanding_requests() == 0);
            map.destroy();
        }
        string_map(rank, size);
    });
}
