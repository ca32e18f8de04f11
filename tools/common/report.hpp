#pragma once
// Output helpers shared by the tool's subcommands: JSON lines ("bench", "metric",
// "value", "unit", "ranks", "seed", then fields describing the run; the format
// of support/json.hpp), and, from support/, the aligned text table, human-readable
// numbers and process memory.

#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <vector>

#include <mpi.h>

#include "mpidict/support/host.hpp"
#include "mpidict/support/text.hpp"

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

using support::format_bytes;
using support::format_count;
using support::format_fixed;
using support::format_rate;
using support::format_seconds;
using support::quantile;
using support::text_table;

// Peak resident set size of this process, in bytes.
inline std::uint64_t peak_rss_bytes() { return support::read_process_memory().peak_rss_bytes; }

// What every command reports at its end.  Collective over `world`: the
// failures summed on every rank (each rank returns the same exit code), the
// peak RSS as the maximum over ranks (meaningful on rank 0).
struct run_outcome {
    std::uint64_t failures = 0;
    std::uint64_t peak_rss_bytes_max = 0;
};
run_outcome gather_outcome(MPI_Comm world, std::uint64_t local_failures);

// The table's last lines: "verified: yes, <what>" or "verified: NO, n failures",
// then "total: <seconds> s".
void print_verdict(std::uint64_t failures, const std::string& what, double total_seconds);

}  // namespace mpidict::tool
