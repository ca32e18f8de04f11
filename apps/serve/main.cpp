// The standalone Redis-protocol service (also `mpidict serve`):
//   mpiexec -n 2 serve [--port 6379] [--bind 127.0.0.1] [--requirepass-file FILE]
// See serve.hpp and docs/serve.md.

#include "mpidict/support/program.hpp"
#include "serve/serve.hpp"

int main(int argc, char** argv) {
    return mpidict::support::mpi_main(argc, argv, "serve", mpidict::apps::serve::serve_main);
}
