// An engine's life: construction (settings checked, routing chosen, the one
// set-up agreement on message size, routing and memory), handlers and operation
// kinds, the progress thread, destroy, and the two ways an engine ends without
// its peers: abandon() and the MPI_Finalize hook (an attribute on
// MPI_COMM_SELF) that tells every engine still alive.
#include "mpidict/runtime/engine.hpp"
#include "mpidict/runtime/serving.hpp"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../memory.hpp"

#include "engine_internal.hpp"

namespace mpidict::runtime {

using namespace engine_internal;

double now_seconds() {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

namespace {
void serve_from_other_waits(engine* which);
void construction_done(const engine* which);
}  // namespace

engine::engine(MPI_Comm communicator, config settings)
    : engine(make_mpi_transport(communicator), settings) {
    serve_from_other_waits(this);
}


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

// Engines over MPI that other containers' waits serve (serving.hpp), with
// the thread that created each.  `served_count` lets a wait skip the lock
// when the process has no other such engine.
struct served_engine {
    engine* which;
    std::thread::id owner;
    bool constructed;  // served only once its container's construction is done
};
std::vector<served_engine> served_engines;  // guarded by live_engines_mutex
std::atomic<std::size_t> served_count{0};
thread_local bool t_serving_others = false;

}  // namespace

thread_local const engine* engine_internal::t_served_from_outside = nullptr;

namespace {

void serve_from_other_waits(engine* which) {
#if !MPIDICT_SMPI  // SimGrid's ranks share one thread: never serve another rank's engine
    std::lock_guard<std::mutex> guard(live_engines_mutex);
    served_engines.push_back(served_engine{which, std::this_thread::get_id(), false});
#else
    (void)which;
#endif
}

// A rank that has left the last collective of a container's construction may
// send to it while this rank still waits in that collective; serving the
// container before its own construction ends would handle those messages
// before it is ready (a skip list before its head node exists).
void construction_done(const engine* which) {
    std::lock_guard<std::mutex> guard(live_engines_mutex);
    for (served_engine& each : served_engines)
        if (each.which == which && !each.constructed) {
            each.constructed = true;
            served_count.fetch_add(1, std::memory_order_relaxed);
        }
}

void forget_engine(engine* which) {
    std::lock_guard<std::mutex> guard(live_engines_mutex);
    live_engines.erase(std::remove(live_engines.begin(), live_engines.end(), which), live_engines.end());
    std::erase_if(served_engines, [which](const served_engine& each) { return each.which == which; });
    served_count.store(static_cast<std::size_t>(std::count_if(served_engines.begin(), served_engines.end(),
                                                              [](const served_engine& each) { return each.constructed; })),
                       std::memory_order_relaxed);
}

}  // namespace

bool serve_other_containers(const engine* except) {
    const std::size_t count = served_count.load(std::memory_order_relaxed);
    if (count == 0 || t_serving_others)
        return false;
    std::vector<engine*> mine;
    {
        std::lock_guard<std::mutex> guard(live_engines_mutex);
        const std::thread::id self = std::this_thread::get_id();
        for (const served_engine& each : served_engines)
            if (each.which != except && each.owner == self && each.constructed)
                mine.push_back(each.which);
    }
    // Not re-entered: a handler of a served container may wait on another
    // container, whose wait must not serve the first again from inside it.
    t_serving_others = true;
    struct reset {
        ~reset() { t_serving_others = false; }
    } restore;
    bool active = false;
    for (engine* each : mine) {
        if (each->in_handler() || each->mutex() != nullptr)
            continue;  // inside its own handler, or served by its progress thread
        t_served_from_outside = each;  // progress() declines if this thread is inside its calls
        const bool handled = each->progress();
        t_served_from_outside = nullptr;
        active = active || handled;
    }
    return active;
}

void wait_serving(MPI_Request& request, const char* call) {
    for (unsigned polls = 0; !test_complete(request, call); ++polls) {
        if (serve_other_containers(nullptr)) {
            polls = 0;
        } else if (polls < 64) {
            sched_yield();
        } else {
            const timespec pause{0, 10'000};
            nanosleep(&pause, nullptr);
        }
    }
}

void allreduce_serving(const void* input, void* output, int count, MPI_Datatype type, MPI_Op op,
                       MPI_Comm communicator, const char* call) {
    MPI_Request request = MPI_REQUEST_NULL;
    start_allreduce(input, output, count, type, op, communicator, &request, call);
    wait_serving(request, call);
}



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
    forget_engine(this);  // no other container's wait serves it any more
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
    register_handler("mpidict.reply", &engine::handle_reply, this);  // reply_handler (0)
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

void engine::start_progress_thread() {
    // Started only once the container's collective set-up is done, so no MPI call
    // of the constructor runs beside the thread's.  Other containers' waits
    // serve it from now on (without a progress thread; serving.hpp).
    construction_done(this);
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

}  // namespace mpidict::runtime
