// async_insert batched behind the caller's back (issue 49, item 1).  See
// skiplist_caller.hpp and skiplist_map.md, "async_insert batches".
//
// In the modes whose inserts take the direct path (sequential and none, with
// a route cache; direct_finds()), an async_insert without expiry is not sent
// at once: its encoded key and value are appended to a buffer.  When the
// buffer holds config.async_batch_keys keys or config.async_batch_bytes bytes
// of keys and values, or before any other operation of this caller, flush,
// destroy, set_consistency or a batch, the buffer is sent
// as one batch the way insert_many sends its keys: sorted (a repeated key once,
// with its last value, which is what the inserts in issue order leave), in
// direct-insert records per rank, each a run of sorted segments per node
// (src/skiplist/bulk.cpp merges them).  Its answers come back to the batch's
// own slot (bit 30 set), counted; list_full refusals count every occurrence
// in async_rejected().  At most config.async_batches_in_flight batches are
// unanswered; a full window makes the async_insert that fills the next buffer
// wait (serving other ranks), as the runtime's full buffers do.
//
// Per-caller order, every mode's promise for async_* kept:
//   - a batch is built only from inserts issued while no other operation of
//     this caller was in flight (buffer_async falls back to the point record
//     otherwise), and every other operation sends the buffer before it starts,
//     so a buffered insert never overtakes an earlier operation;
//   - a later operation waits until no batch in flight may hold its key (a
//     sorted list of the batch's key hashes; a range waits for every batch),
//     so it sees the insert (read-your-writes), as the per-key order of the
//     point records gives it;
//   - a batch whose key may be in a batch still in flight waits for that one
//     (the later copy could take a shorter way and arrive first).
// Nothing is buffered from inside a handler or while a find_many/insert_many
// runs (the point record is sent then), and an operation started from inside
// a handler cannot wait: it sends the buffer and goes on.

#include <algorithm>

#include "mpidict/detail/skiplist_caller.hpp"
#include "mpidict/detail/skiplist_sorted_batch.hpp"
#include "mpidict/error.hpp"
#include "mpidict/local/hash.hpp"

namespace mpidict::detail {

namespace {
constexpr std::uint32_t async_slot_bit = 0x40000000u;  // beside batch_slot_bit: an async batch
}

struct skiplist_caller::async_state {
    // The buffer: encoded keys and values back to back.
    std::string keys, values;
    std::vector<std::uint32_t> key_starts, value_starts;  // one more than the keys, once any
    std::size_t buffered() const { return key_starts.empty() ? 0 : key_starts.size() - 1; }
    std::string_view key(std::size_t index) const {
        return std::string_view(keys).substr(key_starts[index], key_starts[index + 1] - key_starts[index]);
    }
    std::string_view value(std::size_t index) const {
        return std::string_view(values).substr(value_starts[index], value_starts[index + 1] - value_starts[index]);
    }
    void clear() {
        keys.clear();
        values.clear();
        key_starts.clear();
        value_starts.clear();
    }

    struct batch final : skiplist_batch_sink {
        sorted_batch order;
        std::vector<std::uint64_t> hashes;  // its distinct keys' hashes, sorted
        std::size_t answered = 0;
        std::uint64_t* rejected = nullptr;
        bool done() const { return answered >= order.distinct(); }
        bool may_hold(std::uint64_t hash) const { return std::binary_search(hashes.begin(), hashes.end(), hash); }
        void answer(std::uint32_t index, std::uint8_t status, std::string_view) override {
            if (index >= order.distinct() || done())
                throw decode_error("mpidict: skiplist_map async insert answer for key " + std::to_string(index) +
                                   ", which is not in flight");
            ++answered;
            if (status == skiplist_status::full)
                *rejected += order.indexes_of({index}).size();  // every occurrence was refused
        }
    };
    std::map<std::uint32_t, std::unique_ptr<batch>> in_flight;  // by slot
    std::uint32_t next_id = 0;

    // Drops answered batches; returns how many are still in flight.
    std::size_t live() {
        for (auto at = in_flight.begin(); at != in_flight.end();)
            at = at->second->done() ? in_flight.erase(at) : std::next(at);
        return in_flight.size();
    }
};

// Here, where async_state is complete (the constructor's unwinding destroys m_async).
skiplist_caller::skiplist_caller(skiplist_shared& shared, skiplist_directory& directory)
    : m_shared(shared), m_directory(directory), m_mode(shared.config.consistency) {}
skiplist_caller::~skiplist_caller() = default;

bool skiplist_caller::async_idle() const {
    if (!m_async)
        return true;
    if (m_async->buffered() != 0)
        return false;
    for (const auto& [slot, batch] : m_async->in_flight)
        if (!batch->done())
            return false;
    return true;
}

skiplist_batch_sink* skiplist_caller::async_sink(std::uint32_t slot) {
    if (!m_async || (slot & async_slot_bit) == 0)
        return nullptr;
    auto at = m_async->in_flight.find(slot);
    return at == m_async->in_flight.end() ? nullptr : at->second.get();
}

bool skiplist_caller::buffer_async(skiplist_op kind, std::uint32_t slot, std::string_view key,
                                   std::string_view value, expiry_time expires) {
    const auto& config = m_shared.config;
    if (kind != skiplist_op::insert || slot != no_slot || expires != 0 || config.async_batch_keys == 0 ||
        m_batch != nullptr || !direct_finds() || m_shared.engine->in_handler())
        return false;
    if (!m_async)
        m_async = std::make_unique<async_state>();
    async_state& async = *m_async;
    // Only behind inserts buffered with it: an earlier operation still in
    // flight keeps its order through the point record path.
    if (async.buffered() == 0 && !requests_idle())
        return false;
    if (async.key_starts.empty()) {
        async.key_starts.push_back(0);
        async.value_starts.push_back(0);
    }
    async.keys.append(key);
    async.values.append(value);
    async.key_starts.push_back(static_cast<std::uint32_t>(async.keys.size()));
    async.value_starts.push_back(static_cast<std::uint32_t>(async.values.size()));
    // Whichever bound is reached first (skiplist_map_types.hpp): keys, or the
    // bytes of keys and values (at least one key per batch).
    if (async.buffered() >= config.async_batch_keys ||
        async.keys.size() + async.values.size() >= std::min<std::size_t>(config.async_batch_bytes, 1u << 30))
        release_async();
    return true;
}

void skiplist_caller::release_async() {
    if (!m_async || m_async->buffered() == 0)
        return;
    async_state& async = *m_async;
    auto made = std::make_unique<async_state::batch>();
    async_state::batch& batch = *made;
    batch.rejected = &m_async_rejected;
    // In rounds (sorted_batch.hpp) while the list is small next to the batch
    // (the directory knows few nodes), else one sweep in key order: the more
    // keys of a node one segment carries, the fewer merges.
    const std::size_t buffered = async.buffered();
    const bool rounds = m_directory.size() * 16 < buffered;
    batch.order.build(
        buffered, [&](std::size_t index, std::string& out) { out.append(async.key(index)); },
        rounds ? sorted_batch::first_round : buffered);
    const std::size_t count = batch.order.distinct();
    batch.hashes.reserve(count);
    for (std::size_t position = 0; position < count; ++position) {
        const std::string_view key = batch.order.key(position);
        batch.hashes.push_back(hash_bytes(key.data(), key.size()));
    }
    std::sort(batch.hashes.begin(), batch.hashes.end());
    // Room in the window, and no batch in flight that may hold one of these
    // keys (found once, by a merge of the sorted hash lists).
    std::vector<std::uint32_t> conflicts;  // their slots (live() drops answered batches)
    for (const auto& [slot, earlier] : async.in_flight) {
        if (earlier->done())
            continue;
        auto a = earlier->hashes.begin(), b = batch.hashes.begin();
        while (a != earlier->hashes.end() && b != batch.hashes.end()) {
            if (*a == *b) {
                conflicts.push_back(slot);
                break;
            }
            if (*a < *b)
                ++a;
            else
                ++b;
        }
    }
    const std::size_t window = std::max<std::size_t>(1, m_shared.config.async_batches_in_flight);
    auto clear = [&] {
        for (const std::uint32_t slot : conflicts) {
            auto earlier = async.in_flight.find(slot);
            if (earlier != async.in_flight.end() && !earlier->second->done())
                return false;
        }
        return async.live() < window;
    };
    if (!m_shared.engine->in_handler() && !clear())
        m_shared.engine->wait_until(clear);
    std::uint32_t slot = batch_slot_bit | async_slot_bit | (async.next_id++ & (async_slot_bit - 1));
    while (async.in_flight.count(slot) != 0)
        slot = batch_slot_bit | async_slot_bit | (async.next_id++ & (async_slot_bit - 1));
    async.in_flight.emplace(slot, std::move(made));
    ++m_shared.stats.async_batches;
    // The records, as insert_many's (caller_batch.cpp), to this batch's slot.
    struct sending {
        skiplist_caller& caller;
        ~sending() {
            caller.m_sending_slot = 0;
            caller.m_batch_insert = false;
            caller.m_direct.clear();
            caller.m_direct_open.clear();
        }
    } reset{*this};
    m_sending_slot = slot;
    m_batch_insert = true;
    m_direct.assign(static_cast<std::size_t>(m_shared.engine->size()), direct_record{});
    m_direct_open.clear();
    m_direct_limit = direct_record_limit();
    for (std::size_t position = 0; position < count; ++position) {
        const std::string_view key = batch.order.key(position);
        const skiplist_node_id to = m_directory.entry_point(key);
        if (!(to == m_shared.head))
            ++m_shared.stats.shortcut_entries;
        add_direct(to, static_cast<std::uint32_t>(position), key, async.value(batch.order.value_index(position)), true);
    }
    close_batch_record();
    async.clear();
}

void skiplist_caller::before_operation(const std::string_view* key) {
    if (!m_async)
        return;
    release_async();
    async_state& async = *m_async;
    if (async.live() == 0 || m_shared.engine->in_handler())
        return;
    if (key == nullptr) {
        m_shared.engine->wait_until([&] { return async.live() == 0; });
        return;
    }
    const std::uint64_t hash = hash_bytes(key->data(), key->size());
    auto clear = [&] {
        for (const auto& [slot, batch] : async.in_flight)
            if (!batch->done() && batch->may_hold(hash))
                return false;
        return true;
    };
    if (!clear())
        m_shared.engine->wait_until(clear);
}

}  // namespace mpidict::detail
