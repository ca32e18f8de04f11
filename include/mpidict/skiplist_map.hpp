#pragma once
// skiplist_map<K, V>: an ordered distributed dictionary, the service-oriented
// skip list of seed 004 (Alam, Kamal and Wagner) on the mpidict runtime.
//
// Layout.  The list is a chain of nodes, each a light actor hosted on a server
// rank (config.server_ranks, default every rank) in one of that rank's P slots.
// A node holds a sorted run of up to G keys with their values and a tower of
// links, one per level: (separator of the successor on that level, its id).  A
// node id is (rank, slot, generation); a slot reused for another node gets a new
// generation, so a stale reference is detected.  The head node lives on the
// first server rank, has the maximum height and the empty separator.
//
// Separators instead of min-keys.  A node's separator is the lower bound of its
// key range, fixed when the node is created by a split; its range is
// [separator, successor's separator).  The seed stores each successor's current
// min-key at the predecessors, so deleting a node's min-key has to update them
// and hold replies back until that is done (its Figure 7).  A separator never
// changes, so erasing any key, the smallest included, touches one node and no
// link: that delay and its hold-back disappear.
//
// Operations travel forward only (Listings 1-4 with G keys per node).  A request
// enters at the top level of the closest node the caller knows at or below its
// key (the route cache: every answer names its node and that node's separator,
// which never changes, so the key's node is that one or one after it), else at
// the head; a node that gets a key below its separator sends it to the head.  A
// node forwards it on the highest level
// (at or below the one it arrived on) whose successor's separator is <= the key,
// else the key is in its own range and the node answers the caller directly.  A
// node handles one request at a time, atomically (every rank handles records in
// order, one at a time).
//   - insert / insert_if_absent / find / erase: one answer from the node that
//     holds the key's range.  Cost: O(log(n / G)) expected hops from the head,
//     usually 1 with a warm route cache, + 1 answer.
//   - find_many / insert_many: the same records, one per key, without a request
//     each: the answer's ticket is the key's index and its slot names the batch;
//     at most W keys between the oldest unanswered and the newest sent, results
//     delivered in index order; a repeated key waits for its earlier occurrence.
//   - An insert that takes a node past G keys splits it: the node keeps the
//     lower half, asks the free-node service for a node with the upper half
//     (a record to a manager on another rank; managers form a ring, a manager
//     without a free slot passes the request on, and after a full cycle the
//     insert fails with list_full and is taken back out: nothing stored is
//     lost), and holds every request that reaches it meanwhile.  The new node's
//     tower height h is drawn (geometric, tower_probability).  On the levels it
//     shares with the splitting node it is linked right after it; if it is
//     taller (Figure 6(c)), a link_up operation travels from the head and
//     splices it in on its upper levels, which stay unlinked (skipped by
//     routing) until then.  Nodes are placed round robin over the servers,
//     starting at the next one, so even ascending keys spread over the ranks.
//   - range(lo, hi): travels to the node holding lo like a find, then along
//     level 0; every node with keys in range sends its part straight to the
//     caller (as many messages as needed), numbered; the last part says so, and
//     the caller completes the request once every part up to it has arrived.
//     With a limit the query stops after that many entries.  Cost:
//     O(log(n / G)) hops to the start, then one hop and at least one part per
//     node in range.  (The seed splits a range across levels to parallelise it;
//     this version walks level 0 in order, which a limit needs anyway.)
//     Descending: to the node below hi, then node by node downward (each step
//     located anew: links point forward), largest first, stopping at the
//     limit: O(log n + limit) for "latest N" (src/skiplist/ranges.cpp).
//   - Expiry: insert(key, value, expires_at or a TTL) stores a deadline; an expired entry
//     is never returned and is removed by its node when the node is next
//     accessed, and by flush() on every rank (detail/skiplist_expiry.hpp).
//   - Emptied nodes: flush() unlinks every node (but the head) that holds no
//     key once everything is answered: the list is quiescent then, so every
//     rank announces its emptied nodes with their towers, each rank re-points
//     its own links past them and forgets its routes to them, the slots return
//     to the free pool, and a last reduction keeps any rank from starting new
//     operations before all have re-pointed.  The level-0 predecessor takes
//     over the emptied range.  Cost: one sum per flush; with emptied nodes, one
//     record per emptied node to every rank, an engine flush and a sum.
//
// Non-overtaking (the seed's Lemma 2.2 and Theorem 2.3).  The runtime delivers
// the records one rank sends another in order (per rank pair FIFO, loopback
// included) and each rank handles them one at a time in that order.  With an
// unchanging list, two requests for keys in the same node take the same path,
// so they cannot overtake one another.  A path changes only when a link does,
// and the seed protects that moment with a synchronous send; here, a node that
// starts to hold and a marker do it:
//   - split of X into X, Y (levels shared with X): X sends a marker to every
//     old successor Z on those levels, behind what it sent Z before; Z's rank
//     answers the marker with a clear to Y; Y is created holding one clear per
//     marker and handles nothing until they have arrived.  Requests that now
//     pass X -> Y -> Z therefore reach Z after those that went X -> Z.
//   - link_up splicing Y after P on a level, and Y learning an upper link to T:
//     the node that gained the link sends the new target an expect record (on
//     the same rank pair as everything it will send over the new link, so it
//     arrives first), routes a marker along the old way (the route a request for
//     the target's separator took below that level), and markers its old
//     successor; the target holds until those markers' clears arrive.
// Hold queues and cross-caller order (why total_order is linearizable in head
// order, and how each caller keeps issue order per key in the other modes):
// the design comment at the top of src/skiplist/nodes.cpp, which keeps them.
//
// Consistency modes (config.consistency, set_consistency; skiplist_map.md).
// total_order: requests enter at the head in issue order, ranges split over the
// towers so each piece follows a point operation's links; towers have their full
// geometric height (O(log(n / G)) hops per find); linearizable in head order.  sequential: entry through the route cache (the directory), per-key
// order and a hold-back queue (replies complete in issue order).  none: no
// per-key order or hold-back; nodes climb their tower and jump through the
// directory.  A stale directory entry falls back to the head (generation check).
//
// Completion.  Request forms complete when the answering node's reply arrives;
// async forms complete by flush() (the runtime's termination detection counts
// every record, forwards and acknowledgements included).
//
// Cost in memory: a node's packed run (sorted_run.hpp) and its tower.

#include <algorithm>
#include <bit>
#include <chrono>
#include <concepts>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <mpi.h>

#include "mpidict/batch_results.hpp"
#include "mpidict/checkpoint.hpp"
#include "mpidict/detail/collectives.hpp"
#include "mpidict/detail/facade.hpp"
#include "mpidict/detail/payload.hpp"
#include "mpidict/detail/skiplist_checkpoint.hpp"
#include "mpidict/detail/skiplist_core.hpp"
#include "mpidict/detail/skiplist_expiry.hpp"
#include "mpidict/detail/skiplist_reduce.hpp"
#include "mpidict/detail/skiplist_sorted_batch.hpp"
#include "mpidict/detail/window_control.hpp"
#include "mpidict/key_pattern.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/ordered_key.hpp"
#include "mpidict/runtime/request.hpp"

namespace mpidict {

template <class K, class V>
class skiplist_snapshot;

template <class K, class V>
class skiplist_map : public detail::with_collectives<skiplist_map<K, V>, K, V>,
                     public detail::skiplist_expiry_api<skiplist_map<K, V>, K, V> {
    using expiry_api = detail::skiplist_expiry_api<skiplist_map, K, V>;  // deadlines and TTLs (skiplist_expiry.hpp)
    friend expiry_api;
    static_assert(requires { ordered_codec<K>::encode; },
                  "skiplist_map keys need an order-preserving encoding: integers, float/double, std::string, "
                  "std::vector<std::byte>, std::array/std::tuple/std::pair of fixed-width ones, or a specialisation "
                  "of mpidict::ordered_codec<K>.");
    static_assert(detail::payload_storable<V>,
                  "skiplist_map values must be std::string, std::vector<std::byte> or trivially copyable.");

public:
    using key_type = K;
    using mapped_type = V;
    using entry_list = std::vector<std::pair<K, V>>;
    using clock = std::chrono::system_clock;

    // Collective over `communicator`.
    explicit skiplist_map(MPI_Comm communicator, skiplist_map_config settings = {})
        : skiplist_map(std::make_unique<runtime::engine>(communicator, settings.runtime), settings) {}
    // Collective.  Builds the list over an engine it takes over (e.g. a simulated one).
    skiplist_map(std::unique_ptr<runtime::engine> engine, const skiplist_map_config& settings)
        : m_core(std::make_unique<detail::skiplist_core>(std::move(engine), settings)),
          m_window_control(std::min<std::size_t>(8, settings.caller_window), std::max<std::size_t>(1, settings.caller_window),
                           settings.adaptive_window ? std::min<std::size_t>(32, settings.caller_window)
                                                    : settings.caller_window) {
        detail::register_op_kinds(m_core->engine(), skiplist_map_op::names);
        detail::check_value_type<V>("skiplist_map", settings.max_value_bytes);
    }
    skiplist_map(const skiplist_map&) = delete;
    skiplist_map& operator=(const skiplist_map&) = delete;

    // Collective unless an exception is unwinding (then it abandons without waiting).
    ~skiplist_map() {
        detail::destroy_from_destructor(m_core ? &m_core->engine() : nullptr, "skiplist_map",
                                        [&] { m_core->destroy(); });
    }

    // Collective.  Applies everything pending and releases the communicator.
    void destroy() { m_core->destroy(); }
    // Collective.  Returns once every operation started anywhere has been
    // answered (splits included); then removes expired entries here.
    void flush() {
        runtime::engine_lock lock(m_core->engine());
        m_core->flush();
    }
    // Collective (skiplist_map.md, "Rebalancing, growing and draining"):
    // flush(), then nodes move from the most loaded server ranks to the least
    // until max/mean of options.metric is near 1 (nothing moves at or below
    // options.target); drain(rank): every node off `rank` (an active server,
    // not the only one), which stops being a server.  Every rank gets the same
    // result; last_rebalance(): that of the last flush that grew or moved.
    skiplist_rebalance_result rebalance(const skiplist_rebalance_options& options = {}) {
        runtime::engine_lock lock(m_core->engine());
        return m_core->rebalance(options);
    }
    skiplist_rebalance_result drain(int rank) {
        runtime::engine_lock lock(m_core->engine());
        return m_core->drain(rank);
    }
    // Not collective: starts moving up to `nodes` of this rank's idle nodes
    // (most requested first) to rank `to` (-1: the other active servers in
    // turn; this rank or one that is no active server: none) while operations
    // go on; returns the moves started.  Requests keep their order through the
    // old place; the next flush() settles the moves.  A rank outside the
    // communicator: invalid_argument_error (on this rank only).
    std::size_t local_rebalance(std::size_t nodes, int to = -1) {
        runtime::engine_lock lock(m_core->engine());
        return m_core->local_rebalance(nodes, to);
    }
    skiplist_rebalance_result last_rebalance() const { return m_core->last_rebalance(); }
    std::vector<int> active_servers() const { return m_core->active_servers(); }

    // Local.  This caller's consistency mode (config.consistency until changed);
    // see skiplist_map.md "Consistency modes".  set_consistency first waits until
    // this caller's earlier operations have completed (other ranks are served
    // meanwhile), so each mode's promise covers exactly the operations started
    // in it.
    skiplist_consistency consistency() const { return m_core->consistency(); }
    void set_consistency(skiplist_consistency mode) {
        auto& engine = m_core->engine();
        runtime::engine_lock lock(engine);
        engine.check_alive("set_consistency");
        if (engine.in_handler())
            throw error("mpidict: skiplist_map set_consistency cannot be called from inside a handler");
        m_core->release_async();
        engine.wait_until([&] { return m_core->caller_idle(); });
        m_core->set_consistency(mode);
    }

    int rank() const { return m_core->rank(); }
    int num_ranks() const { return m_core->engine().size(); }
    const skiplist_map_config& settings() const { return m_core->config(); }
    runtime::engine& engine() { return m_core->engine(); }
    const runtime::statistics& stats() const { return m_core->engine().stats(); }

    // ---- point operations --------------------------------------------------

    // Inserts or replaces.  stored = false (nothing changed, nothing stored is
    // lost) when the key needed a new node and none was free anywhere
    // (list_full); a refusal is a result, never an exception.
    // Expiry (a deadline or a TTL on insert, insert_if_absent, async_insert and
    // insert_many; ttl, expire, expire_at, persist): detail/skiplist_expiry.hpp.
    using expiry_api::insert, expiry_api::async_insert, expiry_api::insert_if_absent, expiry_api::insert_many;
    request<replace_result> insert(const K& key, const V& value) {
        return start<replace_result>(skiplist_map_op::insert, detail::skiplist_core::op::insert, key,
                                     detail::payload_of(value), 0, &decode_insert);
    }
    void async_insert(const K& key, const V& value) {
        start_async(skiplist_map_op::insert, detail::skiplist_core::op::insert, key, detail::payload_of(value), 0);
    }
    // True if the key was new and is now stored; false if it was there
    // (unchanged) or the list was full (insert tells the two apart).
    request<bool> insert_if_absent(const K& key, const V& value) {
        return start<bool>(skiplist_map_op::insert_if_absent, detail::skiplist_core::op::insert_if_absent, key,
                           detail::payload_of(value), 0, &decode_inserted);
    }
    void async_insert_if_absent(const K& key, const V& value) {
        start_async(skiplist_map_op::insert_if_absent, detail::skiplist_core::op::insert_if_absent, key,
                    detail::payload_of(value), 0);
    }
    request<std::optional<V>> find(const K& key) {
        return start<std::optional<V>>(skiplist_map_op::find, detail::skiplist_core::op::find, key, {}, 0,
                                       &decode_find);
    }
    // True if the key was there.
    request<bool> erase(const K& key) {
        return start<bool>(skiplist_map_op::erase, detail::skiplist_core::op::erase, key, {}, 0, &decode_hit);
    }
    void async_erase(const K& key) {
        start_async(skiplist_map_op::erase, detail::skiplist_core::op::erase, key, {}, 0);
    }
    // op(current, value) applied at the key's node, a new key storing value: an
    // update or merge without fetching the value (skiplist_map.md, "Reduce at the
    // node").  op: a stateless V(const V&, const V&) numbered by its type, as
    // hash_map's async_reduce; replaced: the key was there.  Counted as inserts.
    template <class Op = std::plus<>>
    request<replace_result> reduce(const K& key, const V& value, Op = {}) {
        return start<replace_result>(skiplist_map_op::insert, detail::skiplist_core::op::reduce, key,
                                     detail::payload_of(value), reduce_number<Op>(), &decode_insert);
    }
    template <class Op = std::plus<>>
    void async_reduce(const K& key, const V& value, Op = {}) {
        start_async(skiplist_map_op::insert, detail::skiplist_core::op::reduce, key, detail::payload_of(value),
                    reduce_number<Op>());
    }
    using detail::with_collectives<skiplist_map<K, V>, K, V>::reduce;  // reduce(op): the collective fold

    // Inserts refused with list_full among this rank's async inserts (known once
    // their refusals arrived, e.g. after flush()).
    std::uint64_t async_rejected() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->async_rejected();
    }
    // The message of the last list_full refusal this rank received (empty:
    // none): which limit stopped the server ranks (node_slots_per_rank or
    // memory_limit_per_rank) and its value.
    std::string last_refusal() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->last_refusal();
    }

    // ---- batches -------------------------------------------------------------

    // Looks every key up, with up to settings().caller_window keys in flight,
    // and calls on_result(index, std::optional<V>) in index order.  Starts
    // after this caller's earlier operations are answered.  Local: other ranks
    // answer while inside any library call.
    template <class Function>
    void find_many(std::span<const K> keys, Function&& on_result) {
        if (keys.size() >= sorted_find_minimum && m_core->direct_finds()) {
            find_many_sorted(keys, on_result);
            return;
        }
        const std::size_t window = batch_window(true);
        std::vector<std::optional<V>> found(std::min(window, keys.size()));
        batched(skiplist_map_op::find, detail::skiplist_op::find, keys.size(), encode_each(keys), nullptr, false,
                [&](std::size_t index, std::uint8_t status, std::string_view value) {
                    auto& slot = found[index % window];
                    if (status == detail::skiplist_status::hit)
                        slot = detail::from_payload<V>(value);
                    else
                        slot.reset();
                },
                [&](std::size_t index) { on_result(index, std::as_const(found[index % window])); });
    }
    // Inserts (or replaces) keys[i] -> values[i], in index order where a key
    // repeats, and returns once every pair is answered (docs/architecture.md,
    // "Contracts"): stored, of them replaced, and refused (list_full: the key
    // needed a new node and none was free; the other keys are stored) with
    // refused_indexes.  Never throws for a full list.  (It used to return the
    // count of new keys: result.added(); the conversion is kept, deprecated.)
    insert_many_result insert_many(std::span<const K> keys, std::span<const V> values) {
        if (keys.size() != values.size())
            throw invalid_argument_error("mpidict: skiplist_map insert_many got " + std::to_string(keys.size()) +
                                         " keys and " + std::to_string(values.size()) + " values");
        if (keys.size() >= sorted_insert_minimum && m_core->direct_finds())
            return insert_many_sorted(keys, values);
        insert_many_result result;
        result.refused_indexes =
            batched(skiplist_map_op::insert, detail::skiplist_op::insert, keys.size(), encode_each(keys), &values,
                    true,
                    [&](std::size_t, std::uint8_t status, std::string_view) {
                        result.replaced += status == detail::skiplist_status::replaced;
                    },
                    no_delivery{});
        result.refused = result.refused_indexes.size();
        result.stored = keys.size() - result.refused;
        return result;
    }

    // ---- ordered queries -----------------------------------------------------

    // Every entry with lo <= key <= hi, in key order (descending if asked).
    request<entry_list> range(const K& lo, const K& hi, range_options options = {}) {
        return start_range(low_bound(lo, options), high_bound(hi, options), true, options);
    }
    // Every entry with key >= lo.
    request<entry_list> range_from(const K& lo, range_options options = {}) {
        return start_range(low_bound(lo, options), {}, false, options);
    }
    // Every entry whose key starts with `prefix` (byte-string keys).
    request<entry_list> prefix(std::string_view prefix, range_options options = {})
        requires(std::is_same_v<K, std::string> || std::is_same_v<K, std::vector<std::byte>>)
    {
        m_core->check_key(prefix.size());
        const std::string bound = prefix_successor(prefix);
        return start_range(std::string(prefix), bound, !bound.empty(), options);
    }
    // Every entry whose multi-dimensional key lies in the pattern's box (each
    // dimension an exact value or an interval; see key_pattern.hpp), in key
    // order.  The query visits only the nodes that can hold matches: from each
    // answering node it jumps over the towers to the next key that can match.
    // Throws invalid_argument_error if the pattern is not for keys of type K.
    request<entry_list> match(const key_pattern& pattern, range_options options = {}) {
        check_pattern(pattern);
        std::string bound = *pattern.upper_bound();
        bound.push_back('\0');  // the smallest encoding above the box
        std::string wire;
        pattern.serialize(wire);
        return start_range(pattern.lower_bound(), bound, true, options, wire);
    }
    // The text form, e.g. "4.[2,8].3.[1,3]"; a syntax error throws
    // pattern_syntax_error naming the position.
    request<entry_list> match(std::string_view pattern, range_options options = {}) {
        return match(key_pattern::parse<K>(pattern), options);
    }
    // The entries with lo <= key <= hi (after_lo / before_hi as range's; no limit,
    // not descending), counted at their nodes: no entry travels (Redis ZCOUNT).
    request<std::uint64_t> count(const K& lo, const K& hi, range_options options = {}) {
        return start_counting("count", lo, hi, options, detail::skiplist_wire::range_count);
    }
    // Erases them at their nodes; the number erased (ZREMRANGEBYSCORE, DeleteRange).
    request<std::uint64_t> erase_range(const K& lo, const K& hi, range_options options = {}) {
        return start_counting("erase_range", lo, hi, options,
                              detail::skiplist_wire::range_count | detail::skiplist_wire::range_erase);
    }

    // Streaming forms of the ordered queries: on_entry(key, value) is called in
    // key order as the parts arrive (a part waits only for the parts before it),
    // so the entries are never all held at once; returns how many there were.
    // Local; like find_many, other ranks answer meanwhile.  With descending they
    // arrive largest first and are streamed in that order.  If on_entry
    // throws, the rest of the query is dropped as it arrives and the exception
    // propagates.
    template <class Function>
        requires std::invocable<Function&, const K&, const V&>
    std::size_t range(const K& lo, const K& hi, Function&& on_entry, range_options options = {}) {
        return stream_range(low_bound(lo, options), high_bound(hi, options), true, options, {}, on_entry);
    }
    template <class Function>
        requires std::invocable<Function&, const K&, const V&>
    std::size_t range_from(const K& lo, Function&& on_entry, range_options options = {}) {
        return stream_range(low_bound(lo, options), {}, false, options, {}, on_entry);
    }
    template <class Function>
        requires(std::invocable<Function&, const K&, const V&> &&
                 (std::is_same_v<K, std::string> || std::is_same_v<K, std::vector<std::byte>>))
    std::size_t prefix(std::string_view prefix, Function&& on_entry, range_options options = {}) {
        m_core->check_key(prefix.size());
        const std::string bound = prefix_successor(prefix);
        return stream_range(std::string(prefix), bound, !bound.empty(), options, {}, on_entry);
    }
    template <class Function>
        requires std::invocable<Function&, const K&, const V&>
    std::size_t match(const key_pattern& pattern, Function&& on_entry, range_options options = {}) {
        check_pattern(pattern);
        std::string bound = *pattern.upper_bound();
        bound.push_back('\0');
        std::string wire;
        pattern.serialize(wire);
        return stream_range(pattern.lower_bound(), bound, true, options, wire, on_entry);
    }

    // ---- this rank's nodes ---------------------------------------------------

    // Live entries held by the nodes hosted here.
    std::size_t local_size() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->local_size();
    }
    // Collective.  flush() (which also settles online moves), then the live
    // entries over all ranks: a node on its way between ranks counts once.
    std::size_t global_size() {
        runtime::engine_lock lock(m_core->engine());
        return m_core->global_size();
    }
    // Calls f(key, value) for every live entry hosted here (in key order within
    // each node, nodes in slot order).  Call it after flush() for a settled view.
    template <class Function>
    void local_for_each(Function&& function) const {
        runtime::engine_lock lock(m_core->engine());
        m_core->for_all_local([&](std::string_view key, std::string_view value, detail::expiry_time) {
            function(ordered_codec<K>::decode(key), detail::from_payload<V>(value));
        });
    }
    // Collective.  flush(), then f(key, value) on every live entry this rank
    // hosts: the whole list is visited once.
    template <class Function>
    void for_all(Function&& function) {
        flush();
        local_for_each(std::forward<Function>(function));
    }
    // Collective.  A consistent snapshot: reads through it see the map as it was
    // when every rank made this call, whatever is written later
    // (skiplist_snapshot.hpp, docs/skiplist_map.md "Snapshots").
    skiplist_snapshot<K, V> snapshot() {
        runtime::engine_lock lock(m_core->engine());
        m_core->engine().check_alive("snapshot");
        return skiplist_snapshot<K, V>(*m_core, m_core->take_snapshot());
    }
    // Test support: snapshot() skips its flush (a broken variant the tests' checker rejects).
    void set_fault_snapshot_skip_flush(bool enabled) { m_core->snapshots().fault_skip_flush = enabled; }
    // ---- checkpoints (include/mpidict/checkpoint.hpp, docs/checkpoint.md) --

    // Collective.  flush(), then writes every live entry each rank hosts (key,
    // value, expiry time) to `directory`, replacing the checkpoint there only
    // once all of it is on disk.
    void save(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        flush();
        ck::communicator_copy comm(m_core->engine().mpi_communicator(), "skiplist_map");
        runtime::engine_lock lock(m_core->engine());
        ck::entry_totals totals;
        m_core->for_all_local([&](std::string_view key, std::string_view value, detail::expiry_time) {
            ++totals.keys;
            ++totals.values;
            if constexpr (ck::column_codec<K>::variable)
                totals.key_bytes += key.size();
            if constexpr (ck::column_codec<V>::variable)
                totals.value_bytes += value.size();
        });
        const skiplist_map_config& config = m_core->config();
        ck::description what = ck::describe<K, V>("skiplist_map", checkpoint_flags, options);
        what.tunables = {{"granularity", std::to_string(config.granularity)},
                         {"node_slots_per_rank", std::to_string(config.node_slots_per_rank)},
                         {"max_height", std::to_string(config.max_height)},
                         {"max_key_bytes", std::to_string(config.max_key_bytes)},
                         {"max_value_bytes", std::to_string(config.max_value_bytes)},
                         {"consistency", std::string(to_string(m_core->consistency()))}};
        ck::write_entries<K, V>(
            comm.get(), directory, std::move(what), checkpoint_flags, totals, options,
            [&](ck::entry_writer<K, V>& entries) {
                m_core->for_all_local([&](std::string_view key, std::string_view value, detail::expiry_time expires) {
                    entries.key(ordered_codec<K>::decode(key));
                    entries.value(detail::from_payload<V>(value));
                    entries.expiry(expires);
                });
            });
    }

    // Collective.  Fills this map, which must be empty, from the checkpoint in
    // `directory` (saved at any number of ranks): every entry is inserted with
    // its expiry time, so the list is in key order as it was.  Throws
    // checkpoint_error on every rank, leaving the map empty, if the checkpoint
    // is missing, damaged or of other types, or if the list has no room.
    void load(const std::string& directory, const checkpoint_options& options = {}) {
        namespace ck = detail::checkpoint;
        flush();
        if (const std::size_t held = global_size(); held != 0)
            throw invalid_argument_error("mpidict: skiplist_map load needs an empty map; this one holds " +
                                         std::to_string(held) + " entries");
        ck::communicator_copy comm(m_core->engine().mpi_communicator(), "skiplist_map");
        ck::reader in(comm.get(), directory, ck::describe<K, V>("skiplist_map", checkpoint_flags, options),
                      ck::columns_for<K, V>(checkpoint_flags, {}), options);
        const std::uint64_t refused_before = async_rejected();
        ck::load_by_inserts<K, V>(
            comm.get(), in, checkpoint_flags, directory,
            [&](const K& key, const V& value, double expires) {
                start_async(skiplist_map_op::insert, detail::skiplist_core::op::insert, key, detail::payload_of(value),
                            expires);
            },
            [&](const K& key) { async_erase(key); }, [&] { flush(); },
            [&] { return m_core->engine().sum(async_rejected() - refused_before, "load"); },
            "the list has no free node (node_slots_per_rank or memory_limit_per_rank)");
    }

    // A copy: with a progress thread the counters move while you read them.
    skiplist_map_local_statistics local_statistics() const { return detail::locked_local_statistics(*m_core); }
    // This rank's counters and the engine's, zeroed.
    void reset_statistics() { detail::reset_statistics(*m_core); }
    // Test support: empty if the nodes hosted here are well formed (call after flush()).
    std::string check_local_invariants() const {
        runtime::engine_lock lock(m_core->engine());
        return m_core->check_local_invariants();
    }
    // Test support: makes this caller's directory send keys from `key` on to
    // `node` (e.g. one that does not exist, as a route left over from an
    // unlinked node would); such a shortcut must fall back to the head.
    void remember_route_for_testing(const K& key, skiplist_node_id node) {
        runtime::engine_lock lock(m_core->engine());
        std::string encoded;
        ordered_codec<K>::encode(key, encoded);
        m_core->remember_route(encoded, node);
    }

private:
    // The walk the collectives (gather, gather_topk, reduce) go over.
    friend class detail::with_collectives<skiplist_map, K, V>;
    auto each_pair() const {
        return [this](auto&& emit) { local_for_each(emit); };
    }
    static constexpr detail::checkpoint::layout_flags checkpoint_flags{true, false, true};

    template <class Op>
    static detail::expiry_time reduce_number() { return detail::skiplist_reduce_op<skiplist_map, V, Op>::wire_id(); }

    std::string encode(const K& key) const {
        std::string out;
        ordered_codec<K>::encode(key, out);
        m_core->check_key(out.size());
        return out;
    }

    void prepare(runtime::op_kind kind, std::string_view value) {
        m_core->engine().check_alive(m_core->engine().op_kind_name(kind).data());
        m_core->check_value(value.size());
        ++m_core->engine().stats()[kind].operations;
    }

    template <class T>
    request<T> start(runtime::op_kind kind, detail::skiplist_core::op operation, const K& key, std::string_view value,
                     detail::expiry_time expires, typename request<T>::decoder decode, const void* context = nullptr) {
        const std::string encoded = encode(key);
        runtime::engine_lock lock(m_core->engine());
        prepare(kind, value);
        auto& engine = m_core->engine();
        const std::uint32_t slot = engine.open_request(kind);
        try {
            m_core->send_point(operation, slot, encoded, value, expires);
        } catch (...) {
            engine.cancel_request(slot);
            throw;
        }
        return request<T>(engine, slot, decode, context);
    }

    void start_async(runtime::op_kind kind, detail::skiplist_core::op operation, const K& key, std::string_view value,
                     detail::expiry_time expires) {
        const std::string encoded = encode(key);
        runtime::engine_lock lock(m_core->engine());
        prepare(kind, value);
        m_core->send_point(operation, detail::skiplist_core::no_slot, encoded, value, expires);
    }

    static void check_pattern(const key_pattern& pattern) {
        if (pattern.types() != key_dimensions<K>())
            throw invalid_argument_error("mpidict: skiplist_map match: the pattern " + pattern.to_string() +
                                         " is not for this map's key type (its dimensions differ)");
    }

    template <class Function>
    std::size_t stream_range(const std::string& lo, const std::string& hi, bool bounded, range_options options,
                             std::string_view pattern, Function& on_entry) {
        auto& engine = m_core->engine();
        runtime::engine_lock lock(engine);
        if (engine.in_handler())
            throw error("mpidict: skiplist_map streaming ranges cannot be run from inside a handler");
        prepare(skiplist_map_op::range, {});
        const std::uint32_t slot = engine.open_request(skiplist_map_op::range);
        try {
            m_core->send_range(slot, lo, hi, bounded, options.limit, pattern, true, options.descending);
        } catch (...) {
            engine.cancel_request(slot);
            throw;
        }
        request<std::size_t> finished(engine, slot, &decode_count, nullptr);
        std::size_t delivered = 0;
        std::string part;
        auto drain = [&] {
            while (m_core->take_stream_part(slot, part)) {
                byte_reader reader(reinterpret_cast<const std::byte*>(part.data()), part.size());
                while (!reader.empty()) {
                    const auto key_bytes = reader.read<std::uint32_t>();
                    const std::string_view key(reinterpret_cast<const char*>(reader.take(key_bytes)), key_bytes);
                    const auto value_bytes = reader.read<std::uint32_t>();
                    const std::string_view value(reinterpret_cast<const char*>(reader.take(value_bytes)), value_bytes);
                    const K decoded_key = ordered_codec<K>::decode(key);
                    const V decoded_value = detail::from_payload<V>(value);
                    on_entry(decoded_key, decoded_value);
                    ++delivered;
                }
            }
            return !m_core->range_in_progress(slot);
        };
        try {
            engine.wait_until(drain);
        } catch (...) {
            m_core->abandon_stream(slot);
            throw;
        }
        (void)finished.get();
        return delivered;
    }
    static std::size_t decode_count(std::uint32_t count, byte_reader&, const void*) { return count; }

    // The encoded bounds of range(lo, hi): [lo, hi] is [encode(lo), encode(hi) +
    // "\0") (the smallest encoding above hi); after_lo starts at encode(lo) +
    // "\0", before_hi ends at encode(hi).
    std::string low_bound(const K& lo, const range_options& options) {
        std::string bound = encode(lo);
        if (options.after_lo)
            bound.push_back('\0');
        return bound;
    }
    std::string high_bound(const K& hi, const range_options& options) {
        std::string bound = encode(hi);
        if (!options.before_hi)
            bound.push_back('\0');
        return bound;
    }

    template <class T = entry_list>  // T = std::uint64_t: count, erase_range (`counting`)
    request<T> start_range(const std::string& lo, const std::string& hi, bool bounded, range_options options,
                           std::string_view pattern = {}, std::uint8_t counting = 0) {
        runtime::engine_lock lock(m_core->engine());
        prepare(skiplist_map_op::range, {});
        auto& engine = m_core->engine();
        const std::uint32_t slot = engine.open_request(skiplist_map_op::range);
        // Descending: the nodes walk from hi down and stop at the limit; the
        // entries arrive largest first (skiplist_core::send_range).
        try {
            m_core->send_range(slot, lo, hi, bounded, options.limit, pattern, false, options.descending, counting);
        } catch (...) {
            engine.cancel_request(slot);
            throw;
        }
        if constexpr (std::is_same_v<T, entry_list>)
            return request<T>(engine, slot, &decode_range, nullptr);
        else
            return request<T>(engine, slot, &decode_counted, nullptr);
    }
    request<std::uint64_t> start_counting(const char* name, const K& lo, const K& hi, range_options options,
                                          std::uint8_t counting) {
        if (options.limit != 0 || options.descending)
            throw invalid_argument_error(std::string("mpidict: skiplist_map ") + name +
                                         " takes no limit and no descending: it covers the whole interval");
        return start_range<std::uint64_t>(low_bound(lo, options), high_bound(hi, options), true, {}, {}, counting);
    }
    static std::uint64_t decode_counted(std::uint32_t, byte_reader& reader, const void*) {
        return reader.read<std::uint64_t>();
    }

    // Keys in flight at most (total_order's find_many: a multiple, caller_batch.cpp).
    std::size_t batch_window(bool finds = false) const {
        return std::max<std::size_t>(1, m_core->config().caller_window) * m_core->batch_window_scale(finds);
    }

    // find_many in the modes whose finds go straight to their nodes (the
    // shortcut modes; finds of one batch may be answered in any order): the
    // keys go out in (nearly) key order, chunk by chunk, so that consecutive
    // keys meet the same directory bucket and the same node while it is in cache (random
    // order costs several cache misses per key on both sides).  A chunk holds
    // its keys in key order, that order and its inverse, and their results:
    // at most sorted_find_chunk keys, about (sizeof(K) + sizeof(std::optional<V>)
    // + 20) bytes each.
    static constexpr std::size_t sorted_find_minimum = 4096, sorted_find_chunk = std::size_t{1} << 19;
    template <class Function>
    void find_many_sorted(std::span<const K> keys, Function& on_result) {
        std::vector<std::pair<std::uint64_t, std::uint32_t>> order, scratch;
        std::vector<std::optional<V>> found;
        std::vector<std::uint32_t> position_of;
        // The chunk's keys, each encoded once: bytes back to back, and where each starts.
        std::string encoded, in_order;
        std::vector<std::size_t> starts, order_starts;
        for (std::size_t start = 0; start < keys.size(); start += sorted_find_chunk) {
            const std::size_t count = std::min(sorted_find_chunk, keys.size() - start);
            order.clear();
            encoded.clear();
            starts.clear();
            for (std::size_t index = 0; index < count; ++index) {
                const std::size_t at = encoded.size();
                starts.push_back(at);
                ordered_codec<K>::encode(keys[start + index], encoded);
                order.emplace_back(
                    detail::sorted_run::prefix_of(std::string_view(encoded).substr(at)),
                    static_cast<std::uint32_t>(index));
            }
            starts.push_back(encoded.size());
            // Grouped by their top three differing bytes (thousands of groups
            // per node at most; the order inside a group does not matter).
            detail::radix_sort_by_prefix(order, scratch, 3);
            // The encoded keys copied into key order (no second encoding); the
            // key `ahead` places on is requested while this one is copied.
            constexpr std::size_t ahead = 16;
            in_order.clear();
            order_starts.clear();
            position_of.resize(count);
            for (std::size_t position = 0; position < count; ++position) {
                if (position + ahead < count)
                    detail::prefetch_line(encoded.data() + starts[order[position + ahead].second]);
                const std::uint32_t index = order[position].second;
                order_starts.push_back(in_order.size());
                in_order.append(encoded, starts[index], starts[index + 1] - starts[index]);
                position_of[index] = static_cast<std::uint32_t>(position);
            }
            order_starts.push_back(in_order.size());
            // Answers land in key order (nearly the order they arrive in);
            // the results go out in index order through position_of, in a
            // loop of independent reads rather than one random write per
            // answer while answers arrive.
            found.assign(count, std::nullopt);
            const std::string_view bytes(in_order);
            batched(skiplist_map_op::find, detail::skiplist_op::find, count,
                    [&](std::size_t position, std::string&) {
                        return bytes.substr(order_starts[position], order_starts[position + 1] - order_starts[position]);
                    },
                    nullptr, false,
                    [&](std::size_t position, std::uint8_t status, std::string_view value) {
                        if (status == detail::skiplist_status::hit)
                            found[position] = detail::from_payload<V>(value);
                    },
                    no_delivery{});
            for (std::size_t index = 0; index < count; ++index) {
                if (index + ahead < count)
                    detail::prefetch_line(&found[position_of[index + ahead]]);
                on_result(start + index, std::as_const(found[position_of[index]]));
            }
        }
    }

    // insert_many in the shortcut modes: keys sorted, a repeated one sent once with its last value
    // (skiplist_sorted_batch.hpp), so each node merges its keys as one run ("Batch inserts" in skiplist_map.md).
    static constexpr std::size_t sorted_insert_minimum = 2;
    // A key that repeats is sent once (its last value); its other occurrences are
    // stored (replaced) with it or refused with it, as a sequence of inserts would be.
    insert_many_result insert_many_sorted(std::span<const K> keys, std::span<const V> values) {
        detail::sorted_batch batch;
        batch.build(keys.size(), [&](std::size_t index, std::string& out) { ordered_codec<K>::encode(keys[index], out); });
        std::vector<V> sorted_values;
        sorted_values.reserve(batch.distinct());
        for (std::size_t position = 0; position < batch.distinct(); ++position)
            sorted_values.push_back(values[batch.value_index(position)]);
        const std::span<const V> value_span(sorted_values);
        std::size_t fresh = 0;  // distinct keys that were not there
        const std::vector<std::size_t> refused =
            batched(skiplist_map_op::insert, detail::skiplist_op::insert, batch.distinct(),
                    [&](std::size_t position, std::string&) { return batch.key(position); }, &value_span, false,
                    [&](std::size_t, std::uint8_t status, std::string_view) {
                        fresh += status == detail::skiplist_status::stored;
                    },
                    no_delivery{});
        insert_many_result result;
        result.refused_indexes = batch.indexes_of(refused);
        result.refused = result.refused_indexes.size();
        result.stored = keys.size() - result.refused;
        result.replaced = result.stored - fresh;
        return result;
    }

    // The key source of an unsorted batch: keys[index], encoded into `scratch`.
    static auto encode_each(std::span<const K> keys) {
        return [keys](std::size_t index, std::string& scratch) {
            scratch.clear();
            ordered_codec<K>::encode(keys[index], scratch);
            return std::string_view(scratch);
        };
    }
    struct no_delivery {
        void operator()(std::size_t) const {}
    };

public:
    // The window the next find_many/insert_many starts with: config.caller_window,
    // or where the latency-driven adaptation left it (adaptive_window).
    std::size_t current_window() const { return m_window_control.window(); }

private:

    // The batches: one record per key straight to the node the directory
    // names (send_batch_point), at most W keys between the oldest unanswered
    // one and the newest sent.  key_at(index, scratch) gives the index'th key,
    // encoded (once); store(index, status, value) runs as its answer arrives
    // (the core calls the batch's sink, which calls store); deliver(index) in
    // index order.  With distinct, a key is never in flight twice (a repeated
    // key waits until its earlier occurrence is answered), so repeated inserts
    // take effect in index order.  Returns the indexes a node refused
    // (list_full), ascending; store is not called for them.
    template <class KeyAt, class Store, class Deliver>
    std::vector<std::size_t> batched(runtime::op_kind kind, detail::skiplist_op operation, std::size_t count, KeyAt&& key_at,
                 const std::span<const V>* values, bool distinct, Store&& store, Deliver&& deliver) {
        auto& engine = m_core->engine();
        runtime::engine_lock lock(engine);
        engine.check_alive(engine.op_kind_name(kind).data());
        if (engine.in_handler())
            throw error("mpidict: skiplist_map find_many/insert_many cannot be called from inside a handler");
        if (count >= detail::skiplist_core::no_slot)
            throw invalid_argument_error("mpidict: skiplist_map find_many/insert_many take fewer than 4294967295 "
                                         "keys per call");
        const std::size_t scale = m_core->batch_window_scale(operation == detail::skiplist_op::find);
        const std::size_t window = batch_window(operation == detail::skiplist_op::find);  // the largest; rings are this long
        const bool adaptive = m_core->config().adaptive_window;
        const double started = runtime::now_seconds();
        m_window_control.start_batch(started);
        // The answers' side: a ring of "answered" marks of a power-of-two
        // length (a mask, not a division, per key) and the indexes refused.
        struct sink final : detail::skiplist_batch_sink {
            sink(std::size_t length, Store& store, detail::window_control& control, bool adaptive)
                : ready(length, 0), ring(length - 1), store(store), control(control), adaptive(adaptive) {}
            void answer(std::uint32_t index, std::uint8_t status, std::string_view value) override {
                if (index >= sent || index < done || ready[index & ring] != 0)
                    throw decode_error("mpidict: skiplist_map batch answer for key " + std::to_string(index) +
                                       ", which is not in flight");
                ready[index & ring] = 1;
                if (adaptive && control.answered())
                    control.end_epoch(runtime::now_seconds());
                if (status == detail::skiplist_status::full) {
                    refused.push_back(index);  // indexes answered list_full
                    return;
                }
                store(index, status, value);
            }
            std::vector<std::uint8_t> ready;
            std::size_t ring;
            Store& store;
            detail::window_control& control;
            bool adaptive;
            std::size_t sent = 0, done = 0;
            std::vector<std::size_t> refused;
        } answers(std::bit_ceil(std::min(window, std::max<std::size_t>(count, 1))), store, m_window_control,
                  adaptive);
        const std::size_t ring = answers.ring;
        std::vector<std::uint64_t> hashes(distinct ? answers.ready.size() : 0);
        std::unordered_map<std::uint64_t, std::uint32_t> in_flight;  // key hash -> keys in flight (distinct)
        m_core->begin_batch(answers, count, operation == detail::skiplist_op::find);
        struct end_guard {
            detail::skiplist_core& core;
            ~end_guard() { core.end_batch(); }
        } guard{*m_core};
        auto deliver_ready = [&] {
            std::size_t& done = answers.done;
            while (done < answers.sent && answers.ready[done & ring] != 0) {
                answers.ready[done & ring] = 0;
                if (distinct) {
                    auto entry = in_flight.find(hashes[done & ring]);
                    if (--entry->second == 0)
                        in_flight.erase(entry);
                }
                deliver(done);
                ++done;
            }
            return done;
        };
        std::string scratch;
        for (std::size_t index = 0; index < count; ++index) {
            const std::string_view key = key_at(index, scratch);
            m_core->check_key(key.size());
            const std::string_view payload = values ? detail::payload_of((*values)[index]) : std::string_view();
            m_core->check_value(payload.size());
            if (index - deliver_ready() >= m_window_control.window() * scale) {
                m_core->close_batch_record();
                if (scale == 1) {
                    engine.wait_until([&] { return index - deliver_ready() < m_window_control.window(); });
                } else {  // total_order's chunks: until a window's worth of keys is free
                    const std::size_t free = m_window_control.window() * (scale - 1);
                    engine.wait_until([&] { return index - deliver_ready() <= free; });
                }
            }
            if (distinct) {
                const std::uint64_t hash = hash_bytes(key.data(), key.size());
                if (in_flight.count(hash) != 0) {  // its earlier occurrence first
                    m_core->close_batch_record();
                    engine.wait_until([&] { return deliver_ready() == index; });
                }
                ++in_flight[hash];
                hashes[index & ring] = hash;
            }
            m_core->send_batch_point(operation, static_cast<std::uint32_t>(index), key, payload);
            answers.sent = index + 1;
        }
        m_core->close_batch_record();
        auto& statistics = engine.stats()[kind];
        statistics.operations += count;
        statistics.initiation_seconds += runtime::now_seconds() - started;
        const double waiting = runtime::now_seconds();
        engine.wait_until([&] { return deliver_ready() == count; });
        statistics.completion_seconds += runtime::now_seconds() - waiting;
        std::sort(answers.refused.begin(), answers.refused.end());
        return std::move(answers.refused);
    }

    // A node that answered list_full (status full) refused the insert; the rest
    // of its answer, the node's explanation, is not part of the result.
    static replace_result decode_insert(std::uint32_t, byte_reader& reader, const void*) {
        const auto status = reader.read<std::uint8_t>();
        return replace_result{status != detail::skiplist_status::full, status == detail::skiplist_status::replaced};
    }
    static bool decode_inserted(std::uint32_t, byte_reader& reader, const void*) {
        return reader.read<std::uint8_t>() == detail::skiplist_status::stored;
    }
    static bool decode_hit(std::uint32_t, byte_reader& reader, const void*) {
        return reader.read<std::uint8_t>() == detail::skiplist_status::hit;
    }
    static std::optional<V> decode_find(std::uint32_t, byte_reader& reader, const void*) {
        if (reader.read<std::uint8_t>() != detail::skiplist_status::hit)
            return std::nullopt;
        const std::size_t bytes = reader.remaining();
        const std::byte* data = reader.take(bytes);
        return detail::from_payload<V>(std::string_view(reinterpret_cast<const char*>(data), bytes));
    }
    static entry_list decode_range(std::uint32_t count, byte_reader& reader, const void*) {
        entry_list out;
        // count came off the wire: reserve no more than the bytes can hold
        // (every entry takes at least its two 4-byte lengths).
        out.reserve(std::min<std::size_t>(count, reader.remaining() / 8));
        for (std::uint32_t index = 0; index < count; ++index) {
            const auto key_bytes = reader.read<std::uint32_t>();
            const std::string_view key(reinterpret_cast<const char*>(reader.take(key_bytes)), key_bytes);
            const auto value_bytes = reader.read<std::uint32_t>();
            const std::string_view value(reinterpret_cast<const char*>(reader.take(value_bytes)), value_bytes);
            out.emplace_back(ordered_codec<K>::decode(key), detail::from_payload<V>(value));
        }
        return out;
    }

    std::unique_ptr<detail::skiplist_core> m_core;
    // W for the batches (adapted from reply latency unless config.adaptive_window is false).
    detail::window_control m_window_control{1, 1, 1};
};

}  // namespace mpidict

#include "mpidict/skiplist_snapshot.hpp"
