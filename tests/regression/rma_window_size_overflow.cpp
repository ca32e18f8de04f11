// Regression (issue 18, items 1 and 2): rma_hash_set computed its window as
// 8 * (header_words + slots * slot_words) without checking for overflow, so
// slots_per_rank = 1152921504606846977 wrapped around to an 80-byte window and
// every rank crashed on its first insert; and a window larger than the address
// space allowed (ulimit -v) made MPICH loop forever in MPI_Win_allocate_shared.
// Now: a slot count whose size cannot be computed is refused on every rank; a
// window beyond RLIMIT_AS, RLIMIT_DATA or the available memory is refused on
// every rank before MPI is asked, naming the size and the limit; and a set that
// already exists keeps what it stored.

#include <sys/resource.h>

#include <array>
#include <cstdint>
#include <string>

#include "mpi_test_util.hpp"
#include "mpidict/rma_hash_set.hpp"

// AddressSanitizer reserves terabytes of address space for its shadow memory,
// so the RLIMIT_AS part cannot run under it (lowering the limit breaks ASan).
#if defined(__SANITIZE_ADDRESS__)
#define MPIDICT_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPIDICT_TEST_ASAN 1
#endif
#endif
#ifndef MPIDICT_TEST_ASAN
#define MPIDICT_TEST_ASAN 0
#endif

namespace {

using point = std::array<std::uint32_t, 2>;

// Builds a set with `config` and returns the message it was refused with ("" if built).
std::string refusal(const mpidict::rma_hash_set_config& config) {
    try {
        mpidict::rma_hash_set<point> set(MPI_COMM_WORLD, config);
        return {};
    } catch (const mpidict::invalid_argument_error& problem) {
        return problem.what();
    }
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(100), "rma_window_size_overflow");
        // Something stored first: it must survive every refusal below.
        mpidict::rma_hash_set_config small;
        small.slots_per_rank = 64;
        mpidict::rma_hash_set<point> kept(MPI_COMM_WORLD, small);
        MPIDICT_CHECK(kept.insert_if_absent(point{1, static_cast<std::uint32_t>(rank)}).get());
        kept.barrier();

        for (const auto access : {mpidict::rma_access::automatic, mpidict::rma_access::mpi_rma}) {
            mpidict::rma_hash_set_config config;
            config.access = access;
            // The size computation would wrap around.
            config.slots_per_rank = 1152921504606846977ULL;
            std::string message = refusal(config);
            MPIDICT_CHECK_MSG(message.find("slots per rank") != std::string::npos, "wrapping slot count: " + message);
            config.slots_per_rank = 0;
            config.expected_per_rank = std::size_t{1} << 62;
            message = refusal(config);
            MPIDICT_CHECK_MSG(message.find("slots per rank") != std::string::npos, "huge expected_per_rank: " + message);
            // Computable but far beyond any machine's memory (about 24 TB per rank).
            config.expected_per_rank = 0;
            config.slots_per_rank = std::size_t{1} << 40;
            message = refusal(config);
            MPIDICT_CHECK_MSG(message.find("cannot allocate its RMA window") != std::string::npos &&
                                  message.find("bytes") != std::string::npos,
                              "24 TB window: " + message);
        }
        // Beyond the address-space limit (ulimit -v): refused, not a hang.
        rlimit saved{};
        MPIDICT_CHECK(getrlimit(RLIMIT_AS, &saved) == 0);
        rlimit lowered = saved;
        lowered.rlim_cur = rlim_t{1} << 36;  // 64 GiB of address space
        if (!MPIDICT_TEST_ASAN && (saved.rlim_cur == RLIM_INFINITY || saved.rlim_cur > lowered.rlim_cur)) {
            MPIDICT_CHECK(setrlimit(RLIMIT_AS, &lowered) == 0);
            mpidict::rma_hash_set_config config;
            config.slots_per_rank = std::size_t{1} << 33;  // 192 GiB per rank at 24 bytes a slot
            const std::string message = refusal(config);
            MPIDICT_CHECK(setrlimit(RLIMIT_AS, &saved) == 0);
            MPIDICT_CHECK_MSG(message.find("cannot allocate its RMA window") != std::string::npos,
                              "window beyond RLIMIT_AS: " + message);
        }
        // What was stored is intact.
        for (int r = 0; r < size; ++r)
            MPIDICT_CHECK(kept.contains(point{1, static_cast<std::uint32_t>(r)}).get());
        MPIDICT_CHECK(kept.global_size() == static_cast<std::size_t>(size));
        kept.barrier();
    });
}
