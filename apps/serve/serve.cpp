// mpidict serve (serve.hpp): options, each rank's event loop and the command
// table.  docs/serve.md is the user's view and says why the loop and the
// parser are written here rather than taken from libuv or hiredis.
#include "serve/serve.hpp"

#include <algorithm>
#include <arpa/inet.h>
#include <cctype>
#include <cerrno>
#include <stdexcept>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <fstream>
#include <memory>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <optional>
#include <sched.h>
#include <string>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <unordered_map>
#include <vector>

#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"
#include "serve/resp.hpp"
#include "serve/store.hpp"

namespace mpidict::apps::serve {
namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void mpidict_serve_on_stop_signal(int) { g_stop_signal = 1; }

struct options {
    std::string bind = "127.0.0.1";
    std::uint64_t port = 6379;
    bool single_port = false;
    std::string requirepass;
    std::string password_file;
    std::uint64_t max_clients = 10000;          // per rank
    std::uint64_t max_bulk_bytes = 512 * 1024;  // one argument
    std::uint64_t max_request_bytes = 1024 * 1024;
    std::uint64_t output_limit = 64 * 1024 * 1024;  // a client's unsent replies
    std::uint64_t max_pipeline = 1024;              // a client's commands in flight
    std::uint64_t buffer_bytes = 4 * 1024 * 1024;   // the engine's B (a command and its reply fit one message)
    double duration = 0;                            // seconds; 0: until SHUTDOWN or a signal
    std::uint64_t wait_us = 0;                      // see --wait-us (docs/serve.md: why 0, yield)
};

// ---- the command table -----------------------------------------------------

enum class kind {
    local,     // answered by the rank the client talks to
    key,       // one visit of key_command at the key's owner
    keys,      // one visit per key (MGET, DEL, EXISTS, UNLINK, MSET)
    ranks,     // one visit of rank_command per rank (DBSIZE, FLUSHALL, INFO)
    scan,      // one visit of rank_command at the rank the cursor names
};

struct command_info {
    int arity;  // Redis's: n exact, -n at least n
    kind how;
    bool no_auth = false;  // allowed before AUTH
};

const std::unordered_map<std::string, command_info>& command_table() {
    static const std::unordered_map<std::string, command_info> table = {
        {"PING", {-1, kind::local}},        {"ECHO", {2, kind::local}},
        {"SELECT", {2, kind::local}},       {"QUIT", {-1, kind::local, true}},
        {"AUTH", {-2, kind::local, true}},  {"HELLO", {-1, kind::local, true}},
        {"CLIENT", {-2, kind::local}},      {"COMMAND", {-1, kind::local}},
        {"CONFIG", {-2, kind::local}},      {"SHUTDOWN", {-1, kind::local}},
        {"GET", {2, kind::key}},            {"SET", {-3, kind::key}},
        {"INCR", {2, kind::key}},           {"DECR", {2, kind::key}},
        {"INCRBY", {3, kind::key}},         {"DECRBY", {3, kind::key}},
        {"APPEND", {3, kind::key}},         {"STRLEN", {2, kind::key}},
        {"TYPE", {2, kind::key}},           {"EXPIRE", {-3, kind::key}},
        {"PEXPIRE", {-3, kind::key}},       {"TTL", {2, kind::key}},
        {"PTTL", {2, kind::key}},           {"PERSIST", {2, kind::key}},
        {"HSET", {-4, kind::key}},          {"HMSET", {-4, kind::key}},
        {"HGET", {3, kind::key}},           {"HMGET", {-3, kind::key}},
        {"HGETALL", {2, kind::key}},        {"HDEL", {-3, kind::key}},
        {"HLEN", {2, kind::key}},           {"HEXISTS", {3, kind::key}},
        {"ZADD", {-4, kind::key}},          {"ZSCORE", {3, kind::key}},
        {"ZREM", {-3, kind::key}},          {"ZCARD", {2, kind::key}},
        {"ZRANGE", {-4, kind::key}},        {"ZREVRANGE", {-4, kind::key}},
        {"ZRANGEBYSCORE", {-4, kind::key}}, {"ZREVRANGEBYSCORE", {-4, kind::key}},
        {"ZRANGEBYLEX", {-4, kind::key}},   {"ZREVRANGEBYLEX", {-4, kind::key}},
        {"MGET", {-2, kind::keys}},         {"MSET", {-3, kind::keys}},
        {"DEL", {-2, kind::keys}},          {"UNLINK", {-2, kind::keys}},
        {"EXISTS", {-2, kind::keys}},       {"DBSIZE", {1, kind::ranks}},
        {"FLUSHALL", {-1, kind::ranks}},    {"FLUSHDB", {-1, kind::ranks}},
        {"INFO", {-1, kind::ranks}},        {"SCAN", {-2, kind::scan}},
    };
    return table;
}

std::string upper(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return out;
}
std::string lower(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
}

// redis-server's words for an unknown command.
std::string unknown_command(const std::vector<std::string>& argv) {
    std::string arguments;
    for (std::size_t i = 1; i < argv.size() && arguments.size() < 128; ++i)
        arguments += "'" + argv[i].substr(0, 128 - arguments.size()) + "' ";
    return error_reply("ERR unknown command '" + argv[0].substr(0, 128) + "', with args beginning with: " +
                       arguments);
}

// ---- clients ---------------------------------------------------------------

// How a reply is made from its visits' replies.
enum class combine { ready, single, array, sum, ok, ranks_sum, info, scan, flushall };

// How a reply looks in RESP3 (HELLO 3), beyond nulls becoming '_'.
enum class shape { plain, map, real, pairs };

struct pending {
    std::string text;  // the reply when how == ready
    combine how = combine::ready;
    bool resp3 = false;          // the client had said HELLO 3 when it sent this command
    shape resp3_shape = shape::plain;
    std::vector<request<std::string>> parts;
    std::uint64_t scan_rank = 0;
    bool close_after = false;
};

struct client {
    int fd = -1;
    std::uint64_t id = 0;
    std::string in;
    std::string out;
    std::size_t out_sent = 0;
    std::deque<pending> queue;
    bool authenticated = false;
    bool resp3 = false;
    bool closing = false;       // no more commands; close once `out` is sent
    bool want_write = false;    // registered for EPOLLOUT
    std::string name;
};

// The RESP3 form of a command's reply (shape: what redis-server 7 sends for it).
shape resp3_shape_of(const std::vector<std::string>& argv) {
    const std::string& name = argv[0];
    if (name == "HGETALL")
        return shape::map;
    if (name == "ZSCORE")
        return shape::real;
    if (name == "ZADD") {
        for (std::size_t i = 2; i < argv.size(); ++i)
            if (upper(argv[i]) == "INCR")
                return shape::real;
        return shape::plain;
    }
    if (name.rfind("ZRANGE", 0) == 0 || name.rfind("ZREVRANGE", 0) == 0) {
        for (std::size_t i = 4; i < argv.size(); ++i)
            if (upper(argv[i]) == "WITHSCORES")
                return shape::pairs;
    }
    return shape::plain;
}

// Copies one RESP2 value from `in` at `at` into `out`, nulls as RESP3's '_'.
void copy_resp3(std::string_view in, std::size_t& at, std::string& out) {
    const char type = in[at];
    const std::size_t eol = in.find("\r\n", at);
    const std::string_view head = in.substr(at + 1, eol - at - 1);
    at = eol + 2;
    long long n = 0;
    if (type == '$' || type == '*')
        parse_integer(head, n);
    if ((type == '$' || type == '*') && n < 0) {
        out += "_\r\n";
        return;
    }
    out += type;
    out += head;
    out += "\r\n";
    if (type == '$') {
        out.append(in.substr(at, static_cast<std::size_t>(n) + 2));
        at += static_cast<std::size_t>(n) + 2;
    } else if (type == '*') {
        for (long long i = 0; i < n; ++i)
            copy_resp3(in, at, out);
    }
}

std::string to_resp3(const std::string& reply, shape form) {
    if (reply.empty() || reply[0] == '-')
        return reply;
    std::string out;
    std::size_t at = 0;
    const std::size_t eol = reply.find("\r\n");
    long long n = 0;
    parse_integer(std::string_view(reply).substr(1, eol - 1), n);
    if (form == shape::real && reply[0] == '$' && n >= 0) {
        out = "," + reply.substr(eol + 2, static_cast<std::size_t>(n)) + "\r\n";
        return out;
    }
    if ((form == shape::map || form == shape::pairs) && reply[0] == '*' && n >= 0 && n % 2 == 0) {
        out = (form == shape::map ? "%" : "*") + std::to_string(n / 2) + "\r\n";
        at = eol + 2;
        for (long long i = 0; i < n / 2; ++i) {
            if (form == shape::pairs)
                out += "*2\r\n";
            copy_resp3(reply, at, out);
            if (form == shape::pairs && reply[at] == '$') {  // the score as a double
                const std::size_t score_eol = reply.find("\r\n", at);
                long long length = 0;
                parse_integer(std::string_view(reply).substr(at + 1, score_eol - at - 1), length);
                out += "," + reply.substr(score_eol + 2, static_cast<std::size_t>(length)) + "\r\n";
                at = score_eol + 2 + static_cast<std::size_t>(length) + 2;
            } else {
                copy_resp3(reply, at, out);
            }
        }
        return out;
    }
    copy_resp3(reply, at, out);
    return out;
}

class service {
public:
    service(keyspace& map, const options& settings, int listener, int epoll_fd)
        : m_map(map), m_options(settings), m_listener(listener), m_epoll(epoll_fd) {
        m_limits.max_bulk_bytes = settings.max_bulk_bytes;
        m_limits.max_request_bytes = settings.max_request_bytes;
        m_password = settings.requirepass;
    }
    ~service() {
        for (auto& [fd, c] : m_clients)
            ::close(fd);
    }

    bool stop_requested() const { return m_shutdown; }

    // One round: sockets (waiting up to `timeout_ms` for one), then progress,
    // then finished replies.  Returns true if anything happened.
    bool round(long timeout_us) {
        epoll_event events[64];
        const timespec wait{timeout_us / 1000000, (timeout_us % 1000000) * 1000};
        int ready = m_pwait2 ? ::epoll_pwait2(m_epoll, events, 64, &wait, nullptr) : -1;
        if (ready < 0 && errno == ENOSYS) {  // before Linux 5.11: millisecond timeouts
            m_pwait2 = false;
        }
        if (!m_pwait2)
            ready = ::epoll_wait(m_epoll, events, 64, static_cast<int>((timeout_us + 999) / 1000));
        bool busy = ready > 0;
        for (int i = 0; i < ready; ++i) {
            const int fd = events[i].data.fd;
            if (fd == m_listener) {
                accept_clients();
                continue;
            }
            auto found = m_clients.find(fd);
            if (found == m_clients.end())
                continue;
            client& c = *found->second;
            bool gone = false;
            if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))
                gone = read_client(c);
            parse_commands(c);
            if (gone) {
                close_client(c);  // its unfinished commands still run at their owners; the replies are dropped
                continue;
            }
            m_dirty.push_back(fd);
        }
        {
            runtime::engine_lock lock(m_map.engine());
            busy |= m_map.engine().progress();
            m_map.engine().ship_all();
        }
        // Clients with replies to finish or to send.
        std::vector<int> work;
        work.swap(m_dirty);
        for (auto& [fd, c] : m_clients)
            if (!c->queue.empty() || c->out.size() > c->out_sent)
                work.push_back(fd);
        std::sort(work.begin(), work.end());
        work.erase(std::unique(work.begin(), work.end()), work.end());
        for (const int fd : work) {
            auto found = m_clients.find(fd);
            if (found == m_clients.end())
                continue;
            client& c = *found->second;
            const std::size_t before = c.queue.size();
            finish_replies(c);
            if (c.queue.size() != before) {
                busy = true;
                parse_commands(c);  // room in the pipeline again
                finish_replies(c);
            }
            write_client(c);
        }
        return busy;
    }

    bool has_pending() const {
        for (const auto& [fd, c] : m_clients)
            if (!c->queue.empty())
                return true;
        return false;
    }

    void sweep() {
        if (!sweep_wanted())
            return;
        for (const std::string& key : dead_local_keys(m_map, 4096))
            m_map.async_visit(key, drop_if_dead{});
    }

private:
    void accept_clients() {
        while (true) {
            const int fd = ::accept4(m_listener, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0)
                return;
            if (m_clients.size() >= m_options.max_clients) {
                const char* full = "-ERR max number of clients reached\r\n";
                [[maybe_unused]] ssize_t sent = ::send(fd, full, std::strlen(full), MSG_NOSIGNAL);
                ::close(fd);
                continue;
            }
            const int yes = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
            auto c = std::make_unique<client>();
            c->fd = fd;
            c->id = ++m_next_client;
            c->authenticated = m_password.empty();
            epoll_event event{};
            event.events = EPOLLIN;
            event.data.fd = fd;
            ::epoll_ctl(m_epoll, EPOLL_CTL_ADD, fd, &event);
            m_clients.emplace(fd, std::move(c));
        }
    }

    void close_client(client& c) {
        ::epoll_ctl(m_epoll, EPOLL_CTL_DEL, c.fd, nullptr);
        ::close(c.fd);
        m_clients.erase(c.fd);  // destroys c: its unfinished requests are abandoned
    }

    // Reads what the client sent; true when the peer has gone.
    bool read_client(client& c) {
        if (c.closing)
            return false;
        // Backpressure: a client whose replies are not read, or whose
        // pipeline is full, is not read either (the kernel's buffers fill).
        if (c.out.size() - c.out_sent > 1024 * 1024 || c.queue.size() >= m_options.max_pipeline)
            return false;
        char chunk[16384];
        while (true) {
            const ssize_t got = ::recv(c.fd, chunk, sizeof chunk, 0);
            if (got > 0) {
                c.in.append(chunk, static_cast<std::size_t>(got));
                if (c.in.size() > m_options.max_request_bytes + 64 * 1024)
                    return false;  // parse what is there first
                continue;
            }
            if (got < 0 && errno == EINTR)
                continue;
            return got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK);
        }
    }

    void parse_commands(client& c) {
        std::size_t position = 0;
        std::vector<std::string> argv;
        while (!c.closing && c.queue.size() < m_options.max_pipeline && position < c.in.size()) {
            const parse_result parsed = parse_request(std::string_view(c.in).substr(position), m_limits, argv);
            if (parsed.status == parse_status::incomplete)
                break;
            if (parsed.status == parse_status::error) {
                pending p;
                p.resp3 = c.resp3;
                p.text = error_reply(parsed.error);
                p.close_after = true;
                c.queue.push_back(std::move(p));
                c.closing = true;
                break;
            }
            position += parsed.consumed;
            if (!argv.empty())
                dispatch(c, argv);
        }
        c.in.erase(0, position);
    }

    void ready(client& c, std::string text, bool close_after = false, shape form = shape::plain) {
        pending p;
        p.resp3 = c.resp3;
        p.resp3_shape = form;
        p.text = std::move(text);
        p.close_after = close_after;
        if (close_after)
            c.closing = true;
        c.queue.push_back(std::move(p));
    }

    void dispatch(client& c, std::vector<std::string>& argv) {
        ++m_commands;
        const std::string name = upper(argv[0]);
        const auto& table = command_table();
        const auto found = table.find(name);
        if (found == table.end())
            return ready(c, unknown_command(argv));
        const command_info& info = found->second;
        const int argc = static_cast<int>(argv.size());
        if ((info.arity > 0 && argc != info.arity) || argc < -info.arity)
            return ready(c, error_reply("ERR wrong number of arguments for '" + lower(name) + "' command"));
        // As in redis-server, an unknown subcommand is refused before the
        // password is asked for (redis-py's CLIENT SETINFO on connecting).
        if ((name == "CLIENT" || name == "CONFIG" || name == "COMMAND") && argc >= 2) {
            static const std::unordered_map<std::string, std::vector<std::string>> known = {
                {"CLIENT", {"SETNAME", "GETNAME", "ID"}},
                {"CONFIG", {"GET"}},
                {"COMMAND", {"COUNT", "DOCS", "INFO"}}};
            const auto& subs = known.at(name);
            if (std::find(subs.begin(), subs.end(), upper(argv[1])) == subs.end())
                return ready(c, error_reply("ERR unknown subcommand '" + argv[1].substr(0, 128) + "'. Try " + name +
                                            " HELP."));
        }
        if (!c.authenticated && !info.no_auth)
            return ready(c, error_reply("NOAUTH Authentication required."));
        argv[0] = name;
        switch (info.how) {
        case kind::local:
            return local_command(c, argv);
        case kind::key: {
            pending p;
            p.resp3 = c.resp3;
            p.how = combine::single;
            p.resp3 = c.resp3;
            p.resp3_shape = resp3_shape_of(argv);
            p.parts.push_back(m_map.visit(argv[1], key_command{}, argv));
            c.queue.push_back(std::move(p));
            return;
        }
        case kind::keys:
            return keys_command(c, argv);
        case kind::ranks: {
            if ((name == "FLUSHALL" || name == "FLUSHDB") && argc > 2)
                return ready(c, error_reply("ERR syntax error"));
            if ((name == "FLUSHALL" || name == "FLUSHDB") && argc == 2 && upper(argv[1]) != "ASYNC" &&
                upper(argv[1]) != "SYNC")
                return ready(c, error_reply("ERR syntax error"));
            pending p;
            p.resp3 = c.resp3;
            p.how = name == "INFO" ? combine::info : name == "DBSIZE" ? combine::ranks_sum : combine::flushall;
            const std::vector<std::string> order{name == "FLUSHDB" ? std::string("FLUSHALL") : name};
            for (int r = 0; r < m_map.num_ranks(); ++r)
                p.parts.push_back(m_map.visit(target_rank{r}, std::string(), rank_command{}, order));
            c.queue.push_back(std::move(p));
            return;
        }
        case kind::scan:
            return scan_command(c, argv);
        }
    }

    void keys_command(client& c, const std::vector<std::string>& argv) {
        const std::string& name = argv[0];
        pending p;
        p.resp3 = c.resp3;
        if (name == "MSET") {
            if (argv.size() % 2 != 1)
                return ready(c, error_reply("ERR wrong number of arguments for 'mset' command"));
            p.how = combine::ok;
            for (std::size_t i = 1; i + 1 < argv.size(); i += 2)
                p.parts.push_back(m_map.visit(argv[i], key_command{}, std::vector<std::string>{"SET", argv[i], argv[i + 1]}));
        } else {
            const std::string one = name == "MGET" ? "MGET1" : name == "EXISTS" ? "EXISTS1" : "DEL1";
            p.how = name == "MGET" ? combine::array : combine::sum;
            for (std::size_t i = 1; i < argv.size(); ++i)
                p.parts.push_back(m_map.visit(argv[i], key_command{}, std::vector<std::string>{one, argv[i]}));
        }
        c.queue.push_back(std::move(p));
    }

    void scan_command(client& c, const std::vector<std::string>& argv) {
        // SCAN cursor [MATCH pattern] [COUNT count] [TYPE type]
        long long cursor_value = 0;
        std::uint64_t cursor = 0;
        if (!parse_integer(argv[1], cursor_value)) {
            // Redis takes any unsigned 64-bit number.
            char* end = nullptr;
            errno = 0;
            cursor = std::strtoull(argv[1].c_str(), &end, 10);
            if (argv[1].empty() || *end != '\0' || errno == ERANGE || argv[1][0] == '-')
                return ready(c, error_reply("ERR invalid cursor"));
        } else {
            cursor = static_cast<std::uint64_t>(cursor_value);
        }
        long long count = 10;
        std::string pattern;
        bool has_pattern = false;
        for (std::size_t i = 2; i < argv.size(); i += 2) {
            const std::string option = upper(argv[i]);
            if (i + 1 >= argv.size())
                return ready(c, error_reply("ERR syntax error"));
            if (option == "COUNT") {
                if (!parse_integer(argv[i + 1], count))
                    return ready(c, error_reply("ERR value is not an integer or out of range"));
                if (count < 1)
                    return ready(c, error_reply("ERR syntax error"));
            } else if (option == "MATCH") {
                pattern = argv[i + 1];
                has_pattern = true;
            } else {
                return ready(c, error_reply("ERR syntax error"));
            }
        }
        const std::uint64_t rank = cursor >> (64 - scan_rank_bits);
        if (rank >= static_cast<std::uint64_t>(m_map.num_ranks()))
            return ready(c, "*2\r\n$1\r\n0\r\n*0\r\n");  // past the last rank: done
        std::vector<std::string> order{"SCAN", std::to_string(cursor & scan_position_mask), std::to_string(count)};
        if (has_pattern && pattern != "*")
            order.push_back(pattern);
        pending p;
        p.resp3 = c.resp3;
        p.how = combine::scan;
        p.scan_rank = rank;
        p.parts.push_back(m_map.visit(target_rank{static_cast<int>(rank)}, std::string(), rank_command{}, order));
        c.queue.push_back(std::move(p));
    }

    void local_command(client& c, const std::vector<std::string>& argv) {
        const std::string& name = argv[0];
        const std::size_t argc = argv.size();
        if (name == "PING") {
            if (argc > 2)
                return ready(c, error_reply("ERR wrong number of arguments for 'ping' command"));
            if (argc == 2) {
                std::string out;
                reply_bulk(out, argv[1]);
                return ready(c, out);
            }
            return ready(c, "+PONG\r\n");
        }
        if (name == "ECHO") {
            std::string out;
            reply_bulk(out, argv[1]);
            return ready(c, out);
        }
        if (name == "QUIT")
            return ready(c, "+OK\r\n", true);
        if (name == "SELECT") {
            long long index = 0;
            if (!parse_integer(argv[1], index))
                return ready(c, error_reply("ERR value is not an integer or out of range"));
            if (index < 0 || index >= 16)
                return ready(c, error_reply("ERR DB index is out of range"));
            if (index != 0)
                return ready(c, error_reply("ERR mpidict serve has database 0 only"));
            return ready(c, "+OK\r\n");
        }
        if (name == "AUTH") {
            if (argc > 3)
                return ready(c, error_reply("ERR syntax error"));
            if (m_password.empty() && argc == 2)
                return ready(c, error_reply("ERR AUTH <password> called without any password configured for the "
                                            "default user. Are you sure your configuration is correct?"));
            const bool user_ok = argc == 2 || argv[1] == "default";
            const std::string& given = argv[argc - 1];
            if (!user_ok || (!m_password.empty() && given != m_password) ) {
                return ready(c, error_reply("WRONGPASS invalid username-password pair or user is disabled."));
            }
            c.authenticated = true;
            return ready(c, "+OK\r\n");
        }
        if (name == "HELLO")
            return hello(c, argv);
        if (name == "CLIENT")
            return client_command(c, argv);
        if (name == "COMMAND") {
            const std::string sub = argc > 1 ? upper(argv[1]) : "";
            if (sub == "COUNT")
                return ready(c, integer_reply(static_cast<long long>(command_table().size())));
            if (sub.empty() || sub == "DOCS")
                return ready(c, "*0\r\n");
            if (sub == "INFO") {
                std::string out;
                reply_array_header(out, argc - 2);
                for (std::size_t i = 2; i < argc; ++i)
                    reply_null_array(out);
                return ready(c, out);
            }
            return ready(c, error_reply("ERR unknown subcommand '" + argv[1].substr(0, 128) +
                                        "'. Try COMMAND HELP."));
        }
        if (name == "CONFIG") {
            const std::string sub = upper(argv[1]);
            if (sub == "GET")
                return ready(c, "*0\r\n", false, shape::map);
            return ready(c, error_reply("ERR unknown subcommand '" + argv[1].substr(0, 128) + "'. Try CONFIG HELP."));
        }
        if (name == "SHUTDOWN") {
            m_shutdown = true;
            c.closing = true;
            return;
        }
    }

    void hello(client& c, const std::vector<std::string>& argv) {
        std::size_t i = 1;
        int protocol = c.resp3 ? 3 : 2;
        if (argv.size() > 1) {
            long long version = 0;
            if (!parse_integer(argv[1], version))
                return ready(c, error_reply("ERR Protocol version is not an integer or out of range"));
            if (version != 2 && version != 3)
                return ready(c, error_reply("NOPROTO sorry, this protocol version is not supported."));
            protocol = static_cast<int>(version);
            i = 2;
        }
        for (; i < argv.size(); ++i) {
            const std::string option = upper(argv[i]);
            if (option == "AUTH" && i + 2 < argv.size()) {
                if ((argv[i + 1] != "default") || (!m_password.empty() && argv[i + 2] != m_password) ||
                    (m_password.empty() && false))
                    return ready(c, error_reply("WRONGPASS invalid username-password pair or user is disabled."));
                c.authenticated = true;
                i += 2;
            } else if (option == "SETNAME" && i + 1 < argv.size()) {
                c.name = argv[++i];
            } else {
                return ready(c, error_reply("ERR Syntax error in HELLO option '" + argv[i] + "'"));
            }
        }
        if (!c.authenticated)
            return ready(c, error_reply("NOAUTH HELLO must be called with the client already authenticated, "
                                        "otherwise the HELLO <proto> AUTH <user> <pass> option can be used to "
                                        "authenticate the client and select the RESP protocol version at the same "
                                        "time"));
        std::string out;
        reply_array_header(out, 14);
        reply_bulk(out, "server");
        reply_bulk(out, "redis");
        reply_bulk(out, "version");
        reply_bulk(out, "7.0.0");
        reply_bulk(out, "proto");
        reply_integer(out, protocol);
        reply_bulk(out, "id");
        reply_integer(out, static_cast<long long>(c.id));
        reply_bulk(out, "mode");
        reply_bulk(out, "standalone");
        reply_bulk(out, "role");
        reply_bulk(out, "master");
        reply_bulk(out, "modules");
        reply_array_header(out, 0);
        c.resp3 = protocol == 3;
        ready(c, out, false, shape::map);
    }

    void client_command(client& c, const std::vector<std::string>& argv) {
        const std::string sub = upper(argv[1]);
        if (sub == "SETNAME" && argv.size() == 3) {
            for (const char ch : argv[2])
                if (ch < '!' || ch > '~')
                    return ready(c, error_reply("ERR Client names cannot contain spaces, newlines or special "
                                                "characters."));
            c.name = argv[2];
            return ready(c, "+OK\r\n");
        }
        if (sub == "GETNAME" && argv.size() == 2) {
            std::string out;
            if (c.name.empty())
                reply_null(out);
            else
                reply_bulk(out, c.name);
            return ready(c, out);
        }
        if (sub == "ID" && argv.size() == 2)
            return ready(c, integer_reply(static_cast<long long>(c.id)));
        if (sub == "SETNAME" || sub == "GETNAME" || sub == "ID")
            return ready(c, error_reply("ERR wrong number of arguments for 'client|" + lower(sub) + "' command"));
        return ready(c, error_reply("ERR unknown subcommand '" + argv[1].substr(0, 128) + "'. Try CLIENT HELP."));
    }

    // Moves finished replies, in order, into the client's output.
    void finish_replies(client& c) {
        while (!c.queue.empty()) {
            pending& p = c.queue.front();
            for (auto& part : p.parts)
                if (!part.test())
                    return;
            try {
                if (p.resp3)
                    c.out += to_resp3(assemble(p), p.resp3_shape);
                else
                    c.out += assemble(p);
            } catch (const std::exception& problem) {
                c.out += error_reply(std::string("ERR ") + problem.what());
            }
            const bool close_after = p.close_after;
            c.queue.pop_front();
            if (close_after) {
                c.queue.clear();
                break;
            }
        }
    }

    std::string assemble(pending& p) {
        switch (p.how) {
        case combine::ready:
            return std::move(p.text);
        case combine::single:
            return p.parts[0].get();
        case combine::array: {
            std::string out;
            reply_array_header(out, p.parts.size());
            for (auto& part : p.parts)
                out += part.get();
            return out;
        }
        case combine::sum:
        case combine::ranks_sum: {
            long long total = 0;
            for (auto& part : p.parts) {
                const std::string reply = part.get();
                long long value = 0;
                if (reply.size() > 3 && reply[0] == ':' && parse_integer(std::string_view(reply).substr(1, reply.size() - 3), value))
                    total += value;
            }
            return integer_reply(total);
        }
        case combine::ok:
        case combine::flushall: {
            std::string first_error;
            for (auto& part : p.parts) {
                const std::string reply = part.get();
                if (!reply.empty() && reply[0] == '-' && first_error.empty())
                    first_error = reply;
            }
            return first_error.empty() ? "+OK\r\n" : first_error;
        }
        case combine::info:
            return info(p);
        case combine::scan: {
            const std::string reply = p.parts[0].get();
            // "*n\r\n$len\r\n<next>\r\n" then the keys.
            std::size_t line = reply.find("\r\n");
            const std::size_t count = std::stoull(reply.substr(1, line - 1)) - 1;
            const std::size_t length_end = reply.find("\r\n", line + 2);
            const std::size_t length = std::stoull(reply.substr(line + 3, length_end - line - 3));
            const std::uint64_t next = std::stoull(reply.substr(length_end + 2, length));
            const std::size_t keys_at = length_end + 2 + length + 2;
            std::uint64_t cursor = 0;
            if (next != 0)
                cursor = (p.scan_rank << (64 - scan_rank_bits)) | next;
            else if (p.scan_rank + 1 < static_cast<std::uint64_t>(m_map.num_ranks()))
                cursor = (p.scan_rank + 1) << (64 - scan_rank_bits);
            std::string out = "*2\r\n";
            reply_bulk(out, std::to_string(cursor));
            reply_array_header(out, count);
            out.append(reply, keys_at);
            return out;
        }
        }
        return error_reply("ERR internal: no way to assemble this reply");
    }

    std::string info(pending& p) {
        long long keys = 0, expiring = 0, memory = 0, commands = 0, objects = 0;
        for (auto& part : p.parts) {
            const std::string reply = part.get();
            const std::size_t body = reply.find("\r\n") + 2;
            long long a = 0, b = 0, m = 0, o = 0, x = 0;
            std::sscanf(reply.c_str() + body, "%lld %lld %lld %lld %lld", &a, &b, &m, &o, &x);
            keys += a, expiring += b, memory += m, commands += o, objects += x;
        }
        std::string text = "# Server\r\nredis_version:7.0.0\r\nredis_mode:standalone\r\nmpidict_serve:1\r\n";
        text += "mpidict_ranks:" + std::to_string(m_map.num_ranks()) + "\r\n";
        text += "tcp_port:" + std::to_string(m_options.port) + "\r\n";
        text += "\r\n# Clients\r\nconnected_clients:" + std::to_string(m_clients.size()) + "\r\n";
        text += "\r\n# Memory\r\nused_memory:" + std::to_string(memory) + "\r\n";
        text += "\r\n# Stats\r\ntotal_commands_processed:" + std::to_string(m_commands) + "\r\n";
        text += "mpidict_owner_commands:" + std::to_string(commands) + "\r\n";
        text += "mpidict_objects:" + std::to_string(objects) + "\r\n";
        text += "\r\n# Keyspace\r\n";
        if (keys > 0)
            text += "db0:keys=" + std::to_string(keys) + ",expires=" + std::to_string(expiring) + ",avg_ttl=0\r\n";
        std::string out;
        reply_bulk(out, text);
        return out;
    }

    void write_client(client& c) {
        while (c.out_sent < c.out.size()) {
            const ssize_t sent = ::send(c.fd, c.out.data() + c.out_sent, c.out.size() - c.out_sent, MSG_NOSIGNAL);
            if (sent > 0) {
                c.out_sent += static_cast<std::size_t>(sent);
                continue;
            }
            if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                if (c.out.size() - c.out_sent > m_options.output_limit)
                    return close_client(c);  // redis-server's client-output-buffer-limit: disconnect
                if (!c.want_write) {
                    epoll_event event{};
                    event.events = EPOLLIN | EPOLLOUT;
                    event.data.fd = c.fd;
                    ::epoll_ctl(m_epoll, EPOLL_CTL_MOD, c.fd, &event);
                    c.want_write = true;
                }
                return;
            }
            if (sent < 0 && errno == EINTR)
                continue;
            return close_client(c);
        }
        c.out.clear();
        c.out_sent = 0;
        if (c.want_write) {
            epoll_event event{};
            event.events = EPOLLIN;
            event.data.fd = c.fd;
            ::epoll_ctl(m_epoll, EPOLL_CTL_MOD, c.fd, &event);
            c.want_write = false;
        }
        if (c.closing && c.queue.empty())
            return close_client(c);
        if (!c.closing && !c.in.empty())
            m_dirty.push_back(c.fd);
    }

    keyspace& m_map;
    const options& m_options;
    int m_listener;
    int m_epoll;
    resp_limits m_limits;
    std::string m_password;
    std::unordered_map<int, std::unique_ptr<client>> m_clients;
    std::vector<int> m_dirty;
    std::uint64_t m_next_client = 0;
    std::uint64_t m_commands = 0;
    bool m_shutdown = false;
    bool m_pwait2 = true;
};

// Binds and listens; returns the socket or throws with the reason.
int open_listener(const std::string& address, std::uint16_t port, std::uint16_t& bound) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        throw std::runtime_error(std::string("socket: ") + std::strerror(errno));
    const int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    sockaddr_in where{};
    where.sin_family = AF_INET;
    where.sin_port = htons(port);
    if (::inet_pton(AF_INET, address.c_str(), &where.sin_addr) != 1) {
        ::close(fd);
        throw std::runtime_error("--bind " + address + ": not an IPv4 address");
    }
    if (::bind(fd, reinterpret_cast<sockaddr*>(&where), sizeof where) != 0 || ::listen(fd, 511) != 0) {
        const std::string why = std::strerror(errno);
        ::close(fd);
        throw std::runtime_error(address + ":" + std::to_string(port) + ": " + why + " (choose another with --port)");
    }
    socklen_t length = sizeof where;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&where), &length);
    bound = ntohs(where.sin_port);
    return fd;
}

int run(MPI_Comm comm, const options& settings, const std::string& program, const support::exit_reporter& finish) {
    int rank = 0, ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);

    std::string problem;
    options opts = settings;
    if (!opts.password_file.empty()) {
        std::ifstream file(opts.password_file);
        std::string line;
        if (!file || !std::getline(file, line))
            problem = "--password-file " + opts.password_file + ": cannot read a first line";
        else
            opts.requirepass = line;
    }
    if (opts.port != 0 && !opts.single_port && opts.port + static_cast<std::uint64_t>(ranks) - 1 > 65535)
        problem = "--port " + std::to_string(opts.port) + " + " + std::to_string(ranks - 1) + " ranks passes 65535";
    int listener = -1;
    std::uint16_t bound = 0;
    const bool listens = !opts.single_port || rank == 0;
    if (problem.empty() && listens) {
        try {
            const std::uint64_t port = opts.port == 0 ? 0 : opts.port + (opts.single_port ? 0 : rank);
            listener = open_listener(opts.bind, static_cast<std::uint16_t>(port), bound);
        } catch (const std::exception& e) {
            problem = "rank " + std::to_string(rank) + ": " + e.what();
        }
    }
    if (!(problem = support::agree_on_failure(comm, problem)).empty()) {
        if (listener >= 0)
            ::close(listener);
        if (rank == 0)
            std::fprintf(stderr, "%s: error: %s\n", program.c_str(), problem.c_str());
        return finish(support::exit_usage);
    }

    hash_map_config config;
    config.runtime.buffer_bytes = opts.buffer_bytes;
    config.runtime.routing = runtime::routing_mode::direct;  // a request never waits on a third rank
    auto map = std::make_unique<keyspace>(comm, config);

    const int epoll_fd = ::epoll_create1(EPOLL_CLOEXEC);
    if (listener >= 0) {
        epoll_event event{};
        event.events = EPOLLIN;
        event.data.fd = listener;
        ::epoll_ctl(epoll_fd, EPOLL_CTL_ADD, listener, &event);
    }
    std::vector<int> ports(static_cast<std::size_t>(ranks), 0);
    const int mine = bound;
    MPI_Gather(&mine, 1, MPI_INT, ports.data(), 1, MPI_INT, 0, comm);
    opts.port = bound;
    if (rank == 0) {
        std::string list;
        for (int r = 0; r < ranks; ++r)
            if (ports[static_cast<std::size_t>(r)] != 0)
                list += " " + opts.bind + ":" + std::to_string(ports[static_cast<std::size_t>(r)]);
        std::printf("%s: ready: %d ranks, listening on%s\n", program.c_str(), ranks, list.c_str());
        std::fflush(stdout);
    }

    std::signal(SIGINT, mpidict_serve_on_stop_signal);
    std::signal(SIGTERM, mpidict_serve_on_stop_signal);
    std::signal(SIGPIPE, SIG_IGN);
    MPI_Comm orders;
    MPI_Comm_dup(comm, &orders);
    constexpr int stop_tag = 1, ask_tag = 2;
    int stop_code = 0, ask_code = 0;
    MPI_Request stop_request = MPI_REQUEST_NULL;
    if (rank != 0)
        MPI_Irecv(&stop_code, 1, MPI_INT, 0, stop_tag, orders, &stop_request);
    MPI_Request ask_request = MPI_REQUEST_NULL;
    if (rank == 0)
        MPI_Irecv(&ask_code, 1, MPI_INT, MPI_ANY_SOURCE, ask_tag, orders, &ask_request);
    bool asked = false;

    const auto began = std::chrono::steady_clock::now();
    auto last_activity = began;
    auto last_sweep = began;
    const char* reason = "";
    {
        service loop(*map, opts, listener, epoll_fd);
        while (true) {
            const auto now = std::chrono::steady_clock::now();
            // Block in epoll only when nothing is in flight here and nothing
            // happened for 2 ms; even then for 1 ms at most, so that requests
            // from other ranks wait that long at worst.
            const bool idle = !loop.has_pending() && now - last_activity > std::chrono::milliseconds(2);
            // Something in flight but nothing happened last round: yield the
            // core (--wait-us 0) or wait that long for a socket (the design
            // the benchmark compares, docs/serve.md).
            const bool waiting = !idle && now - last_activity > std::chrono::microseconds(50);
            if (loop.round(idle ? 1000 : waiting ? static_cast<long>(opts.wait_us) : 0))
                last_activity = std::chrono::steady_clock::now();
            else if (!idle && (!waiting || opts.wait_us == 0))
                sched_yield();
            if (now - last_sweep > std::chrono::milliseconds(200)) {
                last_sweep = now;
                loop.sweep();
            }
            // --duration is rank 0's to decide; SHUTDOWN and signals reach any rank.
            const bool wants_stop = g_stop_signal || loop.stop_requested() ||
                                    (rank == 0 && opts.duration > 0 &&
                                     std::chrono::duration<double>(now - began).count() >= opts.duration);
            if (rank == 0) {
                int arrived = 0;
                MPI_Test(&ask_request, &arrived, MPI_STATUS_IGNORE);
                if (arrived || wants_stop) {
                    reason = arrived ? "SHUTDOWN on another rank" : g_stop_signal ? "stopped by a signal"
                             : loop.stop_requested() ? "SHUTDOWN" : "--duration passed";
                    const int code = 1;
                    for (int r = 1; r < ranks; ++r)
                        MPI_Send(&code, 1, MPI_INT, r, stop_tag, orders);
                    break;
                }
            } else {
                if (wants_stop && !asked) {
                    const int code = 1;
                    MPI_Send(&code, 1, MPI_INT, 0, ask_tag, orders);
                    asked = true;
                }
                int arrived = 0;
                MPI_Test(&stop_request, &arrived, MPI_STATUS_IGNORE);
                if (arrived) {
                    // The last message to rank 0 on `orders`: after it, no ask of ours is in flight.
                    const int last = 2;
                    MPI_Send(&last, 1, MPI_INT, 0, ask_tag, orders);
                    break;
                }
            }
        }
    }  // closes every client (their requests are abandoned)
    if (rank == 0) {
        // Take every ask still on its way, up to each rank's last message, so
        // that nothing is left unmatched when `orders` is freed.
        for (int lasts = 0; lasts < ranks - 1;) {
            if (ask_request == MPI_REQUEST_NULL)
                MPI_Irecv(&ask_code, 1, MPI_INT, MPI_ANY_SOURCE, ask_tag, orders, &ask_request);
            MPI_Wait(&ask_request, MPI_STATUS_IGNORE);
            lasts += ask_code == 2 ? 1 : 0;
        }
        if (ask_request != MPI_REQUEST_NULL) {  // one rank: the receive never matched
            MPI_Cancel(&ask_request);
            MPI_Wait(&ask_request, MPI_STATUS_IGNORE);
        }
    }
    if (listener >= 0)
        ::close(listener);
    ::close(epoll_fd);
    const std::size_t keys = map->local_size();
    map->destroy();
    MPI_Comm_free(&orders);
    unsigned long long total = keys, sum = 0;
    MPI_Reduce(&total, &sum, 1, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, comm);
    if (rank == 0) {
        std::fprintf(stderr, "%s: %s; %llu keys (live or not yet swept) at the end\n", program.c_str(), reason, sum);
        std::fflush(stderr);
    }
    return finish(support::exit_success);
}

}  // namespace

int serve_main(int argc, char** argv, MPI_Comm comm) {
    const std::string program = support::program_name(argc, argv, "serve");
    const support::exit_reporter finish(argc, argv, program, comm);
    options settings;
    bool trace_exit = false;
    support::option_parser parser(
        program + " [options]",
        "The containers behind the Redis protocol (RESP2): every rank accepts clients and any key;\n"
        "hash_map sends each command to its key's owner (docs/serve.md).");
    parser.add_text("bind", &settings.bind, "the IPv4 address every rank listens on", "ADDRESS")
        .add_count("port", &settings.port, "rank r listens on PORT + r (0: any free port each; see the ready line)",
                   0, 65535, "PORT")
        .add_flag("single-port", &settings.single_port, "only rank 0 listens (on PORT)")
        .add_text("requirepass", &settings.requirepass, "clients must AUTH with this password", "PASSWORD")
        .add_text("password-file", &settings.password_file,
                  "the password is this file's first line (not visible in ps)", "FILE")
        .add_count("max-clients", &settings.max_clients, "clients per rank; more are refused", 1, 1000000)
        .add_count("max-bulk-bytes", &settings.max_bulk_bytes, "the largest argument", 1, 64 * 1024 * 1024)
        .add_count("max-request-bytes", &settings.max_request_bytes, "the largest request (all its arguments)", 1,
                   64 * 1024 * 1024)
        .add_count("output-limit", &settings.output_limit,
                   "a client whose unsent replies pass this many bytes is disconnected", 1024)
        .add_count("max-pipeline", &settings.max_pipeline, "commands of one client in flight", 1, 1000000)
        .add_count("buffer-bytes", &settings.buffer_bytes,
                   "the engine's message size B (a command and its reply must fit)", 65536, 1024 * 1024 * 1024)
        .add_count("wait-us", &settings.wait_us,
                   "with commands in flight and nothing happening, wait this long in epoll instead of yielding "
                   "the core (0: yield)", 0, 1000)
        .add_real("duration", &settings.duration, "stop after this many seconds (0: at SHUTDOWN or a signal)", 0,
                  1e9)
        .add_flag("trace-exit", &trace_exit, "each rank says with which code it exits (tests)")
        .add_check([&] {
            if (!settings.requirepass.empty() && !settings.password_file.empty())
                throw support::usage_error("give --requirepass or --password-file, not both");
            if (settings.max_request_bytes + 4096 > settings.buffer_bytes / 2)
                throw support::usage_error("--max-request-bytes must stay below half of --buffer-bytes "
                                           "(a command travels in one message)");
        })
        .add_epilogue("example:\n  mpiexec -n 2 " + program + " --port 7000   # ranks on 7000 and 7001\n"
                      "  redis-cli -p 7001 set k v; redis-cli -p 7000 get k\n");
    if (const auto stop = support::parse_collectively(comm, parser, support::arguments_of(argc, argv), program))
        return finish(*stop);
    return run(comm, settings, program, finish);
}

}  // namespace mpidict::apps::serve
