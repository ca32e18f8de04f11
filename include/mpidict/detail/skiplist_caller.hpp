#pragma once
// The caller role of the skip list on one rank: what this rank's operations
// need until they complete, and nothing of the nodes it may host.
//   - src/skiplist/caller.cpp: issue numbers, answer tickets, per-key order
//     (one operation per key in flight), the issue queue of mode total_order,
//     the hold-back queue of mode sequential, the point and range records it
//     sends, and the point answers;
//   - src/skiplist/caller_ranges.cpp: range parts and split-range pieces
//     collected in key order, streaming, and the check of ranges that went
//     ahead of earlier overlapping ones (mode sequential);
//   - src/skiplist/caller_batch.cpp: batches (find_many, insert_many): point
//     records numbered by index, and direct-find records gathered per rank;
//   - src/skiplist/caller_async.cpp: async_insert batched behind the caller's
//     back (buffered, sent as sorted direct-insert batches, its own window).
// The directory (skiplist_directory) is the rank's; the caller enters through it.

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "mpidict/detail/skiplist_directory.hpp"
#include "mpidict/detail/skiplist_shared.hpp"

namespace mpidict::detail {

// Where a batch's answers go: answer(index, status, value) as they arrive.
class skiplist_batch_sink {
public:
    virtual void answer(std::uint32_t index, std::uint8_t status, std::string_view value) = 0;

protected:
    ~skiplist_batch_sink() = default;
};

class skiplist_caller {
public:
    using wire = skiplist_wire;
    static constexpr std::uint32_t no_slot = wire::no_slot;
    static constexpr std::uint32_t batch_slot_bit = 0x80000000u;  // request slots are far below

    skiplist_caller(skiplist_shared& shared, skiplist_directory& directory);
    ~skiplist_caller();

    skiplist_consistency consistency() const { return m_mode; }
    void set_consistency(skiplist_consistency mode);
    // Nothing of this caller in flight or buffered (an async_insert buffer
    // counts: release_async() sends it).
    bool idle() const { return requests_idle() && async_idle(); }
    // async_insert batching (caller_async.cpp): sends the buffered async
    // inserts as a batch (waiting, while serving, for room in their window);
    // flush, destroy, set_consistency and the batches call it first.
    void release_async();
    std::uint64_t async_rejected() const { return m_async_rejected; }

    // Point operations and ranges (skiplist_core.hpp documents them).
    void send_point(skiplist_op kind, std::uint32_t slot, std::string_view key, std::string_view value,
                    expiry_time expires);
    void send_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded, std::uint64_t limit,
                    std::string_view pattern, bool streaming, bool descending, std::uint8_t counting = 0);
    bool take_stream_part(std::uint32_t slot, std::string& part);
    void abandon_stream(std::uint32_t slot);
    bool range_in_progress(std::uint32_t slot) const { return m_ranges.count(slot) != 0; }

    // Batches.
    void begin_batch(skiplist_batch_sink& sink, std::size_t keys, bool finds);
    void send_batch_point(skiplist_op kind, std::uint32_t index, std::string_view key, std::string_view value);
    void close_batch_record();
    bool direct_finds() const;
    std::size_t batch_window_scale(bool finds) const;
    void end_batch();
    // The deadline of every key of the next insert batch (insert_many with an
    // expiry; 0: none): begin_batch takes it, end_batch forgets it.
    void set_batch_expiry(expiry_time expires) { m_next_batch_expires = expires; }

    // Handlers.
    void handle_point_reply(int source, std::string_view record);
    void handle_range_part(int source, std::string_view record);
    void handle_range_piece(int source, std::string_view record);
    void handle_range_pieces(int source, std::string_view record);
    void handle_found_direct(int source, std::string_view record);
    void handle_found_split(int source, std::string_view record);

private:
    bool requests_idle() const {
        return m_tickets.empty() && m_ranges.empty() && m_hold_back.empty() && m_issue_queue.empty();
    }
    // ---- async_insert batches (caller_async.cpp) ----
    // Whether an async insert now goes into the buffer (then it is taken).
    bool buffer_async(skiplist_op kind, std::uint32_t slot, std::string_view key, std::string_view value,
                      expiry_time expires);
    // Before any other operation of this caller: the buffer is sent, and the
    // operation waits while an async batch in flight may hold its key (all
    // batches, for a range: `key` null).
    void before_operation(const std::string_view* key);
    bool async_idle() const;
    // The async batch whose answers go to `slot`, if any.
    skiplist_batch_sink* async_sink(std::uint32_t slot);
    struct async_state;
    std::unique_ptr<async_state> m_async;

    // ---- ordering (caller.cpp) ----
    // Sequential mode: completions wait here until every earlier operation of
    // this caller has completed (the hold-back queue).
    struct completion {
        int source = -1;
        std::uint32_t slot = no_slot;  // no_slot: fire-and-forget, nothing to complete
        std::uint32_t count = 0;
        std::string bytes;
    };
    void deliver(std::uint64_t sequence, completion done);
    std::uint64_t next_issue() { return m_next_issue++; }
    bool in_issue_order() const;
    void drain_issue_queue();
    // Whether this caller's next operation enters through the directory.
    bool uses_shortcuts() const;
    // The level byte a caller's record starts with: the top level, and the flags of its mode.
    std::uint8_t entry_level_byte(skiplist_node_id entry) const;
    struct waiting_point {
        skiplist_op kind;
        std::uint32_t slot;
        std::string value;
        expiry_time expires;
        std::uint64_t sequence;
    };
    struct key_state {
        int outstanding = 0;
        std::deque<waiting_point> waiting;
    };
    void dispatch_point(skiplist_op kind, std::uint32_t slot, const std::string& key, std::string_view value,
                        expiry_time expires, std::uint64_t sequence, key_state* state);
    void dispatch_range(std::uint32_t slot, std::string_view lo, std::string_view hi, bool bounded,
                        std::uint64_t limit, std::string_view pattern, bool descending, std::uint8_t counting);
    // Mode total_order: operations behind one that waits for its key, in issue
    // order (a range waits too), so that the head receives them in that order.
    struct queued_operation {
        bool range = false;
        skiplist_op kind = skiplist_op::find;
        std::uint32_t slot = no_slot;
        std::string key;  // a range's lo
        std::string value;
        expiry_time expires = 0;
        std::uint64_t sequence = 0;
        std::string hi, pattern;
        bool bounded = false;
        bool descending = false;
        std::uint8_t counting = 0;
        std::uint64_t limit = 0;
    };
    struct ticket_state {
        std::string key;
        std::uint64_t sequence;  // issue number (hold-back queue)
        bool ordered;            // counted in m_keys
    };

    // ---- ranges (caller_ranges.cpp) ----
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
        // start at; `cursor` is where the chain taken so far ends.  Descending:
        // pieces by descending_key(their end), `cursor` stays lo and `top` is
        // where the chain taken so far (from hi down) ends.
        struct piece {
            std::string to;
            bool bounded = true;  // false: to the end of the list
            std::uint32_t entries = 0;
            std::string data;
        };
        bool split = false;
        std::map<std::string, piece, std::less<>> pieces;
        std::string cursor, hi, collected;
        bool bounded = false;
        bool descending = false;
        bool counting = false;  // count / erase_range: parts carry counts, the result is {u64 total}
        std::string top;
        std::uint64_t remaining = 0;
        // Mode sequential, a level-0 walk (caller_ranges.cpp, "Ranges that go
        // ahead"): its issue number, and what a re-run needs; `after` holds the
        // issue numbers of the earlier ranges it left ahead of (speculative
        // until its reads are found disjoint from theirs); `complete`: every
        // part is here and the result waits in `collected` for that check.
        std::uint64_t sequence = 0;
        std::uint64_t limit = 0;
        std::string pattern;
        bool speculative = false;
        bool complete = false;
        std::uint32_t count = 0;
        std::vector<std::uint64_t> after;
        // Modes sequential and none, an ascending range with a limit: its
        // parts go straight to the nodes the directory names (send_direct_range).
        // direct_sent: the directory intervals its batches asked for (the first
        // and a last cut at hi count half), direct_got: the entries they returned.
        bool direct = false;
        double direct_sent = 0, direct_got = 0;
        // A split range whose limit was met: the last key it kept (reads_of).
        std::string last_key;
    };
    // The keys a finished range read: [lo, end), or [lo, end of list) when not
    // bounded (the limit's last entry ends it early).
    struct range_reads {
        std::string lo, end;
        bool bounded = true;
    };
    range_reads reads_of(const range_state& state, std::string_view result, std::uint32_t count) const;
    // Ranges that went ahead: final (delivered) once every earlier range they
    // left ahead of is final and read no key they read; else run again.
    void settle_ranges();
    // Marks a range just dispatched as gone ahead of `after` (nothing if empty).
    void go_ahead(std::uint32_t slot, std::vector<std::uint64_t> after);
    static bool trust_ranges_for_testing();
    // A descending piece's place in the chain: its end, or the end of the list.
    static std::string descending_key(std::string_view to, bool bounded) {
        std::string key(1, bounded ? 'b' : 'u');
        if (bounded)
            key.append(to);
        return key;
    }
    void take_descending_piece(std::uint32_t slot, range_state& state, std::string from, std::string to, bool bounded,
                               std::uint32_t entries, std::string_view data);
    void finish_split_range(std::uint32_t slot, range_state& state);
    // A direct range (caller_ranges.cpp): from its cursor, one range_split
    // piece per directory interval to the node that starts it, as many as the
    // limit left needs at the fill seen so far, and a cut where they end.
    void send_direct_range(std::uint32_t slot, range_state& state);
    // Entries the direct pieces of finished batches returned, and the
    // directory intervals they covered (their mean fill: how many intervals a
    // limit needs).
    double m_direct_entries = 0, m_direct_intervals = 0;
    void count_direct_batch(range_state& state);
    // send_direct_range: the batch each rank's intervals go into while it
    // writes them (-1: none yet; all -1 between calls).
    std::vector<int> m_batch_index;
    // A piece of an ascending split range (range_piece, or one of a
    // range_pieces record): chained by interval coverage from the cursor.
    void take_piece(int source, std::uint32_t slot, std::uint8_t bounded_byte, std::uint32_t entries,
                    std::string_view from, std::string_view to, std::string_view data);
    bool take_entries(std::uint32_t slot, range_state& state, std::string_view to, bool bounded, std::uint32_t entries,
                      std::string_view data);
    // Streaming: moves the parts that are now in order to `ready`; completes the
    // request when the last one has been handed out (or dropped).
    void advance_stream(std::uint32_t slot, range_state& state);
    std::uint64_t take_range_sequence(std::uint32_t slot);

    // ---- batches (caller_batch.cpp) ----
    // The direct-find records being gathered, one per destination rank: runs
    // of consecutive keys (consecutive indices) that name the same node, each
    // a segment followed by its keys.  A record is sent when the next key
    // would make it longer than m_direct_limit, and by close_batch_record.
    struct direct_record {
        std::string segments;
        std::uint32_t count = 0;        // segments
        skiplist_node_id node{};        // the last segment's node
        std::uint32_t next_index = 0;   // the index that continues the last segment
        std::size_t keys_at = 0;        // where the last segment's key count is
        std::size_t last_key_at = 0, last_key_bytes = 0;  // direct inserts: the last key (a segment is sorted)
        bool listed = false;            // in m_direct_open
    };
    std::size_t direct_record_limit() const;
    // A direct find (inserting: a direct insert, with its value).
    void add_direct(skiplist_node_id to, std::uint32_t index, std::string_view key, std::string_view value,
                    bool inserting);
    void send_direct_record(int destination);
    std::uint32_t batch_slot() const { return batch_slot_bit | (m_batch_id & (batch_slot_bit / 2 - 1)); }
    // The slot the direct records being sent name: an async batch's while
    // release_async sends it (bit 30 set), else the user batch's.
    std::uint32_t direct_slot() const { return m_sending_slot != 0 ? m_sending_slot : batch_slot(); }
    std::uint32_t m_sending_slot = 0;
    // Mode total_order: a find_many's keys go out in chunks of consecutive
    // indices, each sorted and sent to the head as one find_split record
    // (caller_batch.cpp); the chunk being gathered.
    struct split_key {
        std::uint32_t index;
        std::uint32_t at, bytes;  // in m_split_bytes
    };
    void send_split_chunk();
    // The answers of a direct or split batch record (hops: the piece's).
    void take_found(std::uint32_t slot, byte_reader& in, std::uint8_t hops);
    bool m_batch_split = false;
    std::size_t m_split_chunk = 0;  // keys per chunk
    std::vector<split_key> m_split_keys;
    std::string m_split_bytes;

    skiplist_shared& m_shared;
    skiplist_directory& m_directory;
    skiplist_consistency m_mode = skiplist_consistency::sequential;

    std::unordered_map<std::string, key_state> m_keys;          // one point operation per key in flight
    std::deque<queued_operation> m_issue_queue;
    bool m_draining = false;  // drain_issue_queue is running (it does not nest)
    std::unordered_map<std::uint32_t, ticket_state> m_tickets;  // answer ticket -> its operation
    std::uint32_t m_next_ticket = 0;
    std::uint64_t m_next_issue = 0;     // the next operation's issue number
    std::uint64_t m_next_delivery = 0;  // the oldest issue number not yet completed
    std::map<std::uint64_t, completion> m_hold_back;
    std::uint64_t m_async_rejected = 0;

    std::map<std::uint32_t, range_state> m_ranges;            // by request slot
    std::map<std::uint32_t, std::uint64_t> m_range_sequence;  // request slot -> issue number
    // Ranges that went ahead (speculative) in flight or waiting for their check,
    // and the reads of finished ranges they may be checked against (by issue number).
    std::size_t m_speculating = 0;
    std::map<std::uint64_t, range_reads> m_settled_reads;
    // Test only (MPIDICT_SKIPLIST_TRUST_RANGES_FOR_TESTING set): a range that
    // went ahead is never run again, so the history checkers must reject it.
    bool m_trust_ranges = trust_ranges_for_testing();

    // The batch in progress (begin_batch .. end_batch).
    skiplist_batch_sink* m_batch = nullptr;
    std::uint32_t m_batch_id = 0;  // low 30 bits travel in the slot of its records
    bool m_batch_direct = false;   // this batch sends direct-find records
    bool m_batch_insert = false;   // this batch sends direct-insert records (sorted runs per node)
    bool m_batch_flat = false;     // ... and looks them up in the directory's flat copy
    std::vector<direct_record> m_direct;  // per rank, while a direct batch runs
    std::vector<int> m_direct_open;       // ranks whose record may hold segments
    std::size_t m_direct_limit = 0;
    expiry_time m_next_batch_expires = 0, m_batch_expires = 0;  // set_batch_expiry
};

}  // namespace mpidict::detail
