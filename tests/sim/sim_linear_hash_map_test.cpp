// linear_hash_map under the deterministic simulation: each seed picks an
// arrangement (which ranks serve, which are clients, N starting servers, buffer
// size, shipment window, split load) and a schedule; clients run random insert/
// replace/erase/find batches (request and fire-and-forget forms) on their own
// keys while the file splits.  Checked per seed: every answer against the
// client's model, every key after the flush, stored entries = the union of the
// models, at most two forwards, splits = active servers - N, a stale (0, 0)
// image still reaches every key.  A failing seed prints its replay command.
//
//   sim_linear_hash_map --ranks 2,3,5,8 --seeds 100
//   sim_linear_hash_map --ranks 5 --seed 17 --trace

#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "mpidict/linear_hash_map.hpp"
#include "mpidict/runtime/sim_transport.hpp"
#include "sim_driver.hpp"

namespace {

using namespace mpidict;
using u64 = std::uint64_t;
using map_type = linear_hash_map<std::string, std::string>;

struct arrangement {
    std::vector<int> servers;
    std::vector<int> clients;
    std::size_t initial = 1;
    std::size_t buffer_bytes = 1024;
    std::size_t ship_window = 1;
    int keys_per_client = 60;
    int batches = 12;
    std::string describe() const {
        std::string text = "servers {";
        for (int r : servers)
            text += std::to_string(r) + " ";
        text += "} clients {";
        for (int r : clients)
            text += std::to_string(r) + " ";
        return text + "} N=" + std::to_string(initial) + " buffer=" + std::to_string(buffer_bytes) +
               " window=" + std::to_string(ship_window);
    }
};

u64 mix(u64 z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

arrangement make_arrangement(int ranks, u64 seed, int ops) {
    u64 state = mix(seed * 0x9e3779b97f4a7c15ULL + static_cast<u64>(ranks));
    auto random = [&](u64 bound) { return (state = mix(state + 0x9e3779b97f4a7c15ULL)) % bound; };
    arrangement a;
    std::vector<int> order(static_cast<std::size_t>(ranks));
    for (int r = 0; r < ranks; ++r)
        order[static_cast<std::size_t>(r)] = r;
    for (std::size_t i = order.size(); i > 1; --i)
        std::swap(order[i - 1], order[random(i)]);
    const std::size_t servers = 1 + random(static_cast<u64>(ranks));
    a.servers.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(servers));
    switch (random(3)) {
    case 0:  // every rank a client
        for (int r = 0; r < ranks; ++r)
            a.clients.push_back(r);
        break;
    case 1:  // the servers are the clients
        a.clients = a.servers;
        break;
    default:  // some other set, at least one rank
        for (int r = 0; r < ranks; ++r)
            if (random(2) == 0)
                a.clients.push_back(r);
        if (a.clients.empty())
            a.clients.push_back(static_cast<int>(random(static_cast<u64>(ranks))));
    }
    a.initial = 1 + random(std::min<u64>(servers, 3));
    a.buffer_bytes = random(2) == 0 ? 1024 : 4096;
    a.ship_window = 1 + random(3);
    if (ops > 0)
        a.batches = ops;
    return a;
}

std::string value_for(u64 x) {
    std::string value(static_cast<std::size_t>(mix(x) % 200), '\0');
    for (auto& c : value)
        c = static_cast<char>(x = mix(x + 1));
    return value;
}

struct shared_state {
    u64 checks = 0;
    u64 splits = 0;
    u64 deferred = 0;
    u64 two_hop = 0;
};

void workload(int rank, sim::sim_context& context, const arrangement& setup, shared_state& shared) {
    auto fail_if = [&](bool bad, const std::string& what) {
        ++shared.checks;
        if (bad)
            context.fail("check failed on rank " + std::to_string(rank) + ": " + what);
    };
    linear_hash_map_config config;
    config.runtime.buffer_bytes = setup.buffer_bytes;
    config.server_ranks = setup.servers;
    config.client_ranks = setup.clients;
    config.initial_servers = setup.initial;
    config.max_key_bytes = 32;
    config.max_value_bytes = 400;
    config.ship_window = setup.ship_window;
    config.server_capacity_bytes = 1 << 20;
    // About 120 live bytes per key; split at half the final load per server.
    const double final_load = static_cast<double>(setup.clients.size()) * setup.keys_per_client * 0.6 * 120 /
                              static_cast<double>(setup.servers.size());
    config.split_load = std::max(200.0, final_load / 2) / static_cast<double>(config.server_capacity_bytes);
    map_type map(std::make_unique<runtime::engine>(context.make_transport(), config.runtime), config);

    const bool client = std::find(setup.clients.begin(), setup.clients.end(), rank) != setup.clients.end();
    std::map<std::string, std::string> model;
    auto key_of = [&](int index) { return std::string("r") + std::to_string(rank) + "." + std::to_string(index); };
    if (client) {
        for (int batch = 0; batch < setup.batches; ++batch) {
            std::vector<std::string> used;
            std::vector<request<replace_result>> inserts;
            std::vector<bool> replaced;
            std::vector<request<std::optional<std::string>>> finds;
            std::vector<std::optional<std::string>> expected;
            std::vector<request<bool>> erases;
            std::vector<bool> present;
            for (int op = 0; op < 12; ++op) {
                const std::string key = key_of(static_cast<int>(context.random_below(static_cast<u64>(setup.keys_per_client))));
                if (std::find(used.begin(), used.end(), key) != used.end())
                    continue;
                used.push_back(key);
                const auto it = model.find(key);
                const u64 kind = context.random_below(10);
                if (kind < 4) {
                    std::string value = value_for(context.random());
                    replaced.push_back(it != model.end());
                    inserts.push_back(map.insert(key, value));
                    model[key] = value;
                } else if (kind < 6) {
                    expected.push_back(it == model.end() ? std::nullopt : std::optional<std::string>(it->second));
                    finds.push_back(map.find(key));
                } else if (kind < 7) {
                    present.push_back(it != model.end());
                    erases.push_back(map.erase(key));
                    model.erase(key);
                } else {
                    // A fire-and-forget chain on one key, with a wait in the
                    // middle so image adjustments arrive while the first
                    // operation may still be on its way: the chain must still
                    // apply in order.
                    std::string value = value_for(context.random());
                    map.async_insert(key, value_for(context.random()));
                    if (kind == 8) {
                        const std::string other =
                            key_of(setup.keys_per_client + static_cast<int>(context.random_below(4)));
                        (void)map.find(other).get();
                    } else {
                        // Large values: the chain's own records fill buffers, so
                        // starting one ships a buffer and makes progress in the
                        // middle of the chain (replies, image adjustments).
                        map.async_insert(key, std::string(380, 'c'));
                    }
                    map.async_erase(key);
                    map.async_insert(key, value);
                    if (kind == 9) {
                        map.async_erase(key);
                        model.erase(key);
                    } else {
                        model[key] = value;
                    }
                }
            }
            for (std::size_t i = 0; i < inserts.size(); ++i) {
                const auto result = inserts[i].get();
                fail_if(!result.stored || result.replaced != replaced[i], "insert result");
            }
            for (std::size_t i = 0; i < finds.size(); ++i)
                fail_if(finds[i].get() != expected[i], "find during the run");
            for (std::size_t i = 0; i < erases.size(); ++i)
                fail_if(erases[i].get() != present[i], "erase result");
        }
    }
    map.flush();
    auto check_all = [&](const char* phase) {
        if (!client)
            return;
        std::vector<request<std::optional<std::string>>> finds;
        for (int index = 0; index < setup.keys_per_client; ++index)
            finds.push_back(map.find(key_of(index)));
        for (int index = 0; index < setup.keys_per_client; ++index) {
            const auto it = model.find(key_of(index));
            const auto got = finds[static_cast<std::size_t>(index)].get();
            fail_if(got != (it == model.end() ? std::nullopt : std::optional<std::string>(it->second)),
                    std::string(phase) + ": key " + key_of(index));
        }
    };
    check_all("after the flush");
    const auto stats = map.gather_statistics();
    fail_if(stats.max_forwards() > 2, "forwarded " + std::to_string(stats.max_forwards()) + " times");
    fail_if(stats.splits.size() != static_cast<std::size_t>(stats.servers_active) - setup.initial, "split count");
    fail_if(stats.rejected != 0 || map.async_rejected() != 0, "capacity refusals");
    std::int64_t counts[2] = {static_cast<std::int64_t>(map.local_size()), static_cast<std::int64_t>(model.size())};
    std::int64_t totals[2] = {0, 0};
    map.engine().sum(counts, totals);
    fail_if(totals[0] != totals[1], "stored " + std::to_string(totals[0]) + " entries, models hold " +
                                        std::to_string(totals[1]));
    if (rank == 0) {
        shared.splits += stats.splits.size();
        shared.deferred += stats.deferred;
        for (const auto& bins : stats.forwards)
            shared.two_hop += bins[2];
    }
    if (client)
        map.reset_image();
    check_all("stale image");
    fail_if(map.gather_statistics().max_forwards() > 2, "forwarded more than twice from a stale image");
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    const sim_test::command_line cli = sim_test::parse_command_line(argc, argv);
    sim_test::install_crash_handler();
    std::vector<int> ranks = cli.ranks_given ? cli.ranks : std::vector<int>{1, 2, 3, 5, 8};
    const long long seeds = cli.seeds >= 0 ? cli.seeds : cli.soak ? 1'000'000'000LL : 40;
    const double minutes = cli.minutes > 0 ? cli.minutes : cli.soak ? 10.0 : 0.0;
    const sim_test::stopwatch clock;
    long long runs = 0, failed = 0;
    shared_state totals;
    for (long long index = 0; index < seeds && failed < 3; ++index) {
        for (int count : ranks) {
            if (minutes > 0 && clock.seconds() > minutes * 60)
                break;
            const u64 seed = cli.first_seed + static_cast<u64>(index);
            sim_test::set_crash_note(cli, count, seed, "");
            const arrangement setup = make_arrangement(count, seed, cli.ops);
            sim::options options;
            if (cli.trace)
                options.trace_stream = stderr;
            shared_state shared;
            const sim::result outcome = sim::run(count, seed, options, [&](int rank, sim::sim_context& context) {
                workload(rank, context, setup, shared);
            });
            ++runs;
            totals.checks += shared.checks;
            totals.splits += shared.splits;
            totals.deferred += shared.deferred;
            totals.two_hop += shared.two_hop;
            if (cli.verbose || cli.single_seed)
                std::fprintf(stderr, "seed %" PRIu64 " ranks %d: %s; %" PRIu64 " steps, %" PRIu64 " splits, %s\n", seed,
                             count, outcome.ok ? "ok" : "FAILED", outcome.steps, shared.splits,
                             setup.describe().c_str());
            if (!outcome.ok) {
                ++failed;
                sim_test::print_failure(cli, outcome, "", setup.describe());
            }
        }
    }
    std::printf("sim linear_hash_map: %lld runs, %lld failed; %" PRIu64 " checks, %" PRIu64 " splits, %" PRIu64
                " requests held during shipments, %" PRIu64 " answered after two forwards (%.1f s)\n",
                runs, failed, totals.checks, totals.splits, totals.deferred, totals.two_hop, clock.seconds());
    return failed == 0 ? 0 : 1;
}
