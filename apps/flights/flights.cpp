// The flights service (flights.hpp, docs/flights.md).

#include "flights/flights.hpp"
#include "flights/control_port.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <limits>
#include <stdexcept>
#include <thread>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mpidict/error.hpp"
#include "mpidict/support/json.hpp"
#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"

namespace mpidict::apps::flights {

// ---------------------------------------------------------------- input files

namespace {

// 2200-01-01 UTC: every time is kept below it, so that no time point (nanoseconds
// in 64 bits reach 2262) overflows.
constexpr std::int64_t max_time_seconds = 7258118400;

std::vector<std::string_view> split_tabs(std::string_view line) {
    std::vector<std::string_view> fields;
    std::size_t begin = 0;
    while (true) {
        const std::size_t tab = line.find('\t', begin);
        fields.push_back(line.substr(begin, tab == std::string_view::npos ? std::string_view::npos : tab - begin));
        if (tab == std::string_view::npos)
            return fields;
        begin = tab + 1;
    }
}

[[noreturn]] void bad_line(const std::string& file, std::uint64_t line, const std::string& problem) {
    throw std::runtime_error(file + ":" + std::to_string(line) + ": " + problem);
}

template <class T>
T number_field(std::string_view text, const std::string& file, std::uint64_t line, const char* what) {
    T value{};
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size() || text.empty())
        bad_line(file, line, std::string(what) + " '" + std::string(text) + "' is not a number in range");
    if constexpr (std::is_floating_point_v<T>)
        if (!std::isfinite(value))
            bad_line(file, line, std::string(what) + " '" + std::string(text) + "' is not finite");
    return value;
}

// Calls on_line(line, number) for every line that is neither empty nor a comment.
template <class Function>
void read_lines(const std::string& path, Function&& on_line) {
    std::ifstream in(path);
    if (!in)
        throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno) +
                                 " (make flights-data writes it; docs/flights.md)");
    std::string line;
    std::uint64_t number = 0;
    while (std::getline(in, line)) {
        ++number;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty() || line[0] == '#')
            continue;
        on_line(std::string_view(line), number);
    }
    if (in.bad())
        throw std::runtime_error("error reading " + path);
}

}  // namespace

std::optional<std::uint16_t> flight_data::airport_index(std::string_view code) const {
    const auto at = std::lower_bound(airports.begin(), airports.end(), code,
                                     [](const airport& a, std::string_view c) { return a.code < c; });
    if (at == airports.end() || at->code != code)
        return std::nullopt;
    return static_cast<std::uint16_t>(at - airports.begin());
}

flight_data load_flight_data(const std::string& directory, int rank, int ranks,
                             const std::function<void(std::uint64_t)>& on_progress) {
    flight_data data;
    const std::string airports_path = directory + "/airports.tsv";
    read_lines(airports_path, [&](std::string_view line, std::uint64_t number) {
        const auto fields = split_tabs(line);
        if (fields.size() != 4)
            bad_line(airports_path, number, "expected 4 tab-separated fields (code, latitude, longitude, name), found " +
                                                std::to_string(fields.size()));
        airport a;
        a.code = std::string(fields[0]);
        if (a.code.empty() || a.code.size() > 4)
            bad_line(airports_path, number, "airport code '" + a.code + "' is not 1-4 characters");
        a.latitude = number_field<double>(fields[1], airports_path, number, "latitude");
        a.longitude = number_field<double>(fields[2], airports_path, number, "longitude");
        if (std::fabs(a.latitude) > 90 || std::fabs(a.longitude) > 180)
            bad_line(airports_path, number, "coordinates outside [-90, 90] x [-180, 180]");
        a.name = std::string(fields[3]);
        data.airports.push_back(std::move(a));
    });
    std::sort(data.airports.begin(), data.airports.end(),
              [](const airport& x, const airport& y) { return x.code < y.code; });
    for (std::size_t i = 1; i < data.airports.size(); ++i)
        if (data.airports[i].code == data.airports[i - 1].code)
            throw std::runtime_error(airports_path + ": airport " + data.airports[i].code + " is listed twice");
    if (data.airports.size() > std::numeric_limits<std::uint16_t>::max())
        throw std::runtime_error(airports_path + ": more than 65535 airports");

    const std::string flights_path = directory + "/flights.tsv";
    std::int64_t previous_departure = std::numeric_limits<std::int64_t>::min();
    data.first_departure = std::numeric_limits<std::int64_t>::max();
    data.last_arrival = std::numeric_limits<std::int64_t>::min();
    read_lines(flights_path, [&](std::string_view line, std::uint64_t number) {
        const auto fields = split_tabs(line);
        if (fields.size() != 8)
            bad_line(flights_path, number,
                     "expected 8 tab-separated fields (id, departure, arrival, origin, dest, carrier, flight, "
                     "tailnum), found " + std::to_string(fields.size()));
        flight f;
        f.id = number_field<std::uint32_t>(fields[0], flights_path, number, "id");
        f.departure = number_field<std::int64_t>(fields[1], flights_path, number, "departure");
        f.arrival = number_field<std::int64_t>(fields[2], flights_path, number, "arrival");
        if (f.departure < 0 || f.arrival > max_time_seconds)
            bad_line(flights_path, number, "times must lie between 1970 and 2200 (Unix seconds 0 to " +
                                               std::to_string(max_time_seconds) + ")");
        if (f.arrival <= f.departure)
            bad_line(flights_path, number, "arrival " + std::to_string(f.arrival) + " is not after departure " +
                                               std::to_string(f.departure));
        if (f.departure < previous_departure)
            bad_line(flights_path, number, "flights are not in departure order");
        previous_departure = f.departure;
        const auto origin = data.airport_index(fields[3]);
        const auto dest = data.airport_index(fields[4]);
        if (!origin || !dest)
            bad_line(flights_path, number, "airport '" + std::string(origin ? fields[4] : fields[3]) +
                                               "' is not in " + airports_path);
        f.origin = *origin;
        f.dest = *dest;
        if (fields[5].empty() || fields[5].size() >= f.carrier.size())
            bad_line(flights_path, number, "carrier '" + std::string(fields[5]) + "' is not 1-3 characters");
        std::copy(fields[5].begin(), fields[5].end(), f.carrier.begin());
        f.number = number_field<std::uint32_t>(fields[6], flights_path, number, "flight number");
        if (fields[7].size() > f.tailnum.size())
            bad_line(flights_path, number, "tail number '" + std::string(fields[7]) + "' is over 8 characters");
        std::copy(fields[7].begin(), fields[7].end(), f.tailnum.begin());
        data.first_departure = std::min(data.first_departure, f.departure);
        data.last_arrival = std::max(data.last_arrival, f.arrival);
        if (data.total_flights % static_cast<std::uint64_t>(ranks) == static_cast<std::uint64_t>(rank))
            data.flights.push_back(f);
        ++data.total_flights;
        if (on_progress && data.total_flights % 16384 == 0)
            on_progress(data.total_flights);
    });
    if (data.total_flights == 0)
        throw std::runtime_error(flights_path + " holds no flights");
    return data;
}

flight_key key_of(const flight_data& data, const flight& f) {
    const airport& from = data.airports[f.origin];
    const airport& to = data.airports[f.dest];
    return {from.longitude, from.latitude, to.longitude, to.latitude, f.id};
}

// ---------------------------------------------------------------- queries

// parse_box and combine_named: control_port.cpp (the fuzzed parser).

std::string box_text(const std::optional<box>& b) {
    if (!b)
        return "null";
    return "[" + support::json_number(b->west) + "," + support::json_number(b->south) + "," +
           support::json_number(b->east) + "," + support::json_number(b->north) + "]";
}

key_pattern query_pattern(const std::optional<box>& departure, const std::optional<box>& arrival) {
    key_pattern pattern = key_pattern::for_key<flight_key>();
    if (departure)
        pattern.interval(0, std::optional(departure->west), std::optional(departure->east))
            .interval(1, std::optional(departure->south), std::optional(departure->north));
    if (arrival)
        pattern.interval(2, std::optional(arrival->west), std::optional(arrival->east))
            .interval(3, std::optional(arrival->south), std::optional(arrival->north));
    return pattern;
}


std::vector<flight> run_query(flight_map& map, const std::optional<box>& departure,
                              const std::optional<box>& arrival, combine how) {
    std::vector<flight> found;
    auto collect = [&](const flight_key&, const flight& f) { found.push_back(f); };
    if (how == combine::both || !departure || !arrival) {
        map.match(query_pattern(departure, arrival), collect);
        return found;
    }
    map.match(query_pattern(departure, std::nullopt), collect);
    map.match(query_pattern(std::nullopt, arrival), collect);
    std::sort(found.begin(), found.end(), [](const flight& x, const flight& y) { return x.id < y.id; });
    found.erase(std::unique(found.begin(), found.end(), [](const flight& x, const flight& y) { return x.id == y.id; }),
                found.end());
    return found;
}

// ---------------------------------------------------------------- time

clock::time_point simulated_clock::now() const {
    const double wall = std::chrono::duration<double>(clock::now() - m_wall_start).count();
    return m_start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(wall * m_speed));
}

std::optional<clock::time_point> simulated_clock::wall_time_of(clock::time_point at) const {
    if (at <= m_start)
        return m_wall_start;
    if (m_speed <= 0)
        return std::nullopt;
    const double simulated = std::chrono::duration<double>(at - m_start).count();
    return m_wall_start + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(simulated / m_speed));
}

std::size_t replay::advance(flight_map& map, clock::time_point now) {
    const std::int64_t seconds = std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count();
    std::size_t count = 0;
    for (; m_next < m_data.flights.size() && m_data.flights[m_next].departure <= seconds; ++m_next) {
        const flight& f = m_data.flights[m_next];
        if (f.arrival <= seconds) {  // landed before the clock got here
            ++m_skipped;
            continue;
        }
        map.async_insert(key_of(m_data, f), f, clock::time_point(std::chrono::seconds(f.arrival)));
        ++count;
    }
    m_inserted += count;
    return count;
}

clock::time_point parse_time(std::string_view text) {
    std::int64_t seconds = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (error == std::errc() && end == text.data() + text.size() && !text.empty()) {
        if (seconds < 0 || seconds > max_time_seconds)
            throw invalid_argument_error("time " + std::string(text) + " is outside 1970-2200 (Unix seconds 0 to " +
                                         std::to_string(max_time_seconds) + ")");
        return clock::time_point(std::chrono::seconds(seconds));
    }
    std::tm parts{};
    int year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    char separator = 0;
    int used = 0;
    const std::string copy(text);
    const int fields = std::sscanf(copy.c_str(), "%4d-%2d-%2d%c%2d:%2d%n", &year, &month, &day, &separator, &hour,
                                   &minute, &used);
    bool ok = fields == 6 && (separator == 'T' || separator == ' ');
    std::string_view rest = ok ? text.substr(static_cast<std::size_t>(used)) : std::string_view{};
    if (ok && rest.size() >= 3 && rest[0] == ':') {
        const auto [s_end, s_error] = std::from_chars(rest.data() + 1, rest.data() + 3, second);
        ok = s_error == std::errc() && s_end == rest.data() + 3;
        rest.remove_prefix(3);
    }
    ok = ok && (rest.empty() || rest == "Z") && year >= 1970 && year < 2200 && month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour <= 23 &&
         minute <= 59 && second <= 60 && hour >= 0 && minute >= 0 && second >= 0;
    if (!ok)
        throw invalid_argument_error("time '" + copy +
                                     "' is not YYYY-MM-DDTHH:MM[:SS][Z] (UTC, 1970-2199) nor Unix seconds");
    parts.tm_year = year - 1900;
    parts.tm_mon = month - 1;
    parts.tm_mday = day;
    parts.tm_hour = hour;
    parts.tm_min = minute;
    parts.tm_sec = second;
    return clock::from_time_t(timegm(&parts));
}

std::string format_time(clock::time_point at) {
    const std::time_t seconds = clock::to_time_t(std::chrono::floor<std::chrono::seconds>(at));
    std::tm parts{};
    gmtime_r(&seconds, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%dT%H:%M:%SZ", &parts);
    return text;
}

// ---------------------------------------------------------------- the service

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int) { g_stop_signal = 1; }

struct service_options {
    std::string data_dir;
    std::string start = "2013-07-01T14:00:00Z";
    double speed = 3600;           // simulated seconds per second
    std::string until;             // default: the last arrival
    double duration = 0;           // wall seconds; 0: until the replay ends
    std::uint64_t control_port = 7010;
    std::uint64_t granularity = 16;
    double flush_interval = 1.0;   // wall seconds between collective flushes
    std::uint64_t max_results = 5000;
    std::string token_file;        // non-empty: clients must send the token written there
    double idle_timeout = 60;      // seconds a control-port client may stay idle
};

// The commands rank 0 sends the other ranks (on a communicator of their own).
enum class order : int { flush = 1, stop = 2 };

std::string flight_json(const flight_data& data, const flight& f) {
    const std::string carrier(f.carrier.data());
    const std::string tail(f.tailnum.data(), strnlen(f.tailnum.data(), f.tailnum.size()));
    return "[" + std::to_string(f.id) + "," + support::json_string(data.airports[f.origin].code) + "," +
           support::json_string(data.airports[f.dest].code) + "," + support::json_string(carrier) + "," +
           std::to_string(f.number) + "," + support::json_string(tail) + "," + std::to_string(f.departure) + "," +
           std::to_string(f.arrival) + "]";
}

// What rank 0 answers on the control port.
class command_handler {
public:
    command_handler(const flight_data& data, const simulated_clock& sim, const service_options& options, int ranks)
        : m_data(data), m_sim(sim), m_options(options), m_ranks(ranks) {}
    void set_loading(std::uint64_t lines) { m_loading_lines = lines; }
    void set_map(flight_map* map) { m_map = map; }
    std::uint64_t queries() const { return m_queries; }

    std::string answer(std::string_view line) {
        try {
            const control_command command = parse_command(line);
            if (command.what == control_command::kind::status)
                return status();
            if (command.what == control_command::kind::auth)
                return "{\"type\":\"auth\",\"ok\":true}";  // (the port checks tokens; none is needed here)
            if (!m_map)
                return error_line("the service is still loading the flights (" + std::to_string(m_loading_lines) +
                                  " read so far); ask again shortly");
            if (command.what == control_command::kind::airports)
                return airports();
            return query(command);
        } catch (const std::exception& problem) {
            return error_line(problem.what());
        }
    }

private:
    std::size_t in_air() {
        return m_map->match(key_pattern::for_key<flight_key>(), [](const flight_key&, const flight&) {});
    }

    std::string status() {
        const clock::time_point now = m_sim.now();
        std::string out = "{\"type\":\"status\",\"state\":" + std::string(m_map ? "\"ready\"" : "\"loading\"") +
                          ",\"time\":" +
                          std::to_string(std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count()) +
                          ",\"time_text\":" + support::json_string(format_time(now)) +
                          ",\"speed\":" + support::json_number(m_sim.speed()) +
                          ",\"ranks\":" + std::to_string(m_ranks);
        if (m_map)
            out += ",\"in_air\":" + std::to_string(in_air()) + ",\"flights\":" + std::to_string(m_data.total_flights);
        else
            out += ",\"lines_read\":" + std::to_string(m_loading_lines);
        return out + "}";
    }

    std::string airports() const {
        std::string out = "{\"type\":\"airports\",\"airports\":[";
        for (std::size_t i = 0; i < m_data.airports.size(); ++i) {
            const airport& a = m_data.airports[i];
            out += (i ? ",[" : "[") + support::json_string(a.code) + "," + support::json_number(a.latitude) + "," +
                   support::json_number(a.longitude) + "," + support::json_string(a.name) + "]";
        }
        return out + "]}";
    }

    std::string query(const control_command& command) {
        const auto& departure = command.departure;
        const auto& arrival = command.arrival;
        const auto how = std::optional(command.how);
        const clock::time_point now = m_sim.now();
        const auto began = std::chrono::steady_clock::now();
        const std::vector<flight> found = run_query(*m_map, departure, arrival, *how);
        const double latency_ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - began).count();
        const std::size_t airborne = in_air();
        ++m_queries;
        std::string out = "{\"type\":\"result\",\"time\":" +
                          std::to_string(std::chrono::floor<std::chrono::seconds>(now.time_since_epoch()).count()) +
                          ",\"time_text\":" + support::json_string(format_time(now)) +
                          ",\"departure\":" + box_text(departure) + ",\"arrival\":" + box_text(arrival) +
                          ",\"combine\":" + (*how == combine::both ? "\"and\"" : "\"or\"") +
                          ",\"in_air\":" + std::to_string(airborne) + ",\"matching\":" +
                          std::to_string(found.size()) + ",\"latency_ms\":" + support::json_number(latency_ms) +
                          ",\"truncated\":" + (found.size() > m_options.max_results ? "true" : "false") +
                          ",\"flights\":[";
        const std::size_t shown = std::min<std::size_t>(found.size(), m_options.max_results);
        for (std::size_t i = 0; i < shown; ++i) {
            if (i != 0)
                out += ',';
            out += flight_json(m_data, found[i]);
        }
        return out + "]}";
    }

    const flight_data& m_data;
    const simulated_clock& m_sim;
    const service_options& m_options;
    int m_ranks;
    flight_map* m_map = nullptr;
    std::uint64_t m_loading_lines = 0;
    std::uint64_t m_queries = 0;
};

void make_progress(flight_map& map) {
    runtime::engine_lock lock(map.engine());
    map.engine().progress();
    map.engine().ship_all();
}

int run_service(MPI_Comm comm, const service_options& options, const std::string& program,
                const support::exit_reporter& finish) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);

    // The clocks: every rank counts simulated time from rank 0's wall start.
    std::string problem;
    clock::time_point start{}, until{};
    try {
        start = parse_time(options.start);
        if (!options.until.empty())
            until = parse_time(options.until);
    } catch (const std::exception& e) {
        problem = e.what();
    }
    if (!(problem = support::agree_on_failure(comm, problem)).empty()) {
        if (rank == 0)
            std::fprintf(stderr, "%s: error: %s\n", program.c_str(), problem.c_str());
        return finish(support::exit_usage);
    }
    // Every rank counts simulated time from rank 0's wall clock once the data
    // is loaded (restart below); until then it stands at the start.
    simulated_clock sim(start, 0, clock::now());

    // Rank 0 opens its control port first, so that the front sees "loading".
    std::unique_ptr<control_port> port;
    flight_data data;
    command_handler handler(data, sim, options, ranks);
    if (rank == 0) {
        try {
            control_port_options settings;
            settings.idle_seconds = options.idle_timeout;
            if (!options.token_file.empty()) {
                settings.token = write_token_file(options.token_file);
                settings.token_file = options.token_file;
            }
            port = std::make_unique<control_port>(static_cast<std::uint16_t>(options.control_port), settings);
            std::printf("%s: control port 127.0.0.1:%u\n", program.c_str(), port->port());
            std::fflush(stdout);
        } catch (const std::exception& e) {
            problem = e.what();
        }
    }
    if (problem.empty()) {
        try {
            data = load_flight_data(options.data_dir, rank, ranks, [&](std::uint64_t lines) {
                if (port) {
                    handler.set_loading(lines);
                    port->serve(0, [&](std::string_view line) { return handler.answer(line); });
                }
            });
        } catch (const std::exception& e) {
            problem = e.what();
        }
    }
    if (!(problem = support::agree_on_failure(comm, problem)).empty()) {
        if (rank == 0)
            std::fprintf(stderr, "%s: error: %s\n", program.c_str(), problem.c_str());
        return finish(support::exit_failure);
    }
    const clock::time_point end =
        options.until.empty() ? clock::time_point(std::chrono::seconds(data.last_arrival)) : until;
    std::int64_t wall_start_ns =
        std::chrono::duration_cast<std::chrono::nanoseconds>(clock::now().time_since_epoch()).count();
    MPI_Bcast(&wall_start_ns, 1, MPI_INT64_T, 0, comm);
    sim = simulated_clock(start, options.speed,
                          clock::time_point(std::chrono::duration_cast<clock::duration>(
                              std::chrono::nanoseconds(wall_start_ns))));

    skiplist_map_config config;
    config.granularity = options.granularity;
    config.max_key_bytes = 64;
    config.max_value_bytes = sizeof(flight);
    config.expiry_clock = [&sim] { return sim.now(); };
    flight_map map(comm, config);
    replay flights(data);

    MPI_Comm orders;
    MPI_Comm_dup(comm, &orders);
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);

    // Everything that departed by the start (and has not landed) is in the air.
    flights.advance(map, sim.now());
    map.flush();
    handler.set_map(&map);
    if (rank == 0) {
        std::printf("%s: ready: %llu flights, %d ranks, simulated clock at %s, %g simulated seconds per second\n",
                    program.c_str(), static_cast<unsigned long long>(data.total_flights), ranks,
                    format_time(sim.now()).c_str(), options.speed);
        std::fflush(stdout);
    }

    const auto wall_began = std::chrono::steady_clock::now();
    auto last_flush = wall_began;
    int incoming = 0;
    MPI_Request pending = MPI_REQUEST_NULL;
    if (rank != 0)
        MPI_Irecv(&incoming, 1, MPI_INT, 0, 0, orders, &pending);
    auto tell_everyone = [&](order what) {
        const int code = static_cast<int>(what);
        for (int r = 1; r < ranks; ++r)
            MPI_Send(&code, 1, MPI_INT, r, 0, orders);
    };
    const char* stop_reason = "";
    while (true) {
        const clock::time_point now = sim.now();
        flights.advance(map, now);
        make_progress(map);
        std::optional<order> next;
        if (rank == 0) {
            port->serve(2, [&](std::string_view line) { return handler.answer(line); });
            const auto wall = std::chrono::steady_clock::now();
            if (g_stop_signal) {
                next = order::stop;
                stop_reason = "stopped by a signal";
            } else if (now >= end) {
                next = order::stop;
                stop_reason = "the replay reached its end";
            } else if (options.duration > 0 && std::chrono::duration<double>(wall - wall_began).count() >= options.duration) {
                next = order::stop;
                stop_reason = "--duration passed";
            } else if (std::chrono::duration<double>(wall - last_flush).count() >= options.flush_interval) {
                next = order::flush;
                last_flush = wall;
            }
            if (next)
                tell_everyone(*next);
        } else {
            int arrived = 0;
            MPI_Test(&pending, &arrived, MPI_STATUS_IGNORE);
            if (arrived) {
                next = static_cast<order>(incoming);
                if (*next != order::stop)
                    MPI_Irecv(&incoming, 1, MPI_INT, 0, 0, orders, &pending);
            } else {
                std::this_thread::sleep_for(std::chrono::microseconds(200));
            }
        }
        if (next == order::flush)
            map.flush();
        else if (next == order::stop)
            break;
    }
    MPI_Comm_free(&orders);

    const std::uint64_t expired_here = map.local_statistics().expired;
    std::uint64_t counts[3] = {flights.inserted(), expired_here, map.async_rejected()};
    std::uint64_t totals[3] = {0, 0, 0};
    map.flush();
    MPI_Reduce(counts, totals, 3, MPI_UINT64_T, MPI_SUM, 0, comm);
    const std::size_t left = map.global_size();
    map.destroy();
    if (rank == 0) {
        std::fprintf(stderr,
                     "%s: %s at simulated %s: %llu flights inserted, %llu landed (expired at their nodes), %zu in "
                     "the air, %llu refused, %llu queries answered\n",
                     program.c_str(), stop_reason, format_time(sim.now()).c_str(),
                     static_cast<unsigned long long>(totals[0]), static_cast<unsigned long long>(totals[1]), left,
                     static_cast<unsigned long long>(totals[2]), static_cast<unsigned long long>(handler.queries()));
    }
    return finish(totals[2] == 0 ? support::exit_success : support::exit_failure);
}

}  // namespace

int flights_main(int argc, char** argv, MPI_Comm comm) {
    const std::string program = support::program_name(argc, argv, "flights");
    const support::exit_reporter finish(argc, argv, program, comm);
    service_options options;
    bool trace_exit = false;
    support::option_parser parser(
        program + " --data DIR [options]",
        "The live flights service of seed 004: replays the flights of 2013 from New York on a simulated\n"
        "clock into a skiplist_map (inserted at departure, expiring at arrival) and answers two-box\n"
        "queries on a control port on localhost (rank 0), for the web front (apps/flights/web/front.py).");
    parser.add_text("data", &options.data_dir, "directory of airports.tsv and flights.tsv (make flights-data)", "DIR")
        .add_text("start", &options.start, "simulated start time, UTC (YYYY-MM-DDTHH:MM[:SS]Z or Unix seconds)",
                  "TIME")
        .add_real("speed", &options.speed, "simulated seconds per second (0: the clock stands still)", 0, 1e7)
        .add_text("until", &options.until, "stop when the simulated clock reaches TIME (default: the last arrival)",
                  "TIME")
        .add_real("duration", &options.duration, "stop after this many seconds (0: when the replay ends)", 0, 1e9)
        .add_count("control-port", &options.control_port, "rank 0's control port on 127.0.0.1 (0: any free one)", 0,
                   65535, "PORT")
        .add_custom("token-file", "FILE",
                    "write a fresh token to FILE (mode 0600) and answer only clients that send 'auth TOKEN' first",
                    "none", [&](std::string_view value) {
                        if (value.empty())
                            throw support::usage_error("--token-file: the file name is empty");
                        options.token_file = std::string(value);
                    })
        .add_real("idle-timeout", &options.idle_timeout,
                  "seconds after which a control-port client that neither sends nor reads is closed", 0.1, 86400)
        .add_count("granularity", &options.granularity, "skiplist_map's G, keys per node", 2, 512)
        .add_real("flush-interval", &options.flush_interval, "seconds between collective flushes", 0.01, 3600)
        .add_count("max-results", &options.max_results, "the most flights one answer lists", 1, 1000000)
        .add_flag("trace-exit", &trace_exit, "each rank says with which code it exits (tests)")
        .add_check([&] {
            if (options.data_dir.empty())
                throw support::usage_error("no data directory given (--data DIR; make flights-data writes one)");
        })
        .add_epilogue("example:\n  mpiexec -n 4 " + program + " --data build/flights_data --speed 3600\n");
    if (const auto stop = support::parse_collectively(comm, parser, support::arguments_of(argc, argv), program))
        return finish(*stop);
    return run_service(comm, options, program, finish);
}

}  // namespace mpidict::apps::flights
