#pragma once
// The results writer every benchmark in bench/ uses, on support/json.hpp.
//
// Output contract.  One JSON object per line on stdout, one line per figure,
// written only by the process constructed with `printing = true` (rank 0).
// Every line starts with the same six fields, in this order:
//
//   {"bench":"<binary name>","metric":"<snake_case>","value":<number>,
//    "unit":"ops/s"|"s"|"us"|"bytes"|"ratio"|...,"ranks":<p>,"seed":<seed>,...}
//
// followed by the report's context fields (set once: keys, value_bytes,
// tunables, reps, ...) and the figure's own extra fields.  A figure built from
// repeated measurements carries "median", "min", "max" and "reps", and its
// "value" is the median.  A ratio is a figure of its own with unit "ratio";
// report::ratio also records the target it is judged against ("target",
// "meets_target") and the load; pass the two sides' own numbers as fields
// "ours_<unit>" and "baseline_<unit>" (ours_rate, baseline_rate; ours_MBps, ...):
// the table prints them beside the ratio.  A figure that cannot be measured in this run (e.g. a
// ping-pong on one rank) is still printed, with "value": null and "skipped":
// "<reason>", so a reader of the JSON sees why it is missing.
//
// Lines are flushed as they are written, so a benchmark that dies half way has
// still reported what it measured.  print_table() writes a short human table of
// all figures to stderr (call it once at the end).
//
// The writer is MPI-free: the caller decides which process prints and reduces
// numbers across ranks itself.  Typical use:
//
//   mpidict::bench::report out("my_bench", ranks, seed, rank == 0);
//   out.context().add("keys_per_rank", n).add("value_bytes", 8);
//   out.figure("insert_rate", samples, "ops/s");             // median of samples
//   out.ratio("insert_vs_bulk", ours / theirs, ">= 1.0", ours >= theirs,
//             json_object().add("ours_rate", ours).add("baseline_rate", theirs));
//   out.print_table();

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <unistd.h>

#include "mpidict/support/json.hpp"

namespace mpidict::bench {

// Fields of a line: support::json_object (mpidict/support/json.hpp).
using support::json_object;

// Median, minimum and maximum of repeated measurements.
struct summary {
    double median = NAN;
    double min = NAN;
    double max = NAN;
    std::size_t count = 0;

    static summary of(std::vector<double> samples) {
        summary result;
        result.count = samples.size();
        if (samples.empty())
            return result;
        std::sort(samples.begin(), samples.end());
        const std::size_t middle = samples.size() / 2;
        result.median = samples.size() % 2 == 1 ? samples[middle] : (samples[middle - 1] + samples[middle]) / 2;
        result.min = samples.front();
        result.max = samples.back();
        return result;
    }
};

class report {
public:
    // `printing`: true on the one process that writes (rank 0); the others keep
    // no state and print nothing, so every rank may call every method.
    report(std::string bench, int ranks, std::uint64_t seed, bool printing, std::FILE* json_out = stdout,
           std::FILE* table_out = stderr)
        : m_bench(std::move(bench)), m_ranks(ranks), m_seed(seed), m_printing(printing), m_json_out(json_out),
          m_table_out(table_out) {
        // Ranks beyond the cores are oversubscribed (issue 52: every benchmark marks
        // it); judged on one node, which is where the published figures come from.
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        m_oversubscribed = cores > 0 && ranks > cores;
        m_context.add("cores", static_cast<std::uint64_t>(cores > 0 ? cores : 0)).add("oversubscribed", m_oversubscribed);
    }

    // The 1-minute load average now (the machine's noise beside a ratio).
    static double load_1m() {
        double load[3] = {NAN, NAN, NAN};
        return getloadavg(load, 3) >= 1 ? load[0] : NAN;
    }

    const std::string& bench() const { return m_bench; }
    bool printing() const { return m_printing; }

    // Fields written on every later figure, after the six standard ones.
    json_object& context() { return m_context; }

    // One figure with a single measured value.
    void figure(std::string_view metric, double value, std::string_view unit, const json_object& extra = {}) {
        emit(metric, support::json_number(value), unit, extra, value, NAN, NAN, {});
    }

    // One figure from repeated measurements: value = median, plus median/min/max/reps.
    void figure(std::string_view metric, const std::vector<double>& samples, std::string_view unit,
                const json_object& extra = {}) {
        const summary s = summary::of(samples);
        json_object fields;
        fields.add("median", s.median).add("min", s.min).add("max", s.max).add("reps", s.count);
        fields.merge(extra);
        emit(metric, support::json_number(s.median), unit, fields, s.median, s.min, s.max, {});
    }

    // A ratio (unit "ratio") judged against a target such as ">= 1.0".
    void ratio(std::string_view metric, double value, std::string_view target, bool meets_target,
               const json_object& extra = {}) {
        json_object fields;
        fields.add("target", target).add("meets_target", meets_target).add("load_1m", load_1m());
        fields.merge(extra);
        std::string note = "target " + std::string(target) + (meets_target ? ": met" : ": MISSED");
        // The two sides' own numbers beside the ratio (issue 52): every ratio passes
        // them as "ours_<unit>" and "baseline_<unit>" fields, and the table shows them.
        std::string ours, baseline;
        for (const auto& [key, value] : extra.fields()) {
            if (key.starts_with("ours_") && ours.empty() && value.front() != '"')
                ours = key.substr(5) + " " + human(std::strtod(value.c_str(), nullptr));
            else if (key.starts_with("baseline_") && baseline.empty() && value.front() != '"')
                baseline = human(std::strtod(value.c_str(), nullptr));
        }
        if (!ours.empty() && !baseline.empty())
            note += " (ours " + ours + ", baseline " + baseline + ")";
        emit(metric, support::json_number(value), "ratio", fields, value, NAN, NAN, note);
    }

    // A figure this run cannot measure: "value": null and "skipped": reason.
    void skipped(std::string_view metric, std::string_view unit, std::string_view reason) {
        json_object fields;
        fields.add("skipped", reason);
        emit(metric, "null", unit, fields, NAN, NAN, NAN, "skipped: " + std::string(reason));
    }

    // A line for the human table only (stderr), e.g. a warning.
    void note(std::string_view text) {
        if (m_printing)
            m_notes.emplace_back(text);
    }

    // Writes the human table of every figure so far to stderr.
    void print_table() const {
        if (!m_printing)
            return;
        std::size_t width = 6;
        for (const row& r : m_rows)
            width = std::max(width, r.metric.size());
        double load[3] = {NAN, NAN, NAN};
        (void)getloadavg(load, 3);
        std::fprintf(m_table_out, "\n%s (%d rank%s%s, seed %llu; load %.2f %.2f %.2f)\n", m_bench.c_str(), m_ranks,
                     m_ranks == 1 ? "" : "s", m_oversubscribed ? ", OVERSUBSCRIBED" : "",
                     static_cast<unsigned long long>(m_seed), load[0], load[1], load[2]);
        std::fprintf(m_table_out, "  %-*s %14s  %-6s %25s  %s\n", static_cast<int>(width), "metric", "value", "unit",
                     "[min, max]", "");
        for (const row& r : m_rows) {
            std::string range;
            if (std::isfinite(r.min) && std::isfinite(r.max))
                range.append("[").append(human(r.min)).append(", ").append(human(r.max)).append("]");
            std::fprintf(m_table_out, "  %-*s %14s  %-6s %25s  %s\n", static_cast<int>(width), r.metric.c_str(),
                         std::isfinite(r.value) ? human(r.value).c_str() : "-", r.unit.c_str(), range.c_str(),
                         r.note.c_str());
        }
        for (const std::string& text : m_notes)
            std::fprintf(m_table_out, "  note: %s\n", text.c_str());
        std::fflush(m_table_out);
    }

    // A number in at most 4 significant digits, for the table.
    static std::string human(double value) {
        char text[32];
        const double magnitude = std::fabs(value);
        if (magnitude != 0 && (magnitude >= 1e6 || magnitude < 1e-3))
            std::snprintf(text, sizeof text, "%.3e", value);
        else
            std::snprintf(text, sizeof text, "%.4g", value);
        return text;
    }

private:
    struct row {
        std::string metric;
        double value;
        std::string unit;
        double min;
        double max;
        std::string note;
    };

    void emit(std::string_view metric, const std::string& rendered_value, std::string_view unit,
              const json_object& extra, double value, double min, double max, std::string note) {
        if (!m_printing)
            return;
        json_object fields = m_context;
        fields.merge(extra);
        const std::string line = support::json_line(m_bench, metric, rendered_value, unit, m_ranks, m_seed, fields);
        std::fprintf(m_json_out, "%s\n", line.c_str());
        std::fflush(m_json_out);
        m_rows.push_back(row{std::string(metric), value, std::string(unit), min, max, std::move(note)});
    }

    std::string m_bench;
    int m_ranks;
    std::uint64_t m_seed;
    bool m_printing;
    bool m_oversubscribed = false;
    std::FILE* m_json_out;
    std::FILE* m_table_out;
    json_object m_context;
    std::vector<row> m_rows;
    std::vector<std::string> m_notes;
};

}  // namespace mpidict::bench
