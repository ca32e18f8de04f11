// skiplist_map against std::map models at 1-4 ranks.  Every rank is a caller and
// owns the keys k with k % size == rank, spread over the whole key space so that
// all ranks insert into, split and read the same nodes.  Request-form answers are
// checked against the caller's model as they arrive; fire-and-forget chains on
// one key after a flush; ranges (bounded, from, limited, descending) both while
// others modify the list (the caller's own keys must match exactly) and after a
// flush (every key, against the union of the models).  Configurations cover G = 1
// (the seed's one item per node), G = 4 (splits everywhere, taller towers), G =
// 1000 (few nodes), and a list too small for the keys (list_full).

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <cstdint>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>
#include <span>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using key_type = std::int64_t;
using map_type = mpidict::skiplist_map<key_type, std::uint64_t>;

struct scenario {
    const char* name;
    std::size_t granularity;
    unsigned max_height;
    int operations;
    key_type key_space;  // per rank
};

constexpr auto same_entry = [](const auto& a, const auto& b) { return a.first == b.first && a.second == b.second; };

std::uint64_t value_for(key_type key, int version) { return static_cast<std::uint64_t>(key) * 1000 + version; }

// Sums a count over all ranks (raw MPI: it serves no skip-list request, so call
// it only after a flush).
std::int64_t global_sum(std::int64_t value) {
    std::int64_t total = 0;
    MPI_Allreduce(&value, &total, 1, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    return total;
}

void check_range(map_type& map, const std::map<key_type, std::uint64_t>& model, key_type lo, key_type hi, int rank,
                 int size, bool exact_for_all, const std::map<key_type, std::uint64_t>* everything) {
    auto result = map.range(lo, hi).get();
    MPIDICT_CHECK(std::is_sorted(result.begin(), result.end(),
                                 [](const auto& a, const auto& b) { return a.first < b.first; }));
    for (std::size_t i = 1; i < result.size(); ++i)
        MPIDICT_CHECK(result[i - 1].first < result[i].first);
    std::map<key_type, std::uint64_t> mine;
    for (const auto& [key, value] : result) {
        MPIDICT_CHECK(key >= lo && key <= hi);
        if (((key % size) + size) % size == rank)
            mine.emplace(key, value);
    }
    std::map<key_type, std::uint64_t> expected(model.lower_bound(lo), model.upper_bound(hi));
    MPIDICT_CHECK_MSG(mine == expected, "range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]: " +
                                            std::to_string(mine.size()) + " own keys, expected " +
                                            std::to_string(expected.size()));
    if (exact_for_all && everything) {
        std::map<key_type, std::uint64_t> all(everything->lower_bound(lo), everything->upper_bound(hi));
        MPIDICT_CHECK(result.size() == all.size());
        MPIDICT_CHECK(std::equal(result.begin(), result.end(), all.begin(), all.end(), same_entry));
        // Limited and descending forms of the same query.
        const auto limited = map.range(lo, hi, {.limit = 5}).get();
        MPIDICT_CHECK(limited.size() == std::min<std::size_t>(5, all.size()));
        MPIDICT_CHECK(std::equal(limited.begin(), limited.end(), all.begin(), same_entry));
        const auto down = map.range(lo, hi, {.limit = 7, .descending = true}).get();
        MPIDICT_CHECK(down.size() == std::min<std::size_t>(7, all.size()));
        MPIDICT_CHECK(std::equal(down.begin(), down.end(), all.rbegin(), same_entry));
        const auto tail = map.range_from(lo).get();
        std::map<key_type, std::uint64_t> from(everything->lower_bound(lo), everything->end());
        MPIDICT_CHECK(std::equal(tail.begin(), tail.end(), from.begin(), from.end(), same_entry));
        // Streaming forms: the same entries, in order, to a callback.
        std::vector<std::pair<key_type, std::uint64_t>> streamed;
        auto keep = [&](const key_type& key, const std::uint64_t& value) { streamed.emplace_back(key, value); };
        MPIDICT_CHECK(map.range(lo, hi, keep) == all.size());
        MPIDICT_CHECK(std::equal(streamed.begin(), streamed.end(), all.begin(), all.end(), same_entry));
        streamed.clear();
        MPIDICT_CHECK(map.range_from(lo, keep, {.limit = 9}) == std::min<std::size_t>(9, from.size()));
        MPIDICT_CHECK(std::equal(streamed.begin(), streamed.end(), from.begin(), same_entry));
        streamed.clear();
        MPIDICT_CHECK(map.range(lo, hi, keep, {.limit = 4, .descending = true}) == std::min<std::size_t>(4, all.size()));
        MPIDICT_CHECK(std::equal(streamed.begin(), streamed.end(), all.rbegin(), same_entry));
        // A callback that throws: the exception reaches the caller, the rest of
        // the query is dropped, and the map keeps working.
        if (all.size() > 2) {
            std::size_t calls = 0;
            bool thrown = false;
            try {
                map.range(lo, hi, [&](const key_type&, const std::uint64_t&) {
                    if (++calls == 2)
                        throw std::runtime_error("stop");
                });
            } catch (const std::runtime_error&) {
                thrown = true;
            }
            MPIDICT_CHECK(thrown && calls == 2);
            MPIDICT_CHECK(map.range(lo, hi).get().size() == all.size());
        }
    }
}

void run_scenario(const scenario& s, int rank, int size) {
    mpidict::skiplist_map_config config;
    config.granularity = s.granularity;
    config.max_height = s.max_height;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    map_type map(MPI_COMM_WORLD, config);
    std::mt19937_64 random(0x5eed + 7919 * rank + s.granularity);
    std::map<key_type, std::uint64_t> model;
    const key_type span = s.key_space * size;
    auto own_key = [&] {
        // Keys on both sides of zero, owned by this rank.
        const key_type raw = static_cast<key_type>(random() % static_cast<std::uint64_t>(s.key_space));
        return (raw - s.key_space / 2) * size + rank;
    };
    int version = 0;
    for (int step = 0; step < s.operations; ++step) {
        const key_type key = own_key();
        const auto present = model.find(key);
        switch (random() % 6) {
        case 0:
        case 1: {
            const auto result = map.insert(key, value_for(key, ++version)).get();
            MPIDICT_CHECK(result.stored);
            MPIDICT_CHECK(result.replaced == (present != model.end()));
            model[key] = value_for(key, version);
            break;
        }
        case 2: {
            const bool inserted = map.insert_if_absent(key, value_for(key, ++version)).get();
            MPIDICT_CHECK(inserted == (present == model.end()));
            if (inserted)
                model[key] = value_for(key, version);
            break;
        }
        case 3: {
            const auto found = map.find(key).get();
            MPIDICT_CHECK_MSG(found.has_value() == (present != model.end()), "find " + std::to_string(key));
            if (found && present != model.end())
                MPIDICT_CHECK(*found == present->second);
            break;
        }
        case 4: {
            const bool erased = map.erase(key).get();
            MPIDICT_CHECK(erased == (present != model.end()));
            model.erase(key);
            break;
        }
        case 5: {
            const key_type lo = (static_cast<key_type>(random() % static_cast<std::uint64_t>(span))) - span / 2;
            check_range(map, model, lo, lo + static_cast<key_type>(random() % 64) * size, rank, size, false, nullptr);
            break;
        }
        }
    }
    // Fire-and-forget chains on one key must apply in order: insert, erase,
    // insert, erase, ..., ending with an insert for even chains.
    std::vector<key_type> chain_keys;
    for (int chain = 0; chain < 12; ++chain) {
        const key_type key = own_key();
        const int length = 2 + static_cast<int>(random() % 5);
        for (int link = 0; link < length; ++link) {
            if (link % 2 == 0)
                map.async_insert(key, value_for(key, ++version));
            else
                map.async_erase(key);
        }
        if (length % 2 == 1)
            model[key] = value_for(key, version);
        else
            model.erase(key);
        chain_keys.push_back(key);
    }
    map.flush();
    for (key_type key : chain_keys) {
        const auto found = map.find(key).get();
        const auto expected = model.find(key);
        MPIDICT_CHECK_MSG(found.has_value() == (expected != model.end()), "chain key " + std::to_string(key));
        if (found && expected != model.end())
            MPIDICT_CHECK(*found == expected->second);
    }
    map.flush();
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
    MPIDICT_CHECK(static_cast<std::int64_t>(map.global_size()) == global_sum(static_cast<std::int64_t>(model.size())));

    // The union of every model, for exact whole-list ranges.
    std::vector<std::int64_t> flat;
    for (const auto& [key, value] : model) {
        flat.push_back(key);
        flat.push_back(static_cast<std::int64_t>(value));
    }
    int mine = static_cast<int>(flat.size());
    std::vector<int> counts(size), offsets(size);
    MPI_Allgather(&mine, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
    int total = 0;
    for (int r = 0; r < size; ++r) {
        offsets[r] = total;
        total += counts[r];
    }
    std::vector<std::int64_t> all_flat(static_cast<std::size_t>(total));
    MPI_Allgatherv(flat.data(), mine, MPI_INT64_T, all_flat.data(), counts.data(), offsets.data(), MPI_INT64_T,
                   MPI_COMM_WORLD);
    std::map<key_type, std::uint64_t> everything;
    for (std::size_t i = 0; i + 1 < all_flat.size(); i += 2)
        everything[all_flat[i]] = static_cast<std::uint64_t>(all_flat[i + 1]);
    for (int query = 0; query < 6; ++query) {
        const key_type lo = (static_cast<key_type>(random() % static_cast<std::uint64_t>(span))) - span / 2;
        check_range(map, model, lo, lo + static_cast<key_type>(random() % static_cast<std::uint64_t>(span)), rank,
                    size, true, &everything);
    }
    check_range(map, model, std::numeric_limits<key_type>::min(), std::numeric_limits<key_type>::max(), rank, size,
                true, &everything);
    // Every rank reads every key.
    std::vector<key_type> keys;
    for (const auto& [key, value] : everything)
        keys.push_back(key);
    keys.push_back(span * 4 + 1);  // absent
    std::size_t hits = 0;
    map.find_many(std::span<const key_type>(keys), [&](std::size_t index, const std::optional<std::uint64_t>& value) {
        if (index + 1 == keys.size()) {
            MPIDICT_CHECK(!value.has_value());
            return;
        }
        MPIDICT_CHECK(value.has_value() && *value == everything[keys[index]]);
        hits += value.has_value();
    });
    MPIDICT_CHECK(hits == everything.size());
    // Raw MPI collectives below do not serve the list: everyone's queries must be done.
    map.flush();
    const auto stats = map.local_statistics();
    if (std::getenv("SKIPLIST_TEST_VERBOSE"))
        std::fprintf(stderr, "[rank %d] %s: nodes %llu entries %llu splits %llu hops %llu handled %llu held %llu parts %llu\n",
                     rank, s.name, (unsigned long long)stats.nodes, (unsigned long long)stats.entries,
                     (unsigned long long)stats.splits, (unsigned long long)stats.hops,
                     (unsigned long long)stats.handled, (unsigned long long)stats.held,
                     (unsigned long long)stats.range_parts);
    if (s.granularity <= 4 && global_sum(static_cast<std::int64_t>(everything.size())) > 8 * size)
        MPIDICT_CHECK(global_sum(static_cast<std::int64_t>(stats.splits)) > 0);
    map.flush();
}

// A list with room for few nodes: inserts beyond it are refused (list_full:
// a result, stored = false, never an exception) and nothing stored is lost.
void run_list_full(int rank, int size) {
    mpidict::skiplist_map_config config;
    config.granularity = 2;
    config.node_slots_per_rank = 2;  // head + 1 on the first server, 2 elsewhere
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    map_type map(MPI_COMM_WORLD, config);
    std::map<key_type, std::uint64_t> stored;
    int refused = 0;
    for (key_type i = 0; i < 40; ++i) {
        const key_type key = i * size + rank;
        const mpidict::replace_result result = map.insert(key, value_for(key, 1)).get();
        if (result.stored) {
            stored[key] = value_for(key, 1);
        } else {
            MPIDICT_CHECK_MSG(!result.replaced, "a refused insert replaced nothing");
            ++refused;
        }
    }
    map.flush();
    const std::int64_t capacity = static_cast<std::int64_t>(2 * (2 * size - 1) + 0);
    MPIDICT_CHECK(global_sum(refused) > 0);
    MPIDICT_CHECK(static_cast<std::int64_t>(map.global_size()) <= capacity + size);
    for (const auto& [key, value] : stored) {
        const auto found = map.find(key).get();
        MPIDICT_CHECK_MSG(found && *found == value, "stored key " + std::to_string(key) + " lost after list_full");
    }
    MPIDICT_CHECK(static_cast<std::int64_t>(map.global_size()) == global_sum(static_cast<std::int64_t>(stored.size())));
    map.flush();
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
}

// Emptied nodes are unlinked at a flush and their slots reused: five rounds,
// each filling a fresh part of the key space and then erasing all of it but a
// few keys, with so few node slots that one round's nodes only fit if the
// earlier rounds' emptied ones came back to the free pool (without unlinking
// the list runs out of slots by the fourth round).  The kept keys, ranges over the emptied
// parts and the list's structure are checked after every round.
void run_unlink(int rank, int size) {
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.max_height = 4;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    constexpr key_type per_round = 48;  // per rank
    // One round needs about 2 * 48 * size / 4 = 24 * size nodes at most; the
    // slots allow about 1.5 rounds' worth.
    config.node_slots_per_rank = 40;
    map_type map(MPI_COMM_WORLD, config);
    std::map<key_type, std::uint64_t> kept;
    std::int64_t unlinked = 0;
    for (int round = 0; round < 5; ++round) {
        const key_type base = static_cast<key_type>(round) * 1'000'000;
        std::vector<key_type> keys;
        for (key_type i = 0; i < per_round; ++i)
            keys.push_back(base + i * size + rank);
        std::vector<std::uint64_t> values;
        for (const key_type key : keys)
            values.push_back(value_for(key, round));
        map.insert_many(keys, values);
        map.flush();
        const std::int64_t nodes_full = global_sum(static_cast<std::int64_t>(map.local_statistics().nodes));
        for (std::size_t i = 0; i < keys.size(); ++i) {
            if (i % 16 == 0) {
                kept[keys[i]] = values[i];
                continue;
            }
            MPIDICT_CHECK(map.erase(keys[i]).get());
        }
        map.flush();
        const auto stats = map.local_statistics();
        const std::int64_t nodes_after = global_sum(static_cast<std::int64_t>(stats.nodes));
        unlinked = global_sum(static_cast<std::int64_t>(stats.unlinked));
        MPIDICT_CHECK_MSG(nodes_after < nodes_full, "round " + std::to_string(round) + ": " +
                                                       std::to_string(nodes_full) + " nodes before the erases, " +
                                                       std::to_string(nodes_after) + " after the flush");
        // Every live node but the head holds a key.
        MPIDICT_CHECK(nodes_after <= static_cast<std::int64_t>(global_sum(static_cast<std::int64_t>(kept.size()))) + 1);
        MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
        for (const auto& [key, value] : kept) {
            const auto found = map.find(key).get();
            MPIDICT_CHECK_MSG(found && *found == value, "kept key " + std::to_string(key) + " lost after unlinking");
        }
        map.flush();  // the other ranks' finds are served before the raw MPI sum below
        const std::int64_t kept_total = global_sum(static_cast<std::int64_t>(kept.size()));
        // (Raw MPI sums serve no skip-list request: none is called while ranges run.)
        const auto all = map.range(std::numeric_limits<key_type>::min(), std::numeric_limits<key_type>::max()).get();
        MPIDICT_CHECK(static_cast<std::int64_t>(all.size()) == kept_total);
        for (std::size_t i = 1; i < all.size(); ++i)
            MPIDICT_CHECK(all[i - 1].first < all[i].first);
        map.flush();
    }
    MPIDICT_CHECK(unlinked > 0);
}

// Bulk splits whose pieces are taller than the splitting node (issue 43, stop
// 68: the pieces link one another on those levels, the last of each level ends
// it, and one link_up per level splices the first in and hands the
// predecessor's old successor to the last).  Tall towers (p = 0.7, height 8)
// and G = 4, so a batch of 300 keys cuts a node into dozens of pieces, many
// taller than it: ascending batches (every split at the tail, every rank's
// keys interleaved) and batches into the gaps between them (splits in the
// middle, where the old successors are real nodes).  After each batch every
// key is found with its value and a range reads all of them in order; the
// links lead forward; erasing most keys then leaves only nodes that hold a key
// (a tower with a level never set would not be unlinked), and the kept keys
// and a last ascending batch over the unlinked part are read back.
void run_bulk_towers(int rank, int size) {
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.max_height = 8;
    config.tower_probability = 0.7;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    map_type map(MPI_COMM_WORLD, config);
    std::map<key_type, std::uint64_t> mine, everything;
    auto key_at = [&](int round, int owner, key_type i) {
        const key_type gap = round % 2 == 0 ? 0 : 1 + i % 7;
        return static_cast<key_type>(round / 2) * 1'000'000 + (i * 8 + gap) * size + owner;
    };
    auto check_all = [&](const char* when) {
        std::vector<key_type> wanted;
        for (const auto& entry : everything)
            wanted.push_back(entry.first);
        std::size_t seen = 0;
        map.find_many(std::span<const key_type>(wanted), [&](std::size_t index, const std::optional<std::uint64_t>& value) {
            ++seen;
            MPIDICT_CHECK_MSG(value && *value == everything[wanted[index]],
                              std::string(when) + ": key " + std::to_string(wanted[index]) + " not found with its value");
        });
        MPIDICT_CHECK(seen == wanted.size());
        const auto all = map.range(std::numeric_limits<key_type>::min(), std::numeric_limits<key_type>::max()).get();
        MPIDICT_CHECK_MSG(all.size() == everything.size(), std::string(when) + ": a range read " +
                                                               std::to_string(all.size()) + " entries of " +
                                                               std::to_string(everything.size()));
        MPIDICT_CHECK(std::equal(all.begin(), all.end(), everything.begin(), everything.end(), same_entry));
        map.flush();
        MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
        // No rank's next batch (its splits reserve nodes here) before every rank checked.
        (void)global_sum(0);
    };
    for (int round = 0; round < 4; ++round) {
        std::vector<key_type> keys;
        std::vector<std::uint64_t> values;
        for (key_type i = 0; i < 300; ++i) {
            keys.push_back(key_at(round, rank, i));
            values.push_back(value_for(keys.back(), round));
            mine[keys.back()] = values.back();
            for (int owner = 0; owner < size; ++owner)
                everything[key_at(round, owner, i)] = value_for(key_at(round, owner, i), round);
        }
        const auto result = map.insert_many(std::span<const key_type>(keys), std::span<const std::uint64_t>(values));
        MPIDICT_CHECK(result.added() == keys.size() && result.refused == 0);
        map.flush();  // every rank's batch in
        check_all(round == 0 ? "after batch 0" : round == 1 ? "after batch 1" : round == 2 ? "after batch 2" : "after batch 3");
    }
    MPIDICT_CHECK(global_sum(static_cast<std::int64_t>(map.local_statistics().splits)) > 0);
    // Erase all but every 16th key of this rank's.
    std::size_t index = 0;
    for (const auto& [key, value] : mine)
        if (index++ % 16 != 0)
            MPIDICT_CHECK(map.erase(key).get());
    map.flush();
    std::map<key_type, std::uint64_t> kept;
    index = 0;
    for (const auto& entry : mine)
        if (index++ % 16 == 0)
            kept.insert(entry);
    const std::int64_t nodes_after = global_sum(static_cast<std::int64_t>(map.local_statistics().nodes));
    const std::int64_t kept_total = global_sum(static_cast<std::int64_t>(kept.size()));
    MPIDICT_CHECK_MSG(nodes_after <= kept_total + 1, std::to_string(nodes_after) + " nodes hold " +
                                                         std::to_string(kept_total) + " keys after unlinking");
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
    for (const auto& [key, value] : kept) {
        const auto found = map.find(key).get();
        MPIDICT_CHECK_MSG(found && *found == value, "kept key " + std::to_string(key) + " lost after unlinking");
    }
    map.flush();
    const auto all = map.range(std::numeric_limits<key_type>::min(), std::numeric_limits<key_type>::max()).get();
    MPIDICT_CHECK(static_cast<std::int64_t>(all.size()) == kept_total);
    for (std::size_t i = 1; i < all.size(); ++i)
        MPIDICT_CHECK(all[i - 1].first < all[i].first);
    map.flush();
    // One more ascending batch through the unlinked part and past it.
    std::vector<key_type> keys;
    std::vector<std::uint64_t> values;
    for (key_type i = 0; i < 300; ++i) {
        keys.push_back(static_cast<key_type>(i * 4 * size + rank) * 3000 + 3);
        values.push_back(value_for(keys.back(), 9));
    }
    MPIDICT_CHECK(map.insert_many(std::span<const key_type>(keys), std::span<const std::uint64_t>(values)).refused == 0);
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const auto found = map.find(keys[i]).get();
        MPIDICT_CHECK_MSG(found && *found == values[i], "key " + std::to_string(keys[i]) + " of the last batch lost");
    }
    map.flush();
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
}

// Paging with a resume key: the whole list read in pages of 7 ascending
// (range_from the last key with after_lo) and of 5 descending (range up to the
// smallest key with before_hi) equals one whole range, at G = 4.
void run_paging(int rank, int size) {
    mpidict::skiplist_map_config config;
    config.granularity = 4;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    map_type map(MPI_COMM_WORLD, config);
    std::vector<key_type> keys;
    std::vector<std::uint64_t> values;
    for (key_type i = 0; i < 60; ++i) {
        keys.push_back(i * 3 * size + rank - 50);  // negative keys too
        values.push_back(value_for(keys.back(), 0));
    }
    map.insert_many(keys, values);
    map.flush();
    constexpr key_type lowest = std::numeric_limits<key_type>::min(), highest = std::numeric_limits<key_type>::max();
    const auto whole = map.range(lowest, highest).get();
    MPIDICT_CHECK(whole.size() == 60u * static_cast<std::size_t>(size));
    map_type::entry_list up;
    auto page = map.range_from(lowest, {.limit = 7}).get();
    while (!page.empty()) {
        MPIDICT_CHECK(page.size() <= 7);
        up.insert(up.end(), page.begin(), page.end());
        page = map.range_from(page.back().first, {.limit = 7, .after_lo = true}).get();
    }
    MPIDICT_CHECK(std::equal(up.begin(), up.end(), whole.begin(), whole.end(), same_entry));
    map_type::entry_list down;
    page = map.range(lowest, highest, {.limit = 5, .descending = true}).get();
    while (!page.empty()) {
        MPIDICT_CHECK(page.size() <= 5);
        down.insert(down.end(), page.begin(), page.end());
        page = map.range(lowest, page.back().first, {.limit = 5, .descending = true, .before_hi = true}).get();
    }
    MPIDICT_CHECK(std::equal(down.begin(), down.end(), whole.rbegin(), whole.rend(), same_entry));
    // The bounds themselves: [k, k] holds k; (k, k] and [k, k) are empty.
    const key_type k = whole[whole.size() / 2].first;
    MPIDICT_CHECK(map.range(k, k).get().size() == 1);
    MPIDICT_CHECK(map.range(k, k, {.after_lo = true}).get().empty());
    MPIDICT_CHECK(map.range(k, k, {.before_hi = true}).get().empty());
    map.flush();
}

// insert_many and find_many: repeated keys in one call take effect in index
// order, splits happen under the batch (G = 4, small windows), a batch starts
// after this caller's async operations, and list_full in a batch is counted
// in its result (refused, refused_indexes) with nothing stored lost.
void run_batches(int rank, int size) {
    for (const std::size_t window : {std::size_t{1}, std::size_t{3}, std::size_t{64}}) {
        mpidict::skiplist_map_config config;
        config.granularity = 4;
        config.max_key_bytes = 8;
        config.max_value_bytes = 8;
        config.caller_window = window;
        map_type map(MPI_COMM_WORLD, config);
        // Own keys k = i * size + rank; key i % 50 repeats with versions.
        std::vector<key_type> keys;
        std::vector<std::uint64_t> values;
        std::map<key_type, std::uint64_t> model;
        for (int i = 0; i < 300; ++i) {
            const key_type key = static_cast<key_type>((i % 120) * size + rank);
            keys.push_back(key);
            values.push_back(value_for(key, i));
            model[key] = value_for(key, i);
        }
        const std::size_t fresh =
            map.insert_many(std::span<const key_type>(keys), std::span<const std::uint64_t>(values)).added();
        MPIDICT_CHECK_MSG(fresh == model.size(), "insert_many reported " + std::to_string(fresh) + " new keys of " +
                                                     std::to_string(model.size()));
        // Async erases of some own keys, then a batch: it must see them.
        for (key_type i = 0; i < 120; i += 7) {
            map.async_erase(i * size + rank);
            model.erase(i * size + rank);
        }
        std::vector<key_type> wanted;
        for (int i = 0; i < 130; ++i)
            wanted.push_back(static_cast<key_type>(i * size + rank));
        std::size_t seen = 0;
        map.find_many(std::span<const key_type>(wanted), [&](std::size_t index, const std::optional<std::uint64_t>& value) {
            MPIDICT_CHECK_MSG(index == seen, "find_many delivered index " + std::to_string(index) + " out of order");
            ++seen;
            const auto expected = model.find(wanted[index]);
            if (expected == model.end())
                MPIDICT_CHECK_MSG(!value.has_value(), "key " + std::to_string(wanted[index]) + " found after erase");
            else
                MPIDICT_CHECK_MSG(value && *value == expected->second,
                                  "key " + std::to_string(wanted[index]) + ": not the last value inserted");
        });
        MPIDICT_CHECK(seen == wanted.size());
        map.flush();
        MPIDICT_CHECK(static_cast<std::int64_t>(map.global_size()) == global_sum(static_cast<std::int64_t>(model.size())));
        MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
        map.flush();
    }
    // list_full inside insert_many.
    mpidict::skiplist_map_config config;
    config.granularity = 2;
    config.node_slots_per_rank = 2;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    map_type map(MPI_COMM_WORLD, config);
    std::vector<key_type> keys;
    std::vector<std::uint64_t> values;
    for (key_type i = 0; i < 40; ++i) {
        keys.push_back(i * size + rank);
        values.push_back(value_for(i * size + rank, 2));
    }
    // Ten keys again with a newer value: stored or refused with their first
    // occurrence (sequential sends a batch sorted: a repeated key once).
    for (key_type i = 0; i < 40; i += 4) {
        keys.push_back(i * size + rank);
        values.push_back(value_for(i * size + rank, 3));
    }
    const mpidict::insert_many_result result =
        map.insert_many(std::span<const key_type>(keys), std::span<const std::uint64_t>(values));
    MPIDICT_CHECK(result.stored + result.refused == keys.size() && result.refused_indexes.size() == result.refused);
    MPIDICT_CHECK(std::is_sorted(result.refused_indexes.begin(), result.refused_indexes.end()));
    MPIDICT_CHECK_MSG(result.added() == 40 - result.refused_indexes.size() +
                                            static_cast<std::size_t>(std::count_if(
                                                result.refused_indexes.begin(), result.refused_indexes.end(),
                                                [](std::size_t index) { return index >= 40; })),
                      "insert_many: added() counts each stored key once");
    for (std::size_t index = 40; index < keys.size(); ++index) {
        const auto refused = [&](std::size_t at) {
            return std::binary_search(result.refused_indexes.begin(), result.refused_indexes.end(), at);
        };
        MPIDICT_CHECK_MSG(refused(index) == refused((index - 40) * 4),
                          "a repeated key refused or stored with its first occurrence");
    }
    map.flush();
    MPIDICT_CHECK(global_sum(static_cast<std::int64_t>(result.refused)) > 0);
    // Whatever was stored is intact and findable.
    std::size_t found = 0;
    map.find_many(std::span<const key_type>(keys), [&](std::size_t index, const std::optional<std::uint64_t>& value) {
        const bool refused_here =
            std::binary_search(result.refused_indexes.begin(), result.refused_indexes.end(), index);
        MPIDICT_CHECK_MSG(value.has_value() != refused_here, "key " + std::to_string(keys[index]) +
                                                                 ": found exactly when insert_many stored it");
        if (value) {
            const bool repeated = index >= 40 || index % 4 == 0;
            const std::size_t last = index >= 40 ? index : repeated ? 40 + index / 4 : index;
            MPIDICT_CHECK_MSG(*value == values[last], "key " + std::to_string(keys[index]) + ": not its last value");
            found += index < 40;
        }
    });
    map.flush();
    MPIDICT_CHECK(global_sum(static_cast<std::int64_t>(found)) == static_cast<std::int64_t>(map.global_size()));
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
    map.flush();
}

}  // namespace

// find_many in the modes whose finds go straight to the node the directory
// names (sequential, none), while other ranks still insert (nodes split and
// hold under it), and with stale directory entries planted: a node slot no
// rank has used and a live slot with the wrong generation.  Every answer must
// be right and the failed shortcuts counted.
void run_direct_finds(int rank, int size) {
    for (const auto mode : {mpidict::skiplist_consistency::sequential, mpidict::skiplist_consistency::none}) {
        mpidict::skiplist_map_config config;
        config.granularity = 4;
        config.max_key_bytes = 8;
        config.max_value_bytes = 8;
        config.consistency = mode;
        map_type map(MPI_COMM_WORLD, config);
        // Own keys: even numbers k = 2 * (i * size + rank); odd keys are never stored.
        std::vector<key_type> own;
        std::vector<std::uint64_t> own_values;
        for (int i = 0; i < 1500; ++i) {
            own.push_back(static_cast<key_type>(2 * (i * size + rank)));
            own_values.push_back(value_for(own.back(), 1));
        }
        std::vector<key_type> wanted;
        for (int copy = 0; copy < 3; ++copy)
            wanted.insert(wanted.end(), own.begin(), own.end());
        for (int i = 0; i < 600; ++i)
            wanted.push_back(static_cast<key_type>(2 * (i * size + rank) + 1));
        std::mt19937_64 random(static_cast<std::uint64_t>(rank) * 7 + 1);
        std::shuffle(wanted.begin(), wanted.end(), random);
        auto check_all = [&](const char* when) {
            std::size_t seen = 0;
            map.find_many(std::span<const key_type>(wanted), [&](std::size_t index, const std::optional<std::uint64_t>& value) {
                MPIDICT_CHECK_MSG(index == seen, std::string(when) + ": find_many delivered index " +
                                                     std::to_string(index) + " out of order");
                ++seen;
                const key_type key = wanted[index];
                if (key % 2 != 0)
                    MPIDICT_CHECK_MSG(!value.has_value(), std::string(when) + ": found absent key " + std::to_string(key));
                else
                    MPIDICT_CHECK_MSG(value && *value == value_for(key, 1),
                                      std::string(when) + ": key " + std::to_string(key) + " not found or wrong");
            });
            MPIDICT_CHECK(seen == wanted.size());
        };
        // Half the keys, then finds while the other ranks may still insert.
        const std::size_t half = own.size() / 2;
        map.insert_many(std::span<const key_type>(own.data(), half), std::span<const std::uint64_t>(own_values.data(), half));
        map.insert_many(std::span<const key_type>(own.data() + half, own.size() - half),
                        std::span<const std::uint64_t>(own_values.data() + half, own.size() - half));
        check_all("during inserts");
        map.flush();
        const auto before = map.local_statistics();
        // Stale entries: keys from the 500th own key on go to a slot nobody used
        // on the next rank, from the 1000th on to slot 0 of rank 0 with a
        // generation it never had.
        map.remember_route_for_testing(own[500], mpidict::skiplist_node_id{(rank + 1) % size, 0x7ffffff0u, 1});
        map.remember_route_for_testing(own[1000], mpidict::skiplist_node_id{0, 0, 0x7ffffff0u});
        check_all("stale routes");
        // Single operations through the stale entries too (the planted entry
        // is forgotten after its first failure; plant it again).
        map.remember_route_for_testing(own[500], mpidict::skiplist_node_id{(rank + 1) % size, 0x7ffffff0u, 1});
        MPIDICT_CHECK(map.find(own[700]).get() == value_for(own[700], 1));
        map.remember_route_for_testing(own[1000], mpidict::skiplist_node_id{0, 0, 0x7ffffff0u});
        MPIDICT_CHECK(map.erase(own[1200]).get());
        MPIDICT_CHECK(!map.find(own[1200]).get().has_value());
        map.insert(own[1200], value_for(own[1200], 1)).get();
        map.flush();
        const auto after = map.local_statistics();
        MPIDICT_CHECK_MSG(after.shortcut_failures - before.shortcut_failures >= 2,
                          "stale shortcuts fell back " + std::to_string(after.shortcut_failures - before.shortcut_failures) +
                              " times");
        MPIDICT_CHECK(static_cast<std::int64_t>(map.global_size()) == global_sum(static_cast<std::int64_t>(own.size())));
        MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
        map.flush();
    }
}

// find_many's direct records and their answers where neither fits one
// record: long string keys and values in the smallest buffer the map accepts,
// so a rank's keys for one node span several records, and a node's answers
// for one record several answer records.  Every answer must still be right and
// delivered once, in index order.
void run_direct_finds_split(int rank, int size) {
    using string_map = mpidict::skiplist_map<std::string, std::string>;
    mpidict::skiplist_map_config config;
    config.granularity = 8;
    config.max_key_bytes = 700;
    config.max_value_bytes = 3000;
    config.consistency = mpidict::skiplist_consistency::none;
    config.runtime.buffer_bytes = config.required_buffer_bytes();
    string_map map(MPI_COMM_WORLD, config);
    auto key_of = [](int owner, int i) {
        // 300-600 bytes; the number first, so keys spread over the list.
        std::string key = std::to_string(i * 7919 % 1000 + 1000) + "/" + std::to_string(owner) + "/";
        key.append(static_cast<std::size_t>(300 + i * 37 % 300), static_cast<char>('a' + i % 26));
        return key;
    };
    auto value_of = [](const std::string& key) {
        std::string value = key.substr(0, 8);
        value.append(1000 + key.size() * 3 % 2000, 'v');
        return value;
    };
    std::vector<std::string> own, own_values;
    for (int i = 0; i < 300; ++i) {
        own.push_back(key_of(rank, i));
        own_values.push_back(value_of(own.back()));
    }
    map.insert_many(std::span<const std::string>(own), std::span<const std::string>(own_values));
    map.flush();
    // 14 copies of every rank's keys plus absent ones: over the 4096 keys
    // that make find_many sort them.
    std::vector<std::string> wanted;
    for (int copy = 0; copy < 14; ++copy)
        for (int owner = 0; owner < size; ++owner)
            for (int i = copy; i < 300; i += 14 / size + 1)
                wanted.push_back(key_of(owner, i));
    for (int i = 0; i < 4200; ++i)
        wanted.push_back(key_of(size + rank, i % 300) + "absent");
    std::mt19937_64 random(static_cast<std::uint64_t>(rank) + 11);
    std::shuffle(wanted.begin(), wanted.end(), random);
    std::size_t seen = 0;
    map.find_many(std::span<const std::string>(wanted), [&](std::size_t index, const std::optional<std::string>& value) {
        MPIDICT_CHECK_MSG(index == seen, "find_many delivered index " + std::to_string(index) + " out of order");
        ++seen;
        const std::string& key = wanted[index];
        if (key.ends_with("absent"))
            MPIDICT_CHECK_MSG(!value.has_value(), "found an absent key");
        else
            MPIDICT_CHECK_MSG(value && *value == value_of(key), "a stored key was not found or had a wrong value");
    });
    MPIDICT_CHECK(seen == wanted.size());
    MPIDICT_CHECK(map.local_statistics().shortcut_entries > 0);
    MPIDICT_CHECK_MSG(map.check_local_invariants().empty(), map.check_local_invariants());
    map.flush();
}

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(150), "mpi_skiplist_map_model");
        const scenario scenarios[] = {
            {"G=4", 4, 12, 700, 300},
            {"G=1", 1, 10, 300, 120},
            {"G=1000", 1000, 16, 400, 500},
            {"G=16 short towers", 16, 3, 500, 400},
        };
        for (const auto& s : scenarios)
            run_scenario(s, rank, size);
        run_list_full(rank, size);
        run_batches(rank, size);
        run_unlink(rank, size);
        run_bulk_towers(rank, size);
        run_paging(rank, size);
        run_direct_finds(rank, size);
        run_direct_finds_split(rank, size);
    });
}
