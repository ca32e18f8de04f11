// Key types (issue 16, item 1).  A struct with padding used to be hashed by its
// bytes, so two ranks inserting the same logical key (with different garbage in
// the padding) stored it twice: global_size() == ranks instead of 1.  Now such a
// key does not compile with the default hash (tests/compile_fail/), and with a
// hash of its members it works: every rank inserts the same keys from objects
// whose padding holds rank-specific bytes, and each key is stored once.
// Padding-free aggregates (std::array, a struct of same-width integers) work
// with the default hash.  (Composite keys -- pairs, tuples, vectors, structs
// naming their members -- are in mpi_hash_map_composite_types.)

#include <array>
#include <cstdint>
#include <cstring>
#include <new>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

// doc-begin member_hash
struct padded_key {
    std::uint8_t a;   // 7 padding bytes follow
    std::uint64_t b;
    friend bool operator==(const padded_key& x, const padded_key& y) { return x.a == y.a && x.b == y.b; }
};
static_assert(!std::has_unique_object_representations_v<padded_key>);

struct padded_key_hash {
    std::uint64_t operator()(const padded_key& key) const { return mpidict::mix64(key.b * 257 + key.a); }
};
// doc-end member_hash

struct packed_key {
    std::uint32_t x;
    std::uint32_t y;
    friend bool operator==(const packed_key&, const packed_key&) = default;
};
static_assert(std::has_unique_object_representations_v<packed_key>);

// A padded_key whose padding bytes are `fill` (as a key built in a reused buffer would have).
padded_key make_padded(std::uint8_t a, std::uint64_t b, unsigned char fill) {
    alignas(padded_key) unsigned char storage[sizeof(padded_key)];
    std::memset(storage, fill, sizeof storage);
    auto* key = new (storage) padded_key;  // default-initialised: the padding keeps `fill`
    key->a = a;
    key->b = b;
    return *key;
}

template <class Map, class Key>
void every_rank_inserts_the_same(Map& map, const std::vector<Key>& keys, int rank, int size, const char* what) {
    for (const Key& key : keys)
        map.async_insert(key, rank);
    map.flush();
    MPIDICT_CHECK_MSG(map.global_size() == keys.size(), what);
    MPIDICT_CHECK_MSG(map.global_value_count() == keys.size() * static_cast<std::size_t>(size), what);
    for (const Key& key : keys) {
        const std::vector<int> values = map.find(key).get();
        MPIDICT_CHECK_MSG(values.size() == static_cast<std::size_t>(size), what);
    }
    map.flush();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(60), "mpi_hash_map_key_types");
        {
            std::vector<padded_key> keys;
            for (std::uint64_t i = 0; i < 200; ++i)
                keys.push_back(make_padded(static_cast<std::uint8_t>(i % 7), i * 1000003, static_cast<unsigned char>(0x11 * (rank + 1))));
            // doc-begin member_hash_map
            mpidict::hash_map<padded_key, int, padded_key_hash> map(MPI_COMM_WORLD);
            // doc-end member_hash_map
            every_rank_inserts_the_same(map, keys, rank, size, "padded struct with a member hash");
            map.destroy();
        }
        {
            std::vector<std::array<std::uint32_t, 3>> keys;
            for (std::uint32_t i = 0; i < 200; ++i)
                keys.push_back({i, i * 7, 42});
            mpidict::hash_map<std::array<std::uint32_t, 3>, int> map(MPI_COMM_WORLD);
            every_rank_inserts_the_same(map, keys, rank, size, "std::array key");
            map.destroy();
        }
        {
            std::vector<packed_key> keys;
            for (std::uint32_t i = 0; i < 200; ++i)
                keys.push_back({i, i ^ 0x5555u});
            mpidict::hash_map<packed_key, int> map(MPI_COMM_WORLD);
            every_rank_inserts_the_same(map, keys, rank, size, "padding-free struct");
            map.destroy();
        }
    });
}
