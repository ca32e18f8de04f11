// linear_hash_map bad input: configurations without a server or client rank,
// impossible sizes, an empty key, a key or value above its maximum, an
// operation on a rank that is not a client.  Each raises a clear error on the
// rank that caused it; nothing stored is lost and the file keeps serving.  Also
// capacity: with no dormant rank left a full server refuses inserts (reported,
// not an error) and keeps everything it had.

#include <optional>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/linear_hash_map.hpp"

namespace {

using map_type = mpidict::linear_hash_map<std::string, std::string>;
using mpidict::invalid_argument_error;

void bad_configurations(int rank, int size) {
    auto make = [](mpidict::linear_hash_map_config config) { map_type map(MPI_COMM_WORLD, config); };
    mpidict::linear_hash_map_config config;
    config.server_ranks = std::vector<int>{};
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "no server rank", "server_ranks is empty");
    config = {};
    config.client_ranks = std::vector<int>{};
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "no client rank");
    config = {};
    config.server_ranks = std::vector<int>{0, size};
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "rank " + std::to_string(size), "outside");
    config = {};
    config.server_ranks = std::vector<int>{0, 0};
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "twice");
    config = {};
    config.initial_servers = 0;
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "initial_servers = 0");
    config = {};
    config.initial_servers = static_cast<std::size_t>(size) + 1;
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "initial_servers = " + std::to_string(size + 1));
    config = {};
    config.runtime.buffer_bytes = 4096;
    config.max_value_bytes = 8192;
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "does not fit one message", "buffer_bytes = 4096");
    // Ranks that disagree about the file's shape: an error on every rank, no hang.
    if (size > 1) {
        config = {};
        config.server_capacity_bytes = 100000 + static_cast<std::size_t>(rank);
        MPIDICT_EXPECT_ERROR(mpidict::collective_mismatch_error, make(config), "linear_hash_map configuration");
    }
    config = {};
    // required_buffer_bytes() is exactly the boundary.
    config.max_key_bytes = 100;
    config.max_value_bytes = 1000;
    config.runtime.buffer_bytes = config.required_buffer_bytes() - 1;
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "does not fit one message");
    config.runtime.buffer_bytes = config.required_buffer_bytes();
    {
        map_type fits(MPI_COMM_WORLD, config);
        if (rank == 0) {
            const std::string key(100, 'k'), value(1000, 'v');
            MPIDICT_CHECK(fits.insert(key, value).get().stored);
            MPIDICT_CHECK(fits.find(key).get() == value);
        }
    }
    config = {};
    config.split_load = 0;
    MPIDICT_EXPECT_ERROR(invalid_argument_error, make(config), "split_load");
}

void bad_operations(int rank, int size) {
    mpidict::linear_hash_map_config config;
    config.max_key_bytes = 16;
    config.max_value_bytes = 100;
    config.client_ranks = std::vector<int>{0};  // only rank 0 is a client
    map_type map(MPI_COMM_WORLD, config);
    if (rank == 0) {
        for (int key = 0; key < 50; ++key)
            MPIDICT_CHECK(map.insert("key" + std::to_string(key), std::string(10, 'a' + key % 26)).get().stored);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert("key1", std::string(101, 'x')), "value of 101 bytes",
                             "max_value_bytes = 100");
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_insert("key2", std::string(500, 'x')), "max_value_bytes");
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert("", "v"), "key is empty");
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.find(""), "key is empty");
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.erase(std::string(17, 'k')), "key of 17 bytes",
                             "max_key_bytes = 16");
    } else {
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert("mine", "v"), "rank " + std::to_string(rank),
                             "not a client");
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.find("key1"), "not a client");
    }
    map.flush();
    if (rank == 0) {
        // Nothing stored was lost or changed by the refused calls.
        for (int key = 0; key < 50; ++key) {
            const auto got = map.find("key" + std::to_string(key)).get();
            MPIDICT_CHECK(got && *got == std::string(10, 'a' + key % 26));
        }
        MPIDICT_CHECK(!map.find("mine").get());
        MPIDICT_CHECK(map.erase("key3").get());
        MPIDICT_CHECK(!map.erase("key3").get());
    }
    (void)size;
}

void capacity(int rank, int size) {
    // Every rank a server and all active: no dormant rank, so no split; each
    // server holds at most 2000 payload bytes.
    mpidict::linear_hash_map_config config;
    config.initial_servers = static_cast<std::size_t>(size);
    config.server_capacity_bytes = 2000;
    config.max_value_bytes = 200;
    map_type map(MPI_COMM_WORLD, config);
    std::vector<std::string> stored;
    std::size_t refused = 0;
    const std::string value(96, 'v');
    for (int key = 0; key < 40 * size; ++key) {
        const std::string name = std::string("r") + std::to_string(rank) + "k" + std::to_string(key);
        const auto result = map.insert(name, value).get();
        if (result.stored)
            stored.push_back(name);
        else
            ++refused;
    }
    for (int key = 0; key < 10; ++key)
        map.async_insert("async" + std::to_string(rank) + "k" + std::to_string(key), value);
    map.flush();
    const auto total_refused = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(refused + map.async_rejected()));
    // 40*p*p inserts of 100+ bytes into p servers of 2000 bytes: most are refused.
    MPIDICT_CHECK(total_refused > 0);
    MPIDICT_CHECK(map.local_payload_bytes() <= 2000);
    // What this server holds adds up: every stored entry's key and value bytes.
    std::size_t held = 0;
    map.local_for_each([&](const std::string& key, const std::string& v) { held += key.size() + v.size(); });
    MPIDICT_CHECK(held == map.local_payload_bytes());
    const auto all_held = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(held));
    MPIDICT_CHECK(all_held > 0);
    MPIDICT_CHECK(map.local_load_factor() == static_cast<double>(map.local_payload_bytes()) / 2000.0);
    for (const auto& name : stored) {
        const auto got = map.find(name).get();
        MPIDICT_CHECK_MSG(got && *got == value, name);
    }
    // A full server still answers, erases, and then has room again.
    if (!stored.empty()) {
        MPIDICT_CHECK(map.erase(stored.front()).get());
        MPIDICT_CHECK(!map.find(stored.front()).get());
    }
    const auto stats = map.gather_statistics();
    MPIDICT_CHECK(stats.splits.empty());
    MPIDICT_CHECK(stats.servers_active == size);
    MPIDICT_CHECK(stats.rejected == static_cast<std::uint64_t>(total_refused));
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "mpi_linear_hash_map_errors");
        bad_configurations(rank, size);
        bad_operations(rank, size);
        capacity(rank, size);
    });
}
