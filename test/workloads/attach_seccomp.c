/* A C program to attach to (test/e2e/test_attach.py): a thread in seccomp strict mode
 * (prctl PR_SET_SECCOMP, SECCOMP_MODE_STRICT: read, write, exit and sigreturn only; any
 * other system call kills the process) blocked in read() on stdin.
 *   attach_seccomp main    the main thread itself
 *   attach_seccomp thread  a second thread; the main thread waits in pthread_join
 *   attach_seccomp spin    a second thread; the main thread spins (no system call) until
 *                          it has read
 * Prints "ready PID TID" once in strict mode, then, when a line comes on stdin,
 * "read N bytes" from the strict thread ("joined" from main in thread mode). Exits with
 * status 3. */
#define _GNU_SOURCE
#include <linux/seccomp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

static int main_thread;
static volatile int has_read;

/* Only read, write and exit from here on: no stdio, no exit_group (glibc's _exit). */
static void *strict(void *arg)
{
    (void)arg;
    char ready[64], done[64], buf[64];
    int n = snprintf(ready, sizeof ready, "ready %d %d\n", getpid(), gettid());
    if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0) != 0) {
        perror("prctl(PR_SET_SECCOMP)");
        return (void *)1;
    }
    if (write(1, ready, (size_t)n) != n)
        syscall(SYS_exit, 1);
    ssize_t got = read(0, buf, sizeof buf);
    has_read = 1;
    n = snprintf(done, sizeof done, "read %zd bytes\n", got);
    if (write(1, done, (size_t)n) != n)
        syscall(SYS_exit, 1);
    syscall(SYS_exit, main_thread ? 3 : 0); /* this thread only; the last one: the process */
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 2 ||
        (strcmp(argv[1], "main") && strcmp(argv[1], "thread") && strcmp(argv[1], "spin"))) {
        fprintf(stderr, "usage: attach_seccomp main|thread|spin\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IONBF, 0);
    if (!strcmp(argv[1], "main")) {
        main_thread = 1;
        strict(NULL);
        return 1; /* prctl failed */
    }
    pthread_t t;
    void *rc = NULL;
    if (pthread_create(&t, NULL, strict, NULL) != 0)
        return 1;
    while (!strcmp(argv[1], "spin") && !has_read)
        ;
    if (pthread_join(t, &rc) != 0 || rc)
        return 1;
    printf("joined\n");
    return 3;
}
