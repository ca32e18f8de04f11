// Fuzz target: arbitrary bytes arriving as messages at a hash_map's engine.
//
// What it drives.  The engine's message decoder (group headers against the
// message end and the handler table), every hash_map handler (insert_one,
// insert, find, take, erase, insert_if_absent, visit, find_many, take_many and
// their replies (one record per key, and streamed: batch headers, bare keys,
// bare values), reduces (headered, and streamed after an operator record),
// rejection and visitor failure notices; a visitor that throws),
// the engine's reply handler against pending,
// abandoned and free request slots, and the caller-side decoders that turn a
// reply into a request's result (get()).  Two maps: <uint64_t, uint64_t> (fixed
// size records, the bulk insert path) and <std::string, std::string>
// (length-prefixed keys and values).  With configuration bit 0x80 instead: a
// linear_hash_map's handlers (requests, replies, split token, activation,
// shipments and their acknowledgements), see run_linear_hash_map(); with bits
// 0xc0: a skiplist_map's handlers, see run_skiplist_map().
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
#include "mpidict/skiplist_map.hpp"
#include "mpidict/runtime/transport.hpp"
#include "seeds.hpp"

namespace {

using namespace mpidict;

// Thrown by the transport when a wait inside the library has consumed the
// input; not an mpidict::error, so it is never mistaken for a rejection.
struct input_exhausted {};

class fuzz_transport final : public runtime::transport {
public:
    explicit fuzz_transport(int rank = 0) : m_rank(rank) {}
    std::deque<std::vector<std::byte>> inbox;
    bool throw_when_empty = false;
    // Seeds only: keep what is sent to the other rank (a real container's
    // messages, which the target then receives).
    bool keep_sent = false;
    std::deque<std::vector<std::byte>> sent;

    int rank() const override { return m_rank; }
    int size() const override { return 2; }
    void open(std::size_t max_message_bytes, std::size_t, int) override { m_max = max_message_bytes; }
    std::uint64_t start_send(int destination, std::span<const std::byte> message, bool, int) override {
        // The engine must never build a message a receiver could not take.
        if (destination < 0 || destination > 1 || message.size() > m_max)
            __builtin_trap();
        if (keep_sent && destination != m_rank)
            sent.emplace_back(message.begin(), message.end());
        return m_next_ticket++;
    }
    bool send_complete(std::uint64_t) override { return true; }
    bool poll(runtime::message_sink& sink, int) override {
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
        sink.deliver(1, 0, std::span<const std::byte>(exact.get(), message.size()));
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
    int m_rank;
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
        // Reduces and callable visitors (numbered 0, 1, ... in each registry at
        // start-up), some combined at the origin, so the input's reduce and
        // visit_callable records name real operators and visitors.
        for (int index = 0; index < 4; ++index) {
            map.async_reduce(target_rank{index % 2}, data::key(index), data::value(index));
            map.async_insert_or_assign(target_rank{index % 2}, data::key(index + 4), data::value(index));
            map.async_visit(target_rank{index % 2}, data::key(index), [](const K&, auto& values, const V& value) {
                values.push_back(value);
                if (values.size() > 3)
                    values.clear();
            }, data::value(index));
        }
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

// skiplist_map (configuration bits 0xc0).  Bit 0x08 clear: this rank hosts
// every node (a list of G = 4 already split by the preload) and the input is
// what a caller on rank 1 sends it (points, ranges, markers, allocations,
// links...).  Bit 0x08 set: this rank is only a caller, the list lives on rank
// 1, and the input answers this rank's pending requests (point replies, range
// parts).
skiplist_map_config skiplist_settings(bool caller_only) {
    skiplist_map_config settings;
    settings.runtime.blocking_factor = 64;
    settings.granularity = 4;
    settings.max_height = 4;
    settings.max_key_bytes = 16;
    settings.max_value_bytes = 64;
    settings.node_slots_per_rank = 16;
    settings.server_ranks = std::vector<int>{caller_only ? 1 : 0};
    settings.runtime.buffer_bytes = settings.required_buffer_bytes() + 256;
    return settings;
}

using fuzz_list = skiplist_map<std::string, std::string>;

struct skiplist_requests {
    std::vector<request<std::optional<std::string>>> finds;
    std::vector<request<replace_result>> inserts;
    std::vector<request<bool>> flags;
    std::vector<request<fuzz_list::entry_list>> ranges;
};

// The same requests, in the same order, wherever they are opened (the seeds'
// recording and the target), so the answers recorded match the target's slots.
void open_skiplist_requests(fuzz_list& list, int count, skiplist_requests& open) {
    for (int index = 0; index < count; ++index) {
        const std::string key = "key" + std::to_string(index);
        switch (index % 6) {
        case 0: open.finds.push_back(list.find(key)); break;
        case 1: open.inserts.push_back(list.insert(key, "new")); break;
        case 2: open.flags.push_back(list.erase(key)); break;
        case 3: open.flags.push_back(list.insert_if_absent(key, "v")); break;
        case 4: open.ranges.push_back(list.range("key0", "key9")); break;
        default: open.ranges.push_back(list.range_from(key, range_options{3, true})); break;
        }
    }
}

void run_skiplist_map(std::uint8_t configuration, std::uint8_t requests, std::deque<std::vector<std::byte>> messages) {
    const bool caller_only = (configuration & 0x08) != 0;
    auto network = std::make_unique<fuzz_transport>();
    fuzz_transport& transport = *network;
    const skiplist_map_config settings = skiplist_settings(caller_only);
    try {
        fuzz_list list(std::make_unique<runtime::engine>(std::move(network), settings.runtime), settings);
        if (!caller_only) {
            for (int index = 0; index < 12; ++index)
                list.async_insert("key" + std::to_string(index), std::string(static_cast<std::size_t>(index * 3), 'v'));
            list.engine().ship_all();
            list.engine().progress();
            list.engine().ship_all();
            list.engine().progress();
        }
        skiplist_requests open;
        open_skiplist_requests(list, requests & 15, open);
        transport.inbox = std::move(messages);
        deliver_all(transport, list.engine());
        for (auto& each : open.finds) try_get(each);
        for (auto& each : open.inserts) try_get(each);
        for (auto& each : open.flags) try_get(each);
        for (auto& each : open.ranges) try_get(each);
        list.local_for_each([](const std::string& key, const std::string& value) { (void)(key.size() + value.size()); });
        (void)list.check_local_invariants();
        throw abandon{};
    } catch (const abandon&) {
    } catch (const error&) {
    }
}

std::vector<std::uint8_t> skiplist_input(std::uint8_t configuration, std::uint8_t requests,
                                         const std::deque<std::vector<std::byte>>& messages) {
    std::vector<std::uint8_t> out{configuration, requests};
    for (const auto& message : messages) {
        if (message.size() > 0xffff)
            throw std::runtime_error("a recorded skiplist_map message of " + std::to_string(message.size()) + " bytes does not fit a seed");
        out.push_back(static_cast<std::uint8_t>(message.size() & 0xff));
        out.push_back(static_cast<std::uint8_t>(message.size() >> 8));
        for (std::byte b : message)
            out.push_back(static_cast<std::uint8_t>(b));
    }
    return out;
}

// Runs `act` on a skiplist_map that is rank `rank` of 2 and returns what it sent
// to the other rank (after delivering `inbox` to it).
template <class Act>
std::deque<std::vector<std::byte>> record_skiplist(int rank, bool caller_only, std::deque<std::vector<std::byte>> inbox,
                                                   Act&& act) {
    auto network = std::make_unique<fuzz_transport>(rank);
    fuzz_transport& transport = *network;
    transport.keep_sent = true;
    const skiplist_map_config settings = skiplist_settings(caller_only);
    std::deque<std::vector<std::byte>> sent;
    try {
        fuzz_list list(std::make_unique<runtime::engine>(std::move(network), settings.runtime), settings);
        transport.inbox = std::move(inbox);
        while (!transport.inbox.empty())
            list.engine().progress();
        // A wait inside `act` (find_many) ends when nothing is left to deliver.
        transport.throw_when_empty = true;
        try {
            act(list);
        } catch (const input_exhausted&) {
        }
        transport.throw_when_empty = false;
        list.engine().ship_all();
        list.engine().progress();
        list.engine().ship_all();
        sent = std::move(transport.sent);  // the transport goes with the list
        throw abandon{};
    } catch (const abandon&) {
    }
    return sent;
}

}  // namespace

std::vector<mpidict::fuzz::seed> mpidict::fuzz::skiplist_seeds() {
    constexpr std::uint8_t skiplist = 0xc0, caller_only = 0x08;
    std::vector<seed> all;
    // What a caller on rank 1 sends the list this rank hosts.
    all.push_back({"skiplist_points", skiplist_input(skiplist, 0, record_skiplist(1, false, {}, [](fuzz_list& list) {
                                                         list.async_insert("key20", "v");
                                                         list.async_insert("key0", "replaced");
                                                         list.async_insert_if_absent("key1", "dup");
                                                         (void)list.find("key5");
                                                         (void)list.erase("key7");
                                                         (void)list.insert("key30", std::string(40, 'x'));
                                                     }))});
    all.push_back({"skiplist_ranges", skiplist_input(skiplist, 0, record_skiplist(1, false, {}, [](fuzz_list& list) {
                                                         (void)list.range("key0", "key5");
                                                         (void)list.range_from("key3", range_options{2, false});
                                                         (void)list.prefix("key1");
                                                     }))});
    // Direct-find records (find_many in mode none through the directory):
    // entries planted for nodes of this rank's list; runs of repeated keys.
    all.push_back({"skiplist_direct_finds", skiplist_input(skiplist, 0, record_skiplist(1, false, {}, [](fuzz_list& list) {
                                                               list.set_consistency(skiplist_consistency::none);
                                                               list.remember_route_for_testing("key0", skiplist_node_id{0, 1, 1});
                                                               list.remember_route_for_testing("key5", skiplist_node_id{0, 2, 1});
                                                               std::vector<std::string> keys;
                                                               for (int index = 0; index < 60; ++index)
                                                                   keys.push_back("key" + std::to_string(index / 3 % 12));
                                                               list.find_many(std::span<const std::string>(keys),
                                                                              [](std::size_t, const std::optional<std::string>&) {});
                                                           }))});
    // Answers to the pending requests of a caller-only rank 0: its requests,
    // recorded, go to a real list on rank 1, whose answers are the seed.
    for (const int requests : {6, 12}) {
        auto asked = record_skiplist(0, true, {}, [&](fuzz_list& list) {
            skiplist_requests open;
            open_skiplist_requests(list, requests, open);
        });
        auto answers = record_skiplist(1, true, std::move(asked), [](fuzz_list&) {});
        all.push_back({"skiplist_answers_" + std::to_string(requests),
                       skiplist_input(skiplist | caller_only, static_cast<std::uint8_t>(requests), answers)});
    }
    return all;
}

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
    if ((configuration & 0xc0) == 0xc0)
        run_skiplist_map(configuration, requests, std::move(messages));
    else if (configuration & 0x80)
        run_linear_hash_map(configuration, requests, std::move(messages));
    else if (configuration & 1)
        run_map<std::string, std::string>(configuration, requests, std::move(messages));
    else
        run_map<std::uint64_t, std::uint64_t>(configuration, requests, std::move(messages));
    return 0;
}
