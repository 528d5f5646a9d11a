/* attach_start: the common start of several processes attached with --steps, put between
 * two steps. Each library writes its last two step ends (attach.step_ends, realtime ns);
 * once every process's last end lies within a quarter of a step of the others' (the same
 * step, the ranks of a DDP job leaving their allreduce together), the start is half a
 * step after the latest of them, in the middle of the next step of every rank: each opens
 * at the end of that step, the same step in all. A start at an arbitrary time fell, about
 * one run in five, in the few ms between the ranks' ends of one step, and the ranks began
 * one step apart. */
#define _GNU_SOURCE
#include "attach_util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t attach_start_realtime(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The two ends a library wrote: 1, or 0 when none yet (or a write caught halfway). */
static int attach_start_ends(const char *path, uint64_t *prev, uint64_t *last)
{
    char text[64];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return 0;
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    close(fd);
    if (n != 42 || text[20] != ' ' || text[41] != '\n')
        return 0;
    text[n] = '\0';
    unsigned long long a, b;
    if (sscanf(text, "%20llu %20llu", &a, &b) != 2 || !a || a >= b)
        return 0;
    *prev = a;
    *last = b;
    return 1;
}

static int attach_start_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The start from the step ends: 0 when a process wrote none within no_steps_s seconds, or
 * no step of all came together within give_up_s, or *interrupted. */
static uint64_t attach_pick_start(const char *const *ends, int n, double no_steps_s,
                                  double give_up_s, volatile const sig_atomic_t *interrupted)
{
    uint64_t *len = malloc((size_t)(n > 0 ? n : 1) * sizeof *len);
    if (!len || n <= 0) {
        free(len);
        return 0;
    }
    uint64_t began = attach_now_ns(), at = 0;
    int seen_all = 0;
    while (!at && !*interrupted) {
        double waited = (double)(attach_now_ns() - began) / 1e9;
        if (waited > give_up_s || (!seen_all && waited > no_steps_s))
            break;
        uint64_t lo = UINT64_MAX, hi = 0;
        int have = 0;
        for (int i = 0; i < n; i++) {
            uint64_t prev, last;
            if (!attach_start_ends(ends[i], &prev, &last))
                break;
            len[have++] = last - prev;
            lo = last < lo ? last : lo;
            hi = last > hi ? last : hi;
        }
        seen_all |= have == n;
        if (have == n) {
            qsort(len, (size_t)n, sizeof *len, attach_start_cmp);
            uint64_t step = len[(n - 1) / 2], now = attach_start_realtime();
            /* one step of every rank, and still early in the step after it */
            if (hi - lo <= step / 4 && now < hi + step / 4)
                at = hi + step / 2;
        }
        if (!at)
            attach_sleep_us(500);
    }
    free(len);
    return at;
}

void attach_start_now(const char *path, uint64_t start_after, const char *const *ends, int n,
                      volatile const sig_atomic_t *interrupted)
{
    uint64_t at = n ? attach_pick_start(ends, n, 10.0, 60.0, interrupted) : 0;
    if (n && !at)
        fprintf(stderr, "profrun attach: the processes' steps did not end together; their "
                        "windows open from a common time, at the next step of each\n");
    if ((at ? attach_write_start_at(path, at) : attach_write_start(path, start_after)) != 0)
        fprintf(stderr, "profrun attach: cannot write %s: %s\n", path, strerror(errno));
}
