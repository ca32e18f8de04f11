// Regression (issue 18, item 10): MPIDICT_IDLE with an unknown value (a typo such
// as "slep") was silently ignored.  Now building a container refuses it on every
// rank with a message listing the valid values, and the valid ones still work.

#include <cstdint>
#include <cstdlib>
#include <string>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "idle_policy_unknown_value");
        for (const char* bad : {"slep", "SLEEP", "1"}) {
            setenv("MPIDICT_IDLE", bad, 1);
            std::string message;
            try {
                mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD);
            } catch (const mpidict::invalid_argument_error& problem) {
                message = problem.what();
            }
            MPIDICT_CHECK_MSG(message.find("MPIDICT_IDLE") != std::string::npos &&
                                  message.find("sleep, yield, auto") != std::string::npos,
                              std::string("MPIDICT_IDLE=") + bad + ": " + message);
        }
        for (const char* good : {"sleep", "yield", "auto", ""}) {
            setenv("MPIDICT_IDLE", good, 1);
            mpidict::hash_map<std::uint64_t, std::uint64_t> map(MPI_COMM_WORLD);
            map.async_insert(static_cast<std::uint64_t>(rank), 1);
            map.flush();
            MPIDICT_CHECK(map.global_size() == static_cast<std::size_t>(size));
        }
        unsetenv("MPIDICT_IDLE");
    });
}
