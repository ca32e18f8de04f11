#pragma once
// Orbit problem files (format: data/README.md, "orbits/"): a group given by
// generators acting on a start point.
//
//   type perm | matrix            degree N (perm)   field q, dim n (matrix)
//   action OnTuples | OnSets | OnRight               expected L   group_order G
//   start ...                     ngens k           gen ... (k times)
//
// read_problem validates everything a run depends on and throws problem_error
// with "<file>:<line>: <what>" (or "<file>: <what>" for whole-file problems):
// malformed lines, unknown or repeated keys, a permutation that is not one, a
// matrix of the wrong size, entries outside 0..q-1 or a singular matrix, a
// start point outside the domain or too large to pack into 32 bytes, a
// generator count that disagrees with ngens.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace mpidict::apps::orbit {

class problem_error : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

enum class group_kind { permutation, matrix };
enum class action_kind { on_tuples, on_sets, on_right };

const char* to_string(action_kind action);

struct problem {
    std::string path;
    std::string name;  // file name without directory and .txt
    group_kind kind = group_kind::permutation;
    action_kind action = action_kind::on_tuples;
    int degree = 0;  // permutation groups: points 1..degree
    int field = 0;   // matrix groups: GF(field), field prime
    int dim = 0;     // matrix groups: row vectors of dim entries
    std::string group_order;      // as written (may exceed 64 bits)
    std::uint64_t expected = 0;   // orbit length; 0 if the file has none
    // Coordinates of the start point, 0-based: a point i of a permutation
    // domain is stored as i - 1; a vector entry as itself.  OnSets: sorted.
    std::vector<int> start;
    // Permutations: images of 0..degree-1 (0-based).  Matrices: dim*dim
    // entries, row-major.
    std::vector<std::vector<int>> generators;

    // Coordinates of a point, and the largest value one can take.
    int coordinates() const { return static_cast<int>(start.size()); }
    int largest_coordinate() const { return kind == group_kind::permutation ? degree - 1 : field - 1; }
    int bits_per_coordinate() const;
    int point_bits() const { return coordinates() * bits_per_coordinate(); }
};

// Largest packed point, in bits (rma_hash_set holds objects of up to 32 bytes).
inline constexpr int max_point_bits = 256;

problem read_problem(const std::string& path);

}  // namespace mpidict::apps::orbit
