#pragma once
// JSON text for the JSON lines that the apps, the `mpidict` tool and the
// benchmarks print (DESIGN.md's benchmark format).  Header-only and MPI-free,
// so that tools/ and bench/ can include it without linking anything from apps/
// (they include "apps/common/json.hpp" with the source root on their include
// path; the apps include "common/json.hpp").
//
// The three callers have always differed in small ways, and their output must
// not change, hence the two number formats and the `short_escapes` argument.

#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

namespace mpidict::apps {

// `text` as a JSON string, quotes included.  '"' and '\' are escaped with a
// backslash; a control character (below 0x20) is written as \u00XX, except
// that those of \b \f \n \r \t that appear in `short_escapes` take their
// two-character escape instead (the apps pass none, the tool "\n\t", the
// benchmarks "\n\t\r").
inline std::string json_string(std::string_view text, std::string_view short_escapes = {}) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char letter = '\0';
            switch (c) {
            case '\b': letter = 'b'; break;
            case '\f': letter = 'f'; break;
            case '\n': letter = 'n'; break;
            case '\r': letter = 'r'; break;
            case '\t': letter = 't'; break;
            default: break;
            }
            if (letter != '\0' && short_escapes.find(c) != std::string_view::npos) {
                out += '\\';
                out += letter;
            } else {
                char escaped[8];
                std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
                out += escaped;
            }
        } else {
            out += c;
        }
    }
    out += '"';
    return out;
}

// A number with 10 significant digits ("%.10g"); null if not finite (JSON has
// no NaN or infinity).  orbit, word_build and the benchmarks.
inline std::string json_number(double value) {
    if (!std::isfinite(value))
        return "null";
    char text[40];
    std::snprintf(text, sizeof text, "%.10g", value);
    return text;
}

// A number whose whole values below 9e15 are written in full ("%.0f": a count
// of 1e7 stays 10000000), others with 9 significant digits; null if not
// finite.  matrix_scatter and the `mpidict` tool.
inline std::string json_number_exact_integers(double value) {
    if (!std::isfinite(value))
        return "null";
    char text[40];
    if (value == std::floor(value) && std::fabs(value) < 9.0e15)
        std::snprintf(text, sizeof text, "%.0f", value);
    else
        std::snprintf(text, sizeof text, "%.9g", value);
    return text;
}

}  // namespace mpidict::apps
