// RESP2 request parser and reply writers (resp.hpp).  The parser follows
// redis-server 7's processMultibulkBuffer / processInlineBuffer, including the
// words of its protocol errors, so that a differential test sees the same
// replies; sizes are bounded by resp_limits before any allocation.
#include "serve/resp.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mpidict::apps::serve {

namespace {

// The position of "\r\n" at or after `from`, or npos.
std::size_t find_crlf(std::string_view input, std::size_t from) {
    while (true) {
        const std::size_t cr = input.find('\r', from);
        if (cr == std::string_view::npos || cr + 1 >= input.size())
            return std::string_view::npos;
        if (input[cr + 1] == '\n')
            return cr;
        from = cr + 1;
    }
}

parse_result failure(std::string text) {
    return {parse_status::error, 0, "ERR Protocol error: " + std::move(text)};
}

bool is_hex(char c) { return std::isxdigit(static_cast<unsigned char>(c)) != 0; }
int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return c - 'A' + 10;
}

// sdssplitargs: words separated by blanks, "double quoted" with escapes,
// 'single quoted'.  False on unbalanced quotes.
bool split_inline(std::string_view line, std::vector<std::string>& out, std::size_t max_arguments) {
    std::size_t i = 0;
    const std::size_t n = line.size();
    while (true) {
        while (i < n && std::isspace(static_cast<unsigned char>(line[i])))
            ++i;
        if (i >= n)
            return true;
        if (out.size() >= max_arguments)
            return false;
        std::string word;
        bool in_double = false, in_single = false, done = false;
        while (!done) {
            if (in_double) {
                if (i >= n)
                    return false;
                if (line[i] == '\\' && i + 3 < n && line[i + 1] == 'x' && is_hex(line[i + 2]) && is_hex(line[i + 3])) {
                    word.push_back(static_cast<char>(hex_value(line[i + 2]) * 16 + hex_value(line[i + 3])));
                    i += 3;
                } else if (line[i] == '\\' && i + 1 < n) {
                    ++i;
                    char c = line[i];
                    switch (c) {
                    case 'n': c = '\n'; break;
                    case 'r': c = '\r'; break;
                    case 't': c = '\t'; break;
                    case 'b': c = '\b'; break;
                    case 'a': c = '\a'; break;
                    default: break;
                    }
                    word.push_back(c);
                } else if (line[i] == '"') {
                    if (i + 1 < n && !std::isspace(static_cast<unsigned char>(line[i + 1])))
                        return false;
                    done = true;
                } else {
                    word.push_back(line[i]);
                }
            } else if (in_single) {
                if (i >= n)
                    return false;
                if (line[i] == '\\' && i + 1 < n && line[i + 1] == '\'') {
                    ++i;
                    word.push_back('\'');
                } else if (line[i] == '\'') {
                    if (i + 1 < n && !std::isspace(static_cast<unsigned char>(line[i + 1])))
                        return false;
                    done = true;
                } else {
                    word.push_back(line[i]);
                }
            } else {
                if (i >= n) {
                    done = true;
                    break;
                }
                switch (line[i]) {
                case ' ': case '\n': case '\r': case '\t': case '\0':
                    done = true;
                    break;
                case '"': in_double = true; break;
                case '\'': in_single = true; break;
                default: word.push_back(line[i]); break;
                }
            }
            if (i < n)
                ++i;
        }
        out.push_back(std::move(word));
    }
}

parse_result parse_inline(std::string_view input, const resp_limits& limits, std::vector<std::string>& arguments) {
    const std::size_t newline = input.find('\n');
    if (newline == std::string_view::npos) {
        if (input.size() > limits.max_inline_bytes)
            return failure("too big inline request");
        return {};
    }
    std::string_view line = input.substr(0, newline);
    if (!line.empty() && line.back() == '\r')
        line.remove_suffix(1);
    if (line.size() > limits.max_inline_bytes)
        return failure("too big inline request");
    if (!split_inline(line, arguments, limits.max_arguments)) {
        arguments.clear();
        return failure("unbalanced quotes in request");
    }
    return {parse_status::complete, newline + 1, {}};
}

}  // namespace

bool parse_integer(std::string_view text, long long& value) {
    if (text.empty() || text.size() > 20)
        return false;
    std::size_t i = 0;
    bool negative = false;
    if (text.size() == 1 && text[0] == '0') {
        value = 0;
        return true;
    }
    if (text[0] == '-') {
        negative = true;
        i = 1;
        if (text.size() == 1)
            return false;
    }
    if (text[i] < '1' || text[i] > '9')
        return false;
    unsigned long long magnitude = 0;
    for (; i < text.size(); ++i) {
        const char c = text[i];
        if (c < '0' || c > '9')
            return false;
        const unsigned digit = static_cast<unsigned>(c - '0');
        if (magnitude > (~0ULL - digit) / 10)
            return false;
        magnitude = magnitude * 10 + digit;
    }
    if (negative) {
        if (magnitude > 1ULL + static_cast<unsigned long long>(LLONG_MAX))
            return false;
        value = magnitude == 1ULL + static_cast<unsigned long long>(LLONG_MAX) ? LLONG_MIN
                                                                               : -static_cast<long long>(magnitude);
    } else {
        if (magnitude > static_cast<unsigned long long>(LLONG_MAX))
            return false;
        value = static_cast<long long>(magnitude);
    }
    return true;
}

bool parse_double(std::string_view text, double& value) {
    if (text.empty() || text.size() > 5000 || std::isspace(static_cast<unsigned char>(text[0])))
        return false;
    const std::string copy(text);
    char* end = nullptr;
    errno = 0;
    value = std::strtod(copy.c_str(), &end);
    if (end != copy.c_str() + copy.size() || std::isnan(value) || (errno == ERANGE && !std::isinf(value) && value != 0))
        return false;
    return true;
}

std::string format_double(double value) {
    if (std::isinf(value))
        return value > 0 ? "inf" : "-inf";
    char text[64];
    const int length = std::snprintf(text, sizeof text, "%.17g", value);
    return std::string(text, static_cast<std::size_t>(length));
}

parse_result parse_request(std::string_view input, const resp_limits& limits, std::vector<std::string>& arguments) {
    arguments.clear();
    if (input.empty())
        return {};
    if (input[0] != '*')
        return parse_inline(input, limits, arguments);
    std::size_t line_end = find_crlf(input, 0);
    if (line_end == std::string_view::npos) {
        if (input.size() > limits.max_inline_bytes)
            return failure("too big mbulk count string");
        return {};
    }
    long long count = 0;
    if (!parse_integer(input.substr(1, line_end - 1), count) || count > static_cast<long long>(limits.max_arguments))
        return failure("invalid multibulk length");
    std::size_t position = line_end + 2;
    if (count <= 0)
        return {parse_status::complete, position, {}};
    // Check every header before storing anything: an incomplete request
    // costs no allocation proportional to what it announces.
    std::size_t total = 0;
    std::vector<std::pair<std::size_t, std::size_t>> spans;
    spans.reserve(static_cast<std::size_t>(std::min<long long>(count, 1024)));
    for (long long index = 0; index < count; ++index) {
        if (position >= input.size())
            return {};
        line_end = find_crlf(input, position);
        if (line_end == std::string_view::npos) {
            if (input.size() - position > limits.max_inline_bytes)
                return failure("too big bulk count string");
            if (input[position] != '$')
                return failure(std::string("expected '$', got '") + input[position] + "'");
            return {};
        }
        if (input[position] != '$')
            return failure(std::string("expected '$', got '") + input[position] + "'");
        long long length = 0;
        if (!parse_integer(input.substr(position + 1, line_end - position - 1), length) || length < 0 ||
            static_cast<unsigned long long>(length) > limits.max_bulk_bytes)
            return failure("invalid bulk length");
        total += static_cast<std::size_t>(length);
        if (total > limits.max_request_bytes)
            return failure("invalid bulk length");
        position = line_end + 2;
        const std::size_t need = static_cast<std::size_t>(length) + 2;
        if (input.size() - position < need)
            return {};
        spans.emplace_back(position, static_cast<std::size_t>(length));
        position += need;  // the CRLF after the data is skipped unchecked, as redis-server does
    }
    arguments.reserve(spans.size());
    for (const auto& [begin, length] : spans)
        arguments.emplace_back(input.substr(begin, length));
    return {parse_status::complete, position, {}};
}

void reply_simple(std::string& out, std::string_view text) {
    out += '+';
    out += text;
    out += "\r\n";
}

void reply_error(std::string& out, std::string_view text) {
    out += '-';
    for (const char c : text)
        out += (c == '\r' || c == '\n') ? ' ' : c;
    out += "\r\n";
}

namespace {
// Appends `prefix`, the number and CRLF in one append (no temporary string:
// a range's reply is one of these per member, docs/serve.md "What bounds us").
template <class Number>
void append_line(std::string& out, char prefix, Number value) {
    char text[32];
    text[0] = prefix;
    char* end = std::to_chars(text + 1, text + sizeof text - 2, value).ptr;
    *end++ = '\r';
    *end++ = '\n';
    out.append(text, static_cast<std::size_t>(end - text));
}
}  // namespace

void reply_integer(std::string& out, long long value) { append_line(out, ':', value); }

void reply_bulk(std::string& out, std::string_view bytes) {
    const std::size_t needed = out.size() + bytes.size() + 24;
    if (needed > out.capacity())
        out.reserve(std::max(needed, 2 * out.capacity()));
    append_line(out, '$', bytes.size());
    out.append(bytes);
    out.append("\r\n", 2);
}

void reply_null(std::string& out) { out += "$-1\r\n"; }

void reply_array_header(std::string& out, std::size_t count) { append_line(out, '*', count); }

void reply_null_array(std::string& out) { out += "*-1\r\n"; }

std::string error_reply(std::string_view text) {
    std::string out;
    reply_error(out, text);
    return out;
}

std::string integer_reply(long long value) {
    std::string out;
    reply_integer(out, value);
    return out;
}

// stringmatchlen of redis-server (util.c), iterative except for '*'.
bool glob_match(std::string_view pattern, std::string_view text, bool nocase) {
    auto lower = [&](char c) {
        return nocase ? static_cast<char>(std::tolower(static_cast<unsigned char>(c))) : c;
    };
    std::size_t p = 0, s = 0;
    while (p < pattern.size() && s < text.size()) {
        switch (pattern[p]) {
        case '*': {
            while (p + 1 < pattern.size() && pattern[p + 1] == '*')
                ++p;
            if (p + 1 == pattern.size())
                return true;
            for (std::size_t k = s; k < text.size(); ++k)
                if (glob_match(pattern.substr(p + 1), text.substr(k), nocase))
                    return true;
            return false;
        }
        case '?':
            ++s;
            break;
        case '[': {
            ++p;
            const bool negate = p < pattern.size() && pattern[p] == '^';
            if (negate)
                ++p;
            bool match = false;
            while (true) {
                if (p >= pattern.size()) {
                    --p;  // malformed: the '[' matched as the class so far
                    break;
                }
                if (pattern[p] == '\\' && p + 1 < pattern.size()) {
                    ++p;
                    if (pattern[p] == text[s])
                        match = true;
                } else if (pattern[p] == ']') {
                    break;
                } else if (p + 2 < pattern.size() && pattern[p + 1] == '-') {
                    char start = pattern[p], end = pattern[p + 2], c = text[s];
                    if (start > end)
                        std::swap(start, end);
                    if (nocase) {
                        start = lower(start), end = lower(end), c = lower(c);
                    }
                    p += 2;
                    if (c >= start && c <= end)
                        match = true;
                } else if (lower(pattern[p]) == lower(text[s])) {
                    match = true;
                }
                ++p;
            }
            if (negate)
                match = !match;
            if (!match)
                return false;
            ++s;
            break;
        }
        case '\\':
            if (p + 1 < pattern.size())
                ++p;
            [[fallthrough]];
        default:
            if (lower(pattern[p]) != lower(text[s]))
                return false;
            ++s;
            break;
        }
        ++p;
        if (s == text.size()) {
            while (p < pattern.size() && pattern[p] == '*')
                ++p;
            break;
        }
    }
    return p == pattern.size() && s == text.size();
}

}  // namespace mpidict::apps::serve
