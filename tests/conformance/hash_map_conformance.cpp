// The conformance suite (conformance_suite.hpp) instantiated for
// mpidict::hash_map in several configurations; the first argument names one:
//
//   default            hash_map<u64, u64>, default tunables
//   tiny_buffer        buffer_bytes = 256, the engine's minimum (it rejects
//                      smaller buffers), so every few records ship a message
//   flow_control       buffer_bytes = 256 with blocking_factor 4, release_queue 0
//                      and one pre-posted receive: the window is always full
//                      (3,000 operations per rank per seed: every request waits)
//   one_owner          a Hash that returns a constant: every key lives on one
//                      rank, and that rank's table is one collision run
//   strings            hash_map<std::string, std::string> with 256-byte buffers:
//                      empty keys and values, embedded NULs, varying lengths
//   cyclic             placement::cyclic (owner = key % p)
//   tiny_capacity      capacity_values = 256 per rank (the load would keep ~1,000):
//                      inserts store all, part or none of their values, and
//                      the model follows insert_result.stored
//   capacity_bytes     string keys/values with capacity_bytes = 2048 per rank (key
//                      plus value payload), 256-byte buffers
//   empty_ranks        odd ranks start no operation (they still own shards)
//   explicit_target    every operation names its rank (target_rank), by a rule
//                      unrelated to the map's hash placement
//   progress_thread    runtime.progress_thread = true: handlers (visitors
//                      included) run on the engine's background thread
//   early_fill         16 KiB buffers that leave at 4 KiB (total_outbox_bytes
//                      = 4 KiB, below one buffer): what a rank with many peers does
//
// MPIDICT_CONFORMANCE_OPS overrides the operations per rank per seed.  The
// cases live in a library so the per-configuration executables (one per CTest
// name, all from conformance_main.cpp) share one compilation.

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "../common/test_support.hpp"
#include "conformance_suite.hpp"
#include "hash_map_adapter.hpp"

namespace {

using namespace mpidict;
using namespace mpidict::conformance;
using u64 = std::uint64_t;

// Sends every key to the same rank (owner() mixes the hash once more, so a
// constant hash means a constant owner) and puts every key of that rank's
// table in one probe run.
struct constant_hash {
    u64 operator()(u64) const { return 0x1234; }
};

template <class Adapter>
void run(options settings, hash_map_config config) {
    settings.operations_per_rank = mpidict::testing::env_count("MPIDICT_CONFORMANCE_OPS", settings.operations_per_rank);
    run_suite<Adapter>(settings, [&] { return std::make_unique<Adapter>(MPI_COMM_WORLD, config); });
}

}  // namespace

namespace mpidict::conformance {

bool run_hash_map_case(const std::string& name) {
    options settings;
    settings.name = name;
    hash_map_config config;
    if (name == "default") {
        run<hash_map_adapter<u64, u64>>(settings, config);
    } else if (name == "tiny_buffer") {
        config.runtime.buffer_bytes = 256;
        run<hash_map_adapter<u64, u64>>(settings, config);
    } else if (name == "flow_control") {
        config.runtime.buffer_bytes = 256;
        config.runtime.blocking_factor = 4;
        config.runtime.release_queue = 0;
        config.runtime.receive_buffers = 1;
        // Latency-bound by design (a request waits for a reply once 4 are out),
        // so fewer operations keep it to seconds on oversubscribed ranks.
        settings.operations_per_rank = 3000;
        run<hash_map_adapter<u64, u64>>(settings, config);
    } else if (name == "one_owner") {
        settings.keys_per_active_rank = 96;
        run<hash_map_adapter<u64, u64, constant_hash>>(settings, config);
    } else if (name == "strings") {
        config.runtime.buffer_bytes = 256;
        run<hash_map_adapter<std::string, std::string>>(settings, config);
    } else if (name == "cyclic") {
        config.place = placement::cyclic;
        run<hash_map_adapter<u64, u64>>(settings, config);
    } else if (name == "tiny_capacity") {
        config.capacity_values = 256;
        run<hash_map_adapter<u64, u64>>(settings, config);
    } else if (name == "capacity_bytes") {
        config.runtime.buffer_bytes = 256;
        config.capacity_bytes = 2048;
        run<hash_map_adapter<std::string, std::string>>(settings, config);
    } else if (name == "explicit_target") {
        run<hash_map_adapter<u64, u64, hasher<u64>, true>>(settings, config);
    } else if (name == "progress_thread") {
        config.runtime.progress_thread = true;
        run<hash_map_adapter<u64, u64>>(settings, config);
    } else if (name == "early_fill") {
        config.runtime.buffer_bytes = 16384;
        config.runtime.total_outbox_bytes = 4096;
        run<hash_map_adapter<u64, u64>>(settings, config);
    } else if (name == "empty_ranks") {
        settings.idle = [](int rank, int) { return rank % 2 == 1; };
        run<hash_map_adapter<u64, u64>>(settings, config);
    } else {
        return false;
    }
    return true;
}

}  // namespace mpidict::conformance
