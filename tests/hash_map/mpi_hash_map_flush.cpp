// flush(): after it returns, every rank sees every operation any rank started
// before it.  Also: flush with nothing to do, repeated flushes, flush right after
// construction, a flush where only one rank did anything, request-form operations
// left unwaited across a flush, and several insert/flush/check phases in a row
// where values of phase k all precede values of phase k+1.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;

constexpr std::uint64_t keys_per_rank = 80;

std::uint64_t key_of(int rank, std::uint64_t index) { return static_cast<std::uint64_t>(rank) * 7919 + index * 13 + 1; }

// Every rank looks up every rank's keys (requests held, then collected).
void everyone_sees_everything(map_type& map, int size) {
    std::vector<mpidict::request<std::vector<std::uint64_t>>> pending;
    for (int origin = 0; origin < size; ++origin)
        for (std::uint64_t index = 0; index < keys_per_rank; ++index)
            pending.push_back(map.find(key_of(origin, index)));
    std::size_t at = 0;
    for (int origin = 0; origin < size; ++origin) {
        for (std::uint64_t index = 0; index < keys_per_rank; ++index, ++at) {
            const std::vector<std::uint64_t> found = pending[at].get();
            MPIDICT_CHECK_MSG(found == std::vector<std::uint64_t>{key_of(origin, index) * 2},
                              "key " + std::to_string(key_of(origin, index)) + " from rank " + std::to_string(origin) +
                                  ": " + std::to_string(found.size()) + " values");
        }
    }
}

void basic_visibility(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    map.flush();  // flush with no operations at all, right after construction
    MPIDICT_CHECK(map.stats().flushes == 1);
    for (std::uint64_t index = 0; index < keys_per_rank; ++index)
        map.async_insert(key_of(rank, index), key_of(rank, index) * 2);
    map.flush();
    everyone_sees_everything(map, size);
    MPIDICT_CHECK(map.engine().outstanding_requests() == 0);

    // Nothing to do: repeated flushes return, and change nothing; each takes
    // one round (nothing is in flight at any rank's cut).  A flush after
    // traffic takes one round or more (one when every message was handled
    // before the last rank contributed).
    map.flush();
    const auto rounds = map.stats().flush_rounds;
    MPIDICT_CHECK(rounds >= 3);  // the three flushes so far: at least one round each
    for (int repeat = 0; repeat < 5; ++repeat)
        map.flush();
    MPIDICT_CHECK(map.stats().flushes == 8);
    MPIDICT_CHECK(map.stats().flush_rounds == rounds + 5);
    MPIDICT_CHECK(map.global_value_count() == keys_per_rank * static_cast<std::size_t>(size));
    // After such one-round flushes, one insert by one rank is still waited for.
    const std::uint64_t late = key_of(size, 1);
    if (rank == size - 1)
        map.async_insert(late, 77);
    map.flush();
    MPIDICT_CHECK(map.stats().flush_rounds >= rounds + 6);
    MPIDICT_CHECK(map.local_find(late).size() == (map.owner(late) == rank ? 1u : 0u));
    map.destroy();
}

// Only the last rank has anything to flush; every rank still waits for it.
void one_rank_active(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    const int active = size - 1;
    if (rank == active)
        for (std::uint64_t key = 0; key < 500; ++key)
            map.async_insert(key, key + 1);
    map.flush();
    for (std::uint64_t key = 0; key < 500; key += 37)
        MPIDICT_CHECK(map.find(key).get() == std::vector<std::uint64_t>{key + 1});
    map.flush();
    MPIDICT_CHECK(map.global_value_count() == 500);
    map.destroy();
}

// Request-form operations that nobody waited for are applied and answered by flush.
void unwaited_requests(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    std::vector<mpidict::request<mpidict::insert_result>> inserts;
    std::vector<mpidict::request<bool>> absent;
    for (std::uint64_t index = 0; index < 50; ++index) {
        const std::uint64_t value = index;
        inserts.push_back(map.insert(key_of(rank, index), std::span<const std::uint64_t>(&value, 1)));
        absent.push_back(map.insert_if_absent(key_of(rank, 1000 + index), index));
    }
    map.flush();
    MPIDICT_CHECK(map.engine().outstanding_requests() == 0);
    for (auto& request : inserts) {
        MPIDICT_CHECK(request.test());  // already answered
        MPIDICT_CHECK(request.get().stored == 1);
    }
    for (auto& request : absent) {
        MPIDICT_CHECK(request.test());
        MPIDICT_CHECK(request.get());
    }
    map.flush();
    MPIDICT_CHECK(map.global_value_count() == 100 * static_cast<std::size_t>(size));
    map.destroy();
}

// Phases: every rank appends (phase, rank) to a set of shared keys, flushes, and
// checks that every key has exactly the values of phases 0..k, phase by phase.
void interleaved_phases(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    constexpr std::uint64_t shared_keys = 24;
    constexpr int phases = 5;
    for (int phase = 0; phase < phases; ++phase) {
        // Mix forms: async singles, async spans, request inserts.
        std::vector<mpidict::request<mpidict::insert_result>> pending;
        for (std::uint64_t key = 0; key < shared_keys; ++key) {
            const std::uint64_t value = static_cast<std::uint64_t>(phase) * 1000 + static_cast<std::uint64_t>(rank);
            switch ((key + static_cast<std::uint64_t>(phase)) % 3) {
                case 0: map.async_insert(key, value); break;
                case 1: map.async_insert(key, std::span<const std::uint64_t>(&value, 1)); break;
                default: pending.push_back(map.insert(key, std::span<const std::uint64_t>(&value, 1))); break;
            }
        }
        // Some ranks do extra unrelated work before flushing, so ranks arrive at
        // the flush at different times.
        if (rank % 2 == 1)
            for (std::uint64_t extra = 0; extra < 200; ++extra)
                map.async_insert(100000 + extra, extra);
        map.flush();
        for (auto& request : pending)
            MPIDICT_CHECK(request.get().stored == 1);

        for (std::uint64_t key = 0; key < shared_keys; ++key) {
            const std::vector<std::uint64_t> values = map.find(key).get();
            MPIDICT_CHECK_MSG(values.size() == static_cast<std::size_t>((phase + 1) * size),
                              "key " + std::to_string(key) + " phase " + std::to_string(phase) + ": " +
                                  std::to_string(values.size()) + " values");
            // Values of earlier phases come first (flush separates the phases);
            // within a phase every rank appears once.
            bool ordered = true;
            for (std::size_t i = 0; i < values.size(); ++i)
                ordered = ordered && values[i] / 1000 == i / static_cast<std::size_t>(size);
            MPIDICT_CHECK_MSG(ordered, "key " + std::to_string(key) + " phase " + std::to_string(phase));
            for (int p = 0; p <= phase && values.size() == static_cast<std::size_t>((phase + 1) * size); ++p) {
                std::vector<std::uint64_t> in_phase(values.begin() + p * size, values.begin() + (p + 1) * size);
                std::sort(in_phase.begin(), in_phase.end());
                for (int r = 0; r < size; ++r)
                    MPIDICT_CHECK(in_phase[static_cast<std::size_t>(r)] ==
                                  static_cast<std::uint64_t>(p) * 1000 + static_cast<std::uint64_t>(r));
            }
        }
        map.flush();  // the checks above read; nobody may append before all have read
    }
    // Last phase: each rank erases the shared keys it "owns" by index; then all is gone.
    for (std::uint64_t key = 0; key < shared_keys; ++key)
        if (static_cast<int>(key % static_cast<std::uint64_t>(size)) == rank)
            map.async_erase(key);
    map.flush();
    for (std::uint64_t key = 0; key < shared_keys; ++key)
        MPIDICT_CHECK(map.find(key).get().empty());
    map.flush();
    // Only the extra keys remain: 200 keys, 200 values per phase from each odd rank.
    const std::size_t odd_ranks = static_cast<std::size_t>(size / 2);
    MPIDICT_CHECK(map.global_size() == (odd_ranks > 0 ? 200u : 0u));
    MPIDICT_CHECK(map.global_value_count() == odd_ranks * phases * 200);
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_flush");
        basic_visibility(rank, size);
        one_rank_active(rank, size);
        unwaited_requests(rank, size);
        interleaved_phases(rank, size);
    });
}
