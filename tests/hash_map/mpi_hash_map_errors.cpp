// Bad input raises an mpidict::error subclass on the calling rank, with a message
// that names the offending number; afterwards the map still works and nothing it
// stored is lost, and no request slot leaks (outstanding_requests() returns to 0).
//
//   value length != fixed_value_bytes          invalid_argument_error
//   value larger than one message              invalid_argument_error
//   target rank outside the communicator       invalid_argument_error (raised on one rank only)
//   any call after destroy()                   use_after_destroy_error
//   cyclic placement with non-integer keys     invalid_argument_error
//   ranks disagree on buffer_bytes / visitors  collective_mismatch_error on every rank (p >= 2)

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::string>;
using mpidict::collective_mismatch_error;
using mpidict::invalid_argument_error;
using mpidict::use_after_destroy_error;

constexpr std::size_t buffer_bytes = 1024;
constexpr std::size_t fixed_bytes = 8;
constexpr std::uint64_t baseline_keys = 30;

std::uint64_t baseline_key(int rank, std::uint64_t i) { return static_cast<std::uint64_t>(rank) * 100 + i; }
std::string baseline_value(std::uint64_t key) {
    std::string value = "v" + std::to_string(key);
    value.resize(fixed_bytes, '.');
    return value;
}

void store_baseline(map_type& map, int rank) {
    for (std::uint64_t i = 0; i < baseline_keys; ++i)
        map.async_insert(baseline_key(rank, i), baseline_value(baseline_key(rank, i)));
    map.flush();
}

// Collective.  Every rank's baseline is intact, seen from every rank, and no
// request slot is left behind.
void check_intact(map_type& map, int size, const char* after) {
    map.flush();
    std::vector<std::uint64_t> keys;
    std::vector<mpidict::request<std::vector<std::string>>> finds;
    for (int origin = 0; origin < size; ++origin)
        for (std::uint64_t i = 0; i < baseline_keys; ++i) {
            keys.push_back(baseline_key(origin, i));
            finds.push_back(map.find(keys.back()));
        }
    std::size_t wrong = 0;
    for (std::size_t n = 0; n < keys.size(); ++n)
        if (finds[n].get() != std::vector<std::string>{baseline_value(keys[n])})
            ++wrong;
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " baseline keys lost after " + after);
    map.flush();
    MPIDICT_CHECK_MSG(map.engine().outstanding_requests() == 0,
                      std::string("request slots leaked after ") + after + ": " +
                          std::to_string(map.engine().outstanding_requests()) + " outstanding");
    MPIDICT_CHECK(map.global_value_count() == baseline_keys * static_cast<std::size_t>(size));
}

// The map still accepts and answers operations.
void check_usable(map_type& map, int rank, std::uint64_t key, const std::string& value) {
    MPIDICT_CHECK(map.insert(key, value).get().stored == 1);
    MPIDICT_CHECK(map.find(key).get() == std::vector<std::string>{value});
    MPIDICT_CHECK(map.take(key).get() == std::vector<std::string>{value});
    (void)rank;
}

std::string unused_visitor(map_type::visit_context&, const std::uint64_t&, std::vector<std::string>& values,
                           const std::uint32_t&) {
    return std::to_string(values.size());
}

void wrong_value_length(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.runtime.buffer_bytes = buffer_bytes;
    settings.fixed_value_bytes = fixed_bytes;
    map_type map(MPI_COMM_WORLD, settings);
    store_baseline(map, rank);

    const std::uint64_t key = 90000 + static_cast<std::uint64_t>(rank);
    const std::string bad(13, 'x');
    const std::string good(fixed_bytes, 'g');
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_insert(key, bad), "13", "8");
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert(key, bad), "13", "8");
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert_if_absent(key, bad), "13", "8");
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_insert_if_absent(key, bad), "13", "8");
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_insert(key, std::string()), "0", "8");
    // A span with one bad value is refused as a whole: the good value before it is not stored.
    const std::vector<std::string> mixed = {good, bad};
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_insert(key, std::span<const std::string>(mixed)), "13");
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert(key, std::span<const std::string>(mixed)), "13");
    map.flush();
    MPIDICT_CHECK(map.find(key).get().empty());
    check_intact(map, size, "wrong value length");
    check_usable(map, rank, key, good);
    map.destroy();
}

void value_too_large(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.runtime.buffer_bytes = buffer_bytes;
    map_type map(MPI_COMM_WORLD, settings);
    store_baseline(map, rank);

    // An insert record is {u32 slot, u32 count, u64 key, u32 length, bytes}: 20 + length;
    // one message carries at most buffer_bytes - 12 = 1012 record bytes.
    const std::uint64_t key = 91000 + static_cast<std::uint64_t>(rank);
    const std::string huge(2000, 'h');
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_insert(key, huge), "2020", "1024");
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert(key, huge), "2020", "1024");
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert(mpidict::target_rank{0}, key, std::span<const std::string>(&huge, 1)),
                         "2020", "1024");
    // insert_if_absent: {u32 slot, u64 key, u32 length, bytes} = 16 + 2000.
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert_if_absent(key, huge), "2016", "1024");
    // Several values that each fit but not together: 8 + 8 + 2 * (4 + 600) = 1224.
    const std::vector<std::string> two = {std::string(600, 'a'), std::string(600, 'b')};
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert(key, std::span<const std::string>(two)), "1224", "1024");
    // The boundary: 20 + 992 = 1012 fits exactly, 20 + 993 does not.
    MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_insert(key, std::string(993, 'e')), "1013", "1024");
    map.flush();
    MPIDICT_CHECK(map.find(key).get().empty());
    const std::string largest(992, 'm');
    MPIDICT_CHECK(map.insert(key, largest).get().stored == 1);
    MPIDICT_CHECK(map.find(key).get() == std::vector<std::string>{largest});
    MPIDICT_CHECK(map.erase(key).get() == 1);
    check_intact(map, size, "value too large");
    map.destroy();
}

void target_out_of_range(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.runtime.buffer_bytes = buffer_bytes;
    map_type map(MPI_COMM_WORLD, settings);
    store_baseline(map, rank);
    const auto visitor = map.register_visitor("unused", &unused_visitor);
    const std::string value(5, 'v');
    const std::string ranks = "the communicator of " + std::to_string(size) + (size == 1 ? " rank" : " ranks");

    // Only the last rank makes the mistakes; the others go straight on to flush.
    if (rank == size - 1) {
        const mpidict::target_rank past{size};
        const mpidict::target_rank negative{-1};
        const mpidict::target_rank far{size + 5};
        const std::string past_text = "target rank " + std::to_string(size);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_insert(past, 1, value), past_text, ranks);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert(far, 1, std::span<const std::string>(&value, 1)),
                             "target rank " + std::to_string(size + 5), ranks);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.find(negative, 1), "target rank -1", ranks);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.take(past, 1), past_text);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.erase(past, 1), past_text);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_erase(negative, 1), "target rank -1");
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.insert_if_absent(past, 1, value), past_text);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.visit(past, 1, visitor, std::uint32_t{0}), past_text);
        MPIDICT_EXPECT_ERROR(invalid_argument_error, map.async_visit(negative, 1, visitor, std::uint32_t{0}),
                             "target rank -1");
        MPIDICT_CHECK_MSG(map.engine().outstanding_requests() == 0,
                          "request slots leaked by refused calls: " + std::to_string(map.engine().outstanding_requests()));
    }
    check_intact(map, size, "target rank out of range");
    check_usable(map, rank, 92000 + static_cast<std::uint64_t>(rank), value);
    map.destroy();
}

void use_after_destroy(int rank, int size) {
    mpidict::hash_map_config settings;
    settings.runtime.buffer_bytes = buffer_bytes;
    map_type map(MPI_COMM_WORLD, settings);
    store_baseline(map, rank);
    map.destroy();
    map.destroy();  // a second destroy is a no-op
    const std::string value = "x";
    MPIDICT_EXPECT_ERROR(use_after_destroy_error, map.async_insert(1, value), "destroy");
    MPIDICT_EXPECT_ERROR(use_after_destroy_error, map.insert(1, value), "destroy");
    MPIDICT_EXPECT_ERROR(use_after_destroy_error, map.find(1), "destroy");
    MPIDICT_EXPECT_ERROR(use_after_destroy_error, map.take(1), "destroy");
    MPIDICT_EXPECT_ERROR(use_after_destroy_error, map.erase(1), "destroy");
    MPIDICT_EXPECT_ERROR(use_after_destroy_error, map.insert_if_absent(1, value), "destroy");
    MPIDICT_EXPECT_ERROR(use_after_destroy_error, map.flush(), "destroy");
    MPIDICT_EXPECT_ERROR(use_after_destroy_error, map.register_visitor("late", &unused_visitor), "destroy");
    const std::uint64_t keys[] = {1, 2};
    MPIDICT_EXPECT_ERROR(use_after_destroy_error,
                         map.find_many(std::span<const std::uint64_t>(keys), 1,
                                       [](std::size_t, std::span<const std::string>) {}),
                         "destroy");
    // A fresh map over the same communicator works (the destroyed one let go of its own).
    mpidict::hash_map_config fresh_settings;
    fresh_settings.runtime.buffer_bytes = buffer_bytes;
    map_type fresh(MPI_COMM_WORLD, fresh_settings);
    store_baseline(fresh, rank);
    check_intact(fresh, size, "use after destroy");
    fresh.destroy();
}

void cyclic_needs_integers(int rank, int size) {
    mpidict::hash_map_config cyclic;
    cyclic.place = mpidict::placement::cyclic;
    MPIDICT_EXPECT_ERROR(invalid_argument_error,
                         (mpidict::hash_map<std::string, int>(MPI_COMM_WORLD, cyclic)), "cyclic");
    using pair_key = std::array<std::uint32_t, 2>;
    MPIDICT_EXPECT_ERROR(invalid_argument_error, (mpidict::hash_map<pair_key, int>(MPI_COMM_WORLD, cyclic)), "cyclic");
    // Integer keys are fine, and a map made afterwards works.
    mpidict::hash_map<std::int32_t, int> integers(MPI_COMM_WORLD, cyclic);
    integers.async_insert(rank, rank);
    integers.flush();
    MPIDICT_CHECK(integers.local_find(rank) == std::vector<int>{rank});
    integers.destroy();
    (void)size;
}

void collective_mismatches(int rank, int size) {
    if (size < 2)
        return;
    // Ranks disagree on buffer_bytes: every rank learns, naming the setting and its value.
    {
        mpidict::hash_map_config settings;
        settings.runtime.buffer_bytes = rank == 0 ? 1024 : 2048;
        MPIDICT_EXPECT_ERROR(collective_mismatch_error, (map_type(MPI_COMM_WORLD, settings)), "buffer_bytes",
                             rank == 0 ? "1024" : "2048");
    }
    // Ranks register visitors under different names: every rank raises; nothing was
    // registered, so a matching registration afterwards works.
    mpidict::hash_map_config settings;
    settings.runtime.buffer_bytes = buffer_bytes;
    map_type map(MPI_COMM_WORLD, settings);
    store_baseline(map, rank);
    const std::string name = rank == 0 ? "alpha" : "beta";
    MPIDICT_EXPECT_ERROR(collective_mismatch_error, map.register_visitor(name, &unused_visitor), "visitor", name);
    check_intact(map, size, "a mismatched visitor registration");
    const auto counter = map.register_visitor("count", &unused_visitor);
    const std::uint64_t key = baseline_key((rank + 1) % size, 3);
    MPIDICT_CHECK(map.visit(key, counter, std::uint32_t{0}).get() == "1");
    check_intact(map, size, "the registration that matched");
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_errors");
        wrong_value_length(rank, size);
        value_too_large(rank, size);
        target_out_of_range(rank, size);
        use_after_destroy(rank, size);
        cyclic_needs_integers(rank, size);
        collective_mismatches(rank, size);
    });
}
