/* Small helpers of profrun attach (attach_util.h). */
#define _GNU_SOURCE
#include "attach_util.h"

#include <fcntl.h>
#include <limits.h>
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

int attach_write_start(const char *path, uint64_t start_after)
{
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t at = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec + 300000000u;
    return attach_write_start_at(path, at < start_after ? start_after : at);
}

int attach_write_start_at(const char *path, uint64_t at)
{
    char tmp[PATH_MAX + 80], text[32];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    int n = snprintf(text, sizeof text, "%llu\n", (unsigned long long)at);
    int bad = write(fd, text, (size_t)n) != n;
    if (close(fd) != 0 || bad || rename(tmp, path) != 0) { /* whole when it appears */
        unlink(tmp);
        return -1;
    }
    return 0;
}

int attach_status_field(pid_t pid, const char *field, char *out, size_t len)
{
    char path[64], buf[8192];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    if (attach_read_file(path, buf, sizeof buf) <= 0)
        return -1;
    size_t fl = strlen(field);
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
        if (!strncmp(l, field, fl) && l[fl] == ':') {
            char *v = l + fl + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            snprintf(out, len, "%.*s", (int)strcspn(v, "\n"), v);
            return 0;
        }
    return -1;
}
