// The flights demo's queries against a plain filter of the same flights, at
// 1-4 ranks: the replay inserts every rank's share as a simulated clock passes
// their departures (the map's expiry_clock is that clock, so the nodes remove
// each flight at its arrival); at several simulated times every rank asks
// two-box pattern queries, and each answer must be exactly the flights of the
// file that are in the air then (departure <= now < arrival) with departure and
// arrival in the boxes (and), or either in its box (or), found by a loop over
// the whole file.
//   flights_query_test DATA_DIR

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "flights/flights.hpp"
#include "mpi_test_util.hpp"

namespace {

using namespace mpidict::apps::flights;

struct query_case {
    const char* name;
    std::optional<box> departure;
    std::optional<box> arrival;
};

std::vector<std::uint32_t> expected_ids(const flight_data& all, const query_case& q, std::int64_t now,
                                        combine how = combine::both) {
    std::vector<std::uint32_t> ids;
    for (const flight& f : all.flights) {
        if (!(f.departure <= now && now < f.arrival))
            continue;
        const airport& from = all.airports[f.origin];
        const airport& to = all.airports[f.dest];
        // The conditions of the boxes given; none: every flight in the air.
        std::vector<bool> conditions;
        if (q.departure)
            conditions.push_back(q.departure->contains(from.longitude, from.latitude));
        if (q.arrival)
            conditions.push_back(q.arrival->contains(to.longitude, to.latitude));
        const bool wanted = conditions.empty() ||
                            (how == combine::both ? std::all_of(conditions.begin(), conditions.end(), [](bool c) { return c; })
                                                  : std::any_of(conditions.begin(), conditions.end(), [](bool c) { return c; }));
        if (wanted)
            ids.push_back(f.id);
    }
    std::sort(ids.begin(), ids.end());
    return ids;
}

void run(int rank, int size, const std::string& directory) {
    const flight_data mine = load_flight_data(directory, rank, size);
    const flight_data all = load_flight_data(directory, 0, 1);
    MPIDICT_CHECK(all.flights.size() == mine.total_flights);

    clock::time_point simulated = parse_time("2013-01-01T00:00Z");
    mpidict::skiplist_map_config config;
    config.granularity = 8;  // a few hundred flights in the air: tens of nodes on every rank
    config.max_key_bytes = 64;
    config.max_value_bytes = sizeof(flight);
    config.expiry_clock = [&simulated] { return simulated; };
    flight_map map(MPI_COMM_WORLD, config);
    replay flights(mine);

    const std::vector<query_case> cases = {
        {"everything", std::nullopt, std::nullopt},
        {"JFK to the west coast", box{-73.9, 40.6, -73.7, 40.7}, box{-125, 32, -115, 49}},
        {"anywhere to Florida", std::nullopt, box{-88, 24, -79, 31}},
        {"Newark to anywhere", box{-74.2, 40.65, -74.15, 40.72}, std::nullopt},
        {"New York to Chicago", box{-75, 40, -73, 41}, box{-88.5, 41.5, -87.5, 42.2}},
        {"from a box without airports", box{-100, 30, -99, 31}, std::nullopt},
        {"to Puerto Rico and the Virgin Islands", std::nullopt, box{-68, 17, -64, 19}},
        {"to a single point (Atlanta's coordinates)", std::nullopt, box{-84.428067, 33.636719, -84.428067, 33.636719}},
    };
    // Increasing simulated times, a jump of half a year among them; a time
    // exactly at a departure and one exactly at an arrival of the file.
    std::vector<clock::time_point> times = {parse_time("2013-01-01T12:00Z"), parse_time("2013-01-01T18:30:30Z"),
                                            parse_time("2013-01-02T01:00Z"), parse_time("2013-07-04T16:00Z"),
                                            parse_time("2013-12-31T22:00Z")};
    const flight& sample = all.flights[all.flights.size() / 3];
    times.push_back(clock::time_point(std::chrono::seconds(sample.departure)));
    times.push_back(clock::time_point(std::chrono::seconds(sample.arrival)));
    std::sort(times.begin(), times.end());

    std::size_t checked = 0, nonempty = 0;
    for (const clock::time_point at : times) {
        // Every rank's queries of the last time are done once flush() returns
        // anywhere; only then does any clock move, and the second flush keeps
        // every rank from querying before all clocks moved and all inserts landed.
        map.flush();
        simulated = at;
        flights.advance(map, at);
        map.flush();
        const std::int64_t now = std::chrono::floor<std::chrono::seconds>(at.time_since_epoch()).count();
        const auto airborne = expected_ids(all, cases[0], now);
        MPIDICT_CHECK_MSG(map.global_size() == airborne.size(), format_time(at).c_str());
        for (const query_case& q : cases)
            for (const combine how : {combine::both, combine::either}) {
                std::vector<std::uint32_t> got;
                for (const flight& f : run_query(map, q.departure, q.arrival, how))
                    got.push_back(f.id);
                std::sort(got.begin(), got.end());
                const auto expected = expected_ids(all, q, now, how);
                if (got != expected)
                    std::fprintf(stderr, "[rank %d] %s (%s) at %s: %zu flights, expected %zu\n", rank, q.name,
                                 how == combine::both ? "and" : "or", format_time(at).c_str(), got.size(),
                                 expected.size());
                MPIDICT_CHECK(got == expected);
                ++checked;
                nonempty += !expected.empty();
            }
        if (rank == 0 && std::getenv("FLIGHTS_TEST_VERBOSE"))
            std::printf("%s: %zu in the air\n", format_time(at).c_str(), airborne.size());
    }
    // Most of the cases find something (the test is not passing on empty answers).
    MPIDICT_CHECK(nonempty * 2 > checked);
    // The boxes' text form and its refusals.
    MPIDICT_CHECK(!parse_box("*", "departure box"));
    MPIDICT_CHECK(parse_box("-74.5,40,-73,41.25", "departure box")->north == 41.25);
    for (const char* bad : {"", "1,2,3", "1,2,3,4,5", "a,2,3,4", "-200,0,0,1", "0,-91,1,1", "2,0,1,1", "0,2,1,1",
                            "nan,0,1,1", "1,,3,4"}) {
        bool refused = false;
        try {
            parse_box(bad, "arrival box");
        } catch (const mpidict::invalid_argument_error& e) {
            refused = std::string(e.what()).find("arrival box") != std::string::npos;
        }
        MPIDICT_CHECK_MSG(refused, bad);
    }
    map.destroy();
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::testing::run_mpi_test(argc, argv, [&](int rank, int size) {
        mpidict::testing::watchdog guard(rank, std::chrono::seconds(170), "flights_query_test");
        MPIDICT_CHECK_MSG(argc == 2, "usage: flights_query_test DATA_DIR");
        run(rank, size, argv[1]);
    });
}
