// The progress thread (config.runtime.progress_thread): a rank answers requests
// while its main thread does not call the library at all.
//
// Rank 1 owns a key.  It tells rank 0 that it is about to go quiet (an insert
// request that rank 0 applies), then sleeps 200 ms without calling anything.  Rank 0
// then looks the key up and waits; the find must complete before rank 1 wakes up,
// which only rank 1's progress thread can make happen.  Both ranks read the same
// monotonic clock (same host), so "before" is checked directly.
//
// Also under the progress thread: a chain of visits that start operations from
// handlers (the engine lock must let visitors call back into the map), find_many,
// request forms and flush from the main thread.
//
// While a progress thread runs, the test makes no plain MPI calls (run_mpi_test
// initialises MPI_THREAD_SERIALIZED): it synchronises through the map.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;
using clock_type = std::chrono::steady_clock;

constexpr auto quiet_time = std::chrono::milliseconds(200);

double seconds_now() { return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count(); }

map_type::visitor<std::uint32_t, void> hop_visitor{};

void hop(map_type::visit_context& ctx, const std::uint64_t& key, std::vector<std::uint64_t>& values,
         const std::uint32_t& remaining) {
    values.push_back(remaining);
    ctx.map.async_insert(key + 100000, key);
    if (remaining > 0)
        ctx.map.async_visit(key + 1, hop_visitor, remaining - 1);
}

bool on_one_host(int size) {
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    int length = 0;
    MPI_Get_processor_name(name, &length);
    std::vector<char> all(static_cast<std::size_t>(size) * MPI_MAX_PROCESSOR_NAME);
    MPI_Allgather(name, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
    for (int r = 1; r < size; ++r)
        if (std::strncmp(all.data(), all.data() + static_cast<std::size_t>(r) * MPI_MAX_PROCESSOR_NAME,
                         MPI_MAX_PROCESSOR_NAME) != 0)
            return false;
    return true;
}

struct quiet_times {
    double quiet_from = 0;   // rank 1: its last library call returned
    double woke = 0;         // rank 1: first moment it could call the library again
    double find_start = 0;   // rank 0
    double find_done = 0;    // rank 0
};

quiet_times answered_while_quiet(map_type& map, int rank) {
    quiet_times times;
    const int quiet_rank = 1;
    const std::uint64_t key = mpidict::testing::key_owned_by(map, quiet_rank, 5000);
    const std::uint64_t signal_key = mpidict::testing::key_owned_by(map, 0, 9000);
    if (rank == quiet_rank)
        map.async_insert(key, 42);
    map.flush();

    if (rank == quiet_rank) {
        // "About to go quiet": completes once rank 0 (its progress thread) applied it.
        const std::uint64_t one = 1;
        MPIDICT_CHECK(map.insert(mpidict::target_rank{0}, signal_key, std::span<const std::uint64_t>(&one, 1)).get().stored == 1);
        times.quiet_from = seconds_now();
        std::this_thread::sleep_for(quiet_time);  // no library call at all
        times.woke = seconds_now();
    } else if (rank == 0) {
        while (!map.local_contains(signal_key))  // local read; takes the engine lock
            std::this_thread::sleep_for(std::chrono::microseconds(200));
        std::this_thread::sleep_for(std::chrono::milliseconds(20));  // rank 1 is asleep by now
        times.find_start = seconds_now();
        const std::vector<std::uint64_t> found = map.find(key).get();
        times.find_done = seconds_now();
        MPIDICT_CHECK(found == std::vector<std::uint64_t>{42});
    }
    map.flush();
    return times;
}

void chains_under_progress_thread(map_type& map, int rank, int size) {
    constexpr std::uint32_t length = 25;
    const std::uint64_t base = (static_cast<std::uint64_t>(rank) + 1) * 1000;
    map.async_visit(base, hop_visitor, length);
    map.flush();
    std::vector<std::uint64_t> keys;
    for (int origin = 0; origin < size; ++origin)
        for (std::uint32_t hop_index = 0; hop_index <= length; ++hop_index) {
            keys.push_back((static_cast<std::uint64_t>(origin) + 1) * 1000 + hop_index);
            keys.push_back(keys.back() + 100000);
        }
    std::size_t wrong = 0;
    map.find_many(std::span<const std::uint64_t>(keys), map.unlimited,
                  [&](std::size_t index, std::span<const std::uint64_t> values) {
                      const std::uint64_t key = keys[index];
                      const std::uint64_t hop_index = (key % 100000) % 1000;
                      const std::uint64_t expected = key >= 100000 ? key - 100000 : length - hop_index;
                      if (values.size() != 1 || values[0] != expected)
                          ++wrong;
                  });
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " chain entries wrong under the progress thread");
    map.flush();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_progress_thread");
        int provided = 0;
        MPI_Query_thread(&provided);
        MPIDICT_CHECK(provided >= MPI_THREAD_SERIALIZED);
        const bool same_host = on_one_host(size);

        quiet_times times;
        {
            mpidict::hash_map_config settings;
            settings.runtime.progress_thread = true;
            map_type map(MPI_COMM_WORLD, settings);
            hop_visitor = map.register_visitor("hop", &hop);

            // Ordinary use with the thread running.
            map.async_insert(static_cast<std::uint64_t>(rank), 7);
            map.flush();
            MPIDICT_CHECK(map.find(static_cast<std::uint64_t>((rank + 1) % size)).get() == std::vector<std::uint64_t>{7});
            map.flush();

            if (size >= 2)
                times = answered_while_quiet(map, rank);
            chains_under_progress_thread(map, rank, size);
            map.destroy();  // joins the progress thread: plain MPI is allowed again below
        }

        // Rank 0 needs rank 1's clock readings.
        double quiet[2] = {times.quiet_from, times.woke};
        if (size >= 2) {
            if (rank == 1)
                MPI_Send(quiet, 2, MPI_DOUBLE, 0, 17, MPI_COMM_WORLD);
            if (rank == 0) {
                MPI_Recv(quiet, 2, MPI_DOUBLE, 1, 17, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                const double waited_ms = (times.find_done - times.find_start) * 1000;
                std::printf("progress_thread: find waited %.2f ms; rank 1 quiet for %.1f ms%s\n", waited_ms,
                            (quiet[1] - quiet[0]) * 1000, same_host ? "" : " (different hosts)");
                if (same_host) {
                    MPIDICT_CHECK_MSG(times.find_start > quiet[0], "the find started before rank 1 went quiet");
                    MPIDICT_CHECK_MSG(times.find_done < quiet[1],
                                      "the find completed " + std::to_string((times.find_done - quiet[1]) * 1000) +
                                          " ms after rank 1 woke up: nobody answered while it slept");
                } else {
                    MPIDICT_CHECK_MSG(waited_ms < 150, "find waited " + std::to_string(waited_ms) + " ms");
                }
            }
        }
    });
}
