#pragma once
// skiplist_snapshot<K, V>: a consistent snapshot of a skiplist_map (RocksDB's
// GetSnapshot with reads at it; Redis has none).
//
//   auto snap = map.snapshot();          // collective: the cut is this call
//   map.insert(k, v2).wait();            // later writes, erases, expiries, reduces...
//   snap.find(k);                        // ...are not seen: the value at the cut
//   snap.range(lo, hi, {.limit = 10});   // ranges, counts, streaming, descending
//   snap.for_all(f);                     // this rank's slice, in key order
//   snap.release();                      // collective (or the destructor)
//
// What a read sees: every write started on any rank before that rank called
// snapshot() (async and batch forms included: the call flushes first), and
// nothing started after.  An entry whose deadline had passed at the cut is not
// in it; one that expires later stays in it.
//
// How (src/skiplist/snapshot.cpp): the live entries are copied at the cut and
// redistributed so that rank r holds the r-th slice in key order; reads go to
// the slices' ranks.  Cost: taking one is a flush, a sort of each rank's
// entries and one all-to-all of them; holding one costs its key and value bytes
// plus 16 bytes an entry (spread over the ranks), whatever the map does
// afterwards; docs/skiplist_map.md "Snapshots" has the measurements.
//
// Reads are local calls: other ranks are served while they wait, and a rank
// may read while the others write.  Taking and releasing are collective (every
// rank, the same snapshots in the same order; a mismatch throws
// collective_mismatch_error).  Reading a released snapshot, or one whose map
// was destroyed, throws use_after_destroy_error.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "mpidict/detail/payload.hpp"
#include "mpidict/detail/skiplist_core.hpp"
#include "mpidict/error.hpp"
#include "mpidict/ordered_key.hpp"
#include "mpidict/skiplist_map_types.hpp"

namespace mpidict {

template <class K, class V>
class skiplist_map;

template <class K, class V>
class skiplist_snapshot {
public:
    using key_type = K;
    using mapped_type = V;
    using entry_list = std::vector<std::pair<K, V>>;

    // Holds no snapshot (valid() is false).
    skiplist_snapshot() = default;
    skiplist_snapshot(const skiplist_snapshot&) = delete;
    skiplist_snapshot& operator=(const skiplist_snapshot&) = delete;
    skiplist_snapshot(skiplist_snapshot&& other) noexcept { steal(other); }
    // Collective if this one holds a snapshot (it is released first).
    skiplist_snapshot& operator=(skiplist_snapshot&& other) {
        if (this != &other) {
            if (valid())
                release();
            steal(other);
        }
        return *this;
    }
    // Collective unless an exception is unwinding or the map is gone (then the
    // copy is left to the map, which frees it when it is destroyed).
    ~skiplist_snapshot() {
        if (!valid() || m_life.expired() || m_core->engine().destroyed() || std::uncaught_exceptions() != 0)
            return;
        try {
            release();
        } catch (const std::exception& problem) {
            std::fprintf(stderr, "mpidict: skiplist_map snapshot release on rank %d failed: %s\n",
                         m_core->engine().rank(), problem.what());
        }
    }

    bool valid() const { return m_core != nullptr; }
    std::uint32_t id() const { return m_id; }

    // Collective.  Frees the copy on every rank; later reads throw.
    void release() {
        auto& parts = checked("release");
        runtime::engine_lock lock(m_core->engine());
        parts.release(m_id);
        m_core = nullptr;
    }

    // Local.  Forgets the snapshot without releasing it: its copy stays with
    // the map until the map is destroyed.  For owners that cannot make a
    // collective call at their end (Python's garbage collector).
    void detach() noexcept {
        m_core = nullptr;
        m_life.reset();
    }

    // ---- reads (local; other ranks are served while they wait) --------------

    std::optional<V> find(const K& key) {
        const std::string encoded = encode(key);
        auto& parts = checked("find");
        runtime::engine_lock lock(m_core->engine());
        auto value = parts.find(m_id, encoded);
        if (!value)
            return std::nullopt;
        return detail::from_payload<V>(*value);
    }
    bool contains(const K& key) { return find(key).has_value(); }

    // The entries with lo <= key <= hi at the cut, in key order (range_options
    // as skiplist_map::range: limit, descending, after_lo, before_hi).
    entry_list range(const K& lo, const K& hi, range_options options = {}) {
        entry_list entries;
        range(lo, hi, [&](const K& key, const V& value) { entries.emplace_back(key, value); }, options);
        return entries;
    }
    entry_list range_from(const K& lo, range_options options = {}) {
        entry_list entries;
        range_from(lo, [&](const K& key, const V& value) { entries.emplace_back(key, value); }, options);
        return entries;
    }
    // Streaming forms: on_entry(key, value) in order as the pages arrive (one
    // message each); returns how many.
    template <class Function>
        requires std::invocable<Function&, const K&, const V&>
    std::size_t range(const K& lo, const K& hi, Function&& on_entry, range_options options = {}) {
        return stream(low_bound(lo, options), high_bound(hi, options), true, options, on_entry);
    }
    template <class Function>
        requires std::invocable<Function&, const K&, const V&>
    std::size_t range_from(const K& lo, Function&& on_entry, range_options options = {}) {
        return stream(low_bound(lo, options), {}, false, options, on_entry);
    }
    // The entries with lo <= key <= hi at the cut (after_lo / before_hi as
    // range's), counted where they are.
    std::uint64_t count(const K& lo, const K& hi, range_options options = {}) {
        const std::string low = low_bound(lo, options), high = high_bound(hi, options);
        auto& parts = checked("count");
        runtime::engine_lock lock(m_core->engine());
        return parts.count(m_id, low, high, true);
    }

    // Entries in the whole snapshot (known when it was taken; no communication).
    std::uint64_t size() const {
        const auto& parts = const_checked("size");
        runtime::engine_lock lock(m_core->engine());
        return parts.size(m_id);
    }
    // Entries in this rank's slice, and the bytes its copy holds.
    std::size_t local_size() const {
        const auto& parts = const_checked("local_size");
        runtime::engine_lock lock(m_core->engine());
        return parts.local_size(m_id);
    }
    std::size_t local_bytes() const {
        const auto& parts = const_checked("local_bytes");
        runtime::engine_lock lock(m_core->engine());
        return parts.local_bytes(m_id);
    }
    // f(key, value) for every entry of this rank's slice, in key order.  Not
    // collective: the ranks' slices together are the whole snapshot, rank r's
    // keys all below rank r + 1's, so every entry is visited once when every
    // rank calls it.
    template <class Function>
    void for_all(Function&& function) const {
        const auto& parts = const_checked("for_all");
        runtime::engine_lock lock(m_core->engine());  // a progress thread does not change the parts meanwhile
        parts.local_for_each(m_id, [&](std::string_view key, std::string_view value) {
            function(ordered_codec<K>::decode(key), detail::from_payload<V>(value));
        });
    }
    template <class Function>
    void local_for_each(Function&& function) const {
        for_all(std::forward<Function>(function));
    }

private:
    friend class skiplist_map<K, V>;
    skiplist_snapshot(detail::skiplist_core& core, std::uint32_t id)
        : m_core(&core), m_life(core.engine().lifetime()), m_id(id) {}

    void steal(skiplist_snapshot& other) noexcept {
        m_core = std::exchange(other.m_core, nullptr);
        m_life = std::move(other.m_life);
        m_id = std::exchange(other.m_id, 0);
    }
    const detail::skiplist_snapshots& const_checked(const char* what) const {
        if (m_core == nullptr)
            throw use_after_destroy_error(std::string("mpidict: skiplist_map snapshot ") + what +
                                          " on a snapshot that holds none (released, moved from or never taken)");
        if (m_life.expired() || m_core->engine().destroyed())
            throw use_after_destroy_error(std::string("mpidict: skiplist_map snapshot ") + what +
                                          " after its map was destroyed");
        return m_core->snapshots();
    }
    detail::skiplist_snapshots& checked(const char* what) {
        const_checked(what);
        return m_core->snapshots();
    }
    std::string encode(const K& key) const {
        std::string out;
        ordered_codec<K>::encode(key, out);
        if (m_core)
            m_core->check_key(out.size());
        return out;
    }
    std::string low_bound(const K& lo, const range_options& options) const {
        std::string bound = encode(lo);
        if (options.after_lo)
            bound.push_back('\0');
        return bound;
    }
    std::string high_bound(const K& hi, const range_options& options) const {
        std::string bound = encode(hi);
        if (!options.before_hi)
            bound.push_back('\0');
        return bound;
    }
    template <class Function>
    std::size_t stream(const std::string& lo, const std::string& hi, bool bounded, const range_options& options,
                       Function& on_entry) {
        auto& parts = checked("range");
        runtime::engine_lock lock(m_core->engine());
        return static_cast<std::size_t>(parts.range(m_id, lo, hi, bounded, options.limit, options.descending,
                                                    [&](std::string_view key, std::string_view value) {
                                                        on_entry(ordered_codec<K>::decode(key),
                                                                 detail::from_payload<V>(value));
                                                    }));
    }

    detail::skiplist_core* m_core = nullptr;
    std::weak_ptr<const bool> m_life;
    std::uint32_t m_id = 0;
};

}  // namespace mpidict
