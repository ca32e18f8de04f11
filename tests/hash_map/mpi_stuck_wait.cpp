// The stuck-wait detector (runtime/stuck_wait.hpp, docs/runtime.md "Stuck
// waits"), issue 41's scenario made to end: every rank but 0 looks up keys that
// rank 0 owns (find_many and a request's get()) while rank 0 is busy elsewhere,
// without serving, for longer than the detector's threshold; then rank 0
// flushes, which answers them, and everyone flushes.
//
// Checked on each waiting rank: the message appears once per stuck wait, on
// that rank's stderr (captured here through a temporary file), says what it
// waits for, names rank 0 as the silent rank and the likely cause, and the wait
// still ends with the right answers. Checked on every rank: a phase with the
// default threshold (10 s) and everyone serving prints nothing, and
// stuck_wait_seconds = 0 is off.

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

// Sends this process's stderr (fd 2, where the engine prints) to a file until
// text() is called.
class stderr_capture {
public:
    explicit stderr_capture(int rank) : m_path("stuck_wait_stderr." + std::to_string(getpid()) + "." + std::to_string(rank)) {
        std::fflush(stderr);
        m_saved = dup(2);
        std::FILE* file = std::fopen(m_path.c_str(), "w");
        MPIDICT_CHECK(file != nullptr);
        if (file != nullptr) {
            dup2(fileno(file), 2);
            std::fclose(file);
        }
    }
    ~stderr_capture() { restore(); }
    std::string text() {
        restore();
        std::ifstream in(m_path);
        std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        std::remove(m_path.c_str());
        std::fputs(content.c_str(), stderr);  // shown in the test's output as well
        return content;
    }

private:
    void restore() {
        if (m_saved < 0)
            return;
        std::fflush(stderr);
        dup2(m_saved, 2);
        close(m_saved);
        m_saved = -1;
    }
    std::string m_path;
    int m_saved = -1;
};

std::size_t count_of(const std::string& text, const std::string& piece) {
    std::size_t count = 0;
    for (std::size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1))
        ++count;
    return count;
}

// Keys rank 0 owns, with value key + 1.
std::vector<std::uint64_t> keys_of_rank_0(const map_type& map, std::size_t count) {
    std::vector<std::uint64_t> keys;
    for (std::uint64_t key = 1; keys.size() < count; ++key)
        if (map.owner(key) == 0)
            keys.push_back(key);
    return keys;
}

void quiet_phase(int rank, int size) {
    // The default threshold, everyone serving: nothing may be printed.
    map_type map(MPI_COMM_WORLD);
    MPIDICT_CHECK(map.engine().stuck_waits().seconds() == 10.0);
    for (std::uint64_t key = 0; key < 2000; ++key)
        if (key % static_cast<std::uint64_t>(size) == static_cast<std::uint64_t>(rank))
            map.async_insert(key, key + 1);
    map.flush();
    std::vector<std::uint64_t> keys(2000);
    for (std::uint64_t key = 0; key < 2000; ++key)
        keys[key] = key;
    std::size_t right = 0;
    map.find_many(std::span<const std::uint64_t>(keys), 1, [&](std::size_t index, std::span<const std::uint64_t> values) {
        right += values.size() == 1 && values[0] == keys[index] + 1;
    });
    MPIDICT_CHECK(right == keys.size());
    map.flush();
    MPIDICT_CHECK_MSG(map.engine().stuck_waits().reports() == 0, "the detector fired in a normal phase");
    map.destroy();

    mpidict::hash_map_config off;
    off.runtime.stuck_wait_seconds = 0;
    map_type silent(MPI_COMM_WORLD, off);
    MPIDICT_CHECK(!silent.engine().stuck_waits().on());
    silent.destroy();
}

void stuck_phase(int rank, int size) {
    constexpr double threshold = 1.0;
    constexpr auto busy = std::chrono::seconds(5);  // rank 0's time away: well over the threshold
    mpidict::hash_map_config settings;
    settings.runtime.stuck_wait_seconds = threshold;
    map_type map(MPI_COMM_WORLD, settings);
    const std::vector<std::uint64_t> keys = keys_of_rank_0(map, 50);
    if (rank == 0)
        for (std::uint64_t key : keys)
            map.async_insert(key, key + 1);
    map.flush();
    // flush() returns on each rank when it is done there: rank 0 may still be
    // serving inside its flush when another rank starts looking up. A barrier
    // of our own (allowed: everyone flushed first) makes sure it is not.
    MPI_Barrier(MPI_COMM_WORLD);

    if (rank == 0) {
        // Away from the library (in the issue: inside the user's allreduce).
        std::this_thread::sleep_for(busy);
        map.flush();
        map.destroy();
        return;
    }
    stderr_capture capture(rank);
    // 1. A batch: find_many of keys only rank 0 can answer.
    std::size_t right = 0;
    const std::uint64_t before = map.engine().stuck_waits().reports();
    const auto started = std::chrono::steady_clock::now();
    map.find_many(std::span<const std::uint64_t>(keys), 1, [&](std::size_t index, std::span<const std::uint64_t> values) {
        right += values.size() == 1 && values[0] == keys[index] + 1;
    });
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    const std::uint64_t after_batch = map.engine().stuck_waits().reports() - before;
    // 2. A request's get(), answered at once now that rank 0 serves (in its flush).
    const std::vector<std::uint64_t> one = map.find(keys.front()).get();
    map.flush();
    const std::string text = capture.text();

    MPIDICT_CHECK(right == keys.size());
    MPIDICT_CHECK(one.size() == 1 && one[0] == keys.front() + 1);
    MPIDICT_CHECK_MSG(waited >= 2 * threshold, "find_many returned after " + std::to_string(waited) + " s");
    MPIDICT_CHECK_MSG(after_batch == 1, "the stuck batch printed " + std::to_string(after_batch) + " reports, expected 1");
    const std::string head = "mpidict: rank " + std::to_string(rank) + " has waited ";
    MPIDICT_CHECK_MSG(count_of(text, head) >= 1, "no stuck-wait message on stderr: [" + text + "]");
    const std::regex expected("mpidict: rank " + std::to_string(rank) +
                              " has waited [0-9]+ s for the answers of a batch \\(find_many[^\n]*, and no message "
                              "came from rank 0 for 1 s\\. Likely cause: rank 0 is probably inside an MPI call of "
                              "its own: a collective[^\n]*call flush\\(\\) on every rank before an MPI collective "
                              "of your own[^\n]*This rank keeps waiting\\.");
    MPIDICT_CHECK_MSG(std::regex_search(text, expected), "unexpected message: [" + text + "]");
    (void)size;
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_stuck_wait");
        quiet_phase(rank, size);
        if (size > 1)
            stuck_phase(rank, size);
    });
}
