// The active-message engine.  See include/mpidict/runtime/engine.hpp for the
// buffer format, flow control and the termination detection used by flush().

#include "mpidict/runtime/engine.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <mutex>
#include <vector>

#include "mpidict/detail/bytes.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/local/hash.hpp"
#include "../memory.hpp"

#if MPIDICT_SMPI
#include <smpi/smpi.h>
#endif

namespace mpidict {

namespace runtime {

namespace {
constexpr handler_id reply_handler = 0;
constexpr std::size_t minimum_buffer_bytes = 256;
constexpr std::size_t maximum_buffer_bytes = std::size_t{1} << 30;
// config::total_outbox_bytes shrinks no outbox's fill mark below this (or B).
constexpr std::size_t minimum_fill_bytes = 4096;
using detail::load;
using detail::store;

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
[[noreturn]] void throw_disagreement(int rank, std::string_view what, std::int64_t mine, std::int64_t lowest,
                                     std::int64_t highest) {
    throw collective_mismatch_error("mpidict: ranks disagree on " + std::string(what) + ": rank " +
                                    std::to_string(rank) + " has " + std::to_string(mine) + ", others range over [" +
                                    std::to_string(lowest) + ", " + std::to_string(highest) + "]");
}
}  // namespace

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class engine::sink final : public message_sink {
public:
    explicit sink(engine& owner) : m_owner(owner) {}
    void deliver(int source, int channel, std::span<const std::byte> message) override {
        m_owner.handle_message(source, channel, message);
    }

private:
    engine& m_owner;
};

engine::engine(MPI_Comm communicator, config settings)
    : engine(make_mpi_transport(communicator), settings) {}

namespace {

// Engines not yet destroyed, and the MPI_COMM_SELF attribute whose delete
// callback MPI_Finalize runs first: the one moment a container that outlives
// MPI_Finalize can still be told about it and release its receives.
std::mutex live_engines_mutex;
std::vector<engine*> live_engines;
int finalize_keyval = MPI_KEYVAL_INVALID;

int on_mpi_finalize(MPI_Comm, int, void*, void*) {
    std::vector<engine*> alive;
    {
        std::lock_guard<std::mutex> guard(live_engines_mutex);
        alive = live_engines;
    }
    for (engine* each : alive)
        each->abandon_at_finalize();
    return MPI_SUCCESS;
}

void watch_engine(engine* which) {
    int initialised = 0;
    int finalised = 0;
    MPI_Initialized(&initialised);
    MPI_Finalized(&finalised);
    if (!initialised || finalised)
        return;
    std::lock_guard<std::mutex> guard(live_engines_mutex);
    if (finalize_keyval == MPI_KEYVAL_INVALID) {
        MPI_Comm_create_keyval(MPI_COMM_NULL_COPY_FN, &on_mpi_finalize, &finalize_keyval, nullptr);
        MPI_Comm_set_attr(MPI_COMM_SELF, finalize_keyval, nullptr);
    }
    live_engines.push_back(which);
}

void forget_engine(engine* which) {
    std::lock_guard<std::mutex> guard(live_engines_mutex);
    live_engines.erase(std::remove(live_engines.begin(), live_engines.end(), which), live_engines.end());
}

}  // namespace

engine::engine(std::unique_ptr<transport> network, config settings)
    : m_transport(std::move(network)), m_config(settings) {
    initialise();
    watch_engine(this);
}

void engine::abandon_at_finalize() {
    forget_engine(this);
    if (m_destroyed)
        return;
    stop_progress_thread();
    std::fprintf(stderr,
                 "mpidict: MPI_Finalize was called on rank %d while a container over %d rank%s was still alive; "
                 "its pending operations are dropped. Destroy every mpidict container before MPI_Finalize: let it "
                 "go out of scope first (do the MPI work in a function or a block that ends before MPI_Finalize) "
                 "or call destroy() on every rank.\n",
                 m_rank, m_size, m_size == 1 ? "" : "s");
    drop_everything();
}

void engine::abandon(std::string_view why) {
    if (m_destroyed)
        return;
    stop_progress_thread();
    std::fprintf(stderr, "mpidict: rank %d: %.*s; its pending operations are dropped without waiting for the other "
                 "ranks\n", m_rank, static_cast<int>(why.size()), why.data());
    drop_everything();
}

void engine::drop_everything() {
    try {
        m_transport->abandon();
    } catch (...) {
    }
    m_destroyed = true;
}

void engine::second_thread_entered() {
    throw error("mpidict: two threads entered one container at the same time; without "
                "runtime.progress_thread = true a container must be used by one thread at a time "
                "(with it, calls from several threads are serialised)");
}

void engine::initialise() {
    m_rank = m_transport->rank();
    m_size = m_transport->size();
    if (m_config.buffer_bytes < minimum_buffer_bytes || m_config.buffer_bytes > maximum_buffer_bytes)
        throw invalid_argument_error("mpidict: buffer_bytes = " + std::to_string(m_config.buffer_bytes) +
                                     " is outside [" + std::to_string(minimum_buffer_bytes) + ", " +
                                     std::to_string(maximum_buffer_bytes) + "]");
    if (m_config.blocking_factor == 0)
        throw invalid_argument_error("mpidict: blocking_factor must be at least 1");
    if (m_config.receive_buffers == 0)
        throw invalid_argument_error("mpidict: receive_buffers must be at least 1");
    choose_routing();
    m_fill_bytes = fill_mark(m_config, m_peer_count);
    // At least one send in flight per two peers (config::release_queue): the
    // buffers a flush ships all at once come from outboxes this rank already
    // holds, and with q well below the peers each phase would end waiting for
    // its receivers one at a time.
    m_release_queue = m_config.release_queue == 0 ? 0 : std::max(m_config.release_queue, m_peer_count / 2);
    // One set-up round: every rank must agree on the message size (or a receive
    // could truncate) and on the routing; and buffers this rank cannot hold are
    // refused, on every rank together, before any is allocated (--buffer-bytes
    // 1Gi cost about 9 GiB per rank): at most the posted receives, one outbox
    // per peer and the sends awaiting release, B bytes each.
    {
        const double buffers = static_cast<double>(m_config.receive_buffers) +
                               static_cast<double>(m_release_queue) + static_cast<double>(m_peer_count);
        const double needed = buffers * static_cast<double>(m_config.buffer_bytes);
        const auto available = static_cast<double>(detail::available_memory_bytes());
        const std::int64_t mine[3] = {static_cast<std::int64_t>(m_config.buffer_bytes), m_routed ? 1 : 0,
                                      available > 0 && needed > available ? 1 : 0};
        std::int64_t lowest[3] = {};
        std::int64_t highest[3] = {};
        min_max(mine, lowest, highest);
        const char* names[2] = {"buffer_bytes", "routing (0 direct, 1 grid; MPIDICT_ROUTING)"};
        for (int index = 0; index < 2; ++index)
            if (lowest[index] != highest[index])
                throw_disagreement(m_rank, names[index], mine[index], lowest[index], highest[index]);
        if (highest[2] != 0)
            throw invalid_argument_error(
                mine[2] != 0 ? "mpidict: rank " + std::to_string(m_rank) + " cannot hold its message buffers: " +
                                   std::to_string(m_config.receive_buffers) + " receives + " +
                                   std::to_string(m_release_queue) + " queued sends + " +
                                   std::to_string(m_peer_count) + " outboxes of buffer_bytes = " +
                                   std::to_string(m_config.buffer_bytes) + " need up to " +
                                   std::to_string(static_cast<std::uint64_t>(needed)) + " bytes, but " +
                                   std::to_string(static_cast<std::uint64_t>(available)) +
                                   " are available; lower buffer_bytes"
                             : "mpidict: another rank cannot hold its message buffers (it says why); lower "
                               "buffer_bytes");
    }
    m_transport->open(m_config.buffer_bytes, m_config.receive_buffers, m_routed ? 2 : 1);
    // Only over MPI: a simulated transport's waits are not the program's time.
    const double stuck_seconds = resolve_stuck_wait_seconds(m_config.stuck_wait_seconds);
    if (m_transport->mpi_communicator() != MPI_COMM_NULL)
        m_stuck.start(m_rank, m_size, stuck_seconds);
    m_outboxes.resize(static_cast<std::size_t>(m_size));
    register_handler("mpidict.reply", &engine::handle_reply, this);
    m_exchange_handler = register_handler("mpidict.exchange", &engine::handle_exchange, this);
    if (m_config.progress_thread) {
        int level = MPI_THREAD_SINGLE;
        MPI_Query_thread(&level);
        if (level < MPI_THREAD_SERIALIZED)
            throw invalid_argument_error(
                "mpidict: progress_thread needs MPI initialised by MPI_Init_thread with MPI_THREAD_MULTIPLE "
                "(or MPI_THREAD_SERIALIZED if the program makes no MPI calls of its own while the container "
                "lives); docs/runtime.md, 'Progress'");
    }
}

routing_mode parse_routing(std::string_view text) {
    if (text == "direct")
        return routing_mode::direct;
    if (text == "grid")
        return routing_mode::grid;
    if (text == "automatic" || text == "auto")
        return routing_mode::automatic;
    throw invalid_argument_error("mpidict: routing '" + std::string(text) +
                                 "' is none of direct, grid, automatic");
}

std::string_view routing_name(routing_mode mode) {
    switch (mode) {
    case routing_mode::direct:
        return "direct";
    case routing_mode::grid:
        return "grid";
    case routing_mode::automatic:
        break;
    }
    return "automatic";
}

std::size_t engine::fill_mark(const config& settings, std::size_t peers) {
    const std::size_t buffer = settings.buffer_bytes;
    if (settings.total_outbox_bytes == 0 || peers == 0 || settings.total_outbox_bytes / peers >= buffer)
        return buffer;
    return std::clamp(settings.total_outbox_bytes / peers, std::min<std::size_t>(buffer, minimum_fill_bytes), buffer);
}

void engine::choose_routing() {
    routing_mode mode = m_config.routing;
    if (mode == routing_mode::automatic) {
        if (const char* text = std::getenv("MPIDICT_ROUTING"); text != nullptr && *text != '\0')
            mode = parse_routing(text);
    }
    if (mode == routing_mode::automatic)
        mode = m_size >= automatic_grid_ranks ? routing_mode::grid : routing_mode::direct;
    m_routed = mode == routing_mode::grid && m_size > 2;
    if (!m_routed) {
        m_peer_count = static_cast<std::size_t>(m_size);
        return;
    }
    // c = ceil(sqrt(p)) columns; rank x sits at row x / c, column x % c.
    int columns = 1;
    while (columns * columns < m_size)
        ++columns;
    const int row = m_rank / columns;
    const int column = m_rank % columns;
    const int last_row = (m_size - 1) / columns;
    const int last_row_width = m_size - last_row * columns;
    m_next_hop.resize(static_cast<std::size_t>(m_size));
    m_relay_channel.assign(static_cast<std::size_t>(m_size), 0);
    m_peer_count = 0;
    for (int destination = 0; destination < m_size; ++destination) {
        const int to_row = destination / columns;
        const int to_column = destination % columns;
        int hop = destination;
        if (to_row != row && to_column != column) {
            // Along this rank's row to the destination's column, then down it.
            // From the short last row, where that corner is missing, to the
            // rank of the destination's column in the row above instead.
            hop = row * columns + to_column;
            if (hop >= m_size)
                hop = (row - 1) * columns + to_column;
        }
        m_next_hop[static_cast<std::size_t>(destination)] = hop;
        if (hop == destination)
            ++m_peer_count;
        // Relay channel: the ranks this one uses as corners (its row, and from
        // the short last row the ranks above the gap), for every message to
        // them, so each pair keeps one channel.  Corners forward down their
        // column on the direct channel, which no rank ever holds back.
        const bool corner = to_row == row ||
                            (row == last_row && to_row == last_row - 1 && to_column >= last_row_width);
        m_relay_channel[static_cast<std::size_t>(destination)] = corner && destination != m_rank ? 1 : 0;
    }
}

void engine::start_progress_thread() {
    // Started only once the container's collective set-up is done, so no MPI call
    // of the constructor runs beside the thread's.
    if (m_config.progress_thread && !m_progress_thread.joinable() && !m_destroyed)
        m_progress_thread = std::thread([this] { progress_thread_main(); });
}

engine::~engine() {
    forget_engine(this);
    stop_progress_thread();
    if (!m_destroyed && m_transport) {
        // Not collective: abandon what is queued, but leave MPI in a usable state.
        try {
            m_transport->close();
        } catch (...) {
        }
    }
}

void engine::stop_progress_thread() {
    if (m_progress_thread.joinable()) {
        m_stop_thread = true;
        m_progress_thread.join();
    }
}

void engine::progress_thread_main() {
    while (!m_stop_thread.load(std::memory_order_relaxed)) {
        {
            std::lock_guard<std::recursive_mutex> guard(m_mutex);
            if (!m_destroyed && !m_in_flush) {
                try {
                    // Forwarded records gather while messages keep coming; a
                    // quiet round sends them on (the owner may be computing).
                    if (!progress())
                        ship_forwards();
                } catch (const std::exception& problem) {
                    std::fprintf(stderr, "mpidict: progress thread on rank %d: %s\n", m_rank, problem.what());
                    MPI_Abort(MPI_COMM_WORLD, 71);
                }
            }
        }
        std::this_thread::sleep_for(m_config.progress_interval);
    }
}

void engine::throw_destroyed(const char* operation) const {
    throw use_after_destroy_error(std::string("mpidict: ") + operation +
                                  " called on a container whose destroy() already ran");
}

handler_id engine::register_handler(std::string_view name, handler_function function, void* context) {
    if (m_handlers.size() >= std::numeric_limits<handler_id>::max())
        throw invalid_argument_error("mpidict: too many handlers registered (limit 65535)");
    m_handlers.push_back(handler_entry{std::string(name), function, context});
    return static_cast<handler_id>(m_handlers.size() - 1);
}

void engine::verify_handlers() { verify_handlers({}, {}); }

void engine::verify_handlers(std::span<const std::int64_t> settings, std::string_view what) {
    std::uint64_t digest = 0x6d70696469637421ULL;
    for (const auto& entry : m_handlers)
        digest = mix64(digest ^ hash_bytes(entry.name.data(), entry.name.size()));
    // Compare the count and two halves of the digest (int64 min/max is enough),
    // then the container's settings, in one reduction.
    std::vector<std::int64_t> values{static_cast<std::int64_t>(m_handlers.size()),
                                     static_cast<std::int64_t>(digest >> 32),
                                     static_cast<std::int64_t>(digest & 0xffffffffULL)};
    values.insert(values.end(), settings.begin(), settings.end());
    std::vector<std::int64_t> minimum(values.size());
    std::vector<std::int64_t> maximum(values.size());
    min_max(values, minimum, maximum);
    for (std::size_t index = 3; index < values.size(); ++index) {
        if (minimum[index] != maximum[index] && minimum[0] == maximum[0])
            throw_disagreement(m_rank, what, values[index], minimum[index], maximum[index]);
    }
    for (int index = 0; index < 3; ++index) {
        if (minimum[index] != maximum[index]) {
            std::string names;
            for (const auto& entry : m_handlers)
                names += (names.empty() ? "" : ", ") + entry.name;
            throw collective_mismatch_error(
                "mpidict: ranks registered different handlers (rank " + std::to_string(m_rank) + " has " +
                std::to_string(m_handlers.size()) + ": " + names +
                "); every rank must construct the same containers in the same order");
        }
    }
}

void engine::min_max(std::span<const std::int64_t> input, std::span<std::int64_t> minimum,
                     std::span<std::int64_t> maximum) {
    engine_lock lock(*this);
    m_transport->min_max(input, minimum, maximum);
}

void engine::reduce_serving(std::span<const std::int64_t> input, std::span<std::int64_t> output) {
    // Non-blocking, and serving others meanwhile: a rank may enter this while
    // another still waits for an answer this rank owes it.
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::collective, "a reduction");
    m_transport->start_sum(input, output);
    unsigned idle_rounds = 0;
    while (!m_transport->sum_complete()) {
        backoff(serve_round(/*settling=*/true), idle_rounds);
    }
}

void engine::collective_tag(std::string_view what, std::int64_t (&pieces)[tag_pieces]) {
    // The tag: a hash of the call's name and this rank's sequence number, as
    // 32-bit pieces (sums of p pieces cannot overflow), plus a digest of it.
    const std::uint64_t tag = mix64(hash_bytes(what.data(), what.size()) ^ (++m_collective_sequence * 0x9e3779b97f4a7c15ULL));
    const std::uint64_t digest = mix64(tag ^ 0x243f6a8885a308d3ULL);
    pieces[0] = static_cast<std::int64_t>(tag & 0xffffffffULL);
    pieces[1] = static_cast<std::int64_t>(tag >> 32);
    pieces[2] = static_cast<std::int64_t>(digest & 0xffffffffULL);
    pieces[3] = static_cast<std::int64_t>(digest >> 32);
}

void engine::check_tag(const std::int64_t (&pieces)[tag_pieces], const std::int64_t* totals,
                       std::string_view what) const {
    for (std::size_t index = 0; index < tag_pieces; ++index)
        if (totals[index] != pieces[index] * m_size)
            throw collective_mismatch_error(
                "mpidict: collective call mismatch: rank " + std::to_string(m_rank) + " called " + std::string(what) +
                " (its collective call number " + std::to_string(m_collective_sequence) +
                ") while another rank made a different collective call; every rank must make the same collective "
                "calls (flush, global_size, destroy, ...) in the same order");
}

void engine::sum(std::span<const std::int64_t> input, std::span<std::int64_t> output, std::string_view what) {
    engine_lock lock(*this);
    if (in_handler())
        throw error("mpidict: a collective call cannot be made from inside a visitor or handler");
    // First the tag, in a reduction as long as a flush round's, so that a rank in
    // a different collective sees the mismatch instead of mixing the numbers.
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::collective, what);
    std::int64_t pieces[tag_pieces];
    collective_tag(what, pieces);
    std::int64_t round[2 + tag_pieces] = {0, 0, pieces[0], pieces[1], pieces[2], pieces[3]};
    std::int64_t totals[2 + tag_pieces] = {};
    reduce_serving(round, totals);
    check_tag(pieces, totals + 2, what);
    reduce_serving(input, output);
}

void engine::check_same(std::int64_t value, std::string_view what, bool serve) {
    if (!serve) {
        // Set-up collectives: nothing is handled until every rank has arrived, so
        // no handler can run before the caller has finished registering.
        std::int64_t minimum = 0;
        std::int64_t maximum = 0;
        min_max(std::span<const std::int64_t>(&value, 1), std::span<std::int64_t>(&minimum, 1),
                std::span<std::int64_t>(&maximum, 1));
        if (minimum != maximum)
            throw_disagreement(m_rank, what, value, minimum, maximum);
        return;
    }
    // Equality through sums (which can progress while they wait): every rank adds
    // 32-bit pieces of the value and of a hash of it; all equal iff each sum is p
    // times this rank's piece (a difference escaping both is a 64-bit collision).
    const auto bits = static_cast<std::uint64_t>(value);
    const std::uint64_t digest = mix64(bits ^ 0x243f6a8885a308d3ULL);
    const std::int64_t pieces[4] = {static_cast<std::int64_t>(bits & 0xffffffffULL),
                                    static_cast<std::int64_t>(bits >> 32),
                                    static_cast<std::int64_t>(digest & 0xffffffffULL),
                                    static_cast<std::int64_t>(digest >> 32)};
    std::int64_t totals[4] = {0, 0, 0, 0};
    sum(pieces, totals);
    for (int index = 0; index < 4; ++index) {
        if (totals[index] != pieces[index] * m_size)
            throw collective_mismatch_error("mpidict: ranks disagree on " + std::string(what) + " (rank " +
                                            std::to_string(m_rank) + " has " + std::to_string(value) +
                                            "); every rank must make the same collective calls with the same "
                                            "arguments");
    }
}

engine::message_buffer engine::take_buffer() {
    if (!m_free_buffers.empty()) {
        message_buffer buffer = std::move(m_free_buffers.back());
        m_free_buffers.pop_back();
        buffer.size = 0;
        return buffer;
    }
    // Uninitialised on purpose: only the used prefix is ever read or sent.
    return message_buffer{std::unique_ptr<std::byte[]>(new std::byte[m_config.buffer_bytes]), 0};
}

void engine::recycle(message_buffer&& buffer) {
    // Released buffers are reused in release order; a few spares stay pooled.
    if (m_free_buffers.size() < m_release_queue + 4) {
        buffer.size = 0;
        m_free_buffers.push_back(std::move(buffer));
    }
}

void engine::update_high_water() {
    const std::size_t held = m_outbox_bytes + m_in_flight_bytes;
    if (held > m_stats.buffer_bytes_high_water)
        m_stats.buffer_bytes_high_water = held;
    if (m_in_flight.size() > m_stats.in_flight_high_water)
        m_stats.in_flight_high_water = m_in_flight.size();
}

std::byte* engine::reserve_record(int destination, handler_id handler, std::size_t bytes) {
    MPIDICT_ASSERT(handler < m_handlers.size(), "unregistered handler");
    if (bytes > max_record_bytes()) [[unlikely]]
        throw invalid_argument_error("mpidict: a record of " + std::to_string(bytes) +
                                     " bytes does not fit in one message (buffer_bytes = " +
                                     std::to_string(m_config.buffer_bytes) + ", so at most " +
                                     std::to_string(max_record_bytes()) +
                                     " bytes of key and values per operation)");
    const int hop = next_hop(destination);
    if (hop != destination) [[unlikely]]
        return append(hop, group_kind::routed, static_cast<std::uint32_t>(destination), handler, bytes, false);
    return append(destination, group_kind::plain, 0, handler, bytes, false);
}

std::byte* engine::append(int to, group_kind kind, std::uint32_t label, handler_id handler, std::size_t bytes,
                          bool deferred, std::uint32_t wanted, std::uint32_t* granted) {
    MPIDICT_ASSERT(wanted == 1 || kind != group_kind::routed, "routed records are appended one at a time");
    const std::size_t stride = bytes + (kind == group_kind::routed ? routing_overhead_bytes : 0);
    const std::size_t header = group_header_bytes + (kind == group_kind::forwarded ? routing_overhead_bytes : 0);
    for (;;) {
        outbox& box = m_outboxes[static_cast<std::size_t>(to)];
        if (!box.buffer.data) {
            box.buffer = take_buffer();
            m_outbox_bytes += m_config.buffer_bytes;
            update_high_water();
        }
        const std::size_t used = box.buffer.size;
        const bool extend = box.continues(kind, handler, bytes, label);
        const std::size_t opening = extend ? 0 : header;
        // An empty buffer takes one record of any size that passed the size
        // check (up to B), even above the fill mark.
        const std::size_t capacity = used == 0 ? std::max(m_fill_bytes, opening + stride) : m_fill_bytes;
        // Records that fit after the group header (if one opens); one record,
        // the common case, without a division.
        std::uint32_t fitting = 0;
        if (used + opening <= capacity) {
            const std::size_t room = capacity - used - opening;
            if (wanted == 1 || stride == 0)
                fitting = room >= stride ? wanted : 0;
            else
                fitting = static_cast<std::uint32_t>(std::min<std::size_t>(wanted, room / stride));
        }
        if (fitting > 0) {
            if (granted != nullptr)
                *granted = fitting;
            const std::size_t needed = opening + fitting * stride;
            if (used == 0)
                m_dirty.push_back(to);
            if (deferred) {
                if (!box.holds_forwards) {
                    box.holds_forwards = true;
                    ++m_forwards_waiting;
                }
            } else if (m_handler_depth > 0 && !box.holds_handler_output) {
                // Handler output (replies, forwarded work) leaves when the message
                // that caused it is done, or (grid routing) after the polling loop
                // that handled it (handle_message), so nobody waits on a rank that has
                // returned to computing.
                box.holds_handler_output = true;
                m_handler_dirty.push_back(to);
            }
            box.buffer.size = used + needed;
            std::byte* base = box.buffer.data.get();
            std::byte* record = base + used;
            if (extend) {
                add_to_group(box, fitting);
            } else {
                store<std::uint16_t>(record, handler);
                store<std::uint16_t>(record + 2, static_cast<std::uint16_t>(kind));
                store<std::uint32_t>(record + 4, static_cast<std::uint32_t>(bytes));
                store<std::uint32_t>(record + 8, fitting);
                if (kind == group_kind::forwarded)
                    store<std::uint32_t>(record + group_header_bytes, label);
                box.has_group = true;
                box.kind = kind;
                box.group_offset = used;
                box.group_handler = handler;
                box.group_record_bytes = static_cast<std::uint32_t>(bytes);
                box.group_label = label;
                record += header;
            }
            if (kind == group_kind::routed) {
                store<std::uint32_t>(record, label);
                record += routing_overhead_bytes;
            }
            return record;
        }
        // Full: ship it (which may run handlers that append here), then retry.
        if (in_handler()) {
            ship(to, /*full=*/true);
        } else {
            const double start = now_seconds();
            ship(to, /*full=*/true);
            m_ship_seconds += now_seconds() - start;
            // Serve what arrived meanwhile: a rank streaming out records then
            // forwards and handles its peers' as it goes instead of saving
            // that work for its flush, where the ranks that saved the most
            // would keep the others waiting (docs/scaling.md).
            progress();
        }
    }
}

void engine::forward_group(int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count,
                           handler_id handler, bool urgent) {
    const std::size_t stride = std::size_t{record_bytes} + routing_overhead_bytes;
    if (m_forward_counts.size() != static_cast<std::size_t>(m_size))
        m_forward_counts.assign(static_cast<std::size_t>(m_size), 0);
    // Bucket the records by destination (a corner forwards to its column only:
    // few buckets), keeping each bucket in arrival order, then copy each bucket
    // as runs: one group header and one count update per run, not per record.
    m_forward_destinations.clear();
    for (std::uint32_t index = 0; index < count; ++index) {
        const auto destination = load<std::uint32_t>(records + index * stride);
        if (destination >= static_cast<std::uint32_t>(m_size) ||
            next_hop(static_cast<int>(destination)) != static_cast<int>(destination))
            throw decode_error("mpidict: message from rank " + std::to_string(source) +
                               " asks this rank to forward a record to rank " + std::to_string(destination) +
                               ", which is not one of its peers in " + detail::communicator_of(m_size));
        if (m_forward_counts[destination]++ == 0)
            m_forward_destinations.push_back(static_cast<int>(destination));
    }
    m_forward_order.resize(count);
    std::uint32_t start = 0;
    for (const int destination : m_forward_destinations) {
        const std::uint32_t bucket = m_forward_counts[static_cast<std::size_t>(destination)];
        m_forward_counts[static_cast<std::size_t>(destination)] = start;  // now the bucket's cursor
        start += bucket;
    }
    for (std::uint32_t index = 0; index < count; ++index)
        m_forward_order[m_forward_counts[load<std::uint32_t>(records + index * stride)]++] = index;
    const handler_entry& entry = m_handlers[handler];
    std::uint32_t next = 0;
    for (const int destination : m_forward_destinations) {
        const std::uint32_t end = m_forward_counts[static_cast<std::size_t>(destination)];
        m_forward_counts[static_cast<std::size_t>(destination)] = 0;
        const auto payload = [&](std::uint32_t at) {
            return records + std::size_t{m_forward_order[at]} * stride + routing_overhead_bytes;
        };
        if (destination == m_rank) {
            // Records for this rank itself (it is the corner of its own row):
            // contiguous, then one handler call.
            m_forward_scratch.resize(std::size_t{end - next} * record_bytes);
            for (std::uint32_t at = next; at < end; ++at)
                std::memcpy(m_forward_scratch.data() + std::size_t{at - next} * record_bytes, payload(at), record_bytes);
            entry.function(entry.context, source, m_forward_scratch.data(), record_bytes, end - next);
            m_stats.records_received += end - next;
            next = end;
            continue;
        }
        // Urgent records leave with this message's other output, or, when the
        // message came through progress(), with every urgent forward of its
        // polling loop; the rest gather until a buffer fills or this rank
        // waits or flushes.
        const bool with_message = urgent && !m_polling;
        m_urgent_forwards |= urgent && m_polling;
        while (next < end) {
            std::uint32_t granted = 0;
            std::byte* out = append(destination, group_kind::forwarded, static_cast<std::uint32_t>(source), handler,
                                    record_bytes, !with_message, end - next, &granted);
            for (std::uint32_t at = next; at < next + granted; ++at, out += record_bytes)
                std::memcpy(out, payload(at), record_bytes);
            m_stats.records_forwarded += granted;
            next += granted;
        }
    }
}

void engine::ship_settling(bool active) {
    // While messages keep arriving, a corner holds the records it forwards so
    // that one message per column peer carries its whole row's records, not
    // one per incoming message (at the end of a phase every row peer's last
    // buffer arrives at about the same time); once a round is quiet they go.
    if (!active || m_forwards_waiting == 0)
        ship_all();
    else
        ship_outboxes(/*holding_forwards=*/false);
}

bool engine::serve_round(bool settling) {
    bool active = progress();
    if (!m_dirty.empty()) {
        if (settling)
            ship_settling(active);
        else
            ship_all();
        active = true;
    }
    return active;
}

void engine::ship_forwards() {
    if (m_forwards_waiting != 0 && !in_handler())
        ship_outboxes(/*holding_forwards=*/true);
}

template <class Wanted>
void engine::ship_dirty_if(Wanted&& wanted, bool serve) {
    const std::vector<int> waiting = m_dirty;  // ship() edits m_dirty
    for (const int destination : waiting) {
        if (wanted(destination)) {
            ship(destination);
            if (serve)
                progress();
        }
    }
}

void engine::ship_outboxes(bool holding_forwards) {
    ship_dirty_if(
        [&](int destination) {
            return m_outboxes[static_cast<std::size_t>(destination)].holds_forwards == holding_forwards;
        },
        /*serve=*/false);
}

#if MPIDICT_SMPI
namespace {

// One value each for the whole simulation (every rank sets the same).
double simulated_record_seconds = 0;
double simulated_message_seconds = 0;

// A message of `records` records leaves or arrives (`messages` is 0 for a
// rank's messages to itself, which no MPI call carries).
void charge(std::uint64_t records, std::uint64_t messages) {
    const double seconds = simulated_record_seconds * static_cast<double>(records) +
                           simulated_message_seconds * static_cast<double>(messages);
    if (seconds > 0)
        smpi_execute(seconds);
}

}  // namespace

void set_simulated_costs(double seconds_per_record, double seconds_per_message) {
    simulated_record_seconds = seconds_per_record > 0 ? seconds_per_record : 0;
    simulated_message_seconds = seconds_per_message > 0 ? seconds_per_message : 0;
}

std::uint64_t engine::records_in(std::span<const std::byte> message) {
    std::uint64_t records = 0;
    const std::byte* cursor = message.data();
    const std::byte* const end = cursor + message.size();
    while (cursor < end) {
        const auto kind = static_cast<group_kind>(load<std::uint16_t>(cursor + 2) & group_kind_mask);
        std::uint64_t stride = load<std::uint32_t>(cursor + 4);
        const auto count = load<std::uint32_t>(cursor + 8);
        cursor += group_header_bytes;
        if (kind == group_kind::forwarded)
            cursor += routing_overhead_bytes;  // the origin's label
        else if (kind == group_kind::routed)
            stride += routing_overhead_bytes;  // each record's destination
        cursor += stride * count;
        records += count;
    }
    return records;
}
#endif

void engine::ship(int destination, bool full) {
    outbox& box = m_outboxes[static_cast<std::size_t>(destination)];
    if (box.buffer.empty())
        return;
    if (!in_handler())
        wait_for_queue_space();
    // wait_for_queue_space may have run handlers that shipped this outbox already.
    outbox& current = m_outboxes[static_cast<std::size_t>(destination)];
    if (current.buffer.empty())
        return;
    message_buffer buffer = std::move(current.buffer);
    current.buffer = message_buffer{};
    ++current.generation;
    current.has_group = false;
    current.holds_handler_output = false;
    if (current.holds_forwards) {
        current.holds_forwards = false;
        --m_forwards_waiting;
    }
    m_outbox_bytes -= m_config.buffer_bytes;
    m_dirty.erase(std::remove(m_dirty.begin(), m_dirty.end(), destination), m_dirty.end());
    const std::size_t size = buffer.size;
#if MPIDICT_SMPI
    charge(records_in(buffer.bytes()), destination == m_rank ? 0 : 1);
#endif
    // The first group's flags carry the message's marks: the sender's round
    // (see flush()), and urgent_flag when the first hop should forward at
    // once because someone is waiting.  Not in a flush: every rank is
    // flushing then and ships what it gathered each round, so forwarding at
    // once would only split the corner's buffers into a message per incoming
    // one (at 64 ranks it made grid routing send 1.5x the messages of direct
    // routing).
    std::byte* flags = buffer.data.get() + 2;
    auto marks = static_cast<std::uint16_t>((load<std::uint16_t>(flags) & ~epoch_flags) |
                                            ((m_epoch & epoch_mask) << epoch_shift));
    if (!full && m_routed && !m_in_flush)
        marks |= urgent_flag;
    store<std::uint16_t>(flags, marks);
    if (destination == m_rank) {
        // Loopback: handled by this rank's own progress, never through MPI.
        ++m_messages_sent;
        ++m_stats.loopback_messages;
        m_loopback.push_back(std::move(buffer));
        // Full progress, not only the loopback: a rank whose waits all complete
        // through its own loopback must still serve other ranks (otherwise a
        // client that is its own server starves every other client).
        if (!in_handler())
            progress();
        return;
    }
    if (m_in_flush && m_fault_drop_flush_message) {
        // Injected fault (tests only): the message vanishes without being counted.
        recycle(std::move(buffer));
        return;
    }
    // Full buffers (streams) go synchronously: that is what bounds a flooded
    // receiver.  Partial ones leave because someone waits (latency mode, handler
    // replies, flush); a standard send saves the receiver's acknowledgement on
    // the critical path, and their number is bounded by waits and requests.
    const int channel = m_routed ? m_relay_channel[static_cast<std::size_t>(destination)] : 0;
    const std::uint64_t ticket = m_transport->start_send(destination, buffer.bytes(), /*synchronous=*/full, channel);
    if (channel == 0)
        ++m_direct_in_flight;
    ++m_messages_sent;
    ++m_stats.messages_sent;
    m_stats.bytes_sent += size;
    m_in_flight_bytes += m_config.buffer_bytes;
    m_in_flight.push_back(in_flight_send{ticket, std::move(buffer), destination, channel});
    m_stuck.sent_to(destination);
    update_high_water();
    if (m_release_queue == 0 && !in_handler()) {
        // q = 0: no deferred release; the caller waits for this send to finish.
        while (!m_in_flight.empty()) {
            if (!progress())
                m_transport->idle();
        }
    }
}

void engine::wait_for_queue_space() {
    const std::size_t limit = std::max<std::size_t>(m_release_queue, 1);
    if (m_in_flight.size() < limit)
        return;
    ++m_stats.queue_stalls;
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::send_queue, "");
    release_finished_sends();
    unsigned idle_rounds = 0;
    while (m_in_flight.size() >= limit) {
        // Keep receiving: the destination may be waiting on us to drain its sends.
        bool active = poll_once();
        active |= release_finished_sends();
        backoff(active, idle_rounds);
    }
}

void engine::backoff(bool active, unsigned& idle_rounds) {
    m_stuck.tick();  // every waiting loop comes here each round
    // A few empty polls spin (a reply is usually microseconds away); after that
    // the transport lets other processes run, which matters when ranks outnumber cores.
#if MPIDICT_SMPI
    // Under SimGrid the transport's idle() blocks until one of its requests
    // completes (mpi_transport.cpp), and every spin is a simulation step.
    constexpr unsigned spins = 0;
#else
    constexpr unsigned spins = 32;
#endif
    if (active)
        idle_rounds = 0;
    else if (++idle_rounds > spins)
        m_transport->idle();
}

bool engine::release_finished_sends() {
    bool released = false;
    for (auto it = m_in_flight.begin(); it != m_in_flight.end();) {
        if (m_transport->send_complete(it->ticket)) {
            m_in_flight_bytes -= m_config.buffer_bytes;
            if (it->channel == 0)
                --m_direct_in_flight;
            recycle(std::move(it->buffer));
            it = m_in_flight.erase(it);
            released = true;
        } else {
            ++it;
        }
    }
    return released;
}

bool engine::poll_once() {
    sink receiver(*this);
    // Relay messages make this rank forward; it takes them only while its
    // direct-channel sends, where forwarded records go, are below q.  Those
    // always complete (every rank keeps taking direct messages), so holding
    // relays back bounds a corner's memory without a cycle of waits.
    const bool take_relays = m_routed && m_direct_in_flight < std::max<std::size_t>(m_release_queue, 1);
    return m_transport->poll(receiver, take_relays ? 2 : 1);
}

void engine::handle_message(int source, int channel, std::span<const std::byte> message) {
    if (source != m_rank) {
        m_stuck.heard_from(source);
        ++m_stats.messages_received;
        m_stats.bytes_received += message.size();
    }
    const handler_scope scope(m_handler_depth);
    const std::byte* cursor = message.data();
    const std::byte* const end = message.data() + message.size();
    // The message's marks, on its first group's flags (see ship()).
    const bool marked = message.size() >= group_header_bytes;
    const std::uint16_t marks = marked ? load<std::uint16_t>(cursor + 2) : 0;
    const bool urgent = (marks & urgent_flag) != 0;
#if MPIDICT_SMPI
    const std::uint64_t records_before = m_stats.records_received;
#endif
    while (cursor != end) {
        if (static_cast<std::size_t>(end - cursor) < group_header_bytes)
            throw decode_error("mpidict: message from rank " + std::to_string(source) +
                               " ends inside a group header");
        const auto handler = load<std::uint16_t>(cursor);
        const auto kind = static_cast<group_kind>(load<std::uint16_t>(cursor + 2) & group_kind_mask);
        const auto record_bytes = load<std::uint32_t>(cursor + 4);
        const auto count = load<std::uint32_t>(cursor + 8);
        cursor += group_header_bytes;
        if (handler >= m_handlers.size())
            throw decode_error("mpidict: message from rank " + std::to_string(source) + " names handler " +
                               std::to_string(handler) + " but only " + std::to_string(m_handlers.size()) +
                               " are registered");
        int origin = source;
        std::uint64_t stride = record_bytes;
        if (kind == group_kind::forwarded) {
            if (static_cast<std::size_t>(end - cursor) < routing_overhead_bytes)
                throw decode_error("mpidict: message from rank " + std::to_string(source) +
                                   " ends inside a forwarded group's header");
            const auto label = load<std::uint32_t>(cursor);
            cursor += routing_overhead_bytes;
            if (label >= static_cast<std::uint32_t>(m_size))
                throw decode_error("mpidict: message from rank " + std::to_string(source) +
                                   " forwards records from rank " + std::to_string(label) + ", outside " +
                                   detail::communicator_of(m_size));
            origin = static_cast<int>(label);
        } else if (kind == group_kind::routed) {
            if (channel != 1)
                throw decode_error("mpidict: message from rank " + std::to_string(source) +
                                   " carries records to forward outside the relay channel");
            stride += routing_overhead_bytes;
        } else if (kind != group_kind::plain) {
            throw decode_error("mpidict: message from rank " + std::to_string(source) + " has a group of kind " +
                               std::to_string(static_cast<unsigned>(kind)) + ", which no rank sends");
        }
        const std::uint64_t group_bytes = stride * count;
        if (group_bytes > static_cast<std::uint64_t>(end - cursor) || count == 0)
            throw decode_error("mpidict: message from rank " + std::to_string(source) + " has a group of " +
                               std::to_string(count) + " records of " + std::to_string(record_bytes) +
                               " bytes but only " + std::to_string(end - cursor) + " bytes remain");
        if (kind == group_kind::routed) {
            forward_group(source, cursor, record_bytes, count, handler, urgent);
        } else {
            const handler_entry& entry = m_handlers[handler];
            entry.function(entry.context, origin, cursor, record_bytes, count);
            m_stats.records_received += count;
        }
        cursor += group_bytes;
    }
    // A message its sender shipped after its cut of the round this rank has
    // yet to contribute to counts from the next round on (see flush()).  The
    // stamp is the round modulo 4 and a sender is at most one round ahead; an
    // older message that aliases as "ahead" only counts one round late.
    const unsigned stamp = marked ? (marks >> epoch_shift) & epoch_mask : static_cast<unsigned>(m_epoch & epoch_mask);
    if (((stamp - m_epoch) & epoch_mask) == 1)
        ++m_handled_next_round;
    else
        ++m_messages_handled;
#if MPIDICT_SMPI
    charge(m_stats.records_received - records_before, source == m_rank ? 0 : 1);
#endif
    // Handler output leaves when this message is done, or, under grid routing
    // when it came through progress(), with the output of every message of its
    // polling loop: an owner's answers to one corner's message go to up to
    // sqrt(p) corners, and per incoming message that made O(p) messages per
    // rank.  (Under direct routing they all go back to the message's sender,
    // and waiting for the loop's end would only add a poll to every round trip.)
    if (m_handler_depth == 1 && !(m_polling && m_routed))
        ship_handler_output();  // still inside the handler scope, so these sends never block
}

void engine::ship_handler_output() {
    while (!m_handler_dirty.empty()) {
        const int destination = m_handler_dirty.back();
        m_handler_dirty.pop_back();
        if (m_outboxes[static_cast<std::size_t>(destination)].holds_handler_output)
            ship(destination);
    }
}

bool engine::drain_loopback() {
    if (in_handler())
        return false;
    bool active = false;
    while (!m_loopback.empty()) {
        message_buffer message = std::move(m_loopback.front());
        m_loopback.pop_front();
        handle_message(m_rank, 0, message.bytes());
        recycle(std::move(message));
        active = true;
    }
    return active;
}

bool engine::progress() {
    bool active = drain_loopback();
    // Ship what waits in outboxes only when someone needs it or nothing else is
    // going on; callers that stream keep filling buffers instead.
    {
        // Urgent forwards of the messages handled in this loop leave together
        // after it (one message per column peer, not one per incoming message).
        const bool outer = !m_polling;
        m_polling = true;
        struct polling_guard {
            bool& flag;
            bool restore;
            ~polling_guard() { flag = restore; }
        } guard{m_polling, !outer};
        while (poll_once()) {
            active = true;
            // Release as we go: a rank that a flood keeps polling would otherwise hold
            // every reply it shipped meanwhile, matched or not, until the flood stops.
            release_finished_sends();
        }
    }
    if (!m_polling && !in_handler()) {
        if (!m_handler_dirty.empty()) {
            // As handler output always leaves: without waiting for queue
            // space (and for loopback, without nested progress).
            const handler_scope scope(m_handler_depth);
            ship_handler_output();
        }
        if (m_urgent_forwards) {
            m_urgent_forwards = false;
            ship_forwards();
        }
    }
    active |= release_finished_sends();
    return active;
}

void engine::ship_all() {
    // In a flush, serve after each message: a flush may ship one outbox per
    // peer (62 at 1024 ranks under grid routing), and the messages that
    // arrive meanwhile are other ranks' flushes, whose records this rank
    // should forward or handle now rather than after packing all of its own
    // (the same reason append() serves after each full buffer).
    const bool serve = m_in_flush && !in_handler();
    // Under grid routing the outboxes to corners leave first: their records
    // need a second hop, which the corners can make while this rank ships the rest.
    if (m_routed)
        ship_dirty_if([&](int destination) { return m_relay_channel[static_cast<std::size_t>(destination)] != 0; },
                      serve);
    // ship() takes its destination off m_dirty, but shipping (and serving) may
    // run handlers that dirty other outboxes: loop until none is left.
    while (!m_dirty.empty()) {
        ship(m_dirty.front());
        if (serve)
            progress();
    }
}

std::uint32_t engine::open_request(op_kind kind) {
    if (kind >= m_stats.by_kind.size())
        throw invalid_argument_error("mpidict: operation kind " + std::to_string(kind) +
                                     " was never registered (engine::register_op_kind)");
    // Inside a handler the window may overflow: a handler must never wait.
    if (m_outstanding >= m_config.blocking_factor && !in_handler()) {
        ++m_stats.window_stalls;
        const stuck_wait_detector::scope watched(m_stuck, wait_kind::request_window, "");
        unsigned idle_rounds = 0;
        while (m_outstanding >= m_config.blocking_factor) {
            // The records of outstanding requests may still sit in outboxes.
            ship_all();
            backoff(progress(), idle_rounds);
        }
    }
    std::uint32_t slot;
    if (!m_free_slots.empty()) {
        slot = m_free_slots.back();
        m_free_slots.pop_back();
    } else {
        slot = static_cast<std::uint32_t>(m_requests.size());
        m_requests.emplace_back();
    }
    request_slot& entry = m_requests[slot];
    entry.state = slot_state::pending;
    entry.failed = false;
    entry.kind = kind;
    entry.count = 0;
    entry.result.clear();
    ++m_outstanding;
    if (m_outstanding > m_stats.outstanding_requests_high_water)
        m_stats.outstanding_requests_high_water = m_outstanding;
    ++m_stats[kind].requests;
    return slot;
}

std::byte* engine::reserve_reply(int destination, std::uint32_t slot, std::uint32_t count,
                                 std::size_t result_bytes) {
    std::byte* out = reserve(destination, reply_handler, reply_header_bytes + result_bytes);
    store<std::uint32_t>(out, slot);
    store<std::uint32_t>(out + 4, count);
    return out + reply_header_bytes;
}

void engine::reply_error(int destination, std::uint32_t slot, std::string_view message) {
    const std::size_t room = max_record_bytes() - reply_header_bytes;
    const std::size_t length = std::min(message.size(), room);
    std::byte* out = reserve_reply(destination, slot, error_count, length);
    std::memcpy(out, message.data(), length);
}

void engine::handle_reply(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                          std::uint32_t count) {
    auto& self = *static_cast<engine*>(context);
    if (record_bytes < reply_header_bytes)
        throw decode_error("mpidict: reply from rank " + std::to_string(source) + " is " +
                           std::to_string(record_bytes) + " bytes, shorter than its header");
    for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
        self.complete_request(source, load<std::uint32_t>(records), load<std::uint32_t>(records + 4),
                              {records + reply_header_bytes, record_bytes - reply_header_bytes});
}

void engine::keep_exchanged(int source, std::span<const std::byte> record) {
    const std::size_t offset = m_exchanged.data.size();
    m_exchanged.data.insert(m_exchanged.data.end(), record.begin(), record.end());
    m_exchanged.records.push_back(exchanged::record{source, offset, record.size()});
}

void engine::handle_exchange(void* context, int source, const std::byte* records, std::uint32_t record_bytes,
                             std::uint32_t count) {
    auto& self = *static_cast<engine*>(context);
    // Every record carries at least one byte; an empty one would let a group's
    // count (unchecked by its zero total size) drive an unbounded loop.
    if (record_bytes == 0)
        throw decode_error("mpidict: exchange group of empty records from rank " + std::to_string(source));
    for (std::uint32_t index = 0; index < count; ++index, records += record_bytes)
        self.keep_exchanged(source, {records, record_bytes});
}

engine::exchanged engine::exchange(int root, const std::function<void(const exchange_sink&)>& produce) {
    engine_lock lock(*this);
    check_alive("exchange");
    if (in_handler())
        throw error("mpidict: a collective call cannot be made from inside a visitor or handler");
    if (root != all_ranks && (root < 0 || root >= m_size))
        throw invalid_argument_error("mpidict: root rank " + std::to_string(root) + " is outside " +
                                     detail::communicator_of(m_size));
    const int first = root == all_ranks ? 0 : root;
    const int last = root == all_ranks ? m_size - 1 : root;
    produce([&](std::span<const std::byte> record) {
        MPIDICT_ASSERT(!record.empty(), "an exchange record carries at least one byte");
        for (int destination = first; destination <= last; ++destination) {
            if (destination == m_rank) {
                keep_exchanged(m_rank, record);
            } else {
                std::byte* out = reserve(destination, m_exchange_handler, record.size());
                if (!record.empty())
                    std::memcpy(out, record.data(), record.size());
            }
        }
    });
    // Records of ranks already past this point may have arrived before this rank
    // got here: m_exchanged is emptied only below, never at the start.
    flush();
    exchanged arrived = std::move(m_exchanged);
    m_exchanged = exchanged{};
    std::vector<exchanged::record>& records = arrived.records;
    std::stable_sort(records.begin(), records.end(),
                     [](const exchanged::record& a, const exchanged::record& b) { return a.source < b.source; });
    return arrived;
}

void engine::complete_request(int source, std::uint32_t slot, std::uint32_t count,
                              std::span<const std::byte> result) {
    if (slot >= m_requests.size())
        throw decode_error("mpidict: reply from rank " + std::to_string(source) + " names request " +
                           std::to_string(slot) + " which was never opened");
    request_slot& entry = m_requests[slot];
    if (entry.state == slot_state::abandoned) {
        entry.state = slot_state::free;
        ++entry.generation;
        entry.result.clear();
        m_free_slots.push_back(slot);
        --m_outstanding;
        return;
    }
    if (entry.state != slot_state::pending)
        throw decode_error("mpidict: reply from rank " + std::to_string(source) + " for request " +
                           std::to_string(slot) + " that is not pending");
    entry.count = count;
    entry.result.assign(result.begin(), result.end());
    entry.state = slot_state::done;
    entry.failed = entry.count == error_count;
    if (entry.failed)
        entry.count = 0;
    m_stats[entry.kind].values += entry.count;
    --m_outstanding;
}

bool engine::test_request(std::uint32_t slot) {
    request_slot& entry = m_requests[slot];
    if (entry.state == slot_state::done)
        return true;
    check_alive("test");
    if (in_handler())
        return false;
    const double start = now_seconds();
    ship_all();
    progress();
    m_stats[entry.kind].completion_seconds += now_seconds() - start;
    return m_requests[slot].state == slot_state::done;
}

void engine::wait_request(std::uint32_t slot) {
    if (m_requests[slot].state == slot_state::done)
        return;
    check_alive("wait");
    if (in_handler())
        throw error("mpidict: a visitor or handler must not wait on a request (it would block the rank's progress)");
    ++m_stats.waits;
    const double start = now_seconds();
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::request, op_kind_name(m_requests[slot].kind));
    // Latency mode: whatever holds this request's record leaves now.
    ship_all();
    unsigned idle_rounds = 0;
    while (m_requests[slot].state != slot_state::done) {
        backoff(serve_round(), idle_rounds);  // handlers may have queued records others wait for
    }
    m_stats[m_requests[slot].kind].completion_seconds += now_seconds() - start;
}

void engine::cancel_request(std::uint32_t slot) {
    request_slot& entry = m_requests[slot];
    MPIDICT_ASSERT(entry.state == slot_state::pending, "cancel_request on a slot that is not pending");
    entry.state = slot_state::free;
    ++entry.generation;
    --m_outstanding;
    m_free_slots.push_back(slot);
}

void engine::close_request(std::uint32_t slot) {
    request_slot& entry = m_requests[slot];
    if (entry.state == slot_state::pending) {
        entry.state = slot_state::abandoned;
        return;
    }
    if (entry.state == slot_state::done) {
        entry.state = slot_state::free;
        ++entry.generation;
        if (entry.result.capacity() > 4096)
            std::vector<std::byte>().swap(entry.result);  // keep idle slots small
        m_free_slots.push_back(slot);
    }
}

void engine::flush() {
    check_alive("flush");
    if (in_handler())
        throw error("mpidict: flush() called from inside a visitor or handler; flush is collective and must be called by the application");
    const double start = now_seconds();
    ++m_stats.flushes;
    m_in_flush = true;
    struct flush_guard {
        bool& flag;
        ~flush_guard() { flag = false; }
    } guard{m_in_flush};
    // Termination (Mattern's colouring): a rank's contribution to a round is
    // its cut.  Every message carries the round its sender was in when it
    // left (ship: the epoch, rounds contributed so far); a rank counts as
    // handled only the messages sent before their senders' cuts, the others
    // once it has made its own (handle_message).  So a round's sums count
    // exactly the messages sent before the cut and those handled before it:
    // equal sums mean none was in flight across the cut, and as every rank
    // was quiet at its cut (nothing unsent, nothing unhandled), whatever a
    // rank handled after its cut was itself sent after one, which nothing
    // could have caused.  One round that finds everything delivered ends the
    // flush; a flush with nothing to do takes one reduction.
    const stuck_wait_detector::scope watched(m_stuck, wait_kind::flush, "flush");
    std::int64_t pieces[tag_pieces];
    collective_tag("flush", pieces);
    for (;;) {
        // Settle locally: ship everything, handle what arrives, repeat until quiet.
        ship_all();
        for (;;) {
            const bool active = progress();
            if (!active && m_dirty.empty())
                break;
            ship_settling(active);
        }
        // Every round carries the tag (see sum()).
        const std::int64_t counts[2 + tag_pieces] = {m_messages_sent, m_messages_handled, pieces[0],
                                                     pieces[1],       pieces[2],          pieces[3]};
        // The cut: what this rank sends from here on belongs to the next round,
        // and the messages it held back as sent after their senders' cuts
        // count from the next round on.
        ++m_epoch;
        m_messages_handled += m_handled_next_round;
        m_handled_next_round = 0;
        std::int64_t totals[2 + tag_pieces] = {};
        reduce_serving(counts, totals);
        ++m_stats.flush_rounds;
        check_tag(pieces, totals + 2, "flush");
        if (totals[0] == totals[1])
            break;
    }
    // Every counted send was matched and handled; let those release their
    // buffers.  Keep serving meanwhile: a rank whose reduction completed first
    // may already have sent new work here, and handling it (a reply, a record
    // forwarded by a corner, a server's forward) may have put sends to a rank
    // that is itself in this loop in flight; such a send completes only while
    // its receiver polls.  (Waiting without polling deadlocked two LH*LH
    // servers under grid routing.)  Only the sends counted by the flush are
    // waited for, so new work arriving forever cannot hold the flush.
    std::vector<std::uint64_t> counted;
    for (const in_flight_send& send : m_in_flight)
        counted.push_back(send.ticket);
    unsigned idle_rounds = 0;
    while (!counted.empty()) {
        const bool active = serve_round();
        std::erase_if(counted, [&](std::uint64_t ticket) {
            return std::none_of(m_in_flight.begin(), m_in_flight.end(),
                                [&](const in_flight_send& send) { return send.ticket == ticket; });
        });
        backoff(active, idle_rounds);
    }
    m_stats.barrier_seconds += now_seconds() - start;
}

void engine::destroy() {
    if (m_destroyed)
        return;
    // Join first, without holding the lock the thread takes.
    stop_progress_thread();
    engine_lock lock(*this);
    flush();
    m_transport->barrier();
    m_transport->close();
    m_destroyed = true;
    forget_engine(this);
}

op_kind engine::register_op_kind(std::string_view name) {
    if (m_stats.kind_names.size() >= max_op_kinds)
        throw invalid_argument_error("mpidict: more than " + std::to_string(max_op_kinds) +
                                     " operation kinds registered with one engine");
    m_stats.kind_names.emplace_back(name);
    m_stats.by_kind.emplace_back();
    return static_cast<op_kind>(m_stats.kind_names.size() - 1);
}

void engine::reset_statistics() {
    m_stats.clear();
    update_high_water();
}

}  // namespace runtime
}  // namespace mpidict
