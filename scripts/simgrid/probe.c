/* What the platform gives before any library code (docs/scaling.md): the cost
 * of an MPI_Test / MPI_Iprobe that finds nothing, the one-way latency between
 * rank 0 and the last rank (half a ping-pong of 64 bytes), and a small
 * MPI_Allreduce and MPI_Barrier.  Under MPI it measures this machine:
 *
 *   mpicc -O2 scripts/simgrid/probe.c -o /tmp/probe && mpiexec -n 2 /tmp/probe
 *
 * under SimGrid SMPI the simulated platform (the poll cost is then what
 * --cfg=smpi/test says):
 *
 *   smpicc -O2 scripts/simgrid/probe.c -o /tmp/probe-smpi
 *   smpirun -np 1024 -platform scripts/simgrid/fattree-1024.xml \
 *       -hostfile scripts/simgrid/hosts-1024.txt --cfg=smpi/simulate-computation:no /tmp/probe-smpi
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int last = size - 1;
    char buffer[64] = {0};

    /* Polls that find nothing: a receive nobody sends to, a probe for a tag nobody uses. */
    MPI_Request pending;
    MPI_Irecv(buffer, 64, MPI_BYTE, MPI_ANY_SOURCE, 7, MPI_COMM_WORLD, &pending);
    const int polls = 200000;
    int done = 0, flag = 0;
    MPI_Status status;
    double start = MPI_Wtime();
    for (int index = 0; index < polls; ++index)
        MPI_Test(&pending, &done, &status);
    const double test_seconds = (MPI_Wtime() - start) / polls;
    start = MPI_Wtime();
    for (int index = 0; index < polls; ++index)
        MPI_Iprobe(MPI_ANY_SOURCE, 9, MPI_COMM_WORLD, &flag, &status);
    const double probe_seconds = (MPI_Wtime() - start) / polls;
    MPI_Cancel(&pending);
    MPI_Wait(&pending, &status);

    const int rounds = 20;
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    for (int round = 0; round < rounds && size > 1; ++round) {
        if (rank == 0) {
            MPI_Send(buffer, 64, MPI_BYTE, last, 0, MPI_COMM_WORLD);
            MPI_Recv(buffer, 64, MPI_BYTE, last, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == last) {
            MPI_Recv(buffer, 64, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buffer, 64, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    const double one_way = (MPI_Wtime() - start) / rounds / 2;

    int64_t values[6] = {1, 2, 3, 4, 5, 6}, totals[6];
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    for (int round = 0; round < rounds; ++round)
        MPI_Allreduce(values, totals, 6, MPI_INT64_T, MPI_SUM, MPI_COMM_WORLD);
    const double allreduce = (MPI_Wtime() - start) / rounds;
    MPI_Barrier(MPI_COMM_WORLD);
    start = MPI_Wtime();
    for (int round = 0; round < rounds; ++round)
        MPI_Barrier(MPI_COMM_WORLD);
    const double barrier = (MPI_Wtime() - start) / rounds;

    if (rank == 0)
        printf("ranks %d: MPI_Test %.1f ns, MPI_Iprobe %.1f ns, one-way latency 0..%d %.2f us, "
               "MPI_Allreduce (6 x int64) %.2f us, MPI_Barrier %.2f us\n",
               size, test_seconds * 1e9, probe_seconds * 1e9, last, one_way * 1e6, allreduce * 1e6, barrier * 1e6);
    MPI_Finalize();
    return 0;
}
