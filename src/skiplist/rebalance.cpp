// Elastic servers: moving nodes between ranks at a flush (rebalance, drain,
// growth onto dormant ranks).  See skiplist_rebalance.hpp.

#include "mpidict/detail/skiplist_rebalance.hpp"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <span>

#include "mpidict/error.hpp"
#include "node_records.hpp"

namespace mpidict {

double skiplist_rebalance_result::ratio(const std::vector<std::uint64_t>& load, const std::vector<int>& over) {
    if (over.empty())
        return 0;
    double total = 0, most = 0;
    for (std::size_t r = 0; r < load.size(); ++r)
        total += static_cast<double>(load[r]);  // every rank's load counts (a drained rank's too)
    for (const int r : over)
        if (r >= 0 && static_cast<std::size_t>(r) < load.size())
            most = std::max(most, static_cast<double>(load[static_cast<std::size_t>(r)]));
    const double mean = total / static_cast<double>(over.size());
    return mean > 0 ? most / mean : 1.0;
}

namespace detail {

namespace {

using wire = skiplist_wire;
constexpr std::uint8_t first_part = 1, last_part = 2, online_part = 4, abandoned = 8;

std::vector<std::uint64_t> unsigned_of(const std::vector<std::int64_t>& values) {
    return {values.begin(), values.end()};
}

double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace

skiplist_rebalancer::skiplist_rebalancer(skiplist_shared& shared, skiplist_nodes& nodes, skiplist_structure& structure,
                                         skiplist_directory& directory)
    : m_shared(shared), m_nodes(nodes), m_structure(structure), m_directory(directory) {
    if (const char* broken = std::getenv("MPIDICT_SKIPLIST_BREAK_REBALANCE_FOR_TESTING"))
        m_break_for_testing = broken[0] == '1';
    if (shared.config.online_rebalance > 0) {
        m_rates.assign(static_cast<std::size_t>(shared.engine->size()), -1.0);
        m_window_start = std::chrono::steady_clock::now();
        shared.window_hook = [this] { online_window(); };
    }
}

bool skiplist_rebalancer::movable(const skiplist_node& node, bool with_head) const {
    if (!node.live || node.reserved || node.busy() || node.stub() || node.bulk || node.split ||
        (node.separator.empty() && !with_head))
        return false;
    for (const skiplist_link& level : node.tower)
        if (!level.set)
            return false;
    return true;
}

std::uint64_t skiplist_rebalancer::weight(const skiplist_node& node, skiplist_load_metric metric) const {
    return metric == skiplist_load_metric::requests ? node.requests : node.run.size();
}

skiplist_rebalancer::loads skiplist_rebalancer::gather(std::vector<std::int64_t>* extra) {
    auto& engine = *m_shared.engine;
    const auto ranks = static_cast<std::size_t>(engine.size());
    const auto me = static_cast<std::size_t>(m_shared.rank());
    const std::size_t extras = extra ? extra->size() : 0;
    std::vector<std::int64_t> mine(4 * ranks + extras, 0), all(mine.size(), 0);
    for (const skiplist_node& node : m_nodes.all()) {
        if (!node.live)
            continue;
        mine[me] += static_cast<std::int64_t>(node.run.size());
        mine[ranks + me] += node.requests;
        mine[2 * ranks + me] += 1;
    }
    if (!m_shared.dormant.empty() && m_shared.server_index >= 0 && m_shared.memory_limit != skiplist_shared::unlimited &&
        m_shared.config.grow_memory_fraction > 0) {
        const double resident = static_cast<double>(resident_bytes_now());
        mine[3 * ranks + me] =
            resident >= m_shared.config.grow_memory_fraction * static_cast<double>(m_shared.memory_limit) ? 1 : 0;
    }
    for (std::size_t i = 0; i < extras; ++i)
        mine[4 * ranks + i] = (*extra)[i];
    engine.sum(mine, all, "skiplist_map.rebalance");
    loads out;
    out.entries.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(ranks));
    out.requests.assign(all.begin() + static_cast<std::ptrdiff_t>(ranks),
                        all.begin() + static_cast<std::ptrdiff_t>(2 * ranks));
    out.nodes.assign(all.begin() + static_cast<std::ptrdiff_t>(2 * ranks),
                     all.begin() + static_cast<std::ptrdiff_t>(3 * ranks));
    out.memory_full.assign(all.begin() + static_cast<std::ptrdiff_t>(3 * ranks),
                           all.begin() + static_cast<std::ptrdiff_t>(4 * ranks));
    if (extra)
        extra->assign(all.begin() + static_cast<std::ptrdiff_t>(4 * ranks), all.end());
    return out;
}

std::vector<skiplist_rebalancer::transfer> skiplist_rebalancer::plan(std::vector<double> load, double target,
                                                                     bool forced) const {
    const auto& servers = m_shared.servers;
    const std::size_t ranks = load.size();
    std::vector<char> active(ranks, 0);
    for (const int r : servers)
        active[static_cast<std::size_t>(r)] = 1;
    double total = 0, most = 0;
    bool outside = false;  // a rank that is no server holds load (drained, or a refused move)
    for (std::size_t r = 0; r < ranks; ++r) {
        total += load[r];
        if (active[r])
            most = std::max(most, load[r]);
        else
            outside = outside || load[r] > 0;
    }
    std::vector<transfer> out;
    if (total <= 0 || servers.empty())
        return out;
    const double mean = total / static_cast<double>(servers.size());
    if (!forced && !outside && most <= target * mean)
        return out;
    // Greedy: the rank furthest above its share (a non-server's share is 0)
    // gives to the server furthest below the mean; each step ends one excess
    // or one deficit, so at most 2p steps.  Ties go to the lower rank.
    for (std::size_t step = 0; step < 2 * ranks + 2; ++step) {
        std::size_t from = ranks, to = ranks;
        double excess = 0, deficit = 0;
        for (std::size_t r = 0; r < ranks; ++r) {
            const double share = active[r] ? mean : 0.0;
            if (load[r] - share > excess) {
                excess = load[r] - share;
                from = r;
            }
            if (active[r] && share - load[r] > deficit) {
                deficit = share - load[r];
                to = r;
            }
        }
        const double amount = std::min(excess, deficit);
        if (from == ranks || to == ranks || amount < 0.5)
            break;
        out.push_back(transfer{static_cast<int>(from), static_cast<int>(to), amount});
        load[from] -= amount;
        load[to] += amount;
    }
    return out;
}

std::uint64_t skiplist_rebalancer::ship(std::uint32_t slot, int destination, skiplist_node_id fresh) {
    auto& engine = *m_shared.engine;
    const skiplist_node& node = m_nodes.all()[slot];
    const skiplist_node_id old{m_shared.rank(), slot, node.generation};
    const std::size_t budget = engine.max_record_bytes();
    std::size_t entries = node.run.size();
    if (m_break_for_testing && entries > 0)
        --entries;  // (broken on purpose: the last entry is lost)
    std::size_t head_bytes = wire::node_id_bytes + 1 + 4 + 1 + string_bytes(node.separator);
    for (const skiplist_link& level : node.tower)
        head_bytes += wire::node_id_bytes + string_bytes(level.separator);
    std::uint64_t sent = 0;
    std::size_t next = 0;
    bool first = true;
    const bool online = !fresh.null();
    do {
        std::size_t bytes = first ? head_bytes : wire::node_id_bytes + 1;
        bytes += 4 + (online ? wire::node_id_bytes : 0);
        std::size_t until = next;
        for (; until < entries; ++until) {
            const std::size_t entry =
                string_bytes(node.run.key(until)) + string_bytes(node.run.value(until)) + sizeof(expiry_time);
            if (bytes + entry > budget && until > next)
                break;
            bytes += entry;
        }
        const std::uint8_t flags = static_cast<std::uint8_t>((first ? first_part : 0) | (until == entries ? last_part : 0) |
                                                             (online ? online_part : 0));
        byte_writer out(engine.reserve(destination, m_shared.handlers.migrate, bytes), bytes);
        put_node_id(out, old).put(flags);
        if (online)
            put_node_id(out, fresh);
        if (first) {
            out.put(node.requests).put(static_cast<std::uint8_t>(node.tower.size()));
            put_string(out, node.separator);
            for (const skiplist_link& level : node.tower)
                put_string(put_node_id(out, level.to), level.separator);
        }
        out.put(static_cast<std::uint32_t>(until - next));
        for (std::size_t index = next; index < until; ++index) {
            put_string(out, node.run.key(index));
            put_string(out, node.run.value(index));
            out.put(node.run.expires(index));
        }
        out.finish();
        sent += bytes;
        next = until;
        first = false;
    } while (next < entries);
    return sent;
}

void skiplist_rebalancer::handle_migrate(int source, std::string_view record) {
    const bool online = record.size() > wire::node_id_bytes &&
                        (static_cast<std::uint8_t>(record[wire::node_id_bytes]) & online_part) != 0;
    // (An online move goes into a node reserved here: this rank is a server already.)
    if (!online && (m_shared.server_index < 0 || !m_early.empty())) {
        // Not a server yet: this rank is still summing the loads that wake it
        // (refusing here would leave the node where it was, unbalanced).
        m_early.emplace_back(source, std::string(record));
        return;
    }
    receive_migrate(source, record);
}

void skiplist_rebalancer::receive_migrate(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const skiplist_node_id old = read_node_id(in);
    const auto flags = in.read<std::uint8_t>();
    if (old.rank != source)
        throw decode_error("mpidict: skiplist_map migrate record from rank " + std::to_string(source) +
                           " names a node of another rank");
    skiplist_node_id fresh{};
    const bool online = (flags & online_part) != 0;
    if (online) {
        // Into the node reserved here for it (handle_move_reserve).
        fresh = read_node_id(in);
        if (fresh.rank != m_shared.rank() || !m_nodes.live(fresh) || !m_nodes.all()[fresh.slot].reserved)
            throw decode_error("mpidict: skiplist_map online migrate record names node " + describe(fresh) +
                               ", which is not reserved here");
        if ((flags & abandoned) != 0) {
            if (!in.empty())
                throw decode_error("mpidict: skiplist_map abandoned move record has trailing bytes");
            m_nodes.free_slot(fresh.slot);  // nobody knows it: nothing is held there
            return;
        }
    }
    if (online && (flags & first_part) != 0) {
        const auto requests = in.read<std::uint32_t>();
        const unsigned height = in.read<std::uint8_t>();
        const std::string_view separator = read_string(in);
        if (height < 1 || height > m_shared.config.max_height || separator.empty())
            throw decode_error("mpidict: skiplist_map online migrate record with a bad height or separator");
        skiplist_node& created = m_nodes.all()[fresh.slot];
        if (!created.separator.empty() || !created.run.empty())
            throw decode_error("mpidict: skiplist_map online migrate record fills node " + describe(fresh) + " twice");
        created.tower = read_tower(in, height, m_shared, "migrate record");
        created.separator = std::string(separator);
        created.requests = requests;
    } else if (online) {
        if (m_nodes.all()[fresh.slot].separator.empty())
            throw decode_error("mpidict: skiplist_map online migrate record continues node " + describe(fresh) +
                               ", which has not begun arriving");
    } else if ((flags & first_part) != 0) {
        const auto requests = in.read<std::uint32_t>();
        const unsigned height = in.read<std::uint8_t>();
        const std::string_view separator = read_string(in);
        if (height < 1 || height > m_shared.config.max_height)
            throw decode_error("mpidict: skiplist_map migrate record with a bad height");
        std::vector<skiplist_link> tower = read_tower(in, height, m_shared, "migrate record");
        fresh = m_nodes.allocate_local(separator, height);
        if (!fresh.null())
            m_arrived.insert(fresh.slot);
        if (fresh.null()) {
            // No room here (node_slots_per_rank or the memory limit): the node stays.
            m_refused_here.insert(old);
            byte_writer out(m_shared.engine->reserve(source, m_shared.handlers.migrate_refused, wire::node_id_bytes),
                            wire::node_id_bytes);
            put_node_id(out, old).finish();
            return;
        }
        skiplist_node& created = m_nodes.all()[fresh.slot];
        created.tower = std::move(tower);
        created.requests = requests;
        m_incoming[old] = fresh;
    } else {
        if (m_refused_here.count(old) != 0)
            return;
        const auto at = m_incoming.find(old);
        if (at == m_incoming.end())
            throw decode_error("mpidict: skiplist_map migrate record continues node " + describe(old) +
                               ", which is not arriving here");
        fresh = at->second;
    }
    skiplist_node& here = m_nodes.all()[fresh.slot];
    const auto count = in.read<std::uint32_t>();
    if (here.run.size() + count > std::size_t(m_shared.config.granularity) + 1)
        throw decode_error("mpidict: skiplist_map migrate record carries more entries than a node holds");
    auto& stats = m_shared.stats;
    read_run(in, count, here, false, stats, "migrate record");
    if (!in.empty())
        throw decode_error("mpidict: skiplist_map migrate record has trailing bytes");
    if ((flags & last_part) == 0)
        return;
    ++stats.migrated_in;
    if (online) {
        // Whole: it holds on (what the stub forwarded, what came directly)
        // until every rank's clear says what the old slot sent that rank
        // went first (start_online_moves' markers; clears that came before
        // the last part already counted down).
        here.reserved = false;
        here.allocating = false;
        if (m_nodes.break_online_for_testing != 2)  // (broken on purpose: no markers, no wait)
            here.holds += m_shared.engine->size();
        here.hold_level = 0;
        m_arrived.insert(fresh.slot);
        m_nodes.release_held(fresh);
        return;
    }
    m_incoming.erase(old);
    announce(old, fresh);
}

void skiplist_rebalancer::announce(skiplist_node_id old, skiplist_node_id fresh) {
    std::string announce(2 * wire::node_id_bytes, '\0');
    byte_writer out(reinterpret_cast<std::byte*>(announce.data()), announce.size());
    put_node_id(put_node_id(out, old), fresh).finish();
    for (int destination = 0; destination < m_shared.engine->size(); ++destination) {
        if (destination == m_shared.rank())
            handle_migrated(destination, announce);
        else
            m_shared.send_record(destination, m_shared.handlers.migrated, announce);
    }
}

void skiplist_rebalancer::handle_migrated(int, std::string_view record) {
    byte_reader in = reader_of(record);
    const skiplist_node_id old = read_node_id(in);
    const skiplist_node_id fresh = read_node_id(in);
    if (!m_shared.valid_rank(old.rank) || !m_shared.valid_rank(fresh.rank) || !in.empty())
        throw decode_error("mpidict: skiplist_map migrated record names a bad node");
    m_moved[old] = fresh;
}

void skiplist_rebalancer::handle_migrate_refused(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const skiplist_node_id old = read_node_id(in);
    if (old.rank != m_shared.rank() || !in.empty())
        throw decode_error("mpidict: skiplist_map migrate_refused record from rank " + std::to_string(source) +
                           " names a node not hosted here");
    ++m_refused;
}

skiplist_rebalance_result skiplist_rebalancer::execute(const std::vector<transfer>& transfers,
                                                       skiplist_load_metric metric, int drained, const loads& before) {
    auto& engine = *m_shared.engine;
    auto& nodes = m_nodes.all();
    const int me = m_shared.rank();
    std::uint64_t sent_bytes = 0, sent_nodes = 0, sent_entries = 0;
    // Records that came before this rank knew it was woken, now that it is
    // (a rank that is still no server refuses them: allocate_local finds no room).
    std::vector<std::pair<int, std::string>> early;
    early.swap(m_early);
    for (const auto& [source, record] : early)
        receive_migrate(source, record);
    // This rank's transfers, in plan order: pick its nodes, heaviest first,
    // each no more than twice what the transfer still lacks (a drained rank
    // sends every node, to the transfer that lacks the most).
    std::vector<std::pair<int, double>> mine;
    for (const transfer& t : transfers)
        if (t.from == me)
            mine.emplace_back(t.to, t.amount);
    if (!mine.empty()) {
        std::vector<std::uint32_t> candidates;
        for (std::uint32_t slot = 0; slot < nodes.size(); ++slot)
            if (movable(nodes[slot], drained == me) && m_arrived.count(slot) == 0)
                candidates.push_back(slot);
        std::stable_sort(candidates.begin(), candidates.end(), [&](std::uint32_t a, std::uint32_t b) {
            return weight(nodes[a], metric) > weight(nodes[b], metric);
        });
        std::vector<std::pair<std::uint32_t, int>> moves;
        if (drained == me) {
            for (const std::uint32_t slot : candidates) {
                auto most = std::max_element(mine.begin(), mine.end(),
                                             [](const auto& a, const auto& b) { return a.second < b.second; });
                moves.emplace_back(slot, most->first);
                most->second -= static_cast<double>(std::max<std::uint64_t>(1, weight(nodes[slot], metric)));
            }
        } else {
            std::vector<char> taken(candidates.size(), 0);
            for (auto& [to, lacking] : mine)
                for (std::size_t c = 0; c < candidates.size() && lacking >= 0.5; ++c) {
                    const auto w = static_cast<double>(weight(nodes[candidates[c]], metric));
                    if (taken[c] || w <= 0 || w > 2 * lacking)
                        continue;
                    taken[c] = 1;
                    lacking -= w;
                    moves.emplace_back(candidates[c], to);
                }
        }
        for (const auto& [slot, to] : moves) {
            sent_bytes += ship(slot, to);
            sent_entries += nodes[slot].run.size();
            ++sent_nodes;
        }
    }
    engine.flush();  // every node arrived (or was refused) and every rank heard of every move
    bool head_moved = false;
    const std::uint64_t freed = settle(head_moved);
    // The last sum: no rank sends before every rank has re-pointed its links.
    std::vector<std::int64_t> totals{static_cast<std::int64_t>(sent_nodes), static_cast<std::int64_t>(sent_entries),
                                     static_cast<std::int64_t>(sent_bytes), static_cast<std::int64_t>(m_refused),
                                     static_cast<std::int64_t>(freed), head_moved ? 1 : 0};
    const loads after = gather(&totals);
    if (totals[0] != totals[3] + totals[4])
        throw decode_error("mpidict: skiplist_map rebalance: " + std::to_string(totals[0]) + " nodes sent, " +
                           std::to_string(totals[4]) + " moved and " + std::to_string(totals[3]) + " refused");
    skiplist_rebalance_result result;
    result.entries_before = unsigned_of(before.entries);
    result.entries_after = unsigned_of(after.entries);
    const bool by_requests = metric == skiplist_load_metric::requests;
    result.load_before = by_requests ? unsigned_of(before.requests) : result.entries_before;
    result.load_after = by_requests ? unsigned_of(after.requests) : result.entries_after;
    result.moved_nodes = static_cast<std::uint64_t>(totals[4]);
    result.moved_entries = static_cast<std::uint64_t>(totals[1]);
    result.moved_bytes = static_cast<std::uint64_t>(totals[2]);
    result.refused_nodes = static_cast<std::uint64_t>(totals[3]);
    result.head_moved = totals[5] != 0;
    result.servers = m_shared.servers;
    m_refused = 0;
    return result;
}

std::uint64_t skiplist_rebalancer::settle(bool& head_moved) {
    // Re-point this rank's links, directory and head; free the old slots (a
    // stub of an online move has no entries left).
    auto& nodes = m_nodes.all();
    const int me = m_shared.rank();
    std::uint64_t freed = 0;
    if (!m_moved.empty()) {
        auto& stats = m_shared.stats;
        for (const auto& [old, fresh] : m_moved) {
            if (old.rank != me)
                continue;
            skiplist_node& gone = nodes[old.slot];
            if (!gone.live || gone.generation != old.generation || (gone.stub() && !(gone.moved_to == fresh)))
                throw decode_error("mpidict: skiplist_map migrated node " + describe(old) + " is not live here");
            for (std::size_t index = 0; index < gone.run.size(); ++index) {
                stats.payload_bytes -= gone.run.key(index).size() + gone.run.value(index).size();
                --stats.entries;
            }
            m_nodes.free_slot(old.slot);
            ++stats.migrated_out;
            ++freed;
        }
        for (skiplist_node& here : nodes) {
            if (!here.live)
                continue;
            for (skiplist_link& level : here.tower)
                if (level.set && !level.to.null())
                    if (const auto moved = m_moved.find(level.to); moved != m_moved.end())
                        level.to = moved->second;
        }
        m_directory.replace_if([&](const skiplist_node_id& id) {
            const auto moved = m_moved.find(id);
            return moved == m_moved.end() ? skiplist_node_id{} : moved->second;
        });
        if (const auto moved = m_moved.find(m_shared.head); moved != m_moved.end()) {
            m_shared.head = moved->second;
            m_directory.set_head(moved->second);
            head_moved = true;
        }
    }
    m_moved.clear();
    m_arrived.clear();
    m_incoming.clear();
    m_refused_here.clear();
    return freed;
}

void skiplist_rebalancer::settle_online() {
    if (!m_moving.empty())
        throw decode_error("mpidict: skiplist_map online move still awaits its reservation after a flush");
    if (m_moved.empty()) {
        m_arrived.clear();
        return;
    }
    bool head_moved = false;
    settle(head_moved);
}

std::size_t skiplist_rebalancer::start_online_moves(std::size_t count, int to) {
    if (to < -1 || to >= m_shared.engine->size())
        throw invalid_argument_error("mpidict: skiplist_map local_rebalance(" + std::to_string(count) + ", " +
                                     std::to_string(to) + "): rank " + std::to_string(to) + " is outside " +
                                     communicator_of(m_shared.engine->size()) + " (-1: the other active servers)");
    const auto& servers = m_shared.servers;
    const int me = m_shared.rank();
    std::vector<int> destinations;
    for (const int r : servers)
        if (r != me && (to < 0 || r == to))
            destinations.push_back(r);
    if (destinations.empty() || count == 0)
        return 0;
    auto& nodes = m_nodes.all();
    std::vector<std::uint32_t> candidates;
    for (std::uint32_t slot = 0; slot < nodes.size(); ++slot)
        if (movable(nodes[slot], false) && m_arrived.count(slot) == 0 && m_moving.count(slot) == 0)
            candidates.push_back(slot);
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return nodes[a].requests > nodes[b].requests; });
    if (candidates.size() > count)
        candidates.resize(count);
    for (const std::uint32_t slot : candidates)
        start_move(slot, destinations[m_next_destination++ % destinations.size()]);
    return candidates.size();
}

void skiplist_rebalancer::start_move(std::uint32_t slot, int destination) {
    m_moving.insert(slot);
    const skiplist_node_id old{m_shared.rank(), slot, m_nodes.all()[slot].generation};
    byte_writer out(m_shared.engine->reserve(destination, m_shared.handlers.move_reserve, wire::node_id_bytes),
                    wire::node_id_bytes);
    put_node_id(out, old).finish();
}

void skiplist_rebalancer::online_window() {
    const auto now = std::chrono::steady_clock::now();
    const double elapsed = std::chrono::duration<double>(now - m_window_start).count();
    if (elapsed < m_shared.config.online_rebalance_seconds || m_shared.server_index < 0)
        return;
    const int me = m_shared.rank();
    const double last = m_rates[static_cast<std::size_t>(me)];
    const double measured = static_cast<double>(m_shared.window_requests) / elapsed;
    const double rate = last < 0 ? measured : (last + measured) / 2;  // smoothed: one noisy window moves nothing
    m_shared.window_requests = 0;
    m_window_start = now;
    m_rates[static_cast<std::size_t>(me)] = rate;
    for (const int r : m_shared.servers)
        if (r != me)
            byte_writer(m_shared.engine->reserve(r, m_shared.handlers.load, sizeof rate), sizeof rate).put(rate).finish();
    if (m_cooldown > 0) {
        --m_cooldown;
        return;
    }
    // The mean over the servers that reported; the one with the lowest rate takes.
    double total = 0, lowest = 0;
    int known = 0, to = -1;
    for (const int r : m_shared.servers) {
        const double other = m_rates[static_cast<std::size_t>(r)];
        if (other < 0)
            continue;
        total += other;
        ++known;
        if (r != me && (to < 0 || other < lowest)) {
            lowest = other;
            to = r;
        }
    }
    if (to < 0 || known < 2 || rate <= m_shared.config.online_rebalance * total / known)
        return;
    // Move about what brings this rank and the taker to the mean (measured in
    // the nodes' request counts, which say how the rate divides): the most
    // requested idle nodes first, none over twice what is still lacking.
    const double mean = total / known;
    const double share = std::min(rate - mean, mean - lowest) / rate;
    auto& nodes = m_nodes.all();
    std::vector<std::uint32_t> candidates;
    double heat = 0;
    for (std::uint32_t slot = 0; slot < nodes.size(); ++slot) {
        if (!nodes[slot].live || nodes[slot].stub())
            continue;
        heat += nodes[slot].requests;
        if (movable(nodes[slot], false) && m_arrived.count(slot) == 0 && m_moving.count(slot) == 0)
            candidates.push_back(slot);
    }
    std::stable_sort(candidates.begin(), candidates.end(),
                     [&](std::uint32_t a, std::uint32_t b) { return nodes[a].requests > nodes[b].requests; });
    double lacking = share * heat;
    std::size_t started = 0;
    for (const std::uint32_t slot : candidates) {
        if (lacking < 1 || started == 2)
            break;
        const auto weight = static_cast<double>(nodes[slot].requests);
        if (weight <= 0 || weight > 2 * lacking)
            continue;
        lacking -= weight;
        start_move(slot, to);
        ++started;
    }
    if (started > 0)
        m_cooldown = 3;
}

void skiplist_rebalancer::handle_load(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const auto rate = in.read<double>();
    if (!in.empty() || !m_shared.valid_rank(source) || !(rate >= 0) || m_rates.empty())
        throw decode_error("mpidict: skiplist_map load record with a bad rate (or online_rebalance off here)");
    m_rates[static_cast<std::size_t>(source)] = rate;
}

void skiplist_rebalancer::handle_move_reserve(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const skiplist_node_id old = read_node_id(in);
    if (old.rank != source || !in.empty())
        throw decode_error("mpidict: skiplist_map move_reserve record from rank " + std::to_string(source) +
                           " names a node of another rank");
    // An empty node that holds whatever reaches it until it is filled (null: no room).
    const skiplist_node_id fresh = m_shared.server_index >= 0 ? m_nodes.reserve_local() : skiplist_node_id{};
    constexpr std::size_t bytes = 2 * wire::node_id_bytes;
    byte_writer out(m_shared.engine->reserve(source, m_shared.handlers.move_reserved, bytes), bytes);
    put_node_id(put_node_id(out, old), fresh).finish();
}

void skiplist_rebalancer::handle_move_reserved(int source, std::string_view record) {
    byte_reader in = reader_of(record);
    const skiplist_node_id old = read_node_id(in);
    const skiplist_node_id fresh = read_node_id(in);
    if (old.rank != m_shared.rank() || !in.empty() || m_moving.erase(old.slot) == 0 ||
        (!fresh.null() && fresh.rank != source))
        throw decode_error("mpidict: skiplist_map move_reserved record from rank " + std::to_string(source) +
                           " answers no move of this rank");
    if (fresh.null()) {
        ++m_shared.stats.online_refused;  // no room there: the node stays
        return;
    }
    auto& nodes = m_nodes.all();
    if (!m_nodes.live(old) || !movable(nodes[old.slot], false)) {
        // Busy meanwhile (holding, splitting) or gone: it stays; the reservation goes back.
        constexpr std::size_t bytes = 2 * wire::node_id_bytes + 1;
        byte_writer out(m_shared.engine->reserve(source, m_shared.handlers.migrate, bytes), bytes);
        put_node_id(put_node_id(out, old).put(static_cast<std::uint8_t>(online_part | abandoned)), fresh).finish();
        ++m_shared.stats.online_refused;
        return;
    }
    skiplist_node& gone = nodes[old.slot];
    ship(old.slot, source, fresh);
    auto& stats = m_shared.stats;
    ++stats.online_moves;
    for (std::size_t index = 0; index < gone.run.size(); ++index) {
        stats.payload_bytes -= gone.run.key(index).size() + gone.run.value(index).size();
        --stats.entries;
    }
    gone.run = sorted_run{};
    gone.earliest_expiry = 0;
    gone.requests = 0;
    gone.moved_to = fresh;
    // Behind everything this rank sent each rank: a marker that clears the new node.
    for (int destination = 0; destination < m_shared.engine->size() && m_nodes.break_online_for_testing != 2;
         ++destination)
        m_shared.send(destination, m_shared.handlers.marker, wire::marker{fresh.rank, fresh.slot, fresh.generation});
    announce(old, fresh);
}

void skiplist_rebalancer::add_servers(std::size_t count) {
    std::vector<int> servers = m_shared.servers;
    for (std::size_t i = 0; i < count && !m_shared.dormant.empty(); ++i) {
        servers.push_back(m_shared.dormant.front());
        m_shared.dormant.erase(m_shared.dormant.begin());
    }
    m_shared.set_servers(std::move(servers));
    m_structure.reset_stock();
}

skiplist_rebalance_result skiplist_rebalancer::rebalance(const skiplist_rebalance_options& options) {
    const auto start = std::chrono::steady_clock::now();
    if (!(options.target >= 1.0))
        throw invalid_argument_error("mpidict: skiplist_map rebalance target " + std::to_string(options.target) +
                                     " must be at least 1 (max/mean)");
    m_last = skiplist_rebalance_result{};
    const loads before = gather();
    const auto& load = options.metric == skiplist_load_metric::requests ? before.requests : before.entries;
    const auto transfers = plan(std::vector<double>(load.begin(), load.end()), options.target, false);
    skiplist_rebalance_result result = execute(transfers, options.metric, -1, before);
    if (options.metric == skiplist_load_metric::requests)
        for (skiplist_node& node : m_nodes.all())
            node.requests = 0;  // the next rebalance measures from here
    result.seconds = seconds_since(start);
    m_last = result;
    return result;
}

skiplist_rebalance_result skiplist_rebalancer::drain(int rank) {
    const auto start = std::chrono::steady_clock::now();
    m_last = skiplist_rebalance_result{};
    auto servers = m_shared.servers;
    servers.erase(std::find(servers.begin(), servers.end(), rank));
    m_shared.set_servers(std::move(servers));
    m_shared.dormant.push_back(rank);
    m_structure.reset_stock();
    const loads before = gather();
    const auto transfers = plan(std::vector<double>(before.entries.begin(), before.entries.end()), 1.0, true);
    // A drained rank with nodes but no entries (only an empty head) still sends them.
    std::vector<transfer> all = transfers;
    if (before.nodes[static_cast<std::size_t>(rank)] > 0 &&
        std::none_of(all.begin(), all.end(), [&](const transfer& t) { return t.from == rank; }))
        all.push_back(transfer{rank, m_shared.servers.front(), 1});
    skiplist_rebalance_result result = execute(all, skiplist_load_metric::entries, rank, before);
    result.seconds = seconds_since(start);
    m_last = result;
    return result;
}

void skiplist_rebalancer::at_flush() {
    const auto start = std::chrono::steady_clock::now();
    m_last = skiplist_rebalance_result{};
    const loads before = gather();
    const auto& config = m_shared.config;
    std::size_t wake = 0;
    if (!m_shared.dormant.empty()) {
        bool all_full = true;
        std::int64_t total = 0;
        for (const std::int64_t e : before.entries)
            total += e;
        for (const int r : m_shared.servers) {
            const auto at = static_cast<std::size_t>(r);
            all_full = all_full && (static_cast<std::uint64_t>(before.entries[at]) >= config.grow_entries ||
                                    before.memory_full[at] != 0);
        }
        if (all_full) {
            // Enough servers that the mean falls below the threshold (at least one).
            wake = 1;
            while (wake < m_shared.dormant.size() && config.grow_entries > 0 &&
                   static_cast<std::uint64_t>(total) / (m_shared.servers.size() + wake) >= config.grow_entries)
                ++wake;
        }
    }
    if (wake > 0)
        add_servers(wake);
    const double target = config.rebalance_threshold > 0 ? config.rebalance_threshold : 1.1;
    const auto transfers =
        plan(std::vector<double>(before.entries.begin(), before.entries.end()), wake > 0 ? 1.0 : target, wake > 0);
    if (wake == 0 && (config.rebalance_threshold <= 0 || transfers.empty()))
        return;  // nothing to do: every rank knows it from the same sum
    skiplist_rebalance_result result = execute(transfers, skiplist_load_metric::entries, -1, before);
    result.servers_added = wake;
    result.seconds = seconds_since(start);
    m_last = result;
}

}  // namespace detail
}  // namespace mpidict
