// Must not compile: a key type without operator== (one readable message).
#include <cstdint>

#include "mpidict/hash_map.hpp"

struct no_equality {
    std::uint64_t a;
};

template class mpidict::hash_map<no_equality, int>;

int main() { return 0; }
