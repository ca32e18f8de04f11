// Must not compile: a padded struct as a linear_hash_map key (keys are hashed
// and compared by their bytes).
#include <cstdint>

#include "mpidict/linear_hash_map.hpp"

struct padded_key {
    std::uint16_t a;
    std::uint32_t b;
};

template class mpidict::linear_hash_map<padded_key, int>;

int main() { return 0; }
