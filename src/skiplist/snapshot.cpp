// skiplist_map's consistent snapshots (detail/skiplist_snapshot.hpp; the front
// is include/mpidict/skiplist_snapshot.hpp, the user's view docs/skiplist_map.md
// "Snapshots").
//
// Why a copy and not versions.  RocksDB keeps an entry's old version only while
// a snapshot needs it.  Here an entry lives in a node's packed run that splits,
// merges into bulk loads and moves bytes on every insert; versioning it would
// touch every write path for a feature most maps never use.  A snapshot is
// instead one copy of the live entries, O(n) bytes for as long as it is held
// (the key and value bytes plus 16 bytes an entry: its two lengths and its
// index), and while it is taken each rank also holds its own entries once more.
// Writes made after the snapshot cost nothing extra.
//
// Taking one (create, collective):
//   1. The caller has flushed: every operation started anywhere before the call
//      is complete (the runtime's termination detection), and no rank has
//      returned from the call yet, so nothing newer exists.
//   2. Each rank copies the live entries of the nodes it hosts (those whose
//      deadline is still ahead by its clock) and sorts them by key.
//   3. Weighted regular sampling: each rank sends every rank p samples, the
//      first key of each p-th of its copy with the number of entries it stands
//      for, and its largest key (weight 0).  Every rank sorts the same samples
//      and picks the same p - 1 splitters, the sample keys where the running
//      weight passes i * N / p: rank r's slice is [splitter r - 1, splitter r).
//      A slice holds at most about N / p + (the largest rank's copy) / p
//      entries.
//   4. Each rank sends its copy to the slices' ranks, packed into records of
//      many entries, and the runtime's flush waits until all have arrived.
//      Each rank then sorts its slice.
//   5. A sum gives the snapshot's size.
// No rank leaves before every rank has passed step 2 (the flushes in 3 and 4
// need every rank), so a write made after the call on any rank cannot reach a
// copy: the cut is the call.
//
// Reading: a find goes to the rank whose slice holds the key; a range visits
// the slices it covers one after another (largest first when descending) and
// stops at its limit, each answer at most one message (a page; the next page
// starts after its last key).  Released collectively: a flush first, so that
// no read of another rank is still on its way.

#include "mpidict/detail/skiplist_snapshot.hpp"

#include <algorithm>
#include <cstring>
#include <utility>

#include "mpidict/error.hpp"
#include "mpidict/skiplist_map_types.hpp"

namespace mpidict::detail {
namespace {

// What a read asks for (the first byte of a read record).
enum class read_kind : std::uint8_t { find = 0, ascending = 1, descending = 2, count = 3 };

// A number appended to a record being built (the {u32 bytes, bytes} strings are
// skiplist_wire.hpp's append_entry / read_string).
template <class T>
void put_number(std::string& out, T value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof value);
}
// The reader of one entry of a copy, at `offset`.
byte_reader entry_at(std::string_view bytes, std::uint64_t offset) { return reader_of(bytes.substr(offset)); }

}  // namespace

const skiplist_snapshots::part_data& skiplist_snapshots::part(std::uint32_t id) const {
    const auto found = m_parts.find(id);
    if (found == m_parts.end() || id == m_building)
        throw use_after_destroy_error("mpidict: skiplist_map snapshot " + std::to_string(id) +
                                      " is not held on rank " + std::to_string(m_shared.rank()) +
                                      " (released, or never taken)");
    return found->second;
}

std::string_view skiplist_snapshots::key_at(const part_data& data, std::size_t index) const {
    byte_reader in = entry_at(data.bytes, data.order[index]);
    return read_string(in);
}

std::string_view skiplist_snapshots::value_at(const part_data& data, std::size_t index) const {
    byte_reader in = entry_at(data.bytes, data.order[index]);
    read_string(in);
    return read_string(in);
}

std::size_t skiplist_snapshots::lower_bound(const part_data& data, std::string_view key) const {
    std::size_t low = 0, high = data.order.size();
    while (low < high) {
        const std::size_t middle = low + (high - low) / 2;
        if (key_at(data, middle) < key)
            low = middle + 1;
        else
            high = middle;
    }
    return low;
}

void skiplist_snapshots::sort_by_key(part_data& data) const {
    // The keys read once, not once per comparison, with their first 8 bytes as
    // a big-endian number: most comparisons end there (integer keys always),
    // without touching the key bytes in the copy.
    struct keyed {
        std::uint64_t head;
        std::string_view key;
        std::uint64_t offset;
    };
    std::vector<keyed> items;
    items.reserve(data.order.size());
    for (std::size_t index = 0; index < data.order.size(); ++index) {
        const std::string_view key = key_at(data, index);
        std::uint64_t head = 0;
        for (std::size_t byte = 0; byte < 8; ++byte)
            head = (head << 8) | (byte < key.size() ? static_cast<unsigned char>(key[byte]) : 0u);
        items.push_back({head, key, data.order[index]});
    }
    std::sort(items.begin(), items.end(), [](const keyed& a, const keyed& b) {
        return a.head != b.head ? a.head < b.head : a.key < b.key;
    });
    for (std::size_t index = 0; index < items.size(); ++index)
        data.order[index] = items[index].offset;
}

int skiplist_snapshots::owner(const part_data& data, std::string_view key) const {
    return static_cast<int>(std::upper_bound(data.splitters.begin(), data.splitters.end(), key,
                                             [](std::string_view k, const std::string& s) { return k < s; }) -
                            data.splitters.begin());
}

std::size_t skiplist_snapshots::local_bytes(std::uint32_t id) const {
    const part_data& data = part(id);
    return data.bytes.capacity() + data.order.capacity() * sizeof(std::uint64_t);
}

void skiplist_snapshots::local_for_each(std::uint32_t id, const on_entry& visit) const {
    const part_data& data = part(id);
    for (std::size_t index = 0; index < data.order.size(); ++index)
        visit(key_at(data, index), value_at(data, index));
}

std::uint32_t skiplist_snapshots::create(const visit_all& for_all_local) {
    auto& engine = *m_shared.engine;
    const int ranks = engine.size();
    const std::uint32_t id = m_next_id++;
    engine.check_same(id, "skiplist_map snapshot (every rank takes the same snapshots in the same order)");
    part_data& mine = m_parts[id];
    m_building = id;
    try {
        // 2. This rank's live entries, sorted.
        part_data copy;
        const expiry_time now = m_shared.clock_now();
        for_all_local([&](std::string_view key, std::string_view value, expiry_time expires) {
            if (expires != 0 && expires <= now)
                return;
            copy.order.push_back(copy.bytes.size());
            append_entry(copy.bytes, key, value);
        });
        sort_by_key(copy);
        if (ranks == 1) {
            mine.bytes = std::move(copy.bytes);
            mine.order = std::move(copy.order);
        } else {
            // 3. Samples {u64 weight, key} to every rank; the same splitters everywhere.
            const std::size_t held = copy.order.size();
            const auto exchanged = engine.exchange(runtime::engine::all_ranks, [&](const runtime::engine::exchange_sink& send) {
                std::string sample;
                const auto emit = [&](std::uint64_t weight, std::string_view key) {
                    sample.clear();
                    put_number<std::uint64_t>(sample, weight);
                    sample.append(key);
                    send(std::as_bytes(std::span<const char>(sample.data(), sample.size())));
                };
                for (std::size_t block = 0; block < std::size_t(ranks); ++block) {
                    const std::size_t begin = block * held / ranks, end = (block + 1) * held / ranks;
                    if (begin < end)
                        emit(end - begin, key_at(copy, begin));
                }
                if (held != 0)
                    emit(0, key_at(copy, held - 1));
            });
            std::vector<std::pair<std::string_view, std::uint64_t>> samples;
            std::uint64_t total = 0;
            for (const auto& record : exchanged.records) {
                const auto bytes = exchanged.bytes(record);
                byte_reader in(bytes);
                const auto weight = in.read<std::uint64_t>();
                samples.emplace_back(read_rest(in), weight);
                total += weight;
            }
            std::sort(samples.begin(), samples.end());
            std::vector<std::string> splitters;
            std::uint64_t before = 0;  // weight of the samples before `next`
            std::size_t next = 0;
            for (int slice = 1; slice < ranks; ++slice) {
                const std::uint64_t target = (total * std::uint64_t(slice) + ranks - 1) / std::uint64_t(ranks);
                while (next < samples.size() && before < target)
                    before += samples[next++].second;
                if (next < samples.size()) {
                    splitters.emplace_back(samples[next].first);
                } else {
                    // No key left: this slice and the later ones are empty (the
                    // bound is above the largest key).
                    std::string above;
                    if (!samples.empty()) {
                        above.assign(samples.back().first);
                        above.push_back('\0');
                    }
                    splitters.push_back(std::move(above));
                }
            }
            mine.splitters = std::move(splitters);
            // 4. The copy to the slices' ranks, in records of many entries.
            const std::size_t budget = engine.max_record_bytes();
            std::vector<std::string> records(static_cast<std::size_t>(ranks));
            std::vector<std::uint32_t> counts(static_cast<std::size_t>(ranks), 0);
            const auto ship = [&](int rank) {
                auto& record = records[static_cast<std::size_t>(rank)];
                if (counts[static_cast<std::size_t>(rank)] == 0)
                    return;
                std::memcpy(record.data() + 4, &counts[static_cast<std::size_t>(rank)], 4);
                m_shared.send_record(rank, m_shared.handlers.snapshot_fill, record);
                record.clear();
                counts[static_cast<std::size_t>(rank)] = 0;
            };
            for (std::size_t index = 0; index < held; ++index) {
                const std::string_view key = key_at(copy, index), value = value_at(copy, index);
                // The entry's bytes as they lie in the copy: {u32, key, u32, value}.
                const std::string_view entry(key.data() - 4, value.data() + value.size() - (key.data() - 4));
                const int rank = owner(mine, key);
                auto& record = records[static_cast<std::size_t>(rank)];
                if (!record.empty() && record.size() + entry.size() > budget)
                    ship(rank);
                if (record.empty()) {
                    put_number<std::uint32_t>(record, id);
                    put_number<std::uint32_t>(record, 0);  // the count, set when it leaves
                }
                if (record.size() + entry.size() > budget)
                    throw invalid_argument_error("mpidict: skiplist_map snapshot entry of " +
                                                 std::to_string(entry.size()) + " bytes does not fit one message (" +
                                                 std::to_string(budget) + " bytes); raise runtime.buffer_bytes");
                record.append(entry);
                ++counts[static_cast<std::size_t>(rank)];
            }
            for (int rank = 0; rank < ranks; ++rank)
                ship(rank);
            copy = part_data{};
            engine.flush();
            sort_by_key(mine);
        }
        // What grew by doubling is trimmed: a held snapshot costs its entries only.
        mine.bytes.shrink_to_fit();
        mine.order.shrink_to_fit();
        // 5. The snapshot's size.  The slice is complete: other ranks that have
        // left the sum already may read it while this one waits in it.
        m_building = 0;
        mine.total = engine.sum(mine.order.size(), "skiplist_map snapshot size");
    } catch (...) {
        m_parts.erase(id);
        m_building = 0;
        throw;
    }
    m_building = 0;
    return id;
}

void skiplist_snapshots::release(std::uint32_t id) {
    auto& engine = *m_shared.engine;
    engine.check_same(id, "skiplist_map snapshot release (every rank releases the same snapshot)");
    engine.flush();  // no read of this snapshot is still on its way
    m_parts.erase(id);
}

void skiplist_snapshots::handle_fill(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto id = in.read<std::uint32_t>();
    const auto count = in.read<std::uint32_t>();
    if (id != m_building || m_building == 0)
        throw decode_error("mpidict: skiplist_map snapshot entries from rank " + std::to_string(source) +
                           " for snapshot " + std::to_string(id) + ", which is not being taken here");
    part_data& data = m_parts[id];
    for (std::uint32_t index = 0; index < count; ++index) {
        const std::string_view key = read_string(in);
        const std::string_view value = read_string(in);
        data.order.push_back(data.bytes.size());
        append_entry(data.bytes, key, value);
    }
    if (!in.empty())
        throw decode_error("mpidict: skiplist_map snapshot entries from rank " + std::to_string(source) + " have " +
                           std::to_string(in.remaining()) + " bytes after their " + std::to_string(count) + " entries");
}

void skiplist_snapshots::handle_read(int source, std::string_view record) {
    auto& engine = *m_shared.engine;
    byte_reader in = reader_of(record);
    const auto kind = static_cast<read_kind>(in.read<std::uint8_t>());
    const bool bounded = in.read<std::uint8_t>() != 0;
    const auto slot = in.read<std::uint32_t>();
    const auto id = in.read<std::uint32_t>();
    const auto limit = in.read<std::uint64_t>();
    const std::string_view lo = read_string(in);
    const std::string_view hi = read_string(in);
    const auto found = m_parts.find(id);
    if (found == m_parts.end() || id == m_building) {
        engine.reply_error(source, slot,
                           "mpidict: skiplist_map snapshot " + std::to_string(id) + " is not held on rank " +
                               std::to_string(m_shared.rank()) + " (released, or never taken)");
        return;
    }
    const part_data& data = found->second;
    const std::size_t first = lower_bound(data, lo);
    const std::size_t end = bounded ? std::max(first, lower_bound(data, hi)) : data.order.size();
    switch (kind) {
    case read_kind::find: {
        if (first < data.order.size() && key_at(data, first) == lo) {
            const std::string_view value = value_at(data, first);
            std::memcpy(engine.reserve_reply(source, slot, 1, value.size()), value.data(), value.size());
        } else {
            engine.reserve_reply(source, slot, 0, 0);
        }
        return;
    }
    case read_kind::count: {
        const std::uint64_t counted = end - first;
        std::memcpy(engine.reserve_reply(source, slot, 1, 8), &counted, 8);
        return;
    }
    case read_kind::ascending:
    case read_kind::descending: {
        // One page: as many entries as fit one message, up to the limit.
        const std::size_t budget = engine.max_record_bytes() - runtime::reply_header_bytes - 1;
        std::string page(1, '\0');
        std::uint32_t taken = 0;
        const bool up = kind == read_kind::ascending;
        std::size_t next = up ? first : end;
        const auto remaining = [&] { return up ? next < end : next > first; };
        while (remaining() && (limit == 0 || taken < limit)) {
            const std::size_t index = up ? next : next - 1;
            const std::string_view key = key_at(data, index), value = value_at(data, index);
            if (page.size() + 8 + key.size() + value.size() > budget + 1) {
                if (taken == 0) {
                    engine.reply_error(source, slot, "mpidict: skiplist_map snapshot entry does not fit one message");
                    return;
                }
                page[0] = 1;  // more follow: the caller asks again after the last key
                break;
            }
            append_entry(page, key, value);
            ++taken;
            next = up ? next + 1 : next - 1;
        }
        std::memcpy(engine.reserve_reply(source, slot, taken, page.size()), page.data(), page.size());
        return;
    }
    }
    engine.reply_error(source, slot, "mpidict: skiplist_map snapshot read of unknown kind " +
                                         std::to_string(static_cast<unsigned>(kind)));
}

std::pair<std::uint32_t, std::string> skiplist_snapshots::ask(int rank, std::string record) {
    auto& engine = *m_shared.engine;
    const std::uint32_t slot = engine.open_request(skiplist_map_op::range);
    std::memcpy(record.data() + 2, &slot, 4);
    m_shared.send_record(rank, m_shared.handlers.snapshot_read, record);
    engine.wait_request(slot);
    const auto bytes = engine.request_result(slot);
    std::string result(reinterpret_cast<const char*>(bytes.data()), bytes.size());
    const bool failed = engine.request_failed(slot);
    const std::uint32_t count = engine.request_count(slot);
    engine.close_request(slot);
    if (failed)
        throw invalid_argument_error(result);
    return {count, std::move(result)};
}

namespace {
std::string read_record(std::uint8_t kind, bool bounded, std::uint32_t id, std::uint64_t limit, std::string_view lo,
                        std::string_view hi) {
    std::string record;
    record.push_back(static_cast<char>(kind));
    record.push_back(bounded ? 1 : 0);
    put_number<std::uint32_t>(record, 0);  // the slot, set by ask()
    put_number<std::uint32_t>(record, id);
    put_number<std::uint64_t>(record, limit);
    append_entry(record, lo, hi);  // {u32, lo, u32, hi}
    return record;
}
}  // namespace

std::optional<std::string> skiplist_snapshots::find(std::uint32_t id, std::string_view key) {
    const part_data& data = part(id);
    // Not bounded: the owner looks up `key` alone and skips the upper end's search.
    auto [count, value] = ask(owner(data, key), read_record(std::uint8_t(read_kind::find), false, id, 1, key, {}));
    if (count == 0)
        return std::nullopt;
    return std::move(value);
}

std::uint64_t skiplist_snapshots::count(std::uint32_t id, std::string_view lo, std::string_view hi, bool bounded) {
    const part_data& data = part(id);
    if (bounded && hi <= lo)
        return 0;
    const int last = bounded ? owner(data, hi) : m_shared.engine->size() - 1;
    std::uint64_t total = 0;
    for (int rank = owner(data, lo); rank <= last; ++rank) {
        auto [count, bytes] = ask(rank, read_record(std::uint8_t(read_kind::count), bounded, id, 0, lo, hi));
        std::uint64_t counted = 0;
        if (count != 1 || bytes.size() != 8)
            throw decode_error("mpidict: skiplist_map snapshot count answer of " + std::to_string(bytes.size()) +
                               " bytes");
        std::memcpy(&counted, bytes.data(), 8);
        total += counted;
    }
    return total;
}

std::uint64_t skiplist_snapshots::range(std::uint32_t id, std::string_view lo, std::string_view hi, bool bounded,
                                        std::uint64_t limit, bool descending, const on_entry& deliver) {
    const part_data& data = part(id);
    if (bounded && hi <= lo)
        return 0;
    const int first = owner(data, lo);
    const int last = bounded ? owner(data, hi) : m_shared.engine->size() - 1;
    std::uint64_t delivered = 0;
    for (int step = 0; step <= last - first; ++step) {
        const int rank = descending ? last - step : first + step;
        std::string low(lo), high(hi);
        bool high_bounded = bounded;
        for (;;) {
            const std::uint64_t wanted = limit == 0 ? 0 : limit - delivered;
            const auto kind = descending ? read_kind::descending : read_kind::ascending;
            auto [count, page] = ask(rank, read_record(std::uint8_t(kind), high_bounded, id, wanted, low, high));
            byte_reader in = reader_of(page);
            const bool more = in.read<std::uint8_t>() != 0;
            std::string_view key;
            for (std::uint32_t index = 0; index < count; ++index) {
                key = read_string(in);
                const std::string_view value = read_string(in);
                deliver(key, value);
            }
            delivered += count;
            if (limit != 0 && delivered >= limit)
                return delivered;
            if (!more)
                break;
            // The next page starts after the last key (ascending: its successor,
            // the key plus a zero byte; descending: below it, hi exclusive).
            if (descending) {
                high.assign(key);
                high_bounded = true;
            } else {
                low.assign(key);
                low.push_back('\0');
            }
        }
    }
    return delivered;
}

}  // namespace mpidict::detail
