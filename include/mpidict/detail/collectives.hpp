#pragma once
// The collectives every message-based container offers under the same names:
// gather(root), gather_all(), gather_topk(k, compare) and reduce(op), over
// (key, value) pairs.  A container supplies its engine and a walk over its
// local entries, each(emit) calling emit(key, value); it calls these after its
// own flush().  The pairs travel as engine::exchange records (codec-encoded
// key then value), so the results are the same over MPI and the simulation.
//
// Determinism: an exchange returns records ordered by source rank, each
// source's in its own order, so gather_topk (a stable sort of the same
// candidates) and reduce (a fold in rank order) give the same result on every
// rank.

#include <algorithm>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "mpidict/error.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::detail {

template <class K, class V>
class entry_collectives {
public:
    using pair = std::pair<K, V>;

    // Every pair on `root` (engine::all_ranks: on every rank); elsewhere empty.
    template <class Each>
    static std::vector<pair> gather(runtime::engine& engine, int root, Each&& each) {
        return decode(engine.exchange(root, [&](const runtime::engine::exchange_sink& send) {
            std::vector<std::byte> scratch;
            each([&](const K& key, const V& value) { send(encode(scratch, key, value)); });
        }));
    }

    // The k first pairs of the whole container by compare, on every rank.
    template <class Each, class Compare>
    static std::vector<pair> gather_topk(runtime::engine& engine, std::size_t k, Compare& compare, Each&& each) {
        std::vector<pair> mine;
        each([&](const K& key, const V& value) {
            mine.emplace_back(key, value);
            if (mine.size() >= 2 * k + 64)
                keep_first(mine, k, compare);
        });
        keep_first(mine, k, compare);
        std::vector<pair> all = decode(engine.exchange(runtime::engine::all_ranks, [&](const auto& send) {
            std::vector<std::byte> scratch;
            for (const pair& entry : mine)
                send(encode(scratch, entry.first, entry.second));
        }));
        keep_first(all, k, compare);
        return all;
    }

    // Every value folded with op (associative and commutative), on every rank;
    // empty when the container is.
    template <class Each, class Op>
    static std::optional<V> reduce(runtime::engine& engine, Op& op, Each&& each) {
        std::optional<V> mine;
        each([&](const K&, const V& value) { mine = mine ? V(op(*mine, value)) : value; });
        const runtime::engine::exchanged partials =
            engine.exchange(runtime::engine::all_ranks, [&](const runtime::engine::exchange_sink& send) {
                if (!mine)
                    return;
                std::vector<std::byte> scratch(codec<V>::encoded_size(*mine));
                codec<V>::encode(scratch.data(), *mine);
                send(scratch);
            });
        std::optional<V> total;
        for (const auto& record : partials.records) {
            byte_reader reader(partials.bytes(record));
            V value = codec<V>::decode(reader);
            total = total ? V(op(*total, value)) : std::move(value);
        }
        return total;
    }

private:
    static std::span<const std::byte> encode(std::vector<std::byte>& scratch, const K& key, const V& value) {
        scratch.resize(codec<K>::encoded_size(key) + codec<V>::encoded_size(value));
        codec<V>::encode(codec<K>::encode(scratch.data(), key), value);
        return scratch;
    }

    static std::vector<pair> decode(const runtime::engine::exchanged& arrived) {
        std::vector<pair> pairs;
        pairs.reserve(arrived.records.size());
        for (const auto& record : arrived.records) {
            byte_reader reader(arrived.bytes(record));
            K key = codec<K>::decode(reader);
            V value = codec<V>::decode(reader);
            pairs.emplace_back(std::move(key), std::move(value));
        }
        return pairs;
    }

    template <class Compare>
    static void keep_first(std::vector<pair>& pairs, std::size_t k, Compare& compare) {
        std::stable_sort(pairs.begin(), pairs.end(), compare);
        if (pairs.size() > k)
            pairs.resize(k);
    }
};

// The four calls as members: a container derives from
// with_collectives<itself, K, V> and offers flush(), engine(), num_ranks()
// and a walk each_pair() (befriend this class if it is private).
template <class Container, class K, class V>
class with_collectives {
    using pairs = std::vector<std::pair<K, V>>;
    using ops = entry_collectives<K, V>;

public:
    // Collective.  Every (key, value) pair on rank `root`, an empty vector
    // elsewhere (a key with several values gives one pair per value, in order).
    pairs gather(int root) {
        Container& self = container();
        if (root < 0 || root >= self.num_ranks())
            throw invalid_argument_error("mpidict: root rank " + std::to_string(root) + " is outside " +
                                         communicator_of(self.num_ranks()));
        self.flush();
        return ops::gather(self.engine(), root, self.each_pair());
    }
    // Collective.  Every pair on every rank.
    pairs gather_all() {
        Container& self = container();
        self.flush();
        return ops::gather(self.engine(), runtime::engine::all_ranks, self.each_pair());
    }
    // Collective.  The k first pairs in the order of compare(a, b) (true: a comes
    // first), the same on every rank (ties: lower rank first, then each rank's
    // order).  Each rank sends at most k pairs to each.
    template <class Compare>
    pairs gather_topk(std::size_t k, Compare compare) {
        Container& self = container();
        self.flush();
        return ops::gather_topk(self.engine(), k, compare, self.each_pair());
    }
    // Collective.  Every value folded with op (associative and commutative, e.g.
    // std::plus<>), the same result on every rank; empty if there is no value.
    template <class Op>
    std::optional<V> reduce(Op op) {
        Container& self = container();
        self.flush();
        return ops::reduce(self.engine(), op, self.each_pair());
    }

private:
    Container& container() { return static_cast<Container&>(*this); }
};

}  // namespace mpidict::detail
