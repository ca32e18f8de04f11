// Set-up cost (issue 17, item 4): how long constructing each container takes,
// from a barrier to the constructor's return on the slowest rank, beside what
// any library that works on its own communicator pays, measured the same way
// in the same run: MPI_Comm_dup (+ free), and one reduction of one integer
// (blocking MPI_Allreduce, and MPI_Iallreduce waited for with yields, as the
// library waits).  With more ranks than cores a blocking collective
// busy-polls and can wait a whole time slice per round for a descheduled rank.
// Medians of --reps; each container is destroyed before the next is built.

#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <mpi.h>

#include "common/mpi_main.hpp"
#include "common/report.hpp"
#include "mpidict/hash_map.hpp"
#include "mpidict/linear_hash_map.hpp"
#include "mpidict/rma_hash_set.hpp"
#include "mpidict/skiplist_map.hpp"

namespace {

constexpr char bench_name[] = "setup_cost";
constexpr char description[] =
    "Construction time of hash_map, linear_hash_map, skiplist_map and rma_hash_set beside\n"
    "MPI_Comm_dup and one reduction (blocking, and non-blocking waited for with yields).\n"
    "JSON lines on stdout (rank 0), a table on stderr.";

struct settings {
    std::uint64_t reps = 15;
};

void declare(mpidict::support::option_parser& parser, settings& s) {
    parser.add_count("reps", &s.reps, "repetitions; medians are reported", 1, 10000, "R");
}

using mpidict::bench::slowest_seconds;

int run(const settings& s, const mpidict::bench::world& w) {
    mpidict::bench::report out(bench_name, w.size, 0, w.rank == 0);
    std::vector<double> duplicate, blocking, yielding, hash, linear, skiplist, rma;
    std::int64_t in = 1, result = 0;
    // The floors first, then the four constructors in an order that rotates with
    // the repetition (each timed from the barrier to its return; destroyed after).
    const std::function<void()> constructors[] = {
        [&] {
            std::unique_ptr<mpidict::hash_map<std::uint64_t, std::uint64_t>> map;
            hash.push_back(slowest_seconds(w.comm, [&] { map = std::make_unique<mpidict::hash_map<std::uint64_t, std::uint64_t>>(w.comm); }));
            map->destroy();
        },
        [&] {
            std::unique_ptr<mpidict::linear_hash_map<std::uint64_t, std::uint64_t>> map;
            linear.push_back(slowest_seconds(w.comm, [&] {
                map = std::make_unique<mpidict::linear_hash_map<std::uint64_t, std::uint64_t>>(w.comm);
            }));
            map->destroy();
        },
        [&] {
            std::unique_ptr<mpidict::skiplist_map<std::uint64_t, std::uint64_t>> list;
            skiplist.push_back(slowest_seconds(w.comm, [&] {
                list = std::make_unique<mpidict::skiplist_map<std::uint64_t, std::uint64_t>>(w.comm);
            }));
            list->destroy();
        },
        [&] {
            std::unique_ptr<mpidict::rma_hash_set<std::uint64_t>> set;
            rma.push_back(slowest_seconds(w.comm, [&] { set = std::make_unique<mpidict::rma_hash_set<std::uint64_t>>(w.comm); }));
            set->destroy();
        }};
    for (std::uint64_t rep = 0; rep < s.reps; ++rep) {
        MPI_Comm copy = MPI_COMM_NULL;
        duplicate.push_back(slowest_seconds(w.comm, [&] { MPI_Comm_dup(w.comm, &copy); }));
        MPI_Comm_free(&copy);
        blocking.push_back(slowest_seconds(w.comm, [&] { MPI_Allreduce(&in, &result, 1, MPI_INT64_T, MPI_SUM, w.comm); }));
        yielding.push_back(slowest_seconds(w.comm, [&] {
            MPI_Request request;
            MPI_Iallreduce(&in, &result, 1, MPI_INT64_T, MPI_SUM, w.comm, &request);
            for (int done = 0; !done;) {
                MPI_Test(&request, &done, MPI_STATUS_IGNORE);
                if (!done)
                    sched_yield();
            }
        }));
        for (std::uint64_t step = 0; step < 4; ++step)
            constructors[(step + rep) % 4]();
    }
    const auto ms = [](std::vector<double> v) {
        for (double& x : v)
            x *= 1e3;
        return v;
    };
    const auto median = [](const std::vector<double>& v) { return mpidict::bench::summary::of(v).median; };
    out.figure("comm_dup", ms(duplicate), "ms");
    out.figure("allreduce_blocking", ms(blocking), "ms");
    out.figure("allreduce_yielding", ms(yielding), "ms");
    out.figure("hash_map", ms(hash), "ms");
    out.figure("linear_hash_map", ms(linear), "ms");
    out.figure("skiplist_map", ms(skiplist), "ms");
    out.figure("rma_hash_set", ms(rma), "ms");
    // Construction against the communicator duplicate every container needs.
    const double floor = median(duplicate);
    const auto beside = [&](double ours) {
        return mpidict::bench::json_object().add("ours_ms", ours * 1e3).add("baseline_ms", floor * 1e3);
    };
    out.ratio("hash_map_vs_comm_dup", median(hash) / floor, "(reported)", true, beside(median(hash)));
    out.ratio("linear_hash_map_vs_comm_dup", median(linear) / floor, "(reported)", true, beside(median(linear)));
    out.ratio("skiplist_map_vs_comm_dup", median(skiplist) / floor, "(reported)", true, beside(median(skiplist)));
    out.ratio("rma_hash_set_vs_comm_dup", median(rma) / floor, "(reported)", true, beside(median(rma)));
    out.print_table();
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    return mpidict::bench::mpi_main<settings>(argc, argv, bench_name, description, declare, run);
}
