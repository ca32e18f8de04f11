// The N-1 pattern with a small window: every rank floods rank 0 (explicit target)
// with async inserts and then with request forms, under buffer_bytes B = 1024,
// release_queue q = 2 and blocking_factor L = 4.  Memory must stay bounded by what
// the configuration allows, on every rank:
//
//   outboxes   at most one buffer of B per destination this rank sends to
//   in flight  at most q sent buffers awaiting release, plus the replies one
//              incoming buffer can generate inside a handler (one buffer here:
//              with L = 4 no reply outbox ever fills)
//   requests   at most L outstanding
//
// and all data must arrive.  Rank 0 also stalls for a while before taking part, so
// the senders' windows fill and they must wait (progressing) rather than grow.
//
// A second phase makes the answers big: the other ranks' finds on rank 0 return
// 300-byte values, L = 8 finds per message, so rank 0's replies to one incoming
// message fill ceil(8 / 3) = 3 buffers.  Handlers never wait for the release
// queue, and the askers look away right after sending their first window, so
// rank 0 answers p - 1 windows before any reply is matched: it may hold q plus
// 3 buffers per requester in flight (q + 3 (p - 1)), and no more.  (runtime.md
// and engine.hpp still say "q plus the replies of one incoming message", i.e.
// q + 3; the engine reaches 3 (p - 1) here.)

#include <chrono>
#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

constexpr std::size_t buffer_bytes = 1024;
constexpr std::size_t release_queue = 2;
constexpr std::size_t blocking_factor = 4;
constexpr std::size_t slack_buffers = 1;
constexpr std::uint64_t async_per_rank = 12000;
constexpr std::uint64_t requests_per_rank = 300;

std::uint64_t async_key(int rank, std::uint64_t i) { return (static_cast<std::uint64_t>(rank) << 32) | i; }
std::uint64_t request_key(int rank, std::uint64_t i) { return (static_cast<std::uint64_t>(rank) << 32) | (1u << 30) | i; }
std::uint64_t value_for(std::uint64_t key) { return key * 2654435761u + 17; }

void run_small_records(int rank, int size);

// Every other rank asks rank 0 for 300-byte values, a window of L_large = 8 finds
// per message; rank 0's replies to one such message fill three buffers (two full).
// In the first round the askers look away (sleep, no library call) right after
// sending, so rank 0 answers all of them before anyone matches a reply.
constexpr std::size_t large_blocking_factor = 8;

void large_replies(int rank, int size) {
    constexpr std::size_t value_bytes = 300;
    constexpr std::uint64_t stored_keys = 32;
    constexpr int rounds = 25;
    mpidict::hash_map_config settings;
    settings.runtime.buffer_bytes = buffer_bytes;
    settings.runtime.release_queue = release_queue;
    settings.runtime.blocking_factor = large_blocking_factor;
    mpidict::hash_map<std::uint64_t, std::string> map(MPI_COMM_WORLD, settings);
    const mpidict::target_rank root{0};
    auto value_of = [](std::uint64_t key) { return std::string(value_bytes, static_cast<char>('a' + key % 26)); };
    if (rank == 0)
        for (std::uint64_t key = 0; key < stored_keys; ++key)
            map.async_insert(root, key, value_of(key));
    map.flush();

    std::size_t wrong = 0;
    if (rank != 0) {
        for (int round = 0; round < rounds; ++round) {
            std::vector<mpidict::request<std::vector<std::string>>> finds;
            std::vector<std::uint64_t> keys;
            for (std::size_t i = 0; i < large_blocking_factor; ++i) {
                keys.push_back((static_cast<std::uint64_t>(round) * 8 + i + static_cast<std::uint64_t>(rank)) % stored_keys);
                finds.push_back(map.find(root, keys.back()));
            }
            finds.front().test();  // ships the window
            if (round == 0)
                std::this_thread::sleep_for(std::chrono::milliseconds(150));  // look away
            for (std::size_t i = 0; i < finds.size(); ++i)
                if (finds[i].get() != std::vector<std::string>{value_of(keys[i])})
                    ++wrong;
        }
    }
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " large finds answered wrongly");
    map.flush();  // rank 0 answers everything from in here

    // A reply record: {u32 slot, u32 count} + {u32 length, bytes}.
    const std::size_t reply_record = mpidict::runtime::reply_header_bytes + 4 + value_bytes;
    const std::size_t replies_per_buffer = (buffer_bytes - mpidict::runtime::group_header_bytes) / reply_record;
    const std::size_t reply_buffers = (large_blocking_factor + replies_per_buffer - 1) / replies_per_buffer;
    const mpidict::runtime::statistics& stats = map.stats();
    const std::size_t destinations_used = rank == 0 ? static_cast<std::size_t>(size) : 1;
    // Rank 0 answers every other rank, each with up to L requests outstanding.
    const std::size_t requesters = rank == 0 ? static_cast<std::size_t>(std::max(size - 1, 1)) : 1;
    const std::size_t in_flight_bound = release_queue + reply_buffers * requesters;
    const std::size_t bound_bytes = destinations_used * buffer_bytes + in_flight_bound * buffer_bytes;
    const std::string detail = " (large replies: buffer_bytes_high_water " + std::to_string(stats.buffer_bytes_high_water) +
                               ", bound " + std::to_string(bound_bytes) + "; in_flight_high_water " +
                               std::to_string(stats.in_flight_high_water) + ", bound " + std::to_string(in_flight_bound) +
                               "; outstanding_requests_high_water " +
                               std::to_string(stats.outstanding_requests_high_water) + ")";
    MPIDICT_CHECK_MSG(stats.in_flight_high_water <= in_flight_bound, detail);
    MPIDICT_CHECK_MSG(stats.buffer_bytes_high_water <= bound_bytes, detail);
    MPIDICT_CHECK_MSG(stats.outstanding_requests_high_water <= large_blocking_factor, detail);
    if (rank == 0)
        std::printf("n_to_one:%s\n", detail.c_str());
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_n_to_one");
        run_small_records(rank, size);
        large_replies(rank, size);
    });
}

namespace {

void run_small_records(int rank, int size) {
    {
        mpidict::hash_map_config settings;
        settings.runtime.buffer_bytes = buffer_bytes;
        settings.runtime.release_queue = release_queue;
        settings.runtime.blocking_factor = blocking_factor;
        mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD, settings);
        const mpidict::target_rank root{0};

        // ---- async flood --------------------------------------------------------
        if (rank == 0)
            std::this_thread::sleep_for(std::chrono::milliseconds(100));  // senders fill their windows meanwhile
        for (std::uint64_t i = 0; i < async_per_rank; ++i) {
            const std::uint64_t key = async_key(rank, i);
            map.async_insert(root, key, value_for(key));
        }
        map.flush();

        // ---- request flood (find and insert requests held, not waited one by one) ----
        std::vector<mpidict::request<mpidict::insert_result>> inserts;
        for (std::uint64_t i = 0; i < requests_per_rank; ++i) {
            const std::uint64_t key = request_key(rank, i);
            const std::uint64_t value = value_for(key);
            inserts.push_back(map.insert(root, key, std::span<const std::uint64_t>(&value, 1)));
        }
        std::vector<mpidict::request<std::vector<std::uint64_t>>> finds;
        for (std::uint64_t i = 0; i < requests_per_rank; i += 3)
            finds.push_back(map.find(root, async_key(rank, i)));
        for (auto& request : inserts)
            MPIDICT_CHECK(request.get().stored == 1);
        for (std::size_t n = 0; n < finds.size(); ++n) {
            const std::uint64_t key = async_key(rank, n * 3);
            MPIDICT_CHECK(finds[n].get() == std::vector<std::uint64_t>{value_for(key)});
        }
        map.flush();

        // ---- all data arrived, on rank 0 only ----------------------------------------
        if (rank == 0) {
            MPIDICT_CHECK_MSG(map.local_value_count() ==
                                  static_cast<std::size_t>(size) * (async_per_rank + requests_per_rank),
                              "rank 0 holds " + std::to_string(map.local_value_count()));
            std::size_t wrong = 0;
            for (int origin = 0; origin < size; ++origin) {
                for (std::uint64_t i = 0; i < async_per_rank; ++i) {
                    const std::uint64_t key = async_key(origin, i);
                    if (map.local_find(key) != std::vector<std::uint64_t>{value_for(key)})
                        ++wrong;
                }
                for (std::uint64_t i = 0; i < requests_per_rank; ++i) {
                    const std::uint64_t key = request_key(origin, i);
                    if (map.local_find(key) != std::vector<std::uint64_t>{value_for(key)})
                        ++wrong;
                }
            }
            MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " keys missing or wrong on rank 0");
        } else {
            MPIDICT_CHECK(map.local_value_count() == 0);
        }

        // ---- bounds from the configuration -----------------------------------------
        const mpidict::runtime::statistics& stats = map.stats();
        // Rank 0 answers every rank; the others send only to rank 0.
        const std::size_t destinations_used = rank == 0 ? static_cast<std::size_t>(size) : 1;
        const std::size_t bound_bytes = destinations_used * buffer_bytes + (release_queue + slack_buffers) * buffer_bytes;
        const std::string detail = " (buffer_bytes_high_water " + std::to_string(stats.buffer_bytes_high_water) +
                                   ", bound " + std::to_string(bound_bytes) + "; in_flight_high_water " +
                                   std::to_string(stats.in_flight_high_water) + "; outstanding_requests_high_water " +
                                   std::to_string(stats.outstanding_requests_high_water) + ")";
        MPIDICT_CHECK_MSG(stats.buffer_bytes_high_water <= bound_bytes, detail);
        MPIDICT_CHECK_MSG(stats.buffer_bytes_high_water > 0, detail);
        MPIDICT_CHECK_MSG(stats.in_flight_high_water <= release_queue + slack_buffers, detail);
        MPIDICT_CHECK_MSG(stats.outstanding_requests_high_water <= blocking_factor, detail);
        MPIDICT_CHECK_MSG(stats.outstanding_requests_high_water >= 1, detail);
        // The window was really exercised: more requests than L were started.
        MPIDICT_CHECK(stats.window_stalls > 0);
        // Every message was at most B bytes (bytes_sent / messages_sent <= B trivially
        // holds on average; the records reached rank 0 in many messages).
        if (rank != 0)
            MPIDICT_CHECK(stats.messages_sent >= async_per_rank * 16 / buffer_bytes);
        if (rank == 0)
            std::printf("n_to_one: rank 0 high water %zu bytes (bound %zu), in flight %zu, requests %zu\n",
                        stats.buffer_bytes_high_water, bound_bytes, stats.in_flight_high_water,
                        stats.outstanding_requests_high_water);
        map.destroy();
    }
}

}  // namespace
