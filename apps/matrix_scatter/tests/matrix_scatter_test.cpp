// MPI test of apps/matrix_scatter at 1-4 ranks.  Every rank checks its own
// results; the verdict is reduced.  Usage: matrix_scatter_test <scratch dir>.
//
//  1. The reader on files this test writes: symmetric and skew-symmetric
//     expansion, pattern and integer fields, comments, blank lines, CRLF, '+'
//     signs, Fortran exponents, explicit zeros, a last line without a newline.
//  2. Both scatters through the API on a matrix with empty rows: every rank
//     holds exactly rows r % p == rank with the file's entries in file order;
//     phase times are ordered.
//  3. verify_rows catches an extra entry, a changed value and a row on the
//     wrong rank (totals unchanged) -- on every rank.
//  4. The whole program (run_matrix_scatter) on generated matrices: empty rows,
//     symmetric, skew-symmetric, pattern, no entries at all, more ranks than
//     rows, a row longer than one message, blocking factor 1.

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <mpi.h>

#include "matrix_scatter/matrix_scatter.hpp"

namespace {

using namespace mpidict::apps;

int g_rank = 0;
int g_ranks = 1;
int g_failures = 0;

void check(bool condition, const std::string& what, int line) {
    if (!condition) {
        ++g_failures;
        std::fprintf(stderr, "[rank %d] FAILED (line %d): %s\n", g_rank, line, what.c_str());
    }
}
#define CHECK(condition) check((condition), #condition, __LINE__)
#define CHECK_MESSAGE(condition, message) check((condition), message, __LINE__)

std::string g_dir;

// Rank 0 writes `text` to <dir>/<name>; every rank gets the path.
std::string write_file(const std::string& name, const std::string& text) {
    const std::string path = g_dir + "/" + name;
    if (g_rank == 0) {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << text;
    }
    MPI_Barrier(MPI_COMM_WORLD);
    return path;
}

using row_entries = std::vector<std::pair<std::int64_t, double>>;

row_entries row_of(const row_table& table, std::int64_t row) {
    row_entries out;
    const auto values = table.find(row);
    for (std::size_t index = 0; index < values.size(); ++index)
        out.emplace_back(values[index].column, values[index].value);
    return out;
}

// ---- 1. the reader (rank 0) -------------------------------------------------------

void test_reader() {
    const std::string symmetric = write_file("symmetric.mtx",
        "%%MatrixMarket matrix coordinate real symmetric\n"
        "% lower triangle only\n"
        "\n"
        "4 4 5\n"
        "1 1 2.0\n"
        "2 1 -1.5\n"
        "3 2 +4e-1\n"
        "4 4 1.0D+01\n"
        "4 1 0.0\n");
    const std::string skew = write_file("skew.mtx",
        "%%MatrixMarket matrix coordinate real skew-symmetric\r\n"
        "3 3 2\r\n"
        "2 1 3.0\r\n"
        "3 2 -0.5\r\n");
    const std::string pattern = write_file("pattern.mtx",
        "%%MatrixMarket matrix coordinate pattern symmetric\n"
        "3 3 3\n"
        "1 1\n"
        "2 1\n"
        "3 1");  // no newline at the end: still a whole entry
    const std::string integer = write_file("integer.mtx",
        "%%MatrixMarket MATRIX Coordinate INTEGER General\n"
        "2 5 3\n"
        "  1   5   -7  \n"
        "2\t1\t9007199254740992\n"
        "1 2 0\n");
    if (g_rank != 0)
        return;

    matrix_market_matrix m;
    read_matrix_market(symmetric, m);
    CHECK(m.field == matrix_field::real && m.symmetry == matrix_symmetry::symmetric);
    CHECK(m.rows == 4 && m.columns == 4 && m.file_entries == 5);
    CHECK(m.nnz == 8);  // 2 diagonal + 3 off-diagonal twice
    CHECK((row_of(m.table, 1) == row_entries{{1, 2.0}, {2, -1.5}, {4, 0.0}}));
    CHECK((row_of(m.table, 2) == row_entries{{1, -1.5}, {3, 0.4}}));
    CHECK((row_of(m.table, 3) == row_entries{{2, 0.4}}));
    CHECK((row_of(m.table, 4) == row_entries{{4, 10.0}, {1, 0.0}}));
    CHECK(m.longest_row == 3);

    read_matrix_market(skew, m);
    CHECK(m.symmetry == matrix_symmetry::skew_symmetric && m.nnz == 4);
    CHECK((row_of(m.table, 1) == row_entries{{2, -3.0}}));
    CHECK((row_of(m.table, 2) == row_entries{{1, 3.0}, {3, 0.5}}));
    CHECK((row_of(m.table, 3) == row_entries{{2, -0.5}}));

    read_matrix_market(pattern, m);
    CHECK(m.field == matrix_field::pattern && m.nnz == 5);
    CHECK((row_of(m.table, 1) == row_entries{{1, 1.0}, {2, 1.0}, {3, 1.0}}));
    CHECK((row_of(m.table, 3) == row_entries{{1, 1.0}}));

    read_matrix_market(integer, m);
    CHECK(m.field == matrix_field::integer && m.rows == 2 && m.columns == 5 && m.nnz == 3);
    CHECK((row_of(m.table, 1) == row_entries{{5, -7.0}, {2, 0.0}}));
    CHECK((row_of(m.table, 2) == row_entries{{1, 9007199254740992.0}}));

    // Errors carry the file and line (the program's tests cover the rest).
    const std::string bad = g_dir + "/bad_skew_diagonal.mtx";
    {
        std::ofstream out(bad);
        out << "%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 5.0\n";
    }
    try {
        read_matrix_market(bad, m);
        CHECK_MESSAGE(false, "a skew-symmetric diagonal entry was accepted");
    } catch (const matrix_market_error& problem) {
        CHECK(problem.line() == 3);
        CHECK(std::string(problem.what()).find("bad_skew_diagonal.mtx:3: a skew-symmetric matrix cannot") !=
              std::string::npos);
    }
}

// ---- 2 and 3. the scatters through the API -------------------------------------------

// 10 x 7 with empty rows 2, 3, 9 and 10 (the last), several entries per row, an
// explicit zero and a row that is not in file order.
const char* const g_empty_rows =
    "%%MatrixMarket matrix coordinate real general\n"
    "10 7 12\n"
    "1 1 1.0\n"
    "4 2 2.5\n"
    "4 7 -3.0\n"
    "5 5 0.0\n"
    "6 1 1e-300\n"
    "7 3 7.0\n"
    "7 1 -7.0\n"
    "8 6 8.0\n"
    "1 7 1.5\n"
    "6 6 6.0\n"
    "6 2 6.5\n"
    "8 1 0.125\n";

// Checks that `held` (this rank's rows) is exactly the reading's rows r % p == rank.
void check_holds_own_rows(const row_table& reading, const row_table& held, const char* what) {
    std::int64_t rows = 0;
    held.for_each([&](const std::int64_t& row, const row_table::values_view& values) {
        ++rows;
        CHECK_MESSAGE(row % g_ranks == g_rank, std::string(what) + ": row " + std::to_string(row) + " on the wrong rank");
        (void)values;
    });
    std::int64_t expected_rows = 0;
    reading.for_each([&](const std::int64_t& row, const row_table::values_view&) {
        if (row % g_ranks != g_rank)
            return;
        ++expected_rows;
        CHECK_MESSAGE(row_of(held, row) == row_of(reading, row),
                      std::string(what) + ": row " + std::to_string(row) + " differs from the file");
    });
    CHECK_MESSAGE(rows == expected_rows, std::string(what) + ": wrong number of rows");
}

void test_scatters() {
    const std::string path = write_file("empty_rows.mtx", g_empty_rows);
    // Every rank reads the file here, only to know what it should get.
    matrix_market_matrix reading;
    read_matrix_market(path, reading);
    CHECK(reading.nnz == 12 && reading.longest_row == 3);
    const std::vector<row_summary> expected =
        g_rank == 0 ? expected_by_rank(reading.table, g_ranks) : std::vector<row_summary>{};

    for (std::size_t blocking_factor : {std::size_t{1}, std::size_t{2}, std::size_t{64}}) {
        row_table root = g_rank == 0 ? reading.table : row_table{};
        mpidict::hash_map_config config;
        config.place = mpidict::placement::cyclic;
        config.runtime.blocking_factor = blocking_factor;
        row_map map(MPI_COMM_WORLD, config);
        insert_tally tally;
        const phase_times times = scatter_with_hash_map(MPI_COMM_WORLD, map, root, blocking_factor, tally);
        CHECK(times.initiation_seconds >= 0 && times.completion_seconds >= times.initiation_seconds &&
              times.barrier_seconds >= times.completion_seconds);
        if (g_rank == 0) {
            // One request per row with entries that leaves rank 0 (empty rows are not sent).
            std::int64_t leaving = 0;
            for (std::int64_t row = 1; row <= reading.rows; ++row)
                leaving += row % g_ranks != 0 && !reading.table.find(row).empty() ? 1 : 0;
            CHECK(tally.requests == static_cast<std::uint64_t>(leaving));
            CHECK(rows_to_send(reading.table, g_ranks).size() == static_cast<std::size_t>(leaving));
            CHECK(tally.stored == tally.requested);
        }
        CHECK(map.local_size() == 0 || g_rank != 0);  // nothing is sent to rank 0
        row_table mine = root;  // rank 0: what stayed; others: their shard
        map.local_for_each([&](const std::int64_t& row, const row_table::values_view& values) {
            for (std::size_t index = 0; index < values.size(); ++index)
                mine.append(row, values[index]);
        });
        check_holds_own_rows(reading.table, mine, "hash_map scatter");
        const row_summary held = held_rows(g_rank == 0 ? &root : nullptr, &map, g_rank, g_ranks);
        CHECK(verify_rows(MPI_COMM_WORLD, held, expected, "hash_map scatter"));
        map.destroy();
    }

    row_table rows = g_rank == 0 ? reading.table : row_table{};
    const phase_times times = scatter_with_sendrecv(MPI_COMM_WORLD, rows, reading.longest_row);
    CHECK(times.barrier_seconds >= times.completion_seconds && times.completion_seconds >= 0);
    check_holds_own_rows(reading.table, rows, "send/recv scatter");
    CHECK(verify_rows(MPI_COMM_WORLD, held_rows(&rows, nullptr, g_rank, g_ranks), expected, "send/recv scatter"));

    // 3. Tampering is caught on every rank (the messages it prints are expected).
    if (g_rank == 0)
        std::fprintf(stderr, "(the next 'matrix_scatter: ...' lines come from deliberate tampering)\n");
    const int victim = g_ranks - 1;
    {
        row_table extra = rows;
        if (g_rank == victim)
            extra.append(victim == 0 ? 10 : victim, matrix_entry{1, 42.0});
        CHECK(!verify_rows(MPI_COMM_WORLD, held_rows(&extra, nullptr, g_rank, g_ranks), expected, "tampered (extra)"));
    }
    {
        row_table changed = rows;
        if (g_rank == 0) {  // rank 0 always owns row 1 at p = 1, else changes its row 4 or 8 if it has one
            std::int64_t row = 0;
            changed.for_each([&](const std::int64_t& key, const row_table::values_view&) { row = key; });
            if (row != 0) {
                std::vector<matrix_entry> values;
                changed.take(row, 100, [&](matrix_entry&& entry) { values.push_back(entry); });
                values.front().value = std::nextafter(values.front().value, 1e9);
                changed.append(row, values.begin(), values.end());
            } else {
                changed.append(g_ranks, matrix_entry{1, 1.0});  // nothing to change: add instead
            }
        }
        CHECK(!verify_rows(MPI_COMM_WORLD, held_rows(&changed, nullptr, g_rank, g_ranks), expected,
                           "tampered (value)"));
    }
    if (g_ranks > 1) {
        // Row 1 moves from rank 1 to rank 0: totals stay the same, per-rank checks fail.
        row_table moved = rows;
        std::vector<matrix_entry> values;
        if (g_rank == 1)
            moved.take(1, 100, [&](matrix_entry&& entry) { values.push_back(entry); });
        if (g_rank == 0) {
            const auto original = reading.table.find(1);
            for (std::size_t index = 0; index < original.size(); ++index)
                moved.append(1, original[index]);
        }
        CHECK(!verify_rows(MPI_COMM_WORLD, held_rows(&moved, nullptr, g_rank, g_ranks), expected, "tampered (moved)"));
    }
}

// ---- 4. the whole program ---------------------------------------------------------------

int run_program(std::vector<std::string> arguments) {
    arguments.insert(arguments.begin(), "matrix_scatter_test");
    std::vector<char*> argv;
    for (std::string& argument : arguments)
        argv.push_back(argument.data());
    argv.push_back(nullptr);
    return run_matrix_scatter(static_cast<int>(arguments.size()), argv.data(), MPI_COMM_WORLD);
}

void test_program() {
    struct generated {
        std::string name;
        std::string text;
        std::vector<std::string> options;
    };
    std::string long_row = "%%MatrixMarket matrix coordinate real general\n3 3000 3002\n";
    for (int column = 1; column <= 3000; ++column)
        long_row += "2 " + std::to_string(column) + " " + std::to_string(column * 0.5) + "\n";
    long_row += "1 1 1.0\n3 3000 3.0\n";
    std::string banded = "%%MatrixMarket matrix coordinate real symmetric\n200 200 398\n";
    for (int row = 1; row <= 200; ++row) {
        banded += std::to_string(row) + " " + std::to_string(row) + " 4.0\n";
        if (row < 200 && row % 7 != 0)
            banded += std::to_string(row + 1) + " " + std::to_string(row) + " -1.0\n";
    }
    // 200 diagonal + 199 - 28 off-diagonal = 371 entries; fix the count.
    banded.replace(banded.find("398"), 3, "371");
    const std::vector<generated> cases = {
        {"program_empty_rows.mtx", g_empty_rows, {}},
        {"program_empty_rows_l1.mtx", g_empty_rows, {"--blocking-factor", "1", "--repeat", "2"}},
        {"program_banded_symmetric.mtx", banded, {"--blocking-factor", "5"}},
        {"program_skew.mtx",
         "%%MatrixMarket matrix coordinate integer skew-symmetric\n5 5 4\n2 1 1\n3 1 -2\n5 4 3\n4 2 9\n", {}},
        {"program_pattern.mtx", "%%MatrixMarket matrix coordinate pattern general\n6 6 3\n6 6\n1 6\n6 1\n", {}},
        {"program_no_entries.mtx", "%%MatrixMarket matrix coordinate real general\n5 5 0\n", {}},
        {"program_fewer_rows_than_ranks.mtx", "%%MatrixMarket matrix coordinate real general\n1 2 2\n1 2 2.0\n1 1 1.0\n", {}},
        {"program_long_row.mtx", long_row, {"--buffer-bytes", "1024", "--blocking-factor", "3"}},
    };
    for (const generated& each : cases) {
        const std::string path = write_file(each.name, each.text);
        std::vector<std::string> arguments = {"--repeat", "1", "--warmup", "0"};
        arguments.insert(arguments.end(), each.options.begin(), each.options.end());
        arguments.push_back(path);
        const int code = run_program(arguments);
        CHECK_MESSAGE(code == 0, each.name + ": run_matrix_scatter returned " + std::to_string(code));
    }
    // Bad input through the API: every rank gets 1, none hangs.
    const std::string missing = g_dir + "/does_not_exist.mtx";
    CHECK(run_program({missing}) == 1);
    CHECK(run_program({"--no-such-option", missing}) == 2);
    CHECK(run_program({"--help"}) == 0);
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_ranks);
    if (const char* wanted = std::getenv("MPIDICT_TEST_RANKS"))
        check(std::atoi(wanted) == g_ranks, "the launcher started " + std::to_string(g_ranks) + " ranks, not " + wanted,
              __LINE__);
    const std::string base = argc > 1 ? argv[1] : "matrix_scatter_test_files";
    g_dir = base + "/np" + std::to_string(g_ranks);
    if (g_rank == 0)
        std::filesystem::create_directories(g_dir);
    MPI_Barrier(MPI_COMM_WORLD);
    try {
        test_reader();
        test_scatters();
        test_program();
    } catch (const std::exception& problem) {
        std::fprintf(stderr, "[rank %d] unexpected exception: %s\n", g_rank, problem.what());
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int failures = 0;
    MPI_Allreduce(&g_failures, &failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (g_rank == 0)
        std::printf("matrix_scatter_test on %d ranks: %s (%d failed checks)\n", g_ranks,
                    failures == 0 ? "PASSED" : "FAILED", failures);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
