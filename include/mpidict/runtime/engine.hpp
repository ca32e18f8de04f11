#pragma once
// The active-message engine: every container sends its operations through one.
//
// Data layout.  Each destination has an outbox buffer of at most `buffer_bytes`
// (B).  A buffer is a sequence of groups; a group is a 12-byte header
// {u16 handler, u16 flags, u32 record_bytes, u32 count} followed by `count`
// records of `record_bytes` each.  Consecutive records for the same handler and
// of the same size share one group, so a stream of 16-byte inserts costs 16 bytes
// a record on the wire and one handler call per group at the receiver.
//
// When operations complete.  A buffer leaves when it is full, when a caller
// waits on a request whose record it holds (latency mode: wait ships at once),
// or at flush.  A request completes when its reply record is handled.  flush()
// returns on every rank once every record sent anywhere before it, including
// records that handlers sent while it ran, has been handled: it counts messages
// sent and handled, each message stamped with its sender's flush round, and
// ends at the first non-blocking sum whose counts, taken at a consistent cut,
// agree (Mattern's colouring).
//
// Routing (config::routing).  Under grid routing a record for a rank outside
// the sender's row and column travels in a "routed" group to the corner rank,
// each record prefixed by its final destination (4 bytes); the corner appends
// it to its outbox for that destination in a "forwarded" group whose header
// names the origin, so handlers see the origin as the source and replies go
// back the same way.  Every record from one rank to another takes the same
// path, so per-pair order is kept.  Forwarded records gather in the corner's
// outboxes (that is what bounds message counts) and leave when a buffer fills,
// when the corner waits or flushes (in a flush, once a round brings nothing
// more), or soon when the message that brought them was shipped unfilled
// because someone waits (urgent_flag): after the polling loop of progress()
// that handled it, or with that message's other output when handled elsewhere.
//
// Flow control.  At most L (blocking_factor) requests are outstanding per rank;
// starting one more first makes progress.  At most q (release_queue; with more
// than 2q peers, half the peers) sent buffers wait for MPI to release them, and
// a rank that ships a full buffer then serves what has arrived; full buffers
// (an outbox that reached its fill mark) are sent synchronously, so such a
// buffer is released only when the destination has matched it, and a rank that
// every other rank floods (the N-1 pattern) holds at most p*q*B unmatched bytes.
// Partial buffers (someone waits) use standard sends.  Handlers never
// block: their output (replies, forwarded records, new work) leaves when the
// message that caused it is done, or, under grid routing, for the messages one
// polling loop of progress() handles, together after that loop (one message
// per destination, not one per incoming message), and may exceed q by those
// messages and by any outbox it filled meanwhile.
//
// Threads.  With progress_thread set, a background thread makes progress every
// progress_interval; all entry points then serialise on one mutex (MPI needs at
// least MPI_THREAD_SERIALIZED).  Without it, nothing locks.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>
#include <atomic>

#include <mpi.h>

#include "mpidict/error.hpp"
#include "mpidict/runtime/statistics.hpp"
#include "mpidict/runtime/stuck_wait.hpp"
#include "mpidict/runtime/transport.hpp"

namespace mpidict::runtime {

// How records travel.  direct: one outbox per destination, p of them.  grid:
// the ranks form a grid of ceil(sqrt(p)) columns; a record for a rank that
// shares neither row nor column with the sender goes first to the rank in the
// sender's row and the destination's column, which forwards it down that
// column (from the last, shorter row, where that corner may be missing: to the
// rank of the destination's column in the row above), so a rank keeps outboxes
// for its row and column only (plus, in the last row, the ranks above its
// gap): O(sqrt(p)) buffers and messages.  automatic: grid from
// automatic_grid_ranks ranks on.  The environment variable MPIDICT_ROUTING
// (direct, grid, automatic) overrides an automatic setting.
enum class routing_mode : std::uint8_t { automatic, direct, grid };
inline constexpr int automatic_grid_ranks = 128;

struct config {
    std::size_t buffer_bytes = 64 * 1024;  // B: largest message; also bounds one record
    // T: what a rank's outboxes may hold together (0: no limit).  With more than
    // T/B peers each outbox leaves once it holds T/peers bytes (at least 4 KiB,
    // at most B), so that records start travelling, and their receivers start
    // handling them, while the sender is still producing; otherwise each
    // buffer leaves when it is full (B) or at flush.
    std::size_t total_outbox_bytes = 1024 * 1024;
    std::size_t blocking_factor = 4096;    // L: outstanding requests per rank
    std::size_t release_queue = 8;         // q: sent buffers awaiting release (0: wait for each send;
                                           // else at least half the peers)
    std::size_t receive_buffers = 8;       // pre-posted receives
    bool progress_thread = false;
    std::chrono::microseconds progress_interval{100};
    routing_mode routing = routing_mode::automatic;
    // Stuck-wait message (stuck_wait.hpp, docs/runtime.md "Stuck waits"): a rank
    // that waits this many seconds with no message from the ranks it waits for
    // says so once on stderr and keeps waiting.  Below 0: the environment
    // variable MPIDICT_STUCK_WAIT_SECONDS, else 10.  0: off.
    double stuck_wait_seconds = -1;
};

// Parses "direct", "grid" or "automatic" (MPIDICT_ROUTING, command-line flags);
// throws invalid_argument_error naming the text otherwise.
routing_mode parse_routing(std::string_view text);
std::string_view routing_name(routing_mode mode);

using handler_id = std::uint16_t;

// A handler receives one group: `count` records of `record_bytes` each, sent by
// `source`.  It may send records (replies or new operations) but must not wait.
using handler_function = void (*)(void* context, int source, const std::byte* records,
                                  std::uint32_t record_bytes, std::uint32_t count);

inline constexpr std::size_t group_header_bytes = 12;
// What routing adds to a record at most: its final destination on the first
// hop, or the group's origin on the second.  Containers that size buffers for
// their largest record add it (routing may be chosen automatically).
inline constexpr std::size_t routing_overhead_bytes = 4;
inline constexpr std::size_t reply_header_bytes = 8;  // {u32 slot, u32 count}

#if MPIDICT_SMPI
// Simulation only (SimGrid SMPI builds; docs/scaling.md, "Time model"): the
// simulated time every engine of this process charges for each record it puts
// into a message (when the message leaves, so a forwarded record pays again at
// its corner) and for each record it hands to a handler, and for each message
// it sends to or receives from another rank.  0, the default, charges nothing:
// computation then takes no simulated time unless SMPI measures it
// (smpi/simulate-computation).
void set_simulated_costs(double seconds_per_record, double seconds_per_message);
#endif

class engine;

// Collective-scope guard: locks the engine when a progress thread runs.
// Without one the engine serves one thread at a time, and the guard notices a
// second thread entering while another is inside (error, instead of corrupting
// the engine).  That check is cheap and best effort: it catches overlapping
// entries, not every possible interleaving.
class engine_lock {
public:
    // Inline (on the path of every operation): without a progress thread, a
    // thread-local address and two relaxed atomics.
    [[gnu::always_inline]] explicit engine_lock(engine& owner);
    [[gnu::always_inline]] ~engine_lock();
    engine_lock(const engine_lock&) = delete;
    engine_lock& operator=(const engine_lock&) = delete;

private:
    std::recursive_mutex* m_mutex;
    engine* m_owner;
};

class engine {
public:
    // Collective.  Builds an engine over a duplicate of `communicator`.
    explicit engine(MPI_Comm communicator, config settings = {});
    // Collective.  Builds an engine over any transport (simulation, tests).
    explicit engine(std::unique_ptr<transport> network, config settings = {});
    // Not collective: destroy() first.  Destroying a live engine abandons its
    // operations without waiting for other ranks (safe while unwinding).
    ~engine();

    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    int rank() const { return m_rank; }
    int size() const { return m_size; }
    const config& settings() const { return m_config; }
    bool destroyed() const { return m_destroyed; }
    // The MPI communicator messages travel on, MPI_COMM_NULL over a simulated
    // transport.  For collective file I/O (checkpoints); never send on it.
    MPI_Comm mpi_communicator() const { return m_transport ? m_transport->mpi_communicator() : MPI_COMM_NULL; }
    // Alive as long as the engine object is: a request holds a weak reference,
    // so one that outlives its container says so instead of reading freed memory.
    std::weak_ptr<const bool> lifetime() const { return m_lifetime; }

    // Largest record payload a single message can carry.
    std::size_t max_record_bytes() const {
        return m_config.buffer_bytes - group_header_bytes - (m_routed ? routing_overhead_bytes : 0);
    }
    // The routing in effect (never automatic) and the ranks this rank keeps
    // outboxes for (p under direct routing, its row and column under grid).
    routing_mode routing() const { return m_routed ? routing_mode::grid : routing_mode::direct; }
    std::size_t peer_count() const { return m_peer_count; }
    // Where an outbox leaves without a flush or a wait: B, or less when the
    // peers' outboxes would together pass config::total_outbox_bytes.
    std::size_t outbox_fill_bytes() const { return m_fill_bytes; }

    // Local.  Adds a handler; every rank must register the same names in the same
    // order, which verify_handlers() checks.
    handler_id register_handler(std::string_view name, handler_function function, void* context);
    // Collective.  Throws collective_mismatch_error on every rank if the ranks'
    // handler lists differ.
    void verify_handlers();
    // The same round also checks that every rank passes the same `values` (the
    // container's settings that must agree, e.g. placement and type sizes);
    // `what` names them in the error.  One yielding reduction for all of it.
    void verify_handlers(std::span<const std::int64_t> values, std::string_view what);

    // Appends a record of `bytes` for `handler` at `destination` and returns where
    // to write it; the pointer is valid until the next engine call.  Throws
    // invalid_argument_error if the record cannot fit in one message.
    std::byte* reserve(int destination, handler_id handler, std::size_t bytes) {
        MPIDICT_ASSERT(destination >= 0 && destination < m_size, "destination rank out of range");
        // The common case inline: one more record of the group open at the end
        // of `destination`'s outbox.  A plain group sits only in the outbox of a
        // rank this one sends to directly, its record size passed the size
        // check when it opened, and an open group means the outbox is already
        // listed as dirty (and, when a handler runs, as holding its output if
        // holds_handler_output is set); anything else takes reserve_record.
        outbox& box = m_outboxes[static_cast<std::size_t>(destination)];
        if (box.continues(group_kind::plain, handler, bytes, 0) && box.buffer.size + bytes <= m_fill_bytes &&
            (m_handler_depth == 0 || box.holds_handler_output)) [[likely]] {
            std::byte* record = box.buffer.data.get() + box.buffer.size;
            box.buffer.size += bytes;
            add_to_group(box, 1);
            return record;
        }
        return reserve_record(destination, handler, bytes);
    }
    // Appends up to `wanted` (>= 1) consecutive records of `bytes` each for
    // `handler` at `destination`, as many as fit in its outbox (at least one,
    // shipping a full buffer first if need be), and returns where the first
    // goes; *granted says how many, `bytes` apart.  One call for a run of
    // fixed-size records instead of one reserve() each (hash_map's find_many
    // answers).  Under grid routing a record for a rank this one does not send
    // to directly travels alone: granted is 1.  Same validity and size check
    // as reserve().
    std::byte* reserve_many(int destination, handler_id handler, std::size_t bytes, std::uint32_t wanted,
                            std::uint32_t& granted);
    // Changes whenever `destination`'s outbox is shipped: a pointer reserve()
    // returned may be written again (e.g. to combine a later update into a
    // record still waiting) while the generation is the one read after the
    // reserve.  Every other engine call may ship, so read it again each time.
    std::uint64_t outbox_generation(int destination) const {
        return m_outboxes[static_cast<std::size_t>(next_hop(destination))].generation;
    }

    // Local.  Names an operation kind of the owning container for the statistics
    // and returns its id: 0, 1, ... in registration order (a container mirrors
    // that order in an enum of its own).  Kinds cost nothing on the wire.
    op_kind register_op_kind(std::string_view name);
    std::string_view op_kind_name(op_kind kind) const { return m_stats.kind_names.at(kind); }

    // Requests.  open_request waits while L requests are outstanding and returns
    // a slot to carry in the operation's record; the owner answers with
    // reserve_reply, and the caller reads the result once request_done.
    std::uint32_t open_request(op_kind kind);
    std::uint32_t request_generation(std::uint32_t slot) const { return m_requests[slot].generation; }
    std::byte* reserve_reply(int destination, std::uint32_t slot, std::uint32_t count,
                             std::size_t result_bytes);
    // The owner could not perform the operation (e.g. its answer does not fit in
    // one message): the caller's request completes as failed with `message`.
    void reply_error(int destination, std::uint32_t slot, std::string_view message);
    // Completes request `slot` as its reply would (a container that routes its
    // answers through its own handler, e.g. to read piggybacked state first).
    void complete_request(int source, std::uint32_t slot, std::uint32_t count, std::span<const std::byte> result);
    bool request_failed(std::uint32_t slot) const { return m_requests[slot].failed; }
    static constexpr std::uint32_t error_count = 0xffffffffu;
    bool test_request(std::uint32_t slot);
    void wait_request(std::uint32_t slot);
    std::uint32_t request_count(std::uint32_t slot) const { return m_requests[slot].count; }
    std::span<const std::byte> request_result(std::uint32_t slot) const { return m_requests[slot].result; }
    // Frees a completed slot, or marks a pending one so its reply frees it.
    void close_request(std::uint32_t slot);
    // Frees a pending slot whose operation was never sent (encoding failed).
    void cancel_request(std::uint32_t slot);
    // Starts the progress thread if the config asks for one; containers call it
    // at the end of their collective construction.
    void start_progress_thread();
    std::size_t outstanding_requests() const { return m_outstanding; }

    // Local.  Ships outboxes that hold records, handles arrived messages, releases
    // finished sends.  Returns true if anything happened.
    bool progress();
    // Local.  Ships every non-empty outbox now.
    void ship_all();
    // Local.  Handles now what this rank sent itself and has not handled yet
    // (its loopback outbox and queue), so that reading its own shard in place
    // sees this rank's earlier operations on its own keys (hash_map's
    // find_many looks up the keys this rank owns without a message).  Never
    // from a handler.
    void deliver_loopback();
    // Local.  Ships what waits and makes progress until done() holds.  Never
    // from a handler.
    template <class Predicate>
    void wait_until(Predicate&& done) {
        if (in_handler())
            throw error("mpidict: a visitor or handler must not wait (it would block the rank's progress)");
        ++m_stats.waits;
        const stuck_wait_detector::scope watched(m_stuck, wait_kind::batch, "");
        ship_all();
        unsigned idle_rounds = 0;
        while (!done()) {
            backoff(serve_round(), idle_rounds);
        }
    }
    // Seconds spent sending full buffers from inside reserve() (the slow path of
    // starting an operation); statistics attribute it to the starting call.
    double ship_seconds() const { return m_ship_seconds; }
    // Collectives and their tags.  Every flush() and sum() reduces, along with its
    // own numbers, a tag made of the call's kind (flush, or the `what` a sum
    // names) and this rank's count of such calls, in a reduction of the same
    // length; when the ranks' tags differ (one rank in global_size() while the
    // others flush, or one flush too many), every rank throws
    // collective_mismatch_error instead of returning another call's numbers.
    //
    // Collective.  Returns when every operation started anywhere before it has
    // been applied and answered.
    void flush();
    // Collective, after the container's own flush().  produce(send) calls
    // send(record) for each record this rank contributes; each goes to `root`
    // (or to every rank, root == all_ranks) through this engine's messages, so
    // it works over every transport.  Then flush(); returns what arrived here,
    // ordered by source rank, each source's records in the order it sent them.
    // A record must fit in one message (max_record_bytes()).  The containers'
    // gather, gather_topk and reduce are built on it (detail/collectives.hpp).
    struct exchanged {
        struct record {
            int source;
            std::size_t offset;
            std::size_t size;
        };
        std::vector<std::byte> data;
        std::vector<record> records;
        std::span<const std::byte> bytes(const record& r) const { return {data.data() + r.offset, r.size}; }
    };
    static constexpr int all_ranks = -1;
    using exchange_sink = std::function<void(std::span<const std::byte>)>;
    exchanged exchange(int root, const std::function<void(const exchange_sink&)>& produce);
    // Collective.  flush(), then stop; later calls throw use_after_destroy_error.
    void destroy();

    // Called from MPI_Finalize (an attribute on MPI_COMM_SELF, set when the
    // first engine over MPI is built) for every engine still alive: says so on
    // stderr, drops what is pending with local MPI calls and marks the engine
    // destroyed, so that its container's destructor, which runs after
    // MPI_Finalize, makes no MPI call.
    void abandon_at_finalize();
    // Local.  Drops what is pending with local MPI calls only, without waiting
    // for other ranks, and marks the engine destroyed, so its container's
    // destructor makes no collective call; says `why` on stderr.  For owners that
    // cannot be collective at their end (a Python object collected without
    // destroy()).  Other ranks must not wait for this one in this container.
    void abandon(std::string_view why);

    // Collective.  Element-wise min/max across ranks (for consistency checks).
    void min_max(std::span<const std::int64_t> input, std::span<std::int64_t> minimum,
                 std::span<std::int64_t> maximum);
    // Collective.  Element-wise sum across ranks; serves other ranks while it
    // waits.  `what` names the call in the tag (e.g. "global_size").
    void sum(std::span<const std::int64_t> input, std::span<std::int64_t> output, std::string_view what = "sum");
    // Collective.  One count summed over all ranks (a global size, refusals).
    std::uint64_t sum(std::uint64_t count, std::string_view what) {
        const auto mine = static_cast<std::int64_t>(count);
        std::int64_t total = 0;
        sum(std::span<const std::int64_t>(&mine, 1), std::span<std::int64_t>(&total, 1), what);
        return static_cast<std::uint64_t>(total);
    }
    // Collective.  Throws collective_mismatch_error naming `what` unless every rank
    // passed the same value.  With `serve`, it handles other ranks' messages while
    // it waits; without, it is a set-up collective that handles nothing (so no
    // handler runs before the caller's registration is complete).
    void check_same(std::int64_t value, std::string_view what, bool serve = true);

    statistics& stats() { return m_stats; }
    const statistics& stats() const { return m_stats; }
    // The stuck-wait detector (its threshold, the reports it printed; tests).
    const stuck_wait_detector& stuck_waits() const { return m_stuck; }
    void reset_statistics();

    // True while a handler runs on this thread (sends then never block).
    bool in_handler() const { return m_handler_depth > 0; }

    std::recursive_mutex* mutex() { return m_config.progress_thread ? &m_mutex : nullptr; }
    void check_alive(const char* operation) const {
        if (m_destroyed) [[unlikely]]
            throw_destroyed(operation);
    }
    void check_alive(op_kind kind) const {
        if (m_destroyed) [[unlikely]]
            throw_destroyed(op_kind_name(kind).data());
    }

    // Test-only: lose the last message of every flush round (proves the
    // termination detection notices).  Never set outside tests.
    void set_fault_drop_flush_message(bool enabled) { m_fault_drop_flush_message = enabled; }

private:
    // A send buffer of exactly buffer_bytes; `size` bytes of it are used.
    struct message_buffer {
        std::unique_ptr<std::byte[]> data;
        std::size_t size = 0;
        bool empty() const { return size == 0; }
        std::span<const std::byte> bytes() const { return {data.get(), size}; }
    };
    struct handler_entry {
        std::string name;
        handler_function function;
        void* context;
    };
    // A group's kind, in the low bits of its header's flags (bytes 2-3).
    // plain: records for this rank from the sender.  routed (first hop): each
    // record is preceded by its final destination (u32); the receiver forwards
    // it.  forwarded (second hop): the header carries the records' origin (u32)
    // after the count; the receiver handles them as the origin's.
    enum class group_kind : std::uint16_t { plain = 0, routed = 1, forwarded = 2 };
    static constexpr std::uint16_t group_kind_mask = 0x3;
#if MPIDICT_SMPI
    // Records in a message this rank built (unchecked; for the simulated cost).
    static std::uint64_t records_in(std::span<const std::byte> message);
#endif
    // On a message's first group only: the sender shipped it before it was full
    // because someone waits (not for a flush, where every rank ships what it
    // gathered each round); what the receiver forwards from it leaves as soon
    // as the message is handled instead of waiting to fill a buffer.
    static constexpr std::uint16_t urgent_flag = 0x8000;
    // On every message's first group: the sender's flush round modulo 4 (bits
    // 12-13 of the flags; see flush()).
    static constexpr unsigned epoch_shift = 12;
    static constexpr unsigned epoch_mask = 0x3;
    static constexpr std::uint16_t epoch_flags = epoch_mask << epoch_shift;
    struct outbox {
        message_buffer buffer;
        std::size_t group_offset = 0;  // start of the open group, if any
        bool has_group = false;
        group_kind kind = group_kind::plain;
        handler_id group_handler = 0;
        std::uint32_t group_record_bytes = 0;
        std::uint32_t group_label = 0;      // a forwarded group's origin
        bool holds_handler_output = false;  // listed in m_handler_dirty
        bool holds_forwards = false;        // forwarded records gathering (counted in m_forwards_waiting)
        std::uint64_t generation = 0;       // shipments so far (outbox_generation)
        // Whether a record of this kind, handler and size (and, forwarded, origin)
        // extends the open group instead of opening one.
        bool continues(group_kind record_kind, handler_id handler, std::size_t bytes, std::uint32_t label) const {
            return has_group && kind == record_kind && group_handler == handler && group_record_bytes == bytes &&
                   (record_kind != group_kind::forwarded || group_label == label);
        }
    };
    struct in_flight_send {
        std::uint64_t ticket;
        message_buffer buffer;
        int destination;
        int channel;
    };
    enum class slot_state : std::uint8_t { free, pending, done, abandoned };
    struct request_slot {
        std::uint32_t generation = 0;
        slot_state state = slot_state::free;
        op_kind kind = 0;
        bool failed = false;
        std::uint32_t count = 0;
        std::vector<std::byte> result;
    };
    class sink;
    friend class sink;
    friend class engine_lock;

    void initialise();
    void choose_routing();
    // The fill mark for `peers` outboxes under `settings` (config::total_outbox_bytes).
    static std::size_t fill_mark(const config& settings, std::size_t peers);
    std::byte* reserve_record(int destination, handler_id handler, std::size_t bytes);
    // Counts `records` more in the record count of `box`'s open group (bytes 8-11
    // of its header).
    static void add_to_group(outbox& box, std::uint32_t records) {
        std::byte* count_field = box.buffer.data.get() + box.group_offset + 8;
        std::uint32_t count;
        std::memcpy(&count, count_field, sizeof count);
        count += records;
        std::memcpy(count_field, &count, sizeof count);
    }
    int next_hop(int destination) const {
        return m_routed ? m_next_hop[static_cast<std::size_t>(destination)] : destination;
    }
    // Appends records of `bytes` each to the outbox for `to` and returns where
    // they go: one, or up to `wanted` consecutive ones of one group (how many
    // in *granted; at least one, shipping a full buffer first if need be).
    // `label`: the final destination (routed, one record at a time) or the
    // origin (forwarded).  `deferred`: gathering forwarded records, not
    // shipped with handler output.
    std::byte* append(int to, group_kind kind, std::uint32_t label, handler_id handler, std::size_t bytes,
                      bool deferred, std::uint32_t wanted = 1, std::uint32_t* granted = nullptr);
    void forward_group(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count,
                       handler_id handler, bool urgent);
    void ship_forwards();
    void ship_handler_output();
    // flush's shipping: everything, except forwarded records while `active`.
    void ship_settling(bool active);
    // One round of a waiting loop: progress, then ship what handlers queued
    // (settling: as flush does, see ship_settling).  True if anything happened.
    bool serve_round(bool settling = false);
    // Ships the non-empty outboxes that do (or do not) hold gathered forwards.
    void ship_outboxes(bool holding_forwards);
    // Ships each outbox dirty when called for which wanted(destination) holds,
    // serving after each if `serve`.
    template <class Wanted>
    void ship_dirty_if(Wanted&& wanted, bool serve);
    void drop_everything();  // the local teardown of abandon() and abandon_at_finalize()
    void ship(int destination, bool full = false);
    void wait_for_queue_space();
    bool release_finished_sends();
    bool drain_loopback();
    void backoff(bool active, unsigned& idle_rounds);
    bool poll_once();
    void handle_message(int source, int channel, std::span<const std::byte> message);
    void update_high_water();
    message_buffer take_buffer();
    void recycle(message_buffer&& buffer);
    [[noreturn]] void throw_destroyed(const char* operation) const;
    static void handle_reply(void* context, int source, const std::byte* records,
                             std::uint32_t record_bytes, std::uint32_t count);
    static void handle_exchange(void* context, int source, const std::byte* records,
                                std::uint32_t record_bytes, std::uint32_t count);
    void keep_exchanged(int source, std::span<const std::byte> record);
    void progress_thread_main();
    void stop_progress_thread();

    std::unique_ptr<transport> m_transport;
    config m_config;
    int m_rank = 0;
    int m_size = 1;
    bool m_destroyed = false;
    std::vector<handler_entry> m_handlers;
    handler_id m_exchange_handler = 0;
    exchanged m_exchanged;  // what an exchange brought here; emptied only when one returns
    std::vector<outbox> m_outboxes;
    bool m_routed = false;
    std::size_t m_peer_count = 0;
    std::vector<int> m_next_hop;            // grid routing: the rank a record for each destination goes to first
    std::vector<std::uint8_t> m_relay_channel;  // grid routing: 1 for the peers this rank sends on the relay channel
    std::size_t m_direct_in_flight = 0;     // sends on channel 0 awaiting release
    // forward_group's scratch: per-destination counts (zero between calls), the
    // destinations of one group, its records' order by destination, and the
    // records for this rank itself made contiguous.
    std::vector<std::uint32_t> m_forward_counts;
    std::vector<int> m_forward_destinations;
    std::vector<std::uint32_t> m_forward_order;
    std::vector<std::byte> m_forward_scratch;
    std::size_t m_forwards_waiting = 0;     // outboxes gathering forwarded records
    bool m_polling = false;                 // inside progress()'s polling loop
    bool m_urgent_forwards = false;         // that loop forwarded urgent records: ship after it
    std::vector<int> m_dirty;               // destinations whose outbox holds records
    std::vector<int> m_handler_dirty;       // outboxes handlers wrote to: shipped when the message is done
    std::deque<in_flight_send> m_in_flight;
    std::deque<message_buffer> m_loopback;  // messages to this rank, not via MPI
    std::vector<message_buffer> m_free_buffers;
    std::size_t m_outbox_bytes = 0;          // bytes held by outbox buffers
    std::size_t m_release_queue = 0;         // q in effect: config's, at least peers / 2 (0 stays 0)
    std::size_t m_fill_bytes = 0;            // an outbox leaves when its next record would pass this (<= B)
    std::size_t m_in_flight_bytes = 0;
    std::vector<request_slot> m_requests;
    std::vector<std::uint32_t> m_free_slots;
    std::size_t m_outstanding = 0;
    int m_handler_depth = 0;
    // Termination detection (see flush()): messages sent; messages handled
    // that were sent before their senders' cuts of the coming round, and those
    // sent after (counted from the next round on); flush rounds contributed.
    std::int64_t m_messages_sent = 0;
    std::int64_t m_messages_handled = 0;
    std::int64_t m_handled_next_round = 0;
    std::uint64_t m_epoch = 0;
    bool m_in_flush = false;
    // Tagged collectives (see flush()): this rank's count of them so far.
    std::uint64_t m_collective_sequence = 0;
    static constexpr std::size_t tag_pieces = 4;
    void collective_tag(std::string_view what, std::int64_t (&pieces)[tag_pieces]);
    void check_tag(const std::int64_t (&pieces)[tag_pieces], const std::int64_t* totals, std::string_view what) const;
    // Runs the transport's sum of `input` into `output`, serving others meanwhile.
    void reduce_serving(std::span<const std::int64_t> input, std::span<std::int64_t> output);
    double m_ship_seconds = 0;
    bool m_fault_drop_flush_message = false;
    statistics m_stats;
    stuck_wait_detector m_stuck;  // watches the waiting loops (backoff)
    std::recursive_mutex m_mutex;  // recursive: visitors start operations while progress holds it
    std::thread m_progress_thread;
    std::atomic<bool> m_stop_thread{false};
    std::shared_ptr<const bool> m_lifetime = std::make_shared<const bool>(true);
    // Without a progress thread: the thread inside the engine (none: default id)
    // and how deeply (engine_lock nests).
    // A thread is named by the address of its thread_local marker (cheaper to
    // get than std::this_thread::get_id() on the path of every operation).
    static inline thread_local char t_thread_marker = 0;
    std::atomic<const char*> m_user{nullptr};
    unsigned m_user_depth = 0;
    friend class engine_lock;
    void enter_unlocked() {
        const char* self = &t_thread_marker;
        const char* inside = m_user.load(std::memory_order_relaxed);
        if (inside != nullptr && inside != self) [[unlikely]]
            second_thread_entered();
        m_user.store(self, std::memory_order_relaxed);
        ++m_user_depth;
    }
    void leave_unlocked() {
        if (--m_user_depth == 0)
            m_user.store(nullptr, std::memory_order_relaxed);
    }
    [[noreturn]] static void second_thread_entered();
};

inline engine_lock::engine_lock(engine& owner) : m_mutex(owner.mutex()), m_owner(&owner) {
    if (m_mutex) [[unlikely]]
        m_mutex->lock();
    else
        owner.enter_unlocked();
}
inline engine_lock::~engine_lock() {
    if (m_mutex) [[unlikely]]
        m_mutex->unlock();
    else
        m_owner->leave_unlocked();
}

// Wall-clock seconds (monotonic).
double now_seconds();

}  // namespace mpidict::runtime
