// MatrixMarket coordinate reader (see matrix_market.hpp for what it accepts).
//
// The whole file is read into memory and scanned line by line, so every
// message can name the line; numbers are parsed with std::from_chars (no
// locale, no allocation).  A parse problem on a last line that has no newline
// is reported as a truncated file, since that is what a cut-off download or
// copy looks like.

#include "matrix_scatter/matrix_market.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string_view>
#include <system_error>

#include <zlib.h>

namespace mpidict::apps {

namespace {

std::string located(const std::string& path, std::int64_t line, const std::string& problem) {
    if (line <= 0)
        return path + ": " + problem;
    return path + ":" + std::to_string(line) + ": " + problem;
}

}  // namespace

matrix_market_error::matrix_market_error(const std::string& path, std::int64_t line, const std::string& problem)
    : error(located(path, line, problem)), m_path(path), m_line(line) {}

const char* to_string(matrix_field field) {
    switch (field) {
    case matrix_field::real: return "real";
    case matrix_field::integer: return "integer";
    case matrix_field::pattern: return "pattern";
    }
    return "?";
}

const char* to_string(matrix_symmetry symmetry) {
    switch (symmetry) {
    case matrix_symmetry::general: return "general";
    case matrix_symmetry::symmetric: return "symmetric";
    case matrix_symmetry::skew_symmetric: return "skew-symmetric";
    }
    return "?";
}

namespace {

constexpr const char* banner_form =
    "'%%MatrixMarket matrix coordinate <real|integer|pattern> <general|symmetric|skew-symmetric>'";

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f'; }

// Splits `line` at whitespace into at most tokens.size() tokens; returns how many
// tokens the line has in all (which may be more than it stored).
template <std::size_t N>
std::size_t split(std::string_view line, std::array<std::string_view, N>& tokens) {
    std::size_t count = 0;
    std::size_t at = 0;
    while (at < line.size()) {
        while (at < line.size() && is_space(line[at]))
            ++at;
        if (at == line.size())
            break;
        const std::size_t start = at;
        while (at < line.size() && !is_space(line[at]))
            ++at;
        if (count < N)
            tokens[count] = line.substr(start, at - start);
        ++count;
    }
    return count;
}

bool blank(std::string_view line) {
    return std::all_of(line.begin(), line.end(), [](char c) { return is_space(c); });
}

// The text quoted for a message, shortened if long.
std::string shown(std::string_view text) {
    constexpr std::size_t longest = 60;
    std::string out = "'";
    if (text.size() > longest)
        out.append(text.substr(0, longest)).append("...");
    else
        out.append(text);
    for (char& c : out)
        if (static_cast<unsigned char>(c) < 0x20)
            c = '?';
    return out + "'";
}

std::string lowered(std::string_view text) {
    std::string out(text);
    for (char& c : out)
        if (c >= 'A' && c <= 'Z')
            c = static_cast<char>(c - 'A' + 'a');
    return out;
}

bool parse_integer(std::string_view token, std::int64_t& out) {
    if (!token.empty() && token.front() == '+')
        token.remove_prefix(1);
    const auto [end, problem] = std::from_chars(token.data(), token.data() + token.size(), out);
    return problem == std::errc() && end == token.data() + token.size() && !token.empty();
}

bool parse_real(std::string_view token, double& out) {
    if (!token.empty() && token.front() == '+')
        token.remove_prefix(1);
    if (token.empty())
        return false;
    const auto [end, problem] = std::from_chars(token.data(), token.data() + token.size(), out);
    if (problem == std::errc() && end == token.data() + token.size())
        return std::isfinite(out);
    // Fortran-style exponents (1.0D+03) appear in files converted from Harwell-Boeing.
    const std::size_t d = token.find_first_of("dD");
    if (d == std::string_view::npos)
        return false;
    std::string copy(token);
    copy[d] = 'e';
    const auto [end2, problem2] = std::from_chars(copy.data(), copy.data() + copy.size(), out);
    return problem2 == std::errc() && end2 == copy.data() + copy.size() && std::isfinite(out);
}

// Reads the whole file, gunzipping it if it is gzip-compressed (zlib reads a
// plain file as it is, so "memplus.mtx.gz" and "cdde6.mtx" both work); throws
// matrix_market_error if it cannot.
std::string slurp(const std::string& path) {
    errno = 0;
    std::unique_ptr<gzFile_s, int (*)(gzFile)> file(gzopen(path.c_str(), "rb"), &gzclose);
    if (!file)
        throw matrix_market_error(path, 0, std::string("cannot open: ") + std::strerror(errno ? errno : ENOENT));
    std::string data;
    std::array<char, 1 << 16> chunk;
    for (;;) {
        const int got = gzread(file.get(), chunk.data(), static_cast<unsigned>(chunk.size()));
        if (got < 0) {
            int code = 0;
            const char* why = gzerror(file.get(), &code);
            throw matrix_market_error(path, 0, std::string("read error: ") +
                                                   (code == Z_ERRNO ? std::strerror(errno ? errno : EIO) : why));
        }
        if (got == 0)
            break;
        data.append(chunk.data(), static_cast<std::size_t>(got));
    }
    return data;
}

// Walks the lines of a buffer, numbering them from 1.
class line_walker {
public:
    explicit line_walker(std::string_view data) : m_data(data) {}

    // The next line without its newline; false at the end of the data.
    bool next(std::string_view& line) {
        if (m_at >= m_data.size())
            return false;
        const std::size_t end = m_data.find('\n', m_at);
        ++m_number;
        if (end == std::string_view::npos) {
            line = m_data.substr(m_at);
            m_at = m_data.size();
            m_terminated = false;
        } else {
            line = m_data.substr(m_at, end - m_at);
            m_at = end + 1;
            m_terminated = true;
        }
        return true;
    }
    std::int64_t number() const { return m_number; }
    // Whether the line last returned ended with a newline.
    bool terminated() const { return m_terminated; }

private:
    std::string_view m_data;
    std::size_t m_at = 0;
    std::int64_t m_number = 0;
    bool m_terminated = true;
};

void parse_banner(const std::string& path, std::string_view line, matrix_market_matrix& out) {
    std::array<std::string_view, 6> tokens;
    const std::size_t count = split(line, tokens);
    auto malformed = [&](const std::string& why) {
        throw matrix_market_error(path, 1, "malformed banner: " + why + "; expected " + banner_form + ", found " +
                                               shown(line));
    };
    auto unsupported = [&](const std::string& why) { throw matrix_market_error(path, 1, "unsupported " + why); };
    if (count == 0 || tokens[0] != "%%MatrixMarket")
        malformed("the first line must start with %%MatrixMarket");
    if (count != 5)
        malformed("it has " + std::to_string(count) + " words instead of 5");
    const std::string object = lowered(tokens[1]);
    const std::string format = lowered(tokens[2]);
    const std::string field = lowered(tokens[3]);
    const std::string symmetry = lowered(tokens[4]);
    if (object == "vector")
        unsupported("object 'vector': only matrices can be scattered");
    if (object != "matrix")
        malformed("unknown object " + shown(tokens[1]));
    if (format == "array")
        unsupported("format 'array' (dense): only 'coordinate' matrices can be scattered");
    if (format != "coordinate")
        malformed("unknown format " + shown(tokens[2]));
    if (field == "real" || field == "double")
        out.field = matrix_field::real;
    else if (field == "integer")
        out.field = matrix_field::integer;
    else if (field == "pattern")
        out.field = matrix_field::pattern;
    else if (field == "complex")
        unsupported("field 'complex': only real, integer and pattern values can be scattered");
    else
        malformed("unknown field " + shown(tokens[3]));
    if (symmetry == "general")
        out.symmetry = matrix_symmetry::general;
    else if (symmetry == "symmetric")
        out.symmetry = matrix_symmetry::symmetric;
    else if (symmetry == "skew-symmetric")
        out.symmetry = matrix_symmetry::skew_symmetric;
    else if (symmetry == "hermitian")
        unsupported("symmetry 'hermitian': it needs complex values, which cannot be scattered");
    else
        malformed("unknown symmetry " + shown(tokens[4]));
    if (out.field == matrix_field::pattern && out.symmetry == matrix_symmetry::skew_symmetric)
        malformed("a pattern matrix cannot be skew-symmetric");
}

}  // namespace

void read_matrix_market(const std::string& path, matrix_market_matrix& out) {
    out.path = path;
    out.table.clear();
    out.rows = out.columns = out.file_entries = 0;
    out.nnz = out.longest_row = 0;

    const std::string data = slurp(path);
    if (data.empty())
        throw matrix_market_error(path, 1, std::string("empty file: expected the banner ") + banner_form);
    line_walker lines(data);
    std::string_view line;
    lines.next(line);
    parse_banner(path, line, out);

    // Size line: the first line after the banner that is neither a comment nor blank.
    std::int64_t size_line = 0;
    while (lines.next(line)) {
        if (blank(line) || line.front() == '%')
            continue;
        size_line = lines.number();
        break;
    }
    if (size_line == 0)
        throw matrix_market_error(path, lines.number(),
                                  "the file ends before the size line '<rows> <columns> <entries>' (truncated file?)");
    {
        std::array<std::string_view, 4> tokens;
        const std::size_t count = split(line, tokens);
        if (count != 3)
            throw matrix_market_error(path, size_line,
                                      "malformed size line: expected '<rows> <columns> <entries>', found " + shown(line));
        const char* names[3] = {"rows", "columns", "entries"};
        std::int64_t values[3];
        for (int index = 0; index < 3; ++index) {
            if (!parse_integer(tokens[index], values[index]) || values[index] < 0)
                throw matrix_market_error(path, size_line,
                                          "malformed size line: the number of " + std::string(names[index]) + ", " +
                                              shown(tokens[index]) + ", is not a non-negative integer");
        }
        out.rows = values[0];
        out.columns = values[1];
        out.file_entries = values[2];
        if (out.symmetry != matrix_symmetry::general && out.rows != out.columns)
            throw matrix_market_error(path, size_line,
                                      std::string("a ") + to_string(out.symmetry) + " matrix must be square, but it is " +
                                          std::to_string(out.rows) + " x " + std::to_string(out.columns));
    }
    const bool mirrored = out.symmetry != matrix_symmetry::general;
    // Room for the rows without rehashing, but never more than the file can hold
    // (an entry line takes at least 4 bytes): a wrong size line must not make
    // us allocate gigabytes before the count check rejects it.
    const auto possible_entries = std::min<std::int64_t>(out.file_entries, static_cast<std::int64_t>(data.size() / 4));
    out.table.reserve(static_cast<std::size_t>(std::min<std::int64_t>(out.rows, possible_entries * (mirrored ? 2 : 1))));

    const std::size_t fields = out.field == matrix_field::pattern ? 2 : 3;
    const char* entry_form = out.field == matrix_field::pattern ? "'<row> <column>'" : "'<row> <column> <value>'";
    std::int64_t found = 0;
    std::array<std::string_view, 4> tokens;
    while (lines.next(line)) {
        if (blank(line) || line.front() == '%')
            continue;
        const std::int64_t number = lines.number();
        // A problem on a last line without a newline means the file was cut short.
        auto fail = [&](const std::string& problem) {
            if (!lines.terminated())
                throw matrix_market_error(path, number,
                                          "truncated file: it ends in the middle of an entry (" + problem + ")");
            throw matrix_market_error(path, number, problem);
        };
        if (found == out.file_entries)
            throw matrix_market_error(path, number,
                                      "more entries than the " + std::to_string(out.file_entries) + " declared on line " +
                                          std::to_string(size_line) + " (this is entry " + std::to_string(found + 1) +
                                          ")");
        const std::size_t count = split(line, tokens);
        if (count < fields)
            fail("expected " + std::string(entry_form) + ", found " + shown(line));
        if (count > fields)
            fail("unexpected " + shown(tokens[fields]) + " after the entry; a " + to_string(out.field) +
                 " matrix has " + std::string(entry_form) + " on each line");
        std::int64_t row = 0;
        std::int64_t column = 0;
        if (!parse_integer(tokens[0], row))
            fail("row index " + shown(tokens[0]) + " is not an integer");
        if (!parse_integer(tokens[1], column))
            fail("column index " + shown(tokens[1]) + " is not an integer");
        if (row < 1 || row > out.rows)
            fail("row index " + std::to_string(row) + " is out of range 1.." + std::to_string(out.rows));
        if (column < 1 || column > out.columns)
            fail("column index " + std::to_string(column) + " is out of range 1.." + std::to_string(out.columns));
        double value = 1;
        if (out.field == matrix_field::real) {
            if (!parse_real(tokens[2], value))
                fail("value " + shown(tokens[2]) + " is not a finite real number");
        } else if (out.field == matrix_field::integer) {
            std::int64_t integer = 0;
            if (!parse_integer(tokens[2], integer))
                fail("value " + shown(tokens[2]) + " is not an integer");
            constexpr std::int64_t exact = std::int64_t{1} << 53;
            if (integer > exact || integer < -exact)
                fail("integer value " + std::to_string(integer) + " is beyond 2^53 and would not be stored exactly");
            value = static_cast<double>(integer);
        }
        if (out.symmetry == matrix_symmetry::skew_symmetric && row == column && value != 0)
            fail("a skew-symmetric matrix cannot have a non-zero diagonal entry (" + std::to_string(row) + ", " +
                 std::to_string(column) + ")");
        out.table.append(row, matrix_entry{column, value});
        if (mirrored && row != column)
            out.table.append(column,
                             matrix_entry{row, out.symmetry == matrix_symmetry::skew_symmetric ? -value : value});
        ++found;
    }
    if (found < out.file_entries)
        throw matrix_market_error(path, lines.number(),
                                  "the file ends after " + std::to_string(found) + " of the " +
                                      std::to_string(out.file_entries) + " entries declared on line " +
                                      std::to_string(size_line) + " (truncated file, or a wrong count)");
    out.nnz = out.table.value_count();
    out.table.for_each([&](const std::int64_t&, const row_table::values_view& values) {
        out.longest_row = std::max<std::uint64_t>(out.longest_row, values.size());
    });
}

}  // namespace mpidict::apps
