// Fuzz target: arbitrary bytes arriving as messages at a hash_map's engine.
//
// What it drives.  The engine's message decoder (group headers against the
// message end and the handler table), every hash_map handler (insert_one,
// insert, find, take, erase, insert_if_absent, visit, find_many, take_many and
// their replies, rejection and visitor failure notices; a visitor that throws),
// the engine's reply handler against pending,
// abandoned and free request slots, and the caller-side decoders that turn a
// reply into a request's result (get()).  Two maps: <uint64_t, uint64_t> (fixed
// size records, the bulk insert path) and <std::string, std::string>
// (length-prefixed keys and values).  With configuration bit 0x80 instead: a
// linear_hash_map's handlers (requests, replies, split token, activation,
// shipments and their acknowledgements), see run_linear_hash_map().
//
// The contract.  A malformed or truncated message may only be rejected with an
// mpidict::error (decode_error, or invalid_argument_error from a handler that
// cannot answer); it must never read out of bounds, allocate without bound,
// crash or hang.  Anything else escapes and libFuzzer (or the plain driver in
// fuzz_driver.cpp) reports it.
//
// Seeds.  seeds.cpp builds one input per handler path from the containers'
// record layouts (detail/wire.hpp); each must run without a decode_error.
//
// Input layout.  byte 0: configuration (map type, buffer size, capacity limit,
// whether the messages arrive inside a find_many/take_many wait); byte 1: how
// many requests to open first; then messages, each a u16 length followed by
// that many bytes (the last one takes what is left).  Messages come from rank 1
// over a one-process transport that is rank 0 of 2 and swallows every send.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/runtime/transport.hpp"
#include "seeds.hpp"

namespace {

using namespace mpidict;

// Thrown by the transport when a wait inside the library has consumed the
// input; not an mpidict::error, so it is never mistaken for a rejection.
struct input_exhausted {};

class fuzz_transport final : public runtime::transport {
public:
    std::deque<std::vector<std::byte>> inbox;
    bool throw_when_empty = false;

    int rank() const override { return 0; }
    int size() const override { return 2; }
    void open(std::size_t max_message_bytes, std::size_t) override { m_max = max_message_bytes; }
    std::uint64_t start_send(int destination, std::span<const std::byte> message, bool) override {
        // The engine must never build a message a receiver could not take.
        if (destination < 0 || destination > 1 || message.size() > m_max)
            __builtin_trap();
        return m_next_ticket++;
    }
    bool send_complete(std::uint64_t) override { return true; }
    bool poll(runtime::message_sink& sink) override {
        if (inbox.empty()) {
            if (throw_when_empty)
                throw input_exhausted{};
            return false;
        }
        std::vector<std::byte> message = std::move(inbox.front());
        inbox.pop_front();
        // A receive of B bytes cannot hold more (MPI would report truncation).
        if (message.size() > m_max)
            message.resize(m_max);
        // Exactly the message's size on the heap: an overread is caught by ASan.
        std::unique_ptr<std::byte[]> exact(new std::byte[message.size() + 1]);
        if (!message.empty())
            std::memcpy(exact.get(), message.data(), message.size());
        sink.deliver(1, std::span<const std::byte>(exact.get(), message.size()));
        return true;
    }
    void start_sum(std::span<const std::int64_t> input, std::span<std::int64_t> output) override {
        for (std::size_t index = 0; index < input.size(); ++index)
            output[index] = 2 * input[index];
    }
    bool sum_complete() override { return true; }
    void min_max(std::span<const std::int64_t> input, std::span<std::int64_t> minimum,
                 std::span<std::int64_t> maximum) override {
        for (std::size_t index = 0; index < input.size(); ++index)
            minimum[index] = maximum[index] = input[index];
    }
    void barrier() override {}
    void close() override {}
    void idle() override {}

private:
    std::size_t m_max = 0;
    std::uint64_t m_next_ticket = 0;
};

// Unwinding through a map abandons it without the collective destroy.
struct abandon {};

template <class K, class V>
struct keys_and_values;
template <>
struct keys_and_values<std::uint64_t, std::uint64_t> {
    static std::uint64_t key(int index) { return static_cast<std::uint64_t>(index); }
    static std::uint64_t value(int index) { return 1000 + static_cast<std::uint64_t>(index); }
};
template <>
struct keys_and_values<std::string, std::string> {
    static std::string key(int index) { return "key" + std::to_string(index); }
    static std::string value(int index) { return std::string(static_cast<std::size_t>(index % 5), 'v'); }
};

template <class K, class V>
V visit_replace(typename hash_map<K, V>::visit_context&, const K&, std::vector<V>& values, const V& arg) {
    V previous = values.empty() ? V{} : values.front();
    values.assign(1, arg);
    return previous;
}

// Visitor 1: its exception must become the visit's failure, never escape.
template <class K, class V>
V visit_throw(typename hash_map<K, V>::visit_context&, const K&, std::vector<V>& values, const V&) {
    values.clear();
    throw std::runtime_error("fuzz visitor failed");
}

std::size_t decode_rejections_seen = 0;
std::string first_decode_rejection;  // since the last call of first_rejection()

void count_rejection(const decode_error& rejection) {
    if (decode_rejections_seen++ == 0 || first_decode_rejection.empty())
        first_decode_rejection = rejection.what();
}

// Hands every remaining input message to the engine; a rejected one is fine.
void deliver_all(fuzz_transport& transport, runtime::engine& engine) {
    while (!transport.inbox.empty()) {
        try {
            engine.progress();
        } catch (const decode_error& rejection) {
            count_rejection(rejection);
        } catch (const error&) {
        }
    }
}

template <class Request>
void try_get(Request& handle) {
    try {
        if (handle.valid() && handle.test())
            (void)handle.get();
    } catch (const error&) {
    }
}

template <class K, class V>
void run_map(std::uint8_t configuration, std::uint8_t requests, std::deque<std::vector<std::byte>> messages) {
    using data = keys_and_values<K, V>;
    static constexpr std::size_t buffers[] = {256, 1024, 65536, 300};
    auto network = std::make_unique<fuzz_transport>();
    fuzz_transport& transport = *network;
    hash_map_config settings;
    settings.runtime.buffer_bytes = buffers[(configuration >> 1) & 3];
    settings.runtime.blocking_factor = 64;
    settings.capacity_values = (configuration & 0x08) ? 6 : 0;
    try {
        hash_map<K, V> map(std::make_unique<runtime::engine>(std::move(network), settings.runtime), settings);
        auto replace = map.template register_visitor<V, V>("fuzz.replace", &visit_replace<K, V>);
        map.template register_visitor<V, V>("fuzz.throw", &visit_throw<K, V>);
        // Some state for the handlers to find: keys on this rank go through the
        // loopback and the real handlers; keys of rank 1 are swallowed.
        for (int index = 0; index < 12; ++index)
            map.async_insert(target_rank{index % 2}, data::key(index), data::value(index));
        // Ship them (to this rank's loopback; rank 1's are swallowed) and run
        // the handlers, so the input finds stored keys (and, for
        // linear_hash_map, a split under way).
        map.engine().ship_all();
        map.engine().progress();
        map.engine().ship_all();
        map.engine().progress();
        // Pending requests (records to rank 1, never answered but by the input).
        std::vector<request<std::vector<V>>> finds;
        std::vector<request<insert_result>> inserts;
        std::vector<request<std::size_t>> erases;
        std::vector<request<bool>> flags;
        std::vector<request<V>> visits;
        for (int index = 0; index < (requests & 15); ++index) {
            switch (index % 5) {
            case 0: finds.push_back(map.find(target_rank{1}, data::key(index))); break;
            case 1: inserts.push_back(map.insert(target_rank{1}, data::key(index), std::span<const V>())); break;
            case 2: erases.push_back(map.erase(target_rank{1}, data::key(index))); break;
            case 3: flags.push_back(map.insert_if_absent(target_rank{1}, data::key(index), data::value(index))); break;
            default: visits.push_back(map.visit(target_rank{1}, data::key(index), replace, data::value(index))); break;
            }
        }
        // One abandoned request: its reply must free the slot, not complete it.
        if (requests & 0x10)
            (void)map.find(target_rank{1}, data::key(99));
        transport.inbox = std::move(messages);
        if (configuration & 0x20) {
            // Deliver inside a find_many / take_many wait, so batch replies match.
            std::vector<K> keys;
            for (int index = 0; index < 6; ++index)
                keys.push_back(data::key(index));
            transport.throw_when_empty = true;
            try {
                auto ignore = [](std::size_t, std::span<const V>) {};
                if (configuration & 0x40)
                    map.take_many(target_rank{1}, std::span<const K>(keys), 8, ignore);
                else
                    map.find_many(target_rank{1}, std::span<const K>(keys), 8, ignore);
            } catch (const input_exhausted&) {
            } catch (const decode_error& rejection) {
                count_rejection(rejection);
            } catch (const error&) {
            }
            transport.throw_when_empty = false;
        }
        deliver_all(transport, map.engine());
        for (auto& each : finds) try_get(each);
        for (auto& each : inserts) try_get(each);
        for (auto& each : erases) try_get(each);
        for (auto& each : flags) try_get(each);
        for (auto& each : visits) try_get(each);
        // Everything stored must still be readable locally.
        map.local_for_each([](const K&, const auto& values) { (void)values.size(); });
        throw abandon{};
    } catch (const abandon&) {
    } catch (const error&) {
        // Rejected while setting up or abandoning: fine.
    }
}

// linear_hash_map (configuration bit 0x80).  Bit 0x08 chooses the roles:
// clear, rank 1 hosts bucket 0 and this rank is dormant (the input may activate
// it, ship to it, send it requests, answer its pending requests); set, this rank
// hosts bucket 0 with the split token and starts a split onto rank 1 while the
// preload runs (the input may acknowledge shipments, return the token, ...).
void run_linear_hash_map(std::uint8_t configuration, std::uint8_t requests,
                         std::deque<std::vector<std::byte>> messages) {
    static constexpr std::size_t buffers[] = {256, 1024, 65536, 300};
    auto network = std::make_unique<fuzz_transport>();
    fuzz_transport& transport = *network;
    linear_hash_map_config settings;
    settings.runtime.buffer_bytes = buffers[(configuration >> 1) & 3];
    settings.runtime.blocking_factor = 64;
    settings.server_ranks = (configuration & 0x08) ? std::vector<int>{0, 1} : std::vector<int>{1, 0};
    settings.max_key_bytes = 16;
    settings.max_value_bytes = 64;
    settings.server_capacity_bytes = 2048;
    settings.split_load = 0.05;
    try {
        linear_hash_map<std::string, std::string> map(std::make_unique<runtime::engine>(std::move(network), settings.runtime),
                                                      settings);
        for (int index = 0; index < 12; ++index)
            map.async_insert("key" + std::to_string(index), std::string(static_cast<std::size_t>(index * 5), 'v'));
        // Ship them (to this rank's loopback; rank 1's are swallowed) and run
        // the handlers, so the input finds stored keys (and, for
        // linear_hash_map, a split under way).
        map.engine().ship_all();
        map.engine().progress();
        map.engine().ship_all();
        map.engine().progress();
        std::vector<request<std::optional<std::string>>> finds;
        std::vector<request<replace_result>> inserts;
        std::vector<request<bool>> erases;
        for (int index = 0; index < (requests & 15); ++index) {
            const std::string key = "key" + std::to_string(index);
            switch (index % 3) {
            case 0: finds.push_back(map.find(key)); break;
            case 1: inserts.push_back(map.insert(key, "new")); break;
            default: erases.push_back(map.erase(key)); break;
            }
        }
        if (requests & 0x10)
            (void)map.find("abandoned");
        transport.inbox = std::move(messages);
        deliver_all(transport, map.engine());
        for (auto& each : finds) try_get(each);
        for (auto& each : inserts) try_get(each);
        for (auto& each : erases) try_get(each);
        map.local_for_each([](const std::string& key, const std::string& value) { (void)(key.size() + value.size()); });
        (void)map.local_load_factor();
        throw abandon{};
    } catch (const abandon&) {
    } catch (const error&) {
    }
}

}  // namespace

std::size_t mpidict::fuzz::decode_rejections() { return decode_rejections_seen; }
std::string mpidict::fuzz::first_rejection() {
    std::string message;
    message.swap(first_decode_rejection);
    return message;
}

// Under libFuzzer: MPIDICT_FUZZ_WRITE_SEEDS=DIR writes the seeds into DIR first
// (scripts/fuzz.sh runs that with -runs=0, then fuzzes from DIR).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (const char* directory = std::getenv("MPIDICT_FUZZ_WRITE_SEEDS"))
        mpidict::fuzz::write_seeds(directory);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 2)
        return 0;
    const std::uint8_t configuration = data[0];
    const std::uint8_t requests = data[1];
    std::deque<std::vector<std::byte>> messages;
    std::size_t at = 2;
    while (at < size && messages.size() < 64) {
        std::size_t length = size - at;
        if (size - at >= 2) {
            length = std::min<std::size_t>(static_cast<std::size_t>(data[at]) | (static_cast<std::size_t>(data[at + 1]) << 8),
                                           size - at - 2);
            at += 2;
        } else {
            at = size;
            break;
        }
        const auto* start = reinterpret_cast<const std::byte*>(data + at);
        messages.emplace_back(start, start + length);
        at += length;
    }
    if (configuration & 0x80)
        run_linear_hash_map(configuration, requests, std::move(messages));
    else if (configuration & 1)
        run_map<std::string, std::string>(configuration, requests, std::move(messages));
    else
        run_map<std::uint64_t, std::uint64_t>(configuration, requests, std::move(messages));
    return 0;
}
