/* The files profreport writes, created new and renamed into place (out_file.h). */
#define _GNU_SOURCE
#include "out_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
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

/* A device or a pipe (/dev/stdout, /dev/null, a FIFO, a shell's >(...)) is written
 * straight: there is nothing to clobber, and a temporary renamed over it would replace
 * the device node itself. */
static int out_file_open_special(struct out_file *o, const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    FILE *f = NULL;
    if (fd >= 0 && (fstat(fd, &st) != 0 || S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))) {
        close(fd); /* replaced by a file since: made new, as any file */
        return 1;
    }
    if (fd < 0 || !(f = fdopen(fd, "wb"))) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    o->f = f;
    o->path = report_strdup(path);
    return 0;
}

int out_file_create(struct out_file *o, const char *path, mode_t mode, char *err, size_t errlen)
{
    size_t len = strlen(path) + 32;
    memset(o, 0, sizeof *o);
    /* A device or pipe named as such, or reached by a link under /dev or /proc (where
     * nobody plants one: /dev/stdout, /dev/fd/N); a link elsewhere is replaced. */
    struct stat lst, st;
    int system_link = !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6);
    if (lstat(path, &lst) == 0 && (!S_ISLNK(lst.st_mode) || system_link) && stat(path, &st) == 0 &&
        !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
        int rc = out_file_open_special(o, path, err, errlen);
        if (rc <= 0)
            return rc;
    }
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
    if (!failed && o->tmp && rename(o->tmp, o->path) != 0) {
        failed = 1;
        saved = errno;
    }
    if (failed && o->tmp)
        unlink(o->tmp);
    if (failed) {
        if (ok)
            snprintf(err, errlen, "%s: cannot write: %s", o->path, strerror(saved ? saved : EIO));
    }
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    return failed ? -1 : 0;
}
