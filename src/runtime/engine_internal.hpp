#pragma once
// What the engine's source files share (src/runtime/engine*.cpp; not installed):
//   engine.cpp             the flow-control core: outboxes, append and ship, the
//                          send queue, receiving and progress, flush
//   engine_routing.cpp     grid routing: the grid, next hops, the corner's forwarding
//   engine_requests.cpp    request slots: open, reply, complete, test, wait, close
//   engine_collectives.cpp set-up agreement (verify_handlers, check_same, min_max)
//                          and the tagged collectives over messages (sum, exchange)
//   engine_lifecycle.cpp   construction, handlers and kinds, the progress thread,
//                          destroy, abandon and the MPI_Finalize hook

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "mpidict/detail/bytes.hpp"
#include "mpidict/error.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::runtime::engine_internal {

inline constexpr handler_id reply_handler = 0;  // registered first, by initialise()
inline constexpr std::size_t minimum_buffer_bytes = 256;
inline constexpr std::size_t maximum_buffer_bytes = std::size_t{1} << 30;
// config::total_outbox_bytes shrinks no outbox's fill mark below this (or B).
inline constexpr std::size_t minimum_fill_bytes = 4096;
using mpidict::detail::load;
using mpidict::detail::store;

// The engine another container's wait is about to serve (serving.hpp,
// engine_lifecycle.cpp): its progress() takes the mark and declines if this
// thread is inside one of its calls further up the stack (a local_for_each
// whose function waits on another container must not see its table change).
extern thread_local const engine* t_served_from_outside;

// Inside handler scope while it lives: sends never wait (engine::ship).
class handler_scope {
public:
    explicit handler_scope(int& depth) : m_depth(depth) { ++m_depth; }
    ~handler_scope() { --m_depth; }
    handler_scope(const handler_scope&) = delete;
    handler_scope& operator=(const handler_scope&) = delete;

private:
    int& m_depth;
};

// The set-up checks' refusal: ranks passed different values of `what`.
[[noreturn]] inline void throw_disagreement(int rank, std::string_view what, std::int64_t mine, std::int64_t lowest,
                                            std::int64_t highest) {
    throw collective_mismatch_error("mpidict: ranks disagree on " + std::string(what) + ": rank " +
                                    std::to_string(rank) + " has " + std::to_string(mine) + ", others range over [" +
                                    std::to_string(lowest) + ", " + std::to_string(highest) + "]");
}

}  // namespace mpidict::runtime::engine_internal
