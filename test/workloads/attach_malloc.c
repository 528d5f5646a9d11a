/* A C program to attach to many times (test/e2e/test_attach.py): 8 threads allocating and
 * freeing all the time (small blocks from the thread caches, large ones mmap'd: glibc's
 * arena locks and mmap/munmap under them), one thread blocked in read() on a pipe, the
 * main thread sleeping in steps. Each allocating thread checks every block's contents, so
 * a heap corrupted by an attach would show. Prints "ready PID", then "ok N" (the
 * allocations made) and exits with status 3; "corrupt" and status 1 on a bad block.
 *   attach_malloc SECONDS */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop, corrupt;
static atomic_long allocations;
static int fds[2];

static void *allocator(void *arg)
{
    unsigned seed = (unsigned)(long)arg;
    void *blocks[64] = {0};
    size_t sizes[64] = {0};
    while (!atomic_load(&stop)) {
        int i = rand_r(&seed) % 64;
        if (blocks[i]) {
            unsigned char *b = blocks[i];
            for (size_t k = 0; k < sizes[i]; k += 97)
                if (b[k] != (unsigned char)(i + sizes[i]))
                    atomic_store(&corrupt, 1);
            free(blocks[i]);
        }
        sizes[i] = rand_r(&seed) % 8 == 0 ? 200000 + rand_r(&seed) % 100000 /* mmap'd */
                                          : 16 + rand_r(&seed) % 2000;
        blocks[i] = malloc(sizes[i]);
        memset(blocks[i], (unsigned char)(i + sizes[i]), sizes[i]);
        atomic_fetch_add(&allocations, 1);
    }
    for (int i = 0; i < 64; i++)
        free(blocks[i]);
    return NULL;
}

static void *reader(void *arg)
{
    (void)arg;
    char buf[8];
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n != 4 || memcmp(buf, "stop", 4))
        atomic_store(&corrupt, 1);
    return NULL;
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 5;
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (pipe(fds) != 0)
        return 1;
    pthread_t th[9];
    for (long i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, allocator, (void *)(i + 1));
    pthread_create(&th[8], NULL, reader, NULL);
    printf("ready %d\n", getpid());
    for (int i = 0; i < (int)(seconds * 100); i++) {
        struct timespec ts = {0, 10000000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&stop, 1);
    if (write(fds[1], "stop", 4) != 4)
        return 1;
    for (int i = 0; i < 9; i++)
        pthread_join(th[i], NULL);
    if (atomic_load(&corrupt)) {
        printf("corrupt\n");
        return 1;
    }
    printf("ok %s\n", atomic_load(&allocations) > 1000 ? "many" : "few");
    return 3;
}
