// skiplist_map's distributed skip list on one rank: the configuration checks,
// the parts (skiplist_core.hpp lists them) and their handlers, and the flush.
// See skiplist_map.hpp for the design.

#include "mpidict/detail/skiplist_core.hpp"

#include <bit>
#include <chrono>
#include <set>

#include "mpidict/error.hpp"

namespace mpidict {

const char* to_string(skiplist_consistency mode) {
    switch (mode) {
    case skiplist_consistency::total_order:
        return "total_order";
    case skiplist_consistency::sequential:
        return "sequential";
    case skiplist_consistency::none:
        return "none";
    }
    return "unknown";
}

std::optional<skiplist_consistency> skiplist_consistency_named(std::string_view name) {
    for (const skiplist_consistency mode :
         {skiplist_consistency::total_order, skiplist_consistency::sequential, skiplist_consistency::none})
        if (name == to_string(mode))
            return mode;
    return std::nullopt;
}

std::size_t skiplist_map_config::required_buffer_bytes() const {
    // The largest record: a split's allocation request carrying the upper half
    // of a full node (G / 2 + 1 entries), its separator and its tower.
    using wire = detail::skiplist_wire;
    const std::size_t entry = max_key_bytes + max_value_bytes + 4 + 4 + sizeof(detail::expiry_time);
    const std::size_t link = 1 + wire::node_id_bytes + 4 + max_key_bytes;
    const std::size_t alloc = detail::wire_bytes<wire::alloc_header> + 4 + max_key_bytes +
                              detail::wire_bytes<wire::alloc_shape> + std::size_t(max_height) * link + 4 +
                              (granularity / 2 + 1) * entry;
    return runtime::group_header_bytes + runtime::routing_overhead_bytes + alloc;
}

namespace detail {

std::string describe(const skiplist_node_id& id) {
    return "(rank " + std::to_string(id.rank) + ", slot " + std::to_string(id.slot) + ", generation " +
           std::to_string(id.generation) + ")";
}

skiplist_shared::skiplist_shared(std::unique_ptr<runtime::engine> owned, const skiplist_map_config& settings)
    : engine(std::move(owned)), config(settings) {
    const int ranks = engine->size();
    if (!settings.server_ranks) {
        for (int r = 0; r < ranks; ++r)
            servers.push_back(r);
    } else {
        if (settings.server_ranks->empty())
            throw invalid_argument_error("mpidict: skiplist_map configuration has no server rank (server_ranks is empty)");
        std::set<int> seen;
        for (int r : *settings.server_ranks) {
            if (r < 0 || r >= ranks)
                throw invalid_argument_error("mpidict: skiplist_map server_ranks names rank " + std::to_string(r) +
                                             ", outside " + detail::communicator_of(ranks));
            if (!seen.insert(r).second)
                throw invalid_argument_error("mpidict: skiplist_map server_ranks lists rank " + std::to_string(r) +
                                             " twice");
        }
        servers = *settings.server_ranks;
    }
    if (settings.initial_servers > servers.size())
        throw invalid_argument_error("mpidict: skiplist_map initial_servers = " +
                                     std::to_string(settings.initial_servers) + " exceeds the " +
                                     std::to_string(servers.size()) + " server ranks (0: all of them)");
    if (settings.initial_servers != 0) {
        dormant.assign(servers.begin() + static_cast<std::ptrdiff_t>(settings.initial_servers), servers.end());
        servers.resize(settings.initial_servers);
    }
    if (!(settings.grow_memory_fraction >= 0 && settings.grow_memory_fraction <= 1) ||
        !(settings.rebalance_threshold == 0 || settings.rebalance_threshold >= 1))
        throw invalid_argument_error("mpidict: skiplist_map grow_memory_fraction = " +
                                     std::to_string(settings.grow_memory_fraction) + " must be in [0, 1] and " +
                                     "rebalance_threshold = " + std::to_string(settings.rebalance_threshold) +
                                     " 0 (off) or at least 1 (max/mean)");
    if (!(settings.online_rebalance == 0 || settings.online_rebalance >= 1) ||
        !(settings.online_rebalance_seconds > 0 && settings.online_rebalance_seconds < 1e6))
        throw invalid_argument_error("mpidict: skiplist_map online_rebalance = " +
                                     std::to_string(settings.online_rebalance) + " must be 0 (off) or at least 1, and " +
                                     "online_rebalance_seconds = " + std::to_string(settings.online_rebalance_seconds) +
                                     " positive");
    if (settings.granularity < 1 || settings.granularity > (1u << 20))
        throw invalid_argument_error("mpidict: skiplist_map granularity G = " + std::to_string(settings.granularity) +
                                     " must be between 1 and 1048576");
    if (settings.max_height < 1 || settings.max_height > 32)
        throw invalid_argument_error("mpidict: skiplist_map max_height = " + std::to_string(settings.max_height) +
                                     " must be between 1 and 32");
    if (!(settings.tower_probability > 0 && settings.tower_probability < 1))
        throw invalid_argument_error("mpidict: skiplist_map tower_probability = " +
                                     std::to_string(settings.tower_probability) + " must be in (0, 1)");
    if (settings.node_slots_per_rank > (std::size_t(1) << 31))
        throw invalid_argument_error("mpidict: skiplist_map node_slots_per_rank = " +
                                     std::to_string(settings.node_slots_per_rank) +
                                     " must be at most 2^31 (0: no hard limit)");
    if (settings.memory_limit_per_rank != 0 && settings.memory_limit_per_rank < (std::size_t(1) << 20))
        throw invalid_argument_error("mpidict: skiplist_map memory_limit_per_rank = " +
                                     std::to_string(settings.memory_limit_per_rank) +
                                     " bytes is below 1 MiB (0: automatic, no_memory_limit: none)");
    if (settings.max_key_bytes < 1 || settings.max_key_bytes > (1u << 20) || settings.max_value_bytes > (1u << 30))
        throw invalid_argument_error("mpidict: skiplist_map max_key_bytes must be in [1, 2^20] and max_value_bytes at "
                                     "most 2^30");
    if (settings.required_buffer_bytes() > engine->settings().buffer_bytes)
        throw invalid_argument_error(
            "mpidict: skiplist_map needs runtime.buffer_bytes >= " + std::to_string(settings.required_buffer_bytes()) +
            " (half a node of G = " + std::to_string(settings.granularity) + " entries of up to " +
            std::to_string(settings.max_key_bytes) + " + " + std::to_string(settings.max_value_bytes) +
            " bytes must fit one message), but it is " + std::to_string(engine->settings().buffer_bytes) +
            "; lower G or max_value_bytes, or raise buffer_bytes");
    if (static_cast<unsigned>(settings.consistency) > static_cast<unsigned>(skiplist_consistency::none))
        throw invalid_argument_error("mpidict: skiplist_map consistency " +
                                     std::to_string(static_cast<unsigned>(settings.consistency)) +
                                     " is not one of total_order, sequential, none");
    const auto me = std::find(servers.begin(), servers.end(), rank());
    if (me != servers.end())
        server_index = static_cast<int>(me - servers.begin());
    head = skiplist_node_id{servers.front(), 0, 1};
    resolve_memory_limit(*this);
}

expiry_time skiplist_shared::clock_now() const {
    const auto now = config.expiry_clock ? config.expiry_clock() : std::chrono::system_clock::now();
    return std::chrono::duration<double>(now.time_since_epoch()).count();
}

skiplist_core::skiplist_core(std::unique_ptr<runtime::engine> engine, const skiplist_map_config& settings)
    : m_shared(std::move(engine), settings),
      m_directory(settings.route_cache_entries, m_shared.head),
      m_caller(m_shared, m_directory),
      m_nodes(m_shared, m_directory),
      m_structure(m_shared, m_nodes, m_directory),
      m_ranges(m_shared, m_nodes),
      m_snapshots(m_shared),
      m_rebalancer(m_shared, m_nodes, m_structure, m_directory) {
    m_nodes.connect(&m_structure, &m_ranges);
    // The order is the wire's (the fuzz seeds name handlers by position).
    auto& h = m_shared.handlers;
    h.point = m_shared.add_handler<&skiplist_nodes::handle_point>("skiplist.point", &m_nodes);
    h.range = m_shared.add_handler<&skiplist_range_nodes::handle_range>("skiplist.range", &m_ranges);
    h.range_part = m_shared.add_handler<&skiplist_caller::handle_range_part>("skiplist.range_part", &m_caller);
    h.range_split = m_shared.add_handler<&skiplist_range_nodes::handle_range_split>("skiplist.range_split", &m_ranges);
    h.range_piece = m_shared.add_handler<&skiplist_caller::handle_range_piece>("skiplist.range_piece", &m_caller);
    h.alloc = m_shared.add_handler<&skiplist_structure::handle_alloc>("skiplist.alloc", &m_structure);
    h.alloc_reply = m_shared.add_handler<&skiplist_structure::handle_alloc_reply>("skiplist.alloc_reply", &m_structure);
    h.link_up = m_shared.add_handler<&skiplist_structure::handle_link_up>("skiplist.link_up", &m_structure);
    h.set_links = m_shared.add_handler<&skiplist_structure::handle_set_links>("skiplist.set_links", &m_structure);
    h.expect = m_shared.add_handler<&skiplist_structure::handle_expect>("skiplist.expect", &m_structure);
    h.marker = m_shared.add_handler<&skiplist_structure::handle_marker>("skiplist.marker", &m_structure);
    h.clear = m_shared.add_handler<&skiplist_structure::handle_clear>("skiplist.clear", &m_structure);
    h.point_reply = m_shared.add_handler<&skiplist_caller::handle_point_reply>("skiplist.point_reply", &m_caller);
    h.unlinked = m_shared.add_handler<&skiplist_structure::handle_unlinked>("skiplist.unlinked", &m_structure);
    h.find_direct = m_shared.add_handler<&skiplist_nodes::handle_find_direct>("skiplist.find_direct", &m_nodes);
    h.found_direct = m_shared.add_handler<&skiplist_caller::handle_found_direct>("skiplist.found_direct", &m_caller);
    h.insert_direct = m_shared.add_handler<&skiplist_nodes::handle_insert_direct>("skiplist.insert_direct", &m_nodes);
    h.bulk_reserve = m_shared.add_handler<&skiplist_structure::handle_bulk_reserve>("skiplist.bulk_reserve", &m_structure);
    h.bulk_reserved =
        m_shared.add_handler<&skiplist_structure::handle_bulk_reserved>("skiplist.bulk_reserved", &m_structure);
    h.bulk_fill = m_shared.add_handler<&skiplist_structure::handle_bulk_fill>("skiplist.bulk_fill", &m_structure);
    h.find_split = m_shared.add_handler<&skiplist_range_nodes::handle_find_split>("skiplist.find_split", &m_ranges);
    h.found_split = m_shared.add_handler<&skiplist_caller::handle_found_split>("skiplist.found_split", &m_caller);
    h.snapshot_fill =
        m_shared.add_handler<&skiplist_snapshots::handle_fill>("skiplist.snapshot_fill", &m_snapshots);
    h.snapshot_read =
        m_shared.add_handler<&skiplist_snapshots::handle_read>("skiplist.snapshot_read", &m_snapshots);
    // Appended (issue 44): the earlier handlers keep their numbers.
    h.migrate = m_shared.add_handler<&skiplist_rebalancer::handle_migrate>("skiplist.migrate", &m_rebalancer);
    h.migrated = m_shared.add_handler<&skiplist_rebalancer::handle_migrated>("skiplist.migrated", &m_rebalancer);
    h.migrate_refused =
        m_shared.add_handler<&skiplist_rebalancer::handle_migrate_refused>("skiplist.migrate_refused", &m_rebalancer);
    h.move_reserve =
        m_shared.add_handler<&skiplist_rebalancer::handle_move_reserve>("skiplist.move_reserve", &m_rebalancer);
    h.move_reserved =
        m_shared.add_handler<&skiplist_rebalancer::handle_move_reserved>("skiplist.move_reserved", &m_rebalancer);
    h.load = m_shared.add_handler<&skiplist_rebalancer::handle_load>("skiplist.load", &m_rebalancer);
    // Appended (issue 42, stop 67: direct ranges batched per rank).
    h.range_batch = m_shared.add_handler<&skiplist_range_nodes::handle_range_batch>("skiplist.range_batch", &m_ranges);
    h.range_pieces = m_shared.add_handler<&skiplist_caller::handle_range_pieces>("skiplist.range_pieces", &m_caller);
    auto& engine_ref = *m_shared.engine;
    engine_ref.verify_handlers();
    // Every rank must agree on the tunables that shape the list.
    engine_ref.check_same(static_cast<std::int64_t>(settings.granularity), "skiplist_map granularity", false);
    engine_ref.check_same(static_cast<std::int64_t>(settings.max_height), "skiplist_map max_height", false);
    engine_ref.check_same(static_cast<std::int64_t>(m_shared.servers.size() + m_shared.dormant.size()) * 1000003 +
                              m_shared.servers.front() + static_cast<std::int64_t>(m_shared.servers.size()) * 7919,
                          "skiplist_map server_ranks and initial_servers", false);
    engine_ref.check_same(static_cast<std::int64_t>(settings.grow_entries) ^
                              static_cast<std::int64_t>(settings.rebalance_threshold * 1000),
                          "skiplist_map grow_entries and rebalance_threshold", false);
    // (Every rank must know whether load records come: online_rebalance on or off everywhere.)
    engine_ref.check_same(settings.online_rebalance > 0 ? 1 : 0, "skiplist_map online_rebalance (on or off)", false);

    if (rank() == m_shared.servers.front()) {
        const skiplist_node_id head = m_nodes.allocate_local("", settings.max_height);
        MPIDICT_ASSERT(head == m_shared.head, "the head node must take slot 0");
        for (auto& level : m_nodes.all()[head.slot].tower)
            level.set = true;  // every level of the head exists: it ends the empty list
    }
    engine_ref.start_progress_thread();
}

skiplist_core::~skiplist_core() = default;

void skiplist_core::check_key(std::size_t bytes) const {
    if (bytes > config().max_key_bytes)
        throw invalid_argument_error("mpidict: skiplist_map key of " + std::to_string(bytes) +
                                     " encoded bytes exceeds max_key_bytes = " + std::to_string(config().max_key_bytes));
}

void skiplist_core::check_value(std::size_t bytes) const {
    if (bytes > config().max_value_bytes)
        throw invalid_argument_error("mpidict: skiplist_map value of " + std::to_string(bytes) +
                                     " bytes exceeds max_value_bytes = " + std::to_string(config().max_value_bytes));
}

void skiplist_core::reset_local_statistics() {
    auto& stats = m_shared.stats;
    const auto nodes = stats.nodes;
    const auto entries = stats.entries;
    const auto payload = stats.payload_bytes;
    stats = skiplist_map_local_statistics{};
    stats.nodes = nodes;
    stats.entries = entries;
    stats.payload_bytes = payload;
}

namespace {

// No online policy move starts while a collective call runs (skiplist_shared::window_check).
struct collective_scope {
    explicit collective_scope(skiplist_shared& shared) : owner(shared), outer(shared.in_collective) {
        shared.in_collective = true;
    }
    ~collective_scope() { owner.in_collective = outer; }
    skiplist_shared& owner;
    bool outer;
};

}  // namespace

std::size_t skiplist_core::global_size() {
    // A node moved online is in neither rank's local_size() while its records
    // travel; the flush settles every move, and none starts before the sum.
    // The first reduction carries global_size's tag, so a rank that calls
    // flush() meanwhile is a collective mismatch on every rank (the ranks stay
    // in step) rather than a flush matched by the one below.
    const collective_scope scope(m_shared);
    (void)m_shared.engine->sum(std::uint64_t{0}, "global_size");
    flush();
    return static_cast<std::size_t>(m_shared.engine->sum(local_size(), "global_size"));
}

void skiplist_core::flush() {
    const collective_scope scope(m_shared);
    m_caller.release_async();
    m_structure.close_stock();  // (the stocked empty nodes go back to their ranks)
    m_shared.engine->flush();
    m_structure.open_stock();
    m_nodes.sweep_expired();
    // Nodes moved since the last flush (online moves): every rank heard of
    // each one, so every rank re-points its links now; the unlink's first sum
    // keeps every rank from sending before all have.
    m_rebalancer.settle_online();
    m_structure.unlink_emptied();
    if (m_rebalancer.elastic())
        m_rebalancer.at_flush();
    else
        m_rebalancer.forget_last();
}

skiplist_rebalance_result skiplist_core::rebalance(const skiplist_rebalance_options& options) {
    // Every rank agrees first (a rank alone with bad input would leave the others waiting).
    m_shared.engine->check_same(std::bit_cast<std::int64_t>(options.target) ^ static_cast<std::int64_t>(options.metric),
                                "skiplist_map rebalance's options");
    if (!(options.target >= 1.0))
        throw invalid_argument_error("mpidict: skiplist_map rebalance target " + std::to_string(options.target) +
                                     " must be at least 1 (max/mean)");
    if (options.metric != skiplist_load_metric::entries && options.metric != skiplist_load_metric::requests)
        throw invalid_argument_error("mpidict: skiplist_map rebalance metric " +
                                     std::to_string(static_cast<int>(options.metric)) +
                                     " is neither entries (0) nor requests (1)");
    flush();
    const collective_scope scope(m_shared);
    return m_rebalancer.rebalance(options);
}

skiplist_rebalance_result skiplist_core::drain(int rank) {
    m_shared.engine->check_same(rank, "skiplist_map drain's rank");
    const auto& servers = m_shared.servers;
    if (!m_shared.valid_rank(rank) || std::find(servers.begin(), servers.end(), rank) == servers.end())
        throw invalid_argument_error("mpidict: skiplist_map drain(" + std::to_string(rank) +
                                     "): rank " + std::to_string(rank) + " is not an active server rank (" +
                                     std::to_string(servers.size()) + " active)");
    if (servers.size() == 1)
        throw invalid_argument_error("mpidict: skiplist_map drain(" + std::to_string(rank) +
                                     "): it is the only active server rank; its nodes have nowhere to go");
    flush();
    const collective_scope scope(m_shared);
    return m_rebalancer.drain(rank);
}

}  // namespace detail
}  // namespace mpidict
