/* A C program to attach to (test/e2e/test_attach.py): threads blocked in the system calls
 * profrun attach stops a thread in, each checking that its call ends as it would have
 * without the attach. Prints "ready PID" and the thread ids, then one line per thread.
 *   reader   read() on a pipe, written by main after 3 s: gets "data"
 *   sleeper  nanosleep(4 s, relative: restarted through restart_syscall): 4.0-4.5 s
 *   waiter   pthread_cond_wait, signalled after 3 s by main
 * Exits with status 3. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int fds[2];
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int signalled;
static pid_t tids[3];
static pthread_barrier_t started;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *reader(void *arg)
{
    (void)arg;
    tids[0] = gettid();
    pthread_barrier_wait(&started);
    char buf[16] = {0};
    ssize_t n = read(fds[0], buf, sizeof buf - 1);
    printf("reader %zd %s\n", n, buf);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    tids[1] = gettid();
    pthread_barrier_wait(&started);
    double t0 = now();
    struct timespec ts = {4, 0};
    int rc = nanosleep(&ts, NULL);
    double dt = now() - t0;
    printf("sleeper rc %d %s\n", rc, dt >= 4.0 && dt < 4.5 ? "slept 4 s" : "slept wrong");
    return NULL;
}

static void *waiter(void *arg)
{
    (void)arg;
    tids[2] = gettid();
    pthread_barrier_wait(&started);
    pthread_mutex_lock(&mu);
    while (!signalled)
        pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    printf("waiter woken\n");
    return NULL;
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (pipe(fds) != 0)
        return 1;
    pthread_barrier_init(&started, NULL, 4);
    pthread_t th[3];
    pthread_create(&th[0], NULL, reader, NULL);
    pthread_create(&th[1], NULL, sleeper, NULL);
    pthread_create(&th[2], NULL, waiter, NULL);
    pthread_barrier_wait(&started);
    printf("ready %d %d %d %d\n", getpid(), tids[0], tids[1], tids[2]);
    struct timespec ts = {3, 0};
    while (nanosleep(&ts, &ts) != 0)
        ;
    if (write(fds[1], "data", 4) != 4)
        return 1;
    pthread_mutex_lock(&mu);
    signalled = 1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < 3; i++)
        pthread_join(th[i], NULL);
    printf("done\n");
    return 3;
}
