// The simulation example of docs/testing.md (scripts/check_doc_examples.py checks
// that the page shows this file's marked lines verbatim): 16 virtual ranks in one
// process, the schedule chosen by the seed.  No MPI: CTest runs it directly.

#include <cstdint>
#include <cstdio>
#include <memory>
#include <stdexcept>
#include <string>

#include <mpidict/hash_map.hpp>
#include <mpidict/runtime/sim_transport.hpp>

int main() {
    int failures = 0;
    for (std::uint64_t seed = 1; seed <= 3; ++seed) {
        // doc-begin
        auto outcome = mpidict::sim::run(16, seed, {}, [&](int rank, mpidict::sim::sim_context& context) {
            mpidict::hash_map_config settings;
            mpidict::hash_map<std::uint64_t, std::uint64_t> map(
                std::make_unique<mpidict::runtime::engine>(context.make_transport(), settings.runtime), settings);
            for (std::uint64_t key = 0; key < 100; ++key)
                map.async_insert(key, static_cast<std::uint64_t>(rank));   // every rank, every key
            map.flush();
            if (map.find(static_cast<std::uint64_t>(rank)).get().size() != 16)
                throw std::runtime_error("rank " + std::to_string(rank) + ": a value is missing");
            map.flush();
        });
        if (!outcome) std::puts(outcome.failure.c_str());  // names the seed; outcome.trace has the last events
        // doc-end
        if (!outcome)
            ++failures;
        else
            std::printf("seed %llu: %llu messages, %llu scheduling points\n",
                        static_cast<unsigned long long>(seed), static_cast<unsigned long long>(outcome.messages_delivered),
                        static_cast<unsigned long long>(outcome.steps));
    }
    std::printf("simulated hash_map: %s\n", failures == 0 ? "ok" : "FAILED");
    return failures == 0 ? 0 : 1;
}
