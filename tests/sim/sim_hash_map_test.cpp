// hash_map<uint64_t, uint64_t> at scale under the deterministic simulation.
//
// Every seed picks a configuration (buffer size down to 256 bytes, blocking
// factor down to 1, release queue 0..8, receive buffers 1..8, a hash that sends
// every key to rank 0, network delays, scheduling granularity) and runs a few
// phases of random operations on P virtual ranks.  Each phase ends with flush().
//
// The model.  Operations on a rank's *private* keys (only that rank touches
// them) are checked exactly: the runtime keeps a caller's operations on one
// owner in program order, so the expected result of every request is known
// when it is issued (std::map<key, vector> per rank).  *Shared* keys take
// concurrent inserts and takes from every rank; after each flush the stored
// values must equal inserted minus taken, as multisets (std::multimap), with
// each origin's values in its insertion order.  *Visited* keys take
// insert_if_absent from every rank: exactly one winner, stored alone.  *Chain*
// keys receive visit chains that visitors (handlers) forward from rank to rank.
//
// Invariants checked after every flush, on every rank: no request outstanding,
// every kept request already complete (test() true without waiting) and correct;
// no message left in the simulated network (flush returned at quiescence); the
// request table within the blocking factor and the send buffers within their
// bound (engine statistics); every key stored at its owner; the whole content of
// the map equal to the model (nothing lost, nothing duplicated, nothing
// invented); global_size() equal to the model.
//
// Flags beyond sim_driver.hpp's:
//   --determinism            run each seed twice and compare delivery order, trace
//                            and results (exit 1 on any difference)
//   --fault drop-flush       enable engine::set_fault_drop_flush_message on every rank
//   --expect-failure         succeed only if the simulation detects a failure
//   --bound-report           print the largest buffer / in-flight high-water seen

#include <algorithm>
#include <cinttypes>
#include <cstring>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "mpidict/hash_map.hpp"
#include "mpidict/runtime/sim_transport.hpp"
#include "sim_driver.hpp"

namespace {

using namespace mpidict;
using u64 = std::uint64_t;
using u32 = std::uint32_t;

// ---- a hash that sends every key to rank 0 -------------------------------------

// hash_map places a key at reduce_range(mix64(hash ^ C), p); these hash values all
// land below 2^58, i.e. on rank 0 for every p <= 64.  4096 of them keep the local
// table usable.  The test checks owner() == 0 for every key, so a change of the
// placement formula shows up as a failure, not as a silently weaker test.
const std::vector<u64>& funnel_hashes() {
    static const std::vector<u64> table = [] {
        std::vector<u64> out;
        for (u64 candidate = 1; out.size() < 4096; ++candidate) {
            const u64 h = mix64(candidate * 0x9e3779b97f4a7c15ULL);
            if ((mix64(h ^ 0x5851f42d4c957f2dULL) >> 58) == 0)
                out.push_back(h);
        }
        return out;
    }();
    return table;
}

struct funnel_hash {
    u64 operator()(const u64& key) const { return funnel_hashes()[mix64(key) & 4095]; }
};

// ---- configuration from the seed ---------------------------------------------------

class seed_random {
public:
    explicit seed_random(u64 seed) : m_state(seed) {}
    u64 next() {
        m_state += 0x9e3779b97f4a7c15ULL;
        return mix64(m_state);
    }
    u64 below(u64 bound) { return bound == 0 ? 0 : reduce_range(next(), bound); }
    template <class T, std::size_t N>
    T pick(const T (&choices)[N]) {
        return choices[below(N)];
    }

private:
    u64 m_state;
};

struct personality {
    int ranks = 1;
    u64 seed = 0;
    hash_map_config map;
    bool funnel = false;
    sim::options sim;
    int phases = 3;
    int ops_per_phase = 40;
    bool explicit_destroy = false;
    u32 private_keys = 24;
    u32 shared_keys = 16;
    u32 visited_keys = 16;
    u32 chain_keys = 16;
    u32 reply_limit = 20;      // most values a find/take asks for
    u32 private_cap = 20;      // most values a private key holds
    bool fault_drop_flush = false;
    bool quiet_before_flush = false;  // every request answered before each flush

    std::string describe() const {
        char text[512];
        std::snprintf(text, sizeof text,
                      "ranks=%d seed=%" PRIu64
                      " buffer_bytes=%zu L=%zu q=%zu receive_buffers=%zu placement=%s phases=%d ops/phase=%d "
                      "switch_p=%.2f max_delay=%u sum_delay=%u yield_on_send=%d routing=%s%s",
                      ranks, seed, map.runtime.buffer_bytes, map.runtime.blocking_factor, map.runtime.release_queue,
                      map.runtime.receive_buffers, funnel ? "all-keys-to-rank-0" : "hash", phases, ops_per_phase,
                      sim.switch_probability, sim.max_delay_steps, sim.max_sum_delay_steps, sim.yield_on_send ? 1 : 0,
                      std::string(runtime::routing_name(map.runtime.routing)).c_str(),
                      fault_drop_flush ? " fault=drop-flush" : "");
        if (quiet_before_flush)
            std::strncat(text, " quiet-before-flush", sizeof text - std::strlen(text) - 1);
        return text;
    }
};

personality make_personality(int ranks, u64 seed, const sim_test::command_line& cli) {
    seed_random random(mix64(seed) ^ (static_cast<u64>(ranks) << 48));
    personality p;
    p.ranks = ranks;
    p.seed = seed;
    static const std::size_t buffers[] = {256, 256, 256, 512, 1024, 4096, 65536, 65536};
    static const std::size_t blocking[] = {1, 2, 3, 8, 64, 4096, 4096};
    static const std::size_t queues[] = {0, 1, 2, 3, 8, 8};
    static const std::size_t receives[] = {1, 2, 3, 8, 8};
    p.map.runtime.buffer_bytes = random.pick(buffers);
    p.map.runtime.blocking_factor = random.pick(blocking);
    p.map.runtime.release_queue = random.pick(queues);
    p.map.runtime.receive_buffers = random.pick(receives);
    p.map.expected_keys_per_rank = random.below(2) ? 0 : 64;
    p.funnel = ranks > 1 && random.below(4) == 0;
    // Scheduling granularity: switching at every point gives the finest
    // interleavings but costs an OS thread hand-over each; coarser runs reach
    // deeper into long sequences for the same time.
    static const double switches[] = {1.0, 0.3, 0.1, 0.03};
    p.sim.switch_probability = random.pick(switches);
    if (ranks > 7 && p.sim.switch_probability > 0.3)
        p.sim.switch_probability = 0.3;
    static const std::uint32_t delays[] = {0, 2, 16, 64, 1000};
    p.sim.max_delay_steps = random.pick(delays);
    static const std::uint32_t sum_delays[] = {0, 8, 64, 500};
    p.sim.max_sum_delay_steps = random.pick(sum_delays);
    p.sim.yield_on_send = random.below(3) != 0;
    p.sim.trace_capacity = cli.single_seed ? 400 : 160;
    p.sim.trace_stream = cli.trace ? stderr : nullptr;
    p.phases = 2 + static_cast<int>(random.below(3));
    // About 400 operations per phase in total, at least 10 per rank.
    int ops = cli.ops != 0 ? cli.ops : std::clamp(400 / ranks, 10, 120);
    if (cli.soak && cli.ops == 0)
        ops *= 4;
    p.ops_per_phase = std::max(1, ops / 2 + static_cast<int>(random.below(static_cast<u64>(ops))));
    p.explicit_destroy = random.below(2) == 0;
    const std::size_t buffer = p.map.runtime.buffer_bytes;
    // A reply carries 8 bytes of header and 8 per value inside one record.
    const std::size_t room = (buffer - runtime::group_header_bytes - runtime::reply_header_bytes - 12) / 8;
    p.reply_limit = static_cast<u32>(std::min<std::size_t>(room, 200));
    p.private_cap = std::min<u32>(p.reply_limit, 20);
    p.private_keys = 8 + static_cast<u32>(random.below(24));
    p.shared_keys = 4 + static_cast<u32>(random.below(24));
    p.visited_keys = 4 + static_cast<u32>(random.below(24));
    p.chain_keys = 4 + static_cast<u32>(random.below(16));
    p.fault_drop_flush = sim_test::flag_value(cli, "--fault") == "drop-flush";
    p.quiet_before_flush = sim_test::has_flag(cli, "--quiet-before-flush");
    // --routing direct (default), grid, or mixed (each seed picks).
    const std::string routing = sim_test::flag_value(cli, "--routing");
    p.map.runtime.routing = routing == "grid" || (routing == "mixed" && random.below(2) == 0)
                                ? runtime::routing_mode::grid
                                : runtime::routing_mode::direct;
    // A livelock fails at the step limit; normal runs take far fewer steps
    // (about 20 000 for 2 ranks, up to a million for 64).
    p.sim.max_steps = 2'000'000 + 4'000 * static_cast<u64>(ranks) * static_cast<u64>(p.ops_per_phase) *
                                      static_cast<u64>(p.phases);
    return p;
}

// ---- keys and values ------------------------------------------------------------------

constexpr u64 private_space = 1, shared_space = 2, visited_space = 3, chain_space = 4;
u64 space_of(u64 key) { return key >> 60; }
u64 private_key(int rank, u32 index) { return (private_space << 60) | (static_cast<u64>(rank) << 32) | index; }
u64 shared_key(u32 index) { return (shared_space << 60) | index; }
u64 visited_key(int phase, u32 index) { return (visited_space << 60) | (static_cast<u64>(phase) << 32) | index; }
u64 chain_key(u64 chain, u32 hop, u32 keys) { return (chain_space << 60) | (mix64(chain * 131 + hop) % keys); }
// Values are unique over the run: origin rank in the top bits, a per-rank counter below.
u64 origin_of(u64 value) { return value >> 40; }
u64 sequence_of(u64 value) { return value & ((u64{1} << 40) - 1); }
u64 chain_value(u64 chain, u32 hop) { return (u64{1} << 63) | (chain << 8) | hop; }

struct chain_arg {
    u64 chain;
    u32 hop;
    u32 hops_left;
};

// ---- state shared by all virtual ranks (only one runs at a time) --------------------

struct visited_candidate {
    u64 value;
    bool request_form;
    bool inserted;  // the request's answer (request_form only)
};

struct snapshot_entry {
    u64 key;
    std::vector<u64> values;
};

struct shared_state {
    explicit shared_state(const personality& settings)
        : config(settings), private_models(static_cast<std::size_t>(settings.ranks)),
          snapshots(static_cast<std::size_t>(settings.ranks)) {}
    const personality& config;
    std::vector<std::map<u64, std::vector<u64>>> private_models;  // exact, per rank
    std::multimap<u64, u64> shared_model;                         // after the last check
    std::multimap<u64, u64> shared_inserted;                      // this phase, by every rank
    std::multimap<u64, u64> shared_taken;                         // this phase, by every rank
    std::unordered_map<u64, u64> key_of_value;                    // every shared value ever inserted
    std::multimap<u64, u64> chain_model;                          // every chain hop ever started
    std::map<u64, std::vector<visited_candidate>> visited;        // this phase
    std::map<u64, u64> visited_winners;                           // decided in earlier phases
    std::vector<std::vector<snapshot_entry>> snapshots;
    std::size_t expected_keys = 0;
    u64 result_digest = 0;  // of every checked answer, for the determinism test
    std::size_t max_in_flight_seen = 0;
    std::size_t max_buffer_bytes_seen = 0;
    u64 chains_started = 0;
    std::map<int, int> serving_arrivals;  // by phase
    u64 checks = 0;
};

// The send-buffer bound the engine keeps.  Sends it starts itself wait for
// the release queue (at most max(q, 1) in flight), but handler output never
// waits, and a rank keeps handling messages while it waits for queue space, a
// reply or a flush round: every reply it ships then stays in flight until its
// requester matches it.  So the in-flight count is bounded by the work other
// ranks can have outstanding here: each other rank has at most L requests (one
// reply record each) plus one find_many/take_many batch (at most 12 keys in this
// workload), and each visit chain has at most one hop in flight.  (This check
// caught engine::progress() holding every reply a flooded rank shipped until the
// flood paused: 918 buffers of 64 KiB at q = 0; with sends released while it
// polls, the high-water stays within a few buffers of q: --bound-report.)
std::size_t in_flight_bound(const personality& config, u64 chains_started) {
    const std::size_t others = static_cast<std::size_t>(config.ranks - 1);
    // Grid routing: a corner takes relay messages only while fewer than q of
    // its direct sends are in flight, and one relay message makes it ship at
    // most one buffer per column peer.
    const std::size_t corner = config.map.runtime.routing == runtime::routing_mode::grid
                                   ? std::max<std::size_t>(config.map.runtime.release_queue, 1) +
                                         static_cast<std::size_t>(config.ranks)
                                   : 0;
    return std::max<std::size_t>(config.map.runtime.release_queue, 1) +
           others * (config.map.runtime.blocking_factor + 12) + static_cast<std::size_t>(chains_started) + corner;
}

// ---- one virtual rank -----------------------------------------------------------

template <class Hash>
class rank_workload {
public:
    using map_type = hash_map<u64, u64, Hash>;
    using visit_context = typename map_type::visit_context;

    rank_workload(int rank, sim::sim_context& context, shared_state& shared)
        : m_rank(rank), m_ctx(context), m_shared(shared), m_config(shared.config),
          m_model(shared.private_models[static_cast<std::size_t>(rank)]) {}

    void run() {
        // A member declared before the request lists: requests must die before
        // the engine they point into, also when a failure unwinds this rank.
        m_owned_map = std::make_unique<map_type>(
            std::make_unique<runtime::engine>(m_ctx.make_transport(), m_config.map.runtime), m_config.map);
        map_type& map = *m_owned_map;
        m_map = &map;
        m_append = map.template register_visitor<u64, u64>("sim.append", &visit_append);
        m_clear = map.template register_visitor<u64, u64>("sim.clear", &visit_clear);
        m_chain = map.template register_visitor<chain_arg, void>("sim.chain", &visit_chain, this);
        if (m_config.fault_drop_flush)
            map.engine().set_fault_drop_flush_message(true);
        for (int phase = 0; phase < m_config.phases; ++phase) {
            m_phase = phase;
            for (int op = 0; op < m_config.ops_per_phase; ++op)
                one_operation();
            // Some ranks wait for everything themselves, others leave it to flush.
            if (m_config.quiet_before_flush) {
                complete_all();
                serving_barrier();  // only fire-and-forget records are left for flush to move
            } else if (m_ctx.random_below(3) == 0) {
                complete_all();
            }
            m_ctx.note("flush", static_cast<u64>(phase));
            map.flush();
            after_flush();
        }
        if (m_config.explicit_destroy)
            map.destroy();
        else
            m_owned_map.reset();  // the destructor is the collective destroy
    }

private:
    // ---- visitors (run at the owner, inside a handler) ----

    static u64 visit_append(visit_context&, const u64&, std::vector<u64>& values, const u64& value) {
        const u64 before = values.size();
        values.push_back(value);
        return before;
    }
    static u64 visit_clear(visit_context&, const u64&, std::vector<u64>& values, const u64&) {
        const u64 before = values.size();
        values.clear();
        return before;
    }
    static void visit_chain(visit_context& context, const u64&, std::vector<u64>& values, const chain_arg& arg) {
        values.push_back(chain_value(arg.chain, arg.hop));
        if (arg.hops_left > 0) {
            auto* self = static_cast<rank_workload*>(context.user_context);
            const chain_arg next{arg.chain, arg.hop + 1, arg.hops_left - 1};
            const u64 key = chain_key(arg.chain, next.hop, self->m_config.chain_keys);
            self->check_owner(key);
            context.map.async_visit(key, self->m_chain, next);
        }
    }

    // ---- checks ----

    [[noreturn]] void fail(const std::string& what) { m_ctx.fail("check failed: " + what); }

    void check(bool condition, const char* what, u64 key = 0, const std::string& detail = {}) {
        ++m_shared.checks;
        if (!condition) [[unlikely]] {
            char text[160];
            std::snprintf(text, sizeof text, "%s (key %#" PRIx64 ", phase %d) ", what, key, m_phase);
            fail(text + detail);
        }
    }

    static std::string show(const std::vector<u64>& values) {
        std::string out = "[";
        for (std::size_t index = 0; index < values.size() && index < 24; ++index)
            out += (index ? " " : "") + std::to_string(values[index]);
        if (values.size() > 24)
            out += " ...";
        return out + "] (" + std::to_string(values.size()) + ")";
    }

    void digest(u64 value) { m_shared.result_digest = mix64(m_shared.result_digest ^ value) + static_cast<u64>(m_rank); }

    void check_owner(u64 key) {
        if (m_config.funnel && m_map->owner(key) != 0)
            fail("the all-keys-to-rank-0 hash placed key " + std::to_string(key) + " on rank " +
                 std::to_string(m_map->owner(key)) + ": hash_map's placement formula changed; update funnel_hash");
    }

    // ---- pending requests ----

    struct pending_values {
        request<std::vector<u64>> handle;
        u64 key;
        std::vector<u64> expected;
        enum kind_t { exact, shared_take, shared_find } kind;
    };
    struct pending_insert {
        request<insert_result> handle;
        u64 key;
        u32 count;
    };
    struct pending_count {
        request<std::size_t> handle;
        u64 key;
        std::size_t expected;
    };
    struct pending_flag {
        request<bool> handle;
        u64 key;
        u64 value;
        bool expected;  // private keys
        bool visited;   // a visited key: record the answer
    };
    struct pending_visit {
        request<u64> handle;
        u64 key;
        u64 expected;
    };
    struct pending_nothing {
        request<nothing> handle;
        u64 key;
    };

    std::size_t pending_total() const {
        return m_values.size() + m_inserts.size() + m_counts.size() + m_flags.size() + m_visits.size() +
               m_nothings.size();
    }

    void finish(pending_values& p) {
        const std::vector<u64> got = p.handle.get();
        for (u64 value : got)
            digest(value);
        switch (p.kind) {
        case pending_values::exact:
            check(got == p.expected, "find/take on a private key returned the wrong values", p.key,
                  "expected " + show(p.expected) + " got " + show(got));
            break;
        case pending_values::shared_take:
            check(got.size() <= m_config.reply_limit, "take returned more than its limit", p.key);
            for (u64 value : got)
                m_shared.shared_taken.emplace(p.key, value);
            break;
        case pending_values::shared_find: {
            check(got.size() <= m_config.reply_limit, "find returned more than its limit", p.key);
            std::set<u64> seen;
            for (u64 value : got) {
                const auto where = m_shared.key_of_value.find(value);
                check(where != m_shared.key_of_value.end() && where->second == p.key,
                      "find on a shared key returned a value never inserted under it", p.key, std::to_string(value));
                check(seen.insert(value).second, "find returned a value twice", p.key, std::to_string(value));
            }
            break;
        }
        }
    }
    void finish(pending_insert& p) {
        const insert_result got = p.handle.get();
        digest(got.stored * 7 + got.requested);
        check(got.requested == p.count && got.stored == p.count, "insert did not store every value", p.key,
              "requested " + std::to_string(got.requested) + " stored " + std::to_string(got.stored) + " of " +
                  std::to_string(p.count));
    }
    void finish(pending_count& p) {
        const std::size_t got = p.handle.get();
        digest(got);
        check(got == p.expected, "erase reported the wrong count", p.key,
              "expected " + std::to_string(p.expected) + " got " + std::to_string(got));
    }
    void finish(pending_flag& p) {
        const bool got = p.handle.get();
        digest(got ? 3 : 5);
        if (p.visited) {
            m_shared.visited[p.key].push_back(visited_candidate{p.value, true, got});
        } else {
            check(got == p.expected, "insert_if_absent on a private key gave the wrong answer", p.key,
                  std::string("expected ") + (p.expected ? "true" : "false"));
        }
    }
    void finish(pending_visit& p) {
        const u64 got = p.handle.get();
        digest(got);
        check(got == p.expected, "visit returned the wrong count", p.key,
              "expected " + std::to_string(p.expected) + " got " + std::to_string(got));
    }
    void finish(pending_nothing& p) { p.handle.get(); }

    template <class Pending>
    void finish_one(std::deque<Pending>& list, std::size_t index) {
        Pending entry = std::move(list[index]);
        list.erase(list.begin() + static_cast<std::ptrdiff_t>(index));
        finish(entry);
    }

    template <class Pending>
    void finish_all(std::deque<Pending>& list) {
        while (!list.empty())
            finish_one(list, 0);
    }

    void complete_all() {
        finish_all(m_values);
        finish_all(m_inserts);
        finish_all(m_counts);
        finish_all(m_flags);
        finish_all(m_visits);
        finish_all(m_nothings);
    }

    // Completes one pending request chosen at random (any kind).
    void complete_one() {
        const std::size_t total = pending_total();
        if (total == 0)
            return;
        std::size_t pick = m_ctx.random_below(total);
        if (pick < m_values.size())
            return finish_one(m_values, pick);
        pick -= m_values.size();
        if (pick < m_inserts.size())
            return finish_one(m_inserts, pick);
        pick -= m_inserts.size();
        if (pick < m_counts.size())
            return finish_one(m_counts, pick);
        pick -= m_counts.size();
        if (pick < m_flags.size())
            return finish_one(m_flags, pick);
        pick -= m_flags.size();
        if (pick < m_visits.size())
            return finish_one(m_visits, pick);
        pick -= m_visits.size();
        finish_one(m_nothings, pick);
    }

    // Drops a request whose effect the model already holds (private keys only):
    // its reply must still arrive and free the slot.
    void abandon_one() {
        for (std::size_t index = 0; index < m_values.size(); ++index) {
            if (m_values[index].kind == pending_values::exact) {
                m_values.erase(m_values.begin() + static_cast<std::ptrdiff_t>(index));
                ++m_abandoned;
                return;
            }
        }
        if (!m_counts.empty()) {
            m_counts.pop_front();
            ++m_abandoned;
        }
    }

    void test_one() {
        if (m_values.empty())
            return;
        auto& entry = m_values[m_ctx.random_below(m_values.size())];
        entry.handle.test();
    }

    // Waits until every rank got here while still answering others (a blocking
    // barrier here would deadlock a rank that still waits for our replies).
    void serving_barrier() {
        const int generation = m_phase;
        ++m_shared.serving_arrivals[generation];
        while (m_shared.serving_arrivals[generation] < m_config.ranks)
            m_map->engine().progress();
    }

    // ---- operations ----

    u64 new_value() { return (static_cast<u64>(m_rank) << 40) | ++m_counter; }
    u64 pick_private() { return private_key(m_rank, static_cast<u32>(m_ctx.random_below(m_config.private_keys))); }
    u64 pick_shared() { return shared_key(static_cast<u32>(m_ctx.random_below(m_config.shared_keys))); }
    u64 pick_visited() { return visited_key(m_phase, static_cast<u32>(m_ctx.random_below(m_config.visited_keys))); }
    u32 pick_limit() {
        // Mostly "everything that fits", sometimes a small prefix.
        return m_ctx.random_below(3) == 0 ? static_cast<u32>(m_ctx.random_below(4)) : m_config.reply_limit;
    }

    std::vector<u64> prefix(const std::vector<u64>& values, std::size_t limit) {
        return std::vector<u64>(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(std::min(limit, values.size())));
    }

    void one_operation() {
        // Weighted choice; weights sum to 100.
        static constexpr int weights[] = {
            10,  // 0 async_insert private (one value)
            4,   // 1 async_insert private (several values)
            6,   // 2 insert private (request)
            8,   // 3 find private
            5,   // 4 take private
            2,   // 5 erase private
            1,   // 6 async_erase private
            3,   // 7 insert_if_absent private
            2,   // 8 async_insert_if_absent private
            3,   // 9 visit append private
            1,   // 10 visit clear private
            2,   // 11 find_many
            7,   // 12 async_insert shared
            3,   // 13 insert shared (request)
            4,   // 14 take shared
            2,   // 15 find shared
            4,   // 16 insert_if_absent visited
            2,   // 17 async_insert_if_absent visited
            3,   // 18 chain (async_visit)
            1,   // 19 chain (visit request)
            16,  // 20 complete one pending request
            1,   // 21 complete all
            2,   // 22 abandon a private request
            3,   // 23 test()
            1,   // 24 yield
            4,   // 25 take_many on private keys
        };
        int pick = static_cast<int>(m_ctx.random_below(100));
        int op = 0;
        while (pick >= weights[op]) {
            pick -= weights[op];
            ++op;
        }
        map_type& map = *m_map;
        switch (op) {
        case 0: case 1: case 2: {
            const u64 key = pick_private();
            check_owner(key);
            std::vector<u64>& model = m_model[key];
            const u32 count = op == 0 ? 1 : 1 + static_cast<u32>(m_ctx.random_below(5));
            if (model.size() + count > m_config.private_cap) {
                take_private(key);
                break;
            }
            std::vector<u64> values;
            for (u32 index = 0; index < count; ++index)
                values.push_back(new_value());
            m_ctx.note(op == 2 ? "insert" : "async_insert", key, values.front(), count);
            if (op == 0)
                map.async_insert(key, values.front());
            else if (op == 1)
                map.async_insert(key, std::span<const u64>(values));
            else
                keep(m_inserts, pending_insert{map.insert(key, std::span<const u64>(values)), key, count});
            model.insert(model.end(), values.begin(), values.end());
            break;
        }
        case 3: {
            const u64 key = pick_private();
            const u32 limit = pick_limit();
            m_ctx.note("find", key, limit);
            keep(m_values, pending_values{map.find(key, limit), key, prefix(m_model[key], limit), pending_values::exact});
            break;
        }
        case 4:
            take_private(pick_private());
            break;
        case 5: case 6: {
            const u64 key = pick_private();
            std::vector<u64>& model = m_model[key];
            m_ctx.note(op == 5 ? "erase" : "async_erase", key, model.size());
            if (op == 5)
                keep(m_counts, pending_count{map.erase(key), key, model.size()});
            else
                map.async_erase(key);
            model.clear();
            break;
        }
        case 7: case 8: {
            const u64 key = pick_private();
            std::vector<u64>& model = m_model[key];
            const u64 value = new_value();
            const bool absent = model.empty();
            m_ctx.note(op == 7 ? "insert_if_absent" : "async_insert_if_absent", key, value, absent);
            if (op == 7)
                keep(m_flags, pending_flag{map.insert_if_absent(key, value), key, value, absent, false});
            else
                map.async_insert_if_absent(key, value);
            if (absent)
                model.push_back(value);
            break;
        }
        case 9: case 10: {
            const u64 key = pick_private();
            std::vector<u64>& model = m_model[key];
            if (op == 9 && model.size() + 1 > m_config.private_cap) {
                take_private(key);
                break;
            }
            const u64 value = new_value();
            m_ctx.note(op == 9 ? "visit_append" : "visit_clear", key, value, model.size());
            keep(m_visits, pending_visit{map.visit(key, op == 9 ? m_append : m_clear, value), key, model.size()});
            if (op == 9)
                model.push_back(value);
            else
                model.clear();
            break;
        }
        case 11:
            find_many();
            break;
        case 12: case 13: {
            const u64 key = pick_shared();
            check_owner(key);
            const u64 value = new_value();
            m_ctx.note(op == 12 ? "async_insert_shared" : "insert_shared", key, value);
            m_shared.shared_inserted.emplace(key, value);
            m_shared.key_of_value.emplace(value, key);
            if (op == 12)
                map.async_insert(key, value);
            else
                keep(m_inserts, pending_insert{map.insert(key, value), key, 1});
            break;
        }
        case 14: case 15: {
            const u64 key = pick_shared();
            const u32 limit = op == 14 ? 1 + static_cast<u32>(m_ctx.random_below(3)) : pick_limit();
            m_ctx.note(op == 14 ? "take_shared" : "find_shared", key, limit);
            if (op == 14)
                keep(m_values, pending_values{map.take(key, limit), key, {}, pending_values::shared_take});
            else
                keep(m_values, pending_values{map.find(key, limit), key, {}, pending_values::shared_find});
            break;
        }
        case 16: case 17: {
            const u64 key = pick_visited();
            check_owner(key);
            const u64 value = new_value();
            m_ctx.note(op == 16 ? "insert_if_absent_visited" : "async_insert_if_absent_visited", key, value);
            if (op == 16) {
                keep(m_flags, pending_flag{map.insert_if_absent(key, value), key, value, false, true});
            } else {
                map.async_insert_if_absent(key, value);
                m_shared.visited[key].push_back(visited_candidate{value, false, false});
            }
            break;
        }
        case 18: case 19: {
            const u64 chain = (static_cast<u64>(m_rank) << 32) | ++m_chains;
            ++m_shared.chains_started;
            const u32 hops = static_cast<u32>(m_ctx.random_below(std::min<u64>(6, 2 * static_cast<u64>(m_config.ranks) + 1)));
            for (u32 hop = 0; hop <= hops; ++hop)
                m_shared.chain_model.emplace(chain_key(chain, hop, m_config.chain_keys), chain_value(chain, hop));
            const u64 key = chain_key(chain, 0, m_config.chain_keys);
            check_owner(key);
            m_ctx.note("chain", key, chain, hops);
            if (op == 18)
                map.async_visit(key, m_chain, chain_arg{chain, 0, hops});
            else
                keep(m_nothings, pending_nothing{map.visit(key, m_chain, chain_arg{chain, 0, hops}), key});
            break;
        }
        case 20:
            complete_one();
            break;
        case 21:
            complete_all();
            break;
        case 22:
            abandon_one();
            break;
        case 23:
            test_one();
            break;
        case 24:
            m_ctx.yield();
            break;
        default:
            take_many();
            break;
        }
        if (pending_total() > 64)
            complete_one();
    }

    void take_private(u64 key) {
        std::vector<u64>& model = m_model[key];
        const u32 limit = pick_limit();
        m_ctx.note("take", key, limit, model.size());
        const std::size_t n = std::min<std::size_t>(limit, model.size());
        keep(m_values, pending_values{m_map->take(key, limit), key, prefix(model, n), pending_values::exact});
        model.erase(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(n));
    }

    void find_many() {
        std::vector<u64> keys;
        std::vector<std::vector<u64>> expected;
        std::vector<bool> exact;
        const std::size_t count = 1 + m_ctx.random_below(12);
        for (std::size_t index = 0; index < count; ++index) {
            if (m_ctx.random_below(3) != 0) {
                const u64 key = pick_private();
                keys.push_back(key);
                exact.push_back(true);
                expected.push_back(prefix(m_model[key], m_config.reply_limit));
            } else {
                keys.push_back(pick_shared());
                exact.push_back(false);
                expected.emplace_back();
            }
        }
        m_ctx.note("find_many", count);
        std::vector<int> answers(keys.size(), 0);
        m_map->find_many(std::span<const u64>(keys), m_config.reply_limit, [&](std::size_t index, std::span<const u64> values) {
            check(index < keys.size(), "find_many answered an index it was not asked", index);
            ++answers[index];
            const std::vector<u64> got(values.begin(), values.end());
            for (u64 value : got)
                digest(value);
            if (exact[index]) {
                check(got == expected[index], "find_many returned the wrong values for a private key", keys[index],
                      "expected " + show(expected[index]) + " got " + show(got));
            } else {
                for (u64 value : got) {
                    const auto where = m_shared.key_of_value.find(value);
                    check(where != m_shared.key_of_value.end() && where->second == keys[index],
                          "find_many returned a value never inserted under a shared key", keys[index]);
                }
            }
        });
        for (std::size_t index = 0; index < keys.size(); ++index)
            check(answers[index] == 1, "find_many answered a key other than exactly once", keys[index],
                  std::to_string(answers[index]) + " answers");
    }

    // take_many on this rank's private keys (repeats allowed): every owner takes
    // in the order the keys were listed, so the model applies them in order.
    void take_many() {
        std::vector<u64> keys;
        std::vector<std::vector<u64>> expected;
        const std::size_t count = 1 + m_ctx.random_below(8);
        const u32 limit = m_ctx.random_below(2) ? m_config.reply_limit : 1 + static_cast<u32>(m_ctx.random_below(3));
        for (std::size_t index = 0; index < count; ++index) {
            const u64 key = pick_private();
            std::vector<u64>& model = m_model[key];
            const std::size_t n = std::min<std::size_t>(limit, model.size());
            keys.push_back(key);
            expected.push_back(prefix(model, n));
            model.erase(model.begin(), model.begin() + static_cast<std::ptrdiff_t>(n));
        }
        m_ctx.note("take_many", count, limit);
        std::vector<int> answers(keys.size(), 0);
        m_map->take_many(std::span<const u64>(keys), limit, [&](std::size_t index, std::span<const u64> values) {
            check(index < keys.size(), "take_many answered an index it was not asked", index);
            ++answers[index];
            const std::vector<u64> got(values.begin(), values.end());
            for (u64 value : got)
                digest(value);
            check(got == expected[index], "take_many returned the wrong values for a private key", keys[index],
                  "expected " + show(expected[index]) + " got " + show(got));
        });
        for (std::size_t index = 0; index < keys.size(); ++index)
            check(answers[index] == 1, "take_many answered a key other than exactly once", keys[index],
                  std::to_string(answers[index]) + " answers");
    }

    // ---- after each flush ----

    void after_flush() {
        map_type& map = *m_map;
        const runtime::statistics& stats = map.stats();
        // Flush returns only once every request started before it is answered.
        check(map.engine().outstanding_requests() == 0, "requests outstanding after flush", 0,
              std::to_string(map.engine().outstanding_requests()) + " outstanding");
        auto all_done = [&](auto& list) {
            for (auto& entry : list)
                check(entry.handle.test(), "a request was not complete after flush", entry.key);
        };
        all_done(m_values);
        all_done(m_inserts);
        all_done(m_counts);
        all_done(m_flags);
        all_done(m_visits);
        all_done(m_nothings);
        complete_all();
        // Every request opened was answered once: the engine's count of opened
        // requests equals what this rank started.
        u64 opened = 0;
        for (const auto& kind : stats.by_kind)
            opened += kind.requests;
        check(opened == m_requests_started(), "the engine opened a different number of requests than were started", 0,
              std::to_string(opened) + " vs " + std::to_string(m_requests_started()));
        // Bounds from the configuration.
        const runtime::config& settings = m_config.map.runtime;
        check(stats.outstanding_requests_high_water <= settings.blocking_factor,
              "more requests outstanding than the blocking factor allows", 0,
              std::to_string(stats.outstanding_requests_high_water) + " > L = " + std::to_string(settings.blocking_factor));
        m_shared.max_in_flight_seen = std::max(m_shared.max_in_flight_seen, stats.in_flight_high_water);
        m_shared.max_buffer_bytes_seen = std::max(m_shared.max_buffer_bytes_seen, stats.buffer_bytes_high_water);
        const std::size_t bound = in_flight_bound(m_config, m_shared.chains_started);
        check(stats.in_flight_high_water <= bound, "more send buffers in flight than the bound", 0,
              std::to_string(stats.in_flight_high_water) + " > " + std::to_string(bound) + " (q = " +
                  std::to_string(settings.release_queue) + ")");
        const std::size_t buffer_bound = (static_cast<std::size_t>(m_config.ranks) + bound) * settings.buffer_bytes;
        check(stats.buffer_bytes_high_water <= buffer_bound, "more buffer memory than the bound", 0,
              std::to_string(stats.buffer_bytes_high_water) + " > (p + in-flight bound) * B = " +
                  std::to_string(buffer_bound));

        m_ctx.barrier();  // every rank has returned from flush
        check(m_ctx.messages_in_flight() == 0, "messages in the network after every rank returned from flush", 0,
              std::to_string(m_ctx.messages_in_flight()) + " in flight");
        auto& mine = m_shared.snapshots[static_cast<std::size_t>(m_rank)];
        mine.clear();
        map.local_for_each([&](const u64& key, const auto& values) {
            snapshot_entry entry{key, {}};
            for (std::size_t index = 0; index < values.size(); ++index)
                entry.values.push_back(values[index]);
            mine.push_back(std::move(entry));
        });
        m_ctx.barrier();
        if (m_rank == 0)
            verify_global_state();
        m_ctx.barrier();
        const std::size_t total = map.global_size();  // a collective in the middle of the run
        check(total == m_shared.expected_keys, "global_size disagrees with the model", 0,
              std::to_string(total) + " vs " + std::to_string(m_shared.expected_keys));
    }

    u64 m_requests_started() const { return m_started; }

    template <class Pending>
    void keep(std::deque<Pending>& list, Pending&& entry) {
        ++m_started;
        list.push_back(std::move(entry));
    }

    // Rank 0 compares the union of all shards with the model.
    void verify_global_state() {
        std::map<u64, std::vector<u64>> actual;
        for (int rank = 0; rank < m_config.ranks; ++rank) {
            for (const snapshot_entry& entry : m_shared.snapshots[static_cast<std::size_t>(rank)]) {
                const int owner = m_map->owner(entry.key);
                check(owner == rank, "a key is stored on a rank that does not own it", entry.key,
                      "on rank " + std::to_string(rank) + ", owner " + std::to_string(owner));
                check(!entry.values.empty(), "a key is stored with no values", entry.key);
                check(actual.emplace(entry.key, entry.values).second, "a key is stored twice", entry.key);
            }
        }
        // Expected content.
        std::map<u64, std::vector<u64>> expected_private;
        for (const auto& model : m_shared.private_models)
            for (const auto& [key, values] : model)
                if (!values.empty())
                    expected_private.emplace(key, values);
        std::multimap<u64, u64> expected_shared = m_shared.shared_model;
        for (const auto& [key, value] : m_shared.shared_inserted)
            expected_shared.emplace(key, value);
        for (const auto& [key, value] : m_shared.shared_taken) {
            auto range = expected_shared.equal_range(key);
            auto found = std::find_if(range.first, range.second, [&](const auto& entry) { return entry.second == value; });
            check(found != range.second, "take returned a value that was not stored (duplicated or invented)", key,
                  std::to_string(value));
            expected_shared.erase(found);
        }
        // Visited keys of this phase: one winner each.
        for (const auto& [key, candidates] : m_shared.visited) {
            const auto stored = actual.find(key);
            check(stored != actual.end(), "a visited key was lost", key);
            check(stored->second.size() == 1, "a visited key holds more than one value", key, show(stored->second));
            const u64 value = stored->second.front();
            int winners = 0;
            bool value_is_candidate = false;
            bool all_requests = true;
            for (const visited_candidate& candidate : candidates) {
                value_is_candidate |= candidate.value == value;
                all_requests &= candidate.request_form;
                if (candidate.request_form && candidate.inserted) {
                    ++winners;
                    check(candidate.value == value, "insert_if_absent answered true but another value is stored", key);
                }
            }
            check(value_is_candidate, "a visited key holds a value nobody inserted", key, std::to_string(value));
            check(winners <= 1, "insert_if_absent answered true more than once for a key", key);
            if (all_requests)
                check(winners == 1, "no insert_if_absent answered true for a key that was absent", key);
            m_shared.visited_winners[key] = value;
            digest(value);
        }
        m_shared.visited.clear();
        // Compare key by key.
        std::size_t keys = 0;
        auto multiset_of = [](const std::multimap<u64, u64>& from, u64 key) {
            std::vector<u64> out;
            auto range = from.equal_range(key);
            for (auto it = range.first; it != range.second; ++it)
                out.push_back(it->second);
            std::sort(out.begin(), out.end());
            return out;
        };
        std::set<u64> expected_keys;
        for (const auto& [key, values] : expected_private)
            expected_keys.insert(key);
        for (const auto& [key, value] : expected_shared)
            expected_keys.insert(key);
        for (const auto& [key, value] : m_shared.chain_model)
            expected_keys.insert(key);
        for (const auto& [key, value] : m_shared.visited_winners)
            expected_keys.insert(key);
        for (u64 key : expected_keys)
            check(actual.count(key) == 1, "a key was lost (its values vanished)", key);
        for (const auto& [key, values] : actual) {
            ++keys;
            for (u64 value : values)
                digest(value);
            switch (space_of(key)) {
            case private_space: {
                const auto expected = expected_private.find(key);
                check(expected != expected_private.end(), "a private key exists that the model does not have", key,
                      show(values));
                check(values == expected->second, "a private key holds the wrong values", key,
                      "expected " + show(expected->second) + " stored " + show(values));
                break;
            }
            case shared_space: {
                std::vector<u64> sorted = values;
                std::sort(sorted.begin(), sorted.end());
                const std::vector<u64> want = multiset_of(expected_shared, key);
                check(sorted == want, "a shared key's values differ from inserted minus taken (lost or duplicated)",
                      key, "expected " + show(want) + " stored " + show(sorted));
                std::map<u64, u64> last_by_origin;
                for (u64 value : values) {
                    u64& last = last_by_origin[origin_of(value)];
                    check(sequence_of(value) > last, "one origin's values are out of insertion order", key, show(values));
                    last = sequence_of(value);
                }
                break;
            }
            case chain_space: {
                std::vector<u64> sorted = values;
                std::sort(sorted.begin(), sorted.end());
                const std::vector<u64> want = multiset_of(m_shared.chain_model, key);
                check(sorted == want, "a chain key misses or repeats visits that handlers forwarded", key,
                      "expected " + show(want) + " stored " + show(sorted));
                break;
            }
            case visited_space: {
                const auto winner = m_shared.visited_winners.find(key);
                check(winner != m_shared.visited_winners.end() && values.size() == 1 && values[0] == winner->second,
                      "a visited key changed after its phase", key, show(values));
                break;
            }
            default:
                check(false, "a key outside every key space is stored", key);
            }
        }
        // What is stored now is the shared model of the next phase.
        m_shared.shared_model = std::move(expected_shared);
        m_shared.shared_inserted.clear();
        m_shared.shared_taken.clear();
        m_shared.expected_keys = keys;
    }

    int m_rank;
    sim::sim_context& m_ctx;
    shared_state& m_shared;
    const personality& m_config;
    std::map<u64, std::vector<u64>>& m_model;
    std::unique_ptr<map_type> m_owned_map;  // before the request lists (destroyed after them)
    map_type* m_map = nullptr;
    typename map_type::template visitor<u64, u64> m_append{};
    typename map_type::template visitor<u64, u64> m_clear{};
    typename map_type::template visitor<chain_arg, void> m_chain{};
    std::deque<pending_values> m_values;
    std::deque<pending_insert> m_inserts;
    std::deque<pending_count> m_counts;
    std::deque<pending_flag> m_flags;
    std::deque<pending_visit> m_visits;
    std::deque<pending_nothing> m_nothings;
    int m_phase = 0;
    u64 m_counter = 0;
    u64 m_chains = 0;
    u64 m_abandoned = 0;
    u64 m_started = 0;  // requests this rank started
};

}  // namespace

namespace {

struct run_outcome {
    sim::result sim;
    u64 digest = 0;
    std::size_t max_in_flight = 0;
    std::size_t max_buffer_bytes = 0;
    u64 checks = 0;
    std::string description;
};

run_outcome run_one(int ranks, u64 seed, const sim_test::command_line& cli) {
    const personality config = make_personality(ranks, seed, cli);
    shared_state shared(config);
    const auto body = [&](int rank, sim::sim_context& context) {
        if (config.funnel)
            rank_workload<funnel_hash>(rank, context, shared).run();
        else
            rank_workload<hasher<u64>>(rank, context, shared).run();
    };
    run_outcome out;
    out.sim = sim::run(ranks, seed, config.sim, body);
    out.digest = shared.result_digest;
    out.max_in_flight = shared.max_in_flight_seen;
    out.max_buffer_bytes = shared.max_buffer_bytes_seen;
    out.checks = shared.checks;
    out.description = config.describe();
    return out;
}

}  // namespace

int main(int argc, char** argv) {
    const sim_test::command_line cli = sim_test::parse_command_line(argc, argv);
    sim_test::install_crash_handler();
    const bool determinism = sim_test::has_flag(cli, "--determinism");
    const bool expect_model_failure = sim_test::has_flag(cli, "--expect-model-failure");
    const bool expect_failure = sim_test::has_flag(cli, "--expect-failure") || expect_model_failure;
    const bool bound_report = sim_test::has_flag(cli, "--bound-report");
    const std::string fault = sim_test::flag_value(cli, "--fault");
    if (!fault.empty() && fault != "drop-flush") {
        std::fprintf(stderr, "%s: unknown --fault %s (known: drop-flush)\n", argv[0], fault.c_str());
        return 2;
    }
    std::string replay_flags = fault.empty() ? std::string() : "--fault " + fault;
    if (sim_test::has_flag(cli, "--quiet-before-flush"))
        replay_flags += replay_flags.empty() ? "--quiet-before-flush" : " --quiet-before-flush";
    const long long seeds = cli.seeds >= 0 ? cli.seeds : cli.soak ? 1'000'000'000LL : 50;
    const double minutes = cli.minutes > 0 ? cli.minutes : cli.soak ? 10.0 : 0.0;

    const sim_test::stopwatch clock;
    long long runs = 0, passed = 0, failed = 0, detected = 0, detected_by_model = 0;
    u64 steps = 0, messages = 0, checks = 0;
    std::size_t max_in_flight = 0, max_buffer = 0;
    std::string first_detection;
    bool out_of_time = false;
    bool enough_failures = false;  // three failures end a normal run early
    // Seeds outside, rank counts inside: a soak cut short by --minutes has still
    // covered every rank count.
    for (long long index = 0; index < seeds && !out_of_time && !enough_failures; ++index) {
        for (int ranks : cli.ranks) {
            const u64 seed = cli.first_seed + static_cast<u64>(index);
            if (minutes > 0 && clock.seconds() > minutes * 60) {
                out_of_time = true;
                break;
            }
            sim_test::set_crash_note(cli, ranks, seed, replay_flags);
            const run_outcome outcome = run_one(ranks, seed, cli);
            ++runs;
            steps += outcome.sim.steps;
            messages += outcome.sim.messages_delivered;
            checks += outcome.checks;
            max_in_flight = std::max(max_in_flight, outcome.max_in_flight);
            max_buffer = std::max(max_buffer, outcome.max_buffer_bytes);
            if (cli.verbose || cli.single_seed)
                std::fprintf(stderr,
                             "seed %" PRIu64 " ranks %d: %s; %" PRIu64 " steps, %" PRIu64 " switches, %" PRIu64
                             " messages, delivery hash %016" PRIx64 ", in-flight high-water %zu, %s\n",
                             seed, ranks, outcome.sim.ok ? "ok" : "FAILED", outcome.sim.steps, outcome.sim.switches,
                             outcome.sim.messages_delivered, outcome.sim.delivery_hash, outcome.max_in_flight,
                             outcome.description.c_str());
            if (!outcome.sim.ok) {
                if (expect_failure) {
                    ++detected;
                    const bool by_model = outcome.sim.failure.find("check failed") != std::string::npos;
                    detected_by_model += by_model ? 1 : 0;
                    if (first_detection.empty() && (by_model || !expect_model_failure))
                        first_detection = outcome.sim.failure;
                    if (cli.verbose)
                        std::fprintf(stderr, "  detected: %s\n", outcome.sim.failure.c_str());
                    continue;
                }
                ++failed;
                sim_test::print_failure(cli, outcome.sim, replay_flags, outcome.description);
                if (failed >= 3 && !cli.soak) {
                    enough_failures = true;
                    break;
                }
                continue;
            }
            if (determinism) {
                const run_outcome again = run_one(ranks, seed, cli);
                const bool same = again.sim.ok && again.sim.delivery_hash == outcome.sim.delivery_hash &&
                                  again.sim.trace_hash == outcome.sim.trace_hash &&
                                  again.sim.steps == outcome.sim.steps && again.sim.trace == outcome.sim.trace &&
                                  again.digest == outcome.digest;
                if (!same) {
                    ++failed;
                    std::fprintf(stderr,
                                 "==== NOT DETERMINISTIC: seed %" PRIu64 " ranks %d ran twice: delivery hash %016" PRIx64
                                 " / %016" PRIx64 ", trace hash %016" PRIx64 " / %016" PRIx64 ", steps %" PRIu64
                                 " / %" PRIu64 ", results %016" PRIx64 " / %016" PRIx64 "\n",
                                 seed, ranks, outcome.sim.delivery_hash, again.sim.delivery_hash, outcome.sim.trace_hash,
                                 again.sim.trace_hash, outcome.sim.steps, again.sim.steps, outcome.digest, again.digest);
                    continue;
                }
            }
            ++passed;
        }
    }
    const double seconds = clock.seconds();
    std::fprintf(stderr,
                 "sim_hash_map: %lld runs over ranks {", runs);
    for (std::size_t index = 0; index < cli.ranks.size(); ++index)
        std::fprintf(stderr, "%s%d", index ? "," : "", cli.ranks[index]);
    std::fprintf(stderr, "} in %.1f s: %" PRIu64 " steps, %" PRIu64 " messages delivered, %" PRIu64 " checks%s\n",
                 seconds, steps, messages, checks, out_of_time ? " (time limit reached)" : "");
    if (bound_report)
        std::fprintf(stderr, "largest in-flight high-water %zu buffers, largest buffer high-water %zu bytes\n",
                     max_in_flight, max_buffer);
    if (expect_failure) {
        std::printf("fault %s: detected in %lld of %lld runs (%lld by the model check, %lld as a hang: deadlock or "
                    "step limit)%s%s\n",
                    fault.empty() ? "(none)" : fault.c_str(), detected, runs, detected_by_model,
                    detected - detected_by_model, first_detection.empty() ? "" : "; first: ", first_detection.c_str());
        return (expect_model_failure ? detected_by_model : detected) > 0 ? 0 : 1;
    }
    if (determinism)
        std::printf("determinism: %lld seeds ran twice with identical delivery order, trace and results\n", passed);
    std::printf("%lld passed, %lld failed\n", passed, failed);
    return failed == 0 && runs > 0 ? 0 : 1;
}
