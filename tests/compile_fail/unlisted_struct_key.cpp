// Must not compile: a struct with a std::string member that does not name its
// members (MPIDICT_FIELDS) or bring a codec: the message says what to do.
#include <string>

#include "mpidict/hash_map.hpp"

struct named {
    std::string name;
    bool operator==(const named&) const = default;
};

template class mpidict::hash_map<named, int>;

int main() { return 0; }
