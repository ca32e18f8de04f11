#pragma once
// What every part of the skip list on one rank shares (skiplist_core.hpp has the
// map of the parts): the engine, the configuration, the server ranks, the
// head's id, the handler ids, this rank's statistics, and the sending helpers
// of routed records.  No role's state lives here.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "mpidict/detail/skiplist_wire.hpp"
#include "mpidict/runtime/engine.hpp"
#include "mpidict/runtime/member_handler.hpp"
#include "mpidict/skiplist_map_types.hpp"

namespace mpidict::detail {

// expiry: answers hit with the key's deadline (8 bytes, 0: none) or miss;
// set_expiry: sets the key's deadline to the record's `expires` (0: none; one
// already passed removes the key) and answers hit with the old one, or miss.
// reduce: op(current, operand) folded in at the key's node (skiplist_reduce.hpp);
// the operator's number travels in `expires`.
enum class skiplist_op : std::uint8_t {
    find = 0, insert = 1, insert_if_absent = 2, erase = 3, marker = 4, expiry = 5, set_expiry = 6, reduce = 7
};

// Status byte of a point answer.
struct skiplist_status {
    static constexpr std::uint8_t miss = 0, hit = 1, stored = 2, replaced = 3, duplicate = 4, full = 5;
};

struct skiplist_shared {
    using wire = skiplist_wire;
    static constexpr std::uint32_t no_slot = wire::no_slot;
    static constexpr std::uint64_t unlimited = std::numeric_limits<std::uint64_t>::max();
    static constexpr std::uint8_t level_mask = wire::level_mask, route_free = wire::route_free,
                                  route_shortcut = wire::route_shortcut, hops_mask = wire::hops_mask,
                                  route_fell_back = wire::route_fell_back;

    skiplist_shared(std::unique_ptr<runtime::engine> owned, const skiplist_map_config& settings);

    std::unique_ptr<runtime::engine> engine;
    skiplist_map_config config;
    std::vector<int> servers;  // the active server ranks (skiplist_rebalance.hpp changes them at a flush)
    std::vector<int> dormant;  // server ranks not active yet (or drained), next first
    int server_index = -1;  // position of this rank in servers, -1: hosts no nodes
    void set_servers(std::vector<int> active) {
        servers = std::move(active);
        const auto me = std::find(servers.begin(), servers.end(), rank());
        server_index = me == servers.end() ? -1 : static_cast<int>(me - servers.begin());
    }
    skiplist_node_id head{};
    skiplist_map_local_statistics stats{};
    // The online policy (config.online_rebalance): requests this rank's nodes
    // handled in the current window, the hook that closes a window (the
    // rebalancer's), and whether a collective call (flush, rebalance) runs.
    // The hook runs at the end of a handler (window_check), never while one
    // is half done with a node.
    std::uint64_t window_requests = 0;
    std::function<void()> window_hook;
    bool window_due = false;
    bool in_collective = false;
    void count_window(std::size_t requests) {
        if (window_hook && ((window_requests += requests) & 255) < requests)
            window_due = true;
    }
    void window_check() {
        if (window_due && !in_collective) {
            window_due = false;
            window_hook();
        }
    }
    // Capacity (src/skiplist/memory.cpp): memory_limit_per_rank resolved
    // (unlimited: none), why this rank last refused a new slot, and the last
    // list_full message this rank received as a caller.
    std::uint64_t memory_limit = unlimited;
    std::string memory_limit_origin;  // how the automatic limit was computed; empty when configured
    enum class pool_limit : std::uint8_t { none, not_a_server, node_slots, slot_ids, memory } last_limit = pool_limit::none;
    std::uint64_t last_resident = 0;  // the resident bytes seen when the memory limit refused
    std::string last_refusal;
    // Whether this rank's slot pool (of `slots` slots) may take one more; if
    // not, last_limit says which limit stopped it.
    bool pool_may_grow(std::size_t slots);
    // The list_full message: the limits, and which one stopped this rank.
    std::string list_full_message() const;

    struct handler_ids {
        runtime::handler_id migrate = 0, migrated = 0, migrate_refused = 0, move_reserve = 0, move_reserved = 0,
                            load = 0;
        runtime::handler_id point = 0, range = 0, range_part = 0, range_split = 0, range_piece = 0, alloc = 0,
                            alloc_reply = 0, link_up = 0, set_links = 0, expect = 0, marker = 0, clear = 0,
                            point_reply = 0, unlinked = 0, find_direct = 0, found_direct = 0,
                            insert_direct = 0, bulk_reserve = 0, bulk_reserved = 0, bulk_fill = 0,
                            find_split = 0, found_split = 0, snapshot_fill = 0, snapshot_read = 0,
                            range_batch = 0, range_pieces = 0;
    } handlers;

    // Registers `Member` (void (Class::*)(int source, std::string_view record))
    // through the engine's member-function helper (runtime/member_handler.hpp),
    // which walks the group's records.
    template <auto Member, class Class>
    runtime::handler_id add_handler(std::string_view name, Class* object) {
        return runtime::register_handler<Member>(*engine, name, object);
    }

    int rank() const { return engine->rank(); }
    int top_level() const { return static_cast<int>(config.max_height) - 1; }
    // Now, by config.expiry_clock (else the system clock), as an expiry_time.
    expiry_time clock_now() const;
    bool valid_rank(std::int32_t rank) const { return rank >= 0 && rank < engine->size(); }

    void send_record(int destination, runtime::handler_id handler, std::string_view bytes) {
        std::memcpy(engine->reserve(destination, handler, bytes.size()), bytes.data(), bytes.size());
    }
    // A fixed-size record: its header, written in place.
    template <class Record>
    void send(int destination, runtime::handler_id handler, const Record& record) {
        overwrite_record(engine->reserve(destination, handler, wire_bytes<Record>), record);
    }
    // A routed record: the header addressing `to`, then the tail unchanged.
    void forward(runtime::handler_id handler, skiplist_node_id to, std::string_view record_tail, int level,
                 std::uint8_t level_flags = 0, std::uint8_t hops = 0) {
        const std::size_t bytes = wire_bytes<wire::route_header> + record_tail.size();
        byte_writer(engine->reserve(to.rank, handler, bytes), bytes)
            .record(route(to, level, level_flags, hops))
            .put_bytes(record_tail)
            .finish();
    }
    static wire::route_header route(skiplist_node_id to, int level, std::uint8_t level_flags, std::uint8_t hops) {
        return {to.slot, to.generation, static_cast<std::uint8_t>((level & level_mask) | level_flags), hops};
    }
    static std::uint8_t next_hops(std::uint8_t hops) {
        return static_cast<std::uint8_t>((hops & route_fell_back) | std::min<int>(hops_mask, (hops & hops_mask) + 1));
    }
    // A shortcut (a directory entry) led a record to a node that is gone or
    // starts above its key: the record starts again at the head.  The route is
    // not trusted again on this way: no shortcut flag, so a second failure
    // would be a real error.
    void fall_back_to_head(runtime::handler_id handler, std::string_view record_tail, std::uint8_t level_byte,
                           std::uint8_t hops) {
        forward(handler, head, record_tail, top_level(), static_cast<std::uint8_t>(level_byte & route_free),
                next_hops(hops) | route_fell_back);
    }
};

std::string describe(const skiplist_node_id& id);
// Collective (automatic limit: the ranks sharing a node).  Sets
// shared.memory_limit from config.memory_limit_per_rank (src/skiplist/memory.cpp).
void resolve_memory_limit(skiplist_shared& shared);
// This process's resident bytes now (0: unknown; src/skiplist/memory.cpp).
std::uint64_t resident_bytes_now();

}  // namespace mpidict::detail
