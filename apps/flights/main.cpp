// The standalone flights service (also `mpidict flights`):
//   mpiexec -n 4 flights --data build/flights_data [--start TIME] [--speed S] [--control-port PORT]
// See flights.hpp and docs/flights.md.

#include "flights/flights.hpp"
#include "mpidict/support/program.hpp"

int main(int argc, char** argv) {
    return mpidict::support::mpi_main(argc, argv, "flights", mpidict::apps::flights::flights_main);
}
