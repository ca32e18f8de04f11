// Must not compile: a padded struct as a hash_map key with the default hash
// (equal keys could differ in their padding bytes and be stored twice).
#include <cstdint>

#include "mpidict/hash_map.hpp"

struct padded_key {
    std::uint8_t a;
    std::uint64_t b;
    friend bool operator==(const padded_key&, const padded_key&) = default;
};

int main() {
    mpidict::hash_map<padded_key, int>* map = nullptr;
    return map == nullptr ? 0 : 1;
}
// Instantiate the class (a pointer alone would not).
template class mpidict::hash_map<padded_key, int>;
