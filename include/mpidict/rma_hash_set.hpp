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
// free, the object is refused and the result says so, as in every container
// (docs/architecture.md, "Contracts"): insert's replace_result has stored =
// false, insert_if_absent's bool is false (use insert, or the batch, to tell a
// refusal from an object already present), insert_if_absent_many reports, per
// object, that it was not inserted; local_statistics().rejected counts them.
// Nothing is thrown.  contains() on a full table answers false after one full pass.
//
// Threads.  One thread per rank calls the set at a time.
//
// Files.  This header is the facade (the calls, checkpoints); the slot protocol
// (placement, probes, the pipelined batch) is detail/rma_set_core.hpp; the
// window kinds are detail/rma_window.hpp; the public types rma_hash_set_types.hpp.
// contains(x): rma_hash_set::contains -> rma_set_core::describe, probe ->
// probe_shared / probe_rma_lock_free / probe_rma_locked.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <mpi.h>

#include "mpidict/batch_results.hpp"
#include "mpidict/checkpoint.hpp"
#include "mpidict/detail/rma_set_core.hpp"
#include "mpidict/detail/rma_window.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/results.hpp"
#include "mpidict/rma_hash_set_types.hpp"
#include "mpidict/runtime/request.hpp"

namespace mpidict {

template <class T, class Hash = hasher<T>>
class rma_hash_set {
    static_assert(std::is_trivially_copyable_v<T>, "rma_hash_set objects must be trivially copyable.");
    static_assert(sizeof(T) <= 32, "rma_hash_set objects must be at most 32 bytes; pack larger ones or use hash_map.");
    static_assert(std::has_unique_object_representations_v<T>,
                  "rma_hash_set hashes and compares object bytes, so the type must have no padding "
                  "(and no floating-point members).");

public:
    using value_type = T;
    static constexpr std::size_t object_words = detail::rma_set_core<T, Hash>::object_words;
    static constexpr std::size_t slot_words = detail::rma_set_core<T, Hash>::slot_words;
    static constexpr std::size_t header_words = detail::rma_set_core<T, Hash>::header_words;
    static constexpr std::size_t slot_bytes = 8 * slot_words;


    // Collective.  Builds the set over `communicator` (duplicated).
    explicit rma_hash_set(MPI_Comm communicator, rma_hash_set_config config = {}) : m_core(communicator, config) {}


    rma_hash_set(const rma_hash_set&) = delete;
    rma_hash_set& operator=(const rma_hash_set&) = delete;

    // Collective when still alive and no exception is unwinding; otherwise the
    // window is abandoned without waiting for other ranks.
    ~rma_hash_set() {
        if (!m_core.destroyed() && std::uncaught_exceptions() == 0) {
            try {
                destroy();
            } catch (const std::exception& problem) {
                std::fprintf(stderr, "mpidict: rma_hash_set teardown failed: %s\n", problem.what());
            }
        }
    }

    // Collective.  Frees the window.
    void destroy() {
        if (!m_core.destroyed())
            m_core.window().free();
    }
    bool destroyed() const { return m_core.destroyed(); }

    int rank() const { return m_core.window().rank(); }
    int num_ranks() const { return m_core.window().size(); }
    [[deprecated("mpidict: size() is the number of ranks here; call num_ranks() (the name every container uses)")]]
    int size() const { return m_core.window().size(); }
    std::size_t slots_per_rank() const { return m_core.slots(); }
    rma_sync sync() const { return m_core.config().sync; }
    // Whether this set uses a shared-memory window with direct atomics.
    bool shared_memory() const { return m_core.window().shared(); }
    const rma_hash_set_config& settings() const { return m_core.config(); }
    // This rank's counters (the name every container uses).
    const rma_hash_set_local_statistics& local_statistics() const { return m_core.stats(); }
    [[deprecated("mpidict: rma_hash_set::stats() is local_statistics() (stats() is the engine's counters elsewhere)")]]
    const rma_hash_set_local_statistics& stats() const { return m_core.stats(); }
    void reset_statistics() { m_core.stats() = {}; }
    // Bytes of window memory on each rank.
    std::size_t local_memory_bytes() const { return 8 * (header_words + m_core.slots() * slot_words); }

    int owner(const T& object) const { return m_core.describe(object).owner; }

    // Stores `object` unless present.  stored: the object is in the set now
    // (false: the owner's table is full and nothing changed); replaced: it
    // was there already (a set has nothing to replace: it stays as it was).
    // One-sided: complete when this returns, so the request is already
    // complete (the same shape as the other containers' insert).
    request<replace_result> insert(const T& object) {
        check_alive("insert");
        const probe_result result = m_core.insert_one(object);
        return request<replace_result>::completed(
            replace_result{result != probe_result::full, result == probe_result::present});
    }
    // Stores `object` unless present; the request's get() is true if this call
    // stored it, false if it was there or the owner's table is full (insert or
    // insert_if_absent_many tell the two apart).  Complete when it returns.
    request<bool> insert_if_absent(const T& object) {
        check_alive("insert_if_absent");
        return request<bool>::completed(m_core.insert_one(object) == probe_result::inserted);
    }

    // Whether `object` is in the set: a request<bool>, as in every container
    // (complete when it returns: one-sided).  contains() used to return a bool;
    // the conversion is kept, deprecated (call get()).
    class contains_request : public request<bool> {
    public:
        explicit contains_request(bool present) : request<bool>(request<bool>::completed(present)), m_present(present) {}
        [[deprecated("mpidict: rma_hash_set::contains returns a request<bool> like every container's; call get()")]]
        operator bool() const { return m_present; }

    private:
        bool m_present;
    };
    contains_request contains(const T& object) {
        check_alive("contains");
        return contains_request(m_core.contains_now(object));
    }

    // The batch contract (docs/architecture.md, "Contracts"): stores every
    // object unless present and returns once all are done: stored (in the set
    // now), of them replaced (there already: a set has nothing to replace),
    // refused (the owner's table is full; never thrown).  insert_if_absent_many
    // says the same per object.
    insert_many_result insert_many(std::span<const T> objects) {
        insert_if_absent_many_result each = insert_if_absent_many(objects);
        insert_many_result result;
        result.stored = each.inserted + each.present;
        result.replaced = each.present;
        result.refused = each.not_inserted;
        result.refused_indexes = std::move(each.not_inserted_indices);
        return result;
    }
    // Calls on_result(index, bool present) once per object, in index order, on
    // this rank; returns when all are answered (one-sided: as they are probed).
    template <class Function>
    void find_many(std::span<const T> objects, Function&& on_result) {
        check_alive("find_many");
        for (std::size_t index = 0; index < objects.size(); ++index)
            on_result(index, m_core.contains_now(objects[index]));
    }

    // Inserts every object; an object whose owner is full is reported, not thrown.
    // With MPI RMA and lock_free the probes of up to 1024 objects advance
    // together, one waited round trip per step for all of them.
    insert_if_absent_many_result insert_if_absent_many(std::span<const T> objects) {
        check_alive("insert_if_absent_many");
        insert_if_absent_many_result result;
        result.status.resize(objects.size(), insert_status::not_inserted);
        if (!m_core.window().shared() && m_core.config().sync == rma_sync::lock_free) {
            m_core.pipelined_insert(objects, result);
            m_core.stats().rejected += result.not_inserted;
            return result;
        }
        for (std::size_t index = 0; index < objects.size(); ++index) {
            const auto k = m_core.describe(objects[index]);
            ++m_core.stats().inserts;
            switch (m_core.probe(k, true)) {
            case probe_result::inserted:
                ++m_core.stats().inserted;
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
                ++m_core.stats().rejected;
                break;
            }
        }
        return result;
    }

    // Collective.  Returns when every rank has called it; everything inserted
    // anywhere before it is visible in local_for_each after it.
    void barrier() {
        check_alive("barrier");
        m_core.window().barrier();
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
        return static_cast<std::size_t>(m_core.read_count(owner_rank));
    }
    std::size_t local_size() { return occupied(rank()); }
    // Collective.
    std::size_t global_size() {
        check_alive("global_size");
        return static_cast<std::size_t>(m_core.window().sum(m_core.read_count(rank())));
    }

    // Calls fn(const T&) for each object stored on this rank.  Call after
    // barrier() if other ranks have inserted.
    template <class Function>
    void local_for_each(Function&& fn) {
        check_alive("local_for_each");
        m_core.for_each_local(std::forward<Function>(fn));
    }

    // ---- checkpoints (include/mpidict/checkpoint.hpp, docs/checkpoint.md) --

    // Collective.  barrier(), then writes every object stored on each rank to
    // `directory`, replacing the checkpoint there only once all of it is on disk.
    void save(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        barrier();
        ck::communicator_copy comm(m_core.window().comm(), "rma_hash_set");
        ck::entry_totals totals;
        totals.keys = local_size();
        ck::description what = ck::describe<T, T>("rma_hash_set", checkpoint_flags, options);
        what.tunables = {{"slots_per_rank", std::to_string(m_core.slots())},
                         {"max_load", std::to_string(m_core.config().max_load)},
                         {"sync", m_core.config().sync == rma_sync::lock_free ? "lock_free" : "locked"}};
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
        ck::communicator_copy comm(m_core.window().comm(), "rma_hash_set");
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
                          std::to_string(m_core.slots()) + " slots per rank)";
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
    using probe_result = typename detail::rma_set_core<T, Hash>::probe_result;
    static constexpr detail::checkpoint::layout_flags checkpoint_flags{false, false, false};

    // Collective.  Every rank empties its own table (between barriers, so no
    // insert is under way).
    void clear_after_failed_load() {
        barrier();
        m_core.clear_local();
        barrier();
    }

    void check_alive(const char* what) const {
        if (m_core.destroyed())
            throw use_after_destroy_error(std::string("mpidict: rma_hash_set::") + what + " after destroy()");
    }

    detail::rma_set_core<T, Hash> m_core;
};

}  // namespace mpidict
