#include "trace_read.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Big enough to amortize read() calls, and always more than one record (PROF_RECORD_MAX)
 * so a record never has to straddle two buffers. A smaller file gets a buffer of its own
 * size (at least TRACE_READ_BUFFER_MIN), grown when a record needs more. */
#define TRACE_READ_BUFFER (4u << 20)
#define TRACE_READ_BUFFER_MIN 4096u

struct trace_reader {
    int fd;
    char *path;
    struct prof_file_header header;
    uint64_t *buf;       /* u64 so records are 8-byte aligned in memory */
    size_t cap;          /* bytes of buf: a multiple of 8, at most TRACE_READ_BUFFER */
    size_t pos;          /* next unread byte in buf */
    size_t len;          /* valid bytes in buf */
    uint64_t buf_offset; /* file offset of buf[0] */
    int eof;
    uint64_t count;
    enum trace_read_stop stop;
    char warning[512];
    struct prof_rec_torch_op wide; /* the last TORCH_OP_SHORT, widened */
};

static const uint16_t trace_min_sizes[PROF_REC_TYPE_COUNT] = {
    [PROF_REC_PAD] = 8,
    [PROF_REC_META] = 8,
    [PROF_REC_STRING] = sizeof(struct prof_rec_string),
    [PROF_REC_API_NAME] = sizeof(struct prof_rec_api_name),
    [PROF_REC_THREAD] = sizeof(struct prof_rec_thread),
    [PROF_REC_THREAD_NAME] = sizeof(struct prof_rec_thread_name),
    [PROF_REC_CLOCK] = sizeof(struct prof_rec_clock),
    [PROF_REC_LOST] = sizeof(struct prof_rec_lost),
    [PROF_REC_LOST_KEPT] = sizeof(struct prof_rec_lost_kept),
    [PROF_REC_API_CALL] = sizeof(struct prof_rec_api_call),
    [PROF_REC_SYMBOL] = sizeof(struct prof_rec_symbol),
    [PROF_REC_NOTE] = sizeof(struct prof_rec_note),
    [PROF_REC_END] = sizeof(struct prof_rec_end),
    [PROF_REC_LOST_CALLS] = sizeof(struct prof_rec_lost_calls),
    [PROF_REC_PY_FUNC] = sizeof(struct prof_rec_py_func),
    [PROF_REC_PY_NODE] = sizeof(struct prof_rec_py_node),
    [PROF_REC_PY_STATS] = sizeof(struct prof_rec_py_stats),
    [PROF_REC_PY_SPAN] = sizeof(struct prof_rec_py_span),
    [PROF_REC_PY_GAP] = sizeof(struct prof_rec_py_gap),
    [PROF_REC_GPU_KERNEL] = sizeof(struct prof_rec_gpu_kernel),
    [PROF_REC_GPU_MEMCPY] = sizeof(struct prof_rec_gpu_memcpy),
    [PROF_REC_GPU_MEMSET] = sizeof(struct prof_rec_gpu_memset),
    [PROF_REC_GPU_API] = sizeof(struct prof_rec_gpu_api),
    [PROF_REC_GPU_API_NAME] = sizeof(struct prof_rec_gpu_api_name),
    [PROF_REC_GPU_DEVICE] = sizeof(struct prof_rec_gpu_device),
    [PROF_REC_NVTX] = sizeof(struct prof_rec_nvtx),
    [PROF_REC_TORCH_OP] = sizeof(struct prof_rec_torch_op),
    [PROF_REC_TORCH_OP_SHORT] = sizeof(struct prof_rec_torch_op_short),
    [PROF_REC_TORCH_MEM] = sizeof(struct prof_rec_torch_mem),
    [PROF_REC_TORCH_DEV_MEM] = sizeof(struct prof_rec_torch_dev_mem),
    [PROF_REC_ACTION] = sizeof(struct prof_rec_action),
    [PROF_REC_TORCH_NODE] = sizeof(struct prof_rec_torch_node),
    [PROF_REC_TORCH_STATS] = sizeof(struct prof_rec_torch_stats),
    [PROF_REC_NVTX_LOST] = sizeof(struct prof_rec_nvtx_lost),
    [PROF_REC_TORCH_MEM_TOTALS] = sizeof(struct prof_rec_torch_mem_totals),
    [PROF_REC_STACK] = sizeof(struct prof_rec_stack),
    [PROF_REC_STACK_REF] = sizeof(struct prof_rec_stack_ref),
    [PROF_REC_MAP] = sizeof(struct prof_rec_map),
    [PROF_REC_SAMPLE] = PROF_REC_SAMPLE_FIRST_SIZE, /* it grew: older files have these */
    [PROF_REC_STACK_MEM] = sizeof(struct prof_rec_stack_mem),
    [PROF_REC_PY_CODE] = sizeof(struct prof_rec_py_code),
    [PROF_REC_SAMPLE_PY] = sizeof(struct prof_rec_sample_py),
    [PROF_REC_PY_CUT] = sizeof(struct prof_rec_py_cut),
    [PROF_REC_PY_CUT_STATS] = sizeof(struct prof_rec_py_cut_stats),
    [PROF_REC_TORCH_SCOPE] = sizeof(struct prof_rec_torch_scope),
    [PROF_REC_PY_GC] = sizeof(struct prof_rec_py_gc),
};

static const char *const trace_type_names[PROF_REC_TYPE_COUNT] = {
    [PROF_REC_PAD] = "PAD",
    [PROF_REC_META] = "META",
    [PROF_REC_STRING] = "STRING",
    [PROF_REC_API_NAME] = "API_NAME",
    [PROF_REC_THREAD] = "THREAD",
    [PROF_REC_THREAD_NAME] = "THREAD_NAME",
    [PROF_REC_CLOCK] = "CLOCK",
    [PROF_REC_LOST] = "LOST",
    [PROF_REC_LOST_KEPT] = "LOST_KEPT",
    [PROF_REC_API_CALL] = "API_CALL",
    [PROF_REC_SYMBOL] = "SYMBOL",
    [PROF_REC_NOTE] = "NOTE",
    [PROF_REC_END] = "END",
    [PROF_REC_LOST_CALLS] = "LOST_CALLS",
    [PROF_REC_PY_FUNC] = "PY_FUNC",
    [PROF_REC_PY_NODE] = "PY_NODE",
    [PROF_REC_PY_STATS] = "PY_STATS",
    [PROF_REC_PY_SPAN] = "PY_SPAN",
    [PROF_REC_PY_GAP] = "PY_GAP",
    [PROF_REC_GPU_KERNEL] = "GPU_KERNEL",
    [PROF_REC_GPU_MEMCPY] = "GPU_MEMCPY",
    [PROF_REC_GPU_MEMSET] = "GPU_MEMSET",
    [PROF_REC_GPU_API] = "GPU_API",
    [PROF_REC_GPU_API_NAME] = "GPU_API_NAME",
    [PROF_REC_GPU_DEVICE] = "GPU_DEVICE",
    [PROF_REC_NVTX] = "NVTX",
    [PROF_REC_TORCH_OP] = "TORCH_OP",
    [PROF_REC_TORCH_OP_SHORT] = "TORCH_OP_SHORT",
    [PROF_REC_TORCH_MEM] = "TORCH_MEM",
    [PROF_REC_TORCH_DEV_MEM] = "TORCH_DEV_MEM",
    [PROF_REC_ACTION] = "ACTION",
    [PROF_REC_TORCH_NODE] = "TORCH_NODE",
    [PROF_REC_TORCH_STATS] = "TORCH_STATS",
    [PROF_REC_NVTX_LOST] = "NVTX_LOST",
    [PROF_REC_TORCH_MEM_TOTALS] = "TORCH_MEM_TOTALS",
    [PROF_REC_STACK] = "STACK",
    [PROF_REC_STACK_REF] = "STACK_REF",
    [PROF_REC_MAP] = "MAP",
    [PROF_REC_SAMPLE] = "SAMPLE",
    [PROF_REC_STACK_MEM] = "STACK_MEM",
    [PROF_REC_PY_CODE] = "PY_CODE",
    [PROF_REC_SAMPLE_PY] = "SAMPLE_PY",
    [PROF_REC_PY_CUT] = "PY_CUT",
    [PROF_REC_PY_CUT_STATS] = "PY_CUT_STATS",
    [PROF_REC_TORCH_SCOPE] = "TORCH_SCOPE",
    [PROF_REC_PY_GC] = "PY_GC",
};

uint16_t trace_record_min_size(uint16_t type)
{
    if (type < PROF_REC_TYPE_COUNT)
        return trace_min_sizes[type];
    return 8; /* a header rounded up to the record alignment */
}

const char *trace_record_type_name(uint16_t type)
{
    return type < PROF_REC_TYPE_COUNT ? trace_type_names[type] : NULL;
}

static const char *trace_file_kind(mode_t mode)
{
    return S_ISDIR(mode)    ? "a directory"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a plain file";
}

/* Reads until n bytes are in buf[pos..] or the file ends; returns the bytes available. */
static size_t trace_fill(struct trace_reader *r, size_t n)
{
    char *b = (char *)r->buf;
    if (r->len - r->pos >= n || r->eof)
        return r->len - r->pos;
    /* Move the unread tail to the front, keeping 8-byte alignment (pos is a multiple of
     * 8 because every record size is). */
    size_t keep = r->len - r->pos;
    if (n > r->cap) { /* n is at most a record or a header: 64 KiB */
        size_t cap = (n + 7) & ~(size_t)7;
        uint64_t *nb = realloc(r->buf, cap);
        if (!nb) {
            r->stop = TRACE_STOP_IO;
            snprintf(r->warning, sizeof r->warning,
                     "%s: out of memory at byte %llu; reporting the %llu records before it",
                     r->path, (unsigned long long)(r->buf_offset + r->pos),
                     (unsigned long long)r->count);
            r->eof = 1;
            return r->len - r->pos;
        }
        r->buf = nb;
        r->cap = cap;
        b = (char *)nb;
    }
    memmove(b, b + r->pos, keep);
    r->buf_offset += r->pos;
    r->pos = 0;
    r->len = keep;
    while (r->len < n && !r->eof) {
        ssize_t got = read(r->fd, b + r->len, r->cap - r->len);
        if (got < 0) {
            if (errno == EINTR)
                continue;
            r->stop = TRACE_STOP_IO;
            snprintf(r->warning, sizeof r->warning,
                     "%s: read error at byte %llu (%s); reporting the %llu records before it",
                     r->path, (unsigned long long)(r->buf_offset + r->len), strerror(errno),
                     (unsigned long long)r->count);
            r->eof = 1;
            break;
        }
        if (got == 0)
            r->eof = 1;
        r->len += (size_t)got;
    }
    return r->len - r->pos;
}

struct trace_reader *trace_reader_open(const char *path, char *err, size_t errlen)
{
    struct trace_reader *r = calloc(1, sizeof *r);
    if (!r) {
        snprintf(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    r->fd = -1;
    r->path = strdup(path);
    if (!r->path) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    /* Only a regular file: reading a FIFO or a terminal would wait forever for a writer,
     * a device would never end. Checked before opening (opening a FIFO blocks, a device
     * may act) and again on the descriptor, opened non-blocking, in case the path was
     * replaced in between. */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        snprintf(err, errlen,
                 "%s: not a regular file (%s); profreport reads trace files and "
                 "directories of them",
                 path, trace_file_kind(st.st_mode));
        goto fail;
    }
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (r->fd < 0) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        goto fail;
    }
    if (fstat(r->fd, &st) != 0) {
        snprintf(err, errlen, "%s: cannot stat: %s", path, strerror(errno));
        goto fail;
    }
    if (!S_ISREG(st.st_mode)) {
        snprintf(err, errlen,
                 "%s: not a regular file (%s); profreport reads trace files and "
                 "directories of them",
                 path, trace_file_kind(st.st_mode));
        goto fail;
    }
    fcntl(r->fd, F_SETFL, fcntl(r->fd, F_GETFL) & ~O_NONBLOCK);
    /* A buffer the size of the file, within [MIN, TRACE_READ_BUFFER]: a small file
     * costs no 4 MiB allocation. One that grows while read is still read whole. */
    uint64_t want = (uint64_t)st.st_size + 8;
    r->cap = want < TRACE_READ_BUFFER_MIN ? TRACE_READ_BUFFER_MIN
             : want > TRACE_READ_BUFFER   ? TRACE_READ_BUFFER
                                          : (size_t)want & ~(size_t)7;
    r->buf = malloc(r->cap);
    if (!r->buf) {
        snprintf(err, errlen, "%s: out of memory", path);
        goto fail;
    }
    size_t have = trace_fill(r, sizeof r->header);
    if (r->stop == TRACE_STOP_IO) {
        snprintf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
        goto fail;
    }
    if (have < PROF_TRACE_MAGIC_LEN || memcmp(r->buf, PROF_TRACE_MAGIC, PROF_TRACE_MAGIC_LEN)) {
        snprintf(err, errlen, "%s: not a profrun trace (bad magic)", path);
        goto fail;
    }
    if (have < sizeof r->header) {
        snprintf(err, errlen, "%s: truncated file header (%zu of %zu bytes)", path, have,
                 sizeof r->header);
        goto fail;
    }
    memcpy(&r->header, r->buf, sizeof r->header);
    if (r->header.version > PROF_TRACE_VERSION) {
        snprintf(err, errlen,
                 "%s: written by a newer profrun (format version %u, this reader "
                 "knows %d)",
                 path, r->header.version, PROF_TRACE_VERSION);
        goto fail;
    }
    if (r->header.version == 0) {
        snprintf(err, errlen, "%s: bad format version 0", path);
        goto fail;
    }
    if (r->header.header_size < sizeof r->header) {
        snprintf(err, errlen, "%s: bad header size %u (less than %zu)", path, r->header.header_size,
                 sizeof r->header);
        goto fail;
    }
    /* A larger header is a later extension of it: skip what we do not know. Records
     * after it must stay 8-byte aligned in the buffer, so round the skip within it. */
    have = trace_fill(r, r->header.header_size);
    if (have < r->header.header_size) {
        snprintf(err, errlen, "%s: truncated file header (%zu of %u bytes)", path, have,
                 r->header.header_size);
        goto fail;
    }
    r->pos = r->header.header_size;
    if (r->pos % PROF_RECORD_ALIGN) {
        char *b = (char *)r->buf;
        memmove(b, b + r->pos, r->len - r->pos);
        r->buf_offset += r->pos;
        r->len -= r->pos;
        r->pos = 0;
    }
    return r;
fail:
    trace_reader_close(r);
    return NULL;
}

void trace_reader_close(struct trace_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->path);
    free(r->buf);
    free(r);
}

static void trace_widen_torch_op(struct trace_reader *r, struct trace_record *rec)
{
    struct prof_rec_torch_op_short s;
    memcpy(&s, rec->data, sizeof s);
    r->wide = (struct prof_rec_torch_op){{PROF_REC_TORCH_OP, sizeof r->wide},
                                         s.name_sid,
                                         s.start,
                                         s.start + s.duration,
                                         s.sequence_nr,
                                         0,
                                         s.scope,
                                         s.depth,
                                         0,
                                         s.shapes_sid};
    rec->type = PROF_REC_TORCH_OP;
    rec->data = &r->wide;
}

int trace_reader_next(struct trace_reader *r, struct trace_record *rec)
{
    if (r->stop != TRACE_STOP_NONE)
        return 0;
    size_t have = trace_fill(r, sizeof(struct prof_record_header));
    if (r->stop != TRACE_STOP_NONE)
        return 0;
    uint64_t offset = r->buf_offset + r->pos;
    if (have == 0)
        return 0;
    if (have < sizeof(struct prof_record_header)) {
        r->stop = TRACE_STOP_TRUNCATED;
        goto truncated;
    }
    struct prof_record_header h;
    memcpy(&h, (char *)r->buf + r->pos, sizeof h);
    if (h.size < sizeof h || h.size % PROF_RECORD_ALIGN || h.size < trace_record_min_size(h.type)) {
        r->stop = TRACE_STOP_CORRUPT;
        snprintf(r->warning, sizeof r->warning,
                 "%s: corrupt record at byte %llu (type %u, size %u); reporting the %llu "
                 "records before it",
                 r->path, (unsigned long long)offset, h.type, h.size, (unsigned long long)r->count);
        return 0;
    }
    have = trace_fill(r, h.size);
    if (r->stop != TRACE_STOP_NONE)
        return 0;
    if (have < h.size) {
        r->stop = TRACE_STOP_TRUNCATED;
        goto truncated;
    }
    rec->offset = offset;
    rec->type = h.type;
    rec->size = h.size;
    rec->data = (char *)r->buf + r->pos;
    if (h.type == PROF_REC_TORCH_OP_SHORT) /* every reader sees a TORCH_OP (size: the file's) */
        trace_widen_torch_op(r, rec);
    r->pos += h.size;
    r->count++;
    return 1;
truncated:
    snprintf(r->warning, sizeof r->warning,
             "%s: truncated at byte %llu (record cut off); reporting the %llu records before it",
             r->path, (unsigned long long)offset, (unsigned long long)r->count);
    return 0;
}

const struct prof_file_header *trace_reader_header(const struct trace_reader *r)
{
    return &r->header;
}

const char *trace_reader_path(const struct trace_reader *r)
{
    return r->path;
}

uint64_t trace_reader_count(const struct trace_reader *r)
{
    return r->count;
}

enum trace_read_stop trace_reader_stop(const struct trace_reader *r)
{
    return r->stop;
}

const char *trace_reader_warning(const struct trace_reader *r)
{
    return r->stop == TRACE_STOP_NONE ? NULL : r->warning;
}

const char *trace_record_text(const struct trace_record *rec, size_t off, size_t *len)
{
    size_t n = 0;
    const char *s = "";
    if (off < rec->size) {
        s = (const char *)rec->data + off;
        n = strnlen(s, rec->size - off);
        /* A text that fills the record without a NUL is cut at the record's end: the
         * caller gets it NUL-terminated through a copy. */
        if (n == rec->size - off) {
            static __thread char bounce[PROF_RECORD_MAX + 1];
            memcpy(bounce, s, n);
            bounce[n] = 0;
            s = bounce;
        }
    }
    if (len)
        *len = n;
    return s;
}

int trace_file_not_a_trace(const char *path, char *why, size_t whylen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    unsigned char head[sizeof(struct prof_file_header)];
    size_t have = 0;
    int read_error = 0;
    while (have < sizeof head) {
        ssize_t n = read(fd, head + have, sizeof head - have);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            read_error = 1;
        if (n <= 0)
            break;
        have += (size_t)n;
    }
    close(fd);
    size_t magic_have = have < PROF_TRACE_MAGIC_LEN ? have : PROF_TRACE_MAGIC_LEN;
    if (read_error || (have == sizeof head && !memcmp(head, PROF_TRACE_MAGIC, magic_have)))
        return 0; /* the reader judges it and says why */
    if (have == 0)
        snprintf(why, whylen, "empty file");
    else if (memcmp(head, PROF_TRACE_MAGIC, magic_have))
        snprintf(why, whylen, "not a profrun trace");
    else
        snprintf(why, whylen, "cut off inside its file header (%zu of %zu bytes)", have,
                 sizeof head);
    return 1;
}
