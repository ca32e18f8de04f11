// LH*LH: client addressing and images, server address check and forwarding,
// the split token, concurrent bulk splitting.  Design: linear_hash_map.hpp.

#include "mpidict/detail/lh_core.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include "mpidict/detail/wire.hpp"
#include "mpidict/runtime/member_handler.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/local/hash.hpp"

namespace mpidict {

int linear_hash_map_statistics::max_forwards() const {
    int most = 0;
    for (const auto& bins : forwards)
        for (std::size_t hops = 0; hops < lh_hop_bins; ++hops)
            if (bins[hops] != 0)
                most = std::max(most, static_cast<int>(hops));
    return most;
}

std::uint64_t linear_hash_map_statistics::operations(linear_hash_map_op::kind op) const {
    std::uint64_t total = 0;
    for (auto count : forwards[static_cast<std::size_t>(op)])
        total += count;
    return total;
}

namespace detail {
namespace {


// The record layouts are lh_wire's (detail/wire.hpp).  A reply is
// {reply_header} {u8 status} value: the engine request's result is what
// follows the header.
constexpr std::size_t request_header_bytes = wire_bytes<lh_wire::request_header>;
constexpr std::size_t reply_result_offset = wire_bytes<lh_wire::reply_header>;
constexpr std::size_t reply_header_bytes = reply_result_offset + 1;  // with the status
constexpr std::size_t ship_header_bytes = wire_bytes<lh_wire::ship_header>;
constexpr std::size_t ship_entry_header_bytes = wire_bytes<lh_wire::ship_entry>;
// A request forwarded this often is a bug (LH* proves two); it fails instead of looping.
constexpr unsigned forward_limit = 8;

std::uint64_t key_hash(std::string_view key) { return hash_bytes(key.data(), key.size(), 0x4c482a4c48ULL); }

}  // namespace

struct lh_core::request_header {
    linear_hash_map_op::kind op;
    std::uint8_t hops;
    std::uint32_t slot;
    int client;
    std::uint32_t address;
    std::uint32_t first_address;
    std::uint32_t key_bytes;
    std::uint32_t value_bytes;

    static request_header parse(const std::byte* record, std::uint32_t record_bytes, int source) {
        if (record_bytes < request_header_bytes)
            throw decode_error("mpidict: linear_hash_map request of " + std::to_string(record_bytes) +
                               " bytes from rank " + std::to_string(source) + " is shorter than its header");
        const auto wire = read_record<lh_wire::request_header>(record, record_bytes);
        if (wire.op >= lh_op_count)
            throw decode_error("mpidict: linear_hash_map request from rank " + std::to_string(source) +
                               " has unknown operation " + std::to_string(wire.op));
        request_header header;
        header.op = static_cast<linear_hash_map_op::kind>(wire.op);
        header.hops = wire.hops;
        header.slot = wire.slot;
        header.client = static_cast<int>(wire.client);
        header.address = wire.address;
        header.first_address = wire.first_address;
        header.key_bytes = wire.key_bytes;
        header.value_bytes = wire.value_bytes;
        if (std::uint64_t{header.key_bytes} + header.value_bytes + request_header_bytes != record_bytes)
            throw decode_error("mpidict: linear_hash_map request from rank " + std::to_string(source) +
                               " declares " + std::to_string(header.key_bytes) + "+" +
                               std::to_string(header.value_bytes) + " key+value bytes in a record of " +
                               std::to_string(record_bytes));
        return header;
    }
};

lh_core::lh_core(std::unique_ptr<runtime::engine> engine, const linear_hash_map_config& settings)
    : m_engine(std::move(engine)), m_config(settings) {
    const int ranks = m_engine->size();
    // Local checks first: every rank sees the same configuration and throws the
    // same error without waiting for anyone.
    auto check_ranks = [&](const std::optional<std::vector<int>>& given, const char* what) {
        std::vector<int> list;
        if (!given) {
            for (int r = 0; r < ranks; ++r)
                list.push_back(r);
            return list;
        }
        if (given->empty())
            throw invalid_argument_error(std::string("mpidict: linear_hash_map configuration has no ") + what +
                                         " rank (" + what + "_ranks is empty)");
        std::set<int> seen;
        for (int r : *given) {
            if (r < 0 || r >= ranks)
                throw invalid_argument_error(std::string("mpidict: linear_hash_map ") + what + "_ranks names rank " +
                                             std::to_string(r) + ", outside " + detail::communicator_of(ranks));
            if (!seen.insert(r).second)
                throw invalid_argument_error(std::string("mpidict: linear_hash_map ") + what + "_ranks lists rank " +
                                             std::to_string(r) + " twice");
        }
        return *given;
    };
    m_server_ranks = check_ranks(settings.server_ranks, "server");
    const std::vector<int> clients = check_ranks(settings.client_ranks, "client");
    const std::size_t servers = m_server_ranks.size();
    if (settings.initial_servers < 1 || settings.initial_servers > servers)
        throw invalid_argument_error("mpidict: linear_hash_map initial_servers = " +
                                     std::to_string(settings.initial_servers) + " must be between 1 and the " +
                                     std::to_string(servers) + " server ranks");
    if (!(settings.split_load > 0 && settings.split_load <= 1))
        throw invalid_argument_error("mpidict: linear_hash_map split_load = " + std::to_string(settings.split_load) +
                                     " must be in (0, 1]");
    if (settings.server_capacity_bytes == 0)
        throw invalid_argument_error("mpidict: linear_hash_map server_capacity_bytes must be positive");
    if (settings.max_key_bytes == 0)
        throw invalid_argument_error("mpidict: linear_hash_map max_key_bytes must be positive");
    // Bounded so that their sum (required_buffer_bytes) and the local table's
    // bucket_entries x buckets cannot wrap around.
    constexpr std::size_t max_record_part = std::size_t(1) << 30;
    constexpr std::size_t max_bucket_entries = std::size_t(1) << 20;
    if (settings.max_key_bytes > max_record_part || settings.max_value_bytes > max_record_part)
        throw invalid_argument_error("mpidict: linear_hash_map max_key_bytes = " + std::to_string(settings.max_key_bytes) +
                                     " and max_value_bytes = " + std::to_string(settings.max_value_bytes) +
                                     " must each be at most 2^30 (one record must fit one message)");
    if (settings.ship_window == 0 || settings.bucket_entries == 0)
        throw invalid_argument_error("mpidict: linear_hash_map ship_window and bucket_entries must be positive");
    if (settings.bucket_entries > max_bucket_entries)
        throw invalid_argument_error("mpidict: linear_hash_map bucket_entries = " +
                                     std::to_string(settings.bucket_entries) + " is more than 2^20 (" +
                                     std::to_string(max_bucket_entries) + ")");
    if (settings.required_buffer_bytes() > m_engine->settings().buffer_bytes)
        throw invalid_argument_error("mpidict: linear_hash_map max_key_bytes + max_value_bytes = " +
                                     std::to_string(settings.max_key_bytes + settings.max_value_bytes) +
                                     " does not fit one message of buffer_bytes = " +
                                     std::to_string(m_engine->settings().buffer_bytes) + " (needs " +
                                     std::to_string(settings.required_buffer_bytes()) + ")");

    m_initial = settings.initial_servers;
    m_image_buckets = m_pending_buckets = m_initial;
    m_in_flight.assign(servers, 0);
    m_is_client = std::find(clients.begin(), clients.end(), rank()) != clients.end();
    const auto me = std::find(m_server_ranks.begin(), m_server_ranks.end(), rank());
    if (me != m_server_ranks.end()) {
        m_server_index = static_cast<int>(me - m_server_ranks.begin());
        if (static_cast<std::uint64_t>(m_server_index) < m_initial) {
            m_active = true;
            m_address = m_server_index;
            m_level = 0;
            m_table = local::linear_table(m_initial, settings.bucket_entries);
            if (m_address == 0) {
                m_has_token = true;
                m_token_next = 0;
                m_token_level = 0;
            }
        }
    }

    m_request = runtime::register_handler<&lh_core::handle_request>(*m_engine, "linear_hash_map.request", this);
    m_reply = runtime::register_handler<&lh_core::handle_reply>(*m_engine, "linear_hash_map.reply", this);
    m_token = runtime::register_handler<&lh_core::handle_token>(*m_engine, "linear_hash_map.token", this);
    m_activate = runtime::register_handler<&lh_core::handle_activate>(*m_engine, "linear_hash_map.activate", this);
    m_ship = runtime::register_handler<&lh_core::handle_ship>(*m_engine, "linear_hash_map.ship", this);
    m_ship_ack = runtime::register_handler<&lh_core::handle_ship_ack>(*m_engine, "linear_hash_map.ship_ack", this);
    m_engine->verify_handlers();
    // The ranks must agree on the file's shape; a mismatch throws on every rank.
    std::uint64_t digest = hash_bytes(m_server_ranks.data(), m_server_ranks.size() * sizeof(int));
    const std::uint64_t numbers[] = {m_initial, settings.server_capacity_bytes, settings.max_key_bytes,
                                     settings.max_value_bytes, settings.bucket_entries,
                                     std::bit_cast<std::uint64_t>(settings.split_load)};
    digest ^= hash_bytes(numbers, sizeof numbers);
    m_engine->check_same(static_cast<std::int64_t>(digest >> 1), "linear_hash_map configuration", false);
    m_engine->start_progress_thread();
}

lh_core::~lh_core() = default;

// ---------------------------------------------------------------------------
// Client side
// ---------------------------------------------------------------------------

void lh_core::check_client(const char* operation) const {
    if (!m_is_client)
        throw invalid_argument_error(std::string("mpidict: linear_hash_map ") + operation + " on rank " +
                                     std::to_string(rank()) + ", which is not a client (config.client_ranks)");
}

void lh_core::check_key(std::string_view key) const {
    if (key.empty())
        throw invalid_argument_error("mpidict: linear_hash_map key is empty (keys need at least one byte)");
    if (key.size() > m_config.max_key_bytes)
        throw invalid_argument_error("mpidict: linear_hash_map key of " + std::to_string(key.size()) +
                                     " bytes exceeds max_key_bytes = " + std::to_string(m_config.max_key_bytes));
}

void lh_core::check_value(std::size_t value_bytes) const {
    if (value_bytes > m_config.max_value_bytes)
        throw invalid_argument_error("mpidict: linear_hash_map value of " + std::to_string(value_bytes) +
                                     " bytes exceeds max_value_bytes = " + std::to_string(m_config.max_value_bytes));
}

namespace {
// The level i and split pointer n of a file of `buckets` = N*2^i + n buckets.
void level_of(std::uint64_t buckets, std::uint64_t initial, int& level, std::uint64_t& next) {
    level = 0;
    while ((initial << (level + 1)) <= buckets)
        ++level;
    next = buckets - (initial << level);
}
}  // namespace

lh_core::image lh_core::client_image() const {
    image result;
    std::uint64_t next = 0;
    level_of(m_image_buckets, m_initial, result.level, next);
    result.next = static_cast<int>(next);
    return result;
}

int lh_core::client_address(std::uint64_t hash) const {
    int level = 0;
    std::uint64_t next = 0;
    level_of(m_image_buckets, m_initial, level, next);
    std::uint64_t address = hash % (m_initial << level);
    if (address < next)
        address = hash % (m_initial << (level + 1));
    return static_cast<int>(address);
}

std::uint64_t lh_core::split_source(std::uint64_t buckets) const {
    int level = 0;
    std::uint64_t next = 0;
    level_of(buckets, m_initial, level, next);
    return next;
}

void lh_core::reset_image() {
    // Moving an image backwards reroutes keys too: wait for this client's
    // operations first so none is overtaken.
    m_engine->wait_until([this] {
        return std::all_of(m_in_flight.begin(), m_in_flight.end(), [](std::uint32_t n) { return n == 0; });
    });
    m_image_buckets = m_pending_buckets = m_initial;
}

void lh_core::apply_adjustment(std::uint64_t buckets) {
    buckets = std::min<std::uint64_t>(buckets, m_server_ranks.size());
    m_pending_buckets = std::max(m_pending_buckets, buckets);
    const std::uint64_t before = m_image_buckets;
    // One split at a time, and only past a bucket with nothing in flight to it.
    while (m_image_buckets < m_pending_buckets && m_in_flight[split_source(m_image_buckets)] == 0)
        ++m_image_buckets;
    if (m_image_buckets != before)
        ++m_stats.iams_applied;
}

void lh_core::send(linear_hash_map_op::kind op, std::uint32_t slot, std::string_view key, std::string_view value) {
    const std::uint64_t hash = key_hash(key);
    const int address = client_address(hash);
    const std::size_t bytes = request_header_bytes + key.size() + value.size();
    // Counted before reserve(): reserve may make progress, and an image
    // adjustment applied there must not move this key's route while this
    // operation (addressed with the old image) is on its way.
    ++m_in_flight[static_cast<std::size_t>(address)];
    std::byte* out = nullptr;
    try {
        out = m_engine->reserve(m_server_ranks[static_cast<std::size_t>(address)], m_request, bytes);
    } catch (...) {
        --m_in_flight[static_cast<std::size_t>(address)];
        throw;
    }
    lh_wire::request_header header{};
    header.op = static_cast<std::uint8_t>(op);
    header.slot = slot;
    header.client = static_cast<std::uint32_t>(rank());
    header.address = static_cast<std::uint32_t>(address);
    header.first_address = static_cast<std::uint32_t>(address);
    header.key_bytes = static_cast<std::uint32_t>(key.size());
    header.value_bytes = static_cast<std::uint32_t>(value.size());
    byte_writer(out, bytes).record(header).put_bytes(key).put_bytes(value).finish();
}

void lh_core::handle_reply(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
    auto& self = *this;
    if (record_bytes < reply_header_bytes)
        throw decode_error("mpidict: linear_hash_map reply of " + std::to_string(record_bytes) + " bytes from rank " +
                           std::to_string(source) + " is shorter than its header");
    for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
        byte_reader reader(records, record_bytes);
        const auto header = read_record<lh_wire::reply_header>(reader);
        const auto status = reader.read<std::uint8_t>();
        const auto [slot, first, server_address, server_level, op, hops, reserved] = header;
        (void)op, (void)reserved;
        if (first >= self.m_in_flight.size() || self.m_in_flight[first] == 0 ||
            server_address >= self.m_server_ranks.size() || server_level > 62)
            throw decode_error("mpidict: linear_hash_map reply from rank " + std::to_string(source) +
                               " names bucket " + std::to_string(first) + " / " + std::to_string(server_address) +
                               " that this client has no operation for");
        --self.m_in_flight[first];
        // The answering server's bucket exists at its level: the file has at
        // least the buckets that implies (LH*'s image adjustment, from the
        // server that answered rather than the first one that forwarded).
        std::uint64_t implied = self.m_initial;
        if (server_level > 0) {
            const std::uint64_t base = self.m_initial << (server_level - 1);
            implied = server_address < base ? base + server_address + 1 : std::uint64_t{server_address} + 1;
        }
        if (hops > 0 || self.m_pending_buckets > self.m_image_buckets)
            self.apply_adjustment(implied);
        if (slot == no_slot) {
            if (status == status_rejected)
                ++self.m_async_rejected;
            continue;
        }
        const std::uint32_t values = (status == status_hit || status == status_replaced) ? 1 : 0;
        self.m_engine->complete_request(source, slot, values,
                                        {records + reply_result_offset, record_bytes - reply_result_offset});
    }
}

// ---------------------------------------------------------------------------
// Server side
// ---------------------------------------------------------------------------

double lh_core::local_load_factor() const {
    return static_cast<double>(m_table.payload_bytes()) / static_cast<double>(m_config.server_capacity_bytes);
}

int lh_core::server_check(std::uint64_t hash) const {
    // LH* server address check (Litwin et al., algorithm A2).
    std::uint64_t target = hash % (m_initial << m_level);
    if (target != static_cast<std::uint64_t>(m_address) && m_level > 0) {
        const std::uint64_t lower = hash % (m_initial << (m_level - 1));
        if (lower > static_cast<std::uint64_t>(m_address) && lower < target)
            target = lower;
    }
    return static_cast<int>(target);
}

std::size_t lh_core::source_bucket(std::uint64_t hash) const {
    // The bucket of the splitter's LH table (level m_source_level, split pointer
    // m_source_next, divisor N*2^(j-1)) that held this key.
    const std::uint64_t g = hash / (m_initial << (m_level - 1));
    std::uint64_t index = g & ((std::uint64_t{1} << m_source_level) - 1);
    if (index < m_source_next)
        index = g & ((std::uint64_t{1} << (m_source_level + 1)) - 1);
    return static_cast<std::size_t>(index);
}

bool lh_core::held_here_during_split(std::uint64_t hash, std::string_view key) const {
    const std::size_t bucket = m_table.bucket_of(hash);
    if (bucket > m_ship_cursor)
        return true;                        // its LH bucket has not started to leave
    if (bucket == m_ship_cursor)
        return m_table.contains(hash, key);  // partly shipped: here only if still here
    return false;
}

void lh_core::handle_request(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
    auto& self = *this;
    for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
        self.serve_request(source, records, record_bytes);
}

void lh_core::serve_request(int source, const std::byte* record, std::uint32_t record_bytes) {
    const request_header header = request_header::parse(record, record_bytes, source);
    if (header.address >= m_server_ranks.size() || m_server_ranks[header.address] != rank() ||
        header.client < 0 || header.client >= size())
        throw decode_error("mpidict: linear_hash_map request from rank " + std::to_string(source) +
                           " for bucket " + std::to_string(header.address) + " of client " +
                           std::to_string(header.client) + " reached rank " + std::to_string(rank()) +
                           ", which does not host that bucket");
    auto hold = [&] {
        m_deferred.emplace_back(record, record + record_bytes);
        if (!m_releasing)
            ++m_stats.deferred;
    };
    if (!m_active) {
        hold();  // a dormant rank addressed before its activation arrived
        return;
    }
    const std::string_view key(reinterpret_cast<const char*>(record + request_header_bytes), header.key_bytes);
    const std::string_view value(reinterpret_cast<const char*>(record + request_header_bytes + header.key_bytes),
                                 header.value_bytes);
    const std::uint64_t hash = key_hash(key);
    const int target = server_check(hash);
    if (target != m_address && !(m_splitting && target == m_split_target && held_here_during_split(hash, key))) {
        forward(target, record, record_bytes);
        return;
    }
    if (m_receiving && source_bucket(hash) >= m_complete_below) {
        hold();  // its LH bucket is still on the way from the splitter
        return;
    }
    answer(header, key, value, hash);
}

void lh_core::forward(int target_address, const std::byte* record, std::uint32_t record_bytes) {
    auto header = read_record<lh_wire::request_header>(record, record_bytes);
    if (header.hops + 1u > forward_limit)  // LH* proves two; more means a corrupt record or a bug
        throw decode_error("mpidict: linear_hash_map request of client " + std::to_string(header.client) +
                           " would be forwarded " + std::to_string(header.hops + 1) + " times (LH* needs at most 2)");
    if (target_address < 0 || static_cast<std::size_t>(target_address) >= m_server_ranks.size())
        throw decode_error("mpidict: linear_hash_map bucket " + std::to_string(m_address) + " at level " +
                           std::to_string(m_level) + " would forward to bucket " + std::to_string(target_address) +
                           ", beyond the " + std::to_string(m_server_ranks.size()) + " servers");
    std::byte* out =
        m_engine->reserve(m_server_ranks[static_cast<std::size_t>(target_address)], m_request, record_bytes);
    std::memcpy(out, record, record_bytes);
    header.hops += 1;
    header.address = static_cast<std::uint32_t>(target_address);
    overwrite_record(out, header);
    ++m_forwarded;
}

void lh_core::answer(const request_header& header, std::string_view key, std::string_view value,
                     std::uint64_t hash) {
    std::uint8_t status = status_miss;
    std::string_view found;
    switch (header.op) {
    case linear_hash_map_op::insert: {
        const auto* existing = m_table.find(hash, key);
        const std::size_t after = existing ? m_table.payload_bytes() - existing->value().size() + value.size()
                                           : m_table.payload_bytes() + key.size() + value.size();
        if (after > m_config.server_capacity_bytes && (!existing || value.size() > existing->value().size())) {
            status = status_rejected;
            ++m_stats.rejected;
        } else {
            bool replaced = false;
            std::int64_t delta = 0;
            m_table.upsert(hash, key, value, replaced, delta);
            status = replaced ? status_replaced : status_hit;
        }
        break;
    }
    case linear_hash_map_op::find:
        if (const auto* existing = m_table.find(hash, key)) {
            status = status_hit;
            found = existing->value();
        }
        break;
    case linear_hash_map_op::erase:
        status = m_table.erase(hash, key) >= 0 ? status_hit : status_miss;
        break;
    }
    auto& bins = m_stats.forwards[static_cast<std::size_t>(header.op)];
    ++bins[std::min<std::size_t>(header.hops, lh_hop_bins - 1)];
    if (header.hops > 0)
        ++m_stats.iams_sent;
    ++m_served;

    const std::size_t bytes = reply_header_bytes + found.size();
    byte_writer(m_engine->reserve(header.client, m_reply, bytes), bytes)
        .record(lh_wire::reply_header{header.slot, header.first_address, static_cast<std::uint32_t>(m_address),
                                      static_cast<std::uint32_t>(m_level), static_cast<std::uint8_t>(header.op),
                                      header.hops, 0})
        .put(status)
        .put_bytes(found)
        .finish();

    if (header.op == linear_hash_map_op::insert)
        maybe_split();
}

// ---------------------------------------------------------------------------
// Splitting
// ---------------------------------------------------------------------------

void lh_core::handle_token(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
    auto& self = *this;
    if (record_bytes != wire_bytes<lh_wire::token> || count != 1)
        throw decode_error("mpidict: linear_hash_map split token from rank " + std::to_string(source) +
                           " is malformed");
    const auto [next, level] = read_record<lh_wire::token>(records, record_bytes);
    if (!self.m_active || self.m_receiving || static_cast<std::uint32_t>(self.m_address) != next ||
        static_cast<std::uint32_t>(self.m_level) != level)
        throw decode_error("mpidict: linear_hash_map split token (n = " + std::to_string(next) +
                           ", i = " + std::to_string(level) + ") reached rank " + std::to_string(self.rank()) +
                           " holding bucket " + std::to_string(self.m_address) + " at level " +
                           std::to_string(self.m_level));
    self.m_has_token = true;
    self.m_token_next = next;
    self.m_token_level = static_cast<int>(level);
    self.maybe_split();
}

void lh_core::maybe_split() {
    if (!m_has_token || m_splitting || m_receiving || !m_active)
        return;
    const std::uint64_t buckets = (m_initial << m_token_level) + m_token_next;
    if (buckets >= m_server_ranks.size())
        return;  // no dormant rank left: the file stops growing
    if (local_load_factor() <= m_config.split_load)
        return;
    start_split();
}

void lh_core::start_split() {
    const std::uint64_t target = (m_initial << m_token_level) + m_token_next;
    MPIDICT_ASSERT(static_cast<std::uint64_t>(m_address) == m_token_next && m_level == m_token_level,
                   "the split token's holder must be bucket n at level i");
    m_table.ensure_splittable();
    m_table.set_frozen(true);
    m_splitting = true;
    m_split_target = static_cast<int>(target);
    m_ship_cursor = 1;
    m_ship_all_sent = false;
    m_ship_unacknowledged = 0;
    m_ship_sequence = 0;
    m_level += 1;
    m_current_split = lh_split_record{};
    m_current_split.from_address = m_address;
    m_current_split.to_address = m_split_target;
    m_current_split.from_rank = rank();
    m_current_split.to_rank = m_server_ranks[target];
    m_current_split.start_seconds = runtime::now_seconds();

    overwrite_record(m_engine->reserve(m_current_split.to_rank, m_activate, wire_bytes<lh_wire::activate>),
                     lh_wire::activate{static_cast<std::uint32_t>(target), static_cast<std::uint32_t>(m_level),
                                       static_cast<std::uint32_t>(m_address), m_table.level(),
                                       static_cast<std::uint32_t>(m_table.next())});
    for (std::size_t sent = 0; sent < m_config.ship_window && !m_ship_all_sent; ++sent)
        ship_next_chunk();
}

void lh_core::ship_next_chunk() {
    const std::size_t room = m_engine->max_record_bytes() - ship_header_bytes;
    std::size_t budget = room;
    std::vector<std::byte> packed;
    std::uint32_t entries = 0;
    auto sink = [&](local::linear_table::entry&& e) {
        const std::size_t at = packed.size();
        const std::size_t bytes = ship_entry_header_bytes + e.payload_bytes();
        packed.resize(at + bytes);
        byte_writer(packed.data() + at, bytes)
            .record(lh_wire::ship_entry{e.hash, e.key_bytes, static_cast<std::uint32_t>(e.data.size() - e.key_bytes)})
            .put_bytes(e.data)
            .finish();
        ++entries;
    };
    while (m_ship_cursor < m_table.bucket_count()) {
        const auto& bucket = m_table.bucket_at(m_ship_cursor);
        std::size_t bucket_bytes = 0;
        for (const auto& e : bucket)
            bucket_bytes += ship_entry_header_bytes + e.payload_bytes();
        if (bucket_bytes <= budget) {
            m_table.drain_bucket(m_ship_cursor, budget, ship_entry_header_bytes, sink);
            m_ship_cursor += 2;  // whole bucket gone: the next odd one
            continue;
        }
        if (packed.empty())  // larger than a message: ship part of it now
            m_table.drain_bucket(m_ship_cursor, budget, ship_entry_header_bytes, sink);
        break;
    }
    m_ship_all_sent = m_ship_cursor >= m_table.bucket_count();
    lh_wire::ship_header header{};
    header.sequence = m_ship_sequence++;
    header.entries = entries;
    header.complete_below = static_cast<std::uint32_t>(std::min(m_ship_cursor, m_table.bucket_count()));
    header.last = m_ship_all_sent ? 1 : 0;
    const std::size_t bytes = ship_header_bytes + packed.size();
    byte_writer(m_engine->reserve(m_current_split.to_rank, m_ship, bytes), bytes)
        .record(header)
        .put_bytes(packed.data(), packed.size())
        .finish();
    ++m_ship_unacknowledged;
    m_current_split.bytes_shipped += ship_header_bytes + packed.size();
    m_current_split.entries_shipped += entries;
    m_current_split.messages += 1;
}

void lh_core::handle_ship_ack(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
    auto& self = *this;
    if (record_bytes != wire_bytes<lh_wire::ship_ack>)
        throw decode_error("mpidict: linear_hash_map shipment acknowledgement from rank " + std::to_string(source) +
                           " is malformed");
    for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
        const auto sequence = read_record<lh_wire::ship_ack>(records, record_bytes).sequence;
        if (!self.m_splitting || self.m_ship_unacknowledged == 0 || source != self.m_current_split.to_rank ||
            sequence + self.m_ship_unacknowledged != self.m_ship_sequence)
            throw decode_error("mpidict: unexpected linear_hash_map shipment acknowledgement from rank " +
                               std::to_string(source));
        --self.m_ship_unacknowledged;
        if (!self.m_ship_all_sent)
            self.ship_next_chunk();
        else if (self.m_ship_unacknowledged == 0)
            self.finish_split();
    }
}

void lh_core::finish_split() {
    m_table.keep_even_buckets();
    m_table.set_frozen(false);
    m_splitting = false;
    m_current_split.end_seconds = runtime::now_seconds();
    m_stats.splits.push_back(m_current_split);
    // Pass the token: n + 1, wrapping to 0 at N*2^i with i + 1.
    std::uint64_t next = m_token_next + 1;
    int level = m_token_level;
    if (next == (m_initial << level)) {
        next = 0;
        ++level;
    }
    m_has_token = false;
    overwrite_record(m_engine->reserve(m_server_ranks[next], m_token, wire_bytes<lh_wire::token>),
                     lh_wire::token{static_cast<std::uint32_t>(next), static_cast<std::uint32_t>(level)});
}

void lh_core::handle_activate(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
    auto& self = *this;
    if (record_bytes != wire_bytes<lh_wire::activate> || count != 1)
        throw decode_error("mpidict: linear_hash_map activation from rank " + std::to_string(source) +
                           " is malformed");
    const auto activation = read_record<lh_wire::activate>(records, record_bytes);
    const auto address = activation.address;
    const auto level = activation.level;
    const auto source_level = activation.lh_level;
    const auto source_next = activation.lh_next;
    if (source_level < 1 || source_level > 40 || source_next >= (std::uint64_t{1} << source_level))
        throw decode_error("mpidict: linear_hash_map activation from rank " + std::to_string(source) +
                           " describes an impossible LH table (level " + std::to_string(source_level) +
                           ", next " + std::to_string(source_next) + ")");
    // Bucket `address` is created at level j + 1 by the split of bucket
    // address - N*2^j, so N*2^j <= address < N*2^(j+1).
    if (self.m_active || address >= self.m_server_ranks.size() || self.m_server_ranks[address] != self.rank() ||
        level == 0 || level > 40 || address < (self.m_initial << (level - 1)) || address >= (self.m_initial << level))
        throw decode_error("mpidict: linear_hash_map activation of bucket " + std::to_string(address) +
                           " reached rank " + std::to_string(self.rank()) + ", which cannot take it");
    self.m_active = true;
    self.m_receiving = true;
    self.m_address = static_cast<int>(address);
    self.m_level = static_cast<int>(level);
    self.m_table = local::linear_table(self.m_initial << level, self.m_config.bucket_entries);
    self.m_receive_sequence = 0;
    self.m_source_level = source_level;
    self.m_source_next = source_next;
    self.m_complete_below = 0;
    // Requests that arrived before the activation: some may be for other buckets.
    self.release_deferred();
}

void lh_core::handle_ship(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
    auto& self = *this;
    for (std::uint32_t index = 0; index < count; ++index, records += record_bytes) {
        if (record_bytes < ship_header_bytes || !self.m_receiving)
            throw decode_error("mpidict: unexpected linear_hash_map shipment from rank " + std::to_string(source));
        byte_reader reader(records, record_bytes);
        const auto [sequence, entries, complete_below, last, reserved8, reserved16] =
            read_record<lh_wire::ship_header>(reader);
        (void)reserved8, (void)reserved16;
        if (sequence != self.m_receive_sequence)
            throw decode_error("mpidict: linear_hash_map shipment " + std::to_string(sequence) + " from rank " +
                               std::to_string(source) + " arrived when " +
                               std::to_string(self.m_receive_sequence) + " was expected");
        ++self.m_receive_sequence;
        for (std::uint32_t e = 0; e < entries; ++e) {
            const auto entry = read_record<lh_wire::ship_entry>(reader);
            local::linear_table::entry incoming;
            incoming.hash = entry.hash;
            incoming.key_bytes = entry.key_bytes;
            const auto value_bytes = entry.value_bytes;
            const std::byte* data = reader.take(std::size_t{incoming.key_bytes} + value_bytes);
            incoming.data.assign(reinterpret_cast<const char*>(data), std::size_t{incoming.key_bytes} + value_bytes);
            self.m_table.adopt(std::move(incoming));
        }
        overwrite_record(self.m_engine->reserve(source, self.m_ship_ack, wire_bytes<lh_wire::ship_ack>),
                         lh_wire::ship_ack{sequence});
        self.m_complete_below = std::max<std::size_t>(self.m_complete_below, complete_below);
        if (last != 0)
            self.m_receiving = false;
        // Answer what waited for the buckets that are complete now, in arrival order.
        self.release_deferred();
    }
}

void lh_core::release_deferred() {
    if (m_deferred.empty())
        return;
    // Those still not answerable are held again, in the same order.
    std::deque<std::vector<std::byte>> held;
    held.swap(m_deferred);
    m_releasing = true;
    for (const auto& record : held)
        serve_request(static_cast<int>(read_record<lh_wire::request_header>(record.data(), record.size()).client),
                      record.data(), static_cast<std::uint32_t>(record.size()));
    m_releasing = false;
}

// ---------------------------------------------------------------------------
// Collectives
// ---------------------------------------------------------------------------

void lh_core::flush() {
    runtime::engine_lock lock(*m_engine);
    m_engine->check_alive("flush");
    m_engine->flush();
}

void lh_core::destroy() {
    if (m_engine->destroyed())
        return;
    m_engine->destroy();
    m_table = local::linear_table(1, m_config.bucket_entries);
    m_deferred.clear();
}

void lh_core::reset_local_statistics() {
    m_stats = linear_hash_map_local_statistics{};
    m_served = 0;
    m_forwarded = 0;
}

linear_hash_map_statistics lh_core::gather_statistics() {
    runtime::engine_lock lock(*m_engine);
    m_engine->check_alive("gather_statistics");
    m_engine->flush();
    const std::size_t ranks = static_cast<std::size_t>(size());
    const std::size_t servers = m_server_ranks.size();
    constexpr std::size_t counters = lh_op_count * lh_hop_bins + 4;
    constexpr std::size_t per_rank = 8;
    constexpr std::size_t per_split = 6;
    constexpr std::size_t file_fields = 3;
    std::vector<std::int64_t> input(counters + ranks * per_rank + servers * per_split + file_fields, 0);
    std::size_t at = 0;
    for (const auto& bins : m_stats.forwards)
        for (auto count : bins)
            input[at++] = static_cast<std::int64_t>(count);
    input[at++] = static_cast<std::int64_t>(m_stats.iams_sent);
    input[at++] = static_cast<std::int64_t>(m_stats.iams_applied);
    input[at++] = static_cast<std::int64_t>(m_stats.rejected);
    input[at++] = static_cast<std::int64_t>(m_stats.deferred);
    {
        std::int64_t* mine = &input[counters + static_cast<std::size_t>(rank()) * per_rank];
        mine[0] = m_active ? m_address + 1 : 0;
        mine[1] = m_level;
        mine[2] = static_cast<std::int64_t>(m_table.size());
        mine[3] = static_cast<std::int64_t>(m_table.payload_bytes());
        mine[4] = static_cast<std::int64_t>(std::llround(local_load_factor() * 1e9));
        mine[5] = static_cast<std::int64_t>(m_active ? m_table.bucket_count() : 0);
        mine[6] = static_cast<std::int64_t>(m_served);
        mine[7] = static_cast<std::int64_t>(m_forwarded);
    }
    for (const auto& split : m_stats.splits) {
        std::int64_t* slot = &input[counters + ranks * per_rank + static_cast<std::size_t>(split.to_address) * per_split];
        slot[0] = split.from_address + 1;
        slot[1] = static_cast<std::int64_t>(std::llround(split.start_seconds * 1e9));
        slot[2] = static_cast<std::int64_t>(std::llround(split.end_seconds * 1e9));
        slot[3] = static_cast<std::int64_t>(split.bytes_shipped);
        slot[4] = static_cast<std::int64_t>(split.entries_shipped);
        slot[5] = static_cast<std::int64_t>(split.messages);
    }
    if (m_has_token) {
        std::int64_t* file = &input[input.size() - file_fields];
        file[0] = 1;
        file[1] = m_token_level;
        file[2] = static_cast<std::int64_t>(m_token_next);
    }
    std::vector<std::int64_t> total(input.size(), 0);
    m_engine->sum(input, total, "global_statistics");

    linear_hash_map_statistics result;
    at = 0;
    for (auto& bins : result.forwards)
        for (auto& count : bins)
            count = static_cast<std::uint64_t>(total[at++]);
    result.iams_sent = static_cast<std::uint64_t>(total[at++]);
    result.iams_applied = static_cast<std::uint64_t>(total[at++]);
    result.rejected = static_cast<std::uint64_t>(total[at++]);
    result.deferred = static_cast<std::uint64_t>(total[at++]);
    std::vector<lh_server_info> active(servers), dormant;
    for (std::size_t r = 0; r < ranks; ++r) {
        const std::int64_t* row = &total[counters + r * per_rank];
        const bool server = std::find(m_server_ranks.begin(), m_server_ranks.end(), static_cast<int>(r)) !=
                            m_server_ranks.end();
        if (!server)
            continue;
        lh_server_info info;
        info.rank = static_cast<int>(r);
        info.address = static_cast<int>(row[0]) - 1;
        info.level = static_cast<int>(row[1]);
        info.entries = static_cast<std::uint64_t>(row[2]);
        info.payload_bytes = static_cast<std::uint64_t>(row[3]);
        info.load_factor = static_cast<double>(row[4]) / 1e9;
        info.lh_buckets = static_cast<std::uint64_t>(row[5]);
        info.served = static_cast<std::uint64_t>(row[6]);
        info.forwarded = static_cast<std::uint64_t>(row[7]);
        if (info.address >= 0) {
            active[static_cast<std::size_t>(info.address)] = info;
            ++result.servers_active;
        } else {
            dormant.push_back(info);
        }
    }
    active.resize(static_cast<std::size_t>(result.servers_active));
    result.servers = std::move(active);
    result.servers.insert(result.servers.end(), dormant.begin(), dormant.end());
    for (std::size_t address = 0; address < servers; ++address) {
        const std::int64_t* slot = &total[counters + ranks * per_rank + address * per_split];
        if (slot[0] == 0)
            continue;
        lh_split_record split;
        split.from_address = static_cast<int>(slot[0]) - 1;
        split.to_address = static_cast<int>(address);
        split.from_rank = m_server_ranks[static_cast<std::size_t>(split.from_address)];
        split.to_rank = m_server_ranks[address];
        split.start_seconds = static_cast<double>(slot[1]) / 1e9;
        split.end_seconds = static_cast<double>(slot[2]) / 1e9;
        split.bytes_shipped = static_cast<std::uint64_t>(slot[3]);
        split.entries_shipped = static_cast<std::uint64_t>(slot[4]);
        split.messages = static_cast<std::uint64_t>(slot[5]);
        result.splits.push_back(split);
    }
    const std::int64_t* file = &total[total.size() - file_fields];
    MPIDICT_ASSERT(file[0] == 1, "exactly one server must hold the split token");
    result.level = static_cast<int>(file[1]);
    result.split_next = static_cast<int>(file[2]);
    return result;
}

}  // namespace detail

std::size_t linear_hash_map_config::required_buffer_bytes() const {
    return runtime::group_header_bytes + runtime::routing_overhead_bytes +
           std::max(detail::request_header_bytes, detail::ship_header_bytes + detail::ship_entry_header_bytes) +
           max_key_bytes + max_value_bytes;
}

}  // namespace mpidict
