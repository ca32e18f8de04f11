#pragma once
// Reading a MatrixMarket coordinate file into "the local table keyed by row"
// of seed 000, Figure 1: a serial multi_table mapping a 1-based row index to the
// row's (column, value) pairs, in file order.
//
// Accepted: banner "%%MatrixMarket matrix coordinate <field> <symmetry>" with
// field real (or double), integer or pattern and symmetry general, symmetric or
// skew-symmetric; comment (%) and blank lines; 1-based indices.  Symmetric
// storage is expanded: an off-diagonal (i, j, v) also stores (j, i, v), or
// (j, i, -v) when skew-symmetric.  Pattern entries get the value 1.  Explicit
// zeros are entries and are kept.
//
// Every problem throws matrix_market_error with the message
// "<path>:<line>: <what is wrong>" (no line for a file that cannot be opened):
// malformed banner, unsupported format (array) or field (complex, hermitian),
// bad size line, index out of range, a malformed or truncated entry, more or
// fewer entries than the size line declares, an empty or missing file.

#include <cstdint>
#include <string>

#include "mpidict/error.hpp"
#include "mpidict/local/multi_table.hpp"

namespace mpidict::apps {

// One nonzero of a row: the paper packs (column, value) into two integers; we
// keep a 64-bit column and the value as a double (integers up to 2^53 exactly).
struct matrix_entry {
    std::int64_t column = 0;
    double value = 0;
};

using row_table = local::multi_table<std::int64_t, matrix_entry>;

// A problem with an input file; what() is "<path>:<line>: <problem>".
class matrix_market_error : public error {
public:
    matrix_market_error(const std::string& path, std::int64_t line, const std::string& problem);
    const std::string& path() const { return m_path; }
    std::int64_t line() const { return m_line; }  // 0: not tied to a line

private:
    std::string m_path;
    std::int64_t m_line;
};

enum class matrix_field { real, integer, pattern };
enum class matrix_symmetry { general, symmetric, skew_symmetric };

const char* to_string(matrix_field field);
const char* to_string(matrix_symmetry symmetry);

struct matrix_market_matrix {
    std::string path;
    matrix_field field = matrix_field::real;
    matrix_symmetry symmetry = matrix_symmetry::general;
    std::int64_t rows = 0;
    std::int64_t columns = 0;
    std::int64_t file_entries = 0;  // as declared on the size line (and found)
    std::uint64_t nnz = 0;          // entries stored, after symmetric expansion
    std::uint64_t longest_row = 0;  // most entries in one row (the paper's m)
    row_table table;                // row -> (column, value) pairs, file order
};

// Reads `path` into `out` (its table is cleared first).  Throws matrix_market_error.
void read_matrix_market(const std::string& path, matrix_market_matrix& out);

}  // namespace mpidict::apps
