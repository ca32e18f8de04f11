// The MPI transport: synchronous sends for full buffers, standard ones for the rest, a ring of pre-posted
// receives from any source, and MPI_Iallreduce for flush's termination detection.
// All traffic runs on a private duplicate of the user's communicator with
// MPI_ERRORS_RETURN, so every MPI failure becomes an mpi_error with MPI's text.

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include <string>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/runtime/serving.hpp"
#include "mpidict/runtime/transport.hpp"

namespace mpidict::runtime {

void check_mpi(int code, const char* call) {
    if (code == MPI_SUCCESS) [[likely]]
        return;
    char text[MPI_MAX_ERROR_STRING];
    int length = 0;
    if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
        length = 0;
    throw mpi_error(std::string("mpidict: ") + call + " failed: " + std::string(text, static_cast<std::size_t>(length)));
}

bool test_complete(MPI_Request& request, const char* call) {
    if (request == MPI_REQUEST_NULL)
        return true;
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
    return done != 0;
}

void start_allreduce(const void* input, void* output, int count, MPI_Datatype type, MPI_Op op,
                     MPI_Comm communicator, MPI_Request* request, const char* call) {
#if MPIDICT_SMPI
    *request = MPI_REQUEST_NULL;
    check_mpi(MPI_Allreduce(input, output, count, type, op, communicator), call);
#else
    check_mpi(MPI_Iallreduce(input, output, count, type, op, communicator, request), call);
#endif
}

void start_barrier(MPI_Comm communicator, MPI_Request* request) {
#if MPIDICT_SMPI
    *request = MPI_REQUEST_NULL;
    check_mpi(MPI_Barrier(communicator), "MPI_Barrier");
#else
    check_mpi(MPI_Ibarrier(communicator, request), "MPI_Ibarrier");
#endif
}

namespace {

constexpr int message_tag = 4701;

// Waits for a non-blocking collective without spinning inside MPI: blocking
// collectives busy-poll, and with more ranks than cores the rank that must
// take part next may sit descheduled for a whole time slice per round (a
// hash_map took 65-112 ms to build at 4 ranks on 2 cores, 0.3 ms at 2).
// `yields`: polls that yield before the wait starts sleeping 10 us a poll (the
// transport's idle policy: few when ranks outnumber cores).
// Every other container of this thread is served meanwhile (serving.hpp): a
// rank may wait on one of them for this rank, which sits in this collective.
void wait_yielding(MPI_Request& request, const char* call, unsigned yields) {
    for (unsigned polls = 0; !test_complete(request, call); ++polls) {
        if (serve_other_containers(nullptr)) {
            polls = 0;
        } else if (polls < yields) {
            sched_yield();
        } else {
            const timespec pause{0, 10'000};
            nanosleep(&pause, nullptr);
        }
    }
}

}  // namespace

// Ranks of a communicator that share this node, remembered per set of ranks
// (as MPI_COMM_WORLD ranks): MPI_Comm_split_type is a blocking collective,
// and every member of a communicator builds its containers together, so they
// agree on whether the answer is remembered.
int ranks_on_node(MPI_Comm communicator) {
    static std::mutex guard;
    static std::map<std::vector<int>, int> known;
    std::vector<int> members;
    MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
    int size = 0;
    check_mpi(MPI_Comm_group(communicator, &group), "MPI_Comm_group");
    check_mpi(MPI_Comm_group(MPI_COMM_WORLD, &world), "MPI_Comm_group (world)");
    check_mpi(MPI_Group_size(group, &size), "MPI_Group_size");
    std::vector<int> local(static_cast<std::size_t>(size));
    for (int index = 0; index < size; ++index)
        local[static_cast<std::size_t>(index)] = index;
    members.resize(local.size());
    check_mpi(MPI_Group_translate_ranks(group, size, local.data(), world, members.data()), "MPI_Group_translate_ranks");
    MPI_Group_free(&group);
    MPI_Group_free(&world);
    // Ranks outside MPI_COMM_WORLD (spawned processes) are not remembered.
    const bool rememberable = std::find(members.begin(), members.end(), MPI_UNDEFINED) == members.end();
    if (rememberable) {
        std::lock_guard<std::mutex> lock(guard);
        if (const auto found = known.find(members); found != known.end())
            return found->second;
    }
    MPI_Comm node = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split_type(communicator, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node), "MPI_Comm_split_type");
    int count = 1;
    check_mpi(MPI_Comm_size(node, &count), "MPI_Comm_size (node)");
    MPI_Comm_free(&node);
    if (rememberable) {
        std::lock_guard<std::mutex> lock(guard);
        known.emplace(std::move(members), count);
    }
    return count;
}

namespace {

class mpi_transport final : public transport {
public:
    MPI_Comm mpi_communicator() const override { return m_communicator; }

    explicit mpi_transport(MPI_Comm communicator) {
        int initialised = 0;
        MPI_Initialized(&initialised);
        if (!initialised)
            throw mpi_error("mpidict: MPI is not initialised; call MPI_Init before creating a container");
#if MPIDICT_SMPI
        // SimGrid SMPI has no MPI_Comm_idup; simulated ranks never share a core.
        check_mpi(MPI_Comm_dup(communicator, &m_communicator), "MPI_Comm_dup");
#else
        MPI_Request duplicating = MPI_REQUEST_NULL;
        check_mpi(MPI_Comm_idup(communicator, &m_communicator, &duplicating), "MPI_Comm_idup");
        wait_yielding(duplicating, "MPI_Comm_idup", 200);  // before the idle policy is known
#endif
        check_mpi(MPI_Comm_set_errhandler(m_communicator, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check_mpi(MPI_Comm_rank(m_communicator, &m_rank), "MPI_Comm_rank");
        check_mpi(MPI_Comm_size(m_communicator, &m_size), "MPI_Comm_size");
        try {
            choose_idle_policy();
        } catch (...) {
            MPI_Comm_free(&m_communicator);
            throw;
        }
    }

    ~mpi_transport() override {
        if (m_communicator != MPI_COMM_NULL) {
            try {
                close();
            } catch (...) {
            }
        }
    }

    int rank() const override { return m_rank; }
    int size() const override { return m_size; }

    void open(std::size_t max_message_bytes, std::size_t receive_buffers, int channels) override {
        m_max_message_bytes = max_message_bytes;
        m_channels = std::clamp(channels, 1, max_channels);
        for (int channel = 0; channel < m_channels; ++channel) {
            ring& receives = m_rings[channel];
            receives.slots.resize(receive_buffers);
            for (auto& receive : receives.slots) {
                receive.buffer.resize(max_message_bytes);
                post(receive, channel);
            }
            receives.head = 0;
        }
    }

    std::uint64_t start_send(int destination, std::span<const std::byte> message, bool synchronous,
                             int channel) override {
        std::uint64_t ticket;
        if (!m_free_tickets.empty()) {
            ticket = m_free_tickets.back();
            m_free_tickets.pop_back();
        } else {
            ticket = m_sends.size();
            m_sends.push_back(MPI_REQUEST_NULL);
        }
        MPI_Request& request = m_sends[ticket];
        const int count = static_cast<int>(message.size());
        if (synchronous)
            check_mpi(MPI_Issend(message.data(), count, MPI_BYTE, destination, message_tag + channel, m_communicator,
                                 &request),
                      "MPI_Issend");
        else
            check_mpi(MPI_Isend(message.data(), count, MPI_BYTE, destination, message_tag + channel, m_communicator,
                                &request),
                      "MPI_Isend");
        return ticket;
    }

    bool send_complete(std::uint64_t ticket) override {
        // (Null once idle()'s MPI_Waitany completed it, under SimGrid.)
        const bool done = test_complete(m_sends[ticket], "MPI_Test (send)");
        if (done) {
            m_free_tickets.push_back(ticket);
            m_idle_calls = 0;
        }
        return done;
    }

    bool poll(message_sink& sink, int channels) override {
        // Direct messages first: they are never held back.
        for (int channel = 0; channel < std::min(channels, m_channels); ++channel)
            if (poll_channel(sink, channel))
                return true;
        return false;
    }

    bool poll_channel(message_sink& sink, int channel) {
        ring& receives = m_rings[channel];
        if (receives.slots.empty())
            return false;
        receive_slot& head = receives.slots[receives.head];
        int done = 0;
        MPI_Status status;
#if MPIDICT_SMPI
        if (head.waited) {
            done = 1;
            status = head.status;
            head.waited = false;
        } else
#endif
            check_mpi(MPI_Test(&head.request, &done, &status), "MPI_Test (receive)");
        if (!done)
            return false;
        m_idle_calls = 0;
        int bytes = 0;
        check_mpi(MPI_Get_count(&status, MPI_BYTE, &bytes), "MPI_Get_count");
        const int source = status.MPI_SOURCE;
        // Advance first: the handler may poll again (nested progress).
        receives.head = (receives.head + 1) % receives.slots.size();
        // Copy out so the receive can be re-posted before handlers run; the
        // buffer is swapped, not copied.
        std::vector<std::byte> message;
        message.swap(head.buffer);
        head.buffer.swap(m_spare);
        if (head.buffer.size() != m_max_message_bytes)
            head.buffer.resize(m_max_message_bytes);
        post(head, channel);
        struct restore {
            std::vector<std::byte>& spare;
            std::vector<std::byte>& message;
            ~restore() {
                if (spare.empty())
                    spare.swap(message);
            }
        } keep{m_spare, message};
        sink.deliver(source, channel, std::span<const std::byte>(message.data(), static_cast<std::size_t>(bytes)));
#if MPIDICT_SMPI
        // A real MPI advances a non-blocking collective inside the calls that
        // poll for messages; so does the stand-in for MPI_Iallreduce, after
        // every message handled (else a rank handling a burst delays every
        // rank's sum by the whole burst).
        m_doubling.advance();
#endif
        return true;
    }

    void start_sum(std::span<const std::int64_t> input, std::span<std::int64_t> output) override {
#if MPIDICT_SMPI
        m_doubling.start(m_communicator, m_rank, m_size, input, output);
        return;
#endif
        m_sum_input.assign(input.begin(), input.end());
        check_mpi(MPI_Iallreduce(m_sum_input.data(), output.data(), static_cast<int>(input.size()), MPI_INT64_T,
                                 MPI_SUM, m_communicator, &m_sum_request),
                  "MPI_Iallreduce");
    }

    bool sum_complete() override {
#if MPIDICT_SMPI
        return m_doubling.advance();
#endif
        int done = 0;
        check_mpi(MPI_Test(&m_sum_request, &done, MPI_STATUS_IGNORE), "MPI_Test (allreduce)");
        return done != 0;
    }

    void min_max(std::span<const std::int64_t> input, std::span<std::int64_t> minimum,
                 std::span<std::int64_t> maximum) override {
        // One reduction: the minimum of x and of ~x (~max x = min ~x, no overflow).
        const std::size_t count = input.size();
        std::vector<std::int64_t> both(2 * count), result(2 * count);
        for (std::size_t index = 0; index < count; ++index) {
            both[index] = input[index];
            both[count + index] = ~input[index];
        }
        MPI_Request request = MPI_REQUEST_NULL;
        start_allreduce(both.data(), result.data(), static_cast<int>(2 * count), MPI_INT64_T, MPI_MIN, m_communicator,
                        &request, "MPI_Iallreduce (min/max)");
        wait_yielding(request, "MPI_Iallreduce (min/max)", idle_calls_before_sleep);
        for (std::size_t index = 0; index < count; ++index) {
            minimum[index] = result[index];
            maximum[index] = ~result[count + index];
        }
    }

    void barrier() override {
        MPI_Request request = MPI_REQUEST_NULL;
        start_barrier(m_communicator, &request);
        wait_yielding(request, "MPI_Ibarrier", idle_calls_before_sleep);
    }

    void close() override {
        int finalised = 0;
        MPI_Finalized(&finalised);
        release(/*with_mpi=*/!finalised, /*free_communicator=*/!finalised);
    }

    // MPI_Finalize has begun: cancel the posted receives and let the sends go
    // (local calls); the communicator is left to MPI_Finalize, since freeing it
    // is collective and the other ranks may not be here.
    void abandon() override { release(/*with_mpi=*/true, /*free_communicator=*/false); }

    // Yield first; if nothing has happened for a while, sleep briefly so that a
    // rank that shares its core with the rank it waits for gives the core away
    // (sched_yield alone lets two spinning ranks trade the core back and forth).
    void idle() override {
#if MPIDICT_SMPI
        if (wait_for_any())
            return;
#endif
        if (++m_idle_calls < idle_calls_before_sleep) {
            sched_yield();
        } else {
            const timespec pause{0, m_idle_sleep_ns};
            nanosleep(&pause, nullptr);
        }
    }

private:
    // The end of this transport: with_mpi cancels the posted receives and frees
    // the send requests (local calls), free_communicator also frees the
    // communicator (collective); without them the handles are only forgotten
    // (after MPI_Finalize).
    void release(bool with_mpi, bool free_communicator) {
        if (m_communicator == MPI_COMM_NULL)
            return;
        if (with_mpi) {
            for (ring& receives : m_rings) {
                for (auto& receive : receives.slots) {
                    if (receive.request != MPI_REQUEST_NULL) {
                        MPI_Cancel(&receive.request);
                        MPI_Wait(&receive.request, MPI_STATUS_IGNORE);
                    }
                }
            }
            for (auto& send : m_sends) {
                if (send != MPI_REQUEST_NULL)
                    MPI_Request_free(&send);
            }
        }
        if (free_communicator)
            MPI_Comm_free(&m_communicator);
        m_communicator = MPI_COMM_NULL;
        for (ring& receives : m_rings)
            receives.slots.clear();
    }

    // Ranks that share a node with more ranks than it has cores must give their
    // core away quickly when idle: the rank they wait for may need it.  Measured
    // here (4 ranks, 2 cores): single find round trip ~1,300 us with sched_yield
    // alone, ~150-200 us when sleeping 10 us after two idle yields.
    // MPIDICT_IDLE=yield|sleep overrides the detection.
    void choose_idle_policy() {
        const int sharing = ranks_on_node(m_communicator);
        int cores = 0;
        cpu_set_t mask;
        if (sched_getaffinity(0, sizeof mask, &mask) == 0)
            cores = CPU_COUNT(&mask);
        if (cores <= 0)
            cores = static_cast<int>(std::thread::hardware_concurrency());
        bool oversubscribed = cores > 0 && sharing > cores;
        if (const char* choice = std::getenv("MPIDICT_IDLE")) {
            if (std::strcmp(choice, "sleep") == 0)
                oversubscribed = true;
            else if (std::strcmp(choice, "yield") == 0)
                oversubscribed = false;
            else if (std::strcmp(choice, "auto") != 0 && *choice != '\0')
                throw invalid_argument_error(std::string("mpidict: MPIDICT_IDLE = '") + choice +
                                             "' is not one of: sleep, yield, auto (unset or empty: auto)");
        }
        idle_calls_before_sleep = oversubscribed ? 2 : 1000;
#if MPIDICT_SMPI
        // Under SimGrid a yield lets no simulated time pass and every poll is a
        // simulation step: an idle rank sleeps (simulated) at once, and briefly.
        idle_calls_before_sleep = 0;
        m_idle_sleep_ns = 2'000;
#endif
    }

    struct receive_slot {
        std::vector<std::byte> buffer;
        MPI_Request request = MPI_REQUEST_NULL;
#if MPIDICT_SMPI
        bool waited = false;  // completed in idle()'s MPI_Waitany, with this status
        MPI_Status status{};
#endif
    };

#if MPIDICT_SMPI
    // Under SimGrid every poll is a simulation step (1024 simulated ranks
    // polling made the simulator crawl) and each costs simulated time, a
    // latency no real network adds (MPICH's MPI_Test takes 15 ns here).  An idle
    // rank instead blocks until one of this transport's requests completes
    // (the channels' next receives, the sends in flight, the sum's step),
    // which is all an idle engine can be waiting for: the engine has no timers.
    // The completed request is recorded where its poll will look for it.
    // Returns false when nothing is pending.
    bool wait_for_any() {
        m_waiting.clear();
        m_waiting_at.clear();
        for (int channel = 0; channel < m_channels; ++channel) {
            ring& receives = m_rings[channel];
            if (receives.slots.empty())
                continue;
            receive_slot& head = receives.slots[receives.head];
            if (!head.waited && head.request != MPI_REQUEST_NULL) {
                m_waiting.push_back(head.request);
                m_waiting_at.push_back(&head.request);
            }
        }
        for (MPI_Request& send : m_sends) {
            if (send != MPI_REQUEST_NULL) {
                m_waiting.push_back(send);
                m_waiting_at.push_back(&send);
            }
        }
        m_doubling.pending([&](MPI_Request& request) {
            m_waiting.push_back(request);
            m_waiting_at.push_back(&request);
        });
        if (m_waiting.empty())
            return false;
        int index = MPI_UNDEFINED;
        MPI_Status status;
        check_mpi(MPI_Waitany(static_cast<int>(m_waiting.size()), m_waiting.data(), &index, &status), "MPI_Waitany");
        if (index == MPI_UNDEFINED)
            return false;
        MPI_Request* completed = m_waiting_at[static_cast<std::size_t>(index)];
        *completed = MPI_REQUEST_NULL;
        for (int channel = 0; channel < m_channels; ++channel) {
            ring& receives = m_rings[channel];
            if (!receives.slots.empty() && completed == &receives.slots[receives.head].request) {
                receives.slots[receives.head].waited = true;
                receives.slots[receives.head].status = status;
            }
        }
        return true;
    }
    std::vector<MPI_Request> m_waiting;
    std::vector<MPI_Request*> m_waiting_at;
#endif

    // Posted receives of one channel, matched in posting order: the head completes first.
    struct ring {
        std::vector<receive_slot> slots;
        std::size_t head = 0;
    };

    void post(receive_slot& receive, int channel) {
        check_mpi(MPI_Irecv(receive.buffer.data(), static_cast<int>(m_max_message_bytes), MPI_BYTE, MPI_ANY_SOURCE,
                            message_tag + channel, m_communicator, &receive.request),
                  "MPI_Irecv");
    }

    long m_idle_sleep_ns = 10'000;
    unsigned m_idle_calls = 0;
    unsigned idle_calls_before_sleep = 1000;
    MPI_Comm m_communicator = MPI_COMM_NULL;
    int m_rank = 0;
    int m_size = 1;
    std::size_t m_max_message_bytes = 0;
    ring m_rings[max_channels];
    int m_channels = 1;
    std::vector<std::byte> m_spare;
    std::vector<MPI_Request> m_sends;
    std::vector<std::uint64_t> m_free_tickets;
    std::vector<std::int64_t> m_sum_input;
    MPI_Request m_sum_request = MPI_REQUEST_NULL;
#if MPIDICT_SMPI
    // SimGrid SMPI's MPI_Iallreduce sends every rank's vector to every other
    // rank: p - 1 messages per rank per sum (an empty flush cost 3 ms at 256
    // simulated ranks, 4x per 4x ranks); MPICH's and Open MPI's take O(log p)
    // steps.  So that simulations show the library and not SMPI's
    // collective, the sum runs as recursive doubling over point-to-point
    // messages (MPICH's algorithm for short vectors): ranks past the largest
    // power of two first fold into a partner and get the result back last.
    class doubling_sum {
    public:
        void start(MPI_Comm comm, int rank, int size, std::span<const std::int64_t> input,
                   std::span<std::int64_t> output) {
            m_comm = comm;
            m_output = output;
            m_running = true;
            m_value.assign(input.begin(), input.end());
            m_incoming.assign(input.size(), 0);
            m_power = 1;
            while (m_power * 2 <= size)
                m_power *= 2;
            const int extra = size - m_power;
            m_rank = rank;
            m_folded = rank < 2 * extra && rank % 2 == 0;  // gives its value to rank + 1, waits
            m_virtual = rank < 2 * extra ? rank / 2 : rank - extra;
            m_extra = extra;
            m_step = 0;
            m_mask = 1;
            m_requests[0] = m_requests[1] = MPI_REQUEST_NULL;
            if (m_folded) {
                send(rank + 1, 0);
                receive(rank + 1, 1);
            } else if (rank < 2 * extra) {
                receive(rank - 1, 0);  // the fold; advance() adds it and starts doubling
            } else {
                exchange_next();
            }
        }

        // Calls each(request) for the step's requests still pending.
        template <class Each>
        void pending(Each&& each) {
            for (MPI_Request& request : m_requests)
                if (request != MPI_REQUEST_NULL)
                    each(request);
        }

        // Whether the sum is done; advances it if it can.  After the sum is
        // done (or before one starts) only reports.
        bool advance() {
            if (!m_running)
                return true;
            int done = 0;
            check_mpi(MPI_Testall(2, m_requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall (doubling sum)");
            if (!done)
                return false;
            if (m_folded) {
                std::copy(m_incoming.begin(), m_incoming.end(), m_output.begin());
                m_running = false;
                return true;
            }
            // The fold or a doubling step completed: add what came in.
            for (std::size_t index = 0; index < m_value.size(); ++index)
                m_value[index] += m_incoming[index];
            return exchange_next();
        }

    private:
        int real_rank(int virtual_rank) const {
            return virtual_rank < m_extra ? virtual_rank * 2 + 1 : virtual_rank + m_extra;
        }
        // Starts the next doubling step, or hands the result out; true when done.
        bool exchange_next() {
            if (m_mask < m_power) {
                const int partner = real_rank(m_virtual ^ m_mask);
                m_mask *= 2;
                ++m_step;
                send(partner, 1 + m_step);
                receive(partner, 1 + m_step);
                return false;
            }
            std::copy(m_value.begin(), m_value.end(), m_output.begin());
            std::fill(m_incoming.begin(), m_incoming.end(), 0);  // a later advance() adds nothing
            if (m_rank < 2 * m_extra) {
                // The folded partner gets the result; this send completes in the background.
                MPI_Request request = MPI_REQUEST_NULL;
                m_result = m_value;
                check_mpi(MPI_Isend(m_result.data(), static_cast<int>(m_result.size()), MPI_INT64_T, m_rank - 1,
                                    tag_base + 1, m_comm, &request),
                          "MPI_Isend (doubling sum)");
                MPI_Request_free(&request);
            }
            m_requests[0] = m_requests[1] = MPI_REQUEST_NULL;
            m_running = false;
            return true;
        }
        void send(int to, int tag) {
            m_sent = m_value;
            check_mpi(MPI_Isend(m_sent.data(), static_cast<int>(m_sent.size()), MPI_INT64_T, to, tag_base + tag, m_comm,
                                &m_requests[0]),
                      "MPI_Isend (doubling sum)");
        }
        void receive(int from, int tag) {
            check_mpi(MPI_Irecv(m_incoming.data(), static_cast<int>(m_incoming.size()), MPI_INT64_T, from,
                                tag_base + tag, m_comm, &m_requests[1]),
                      "MPI_Irecv (doubling sum)");
        }

        static constexpr int tag_base = 4800;
        MPI_Comm m_comm = MPI_COMM_NULL;
        std::span<std::int64_t> m_output;
        std::vector<std::int64_t> m_value, m_incoming, m_sent, m_result;
        MPI_Request m_requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
        int m_power = 1, m_extra = 0, m_rank = 0, m_virtual = 0, m_step = 0, m_mask = 1;
        bool m_folded = false;
        bool m_running = false;
    };
    doubling_sum m_doubling;
#endif
};

}  // namespace

std::unique_ptr<transport> make_mpi_transport(MPI_Comm communicator) {
    return std::make_unique<mpi_transport>(communicator);
}

}  // namespace mpidict::runtime
