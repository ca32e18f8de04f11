#pragma once
// Output helpers shared by the tool's subcommands: JSON lines in the format of
// DESIGN.md ("bench", "metric", "value", "unit", "ranks", "seed", then fields
// describing the run), an aligned text table, human-readable numbers, and
// process memory.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace mpidict::tool {

// One JSON object per figure, each on its own line.
class json_lines {
public:
    json_lines(std::string bench, int ranks, std::uint64_t seed);

    // Fields that every later line carries after the fixed ones.
    void describe(std::string_view key, std::string_view text);
    void describe(std::string_view key, double number);
    void describe(std::string_view key, std::uint64_t number);

    // `extra` fields apply to this line only.
    struct field {
        std::string key;
        std::string json;  // already encoded
    };
    std::string line(std::string_view metric, double value, std::string_view unit,
                     const std::vector<field>& extra = {}) const;
    void emit(std::FILE* out, std::string_view metric, double value, std::string_view unit,
              const std::vector<field>& extra = {}) const;

    static std::string quote(std::string_view text);
    static std::string number(double value);

private:
    std::string m_prefix;       // {"bench":..., without metric
    std::string m_description;  // ,"key":value pairs
    std::string m_tail;         // ,"ranks":..,"seed":..
};

// Rows of cells printed with aligned columns (first column left, others right).
class text_table {
public:
    void add_row(std::vector<std::string> cells);
    void print(std::FILE* out, std::string_view indent = "") const;

private:
    std::vector<std::vector<std::string>> m_rows;
};

std::string format_rate(double per_second);   // "1.63 M/s"
std::string format_bytes(double bytes);       // "12.3 MiB"
std::string format_seconds(double seconds);   // "0.123"
std::string format_count(std::uint64_t n);    // "200,000"
std::string format_fixed(double value, int decimals);

// Peak resident set size of this process, in bytes (getrusage).
std::uint64_t peak_rss_bytes();

// The q-quantile (0..1) of already sorted samples, nearest-rank; 0 if empty.
double quantile(const std::vector<double>& sorted, double q);

}  // namespace mpidict::tool
