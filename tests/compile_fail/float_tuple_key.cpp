// Must not compile: a tuple with a double as a key (0.0 and -0.0 are equal but
// hash apart); the parts-wise hash is refused like a float key.
#include <string>
#include <tuple>

#include "mpidict/hash_map.hpp"

template class mpidict::hash_map<std::tuple<std::string, double>, int>;

int main() { return 0; }
