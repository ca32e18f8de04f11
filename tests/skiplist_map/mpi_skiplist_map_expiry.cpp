// skiplist_map expiry as durations and in batches (issue 49, item 5), at 1-4
// ranks, in every consistency mode, on a simulated expiry_clock (every rank
// moves it at the same collective points, so what has expired is exact):
//   - insert / async_insert / insert_if_absent with a TTL (std::chrono
//     duration) or a deadline; ttl(key) reads the time left (Redis PTTL:
//     rounded up to milliseconds, ttl_no_key, ttl_no_expiry);
//   - insert_many with one TTL or deadline for the batch (the sorted path in
//     sequential and none, point records in total_order), replacing keys and
//     their deadlines; an insert without one clears the deadline;
//   - a deadline already passed stores nothing and changes nothing
//     (stored = false, insert_many stored = 0), the old value stays;
//   - expire / expire_at / persist: true if the key was there (persist: had a
//     deadline); a deadline already passed removes the key;
//   - the clock moves: exactly the due keys are gone (find, range, global_size);
//   - bad input (an infinite TTL, expire_at without a deadline, a key too
//     long with a past deadline, insert_many of unequal lengths) throws on the
//     rank that made it.

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

using mode_type = mpidict::skiplist_consistency;
using clock_type = std::chrono::system_clock;
using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;

const char* name_of(mode_type mode) {
    return mode == mode_type::total_order ? "total_order" : mode == mode_type::sequential ? "sequential" : "none";
}

template <class Function>
bool throws_invalid(Function&& function) {
    try {
        function();
    } catch (const mpidict::invalid_argument_error&) {
        return true;
    }
    return false;
}

void run(int rank, int size, mode_type mode) {
    const std::string where = std::string(" (mode ") + name_of(mode) + ", rank " + std::to_string(rank) + ")";
    const clock_type::time_point start = clock_type::time_point(seconds(1356998400));  // 2013-01-01 UTC
    clock_type::time_point simulated = start;
    mpidict::skiplist_map_config config;
    config.granularity = 8;
    config.consistency = mode;
    config.max_key_bytes = 8;
    config.max_value_bytes = 8;
    config.expiry_clock = [&simulated] { return simulated; };
    mpidict::skiplist_map<std::int64_t, std::uint64_t> map(MPI_COMM_WORLD, config);
    // This rank's keys: i * size + rank.
    auto key_of = [&](std::int64_t i) { return i * size + rank; };
    // A ttl read right after the write, on an unmoved clock: the TTL itself
    // (the deadline is a double of seconds since 1970: allow 1 ms of rounding).
    auto ttl_is = [&](std::int64_t key, milliseconds expected, const char* what) {
        const milliseconds got = map.ttl(key).get();
        MPIDICT_CHECK_MSG(got >= expected && got <= expected + milliseconds(1),
                          std::string(what) + ": ttl " + std::to_string(got.count()) + " ms, expected " +
                              std::to_string(expected.count()) + where);
    };

    // Point forms with a TTL: keys 0-99 (i % 4: 1, 2, 3 minutes, none).
    for (std::int64_t i = 0; i < 100; ++i) {
        const std::int64_t key = key_of(i);
        const auto value = static_cast<std::uint64_t>(key) * 3;
        switch (i % 4) {
        case 0:
            MPIDICT_CHECK_MSG(map.insert(key, value, minutes(1)).get().stored, "insert with a TTL" + where);
            break;
        case 1:
            map.async_insert(key, value, seconds(120));
            break;
        case 2:
            MPIDICT_CHECK_MSG(map.insert_if_absent(key, value, std::chrono::duration<double>(180.0)).get(),
                              "insert_if_absent with a TTL" + where);
            break;
        default:
            map.insert(key, value).get();
        }
    }
    map.flush();
    ttl_is(key_of(0), minutes(1), "insert(key, value, 1 min)");
    ttl_is(key_of(1), minutes(2), "async_insert(key, value, 120 s)");
    ttl_is(key_of(2), minutes(3), "insert_if_absent(key, value, 180.0 s)");
    MPIDICT_CHECK_MSG(map.ttl(key_of(3)).get() == mpidict::ttl_no_expiry, "ttl of a key without expiry" + where);
    MPIDICT_CHECK_MSG(map.ttl(key_of(100000)).get() == mpidict::ttl_no_key, "ttl of an absent key" + where);

    // insert_many with one TTL (keys 1000-1599, replacing 1000-1099 which a
    // first batch stored with a deadline) and with a deadline (2000-2299).
    std::vector<std::int64_t> batch, other;
    std::vector<std::uint64_t> values, other_values;
    for (std::int64_t i = 1000; i < 1600; ++i) {
        batch.push_back(key_of(i));
        values.push_back(static_cast<std::uint64_t>(i));
    }
    for (std::int64_t i = 2000; i < 2300; ++i) {
        other.push_back(key_of(i));
        other_values.push_back(static_cast<std::uint64_t>(i) + 7);
    }
    auto first = map.insert_many(std::span<const std::int64_t>(batch).first(100),
                                 std::span<const std::uint64_t>(values).first(100), minutes(10));
    MPIDICT_CHECK_MSG(first.stored == 100 && first.replaced == 0, "insert_many with a TTL (fresh)" + where);
    auto ttl_batch = map.insert_many(std::span<const std::int64_t>(batch), std::span<const std::uint64_t>(values),
                                     minutes(2));
    MPIDICT_CHECK_MSG(ttl_batch.stored == 600 && ttl_batch.replaced == 100 && ttl_batch.refused == 0,
                      "insert_many with a TTL: stored " + std::to_string(ttl_batch.stored) + ", replaced " +
                          std::to_string(ttl_batch.replaced) + where);
    auto deadline_batch = map.insert_many(std::span<const std::int64_t>(other),
                                          std::span<const std::uint64_t>(other_values), start + minutes(3));
    MPIDICT_CHECK_MSG(deadline_batch.stored == 300, "insert_many with a deadline" + where);
    ttl_is(key_of(1000), minutes(2), "insert_many's TTL replaced the earlier one");
    ttl_is(key_of(1599), minutes(2), "insert_many with a TTL");
    ttl_is(key_of(2150), minutes(3), "insert_many with a deadline");
    // One key, on the point path of insert_many, with a TTL.
    const std::int64_t single_key = key_of(2500);
    const std::uint64_t single_value = 11;
    MPIDICT_CHECK_MSG(map.insert_many(std::span<const std::int64_t>(&single_key, 1),
                                      std::span<const std::uint64_t>(&single_value, 1), seconds(30))
                              .stored == 1,
                      "insert_many of one key with a TTL" + where);
    ttl_is(single_key, seconds(30), "insert_many of one key");
    // An insert without expiry clears the deadline (Redis SET); so does insert_many.
    map.insert(key_of(0), 5).get();
    MPIDICT_CHECK_MSG(map.ttl(key_of(0)).get() == mpidict::ttl_no_expiry, "insert cleared the deadline" + where);
    (void)map.insert_many(std::span<const std::int64_t>(batch).subspan(500),
                          std::span<const std::uint64_t>(values).subspan(500));
    MPIDICT_CHECK_MSG(map.ttl(key_of(1550)).get() == mpidict::ttl_no_expiry,
                      "insert_many without expiry cleared the deadline" + where);

    // A deadline already passed: nothing stored, nothing changed.
    const std::int64_t kept = key_of(3000), absent = key_of(3001);
    map.insert(kept, 42).get();
    const auto late = map.insert(kept, 43, start - seconds(1)).get();
    MPIDICT_CHECK_MSG(!late.stored && !late.replaced, "an insert whose deadline passed reports stored" + where);
    MPIDICT_CHECK_MSG(!map.insert(absent, 1, seconds(0)).get().stored, "insert with a TTL of 0 stored" + where);
    MPIDICT_CHECK_MSG(!map.insert(absent, 1, seconds(-5)).get().stored, "insert with a negative TTL stored" + where);
    MPIDICT_CHECK_MSG(!map.insert_if_absent(absent, 1, start).get(), "insert_if_absent at now stored" + where);
    map.async_insert(absent, 1, start - minutes(1));
    std::vector<std::int64_t> late_keys{absent, kept, key_of(3002)};
    std::vector<std::uint64_t> late_values{1, 2, 3};
    const auto late_many = map.insert_many(std::span<const std::int64_t>(late_keys),
                                           std::span<const std::uint64_t>(late_values), milliseconds(-1));
    MPIDICT_CHECK_MSG(late_many.stored == 0 && late_many.refused == 0 && late_many.refused_indexes.empty(),
                      "insert_many whose deadline passed stored " + std::to_string(late_many.stored) + where);
    map.flush();
    MPIDICT_CHECK_MSG(map.find(kept).get() == std::optional<std::uint64_t>(42), "the old value stays" + where);
    MPIDICT_CHECK_MSG(!map.find(absent).get() && !map.find(key_of(3002)).get(),
                      "an insert whose deadline passed stored something" + where);

    // expire / expire_at / persist.
    MPIDICT_CHECK_MSG(!map.expire(absent, minutes(5)).get(), "expire of an absent key" + where);
    MPIDICT_CHECK_MSG(map.expire(kept, minutes(5)).get(), "expire of a present key" + where);
    ttl_is(kept, minutes(5), "expire(5 min)");
    MPIDICT_CHECK_MSG(map.expire_at(kept, start + minutes(4)).get(), "expire_at" + where);
    ttl_is(kept, minutes(4), "expire_at(start + 4 min)");
    MPIDICT_CHECK_MSG(map.persist(kept).get(), "persist of a key with a deadline" + where);
    MPIDICT_CHECK_MSG(map.ttl(kept).get() == mpidict::ttl_no_expiry, "ttl after persist" + where);
    MPIDICT_CHECK_MSG(!map.persist(kept).get(), "persist of a key without a deadline" + where);
    MPIDICT_CHECK_MSG(!map.persist(absent).get(), "persist of an absent key" + where);
    MPIDICT_CHECK_MSG(map.find(kept).get() == std::optional<std::uint64_t>(42), "expire changed the value" + where);
    const std::int64_t doomed = key_of(3003);
    map.insert(doomed, 9).get();
    MPIDICT_CHECK_MSG(map.expire(doomed, seconds(0)).get(), "expire(0) of a present key" + where);
    MPIDICT_CHECK_MSG(!map.find(doomed).get() && map.ttl(doomed).get() == mpidict::ttl_no_key,
                      "expire(0) left the key" + where);
    map.insert(doomed, 9).get();
    MPIDICT_CHECK_MSG(map.expire_at(doomed, start - minutes(1)).get() && !map.find(doomed).get(),
                      "expire_at in the past left the key" + where);

    // Bad input, on this rank.
    MPIDICT_CHECK_MSG(throws_invalid([&] {
                          map.insert(key_of(4000), 1, std::chrono::duration<double>(
                                                          std::numeric_limits<double>::infinity()));
                      }),
                      "an infinite TTL was accepted" + where);
    MPIDICT_CHECK_MSG(throws_invalid([&] { (void)map.expire_at(kept, clock_type::time_point{}); }),
                      "expire_at without a deadline was accepted" + where);
    MPIDICT_CHECK_MSG(throws_invalid([&] {
                          (void)map.insert_many(std::span<const std::int64_t>(late_keys),
                                                std::span<const std::uint64_t>(late_values).first(2), minutes(1));
                      }),
                      "insert_many of unequal lengths with a TTL was accepted" + where);
    {
        mpidict::skiplist_map_config small = config;
        small.max_value_bytes = 4;
        mpidict::skiplist_map<std::int64_t, std::string> text(MPI_COMM_WORLD, small);
        MPIDICT_CHECK_MSG(throws_invalid([&] { (void)text.insert(1, "too long", seconds(-1)); }),
                          "a value too long with a past deadline was accepted" + where);
        MPIDICT_CHECK_MSG(throws_invalid([&] { (void)text.insert(1, "too long", seconds(5)); }),
                          "a value too long with a TTL was accepted" + where);
        text.destroy();
    }
    map.flush();

    // The clock moves to 1, 2, 3 and 11 minutes: exactly the due keys go
    // (key 0 was re-inserted without a deadline; the one-key batch, 30 s, goes first).
    auto live_of_mine = [&](int elapsed_minutes) {
        std::int64_t live = 0;
        for (std::int64_t i = 0; i < 100; ++i) {
            const int due = i == 0 ? 0 : i % 4 == 0 ? 1 : i % 4 == 1 ? 2 : i % 4 == 2 ? 3 : 0;
            live += due == 0 || due > elapsed_minutes;
        }
        live += 500 * (2 > elapsed_minutes);  // 1000-1499: 2 minutes
        live += 100;                          // 1500-1599: no deadline since the second insert_many
        live += 300 * (3 > elapsed_minutes);  // 2000-2299
        live += 1;                            // kept (persisted)
        return live;
    };
    const std::int64_t before = map.find(single_key).get().has_value() ? 1 : 0;
    MPIDICT_CHECK_MSG(before == 1, "the one-key batch is there before its deadline" + where);
    MPIDICT_CHECK_MSG(static_cast<std::int64_t>(map.global_size()) ==
                          mpidict::testing::sum_over_ranks(live_of_mine(0) + 1),
                      "global size before the clock moves" + where);
    for (const int elapsed : {1, 2, 3, 11}) {
        simulated = start + minutes(elapsed);
        // global_size is collective: no rank queries before every rank has moved its clock.
        const auto expected = mpidict::testing::sum_over_ranks(live_of_mine(elapsed));
        MPIDICT_CHECK_MSG(static_cast<std::int64_t>(map.global_size()) == expected,
                          "global size after " + std::to_string(elapsed) + " min: " +
                              std::to_string(map.local_size()) + " here" + where);
        MPIDICT_CHECK_MSG(!map.find(single_key).get(), "the 30 s key is still there" + where);
        MPIDICT_CHECK_MSG(map.find(key_of(4)).get() == std::nullopt, "a 1-minute key is still there" + where);
        MPIDICT_CHECK_MSG(map.find(key_of(1100)).get().has_value() == (elapsed < 2),
                          "insert_many's TTL key after " + std::to_string(elapsed) + " min" + where);
        MPIDICT_CHECK_MSG(map.find(key_of(2100)).get().has_value() == (elapsed < 3),
                          "insert_many's deadline key after " + std::to_string(elapsed) + " min" + where);
        if (elapsed == 1)
            ttl_is(key_of(1), minutes(1), "ttl after 1 of 2 minutes");
        MPIDICT_CHECK_MSG(map.find(key_of(1550)).get().has_value(), "a key without deadline went" + where);
        std::size_t listed = 0;
        map.range(key_of(2000), key_of(2299), [&](const std::int64_t&, const std::uint64_t&) { ++listed; });
        MPIDICT_CHECK_MSG(listed == 0 || elapsed < 3, "range returned expired entries" + where);
        map.flush();
    }
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(170), "mpi_skiplist_map_expiry");
        for (const mode_type mode : {mode_type::sequential, mode_type::none, mode_type::total_order})
            run(rank, size, mode);
    });
}
