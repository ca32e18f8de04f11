// rma_hash_set at 1-4 ranks: every synchronisation strategy on both kinds of
// window (shared memory with direct atomics, and MPI RMA forced with
// access = mpi_rma), for objects of 4, 8, 12, 16 and 32 bytes.
//
//   argv[1] (optional): "shared" or "rma" runs only that access kind;
//   "rma-smoke" runs MPI RMA with 8-byte objects only and few operations (for
//   3-4 ranks on 2 cores, where every MPI RMA wait needs the target scheduled).
//
// Each case checks results, not "it returned": exactly one rank wins each
// contended insert, every stored object is found, objects not inserted are
// absent, a full table names its capacity and load, and nothing is lost.

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "mpidict/rma_hash_set.hpp"
#include "test_support.hpp"

namespace {

using mpidict::insert_status;
using mpidict::rma_access;
using mpidict::rma_hash_set;
using mpidict::rma_hash_set_config;
using mpidict::rma_sync;

template <std::size_t Bytes>
struct object {
    std::array<std::uint8_t, Bytes> bytes{};
    bool operator<(const object& other) const { return bytes < other.bytes; }
    bool operator==(const object& other) const = default;
};

// A distinct object for each (tag, index): its first 8 bytes are a bijective mix.
template <std::size_t Bytes>
object<Bytes> make_object(std::uint64_t tag, std::uint64_t index) {
    object<Bytes> result;
    std::uint64_t word = mpidict::mix64((tag << 40) ^ index);
    std::uint64_t filler = mpidict::mix64(word + 1);
    for (std::size_t at = 0; at < Bytes; ++at) {
        // The first min(8, Bytes) bytes carry `word` (distinct up to 2^32 for 4 bytes).
        result.bytes[at] = static_cast<std::uint8_t>(at < 8 ? word >> (8 * at) : filler >> (8 * (at % 8)));
    }
    if constexpr (Bytes < 8) {
        // 4-byte objects: keep (tag, index) exactly so they stay distinct
        // (tags < 65536, indices < 65536 here).
        const std::uint32_t exact = static_cast<std::uint32_t>((tag << 16) + index);
        std::memcpy(result.bytes.data(), &exact, 4);
    }
    return result;
}

struct constant_hash {
    template <class T>
    std::uint64_t operator()(const T&) const { return 42; }
};

std::uint64_t global_sum(std::uint64_t value) {
    std::uint64_t total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

std::string describe(rma_sync sync, rma_access access, std::size_t bytes) {
    return std::string(mpidict::to_string(sync)) + "/" + mpidict::to_string(access) + "/" + std::to_string(bytes) +
           "B";
}

// Operations per rank.  MPI RMA waits need the target rank scheduled, so
// with more ranks than cores (or a busy machine) it is slow, and owner_lock's
// blocking MPI_Win_unlock is the slowest (docs/rma_hash_set.md): those get a
// tenth of the operations.
bool g_smoke = false;
std::size_t scale(rma_access access, rma_sync sync, int size, std::size_t count) {
    if (access == rma_access::mpi_rma && (g_smoke || (sync == rma_sync::owner_lock && size > 1)))
        return std::max<std::size_t>(count / 10, 8);
    return count;
}

template <std::size_t Bytes>
void basic_and_contended(rma_sync sync, rma_access access, int rank, int size) {
    using T = object<Bytes>;
    const std::string what = describe(sync, access, Bytes);
    const std::size_t mine = scale(access, sync, size, 400);
    const std::size_t common = scale(access, sync, size, 300);
    rma_hash_set_config config;
    config.expected_per_rank = mine + 2 * common;
    config.sync = sync;
    config.access = access;
    rma_hash_set<T> set(MPI_COMM_WORLD, config);
    MPIDICT_CHECK_MSG(set.shared_memory() == (access != rma_access::mpi_rma), what);

    // Own objects: new once, then present.
    std::uint64_t fresh = 0;
    for (std::size_t i = 0; i < mine; ++i)
        fresh += set.insert_if_absent(make_object<Bytes>(static_cast<std::uint64_t>(rank) + 1, i)).get() ? 1 : 0;
    MPIDICT_CHECK_MSG(fresh == mine, what + ": own objects not all new");
    std::uint64_t again = 0;
    for (std::size_t i = 0; i < mine; ++i)
        again += set.insert_if_absent(make_object<Bytes>(static_cast<std::uint64_t>(rank) + 1, i)).get() ? 1 : 0;
    MPIDICT_CHECK_MSG(again == 0, what + ": re-insert reported new");
    // The request is complete on return (one-sided), like any other container's
    // insert_if_absent once waited for: test() without progress, count() 1, one get().
    {
        auto request = set.insert_if_absent(make_object<Bytes>(static_cast<std::uint64_t>(rank) + 1, 0));
        MPIDICT_CHECK_MSG(request.valid() && request.test() && request.count() == 1, what + ": request not complete");
        MPIDICT_CHECK_MSG(!request.get() && !request.valid(), what + ": present object reported new");
        bool threw = false;
        try {
            request.get();
        } catch (const mpidict::error&) {
            threw = true;
        }
        MPIDICT_CHECK_MSG(threw, what + ": a consumed request answered again");
    }

    // Every rank inserts the same objects in its own order: one winner each.
    std::vector<std::size_t> order(common);
    std::iota(order.begin(), order.end(), std::size_t{0});
    std::shuffle(order.begin(), order.end(), std::mt19937_64(1234 + static_cast<unsigned>(rank)));
    std::uint64_t won = 0;
    for (const std::size_t i : order)
        won += set.insert_if_absent(make_object<Bytes>(1000, i)).get() ? 1 : 0;
    const std::uint64_t total_won = global_sum(won);
    MPIDICT_CHECK_MSG(total_won == common, what + ": contended winners " + std::to_string(total_won) + " != " +
                                               std::to_string(common));
    // The same through insert_if_absent_many (pipelined on MPI RMA), duplicates included.
    std::vector<T> batch;
    for (const std::size_t i : order)
        batch.push_back(make_object<Bytes>(1500, i));
    batch.push_back(batch.front());
    const auto batch_result = set.insert_if_absent_many(batch);
    MPIDICT_CHECK_MSG(batch_result.complete() && batch_result.inserted + batch_result.present == batch.size(),
                      what + ": batch accounting");
    MPIDICT_CHECK_MSG(batch_result.status.back() == mpidict::insert_status::present, what + ": in-batch duplicate");
    const std::uint64_t batch_won = global_sum(batch_result.inserted);
    MPIDICT_CHECK_MSG(batch_won == common, what + ": batch winners " + std::to_string(batch_won) + " != " +
                                               std::to_string(common));
    set.barrier();

    // Everyone sees everything; absent objects are absent.
    std::uint64_t found = 0;
    for (int other = 0; other < size; ++other)
        for (std::size_t i = 0; i < mine; i += 7)
            found += set.contains(make_object<Bytes>(static_cast<std::uint64_t>(other) + 1, i)).get() ? 1 : 0;
    std::uint64_t expected_found = 0;
    for (std::size_t i = 0; i < mine; i += 7)
        ++expected_found;
    MPIDICT_CHECK_MSG(found == expected_found * static_cast<std::uint64_t>(size), what + ": lookups missed");
    std::uint64_t phantom = 0;
    for (std::size_t i = 0; i < scale(access, sync, size, 50); ++i)
        phantom += set.contains(make_object<Bytes>(2000 + static_cast<std::uint64_t>(rank), i)).get() ? 1 : 0;
    MPIDICT_CHECK_MSG(phantom == 0, what + ": absent object found");

    // Sizes and the shard contents agree; every object sits on its owner.
    const std::size_t expected_total = mine * static_cast<std::size_t>(size) + 2 * common;
    MPIDICT_CHECK_MSG(set.global_size() == expected_total, what + ": global_size");
    std::uint64_t held = 0;
    std::uint64_t misplaced = 0;
    set.local_for_each([&](const T& each) {
        ++held;
        misplaced += set.owner(each) != rank ? 1 : 0;
    });
    const std::size_t local_size = set.local_size();
    MPIDICT_CHECK_MSG(held == local_size, what + ": local_for_each found " + std::to_string(held) +
                                              " objects, local_size() says " + std::to_string(local_size));
    MPIDICT_CHECK_MSG(misplaced == 0, what + ": " + std::to_string(misplaced) + " objects on the wrong rank");
    MPIDICT_CHECK_MSG(global_sum(held) == expected_total, what + ": shards do not add up");
    set.destroy();

    bool threw = false;
    try {
        set.contains(make_object<Bytes>(1, 1));
    } catch (const mpidict::use_after_destroy_error&) {
        threw = true;
    }
    MPIDICT_CHECK_MSG(threw, what + ": use after destroy");
}

// A tiny table: the batch form reports exactly what did not fit, and a single
// insert into a full table throws a message with the capacity and the load.
template <std::size_t Bytes>
void full_table(rma_sync sync, rma_access access, int rank, int size) {
    using T = object<Bytes>;
    const std::string what = describe(sync, access, Bytes) + " full";
    const std::size_t slots = g_smoke ? 4 : 8;
    rma_hash_set_config config;
    config.slots_per_rank = slots;
    config.sync = sync;
    config.access = access;
    rma_hash_set<T> set(MPI_COMM_WORLD, config);
    std::vector<T> batch;
    for (std::size_t i = 0; i < (slots + slots / 2) * static_cast<std::size_t>(size); ++i)
        batch.push_back(make_object<Bytes>(3000 + static_cast<std::uint64_t>(rank), i));
    batch.push_back(batch.front());  // a duplicate within the batch
    const auto result = set.insert_if_absent_many(batch);
    MPIDICT_CHECK_MSG(result.status.size() == batch.size(), what);
    MPIDICT_CHECK_MSG(result.inserted + result.present + result.not_inserted == batch.size(), what);
    MPIDICT_CHECK_MSG(result.not_inserted == result.not_inserted_indices.size(), what);
    MPIDICT_CHECK_MSG(result.present >= 1 || result.status.front() == insert_status::not_inserted, what);
    const std::uint64_t stored = global_sum(result.inserted);
    MPIDICT_CHECK_MSG(stored == slots * static_cast<std::uint64_t>(size),
                      what + ": stored " + std::to_string(stored) + " in " + std::to_string(slots * size) + " slots");
    set.barrier();
    for (std::size_t i = 0; i + 1 < batch.size(); ++i) {
        const bool in = set.contains(batch[i]).get();
        MPIDICT_CHECK_MSG(in == (result.status[i] != insert_status::not_inserted), what + ": status vs contains");
    }
    // A full owner refuses in the result (docs/architecture.md, "Contracts"):
    // insert says stored = false, insert_if_absent false; nothing is thrown.
    const auto before = set.local_statistics().rejected;
    const mpidict::replace_result refused = set.insert(make_object<Bytes>(4000 + static_cast<std::uint64_t>(rank), 0)).get();
    MPIDICT_CHECK_MSG(!refused.stored && !refused.replaced, what + ": insert into a full table not refused");
    MPIDICT_CHECK_MSG(!set.insert_if_absent(make_object<Bytes>(4000 + static_cast<std::uint64_t>(rank), 1)).get(),
                      what + ": insert_if_absent into a full table stored");
    MPIDICT_CHECK_MSG(set.local_statistics().rejected == before + 2, what + ": refusals not counted");
    const mpidict::replace_result again = set.insert(batch.front()).get();
    MPIDICT_CHECK_MSG(result.status.front() == insert_status::not_inserted || (again.stored && again.replaced),
                      what + ": insert of a present object");
    set.barrier();
}

// Every object hashes to the same rank, slot and fingerprint: long probe
// sequences that compare objects, contended claims of the same slots.
template <std::size_t Bytes>
void one_hash(rma_sync sync, rma_access access, int rank, int size) {
    using T = object<Bytes>;
    const std::string what = describe(sync, access, Bytes) + " constant hash";
    const std::size_t count = scale(access, sync, size, 60);
    rma_hash_set_config config;
    config.slots_per_rank = 4 * count * static_cast<std::size_t>(size);
    config.sync = sync;
    config.access = access;
    rma_hash_set<T, constant_hash> set(MPI_COMM_WORLD, config);
    std::uint64_t won = 0;
    for (std::size_t i = 0; i < count; ++i) {
        won += set.insert_if_absent(make_object<Bytes>(5000, i)).get() ? 1 : 0;                                      // shared
        won += set.insert_if_absent(make_object<Bytes>(6000 + static_cast<std::uint64_t>(rank), i)).get() ? 1 : 0;  // own
    }
    MPIDICT_CHECK_MSG(global_sum(won) == count * (1 + static_cast<std::uint64_t>(size)), what + ": winners");
    set.barrier();
    std::uint64_t found = 0;
    for (std::size_t i = 0; i < count; ++i)
        found += set.contains(make_object<Bytes>(6000 + static_cast<std::uint64_t>((rank + 1) % size), i)).get() ? 1 : 0;
    MPIDICT_CHECK_MSG(found == count, what + ": lookups");
    MPIDICT_CHECK_MSG(!set.contains(make_object<Bytes>(7000, 1)).get(), what + ": absent object found");
    MPIDICT_CHECK_MSG(set.global_size() == count * (1 + static_cast<std::uint64_t>(size)), what + ": size");
}

void mismatched_config(int rank, int size) {
    if (size < 2)
        return;
    rma_hash_set_config config;
    config.slots_per_rank = rank == 0 ? 100 : 200;
    bool threw = false;
    try {
        rma_hash_set<std::uint64_t> set(MPI_COMM_WORLD, config);
    } catch (const mpidict::collective_mismatch_error& problem) {
        threw = std::string_view(problem.what()).find("slots_per_rank") != std::string_view::npos;
    }
    MPIDICT_CHECK_MSG(threw, "different slots_per_rank on different ranks must throw on every rank");
}

template <std::size_t Bytes>
void all_cases(rma_access access, int rank, int size) {
    for (const rma_sync sync : {rma_sync::lock_free, rma_sync::owner_lock}) {
        basic_and_contended<Bytes>(sync, access, rank, size);
        full_table<Bytes>(sync, access, rank, size);
        one_hash<Bytes>(sync, access, rank, size);
    }
}

}  // namespace

int main(int argc, char** argv) {
    const std::string only = argc > 1 ? argv[1] : "";
    return mpidict::testing::run_mpi_test(argc, argv, [&](int rank, int size) {
        std::vector<rma_access> kinds;
        if (only.empty() || only == "shared")
            kinds.push_back(rma_access::automatic);
        if (only.empty() || only == "rma" || only == "rma-smoke")
            kinds.push_back(rma_access::mpi_rma);
        g_smoke = only == "rma-smoke";
        for (const rma_access access : kinds) {
            const double start = MPI_Wtime();
            all_cases<8>(access, rank, size);
            if (!g_smoke) {
                all_cases<4>(access, rank, size);
                all_cases<12>(access, rank, size);
                all_cases<16>(access, rank, size);
                all_cases<32>(access, rank, size);
            }
            if (rank == 0)
                std::printf("%s: %.2f s\n", mpidict::to_string(access), MPI_Wtime() - start);
        }
        mismatched_config(rank, size);
    });
}
