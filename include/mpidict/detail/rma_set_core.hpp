#pragma once
// rma_hash_set's core (rma_hash_set.hpp is the facade): the window and its
// slot protocol.  A rank's segment is a header {u64 occupied slots, u64 owner
// lock, reserved} and slots of {control word, object words}; describe() places
// an object (owner, home slot, fingerprint), probe() runs one insert or lookup
// to its end over shared memory (C++ atomics), MPI RMA lock-free (compare-and-
// swap, accumulates) or MPI RMA under the owner's lock, and pipelined_insert()
// advances a batch of lock-free inserts together.  The design comment at the
// top of rma_hash_set.hpp states the protocol.

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include <mpi.h>

#include "mpidict/detail/rma_window.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/results.hpp"
#include "mpidict/rma_hash_set_types.hpp"

namespace mpidict::detail {

template <class T, class Hash>
class rma_set_core {
public:
    static constexpr std::size_t object_words = (sizeof(T) + 7) / 8;
    static constexpr std::size_t slot_words = 1 + object_words;
    static constexpr std::size_t header_words = 8;

    // Collective.  Agrees on the settings, then allocates the window.
    rma_set_core(MPI_Comm communicator, rma_hash_set_config config)
        : m_config(config), m_slots(wanted_slots(config)) {
        const std::uint64_t values[] = {m_slots, static_cast<std::uint64_t>(config.sync),
                                        static_cast<std::uint64_t>(config.access), sizeof(T)};
        const std::string names[] = {"rma_hash_set slots_per_rank", "rma_hash_set sync", "rma_hash_set access",
                                     "rma_hash_set object size"};
        check_same_on(communicator, values, names);
        // The ranks agree on the slot count: a bad one is refused on all of them.
        check_slots(config, m_slots);
        if (config.access == rma_access::shared_memory && !all_ranks_on_one_node(communicator))
            throw invalid_argument_error(
                "mpidict: rma_hash_set access = shared_memory needs every rank on one node; "
                "use automatic or mpi_rma");
        const std::size_t bytes = 8 * (header_words + m_slots * slot_words);
        m_window = std::make_unique<rma_window>(communicator, bytes, config.access != rma_access::mpi_rma);
        // Shared memory: the epoch only makes load/store access formally legal.
        if (m_window->shared() || config.sync == rma_sync::lock_free)
            m_window->lock_all();
    }

    rma_set_core(const rma_set_core&) = delete;
    rma_set_core& operator=(const rma_set_core&) = delete;

    rma_window& window() { return *m_window; }
    const rma_window& window() const { return *m_window; }
    bool destroyed() const { return !m_window || m_window->freed(); }
    int rank() const { return m_window->rank(); }
    int num_ranks() const { return m_window->size(); }
    std::size_t slots() const { return m_slots; }
    const rma_hash_set_config& config() const { return m_config; }
    rma_hash_set_local_statistics& stats() { return m_stats; }
    const rma_hash_set_local_statistics& stats() const { return m_stats; }

    // Calls fn(const T&) for each object published in this rank's segment.
    template <class Function>
    void for_each_local(Function&& fn) {
        const bool epoch = !m_window->locked_all();
        if (epoch)
            check_mpi(MPI_Win_lock(MPI_LOCK_SHARED, rank(), 0, m_window->handle()), "MPI_Win_lock");
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
            check_mpi(MPI_Win_unlock(rank(), m_window->handle()), "MPI_Win_unlock");
    }

    // Empties this rank's segment (between barriers: no insert under way).
    void clear_local() {
        const bool epoch = !m_window->locked_all();
        if (epoch)
            check_mpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, rank(), 0, m_window->handle()), "MPI_Win_lock");
        std::memset(m_window->local_segment(), 0, 8 * (header_words + m_slots * slot_words));
        MPI_Win_sync(m_window->handle());
        if (epoch)
            check_mpi(MPI_Win_unlock(rank(), m_window->handle()), "MPI_Win_unlock");
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

    // insert_if_absent_many on MPI RMA, lock_free: the scalar protocol (probe_rma_lock_free below), as a state
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
            check_mpi(MPI_Rget_accumulate(nullptr, 0, MPI_UINT64_T, f.readback.data(), count, MPI_UINT64_T,
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
                    check_mpi(MPI_Rget_accumulate(nullptr, 0, MPI_UINT64_T, f.buffer.data(),
                                                          static_cast<int>(slot_words), MPI_UINT64_T, target, at,
                                                          static_cast<int>(slot_words), MPI_UINT64_T, MPI_NO_OP,
                                                          window, &request),
                                      "MPI_Rget_accumulate");
                    requests.push_back(request);
                    ++m_stats.slots_probed;
                    break;
                }
                case phase::claim:
                    check_mpi(
                        MPI_Compare_and_swap(&f.busy, &zero, &f.previous, MPI_UINT64_T, target, at, window),
                        "MPI_Compare_and_swap");
                    read_back(f, at, 1);
                    break;
                case phase::write:
                    check_mpi(MPI_Accumulate(f.k.words.data(), static_cast<int>(object_words), MPI_UINT64_T,
                                                     target, at + 1, static_cast<int>(object_words), MPI_UINT64_T,
                                                     MPI_REPLACE, window),
                                      "MPI_Accumulate");
                    read_back(f, at + 1, static_cast<int>(object_words));
                    break;
                case phase::publish:
                    check_mpi(MPI_Accumulate(&f.published, 1, MPI_UINT64_T, target, at, 1, MPI_UINT64_T,
                                                     MPI_REPLACE, window),
                                      "MPI_Accumulate");
                    check_mpi(
                        MPI_Accumulate(&one, 1, MPI_UINT64_T, target, 0, 1, MPI_UINT64_T, MPI_SUM, window),
                        "MPI_Accumulate");
                    read_back(f, at, 1);
                    break;
                }
            }
            backoff pacing;
            for (;;) {
                int done = 0;
                check_mpi(MPI_Testall(static_cast<int>(requests.size()), requests.data(), &done,
                                              MPI_STATUSES_IGNORE),
                                  "MPI_Testall");
                if (done)
                    break;
                pacing.pause();
            }
            m_stats.yields += pacing.yields();
            check_mpi(MPI_Win_flush_all(window), "MPI_Win_flush_all");
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

    std::uint64_t read_count(int owner_rank) {
        if (m_window->shared())
            return std::atomic_ref<std::uint64_t>(shared_words(owner_rank)[0]).load(std::memory_order_acquire);
        std::uint64_t count = 0;
        if (m_window->locked_all()) {
            atomic_read(owner_rank, 0, &count, 1);
        } else {
            check_mpi(MPI_Win_lock(MPI_LOCK_SHARED, owner_rank, 0, m_window->handle()), "MPI_Win_lock");
            atomic_read(owner_rank, 0, &count, 1);
            check_mpi(MPI_Win_unlock(owner_rank, m_window->handle()), "MPI_Win_unlock");
        }
        return count;
    }

    // One insert attempt, counted (a refusal is a result: rejected).
    probe_result insert_one(const T& object) {
        const key k = describe(object);
        ++m_stats.inserts;
        const probe_result result = probe(k, true);
        if (result == probe_result::inserted)
            ++m_stats.inserted;
        else if (result == probe_result::full)
            ++m_stats.rejected;
        return result;
    }
    // One lookup, counted.
    bool contains_now(const T& object) {
        const key k = describe(object);
        ++m_stats.lookups;
        return probe(k, false) == probe_result::present;
    }

private:
    // ---- shared memory: C++ atomics on the owner's segment ---------------------

    std::uint64_t* shared_words(int owner_rank) const {
        return reinterpret_cast<std::uint64_t*>(m_window->segment(owner_rank));
    }

    struct shared_lock_guard {
        rma_set_core& self;
        std::atomic_ref<std::uint64_t> lock;
        shared_lock_guard(rma_set_core& set, int owner_rank) : self(set), lock(set.shared_words(owner_rank)[1]) {
            backoff pacing;
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
            backoff pacing;
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
        check_mpi(MPI_Rget_accumulate(nullptr, 0, MPI_UINT64_T, out, count, MPI_UINT64_T, target,
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
        check_mpi(MPI_Win_flush(target, m_window->handle()), "MPI_Win_flush");
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
            backoff pacing;
            for (;;) {
                const std::uint64_t seen = slot[0];
                if (seen == 0) {
                    if (!insert)
                        return probe_result::absent;
                    std::uint64_t previous = 0;
                    check_mpi(MPI_Compare_and_swap(&busy, &zero, &previous, MPI_UINT64_T, target, at, window),
                                      "MPI_Compare_and_swap");
                    complete(target, at, 1);
                    if (previous == 0) {
                        check_mpi(MPI_Accumulate(k.words.data(), static_cast<int>(object_words), MPI_UINT64_T,
                                                         target, at + 1, static_cast<int>(object_words), MPI_UINT64_T,
                                                         MPI_REPLACE, window),
                                          "MPI_Accumulate");
                        complete(target, at + 1, static_cast<int>(object_words));
                        check_mpi(MPI_Accumulate(&published, 1, MPI_UINT64_T, target, at, 1, MPI_UINT64_T,
                                                         MPI_REPLACE, window),
                                          "MPI_Accumulate");
                        check_mpi(
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

    // Seed 002's strategy: the owner's whole table under an exclusive lock.
    probe_result probe_rma_locked(const key& k, bool insert) {
        const MPI_Win window = m_window->handle();
        const int target = k.owner;
        const std::uint64_t published = (k.fingerprint << 2) | state_published;
        const std::uint64_t one = 1;
        check_mpi(MPI_Win_lock(MPI_LOCK_EXCLUSIVE, target, 0, window), "MPI_Win_lock");
        struct unlock_guard {
            int target;
            MPI_Win window;
            bool active = true;
            void release() {
                active = false;
                check_mpi(MPI_Win_unlock(target, window), "MPI_Win_unlock");
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
            check_mpi(MPI_Rget(slot.data(), static_cast<int>(slot_words), MPI_UINT64_T, target, at,
                                       static_cast<int>(slot_words), MPI_UINT64_T, window, &request),
                              "MPI_Rget");
            wait(request);
            ++m_stats.slots_probed;
            if (slot[0] == 0) {
                if (!insert) {
                    result = probe_result::absent;
                    break;
                }
                check_mpi(MPI_Put(k.words.data(), static_cast<int>(object_words), MPI_UINT64_T, target, at + 1,
                                          static_cast<int>(object_words), MPI_UINT64_T, window),
                                  "MPI_Put");
                check_mpi(MPI_Put(&published, 1, MPI_UINT64_T, target, at, 1, MPI_UINT64_T, window), "MPI_Put");
                check_mpi(MPI_Accumulate(&one, 1, MPI_UINT64_T, target, 0, 1, MPI_UINT64_T, MPI_SUM, window),
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


    rma_hash_set_config m_config;
    std::size_t m_slots;
    std::unique_ptr<rma_window> m_window;
    Hash m_hash{};
    rma_hash_set_local_statistics m_stats{};
};

}  // namespace mpidict::detail
