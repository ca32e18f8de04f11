#pragma once
// Rank 0's control port of the flights service (docs/flights.md, "The control
// port"): a listening socket on 127.0.0.1 and its clients, served without ever
// blocking the rank, and the parser of its command lines.
//
//   parse_command      one command line -> what it asks (throws invalid_argument_error
//                      naming the problem); no sockets, no MPI (fuzzed by tests/fuzz)
//   error_line         {"type":"error","message":...} with the quoted bytes made printable
//   write_token_file   a fresh random token in a new file only the user can read
//   control_port       the socket: non-blocking reads and writes, a per-client
//                      output queue, idle timeouts, an optional token, and room
//                      for a new connection always (the longest idle one goes)

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "flights/flights.hpp"

namespace mpidict::apps::flights {

struct control_command {
    enum class kind { status, airports, query, auth };
    kind what = kind::status;
    std::optional<box> departure, arrival;  // query
    combine how = combine::both;            // query
    std::string token;                      // auth
};
// "status", "airports", "query <departure> <arrival> [and|or]" or "auth <token>";
// throws invalid_argument_error naming the problem.
control_command parse_command(std::string_view line);

// The error answer; bytes that are not printable ASCII become '?'.
std::string error_line(std::string_view message);

// Writes a fresh random token (64 hex digits) and a newline to `path`, a new
// file of mode 0600 (an existing file or link of that name is removed first,
// never followed), and returns the token.  Throws std::runtime_error.
std::string write_token_file(const std::string& path);

struct control_port_options {
    std::string token;                 // non-empty: a client must send "auth <token>" first
    std::string token_file;            // named in the error a client gets without it
    double idle_seconds = 60;          // a client that neither sends nor reads for this long is closed
    double auth_seconds = 5;           // a client with a token still to send gets this long
    std::size_t max_clients = 64;      // more: the longest idle client makes room
    std::size_t lines_per_turn = 4;    // lines answered per client per serve() (fairness)
    std::size_t max_queued_bytes = std::size_t{64} << 10;  // answers queued for a client that does not read
};

class control_port {
public:
    control_port(std::uint16_t port, control_port_options options);
    ~control_port();
    control_port(const control_port&) = delete;
    control_port& operator=(const control_port&) = delete;
    std::uint16_t port() const { return m_port; }
    std::size_t clients() const { return m_clients.size(); }

    // Waits up to `timeout_ms` for anything, accepts clients, reads what they
    // sent and calls answer(line) for complete lines (a few per client), queues
    // what it returns plus a newline and sends what the client takes without
    // blocking.  A client whose answers pile up is not read until it reads
    // them; one idle for idle_seconds is closed.
    void serve(int timeout_ms, const std::function<std::string(std::string_view)>& answer);

    static constexpr std::size_t max_line = 4096;

private:
    using steady = std::chrono::steady_clock;
    struct client {
        int fd = -1;
        std::string in;
        std::string out;
        std::size_t out_sent = 0;
        steady::time_point last;
        bool authenticated = false;
        bool closing = false;    // close once `out` is sent
        bool peer_done = false;  // the client shut its side: answer what it sent, then close
    };
    bool flush(client& c);  // false: the connection failed
    void make_room(steady::time_point now);
    void close_client(std::size_t index);
    std::string authenticate(client& c, std::string_view line);

    control_port_options m_options;
    int m_listener = -1;
    std::uint16_t m_port = 0;
    std::vector<client> m_clients;
};

}  // namespace mpidict::apps::flights
