#pragma once
// JSON text for the JSON lines that the apps, the `mpidict` tool and the
// benchmarks print: one object per line, compact (no spaces), fields in the
// order they were added.  Every program starts its lines with the same six
// fields, "bench", "metric", "value", "unit", "ranks", "seed" (docs/cli.md,
// docs/architecture.md); json_line() writes them.  MPI-free and header-only.

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace mpidict::support {

// `text` as a JSON string, quotes included: '"' and '\' take a backslash,
// \b \f \n \r \t their two-character escapes, other control characters \u00XX.
inline std::string json_string(std::string_view text) {
    std::string out = "\"";
    for (const char c : text) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
            continue;
        }
        if (static_cast<unsigned char>(c) >= 0x20) {
            out += c;
            continue;
        }
        switch (c) {
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default: {
            char escaped[8];
            std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
            out += escaped;
        }
        }
    }
    out += '"';
    return out;
}

// A number: whole values below 9e15 in full (a count of 1e7 stays 10000000),
// others with 10 significant digits; null if not finite (JSON has no NaN or
// infinity).
inline std::string json_number(double value) {
    if (!std::isfinite(value))
        return "null";
    char text[40];
    if (value == std::floor(value) && std::fabs(value) < 9.0e15)
        std::snprintf(text, sizeof text, "%.0f", value);
    else
        std::snprintf(text, sizeof text, "%.10g", value);
    return text;
}

// A JSON object built field by field.  Values are rendered when added:
// numbers (non-finite ones become null), booleans, strings, nested objects and
// ranges of those.  Fields keep the order they were added in.
class json_object {
public:
    template <class T>
    json_object& add(std::string_view key, const T& value) {
        m_fields.emplace_back(std::string(key), render(value));
        return *this;
    }
    // Adds a field whose value is already valid JSON text.
    json_object& add_raw(std::string_view key, std::string json) {
        m_fields.emplace_back(std::string(key), std::move(json));
        return *this;
    }
    // Appends every field of `other` (after this object's own).
    json_object& merge(const json_object& other) {
        m_fields.insert(m_fields.end(), other.m_fields.begin(), other.m_fields.end());
        return *this;
    }

    bool empty() const { return m_fields.empty(); }
    const std::vector<std::pair<std::string, std::string>>& fields() const { return m_fields; }

    // The fields without braces ("a":1,"b":2), for splicing into a larger object.
    std::string body() const {
        std::string out;
        for (const auto& [key, value] : m_fields) {
            if (!out.empty())
                out += ',';
            out.append(json_string(key)).append(":").append(value);
        }
        return out;
    }
    std::string str() const {
        std::string out = "{";  // appended piece by piece: GCC 12 warns (-Wrestrict, falsely) on "{" + std::string
        out.append(body()).append("}");
        return out;
    }

private:
    template <class T>
    static std::string render(const T& value) {
        if constexpr (std::is_same_v<T, bool>) {
            return value ? "true" : "false";
        } else if constexpr (std::is_same_v<T, json_object>) {
            return value.str();
        } else if constexpr (std::is_integral_v<T>) {
            return std::to_string(value);
        } else if constexpr (std::is_floating_point_v<T>) {
            return json_number(static_cast<double>(value));
        } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
            return json_string(std::string_view(value));
        } else if constexpr (requires { value.begin(); value.end(); }) {
            std::string out = "[";
            for (const auto& element : value) {
                if (out.size() > 1)
                    out += ',';
                out += render(element);
            }
            out += ']';
            return out;
        } else {
            static_assert(std::is_same_v<T, void>,
                          "json_object::add takes numbers, bools, strings, json_objects or ranges of them.");
            return {};
        }
    }

    std::vector<std::pair<std::string, std::string>> m_fields;
};

// One result line: the six standard fields, then `fields` (the run's context
// and the figure's own extras, in that order).  `value` is JSON text already
// (json_number(x), or "null" for a figure this run could not measure).
inline std::string json_line(std::string_view bench, std::string_view metric, std::string_view value,
                             std::string_view unit, int ranks, std::uint64_t seed, const json_object& fields = {}) {
    json_object line;
    line.add("bench", bench).add("metric", metric).add_raw("value", std::string(value)).add("unit", unit);
    line.add("ranks", ranks).add("seed", seed).merge(fields);
    return line.str();
}

// json_line() printed on `out` with a newline and flushed, so a run that dies
// half way has still reported what it measured.
inline void print_json_line(std::FILE* out, std::string_view bench, std::string_view metric, double value,
                            std::string_view unit, int ranks, std::uint64_t seed, const json_object& fields = {}) {
    const std::string text = json_line(bench, metric, json_number(value), unit, ranks, seed, fields);
    std::fprintf(out, "%s\n", text.c_str());
    std::fflush(out);
}

}  // namespace mpidict::support
