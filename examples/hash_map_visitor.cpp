// The visitor examples of docs/hash_map.md (scripts/check_doc_examples.py checks
// that the page shows this file's marked lines verbatim).  Run at 2 ranks by CTest.

#include <cstdint>
#include <cstdio>
#include <stdexcept>
#include <vector>

#include <mpi.h>

#include <mpidict/hash_map.hpp>

// doc-begin define
using map_type = mpidict::hash_map<std::uint64_t, double>;

// Runs at the key's owner: adds `amount` to the key's first value (creating it),
// refuses a negative amount, and returns how many values the key has.
static long add(map_type::visit_context& ctx, const std::uint64_t& key, std::vector<double>& values,
                const double& amount) {
    (void)ctx, (void)key;
    if (amount < 0)
        throw std::invalid_argument("negative amount");
    if (values.empty())
        values.push_back(0);
    values[0] += amount;
    return static_cast<long>(values.size());
}
// doc-end define

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int failures = 0;
    int ranks = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    {
        map_type map(MPI_COMM_WORLD);
        // doc-begin use
        auto adder = map.register_visitor("add", &add);   // collective, same order everywhere
        map.async_visit(5, adder, 1.0);
        long n = map.visit(5, adder, 2.0).get();         // 1: key 5 has one value
        // doc-end use
        if (n != 1)
            ++failures;
        map.flush();
        // Every rank added 1 and 2.
        const std::vector<double> sum = map.find(5).get();
        if (sum.size() != 1 || sum[0] != 3.0 * ranks)
            ++failures;
        map.flush();
        // doc-begin errors
        map.async_visit(5, adder, -1.0);                 // throws at the owner
        map.flush();                                     // returns on every rank regardless
        if (map.async_visit_errors() != 0)
            std::fprintf(stderr, "%s\n", map.async_visit_error_message().c_str());
        // doc-end errors
        if (map.async_visit_errors() != 1 ||
            map.async_visit_error_message().find("negative amount") == std::string::npos)
            ++failures;
        // The request form fails at the caller, and the key is unchanged.
        try {
            (void)map.visit(5, adder, -2.0).get();
            ++failures;
        } catch (const mpidict::invalid_argument_error&) {
        }
        if (map.find(5).get() != sum)
            ++failures;
        map.flush();
    }
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (rank == 0)
        std::printf("hash_map visitors: %s\n", total == 0 ? "ok" : "FAILED");
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
