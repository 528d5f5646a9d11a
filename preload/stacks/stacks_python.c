/* The sampled thread's Python frames, read by the sampler's signal handler itself (see
 * stacks_python.h), as py-spy reads them from outside:
 *
 *   PyGILState_GetThisThreadState()  this thread's PyThreadState (a pthread TSS read)
 *   3.8-3.10  tstate->frame           PyFrameObject: f_back, f_code
 *   3.11-3.12 tstate->cframe->current_frame  _PyInterpreterFrame: previous, f_code;
 *             3.12 frames owned by the C stack (shims) skipped
 *   3.13      tstate->current_frame   _PyInterpreterFrame: previous, f_executable
 *
 * The signal may come while a frame is being pushed or popped, or while the interpreter
 * frees a thread state: any pointer may be garbage. So nothing of the interpreter's is
 * dereferenced: every read goes through process_vm_readv on our own pid, which fails
 * (EFAULT) where a load would fault; every code object is checked to be one (its ob_type
 * is &PyCode_Type), every string to be a compact str of a known kind; the walk stops after
 * STACKS_PY_MAX_FRAMES frames (a cycle in garbage ends there too). A wrong but readable
 * frame can at worst name a wrong function in one sample, never crash.
 *
 * Cost: one process_vm_readv per page the walk meets (stacks_window.h: a page read is
 * kept for the sample's next reads in it), plus two per string the first time a thread
 * meets a code object. Measured on Debian's 3.11 (py_hot.py 31, about 30 frames,
 * 2026-12-01's VM, where a process_vm_readv costs 2.7 us): a median 14 us per sample,
 * against 21 us reading each frame and its code object with a call of their own.
 *
 * Offsets come from stacks_python_offsets.def, generated from each version's own headers
 * (test/fixtures/stacks/py_offsets.py; a test re-derives it). The row is picked at start
 * from the running interpreter's version. */
#define _GNU_SOURCE
#include "stacks_python.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include "collector.h"
#include "trace_format.h"

#define STACKS_PY_MAX_FRAMES 128
#define STACKS_PY_MAX_STEPS 256 /* frames looked at, shims included */
#define STACKS_PY_MAX_CHARS 200 /* characters of a name or file name that are copied */
#define STACKS_PY_CACHE_PROBES 4

struct stacks_py_offsets {
    int minor;
    long tstate_frame;  /* PyThreadState: the innermost frame (-1: through cframe) */
    long tstate_cframe; /* PyThreadState.cframe (3.11-3.12), else -1 */
    long cframe_frame;  /* _PyCFrame.current_frame */
    long frame_back, frame_code;
    long frame_owner;  /* _PyInterpreterFrame.owner, -1 before 3.11 */
    long owner_cstack; /* FRAME_OWNED_BY_CSTACK (3.12+), else -1 */
    long frame_read;   /* bytes of a frame that hold these fields */
    long ob_type;
    long code_firstlineno, code_name, code_qualname /* -1 before 3.11 */, code_filename;
    long code_read; /* bytes of a code object that hold these fields */
    long str_length, str_state, ascii_size, compact_size, compact_utf8_length, compact_utf8;
    int kind_shift, compact_shift, ascii_shift; /* bits of PyASCIIObject.state */
};

#define STACKS_PY_OFFSETS(...) {__VA_ARGS__},
static const struct stacks_py_offsets stacks_py_table[] = {
#include "stacks_python_offsets.def"
};
#undef STACKS_PY_OFFSETS

int stacks_python_on;
static const struct stacks_py_offsets *py_off;
static void *(*py_this_thread_state)(void);
static uint64_t py_code_type, py_unicode_type;
static _Atomic uint32_t py_next_code_id = 1;

/* ---- reads that cannot fault ---- */

static int py_read(pid_t pid, uint64_t addr, void *buf, size_t len)
{
    if (!addr)
        return -1;
    struct iovec local = {buf, len}, remote = {(void *)(uintptr_t)addr, len};
    return syscall(SYS_process_vm_readv, pid, &local, 1ul, &remote, 1ul, 0ul) == (long)len ? 0 : -1;
}

static int py_read_ptr(pid_t pid, struct stacks_window *w, uint64_t addr, uint64_t *out)
{
    return (addr & 7) ? -1 : stacks_window_read(pid, w, addr, out, sizeof *out);
}

static uint64_t py_u64(const uint8_t *buf, long off)
{
    uint64_t v;
    memcpy(&v, buf + off, sizeof v);
    return v;
}

/* One code point as UTF-8 into out (room: at least 4 bytes); surrogates and values out of
 * range become '?'. */
static size_t py_utf8(uint32_t c, char *out)
{
    if (c < 0x80) {
        out[0] = (char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (char)(0xc0 | c >> 6);
        out[1] = (char)(0x80 | (c & 0x3f));
        return 2;
    }
    if ((c >= 0xd800 && c < 0xe000) || c > 0x10ffff) {
        out[0] = '?';
        return 1;
    }
    if (c < 0x10000) {
        out[0] = (char)(0xe0 | c >> 12);
        out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
        out[2] = (char)(0x80 | (c & 0x3f));
        return 3;
    }
    out[0] = (char)(0xf0 | c >> 18);
    out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
    out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
    out[3] = (char)(0x80 | (c & 0x3f));
    return 4;
}

/* A str object's text as UTF-8 into out (NUL-terminated; room: cap bytes, at least 8):
 * compact strings of any kind, at most STACKS_PY_MAX_CHARS characters ("..." marks a cut).
 * Anything else, or an unreadable object, gives "<unreadable str>". */
static size_t py_read_str(pid_t pid, uint64_t obj, char *out, size_t cap)
{
    const struct stacks_py_offsets *o = py_off;
    uint8_t head[128];
    static const char unreadable[] = "<unreadable str>";
    if ((obj & 7) || (size_t)o->compact_size > sizeof head ||
        py_read(pid, obj, head, (size_t)o->compact_size) != 0 ||
        py_u64(head, o->ob_type) != py_unicode_type)
        goto fail;
    int64_t length = (int64_t)py_u64(head, o->str_length);
    uint32_t state;
    memcpy(&state, head + o->str_state, sizeof state);
    unsigned kind = (state >> o->kind_shift) & 7u;
    int compact = (state >> o->compact_shift) & 1u, ascii = (state >> o->ascii_shift) & 1u;
    if (length < 0 || !compact || (kind != 1 && kind != 2 && kind != 4))
        goto fail;
    size_t n = length > STACKS_PY_MAX_CHARS ? STACKS_PY_MAX_CHARS : (size_t)length;
    uint8_t data[STACKS_PY_MAX_CHARS * 4];
    uint64_t at = obj + (uint64_t)(ascii ? o->ascii_size : o->compact_size);
    if (n && py_read(pid, at, data, n * kind) != 0)
        goto fail;
    size_t len = 0;
    for (size_t i = 0; i < n && len + 8 < cap; i++) {
        uint32_t c = kind == 1 ? data[i] : 0;
        if (kind == 2) {
            uint16_t u;
            memcpy(&u, data + 2 * i, 2);
            c = u;
        } else if (kind == 4) {
            memcpy(&c, data + 4 * i, 4);
        }
        if (c == 0 || (ascii && c >= 0x80))
            c = '?'; /* the text ends at the first NUL in a record */
        len += py_utf8(c, out + len);
    }
    if ((size_t)length > n && len + 4 <= cap) {
        memcpy(out + len, "...", 3);
        len += 3;
    }
    out[len] = '\0';
    return len;
fail:
    memcpy(out, unreadable, sizeof unreadable);
    return sizeof unreadable - 1;
}

/* ---- code objects: an id per (thread, code object), its PY_CODE record written once */

static uint64_t py_cache_hash(uint64_t code, uint64_t name, uint32_t line)
{
    uint64_t h = (code ^ (name << 7) ^ line) * 0x9E3779B97F4A7C15ull;
    return h >> 40;
}

/* Writes the PY_CODE record of a new id for the code object; 0 when the ring is full. */
static uint32_t py_define(pid_t pid, struct prof_ring *r, uint64_t name, uint64_t file,
                          uint32_t line)
{
    char text[2 * (STACKS_PY_MAX_CHARS * 4 + 8)];
    size_t cap = sizeof text / 2;
    size_t nlen = py_read_str(pid, name, text, cap);
    size_t flen = py_read_str(pid, file, text + nlen + 1, cap);
    uint32_t size =
        prof_record_align((uint32_t)(sizeof(struct prof_rec_py_code) + nlen + flen + 2));
    struct prof_rec_py_code *rec = ring_reserve(r, size);
    if (!rec)
        return 0;
    uint32_t id = atomic_fetch_add_explicit(&py_next_code_id, 1, memory_order_relaxed);
    if (!id) /* after 2^32 definitions: 0 means "unknown" */
        id = atomic_fetch_add_explicit(&py_next_code_id, 1, memory_order_relaxed);
    rec->h.type = PROF_REC_PY_CODE;
    rec->h.size = (uint16_t)size;
    rec->code_id = id;
    rec->line = line;
    rec->flags = py_off->code_qualname >= 0 ? PROF_PY_CODE_QUALNAME : 0;
    char *payload = (char *)(rec + 1);
    size_t used = nlen + flen + 2;
    memcpy(payload, text, used);
    memset(payload + used, 0, size - sizeof *rec - used);
    ring_commit(r);
    return id;
}

/* The id of the code object at addr for this thread (0: not a code object, or no room);
 * buf: its first code_read bytes, read already. */
static uint32_t py_code_id(pid_t pid, struct prof_ring *r, struct stacks_py_cache *c, uint64_t addr,
                           const uint8_t *buf)
{
    const struct stacks_py_offsets *o = py_off;
    if (py_u64(buf, o->ob_type) != py_code_type)
        return 0;
    uint32_t line;
    memcpy(&line, buf + o->code_firstlineno, sizeof line);
    uint64_t name = py_u64(buf, o->code_qualname >= 0 ? o->code_qualname : o->code_name);
    uint64_t file = py_u64(buf, o->code_filename);
    uint64_t h = py_cache_hash(addr, name, line);
    unsigned victim = (unsigned)h % STACKS_PY_CACHE_SLOTS;
    for (unsigned p = 0; p < STACKS_PY_CACHE_PROBES; p++) {
        unsigned i = (unsigned)(h + p) % STACKS_PY_CACHE_SLOTS;
        if (c->slots[i].id && c->slots[i].code == addr && c->slots[i].name == name &&
            c->slots[i].file == file && c->slots[i].line == line)
            return c->slots[i].id;
        if (!c->slots[i].id)
            victim = i;
    }
    uint32_t id = py_define(pid, r, name, file, line);
    if (id) {
        c->slots[victim].code = addr;
        c->slots[victim].name = name;
        c->slots[victim].file = file;
        c->slots[victim].line = line;
        c->slots[victim].id = id;
    }
    return id;
}

/* ---- the walk ---- */

void stacks_python_sample(struct prof_ring *r, struct stacks_py_cache *c, uint64_t ticks)
{
    const struct stacks_py_offsets *o = py_off;
    if (!stacks_python_on || !o)
        return;
    uint64_t tstate = (uint64_t)(uintptr_t)py_this_thread_state();
    if (!tstate)
        return;
    pid_t pid = (pid_t)syscall(SYS_getpid); /* a forked child reads its own memory */
    struct stacks_window *fw = &c->frames, *ow = &c->objects;
    stacks_window_clear(fw);
    stacks_window_clear(ow);
    uint64_t frame = 0, cframe;
    if (o->tstate_cframe >= 0) {
        if (py_read_ptr(pid, ow, tstate + (uint64_t)o->tstate_cframe, &cframe) != 0 ||
            py_read_ptr(pid, ow, cframe + (uint64_t)o->cframe_frame, &frame) != 0)
            return;
    } else if (py_read_ptr(pid, ow, tstate + (uint64_t)o->tstate_frame, &frame) != 0) {
        return;
    }
    uint32_t ids[STACKS_PY_MAX_FRAMES];
    unsigned n = 0;
    uint16_t flags = 0;
    uint8_t fbuf[128], cbuf[256];
    size_t flen = (size_t)o->frame_read, clen = (size_t)o->code_read;
    if ((frame & 7) || flen > sizeof fbuf || clen > sizeof cbuf ||
        stacks_window_read(pid, fw, frame, fbuf, flen) != 0)
        return;
    for (int step = 0; step < STACKS_PY_MAX_STEPS; step++) {
        uint64_t code = py_u64(fbuf, o->frame_code);
        uint64_t back = py_u64(fbuf, o->frame_back);
        int shim =
            o->owner_cstack >= 0 && o->frame_owner >= 0 && fbuf[o->frame_owner] == o->owner_cstack;
        if (!shim && n == STACKS_PY_MAX_FRAMES) {
            flags |= PROF_SAMPLE_PY_TRUNCATED; /* a Python frame beyond the last one read */
            break;
        }
        if (!shim && !(code & 7)) {
            int code_ok = stacks_window_read(pid, ow, code, cbuf, clen) == 0;
            uint32_t id = code_ok ? py_code_id(pid, r, c, code, cbuf) : 0;
            /* 3.13: a frame whose f_executable is no code object is not a Python call */
            if (id || o->minor < 13)
                ids[n++] = id;
        } else if (!shim && o->minor < 13) {
            ids[n++] = 0;
        }
        if ((back & 7) || stacks_window_read(pid, fw, back, fbuf, flen) != 0)
            break;
    }
    if (!n)
        return;
    uint32_t size = prof_record_align((uint32_t)(sizeof(struct prof_rec_sample_py) + 4u * n));
    struct prof_rec_sample_py *rec = ring_reserve(r, size);
    if (!rec)
        return;
    rec->h.type = PROF_REC_SAMPLE_PY;
    rec->h.size = (uint16_t)size;
    rec->nframes = (uint16_t)n;
    rec->flags = flags;
    rec->ticks = ticks;
    uint32_t *out = (uint32_t *)(rec + 1);
    memcpy(out, ids, 4u * n);
    if (n & 1)
        out[n] = 0;
    ring_commit(r);
}

/* ---- set-up ---- */

/* "3.10.13 (main, ...)" -> 3, 10. */
static int py_parse_version(const char *v, int *major, int *minor)
{
    char *end;
    long a = strtol(v, &end, 10);
    if (end == v || *end != '.')
        return -1;
    const char *m = end + 1;
    long b = strtol(m, &end, 10);
    if (end == m)
        return -1;
    *major = (int)a;
    *minor = (int)b;
    return 0;
}

void stacks_python_start(void)
{
    py_this_thread_state = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyGILState_GetThisThreadState");
    if (!py_this_thread_state)
        return; /* no Python in this process (yet): nothing to say */
    int major = 0, minor = 0;
    const unsigned long *hex = dlsym(RTLD_DEFAULT, "Py_Version"); /* 3.11+ */
    const char *(*get_version)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "Py_GetVersion");
    char version[32] = "?";
    if (hex) {
        major = (int)(*hex >> 24);
        minor = (int)((*hex >> 16) & 0xff);
        snprintf(version, sizeof version, "%d.%d", major, minor);
    } else if (get_version && py_parse_version(get_version(), &major, &minor) == 0) {
        snprintf(version, sizeof version, "%d.%d", major, minor);
    }
    for (size_t i = 0; major == 3 && i < sizeof stacks_py_table / sizeof stacks_py_table[0]; i++)
        if (stacks_py_table[i].minor == minor)
            py_off = &stacks_py_table[i];
    if (!py_off) {
        collector_note("sampling: Python frames are not read in this process: CPython %s is "
                       "not one this build knows (3.8-3.13)",
                       version);
        return;
    }
    void *code_type = dlsym(RTLD_DEFAULT, "PyCode_Type");
    void *unicode_type = dlsym(RTLD_DEFAULT, "PyUnicode_Type");
    void *type_type = dlsym(RTLD_DEFAULT, "PyType_Type");
    /* The type objects are static objects: their own ob_type says whether the object
     * header is the one the table assumes (a Py_TRACE_REFS build's is not). */
    if (!code_type || !unicode_type || !type_type ||
        *(void **)((char *)code_type + py_off->ob_type) != type_type ||
        *(void **)((char *)unicode_type + py_off->ob_type) != type_type) {
        collector_note("sampling: Python frames are not read in this process: CPython %s's "
                       "objects are not laid out as its headers say (a debug build?)",
                       version);
        py_off = NULL;
        return;
    }
    uint64_t probe = 0x5eed, copy = 0;
    if (py_read(getpid(), (uint64_t)(uintptr_t)&probe, &copy, sizeof copy) != 0 || copy != probe) {
        collector_note("sampling: Python frames are not read in this process: process_vm_readv "
                       "is not allowed here (%s)",
                       strerror(errno));
        py_off = NULL;
        return;
    }
    py_code_type = (uint64_t)(uintptr_t)code_type;
    py_unicode_type = (uint64_t)(uintptr_t)unicode_type;
    char text[16];
    snprintf(text, sizeof text, "%s", version);
    collector_add_meta("sample_python", text);
    stacks_python_on = 1;
}
