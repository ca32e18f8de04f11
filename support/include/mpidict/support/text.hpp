#pragma once
// Text for people: an aligned table and human-readable numbers, as the tool,
// the apps and the benchmarks print them on stderr.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

namespace mpidict::support {

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

// The q-quantile (0..1) of already sorted samples, nearest-rank; 0 if empty.
double quantile(const std::vector<double>& sorted, double q);

}  // namespace mpidict::support
