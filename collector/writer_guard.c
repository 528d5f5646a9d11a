#include "writer_guard.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Why an identity check before every write, rather than interposing close, close_range,
 * closefrom, dup2 and dup3: programs also close descriptors with raw system calls
 * (CPython's os.closerange, Go's runtime), which no wrapper sees, while fstat sees every
 * way a descriptor can stop being ours. It costs one system call per write of up to the
 * writer's whole buffer (1 MiB), a pass every PROF_FLUSH_MS. Keeping the descriptor far up
 * (below RLIMIT_NOFILE) closes the remaining window between the check and the write: a
 * program that closes ours reopens its own files at the lowest free numbers, so the one
 * we hold is reused only by a program that holds nearly as many descriptors as its limit
 * allows, or that dup2s onto that very number. */

#define WRITER_GUARD_BELOW_LIMIT 64 /* numbers left free under the limit */
#define WRITER_GUARD_HIGHEST 4096   /* no higher: the kernel sizes the table to it */

static dev_t guard_dev;
static ino_t guard_ino;
static int guard_known;
static _Atomic int guard_reopens;

static int writer_guard_high_number(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return -1;
    rlim_t top = rl.rlim_cur;
    if (top == RLIM_INFINITY || top > WRITER_GUARD_HIGHEST)
        top = WRITER_GUARD_HIGHEST;
    if (top < 4 * WRITER_GUARD_BELOW_LIMIT)
        return -1; /* a tight limit: the program needs every number */
    return (int)(top - WRITER_GUARD_BELOW_LIMIT);
}

int writer_guard_adopt(int fd)
{
    int high = writer_guard_high_number();
    if (high > fd) {
        int moved = fcntl(fd, F_DUPFD_CLOEXEC, high);
        if (moved >= 0) {
            close(fd);
            fd = moved;
        }
    }
    struct stat st;
    guard_known = fstat(fd, &st) == 0;
    guard_dev = st.st_dev;
    guard_ino = st.st_ino;
    return fd;
}

static int writer_guard_is_ours(int fd, struct stat *st)
{
    if (fd < 0 || fstat(fd, st) != 0)
        return 0;
    return !guard_known || (st->st_dev == guard_dev && st->st_ino == guard_ino);
}

/* The same file again, appending; refused if the path now names another file. */
static int writer_guard_reopen(const char *path, struct stat *st)
{
    if (!guard_known)
        return -1;
    int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    if (fstat(fd, st) != 0 || st->st_dev != guard_dev || st->st_ino != guard_ino) {
        close(fd);
        return -1;
    }
    return writer_guard_adopt(fd);
}

int writer_guard_check(int *fd, const char *path, size_t len, off_t *size)
{
    struct stat st;
    if (!writer_guard_is_ours(*fd, &st)) {
        int fresh = writer_guard_reopen(path, &st);
        if (fresh < 0) {
            *fd = -1;
            errno = ESTALE;
            return -1;
        }
        *fd = fresh;
        atomic_fetch_add(&guard_reopens, 1);
    }
    *size = st.st_size;
    /* Past the limit the kernel sends SIGXFSZ, whose default action ends the program. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (uint64_t)st.st_size + len > (uint64_t)rl.rlim_cur) {
        errno = EFBIG;
        return -1;
    }
    return 0;
}

int writer_guard_cut(int fd, const char *path, off_t size)
{
    int saved = errno, removed = 0;
    struct stat st;
    if (size >= 0 && writer_guard_is_ours(fd, &st)) {
        if (st.st_size > size && ftruncate(fd, size) != 0)
            size = st.st_size;
        struct stat named;
        if (size == 0 && lstat(path, &named) == 0 && named.st_dev == st.st_dev &&
            named.st_ino == st.st_ino && unlink(path) == 0)
            removed = 1;
    }
    errno = saved;
    return removed;
}

void writer_guard_close(int fd)
{
    struct stat st;
    if (writer_guard_is_ours(fd, &st))
        close(fd);
}

int writer_guard_take_reopens(void)
{
    return atomic_exchange(&guard_reopens, 0);
}
