/* Added cost per intercepted call, measured in one run: under LD_PRELOAD=libprof.so with
 * the device double as libcudart, this program times batches of cudaGetDevice called
 * through the PLT (so through libprof.so's wrapper) against batches of the same function
 * called through a pointer straight into libcudart (unprofiled), alternating, and prints
 * both medians and their difference.
 *
 * Between rounds it pauses PAUSE_MS (untimed) so that, at the default flush period, the
 * collector empties the ring and no call is dropped: the cost measured is that of a
 * recorded call.
 *
 *   bench_call_cost [BATCH] [ROUNDS] [PAUSE_MS] */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef cudaError_t (*get_device_fn)(int *);

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    long batch = argc > 1 ? atol(argv[1]) : 100000;
    int rounds = argc > 2 ? atoi(argv[2]) : 40;
    int pause_ms = argc > 3 ? atoi(argv[3]) : 0;
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    get_device_fn direct = h ? (get_device_fn)dlsym(h, "cudaGetDevice") : NULL;
    if (!direct) {
        fprintf(stderr, "bench_call_cost: libcudart.so.13 not loaded\n");
        return 1;
    }
    int profiled = direct != (get_device_fn)cudaGetDevice;
    double *plain = calloc(rounds, sizeof *plain), *wrapped = calloc(rounds, sizeof *wrapped);
    int dev;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (long i = 0; i < batch; i++)
            direct(&dev);
        double t1 = now_ns();
        for (long i = 0; i < batch; i++)
            cudaGetDevice(&dev);
        double t2 = now_ns();
        plain[r] = (t1 - t0) / batch;
        wrapped[r] = (t2 - t1) / batch;
        struct timespec pause = {pause_ms / 1000, (pause_ms % 1000) * 1000000L};
        nanosleep(&pause, NULL);
    }
    qsort(plain, rounds, sizeof *plain, cmp);
    qsort(wrapped, rounds, sizeof *wrapped, cmp);
    double p = plain[rounds / 2], w = wrapped[rounds / 2];
    printf("call cost: %s, %ld calls x %d rounds\n", profiled ? "profiled" : "NOT profiled", batch,
           rounds);
    printf("call cost: unprofiled %.1f ns/call, profiled %.1f ns/call, added %.1f ns/call "
           "(goal <= 25), ratio %.2fx\n",
           p, w, w - p, w / p);
    printf("call cost: calls made through the wrapper: %ld\n", batch * rounds);
    return 0;
}
