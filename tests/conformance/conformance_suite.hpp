#pragma once
// The conformance suite: random operation sequences on a distributed
// dictionary, checked result by result against a std::vector-of-values model
// (a key's values in insertion order, as a std::multimap keeps them), written
// once and run against every container through an adapter.
//
// Determinism.  Ranks run concurrently, so the suite gives every key one
// *mutator* rank: in phase A of an epoch each active rank issues random
// operations only on its own keys, so the order of operations on a key is the
// program order of one rank and every result is predictable.  The mutator of a
// key is unrelated to its owner (placement), so every owner serves every rank.
// After a collective flush the ranks exchange their models (MPI_Allgatherv of
// the encoded values), check their own shard against the union (local_for_each
// plus global sums), and in phase B read *any* key (find, count, find_many),
// which crosses ranks freely.  Another flush ends the epoch.
//
// Capacity.  With a per-rank capacity limit, how many values an insert stores
// depends on what other ranks stored on the same owner first.  The model then
// takes the container's word for it (insert_result.stored; for async inserts,
// visits and async insert_if_absent a read-only count right after, on the same
// key, says how many were stored) and checks what can be checked: a prefix of
// the values, never more than asked, the limit never exceeded, and
// async_rejected() equal to the sum of the values the model saw refused.  With
// one rank and a value limit the outcome is exact, and the suite predicts it.
//
// Requests stay outstanding (up to `window`) and are resolved in random order;
// the model is advanced when an operation is issued, except for operations whose
// effect is uncertain (capacity), which block their key until resolved.
//
// On a mismatch the suite prints the configuration, seed, rank, epoch, operation
// index and the operation, counts a failure in mpidict::testing::failure_count()
// and carries on.
//
// The adapter contract (see hash_map_adapter.hpp for the reference one):
//   types    key_type, value_type; static constexpr std::size_t unlimited
//   feature flags (static constexpr bool): has_take, has_visit (count, append,
//            pop_front visitors), has_insert_if_absent, has_find_many, has_take_many,
//            has_async (async_* forms), has_payload_bytes, has_global_size
//   requests every request-form call returns an object with T get()
//   insert(key, span) -> {requested, stored}   async_insert(key, value|span)
//   find(key, limit), take(key, limit) -> vector<V>
//   erase(key) -> count                         async_erase(key)
//   insert_if_absent(key, value) -> bool        async_insert_if_absent(key, value)
//   count(key) -> uint32 (read-only)            append(key, value) -> old count
//   pop_front(key, n) -> old count              async_append, async_pop_front
//   find_many(span<const K>, limit, f(index, span<const V>)), take_many (the same,
//            removing what it returns; has_take_many)
//   flush(), destroy(), owner(key), rank(), size()
//   mpi_guard() -> a scope object; while it lives the suite calls MPI itself
//            (the container's progress thread, if any, must not)
//   local_for_each(f(key, view with size() and operator[])), local_size(),
//   local_value_count(), local_payload_bytes(), global_size(),
//   global_value_count(), async_rejected(), capacity_values(), capacity_bytes(),
//   max_values_per_reply(max encoded bytes of one value)

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include <mpi.h>

#include "../common/test_support.hpp"
#include "mpidict/local/codec.hpp"

namespace mpidict::conformance {

// ---- keys and values the suite generates ---------------------------------------

template <class T>
struct test_data;

template <>
struct test_data<std::uint64_t> {
    static std::uint64_t key(std::uint64_t index) { return index; }
    static std::uint64_t value(std::uint64_t stamp, std::mt19937_64&) { return stamp; }
    static constexpr std::size_t max_encoded_value_bytes = 8;
    static std::string describe(std::uint64_t value) { return std::to_string(value); }
};

template <>
struct test_data<std::string> {
    // Varying lengths, the empty key included.
    static std::string key(std::uint64_t index) {
        if (index == 0)
            return {};
        return std::string(index % 5, '~') + "k" + std::to_string(index);
    }
    // A unique decimal stamp plus up to 7 arbitrary bytes; sometimes empty.
    static std::string value(std::uint64_t stamp, std::mt19937_64& random) {
        if (random() % 16 == 0)
            return {};
        std::string out = std::to_string(stamp % 10000000000ULL);
        const std::size_t extra = random() % 8;
        for (std::size_t index = 0; index < extra; ++index)
            out.push_back(static_cast<char>(random() % 256));
        return out;
    }
    static constexpr std::size_t max_encoded_value_bytes = 4 + 10 + 7;
    static std::string describe(const std::string& value) {
        std::string out = "\"";
        for (const char c : value) {
            if (c >= 32 && c < 127 && c != '"' && c != '\\') {
                out.push_back(c);
            } else {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned char>(c));
                out += escaped;
            }
        }
        return out + "\"";
    }
};

// ---- options ----------------------------------------------------------------------

struct options {
    std::string name;
    std::vector<std::uint64_t> seeds{0x5eed0001, 0x5eed0002, 0x5eed0003};
    std::size_t operations_per_rank = 10000;  // per seed, over all epochs (phase A)
    std::size_t epochs = 5;
    std::size_t keys_per_active_rank = 160;   // key range = this times the active ranks
    std::size_t window = 128;                 // outstanding requests before resolving them
    std::size_t cross_reads = 120;            // phase B finds/counts per rank per epoch
    std::size_t cross_find_many = 96;         // keys in the phase B find_many per epoch
    std::size_t max_limit = 16;               // largest find/take limit (also bounded by replies)
    // Ranks that start no operation at all (they still own shards and take part
    // in collectives).  Empty: every rank is active.
    std::function<bool(int rank, int size)> idle;
};

// ---- the driver -------------------------------------------------------------------

template <class Adapter>
class driver {
public:
    using K = typename Adapter::key_type;
    using V = typename Adapter::value_type;

    driver(const options& settings, Adapter& adapter, std::uint64_t seed)
        : m_options(settings), m_adapter(adapter), m_seed(seed), m_rank(adapter.rank()), m_size(adapter.size()),
          m_random(seed * 0x9e3779b97f4a7c15ULL + static_cast<std::uint64_t>(adapter.rank()) * 0xbf58476d1ce4e5b9ULL + 1) {
        for (int rank = 0; rank < m_size; ++rank)
            if (!(m_options.idle && m_options.idle(rank, m_size)))
                m_active.push_back(rank);
        if (m_active.empty())
            m_active.push_back(0);
        m_is_active = std::find(m_active.begin(), m_active.end(), m_rank) != m_active.end();
        m_key_range = m_options.keys_per_active_rank * m_active.size();
        m_model.assign(m_key_range, {});
        m_blocked.assign(m_key_range, 0);
        for (std::uint64_t index = 0; index < m_key_range; ++index) {
            m_keys.push_back(test_data<K>::key(index));
            m_key_index.emplace(m_keys.back(), index);
            // The mutator is unrelated to the owner: (index / p) cycles over the
            // active ranks while index % p (cyclic owner) and the hash vary.
            const int mutator = m_active[(index / static_cast<std::uint64_t>(m_size)) % m_active.size()];
            if (mutator == m_rank)
                m_own.push_back(index);
        }
        m_capacity_values = adapter.capacity_values();
        m_capacity_bytes = adapter.capacity_bytes();
        m_limited = m_capacity_values != 0 || m_capacity_bytes != 0;
        m_exact = m_limited && m_capacity_bytes == 0 && m_size == 1;
        m_max_limit = std::min(m_options.max_limit,
                               adapter.max_values_per_reply(test_data<V>::max_encoded_value_bytes));
        if (m_max_limit < 1)
            m_max_limit = 1;
    }

    void run() {
        const std::size_t per_epoch = (m_options.operations_per_rank + m_options.epochs - 1) / m_options.epochs;
        for (m_epoch = 0; m_epoch < m_options.epochs; ++m_epoch) {
            if (m_is_active) {
                for (std::size_t step = 0; step < per_epoch && m_operation < m_options.operations_per_rank; ++step)
                    random_operation();
                resolve_all();
            }
            m_adapter.flush();
            verify_epoch(true);
        }
        // Drain: every rank empties its keys (take in chunks, or erase), then
        // the shards must be empty.
        if (m_is_active)
            drain();
        m_adapter.flush();
        verify_epoch(false);
    }

    std::size_t operations() const { return m_operation; }
    const std::map<std::string, std::size_t>& kind_counts() const { return m_kind_counts; }

private:
    enum class kind {
        insert,
        async_insert,
        find,
        take,
        erase,
        async_erase,
        insert_if_absent,
        async_insert_if_absent,
        append,
        async_append,
        pop_front,
        async_pop_front,
        count,
        find_many,
        take_many,
        cross_find,
        cross_count,
        cross_find_many,
        drain_take,
        drain_erase,
    };
    static const char* kind_name(kind what) {
        switch (what) {
        case kind::insert: return "insert";
        case kind::async_insert: return "async_insert";
        case kind::find: return "find";
        case kind::take: return "take";
        case kind::erase: return "erase";
        case kind::async_erase: return "async_erase";
        case kind::insert_if_absent: return "insert_if_absent";
        case kind::async_insert_if_absent: return "async_insert_if_absent";
        case kind::append: return "visit(append)";
        case kind::async_append: return "async_visit(append)";
        case kind::pop_front: return "visit(pop_front)";
        case kind::async_pop_front: return "async_visit(pop_front)";
        case kind::count: return "visit(count)";
        case kind::find_many: return "find_many";
        case kind::take_many: return "take_many";
        case kind::cross_find: return "find (any key)";
        case kind::cross_count: return "visit(count) (any key)";
        case kind::cross_find_many: return "find_many (any keys)";
        case kind::drain_take: return "take (drain)";
        case kind::drain_erase: return "erase (drain)";
        }
        return "?";
    }

    struct op {
        std::size_t index = 0;
        kind what = kind::find;
        std::uint64_t key = 0;
        std::vector<V> values;
        std::size_t limit = 0;
        std::string note;
    };

    struct pending_base {
        op what;
        virtual ~pending_base() = default;
        virtual void resolve() = 0;
    };
    template <class Request, class Check>
    struct pending_request final : pending_base {
        pending_request(op o, Request r, Check c) : request(std::move(r)), check(std::move(c)) {
            this->what = std::move(o);
        }
        void resolve() override { check(this->what, request.get()); }
        Request request;
        Check check;
    };

    // ---- reporting ----

    std::string describe(const op& o) const {
        std::ostringstream text;
        text << kind_name(o.what) << " key " << test_data<K>::describe(m_keys[o.key]) << " (index " << o.key << ")";
        if (!o.values.empty()) {
            text << " values [";
            for (std::size_t i = 0; i < o.values.size() && i < 8; ++i)
                text << (i ? ", " : "") << test_data<V>::describe(o.values[i]);
            text << (o.values.size() > 8 ? ", ...]" : "]");
        }
        const bool has_limit = o.what == kind::find || o.what == kind::take || o.what == kind::cross_find ||
                               o.what == kind::drain_take || o.what == kind::find_many ||
                               o.what == kind::take_many ||
                               o.what == kind::cross_find_many || o.what == kind::pop_front ||
                               o.what == kind::async_pop_front;
        if (has_limit)
            text << " limit " << (o.limit == Adapter::unlimited ? std::string("unlimited") : std::to_string(o.limit));
        if (!o.note.empty())
            text << " " << o.note;
        return text.str();
    }
    std::string describe_values(const std::vector<V>& values) const {
        std::ostringstream text;
        text << values.size() << " [";
        for (std::size_t i = 0; i < values.size() && i < 12; ++i)
            text << (i ? ", " : "") << test_data<V>::describe(values[i]);
        text << (values.size() > 12 ? ", ...]" : "]");
        return text.str();
    }
    void fail(const std::string& where, const std::string& what) {
        ++mpidict::testing::failure_count();
        if (++m_reported <= 12) {
            std::fprintf(stderr, "[conformance %s] MISMATCH seed %llu rank %d/%d epoch %zu %s: %s\n",
                         m_options.name.c_str(), static_cast<unsigned long long>(m_seed), m_rank, m_size, m_epoch,
                         where.c_str(), what.c_str());
            std::fflush(stderr);
        }
    }
    bool expect(bool ok, const op& o, const std::string& what) {
        if (!ok)
            fail("op #" + std::to_string(o.index) + " " + describe(o), what);
        return ok;
    }
    bool expect_values(const op& o, const std::vector<V>& actual, const std::vector<V>& expected) {
        if (actual == expected)
            return true;
        return expect(false, o, "got " + describe_values(actual) + ", expected " + describe_values(expected));
    }

    // ---- randomness ----

    std::uint64_t pick(std::uint64_t bound) { return std::uniform_int_distribution<std::uint64_t>(0, bound - 1)(m_random); }
    std::vector<V> make_values(std::size_t n) {
        std::vector<V> out;
        for (std::size_t i = 0; i < n; ++i)
            out.push_back(test_data<V>::value(++m_stamp * static_cast<std::uint64_t>(m_size) +
                                                  static_cast<std::uint64_t>(m_rank),
                                              m_random));
        return out;
    }
    // A find/take limit: mostly 1..max, sometimes 0, sometimes unlimited when
    // the answer is sure to fit in one reply.
    std::size_t choose_limit(std::size_t present) {
        const std::uint64_t dice = pick(12);
        if (dice == 0)
            return 0;
        if (dice <= 3 && present <= m_max_limit)
            return Adapter::unlimited;
        return 1 + pick(m_max_limit);
    }
    std::vector<V> prefix(std::uint64_t key, std::size_t limit) const {
        const auto& values = m_model[key];
        return std::vector<V>(values.begin(),
                              values.begin() + static_cast<std::ptrdiff_t>(std::min(limit, values.size())));
    }

    // ---- model ----

    void model_append(std::uint64_t key, const std::vector<V>& values, std::size_t count) {
        auto& target = m_model[key];
        target.insert(target.end(), values.begin(), values.begin() + static_cast<std::ptrdiff_t>(count));
        m_own_values += count;
    }
    void model_pop(std::uint64_t key, std::size_t count) {
        auto& target = m_model[key];
        count = std::min(count, target.size());
        target.erase(target.begin(), target.begin() + static_cast<std::ptrdiff_t>(count));
        m_own_values -= count;
    }
    // Values a new insert may still store on the (single) owner, when exact.
    std::size_t room() const { return m_own_values >= m_capacity_values ? 0 : m_capacity_values - m_own_values; }

    // How often a limited insert stored everything, a part, or nothing (for the summary).
    void count_capacity_outcome(std::size_t stored, std::size_t requested) {
        ++m_kind_counts[stored == requested ? "insert stored all" : stored == 0 ? "insert stored none"
                                                                                 : "insert stored part"];
    }

    // ---- pending requests ----

    template <class Request, class Check>
    void add_pending(op o, Request request, Check check) {
        m_pending.push_back(std::make_unique<pending_request<Request, Check>>(std::move(o), std::move(request),
                                                                               std::move(check)));
    }
    void resolve_all() {
        auto pending = std::move(m_pending);
        m_pending.clear();
        std::shuffle(pending.begin(), pending.end(), m_random);
        for (auto& entry : pending)
            entry->resolve();
    }
    void resolve_one_at_random() {
        if (m_pending.empty())
            return;
        const std::size_t index = pick(m_pending.size());
        auto entry = std::move(m_pending[index]);
        m_pending.erase(m_pending.begin() + static_cast<std::ptrdiff_t>(index));
        entry->resolve();
    }

    // After an operation whose stored count is uncertain (capacity), a read-only
    // count on the same key (ordered behind it at the owner) says what happened:
    // `base` values before, `offered` at most added; `rejected_counts` says
    // whether refusals are reported to async_rejected().
    void reconcile(op o, std::size_t base, std::vector<V> offered, bool rejected_counts) {
        ++m_blocked[o.key];
        o.note = "(capacity reconcile: count right after)";
        add_pending(o, m_adapter.count(m_keys[o.key]),
                    [this, base, offered = std::move(offered), rejected_counts](const op& what, std::uint32_t count) {
                        std::size_t stored = 0;
                        if (expect(count >= base && count <= base + offered.size(), what,
                                   "count " + std::to_string(count) + " outside [" + std::to_string(base) + ", " +
                                       std::to_string(base + offered.size()) + "]"))
                            stored = count - base;
                        model_append(what.key, offered, stored);
                        if (rejected_counts)
                            m_expected_rejected += offered.size() - stored;
                        --m_blocked[what.key];
                    });
    }

    // ---- phase A: one random operation on an own key ----

    kind pick_kind() {
        struct weighted {
            kind what;
            int weight;
            bool enabled;
        };
        const weighted table[] = {
            {kind::insert, 16, true},
            {kind::async_insert, 16, Adapter::has_async},
            {kind::find, 12, true},
            {kind::take, 10, Adapter::has_take},
            {kind::erase, 3, true},
            {kind::async_erase, 2, Adapter::has_async},
            {kind::insert_if_absent, 6, Adapter::has_insert_if_absent},
            {kind::async_insert_if_absent, 3, Adapter::has_insert_if_absent && Adapter::has_async},
            {kind::append, 4, Adapter::has_visit},
            {kind::async_append, 3, Adapter::has_visit && Adapter::has_async},
            {kind::pop_front, 4, Adapter::has_visit},
            {kind::async_pop_front, 2, Adapter::has_visit && Adapter::has_async},
            {kind::count, 4, Adapter::has_visit},
            {kind::find_many, 1, Adapter::has_find_many},
            {kind::take_many, 1, Adapter::has_take_many},
        };
        int total = 0;
        for (const auto& entry : table)
            total += entry.enabled ? entry.weight : 0;
        int dice = static_cast<int>(pick(static_cast<std::uint64_t>(total)));
        for (const auto& entry : table) {
            if (!entry.enabled)
                continue;
            if (dice < entry.weight)
                return entry.what;
            dice -= entry.weight;
        }
        return kind::find;
    }

    void random_operation() {
        if (m_own.empty())
            return;
        op o;
        o.index = m_operation++;
        o.what = pick_kind();
        o.key = m_own[pick(m_own.size())];
        ++m_kind_counts[kind_name(o.what)];
        if (m_blocked[o.key] > 0)
            resolve_all();
        if (m_pending.size() >= m_options.window)
            resolve_all();
        else if (pick(256) == 0)
            resolve_one_at_random();  // wait on one request while older ones are still out
        const K& key = m_keys[o.key];
        const std::size_t present = m_model[o.key].size();

        switch (o.what) {
        case kind::insert: {
            const std::size_t n = 1 + pick(4);
            o.values = make_values(n);
            auto request = m_adapter.insert(key, std::span<const V>(o.values));
            if (!m_limited || m_exact) {
                const std::size_t stored = m_limited ? std::min(n, room()) : n;
                model_append(o.key, o.values, stored);
                if (m_limited)
                    count_capacity_outcome(stored, n);
                add_pending(std::move(o), std::move(request), [this, n, stored](const op& what, auto result) {
                    expect(result.requested == n && result.stored == stored, what,
                           "insert_result {requested " + std::to_string(result.requested) + ", stored " +
                               std::to_string(result.stored) + "}, expected {" + std::to_string(n) + ", " +
                               std::to_string(stored) + "}");
                });
            } else {
                ++m_blocked[o.key];
                add_pending(std::move(o), std::move(request), [this, n](const op& what, auto result) {
                    expect(result.requested == n && result.stored <= n, what,
                           "insert_result {requested " + std::to_string(result.requested) + ", stored " +
                               std::to_string(result.stored) + "} for " + std::to_string(n) + " values");
                    count_capacity_outcome(result.stored, n);
                    model_append(what.key, what.values, std::min<std::size_t>(result.stored, n));
                    --m_blocked[what.key];
                });
            }
            break;
        }
        case kind::async_insert: {
            const std::size_t n = 1 + pick(4);
            o.values = make_values(n);
            if (n == 1 && pick(2) == 0)
                m_adapter.async_insert(key, o.values[0]);
            else
                m_adapter.async_insert(key, std::span<const V>(o.values));
            if (!m_limited) {
                model_append(o.key, o.values, n);
            } else if (m_exact) {
                const std::size_t stored = std::min(n, room());
                model_append(o.key, o.values, stored);
                m_expected_rejected += n - stored;
            } else {
                auto offered = o.values;
                reconcile(std::move(o), present, std::move(offered), true);
            }
            break;
        }
        case kind::find: {
            o.limit = choose_limit(present);
            auto expected = prefix(o.key, o.limit);
            auto request = m_adapter.find(key, o.limit);
            add_pending(std::move(o), std::move(request),
                        [this, expected = std::move(expected)](const op& what, const std::vector<V>& actual) {
                            expect_values(what, actual, expected);
                        });
            break;
        }
        case kind::take: {
            o.limit = choose_limit(present);
            auto expected = prefix(o.key, o.limit);
            model_pop(o.key, expected.size());
            auto request = m_adapter.take(key, o.limit);
            add_pending(std::move(o), std::move(request),
                        [this, expected = std::move(expected)](const op& what, const std::vector<V>& actual) {
                            expect_values(what, actual, expected);
                        });
            break;
        }
        case kind::erase: {
            model_pop(o.key, present);
            auto request = m_adapter.erase(key);
            add_pending(std::move(o), std::move(request), [this, present](const op& what, std::size_t count) {
                expect(count == present, what,
                       "erase reported " + std::to_string(count) + " values, expected " + std::to_string(present));
            });
            break;
        }
        case kind::async_erase:
            model_pop(o.key, present);
            m_adapter.async_erase(key);
            break;
        case kind::insert_if_absent: {
            o.values = make_values(1);
            auto request = m_adapter.insert_if_absent(key, o.values[0]);
            if (present != 0 || !m_limited || m_exact) {
                const bool stored = present == 0 && (!m_limited || room() > 0);
                if (stored)
                    model_append(o.key, o.values, 1);
                add_pending(std::move(o), std::move(request), [this, stored](const op& what, bool result) {
                    expect(result == stored, what,
                           std::string("returned ") + (result ? "true" : "false") + ", expected " +
                               (stored ? "true" : "false"));
                });
            } else {
                ++m_blocked[o.key];
                add_pending(std::move(o), std::move(request), [this](const op& what, bool result) {
                    if (result)
                        model_append(what.key, what.values, 1);
                    --m_blocked[what.key];
                });
            }
            break;
        }
        case kind::async_insert_if_absent: {
            o.values = make_values(1);
            m_adapter.async_insert_if_absent(key, o.values[0]);
            if (present != 0) {
            } else if (!m_limited) {
                model_append(o.key, o.values, 1);
            } else if (m_exact) {
                if (room() > 0)
                    model_append(o.key, o.values, 1);
                else
                    ++m_expected_rejected;
            } else {
                auto offered = o.values;
                reconcile(std::move(o), 0, std::move(offered), true);
            }
            break;
        }
        case kind::append:
        case kind::async_append: {
            o.values = make_values(1);
            const bool async = o.what == kind::async_append;
            if (async) {
                m_adapter.async_append(key, o.values[0]);
            } else {
                auto request = m_adapter.append(key, o.values[0]);
                add_pending(o, std::move(request), [this, present](const op& what, std::uint32_t old_count) {
                    expect(old_count == present, what,
                           "visitor saw " + std::to_string(old_count) + " values, expected " + std::to_string(present));
                });
            }
            if (!m_limited) {
                model_append(o.key, o.values, 1);
            } else if (m_exact) {
                if (room() > 0)
                    model_append(o.key, o.values, 1);
                else if (async)
                    ++m_expected_rejected;
            } else {
                auto offered = o.values;
                reconcile(std::move(o), present, std::move(offered), async);
            }
            break;
        }
        case kind::pop_front:
        case kind::async_pop_front: {
            const std::uint32_t n = static_cast<std::uint32_t>(1 + pick(3));
            o.limit = n;
            model_pop(o.key, n);
            if (o.what == kind::async_pop_front) {
                m_adapter.async_pop_front(key, n);
            } else {
                auto request = m_adapter.pop_front(key, n);
                add_pending(std::move(o), std::move(request), [this, present](const op& what, std::uint32_t old_count) {
                    expect(old_count == present, what,
                           "visitor saw " + std::to_string(old_count) + " values, expected " + std::to_string(present));
                });
            }
            break;
        }
        case kind::count: {
            auto request = m_adapter.count(key);
            add_pending(std::move(o), std::move(request), [this, present](const op& what, std::uint32_t count) {
                expect(count == present, what,
                       "count " + std::to_string(count) + ", expected " + std::to_string(present));
            });
            break;
        }
        case kind::find_many:
        case kind::take_many: {
            std::vector<std::uint64_t> indices(1 + pick(24));
            for (auto& index : indices)
                index = m_own[pick(m_own.size())];
            for (const auto index : indices)
                if (m_blocked[index] > 0) {
                    resolve_all();
                    break;
                }
            o.limit = 1 + pick(m_max_limit);
            o.note = "over " + std::to_string(indices.size()) + " own keys";
            if constexpr (Adapter::has_take_many) {
                if (o.what == kind::take_many) {
                    bulk_and_check(o, indices, true);
                    break;
                }
            }
            bulk_and_check(o, indices, false);
            break;
        }
        default:
            break;
        }
    }

    // find_many / take_many over `indices` (repeats allowed: a key's records reach
    // its owner in index order, so the k-th occurrence in a take_many takes what
    // the earlier ones left).  Synchronous: returns when every key has answered.
    void bulk_and_check(const op& o, const std::vector<std::uint64_t>& indices, bool take) {
        std::vector<K> keys;
        std::vector<std::vector<V>> expected;
        for (const auto index : indices) {
            keys.push_back(m_keys[index]);
            expected.push_back(prefix(index, o.limit));
            if (take)
                model_pop(index, expected.back().size());
        }
        std::vector<int> answers(indices.size(), 0);
        std::vector<std::vector<V>> results(indices.size());
        auto on_result = [&](std::size_t index, std::span<const V> values) {
            if (index >= indices.size()) {
                expect(false, o, "answer for index " + std::to_string(index) + " out of range");
                return;
            }
            ++answers[index];
            results[index].assign(values.begin(), values.end());
        };
        if constexpr (Adapter::has_take_many) {
            if (take)
                m_adapter.take_many(std::span<const K>(keys), o.limit, on_result);
            else
                m_adapter.find_many(std::span<const K>(keys), o.limit, on_result);
        } else {
            m_adapter.find_many(std::span<const K>(keys), o.limit, on_result);
        }
        for (std::size_t i = 0; i < indices.size(); ++i) {
            op single = o;
            single.key = indices[i];
            single.note += ", position " + std::to_string(i);
            if (!expect(answers[i] == 1, single, "answered " + std::to_string(answers[i]) + " times"))
                continue;
            expect_values(single, results[i], expected[i]);
        }
    }

    // ---- end of an epoch ----

    // Every rank sends the values of its own keys; afterwards m_model holds the
    // union, which is the whole state.
    void gather_model() {
        std::vector<std::byte> mine;
        for (const auto index : m_own) {
            const auto& values = m_model[index];
            if (values.empty())
                continue;
            std::size_t bytes = 8;
            for (const V& value : values)
                bytes += codec<V>::encoded_size(value);
            const std::size_t offset = mine.size();
            mine.resize(offset + bytes);
            std::byte* out = mine.data() + offset;
            out = codec<std::uint32_t>::encode(out, static_cast<std::uint32_t>(index));
            out = codec<std::uint32_t>::encode(out, static_cast<std::uint32_t>(values.size()));
            for (const V& value : values)
                out = codec<V>::encode(out, value);
        }
        int my_bytes = static_cast<int>(mine.size());
        std::vector<int> sizes(static_cast<std::size_t>(m_size)), offsets(static_cast<std::size_t>(m_size));
        auto guard = m_adapter.mpi_guard();  // no progress-thread MPI call beside ours
        MPI_Allgather(&my_bytes, 1, MPI_INT, sizes.data(), 1, MPI_INT, MPI_COMM_WORLD);
        int total = 0;
        for (int rank = 0; rank < m_size; ++rank) {
            offsets[static_cast<std::size_t>(rank)] = total;
            total += sizes[static_cast<std::size_t>(rank)];
        }
        std::vector<std::byte> all(static_cast<std::size_t>(std::max(total, 1)));
        MPI_Allgatherv(mine.data(), my_bytes, MPI_BYTE, all.data(), sizes.data(), offsets.data(), MPI_BYTE,
                       MPI_COMM_WORLD);
        for (auto& values : m_model)
            values.clear();
        byte_reader reader(all.data(), static_cast<std::size_t>(total));
        while (!reader.empty()) {
            const auto index = codec<std::uint32_t>::decode(reader);
            const auto count = codec<std::uint32_t>::decode(reader);
            auto& values = m_model.at(index);
            for (std::uint32_t i = 0; i < count; ++i)
                values.push_back(codec<V>::decode(reader));
        }
    }

    void verify_epoch(bool cross_reads) {
        gather_model();
        std::size_t model_keys = 0;
        std::size_t model_values = 0;
        for (const auto& values : m_model) {
            model_keys += values.empty() ? 0 : 1;
            model_values += values.size();
        }
        const std::string where = std::string(cross_reads ? "end of phase A" : "after the drain");

        // This rank's shard against the union of the models.
        std::size_t keys = 0;
        std::size_t values = 0;
        std::size_t payload = 0;
        m_adapter.local_for_each([&](const K& key, const auto& view) {
            ++keys;
            values += view.size();
            payload += codec<K>::payload_bytes(key);
            std::vector<V> actual;
            for (std::size_t i = 0; i < view.size(); ++i) {
                actual.push_back(view[i]);
                payload += codec<V>::payload_bytes(view[i]);
            }
            const auto found = m_key_index.find(key);
            if (found == m_key_index.end()) {
                fail(where, "local shard holds key " + test_data<K>::describe(key) + " that no rank ever inserted");
                return;
            }
            op o;
            o.key = found->second;
            o.what = kind::find;
            if (m_adapter.owner(key) != m_rank)
                fail(where, "local shard holds key " + describe(o) + " owned by rank " +
                                std::to_string(m_adapter.owner(key)));
            if (actual != m_model[found->second])
                fail(where, "local shard " + describe(o) + ": holds " + describe_values(actual) + ", model " +
                                describe_values(m_model[found->second]));
        });
        if (keys != m_adapter.local_size() || values != m_adapter.local_value_count())
            fail(where, "local_for_each saw " + std::to_string(keys) + " keys / " + std::to_string(values) +
                            " values, local_size " + std::to_string(m_adapter.local_size()) + ", local_value_count " +
                            std::to_string(m_adapter.local_value_count()));
        if constexpr (Adapter::has_payload_bytes) {
            if (payload != m_adapter.local_payload_bytes())
                fail(where, "local_payload_bytes " + std::to_string(m_adapter.local_payload_bytes()) +
                                ", but the shard's keys and values add up to " + std::to_string(payload) + " bytes");
        }
        if (m_capacity_values != 0 && values > m_capacity_values)
            fail(where, "shard holds " + std::to_string(values) + " values over capacity_values " +
                            std::to_string(m_capacity_values));
        if (m_capacity_bytes != 0 && payload > m_capacity_bytes)
            fail(where, "shard holds " + std::to_string(payload) + " payload bytes over capacity_bytes " +
                            std::to_string(m_capacity_bytes));

        // Collective: the shards together hold exactly the model (and, since
        // each local key is checked above, each key once, at its owner).  This
        // reduction also keeps every rank out of phase B until all shards are checked.
        unsigned long long local[2] = {keys, values};
        unsigned long long global[2] = {0, 0};
        {
            auto guard = m_adapter.mpi_guard();
            MPI_Allreduce(local, global, 2, MPI_UNSIGNED_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
        }
        if (global[0] != model_keys || global[1] != model_values)
            fail(where, "all shards hold " + std::to_string(global[0]) + " keys / " + std::to_string(global[1]) +
                            " values, the model " + std::to_string(model_keys) + " / " + std::to_string(model_values));
        // Collective, so only in the last epoch and after the drain: each
        // collective costs a scheduling round when ranks are oversubscribed.
        const bool last_epoch = !cross_reads || m_epoch + 1 == m_options.epochs;
        if constexpr (Adapter::has_global_size) {
            if (last_epoch) {
                const std::size_t global_keys = m_adapter.global_size();
                const std::size_t global_values = m_adapter.global_value_count();
                if (global_keys != model_keys || global_values != model_values)
                    fail(where, "global_size " + std::to_string(global_keys) + " / global_value_count " +
                                    std::to_string(global_values) + ", model " + std::to_string(model_keys) + " / " +
                                    std::to_string(model_values));
            }
        }
        if constexpr (Adapter::has_async) {
            if (m_adapter.async_rejected() != m_expected_rejected)
                fail(where, "async_rejected " + std::to_string(m_adapter.async_rejected()) + ", expected " +
                                std::to_string(m_expected_rejected));
        }

        // Phase B: read any key.
        if (cross_reads && m_is_active) {
            for (std::size_t step = 0; step < m_options.cross_reads; ++step) {
                op o;
                o.index = m_operation;
                o.key = pick(m_key_range);
                const std::size_t present = m_model[o.key].size();
                if (Adapter::has_visit && pick(4) == 0) {
                    o.what = kind::cross_count;
                    ++m_kind_counts[kind_name(o.what)];
                    add_pending(std::move(o), m_adapter.count(m_keys[o.key]),
                                [this, present](const op& what, std::uint32_t count) {
                                    expect(count == present, what,
                                           "count " + std::to_string(count) + ", expected " + std::to_string(present));
                                });
                } else {
                    o.what = kind::cross_find;
                    ++m_kind_counts[kind_name(o.what)];
                    o.limit = choose_limit(present);
                    auto expected = prefix(o.key, o.limit);
                    add_pending(std::move(o), m_adapter.find(m_keys[o.key], o.limit),
                                [this, expected = std::move(expected)](const op& what, const std::vector<V>& actual) {
                                    expect_values(what, actual, expected);
                                });
                }
                if (m_pending.size() >= m_options.window)
                    resolve_all();
            }
            resolve_all();
            if constexpr (Adapter::has_find_many) {
                std::vector<std::uint64_t> indices(m_options.cross_find_many);
                for (auto& index : indices)
                    index = pick(m_key_range);
                op o;
                o.index = m_operation;
                o.what = kind::cross_find_many;
                o.limit = m_max_limit;
                o.note = "over " + std::to_string(indices.size()) + " keys";
                ++m_kind_counts[kind_name(o.what)];
                bulk_and_check(o, indices, false);
            }
        }
        m_adapter.flush();
    }

    void drain() {
        for (const auto index : m_own) {
            if (m_model[index].empty())
                continue;
            op o;
            o.index = m_operation;
            o.key = index;
            if (pick(3) == 0) {
                o.what = kind::drain_erase;
                const std::size_t present = m_model[index].size();
                model_pop(index, present);
                add_pending(std::move(o), m_adapter.erase(m_keys[index]), [this, present](const op& what, std::size_t count) {
                    expect(count == present, what,
                           "erase reported " + std::to_string(count) + ", expected " + std::to_string(present));
                });
            } else {
                o.what = kind::drain_take;
                while (!m_model[index].empty()) {
                    o.limit = m_max_limit;
                    auto expected = prefix(index, o.limit);
                    model_pop(index, expected.size());
                    add_pending(o, m_adapter.take(m_keys[index], o.limit),
                                [this, expected = std::move(expected)](const op& what, const std::vector<V>& actual) {
                                    expect_values(what, actual, expected);
                                });
                }
            }
            if (m_pending.size() >= m_options.window)
                resolve_all();
        }
        resolve_all();
    }

    const options& m_options;
    Adapter& m_adapter;
    std::uint64_t m_seed;
    int m_rank;
    int m_size;
    std::mt19937_64 m_random;
    std::vector<int> m_active;
    bool m_is_active = true;
    std::uint64_t m_key_range = 0;
    std::vector<K> m_keys;
    std::map<K, std::uint64_t> m_key_index;
    std::vector<std::uint64_t> m_own;
    std::vector<std::vector<V>> m_model;
    std::vector<int> m_blocked;
    std::size_t m_own_values = 0;  // values under own keys (all keys when p == 1)
    std::vector<std::unique_ptr<pending_base>> m_pending;
    std::size_t m_capacity_values = 0;
    std::size_t m_capacity_bytes = 0;
    bool m_limited = false;
    bool m_exact = false;
    std::size_t m_max_limit = 1;
    std::uint64_t m_expected_rejected = 0;
    std::uint64_t m_stamp = 0;
    std::size_t m_operation = 0;
    std::size_t m_epoch = 0;
    std::size_t m_reported = 0;
    std::map<std::string, std::size_t> m_kind_counts;
};

// Runs the suite for every seed, each on a fresh container from `make`
// (collective), and prints a one-line summary on rank 0.
template <class Adapter, class Make>
void run_suite(const options& settings, Make&& make) {
    int rank = 0;
    int size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const auto start = std::chrono::steady_clock::now();
    std::size_t operations = 0;
    std::map<std::string, std::size_t> kinds;
    for (const std::uint64_t seed : settings.seeds) {
        std::unique_ptr<Adapter> adapter = make();
        driver<Adapter> run(settings, *adapter, seed);
        run.run();
        adapter->destroy();
        operations += run.operations();
        for (const auto& [name, count] : run.kind_counts())
            kinds[name] += count;
    }
    unsigned long long mine = operations;
    unsigned long long total = 0;
    MPI_Reduce(&mine, &total, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("conformance %s: %d ranks, %zu seeds, %llu operations in all (%zu on rank 0), %.2f s\n  rank 0:",
                    settings.name.c_str(), size, settings.seeds.size(), total, operations, seconds);
        for (const auto& [name, count] : kinds)
            std::printf(" %s %zu;", name.c_str(), count);
        std::printf("\n");
        std::fflush(stdout);
    }
}

}  // namespace mpidict::conformance
