#include "writer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outdir.h"
#include "text_bound.h"
#include "trace_format.h"
#include "writer_guard.h"

#define WRITER_BUFFER_BYTES (1u << 20)

static int writer_fd = -1;
static uint8_t *writer_buffer;
static size_t writer_used;
static char writer_file[4096];
static int writer_error;   /* errno of the write that failed, 0 if none */
static int writer_removed; /* that failure left the file empty: it was removed */

int writer_open(const char *dir, const char *run_id, const char *host, long rank, uint32_t features,
                char *err, size_t errlen)
{
    int dirfd = outdir_open(dir, err, errlen); /* made and checked: see outdir.h */
    if (dirfd < 0)
        return -1;
    if (!writer_buffer) {
        void *p = mmap(NULL, WRITER_BUFFER_BYTES, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            snprintf(err, errlen, "cannot map the write buffer: %s", strerror(errno));
            close(dirfd);
            return -1;
        }
        writer_buffer = p;
    }
    char rank_part[32] = "";
    if (rank >= 0)
        snprintf(rank_part, sizeof rank_part, "_rank%ld", rank);
    for (int attempt = 0; attempt < 1000; attempt++) {
        char suffix[16] = "", name[512];
        if (attempt)
            snprintf(suffix, sizeof suffix, "_%d", attempt);
        snprintf(name, sizeof name, "%s_%s_pid%ld%s%s.trace", run_id, host, (long)getpid(),
                 rank_part, suffix);
        snprintf(writer_file, sizeof writer_file, "%s/%s", dir, name);
        writer_fd = outdir_create_file(dirfd, name);
        if (writer_fd >= 0)
            break;
        if (errno != EEXIST) {
            snprintf(err, errlen, "cannot create %s: %s", writer_file, strerror(errno));
            close(dirfd);
            return -1;
        }
    }
    close(dirfd);
    if (writer_fd < 0) {
        snprintf(err, errlen, "cannot find a free file name in %s", dir);
        return -1;
    }
    writer_fd = writer_guard_adopt(writer_fd);
    writer_error = writer_removed = 0;
    struct prof_file_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, PROF_TRACE_MAGIC, PROF_TRACE_MAGIC_LEN);
    h.version = PROF_TRACE_VERSION;
    h.header_size = sizeof h;
    h.features = features;
    writer_used = 0;
    writer_append(&h, sizeof h);
    return 0;
}

int writer_is_open(void)
{
    return writer_fd >= 0;
}

const char *writer_path(void)
{
    return writer_file;
}

/* On failure the file is cut back to where this write began (a record boundary) and
 * removed if that leaves it empty; writer_failure says why. */
static int writer_write_all(const uint8_t *p, size_t len)
{
    off_t start = -1, size = -1;
    while (len > 0) {
        if (writer_guard_check(&writer_fd, writer_file, len, &size) != 0)
            break;
        if (start < 0)
            start = size;
        ssize_t n = write(writer_fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = ENOSPC;
            break;
        }
        p += n;
        len -= (size_t)n;
    }
    if (len == 0)
        return 0;
    writer_error = errno;
    writer_removed = writer_guard_cut(writer_fd, writer_file, start < 0 ? size : start);
    errno = writer_error;
    return -1;
}

/* After a failed write: no more writes to this file (errno kept). */
static void writer_shut(void)
{
    int saved = errno;
    writer_guard_close(writer_fd);
    writer_fd = -1;
    errno = saved;
}

int writer_flush(void)
{
    if (writer_fd < 0)
        return -1;
    int rc = writer_write_all(writer_buffer, writer_used);
    writer_used = 0;
    if (rc != 0)
        writer_shut();
    return rc;
}

void writer_append(const void *data, size_t len)
{
    if (writer_fd < 0)
        return;
    if (writer_used + len > WRITER_BUFFER_BYTES && writer_flush() != 0)
        return;
    if (len > WRITER_BUFFER_BYTES) {
        if (writer_write_all(data, len) != 0)
            writer_shut();
        return;
    }
    memcpy(writer_buffer + writer_used, data, len);
    writer_used += len;
}

void writer_append_record(uint16_t type, const void *fixed, size_t fixed_len, const char *text1,
                          const char *text2)
{
    static uint8_t rec[PROF_RECORD_MAX]; /* only the drain-lock holder writes */
    if (fixed_len > PROF_RECORD_MAX - 2 * TEXT_BOUND_MAX)
        return;
    size_t n = fixed_len;
    memcpy(rec, fixed, fixed_len);
    const char *texts[2] = {text1, text2};
    for (int i = 0; i < 2; i++) {
        if (!texts[i])
            continue;
        /* two bounded texts and a fixed part fit in rec (text_bound.h) */
        n += text_bound_copy((char *)rec + n, texts[i]) + 1;
    }
    uint32_t size = prof_record_align((uint32_t)n);
    memset(rec + n, 0, size - n);
    struct prof_record_header *h = (struct prof_record_header *)rec;
    h->type = type;
    h->size = (uint16_t)size;
    writer_append(rec, size);
}

void writer_close(void)
{
    if (writer_fd < 0)
        return;
    writer_flush();
    writer_guard_close(writer_fd);
    writer_fd = -1;
}

void writer_discard(void)
{
    if (writer_fd < 0)
        return;
    writer_guard_close(writer_fd);
    writer_fd = -1;
    writer_used = 0;
    unlink(writer_file);
}

void writer_abandon(void)
{
    writer_guard_close(writer_fd);
    writer_fd = -1;
    writer_used = 0;
}

int writer_failure(int *removed)
{
    *removed = writer_removed;
    return writer_error;
}
