#pragma once
// The type-erased part of skiplist_map: keys are order-preserving encoded byte
// strings here (memcmp order == key order) and values are byte strings;
// skiplist_map<K, V> encodes and decodes around it.  Compiled once in
// src/skiplist/skiplist_core.cpp.  See skiplist_map.hpp for the design.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mpidict/detail/sorted_run.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/skiplist_map_types.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict {

namespace detail {

// Expiry: seconds since the Unix epoch (std::chrono::system_clock); 0 = never.
using expiry_time = double;

class skiplist_core {
public:
    enum class op : std::uint8_t { find = 0, insert = 1, insert_if_absent = 2, erase = 3, marker = 4 };
    static constexpr std::uint32_t no_slot = 0xffffffffu;
    // Status byte of a point answer.
    static constexpr std::uint8_t status_miss = 0, status_hit = 1, status_stored = 2, status_replaced = 3,
                                  status_duplicate = 4, status_full = 5;

    skiplist_core(std::unique_ptr<runtime::engine> engine, const skiplist_map_config& settings);
    ~skiplist_core();
    skiplist_core(const skiplist_core&) = delete;
    skiplist_core& operator=(const skiplist_core&) = delete;

    runtime::engine& engine() { return *m_engine; }
    const runtime::engine& engine() const { return *m_engine; }
    const skiplist_map_config& config() const { return m_config; }
    // This caller's consistency mode (config().consistency until changed).  The
    // caller must have no operation in flight when it changes it.
    skiplist_consistency consistency() const { return m_mode; }
    void set_consistency(skiplist_consistency mode);
    // True once every operation this caller started has been answered and
    // delivered (the hold-back queue is empty).
    bool caller_idle() const {
        return m_tickets.empty() && m_ranges.empty() && m_hold_back.empty() && m_issue_queue.empty();
    }
    int rank() const { return m_engine->rank(); }

    // Caller side.  Sends a point operation into the list at the head.  `slot` is
    // a request slot (its reply completes it) or no_slot (fire-and-forget).
    void send_point(op kind, std::uint32_t slot, std::string_view key, std::string_view value, expiry_time expires);
    // Caller side.  Starts a range query over [lo, hi) (hi empty and !bounded: to
    // the end), at most `limit` entries (0: no limit).  Completes `slot` with
    // {u32 key bytes, key, u32 value bytes, value}* in key order, count = entries.
    // With a pattern (key_pattern::serialize form, empty: none) only matching
    // entries are returned, and the query jumps from node to node over the gaps
    // between matching runs (next_candidate) instead of walking every node.
    // streaming: the parts are not collected for the request; take_stream_part
    // hands them out in key order as soon as every earlier part has arrived (only
    // parts that arrive early wait here), and the request completes with the
    // entry count once the last one is taken.
    void send_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded, std::uint64_t limit,
                    std::string_view pattern = {}, bool streaming = false);
    // Streaming ranges: the next part of `slot` in order ({u32 key bytes, key,
    // u32 value bytes, value}*), if one is ready.
    bool take_stream_part(std::uint32_t slot, std::string& part);
    // Streaming ranges: the caller gave up (its callback threw); later parts are dropped.
    void abandon_stream(std::uint32_t slot);
    bool range_in_progress(std::uint32_t slot) const { return m_ranges.count(slot) != 0; }

    // Caller side, batches (find_many, insert_many): point operations answered
    // to on_answer(index, status, value) instead of completing requests, with no
    // per-key bookkeeping here (the front end keeps one key from being in flight
    // twice).  begin_batch waits until this caller's earlier point operations
    // are answered, so a batch takes effect after them; end_batch forgets the
    // callback, and answers of an abandoned batch are dropped.
    using batch_answer = std::function<void(std::uint32_t index, std::uint8_t status, std::string_view value)>;
    static constexpr std::uint32_t batch_slot_bit = 0x80000000u;  // request slots are far below
    // keys, finds: the batch's size and whether it only finds (find_many): such
    // a batch, in the modes that use shortcuts, sends its keys straight to the
    // nodes the directory names, in direct-find records (one per destination
    // rank, naming many nodes, each with a run of keys): a node answers the
    // keys in its range with one pass over its run, prefetching the next
    // nodes of the record, and sends each other key on the ordinary way from
    // there.  A large batch first copies the directory into a flat sorted
    // array (flat_entry_point).
    void begin_batch(batch_answer on_answer, std::size_t keys = 0, bool finds = false);
    void send_batch_point(op kind, std::uint32_t index, std::string_view key, std::string_view value);
    // Sends the direct-find records still gathering keys: the front end
    // calls it before it waits for answers.
    void close_batch_record();
    // Whether a find batch started now would send direct-find records (the
    // modes with shortcuts; then the keys' order within it is free).
    bool direct_finds() const;
    void end_batch();

    void check_key(std::size_t bytes) const;
    void check_value(std::size_t bytes) const;
    std::uint64_t async_rejected() const { return m_async_rejected; }
    // The directory's size (test support).
    std::size_t directory_size() const { return m_routes.size(); }
    // Test support: makes the directory name `id` for `separator` (e.g. a node
    // that does not exist), to check that a failed shortcut falls back.
    void remember_route(std::string_view separator, skiplist_node_id id) { learn_route(separator, id); }

    // Local.  Every live entry of the nodes hosted here, in key order per node.
    void for_all_local(const std::function<void(std::string_view, std::string_view, expiry_time)>& visit);
    // Local.  Removes expired entries from every node hosted here.
    std::size_t sweep_expired();
    skiplist_local_statistics local_statistics() const;
    void reset_local_statistics();
    std::size_t local_size() const;

    // Collective.
    void flush();
    void destroy();

    // Test support: checks the structure of the list as seen from this rank's nodes
    // (sorted runs, separators increasing along every level) and returns a
    // description of the first problem, or an empty string.
    std::string check_local_invariants() const;

private:
    struct link {
        std::string separator;      // the successor's lower bound (fixed when it was created)
        skiplist_node_id to{};      // null: end of this level
        bool set = false;           // false: this level is not linked yet (skip it)
    };
    // Sequential mode: completions wait here until every earlier operation of
    // this caller has completed (the hold-back queue).
    struct completion {
        int source = -1;
        std::uint32_t slot = no_slot;   // no_slot: fire-and-forget, nothing to complete
        std::uint32_t count = 0;
        std::string bytes;
    };
    void deliver(std::uint64_t sequence, completion done);
    std::uint64_t next_issue() { return m_next_issue++; }
    std::uint64_t take_range_sequence(std::uint32_t slot);
    struct held_record {
        runtime::handler_id handler;
        int source;
        std::string bytes;
    };
    struct node {
        std::uint32_t generation = 0;
        bool live = false;
        std::string separator;              // lower bound of this node's key range
        std::vector<link> tower;            // height = tower.size()
        sorted_run run;                     // sorted by key, at most G (G + 1 while splitting)
        expiry_time earliest_expiry = 0;    // 0: nothing expires
        int holds = 0;                      // ordering clears still expected
        // While holding for a link on level hold_level, what arrives below it
        // (the old way) is served, not queued (hold_if_busy); low_queued: some
        // of it had to queue anyway (the node was splitting), so the rest must too.
        static constexpr std::uint8_t no_hold_level = 0xff;
        std::uint8_t hold_level = no_hold_level;
        bool low_queued = false;
        bool allocating = false;            // waiting for the free-node service
        // Requests that arrived while holding (allocated when the first one does:
        // an empty std::deque costs about 600 bytes per node).
        std::unique_ptr<std::deque<held_record>> held;
        bool holding_records() const { return held && !held->empty(); }
        // The insert that made the node split, answered once the split is decided.
        int pending_source = -1;
        std::uint32_t pending_slot = no_slot;
        std::uint32_t pending_ticket = no_slot;
        std::string pending_key;
        std::uint8_t pending_hops = 0;
        // The split in progress: the new node's separator, height and the levels
        // linked directly after this node (bit l).
        std::string split_separator;
        unsigned split_height = 0;
        std::uint32_t split_direct = 0;
    };

    // Handlers (static trampolines to the members below).
    static void on_point(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_range(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_range_part(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_range_split(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_range_piece(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    void handle_range_split(int source, std::string_view record);
    void handle_range_piece(int source, std::string_view record);
    static void on_alloc(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_alloc_reply(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_link_up(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_set_links(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_expect(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_marker(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_clear(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_point_reply(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_unlinked(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_find_direct(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    static void on_found_direct(void*, int, const std::byte*, std::uint32_t, std::uint32_t);
    void handle_find_direct(int source, std::string_view record);
    void handle_found_direct(int source, std::string_view record);

    void handle_point(int source, std::string_view record);
    void handle_range(int source, std::string_view record);
    void handle_range_part(int source, std::string_view record);
    void handle_alloc(int source, std::string_view record);
    void handle_alloc_reply(std::string_view record);
    void handle_link_up(int source, std::string_view record);
    void handle_set_links(int source, std::string_view record);
    void handle_clear(std::string_view record);
    void handle_point_reply(int source, std::string_view record);
    void handle_unlinked(int source, std::string_view record);
    // Collective, at a flush (the list is quiescent): every emptied node except
    // the head is unlinked on every level and its slot returns to the free pool.
    void unlink_emptied();

    bool live(skiplist_node_id id) const {
        return id.slot < m_nodes.size() && m_nodes[id.slot].live && m_nodes[id.slot].generation == id.generation;
    }
    // Returns the node a record addresses, or throws decode_error.
    node& addressed(skiplist_node_id id, const char* what);
    // Queues the record if the node holds (split in progress, clears expected).
    // arrival_level: the level the record came on (-1: never served while holding).
    bool hold_if_busy(node& target, runtime::handler_id handler, int source, std::string_view record,
                      int arrival_level = -1);
    void release_held(skiplist_node_id id);
    // The level-l forward for `key` from `here`, scanning down from `level`:
    // returns the level to forward on, or -1 when the key belongs here.
    static int forward_level(const node& here, std::string_view key, int level, bool strictly_less);
    // The header of a routed record (point, range, link_up): the addressed
    // node's slot and generation, the level byte (the level in the low bits, and
    // route_free / route_shortcut) and the hops byte (hops so far, and
    // route_fell_back).
    static constexpr std::uint8_t level_mask = 0x3f, route_free = 0x40, route_shortcut = 0x80;
    static constexpr std::uint8_t hops_mask = 0x7f, route_fell_back = 0x80;
    void forward(runtime::handler_id handler, skiplist_node_id to, std::string_view record_tail, int level,
                 std::uint8_t level_flags = 0, std::uint8_t hops = 0);
    static std::uint8_t next_hops(std::uint8_t hops) {
        return static_cast<std::uint8_t>((hops & route_fell_back) | std::min<int>(hops_mask, (hops & hops_mask) + 1));
    }
    // A shortcut (a directory entry) led a record to a node that is gone or
    // starts above its key: the record starts again at the head.
    void fall_back_to_head(runtime::handler_id handler, std::string_view record_tail, std::uint8_t level_byte,
                           std::uint8_t hops);
    void send_record(int destination, runtime::handler_id handler, std::string_view bytes);

    void answer_point(node& here, skiplist_node_id id, op kind, int caller, std::uint32_t slot, std::uint32_t ticket,
                      std::string_view key, std::string_view value, expiry_time expires, std::uint8_t hops);
    // Answers a point operation through the caller's point_reply handler (which
    // completes its request, if any, and releases the caller's next operation on
    // the key).
    void reply_point(const node& here, skiplist_node_id id, int caller, std::uint32_t slot, std::uint32_t ticket,
                     std::uint8_t status, std::string_view value = {}, std::uint8_t hops = 0);
    // Caller side: the node a key's operation enters the list at (the route
    // cache's closest node at or below the key, else the head), and what an
    // answer taught about where a key range starts.
    skiplist_node_id entry_point(std::string_view key) const;
    // The directory's closest node at or below `key` whose separator is above
    // `floor` (null if none): where a node in mode none may jump.
    skiplist_node_id directory_after(std::string_view key, std::string_view floor) const;
    // Whether this caller's next operation enters through the directory.
    bool caller_uses_shortcuts() const;
    // The level byte a caller's record starts with: the top level, and the flags of its mode.
    std::uint8_t entry_level_byte(skiplist_node_id entry) const;
    void learn_route(std::string_view separator, skiplist_node_id id);
    void start_split(node& here, skiplist_node_id id);
    void purge_expired(node& here, expiry_time now);
    // Now, by config().expiry_clock (else the system clock), as an expiry_time.
    expiry_time clock_now() const;
    unsigned draw_height();
    // Starts linking `fresh` on `level` (its levels below are linked): travels from the head.
    void send_link_up(skiplist_node_id fresh, std::string_view separator, unsigned level);
    skiplist_node_id allocate_local(std::string_view separator, unsigned height);
    // Ordering (see skiplist_map.hpp, "Non-overtaking"): `from` now links `target`
    // directly; requests that took the old way must reach `target` (and
    // `old_successor`) before any that take the new one.
    void order_new_link(node& from, skiplist_node_id from_id, int level, skiplist_node_id target,
                        std::string_view target_separator, skiplist_node_id old_successor);

    std::unique_ptr<runtime::engine> m_engine;
    skiplist_map_config m_config;
    std::vector<int> m_servers;
    int m_server_index = -1;             // position of this rank in m_servers, -1: hosts no nodes
    skiplist_node_id m_head{};
    std::deque<node> m_nodes;            // this rank's slots (a deque: references stay valid)
    std::vector<std::uint32_t> m_free;   // free slots (LIFO)
    std::size_t m_placement_counter = 0;
    std::mt19937_64 m_random;

    // Caller side: ranges in progress, by request slot.
    struct range_state {
        std::map<std::uint32_t, std::string> parts;   // sequence -> encoded entries
        std::map<std::uint32_t, std::uint32_t> counts;
        std::uint32_t last = no_slot;                  // sequence of the final part, once known
        // Streaming: parts before `next` were handed out; `ready` is what
        // arrived in order and awaits take_stream_part.
        bool streaming = false;
        bool abandoned = false;
        std::uint32_t next = 0;
        std::uint64_t entries = 0;
        std::deque<std::string> ready;
        int source = -1;  // the rank whose part completes the request
        // Mode total_order (split over the towers): pieces by the key they
        // start at; `cursor` is where the chain taken so far ends.
        struct piece {
            std::string to;
            bool bounded = true;  // false: to the end of the list
            std::uint32_t entries = 0;
            std::string data;
        };
        bool split = false;
        std::map<std::string, piece> pieces;
        std::string cursor, hi, collected;
        bool bounded = false;
        std::uint64_t remaining = 0;
    };
    void finish_split_range(std::uint32_t slot, range_state& state);
    // Streaming: moves the parts that are now in order to `ready`; completes the
    // request when the last one has been handed out (or dropped).
    void advance_stream(std::uint32_t slot, range_state& state);
    std::map<std::uint32_t, range_state> m_ranges;
    std::map<std::uint32_t, std::uint64_t> m_range_sequence;  // request slot -> issue number
    // Caller side: one point operation per key in flight; the rest wait here.
    struct waiting_point {
        op kind;
        std::uint32_t slot;
        std::string value;
        expiry_time expires;
        std::uint64_t sequence;
    };
    struct key_state {
        int outstanding = 0;
        std::deque<waiting_point> waiting;
    };
    void dispatch_point(op kind, std::uint32_t slot, const std::string& key, std::string_view value,
                        expiry_time expires, std::uint64_t sequence, key_state* state);
    std::unordered_map<std::string, key_state> m_keys;
    // Mode total_order: operations behind one that waits for its key, in issue
    // order (a range waits too), so that the head receives them in that order.
    struct queued_operation {
        bool range = false;
        op kind = op::find;
        std::uint32_t slot = no_slot;
        std::string key;  // a range's lo
        std::string value;
        expiry_time expires = 0;
        std::uint64_t sequence = 0;
        std::string hi, pattern;
        bool bounded = false;
        std::uint64_t limit = 0;
    };
    std::deque<queued_operation> m_issue_queue;
    bool in_issue_order() const;
    void drain_issue_queue();
    void dispatch_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded,
                        std::uint64_t limit, std::string_view pattern);
    // Caller side: separator -> node, learned from answers (at most
    // config().route_cache_entries); entry_point reads it.
    std::map<std::string, skiplist_node_id, std::less<>> m_routes;
    // Counts every change of m_routes; a flat copy made at version v is current
    // while m_routes_version == v.
    std::uint64_t m_routes_version = 0;
    // The flat copy for large find batches: separators in order (the first 8
    // bytes big-endian as a number, whose order agrees with the byte order, and
    // the bytes in m_flat_bytes) and their nodes.  Possibly stale during a
    // batch: every entry is checked by the node it names.
    struct flat_route {
        std::uint64_t prefix;
        std::uint32_t offset;
        std::uint32_t bytes;
    };
    std::vector<flat_route> m_flat;
    // m_flat_buckets[b]: the first entry whose prefix lies in bucket b or later
    // (flat_bucket: the m_flat_bucket_bits prefix bits below those all entries
    // share), so a lookup searches one bucket.
    std::vector<std::uint32_t> m_flat_buckets;
    int m_flat_shift = 0, m_flat_bucket_bits = 0;
    std::size_t flat_bucket(std::uint64_t prefix) const {
        return static_cast<std::size_t>((prefix >> m_flat_shift) & ((std::uint64_t{1} << m_flat_bucket_bits) - 1));
    }
    std::vector<skiplist_node_id> m_flat_ids;
    mutable std::size_t m_flat_hint = 0;  // the entry flat_entry_point returned last
    std::string m_flat_bytes;
    std::uint64_t m_flat_version = ~std::uint64_t{0};
    bool m_batch_direct = false;  // this batch sends direct-find records
    bool m_batch_flat = false;    // ... and looks them up in the flat copy
    // The direct-find records being gathered, one per destination rank: runs
    // of consecutive keys (consecutive indices) that name the same node, each
    // a segment {u32 node slot, u32 generation, u32 first index, u32 count,
    // {u32 bytes, key}*}.  A record is sent when the next key would make it
    // longer than m_direct_limit, and by close_batch_record.
    struct direct_record {
        std::string segments;
        std::uint32_t count = 0;        // segments
        skiplist_node_id node{};        // the last segment's node
        std::uint32_t next_index = 0;   // the index that continues the last segment
        std::size_t keys_at = 0;        // where the last segment's key count is
        bool listed = false;            // in m_direct_open
    };
    std::vector<direct_record> m_direct;  // per rank, while a direct batch runs
    std::vector<int> m_direct_open;       // ranks whose record may hold segments
    std::size_t direct_record_limit() const;  // computes m_direct_limit (begin_batch)
    std::size_t m_direct_limit = 0;
    void add_direct_find(skiplist_node_id to, std::uint32_t index, std::string_view key);
    void send_direct_record(int destination);
    std::uint32_t batch_slot() const { return batch_slot_bit | (m_batch_id & (batch_slot_bit / 2 - 1)); }
    void rebuild_flat_routes();
    skiplist_node_id flat_entry_point(std::string_view key) const;
    struct ticket_state {
        std::string key;
        std::uint64_t sequence;  // issue number (hold-back queue)
        bool ordered;            // counted in m_keys
    };
    std::unordered_map<std::uint32_t, ticket_state> m_tickets;  // answer ticket -> its operation
    skiplist_consistency m_mode = skiplist_consistency::sequential;
    std::uint64_t m_next_issue = 0;     // the next operation's issue number
    std::uint64_t m_next_delivery = 0;  // the oldest issue number not yet completed
    std::map<std::uint64_t, completion> m_hold_back;
    std::uint32_t m_next_ticket = 0;
    // The batch in progress (begin_batch .. end_batch).
    batch_answer m_batch_answer;
    std::uint32_t m_batch_id = 0;  // low 30 bits travel in the slot of its records
    std::uint64_t m_async_rejected = 0;

    skiplist_local_statistics m_stats{};

    runtime::handler_id m_h_range_split = 0, m_h_range_piece = 0;
    runtime::handler_id m_h_point = 0, m_h_range = 0, m_h_range_part = 0, m_h_alloc = 0, m_h_alloc_reply = 0,
                        m_h_link_up = 0, m_h_set_links = 0, m_h_expect = 0, m_h_marker = 0, m_h_clear = 0,
                        m_h_point_reply = 0, m_h_unlinked = 0, m_h_find_direct = 0, m_h_found_direct = 0;
    // unlink_emptied: the emptied nodes every rank announced, with their towers.
    struct node_id_hash {
        std::size_t operator()(const skiplist_node_id& id) const {
            return std::hash<std::uint64_t>()((std::uint64_t(std::uint32_t(id.rank)) << 32 | id.slot) ^
                                              (std::uint64_t(id.generation) << 17));
        }
    };
    std::unordered_map<skiplist_node_id, std::vector<link>, node_id_hash> m_unlinked;
};

}  // namespace detail
}  // namespace mpidict
