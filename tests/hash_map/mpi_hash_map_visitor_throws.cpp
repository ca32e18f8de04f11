// A visitor that throws a C++ exception at the owner is the visit's failure, not
// the owner's: the owner catches it around the visitor call and keeps serving.
//
//  * visit() (request form): get() throws invalid_argument_error on the CALLING
//    rank with a message naming the visitor, the owner and the exception's
//    what(); for an exception not derived from std::exception the message says
//    so.  A result too large for one message fails the same way.  The key's
//    values are unchanged (the visitor's edits are discarded), but operations
//    the visitor started before throwing still happen.
//  * async_visit(): the failure is counted back at the rank that started the
//    visit (async_visit_errors(), complete after flush(), with the first
//    message in async_visit_error_message()), like async_rejected() for
//    capacity refusals.  A visitor's own async_visit reports to the owner that
//    ran it (ctx.map's rank), not to the rank that started the chain.
//  * Nothing stored before or after is lost, a successful visit in the same
//    batch as a failing one is answered, flush() returns on every rank and later
//    visits work; with and without a progress thread.
//
// Pins a core bug: the exception escaped the owner's handler, so at 1 rank the
// next flush() never returned and at >= 2 ranks it surfaced in whatever library
// call the owner was making while the caller waited forever.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "mpi_test_util.hpp"
#include "mpidict/hash_map.hpp"

namespace {

using map_type = mpidict::hash_map<std::uint64_t, std::uint64_t>;
using context = map_type::visit_context;
using mpidict::testing::key_owned_by;

constexpr std::uint64_t started_offset = 50000;  // keys the void thrower inserts before throwing
constexpr std::size_t data_keys = 64;

std::uint64_t throw_after_push(context&, const std::uint64_t& key, std::vector<std::uint64_t>& values,
                               const std::uint32_t& arg) {
    values.push_back(999);  // discarded: the visit failed
    throw std::runtime_error("boom from key " + std::to_string(key) + " arg " + std::to_string(arg));
}

void throw_void(context& ctx, const std::uint64_t& key, std::vector<std::uint64_t>& values, const std::uint32_t&) {
    values.clear();  // discarded: the key keeps its values
    ctx.map.async_insert(key + started_offset, key);  // started before the throw: it happens
    throw std::logic_error("void visitor failed");
}

std::uint64_t throw_non_std(context&, const std::uint64_t&, std::vector<std::uint64_t>&, const std::uint32_t&) {
    throw 42;
}

std::string huge_result(context&, const std::uint64_t&, std::vector<std::uint64_t>& values,
                        const std::uint32_t& length) {
    values.push_back(777);  // discarded: the answer cannot be delivered
    return std::string(length, 'x');
}

std::uint64_t count_values(context&, const std::uint64_t&, std::vector<std::uint64_t>& values,
                           const std::uint32_t&) {
    return values.size();
}

std::uint64_t add_and_sum(context&, const std::uint64_t&, std::vector<std::uint64_t>& values,
                          const std::uint64_t& amount) {
    values.push_back(amount);
    std::uint64_t sum = 0;
    for (std::uint64_t value : values)
        sum += value;
    return sum;
}

// Set at registration (same id on every rank); relay uses it from inside a visitor.
map_type::visitor<std::uint32_t, void> void_thrower{};

// At its owner, starts a throwing async_visit of key `target`: the failure is
// reported to this owner, which started that visit.
void relay(context& ctx, const std::uint64_t&, std::vector<std::uint64_t>&, const std::uint32_t& target) {
    ctx.map.async_visit(std::uint64_t{target}, void_thrower, std::uint32_t{0});
}

std::uint64_t base_of(int rank) { return (static_cast<std::uint64_t>(rank) + 1) * 100000; }

void scenario(int rank, int size, bool progress_thread) {
    const std::string phase = progress_thread ? " (progress thread)" : "";
    mpidict::hash_map_config settings;
    settings.runtime.progress_thread = progress_thread;
    map_type map(MPI_COMM_WORLD, settings);
    const auto thrower = map.register_visitor("throw_after_push", &throw_after_push);
    void_thrower = map.register_visitor("throw_void", &throw_void);
    const auto non_std = map.register_visitor("throw_non_std", &throw_non_std);
    const auto huge = map.register_visitor("huge_result", &huge_result);
    const auto counter = map.register_visitor("count_values", &count_values);
    const auto adder = map.register_visitor("add_and_sum", &add_and_sum);
    const auto relayer = map.register_visitor("relay", &relay);

    const std::uint64_t base = base_of(rank);
    const int next = (rank + 1) % size;
    const std::uint64_t probe_local = key_owned_by(map, rank, base + 500);
    const std::uint64_t probe_remote = key_owned_by(map, next, base + 700);
    const std::vector<std::uint64_t> probe_values{1, 2};

    // Data stored before anything fails.
    for (std::size_t i = 0; i < data_keys; ++i) {
        map.async_insert(base + i, i);
        map.async_insert(base + i, i + 1);
    }
    for (std::uint64_t probe : {probe_local, probe_remote}) {
        map.async_insert(probe, 1);
        map.async_insert(probe, 2);
    }
    map.flush();
    MPIDICT_CHECK_MSG(map.async_visit_errors() == 0, "async_visit_errors " + std::to_string(map.async_visit_errors()) +
                                                         " before any visit" + phase + ": '" +
                                                         map.async_visit_error_message() + "'");
    MPIDICT_CHECK(map.async_visit_error_message().empty());
    // flush() returns at different times on different ranks, and a rank still
    // in it serves: one that left may already run the phases below, and the
    // relay it starts here makes THIS rank's async_visit fail (it reports to
    // us).  So nobody starts them before every rank has checked the above: a
    // second flush is a collective that serves while it waits.  (Without it the
    // check failed 3 of 40 runs at 4 ranks on 2 cores, load 10: count 1,
    // "visitor 'throw_void' threw at rank r (... visited from rank r+1)".)
    map.flush();

    // ---- request form: the caller's get() throws the owner's report ----------
    for (std::uint64_t probe : {probe_remote, probe_local}) {
        const std::string owner = std::to_string(map.owner(probe));
        MPIDICT_EXPECT_ERROR(mpidict::invalid_argument_error, map.visit(probe, thrower, std::uint32_t{7}).get(),
                             "visitor 'throw_after_push'", "threw", "rank " + owner,
                             "boom from key " + std::to_string(probe) + " arg 7");
        MPIDICT_CHECK_MSG(map.find(probe).get() == probe_values, "probe values changed" + phase);
    }
    {
        // A failing and a succeeding visit in the same batch: both answered.
        auto failing = map.visit(probe_remote, thrower, std::uint32_t{8});
        auto fine = map.visit(probe_remote, counter, std::uint32_t{0});
        auto failing_too = map.visit(probe_remote, non_std, std::uint32_t{0});
        MPIDICT_CHECK(fine.get() == 2);
        MPIDICT_EXPECT_ERROR(mpidict::invalid_argument_error, failing.get(), "boom from key");
        MPIDICT_EXPECT_ERROR(mpidict::invalid_argument_error, failing_too.get(), "visitor 'throw_non_std'",
                             "not derived from std::exception");
    }
    MPIDICT_EXPECT_ERROR(mpidict::invalid_argument_error, map.visit(probe_local, void_thrower, std::uint32_t{0}).get(),
                         "visitor 'throw_void'", "void visitor failed");
    MPIDICT_EXPECT_ERROR(mpidict::invalid_argument_error, map.visit(probe_remote, huge, std::uint32_t{100000}).get(),
                         "visitor 'huge_result'", "100004", "buffer_bytes");
    MPIDICT_CHECK_MSG(map.find(probe_local).get() == probe_values, "probe values changed" + phase);
    MPIDICT_CHECK_MSG(map.find(probe_remote).get() == probe_values, "probe values changed" + phase);
    // (Request-form failures are not counted as async ones: the exact count
    // below proves it.  Not checked here: a relay another rank starts after its
    // flush may already report to us.)

    // ---- async form: counted back at the origin ------------------------------
    for (int i = 0; i < 3; ++i)
        map.async_visit(probe_remote, void_thrower, std::uint32_t{0});
    for (int i = 0; i < 2; ++i)
        map.async_visit(probe_local, thrower, static_cast<std::uint32_t>(i));
    map.async_visit(probe_remote, counter, std::uint32_t{0});  // succeeds: not counted
    // Runs at `next`, whose own async_visit of our probe_local throws here: that
    // failure is reported to `next`.  Symmetrically we get one from rank - 1.
    map.async_visit(probe_remote, relayer, static_cast<std::uint32_t>(probe_local));
    // Data stored after the failures.
    for (std::size_t i = 0; i < data_keys; ++i)
        map.async_insert(base + 2000 + i, i);
    map.flush();
    MPIDICT_CHECK_MSG(map.async_visit_errors() == 6,
                      "async_visit_errors " + std::to_string(map.async_visit_errors()) + phase);
    const std::string first = map.async_visit_error_message();
    MPIDICT_CHECK_MSG(first.find("mpidict: visitor '") != std::string::npos && first.find("threw") != std::string::npos,
                      "first async failure: '" + first + "'");
    MPIDICT_CHECK_MSG(first.find("void visitor failed") != std::string::npos ||
                          first.find("boom from key") != std::string::npos,
                      "first async failure: '" + first + "'");
    map.clear_async_visit_errors();
    MPIDICT_CHECK(map.async_visit_errors() == 0);
    MPIDICT_CHECK(map.async_visit_error_message().empty());

    // ---- nothing lost; the owners keep serving --------------------------------
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < data_keys; ++i) {
        if (map.find(base + i).get() != std::vector<std::uint64_t>{i, i + 1})
            ++wrong;
        if (map.find(base + 2000 + i).get() != std::vector<std::uint64_t>{i})
            ++wrong;
    }
    MPIDICT_CHECK_MSG(wrong == 0, std::to_string(wrong) + " data keys wrong" + phase);
    MPIDICT_CHECK(map.find(probe_local).get() == probe_values);
    MPIDICT_CHECK(map.find(probe_remote).get() == probe_values);
    // The void thrower's insert before its throw happened: on probe_local once by
    // our request and once by the relay from rank - 1, on probe_remote 3 times.
    MPIDICT_CHECK(map.find(probe_local + started_offset).get() == std::vector<std::uint64_t>(2, probe_local));
    MPIDICT_CHECK(map.find(probe_remote + started_offset).get() == std::vector<std::uint64_t>(3, probe_remote));

    // A later successful visit works, request and async form.
    const std::uint64_t fresh = base + 900;
    MPIDICT_CHECK(map.visit(fresh, adder, std::uint64_t{5}).get() == 5);
    MPIDICT_CHECK(map.visit(fresh, adder, std::uint64_t{7}).get() == 12);
    MPIDICT_CHECK(map.visit(probe_remote, counter, std::uint32_t{0}).get() == 2);
    map.async_visit(fresh, adder, std::uint64_t{1});
    map.flush();
    MPIDICT_CHECK(map.find(fresh).get() == (std::vector<std::uint64_t>{5, 7, 1}));
    MPIDICT_CHECK(map.async_visit_errors() == 0);
    MPIDICT_CHECK(map.engine().outstanding_requests() == 0);

    // Per rank: 2 * 64 + 64 data values, 2 + 2 probe values, 5 started, 3 fresh.
    const std::size_t expected = static_cast<std::size_t>(size) * (3 * data_keys + 4 + 5 + 3);
    const std::size_t total = map.global_value_count();
    MPIDICT_CHECK_MSG(total == expected,
                      "global_value_count " + std::to_string(total) + " expected " + std::to_string(expected) + phase);
    map.flush();
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(80), "mpi_hash_map_visitor_throws");
        scenario(rank, size, false);
        scenario(rank, size, true);
    });
}
