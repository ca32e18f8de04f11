// The deterministic simulation transport.  See include/mpidict/runtime/sim_transport.hpp
// for the model (scheduling, delays, matching, checks).
//
// Concurrency.  Every piece of state below belongs to the world and is touched
// only by the thread that holds the baton (m_current).  The baton moves by
// releasing the next thread's semaphore and acquiring one's own, which also
// orders the memory accesses of consecutive holders.

#include "mpidict/runtime/sim_transport.hpp"

#if defined(__linux__)
#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <cinttypes>
#include <cstring>
#include <deque>
#include <map>
#include <queue>
#include <semaphore>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/detail/xoshiro.hpp"
#include "mpidict/local/hash.hpp"

namespace mpidict::sim {

namespace {

// The schedule's random numbers (detail/xoshiro.hpp), and a bounded draw.
class random_source : public detail::xoshiro256 {
public:
    using xoshiro256::xoshiro256;
    std::uint64_t below(std::uint64_t bound) { return bound == 0 ? 0 : reduce_range(next(), bound); }
};

enum class rank_state : std::uint8_t { runnable, parked, blocked, finished };

enum class event_kind : std::uint8_t {
    send,
    inject,
    match,
    deliver,
    sum_start,
    sum_done,
    collective_enter,
    collective_done,
    park,
    wake,
    handover,
    finish,
    note,
    failure,
};

const char* event_name(event_kind kind) {
    switch (kind) {
    case event_kind::send: return "send";
    case event_kind::inject: return "inject";
    case event_kind::match: return "match";
    case event_kind::deliver: return "deliver";
    case event_kind::sum_start: return "sum_start";
    case event_kind::sum_done: return "sum_done";
    case event_kind::collective_enter: return "collective";
    case event_kind::collective_done: return "collective_done";
    case event_kind::park: return "park";
    case event_kind::wake: return "wake";
    case event_kind::handover: return "run";
    case event_kind::finish: return "finish";
    case event_kind::note: return "note";
    case event_kind::failure: return "FAIL";
    }
    return "?";
}

struct trace_event {
    std::uint64_t step = 0;
    std::uint64_t clock = 0;
    int rank = -1;
    event_kind kind = event_kind::note;
    const char* label = "";
    std::uint64_t a = 0, b = 0, c = 0;
};

std::string format_event(const trace_event& event) {
    char line[256];
    std::snprintf(line, sizeof line, "step %" PRIu64 " t=%" PRIu64 " r%d %s %s %" PRIu64 " %" PRIu64 " %" PRIu64,
                  event.step, event.clock, event.rank, event_name(event.kind), event.label, event.a, event.b,
                  event.c);
    return line;
}

struct sim_message {
    std::uint64_t id = 0;
    int communicator = 0;
    int source = 0;
    int destination = 0;
    std::uint64_t ticket = 0;
    bool synchronous = false;
    bool injected = false;
    int channel = 0;
    std::vector<std::byte> bytes;
    const std::byte* original = nullptr;  // the sender's buffer, compared at match time
};

enum class send_status : std::uint8_t { pending, complete, reported };

struct endpoint {
    bool created = false;
    bool opened = false;
    bool closed = false;
    std::size_t max_message_bytes = 0;
    std::size_t receive_buffers = 1;     // posted receives per channel
    int channels = 1;
    // By channel: arrived, not yet matched by a posted receive; matched, waiting for poll().
    std::deque<sim_message> unexpected[runtime::max_channels];
    std::deque<sim_message> matched[runtime::max_channels];
    std::vector<send_status> sends;      // by ticket
    std::uint64_t sums_started = 0;
    bool sum_pending = false;
    std::uint64_t sum_round = 0;
    std::span<std::int64_t> sum_output;
    std::uint64_t collectives_started = 0;
};

struct sum_round {
    std::vector<std::int64_t> totals;
    int arrived = 0;
    int consumed = 0;
    bool complete = false;
    std::vector<std::uint64_t> visible_at;
};

enum class collective_kind : std::uint8_t { min_max, barrier };

struct collective {
    collective_kind kind = collective_kind::barrier;
    std::vector<std::int64_t> minimum;
    std::vector<std::int64_t> maximum;
    int first_rank = 0;
    int arrived = 0;
    int consumed = 0;
    bool complete = false;
    std::vector<int> waiters;
};

struct communicator {
    std::vector<endpoint> endpoints;
    std::vector<std::uint64_t> last_arrival;  // [source * P + destination]
    std::map<std::uint64_t, sum_round> sums;
    std::map<std::uint64_t, collective> collectives;
};

struct timed_event {
    std::uint64_t time;
    std::uint64_t order;
    std::uint64_t message_id;  // no_message: a wake-up for `rank`
    int rank;
    bool operator>(const timed_event& other) const {
        return time != other.time ? time > other.time : order > other.order;
    }
};
constexpr std::uint64_t no_message = ~std::uint64_t{0};

struct rank_slot {
    explicit rank_slot(std::uint64_t seed) : random(seed) {}
    std::binary_semaphore go{0};
    rank_state state = rank_state::runnable;
    bool news = false;  // something concerning this rank happened since its last idle()
    int communicators_made = 0;
    std::uint64_t world_collectives = 0;
    random_source random;
    const char* waiting_in = "";
    std::thread thread;
    std::unique_ptr<sim_context> context;
};

// Only the baton's holder runs, so the virtual ranks gain nothing from several
// CPUs, and on a loaded machine every handover to a thread on another CPU waits
// for that CPU's scheduler: p7's 150 seeds took 64-77 s of wall time for 6 s of
// CPU at load 4-10, and 7-8 s with the threads on one CPU (docs/maintainers.md,
// "How long the tests take").  So a run's rank threads share the CPU the caller
// is on (Linux; MPIDICT_SIM_PIN=0 leaves them to the scheduler).
struct one_cpu {
    int cpu = -1;
    void pin_this_thread() const {
#if defined(__linux__)
        if (cpu < 0)
            return;
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET(cpu, &set);
        (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);  // best effort: unpinned is only slower
        ask_short_slice();
#endif
    }

#if defined(__linux__)
    // Every handover wakes a thread on this CPU.  With another busy task here,
    // Linux's EEVDF scheduler (6.6 and later) lets the woken thread wait out that
    // task's time slice (about 3 ms): p7's 30 seeds took 3.7 s alone and 223 s
    // beside one busy loop on the CPU.  A fair task may ask for a shorter slice
    // (sched_setattr's sched_runtime, 6.12 and later); its earlier deadline then
    // lets the handover preempt the busy task.  Best effort: older kernels
    // ignore or refuse it.
    static void ask_short_slice() {
#if defined(SYS_sched_setattr)
        struct {
            std::uint32_t size;
            std::uint32_t sched_policy;
            std::uint64_t sched_flags;
            std::int32_t sched_nice;
            std::uint32_t sched_priority;
            std::uint64_t sched_runtime;
            std::uint64_t sched_deadline;
            std::uint64_t sched_period;
        } attr{};
        attr.size = sizeof(attr);
        attr.sched_policy = SCHED_OTHER;
        attr.sched_nice = getpriority(PRIO_PROCESS, 0);  // this thread's; the call sets it too
        attr.sched_runtime = 100'000;  // ns: the shortest slice the kernel grants
        (void)syscall(SYS_sched_setattr, 0, &attr, 0U);
#endif
    }
#endif
};

one_cpu pick_one_cpu() {
    one_cpu chosen;
#if defined(__linux__)
    if (const char* pin = std::getenv("MPIDICT_SIM_PIN"); pin != nullptr && std::strcmp(pin, "0") == 0)
        return chosen;
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0)
        return chosen;
    const int here = sched_getcpu();
    if (here >= 0 && here < CPU_SETSIZE && CPU_ISSET(here, &allowed)) {
        chosen.cpu = here;
        return chosen;
    }
    for (int each = 0; each < CPU_SETSIZE; ++each)
        if (CPU_ISSET(each, &allowed)) {
            chosen.cpu = each;
            break;
        }
#endif
    return chosen;
}

}  // namespace

class world {
public:
    world(int ranks, std::uint64_t seed, const options& settings,
          const std::function<void(int, sim_context&)>& body)
        : m_size(ranks), m_seed(seed), m_options(settings), m_body(body), m_random(mix64(seed ^ 0x73696d21ULL)) {
        m_slots.reserve(static_cast<std::size_t>(ranks));
        for (int rank = 0; rank < ranks; ++rank) {
            m_slots.push_back(std::make_unique<rank_slot>(mix64(seed * 0x9e3779b97f4a7c15ULL + std::uint64_t(rank) + 1)));
            m_slots.back()->context = std::make_unique<sim_context>(*this, rank);
        }
        m_world_comm.endpoints.resize(static_cast<std::size_t>(ranks));
        if (m_options.trace_capacity > 0)
            m_trace.resize(m_options.trace_capacity);
    }

    result execute() {
        const one_cpu cpu = pick_one_cpu();
        for (int rank = 0; rank < m_size; ++rank)
            m_slots[static_cast<std::size_t>(rank)]->thread = std::thread([this, rank, cpu] {
                cpu.pin_this_thread();
                thread_main(rank);
            });

        const int first = pick_runnable();
        m_current = first;
        record(first, event_kind::handover, "start");
        m_slots[static_cast<std::size_t>(first)]->go.release();
        m_done.acquire();
        for (auto& slot : m_slots)
            slot->thread.join();
        return make_result();
    }

    int size() const { return m_size; }
    std::uint64_t seed() const { return m_seed; }
    std::uint64_t steps() const { return m_steps; }
    std::uint64_t in_flight() const { return m_in_flight; }
    const options& settings() const { return m_options; }
    rank_slot& slot(int rank) { return *m_slots[static_cast<std::size_t>(rank)]; }

    // ---- scheduling --------------------------------------------------------------

    // A scheduling point of rank `me`.
    void step(int me, bool may_switch) {
        check_holder(me);
        ++m_steps;
        ++m_clock;
        if (m_steps > m_options.max_steps && !m_aborting)
            fail(me, "step limit of " + std::to_string(m_options.max_steps) +
                         " exceeded: livelock, or a run too long for its limit");
        if (m_aborting && m_steps > m_abort_step + 10'000'000) {
            std::fprintf(stderr, "mpidict::sim: seed %" PRIu64 ": ranks keep running after the failure: %s\n", m_seed,
                         m_failure.c_str());
            std::abort();
        }
        deliver_due();
        throw_if_aborting();
        if (may_switch)
            maybe_switch(me);
    }

    void maybe_switch(int me) {
        if (m_size == 1 || m_aborting)
            return;
        if (m_options.switch_probability < 1.0 && m_random.unit() >= m_options.switch_probability)
            return;
        const int next = pick_runnable();
        if (next == me || next < 0)
            return;
        ++m_switches;
        m_current = next;
        record(next, event_kind::handover, "");
        m_slots[static_cast<std::size_t>(next)]->go.release();
        slot(me).go.acquire();
        throw_if_aborting();
    }

    // `me` cannot go on (parked, blocked or finished): let others run until `me`
    // is runnable again and holds the baton.  A finished `me` returns at once.
    void switch_away(int me) {
        for (;;) {
            const int next = pick_runnable();
            if (next == me)
                return;
            if (next >= 0) {
                const bool finished = slot(me).state == rank_state::finished;
                ++m_switches;
                m_current = next;
                record(next, event_kind::handover, "");
                m_slots[static_cast<std::size_t>(next)]->go.release();
                if (!finished)
                    slot(me).go.acquire();
                return;
            }
            if (!m_events.empty()) {
                m_clock = std::max(m_clock, m_events.top().time);
                deliver_due();
                continue;
            }
            if (std::all_of(m_slots.begin(), m_slots.end(),
                            [](const auto& each) { return each->state == rank_state::finished; })) {
                m_done.release();
                return;
            }
            std::string who;
            for (int rank = 0; rank < m_size; ++rank) {
                const rank_slot& each = slot(rank);
                who += " r" + std::to_string(rank) + ":" +
                       (each.state == rank_state::finished ? std::string("finished")
                        : each.state == rank_state::parked ? std::string("idle")
                                                           : std::string(each.waiting_in));
            }
            fail(me, "deadlock: every rank waits and nothing is in transit;" + who);
        }
    }

    void park(int me) {
        rank_slot& self = slot(me);
        if (m_aborting)
            return;  // unwinding after a failure: never wait again
        if (self.news) {
            self.news = false;
            maybe_switch(me);
            return;
        }
        self.state = rank_state::parked;
        self.waiting_in = "idle";
        record(me, event_kind::park, "idle");
        switch_away(me);
        self.news = false;
        throw_if_aborting();
    }

    void notify(int rank) {
        rank_slot& target = slot(rank);
        target.news = true;
        if (target.state == rank_state::parked) {
            target.state = rank_state::runnable;
            record(rank, event_kind::wake, "");
        }
    }

    int pick_runnable() {
        int candidates[64];
        std::vector<int> many;
        int count = 0;
        for (int rank = 0; rank < m_size; ++rank) {
            if (slot(rank).state != rank_state::runnable)
                continue;
            if (count < 64)
                candidates[count] = rank;
            else
                many.push_back(rank);
            ++count;
        }
        if (count == 0)
            return -1;
        const auto choice = static_cast<int>(m_random.below(static_cast<std::uint64_t>(count)));
        return choice < 64 ? candidates[choice] : many[static_cast<std::size_t>(choice - 64)];
    }

    void check_holder(int me) const {
        if (m_current != me) {
            std::fprintf(stderr,
                         "mpidict::sim: rank %d used the simulation without holding the baton (rank %d holds it); "
                         "a virtual rank must not use another rank's context or transport, nor start threads\n",
                         me, m_current);
            std::abort();
        }
    }

    // ---- failure -----------------------------------------------------------------

    // Records the first failure, wakes every waiting rank, and throws aborted at
    // `me` unless it is already unwinding.
    void fail(int me, const std::string& why) {
        fail_quietly(me, why);
        throw_if_aborting();
    }

    void fail_quietly(int me, const std::string& why) {
        if (!m_failed) {
            m_failed = true;
            m_failure = "seed " + std::to_string(m_seed) + ", " + std::to_string(m_size) + " ranks, step " +
                        std::to_string(m_steps) + ", rank " + std::to_string(me) + ": " + why;
            record(me, event_kind::failure, "");
            if (m_options.trace_stream)
                std::fprintf(m_options.trace_stream, "mpidict::sim: FAILED %s\n", m_failure.c_str());
        }
        if (!m_aborting) {
            m_aborting = true;
            m_abort_step = m_steps;
        }
        // Every waiting rank must run once more to unwind.
        for (auto& each : m_slots)
            if (each->state == rank_state::parked || each->state == rank_state::blocked)
                each->state = rank_state::runnable;
    }

    void throw_if_aborting() const {
        if (m_aborting && std::uncaught_exceptions() == 0)
            throw aborted();
    }
    bool aborting() const { return m_aborting; }

    // ---- trace -------------------------------------------------------------------

    void record(int rank, event_kind kind, const char* label, std::uint64_t a = 0, std::uint64_t b = 0,
                std::uint64_t c = 0) {
        const trace_event event{m_steps, m_clock, rank, kind, label, a, b, c};
        m_trace_hash = mix64(m_trace_hash ^ (event.step * 31 + static_cast<std::uint64_t>(kind))) ^
                       mix64(static_cast<std::uint64_t>(rank + 1) ^ (a * 0x9e3779b97f4a7c15ULL) ^ (b << 17) ^ c);
        if (!m_trace.empty()) {
            m_trace[m_trace_next % m_trace.size()] = event;
            ++m_trace_next;
        }
        if (m_options.trace_stream)
            std::fprintf(m_options.trace_stream, "%s\n", format_event(event).c_str());
    }

    // ---- network -----------------------------------------------------------------

    communicator& comm(int index) { return m_comms[static_cast<std::size_t>(index)]; }

    int make_communicator(int me) {
        rank_slot& self = slot(me);
        const int index = self.communicators_made++;
        while (static_cast<int>(m_comms.size()) <= index) {
            m_comms.emplace_back();
            m_comms.back().endpoints.resize(static_cast<std::size_t>(m_size));
            m_comms.back().last_arrival.assign(static_cast<std::size_t>(m_size) * static_cast<std::size_t>(m_size), 0);
        }
        endpoint& mine = comm(index).endpoints[static_cast<std::size_t>(me)];
        mine.created = true;
        return index;
    }

    void enqueue(int me, sim_message message) {
        message.id = m_next_message_id++;
        const std::size_t pair = static_cast<std::size_t>(message.source) * static_cast<std::size_t>(m_size) +
                                 static_cast<std::size_t>(message.destination);
        std::uint64_t& last = comm(message.communicator).last_arrival[pair];
        const std::uint64_t ready = std::max(m_clock + m_random.below(std::uint64_t{m_options.max_delay_steps} + 1), last);
        last = ready;
        record(me, message.injected ? event_kind::inject : event_kind::send, "", static_cast<std::uint64_t>(message.destination),
               message.bytes.size(), ready);
        m_events.push(timed_event{ready, m_next_order++, message.id, message.destination});
        ++m_in_flight;
        if (!message.injected)
            ++m_messages_sent;
        m_transit.emplace(message.id, std::move(message));
    }

    void deliver_due() {
        while (!m_events.empty() && m_events.top().time <= m_clock) {
            const timed_event event = m_events.top();
            m_events.pop();
            if (event.message_id == no_message) {
                notify(event.rank);
                continue;
            }
            auto found = m_transit.find(event.message_id);
            sim_message message = std::move(found->second);
            m_transit.erase(found);
            const int communicator_index = message.communicator;
            const int destination = message.destination;
            const int channel = message.channel;
            comm(communicator_index).endpoints[static_cast<std::size_t>(destination)].unexpected[channel].push_back(
                std::move(message));
            match(communicator_index, destination);
        }
    }

    // Posted receives take arrived messages in arrival order.
    void match(int communicator_index, int rank) {
        communicator& c = comm(communicator_index);
        endpoint& receiver = c.endpoints[static_cast<std::size_t>(rank)];
        if (!receiver.opened || receiver.closed)
            return;
        for (int channel = 0; channel < receiver.channels; ++channel) {
            while (receiver.matched[channel].size() < receiver.receive_buffers && !receiver.unexpected[channel].empty()) {
                sim_message message = std::move(receiver.unexpected[channel].front());
                receiver.unexpected[channel].pop_front();
                record(rank, event_kind::match, "", static_cast<std::uint64_t>(message.source), message.bytes.size(),
                       message.id);
                if (message.bytes.size() > receiver.max_message_bytes) {
                    fail_quietly(rank, "a message of " + std::to_string(message.bytes.size()) + " bytes from rank " +
                                           std::to_string(message.source) + " exceeds the receive size of " +
                                           std::to_string(receiver.max_message_bytes) + " bytes (MPI would truncate it)");
                    return;
                }
                if (!message.injected) {
                    endpoint& sender = c.endpoints[static_cast<std::size_t>(message.source)];
                    if (message.original && !sender.closed &&
                        std::memcmp(message.original, message.bytes.data(), message.bytes.size()) != 0) {
                        fail_quietly(message.source, "rank " + std::to_string(message.source) +
                                                         " changed a send buffer before its send completed");
                        return;
                    }
                    if (message.synchronous && message.ticket < sender.sends.size() &&
                        sender.sends[message.ticket] == send_status::pending) {
                        sender.sends[message.ticket] = send_status::complete;
                        notify(message.source);
                    }
                }
                receiver.matched[channel].push_back(std::move(message));
                notify(rank);
            }
        }
    }

    void forget_originals(int communicator_index, int rank) {
        auto clear = [&](sim_message& message) {
            if (message.communicator == communicator_index && message.source == rank)
                message.original = nullptr;
        };
        for (auto& [id, message] : m_transit)
            clear(message);
        for (auto& each : comm(communicator_index).endpoints) {
            for (int channel = 0; channel < runtime::max_channels; ++channel) {
                for (auto& message : each.unexpected[channel])
                    clear(message);
                for (auto& message : each.matched[channel])
                    clear(message);
            }
        }
    }

    void delivered(int me, const sim_message& message) {
        --m_in_flight;
        ++m_messages_delivered;
        const std::uint64_t content = hash_bytes(message.bytes.data(), message.bytes.size());
        m_delivery_hash = mix64(m_delivery_hash ^ m_steps) ^
                          mix64(content + (static_cast<std::uint64_t>(message.communicator) << 40) +
                                (static_cast<std::uint64_t>(message.source) << 20) +
                                static_cast<std::uint64_t>(message.destination));
        record(me, event_kind::deliver, "", static_cast<std::uint64_t>(message.source), message.bytes.size(),
               content & 0xffffffffULL);
    }

    void wake_at(std::uint64_t time, int rank) {
        m_events.push(timed_event{time, m_next_order++, no_message, rank});
    }

    std::uint64_t clock() const { return m_clock; }
    random_source& random() { return m_random; }

    // ---- collectives ----------------------------------------------------------------

    // Blocks `me` until every rank has called the index-th collective of `c`; returns it.
    collective& enter_collective(int me, communicator& c, std::uint64_t index, collective_kind kind,
                                 std::span<const std::int64_t> input, const char* name) {
        step(me, true);
        auto [position, first] = c.collectives.try_emplace(index);
        collective& instance = position->second;
        if (first) {
            instance.kind = kind;
            instance.minimum.assign(input.begin(), input.end());
            instance.maximum.assign(input.begin(), input.end());
            instance.first_rank = me;
        } else if (instance.kind != kind || instance.minimum.size() != input.size()) {
            fail(me, std::string("collective mismatch: this rank calls ") + name + " with " +
                         std::to_string(input.size()) + " values where rank " + std::to_string(instance.first_rank) +
                         " called " + (instance.kind == collective_kind::barrier ? "barrier" : "min_max") + " with " +
                         std::to_string(instance.minimum.size()));
        } else {
            for (std::size_t index_value = 0; index_value < input.size(); ++index_value) {
                instance.minimum[index_value] = std::min(instance.minimum[index_value], input[index_value]);
                instance.maximum[index_value] = std::max(instance.maximum[index_value], input[index_value]);
            }
        }
        record(me, event_kind::collective_enter, name, index, input.size());
        ++instance.arrived;
        if (instance.arrived == m_size) {
            instance.complete = true;
            record(me, event_kind::collective_done, name, index);
            for (int waiter : instance.waiters) {
                slot(waiter).state = rank_state::runnable;
                slot(waiter).news = true;
            }
            instance.waiters.clear();
        } else {
            instance.waiters.push_back(me);
            rank_slot& self = slot(me);
            while (!instance.complete && !m_aborting) {
                self.state = rank_state::blocked;
                self.waiting_in = name;
                switch_away(me);
            }
            throw_if_aborting();  // an unwinding rank gives up on the collective instead
        }
        return instance;
    }

    void leave_collective(communicator& c, std::uint64_t index) {
        auto position = c.collectives.find(index);
        if (position != c.collectives.end() && ++position->second.consumed == m_size)
            c.collectives.erase(position);
    }

    communicator& world_comm() { return m_world_comm; }

private:
    void thread_main(int rank) {
        rank_slot& self = slot(rank);
        self.go.acquire();
        try {
            m_body(rank, *self.context);
        } catch (const aborted&) {
        } catch (const std::exception& problem) {
            fail_quietly(rank, std::string("the rank's function threw: ") + problem.what());
        } catch (...) {
            fail_quietly(rank, "the rank's function threw a non-standard exception");
        }
        self.state = rank_state::finished;
        record(rank, event_kind::finish, "");
        switch_away(rank);
    }

    result make_result() const {
        result out;
        out.ok = !m_failed;
        out.ranks = m_size;
        out.seed = m_seed;
        out.failure = m_failure;
        out.steps = m_steps;
        out.clock = m_clock;
        out.switches = m_switches;
        out.messages_sent = m_messages_sent;
        out.messages_delivered = m_messages_delivered;
        out.messages_undelivered = m_in_flight;
        out.delivery_hash = m_delivery_hash;
        out.trace_hash = m_trace_hash;
        if (!m_trace.empty()) {
            const std::uint64_t kept = std::min<std::uint64_t>(m_trace_next, m_trace.size());
            for (std::uint64_t index = m_trace_next - kept; index < m_trace_next; ++index) {
                out.trace += format_event(m_trace[index % m_trace.size()]);
                out.trace += '\n';
            }
        }
        return out;
    }

    int m_size;
    std::uint64_t m_seed;
    options m_options;
    const std::function<void(int, sim_context&)>& m_body;
    random_source m_random;
    std::vector<std::unique_ptr<rank_slot>> m_slots;
    std::binary_semaphore m_done{0};
    int m_current = -1;
    std::uint64_t m_steps = 0;
    std::uint64_t m_clock = 0;
    std::uint64_t m_switches = 0;
    bool m_failed = false;
    bool m_aborting = false;
    std::uint64_t m_abort_step = 0;
    std::string m_failure;
    std::deque<communicator> m_comms;
    communicator m_world_comm;
    std::priority_queue<timed_event, std::vector<timed_event>, std::greater<timed_event>> m_events;
    std::unordered_map<std::uint64_t, sim_message> m_transit;
    std::uint64_t m_next_message_id = 0;
    std::uint64_t m_next_order = 0;
    std::uint64_t m_in_flight = 0;
    std::uint64_t m_messages_sent = 0;
    std::uint64_t m_messages_delivered = 0;
    std::uint64_t m_delivery_hash = 0x6d70696469637421ULL;
    std::uint64_t m_trace_hash = 0;
    std::vector<trace_event> m_trace;
    std::uint64_t m_trace_next = 0;
};

namespace {

class sim_transport final : public runtime::transport {
public:
    sim_transport(world& owner, int communicator_index, int rank)
        : m_world(owner), m_comm(communicator_index), m_rank(rank) {}

    int rank() const override { return m_rank; }
    int size() const override { return m_world.size(); }

    void open(std::size_t max_message_bytes, std::size_t receive_buffers, int channels) override {
        m_world.check_holder(m_rank);
        endpoint& self = mine();
        self.opened = true;
        self.max_message_bytes = max_message_bytes;
        self.receive_buffers = std::max<std::size_t>(receive_buffers, 1);
        self.channels = std::clamp(channels, 1, runtime::max_channels);
        m_world.match(m_comm, m_rank);
    }

    std::uint64_t start_send(int destination, std::span<const std::byte> message, bool synchronous,
                             int channel) override {
        m_world.step(m_rank, m_world.settings().yield_on_send);
        endpoint& self = mine();
        const std::uint64_t ticket = self.sends.size();
        if (destination < 0 || destination >= m_world.size() || self.closed) {
            m_world.fail(m_rank, self.closed ? std::string("send on a closed transport")
                                             : "send to rank " + std::to_string(destination) + " outside [0, " +
                                                   std::to_string(m_world.size()) + ")");
            self.sends.push_back(send_status::complete);  // only reached while unwinding
            return ticket;
        }
        self.sends.push_back(synchronous ? send_status::pending : send_status::complete);
        sim_message out;
        out.communicator = m_comm;
        out.source = m_rank;
        out.destination = destination;
        out.ticket = ticket;
        out.synchronous = synchronous;
        out.channel = std::clamp(channel, 0, runtime::max_channels - 1);
        out.bytes.assign(message.begin(), message.end());
        out.original = synchronous ? message.data() : nullptr;
        m_world.enqueue(m_rank, std::move(out));
        return ticket;
    }

    bool send_complete(std::uint64_t ticket) override {
        m_world.step(m_rank, true);
        endpoint& self = mine();
        if (ticket >= self.sends.size() || self.sends[ticket] == send_status::reported) {
            m_world.fail(m_rank, "send_complete on ticket " + std::to_string(ticket) +
                                     " that was never issued or already completed");
            return true;  // only reached while unwinding
        }
        if (self.sends[ticket] != send_status::complete)
            return false;
        self.sends[ticket] = send_status::reported;
        return true;
    }

    bool poll(runtime::message_sink& sink, int channels) override {
        m_world.step(m_rank, true);
        endpoint& self = mine();
        // Direct messages first, as the MPI transport takes them.
        int channel = 0;
        while (channel < std::min(channels, self.channels) && self.matched[channel].empty())
            ++channel;
        if (channel >= std::min(channels, self.channels))
            return false;
        sim_message message = std::move(self.matched[channel].front());
        self.matched[channel].pop_front();
        m_world.match(m_comm, m_rank);  // the ring re-posts its receive first, as MPI's does
        m_world.delivered(m_rank, message);
        // Exactly the message's size on the heap: an overread is caught by ASan.
        std::unique_ptr<std::byte[]> exact(new std::byte[std::max<std::size_t>(message.bytes.size(), 1)]);
        if (!message.bytes.empty())
            std::memcpy(exact.get(), message.bytes.data(), message.bytes.size());
        const std::size_t bytes = message.bytes.size();
        message.bytes.clear();
        message.bytes.shrink_to_fit();
        sink.deliver(message.source, channel, std::span<const std::byte>(exact.get(), bytes));
        return true;
    }

    void start_sum(std::span<const std::int64_t> input, std::span<std::int64_t> output) override {
        m_world.step(m_rank, true);
        endpoint& self = mine();
        if (self.sum_pending || output.size() != input.size()) {
            m_world.fail(m_rank, self.sum_pending ? "start_sum while a sum is still running"
                                                  : "start_sum with input and output of different lengths");
            return;  // only reached while unwinding
        }
        const std::uint64_t index = self.sums_started++;
        communicator& c = m_world.comm(m_comm);
        auto [position, first] = c.sums.try_emplace(index);
        sum_round& round = position->second;
        if (first) {
            round.totals.assign(input.size(), 0);
            round.visible_at.assign(static_cast<std::size_t>(m_world.size()), 0);
        } else if (round.totals.size() != input.size()) {
            m_world.fail(m_rank, "sum #" + std::to_string(index) + " called with " + std::to_string(input.size()) +
                                     " values here and " + std::to_string(round.totals.size()) + " elsewhere");
            return;  // only reached while unwinding
        }
        for (std::size_t index_value = 0; index_value < input.size(); ++index_value)
            round.totals[index_value] += input[index_value];
        self.sum_pending = true;
        self.sum_round = index;
        self.sum_output = output;
        m_world.record(m_rank, event_kind::sum_start, "", index, input.empty() ? 0 : static_cast<std::uint64_t>(input[0]),
                       input.size() > 1 ? static_cast<std::uint64_t>(input[1]) : 0);
        if (++round.arrived == m_world.size()) {
            round.complete = true;
            for (int rank = 0; rank < m_world.size(); ++rank) {
                const std::uint64_t at =
                    m_world.clock() + m_world.random().below(std::uint64_t{m_world.settings().max_sum_delay_steps} + 1);
                round.visible_at[static_cast<std::size_t>(rank)] = at;
                m_world.wake_at(at, rank);
            }
        }
    }

    bool sum_complete() override {
        m_world.step(m_rank, true);
        endpoint& self = mine();
        if (!self.sum_pending) {
            m_world.fail(m_rank, "sum_complete without a running sum");
            return true;  // only reached while unwinding
        }
        communicator& c = m_world.comm(m_comm);
        auto position = c.sums.find(self.sum_round);
        sum_round& round = position->second;
        if (!round.complete || m_world.clock() < round.visible_at[static_cast<std::size_t>(m_rank)])
            return false;
        std::copy(round.totals.begin(), round.totals.end(), self.sum_output.begin());
        m_world.record(m_rank, event_kind::sum_done, "", self.sum_round,
                       round.totals.empty() ? 0 : static_cast<std::uint64_t>(round.totals[0]),
                       round.totals.size() > 1 ? static_cast<std::uint64_t>(round.totals[1]) : 0);
        self.sum_pending = false;
        if (++round.consumed == m_world.size())
            c.sums.erase(position);
        return true;
    }

    void min_max(std::span<const std::int64_t> input, std::span<std::int64_t> minimum,
                 std::span<std::int64_t> maximum) override {
        communicator& c = m_world.comm(m_comm);
        const std::uint64_t index = mine().collectives_started++;
        collective& instance = m_world.enter_collective(m_rank, c, index, collective_kind::min_max, input, "min_max");
        if (instance.complete) {
            std::copy(instance.minimum.begin(), instance.minimum.end(), minimum.begin());
            std::copy(instance.maximum.begin(), instance.maximum.end(), maximum.begin());
        }
        m_world.leave_collective(c, index);
    }

    void barrier() override {
        communicator& c = m_world.comm(m_comm);
        const std::uint64_t index = mine().collectives_started++;
        m_world.enter_collective(m_rank, c, index, collective_kind::barrier, {}, "barrier");
        m_world.leave_collective(c, index);
    }

    void close() override {
        endpoint& self = mine();
        if (self.closed)
            return;
        self.closed = true;
        // The engine may free its send buffers now; stop comparing against them.
        m_world.forget_originals(m_comm, m_rank);
    }

    void idle() override {
        m_world.step(m_rank, false);
        m_world.park(m_rank);
    }

private:
    endpoint& mine() { return m_world.comm(m_comm).endpoints[static_cast<std::size_t>(m_rank)]; }

    world& m_world;
    int m_comm;
    int m_rank;
};

}  // namespace

// ---- sim_context ---------------------------------------------------------------

int sim_context::size() const { return m_world->size(); }
std::uint64_t sim_context::seed() const { return m_world->seed(); }

std::unique_ptr<runtime::transport> sim_context::make_transport() {
    m_world->check_holder(m_rank);
    const int index = m_world->make_communicator(m_rank);
    return std::make_unique<sim_transport>(*m_world, index, m_rank);
}

std::uint64_t sim_context::random() {
    m_world->check_holder(m_rank);
    return m_world->slot(m_rank).random.next();
}

std::uint64_t sim_context::random_below(std::uint64_t bound) {
    m_world->check_holder(m_rank);
    return m_world->slot(m_rank).random.below(bound);
}

void sim_context::yield() { m_world->step(m_rank, true); }

void sim_context::barrier() {
    communicator& c = m_world->world_comm();
    const std::uint64_t index = m_world->slot(m_rank).world_collectives++;
    m_world->enter_collective(m_rank, c, index, collective_kind::barrier, {}, "world barrier");
    m_world->leave_collective(c, index);
}

std::uint64_t sim_context::messages_in_flight() const {
    m_world->check_holder(m_rank);
    return m_world->in_flight();
}

std::uint64_t sim_context::step() const { return m_world->steps(); }

void sim_context::note(const char* label, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
    m_world->check_holder(m_rank);
    m_world->record(m_rank, event_kind::note, label, a, b, c);
}

void sim_context::fail(std::string_view why) {
    m_world->check_holder(m_rank);
    m_world->fail(m_rank, std::string(why));
    throw aborted();  // unwinding already: fail() did not throw
}

void sim_context::inject(int communicator_index, int source, int destination, std::span<const std::byte> bytes) {
    m_world->check_holder(m_rank);
    if (communicator_index < 0 || communicator_index >= m_world->slot(m_rank).communicators_made)
        throw invalid_argument_error("mpidict::sim: inject into communicator " + std::to_string(communicator_index) +
                                     " that this rank has not made");
    if (source < 0 || source >= m_world->size() || destination < 0 || destination >= m_world->size())
        throw invalid_argument_error("mpidict::sim: inject between ranks outside the world");
    sim_message message;
    message.communicator = communicator_index;
    message.source = source;
    message.destination = destination;
    message.injected = true;
    message.bytes.assign(bytes.begin(), bytes.end());
    m_world->enqueue(m_rank, std::move(message));
}

result run(int ranks, std::uint64_t seed, const options& settings,
           const std::function<void(int rank, sim_context& context)>& body) {
    if (ranks < 1 || ranks > 4096)
        throw invalid_argument_error("mpidict::sim: ranks = " + std::to_string(ranks) + " is outside [1, 4096]");
    if (!body)
        throw invalid_argument_error("mpidict::sim: run needs a function to run on every rank");
    world simulation(ranks, seed, settings, body);
    return simulation.execute();
}

}  // namespace mpidict::sim
