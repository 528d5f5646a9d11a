/* Cost of a call stack, measured in one run under PROF_STACKS=1 with the device double
 * as libcudart: at the bottom of a DEPTH-deep recursion (so the stack has about DEPTH + 4
 * frames), batches of cudaDeviceSynchronize (a synchronizing call: its stack is taken)
 * and of cudaGetDevice (no stack) are timed through the wrappers and through pointers
 * straight into libcudart. The stack's cost is what the wrapper adds to the first beyond
 * what it adds to the second. Prints medians over ROUNDS.
 *
 *   bench_stacks [BATCH] [ROUNDS] [DEPTH] */
#define _GNU_SOURCE
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef cudaError_t (*sync_fn)(void);
typedef cudaError_t (*get_device_fn)(int *);

static long batch = 20000;
static int rounds = 15;
static sync_fn direct_sync;
static get_device_fn direct_get;
static double *t_sync, *t_sync_direct, *t_get, *t_get_direct;

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

static double median(double *v)
{
    qsort(v, (size_t)rounds, sizeof *v, cmp);
    return v[rounds / 2];
}

static void measure(void)
{
    int dev;
    for (int r = 0; r < rounds; r++) {
        double t0 = now_ns();
        for (long i = 0; i < batch; i++)
            cudaDeviceSynchronize();
        double t1 = now_ns();
        for (long i = 0; i < batch; i++)
            direct_sync();
        double t2 = now_ns();
        for (long i = 0; i < batch; i++)
            cudaGetDevice(&dev);
        double t3 = now_ns();
        for (long i = 0; i < batch; i++)
            direct_get(&dev);
        double t4 = now_ns();
        t_sync[r] = (t1 - t0) / batch;
        t_sync_direct[r] = (t2 - t1) / batch;
        t_get[r] = (t3 - t2) / batch;
        t_get_direct[r] = (t4 - t3) / batch;
        struct timespec pause = {0, 100 * 1000000L}; /* the collector empties the ring */
        nanosleep(&pause, NULL);
    }
}

__attribute__((noinline)) static int descend(int depth)
{
    int r = 0;
    if (depth > 0)
        r = descend(depth - 1) + 1;
    else
        measure();
    __asm__ volatile("" : "+r"(r)); /* a real frame per level: no loop, no tail call */
    return r;
}

int main(int argc, char **argv)
{
    batch = argc > 1 ? atol(argv[1]) : batch;
    rounds = argc > 2 ? atoi(argv[2]) : rounds;
    int depth = argc > 3 ? atoi(argv[3]) : 26;
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    direct_sync = h ? (sync_fn)dlsym(h, "cudaDeviceSynchronize") : NULL;
    direct_get = h ? (get_device_fn)dlsym(h, "cudaGetDevice") : NULL;
    if (!direct_sync || !direct_get) {
        fprintf(stderr, "bench_stacks: libcudart.so.13 not loaded\n");
        return 1;
    }
    t_sync = calloc(rounds, sizeof(double));
    t_sync_direct = calloc(rounds, sizeof(double));
    t_get = calloc(rounds, sizeof(double));
    t_get_direct = calloc(rounds, sizeof(double));
    if (descend(depth) != depth)
        return 1;
    double sync_added = median(t_sync) - median(t_sync_direct);
    double get_added = median(t_get) - median(t_get_direct);
    printf("stack capture: %d-frame recursion, %ld calls x %d rounds: wrapper adds %.1f ns to a "
           "call with a stack, %.1f ns to one without: %.0f ns per stack (goal <= 1500)\n",
           depth, batch, rounds, sync_added, get_added, sync_added - get_added);
    return 0;
}
