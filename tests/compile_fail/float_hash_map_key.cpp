// Must not compile: a double as a hash_map key with the default hash (+0.0 and
// -0.0 are equal but have different bytes).
#include "mpidict/hash_map.hpp"

template class mpidict::hash_map<double, int>;

int main() { return 0; }
