// Reader of orbit problem files; see problem.hpp.

#include "orbit/problem.hpp"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

namespace mpidict::apps::orbit {

const char* to_string(action_kind action) {
    switch (action) {
    case action_kind::on_tuples: return "OnTuples";
    case action_kind::on_sets: return "OnSets";
    default: return "OnRight";
    }
}

int problem::bits_per_coordinate() const {
    const int largest = largest_coordinate();
    return largest <= 0 ? 1 : std::bit_width(static_cast<unsigned>(largest));
}

namespace {

bool is_prime(long value) {
    if (value < 2)
        return false;
    for (long divisor = 2; divisor * divisor <= value; ++divisor)
        if (value % divisor == 0)
            return false;
    return true;
}

long power_mod(long base, long exponent, long modulus) {
    long result = 1;
    base %= modulus;
    while (exponent > 0) {
        if (exponent & 1)
            result = result * base % modulus;
        base = base * base % modulus;
        exponent >>= 1;
    }
    return result;
}

// Rank of an n x n matrix over GF(q), q prime, by Gaussian elimination.
bool invertible(std::vector<int> matrix, int n, int q) {
    for (int column = 0; column < n; ++column) {
        int pivot = -1;
        for (int row = column; row < n; ++row)
            if (matrix[static_cast<std::size_t>(row * n + column)] != 0) {
                pivot = row;
                break;
            }
        if (pivot < 0)
            return false;
        for (int k = 0; k < n; ++k)
            std::swap(matrix[static_cast<std::size_t>(pivot * n + k)], matrix[static_cast<std::size_t>(column * n + k)]);
        const long inverse = power_mod(matrix[static_cast<std::size_t>(column * n + column)], q - 2, q);
        for (int row = column + 1; row < n; ++row) {
            const long factor = matrix[static_cast<std::size_t>(row * n + column)] * inverse % q;
            if (factor == 0)
                continue;
            for (int k = column; k < n; ++k) {
                long value = matrix[static_cast<std::size_t>(row * n + k)] -
                             factor * matrix[static_cast<std::size_t>(column * n + k)];
                value %= q;
                if (value < 0)
                    value += q;
                matrix[static_cast<std::size_t>(row * n + k)] = static_cast<int>(value);
            }
        }
    }
    return true;
}

class reader {
public:
    explicit reader(std::string path) : m_path(std::move(path)) {}

    problem read() {
        std::ifstream in(m_path);
        if (!in)
            throw problem_error(m_path + ": cannot open: " + std::strerror(errno));
        m_problem.path = m_path;
        std::string name = m_path.substr(m_path.find_last_of('/') == std::string::npos ? 0 : m_path.find_last_of('/') + 1);
        if (name.size() > 4 && name.ends_with(".txt"))
            name.resize(name.size() - 4);
        m_problem.name = name;

        std::string text;
        while (std::getline(in, text)) {
            ++m_line;
            if (const auto hash = text.find('#'); hash != std::string::npos)
                text.resize(hash);
            std::vector<std::string> words;
            std::istringstream split(text);
            for (std::string word; split >> word;)
                words.push_back(word);
            if (words.empty())
                continue;
            if (m_matrix_line != 0) {
                matrix_row(words);
                continue;
            }
            line(words);
        }
        if (in.bad())
            throw problem_error(m_path + ":" + std::to_string(m_line) + ": read error: " + std::strerror(errno));
        finish();
        return std::move(m_problem);
    }

private:
    problem_error fail(int at, const std::string& what) const {
        return problem_error(m_path + ":" + std::to_string(at) + ": " + what);
    }
    problem_error fail(const std::string& what) const { return fail(m_line, what); }

    long integer(const std::string& word, const char* what) const {
        long value = 0;
        const char* end = word.data() + word.size();
        const auto [stop, code] = std::from_chars(word.data(), end, value);
        if (code != std::errc() || stop != end)
            throw fail("malformed " + std::string(what) + ": '" + word + "' is not an integer");
        return value;
    }

    long single(const std::vector<std::string>& words, long low, long high) const {
        if (words.size() != 2)
            throw fail("malformed line: '" + words[0] + "' takes one value, found " + std::to_string(words.size() - 1));
        const long value = integer(words[1], words[0].c_str());
        if (value < low || value > high)
            throw fail(words[0] + " " + std::to_string(value) + " is outside " + std::to_string(low) + ".." +
                       std::to_string(high));
        return value;
    }

    void line(const std::vector<std::string>& words) {
        const std::string& key = words[0];
        if (key == "gen") {
            generator(words);
            return;
        }
        if (const auto earlier = m_seen.find(key); earlier != m_seen.end())
            throw fail("repeated key '" + key + "' (first on line " + std::to_string(earlier->second) + ")");
        if (key == "type") {
            if (words.size() != 2 || (words[1] != "perm" && words[1] != "matrix"))
                throw fail("malformed line: type must be 'perm' or 'matrix'");
            m_problem.kind = words[1] == "perm" ? group_kind::permutation : group_kind::matrix;
        } else if (key == "degree") {
            m_problem.degree = static_cast<int>(single(words, 1, 65536));
        } else if (key == "field") {
            m_problem.field = static_cast<int>(single(words, 2, 65536));
            if (!is_prime(m_problem.field))
                throw fail("field " + std::to_string(m_problem.field) + " is not a prime (only prime fields GF(p))");
        } else if (key == "dim") {
            m_problem.dim = static_cast<int>(single(words, 1, max_point_bits));
        } else if (key == "action") {
            if (words.size() != 2)
                throw fail("malformed line: action takes one value");
            if (words[1] == "OnTuples")
                m_problem.action = action_kind::on_tuples;
            else if (words[1] == "OnSets")
                m_problem.action = action_kind::on_sets;
            else if (words[1] == "OnRight")
                m_problem.action = action_kind::on_right;
            else
                throw fail("unknown action '" + words[1] + "' (OnTuples, OnSets or OnRight)");
        } else if (key == "group_order") {
            if (words.size() != 2 || words[1].find_first_not_of("0123456789") != std::string::npos)
                throw fail("malformed line: group_order takes one non-negative integer");
            m_problem.group_order = words[1];
        } else if (key == "expected") {
            if (words.size() != 2)
                throw fail("malformed line: expected takes one value");
            std::uint64_t value = 0;
            const char* end = words[1].data() + words[1].size();
            const auto [stop, code] = std::from_chars(words[1].data(), end, value);
            if (code != std::errc() || stop != end || value == 0)
                throw fail("malformed expected: '" + words[1] + "' is not a positive integer");
            m_problem.expected = value;
        } else if (key == "start") {
            if (words.size() < 2)
                throw fail("malformed line: start has no coordinates");
            for (std::size_t index = 1; index < words.size(); ++index)
                m_start.push_back(integer(words[index], "start coordinate"));
        } else if (key == "ngens") {
            m_ngens = static_cast<int>(single(words, 1, 1000000));
        } else {
            throw fail("unknown key '" + key + "'");
        }
        m_seen.emplace(key, m_line);
    }

    void need(const char* key, const char* for_what) const {
        if (!m_seen.contains(key))
            throw fail(std::string(for_what) + " before the '" + key + "' line");
    }

    void generator(const std::vector<std::string>& words) {
        need("type", "gen");
        if (m_problem.kind == group_kind::permutation) {
            need("degree", "gen");
            const int n = m_problem.degree;
            if (static_cast<int>(words.size()) - 1 != n)
                throw fail("permutation has " + std::to_string(words.size() - 1) + " images, degree is " +
                           std::to_string(n));
            std::vector<int> images(static_cast<std::size_t>(n));
            std::vector<int> preimage(static_cast<std::size_t>(n), 0);
            for (int point = 1; point <= n; ++point) {
                const long image = integer(words[static_cast<std::size_t>(point)], "permutation image");
                if (image < 1 || image > n)
                    throw fail("not a permutation: image " + std::to_string(image) + " of point " +
                               std::to_string(point) + " is outside 1.." + std::to_string(n));
                int& first = preimage[static_cast<std::size_t>(image - 1)];
                if (first != 0)
                    throw fail("not a permutation: " + std::to_string(image) + " is the image of both " +
                               std::to_string(first) + " and " + std::to_string(point));
                first = point;
                images[static_cast<std::size_t>(point - 1)] = static_cast<int>(image - 1);
            }
            m_problem.generators.push_back(std::move(images));
            m_generator_lines.push_back(m_line);
            return;
        }
        need("field", "gen");
        need("dim", "gen");
        if (words.size() != 1)
            throw fail("malformed matrix generator: the 'gen' line takes no numbers; its " +
                       std::to_string(m_problem.dim) + " rows follow on their own lines");
        m_matrix_line = m_line;
        m_matrix.clear();
    }

    void matrix_row(const std::vector<std::string>& words) {
        const int n = m_problem.dim;
        const int q = m_problem.field;
        const int rows_so_far = static_cast<int>(m_matrix.size()) / n;
        if (words[0].find_first_not_of("-+0123456789") != std::string::npos)
            throw fail("the matrix generator of line " + std::to_string(m_matrix_line) + " has " +
                       std::to_string(rows_so_far) + " of its " + std::to_string(n) + " rows, found '" + words[0] +
                       "' instead of a row");
        if (static_cast<int>(words.size()) != n)
            throw fail("matrix row has " + std::to_string(words.size()) + " entries, dim is " + std::to_string(n));
        for (const std::string& word : words) {
            const long entry = integer(word, "matrix entry");
            if (entry < 0 || entry >= q)
                throw fail("matrix entry " + std::to_string(entry) + " is outside 0.." + std::to_string(q - 1) +
                           " (field " + std::to_string(q) + ")");
            m_matrix.push_back(static_cast<int>(entry));
        }
        if (static_cast<int>(m_matrix.size()) == n * n) {
            if (!invertible(m_matrix, n, q))
                throw fail(m_matrix_line, "the generator matrix is singular over GF(" + std::to_string(q) +
                                              "), so it is not a group element");
            m_problem.generators.push_back(m_matrix);
            m_generator_lines.push_back(m_matrix_line);
            m_matrix_line = 0;
        }
    }

    void finish() {
        if (m_line == 0)
            throw problem_error(m_path + ":1: empty file");
        if (m_matrix_line != 0)
            throw fail("the file ends inside the matrix generator of line " + std::to_string(m_matrix_line) + " (" +
                       std::to_string(m_matrix.size() / static_cast<std::size_t>(m_problem.dim)) + " of " +
                       std::to_string(m_problem.dim) + " rows)");
        for (const char* key : {"type", "action", "start", "ngens"})
            if (!m_seen.contains(key))
                throw problem_error(m_path + ": missing '" + std::string(key) + "' line");
        problem& p = m_problem;
        const int action_line = m_seen.at("action");
        const int start_line = m_seen.at("start");
        if (p.kind == group_kind::permutation) {
            if (!m_seen.contains("degree"))
                throw problem_error(m_path + ": missing 'degree' line (needed by type perm)");
            if (p.action == action_kind::on_right)
                throw fail(action_line, "action OnRight needs type matrix; permutation groups act OnTuples or OnSets");
            for (const long point : m_start) {
                if (point < 1 || point > p.degree)
                    throw fail(start_line, "start point " + std::to_string(point) + " is outside 1.." +
                                               std::to_string(p.degree) + " (degree)");
                p.start.push_back(static_cast<int>(point - 1));
            }
            if (p.action == action_kind::on_sets) {
                std::sort(p.start.begin(), p.start.end());
                if (const auto twice = std::adjacent_find(p.start.begin(), p.start.end()); twice != p.start.end())
                    throw fail(start_line, "the start set repeats point " + std::to_string(*twice + 1));
            }
        } else {
            if (!m_seen.contains("field") || !m_seen.contains("dim"))
                throw problem_error(m_path + ": missing 'field' or 'dim' line (needed by type matrix)");
            if (p.action != action_kind::on_right)
                throw fail(action_line, std::string("action ") + to_string(p.action) +
                                            " needs type perm; matrix groups act OnRight");
            if (static_cast<int>(m_start.size()) != p.dim)
                throw fail(start_line, "start vector has " + std::to_string(m_start.size()) + " entries, dim is " +
                                           std::to_string(p.dim));
            for (const long entry : m_start) {
                if (entry < 0 || entry >= p.field)
                    throw fail(start_line, "start entry " + std::to_string(entry) + " is outside 0.." +
                                               std::to_string(p.field - 1) + " (field " + std::to_string(p.field) +
                                               ")");
                p.start.push_back(static_cast<int>(entry));
            }
        }
        if (p.point_bits() > max_point_bits)
            throw fail(start_line, "the start point does not fit: " + std::to_string(p.coordinates()) +
                                       " coordinates x " + std::to_string(p.bits_per_coordinate()) + " bits = " +
                                       std::to_string(p.point_bits()) + " bits, but points are packed into at most " +
                                       std::to_string(max_point_bits / 8) + " bytes");
        if (static_cast<int>(p.generators.size()) != m_ngens)
            throw fail(m_seen.at("ngens"), "ngens is " + std::to_string(m_ngens) + " but the file has " +
                                               std::to_string(p.generators.size()) + " generators");
    }

    std::string m_path;
    problem m_problem;
    int m_line = 0;
    std::map<std::string, int> m_seen;  // key -> line
    std::vector<long> m_start;
    int m_ngens = 0;
    std::vector<int> m_generator_lines;
    int m_matrix_line = 0;  // a matrix generator is being read (its 'gen' line)
    std::vector<int> m_matrix;
};

}  // namespace

problem read_problem(const std::string& path) { return reader(path).read(); }

}  // namespace mpidict::apps::orbit
