// Rank 0's control port and its command parser (control_port.hpp).

#include "flights/control_port.hpp"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpidict/error.hpp"

namespace mpidict::apps::flights {

namespace {

std::string number_text(double value) {
    char text[32];
    std::snprintf(text, sizeof text, "%.17g", value);
    return text;
}

std::string json_quoted(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\')
            out += '\\';
        out += c;
    }
    return out + "\"";
}

}  // namespace

// ---------------------------------------------------------------- parsing

std::optional<box> parse_box(std::string_view text, std::string_view what) {
    const std::string name(what);
    if (text == "*")
        return std::nullopt;
    double values[4];
    std::size_t begin = 0;
    for (int i = 0; i < 4; ++i) {
        const std::size_t comma = text.find(',', begin);
        if ((i < 3) != (comma != std::string_view::npos))
            throw invalid_argument_error(name + " '" + std::string(text) +
                                         "' is not four numbers west,south,east,north (or * for anywhere)");
        const std::string_view field = text.substr(begin, i < 3 ? comma - begin : std::string_view::npos);
        const auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), values[i]);
        if (error != std::errc() || end != field.data() + field.size() || field.empty() || !std::isfinite(values[i]))
            throw invalid_argument_error(name + " '" + std::string(text) + "': '" + std::string(field) +
                                         "' is not a number");
        begin = comma + 1;
    }
    const box b{values[0], values[1], values[2], values[3]};
    for (const double longitude : {b.west, b.east})
        if (longitude < -180 || longitude > 180)
            throw invalid_argument_error(name + " '" + std::string(text) + "': longitude " + number_text(longitude) +
                                         " is outside [-180, 180]");
    for (const double latitude : {b.south, b.north})
        if (latitude < -90 || latitude > 90)
            throw invalid_argument_error(name + " '" + std::string(text) + "': latitude " + number_text(latitude) +
                                         " is outside [-90, 90]");
    if (b.west > b.east || b.south > b.north)
        throw invalid_argument_error(name + " '" + std::string(text) +
                                     "': west must not exceed east, nor south north");
    return b;
}

std::optional<combine> combine_named(std::string_view name) {
    if (name == "and")
        return combine::both;
    if (name == "or")
        return combine::either;
    return std::nullopt;
}

control_command parse_command(std::string_view line) {
    const std::size_t space = line.find(' ');
    const std::string_view command = line.substr(0, space);
    const std::string_view rest = space == std::string_view::npos ? std::string_view{} : line.substr(space + 1);
    control_command out;
    if (command == "status" || command == "airports") {
        if (!rest.empty())
            throw invalid_argument_error("'" + std::string(command) + "' takes no arguments");
        out.what = command == "status" ? control_command::kind::status : control_command::kind::airports;
        return out;
    }
    if (command == "auth") {
        out.what = control_command::kind::auth;
        out.token = std::string(rest);
        return out;
    }
    if (command != "query")
        throw invalid_argument_error("unknown command '" + std::string(command.substr(0, 64)) +
                                     "' (known: status, airports, query <departure box> <arrival box> [and|or])");
    std::vector<std::string_view> words;
    for (std::size_t begin = 0; begin <= rest.size() && words.size() < 4;) {
        const std::size_t end = std::min(rest.find(' ', begin), rest.size());
        words.push_back(rest.substr(begin, end - begin));
        begin = end + 1;
    }
    if (words.size() < 2 || words.size() > 3 || rest.empty())
        throw invalid_argument_error("query needs two boxes and maybe how they combine: query <departure> <arrival> "
                                     "[and|or], each box west,south,east,north or *");
    out.what = control_command::kind::query;
    out.departure = parse_box(words[0], "departure box");
    out.arrival = parse_box(words[1], "arrival box");
    const auto how = words.size() == 3 ? combine_named(words[2]) : std::optional(combine::both);
    if (!how)
        throw invalid_argument_error("query: '" + std::string(words[2].substr(0, 32)) +
                                     "' is not how boxes combine (and, or)");
    out.how = *how;
    return out;
}

std::string error_line(std::string_view message) {
    std::string printable(message);
    for (char& c : printable)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            c = '?';
    return "{\"type\":\"error\",\"message\":" + json_quoted(printable) + "}";
}

// ---------------------------------------------------------------- the token

std::string write_token_file(const std::string& path) {
    unsigned char random[32];
    std::size_t got = 0;
    while (got < sizeof random) {
        const ssize_t n = ::getrandom(random + got, sizeof random - got, 0);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            throw std::runtime_error(std::string("--token-file: getrandom: ") + std::strerror(errno));
        }
        got += static_cast<std::size_t>(n);
    }
    std::string token;
    for (const unsigned char byte : random) {
        static constexpr char digits[] = "0123456789abcdef";
        token += digits[byte >> 4];
        token += digits[byte & 15];
    }
    // Never write through a link or into somebody else's file: remove what is
    // there (a stale token of an earlier run), then create a new file.
    struct stat there {};
    if (::lstat(path.c_str(), &there) == 0) {
        if (S_ISDIR(there.st_mode))
            throw std::runtime_error("--token-file " + path + " is a directory");
        if (::unlink(path.c_str()) != 0)
            throw std::runtime_error("--token-file: cannot replace " + path + ": " + std::strerror(errno));
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        throw std::runtime_error("--token-file: cannot create " + path + ": " + std::strerror(errno));
    const std::string text = token + "\n";
    const bool written = ::fchmod(fd, 0600) == 0 &&
                         ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ::fsync(fd) == 0;
    const std::string why = std::strerror(errno);
    if (::close(fd) != 0 || !written)
        throw std::runtime_error("--token-file: cannot write " + path + ": " + why);
    return token;
}

// ---------------------------------------------------------------- the socket

control_port::control_port(std::uint16_t port, control_port_options options) : m_options(std::move(options)) {
    m_listener = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (m_listener < 0)
        throw std::runtime_error(std::string("control port: socket: ") + std::strerror(errno));
    const int yes = 1;
    ::setsockopt(m_listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(m_listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(m_listener, 64) != 0) {
        const std::string why = std::strerror(errno);
        ::close(m_listener);
        throw std::runtime_error("control port 127.0.0.1:" + std::to_string(port) + ": " + why +
                                 " (choose another with --control-port)");
    }
    socklen_t length = sizeof address;
    ::getsockname(m_listener, reinterpret_cast<sockaddr*>(&address), &length);
    m_port = ntohs(address.sin_port);
    m_options.max_clients = std::max<std::size_t>(m_options.max_clients, 1);
    m_options.lines_per_turn = std::max<std::size_t>(m_options.lines_per_turn, 1);
}

control_port::~control_port() {
    for (const client& c : m_clients)
        ::close(c.fd);
    ::close(m_listener);
}

bool control_port::flush(client& c) {
    while (c.out_sent < c.out.size()) {
        const ssize_t sent =
            ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (sent < 0) {
            if (errno == EINTR)
                continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                break;  // the client is not reading: its answers wait, the rank does not
            return false;
        }
        c.out_sent += static_cast<std::size_t>(sent);
        c.last = steady::now();
    }
    if (c.out_sent == c.out.size()) {
        c.out.clear();
        c.out_sent = 0;
    } else if (c.out_sent > (std::size_t{1} << 16)) {
        c.out.erase(0, c.out_sent);
        c.out_sent = 0;
    }
    return true;
}

void control_port::close_client(std::size_t index) {
    ::close(m_clients[index].fd);
    m_clients.erase(m_clients.begin() + static_cast<std::ptrdiff_t>(index));
}

// A new connection always gets in: at the limit, the client that has waited
// longest for a token, else the one idle longest, makes room.
void control_port::make_room(steady::time_point now) {
    (void)now;
    if (m_clients.size() < m_options.max_clients)
        return;
    std::size_t victim = 0;
    for (std::size_t i = 1; i < m_clients.size(); ++i) {
        const client& a = m_clients[i];
        const client& b = m_clients[victim];
        if (a.authenticated != b.authenticated ? !a.authenticated : a.last < b.last)
            victim = i;
    }
    client& c = m_clients[victim];
    c.out += error_line("closing this connection: the control port is full and it was idle the longest") + "\n";
    flush(c);
    close_client(victim);
}

std::string control_port::authenticate(client& c, std::string_view line) {
    control_command command;
    try {
        command = parse_command(line);
    } catch (const invalid_argument_error&) {
        command.what = control_command::kind::status;
    }
    if (command.what != control_command::kind::auth) {
        return error_line("authenticate first: send 'auth <token>' with the token in " +
                          (m_options.token_file.empty() ? std::string("the service's token file")
                                                        : m_options.token_file));
    }
    // Compared in constant time.
    unsigned char differ = command.token.size() != m_options.token.size() ? 1 : 0;
    for (std::size_t i = 0; i < m_options.token.size(); ++i)
        differ |= static_cast<unsigned char>(m_options.token[i] ^ (i < command.token.size() ? command.token[i] : 0));
    if (differ != 0) {
        c.closing = true;
        return error_line("wrong token; closing");
    }
    c.authenticated = true;
    return "{\"type\":\"auth\",\"ok\":true}";
}

void control_port::serve(int timeout_ms, const std::function<std::string(std::string_view)>& answer) {
    const bool need_token = !m_options.token.empty();
    auto now = steady::now();
    // Idle clients go (one waiting for its token sooner).
    for (std::size_t i = 0; i < m_clients.size();) {
        client& c = m_clients[i];
        const double limit = need_token && !c.authenticated ? std::min(m_options.auth_seconds, m_options.idle_seconds)
                                                            : m_options.idle_seconds;
        if (std::chrono::duration<double>(now - c.last).count() > limit) {
            c.out += error_line("closing this connection: idle for more than " + number_text(limit) + " s") + "\n";
            flush(c);
            close_client(i);
        } else {
            ++i;
        }
    }
    auto has_line = [&](const client& c) {
        return !c.closing && c.out.size() - c.out_sent < m_options.max_queued_bytes &&
               c.in.find('\n') != std::string::npos;
    };
    std::vector<pollfd> fds{{m_listener, POLLIN, 0}};
    bool ready = false;
    for (const client& c : m_clients) {
        short events = 0;
        // Not read while its answers pile up (or a whole line waits): the
        // kernel's buffers then hold the client back, not the rank.
        if (!c.closing && !c.peer_done && c.out.size() - c.out_sent < m_options.max_queued_bytes &&
            c.in.size() <= max_line)
            events |= POLLIN;
        if (c.out_sent < c.out.size())
            events |= POLLOUT;
        fds.push_back({c.fd, events, 0});
        ready = ready || has_line(c);
    }
    const int polled = ::poll(fds.data(), fds.size(), ready ? 0 : timeout_ms);
    if (polled < 0)
        return;
    now = steady::now();
    const std::size_t before = m_clients.size();
    if (fds[0].revents & POLLIN) {
        while (true) {
            const int fd = ::accept4(m_listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0)
                break;
            make_room(now);
            client fresh;
            fresh.fd = fd;
            fresh.last = now;
            fresh.authenticated = !need_token;
            m_clients.push_back(std::move(fresh));
        }
    }
    // make_room may have removed clients polled above: match by descriptor.
    for (std::size_t i = 0; i < m_clients.size();) {
        client& c = m_clients[i];
        short revents = 0;
        for (std::size_t f = 1; f <= before && f < fds.size(); ++f)
            if (fds[f].fd == c.fd)
                revents = fds[f].revents;
        bool open = true;
        if (revents & (POLLIN | POLLHUP | POLLERR)) {
            char chunk[4096];
            for (int reads = 0; reads < 16 && c.in.size() <= max_line; ++reads) {
                const ssize_t got = ::recv(c.fd, chunk, sizeof chunk, MSG_DONTWAIT);
                if (got > 0) {
                    c.in.append(chunk, static_cast<std::size_t>(got));
                    c.last = now;
                    continue;
                }
                if (got == 0)
                    c.peer_done = true;
                else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
                    open = false;
                break;
            }
        }
        std::size_t answered = 0;
        std::size_t newline;
        while (open && has_line(c) && answered < m_options.lines_per_turn &&
               (newline = c.in.find('\n')) != std::string::npos) {
            if (newline > max_line) {
                c.out += error_line("command line longer than " + std::to_string(max_line) + " bytes; closing") + "\n";
                c.closing = true;
                break;
            }
            std::string line = c.in.substr(0, newline);
            c.in.erase(0, newline + 1);
            if (!line.empty() && line.back() == '\r')
                line.pop_back();
            c.out += (c.authenticated ? answer(line) : authenticate(c, line)) + "\n";
            c.last = steady::now();
            ++answered;
        }
        if (open && !c.closing && c.in.find('\n') == std::string::npos && (c.in.size() > max_line || c.peer_done)) {
            if (c.peer_done && c.in.size() <= max_line) {
                c.closing = true;  // everything it sent is answered
            } else {
            c.out += error_line("command line longer than " + std::to_string(max_line) + " bytes; closing") + "\n";
            c.closing = true;
            }
        }
        if (open)
            open = flush(c);
        if (!open || (c.closing && c.out.empty()) ||
            (c.closing && std::chrono::duration<double>(now - c.last).count() > 1.0)) {
            close_client(i);
        } else {
            ++i;
        }
    }
}

}  // namespace mpidict::apps::flights
