// matrix_scatter: seed 000's one-sided matrix scatter (Figures 1 and 2) and its
// blocking send/receive comparison (§2.3, Table 1).  See matrix_scatter.hpp.

#include "matrix_scatter/matrix_scatter.hpp"

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <optional>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include <unistd.h>

#include "mpidict/support/json.hpp"
#include "mpidict/support/options.hpp"
#include "mpidict/support/program.hpp"
#include "mpidict/support/yielding.hpp"
#include "mpidict/local/hash.hpp"
#include "mpidict/runtime/request.hpp"

namespace mpidict::apps {

// ---- verification ----------------------------------------------------------

std::uint64_t entry_checksum(std::int64_t row, const matrix_entry& entry) {
    std::uint64_t value_bits = 0;
    static_assert(sizeof(value_bits) == sizeof(entry.value), "values are 64-bit doubles.");
    std::memcpy(&value_bits, &entry.value, sizeof(value_bits));
    std::uint64_t h = mix64(static_cast<std::uint64_t>(row) * 0x9e3779b97f4a7c15ULL + 0x632be59bd9b4e019ULL);
    h = mix64(h ^ (static_cast<std::uint64_t>(entry.column) + 0x2545f4914f6cdd1dULL));
    return mix64(h ^ value_bits);
}

void row_summary::add_row(std::int64_t row, const row_table::values_view& values, int rank, int ranks) {
    if (values.empty())
        return;
    ++rows;
    entries += static_cast<std::int64_t>(values.size());
    for (std::size_t index = 0; index < values.size(); ++index)
        checksum += entry_checksum(row, values[index]);
    if (static_cast<int>(static_cast<std::uint64_t>(row) % static_cast<std::uint64_t>(ranks)) != rank)
        ++misplaced;
}

namespace {

int owner_of_row(std::int64_t row, int ranks) {
    return static_cast<int>(static_cast<std::uint64_t>(row) % static_cast<std::uint64_t>(ranks));
}

}  // namespace

std::vector<std::int64_t> rows_to_send(const row_table& table, int ranks) {
    // Only rows with entries travel: the work follows the entries in the file,
    // not the row count its header declares (1e12 declared rows with 2 entries
    // cost 2 messages, not 1e12).  In row order, as the seed's loop sends them.
    std::vector<std::int64_t> rows;
    table.for_each([&](const std::int64_t& row, const row_table::values_view& values) {
        if (!values.empty() && owner_of_row(row, ranks) != 0)
            rows.push_back(row);
    });
    std::sort(rows.begin(), rows.end());
    return rows;
}

std::vector<row_summary> expected_by_rank(const row_table& table, int ranks) {
    std::vector<row_summary> expected(static_cast<std::size_t>(ranks));
    table.for_each([&](const std::int64_t& row, const row_table::values_view& values) {
        const int owner = owner_of_row(row, ranks);
        expected[static_cast<std::size_t>(owner)].add_row(row, values, owner, ranks);
    });
    return expected;
}

row_summary held_rows(const row_table* table, const row_map* map, int rank, int ranks) {
    row_summary held;
    auto add = [&](const std::int64_t& row, const row_table::values_view& values) {
        held.add_row(row, values, rank, ranks);
    };
    if (table)
        table->for_each(add);
    if (map)
        map->local_for_each(add);
    return held;
}

namespace {

constexpr int summary_words = 4;

void pack(const row_summary& summary, std::int64_t* out) {
    out[0] = summary.rows;
    out[1] = summary.entries;
    out[2] = static_cast<std::int64_t>(summary.checksum);
    out[3] = summary.misplaced;
}

row_summary unpack(const std::int64_t* in) {
    row_summary summary;
    summary.rows = in[0];
    summary.entries = in[1];
    summary.checksum = static_cast<std::uint64_t>(in[2]);
    summary.misplaced = in[3];
    return summary;
}

std::string describe(const row_summary& summary) {
    char text[160];
    std::snprintf(text, sizeof text, "%lld rows, %lld entries, checksum %016llx, %lld misplaced rows",
                  static_cast<long long>(summary.rows), static_cast<long long>(summary.entries),
                  static_cast<unsigned long long>(summary.checksum), static_cast<long long>(summary.misplaced));
    return text;
}

}  // namespace

bool verify_rows(MPI_Comm comm, const row_summary& held, const std::vector<row_summary>& expected,
                 const char* what) {
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);

    // Each rank against what rank 0's reading says it should own.
    std::vector<std::int64_t> packed;
    row_summary total_expected;
    if (rank == 0) {
        if (expected.size() != static_cast<std::size_t>(ranks))
            throw error("matrix_scatter: verify_rows needs one expected summary per rank on rank 0");
        packed.resize(static_cast<std::size_t>(ranks) * summary_words);
        for (int each = 0; each < ranks; ++each) {
            const row_summary& summary = expected[static_cast<std::size_t>(each)];
            pack(summary, packed.data() + static_cast<std::size_t>(each) * summary_words);
            total_expected.rows += summary.rows;
            total_expected.entries += summary.entries;
            total_expected.checksum += summary.checksum;
            total_expected.misplaced += summary.misplaced;
        }
    }
    std::int64_t mine[summary_words];
    MPI_Scatter(packed.data(), summary_words, MPI_INT64_T, mine, summary_words, MPI_INT64_T, 0, comm);
    const row_summary should_hold = unpack(mine);
    bool ok = held == should_hold;
    if (!ok)
        std::fprintf(stderr, "matrix_scatter: %s: rank %d holds %s; the file gives it %s\n", what, rank,
                     describe(held).c_str(), describe(should_hold).c_str());

    // The totals over all ranks against rank 0's reading.
    std::int64_t counts[3] = {held.rows, held.entries, held.misplaced};
    std::int64_t count_totals[3] = {0, 0, 0};
    std::uint64_t checksum_total = 0;
    MPI_Allreduce(counts, count_totals, 3, MPI_INT64_T, MPI_SUM, comm);
    MPI_Allreduce(&held.checksum, &checksum_total, 1, MPI_UINT64_T, MPI_SUM, comm);
    if (rank == 0) {
        row_summary total;
        total.rows = count_totals[0];
        total.entries = count_totals[1];
        total.misplaced = count_totals[2];
        total.checksum = checksum_total;
        if (!(total == total_expected)) {
            ok = false;
            std::fprintf(stderr, "matrix_scatter: %s: all ranks together hold %s; the file has %s\n", what,
                         describe(total).c_str(), describe(total_expected).c_str());
        }
    }
    int verdict = ok ? 1 : 0;
    int all = 0;
    MPI_Allreduce(&verdict, &all, 1, MPI_INT, MPI_MIN, comm);
    return all == 1;
}

// ---- the two scatters -------------------------------------------------------

namespace {

constexpr int sendrecv_tag = 4004;

// Values of one insert request that fit in one message.
std::size_t values_per_insert(row_map& map) {
    constexpr std::size_t header_bytes = 8 + sizeof(std::int64_t);  // {slot, count} + key
    const std::size_t record = map.engine().max_record_bytes();
    MPIDICT_ASSERT(record > header_bytes + sizeof(matrix_entry), "buffer too small for one matrix entry");
    return (record - header_bytes) / sizeof(matrix_entry);
}

}  // namespace

phase_times scatter_with_hash_map(MPI_Comm comm, row_map& map, row_table& root_rows, std::size_t blocking_factor,
                                  insert_tally& tally) {
    const int rank = map.rank();
    const int ranks = map.num_ranks();
    const std::size_t chunk = values_per_insert(map);
    const std::size_t window = std::max<std::size_t>(blocking_factor, 1);
    std::vector<matrix_entry> batch;
    std::vector<request<insert_result>> requests;
    requests.reserve(window);
    phase_times times;
    double waiting = 0;

    auto complete_outstanding = [&] {  // HASH_Wait(nsent, reqs)
        const double start = runtime::now_seconds();
        for (request<insert_result>& outstanding : requests) {
            const insert_result result = outstanding.get();
            tally.requested += result.requested;
            tally.stored += result.stored;
        }
        requests.clear();
        waiting += runtime::now_seconds() - start;
    };

    const std::vector<std::int64_t> rows = rank == 0 ? rows_to_send(root_rows, ranks) : std::vector<std::int64_t>{};
    MPI_Barrier(comm);
    const double start = runtime::now_seconds();
    if (rank == 0) {
        for (const std::int64_t row : rows) {
            const int target = owner_of_row(row, ranks);
            double initiated = runtime::now_seconds();
            batch.clear();
            root_rows.take(row, std::numeric_limits<std::size_t>::max(),
                           [&](matrix_entry&& entry) { batch.push_back(entry); });
            std::size_t offset = 0;
            do {  // one insert per row, more if it exceeds a message
                const std::size_t n = std::min(chunk, batch.size() - offset);
                requests.push_back(
                    map.insert(target_rank{target}, row, std::span<const matrix_entry>(batch.data() + offset, n)));
                ++tally.requests;
                offset += n;
                if (requests.size() == window) {
                    times.initiation_seconds += runtime::now_seconds() - initiated;
                    complete_outstanding();
                    initiated = runtime::now_seconds();
                }
            } while (offset < batch.size());
            times.initiation_seconds += runtime::now_seconds() - initiated;
        }
        complete_outstanding();
    }
    times.completion_seconds = times.initiation_seconds + waiting;
    map.flush();  // barrier phase
    times.barrier_seconds = runtime::now_seconds() - start;
    return times;
}

phase_times scatter_with_hash_map_async(MPI_Comm comm, row_map& map, row_table& root_rows) {
    const int rank = map.rank();
    const int ranks = map.num_ranks();
    const std::size_t chunk = values_per_insert(map);
    std::vector<matrix_entry> batch;
    phase_times times;
    const std::vector<std::int64_t> rows = rank == 0 ? rows_to_send(root_rows, ranks) : std::vector<std::int64_t>{};
    MPI_Barrier(comm);
    const double start = runtime::now_seconds();
    if (rank == 0) {
        for (const std::int64_t row : rows) {
            batch.clear();
            root_rows.take(row, std::numeric_limits<std::size_t>::max(),
                           [&](matrix_entry&& entry) { batch.push_back(entry); });
            for (std::size_t offset = 0; offset < batch.size(); offset += chunk)
                map.async_insert(target_rank{owner_of_row(row, ranks)}, row,
                                 std::span<const matrix_entry>(batch.data() + offset,
                                                               std::min(chunk, batch.size() - offset)));
        }
        times.initiation_seconds = times.completion_seconds = runtime::now_seconds() - start;
    }
    map.flush();  // barrier phase
    times.barrier_seconds = runtime::now_seconds() - start;
    return times;
}

phase_times scatter_with_sendrecv(MPI_Comm comm, row_table& rows, std::uint64_t longest_row) {
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    if (longest_row + 1 > static_cast<std::uint64_t>(INT_MAX) / sizeof(matrix_entry))
        throw invalid_argument_error("matrix_scatter: a row of " + std::to_string(longest_row) +
                                     " entries does not fit in one MPI message");
    // Message = {row, 0} followed by the row's pairs; the count follows from its length.
    std::vector<matrix_entry> buffer(static_cast<std::size_t>(longest_row) + 1);
    const int capacity_bytes = static_cast<int>(buffer.size() * sizeof(matrix_entry));
    phase_times times;
    // Each rank learns how many rows it will receive (before the timed phase).
    const std::vector<std::int64_t> sending = rank == 0 ? rows_to_send(rows, ranks) : std::vector<std::int64_t>{};
    std::vector<std::int64_t> per_rank(rank == 0 ? static_cast<std::size_t>(ranks) : 0, 0);
    for (const std::int64_t row : sending)
        ++per_rank[static_cast<std::size_t>(owner_of_row(row, ranks))];
    std::int64_t expected_messages = 0;
    MPI_Scatter(per_rank.data(), 1, MPI_INT64_T, &expected_messages, 1, MPI_INT64_T, 0, comm);

    MPI_Barrier(comm);
    const double start = runtime::now_seconds();
    if (rank == 0) {
        for (const std::int64_t row : sending) {
            const int target = owner_of_row(row, ranks);
            std::size_t n = 0;
            buffer[0] = matrix_entry{row, 0};
            rows.take(row, buffer.size() - 1, [&](matrix_entry&& entry) { buffer[++n] = entry; });
            MPI_Send(buffer.data(), static_cast<int>((n + 1) * sizeof(matrix_entry)), MPI_BYTE, target,
                     sendrecv_tag, comm);
        }
        times.initiation_seconds = times.completion_seconds = runtime::now_seconds() - start;
    } else {
        // One message per row with entries that this rank owns.
        for (std::int64_t index = 0; index < expected_messages; ++index) {
            MPI_Status status;
            MPI_Recv(buffer.data(), capacity_bytes, MPI_BYTE, 0, sendrecv_tag, comm, &status);
            int bytes = 0;
            MPI_Get_count(&status, MPI_BYTE, &bytes);
            if (bytes < static_cast<int>(sizeof(matrix_entry)) || bytes % sizeof(matrix_entry) != 0)
                throw decode_error("matrix_scatter: a send/recv row message of " + std::to_string(bytes) +
                                   " bytes is not a whole number of entries");
            const std::size_t n = static_cast<std::size_t>(bytes) / sizeof(matrix_entry) - 1;
            rows.append(buffer[0].column, buffer.begin() + 1, buffer.begin() + 1 + static_cast<std::ptrdiff_t>(n));
        }
        times.completion_seconds = runtime::now_seconds() - start;
    }
    MPI_Barrier(comm);  // barrier phase
    times.barrier_seconds = runtime::now_seconds() - start;
    return times;
}

phase_times scatter_with_alltoallv(MPI_Comm comm, row_table& rows) {
    int rank = 0;
    int ranks = 1;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &ranks);
    const std::vector<std::int64_t> sending = rank == 0 ? rows_to_send(rows, ranks) : std::vector<std::int64_t>{};
    const auto p = static_cast<std::size_t>(ranks);
    phase_times times;
    MPI_Barrier(comm);
    const double start = runtime::now_seconds();
    // Rank 0: one packed buffer per destination; a row is a header entry
    // {row, count} followed by its pairs.
    std::vector<std::vector<matrix_entry>> packed(rank == 0 ? p : 0);
    std::vector<std::int64_t> counts(rank == 0 ? 2 * p : 0, 0);  // (entries, rows) per destination
    if (rank == 0) {
        for (const std::int64_t row : sending) {
            const auto target = static_cast<std::size_t>(owner_of_row(row, ranks));
            std::vector<matrix_entry>& out = packed[target];
            const std::size_t header = out.size();
            out.push_back(matrix_entry{row, 0});
            std::size_t n = 0;
            rows.take(row, std::numeric_limits<std::size_t>::max(), [&](matrix_entry&& entry) {
                out.push_back(entry);
                ++n;
            });
            out[header].value = static_cast<double>(n);
            ++counts[2 * target + 1];
        }
        for (std::size_t target = 0; target < p; ++target) {
            counts[2 * target] = static_cast<std::int64_t>(packed[target].size());
            if (packed[target].size() > static_cast<std::size_t>(INT_MAX) / sizeof(matrix_entry))
                throw invalid_argument_error("matrix_scatter: " + std::to_string(packed[target].size()) +
                                             " entries for one rank do not fit in one MPI_Alltoallv count");
        }
        times.initiation_seconds = runtime::now_seconds() - start;
    }
    std::int64_t mine[2] = {0, 0};
    MPI_Scatter(counts.data(), 2, MPI_INT64_T, mine, 2, MPI_INT64_T, 0, comm);
    std::vector<int> send_counts(p, 0), send_offsets(p, 0), receive_counts(p, 0), receive_offsets(p, 0);
    std::vector<matrix_entry> send_buffer;
    if (rank == 0) {
        std::size_t total = 0;
        for (std::size_t target = 1; target < p; ++target)
            total += packed[target].size();
        send_buffer.reserve(total);
        for (std::size_t target = 1; target < p; ++target) {
            send_offsets[target] = static_cast<int>(send_buffer.size() * sizeof(matrix_entry));
            send_counts[target] = static_cast<int>(packed[target].size() * sizeof(matrix_entry));
            send_buffer.insert(send_buffer.end(), packed[target].begin(), packed[target].end());
        }
    } else {
        receive_counts[0] = static_cast<int>(static_cast<std::size_t>(mine[0]) * sizeof(matrix_entry));
    }
    std::vector<matrix_entry> received(rank == 0 ? 0 : static_cast<std::size_t>(mine[0]));
    MPI_Alltoallv(send_buffer.data(), send_counts.data(), send_offsets.data(), MPI_BYTE, received.data(),
                  receive_counts.data(), receive_offsets.data(), MPI_BYTE, comm);
    if (rank == 0) {
        times.completion_seconds = runtime::now_seconds() - start;
    } else {
        rows.reserve(rows.size() + static_cast<std::size_t>(mine[1]));
        for (std::size_t at = 0; at < received.size();) {
            const std::int64_t row = received[at].column;
            const double count = received[at].value;
            if (!(count >= 0) || static_cast<double>(received.size() - at - 1) < count)
                throw decode_error("matrix_scatter: a packed row header says " + std::to_string(count) +
                                   " entries, more than the message holds");
            const auto n = static_cast<std::size_t>(count);
            rows.append(row, received.begin() + static_cast<std::ptrdiff_t>(at + 1),
                        received.begin() + static_cast<std::ptrdiff_t>(at + 1 + n));
            at += 1 + n;
        }
        times.completion_seconds = runtime::now_seconds() - start;
    }
    MPI_Barrier(comm);  // barrier phase
    times.barrier_seconds = runtime::now_seconds() - start;
    return times;
}

// ---- the app ------------------------------------------------------------------

namespace {

struct scatter_options {
    std::string file;
    std::size_t blocking_factor = 64;
    std::size_t repeat = 5;
    std::size_t warmup = 1;
    std::size_t buffer_bytes = runtime::config{}.buffer_bytes;
    std::size_t release_queue = runtime::config{}.release_queue;
    bool trace_exit = false;
};

constexpr std::size_t minimum_buffer_bytes = 256;
constexpr std::size_t maximum_buffer_bytes = std::size_t{1} << 30;

// The command line of the program (and of `mpidict scatter`), into `options`.
support::option_parser make_parser(const std::string& program, scatter_options& options) {
    support::option_parser parser(
        "mpiexec -n <ranks> " + program + " [options] FILE.mtx",
        "Seed 000's matrix scatter: rank 0 reads a MatrixMarket coordinate matrix into a\n"
        "local table keyed by row, then deals row r to rank r % p twice -- with hash_map\n"
        "insert requests (waiting every L requests, then a collective flush) and with\n"
        "blocking MPI_Send/MPI_Recv -- verifies every rank's rows against the file, and\n"
        "reports the barrier time per nonzero of both (JSON lines on stdout, a table on\n"
        "stderr).  Exits 1 on bad input or a verification failure, 2 on a usage error.");
    parser.add_count("blocking-factor", &options.blocking_factor, "insert requests outstanding before waiting", 1,
                     std::size_t{1} << 32, "L")
        .add_count("repeat", &options.repeat, "timed repetitions; medians are reported", 1, 100000, "R")
        .add_count("warmup", &options.warmup, "untimed repetitions first", 0, 100000, "W")
        .add_count("buffer-bytes", &options.buffer_bytes, "hash_map message size; longer rows are split",
                   minimum_buffer_bytes, maximum_buffer_bytes, "B")
        .add_count("release-queue", &options.release_queue, "hash_map sent buffers awaiting release", 0, 1 << 20,
                   "q")
        .add_flag("trace-exit", &options.trace_exit, "every rank prints its exit code on stderr (for tests)")
        .add_positional("matrix file", &options.file, "FILE.mtx");
    return parser;
}

std::string matrix_name(const std::string& path) {
    std::string_view name = path;
    if (const std::size_t slash = name.rfind('/'); slash != std::string_view::npos)
        name.remove_prefix(slash + 1);
    if (name.ends_with(".mtx"))
        name.remove_suffix(4);
    return std::string(name);
}

// Collective.  Rank 0's text (empty: no problem) on every rank.
std::string broadcast_text(MPI_Comm comm, const std::string& text) {
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    unsigned long long length = text.size();
    MPI_Bcast(&length, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
    std::string out = rank == 0 ? text : std::string(static_cast<std::size_t>(length), '\0');
    if (length > 0)
        MPI_Bcast(out.data(), static_cast<int>(length), MPI_CHAR, 0, comm);
    return out;
}

// Collective.  The maximum of each phase over the ranks.
phase_times max_over_ranks(MPI_Comm comm, const phase_times& mine) {
    double in[3] = {mine.initiation_seconds, mine.completion_seconds, mine.barrier_seconds};
    double out[3] = {0, 0, 0};
    MPI_Allreduce(in, out, 3, MPI_DOUBLE, MPI_MAX, comm);
    return phase_times{out[0], out[1], out[2]};
}

struct spread {
    double median = 0;
    double minimum = 0;
    double maximum = 0;
};

spread spread_of(std::vector<double> samples) {
    spread out;
    if (samples.empty())
        return out;
    std::sort(samples.begin(), samples.end());
    const std::size_t n = samples.size();
    out.median = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
    out.minimum = samples.front();
    out.maximum = samples.back();
    return out;
}

// JSON lines in the format of docs/architecture.md: bench, metric, value, unit, ranks, seed, then
// the fields describing the run, then the line's own fields.
class json_writer {
public:
    json_writer(int ranks) : m_tail(",\"ranks\":" + std::to_string(ranks) + ",\"seed\":0") {}
    void describe(std::string_view key, const std::string& json) {
        m_description.append(",").append(support::json_string(key)).append(":").append(json);
    }
    void emit(std::string_view metric, double value, std::string_view unit,
              const std::vector<std::pair<std::string, std::string>>& extra = {}) const {
        std::string line = "{\"bench\":\"matrix_scatter\",\"metric\":" + support::json_string(metric) +
                           ",\"value\":" + support::json_number(value) + ",\"unit\":" + support::json_string(unit) +
                           m_tail + m_description;
        for (const auto& [key, json] : extra)
            line.append(",").append(support::json_string(key)).append(":").append(json);
        line += "}\n";
        std::fputs(line.c_str(), stdout);
    }

private:
    std::string m_tail;
    std::string m_description;
};

struct matrix_facts {  // broadcast from rank 0 after each reading
    std::int64_t rows = 0;
    std::int64_t columns = 0;
    std::int64_t file_entries = 0;
    std::int64_t nnz = 0;
    std::int64_t longest_row = 0;
    std::int64_t field = 0;
    std::int64_t symmetry = 0;
    std::int64_t rows_sent = 0;  // rows with entries that rank 0 sends (one message each in send/recv)
};

struct repetition {
    double read_seconds = 0;
    phase_times hash_map;
    phase_times sendrecv;
    phase_times alltoallv;
    phase_times hash_map_async;
    std::uint64_t hash_map_messages = 0;  // sent by rank 0
};

class scatter_run {
public:
    scatter_run(const scatter_options& options, MPI_Comm world, std::string program)
        : m_options(options), m_world(world), m_program(std::move(program)) {
        MPI_Comm_rank(world, &m_rank);
        MPI_Comm_size(world, &m_ranks);
    }

    int run() {
        const std::size_t total = m_options.warmup + m_options.repeat;
        for (std::size_t index = 0; index < total; ++index) {
            if (!read_on_rank_zero())
                return 1;
            repetition sample;
            sample.read_seconds = m_read_seconds;
            std::vector<row_summary> expected;
            row_table sendrecv_rows;
            row_table alltoallv_rows;
            row_table async_rows;
            if (m_rank == 0) {
                expected = expected_by_rank(m_reading.table, m_ranks);
                sendrecv_rows = m_reading.table;  // each other scatter gets its own copy
                alltoallv_rows = m_reading.table;
                async_rows = m_reading.table;
            }
            // Rotate which goes first so none always meets a warmer machine.
            const std::function<void()> runs[4] = {
                [&] { run_hash_map(sample, expected, m_reading.table, false); },
                [&] { run_sendrecv(sample, expected, sendrecv_rows); },
                [&] { run_alltoallv(sample, expected, alltoallv_rows); },
                [&] { run_hash_map(sample, expected, async_rows, true); }};
            for (std::size_t k = 0; k < 4; ++k)
                runs[(index + k) % 4]();
            if (index >= m_options.warmup)
                m_samples.push_back(sample);
        }
        if (m_rank == 0)
            report();
        return m_verified ? 0 : 1;
    }

private:
    // Collective.  Figure 1 on rank 0; false on every rank if the file is bad
    // (rank 0 has printed why).
    bool read_on_rank_zero() {
        std::string problem;
        if (m_rank == 0) {
            try {
                const double start = runtime::now_seconds();
                read_matrix_market(m_options.file, m_reading);
                m_read_seconds = runtime::now_seconds() - start;
            } catch (const matrix_market_error& bad) {
                problem = bad.what();
            } catch (const std::exception& other) {
                problem = m_options.file + ": " + other.what();
            }
            if (problem.empty() && m_reading.longest_row + 1 > INT_MAX / sizeof(matrix_entry))
                problem = m_options.file + ": a row of " + std::to_string(m_reading.longest_row) +
                          " entries does not fit in one MPI message";
        }
        problem = broadcast_text(m_world, problem);
        if (!problem.empty()) {
            if (m_rank == 0) {
                std::fprintf(stderr, "%s: error: %s\n", m_program.c_str(), problem.c_str());
                std::fflush(stderr);
            }
            return false;
        }
        if (m_rank == 0) {
            m_facts.rows = m_reading.rows;
            m_facts.columns = m_reading.columns;
            m_facts.file_entries = m_reading.file_entries;
            m_facts.nnz = static_cast<std::int64_t>(m_reading.nnz);
            m_facts.longest_row = static_cast<std::int64_t>(m_reading.longest_row);
            m_facts.field = static_cast<std::int64_t>(m_reading.field);
            m_facts.symmetry = static_cast<std::int64_t>(m_reading.symmetry);
            m_facts.rows_sent = static_cast<std::int64_t>(rows_to_send(m_reading.table, m_ranks).size());
        }
        MPI_Bcast(&m_facts, sizeof(m_facts) / sizeof(std::int64_t), MPI_INT64_T, 0, m_world);
        return true;
    }

    // async: async_insert of every row and flush (no requests, no window) instead
    // of the seed's insert requests waited for every L.
    void run_hash_map(repetition& sample, const std::vector<row_summary>& expected, row_table& reading, bool async) {
        hash_map_config config;
        config.place = placement::cyclic;
        // A capacity hint from the entries present, not the declared row count.
        config.expected_keys_per_rank = static_cast<std::size_t>(std::min(m_facts.rows, m_facts.nnz) / m_ranks + 1);
        config.runtime.blocking_factor = std::max<std::size_t>(m_options.blocking_factor, 1);
        config.runtime.buffer_bytes = m_options.buffer_bytes;
        config.runtime.release_queue = m_options.release_queue;
        row_map map(m_world, config);
        insert_tally tally;
        row_table empty;
        row_table& root_rows = m_rank == 0 ? reading : empty;
        if (async) {
            sample.hash_map_async = max_over_ranks(m_world, scatter_with_hash_map_async(m_world, map, root_rows));
            const std::uint64_t refused = map.async_rejected();
            tally.requested = tally.stored = 0;
            if (refused != 0) {
                std::fprintf(stderr, "matrix_scatter: hash_map async scatter: %llu values refused\n",
                             static_cast<unsigned long long>(refused));
                tally.requested = refused;
            }
        } else {
            const phase_times mine =
                scatter_with_hash_map(m_world, map, root_rows, m_options.blocking_factor, tally);
            sample.hash_map = max_over_ranks(m_world, mine);
            sample.hash_map_messages = map.stats().messages_sent;
        }

        const row_summary held = held_rows(m_rank == 0 ? &reading : nullptr, &map, m_rank, m_ranks);
        bool ok = verify_rows(m_world, held, expected, async ? "hash_map async scatter" : "hash_map scatter");
        if (tally.stored != tally.requested) {  // only rank 0 inserts
            std::fprintf(stderr, "matrix_scatter: hash_map scatter: owners stored %llu of %llu values\n",
                         static_cast<unsigned long long>(tally.stored),
                         static_cast<unsigned long long>(tally.requested));
        }
        int complete = tally.stored == tally.requested ? 1 : 0;
        int all_complete = 0;
        MPI_Allreduce(&complete, &all_complete, 1, MPI_INT, MPI_MIN, m_world);
        m_verified = m_verified && ok && all_complete == 1;
        map.destroy();
    }

    void run_sendrecv(repetition& sample, const std::vector<row_summary>& expected, row_table& rows) {
        const phase_times mine = scatter_with_sendrecv(m_world, rows,
                                                       static_cast<std::uint64_t>(m_facts.longest_row));
        sample.sendrecv = max_over_ranks(m_world, mine);
        const row_summary held = held_rows(&rows, nullptr, m_rank, m_ranks);
        m_verified = verify_rows(m_world, held, expected, "send/recv scatter") && m_verified;
    }

    void run_alltoallv(repetition& sample, const std::vector<row_summary>& expected, row_table& rows) {
        const phase_times mine = scatter_with_alltoallv(m_world, rows);
        sample.alltoallv = max_over_ranks(m_world, mine);
        const row_summary held = held_rows(&rows, nullptr, m_rank, m_ranks);
        m_verified = verify_rows(m_world, held, expected, "packed MPI_Alltoallv scatter") && m_verified;
    }

    void report() const {
        const double per_nnz = 1e6 / static_cast<double>(std::max<std::int64_t>(m_facts.nnz, 1));
        auto collect = [&](auto pick) {
            std::vector<double> values;
            for (const repetition& sample : m_samples)
                values.push_back(pick(sample));
            return spread_of(values);
        };
        const spread read = collect([](const repetition& s) { return s.read_seconds; });
        const spread initiation = collect([&](const repetition& s) { return s.hash_map.initiation_seconds * per_nnz; });
        const spread completion = collect([&](const repetition& s) { return s.hash_map.completion_seconds * per_nnz; });
        const spread barrier = collect([&](const repetition& s) { return s.hash_map.barrier_seconds * per_nnz; });
        const spread sr_initiation =
            collect([&](const repetition& s) { return s.sendrecv.initiation_seconds * per_nnz; });
        const spread sr_completion =
            collect([&](const repetition& s) { return s.sendrecv.completion_seconds * per_nnz; });
        const spread sr_barrier = collect([&](const repetition& s) { return s.sendrecv.barrier_seconds * per_nnz; });
        const spread ratios = collect([](const repetition& s) {
            return s.hash_map.barrier_seconds > 0 ? s.sendrecv.barrier_seconds / s.hash_map.barrier_seconds : 0.0;
        });
        const double ratio = barrier.median > 0 ? sr_barrier.median / barrier.median : 0.0;
        const spread a2a_barrier = collect([&](const repetition& s) { return s.alltoallv.barrier_seconds * per_nnz; });
        const spread a2a_ratios = collect([](const repetition& s) {
            return s.hash_map.barrier_seconds > 0 ? s.alltoallv.barrier_seconds / s.hash_map.barrier_seconds : 0.0;
        });
        const double a2a_ratio = barrier.median > 0 ? a2a_barrier.median / barrier.median : 0.0;
        const spread async_barrier =
            collect([&](const repetition& s) { return s.hash_map_async.barrier_seconds * per_nnz; });
        const double async_vs_a2a = async_barrier.median > 0 ? a2a_barrier.median / async_barrier.median : 0.0;
        double load[3] = {0, 0, 0};
        (void)getloadavg(load, 3);
        const long cores = sysconf(_SC_NPROCESSORS_ONLN);
        const bool oversubscribed = cores > 0 && m_ranks > cores;
        const std::uint64_t messages = m_samples.empty() ? 0 : m_samples.back().hash_map_messages;
        const std::int64_t sendrecv_messages = m_facts.rows_sent;

        const std::string name = matrix_name(m_options.file);
        const auto field = static_cast<matrix_field>(m_facts.field);
        const auto symmetry = static_cast<matrix_symmetry>(m_facts.symmetry);

        // The human table (stderr).
        std::fprintf(stderr,
                     "%s: %s: %lld x %lld, %lld entries in the file, %lld nonzeros stored (%s %s)\n"
                     "  %d ranks, L = %zu, buffer %zu bytes; median of %zu runs after %zu warm-up\n"
                     "  read on rank 0 (Figure 1): %.3f ms (%.3f us per nonzero)\n"
                     "  %-12s %14s %14s   (us per nonzero, max over ranks)\n"
                     "  %-12s %14.4f %14.4f\n  %-12s %14.4f %14.4f\n  %-12s %14.4f %14.4f\n"
                     "  send/recv / hash_map barrier time: %.3f (above 1: hash_map is faster)\n"
                     "  messages from rank 0: hash_map %llu, send/recv %lld\n"
                     "  verified: %s\n"
                     "  packed MPI_Alltoallv barrier: %.4f us per nonzero; alltoallv / hash_map: %.3f (above 1: hash_map is faster)\n"
                     "  hash_map with async_insert + flush (no requests): barrier %.4f us per nonzero; alltoallv / it: %.3f\n"
                     "  load %.2f %.2f %.2f, %ld cores%s\n",
                     m_program.c_str(), name.c_str(), static_cast<long long>(m_facts.rows),
                     static_cast<long long>(m_facts.columns), static_cast<long long>(m_facts.file_entries),
                     static_cast<long long>(m_facts.nnz), to_string(field), to_string(symmetry), m_ranks,
                     m_options.blocking_factor, m_options.buffer_bytes, m_options.repeat, m_options.warmup,
                     read.median * 1e3, read.median * per_nnz, "phase", "hash_map", "send/recv", "initiation",
                     initiation.median, sr_initiation.median, "completion", completion.median, sr_completion.median,
                     "barrier", barrier.median, sr_barrier.median, ratio, static_cast<unsigned long long>(messages),
                     static_cast<long long>(sendrecv_messages),
                     m_verified ? "yes (every rank's rows, entries and checksum match the file)" : "NO",
                     a2a_barrier.median, a2a_ratio, async_barrier.median, async_vs_a2a, load[0], load[1], load[2], cores,
                     oversubscribed ? ", OVERSUBSCRIBED (ranks > cores)" : "");
        std::fflush(stderr);

        // JSON lines (stdout).
        json_writer json(m_ranks);
        json.describe("matrix", support::json_string(name));
        json.describe("file", support::json_string(m_options.file));
        json.describe("rows", support::json_number(static_cast<double>(m_facts.rows)));
        json.describe("columns", support::json_number(static_cast<double>(m_facts.columns)));
        json.describe("file_entries", support::json_number(static_cast<double>(m_facts.file_entries)));
        json.describe("field", support::json_string(to_string(field)));
        json.describe("symmetry", support::json_string(to_string(symmetry)));
        json.describe("blocking_factor",
                      support::json_number(static_cast<double>(m_options.blocking_factor)));
        json.describe("buffer_bytes", support::json_number(static_cast<double>(m_options.buffer_bytes)));
        json.describe("release_queue", support::json_number(static_cast<double>(m_options.release_queue)));
        json.describe("reps", support::json_number(static_cast<double>(m_options.repeat)));
        json.describe("warmup", support::json_number(static_cast<double>(m_options.warmup)));
        json.describe("cores", support::json_number(static_cast<double>(cores)));
        json.describe("oversubscribed", oversubscribed ? "true" : "false");
        json.describe("load_1_5_15", "[" + support::json_number(load[0]) + "," + support::json_number(load[1]) + "," +
                                         support::json_number(load[2]) + "]");
        auto stats = [](const spread& s) {
            return std::vector<std::pair<std::string, std::string>>{
                {"median", support::json_number(s.median)},
                {"min", support::json_number(s.minimum)},
                {"max", support::json_number(s.maximum)}};
        };
        json.emit("read_seconds", read.median, "s", stats(read));
        json.emit("initiation_us_per_nnz", initiation.median, "us", stats(initiation));
        json.emit("completion_us_per_nnz", completion.median, "us", stats(completion));
        json.emit("barrier_us_per_nnz", barrier.median, "us", stats(barrier));
        json.emit("sendrecv_initiation_us_per_nnz", sr_initiation.median, "us", stats(sr_initiation));
        json.emit("sendrecv_completion_us_per_nnz", sr_completion.median, "us", stats(sr_completion));
        json.emit("sendrecv_barrier_us_per_nnz", sr_barrier.median, "us", stats(sr_barrier));
        auto ratio_fields = stats(ratios);
        ratio_fields.insert(ratio_fields.begin(), {"of", support::json_string("median sendrecv barrier / median hash_map barrier")});
        ratio_fields.push_back({"baseline_us_per_nnz", support::json_number(sr_barrier.median)});
        ratio_fields.push_back({"ours_us_per_nnz", support::json_number(barrier.median)});
        json.emit("scatter_vs_sendrecv", ratio, "ratio", ratio_fields);
        json.emit("alltoallv_barrier_us_per_nnz", a2a_barrier.median, "us", stats(a2a_barrier));
        auto a2a_fields = stats(a2a_ratios);
        a2a_fields.insert(a2a_fields.begin(),
                          {"of", support::json_string("median packed-alltoallv barrier / median hash_map barrier")});
        a2a_fields.push_back({"baseline_us_per_nnz", support::json_number(a2a_barrier.median)});
        a2a_fields.push_back({"ours_us_per_nnz", support::json_number(barrier.median)});
        json.emit("scatter_vs_alltoallv", a2a_ratio, "ratio", a2a_fields);
        json.emit("async_barrier_us_per_nnz", async_barrier.median, "us", stats(async_barrier));
        json.emit("async_scatter_vs_alltoallv", async_vs_a2a, "ratio",
                  {{"of", support::json_string("median packed-alltoallv barrier / median hash_map async_insert barrier")},
                   {"baseline_us_per_nnz", support::json_number(a2a_barrier.median)},
                   {"ours_us_per_nnz", support::json_number(async_barrier.median)}});
        json.emit("messages", static_cast<double>(messages), "messages",
                  {{"sendrecv_messages", support::json_number(static_cast<double>(sendrecv_messages))}});
        json.emit("nnz", static_cast<double>(m_facts.nnz), "entries");
        json.emit("verified", m_verified ? 1 : 0, "bool");
        std::fflush(stdout);
    }

    const scatter_options& m_options;
    MPI_Comm m_world;
    std::string m_program;
    int m_rank = 0;
    int m_ranks = 1;
    matrix_market_matrix m_reading;  // rank 0 only
    double m_read_seconds = 0;
    matrix_facts m_facts;
    std::vector<repetition> m_samples;
    bool m_verified = true;
};

}  // namespace

int run_matrix_scatter(int argc, char** argv, MPI_Comm comm) {
    const std::string program = support::program_name(argc, argv, "matrix_scatter");
    scatter_options options;
    const support::exit_reporter finish(argc, argv, program, comm);

    // Every rank parses the same argv; they still agree before going on.
    support::option_parser parser = make_parser(program, options);
    if (const auto stop = support::parse_collectively(comm, parser, support::arguments_of(argc, argv), program))
        return finish(*stop);

    MPI_Comm world = MPI_COMM_NULL;
    MPI_Comm_dup(comm, &world);
    struct comm_guard {
        MPI_Comm& comm;
        ~comm_guard() {
            if (comm != MPI_COMM_NULL && std::uncaught_exceptions() == 0)
                MPI_Comm_free(&comm);
        }
    } guard{world};
    scatter_run run(options, world, program);
    return finish(run.run());
}

}  // namespace mpidict::apps
