#pragma once
// Facts about this process and host that the benchmarks, the tool and the apps
// report next to their figures.
//
// read_process_memory(): resident memory, for bytes-per-item figures.  Linux keeps the
// current resident set (VmRSS) and its high-water mark (VmHWM) in
// /proc/self/status.  VmHWM cannot be reset, so a benchmark that wants the peak
// of one phase must run that phase while it is the largest allocation so far and
// take (VmHWM after the phase) - (VmRSS before it).
//
// read_load_average(): the 1-minute load average, so a reader can tell a run on
// a busy machine (load above the core count: timings are noisy) from a quiet one.

#include <sys/resource.h>

#include <cstddef>
#include <cstdio>
#include <cstring>

namespace mpidict::support {

struct process_memory {
    std::size_t rss_bytes = 0;       // VmRSS now (0 if unknown)
    std::size_t peak_rss_bytes = 0;  // VmHWM: the largest VmRSS so far
};

inline process_memory read_process_memory() {
    process_memory result;
    if (std::FILE* status = std::fopen("/proc/self/status", "r")) {
        char line[256];
        while (std::fgets(line, sizeof line, status)) {
            unsigned long long kib = 0;
            if (std::sscanf(line, "VmRSS: %llu kB", &kib) == 1)
                result.rss_bytes = static_cast<std::size_t>(kib) * 1024;
            else if (std::sscanf(line, "VmHWM: %llu kB", &kib) == 1)
                result.peak_rss_bytes = static_cast<std::size_t>(kib) * 1024;
        }
        std::fclose(status);
    }
    if (result.peak_rss_bytes == 0) {
        rusage usage{};
        if (getrusage(RUSAGE_SELF, &usage) == 0)
            result.peak_rss_bytes = static_cast<std::size_t>(usage.ru_maxrss) * 1024;  // Linux: KiB
    }
    return result;
}

// The 1-minute load average from /proc/loadavg; a negative number if unknown.
inline double read_load_average() {
    double load = -1;
    if (std::FILE* file = std::fopen("/proc/loadavg", "r")) {
        if (std::fscanf(file, "%lf", &load) != 1)
            load = -1;
        std::fclose(file);
    }
    return load;
}

}  // namespace mpidict::support
