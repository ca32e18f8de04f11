#pragma once
// hash_map::load (include/mpidict/hash_map.hpp, docs/checkpoint.md): a
// checkpoint read back into an empty map, in one pass over the files.
//
// The reader checks the bytes as the load reads them (verification::
// while_reading: the CRC-32 and column structure of each column as its bytes
// arrive, the rest in reader::finish()), so every byte is read from the file
// once; a shard that fails a check fails the load on every rank and the map is
// emptied, as for any other failure.  Fixed-size keys and values are read in
// runs (entry_reader::keys/counts/values: one call per buffered run); a run in
// which every key has one value goes to the owners in bulk: this rank's pairs
// into the table with their slots prefetched (hash_map_shard::store_pairs),
// the others as insert_one records.  Other runs, and byte-string keys or
// values, go entry by entry as before.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "mpidict/checkpoint.hpp"
#include "mpidict/error.hpp"
#include "mpidict/hash_map_types.hpp"
#include "mpidict/local/codec.hpp"
#include "mpidict/runtime/engine.hpp"

namespace mpidict::detail {

struct hash_map_loader {
    // Entries read per run on the bulk path.
    static constexpr std::size_t run_entries = 4096;

    template <class Map>
    static void load(Map& map, const std::string& directory, const checkpoint_options& options) {
        using K = typename Map::key_type;
        using V = typename Map::value_type;
        namespace ck = checkpoint;
        constexpr auto flags = Map::checkpoint_flags;
        if (const std::size_t held = map.global_size(); held != 0)
            throw invalid_argument_error("mpidict: hash_map load needs an empty map; this one holds " +
                                         std::to_string(held) + " keys");
        ck::communicator_copy comm(map.m_engine->mpi_communicator(), "hash_map");
        ck::reader in(comm.get(), directory, ck::describe<K, V>("hash_map", flags, options),
                      ck::columns_for<K, V>(flags, {}), options, {}, ck::verification::while_reading);
        const std::uint64_t refused_before = map.m_shard.local_rejected();
        std::string problem;  // e.g. a saved value too large for this map's messages
        try {
            runtime::engine_lock lock(*map.m_engine);
            // Room for this rank's share of the keys (hash placement deals about
            // as many to each rank), so the table does not grow while loading.
            std::vector<V> scratch;
            const std::uint64_t share = in.total_entries() / static_cast<std::uint64_t>(map.num_ranks());
            if (share > map.m_shard.table().size())
                map.m_shard.table().reserve(static_cast<std::size_t>(share + share / 64 + 16));
            for (std::size_t shard = 0; shard < in.shards(); ++shard) {
                ck::entry_reader<K, V> entries(in, shard, flags);
                if constexpr (codec<K>::fixed_size && codec<V>::fixed_size && !ck::column_codec<K>::variable &&
                              !ck::column_codec<V>::variable)
                    load_runs(map, entries, in.entries(shard), scratch);
                else
                    for (std::uint64_t entry = 0; entry < in.entries(shard); ++entry) {
                        const K key = entries.key();
                        load_entry(map, entries, key, entries.count(), scratch);
                    }
            }
            in.finish();
        } catch (const std::exception& failure) {
            problem = "mpidict: checkpoint " + directory + ": loading failed: " + failure.what();
        }
        map.flush();
        // A damaged shard first (it also makes keys go missing; its message is the one to give).
        settle(map, comm.get(), problem);
        const std::size_t refused = map.global_sum(map.m_shard.local_rejected() - refused_before, "load");
        if (problem.empty() && refused != 0)
            problem = "mpidict: checkpoint " + directory + ": this hash_map's capacity limits refused " +
                      std::to_string(refused) + " of the saved values";
        // A key saved twice (each shard's keys are distinct, and so are the shards'):
        // fewer keys than the manifest's entries.
        if (const std::size_t distinct = map.global_size(); problem.empty() && distinct != in.total_entries())
            problem = "mpidict: checkpoint " + directory + ": the manifest lists " +
                      std::to_string(in.total_entries()) + " keys, but only " + std::to_string(distinct) +
                      " are distinct: a key is saved more than once";
        settle(map, comm.get(), problem);
    }

private:
    // Collective: if any rank has a problem, every rank empties its shard and
    // throws the lowest such rank's message.
    template <class Map>
    static void settle(Map& map, MPI_Comm comm, const std::string& problem) {
        try {
            checkpoint::agree(comm, problem);
        } catch (const checkpoint_error& failure) {
            runtime::engine_lock lock(*map.m_engine);
            map.m_shard.reset();
            throw checkpoint_error(std::string(failure.what()) + "; the map is left empty");
        }
    }

    // One key's `count` values, read one by one, to the owner in pieces.
    template <class Map, class Entries, class K, class V>
    static void load_entry(Map& map, Entries& entries, const K& key, std::uint64_t count, std::vector<V>& values) {
        const std::size_t batch_bytes = map.m_engine->max_record_bytes() / 4;
        const int target = map.owner(key);
        std::size_t bytes = 0;
        values.clear();
        for (std::uint64_t index = 0; index < count; ++index) {
            values.push_back(entries.value());
            bytes += codec<V>::encoded_size(values.back());
            if (values.size() == Map::checkpoint_batch || bytes >= batch_bytes || index + 1 == count) {
                map.restore(target, key, values);
                values.clear();
                bytes = 0;
            }
        }
    }

    // Fixed-size keys and values: runs of entries read in bulk.  A shard's keys
    // come in the saved table's slot order, which is hash order but for the
    // first few: keys whose probe runs wrapped past the saved table's end into
    // its first slots, with hashes at the very top.  Those (a leading prefix in
    // the top 1/1024 of the hashes, at most one run of them) are stored after
    // the rest of the shard, so the rest goes to the table in hash order
    // (hash_map_shard::store_pairs places such runs without comparing keys).
    template <class Map, class Entries>
    static void load_runs(Map& map, Entries& entries, std::uint64_t total,
                          std::vector<typename Map::value_type>& scratch) {
        using K = typename Map::key_type;
        using V = typename Map::value_type;
        constexpr std::uint64_t wrapped_from = ~std::uint64_t{0} - (~std::uint64_t{0} >> 10);
        std::vector<K> keys(run_entries), mine_keys, late_keys;
        std::vector<V> values(run_entries), mine_values, late_values;
        std::vector<std::uint64_t> counts(run_entries), hashes(run_entries), mine_hashes, late_hashes;
        mine_keys.reserve(run_entries);
        mine_values.reserve(run_entries);
        mine_hashes.reserve(run_entries);
        const int me = map.rank();
        bool leading = true;
        for (std::uint64_t left = total; left > 0;) {
            const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(left, run_entries));
            left -= n;
            entries.keys(keys.data(), n);
            entries.counts(counts.data(), n);
            if (!std::all_of(counts.begin(), counts.begin() + static_cast<std::ptrdiff_t>(n),
                             [](std::uint64_t c) { return c == 1; })) {
                for (std::size_t i = 0; i < n; ++i)
                    load_entry(map, entries, keys[i], counts[i], scratch);
                leading = false;
                continue;
            }
            entries.values(values.data(), n);
            // Each key hashed once, for its owner and its slot in the owner's table.
            bool all_mine = true;
            for (std::size_t i = 0; i < n; ++i) {
                hashes[i] = map.m_shard.table().hash_of(keys[i]);
                all_mine &= owner_of(map, keys[i], hashes[i]) == me;
            }
            std::size_t first = 0;
            if (leading) {
                while (first < n && late_keys.size() < run_entries && hashes[first] >= wrapped_from) {
                    late_keys.push_back(keys[first]);
                    late_values.push_back(values[first]);
                    late_hashes.push_back(hashes[first]);
                    ++first;
                }
                leading = first == n && late_keys.size() < run_entries;
            }
            store_run(map, keys.data() + first, values.data() + first, hashes.data() + first, n - first, all_mine,
                      mine_keys, mine_values, mine_hashes);
        }
        bool late_mine = true;
        for (std::size_t i = 0; i < late_keys.size(); ++i)
            late_mine &= owner_of(map, late_keys[i], late_hashes[i]) == me;
        store_run(map, late_keys.data(), late_values.data(), late_hashes.data(), late_keys.size(), late_mine,
                  mine_keys, mine_values, mine_hashes);
    }

    // The owner of a key whose hash is known: cyclic placement goes by the key,
    // the others by the hash (computed once, also for the owner's table).
    template <class Map, class K>
    static int owner_of(const Map& map, const K& key, std::uint64_t hash) {
        return map.m_config.place == placement::cyclic ? map.owner(key) : map.owner_of_hash(hash);
    }

    // n single-valued pairs, hashed: this rank's into its table, the others' to
    // their owners (`all_mine`: the caller saw that every key is this rank's).
    template <class Map, class K, class V>
    static void store_run(Map& map, const K* keys, const V* values, const std::uint64_t* hashes, std::size_t n,
                          bool all_mine, std::vector<K>& mine_keys, std::vector<V>& mine_values,
                          std::vector<std::uint64_t>& mine_hashes) {
        if (all_mine) {  // the usual case when loading at the rank count that saved
            map.m_shard.store_pairs(std::span<const K>(keys, n), std::span<const V>(values, n),
                                    std::span<const std::uint64_t>(hashes, n));
            return;
        }
        mine_keys.clear();
        mine_values.clear();
        mine_hashes.clear();
        for (std::size_t i = 0; i < n; ++i) {
            const int target = owner_of(map, keys[i], hashes[i]);
            if (target == map.rank()) {
                mine_keys.push_back(keys[i]);
                mine_values.push_back(values[i]);
                mine_hashes.push_back(hashes[i]);
            } else {
                map.forget_pending_reduce(keys[i]);
                std::byte* out = map.reserve(target_rank{target}, map.m_handlers.insert_one, sizeof(K) + sizeof(V));
                out = codec<K>::encode(out, keys[i]);
                codec<V>::encode(out, values[i]);
            }
        }
        map.m_shard.store_pairs(std::span<const K>(mine_keys), std::span<const V>(mine_values),
                                std::span<const std::uint64_t>(mine_hashes));
    }
};

}  // namespace mpidict::detail
