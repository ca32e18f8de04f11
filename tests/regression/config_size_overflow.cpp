// Regression (issue 18, item 1, "check every size computation for overflow"):
// configuration sizes whose sums or products wrap around.  linear_hash_map
// added max_key_bytes + max_value_bytes unchecked, so two halves of 2^64 summed
// to a small number and passed the buffer check; its bucket_entries times the
// number of local buckets wrapped to 0, so every insert grew the local table
// without end.  hash_map pre-sized its table from expected_keys_per_rank
// unchecked.  Each is now refused on every rank with a message naming the value
// and the limit, and the containers built next work.

#include <cstdint>
#include <limits>
#include <string>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

template <class Make>
std::string refusal(Make&& make) {
    try {
        make();
        return {};
    } catch (const mpidict::invalid_argument_error& problem) {
        return problem.what();
    }
}

void expect_refused(int rank, const std::string& message, const char* words) {
    const bool named = message.find(words) != std::string::npos;
    if (!named)
        std::fprintf(stderr, "[rank %d] expected a refusal naming '%s', got '%s'\n", rank, words, message.c_str());
    MPIDICT_CHECK_MSG(named, words);
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(60), "config_size_overflow");
        constexpr std::size_t half = std::size_t(1) << 63;

        mpidict::linear_hash_map_config lh;
        lh.max_key_bytes = half;
        lh.max_value_bytes = half;
        expect_refused(rank, refusal([&] { mpidict::linear_hash_map<std::string, std::string> m(MPI_COMM_WORLD, lh); }),
                       "max_key_bytes = 9223372036854775808");
        lh = {};
        lh.bucket_entries = half;
        expect_refused(rank, refusal([&] { mpidict::linear_hash_map<std::string, std::string> m(MPI_COMM_WORLD, lh); }),
                       "bucket_entries = 9223372036854775808");

        mpidict::hash_map_config hm;
        hm.expected_keys_per_rank = std::numeric_limits<std::size_t>::max();
        expect_refused(rank, refusal([&] { mpidict::hash_map<std::uint64_t, std::uint64_t> m(MPI_COMM_WORLD, hm); }),
                       "expected_keys_per_rank = 18446744073709551615");

        mpidict::skiplist_map_config sk;
        sk.max_key_bytes = half;
        sk.max_value_bytes = half;
        expect_refused(rank, refusal([&] { mpidict::skiplist_map<std::string, std::string> m(MPI_COMM_WORLD, sk); }),
                       "max_key_bytes must be in [1, 2^20]");

        // What was refused left nothing behind: maps built now work.
        // (One map at a time: a rank blocked in one map's flush serves only that map.)
        mpidict::linear_hash_map<std::string, std::string> words(MPI_COMM_WORLD);
        MPIDICT_CHECK(words.insert("k" + std::to_string(rank), "v").get().stored);
        words.flush();
        MPIDICT_CHECK(words.global_size() == static_cast<std::uint64_t>(size));
        mpidict::hash_map<std::uint64_t, std::uint64_t> numbers(MPI_COMM_WORLD);
        const std::uint64_t one = 1;
        numbers.insert(static_cast<std::uint64_t>(rank), std::span<const std::uint64_t>(&one, 1)).get();
        numbers.flush();
        MPIDICT_CHECK(numbers.global_size() == static_cast<std::uint64_t>(size));
    });
}
