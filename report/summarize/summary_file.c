/* The summary file: its bytes, checks and sections around the model's visitors
 * (summary_model.c).
 *
 * Layout: magic, version, the identity of the trace it was made from, the process (core,
 * the Python functions the GPU rows and memory peaks name, GPU, PyTorch, the training
 * steps behind their length), the communication calls behind their length, the Python
 * functions as pstats, a CRC-32 of all that, the end mark. */
#include "summary_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "alloc.h"
#include "model_steps_load.h"
#include "out_file.h"
#include "summary_codec.h"
#include "summary_model.h"

const char summary_file_suffix[] = ".summary";

#define SUMMARY_FILE_MAGIC "PRFSUMM\n"
#define SUMMARY_FILE_END "PRFSEND\n"
/* 20: steps.opened_late 2, an attach to a GPU process (its window's first step may be
 * left out: model_steps_warmup);
 * 19: each step's forward recomputed in backward (model_step.recompute_ns);
 * 18: the training's start (steps.actions_start_ns: an action's call around the first step);
 * 17: the training phases' spans a full ring dropped (lost_kept), the data-loading
 * functions' whole time (data_hot's outer_ns), the steps' garbage collections (gc_*);
 * 16: a hot comprehension's function and its time (model_step_hot.outer_ns), the thread
 * besides the step thread that runs the most Python in the steps (steps.thread_hot);
 * 15: whether the recording opened after the process's first steps (steps.opened_late),
 * each step's evaluation (model_step.eval_ns) and the one after the last step
 * (steps.eval_after_ns);
 * 14: the backward passes per step (steps.backward_passes: gradient accumulation), the
 * functions under which the steady steps' collectives begin (steps.comm_hot);
 * 13: the periodic work's calls after the last step (steps.rare_after, rare_after_ns),
 * the training's end (steps.actions_end_ns), what grouped optimizer steps (grouped_by), a
 * DataLoader worker's 3 busiest functions (steps.worker_hot: 1 before), each step's
 * Python in forward and backward (model_step.python_ns);
 * 12: the optimizer steps per step (steps.per_step: a loop stepping several per batch),
 * the startup's thread (steps.startup_tid), a DataLoader worker's function
 * (steps.worker_hot), whether the first step's start is inferred (steps.first_inferred);
 * 11: the functions inside the steady steps' data loading (steps.data_hot) and the one
 * that most slows each of the slowest steady steps (steps.slow_hot);
 * 10: the tensor memory of the steady steps beside the whole process's (memory.part);
 * 9: optimizer steps under a capture window numbered as the process's (META window_open);
 * 8: the GPU tables of the steady steps beside the whole process's (gpu_part);
 * 7: the Python functions of the steady steps beside the whole process's (py.window), and
 * the startup's functions with the most self time (steps.startup_hot);
 * 6: the operator rows of the steady steps beside the whole process's (torch.window);
 * 5: whether each Python function ran outside imports (pystats_func.outside_imports);
 * 4: the training steps behind their length, read when a view asks for every step
 * (summary_file_read_steps); 3: the trace's identity after the version
 * (summary_file_bound). 12 and older are not read (their trace is). */
#define SUMMARY_FILE_VERSION 20
#define SUMMARY_FILE_MAX (1ull << 32) /* 4 GiB: more is not a summary */

typedef struct summary_codec sf_codec;

void summary_file_crc(const uint8_t *body, size_t len, uint8_t out[4])
{
    uLong crc = crc32(0L, Z_NULL, 0);
    while (len) { /* crc32 takes a uInt length */
        uInt n = len > (1u << 30) ? (1u << 30) : (uInt)len;
        crc = crc32(crc, body, n);
        body += n;
        len -= n;
    }
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(crc >> (8 * i));
}

static void sf_trace_id(sf_codec *c, struct summary_trace_id *id)
{
    summary_codec_u64(c, &id->dev);
    summary_codec_u64(c, &id->ino);
    summary_codec_u64(c, &id->size);
    summary_codec_i64(c, &id->mtime_sec);
    summary_codec_u32(c, &id->mtime_nsec);
    summary_codec_u32(c, &id->head_crc);
}

/* The identity of the file open as fd: its stat and a CRC-32 of its first bytes. */
static int sf_trace_id_fd(int fd, struct summary_trace_id *id, struct stat *st)
{
    memset(id, 0, sizeof *id);
    if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode))
        return -1;
    uint8_t head[SUMMARY_FILE_HEAD];
    size_t n = 0;
    while (n < sizeof head) {
        ssize_t got = pread(fd, head + n, sizeof head - n, (off_t)n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    uint8_t crc[4];
    summary_file_crc(head, n, crc);
    id->dev = (uint64_t)st->st_dev;
    id->ino = (uint64_t)st->st_ino;
    id->size = (uint64_t)st->st_size;
    id->mtime_sec = (int64_t)st->st_mtim.tv_sec;
    id->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
    id->head_crc =
        (uint32_t)crc[0] | (uint32_t)crc[1] << 8 | (uint32_t)crc[2] << 16 | (uint32_t)crc[3] << 24;
    id->uid = (uint32_t)st->st_uid;
    id->gid = (uint32_t)st->st_gid;
    return 0;
}

int summary_file_trace_id(const char *trace, struct summary_trace_id *id)
{
    struct stat st;
    int fd = open(trace, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    int rc = fd >= 0 ? sf_trace_id_fd(fd, id, &st) : -1;
    if (fd >= 0)
        close(fd);
    return rc;
}

void summary_file_encode(const struct model_process *p, const struct summary_trace_id *id,
                         uint8_t **buf, size_t *len)
{
    sf_codec c;
    summary_codec_writer(&c);
    summary_codec_bytes(&c, SUMMARY_FILE_MAGIC, 8);
    uint32_t version = SUMMARY_FILE_VERSION;
    summary_codec_u32(&c, &version);
    struct summary_trace_id none = {0};
    sf_trace_id(&c, id ? (struct summary_trace_id *)id : &none); /* writing changes nothing */
    /* The visitors take the model by pointer for both directions; writing changes
     * nothing in it. */
    summary_model_process(&c, (struct model_process *)p);
    summary_model_write_pystats(&c, p);
    uint8_t crc[4];
    summary_file_crc(c.buf, c.len, crc);
    summary_codec_bytes(&c, crc, 4);
    summary_codec_bytes(&c, SUMMARY_FILE_END, 8);
    *buf = c.buf;
    *len = c.len;
}

int summary_file_write(const char *path, const struct model_process *p,
                       const struct summary_trace_id *id, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t n;
    summary_file_encode(p, id, &buf, &n);
    /* 0600 like the trace it stands for. */
    struct out_file o;
    int rc = out_file_create(&o, path, 0600, err, errlen);
    if (rc == 0) {
        /* root summarizing a user's traces: the summary is the user's, as the trace, or
         * no report would use it (summary_file_bound). Before the rename: never a path. */
        if (id && geteuid() == 0 && o.tmp && fchown(fileno(o.f), id->uid, id->gid) != 0) {
            snprintf(err, errlen, "%s: cannot give it to uid %u: %s", path, id->uid,
                     strerror(errno));
            out_file_commit(&o, 0, err, errlen);
            free(buf);
            return -1;
        }
        fwrite(buf, 1, n, o.f);
        rc = out_file_commit(&o, 1, err, errlen);
    }
    free(buf);
    return rc;
}

/* The whole file, or NULL with err set. */
static uint8_t *sf_read_all(const char *path, size_t *len, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    uint8_t *buf = NULL;
    size_t cap = 0, n = 0;
    for (;;) {
        buf = report_grow(buf, &cap, n + 65536, 1);
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0 || n > SUMMARY_FILE_MAX)
            break;
    }
    int bad = ferror(f) || n > SUMMARY_FILE_MAX;
    fclose(f);
    if (bad) {
        snprintf(err, errlen, "%s: cannot read it as a summary (%s)", path,
                 n > SUMMARY_FILE_MAX ? "larger than any summary" : "read error");
        free(buf);
        return NULL;
    }
    *len = n;
    return buf;
}

/* Checks the magic, version and end mark; leaves c after the version. 0, or -1 with err. */
static int sf_open(sf_codec *c, const char *path, const uint8_t *buf, size_t len, char *err,
                   size_t errlen)
{
    if (len < 20 || memcmp(buf, SUMMARY_FILE_MAGIC, 8) != 0) {
        snprintf(err, errlen, "%s: not a profrun summary", path);
        return -1;
    }
    if (memcmp(buf + len - 8, SUMMARY_FILE_END, 8) != 0) {
        snprintf(err, errlen,
                 "%s: summary cut off (no end mark); run profreport --summarize on its "
                 "trace again",
                 path);
        return -1;
    }
    uint8_t crc[4];
    summary_file_crc(buf, len - 12, crc);
    if (memcmp(crc, buf + len - 12, 4) != 0) {
        snprintf(err, errlen,
                 "%s: corrupt summary (its checksum does not match); run profreport "
                 "--summarize on its trace again",
                 path);
        return -1;
    }
    summary_codec_reader(c, buf, len - 12);
    c->pos = 8;
    uint32_t version = 0;
    summary_codec_u32(c, &version);
    if (version != SUMMARY_FILE_VERSION) {
        snprintf(err, errlen,
                 "%s: summary format %u, this profreport reads %u; run profreport "
                 "--summarize on its trace again",
                 path, version, SUMMARY_FILE_VERSION);
        return -1;
    }
    struct summary_trace_id id;
    sf_trace_id(c, &id);
    return 0;
}

/* What a summary was when it was loaded, by process: its size and checksum, so that a
 * section read again alone (sf_open_section) is known to come from the same file. */
static struct u64map sf_stamps; /* process address -> size << 32 | CRC-32 */
static int sf_stamps_ready;

static uint64_t sf_stamp_of(size_t len, const uint8_t *crc)
{
    return (uint64_t)len << 32 | (uint64_t)crc[0] | (uint64_t)crc[1] << 8 | (uint64_t)crc[2] << 16 |
           (uint64_t)crc[3] << 24;
}

static void sf_stamp_keep(const struct model_process *p, const uint8_t *buf, size_t len)
{
    if (!sf_stamps_ready) {
        u64map_init(&sf_stamps);
        sf_stamps_ready = 1;
    }
    uint64_t *slot = u64map_slot(&sf_stamps, (uintptr_t)p);
    if (!slot)
        report_oom();
    /* a process at an address freed before: its stamp replaced; 0: none (read it whole) */
    *slot = len < (1ull << 32) ? sf_stamp_of(len, buf + len - 12) : 0;
}

/* The process in a summary's bytes, checked (sf_open), with its Python section left
 * where it lies; path names the summary in messages. NULL with err set. */
static struct model_process *sf_decode(const char *path, const uint8_t *buf, size_t len,
                                       sf_codec *c, char *err, size_t errlen)
{
    if (sf_open(c, path, buf, len, err, errlen) != 0)
        return NULL;
    model_steps_set_loader(summary_file_read_steps);
    struct model_process *p = model_process_new(path, 0);
    free(p->file);
    p->file = NULL;
    summary_model_process(c, p);
    if (c->bad) {
        snprintf(err, errlen,
                 "%s: corrupt summary (%s); run profreport --summarize on its "
                 "trace again",
                 path, c->why);
        model_process_free(p);
        return NULL;
    }
    p->summary_py_offset = c->pos;
    return p;
}

struct model_process *summary_file_load(const char *path, char *err, size_t errlen)
{
    size_t len = 0;
    uint8_t *buf = sf_read_all(path, &len, err, errlen);
    if (!buf)
        return NULL;
    sf_codec c;
    struct model_process *p = sf_decode(path, buf, len, &c, err, errlen);
    if (!p) {
        free(buf);
        return NULL;
    }
    /* Named as its trace would be where the summary lies, so that a report reads the
     * same from either. */
    free(p->file);
    size_t stem = strlen(path);
    if (stem > strlen(summary_file_suffix) &&
        !strcmp(path + stem - strlen(summary_file_suffix), summary_file_suffix))
        stem -= strlen(summary_file_suffix);
    p->file = malloc(stem + 7);
    if (!p->file)
        report_oom();
    memcpy(p->file, path, stem);
    memcpy(p->file + stem, ".trace", 7);
    p->summary_file = report_strdup(path);
    sf_stamp_keep(p, buf, len);
    free(buf);
    return p;
}

struct model_process *summary_file_fold(struct model_process *p, char *err, size_t errlen)
{
    uint8_t *buf;
    size_t len;
    summary_file_encode(p, NULL, &buf, &len);
    sf_codec c;
    struct model_process *q = sf_decode(p->file, buf, len, &c, err, errlen);
    if (!q) {
        free(buf);
        return NULL;
    }
    /* p->file came back from the bytes: the trace's path as given */
    q->summary_file = report_strdup(p->file);
    q->summary_bytes = buf;
    q->summary_len = len;
    model_process_free(p);
    return q;
}

/* Reads p's summary's bytes [from, to) alone when the file still has the size and
 * checksum it had when loaded (the whole was checked then): *buf holds them, c reads them
 * and *base is from. 0, or -1: read it whole. */
static int sf_read_part(const struct model_process *p, size_t from, size_t to, sf_codec *c,
                        uint8_t **buf, size_t *base)
{
    const uint64_t *stamp = sf_stamps_ready ? u64map_find(&sf_stamps, (uintptr_t)p) : NULL;
    if (!stamp || !*stamp || from > to)
        return -1;
    int fd = open(p->summary_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return -1;
    struct stat st;
    uint8_t tail[12];
    size_t len = (size_t)(*stamp >> 32);
    int rc = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size == len &&
        to <= len - 12 && pread(fd, tail, sizeof tail, (off_t)(len - 12)) == (ssize_t)sizeof tail &&
        sf_stamp_of(len, tail) == *stamp && !memcmp(tail + 4, SUMMARY_FILE_END, 8)) {
        *buf = malloc(to - from + 1);
        if (!*buf)
            report_oom();
        size_t n = 0;
        while (n < to - from) {
            ssize_t got = pread(fd, *buf + n, to - from - n, (off_t)(from + n));
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                break;
            n += (size_t)got;
        }
        if (n == to - from) {
            summary_codec_reader(c, *buf, n);
            *base = from;
            rc = 0;
        } else {
            free(*buf);
            *buf = NULL;
        }
    }
    close(fd);
    return rc;
}

/* Opens p's summary again at a section read when needed, the bytes [from, to) of it at
 * least: *buf holds them or the whole file (free it), c stands at offset, which is
 * *base + c->pos. 0, or -1 with err set. */
static int sf_open_section(const struct model_process *p, size_t from, size_t to, size_t offset,
                           sf_codec *c, uint8_t **buf, size_t *base, char *err, size_t errlen)
{
    *buf = NULL;
    if (p->summary_bytes) { /* folded in memory (summary_file_fold), checked then */
        summary_codec_reader(c, p->summary_bytes, p->summary_len - 12);
        *base = 0;
        c->pos = offset;
        return 0;
    }
    if (offset >= from && offset <= to && sf_read_part(p, from, to, c, buf, base) == 0) {
        c->pos = offset - from;
        return 0;
    }
    *base = 0;
    size_t len = 0;
    *buf = sf_read_all(p->summary_file, &len, err, errlen);
    if (!*buf)
        return -1;
    if (sf_open(c, p->summary_file, *buf, len, err, errlen) != 0)
        return -1;
    if (offset > c->len) {
        snprintf(err, errlen, "%s: changed since it was read", p->summary_file);
        return -1;
    }
    c->pos = offset;
    return 0;
}

/* Where p's summary's checksum starts (0: not known). */
static size_t sf_summary_end(const struct model_process *p)
{
    if (p->summary_bytes)
        return p->summary_len - 12;
    const uint64_t *stamp = u64map_find(&sf_stamps, (uintptr_t)p);
    return stamp && *stamp ? (size_t)(*stamp >> 32) - 12 : 0;
}

int summary_file_add_python(struct pystats *s, const struct model_process *p, char *err,
                            size_t errlen)
{
    if (!p->summary_file)
        return 0;
    sf_codec c;
    uint8_t *buf;
    size_t base, end = sf_stamps_ready || p->summary_bytes ? sf_summary_end(p) : 0;
    int rc = sf_open_section(p, p->summary_py_offset, end, p->summary_py_offset, &c, &buf, &base,
                             err, errlen);
    if (rc == 0) {
        summary_model_read_pystats(&c, s, p->py.window != MODEL_WINDOW_ALL);
        if (c.bad) {
            snprintf(err, errlen, "%s: corrupt Python section (%s): its functions are left out",
                     p->summary_file, c.why);
            rc = -1;
        }
    }
    free(buf);
    return rc;
}

/* p's steps from its summary open in c (at any offset; c's bytes start at the file's
 * base). 0, or -1 with err set. */
static int sf_read_steps(const struct model_process *p, sf_codec *c, size_t base,
                         struct model_step **out, char *err, size_t errlen)
{
    *out = NULL;
    if (p->summary_steps_offset < base || p->summary_steps_offset - base > c->len) {
        snprintf(err, errlen, "%s: changed since it was read", p->summary_file);
        return -1;
    }
    c->pos = p->summary_steps_offset - base;
    size_t n = 0;
    summary_model_step_list(c, out, &n);
    if (!c->bad && n != p->steps.nsteps)
        summary_codec_fail(c, "a step count unlike the one read before");
    if (c->bad) {
        snprintf(err, errlen, "%s: corrupt training steps (%s): this process's are zero",
                 p->summary_file, c->why);
        free(*out);
        *out = NULL;
        return -1;
    }
    return 0;
}

int summary_file_read_comm(const struct model_process *p, int with_steps, struct model_comm *out,
                           char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!p->summary_file)
        return 0;
    sf_codec c;
    uint8_t *buf;
    size_t base;
    /* the steps come before the calls, the Python functions after them */
    with_steps = with_steps && p->steps.nsteps && !p->steps.steps;
    size_t from = with_steps && p->summary_steps_offset < p->summary_comm_offset
                      ? p->summary_steps_offset
                      : p->summary_comm_offset;
    int rc = sf_open_section(p, from, p->summary_py_offset, p->summary_comm_offset, &c, &buf, &base,
                             err, errlen);
    if (rc == 0) {
        summary_model_comm(&c, out);
        if (c.bad) {
            snprintf(err, errlen, "%s: corrupt communication calls (%s): this rank's are left out",
                     p->summary_file, c.why);
            summary_file_free_comm(out);
            rc = -1;
        }
    }
    /* The steps too while the file is read: the merge asks for them next. */
    struct model_step *steps;
    if (rc == 0 && with_steps && sf_read_steps(p, &c, base, &steps, err, errlen) == 0)
        model_steps_give(p, steps);
    free(buf);
    return rc;
}

int summary_file_read_steps(const struct model_process *p, struct model_step **out, char *err,
                            size_t errlen)
{
    *out = NULL;
    sf_codec c;
    uint8_t *buf;
    size_t base;
    int rc = sf_open_section(p, p->summary_steps_offset, p->summary_comm_offset,
                             p->summary_steps_offset, &c, &buf, &base, err, errlen);
    if (rc == 0)
        rc = sf_read_steps(p, &c, base, out, err, errlen);
    free(buf);
    return rc;
}

void summary_file_free_comm(struct model_comm *m)
{
    for (size_t i = 0; i < m->nnames; i++)
        free(m->names[i]);
    free(m->names);
    free(m->calls);
    u64map_free(&m->name_index);
    memset(m, 0, sizeof *m);
}

int summary_file_is_summary(const char *path)
{
    char head[8];
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) /* a FIFO would wait for a writer */
        return 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int yes = fread(head, 1, 8, f) == 8 && !memcmp(head, SUMMARY_FILE_MAGIC, 8);
    fclose(f);
    return yes;
}

int summary_file_bound(const char *summary, const char *trace, char *why, size_t whylen)
{
    char scratch[8];
    if (!why) {
        why = scratch;
        whylen = sizeof scratch;
    }
    /* Never through a link: whoever can write the folder could point it anywhere. */
    int sfd = open(summary, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW);
    if (sfd < 0) {
        snprintf(why, whylen, errno == ELOOP ? "a symbolic link" : "cannot open: %s",
                 strerror(errno));
        return 0;
    }
    int tfd = open(trace, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    struct summary_trace_id want, got;
    struct stat sst, tst;
    uint8_t head[8 + 5 + 6 * 10];
    ssize_t n = 0;
    int bound = 0;
    if (tfd < 0 || sf_trace_id_fd(tfd, &want, &tst) != 0) {
        snprintf(why, whylen, "its trace cannot be read");
    } else if (fstat(sfd, &sst) != 0 || !S_ISREG(sst.st_mode)) {
        snprintf(why, whylen, "not a regular file");
    } else if (sst.st_uid != tst.st_uid) {
        snprintf(why, whylen, "owned by uid %ld, its trace by uid %ld", (long)sst.st_uid,
                 (long)tst.st_uid);
    } else if (sst.st_mode & 077) {
        snprintf(why, whylen, "mode %04o: others may write or read it, unlike its trace",
                 (unsigned)(sst.st_mode & 07777));
    } else if ((n = pread(sfd, head, sizeof head, 0)) < 12 ||
               memcmp(head, SUMMARY_FILE_MAGIC, 8) != 0) {
        snprintf(why, whylen, "not a profrun summary");
    } else {
        sf_codec c;
        summary_codec_reader(&c, head, (size_t)n);
        c.pos = 8;
        uint32_t version = 0;
        summary_codec_u32(&c, &version);
        sf_trace_id(&c, &got);
        if (version != SUMMARY_FILE_VERSION)
            snprintf(why, whylen, "summary format %u, this profreport reads %u", version,
                     SUMMARY_FILE_VERSION);
        else if (c.bad || got.dev != want.dev || got.ino != want.ino || got.size != want.size ||
                 got.mtime_sec != want.mtime_sec || got.mtime_nsec != want.mtime_nsec ||
                 got.head_crc != want.head_crc)
            snprintf(why, whylen, "not made from this trace as it is now");
        else
            bound = 1;
    }
    close(sfd);
    if (tfd >= 0)
        close(tfd);
    return bound;
}
