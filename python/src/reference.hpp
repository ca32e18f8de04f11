// The C++ references of bench/python_hash_map.py (issue 51): each phase the
// benchmark times from Python, written as a C++ user would write it against the
// library, on the very keys Python passes (the numpy array's buffer, so the two
// key sets cannot differ), with its results checked as Python's are.  Every
// phase returns the slowest rank's seconds over MPI_COMM_WORLD (the benchmark's
// communicator) and throws on every rank when any rank saw a wrong result.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mpidict/error.hpp"

namespace mpidict_python::reference {

// Runs `body` between a barrier and the slowest rank's clock; `body` returns
// this rank's count of wrong results.
template <class Body>
double timed(const char* what, Body&& body) {
    MPI_Comm comm = MPI_COMM_WORLD;
    MPI_Barrier(comm);
    const double start = MPI_Wtime();
    const std::uint64_t wrong = body();
    const double local[2] = {MPI_Wtime() - start, static_cast<double>(wrong)};
    double slowest[2] = {0, 0};
    MPI_Allreduce(local, slowest, 2, MPI_DOUBLE, MPI_MAX, comm);
    if (slowest[1] > 0)
        throw mpidict::error(std::string("cpp_reference: ") + what + " returned wrong results on some rank");
    return slowest[0];
}

// hash_map: async_insert of every (key, key), flush.
template <class Map>
double hash_map_insert(Map& m, std::span<const std::uint64_t> keys) {
    return timed("hash_map insert", [&] {
        for (const std::uint64_t k : keys)
            m.async_insert(k, k);
        m.flush();
        return std::uint64_t{0};
    });
}

// hash_map: find_many (limit 1) of every key, every answer checked (one value,
// equal to the key), flush to serve the others' finds.
template <class Map>
double hash_map_find(Map& m, std::span<const std::uint64_t> keys) {
    return timed("hash_map find_many", [&] {
        std::uint64_t wrong = 0, answered = 0;
        m.find_many(keys, 1, [&](std::size_t i, std::span<const std::uint64_t> vs) {
            ++answered;
            wrong += vs.size() != 1 || vs[0] != keys[i];
        });
        m.flush();
        return wrong + (answered != keys.size());
    });
}

// linear_hash_map: async_insert of every (key, key), flush.
template <class Map>
double linear_insert(Map& m, std::span<const std::uint64_t> keys) {
    return timed("linear_hash_map insert", [&] {
        for (const std::uint64_t k : keys)
            m.async_insert(k, k);
        m.flush();
        return std::uint64_t{0};
    });
}

// linear_hash_map has no find_many: find requests in windows of 4,096, as the
// binding's find_many issues them, each answer checked.
template <class Map>
double linear_find(Map& m, std::span<const std::uint64_t> keys) {
    return timed("linear_hash_map find", [&] {
        std::uint64_t wrong = 0;
        constexpr std::size_t window = 4096;
        std::vector<decltype(m.find(keys[0]))> pending;
        pending.reserve(window);
        for (std::size_t begin = 0; begin < keys.size(); begin += window) {
            const std::size_t end = std::min(keys.size(), begin + window);
            pending.clear();
            for (std::size_t i = begin; i < end; ++i)
                pending.push_back(m.find(keys[i]));
            for (std::size_t i = begin; i < end; ++i) {
                const std::optional<std::uint64_t> v = pending[i - begin].get();
                wrong += !v || *v != keys[i];
            }
        }
        m.flush();
        return wrong;
    });
}

// skiplist_map<int64, uint64>: insert_many of every (key, key bits).
template <class Map>
double skiplist_insert(Map& m, std::span<const std::int64_t> keys) {
    return timed("skiplist_map insert_many", [&] {
        std::vector<std::uint64_t> values(keys.begin(), keys.end());
        const std::size_t stored = m.insert_many(keys, std::span<const std::uint64_t>(values)).added();
        m.flush();
        return std::uint64_t{stored != keys.size()};
    });
}

// skiplist_map: find_many of every key, each answer checked.
template <class Map>
double skiplist_find(Map& m, std::span<const std::int64_t> keys) {
    return timed("skiplist_map find_many", [&] {
        std::uint64_t wrong = 0, answered = 0;
        m.find_many(keys, [&](std::size_t i, const std::optional<std::uint64_t>& v) {
            ++answered;
            wrong += !v || *v != static_cast<std::uint64_t>(keys[i]);
        });
        m.flush();
        return wrong + (answered != keys.size());
    });
}

// skiplist_map: one range request per [lo[i], hi[i]], up to `window` of them
// in flight (each started as the oldest is read with get(); window 1: one at a
// time); the entries must number expected[i], ascend, lie in the range and map
// key -> key.
template <class Map>
double skiplist_range(Map& m, std::span<const std::int64_t> lo, std::span<const std::int64_t> hi,
                      std::span<const std::uint64_t> expected, std::size_t window) {
    if (window == 0)
        throw mpidict::invalid_argument_error("cpp_reference_range: window must be at least 1");
    return timed("skiplist_map range", [&] {
        std::uint64_t wrong = 0;
        std::deque<decltype(m.range(lo[0], hi[0]))> pending;
        std::size_t next = 0;
        for (std::size_t i = 0; i < lo.size(); ++i) {
            while (next < lo.size() && pending.size() < window) {
                pending.push_back(m.range(lo[next], hi[next]));
                ++next;
            }
            const auto entries = pending.front().get();
            pending.pop_front();
            wrong += entries.size() != expected[i];
            for (std::size_t j = 0; j < entries.size(); ++j) {
                const auto& [k, v] = entries[j];
                wrong += k < lo[i] || k > hi[i] || v != static_cast<std::uint64_t>(k) ||
                         (j > 0 && !(entries[j - 1].first < k));
            }
        }
        m.flush();
        return wrong;
    });
}

}  // namespace mpidict_python::reference
