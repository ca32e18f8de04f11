#pragma once
// The workload whose histories the consistency checkers read (tools/histcheck):
// every caller keeps up to `window` request-form operations in flight on a
// small shared key space (so callers conflict), records each operation's
// invocation and return time, its issue number and the poll round in which it
// was seen complete, then, after a flush, reads every key once more (the final
// state).  Used under MPI (tests/skiplist_map/mpi_skiplist_map_history.cpp,
// steady_clock time) and under the simulation (tests/sim/sim_skiplist_history.cpp,
// the simulation's step counter as time).
//
// One JSON object per line:
//   {"client":C,"seq":S,"call":T0,"return":T1,"round":R,"op":"insert","key":K,"value":V,"out":O}
// out: insert 0 stored / 1 replaced; insert_if_absent 1 inserted / 0 present;
// find the value or -1; erase 1 hit / 0 miss; range and match: "hi":H,
// "limit":L (0: all), "desc":true|false and "out":[[k,v],...] in the order
// returned (match is the pattern "[K,H]", the same interval by the pattern path);
// count and erase_range (shape.counts): "hi":H and "out" the number counted or erased;
// reduce (shape.counts): value = the operand (std::plus), out as insert's.
// Completion is polled newest first, so an operation is never given an earlier
// round than one issued before it that completed first (see histcheck's
// reply-order check).

#include <algorithm>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "mpidict/skiplist_map.hpp"

namespace mpidict::history_test {

using key_type = std::int64_t;
using value_type = std::uint64_t;
using map_type = skiplist_map<key_type, value_type>;

struct workload_shape {
    int operations = 40;      // per caller, before the final reads
    int keys = 12;            // shared key space [0, keys)
    int window = 4;           // request-form operations in flight per caller
    bool ranges = false;      // include range and match queries (some with a limit, some descending)
    // Chains of dependent operations (issue 42): each caller issues runs of 2-6
    // operations on two keys back to back, all in flight together (the window
    // is raised to hold a run): a write of one key then the other, reads of
    // them in the opposite order, a read-modify-write step (find, then insert
    // or erase of the same key).  Only the order the map keeps between
    // operations in flight (total_order: issue order, across callers
    // linearizable) makes such a history legal.
    bool chains = false;
    // Runs of range_from queries (issue 42, "Ranges that go ahead" in
    // src/skiplist/caller_ranges.cpp): a third of the steps issue 2-4
    // range_from(lo, limit) queries back to back, all in flight together, with
    // random lo (so a later one often starts above an earlier one and may
    // leave before it), while every caller writes the keys between them.
    // Recorded as ranges with hi = keys (no key is at or above it).
    bool range_runs = false;
    // count and erase_range of [key, key + 0..3] (issue 49), drawn instead of
    // some erases, and reduce (std::plus) instead of some inserts (no extra
    // random draw when false).
    bool counts = false;
    // find_many (issue 42): now and then every open operation is polled to
    // completion and a find_many of 1-5 keys (repeats allowed, any order) is
    // called; each key is recorded as a find with its own issue number (index
    // order), all with the batch's call and return times and one poll round.
    // In total_order its keys go to the head as sorted chunks that split over
    // the towers (caller_batch.cpp), so the checkers see whether those reads
    // are linearizable in issue order.
    bool find_many = false;
    // Collective steps every caller runs between its operations (issue 44:
    // rebalance or drain while requests are still open): midway[i] once the
    // caller has issued (i + 1) / (midway.size() + 1) of its operations.
    std::vector<std::function<void()>> midway;
};

struct pending {
    enum class kind { insert, insert_if_absent, find, erase, range, match, count, erase_range, reduce } what;
    std::uint64_t seq = 0;
    std::int64_t call = 0;
    key_type key = 0, hi = 0;
    value_type value = 0;
    std::uint64_t limit = 0;
    bool descending = false;
    bool from = false;  // range_from (unbounded above)
    std::variant<request<replace_result>, request<bool>, request<std::optional<value_type>>,
                 request<map_type::entry_list>, request<std::uint64_t>>
        handle;
};

inline const char* name_of(pending::kind what) {
    switch (what) {
    case pending::kind::insert: return "insert";
    case pending::kind::insert_if_absent: return "insert_if_absent";
    case pending::kind::find: return "find";
    case pending::kind::erase: return "erase";
    case pending::kind::range: return "range";
    case pending::kind::match: return "match";
    case pending::kind::count: return "count";
    case pending::kind::erase_range: return "erase_range";
    case pending::kind::reduce: return "reduce";
    }
    return "?";
}

// Runs one caller's part and returns its history lines.  `now` is the clock;
// `random_below(n)` this caller's random numbers; `idle()` lets the others run
// while polling (a yield).
inline std::string run_workload(map_type& map, const workload_shape& shape, int client,
                                const std::function<std::int64_t()>& now,
                                const std::function<std::uint64_t(std::uint64_t)>& random_below,
                                const std::function<void()>& idle) {
    std::string out;
    std::vector<pending> open;
    std::uint64_t seq = 0;
    std::uint64_t round = 0;
    value_type next_value = (static_cast<value_type>(client) << 32) + 1;
    auto record = [&](pending& done, std::int64_t returned, const std::string& result) {
        out += "{\"client\":" + std::to_string(client) + ",\"seq\":" + std::to_string(done.seq) +
               ",\"call\":" + std::to_string(done.call) + ",\"return\":" + std::to_string(returned) +
               ",\"round\":" + std::to_string(round) + ",\"op\":\"" + name_of(done.what) +
               "\",\"key\":" + std::to_string(done.key) + ",\"value\":" + std::to_string(done.value);
        if (done.what == pending::kind::range || done.what == pending::kind::match)
            out += ",\"hi\":" + std::to_string(done.hi) + ",\"limit\":" + std::to_string(done.limit) +
                   ",\"desc\":" + (done.descending ? "true" : "false");
        if (done.what == pending::kind::count || done.what == pending::kind::erase_range)
            out += ",\"hi\":" + std::to_string(done.hi);
        out += ",\"out\":" + result + "}\n";
    };
    // One poll round: newest first (see the header comment).
    auto poll = [&]() {
        ++round;
        bool any = false;
        for (std::size_t index = open.size(); index-- > 0;) {
            pending& p = open[index];
            const bool ready = std::visit([](auto& r) { return r.test(); }, p.handle);
            if (!ready)
                continue;
            const std::int64_t returned = now();
            std::string result;
            switch (p.what) {
            case pending::kind::insert:
            case pending::kind::reduce:
                result = std::get<request<replace_result>>(p.handle).get().replaced ? "1" : "0";
                break;
            case pending::kind::insert_if_absent:
            case pending::kind::erase:
                result = std::get<request<bool>>(p.handle).get() ? "1" : "0";
                break;
            case pending::kind::find: {
                const auto found = std::get<request<std::optional<value_type>>>(p.handle).get();
                result = found ? std::to_string(*found) : "-1";
                break;
            }
            case pending::kind::range:
            case pending::kind::match: {
                const auto entries = std::get<request<map_type::entry_list>>(p.handle).get();
                result = "[";
                for (std::size_t e = 0; e < entries.size(); ++e)
                    result += (e ? ",[" : "[") + std::to_string(entries[e].first) + "," +
                              std::to_string(entries[e].second) + "]";
                result += "]";
                break;
            }
            case pending::kind::count:
            case pending::kind::erase_range:
                result = std::to_string(std::get<request<std::uint64_t>>(p.handle).get());
                break;
            }
            record(p, returned, result);
            open.erase(open.begin() + static_cast<std::ptrdiff_t>(index));
            any = true;
        }
        if (!any)
            idle();
    };
    auto issue = [&](pending::kind what, key_type key, key_type hi, std::uint64_t limit = 0, bool descending = false,
                     bool from = false) {
        pending p;
        p.what = what;
        p.from = from;
        p.seq = seq++;
        p.key = key;
        p.hi = hi;
        p.limit = limit;
        p.descending = descending;
        p.call = now();
        switch (what) {
        case pending::kind::insert:
            p.value = next_value++;
            p.handle = map.insert(key, p.value);
            break;
        case pending::kind::insert_if_absent:
            p.value = next_value++;
            p.handle = map.insert_if_absent(key, p.value);
            break;
        case pending::kind::find:
            p.handle = map.find(key);
            break;
        case pending::kind::erase:
            p.handle = map.erase(key);
            break;
        case pending::kind::range:
            if (from)
                p.handle = map.range_from(key, {.limit = limit, .descending = descending});
            else
                p.handle = map.range(key, hi, {.limit = limit, .descending = descending});
            break;
        case pending::kind::match:
            p.handle = map.match("[" + std::to_string(key) + "," + std::to_string(hi) + "]",
                                 {.limit = limit, .descending = descending});
            break;
        case pending::kind::reduce:
            p.value = next_value++;
            p.handle = map.reduce(key, p.value);  // std::plus at the key's node
            break;
        case pending::kind::count:
            p.handle = map.count(key, hi);
            break;
        case pending::kind::erase_range:
            p.handle = map.erase_range(key, hi);
            break;
        }
        open.push_back(std::move(p));
    };
    // A find_many of `keys` (see workload_shape::find_many).
    auto find_many = [&](const std::vector<key_type>& keys) {
        while (!open.empty())
            poll();
        std::vector<std::optional<value_type>> results(keys.size());
        const std::int64_t call = now();
        map.find_many(std::span<const key_type>(keys),
                      [&](std::size_t index, const std::optional<value_type>& found) { results[index] = found; });
        const std::int64_t returned = now();
        ++round;
        for (std::size_t index = 0; index < keys.size(); ++index) {
            pending done;
            done.what = pending::kind::find;
            done.seq = seq++;
            done.call = call;
            done.key = keys[index];
            record(done, returned, results[index] ? std::to_string(*results[index]) : std::string("-1"));
        }
    };
    std::size_t midway_done = 0;
    auto maybe_midway = [&](int op) {
        while (midway_done < shape.midway.size() &&
               static_cast<std::size_t>(op) * (shape.midway.size() + 1) >=
                   (midway_done + 1) * static_cast<std::size_t>(shape.operations))
            shape.midway[midway_done++]();
    };
    if (shape.chains) {
        for (int op = 0; op < shape.operations;) {
            maybe_midway(op);
            while (!open.empty())
                poll();  // a chain starts once the previous one completed
            const key_type first = static_cast<key_type>(random_below(static_cast<std::uint64_t>(shape.keys)));
            key_type second = static_cast<key_type>(random_below(static_cast<std::uint64_t>(shape.keys)));
            if (second == first)
                second = (first + 1) % shape.keys;
            const int length = 2 + static_cast<int>(random_below(5));
            for (int link = 0; link < length && op < shape.operations; ++link, ++op) {
                const key_type key = link % 2 == 0 ? first : second;
                const std::uint64_t pick = random_below(10);
                if (pick < 4)
                    issue(pending::kind::insert, key, 0);
                else if (pick == 6 && shape.find_many)
                    find_many({key, link % 2 == 0 ? second : first, key});
                else if (pick < 7)
                    issue(pending::kind::find, key, 0);
                else if (pick < 8)
                    issue(pending::kind::insert_if_absent, key, 0);
                else
                    issue(pending::kind::erase, key, 0);
            }
        }
        maybe_midway(shape.operations);
        while (!open.empty())
            poll();
        return out;
    }
    for (int op = 0; op < shape.operations; ++op) {
        maybe_midway(op);
        while (static_cast<int>(open.size()) >= shape.window)
            poll();
        const key_type key = static_cast<key_type>(random_below(static_cast<std::uint64_t>(shape.keys)));
        const std::uint64_t pick = random_below(100);
        if (shape.range_runs && pick < 33) {
            // Each query is one of the caller's `operations` (final_reads numbers on from there).
            const int run = std::min(2 + static_cast<int>(random_below(3)), shape.operations - op);
            for (int query = 0; query < run; ++query) {
                const key_type lo = static_cast<key_type>(random_below(static_cast<std::uint64_t>(shape.keys)));
                const std::uint64_t limit = random_below(4);  // 0: no limit
                issue(pending::kind::range, lo, static_cast<key_type>(shape.keys), limit, false, true);
            }
            op += run - 1;
            continue;
        }
        if (shape.ranges && pick < 12) {
            const key_type hi = key + static_cast<key_type>(random_below(static_cast<std::uint64_t>(shape.keys)));
            // A third by the pattern path; a third with a limit (1-3); a quarter descending.
            const std::uint64_t form = random_below(12);
            const std::uint64_t limit = form % 3 == 0 ? 1 + random_below(3) : 0;
            issue(form < 4 ? pending::kind::match : pending::kind::range, key, hi, limit, form % 4 == 1);
        } else if (shape.counts && pick < 8) {
            issue(pending::kind::reduce, key, 0);
        } else if (pick < 45) {
            issue(pending::kind::insert, key, 0);
        } else if (pick < 55) {
            issue(pending::kind::insert_if_absent, key, 0);
        } else if (pick < 85) {
            issue(pending::kind::find, key, 0);
        } else if (pick < 90 && shape.find_many) {
            std::vector<key_type> keys(1 + random_below(5));
            keys[0] = key;
            for (std::size_t k = 1; k < keys.size(); ++k)
                keys[k] = static_cast<key_type>(random_below(static_cast<std::uint64_t>(shape.keys)));
            find_many(keys);
        } else if (shape.counts && pick >= 93) {
            const key_type hi = key + static_cast<key_type>(random_below(4));
            issue(pick < 96 ? pending::kind::count : pending::kind::erase_range, key, hi);
        } else {
            issue(pending::kind::erase, key, 0);
        }
    }
    maybe_midway(shape.operations);
    while (!open.empty())
        poll();
    return out;
}

// Issue 44: the collective steps of an elastic run (workload_shape::midway):
// a rebalance that moves nodes at any imbalance (target 1), then a drain of
// the first active server (the head's rank, until the head moved), while
// every caller still has requests open.  elastic_config: in odd runs the
// list starts on one server and wakes the others at flushes (grow_entries 1).
inline std::vector<std::function<void()>> elastic_steps(map_type& map) {
    return {[&map] { map.rebalance({.target = 1.0}); },
            [&map] {
                const auto servers = map.active_servers();
                if (servers.size() > 1)
                    map.drain(servers.front());
            }};
}
// Online moves (issue 44): every caller moves its `nodes` most requested
// idle nodes to the other servers `times` times while its requests are open
// (not collective: each rank at its own point of its workload); with
// `elastic` the collective steps come halfway.
inline std::vector<std::function<void()>> online_steps(map_type& map, bool elastic, int times = 4,
                                                       std::size_t nodes = 2) {
    const auto shed = [&map, nodes] { map.local_rebalance(nodes); };
    std::vector<std::function<void()>> steps;
    for (int step = 0; step < times; ++step) {
        if (elastic && step == times / 2)
            for (auto& collective : elastic_steps(map))
                steps.push_back(std::move(collective));
        steps.push_back(shed);
    }
    return steps;
}
inline void elastic_config(skiplist_map_config& config, std::uint64_t run) {
    if (run % 2 == 1) {
        config.initial_servers = 1;
        config.grow_entries = 1;
    }
}

// The issue number of the first final read: above every number run_workload
// gave (a find_many takes one per key, at most 5, from one operation).
inline std::uint64_t final_reads_first_seq(const workload_shape& shape) {
    return 8 * static_cast<std::uint64_t>(shape.operations);
}

// After a flush on every caller: one find of every key (the final state).
inline std::string final_reads(map_type& map, const workload_shape& shape, int client,
                               const std::function<std::int64_t()>& now, std::uint64_t first_seq) {
    std::string out;
    for (int key = 0; key < shape.keys; ++key) {
        const std::int64_t call = now();
        const auto found = map.find(key).get();
        const std::int64_t returned = now();
        out += "{\"client\":" + std::to_string(client) + ",\"seq\":" + std::to_string(first_seq + key) +
               ",\"call\":" + std::to_string(call) + ",\"return\":" + std::to_string(returned) +
               ",\"round\":0,\"op\":\"find\",\"final\":true,\"key\":" + std::to_string(key) +
               ",\"value\":0,\"out\":" + (found ? std::to_string(*found) : std::string("-1")) + "}\n";
    }
    return out;
}

}  // namespace mpidict::history_test
