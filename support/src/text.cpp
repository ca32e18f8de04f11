// See text.hpp.

#include "mpidict/support/text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <utility>

namespace mpidict::support {

void text_table::add_row(std::vector<std::string> cells) { m_rows.push_back(std::move(cells)); }

void text_table::print(std::FILE* out, std::string_view indent) const {
    std::vector<std::size_t> widths;
    for (const auto& row : m_rows) {
        if (widths.size() < row.size())
            widths.resize(row.size(), 0);
        for (std::size_t column = 0; column < row.size(); ++column)
            widths[column] = std::max(widths[column], row[column].size());
    }
    for (const auto& row : m_rows) {
        std::string text(indent);
        for (std::size_t column = 0; column < row.size(); ++column) {
            const std::string& cell = row[column];
            const std::string pad(widths[column] - cell.size(), ' ');
            if (column > 0)
                text += "  ";
            text += column == 0 ? cell + pad : pad + cell;
        }
        while (!text.empty() && text.back() == ' ')
            text.pop_back();
        std::fprintf(out, "%s\n", text.c_str());
    }
}

std::string format_fixed(double value, int decimals) {
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    return text;
}

std::string format_rate(double per_second) {
    if (!std::isfinite(per_second))
        return "-";
    if (per_second >= 1e9)
        return format_fixed(per_second / 1e9, 2) + " G/s";
    if (per_second >= 1e6)
        return format_fixed(per_second / 1e6, 2) + " M/s";
    if (per_second >= 1e3)
        return format_fixed(per_second / 1e3, 1) + " k/s";
    return format_fixed(per_second, 0) + " /s";
}

std::string format_bytes(double bytes) {
    static constexpr const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    std::size_t unit = 0;
    while (bytes >= 1024 && unit + 1 < std::size(units)) {
        bytes /= 1024;
        ++unit;
    }
    return format_fixed(bytes, unit == 0 ? 0 : 1) + " " + units[unit];
}

std::string format_seconds(double seconds) { return format_fixed(seconds, 3); }

std::string format_count(std::uint64_t n) {
    std::string digits = std::to_string(n);
    std::string out;
    for (std::size_t index = 0; index < digits.size(); ++index) {
        if (index > 0 && (digits.size() - index) % 3 == 0)
            out += ',';
        out += digits[index];
    }
    return out;
}

double quantile(const std::vector<double>& sorted, double q) {
    if (sorted.empty())
        return 0;
    const double rank = std::ceil(q * static_cast<double>(sorted.size()));
    const std::size_t index = rank < 1 ? 0 : static_cast<std::size_t>(rank) - 1;
    return sorted[std::min(index, sorted.size() - 1)];
}

}  // namespace mpidict::support
