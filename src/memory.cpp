// See memory.hpp.
#include "memory.hpp"

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace mpidict::detail {

namespace {

// /proc/meminfo's "<name>: N kB" in bytes, or 0 if absent.
std::uint64_t meminfo_bytes(const char* name) {
    std::FILE* file = std::fopen("/proc/meminfo", "r");
    if (!file)
        return 0;
    char line[256];
    std::uint64_t value = 0;
    const std::size_t length = std::strlen(name);
    while (std::fgets(line, sizeof line, file)) {
        if (std::strncmp(line, name, length) == 0 && line[length] == ':') {
            value = std::strtoull(line + length + 1, nullptr, 10) * 1024;
            break;
        }
    }
    std::fclose(file);
    return value;
}

}  // namespace

std::uint64_t available_memory_bytes() { return meminfo_bytes("MemAvailable") + meminfo_bytes("SwapFree"); }

}  // namespace mpidict::detail
