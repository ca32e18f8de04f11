// Agreement between ranks.  Set-up: verify_handlers (every rank registered the
// same handlers, and passes the same settings, in one reduction), check_same,
// min_max.  Tagged collectives over the engine's messages: sum (global_size and
// the like) and exchange (the containers' gather/reduce), each reducing a tag of
// its name and sequence number so that ranks in different collective calls throw
// collective_mismatch_error instead of mixing numbers (docs/runtime.md,
// "Collective calls").  Their waits serve other ranks (reduce_serving, engine.cpp).
#include "mpidict/runtime/engine.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "mpidict/local/hash.hpp"

#include "engine_internal.hpp"

namespace mpidict::runtime {

using namespace engine_internal;

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

}  // namespace mpidict::runtime
