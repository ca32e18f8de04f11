// Checkpoints of every container, saved at p ranks and loaded at q ranks.
//
//   mpi_checkpoint save ROOT       saves every container into ROOT/p<size>/...
//   mpi_checkpoint load ROOT P     loads ROOT/p<P>/... at this size and checks
//                                  every entry against the model
//   mpi_checkpoint faults ROOT     damaged, missing, mistyped and newer
//                                  checkpoints, a save that fails before its
//                                  manifest, a load that does not fit
//
// The model does not depend on the rank count: key k in [0, keys) is inserted
// by rank k % p, with values computed from k, so a load at q ranks knows
// exactly what it must find, entry by entry, with each entry on its owner.

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/rma_hash_set.hpp"
#include "mpidict/skiplist_map.hpp"

namespace fs = std::filesystem;
using namespace mpidict;

namespace {

constexpr std::uint64_t keys = 1500;

// ---- the model ----------------------------------------------------------------

std::size_t count_of(std::uint64_t k) { return 1 + k % 3; }
std::int64_t value_of(std::uint64_t k, std::size_t j) { return static_cast<std::int64_t>(k * 10 + j) - 7000; }
std::string word(std::uint64_t k) { return "word-" + std::to_string(k * 7919 % 100003); }
std::string text_of(std::uint64_t k, std::size_t j) { return std::string(k % 23 + j, static_cast<char>('a' + (k + j) % 26)); }
std::int64_t ordered_key(std::uint64_t k) { return static_cast<std::int64_t>(k) * 3 - 1000; }
std::pair<std::int32_t, std::uint16_t> pair_key(std::uint64_t k) {
    return {static_cast<std::int32_t>(k % 37) - 18, static_cast<std::uint16_t>(k)};
}
std::uint64_t set_object(std::uint64_t k) { return (k * 2654435761ULL) % (1ULL << 40) + 1; }

// skiplist_map expiry runs on this clock: entries with k % 5 == 0 expire at 1000 s.
double g_now = 1.0;
std::chrono::system_clock::time_point test_clock() {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(g_now)));
}
std::chrono::system_clock::time_point at_seconds(double seconds) {
    return std::chrono::system_clock::time_point(
        std::chrono::duration_cast<std::chrono::system_clock::duration>(std::chrono::duration<double>(seconds)));
}

using number_map = hash_map<std::uint64_t, std::int64_t>;
using text_map = hash_map<std::string, std::string>;
using word_map = linear_hash_map<std::string, std::uint64_t>;
using ordered_map = skiplist_map<std::int64_t, std::string>;
using pair_map = skiplist_map<std::pair<std::int32_t, std::uint16_t>, double>;
using object_set = rma_hash_set<std::uint64_t>;

hash_map_config cyclic_config() {
    hash_map_config c;
    c.place = placement::cyclic;  // ownership depends on p: a load at another p must move every key
    return c;
}
skiplist_map_config clocked() {
    skiplist_map_config c;
    c.expiry_clock = test_clock;
    c.granularity = 16;  // many nodes, so the list really spans the ranks
    return c;
}
linear_hash_map_config small_servers() {
    linear_hash_map_config c;
    c.server_capacity_bytes = 32 << 10;  // all of it fits one server, yet more ranks split while loading
    return c;
}
rma_hash_set_config small_set() {
    rma_hash_set_config c;
    c.slots_per_rank = 4096;
    return c;
}

std::string dir(const std::string& root, int p, const char* name) {
    return root + "/p" + std::to_string(p) + "/" + name;
}

void fill_all(int rank, int size, number_map& numbers, text_map& texts, word_map& words, ordered_map& ordered,
              pair_map& pairs, object_set& objects) {
    std::vector<std::uint64_t> mine_objects;
    for (std::uint64_t k = static_cast<std::uint64_t>(rank); k < keys; k += static_cast<std::uint64_t>(size)) {
        for (std::size_t j = 0; j < count_of(k); ++j)
            numbers.async_insert(k, value_of(k, j));
        if (k % 4 == 0)
            for (std::size_t j = 0; j < 1 + k % 2; ++j)
                texts.async_insert(word(k), text_of(k, j));
        words.async_insert(word(k), k * 7);
        if (k % 5 == 0)
            ordered.async_insert(ordered_key(k), text_of(k, 0), at_seconds(1000));
        else
            ordered.async_insert(ordered_key(k), text_of(k, 0));
        pairs.async_insert(pair_key(k), static_cast<double>(k) / 8);
        mine_objects.push_back(set_object(k));
    }
    objects.insert_if_absent_many(mine_objects);
}

// ---- checks against the model ---------------------------------------------------

void check_numbers(number_map& numbers, int rank) {
    MPIDICT_CHECK(numbers.global_size() == keys);
    std::uint64_t values = 0, wrong = 0;
    numbers.for_all([&](std::uint64_t k, const number_map::values_view& got) {
        values += got.size();
        bool ok = k < keys && numbers.owner(k) == rank && got.size() == count_of(k);
        for (std::size_t j = 0; ok && j < got.size(); ++j)
            ok = got[j] == value_of(k, j);  // in their saved order
        wrong += !ok;
    });
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " wrong entries in hash_map<uint64, int64>");
    std::uint64_t expected = 0;
    for (std::uint64_t k = 0; k < keys; ++k)
        expected += count_of(k);
    MPIDICT_CHECK(static_cast<std::uint64_t>(testing::sum_over_ranks(static_cast<std::int64_t>(values))) == expected);
    // And through the network: a find of a few keys from every rank.
    for (std::uint64_t k = static_cast<std::uint64_t>(rank); k < keys; k += 97)
        MPIDICT_CHECK(numbers.find(k).get().size() == count_of(k));
}

// hash_map<uint64, int64> with hash placement and (mostly) one value a key:
// the load's bulk path (runs of 4,096 entries with one value each, a key's
// owner changing with the rank count); every 1,000th key has two values, so
// some runs take the entry-by-entry path.
constexpr std::uint64_t single_keys = 10'000;
std::size_t singles_count(std::uint64_t k) { return k % 1000 == 17 ? 2 : 1; }

void fill_singles(int rank, int size, number_map& singles) {
    for (std::uint64_t k = static_cast<std::uint64_t>(rank); k < single_keys; k += static_cast<std::uint64_t>(size))
        for (std::size_t j = 0; j < singles_count(k); ++j)
            singles.async_insert(k * 0x9e3779b97f4a7c15ULL, value_of(k, j));
    singles.flush();
}

void check_singles(number_map& singles, int rank) {
    MPIDICT_CHECK(singles.global_size() == single_keys);
    std::uint64_t wrong = 0;
    for (std::uint64_t k = 0; k < single_keys; ++k) {
        const std::uint64_t key = k * 0x9e3779b97f4a7c15ULL;
        if (singles.owner(key) != rank)
            continue;
        const auto got = singles.local_find(key);
        bool ok = got.size() == singles_count(k);
        for (std::size_t j = 0; ok && j < got.size(); ++j)
            ok = got[j] == value_of(k, j);
        wrong += !ok;
    }
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " wrong entries in the single-valued hash_map");
}

void check_texts(text_map& texts, int rank) {
    std::map<std::string, std::uint64_t> model;
    for (std::uint64_t k = 0; k < keys; k += 4)
        model[word(k)] = k;
    MPIDICT_CHECK(texts.global_size() == model.size());
    std::uint64_t wrong = 0;
    texts.for_all([&](const std::string& key, const text_map::values_view& got) {
        const auto it = model.find(key);
        bool ok = it != model.end() && texts.owner(key) == rank && got.size() == 1 + it->second % 2;
        for (std::size_t j = 0; ok && j < got.size(); ++j)
            ok = got[j] == text_of(it->second, j);
        wrong += !ok;
    });
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " wrong entries in hash_map<string, string>");
}

void check_words(word_map& words, int rank, int size) {
    MPIDICT_CHECK(words.global_size() == keys);
    std::map<std::string, std::uint64_t> model;
    for (std::uint64_t k = 0; k < keys; ++k)
        model[word(k)] = k * 7;
    std::uint64_t wrong = 0;
    words.for_all([&](const std::string& key, std::uint64_t value) {
        const auto it = model.find(key);
        wrong += it == model.end() || it->second != value;
    });
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " wrong entries in linear_hash_map");
    for (std::uint64_t k = static_cast<std::uint64_t>(rank); k < keys; k += 89) {
        const auto found = words.find(word(k)).get();
        MPIDICT_CHECK_MSG(found && *found == k * 7, word(k) + (found ? " found " + std::to_string(*found) : " not found"));
    }
    (void)size;
}

void check_ordered(ordered_map& ordered, int rank) {
    MPIDICT_CHECK(ordered.global_size() == keys);
    MPIDICT_CHECK(ordered.check_local_invariants().empty());
    std::uint64_t wrong = 0;
    ordered.for_all([&](std::int64_t key, const std::string& value) {
        const std::int64_t shifted = key + 1000;
        wrong += shifted % 3 != 0 || value != text_of(static_cast<std::uint64_t>(shifted / 3), 0);
    });
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " wrong entries in skiplist_map<int64, string>");
    if (rank == 0) {
        // The order: one range over everything returns every key, ascending.
        const auto all = ordered.range(ordered_key(0), ordered_key(keys - 1)).get();
        bool ascending = all.size() == keys;
        for (std::size_t i = 0; ascending && i < all.size(); ++i)
            ascending = all[i].first == ordered_key(i);
        MPIDICT_CHECK_MSG(ascending, "range over the loaded skiplist_map is not every key in order");
    }
    // The expiry times came back too: past 1000 s, every fifth key is gone.
    ordered.flush();
    g_now = 2000;
    const std::size_t left = ordered.global_size();
    g_now = 1;
    MPIDICT_CHECK_MSG(left == keys - (keys + 4) / 5, "expiry times were not restored: " + std::to_string(left));
}

void check_pairs(pair_map& pairs) {
    MPIDICT_CHECK(pairs.global_size() == keys);
    std::uint64_t wrong = 0;
    pairs.for_all([&](const std::pair<std::int32_t, std::uint16_t>& key, double value) {
        const std::uint64_t k = key.second;
        wrong += k >= keys || pair_key(k) != key || value != static_cast<double>(k) / 8;
    });
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " wrong entries in skiplist_map<pair, double>");
}

void check_objects(object_set& objects) {
    MPIDICT_CHECK(objects.global_size() == keys);
    std::set<std::uint64_t> model;
    for (std::uint64_t k = 0; k < keys; ++k)
        model.insert(set_object(k));
    std::uint64_t wrong = 0;
    objects.for_all([&](std::uint64_t object) { wrong += model.count(object) == 0; });
    MPIDICT_CHECK(wrong == 0);
    for (std::uint64_t k = 0; k < keys; k += 101)
        MPIDICT_CHECK(objects.contains(set_object(k)).get());
}

// ---- modes --------------------------------------------------------------------------

void save_all(const std::string& root, int rank, int size) {
    number_map numbers(MPI_COMM_WORLD, cyclic_config());
    text_map texts(MPI_COMM_WORLD);
    word_map words(MPI_COMM_WORLD, small_servers());
    ordered_map ordered(MPI_COMM_WORLD, clocked());
    pair_map pairs(MPI_COMM_WORLD, clocked());
    object_set objects(MPI_COMM_WORLD, small_set());
    fill_all(rank, size, numbers, texts, words, ordered, pairs, objects);
    checkpoint_options per_rank;
    per_rank.layout = checkpoint_layout::file_per_rank;
    per_rank.buffer_bytes = 1;  // the smallest buffers: many writes per column
    numbers.save(dir(root, size, "numbers"));
    {
        number_map singles(MPI_COMM_WORLD);
        fill_singles(rank, size, singles);
        singles.save(dir(root, size, "singles"));
    }
    texts.save(dir(root, size, "texts"), per_rank);
    words.save(dir(root, size, "words"));
    ordered.save(dir(root, size, "ordered"), per_rank);
    pairs.save(dir(root, size, "pairs"));
    objects.save(dir(root, size, "objects"));
    // A second save over the first replaces it and leaves one generation behind.
    numbers.save(dir(root, size, "numbers"));
    if (rank == 0) {
        std::size_t data_files = 0;
        for (const auto& item : fs::directory_iterator(dir(root, size, "numbers")))
            data_files += item.path().filename().string().starts_with("data-");
        MPIDICT_CHECK_MSG(data_files == 1, "old data files left behind: " + std::to_string(data_files));
    }
}

void load_all(const std::string& root, int saved, int rank, int size) {
    {
        number_map numbers(MPI_COMM_WORLD, cyclic_config());
        numbers.load(dir(root, saved, "numbers"));
        check_numbers(numbers, rank);
    }
    {
        number_map singles(MPI_COMM_WORLD);
        singles.load(dir(root, saved, "singles"));  // mapped, checked as read
        check_singles(singles, rank);
    }
    {
        // The same through MPI-IO (no mapping) in the smallest buffers.
        setenv("MPIDICT_CHECKPOINT_FAULT", "no-map", 1);
        checkpoint_options small;
        small.buffer_bytes = 1;
        number_map singles(MPI_COMM_WORLD);
        singles.load(dir(root, saved, "singles"), small);
        check_singles(singles, rank);
        text_map texts(MPI_COMM_WORLD);
        texts.load(dir(root, saved, "texts"), small);  // offsets columns checked in buffer pieces
        check_texts(texts, rank);
        unsetenv("MPIDICT_CHECKPOINT_FAULT");
    }
    {
        text_map texts(MPI_COMM_WORLD);
        texts.load(dir(root, saved, "texts"));
        check_texts(texts, rank);
    }
    {
        word_map words(MPI_COMM_WORLD, small_servers());
        words.load(dir(root, saved, "words"));
        check_words(words, rank, size);
    }
    {
        ordered_map ordered(MPI_COMM_WORLD, clocked());
        ordered.load(dir(root, saved, "ordered"));
        check_ordered(ordered, rank);
    }
    {
        pair_map pairs(MPI_COMM_WORLD, clocked());
        checkpoint_options small;
        small.buffer_bytes = 1;
        pairs.load(dir(root, saved, "pairs"), small);
        check_pairs(pairs);
    }
    {
        object_set objects(MPI_COMM_WORLD, small_set());
        objects.load(dir(root, saved, "objects"));
        check_objects(objects);
    }
}

// Rank 0 edits the saved files between collective steps.
void on_rank0(int rank, const std::function<void()>& edit) {
    if (rank == 0)
        edit();
    MPI_Barrier(MPI_COMM_WORLD);
}

// The data file the manifest names first (not a file a failed save left behind).
std::string first_data_file(const std::string& directory) {
    std::ifstream in(directory + "/manifest.json");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const auto at = text.find("\"file\": \"");
    if (at == std::string::npos)
        return {};
    const auto start = at + 9;
    return directory + "/" + text.substr(start, text.find('"', start) - start);
}

void faults(const std::string& root, int rank, int size) {
    const std::string base = root + "/faults-p" + std::to_string(size);
    const std::string good = base + "/good";
    on_rank0(rank, [&] { fs::remove_all(base); });  // what an earlier run left
    {
        number_map numbers(MPI_COMM_WORLD, cyclic_config());
        for (std::uint64_t k = static_cast<std::uint64_t>(rank); k < keys; k += static_cast<std::uint64_t>(size))
            for (std::size_t j = 0; j < count_of(k); ++j)
                numbers.async_insert(k, value_of(k, j));
        numbers.save(good);

        // A save that fails after writing its data keeps the previous checkpoint.
        numbers.async_insert(keys + 1, 5);
        setenv("MPIDICT_CHECKPOINT_FAULT", "fail-before-manifest", 1);
        MPIDICT_EXPECT_ERROR(checkpoint_error, numbers.save(good), "test fault");
        unsetenv("MPIDICT_CHECKPOINT_FAULT");
    }
    {
        number_map restored(MPI_COMM_WORLD, cyclic_config());
        restored.load(good);
        check_numbers(restored, rank);  // the first save's keys exactly: not keys + 1

        // A load into a map that is not empty is refused; nothing changes.
        MPIDICT_EXPECT_ERROR(invalid_argument_error, restored.load(good), "needs an empty map");
        MPIDICT_CHECK(restored.global_size() == keys);
    }

    // Each damaged copy is refused with a message naming the problem; the map stays empty.
    auto copy_of_good = [&](const std::string& name) {
        const std::string target = base + "/" + name;
        on_rank0(rank, [&] {
            fs::remove_all(target);
            fs::copy(good, target);
        });
        return target;
    };
    auto expect_refused = [&](const std::string& directory, std::initializer_list<std::string> words) {
        number_map target(MPI_COMM_WORLD, cyclic_config());
        const std::string message = testing::expect_error<checkpoint_error>(
            "load of a damaged checkpoint", [&] { target.load(directory); }, words, __FILE__, __LINE__);
        if (rank == 0)
            std::printf("refused as expected: %s\n", message.c_str());
        MPIDICT_CHECK(target.global_size() == 0);
    };

    const std::string flipped = copy_of_good("flipped");
    on_rank0(rank, [&] {
        std::fstream file(first_data_file(flipped), std::ios::in | std::ios::out | std::ios::binary);
        file.seekg(3);
        char byte = 0;
        file.read(&byte, 1);
        byte = static_cast<char>(byte ^ 0x10);
        file.seekp(3);
        file.write(&byte, 1);
    });
    expect_refused(flipped, {"is corrupt", "CRC-32", "keys"});

    // The load checks each column as it reads it: the last column (values) of
    // the last shard, and a count of 0 in the first shard's value_counts.
    const std::string flipped_end = copy_of_good("flipped_end");
    on_rank0(rank, [&] {
        std::ifstream in(flipped_end + "/manifest.json");
        const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto column = text.rfind("\"name\": \"values\"");
        const auto offset = text.find("\"offset\": ", column);
        const auto bytes = text.find("\"bytes\": ", column);
        MPIDICT_CHECK(column != std::string::npos && offset != std::string::npos && bytes != std::string::npos);
        const auto last = static_cast<std::streamoff>(std::stoull(text.substr(offset + 10)) +
                                                      std::stoull(text.substr(bytes + 9)) - 1);
        std::fstream data(first_data_file(flipped_end), std::ios::in | std::ios::out | std::ios::binary);
        data.seekg(last);
        char byte = 0;
        data.read(&byte, 1);
        byte = static_cast<char>(byte ^ 0x01);
        data.seekp(last);
        data.write(&byte, 1);
    });
    expect_refused(flipped_end, {"is corrupt", "CRC-32", "values"});
    for (const char* fault : {"", "no-map"}) {
        setenv("MPIDICT_CHECKPOINT_FAULT", fault, 1);
        const std::string zero_count = copy_of_good(std::string("zero_count") + fault);
        on_rank0(rank, [&] {
            std::ifstream in(zero_count + "/manifest.json");
            const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
            const auto column = text.find("\"name\": \"value_counts\"");
            const auto at = text.find("\"offset\": ", column);
            MPIDICT_CHECK(column != std::string::npos && at != std::string::npos);
            const auto offset = std::stoull(text.substr(at + 10));
            std::fstream data(first_data_file(zero_count), std::ios::in | std::ios::out | std::ios::binary);
            data.seekp(static_cast<std::streamoff>(offset + 8 * 5));  // the 6th key's count
            const char zeros[8] = {};
            data.write(zeros, 8);
        });
        expect_refused(zero_count, {"value_counts holds a 0 at entry 5"});
        unsetenv("MPIDICT_CHECKPOINT_FAULT");
    }

    const std::string truncated = copy_of_good("truncated");
    on_rank0(rank, [&] {
        const std::string file = first_data_file(truncated);
        fs::resize_file(file, fs::file_size(file) - 9);
    });
    expect_refused(truncated, {"is truncated"});

    const std::string missing = copy_of_good("missing");
    on_rank0(rank, [&] { fs::remove(first_data_file(missing)); });
    expect_refused(missing, {"is missing"});

    const std::string newer = copy_of_good("newer");
    on_rank0(rank, [&] {
        std::ifstream in(newer + "/manifest.json");
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto at = text.find("\"version\": 1");
        MPIDICT_CHECK(at != std::string::npos);
        text.replace(at, 12, "\"version\": 9");
        std::ofstream(newer + "/manifest.json", std::ios::trunc) << text;
    });
    expect_refused(newer, {"format version 9", "newer"});

    const std::string garbled = copy_of_good("garbled");
    on_rank0(rank, [&] { std::ofstream(garbled + "/manifest.json", std::ios::trunc) << "{\"format\": "; });
    expect_refused(garbled, {"not valid JSON"});

    expect_refused(base + "/nowhere", {"no checkpoint here"});

    // Other types, another container.
    {
        hash_map<std::uint64_t, double> other(MPI_COMM_WORLD);
        MPIDICT_EXPECT_ERROR(checkpoint_error, other.load(good), "saved values are int64 (8 bytes)", "float64");
    }
    {
        skiplist_map<std::uint64_t, std::int64_t> other(MPI_COMM_WORLD);
        MPIDICT_EXPECT_ERROR(checkpoint_error, other.load(good), "holds a hash_map, not a skiplist_map");
    }

    // A map whose capacity cannot take the checkpoint: refused, left empty.
    {
        hash_map_config tight = cyclic_config();
        tight.capacity_values = 10;
        number_map small(MPI_COMM_WORLD, tight);
        MPIDICT_EXPECT_ERROR(checkpoint_error, small.load(good), "capacity limits refused", "left empty");
        MPIDICT_CHECK(small.global_size() == 0);
    }
    {
        // An rma_hash_set too small for the saved objects: refused, left empty.
        object_set objects(MPI_COMM_WORLD, small_set());
        std::vector<std::uint64_t> mine;
        for (std::uint64_t k = static_cast<std::uint64_t>(rank); k < keys; k += static_cast<std::uint64_t>(size))
            mine.push_back(set_object(k));
        objects.insert_if_absent_many(mine);
        objects.save(base + "/objects");
        rma_hash_set_config tiny;
        tiny.slots_per_rank = 64;
        object_set small(MPI_COMM_WORLD, tiny);
        MPIDICT_EXPECT_ERROR(checkpoint_error, small.load(base + "/objects"), "table full", "left empty");
        MPIDICT_CHECK(small.global_size() == 0);
    }
    {
        // A linear_hash_map that refuses some saved keys (too long for its
        // max_key_bytes) part way: what the readers stored is erased again.
        word_map words(MPI_COMM_WORLD, small_servers());
        for (std::uint64_t k = static_cast<std::uint64_t>(rank); k < keys; k += static_cast<std::uint64_t>(size))
            words.async_insert(k % 10 == 9 ? word(k) + std::string(60, 'x') : word(k), k);
        words.save(base + "/words");
        linear_hash_map_config short_keys = small_servers();
        short_keys.max_key_bytes = 40;
        word_map strict(MPI_COMM_WORLD, short_keys);
        MPIDICT_EXPECT_ERROR(checkpoint_error, strict.load(base + "/words"), "loading failed", "left empty");
        MPIDICT_CHECK(strict.global_size() == 0);
    }
    {
        // A skiplist_map too small: the entries it took are erased again.
        ordered_map ordered(MPI_COMM_WORLD, clocked());
        for (std::uint64_t k = static_cast<std::uint64_t>(rank); k < keys; k += static_cast<std::uint64_t>(size))
            ordered.async_insert(ordered_key(k), text_of(k, 0));
        ordered.save(base + "/ordered");
        skiplist_map_config tiny = clocked();
        tiny.node_slots_per_rank = 4;
        ordered_map small(MPI_COMM_WORLD, tiny);
        MPIDICT_EXPECT_ERROR(checkpoint_error, small.load(base + "/ordered"), "refused", "left empty");
        MPIDICT_CHECK(small.global_size() == 0);
    }
}

}  // namespace

int main(int argc, char** argv) {
    return testing::run_mpi_test(argc, argv, [&](int rank, int size) {
        testing::watchdog guard(rank, std::chrono::seconds(150), "mpi_checkpoint");
        const std::string mode = argc > 1 ? argv[1] : "";
        const std::string root = argc > 2 ? argv[2] : "checkpoints";
        if (mode == "save")
            save_all(root, rank, size);
        else if (mode == "load" && argc > 3)
            load_all(root, std::atoi(argv[3]), rank, size);
        else if (mode == "faults")
            faults(root, rank, size);
        else
            throw std::runtime_error("usage: mpi_checkpoint save ROOT | load ROOT P | faults ROOT");
    });
}
