// linear_hash_map model check.  Clients insert, replace, erase and find random
// keys while the file splits onto its dormant ranks; every answer is checked
// against a per-client model (each client owns its keys, so the model is
// exact).  Afterwards every client finds exactly its expected set, the file has
// grown onto every server and stopped, no request was forwarded more than twice,
// and a client whose image is reset to (0, 0) still reaches every key.
//
// Arrangements: every rank both client and server; servers in reverse rank
// order with two starting servers; one client and the other ranks as servers;
// disjoint client and server halves; every rank both with a progress thread.

#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/linear_hash_map.hpp"

namespace {

using map_type = mpidict::linear_hash_map<std::string, std::string>;

struct arrangement {
    std::string name;
    std::vector<int> servers;
    std::vector<int> clients;
    std::size_t initial = 1;
    bool progress_thread = false;
};

std::uint64_t next_random(std::uint64_t& state) {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::string random_value(std::uint64_t& state) {
    const std::size_t length = next_random(state) % 300;
    std::string value(length, '\0');
    for (auto& c : value)
        c = static_cast<char>(next_random(state));
    return value;
}

std::vector<arrangement> arrangements(int ranks) {
    std::vector<int> all, reversed, rest, first_half, second_half;
    for (int r = 0; r < ranks; ++r) {
        all.push_back(r);
        reversed.insert(reversed.begin(), r);
        if (r > 0)
            rest.push_back(r);
        (r < ranks / 2 ? first_half : second_half).push_back(r);
    }
    std::vector<arrangement> result;
    result.push_back({"every rank both", all, all, 1});
    result.push_back({"reversed servers, 2 starting", reversed, all, std::min<std::size_t>(2, all.size())});
    if (ranks > 1)
        result.push_back({"one client, other ranks serve", rest, {0}, 1});
    if (ranks > 3)
        result.push_back({"disjoint halves", second_half, first_half, 1});
    result.push_back({"every rank both, progress thread", all, all, 1, true});
    return result;
}

void run(const arrangement& setup, int rank, int ranks) {
    const bool client = std::find(setup.clients.begin(), setup.clients.end(), rank) != setup.clients.end();
    constexpr std::size_t keys_per_client = 300;
    constexpr int rounds = 30;
    constexpr int batch = 16;

    mpidict::linear_hash_map_config config;
    config.runtime.buffer_bytes = 1024;  // shipments take many messages: splits overlap requests
    config.runtime.progress_thread = setup.progress_thread;
    config.server_ranks = setup.servers;
    config.client_ranks = setup.clients;
    config.initial_servers = setup.initial;
    // Room for everything on any server.  About 170 live bytes per key at the
    // end; splits happen at half the final load per server, so they are spread
    // over the first half of the run.
    config.server_capacity_bytes = setup.clients.size() * keys_per_client * 320;
    const double final_load = static_cast<double>(setup.clients.size() * keys_per_client) * 0.55 * 170 /
                              static_cast<double>(setup.servers.size());
    config.split_load = final_load / 2 / static_cast<double>(config.server_capacity_bytes);
    config.max_value_bytes = 600;
    config.max_key_bytes = 64;
    map_type map(MPI_COMM_WORLD, config);

    std::map<std::string, std::string> model;
    std::uint64_t state = 0x1234 + static_cast<std::uint64_t>(rank) * 7919;
    auto key_of = [&](std::size_t index) { return std::string("c") + std::to_string(rank) + "/k" + std::to_string(index); };

    if (client) {
        for (int round = 0; round < rounds; ++round) {
            std::vector<std::string> keys;
            std::vector<mpidict::request<mpidict::replace_result>> inserts;
            std::vector<bool> insert_expect_replaced;
            std::vector<mpidict::request<std::optional<std::string>>> finds;
            std::vector<std::optional<std::string>> find_expect;
            std::vector<mpidict::request<bool>> erases;
            std::vector<bool> erase_expect;
            std::vector<std::string> used;
            for (int op = 0; op < batch; ++op) {
                std::string key = key_of(next_random(state) % keys_per_client);
                if (std::find(used.begin(), used.end(), key) != used.end())
                    continue;  // one request per key per batch: answers have no order between keys
                used.push_back(key);
                const auto kind = next_random(state) % 8;
                const auto it = model.find(key);
                if (kind < 3) {
                    std::string value = random_value(state);
                    insert_expect_replaced.push_back(it != model.end());
                    inserts.push_back(map.insert(key, value));
                    model[key] = value;
                } else if (kind < 5) {
                    find_expect.push_back(it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
                    finds.push_back(map.find(key));
                } else if (kind < 6) {
                    erase_expect.push_back(it != model.end());
                    erases.push_back(map.erase(key));
                    model.erase(key);
                } else {
                    // Fire-and-forget chains on one key must apply in order.
                    std::string first = random_value(state), second = random_value(state);
                    map.async_insert(key, first);
                    map.async_erase(key);
                    map.async_insert(key, second);
                    if (kind == 7) {
                        map.async_erase(key);
                        model.erase(key);
                    } else {
                        model[key] = second;
                    }
                }
            }
            for (std::size_t i = 0; i < inserts.size(); ++i) {
                const auto result = inserts[i].get();
                MPIDICT_CHECK(result.stored);
                MPIDICT_CHECK_MSG(result.replaced == insert_expect_replaced[i], setup.name);
            }
            for (std::size_t i = 0; i < finds.size(); ++i)
                MPIDICT_CHECK_MSG(finds[i].get() == find_expect[i], setup.name);
            for (std::size_t i = 0; i < erases.size(); ++i)
                MPIDICT_CHECK_MSG(erases[i].get() == erase_expect[i], setup.name);
        }
    }
    map.flush();
    MPIDICT_CHECK(map.async_rejected() == 0);

    auto check_every_key = [&](const char* phase) {
        if (!client)
            return;
        std::vector<mpidict::request<std::optional<std::string>>> finds;
        for (std::size_t index = 0; index < keys_per_client; ++index)
            finds.push_back(map.find(key_of(index)));
        for (std::size_t index = 0; index < keys_per_client; ++index) {
            const auto it = model.find(key_of(index));
            const auto got = finds[index].get();
            const auto expected = it == model.end() ? std::nullopt : std::optional<std::string>(it->second);
            MPIDICT_CHECK_MSG(got == expected, setup.name + ": " + phase + " " + key_of(index));
        }
    };
    check_every_key("after build");

    const auto stats = map.gather_statistics();
    const std::size_t servers = setup.servers.size();
    if (rank == 0) {
        std::printf("%s: %zu splits, %d active, forwards insert %llu/%llu/%llu find %llu/%llu/%llu, "
                    "iams %llu, deferred %llu\n",
                    setup.name.c_str(), stats.splits.size(), stats.servers_active,
                    static_cast<unsigned long long>(stats.forwards[0][0]),
                    static_cast<unsigned long long>(stats.forwards[0][1]),
                    static_cast<unsigned long long>(stats.forwards[0][2]),
                    static_cast<unsigned long long>(stats.forwards[1][0]),
                    static_cast<unsigned long long>(stats.forwards[1][1]),
                    static_cast<unsigned long long>(stats.forwards[1][2]),
                    static_cast<unsigned long long>(stats.iams_sent),
                    static_cast<unsigned long long>(stats.deferred));
    }
    MPIDICT_CHECK_MSG(stats.max_forwards() <= 2, setup.name + ": forwarded " + std::to_string(stats.max_forwards()));
    MPIDICT_CHECK_MSG(static_cast<std::size_t>(stats.servers_active) == servers,
                      setup.name + ": " + std::to_string(stats.servers_active) + " active of " +
                          std::to_string(servers));
    MPIDICT_CHECK(stats.splits.size() == servers - setup.initial);
    MPIDICT_CHECK((setup.initial << stats.level) + static_cast<std::size_t>(stats.split_next) ==
                  static_cast<std::size_t>(stats.servers_active));
    MPIDICT_CHECK(stats.rejected == 0);
    for (const auto& split : stats.splits) {
        MPIDICT_CHECK(split.end_seconds >= split.start_seconds);
        MPIDICT_CHECK(split.messages >= 1);
    }
    // Stored entries equal the union of the clients' models.
    // Through the map's engine, not MPI_COMM_WORLD: with a progress thread
    // (MPI_THREAD_SERIALIZED) only the library may call MPI while the map lives.
    std::int64_t counts[2] = {static_cast<std::int64_t>(map.local_size()), static_cast<std::int64_t>(model.size())};
    std::int64_t totals[2] = {0, 0};
    {
        mpidict::runtime::engine_lock lock(map.engine());
        map.engine().sum(counts, totals);
    }
    const auto stored = totals[0];
    const auto expected = totals[1];
    MPIDICT_CHECK_MSG(stored == expected, setup.name + ": stored " + std::to_string(stored) + " expected " +
                                              std::to_string(expected));

    // A client that forgot everything (image (0, 0)) still reaches every key,
    // in at most two forwards.
    map.reset_statistics();
    if (client) {
        map.reset_image();
        MPIDICT_CHECK(map.client_image().level == 0 && map.client_image().next == 0);
    }
    check_every_key("stale image");
    const auto stale = map.gather_statistics();
    MPIDICT_CHECK(stale.max_forwards() <= 2);
    MPIDICT_CHECK(stale.splits.empty());
    if (servers > setup.initial && client)
        MPIDICT_CHECK(map.client_image().level > 0 || map.client_image().next > 0);  // the IAMs taught it
    // Splitting stopped: no dormant rank left, and more inserts do not split.
    if (client)
        for (std::size_t index = 0; index < 20; ++index)
            MPIDICT_CHECK(map.insert(key_of(keys_per_client + index), "more").get().stored);
    const auto after = map.gather_statistics();
    MPIDICT_CHECK(after.splits.empty());
    MPIDICT_CHECK(after.servers_active == stats.servers_active);
    (void)ranks;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(150), "mpi_linear_hash_map_model");
        for (const auto& setup : arrangements(size))
            run(setup, rank, size);
    });
}
