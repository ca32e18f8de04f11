#pragma once
// The type-erased part of linear_hash_map (LH*LH): keys and values are byte
// strings here; linear_hash_map<K, V> encodes and decodes around it.  Compiled
// once in src/lh/lh_core.cpp.  See linear_hash_map.hpp for the design.

#include <array>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "mpidict/linear_hash_map_types.hpp"
#include "mpidict/local/linear_table.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict {

namespace detail {

class lh_core {
public:
    lh_core(std::unique_ptr<runtime::engine> engine, const linear_hash_map_config& settings);
    ~lh_core();
    lh_core(const lh_core&) = delete;
    lh_core& operator=(const lh_core&) = delete;

    runtime::engine& engine() { return *m_engine; }
    const linear_hash_map_config& settings() const { return m_config; }
    int rank() const { return m_engine->rank(); }
    int size() const { return m_engine->size(); }

    // Client side.  `slot` is an engine request slot or no_slot (fire and forget).
    static constexpr std::uint32_t no_slot = 0xffffffffu;
    void send(linear_hash_map_op::kind op, std::uint32_t slot, std::string_view key, std::string_view value);
    void check_client(const char* operation) const;
    void check_key(std::string_view key) const;
    void check_value(std::size_t value_bytes) const;

    struct image {
        int level = 0;  // i'
        int next = 0;   // n'
    };
    image client_image() const;
    void reset_image();
    std::uint64_t async_rejected() const { return m_async_rejected; }

    // Server side.
    bool is_server() const { return m_server_index >= 0; }
    bool is_client() const { return m_is_client; }
    int server_address() const { return m_active ? m_address : -1; }
    std::size_t local_entries() const { return m_table.size(); }
    std::size_t local_payload_bytes() const { return m_table.payload_bytes(); }
    double local_load_factor() const;
    const local::linear_table& local_table() const { return m_table; }

    const linear_hash_map_local_statistics& local_statistics() const { return m_stats; }
    void reset_local_statistics();
    // Collective.
    linear_hash_map_statistics gather_statistics();
    void flush();
    void destroy();

    // Decoding of a reply's result bytes {u8 status, value...}.
    static constexpr std::uint8_t status_miss = 0;
    static constexpr std::uint8_t status_hit = 1;       // found / erased / inserted new
    static constexpr std::uint8_t status_replaced = 2;  // insert replaced a value
    static constexpr std::uint8_t status_rejected = 3;  // insert refused: capacity

private:
    struct request_header;
    // Handlers, registered with runtime::register_handler<&lh_core::handle_x> (runtime/member_handler.hpp).
    void handle_request(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count);
    void handle_reply(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count);
    void handle_token(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count);
    void handle_activate(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count);
    void handle_ship(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count);
    void handle_ship_ack(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count);

    void serve_request(int source, const std::byte* record, std::uint32_t record_bytes);
    void answer(const request_header& header, std::string_view key, std::string_view value, std::uint64_t hash);
    void forward(int target_address, const std::byte* record, std::uint32_t record_bytes);
    int server_check(std::uint64_t hash) const;
    bool held_here_during_split(std::uint64_t hash, std::string_view key) const;
    std::size_t source_bucket(std::uint64_t hash) const;
    void maybe_split();
    void start_split();
    void ship_next_chunk();
    void finish_split();
    void release_deferred();

    void apply_adjustment(std::uint64_t buckets);
    int client_address(std::uint64_t hash) const;
    std::uint64_t split_source(std::uint64_t buckets) const;

    std::unique_ptr<runtime::engine> m_engine;
    linear_hash_map_config m_config;
    std::vector<int> m_server_ranks;           // by address
    std::uint64_t m_initial = 1;               // N
    runtime::handler_id m_request = 0, m_reply = 0, m_token = 0, m_activate = 0, m_ship = 0, m_ship_ack = 0;

    // Client.
    bool m_is_client = true;
    std::uint64_t m_image_buckets = 1;         // N*2^i' + n'
    std::uint64_t m_pending_buckets = 1;       // best adjustment heard, not yet safe to apply
    std::vector<std::uint32_t> m_in_flight;    // unanswered operations by first address
    std::uint64_t m_async_rejected = 0;

    // Server.
    int m_server_index = -1;                   // position in server_ranks; -1: not a server
    bool m_active = false;
    bool m_receiving = false;                  // activated, shipment not complete
    int m_address = -1;
    int m_level = 0;                           // j
    local::linear_table m_table;
    std::deque<std::vector<std::byte>> m_deferred;
    bool m_has_token = false;
    std::uint64_t m_token_next = 0;            // n
    int m_token_level = 0;                     // i
    // Split in progress (this server is the splitter).
    bool m_splitting = false;
    int m_split_target = -1;
    std::size_t m_ship_cursor = 0;             // next odd LH bucket to ship
    bool m_ship_all_sent = false;
    std::size_t m_ship_unacknowledged = 0;
    std::uint32_t m_ship_sequence = 0;
    lh_split_record m_current_split;
    std::uint64_t m_served = 0;
    std::uint64_t m_forwarded = 0;
    // Receiving side of a split.
    std::uint32_t m_receive_sequence = 0;
    std::uint32_t m_source_level = 1;          // the splitter's LH table: level,
    std::uint32_t m_source_next = 0;           // split pointer,
    std::size_t m_complete_below = 0;          // and its odd buckets below this have arrived
    bool m_releasing = false;                  // re-serving held requests (not counted again)

    linear_hash_map_local_statistics m_stats;
};

}  // namespace detail
}  // namespace mpidict
