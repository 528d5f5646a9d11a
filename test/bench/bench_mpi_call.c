/* Added cost per wrapped MPI call, measured in one run: under LD_PRELOAD=libprof.so, on
 * one rank, this program times batches of MPI_Allreduce of one int on MPI_COMM_SELF called
 * through the PLT (so through libprof.so's wrapper) against batches of PMPI_Allreduce, the
 * same function without the wrapper (unprofiled), alternating, and prints both medians and
 * their difference. Between rounds it pauses PAUSE_MS (untimed) so that the collector
 * empties the ring and no call is dropped: the cost measured is that of a recorded call.
 *
 *   mpirun -np 1 bench_mpi_call [BATCH] [ROUNDS] [PAUSE_MS] */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long batch = argc > 1 ? atol(argv[1]) : 10000;
    int rounds = argc > 2 ? atoi(argv[2]) : 40;
    int pause_ms = argc > 3 ? atoi(argv[3]) : 0;
    MPI_Init(&argc, &argv);
    double *plain = calloc(rounds, sizeof *plain), *wrapped = calloc(rounds, sizeof *wrapped);
    int in = 1, out = 0;
    for (int r = 0; r < rounds; r++) {
        double t0 = bench_now_ns();
        for (long i = 0; i < batch; i++)
            PMPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
        double t1 = bench_now_ns();
        for (long i = 0; i < batch; i++)
            MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, MPI_COMM_SELF);
        double t2 = bench_now_ns();
        plain[r] = (t1 - t0) / batch;
        wrapped[r] = (t2 - t1) / batch;
        if (pause_ms) {
            struct timespec ts = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    qsort(plain, rounds, sizeof *plain, bench_cmp);
    qsort(wrapped, rounds, sizeof *wrapped, bench_cmp);
    double p = plain[rounds / 2], w = wrapped[rounds / 2];
    printf("MPI call cost: PMPI_Allreduce (unprofiled) %.1f ns/call, MPI_Allreduce (profiled) "
           "%.1f ns/call, added %.1f ns/call (goal <= 30), %ld calls per batch, %d rounds\n",
           p, w, w - p, batch, rounds);
    MPI_Finalize();
    free(plain);
    free(wrapped);
    return 0;
}
