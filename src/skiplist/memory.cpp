// skiplist_map's capacity (docs/skiplist_map.md "Capacity and list_full"): a
// server rank's slot pool grows on demand until the hard limit
// node_slots_per_rank (0: none) or memory_limit_per_rank (this process's
// resident memory; 0: automatic) stops it; the list_full message names the
// limit that stopped this rank and its value.

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "mpidict/detail/skiplist_shared.hpp"

namespace mpidict::runtime {
int ranks_on_node(MPI_Comm communicator);  // src/runtime/mpi_transport.cpp: collective, remembered
}

namespace mpidict::detail {

namespace {

// Slots are numbered below 2^31: the top bit of a slot marks batch answers on the wire.
constexpr std::size_t slot_id_limit = std::size_t(1) << 31;

// This process's resident set in bytes (/proc/self/statm on Linux, else the
// peak from getrusage); 0 when neither is known.
std::uint64_t resident_bytes() {
    const int file = ::open("/proc/self/statm", O_RDONLY | O_CLOEXEC);
    if (file >= 0) {
        char text[128];
        const ssize_t got = ::read(file, text, sizeof text - 1);
        ::close(file);
        if (got > 0) {
            text[got] = '\0';
            unsigned long long size = 0, resident = 0;
            if (std::sscanf(text, "%llu %llu", &size, &resident) == 2)
                return resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
        }
    }
    rusage usage{};
    if (::getrusage(RUSAGE_SELF, &usage) == 0 && usage.ru_maxrss > 0) {
#ifdef __APPLE__
        return static_cast<std::uint64_t>(usage.ru_maxrss);
#else
        return static_cast<std::uint64_t>(usage.ru_maxrss) * 1024;
#endif
    }
    return 0;
}

// A number from a cgroup file ("max" or missing: none).
std::uint64_t cgroup_limit(const char* path) {
    std::ifstream in(path);
    std::string word;
    if (!(in >> word) || word == "max")
        return 0;
    char* end = nullptr;
    const unsigned long long value = std::strtoull(word.c_str(), &end, 10);
    return end && *end == '\0' ? value : 0;
}

// The resident bytes, read every `check_every` growths of any pool in this
// process (the resident set is the process's): one read of /proc/self/statm
// took 31-32 us here (load 10, /tmp/s43m2_statm), about 0.65 s per rank for
// the ~21,000 new nodes of 1M keys per rank if read at each growth.  A pool
// may therefore grow by up to check_every - 1 nodes past the limit.  Once the
// last read is at or past `limit`, every growth reads again (memory freed
// since lets the pool grow again).
constexpr unsigned check_every = 16;
std::atomic<std::uint64_t> sampled_resident{0};
std::atomic<unsigned> growths{0};

std::uint64_t resident_sampled(std::uint64_t limit) {
    const unsigned growth = growths.fetch_add(1, std::memory_order_relaxed);
    std::uint64_t resident = sampled_resident.load(std::memory_order_relaxed);
    if (resident == 0 || resident >= limit || growth % check_every == 0) {
        resident = resident_bytes();
        sampled_resident.store(resident, std::memory_order_relaxed);
    }
    return resident;
}

std::string mib(std::uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

void resolve_memory_limit(skiplist_shared& shared) {
    const std::size_t configured = shared.config.memory_limit_per_rank;
    if (configured == skiplist_map_config::no_memory_limit) {
        shared.memory_limit = skiplist_shared::unlimited;
        return;
    }
    if (configured != 0) {
        shared.memory_limit = configured;
        return;
    }
    // Automatic: 3/4 of the node's memory over the ranks sharing the node.
    std::uint64_t node = 0;
    const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        node = static_cast<std::uint64_t>(pages) * static_cast<std::uint64_t>(page);
    std::string source = "physical memory";
    for (const char* path : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
        const std::uint64_t limit = cgroup_limit(path);
        if (limit != 0 && (node == 0 || limit < node)) {
            node = limit;
            source = std::string("cgroup limit ") + path;
        }
    }
    int sharing = 1;
    if (const MPI_Comm communicator = shared.engine->mpi_communicator(); communicator != MPI_COMM_NULL)
        sharing = std::max(1, runtime::ranks_on_node(communicator));
    if (node == 0) {
        shared.memory_limit = skiplist_shared::unlimited;
        shared.memory_limit_origin = "automatic: the node's memory is unknown, so none";
        return;
    }
    shared.memory_limit = node / 4 * 3 / static_cast<std::uint64_t>(sharing);
    shared.memory_limit_origin = "automatic: 3/4 of the node's " + mib(node) + " (" + source + ") over its " +
                                 std::to_string(sharing) + (sharing == 1 ? " rank" : " ranks");
}

bool skiplist_shared::pool_may_grow(std::size_t slots) {
    if (server_index < 0) {
        last_limit = pool_limit::not_a_server;
        return false;
    }
    if (config.node_slots_per_rank != 0 && slots >= config.node_slots_per_rank) {
        last_limit = pool_limit::node_slots;
        return false;
    }
    if (slots >= slot_id_limit) {
        last_limit = pool_limit::slot_ids;
        return false;
    }
    if (memory_limit != unlimited) {
        const std::uint64_t resident = resident_sampled(memory_limit);
        if (resident >= memory_limit) {
            last_limit = pool_limit::memory;
            last_resident = resident;
            return false;
        }
    }
    return true;
}

std::string skiplist_shared::list_full_message() const {
    std::string text = "mpidict: skiplist_map is full (list_full): no free node on any of the " +
                       std::to_string(servers.size()) + " server ranks; ";
    const std::string hard = config.node_slots_per_rank == 0
                                 ? std::string("node_slots_per_rank = 0 (no hard limit)")
                                 : "node_slots_per_rank = " + std::to_string(config.node_slots_per_rank);
    const std::string memory =
        memory_limit == unlimited
            ? std::string("memory_limit_per_rank: none")
            : "memory_limit_per_rank = " + std::to_string(memory_limit) + " bytes (" + mib(memory_limit) +
                  (memory_limit_origin.empty() ? std::string() : "; " + memory_limit_origin) + ")";
    const std::string me = "rank " + std::to_string(rank());
    switch (last_limit) {
    case pool_limit::node_slots:
        text += me + " reached the hard limit " + hard + " (" + memory + ")";
        break;
    case pool_limit::memory:
        text += me + " reached its memory limit, " + memory + ": resident " + std::to_string(last_resident) +
                " bytes (" + hard + ")";
        break;
    case pool_limit::slot_ids:
        text += me + " hosts 2^31 nodes, the most a node id can number (" + hard + ", " + memory + ")";
        break;
    default:
        text += "the limits: " + hard + ", " + memory;
        break;
    }
    return text + ", G = " + std::to_string(config.granularity) + " keys per node; the insert was not applied";
}

std::uint64_t resident_bytes_now() { return resident_bytes(); }

}  // namespace mpidict::detail
