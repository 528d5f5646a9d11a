/* A program to attach to (test/e2e/test_attach.py): started without profrun, linked to
 * the CUDA runtime (the device double in tests), it calls cudaGetDevice in batches of
 * 1000 with a 1 ms sleep between, for ROUNDS rounds, in the main thread and in a second
 * thread, and keeps a count. Prints "ready <pid>" once running, then "calls N" (N: every
 * call made) and exits with status 3.
 *
 *   attach_cuda_calls ROUNDS */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long rounds;
static long made[2];

static void *calls(void *arg)
{
    long *count = arg;
    struct timespec ms = {0, 1000000};
    for (long r = 0; r < rounds; r++) {
        int device;
        for (int i = 0; i < 1000; i++) {
            cudaGetDevice(&device);
            (*count)++;
        }
        nanosleep(&ms, NULL);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    rounds = argc > 1 ? atol(argv[1]) : 1000;
    pthread_t other;
    pthread_create(&other, NULL, calls, &made[1]);
    printf("ready %d\n", (int)getpid());
    fflush(stdout);
    calls(&made[0]);
    pthread_join(other, NULL);
    printf("calls %ld\n", made[0] + made[1]);
    return 3;
}
