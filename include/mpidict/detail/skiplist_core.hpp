#pragma once
// The type-erased part of skiplist_map: keys are order-preserving encoded byte
// strings here (memcmp order == key order) and values are byte strings;
// skiplist_map<K, V> encodes and decodes around it.  See skiplist_map.hpp for
// the design.  skiplist_core owns one rank's parts, one class and file per role:
//
//   skiplist_shared     (skiplist_shared.hpp)     engine, configuration, head, handler ids, statistics
//   skiplist_directory  (skiplist_directory.hpp)  separator -> node, and its flat copy
//   skiplist_caller     (skiplist_caller.hpp)     the caller: tickets, ordering, hold-back, batches,
//                                                 range collection (caller*.cpp)
//   skiplist_nodes      (skiplist_nodes.hpp)      the nodes hosted here and point operations (nodes.cpp)
//   skiplist_structure  (skiplist_structure.hpp)  splits, links, link_up, non-overtaking, unlinking
//   skiplist_range_nodes(skiplist_ranges.hpp)     ranges and patterns at the nodes
//   skiplist_snapshots  (skiplist_snapshot.hpp)   consistent snapshots: copies at the cut (snapshot.cpp)
//   skiplist_rebalancer (skiplist_rebalance.hpp)  nodes moving between ranks at a flush (rebalance.cpp)
//
// Record layouts: skiplist_wire.hpp.  This class registers the handlers and is
// the front's only door.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "mpidict/detail/skiplist_caller.hpp"
#include "mpidict/detail/skiplist_directory.hpp"
#include "mpidict/detail/skiplist_nodes.hpp"
#include "mpidict/detail/skiplist_ranges.hpp"
#include "mpidict/detail/skiplist_rebalance.hpp"
#include "mpidict/detail/skiplist_shared.hpp"
#include "mpidict/detail/skiplist_snapshot.hpp"
#include "mpidict/detail/skiplist_structure.hpp"
#include "mpidict/runtime/engine.hpp"
#include "mpidict/skiplist_map_types.hpp"

namespace mpidict::detail {

class skiplist_core {
public:
    using op = skiplist_op;
    using status = skiplist_status;
    static constexpr std::uint32_t no_slot = skiplist_wire::no_slot;

    skiplist_core(std::unique_ptr<runtime::engine> engine, const skiplist_map_config& settings);
    ~skiplist_core();
    skiplist_core(const skiplist_core&) = delete;
    skiplist_core& operator=(const skiplist_core&) = delete;

    runtime::engine& engine() { return *m_shared.engine; }
    const runtime::engine& engine() const { return *m_shared.engine; }
    const skiplist_map_config& config() const { return m_shared.config; }
    int rank() const { return m_shared.rank(); }

    // This caller's consistency mode (config().consistency until changed).  The
    // caller must have no operation in flight when it changes it.
    skiplist_consistency consistency() const { return m_caller.consistency(); }
    void set_consistency(skiplist_consistency mode) { m_caller.set_consistency(mode); }
    // True once every operation this caller started has been answered and
    // delivered (the hold-back queue is empty).
    bool caller_idle() const { return m_caller.idle(); }

    // Sends a point operation into the list.  `slot` is a request slot (its
    // reply completes it) or no_slot (fire-and-forget).
    void send_point(op kind, std::uint32_t slot, std::string_view key, std::string_view value, expiry_time expires) {
        m_caller.send_point(kind, slot, key, value, expires);
    }
    // Starts a range query over [lo, hi) (hi empty and !bounded: to the end),
    // at most `limit` entries (0: no limit).  Completes `slot` with {u32 key
    // bytes, key, u32 value bytes, value}* in key order, count = entries.
    // With a pattern (key_pattern::serialize form, empty: none) only matching
    // entries are returned, and the query jumps from node to node over the gaps
    // between matching runs (next_candidate) instead of walking every node.
    // streaming: the parts are not collected for the request; take_stream_part
    // hands them out in key order as soon as every earlier part has arrived,
    // and the request completes with the entry count once the last one is taken.
    // descending: the largest `limit` entries, largest first (and streamed in
    // that order); the nodes walk from hi down and stop at the limit (outside
    // total_order), so the cost is O(log n + limit), not the interval's.
    // counting (count, erase_range): each node counts its part (and with
    // range_erase erases it); completes `slot` with {u64 total}.
    void send_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded, std::uint64_t limit,
                    std::string_view pattern = {}, bool streaming = false, bool descending = false,
                    std::uint8_t counting = 0) {  // counting: skiplist_wire::range_count [| range_erase]
        m_caller.send_range(slot, lo, hi, bounded, limit, pattern, streaming, descending, counting);
    }
    bool take_stream_part(std::uint32_t slot, std::string& part) { return m_caller.take_stream_part(slot, part); }
    // The caller gave up (its callback threw); later parts are dropped.
    void abandon_stream(std::uint32_t slot) { m_caller.abandon_stream(slot); }
    bool range_in_progress(std::uint32_t slot) const { return m_caller.range_in_progress(slot); }

    // Batches (find_many, insert_many): point operations answered to
    // sink.answer(index, status, value) instead of completing requests, with no
    // per-key bookkeeping here (the front end keeps one key from being in
    // flight twice).  begin_batch waits until this caller's earlier point
    // operations are answered, so a batch takes effect after them; end_batch
    // forgets the sink, and answers of an abandoned batch are dropped.
    // keys, finds: the batch's size and whether it only finds: such a batch,
    // in the modes that use shortcuts, sends its keys straight to the nodes
    // the directory names, in direct-find records (one per destination rank,
    // naming many nodes, each with a run of keys): a node answers the keys in
    // its range with one pass over its run and sends each other key on the
    // ordinary way from there.  A large batch first copies the directory into
    // a flat sorted array.
    void begin_batch(skiplist_batch_sink& sink, std::size_t keys = 0, bool finds = false) {
        m_caller.begin_batch(sink, keys, finds);
    }
    void send_batch_point(op kind, std::uint32_t index, std::string_view key, std::string_view value) {
        m_caller.send_batch_point(kind, index, key, value);
    }
    // Sends the direct-find records still gathering keys: the front end
    // calls it before it waits for answers.
    void close_batch_record() { m_caller.close_batch_record(); }
    // Whether a find batch started now would send direct-find records (the
    // modes with shortcuts; then the keys' order within it is free).
    bool direct_finds() const { return m_caller.direct_finds(); }
    // Keys a batch keeps in flight per key of the window (total_order finds: more, see caller_batch.cpp).
    std::size_t batch_window_scale(bool finds) const { return m_caller.batch_window_scale(finds); }
    void end_batch() { m_caller.end_batch(); }
    // insert_many's deadline for the next batch (skiplist_caller::set_batch_expiry).
    void set_batch_expiry(expiry_time expires) { m_caller.set_batch_expiry(expires); }
    // The expiry clock's now (config().expiry_clock, else the system clock), in
    // seconds since the epoch: deadlines are judged against it.
    expiry_time clock_now() const { return m_shared.clock_now(); }

    void check_key(std::size_t bytes) const;
    void check_value(std::size_t bytes) const;
    std::uint64_t async_rejected() const { return m_caller.async_rejected(); }
    // The last list_full message this rank received as a caller (empty: none).
    const std::string& last_refusal() const { return m_shared.last_refusal; }
    // The directory's size (test support).
    std::size_t directory_size() const { return m_directory.size(); }
    // Test support: makes the directory name `id` for `separator` (e.g. a node
    // that does not exist), to check that a failed shortcut falls back.
    void remember_route(std::string_view separator, skiplist_node_id id) { m_directory.learn(separator, id); }

    // Local.  Every live entry of the nodes hosted here, in key order per node.
    void for_all_local(const std::function<void(std::string_view, std::string_view, expiry_time)>& visit) const {
        m_nodes.for_all_local(visit);
    }
    // Local.  Removes expired entries from every node hosted here.
    std::size_t sweep_expired() { return m_nodes.sweep_expired(); }
    skiplist_map_local_statistics local_statistics() const { return m_shared.stats; }
    void reset_local_statistics();
    std::size_t local_size() const { return m_nodes.local_size(); }
    // Collective: flush(), then the sum of local_size() with no online move
    // starting in between (skiplist_core.cpp).
    std::size_t global_size();

    // Collective.  Also grows onto dormant servers or rebalances when the
    // configuration asks for it (skiplist_rebalance.hpp).
    void flush();
    // Collective: flush(), then moves nodes (skiplist_rebalance.hpp).  Bad
    // input throws on every rank before anything moves.
    skiplist_rebalance_result rebalance(const skiplist_rebalance_options& options);
    skiplist_rebalance_result drain(int rank);
    // Not collective: online moves (skiplist_rebalance.hpp).
    std::size_t local_rebalance(std::size_t nodes, int to) { return m_rebalancer.start_online_moves(nodes, to); }
    // What the last flush's growth or rebalance (or rebalance()/drain()) did.
    const skiplist_rebalance_result& last_rebalance() const { return m_rebalancer.last(); }
    const std::vector<int>& active_servers() const { return m_shared.servers; }
    // Collective.  flush(), then a consistent snapshot of the live entries
    // (skiplist_snapshot.hpp); read it through snapshots() with the id.
    std::uint32_t take_snapshot() {
        if (!m_snapshots.fault_skip_flush)
            flush();
        return m_snapshots.create([&](const skiplist_snapshots::visit_entry& visit) { m_nodes.for_all_local(visit); });
    }
    skiplist_snapshots& snapshots() { return m_snapshots; }
    void destroy() {
        m_caller.release_async();  // buffered async inserts go out first
        m_shared.engine->destroy();
    }
    // Sends this caller's buffered async inserts (skiplist_caller::release_async).
    void release_async() { m_caller.release_async(); }

    // Test support: checks the structure of the list as seen from this rank's nodes
    // (sorted runs, separators increasing along every level) and returns a
    // description of the first problem, or an empty string.
    std::string check_local_invariants() const { return m_nodes.check_local_invariants(); }

private:
    skiplist_shared m_shared;
    skiplist_directory m_directory;
    skiplist_caller m_caller;
    skiplist_nodes m_nodes;
    skiplist_structure m_structure;
    skiplist_range_nodes m_ranges;
    skiplist_snapshots m_snapshots;
    skiplist_rebalancer m_rebalancer;
};

}  // namespace mpidict::detail
