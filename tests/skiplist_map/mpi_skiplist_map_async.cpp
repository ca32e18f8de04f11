// async_insert batched behind the caller's back (issue 49, item 1) at 1-4
// ranks, in every consistency mode and with several batch shapes (one key per
// batch, a few, the default, none: point records):
//   - per-caller order: an async_insert followed by a find, erase, insert,
//     insert_if_absent, range or match of the same key from the same caller sees it
//     (modes sequential and total_order; mode none is checked only at the end);
//   - a key repeated within one buffer and across batches in flight keeps
//     its last value; async_insert then async_erase leaves it absent;
//   - set_consistency, find_many and insert_many send the buffer first;
//   - after flush every rank's keys are there with their last values
//     (find_many and a whole-list range against the model);
//   - list_full: with room for a few nodes, every key is either found or
//     counted in async_rejected(), nothing stored lost;
//   - a batch goes out at async_batch_keys keys or async_batch_bytes bytes,
//     whichever comes first (the batches counted in local_statistics()).

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using mode_type = mpidict::skiplist_consistency;
using key_type = std::int64_t;
using map_type = mpidict::skiplist_map<key_type, std::uint64_t>;

const char* name_of(mode_type mode) {
    return mode == mode_type::total_order ? "total_order" : mode == mode_type::sequential ? "sequential" : "none";
}

void ordered(int rank, int size, mode_type mode, std::size_t batch, std::size_t in_flight) {
    const std::string where = std::string(" (mode ") + name_of(mode) + ", async_batch_keys " + std::to_string(batch) +
                              " x " + std::to_string(in_flight) + ", rank " + std::to_string(rank) + ")";
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.consistency = mode;
    config.async_batch_keys = batch;
    config.async_batches_in_flight = in_flight;
    map_type map(MPI_COMM_WORLD, config);
    const bool strict = mode != mode_type::none;  // read-your-writes is promised outside none
    std::map<key_type, std::uint64_t> model;      // this rank's keys
    std::mt19937_64 random(1234 + static_cast<unsigned>(rank) * 77 + batch);
    const int keys = 600;
    auto key_of = [&](int i) { return static_cast<key_type>(i) * size + rank - 1000; };
    std::uint64_t version = static_cast<std::uint64_t>(rank) << 32;
    for (int step = 0; step < 2000; ++step) {
        const key_type key = key_of(static_cast<int>(random() % keys));
        const auto roll = random() % 100;
        if (roll < 55) {
            map.async_insert(key, ++version);
            model[key] = version;
        } else if (roll < 60) {
            // Twice in a row (one buffer): the last value wins.
            map.async_insert(key, ++version);
            map.async_insert(key, ++version);
            model[key] = version;
        } else if (roll < 64) {
            map.async_insert(key, ++version);
            map.async_erase(key);
            model.erase(key);
        } else if (roll < 72) {
            map.async_insert(key, ++version);
            model[key] = version;
            const auto got = map.find(key).get();
            if (strict)
                MPIDICT_CHECK_MSG(got == std::optional<std::uint64_t>(version), "find after async_insert" + where);
        } else if (roll < 77) {
            map.async_insert(key, ++version);
            const bool had = map.erase(key).get();
            model.erase(key);
            if (strict)
                MPIDICT_CHECK_MSG(had, "erase after async_insert" + where);
        } else if (roll < 81) {
            map.async_insert(key, ++version);
            const auto result = map.insert(key, version + 1).get();
            model[key] = ++version;
            if (strict)
                MPIDICT_CHECK_MSG(result.stored && result.replaced, "insert after async_insert" + where);
        } else if (roll < 84) {
            map.async_insert(key, ++version);
            model[key] = version;
            const bool fresh = map.insert_if_absent(key, version + 100).get();
            if (strict)
                MPIDICT_CHECK_MSG(!fresh, "insert_if_absent after async_insert" + where);
        } else if (roll < 90) {
            map.async_insert(key, ++version);
            model[key] = version;
            const auto got = map.range(key, key).get();
            if (strict)
                MPIDICT_CHECK_MSG(got.size() == 1 && got[0].first == key && got[0].second == version,
                                  "range after async_insert" + where);
        } else if (roll < 93) {
            map.async_insert(key, ++version);
            model[key] = version;
            std::size_t seen = 0;
            map.range(key, key, [&](const key_type& k, const std::uint64_t& v) {
                seen += k == key && v == version;
            });
            if (strict)
                MPIDICT_CHECK_MSG(seen == 1, "streaming range after async_insert" + where);
        } else if (roll < 95) {
            map.async_insert(key, ++version);
            model[key] = version;
            std::vector<key_type> probe{key};
            std::optional<std::uint64_t> got;
            map.find_many(std::span<const key_type>(probe), [&](std::size_t, const std::optional<std::uint64_t>& v) {
                got = v;
            });
            MPIDICT_CHECK_MSG(got == std::optional<std::uint64_t>(version), "find_many after async_insert" + where);
        } else if (roll < 97) {
            map.async_insert(key, ++version);
            std::vector<key_type> again{key};
            std::vector<std::uint64_t> value{++version};
            (void)map.insert_many(std::span<const key_type>(again), std::span<const std::uint64_t>(value));
            model[key] = version;
        } else {
            map.async_insert(key, ++version);
            model[key] = version;
            map.set_consistency(mode);  // sends the buffer, waits for it
            MPIDICT_CHECK_MSG(map.find(key).get() == std::optional<std::uint64_t>(version),
                              "find after set_consistency" + where);
        }
    }
    map.flush();
    MPIDICT_CHECK_MSG(map.async_rejected() == 0, "no refusals expected" + where);
    const auto total = mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(model.size()));
    MPIDICT_CHECK_MSG(static_cast<std::int64_t>(map.global_size()) == total, "global size after flush" + where);
    std::vector<key_type> all;
    for (int i = 0; i < keys; ++i)
        all.push_back(key_of(i));
    std::size_t wrong = 0;
    map.find_many(std::span<const key_type>(all), [&](std::size_t i, const std::optional<std::uint64_t>& got) {
        const auto it = model.find(all[i]);
        wrong += got != (it == model.end() ? std::nullopt : std::optional<std::uint64_t>(it->second));
    });
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " keys wrong after flush" + where);
    const auto listed = map.range_from(std::numeric_limits<key_type>::min()).get();
    std::map<key_type, std::uint64_t> mine;
    for (std::size_t i = 0; i < listed.size(); ++i) {
        MPIDICT_CHECK_MSG(i == 0 || listed[i - 1].first < listed[i].first, "whole-list range out of order" + where);
        if (((listed[i].first % size) + size) % size == ((rank - 1000) % size + size) % size)
            mine.insert(listed[i]);
    }
    MPIDICT_CHECK_MSG(mine == model, "whole-list range differs from the model" + where);
    // Buffered inserts left for destroy(): it sends them before it ends.
    for (int i = 0; i < 10; ++i)
        map.async_insert(key_of(i), 1);
    map.destroy();
}

// list_full: nodes for about a dozen keys per rank, 300 distinct keys per rank.
void full(int rank, int size, std::size_t batch) {
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.node_slots_per_rank = 3;
    config.async_batch_keys = batch;
    map_type map(MPI_COMM_WORLD, config);
    std::vector<key_type> keys;
    for (int i = 0; i < 300; ++i) {
        keys.push_back(static_cast<key_type>(i) * size + rank);
        map.async_insert(keys.back(), static_cast<std::uint64_t>(keys.back()) * 3);
    }
    map.flush();
    std::int64_t found = 0, wrong = 0;
    map.find_many(std::span<const key_type>(keys), [&](std::size_t i, const std::optional<std::uint64_t>& got) {
        found += got.has_value();
        wrong += got && *got != static_cast<std::uint64_t>(keys[i]) * 3;
    });
    map.flush();  // other ranks' find_many may still need this rank's answers
    const std::string where = " (list_full, async_batch_keys " + std::to_string(batch) + ", rank " +
                              std::to_string(rank) + ")";
    MPIDICT_CHECK_MSG(wrong == 0, "a stored key has a wrong value" + where);
    MPIDICT_CHECK_MSG(found + static_cast<std::int64_t>(map.async_rejected()) == 300,
                      std::to_string(found) + " found + " + std::to_string(map.async_rejected()) +
                          " refused != 300" + where);
    MPIDICT_CHECK_MSG(mpidict::testing::sum_over_ranks(static_cast<std::int64_t>(map.async_rejected())) > 0,
                      "expected refusals" + where);
    MPIDICT_CHECK_MSG(static_cast<std::int64_t>(map.global_size()) == mpidict::testing::sum_over_ranks(found),
                      "global size differs from what was found" + where);
}

// The two bounds of a batch (keys and bytes): 1,000-byte values, 100 keys per
// rank; each batch sent is counted in local_statistics().async_batches.
void bounds(int rank, int size) {
    using text_map = mpidict::skiplist_map<key_type, std::string>;
    struct shape {
        std::size_t keys, bytes, batches;  // 100 pairs of 8 + 1,000 bytes make `batches` batches
    };
    for (const shape s : {shape{1u << 20, 4096, 20}, shape{7, std::size_t{8} << 20, 15}, shape{1u << 20, 0, 100},
                          shape{131072, std::size_t{8} << 20, 1}}) {
        const std::string where = " (async_batch_keys " + std::to_string(s.keys) + ", async_batch_bytes " +
                                  std::to_string(s.bytes) + ", rank " + std::to_string(rank) + ")";
        mpidict::skiplist_map_config config;
        config.granularity = 8;
        config.async_batch_keys = s.keys;
        config.async_batch_bytes = s.bytes;
        text_map map(MPI_COMM_WORLD, config);
        std::vector<key_type> keys;
        for (int i = 0; i < 100; ++i) {
            keys.push_back(static_cast<key_type>(i) * size + rank);
            map.async_insert(keys.back(), std::string(1000, static_cast<char>('a' + i % 26)));
        }
        map.flush();
        const auto batches = map.local_statistics().async_batches;
        MPIDICT_CHECK_MSG(batches == s.batches,
                          std::to_string(batches) + " batches sent, expected " + std::to_string(s.batches) + where);
        std::size_t wrong = 0;
        map.find_many(std::span<const key_type>(keys), [&](std::size_t i, const std::optional<std::string>& got) {
            wrong += got != std::optional<std::string>(std::string(1000, static_cast<char>('a' + i % 26)));
        });
        map.flush();
        MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " keys missing or wrong" + where);
    }
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(170), "mpi_skiplist_map_async");
        for (const mode_type mode : {mode_type::sequential, mode_type::none, mode_type::total_order})
            for (const auto& [batch, in_flight] :
                 std::vector<std::pair<std::size_t, std::size_t>>{{65536, 2}, {1, 3}, {3, 1}, {0, 1}})
                ordered(rank, size, mode, batch, in_flight);
        for (const std::size_t batch : {std::size_t{65536}, std::size_t{4}, std::size_t{0}})
            full(rank, size, batch);
        bounds(rank, size);
    });
}
