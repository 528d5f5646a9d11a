/* export_python: the Python call trees as files other tools read — a pstats file
 * (marshal of cProfile's stats dict) and folded stacks (flamegraph.pl, speedscope). Both
 * are written through out_file (a new temporary beside the target, renamed over it), so
 * a failed write never leaves half a file. */
#define _GNU_SOURCE /* qsort_r */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "export.h"
#include "format.h"
#include "out_file.h"
#include "pystats.h"

/* ---- marshal (Python/marshal.c), the types pstats needs; little-endian throughout ---- */

static void marshal_u32(FILE *f, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        fputc((int)((v >> (8 * i)) & 0xff), f);
}

static void marshal_int(FILE *f, uint64_t v)
{
    if (v <= 0x7fffffff) { /* TYPE_INT: a signed 32-bit value */
        fputc('i', f);
        marshal_u32(f, (uint32_t)v);
        return;
    }
    /* TYPE_LONG: the digit count, then base 2^15 digits as u16, least significant first */
    uint32_t n = 0;
    for (uint64_t x = v; x; x >>= 15)
        n++;
    fputc('l', f);
    marshal_u32(f, n);
    for (uint64_t x = v; x; x >>= 15) {
        fputc((int)(x & 0xff), f);
        fputc((int)((x >> 8) & 0x7f), f);
    }
}

static void marshal_float(FILE *f, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits); /* TYPE_BINARY_FLOAT: IEEE 754 double, little-endian */
    fputc('g', f);
    for (int i = 0; i < 8; i++)
        fputc((int)((bits >> (8 * i)) & 0xff), f);
}

/* The length of the valid UTF-8 sequence at s, or 0. */
static size_t marshal_utf8_len(const unsigned char *s)
{
    size_t n;
    unsigned min;
    unsigned cp;
    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xe0) == 0xc0)
        n = 2, cp = s[0] & 0x1f, min = 0x80;
    else if ((s[0] & 0xf0) == 0xe0)
        n = 3, cp = s[0] & 0x0f, min = 0x800;
    else if ((s[0] & 0xf8) == 0xf0)
        n = 4, cp = s[0] & 0x07, min = 0x10000;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    return cp >= min && cp <= 0x10ffff ? n : 0;
}

/* TYPE_UNICODE: length, UTF-8. A byte that is not UTF-8 becomes '?': marshal would refuse
 * the file otherwise. */
static void marshal_str(FILE *f, const char *s)
{
    size_t len = strlen(s);
    fputc('u', f);
    marshal_u32(f, (uint32_t)len);
    for (const unsigned char *c = (const unsigned char *)s; *c;) {
        size_t n = marshal_utf8_len(c);
        if (n) {
            fwrite(c, 1, n, f);
            c += n;
        } else {
            fputc('?', f);
            c++;
        }
    }
}

static void marshal_tuple(FILE *f, uint32_t n)
{
    fputc('(', f);
    marshal_u32(f, n);
}

static void marshal_key(FILE *f, const struct pystats_func *fn)
{
    marshal_tuple(f, 3);
    marshal_str(f, fn->file);
    marshal_int(f, fn->line);
    marshal_str(f, fn->name);
}

void export_pstats_fwrite(FILE *f, const struct pystats *py)
{
    /* {(file, line, name): (cc, nc, tt, ct, {caller: (nc, cc, tt, ct)})}, as
     * cProfile.Profile.create_stats leaves in .stats: note the callers' nc comes first. */
    fputc('{', f);
    for (size_t i = 0; i < py->nfuncs; i++) {
        const struct pystats_func *fn = &py->funcs[py->order[i]];
        marshal_key(f, fn);
        marshal_tuple(f, 5);
        marshal_int(f, fn->pcalls);
        marshal_int(f, fn->ncalls);
        marshal_float(f, (double)fn->tottime_ns / 1e9);
        marshal_float(f, (double)fn->cumtime_ns / 1e9);
        fputc('{', f);
        for (size_t c = 0; c < fn->ncallers; c++) {
            const struct pystats_caller *e = &fn->callers[c];
            marshal_key(f, &py->funcs[e->caller]);
            marshal_tuple(f, 4);
            marshal_int(f, e->nc);
            marshal_int(f, e->cc);
            marshal_float(f, (double)e->tt_ns / 1e9);
            marshal_float(f, (double)e->ct_ns / 1e9);
        }
        fputc('0', f); /* TYPE_NULL ends a dict */
    }
    fputc('0', f);
}

int export_pstats_write(const char *path, const struct pystats *py, char *err, size_t errlen)
{
    struct out_file x;
    if (out_file_create(&x, path, 0666, err, errlen) != 0)
        return -1;
    export_pstats_fwrite(x.f, py);
    return out_file_commit(&x, 1, err, errlen);
}

/* ---- folded stacks ---- */

/* Appends a frame to the path, with the separators of the format made harmless. */
static void folded_append(char **path, size_t *len, size_t *cap, const char *frame)
{
    size_t n = strlen(frame);
    if (*len + n + 2 > *cap) {
        size_t c = *cap ? *cap : 256;
        while (c < *len + n + 2)
            c *= 2;
        char *p = realloc(*path, c);
        if (!p) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        *path = p;
        *cap = c;
    }
    if (*len)
        (*path)[(*len)++] = ';';
    for (size_t i = 0; i < n; i++) {
        char ch = frame[i];
        (*path)[(*len)++] = ch == ';' ? ':' : ch == '\n' || ch == '\r' ? ' ' : ch;
    }
    (*path)[*len] = 0;
}

static void folded_frame(const struct model_process *p, uint32_t func_id, char *buf, size_t len)
{
    const struct model_py_func *f = model_python_func(p, func_id);
    if (!f)
        snprintf(buf, len, "<unknown function #%u>", func_id);
    else if (f->kind == PROF_PY_FUNC_C) /* never empty: the separators rely on it */
        snprintf(buf, len, "%s", f->name && *f->name ? f->name : "?");
    else
        snprintf(buf, len, "%s (%s:%u)",
                 f->qualname && *f->qualname ? f->qualname
                 : f->name                   ? f->name
                                             : "?",
                 f->file ? f->file : "?", f->line);
}

/* One line per node with self time: the thread's prefix, the frames, microseconds. A path
 * deeper than max_depth frames (0: no limit) keeps its innermost max_depth frames under a
 * "[truncated N frames]" root frame, so that a line never holds more than max_depth + 3
 * frames: a chain of D distinct nodes, which folded stacks must print as D lines of
 * 1..D frames (O(D^2) bytes), prints at most D * (max_depth + 3) frames. Every frame is
 * formatted once, when its node is entered, so time follows the bytes printed. */
static void folded_line(FILE *f, const char *prefix, const char *path, const size_t *end,
                        size_t depth, size_t max_depth, const char *leaf, uint64_t us)
{
    /* names are untrusted: no control characters in the file */
    format_fputs_escaped(f, prefix);
    if (max_depth && depth > max_depth) {
        size_t cut = depth - max_depth; /* frames left out: [0, cut) */
        fprintf(f, ";[truncated %zu frames];", cut);
        format_fputs_escaped(f, path + end[cut] + 1);
    } else {
        fputc(';', f);
        format_fputs_escaped(f, path);
    }
    fprintf(f, "%s %" PRIu64 "\n", leaf, us);
}

/* with_api: the CUDA API time made with a node innermost (part of its self time) as a
 * "[CUDA API calls]" frame of its own beneath it. steps_only: only the time of nodes inside a
 * training phase (a built-in action: data loading, forward, backward, optimizer step), the
 * paths above them kept. */
static void folded_thread(FILE *f, const struct model_process *p,
                          const struct pystats_forest *forest, const size_t *roots, size_t nroots,
                          const char *prefix, size_t max_depth, int with_api, int steps_only)
{
    char *path = NULL, frame[4096];
    size_t len = 0, cap = 0;
    /* end[d]: the path's length with d frames; the frame at depth d starts at end[d] + 1
     * (end[0] for d = 0). Preorder: a node entered at depth d has its parent's path in
     * path[0, end[d]), so entering it cuts the path there and appends one frame. */
    size_t dcap = 64;
    size_t *end = malloc(dcap * sizeof *end);
    /* Explicit stack of (node, depth): Python recursion runs thousands deep. */
    size_t top = 0, scap = nroots + 16;
    size_t *stack = malloc(scap * sizeof *stack), *sdepth = malloc(scap * sizeof *sdepth);
    char *sin = malloc(scap); /* whether the node is inside a training phase */
    if (!stack || !sdepth || !end || !sin) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    end[0] = 0;
    for (size_t r = nroots; r-- > 0;) {
        sdepth[top] = 0;
        sin[top] = 0;
        stack[top++] = roots[r];
    }
    while (top) {
        size_t i = stack[--top], d = sdepth[top];
        const struct model_py_node *node = &p->py.nodes[i];
        /* an action is found on the path once: below it every node is inside */
        int in = sin[top] || (steps_only && model_torch_action_of_node(p, node->id) != NULL);
        if (d + 2 > dcap) {
            dcap *= 2;
            end = realloc(end, dcap * sizeof *end);
            if (!end) {
                fprintf(stderr, "profreport: out of memory\n");
                exit(1);
            }
        }
        len = end[d];
        folded_frame(p, node->func, frame, sizeof frame);
        folded_append(&path, &len, &cap, frame);
        end[d + 1] = len;
        uint64_t api_ns =
            with_api ? (node->api_ns < node->self_ns ? node->api_ns : node->self_ns) : 0;
        uint64_t us = (node->self_ns - api_ns + 500) / 1000, api_us = (api_ns + 500) / 1000;
        if (steps_only && !in)
            us = api_us = 0;
        if (us)
            folded_line(f, prefix, path, end, d + 1, max_depth, "", us);
        if (api_us)
            folded_line(f, prefix, path, end, d + 1, max_depth, ";[CUDA API calls]", api_us);
        size_t nchild = 0;
        for (size_t c = forest->first_child[i]; c != SIZE_MAX; c = forest->next_sibling[c])
            nchild++;
        if (top + nchild > scap) {
            while (top + nchild > scap)
                scap *= 2;
            stack = realloc(stack, scap * sizeof *stack);
            sdepth = realloc(sdepth, scap * sizeof *sdepth);
            sin = realloc(sin, scap);
            if (!stack || !sdepth || !sin) {
                fprintf(stderr, "profreport: out of memory\n");
                exit(1);
            }
        }
        size_t k = top + nchild; /* the first child on top, so that it comes out first */
        for (size_t c = forest->first_child[i]; c != SIZE_MAX; c = forest->next_sibling[c]) {
            sdepth[--k] = d + 1;
            sin[k] = (char)in;
            stack[k] = c;
        }
        top += nchild;
    }
    free(stack);
    free(sdepth);
    free(sin);
    free(end);
    free(path);
}

static const char *folded_process_name(const struct model_process *p)
{
    const char *exe = model_meta_get(p, "exe");
    if (!exe || !*exe)
        exe = model_meta_get(p, "argv"); /* the first argv */
    if (!exe || !*exe)
        return "process";
    const char *slash = strrchr(exe, '/');
    return slash && slash[1] ? slash + 1 : exe;
}

/* Roots by thread, in node order within one (qsort is not stable: the index decides). */
static int folded_root_cmp(const void *a, const void *b, void *nodes)
{
    const struct model_py_node *n = nodes;
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    if (n[x].tid != n[y].tid)
        return n[x].tid < n[y].tid ? -1 : 1;
    return x < y ? -1 : x > y;
}

static void folded_all(FILE *f, const struct summary *s, size_t max_depth, int with_api,
                       int steps_only)
{
    char frame[512];
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (steps_only && !p->steps.nsteps)
            continue;
        struct pystats_thread *threads;
        size_t n = pystats_threads(p, &threads);
        /* One forest for every thread (a forest per thread costs all the nodes each). */
        struct pystats_forest forest;
        pystats_forest_build(&forest, p, PYSTATS_EACH_THREAD);
        if (forest.nroots)
            qsort_r(forest.roots, forest.nroots, sizeof *forest.roots, folded_root_cmp,
                    p->py.nodes);
        size_t r = 0;
        for (size_t k = 0; k < n; k++) {
            while (r < forest.nroots && p->py.nodes[forest.roots[r]].tid < threads[k].tid)
                r++;
            size_t first = r;
            while (r < forest.nroots && p->py.nodes[forest.roots[r]].tid == threads[k].tid)
                r++;
            const char *name = pystats_thread_name(p, threads[k].tid);
            char *prefix = NULL;
            size_t len = 0, cap = 0;
            snprintf(frame, sizeof frame, "%s pid %lld", folded_process_name(p), (long long)p->pid);
            folded_append(&prefix, &len, &cap, frame);
            snprintf(frame, sizeof frame, "%s %u", name && *name ? name : "thread", threads[k].tid);
            folded_append(&prefix, &len, &cap, frame);
            folded_thread(f, p, &forest, forest.roots + first, r - first, prefix, max_depth,
                          with_api, steps_only);
            free(prefix);
        }
        pystats_forest_free(&forest);
        free(threads);
    }
}

void export_folded_fwrite(FILE *f, const struct summary *s, size_t max_depth)
{
    folded_all(f, s, max_depth, 0, 0);
}

void export_folded_stream(FILE *f, const struct summary *s, int with_api, int steps_only)
{
    folded_all(f, s, EXPORT_FOLDED_DEPTH_DEFAULT, with_api, steps_only);
}

int export_folded_has_steps(const struct summary *s)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->steps.nsteps && s->procs[i]->py.nnodes)
            return 1;
    return 0;
}

int export_folded_write(const char *path, const struct summary *s, size_t max_depth, char *err,
                        size_t errlen)
{
    struct out_file x;
    if (out_file_create(&x, path, 0666, err, errlen) != 0)
        return -1;
    export_folded_fwrite(x.f, s, max_depth);
    return out_file_commit(&x, 1, err, errlen);
}

void export_memory_timeline_fwrite(FILE *f, const struct summary *s)
{
    fputs("pid,device,time_ns,live_bytes\n", f);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t d = 0; d <= p->torch.ndevices; d++) {
            const struct model_torch_memory *m = d ? &p->torch.devices[d - 1] : &p->torch.memory;
            char device[48];
            model_torch_device_name(m->dev_type, m->dev_index, device, sizeof device);
            for (size_t k = 0; k < m->ntimeline; k++) {
                if (p->pid >= 0)
                    fprintf(f, "%lld", (long long)p->pid);
                fprintf(f, ",%s,%" PRIu64 ",%" PRId64 "\n", device, m->timeline[k].ns,
                        m->timeline[k].live);
            }
        }
    }
}

int export_memory_timeline_write(const char *path, const struct summary *s, char *err,
                                 size_t errlen)
{
    struct out_file x;
    if (out_file_create(&x, path, 0666, err, errlen) != 0)
        return -1;
    export_memory_timeline_fwrite(x.f, s);
    return out_file_commit(&x, 1, err, errlen);
}
