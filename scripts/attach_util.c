/* Small helpers of profrun attach (attach_util.h). */
#define _GNU_SOURCE
#include "attach_util.h"

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

void attach_fail(char *why, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
}

uint64_t attach_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void attach_sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

int attach_read_file(const char *path, char *buf, size_t len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n < 0)
        return -1;
    buf[n] = '\0';
    return (int)n;
}

int attach_seccomp_strict(pid_t pid, pid_t tid)
{
    char path[64], status[4096];
    snprintf(path, sizeof path, "/proc/%d/task/%d/status", pid, tid);
    if (attach_read_file(path, status, sizeof status) <= 0)
        return 0;
    const char *f = strstr(status, "\nSeccomp:");
    return f && atoi(f + 9) == 1;
}
