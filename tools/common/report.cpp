#include "common/report.hpp"

#include <algorithm>
#include <cmath>
#include <utility>

#include "mpidict/support/json.hpp"

namespace mpidict::tool {

json_lines::json_lines(std::string bench, int ranks, std::uint64_t seed)
    : m_prefix("{\"bench\":" + quote(bench)),
      m_tail(",\"ranks\":" + std::to_string(ranks) + ",\"seed\":" + std::to_string(seed)) {}

// Appends piece by piece: GCC 12 warns (-Wrestrict, a false positive) on
// "literal" + std::string&& chains.
void json_lines::describe(std::string_view key, std::string_view text) {
    m_description.append(",").append(quote(key)).append(":").append(quote(text));
}
void json_lines::describe(std::string_view key, double value) {
    m_description.append(",").append(quote(key)).append(":").append(number(value));
}
void json_lines::describe(std::string_view key, std::uint64_t value) {
    m_description.append(",").append(quote(key)).append(":").append(std::to_string(value));
}

std::string json_lines::line(std::string_view metric, double value, std::string_view unit,
                             const std::vector<field>& extra) const {
    std::string text = m_prefix;
    text.append(",\"metric\":").append(quote(metric));
    text.append(",\"value\":").append(number(value));
    text.append(",\"unit\":").append(quote(unit));
    text.append(m_tail).append(m_description);
    for (const field& entry : extra)
        text.append(",").append(quote(entry.key)).append(":").append(entry.json);
    text.append("}");
    return text;
}

void json_lines::emit(std::FILE* out, std::string_view metric, double value, std::string_view unit,
                      const std::vector<field>& extra) const {
    const std::string text = line(metric, value, unit, extra);
    std::fprintf(out, "%s\n", text.c_str());
}

std::string json_lines::quote(std::string_view text) { return support::json_string(text); }

std::string json_lines::number(double value) { return support::json_number(value); }

run_outcome gather_outcome(MPI_Comm world, std::uint64_t local_failures) {
    run_outcome outcome;
    MPI_Allreduce(&local_failures, &outcome.failures, 1, MPI_UINT64_T, MPI_SUM, world);
    std::uint64_t rss = peak_rss_bytes();
    MPI_Reduce(&rss, &outcome.peak_rss_bytes_max, 1, MPI_UINT64_T, MPI_MAX, 0, world);
    return outcome;
}

void print_verdict(std::uint64_t failures, const std::string& what, double total_seconds) {
    if (failures == 0)
        std::printf("verified: yes, %s\n", what.c_str());
    else
        std::printf("verified: NO, %s failures (details on stderr)\n", format_count(failures).c_str());
    std::printf("total:    %s s\n\n", format_seconds(total_seconds).c_str());
}

}  // namespace mpidict::tool
