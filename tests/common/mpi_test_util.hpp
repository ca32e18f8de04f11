#pragma once
// Helpers shared by the MPI tests in tests/ (on top of tests/common/test_support.hpp):
// a watchdog that turns a hang into a failed job, an "expect this error" check
// that also inspects the message, and small collective checks.

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <mpi.h>

#include "mpidict/error.hpp"
#include "test_support.hpp"

namespace mpidict::testing {

// Aborts the process (and with it the whole MPI job) if the test runs longer than
// `limit`: a hang is a failure with a message, not a CTest timeout.  The thread
// never calls MPI (MPI runs at MPI_THREAD_SERIALIZED).
class watchdog {
public:
    watchdog(int rank, std::chrono::seconds limit, std::string name)
        : m_thread([this, rank, limit, name = std::move(name)] {
              std::unique_lock<std::mutex> lock(m_mutex);
              if (!m_done_signal.wait_for(lock, limit, [this] { return m_done; })) {
                  std::fprintf(stderr, "[rank %d] WATCHDOG: %s still running after %lld s; aborting the job\n", rank,
                               name.c_str(), static_cast<long long>(limit.count()));
                  std::fflush(stderr);
                  std::abort();
              }
          }) {}
    ~watchdog() {
        {
            std::lock_guard<std::mutex> lock(m_mutex);
            m_done = true;
        }
        m_done_signal.notify_all();
        m_thread.join();
    }
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

private:
    std::mutex m_mutex;
    std::condition_variable m_done_signal;
    bool m_done = false;
    std::thread m_thread;
};

// Runs `body` and checks that it throws an `Error` whose message contains every
// string in `needles`.  Returns the message (empty if nothing or something else was thrown).
template <class Error>
std::string expect_error(const char* what, const std::function<void()>& body,
                         std::initializer_list<std::string> needles, const char* file, int line) {
    try {
        body();
    } catch (const Error& problem) {
        const std::string message = problem.what();
        for (const std::string& needle : needles)
            check(message.find(needle) != std::string::npos, what, file, line,
                  "message lacks '" + needle + "': " + message);
        return message;
    } catch (const std::exception& other) {
        check(false, what, file, line, std::string("threw the wrong type: ") + other.what());
        return {};
    }
    check(false, what, file, line, "did not throw");
    return {};
}

// Collective.  Sum of `value` over all ranks.
inline std::int64_t sum_over_ranks(std::int64_t value) {
    std::int64_t total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

// Collective.  True if every rank passed the same value.
inline bool same_on_all_ranks(std::int64_t value) {
    std::int64_t minimum = 0;
    std::int64_t maximum = 0;
    MPI_Allreduce(&value, &minimum, 1, MPI_INT64_T, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&value, &maximum, 1, MPI_INT64_T, MPI_MAX, MPI_COMM_WORLD);
    return minimum == maximum;
}

// Collective.  Element-wise sum of `values` over all ranks.
inline std::vector<std::int64_t> sum_over_ranks(const std::vector<std::int64_t>& values) {
    std::vector<std::int64_t> total(values.size(), 0);
    MPI_Allreduce(values.data(), total.data(), static_cast<int>(values.size()), MPI_INT64_T, MPI_SUM,
                  MPI_COMM_WORLD);
    return total;
}

// The first key >= `start` (stepping by 1) that `map` places on `rank`.
template <class Map>
typename Map::key_type key_owned_by(const Map& map, int rank, typename Map::key_type start = 0) {
    typename Map::key_type key = start;
    while (map.owner(key) != rank)
        ++key;
    return key;
}

}  // namespace mpidict::testing

#define MPIDICT_EXPECT_ERROR(ErrorType, body, ...)                                                      \
    ::mpidict::testing::expect_error<ErrorType>(#body " throws " #ErrorType, [&] { body; }, {__VA_ARGS__}, \
                                                __FILE__, __LINE__)
