// The simulation transport on its own: MPI's ordering rules, delays, matching
// and synchronous completion, collectives, determinism, and the failures it must
// report (deadlock, livelock, mismatched collectives, a rank that throws, a send
// buffer changed in flight, an oversized message), plus a malformed message
// injected into a real engine.

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <set>
#include <stdexcept>
#include <optional>
#include <vector>

#include "mpidict/hash_map.hpp"
#include "mpidict/runtime/engine.hpp"
#include "mpidict/runtime/sim_transport.hpp"

namespace {

using namespace mpidict;

struct recording_sink final : runtime::message_sink {
    std::vector<std::pair<int, std::vector<std::byte>>> received;
    std::vector<int> channels;
    void deliver(int source, int channel, std::span<const std::byte> message) override {
        received.emplace_back(source, std::vector<std::byte>(message.begin(), message.end()));
        channels.push_back(channel);
    }
};

std::vector<std::byte> bytes_of(std::uint64_t value) {
    std::vector<std::byte> out(sizeof value);
    std::memcpy(out.data(), &value, sizeof value);
    return out;
}

std::uint64_t value_of(const std::vector<std::byte>& bytes) {
    std::uint64_t value = 0;
    std::memcpy(&value, bytes.data(), sizeof value);
    return value;
}

sim::options quick(std::uint32_t delay = 50) {
    sim::options settings;
    settings.max_steps = 2'000'000;
    settings.max_delay_steps = delay;
    settings.trace_capacity = 64;
    return settings;
}

// Every rank sends `count` numbered messages to rank 0, which checks that each
// source's messages arrive in order; returns rank 0's arrival order as sources.
std::vector<int> fan_in(int ranks, std::uint64_t seed, int count, sim::result& outcome) {
    std::vector<int> order;
    outcome = sim::run(ranks, seed, quick(), [&](int rank, sim::sim_context& context) {
        auto network = context.make_transport();
        network->open(64, 1 + rank % 3, 1);
        context.barrier();
        std::vector<std::vector<std::byte>> payloads;
        std::vector<std::uint64_t> tickets;
        for (int index = 0; index < count; ++index) {
            payloads.push_back(bytes_of(static_cast<std::uint64_t>(rank) * 1000 + static_cast<std::uint64_t>(index)));
        }
        for (int index = 0; index < count; ++index)
            tickets.push_back(network->start_send(0, payloads[static_cast<std::size_t>(index)], true, 0));
        if (rank == 0) {
            recording_sink sink;
            std::map<int, std::uint64_t> next;
            while (sink.received.size() < static_cast<std::size_t>(ranks * count)) {
                if (!network->poll(sink, 1))
                    network->idle();
            }
            for (const auto& [source, bytes] : sink.received) {
                const std::uint64_t value = value_of(bytes);
                if (value != static_cast<std::uint64_t>(source) * 1000 + next[source]++)
                    context.fail("messages of one source overtook each other");
                order.push_back(source);
            }
        }
        for (std::uint64_t ticket : tickets)
            while (!network->send_complete(ticket))
                network->idle();
        context.barrier();
        network->close();
    });
    return order;
}

TEST(SimTransport, PairOrderHoldsAndSourcesInterleave) {
    std::set<std::vector<int>> orders;
    for (std::uint64_t seed = 1; seed <= 20; ++seed) {
        sim::result outcome;
        const std::vector<int> order = fan_in(4, seed, 6, outcome);
        ASSERT_TRUE(outcome.ok) << outcome.failure << "\n" << outcome.trace;
        EXPECT_EQ(order.size(), 24u);
        EXPECT_EQ(outcome.messages_sent, 24u);
        EXPECT_EQ(outcome.messages_delivered, 24u);
        EXPECT_EQ(outcome.messages_undelivered, 0u);
        orders.insert(order);
    }
    // Different seeds interleave the sources differently.
    EXPECT_GT(orders.size(), 10u);
}

TEST(SimTransport, SameSeedSameRunDifferentSeedDifferentRun) {
    sim::result first, second, other;
    const auto a = fan_in(5, 42, 8, first);
    const auto b = fan_in(5, 42, 8, second);
    const auto c = fan_in(5, 43, 8, other);
    ASSERT_TRUE(first.ok && second.ok && other.ok);
    EXPECT_EQ(a, b);
    EXPECT_EQ(first.delivery_hash, second.delivery_hash);
    EXPECT_EQ(first.trace_hash, second.trace_hash);
    EXPECT_EQ(first.trace, second.trace);
    EXPECT_EQ(first.steps, second.steps);
    EXPECT_NE(first.delivery_hash, other.delivery_hash);
}

TEST(SimTransport, SynchronousSendCompletesWhenMatched) {
    const sim::result outcome = sim::run(2, 7, quick(0), [](int rank, sim::sim_context& context) {
        auto network = context.make_transport();
        network->open(64, 1, 1);  // one posted receive
        context.barrier();
        if (rank == 0) {
            const auto one = bytes_of(1), two = bytes_of(2);
            const auto first = network->start_send(1, one, true, 0);
            const auto second = network->start_send(1, two, true, 0);
            // The first is matched by rank 1's only receive; the second waits for
            // rank 1 to take the first (it never does before the barrier).
            while (!network->send_complete(first))
                network->idle();
            for (int round = 0; round < 200; ++round)
                if (network->send_complete(second))
                    context.fail("a synchronous send completed with no receive posted for it");
            context.barrier();
            while (!network->send_complete(second))
                network->idle();
        } else {
            context.barrier();
            recording_sink sink;
            while (sink.received.size() < 2)
                if (!network->poll(sink, 1))
                    network->idle();
        }
        context.barrier();
    });
    EXPECT_TRUE(outcome.ok) << outcome.failure << "\n" << outcome.trace;
}

// Grid routing's two channels: a receiver polling one channel never gets a
// relay message (and its synchronous sender stays unmatched past the posted
// receives), direct ones still arrive, and each channel keeps its own order.
TEST(SimTransport, RelayChannelWaitsUntilTaken) {
    const sim::result outcome = sim::run(2, 11, quick(20), [](int rank, sim::sim_context& context) {
        auto network = context.make_transport();
        network->open(64, 1, 2);  // one posted receive per channel
        context.barrier();
        if (rank == 0) {
            std::vector<std::vector<std::byte>> payloads;
            for (std::uint64_t value = 0; value < 6; ++value)
                payloads.push_back(bytes_of(value));
            std::vector<std::uint64_t> tickets;
            for (std::uint64_t value = 0; value < 6; ++value)
                tickets.push_back(network->start_send(1, payloads[value], true, value % 2 == 0 ? 1 : 0));
            context.barrier();  // rank 1 has taken the direct ones only
            for (int round = 0; round < 200; ++round)
                if (network->send_complete(tickets[4]))
                    context.fail("a relay send was matched while the receiver took no relay messages");
            context.barrier();
            for (const auto ticket : tickets)
                while (!network->send_complete(ticket))
                    network->idle();
        } else {
            recording_sink sink;
            while (sink.received.size() < 3)
                if (!network->poll(sink, 1))
                    network->idle();
            for (int round = 0; round < 200; ++round)
                if (network->poll(sink, 1))
                    context.fail("a relay message arrived while only the direct channel was polled");
            context.barrier();
            context.barrier();
            while (sink.received.size() < 6)
                if (!network->poll(sink, 2))
                    network->idle();
            std::vector<std::uint64_t> direct, relay;
            for (std::size_t index = 0; index < 6; ++index)
                (sink.channels[index] == 0 ? direct : relay).push_back(value_of(sink.received[index].second));
            if (direct != std::vector<std::uint64_t>{1, 3, 5} || relay != std::vector<std::uint64_t>{0, 2, 4})
                context.fail("channels mixed up or reordered");
        }
        context.barrier();
    });
    EXPECT_TRUE(outcome.ok) << outcome.failure << "\n" << outcome.trace;
}

TEST(SimTransport, SumAndMinMaxOverAllRanks) {
    const sim::result outcome = sim::run(6, 3, quick(), [](int rank, sim::sim_context& context) {
        auto network = context.make_transport();
        network->open(64, 2, 1);
        for (int round = 0; round < 3; ++round) {
            const std::int64_t input[2] = {rank + 1, round};
            std::int64_t output[2] = {-1, -1};
            network->start_sum(input, output);
            while (!network->sum_complete())
                network->idle();
            if (output[0] != 21 || output[1] != 6 * round)
                context.fail("wrong sum");
        }
        const std::int64_t input[1] = {rank * 10};
        std::int64_t minimum[1], maximum[1];
        network->min_max(input, minimum, maximum);
        if (minimum[0] != 0 || maximum[0] != 50)
            context.fail("wrong min_max");
        network->barrier();
    });
    EXPECT_TRUE(outcome.ok) << outcome.failure;
}

TEST(SimTransport, DeadlockIsReportedWithTheSeed) {
    const sim::result outcome = sim::run(3, 11, quick(), [](int, sim::sim_context& context) {
        auto network = context.make_transport();
        network->open(64, 1, 1);
        recording_sink sink;
        while (!network->poll(sink, 1))  // nobody sends
            network->idle();
    });
    ASSERT_FALSE(outcome.ok);
    EXPECT_NE(outcome.failure.find("deadlock"), std::string::npos) << outcome.failure;
    EXPECT_NE(outcome.failure.find("seed 11"), std::string::npos) << outcome.failure;
}

TEST(SimTransport, LivelockHitsTheStepLimit) {
    sim::options settings = quick();
    settings.max_steps = 20'000;
    const sim::result outcome = sim::run(2, 5, settings, [](int, sim::sim_context& context) {
        for (;;)
            context.yield();  // busy, never waiting: only the step limit stops it
    });
    ASSERT_FALSE(outcome.ok);
    EXPECT_NE(outcome.failure.find("step limit"), std::string::npos) << outcome.failure;
}

TEST(SimTransport, MismatchedCollectivesAreReported) {
    const sim::result outcome = sim::run(2, 1, quick(), [](int rank, sim::sim_context& context) {
        auto network = context.make_transport();
        network->open(64, 1, 1);
        if (rank == 0) {
            network->barrier();
        } else {
            const std::int64_t input[1] = {1};
            std::int64_t minimum[1], maximum[1];
            network->min_max(input, minimum, maximum);
        }
    });
    ASSERT_FALSE(outcome.ok);
    EXPECT_NE(outcome.failure.find("collective mismatch"), std::string::npos) << outcome.failure;
}

TEST(SimTransport, AThrowingRankFailsTheRunAndOthersUnwind) {
    const sim::result outcome = sim::run(4, 2, quick(), [](int rank, sim::sim_context& context) {
        if (rank == 2)
            throw std::runtime_error("boom on rank 2");
        context.barrier();  // the others wait here forever
    });
    ASSERT_FALSE(outcome.ok);
    EXPECT_NE(outcome.failure.find("boom on rank 2"), std::string::npos) << outcome.failure;
}

TEST(SimTransport, ChangingASendBufferInFlightIsReported) {
    const sim::result outcome = sim::run(2, 9, quick(0), [](int rank, sim::sim_context& context) {
        auto network = context.make_transport();
        network->open(64, 1, 1);
        context.barrier();
        if (rank == 0) {
            std::vector<std::byte> buffer = bytes_of(7);
            const auto ticket = network->start_send(1, buffer, true, 0);
            buffer[0] = std::byte{99};  // the contract: untouched until send_complete
            while (!network->send_complete(ticket))
                network->idle();
        } else {
            recording_sink sink;
            while (!network->poll(sink, 1))
                network->idle();
        }
    });
    ASSERT_FALSE(outcome.ok);
    EXPECT_NE(outcome.failure.find("changed a send buffer"), std::string::npos) << outcome.failure;
}

TEST(SimTransport, OversizedMessageIsReported) {
    const sim::result outcome = sim::run(2, 4, quick(0), [](int rank, sim::sim_context& context) {
        auto network = context.make_transport();
        network->open(rank == 1 ? 16 : 64, 1, 1);
        context.barrier();
        if (rank == 0) {
            const std::vector<std::byte> big(32);
            const auto ticket = network->start_send(1, big, false, 0);
            (void)ticket;
        } else {
            recording_sink sink;
            while (!network->poll(sink, 1))
                network->idle();
        }
    });
    ASSERT_FALSE(outcome.ok);
    EXPECT_NE(outcome.failure.find("exceeds the receive size"), std::string::npos) << outcome.failure;
}

// A rank gives up its map without the collective destroy by unwinding through it
// (documented: destroying a live engine while an exception unwinds abandons it).
struct abandon {};

TEST(SimTransport, MalformedMessageRaisesDecodeErrorInTheEngine) {
    const std::vector<std::vector<std::byte>> bad_messages = {
        {std::byte{1}, std::byte{2}, std::byte{3}},                       // shorter than a group header
        [] {                                                              // handler out of range
            std::vector<std::byte> out(12, std::byte{0});
            out[0] = std::byte{0xff};
            out[1] = std::byte{0x7f};
            out[8] = std::byte{1};
            return out;
        }(),
        [] {                                                              // group longer than the message
            std::vector<std::byte> out(20, std::byte{0});
            out[0] = std::byte{1};   // hash_map.insert_one
            out[4] = std::byte{16};  // record_bytes
            out[8] = std::byte{5};   // count: 80 bytes, 8 present
            return out;
        }(),
        [] {                                                              // reply for a request never opened
            std::vector<std::byte> out(12 + 8, std::byte{0});
            out[4] = std::byte{8};
            out[8] = std::byte{1};
            out[12] = std::byte{77};
            return out;
        }(),
    };
    for (std::size_t which = 0; which < bad_messages.size(); ++which) {
        int decode_errors = 0;
        const sim::result outcome = sim::run(2, 100 + which, quick(), [&](int rank, sim::sim_context& context) {
            // Rank 0 may meet the message while it still finishes the map's
            // construction (its last collective progresses the engine), so the
            // decode error is awaited around construction and progress alike.
            try {
                hash_map_config settings;
                settings.runtime.buffer_bytes = 256;
                std::optional<hash_map<std::uint64_t, std::uint64_t>> map;
                try {
                    map.emplace(std::make_unique<runtime::engine>(context.make_transport(), settings.runtime),
                                settings);
                } catch (const decode_error&) {
                    if (rank != 0)
                        throw;
                    ++decode_errors;
                }
                if (rank == 1)
                    context.inject(0, 1, 0, bad_messages[which]);
                context.barrier();
                if (rank == 0 && map) {
                    try {
                        for (int round = 0; round < 10'000; ++round)
                            map->engine().progress();
                        context.fail("a malformed message was accepted");
                    } catch (const decode_error&) {
                        ++decode_errors;
                    }
                }
                context.barrier();
                throw abandon{};
            } catch (const abandon&) {
            }
        });
        EXPECT_TRUE(outcome.ok) << "message " << which << ": " << outcome.failure << "\n" << outcome.trace;
        EXPECT_EQ(decode_errors, 1) << "message " << which;
    }
}

// Handler output of the messages one polling loop handles leaves together: one
// message per destination, not one per incoming message (docs/runtime.md, "When
// things move").  On a 2 x 2 grid rank 0 gets an echo request straight from
// rank 1 and one from rank 3 through the corner, rank 2; both answers leave
// through rank 1 (to rank 1 itself, and to rank 3 by way of rank 1).
struct echo_state {
    runtime::engine* engine = nullptr;
    runtime::handler_id answer = 0;
    std::uint64_t answers = 0;
};

void echo(void* context, int source, const std::byte* records, std::uint32_t record_bytes, std::uint32_t count) {
    auto& state = *static_cast<echo_state*>(context);
    for (std::uint32_t index = 0; index < count; ++index)
        std::memcpy(state.engine->reserve(source, state.answer, record_bytes), records + index * record_bytes,
                    record_bytes);
}

void count_answers(void* context, int, const std::byte*, std::uint32_t, std::uint32_t count) {
    static_cast<echo_state*>(context)->answers += count;
}

TEST(SimTransport, HandlerOutputOfOnePollingLoopLeavesAsOneMessage) {
    for (std::uint64_t seed = 1; seed <= 5; ++seed) {
        sim::options settings = quick(0);  // a message is deliverable as soon as it is sent
        std::uint64_t replies_sent = 0;
        std::uint64_t requests_handled = 0;
        std::uint64_t answers = 0;
        const sim::result outcome = sim::run(4, seed, settings, [&](int rank, sim::sim_context& context) {
            runtime::config grid;
            grid.routing = runtime::routing_mode::grid;
            runtime::engine engine(context.make_transport(), grid);
            echo_state state{&engine};
            const runtime::handler_id request = engine.register_handler("test.echo", &echo, &state);
            state.answer = engine.register_handler("test.answer", &count_answers, &state);
            engine.verify_handlers();
            if (rank == 1 || rank == 3) {
                const std::uint64_t value = static_cast<std::uint64_t>(rank);
                std::memcpy(engine.reserve(0, request, sizeof value), &value, sizeof value);
                engine.ship_all();
            }
            if (rank == 2) {
                // The corner forwards rank 3's request (shipped after its polling loop).
                while (engine.stats().records_forwarded == 0)
                    engine.progress();
            }
            context.barrier();  // both requests are now deliverable at rank 0
            if (rank == 0) {
                const std::uint64_t sent = engine.stats().messages_sent;
                const std::uint64_t received = engine.stats().messages_received;
                engine.progress();
                requests_handled = engine.stats().messages_received - received;
                replies_sent = engine.stats().messages_sent - sent;
            }
            engine.flush();
            if (rank == 1 || rank == 3)
                answers += state.answers;
        });
        ASSERT_TRUE(outcome.ok) << "seed " << seed << ": " << outcome.failure << "\n" << outcome.trace;
        EXPECT_EQ(requests_handled, 2u) << "seed " << seed;
        EXPECT_EQ(replies_sent, 1u) << "seed " << seed << ": the two answers left as separate messages";
        EXPECT_EQ(answers, 2u) << "seed " << seed;
    }
}

}  // namespace
