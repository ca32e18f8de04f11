// Callable visitors: async_visit / async_visit_if_contains / visit with any
// stateless callable and any number of arguments, nothing registered; values
// changed in place, appended, cleared; the context form chaining further
// visits; failures reported to the origin; byte-string payload accounting and
// capacity refusals of appended values.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::int64_t>;

// A function object that starts the next visit itself (the context form).
struct chain {
    void operator()(map_type::visit_context& ctx, const std::uint64_t& key, map_type::values_ref& values,
                    int hops) const {
        values.push_back(hops);
        if (hops > 0)
            ctx.map.async_visit(key + 1, chain{}, hops - 1);
    }
};

void in_place(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    const auto n = static_cast<std::int64_t>(size);
    // A counter from every rank: the key is created by the first push_back.
    for (std::uint64_t key = 0; key < 100; ++key)
        map.async_visit(key, [](const std::uint64_t&, map_type::values_ref& values, int by) {
            if (values.empty())
                values.push_back(0);
            values[0] += by;
        }, 2);
    map.flush();
    for (std::uint64_t key = 0; key < 100; ++key)
        MPIDICT_CHECK(map.find(key).get() == std::vector<std::int64_t>{2 * n});

    // In place over several values, with a generic lambda and two arguments.
    const std::uint64_t mine = 1000 + static_cast<std::uint64_t>(rank);
    const std::int64_t three[] = {1, 2, 3};
    (void)map.insert(mine, std::span<const std::int64_t>(three)).get();
    map.async_visit(mine, [](const auto&, auto& values, std::int64_t times, std::int64_t plus) {
        for (auto& value : values)
            value = value * times + plus;
    }, std::int64_t{10}, std::int64_t{1});
    map.flush();
    MPIDICT_CHECK(map.find(mine).get() == (std::vector<std::int64_t>{11, 21, 31}));

    // The request form returns the result; a string literal travels as std::string.
    const std::string described = map.visit(mine, [](const std::uint64_t& key, const map_type::values_ref& values,
                                                      const std::string& tag, double scale) {
        return tag + std::to_string(key) + ":" + std::to_string(static_cast<long>(values.size() * scale));
    }, "n of ", 2.0).get();
    MPIDICT_CHECK_MSG(described == "n of " + std::to_string(mine) + ":6", described);
    const std::int64_t sum = map.visit(mine, [](const std::uint64_t&, map_type::values_ref& values) {
        std::int64_t total = 0;
        for (const std::int64_t value : values)
            total += value;
        return total;
    }).get();
    MPIDICT_CHECK(sum == 63);

    // if_contains skips absent keys; the plain form runs and may create.
    const std::uint64_t absent = 5000 + static_cast<std::uint64_t>(rank);
    auto add_one = [](const std::uint64_t&, map_type::values_ref& values) { values.push_back(1); };
    map.async_visit_if_contains(absent, add_one);
    map.async_visit_if_contains(mine, add_one);
    map.flush();
    MPIDICT_CHECK(map.find(absent).get().empty());
    MPIDICT_CHECK(map.find(mine).get() == (std::vector<std::int64_t>{11, 21, 31, 1}));
    map.async_visit(absent, add_one);
    map.flush();
    MPIDICT_CHECK(map.find(absent).get() == std::vector<std::int64_t>{1});

    // clear() removes the key.
    map.async_visit(absent, [](const std::uint64_t&, map_type::values_ref& values) { values.clear(); });
    map.flush();
    MPIDICT_CHECK(!map.find(absent).get().size());
    map.flush();
    MPIDICT_CHECK(map.global_size() == 100 + static_cast<std::size_t>(size));

    // The context form: a chain of 5 visits started by one.
    const std::uint64_t start = 100000 + 100 * static_cast<std::uint64_t>(rank);
    map.async_visit(start, chain{}, 4);
    map.flush();
    for (int hop = 0; hop < 5; ++hop)
        MPIDICT_CHECK(map.find(start + static_cast<std::uint64_t>(hop)).get() == std::vector<std::int64_t>{4 - hop});
    map.destroy();
}

void failures(int rank, int size) {
    map_type map(MPI_COMM_WORLD);
    const std::uint64_t key = 77 + static_cast<std::uint64_t>(rank);
    auto picky = [](const std::uint64_t&, map_type::values_ref& values, std::int64_t amount) {
        values.push_back(amount);
        if (amount < 0)
            throw std::invalid_argument("negative amount");
        return values.size();
    };
    map.async_visit(key, picky, std::int64_t{-1});
    map.async_visit(key, picky, std::int64_t{5});
    map.flush();
    MPIDICT_CHECK(map.async_visit_errors() == 1);
    MPIDICT_CHECK_MSG(map.async_visit_error_message().find("negative amount") != std::string::npos &&
                          map.async_visit_error_message().find("changes it made before throwing stay") !=
                              std::string::npos,
                      map.async_visit_error_message());
    // The value appended before the throw stays.
    MPIDICT_CHECK(map.find(key).get() == (std::vector<std::int64_t>{-1, 5}));
    bool thrown = false;
    try {
        (void)map.visit(key, picky, std::int64_t{-2}).get();
    } catch (const mpidict::invalid_argument_error& problem) {
        thrown = std::string(problem.what()).find("negative amount") != std::string::npos;
    }
    MPIDICT_CHECK(thrown);
    MPIDICT_CHECK(map.visit(key, picky, std::int64_t{1}).get() == 4u);
    map.flush();
    (void)size;
    map.destroy();
}

void strings_and_capacity(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.capacity_values = 3;
    using string_map = mpidict::hash_map<std::uint64_t, std::string>;
    string_map map(MPI_COMM_WORLD, settings);
    const mpidict::target_rank root{0};
    if (rank == 0) {
        const std::string first = "abc";
        (void)map.insert(root, 1, std::span<const std::string>(&first, 1)).get();
        (void)map.insert(root, 2, std::span<const std::string>(&first, 1)).get();
    }
    map.flush();
    const std::size_t before = map.local_payload_bytes();
    if (rank == 0)
        map.async_visit(root, 1, [](const std::uint64_t&, string_map::values_ref& values) {
            values[0] = "ABCD";              // in place, one byte longer
            values.push_back("xyz");         // stored: rank 0's third value
            for (int i = 0; i < 4; ++i)
                values.push_back("refused");  // past capacity_values = 3 (keys 1 and 2 hold three now)
        });
    map.flush();
    if (rank == 0) {
        MPIDICT_CHECK(map.local_find(1) == (std::vector<std::string>{"ABCD", "xyz"}));
        MPIDICT_CHECK_MSG(map.local_payload_bytes() == before + 1 + 3,
                          std::to_string(map.local_payload_bytes()) + " vs " + std::to_string(before));
        MPIDICT_CHECK_MSG(map.async_rejected() == 4, std::to_string(map.async_rejected()));
    }
    (void)size;
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_visit_callable");
        in_place(rank, size);
        failures(rank, size);
        strings_and_capacity(rank, size);
    });
}
