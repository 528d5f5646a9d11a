/* The files profreport writes, created new and renamed into place (out_file.h). */
#define _GNU_SOURCE
#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "alloc.h"

/* 16 random hex digits: a name nobody can plant in advance. */
static void out_file_random(char out[17])
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        r ^= (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)getpid() << 32 ^
             (uint64_t)(uintptr_t)out;
    }
    snprintf(out, 17, "%016llx", (unsigned long long)r);
}

int out_file_create(struct out_file *o, const char *path, mode_t mode, char *err, size_t errlen)
{
    size_t len = strlen(path) + 32;
    memset(o, 0, sizeof *o);
    o->tmp = malloc(len);
    if (!o->tmp)
        report_oom();
    int fd = -1;
    /* A name taken (planted or a left-over): another one; O_EXCL fails on a link too. */
    for (int tries = 0; fd < 0 && tries < 64; tries++) {
        char rnd[17];
        out_file_random(rnd);
        snprintf(o->tmp, len, "%s.tmp-%s", path, rnd);
        fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        snprintf(err, errlen, "%s: cannot create: %s", path, strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(o->tmp);
        }
        free(o->tmp);
        o->tmp = NULL;
        return -1;
    }
    o->f = f;
    o->path = report_strdup(path);
    return 0;
}

int out_file_commit(struct out_file *o, int ok, char *err, size_t errlen)
{
    int failed = !ok, saved = 0;
    /* A full disk shows at the flush (or already failed a write: flushed again). */
    if (ok && fflush(o->f) != 0) {
        failed = 1;
        saved = errno;
    } else if (ok && ferror(o->f)) {
        failed = 1;
        saved = EIO;
    }
    if (fclose(o->f) != 0 && !failed) {
        failed = 1;
        saved = errno;
    }
    if (!failed && rename(o->tmp, o->path) != 0) {
        failed = 1;
        saved = errno;
    }
    if (failed) {
        unlink(o->tmp);
        if (ok)
            snprintf(err, errlen, "%s: cannot write: %s", o->path, strerror(saved ? saved : EIO));
    }
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    return failed ? -1 : 0;
}
