// A key with more values than one message holds (10,000 8-byte values, 64 KiB
// buffers) is read in pieces with find(key, limit, offset) and count(key),
// without taking anything; a whole find still fails on the caller with a
// message that names the way out.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

void pieces(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    const std::uint64_t key = 42;
    constexpr std::uint64_t total = 10000;
    // Every rank appends its share, in order per rank.
    for (std::uint64_t i = static_cast<std::uint64_t>(rank); i < total; i += static_cast<std::uint64_t>(size))
        map.async_insert(key, i);
    map.flush();
    MPIDICT_CHECK(map.count(key).get() == total);

    std::string message;
    try {
        (void)map.find(key).get();
    } catch (const mpidict::invalid_argument_error& problem) {
        message = problem.what();
    }
    MPIDICT_CHECK_MSG(message.find("find(key, limit, offset)") != std::string::npos, message);

    std::vector<std::uint64_t> all;
    constexpr std::size_t piece = 3000;
    for (std::size_t offset = 0;; offset += piece) {
        const std::vector<std::uint64_t> part = map.find(key, piece, offset).get();
        all.insert(all.end(), part.begin(), part.end());
        if (part.size() < piece)
            break;
    }
    MPIDICT_CHECK(all.size() == total);
    std::vector<bool> seen(total);
    for (std::uint64_t value : all)
        if (value < total)
            seen[value] = true;
    MPIDICT_CHECK(std::find(seen.begin(), seen.end(), false) == seen.end());
    // Pieces agree with the whole order: the same offsets give the same values.
    MPIDICT_CHECK(map.find(key, 5, 2000).get() == std::vector<std::uint64_t>(all.begin() + 2000, all.begin() + 2005));
    MPIDICT_CHECK(map.find(key, 10, total - 3).get().size() == 3);
    MPIDICT_CHECK(map.find(key, 10, total).get().empty());
    MPIDICT_CHECK(map.find(key, 10, std::size_t{1} << 40).get().empty());
    MPIDICT_CHECK(map.find(99, 10, 0).get().empty());
    map.flush();
    MPIDICT_CHECK(map.global_value_count() == total);  // nothing was taken
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_find_pieces");
        pieces(rank, size);
    });
}
