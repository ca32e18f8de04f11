// Composite key and value types (issue 16, item 6): std::pair with a string,
// a trivially copyable std::array value (kept on the byte codec), std::tuple with a string, std::vector, std::array of strings, and a user
// struct that names its members with MPIDICT_FIELDS (padding bytes differ per
// rank, yet equal keys are stored once).  Every rank inserts the same keys;
// each key must be stored once with one value from every rank, and values come
// back equal to what was inserted.

#include <array>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

// doc-begin fields
struct city {
    std::uint8_t country = 0;  // 7 padding bytes follow
    std::uint64_t zip = 0;
    std::string name;
    bool operator==(const city&) const = default;
};
MPIDICT_FIELDS(city, &city::country, &city::zip, &city::name);
// doc-end fields

namespace {

// A city whose padding bytes are `fill`.
city make_city(std::uint8_t country, std::uint64_t zip, unsigned char fill) {
    alignas(city) unsigned char storage[sizeof(city)];
    std::memset(storage, fill, sizeof storage);
    auto* made = new (storage) city;
    made->country = country;
    made->zip = zip;
    made->name = "city-" + std::to_string(zip);
    city copy = *made;
    made->~city();
    return copy;
}

template <class K, class V, class MakeKey, class MakeValue>
void round_trip(int rank, int size, const char* what, MakeKey make_key, MakeValue make_value) {
    mpidict::hash_map<K, V> map(MPI_COMM_WORLD);
    constexpr int keys = 60;
    for (int i = 0; i < keys; ++i)
        map.async_insert(make_key(i, rank), make_value(i));
    map.flush();
    MPIDICT_CHECK_MSG(map.global_size() == keys, what);
    MPIDICT_CHECK_MSG(map.global_value_count() == static_cast<std::size_t>(keys * size), what);
    for (int i = 0; i < keys; ++i) {
        const std::vector<V> values = map.find(make_key(i, rank)).get();
        MPIDICT_CHECK_MSG(values == std::vector<V>(static_cast<std::size_t>(size), make_value(i)), what);
    }
    // The same through gather and a reduce on the key.
    const auto all = map.gather_all();
    MPIDICT_CHECK_MSG(all.size() == static_cast<std::size_t>(keys * size), what);
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_composite_types");
        using u8 = std::uint8_t;
        using u64 = std::uint64_t;
        round_trip<std::pair<std::string, u64>, std::vector<double>>(
            rank, size, "pair<string, u64> -> vector<double>",
            [](int i, int) { return std::pair<std::string, u64>{std::string(static_cast<std::size_t>(i % 5), 'p'), static_cast<u64>(i) * 977}; },
            [](int i) { return std::vector<double>(static_cast<std::size_t>(i % 4), i * 0.5); });
        // A trivially copyable array stays on the byte codec (fixed size) as a value;
        // std::pair is not trivially copyable in libstdc++ and goes part by part.
        static_assert(mpidict::codec<std::array<double, 2>>::fixed_size);
        static_assert(!mpidict::codec<std::pair<u8, double>>::fixed_size);
        round_trip<u64, std::array<double, 2>>(
            rank, size, "u64 -> array<double, 2> (bytes)", [](int i, int) { return static_cast<u64>(i); },
            [](int i) { return std::array<double, 2>{i * 0.25, -i * 0.5}; });
        round_trip<u64, std::pair<u8, double>>(
            rank, size, "u64 -> pair<u8, double> (parts)", [](int i, int) { return static_cast<u64>(i); },
            [](int i) { return std::pair<u8, double>{static_cast<u8>(i), i * 0.25}; });
        round_trip<std::tuple<std::string, std::uint32_t>, std::tuple<int, std::string>>(
            rank, size, "tuple<string, u32> -> tuple<int, string>",
            [](int i, int) { return std::tuple<std::string, std::uint32_t>{"k" + std::to_string(i), i}; },
            [](int i) { return std::tuple<int, std::string>{-i, std::string(static_cast<std::size_t>(i), 'v')}; });
        round_trip<std::vector<std::uint32_t>, std::array<std::string, 2>>(
            rank, size, "vector<u32> -> array<string, 2>",
            [](int i, int) { return std::vector<std::uint32_t>(static_cast<std::size_t>(i % 7 + 1), static_cast<std::uint32_t>(i)); },
            [](int i) { return std::array<std::string, 2>{std::to_string(i), ""}; });
        round_trip<city, std::pair<std::string, std::vector<std::string>>>(
            rank, size, "struct with MPIDICT_FIELDS (padding differs per rank) -> pair<string, vector<string>>",
            [](int i, int r) { return make_city(static_cast<u8>(i % 3), static_cast<u64>(i), static_cast<unsigned char>(0x21 * (r + 1))); },
            [](int i) { return std::pair<std::string, std::vector<std::string>>{"p", {std::to_string(i), "x"}}; });

        // Payload bytes of a composite count its parts' bytes.
        {
            mpidict::hash_map_config settings;
            settings.capacity_bytes = 1000;
            mpidict::hash_map<std::tuple<std::string, std::uint32_t>, std::vector<std::uint64_t>> map(MPI_COMM_WORLD,
                                                                                                        settings);
            const mpidict::target_rank root{0};
            if (rank == 0) {
                const std::vector<std::uint64_t> value(10, 7);  // 80 bytes
                const auto result = map.insert(root, {std::string(16, 'k'), 1u}, std::span(&value, 1)).get();
                MPIDICT_CHECK(result.stored == 1);
                MPIDICT_CHECK_MSG(map.local_payload_bytes() == 16 + 4 + 80, std::to_string(map.local_payload_bytes()));
            }
            map.flush();
            map.destroy();
        }
        // A malformed vector length is refused, not allocated.
        {
            std::byte bytes[8] = {};
            const std::uint32_t huge = 0xfffffff0u;
            std::memcpy(bytes, &huge, 4);
            mpidict::byte_reader reader(bytes, sizeof bytes);
            bool refused = false;
            try {
                (void)mpidict::codec<std::vector<std::uint64_t>>::decode(reader);
            } catch (const mpidict::decode_error&) {
                refused = true;
            }
            MPIDICT_CHECK(refused);
        }
    });
}
