#pragma once
// RESP2 for apps/serve: the request parser (arrays of bulk strings and inline
// commands, as redis-server accepts them) and the reply writers.  No MPI, no
// sockets: the fuzz target (tests/fuzz/resp_fuzz.cpp) links this alone.
//
// Every size read off the wire is checked against resp_limits before anything
// is allocated for it; a violation is a protocol error with Redis's wording,
// after which the connection is closed (as redis-server does).

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace mpidict::apps::serve {

struct resp_limits {
    std::size_t max_arguments = 1024 * 1024;       // redis-server: 1024*1024 (multibulk length)
    std::size_t max_bulk_bytes = 512 * 1024;       // one argument (redis-server: proto-max-bulk-len)
    std::size_t max_inline_bytes = 64 * 1024;      // an inline command line (redis-server: 64 KiB)
    std::size_t max_request_bytes = 1024 * 1024;   // one whole request (all its arguments)
};

enum class parse_status { complete, incomplete, error };

struct parse_result {
    parse_status status = parse_status::incomplete;
    std::size_t consumed = 0;  // bytes of the input this request took (complete), or 0
    std::string error;         // the error reply's text (without '-' and CRLF) when status == error
};

// Parses the first request in `input`.  On complete, `arguments` holds its
// arguments (possibly none: an empty line or "*0" consumes bytes and yields
// no command).  Incomplete: more bytes are needed (nothing consumed).  Error:
// the connection must be closed after replying `error`.
parse_result parse_request(std::string_view input, const resp_limits& limits, std::vector<std::string>& arguments);

// Reply writers (RESP2).
void reply_simple(std::string& out, std::string_view text);      // +text
void reply_error(std::string& out, std::string_view text);       // -text (CR/LF become spaces)
void reply_integer(std::string& out, long long value);           // :value
void reply_bulk(std::string& out, std::string_view bytes);       // $len bytes
void reply_null(std::string& out);                               // $-1
void reply_array_header(std::string& out, std::size_t count);    // *count
void reply_null_array(std::string& out);                         // *-1

std::string error_reply(std::string_view text);
std::string integer_reply(long long value);

// Redis's string2ll: an optional '-', no leading zeros, no spaces, in range.
bool parse_integer(std::string_view text, long long& value);
// Redis's float parsing for scores: strtod over the whole text, not NaN
// ("inf", "+inf", "-inf" accepted).
bool parse_double(std::string_view text, double& value);
// Redis's addReplyDouble text ("%.17g"; "inf", "-inf").
std::string format_double(double value);

// Redis's stringmatchlen (glob: * ? [abc] [^a-z] \x), for SCAN MATCH.
bool glob_match(std::string_view pattern, std::string_view text, bool nocase = false);

}  // namespace mpidict::apps::serve
