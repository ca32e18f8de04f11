#pragma once
// rma_hash_set<T>: a distributed set of small trivially copyable objects (up to
// 32 bytes) in one-sided MPI-3 windows: a visited set for graph search (seed
// 002, GAP's orbit hash table).
//
// Data layout.  One window allocation per rank (MPI_Win_allocate, or
// MPI_Win_allocate_shared when every rank is on one node).  A rank's segment is
// a 64-byte header {u64 occupied slots, u64 owner lock, reserved} followed by
// `slots_per_rank` slots of 8 + 8*ceil(sizeof(T)/8) bytes: a control word and
// the object, zero-padded to whole words.  An object lives on the rank chosen
// by one mix of its hash, in the slot chosen by another, probing linearly
// (wrapping) from there.
//
// Control word.  0 = empty; (fingerprint << 2) | 1 = claimed, object being
// written; (fingerprint << 2) | 2 = published.  The fingerprint is 62 bits of a
// third mix of the hash, so a probe passes slots of other objects by looking at
// the control word alone, and waits only on a slot being written whose
// fingerprint is its own (it may be the same object, inserted concurrently).
// Slots are never emptied: a published slot is immutable.
//
// Synchronisation, chosen at construction (config.sync):
//   lock_free   claim an empty slot by compare-and-swap of its control word
//               (0 -> claimed), write the object, then publish (release).
//               Readers never lock.  MPI: one MPI_Win_lock_all epoch for the
//               set's lifetime; MPI_Compare_and_swap, MPI_Accumulate(REPLACE)
//               and MPI_Rget_accumulate(NO_OP) reads, so every access is
//               element-wise atomic.
//   owner_lock  seed 002's MPI strategy: an exclusive lock on the owner's whole
//               table around each probe sequence.  MPI: MPI_Win_lock(EXCLUSIVE)
//               / MPI_Get / MPI_Put / MPI_Win_unlock per operation.  Shared
//               memory: a lock word in the owner's header (MPICH's window locks
//               need the target to make progress, see below).
//
// Access (config.access).  automatic: a shared-memory window if every rank is on
// this node, else MPI RMA.  On shared memory every access is a C++ atomic on the
// owner's memory (std::atomic_ref through MPI_Win_shared_query pointers): no
// operation needs the target rank to run, which is what keeps the set fast when
// ranks outnumber cores.  MPI RMA waits poll requests and yield the core
// (detail/rma_window.hpp); docs/rma_hash_set.md has the measurements.
//
// When operations complete.  Every call is blocking and complete when it
// returns: an inserted object is visible to every rank's later probes.  No
// collective is needed between inserts and lookups; barrier() (collective) is
// needed only before reading this rank's own segment (local_for_each).
//
// Costs per operation (p ranks, k = slots probed, usually 1-2 at load <= 0.5):
//   shared memory: k atomic loads (+1 CAS, 1 release store, 1 fetch_add to
//     insert); owner_lock adds a lock CAS and a release store.
//   MPI RMA lock_free: k round trips to read slots; inserting adds 3 (claim,
//     object, publish).  insert_if_absent_many advances up to 1024 objects together:
//     about 4 + k waited rounds for the whole batch.  owner_lock: lock + k
//     round trips + unlock per object.
//
// Full tables.  A probe visits each slot of the owner at most once.  If none is
// free, insert_if_absent throws table_full_error naming the rank, the capacity
// and the load; insert_if_absent_many instead reports, per object, that it was not
// inserted.  contains() on a full table answers false after one full pass.
//
// Threads.  One thread per rank calls the set at a time.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <type_traits>
#include <vector>

#include <mpi.h>

#include "mpidict/checkpoint.hpp"
#include "mpidict/detail/rma_window.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/results.hpp"
#include "mpidict/runtime/request.hpp"

namespace mpidict {

enum class rma_sync { lock_free, owner_lock };
enum class rma_access { automatic, shared_memory, mpi_rma };

inline const char* to_string(rma_sync sync) { return sync == rma_sync::lock_free ? "lock_free" : "owner_lock"; }
inline const char* to_string(rma_access access) {
    switch (access) {
    case rma_access::shared_memory: return "shared_memory";
    case rma_access::mpi_rma: return "mpi_rma";
    default: return "automatic";
    }
}

// A probe found no free slot on the object's owner.
class table_full_error : public error {
public:
    using error::error;
};

struct rma_hash_set_config {
    // Slots per rank.  0: expected_per_rank / max_load, or 65536 if that is 0 too.
    std::size_t slots_per_rank = 0;
    std::size_t expected_per_rank = 0;
    double max_load = 0.5;  // only sizes the table; inserts go on until it is full
    rma_sync sync = rma_sync::lock_free;
    rma_access access = rma_access::automatic;
};

struct insert_if_absent_many_result {
    std::vector<insert_status> status;  // one per object, in the order given
    std::size_t inserted = 0;           // new objects stored
    std::size_t present = 0;            // already in the set
    std::size_t not_inserted = 0;       // owner's table full
    std::vector<std::size_t> not_inserted_indices;
    bool complete() const { return not_inserted == 0; }
};

// Counters of this rank's calls (not collective).
struct rma_statistics {
    std::uint64_t inserts = 0;           // insert attempts (batch elements included)
    std::uint64_t inserted = 0;          // of which stored a new object
    std::uint64_t lookups = 0;           // contains() calls
    std::uint64_t remote_operations = 0; // operations whose owner is another rank
    std::uint64_t slots_probed = 0;      // control words examined
    std::uint64_t round_trips = 0;       // waited MPI RMA round trips (MPI RMA access)
    std::uint64_t claim_conflicts = 0;   // compare-and-swap lost to another rank
    std::uint64_t busy_waits = 0;        // re-reads of a slot being written
    std::uint64_t lock_waits = 0;        // failed attempts at an owner lock (shared memory)
    std::uint64_t yields = 0;            // times this rank gave its core away while waiting
};

template <class T, class Hash = hasher<T>>
class rma_hash_set {
    static_assert(std::is_trivially_copyable_v<T>, "rma_hash_set objects must be trivially copyable.");
    static_assert(sizeof(T) <= 32, "rma_hash_set objects must be at most 32 bytes; pack larger ones or use hash_map.");
    static_assert(std::has_unique_object_representations_v<T>,
                  "rma_hash_set hashes and compares object bytes, so the type must have no padding "
                  "(and no floating-point members).");

public:
    using value_type = T;
    static constexpr std::size_t object_words = (sizeof(T) + 7) / 8;
    static constexpr std::size_t slot_words = 1 + object_words;
    static constexpr std::size_t header_words = 8;
    static constexpr std::size_t slot_bytes = 8 * slot_words;

    // Collective.  Builds the set over `communicator` (duplicated).
    explicit rma_hash_set(MPI_Comm communicator, rma_hash_set_config config = {})
        : m_config(config), m_slots(wanted_slots(config)) {
        const std::uint64_t values[] = {m_slots, static_cast<std::uint64_t>(config.sync),
                                        static_cast<std::uint64_t>(config.access), sizeof(T)};
        const std::string names[] = {"rma_hash_set slots_per_rank", "rma_hash_set sync", "rma_hash_set access",
                                     "rma_hash_set object size"};
        detail::check_same_on(communicator, values, names);
        // The ranks agree on the slot count: a bad one is refused on all of them.
        check_slots(config, m_slots);
        if (config.access == rma_access::shared_memory && !detail::all_ranks_on_one_node(communicator))
            throw invalid_argument_error(
                "mpidict: rma_hash_set access = shared_memory needs every rank on one node; "
                "use automatic or mpi_rma");
        const std::size_t bytes = 8 * (header_words + m_slots * slot_words);
        m_window = std::make_unique<detail::rma_window>(communicator, bytes, config.access != rma_access::mpi_rma);
        // Shared memory: the epoch only makes load/store access formally legal.
        if (m_window->shared() || config.sync == rma_sync::lock_free)
            m_window->lock_all();
    }

    rma_hash_set(const rma_hash_set&) = delete;
    rma_hash_set& operator=(const rma_hash_set&) = delete;

    // Collective when still alive and no exception is unwinding; otherwise the
    // window is abandoned without waiting for other ranks.
    ~rma_hash_set() {
        if (m_window && !m_window->freed() && std::uncaught_exceptions() == 0) {
            try {
                destroy();
            } catch (const std::exception& problem) {
                std::fprintf(stderr, "mpidict: rma_hash_set teardown failed: %s\n", problem.what());
            }
        }
    }

    // Collective.  Frees the window.
    void destroy() {
        if (m_window && !m_window->freed())
            m_window->free();
    }
    bool destroyed() const { return !m_window || m_window->freed(); }

    int rank() const { return m_window->rank(); }
    int num_ranks() const { return m_window->size(); }
    [[deprecated("mpidict: size() is the number of ranks here; call num_ranks() (the name every container uses)")]]
    int size() const { return m_window->size(); }
    std::size_t slots_per_rank() const { return m_slots; }
    rma_sync sync() const { return m_config.sync; }
    // Whether this set uses a shared-memory window with direct atomics.
    bool shared_memory() const { return m_window->shared(); }
    const rma_hash_set_config& settings() const { return m_config; }
    const rma_statistics& stats() const { return m_stats; }
    void reset_statistics() { m_stats = {}; }
    // Bytes of window memory on each rank.
    std::size_t local_memory_bytes() const { return 8 * (header_words + m_slots * slot_words); }

    int owner(const T& object) const { return describe(object).owner; }

    // Stores `object` unless present; the request's get() is true if it was
    // new.  One-sided: the operation is complete when this returns, so the
    // request is already complete (the same shape as hash_map's and
    // skiplist_map's insert_if_absent).  Throws table_full_error if the owner
    // has no free slot.
    request<bool> insert_if_absent(const T& object) {
        check_alive("insert_if_absent");
        const key k = describe(object);
        ++m_stats.inserts;
        const probe_result result = probe(k, true);
        if (result == probe_result::full)
            throw table_full_error(full_message(k.owner));
        if (result == probe_result::inserted)
            ++m_stats.inserted;
        return request<bool>::completed(result == probe_result::inserted);
    }

    bool contains(const T& object) {
        check_alive("contains");
        const key k = describe(object);
        ++m_stats.lookups;
        const probe_result result = probe(k, false);
        return result == probe_result::present;
    }

    // Inserts every object; an object whose owner is full is reported, not thrown.
    // With MPI RMA and lock_free the probes of up to 1024 objects advance
    // together, one waited round trip per step for all of them.
    insert_if_absent_many_result insert_if_absent_many(std::span<const T> objects) {
        check_alive("insert_if_absent_many");
        insert_if_absent_many_result result;
        result.status.resize(objects.size(), insert_status::not_inserted);
        if (!m_window->shared() && m_config.sync == rma_sync::lock_free) {
            pipelined_insert(objects, result);
            return result;
        }
        for (std::size_t index = 0; index < objects.size(); ++index) {
            const key k = describe(objects[index]);
            ++m_stats.inserts;
            switch (probe(k, true)) {
            case probe_result::inserted:
                ++m_stats.inserted;
                ++result.inserted;
                result.status[index] = insert_status::inserted;
                break;
            case probe_result::present:
                ++result.present;
                result.status[index] = insert_status::present;
                break;
            default:
                ++result.not_inserted;
                result.not_inserted_indices.push_back(index);
                break;
            }
        }
        return result;
    }

    // Collective.  Returns when every rank has called it; everything inserted
    // anywhere before it is visible in local_for_each after it.
    void barrier() {
        check_alive("barrier");
        m_window->barrier();
    }
    // Collective.  The vocabulary's name for barrier(): inserts are one-sided
    // and complete when they return, so all a flush has to do is this.
    void flush() { barrier(); }
    // Collective.  flush(), then fn(object) for every object stored on this
    // rank: the whole set is visited once.
    template <class Function>
    void for_all(Function&& fn) {
        flush();
        local_for_each(std::forward<Function>(fn));
    }

    // Objects stored on `owner_rank` (one RMA read when not shared memory).
    std::size_t occupied(int owner_rank) {
        check_alive("occupied");
        return static_cast<std::size_t>(read_count(owner_rank));
    }
    std::size_t local_size() { return occupied(rank()); }
    // Collective.
    std::size_t global_size() {
        check_alive("global_size");
        return static_cast<std::size_t>(m_window->sum(read_count(rank())));
    }

    // Calls fn(const T&) for each object stored on this rank.  Call after
    // barrier() if other ranks have inserted.
    template <class Function>
    void local_for_each(Function&& fn) {
        check_alive("local_for_each");
        const bool epoch = !m_window->locked_all();
        if (epoch)
            detail::check_mpi(MPI_Win_lock(MPI_LOCK_SHARED, rank(), 0, m_window->handle()), "MPI_Win_lock");
        MPI_Win_sync(m_window->handle());
        auto* words = reinterpret_cast<std::uint64_t*>(m_window->local_segment());
        for (std::size_t index = 0; index < m_slots; ++index) {
            std::uint64_t* slot = words + header_words + index * slot_words;
            const std::uint64_t control = std::atomic_ref<std::uint64_t>(*slot).load(std::memory_order_acquire);
            if ((control & 3) != state_published)
                continue;
            T object;
            std::memcpy(static_cast<void*>(&object), slot + 1, sizeof(T));
            fn(static_cast<const T&>(object));
        }
        if (epoch)
            detail::check_mpi(MPI_Win_unlock(rank(), m_window->handle()), "MPI_Win_unlock");
    }

    // ---- checkpoints (include/mpidict/checkpoint.hpp, docs/checkpoint.md) --

    // Collective.  barrier(), then writes every object stored on each rank to
    // `directory`, replacing the checkpoint there only once all of it is on disk.
    void save(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        barrier();
        ck::communicator_copy comm(m_window->comm(), "rma_hash_set");
        ck::entry_totals totals;
        totals.keys = local_size();
        ck::description what = ck::describe<T, T>("rma_hash_set", checkpoint_flags, options);
        what.tunables = {{"slots_per_rank", std::to_string(m_slots)},
                         {"max_load", std::to_string(m_config.max_load)},
                         {"sync", m_config.sync == rma_sync::lock_free ? "lock_free" : "locked"}};
        ck::write_entries<T, T>(comm.get(), directory, std::move(what), checkpoint_flags, totals, options,
                                [&](ck::entry_writer<T, T>& entries) {
                                    local_for_each([&](const T& object) { entries.key(object); });
                                });
    }

    // Collective.  Fills this set, which must be empty, from the checkpoint in
    // `directory` (saved at any number of ranks, any slots_per_rank).  Throws
    // checkpoint_error on every rank, leaving the set empty, if the checkpoint
    // is missing, damaged or of another type, or if an owner's table is full.
    void load(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        if (const std::size_t held = global_size(); held != 0)
            throw invalid_argument_error("mpidict: rma_hash_set load needs an empty set; this one holds " +
                                         std::to_string(held) + " objects");
        ck::communicator_copy comm(m_window->comm(), "rma_hash_set");
        ck::reader in(comm.get(), directory, ck::describe<T, T>("rma_hash_set", checkpoint_flags, options),
                      ck::columns_for<T, T>(checkpoint_flags, {}), options);
        std::string problem;
        try {
            std::vector<T> batch;
            std::size_t refused = 0;
            auto insert_batch = [&] {
                refused += insert_if_absent_many(batch).not_inserted;
                batch.clear();
            };
            for (std::size_t shard = 0; shard < in.shards(); ++shard) {
                ck::entry_reader<T, T> entries(in, shard, checkpoint_flags);
                for (std::uint64_t entry = 0; entry < in.entries(shard); ++entry) {
                    batch.push_back(entries.key());
                    if (batch.size() == 4096)
                        insert_batch();
                }
            }
            insert_batch();
            if (refused != 0)
                problem = "mpidict: checkpoint " + directory + ": " + std::to_string(refused) +
                          " saved objects found their owner's table full (rank " + std::to_string(rank()) + ", " +
                          std::to_string(m_slots) + " slots per rank)";
        } catch (const std::exception& failure) {
            problem = "mpidict: checkpoint " + directory + ": loading failed: " + failure.what();
        }
        barrier();
        try {
            ck::agree(comm.get(), problem);
        } catch (const checkpoint_error& failure) {
            clear_after_failed_load();
            throw checkpoint_error(std::string(failure.what()) + "; the set is left empty");
        }
    }

private:
    static constexpr detail::checkpoint::layout_flags checkpoint_flags{false, false, false};

    // Collective.  Every rank empties its own table (between barriers, so no
    // insert is under way).
    void clear_after_failed_load() {
        barrier();
        const bool epoch = !m_window->locked_all();
        if (epoch)
            detail::check_mpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank(), 0, m_window->handle()), "MPI_Win_lock");
        std::memset(m_window->local_segment(), 0, 8 * (header_words + m_slots * slot_words));
        MPI_Win_sync(m_window->handle());
        if (epoch)
            detail::check_mpi(MPI_Win_unlock(rank(), m_window->handle()), "MPI_Win_unlock");
        barrier();
    }

    static constexpr std::uint64_t state_busy = 1;
    static constexpr std::uint64_t state_published = 2;

    enum class probe_result { inserted, present, absent, full };

    struct key {
        int owner = 0;
        std::size_t home = 0;
        std::uint64_t fingerprint = 0;
        std::array<std::uint64_t, object_words> words{};
    };

    // The most slots whose window size (8 * (header_words + slots * slot_words))
    // does not overflow; the window itself refuses what does not fit in memory.
    static constexpr std::size_t max_slots = (std::numeric_limits<std::size_t>::max() / 16 - header_words) / slot_words;

    static void check_slots(const rma_hash_set_config& config, std::size_t slots) {
        if (slots == 0)
            throw invalid_argument_error("mpidict: rma_hash_set max_load = " + std::to_string(config.max_load) +
                                         " is outside (0, 1]");
        if (slots > max_slots)
            throw invalid_argument_error("mpidict: rma_hash_set needs " + std::to_string(slots) +
                                         " slots per rank, more than the " + std::to_string(max_slots) +
                                         " whose window size can be computed; lower slots_per_rank or "
                                         "expected_per_rank");
    }
    // Never throws (the constructor agrees on it first): 0 for a bad max_load,
    // above max_slots for a size it cannot compute.
    static std::size_t wanted_slots(const rma_hash_set_config& config) {
        if (config.slots_per_rank != 0)
            return config.slots_per_rank;
        if (!(config.max_load > 0.0 && config.max_load <= 1.0))
            return 0;
        if (config.expected_per_rank == 0)
            return 65536;
        const double wanted = static_cast<double>(config.expected_per_rank) / config.max_load;
        if (!(wanted < static_cast<double>(max_slots)))
            return max_slots + 1;  // refused by check_slots
        return static_cast<std::size_t>(wanted) + 1;
    }

    void check_alive(const char* what) const {
        if (!m_window || m_window->freed())
            throw use_after_destroy_error(std::string("mpidict: rma_hash_set::") + what + " after destroy()");
    }

    key describe(const T& object) const {
        key k;
        const std::uint64_t h = m_hash(object);
        k.owner = static_cast<int>(reduce_range(mix64(h ^ 0x5851f42d4c957f2dULL), static_cast<std::size_t>(num_ranks())));
        k.home = reduce_range(h, m_slots);
        k.fingerprint = mix64(h ^ 0x94d049bb133111ebULL) >> 2;
        std::memcpy(k.words.data(), &object, sizeof(T));
        return k;
    }

    probe_result probe(const key& k, bool insert) {
        if (k.owner != rank())
            ++m_stats.remote_operations;
        if (m_window->shared()) {
            if (m_config.sync == rma_sync::owner_lock) {
                shared_lock_guard guard(*this, k.owner);
                return probe_shared(k, insert);
            }
            return probe_shared(k, insert);
        }
        if (m_config.sync == rma_sync::owner_lock)
            return probe_rma_locked(k, insert);
        return probe_rma_lock_free(k, insert);
    }

    // ---- shared memory: C++ atomics on the owner's segment ---------------------

    std::uint64_t* shared_words(int owner_rank) const {
        return reinterpret_cast<std::uint64_t*>(m_window->segment(owner_rank));
    }

    struct shared_lock_guard {
        rma_hash_set& self;
        std::atomic_ref<std::uint64_t> lock;
        shared_lock_guard(rma_hash_set& set, int owner_rank) : self(set), lock(set.shared_words(owner_rank)[1]) {
            detail::backoff pacing;
            const std::uint64_t mine = static_cast<std::uint64_t>(set.rank()) + 1;
            std::uint64_t expected = 0;
            while (!lock.compare_exchange_weak(expected, mine, std::memory_order_acquire, std::memory_order_relaxed)) {
                expected = 0;
                ++self.m_stats.lock_waits;
                pacing.pause();
            }
            self.m_stats.yields += pacing.yields();
        }
        ~shared_lock_guard() { lock.store(0, std::memory_order_release); }
    };

    probe_result probe_shared(const key& k, bool insert) {
        std::uint64_t* words = shared_words(k.owner);
        const std::uint64_t published = (k.fingerprint << 2) | state_published;
        const std::uint64_t busy = (k.fingerprint << 2) | state_busy;
        std::size_t index = k.home;
        for (std::size_t step = 0; step < m_slots; ++step) {
            std::uint64_t* slot = words + header_words + index * slot_words;
            std::atomic_ref<std::uint64_t> control(*slot);
            std::uint64_t seen = control.load(std::memory_order_acquire);
            ++m_stats.slots_probed;
            detail::backoff pacing;
            for (;;) {
                if (seen == 0) {
                    if (!insert)
                        return probe_result::absent;
                    if (control.compare_exchange_strong(seen, busy, std::memory_order_acq_rel,
                                                        std::memory_order_acquire)) {
                        // Nobody reads the object before the release store below.
                        std::memcpy(slot + 1, k.words.data(), 8 * object_words);
                        control.store(published, std::memory_order_release);
                        std::atomic_ref<std::uint64_t>(words[0]).fetch_add(1, std::memory_order_relaxed);
                        return probe_result::inserted;
                    }
                    ++m_stats.claim_conflicts;
                    continue;  // `seen` now holds the winner's control word
                }
                if ((seen >> 2) != k.fingerprint)
                    break;  // another object's slot: go on
                if ((seen & 3) == state_busy) {
                    ++m_stats.busy_waits;
                    pacing.pause();
                    seen = control.load(std::memory_order_acquire);
                    continue;
                }
                if (std::memcmp(slot + 1, k.words.data(), 8 * object_words) == 0)
                    return probe_result::present;
                break;
            }
            m_stats.yields += pacing.yields();
            if (++index == m_slots)
                index = 0;
        }
        return probe_result::full;
    }

    // ---- MPI RMA ---------------------------------------------------------------

    static MPI_Aint slot_displacement(std::size_t index) {
        return static_cast<MPI_Aint>(header_words + index * slot_words);
    }

    void wait(MPI_Request& request) {
        ++m_stats.round_trips;
        m_window->wait(request, &m_stats.yields);
    }

    // Atomic read of `count` words (element-wise, like every access in lock_free).
    void atomic_read(int target, MPI_Aint displacement, std::uint64_t* out, int count) {
        MPI_Request request = MPI_REQUEST_NULL;
        detail::check_mpi(MPI_Rget_accumulate(nullptr, 0, MPI_UINT64_T, out, count, MPI_UINT64_T, target,
                                              displacement, count, MPI_UINT64_T, MPI_NO_OP, m_window->handle(),
                                              &request),
                          "MPI_Rget_accumulate");
        wait(request);
    }

    // Completes this rank's earlier accumulates to words [displacement,
    // displacement + count) of `target`.  A read of the same words is ordered
    // after them (accumulate ordering), so polling its request with yields does
    // the waiting; the flush that follows then returns at once instead of
    // busy-polling for a whole time slice when ranks outnumber cores.
    void complete(int target, MPI_Aint displacement, int count) {
        std::array<std::uint64_t, slot_words> scratch{};
        atomic_read(target, displacement, scratch.data(), count);
        detail::check_mpi(MPI_Win_flush(target, m_window->handle()), "MPI_Win_flush");
    }

    // The compare operand of MPI_Compare_and_swap: MPI reads it only, but some
    // implementations (SimGrid SMPI) declare it void*, and a non-blocking
    // swap needs it alive until the epoch completes, hence one static word.
    static std::uint64_t& compare_zero() {
        static std::uint64_t word = 0;
        return word;
    }

    probe_result probe_rma_lock_free(const key& k, bool insert) {
        const MPI_Win window = m_window->handle();
        const int target = k.owner;
        const std::uint64_t published = (k.fingerprint << 2) | state_published;
        const std::uint64_t busy = (k.fingerprint << 2) | state_busy;
        std::uint64_t& zero = compare_zero();
        const std::uint64_t one = 1;
        std::array<std::uint64_t, slot_words> slot{};
        std::size_t index = k.home;
        for (std::size_t step = 0; step < m_slots; ++step) {
            const MPI_Aint at = slot_displacement(index);
            atomic_read(target, at, slot.data(), static_cast<int>(slot_words));
            ++m_stats.slots_probed;
            bool confirmed = false;
            detail::backoff pacing;
            for (;;) {
                const std::uint64_t seen = slot[0];
                if (seen == 0) {
                    if (!insert)
                        return probe_result::absent;
                    std::uint64_t previous = 0;
                    detail::check_mpi(MPI_Compare_and_swap(&busy, &zero, &previous, MPI_UINT64_T, target, at, window),
                                      "MPI_Compare_and_swap");
                    complete(target, at, 1);
                    if (previous == 0) {
                        detail::check_mpi(MPI_Accumulate(k.words.data(), static_cast<int>(object_words), MPI_UINT64_T,
                                                         target, at + 1, static_cast<int>(object_words), MPI_UINT64_T,
                                                         MPI_REPLACE, window),
                                          "MPI_Accumulate");
                        complete(target, at + 1, static_cast<int>(object_words));
                        detail::check_mpi(MPI_Accumulate(&published, 1, MPI_UINT64_T, target, at, 1, MPI_UINT64_T,
                                                         MPI_REPLACE, window),
                                          "MPI_Accumulate");
                        detail::check_mpi(
                            MPI_Accumulate(&one, 1, MPI_UINT64_T, target, 0, 1, MPI_UINT64_T, MPI_SUM, window),
                            "MPI_Accumulate");
                        complete(target, at, 1);
                        return probe_result::inserted;
                    }
                    ++m_stats.claim_conflicts;
                    slot[0] = previous;  // the winner's object may not be written yet
                    continue;
                }
                if ((seen >> 2) != k.fingerprint)
                    break;
                if ((seen & 3) == state_busy) {
                    ++m_stats.busy_waits;
                    pacing.pause();
                    atomic_read(target, at, slot.data(), static_cast<int>(slot_words));
                    continue;
                }
                if (std::memcmp(slot.data() + 1, k.words.data(), 8 * object_words) == 0)
                    return probe_result::present;
                if (!confirmed) {
                    // The object words of one read are not ordered with its
                    // control word: read again now that the slot is published.
                    confirmed = true;
                    atomic_read(target, at, slot.data(), static_cast<int>(slot_words));
                    continue;
                }
                break;
            }
            m_stats.yields += pacing.yields();
            if (++index == m_slots)
                index = 0;
        }
        return probe_result::full;
    }

    // insert_if_absent_many on MPI RMA, lock_free: the scalar protocol above, as a state
    // machine per object.  Each round issues one step of every object in
    // flight, waits for all of them at once (requests polled with yields, then
    // one MPI_Win_flush_all that finds nothing left to wait for) and advances.
    void pipelined_insert(std::span<const T> objects, insert_if_absent_many_result& result) {
        enum class phase : std::uint8_t { read, claim, write, publish };
        struct flight {
            std::size_t index = 0;
            key k;
            std::size_t slot = 0;
            std::size_t steps = 0;
            phase step = phase::read;
            bool confirmed = false;
            std::uint64_t busy = 0;
            std::uint64_t published = 0;
            std::uint64_t previous = 0;
            std::array<std::uint64_t, slot_words> buffer{};
            std::array<std::uint64_t, slot_words> readback{};
        };
        constexpr std::size_t in_flight = 1024;
        std::uint64_t& zero = compare_zero();
        static constexpr std::uint64_t one = 1;
        const MPI_Win window = m_window->handle();
        std::vector<flight> flights;
        flights.reserve(in_flight);
        std::vector<MPI_Request> requests;
        requests.reserve(in_flight);
        // A later copy of an object already in this batch is not flown: flying both
        // lets the copies race for the slot (MPICH over UCX does not order the two
        // compare-and-swaps), and the later copy could win.  It is answered as a
        // sequential insert would be: present, or not_inserted if the first could
        // not be stored.
        constexpr std::size_t no_copy = static_cast<std::size_t>(-1);
        std::vector<std::size_t> copy_of(objects.size(), no_copy);
        {
            std::unordered_map<std::string_view, std::size_t> first;
            first.reserve(objects.size());
            for (std::size_t index = 0; index < objects.size(); ++index) {
                const std::string_view bytes(reinterpret_cast<const char*>(&objects[index]), sizeof(T));
                const auto [where, fresh] = first.emplace(bytes, index);
                if (!fresh)
                    copy_of[index] = where->second;
            }
        }
        std::size_t next = 0;
        auto record = [&](const flight& f, insert_status status) {
            result.status[f.index] = status;
            if (status == insert_status::inserted) {
                ++m_stats.inserted;
                ++result.inserted;
            } else if (status == insert_status::present) {
                ++result.present;
            } else {
                ++result.not_inserted;
            }
        };
        auto read_back = [&](flight& f, MPI_Aint at, int count) {
            MPI_Request request = MPI_REQUEST_NULL;
            detail::check_mpi(MPI_Rget_accumulate(nullptr, 0, MPI_UINT64_T, f.readback.data(), count, MPI_UINT64_T,
                                                  f.k.owner, at, count, MPI_UINT64_T, MPI_NO_OP, window, &request),
                              "MPI_Rget_accumulate");
            requests.push_back(request);
        };
        while (next < objects.size() || !flights.empty()) {
            while (flights.size() < in_flight && next < objects.size()) {
                if (copy_of[next] != no_copy) {
                    ++next;
                    continue;
                }
                flight f;
                f.index = next;
                f.k = describe(objects[next]);
                f.slot = f.k.home;
                f.busy = (f.k.fingerprint << 2) | state_busy;
                f.published = (f.k.fingerprint << 2) | state_published;
                ++m_stats.inserts;
                if (f.k.owner != rank())
                    ++m_stats.remote_operations;
                flights.push_back(f);
                ++next;
            }
            requests.clear();
            for (flight& f : flights) {
                const MPI_Aint at = slot_displacement(f.slot);
                const int target = f.k.owner;
                switch (f.step) {
                case phase::read: {
                    MPI_Request request = MPI_REQUEST_NULL;
                    detail::check_mpi(MPI_Rget_accumulate(nullptr, 0, MPI_UINT64_T, f.buffer.data(),
                                                          static_cast<int>(slot_words), MPI_UINT64_T, target, at,
                                                          static_cast<int>(slot_words), MPI_UINT64_T, MPI_NO_OP,
                                                          window, &request),
                                      "MPI_Rget_accumulate");
                    requests.push_back(request);
                    ++m_stats.slots_probed;
                    break;
                }
                case phase::claim:
                    detail::check_mpi(
                        MPI_Compare_and_swap(&f.busy, &zero, &f.previous, MPI_UINT64_T, target, at, window),
                        "MPI_Compare_and_swap");
                    read_back(f, at, 1);
                    break;
                case phase::write:
                    detail::check_mpi(MPI_Accumulate(f.k.words.data(), static_cast<int>(object_words), MPI_UINT64_T,
                                                     target, at + 1, static_cast<int>(object_words), MPI_UINT64_T,
                                                     MPI_REPLACE, window),
                                      "MPI_Accumulate");
                    read_back(f, at + 1, static_cast<int>(object_words));
                    break;
                case phase::publish:
                    detail::check_mpi(MPI_Accumulate(&f.published, 1, MPI_UINT64_T, target, at, 1, MPI_UINT64_T,
                                                     MPI_REPLACE, window),
                                      "MPI_Accumulate");
                    detail::check_mpi(
                        MPI_Accumulate(&one, 1, MPI_UINT64_T, target, 0, 1, MPI_UINT64_T, MPI_SUM, window),
                        "MPI_Accumulate");
                    read_back(f, at, 1);
                    break;
                }
            }
            detail::backoff pacing;
            for (;;) {
                int done = 0;
                detail::check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                                              MPI_STATUSES_IGNORE),
                                  "MPI_Testall");
                if (done)
                    break;
                pacing.pause();
            }
            m_stats.yields += pacing.yields();
            detail::check_mpi(MPI_Win_flush_all(window), "MPI_Win_flush_all");
            ++m_stats.round_trips;

            std::size_t kept = 0;
            for (flight& f : flights) {
                bool finished = false;
                auto advance = [&] {
                    f.confirmed = false;
                    f.step = phase::read;
                    if (++f.steps == m_slots) {
                        record(f, insert_status::not_inserted);
                        finished = true;
                    } else if (++f.slot == m_slots) {
                        f.slot = 0;
                    }
                };
                switch (f.step) {
                case phase::read: {
                    const std::uint64_t seen = f.buffer[0];
                    if (seen == 0) {
                        f.step = phase::claim;
                    } else if ((seen >> 2) != f.k.fingerprint) {
                        advance();
                    } else if ((seen & 3) == state_busy) {
                        ++m_stats.busy_waits;  // read the same slot again next round
                    } else if (std::memcmp(f.buffer.data() + 1, f.k.words.data(), 8 * object_words) == 0) {
                        record(f, insert_status::present);
                        finished = true;
                    } else if (!f.confirmed) {
                        f.confirmed = true;  // object words may predate the publish: read again
                    } else {
                        advance();
                    }
                    break;
                }
                case phase::claim:
                    if (f.previous == 0) {
                        f.step = phase::write;
                    } else {
                        ++m_stats.claim_conflicts;
                        f.step = phase::read;
                    }
                    break;
                case phase::write:
                    f.step = phase::publish;
                    break;
                case phase::publish:
                    record(f, insert_status::inserted);
                    finished = true;
                    break;
                }
                if (!finished)
                    flights[kept++] = f;
            }
            flights.resize(kept);
        }
        for (std::size_t index = 0; index < objects.size(); ++index) {
            if (copy_of[index] == no_copy)
                continue;
            ++m_stats.inserts;
            if (result.status[copy_of[index]] == insert_status::not_inserted) {
                ++result.not_inserted;
            } else {
                result.status[index] = insert_status::present;
                ++result.present;
            }
        }
        for (std::size_t index = 0; index < result.status.size(); ++index)
            if (result.status[index] == insert_status::not_inserted)
                result.not_inserted_indices.push_back(index);
    }

    // Seed 002's strategy: the owner's whole table under an exclusive lock.
    probe_result probe_rma_locked(const key& k, bool insert) {
        const MPI_Win window = m_window->handle();
        const int target = k.owner;
        const std::uint64_t published = (k.fingerprint << 2) | state_published;
        const std::uint64_t one = 1;
        detail::check_mpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, window), "MPI_Win_lock");
        struct unlock_guard {
            int target;
            MPI_Win window;
            bool active = true;
            void release() {
                active = false;
                detail::check_mpi(MPI_Win_unlock(target, window), "MPI_Win_unlock");
            }
            ~unlock_guard() {
                if (active)
                    MPI_Win_unlock(target, window);
            }
        } guard{target, window};
        std::array<std::uint64_t, slot_words> slot{};
        std::size_t index = k.home;
        probe_result result = probe_result::full;
        for (std::size_t step = 0; step < m_slots; ++step) {
            const MPI_Aint at = slot_displacement(index);
            MPI_Request request = MPI_REQUEST_NULL;
            detail::check_mpi(MPI_Rget(slot.data(), static_cast<int>(slot_words), MPI_UINT64_T, target, at,
                                       static_cast<int>(slot_words), MPI_UINT64_T, window, &request),
                              "MPI_Rget");
            wait(request);
            ++m_stats.slots_probed;
            if (slot[0] == 0) {
                if (!insert) {
                    result = probe_result::absent;
                    break;
                }
                detail::check_mpi(MPI_Put(k.words.data(), static_cast<int>(object_words), MPI_UINT64_T, target, at + 1,
                                          static_cast<int>(object_words), MPI_UINT64_T, window),
                                  "MPI_Put");
                detail::check_mpi(MPI_Put(&published, 1, MPI_UINT64_T, target, at, 1, MPI_UINT64_T, window), "MPI_Put");
                detail::check_mpi(MPI_Accumulate(&one, 1, MPI_UINT64_T, target, 0, 1, MPI_UINT64_T, MPI_SUM, window),
                                  "MPI_Accumulate");
                result = probe_result::inserted;
                break;
            }
            if ((slot[0] >> 2) == k.fingerprint &&
                std::memcmp(slot.data() + 1, k.words.data(), 8 * object_words) == 0) {
                result = probe_result::present;
                break;
            }
            if (++index == m_slots)
                index = 0;
        }
        guard.release();  // completes the puts; the origin buffers above are still alive
        return result;
    }

    std::uint64_t read_count(int owner_rank) {
        if (m_window->shared())
            return std::atomic_ref<std::uint64_t>(shared_words(owner_rank)[0]).load(std::memory_order_acquire);
        std::uint64_t count = 0;
        if (m_window->locked_all()) {
            atomic_read(owner_rank, 0, &count, 1);
        } else {
            detail::check_mpi(MPI_Win_lock(MPI_LOCK_SHARED, owner_rank, 0, m_window->handle()), "MPI_Win_lock");
            atomic_read(owner_rank, 0, &count, 1);
            detail::check_mpi(MPI_Win_unlock(owner_rank, m_window->handle()), "MPI_Win_unlock");
        }
        return count;
    }

    std::string full_message(int owner_rank) {
        const std::uint64_t used = read_count(owner_rank);
        char load[32];
        std::snprintf(load, sizeof load, "%.3f", static_cast<double>(used) / static_cast<double>(m_slots));
        return "mpidict: rma_hash_set is full on rank " + std::to_string(owner_rank) + ": capacity " +
               std::to_string(m_slots) + " slots per rank, load " + load + " (" + std::to_string(used) +
               " objects stored there); the object was not inserted. Raise slots_per_rank (or "
               "expected_per_rank), or use insert_if_absent_many to learn which objects were not stored.";
    }

    rma_hash_set_config m_config;
    std::size_t m_slots;
    std::unique_ptr<detail::rma_window> m_window;
    Hash m_hash{};
    rma_statistics m_stats{};
};

}  // namespace mpidict
