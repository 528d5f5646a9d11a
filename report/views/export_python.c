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

#include "alloc.h"
#include "export.h"
#include "format.h"
#include "out_file.h"
#include "pystats.h"
#include "steps_report.h"

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
    format_mark_cut(buf, len, (size_t)model_python_frame(p, func_id, buf, len));
}

/* How the lines are cut to size. */
struct folded_opts {
    size_t max_depth; /* frames per line (0: no limit): deeper ones are folded */
    int with_api, phase; /* phase: enum export_phase */
    uint64_t min_ns; /* a node whose time, with what it called, is under this is folded */
};

/* Per-node scratch of one process, indexed as p->py.nodes. */
struct folded_scratch {
    size_t *order, *parent; /* preorder of a thread's nodes; parent index or SIZE_MAX */
    size_t *depth;          /* frames on the path, the node's own included */
    uint64_t *own, *api;    /* self time outside the CUDA API, CUDA API time (ns) */
    uint64_t *carry;        /* own + api + what narrow descendants fold into it */
    size_t *nfold;          /* nodes folded into it that a file folding nothing shows */
    size_t *nany;           /* nodes folded into it that have any time in the part */
    char *shows;            /* its path has a line in a file folding nothing (>= 1 us) */
    char *head;             /* printed as its own frame */
};

static void folded_oom(void)
{
    fprintf(stderr, "profreport: out of memory\n");
    exit(1);
}

static void *folded_alloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        folded_oom();
    return p;
}

static void folded_scratch_init(struct folded_scratch *x, size_t n)
{
    x->order = folded_alloc(n, sizeof *x->order);
    x->parent = folded_alloc(n, sizeof *x->parent);
    x->depth = folded_alloc(n, sizeof *x->depth);
    x->own = folded_alloc(n, sizeof *x->own);
    x->api = folded_alloc(n, sizeof *x->api);
    x->carry = folded_alloc(n, sizeof *x->carry);
    x->nfold = folded_alloc(n, sizeof *x->nfold);
    x->nany = folded_alloc(n, sizeof *x->nany);
    x->shows = folded_alloc(n, 1);
    x->head = folded_alloc(n, 1);
}

static void folded_scratch_free(struct folded_scratch *x)
{
    free(x->order);
    free(x->parent);
    free(x->depth);
    free(x->own);
    free(x->api);
    free(x->carry);
    free(x->nfold);
    free(x->nany);
    free(x->shows);
    free(x->head);
}

/* One line: the thread's prefix, the frames (path; "": none), the leaf frame (";..." or
 * ""), microseconds. */
static void folded_line(FILE *f, const char *prefix, const char *path, const char *leaf,
                        uint64_t us)
{
    /* names are untrusted: no control characters in the file */
    format_fputs_escaped(f, prefix);
    if (*path) {
        fputc(';', f);
        format_fputs_escaped(f, path);
    }
    fprintf(f, "%s %" PRIu64 "\n", leaf, us);
}

static uint64_t folded_us(uint64_t ns)
{
    return (ns + 500) / 1000;
}

/* Pass 1 over one thread's roots: the preorder (x->order[0, *n)), each node's own times
 * (with_api: the CUDA API time made with a node innermost, part of its self time, as a
 * "[CUDA API calls]" frame of its own beneath it; steps_only: only the time of nodes
 * inside a training phase, a built-in action: data loading, forward, backward, optimizer
 * step, the paths above them kept; phase_ns, when not NULL: each node's self time is that
 * of the part, folded_phase_times, and phase_api its CUDA API time when known), then,
 * children before parents, which nodes are printed: a node whose carry (its own time and
 * what its narrow descendants fold into it) is under min_ns, or deeper than max_depth,
 * folds into its parent. A fold counts the nodes folded that have time in the part (a
 * call tree holds every node the process ever ran, the imports' included; a part, few of
 * them) and that a file folding nothing shows: with a line of at least a microsecond, or
 * beneath one (the exact steady steps hold shorter calls); those with any time when none
 * does. Returns the thread's own time and sets what its roots fold into the thread
 * (*rest, *nrest). */
static uint64_t folded_measure(const struct model_process *p, const struct pystats_forest *forest,
                               const size_t *roots, size_t nroots, const struct folded_opts *o,
                               const uint64_t *phase_ns, const uint64_t *phase_api,
                               struct folded_scratch *x, size_t *n, uint64_t *rest, size_t *nrest)
{
    size_t top = 0, scap = nroots + 16;
    size_t *stack = folded_alloc(scap, sizeof *stack);
    char *sin = folded_alloc(scap, 1); /* whether the node is inside a training phase */
    *n = 0;
    for (size_t r = nroots; r-- > 0;) {
        x->parent[roots[r]] = SIZE_MAX;
        x->depth[roots[r]] = 1;
        sin[top] = 0;
        stack[top++] = roots[r];
    }
    uint64_t total = 0;
    while (top) {
        size_t i = stack[--top];
        const struct model_py_node *node = &p->py.nodes[i];
        /* an action is found on the path once: below it every node is inside */
        int steps_only = o->phase == EXPORT_PHASE_STEPS;
        int in = sin[top] || (steps_only && model_torch_action_of_node(p, node->id) != NULL);
        x->order[(*n)++] = i;
        uint64_t self = phase_ns ? phase_ns[i] : node->self_ns;
        uint64_t api = !o->with_api || (phase_ns && !phase_api) ? 0
                       : phase_api                              ? phase_api[i]
                                                                : node->api_ns;
        api = api < self ? api : self;
        x->own[i] = !phase_ns && steps_only && !in ? 0 : self - api;
        x->api[i] = steps_only && !in ? 0 : api;
        x->carry[i] = x->own[i] + x->api[i];
        x->nfold[i] = x->nany[i] = 0;
        x->shows[i] = folded_us(x->own[i]) || folded_us(x->api[i]);
        total += x->carry[i];
        size_t nchild = 0;
        for (size_t c = forest->first_child[i]; c != SIZE_MAX; c = forest->next_sibling[c])
            nchild++;
        if (top + nchild > scap) {
            while (top + nchild > scap)
                scap *= 2;
            stack = realloc(stack, scap * sizeof *stack);
            sin = realloc(sin, scap);
            if (!stack || !sin)
                folded_oom();
        }
        size_t k = top + nchild; /* the first child on top, so that it comes out first */
        for (size_t c = forest->first_child[i]; c != SIZE_MAX; c = forest->next_sibling[c]) {
            x->parent[c] = i;
            x->depth[c] = x->depth[i] + 1;
            sin[--k] = (char)in;
            stack[k] = c;
        }
        top += nchild;
    }
    free(stack);
    free(sin);
    *rest = 0;
    *nrest = 0;
    size_t nrest_any = 0;
    for (size_t k = *n; k-- > 0;) { /* reverse preorder: children before their parent */
        size_t i = x->order[k];
        size_t up = x->parent[i];
        if (up != SIZE_MAX && x->shows[i]) /* (a path above a line has one too) */
            x->shows[up] = 1;
        int deep = o->max_depth && x->depth[i] > o->max_depth;
        x->head[i] = !deep && x->carry[i] >= o->min_ns;
        if (x->head[i])
            continue;
        size_t nfold = (x->shows[i] ? 1 : 0) + x->nfold[i];
        size_t nany = (x->carry[i] ? 1 : 0) + x->nany[i];
        if (up == SIZE_MAX) {
            *rest += x->carry[i];
            *nrest += nfold;
            nrest_any += nany;
        } else {
            x->carry[up] += x->carry[i];
            x->nfold[up] += nfold;
            x->nany[up] += nany;
        }
    }
    if (!*nrest) /* only frames shorter than a microsecond each */
        *nrest = nrest_any;
    return total;
}

/* Pass 2: the lines of the printed nodes, in preorder. Every frame is formatted once,
 * when its node is entered, so time follows the bytes printed. */
static void folded_print(FILE *f, const struct model_process *p, const struct folded_scratch *x,
                         size_t n, const char *prefix, const struct folded_opts *o, uint64_t rest,
                         size_t nrest)
{
    char *path = NULL, frame[PYSTATS_LABEL_MAX], leaf[64];
    size_t len = 0, cap = 0;
    /* end[d]: the path's length with d frames. Preorder: a node entered at depth d has its
     * parent's path in path[0, end[d - 1]), so entering it cuts the path there and appends
     * one frame. */
    size_t dcap = 64;
    size_t *end = folded_alloc(dcap, sizeof *end);
    end[0] = 0;
    for (size_t k = 0; k < n; k++) {
        size_t i = x->order[k], d = x->depth[i];
        if (o->max_depth && d > o->max_depth)
            continue; /* folded: its path is never printed */
        if (d + 1 > dcap) {
            while (d + 1 > dcap)
                dcap *= 2;
            end = realloc(end, dcap * sizeof *end);
            if (!end)
                folded_oom();
        }
        len = end[d - 1];
        folded_frame(p, p->py.nodes[i].func, frame, sizeof frame);
        folded_append(&path, &len, &cap, frame);
        end[d] = len;
        if (!x->head[i])
            continue;
        uint64_t own = folded_us(x->own[i]), api = folded_us(x->api[i]);
        uint64_t fold = folded_us(x->carry[i] - x->own[i] - x->api[i]);
        if (own)
            folded_line(f, prefix, path, "", own);
        if (api)
            folded_line(f, prefix, path, ";[CUDA API calls]", api);
        if (fold) {
            snprintf(leaf, sizeof leaf, ";[%zu frames folded]",
                     x->nfold[i] ? x->nfold[i] : x->nany[i]);
            folded_line(f, prefix, path, leaf, fold);
        }
    }
    if (folded_us(rest)) {
        snprintf(leaf, sizeof leaf, ";[%zu frames folded]", nrest);
        folded_line(f, prefix, "", leaf, folded_us(rest));
    }
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

/* A process's frame: "rank R (pid P)" as the text report names a rank, else "exe pid P". */
static void folded_process_label(const struct model_process *p, char *buf, size_t len)
{
    if (p->rank >= 0)
        snprintf(buf, len, "rank %lld (pid %lld)", (long long)p->rank, (long long)p->pid);
    else
        snprintf(buf, len, "%s pid %lld", folded_process_name(p), (long long)p->pid);
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

/* ---- the span phases (startup, steady), from the Python spans ---- */

/* A span of the step thread cut to the part, and its node's frames. */
struct folded_span {
    struct model_py_span s;
    size_t depth;
};

/* Callers before their calls: by start, the longer first, then the shallower. Cut to the
 * part, a caller and a call of it that both cross its edges (<module> and the training
 * loop's function) run the same ticks; only the depth tells which holds the other. */
static int folded_span_cmp(const void *a, const void *b)
{
    const struct folded_span *x = a, *y = b;
    if (x->s.start != y->s.start)
        return x->s.start < y->s.start ? -1 : 1;
    if (x->s.end != y->s.end)
        return x->s.end > y->s.end ? -1 : 1;
    return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Adds to node_ns (indexed as p->py.nodes) each node's time in the Python calls of at
 * least PROF_PY_SPAN_US (PY_SPAN records, kept by model_steps_keep_spans) of thread tid
 * (the step thread's; the startup's for the startup) inside [lo, hi) (CLOCK_MONOTONIC ns),
 * less the calls of at least PROF_PY_SPAN_US
 * they made: the widths are the thread's wall time, as the steps' are; a call that crosses
 * lo or hi counts its time inside. So a line's number in these parts is the time of its
 * path's long calls less their long calls: a shorter call (no span) has no line of its
 * own, its time is its caller's own time, as the steps' hot functions count it
 * (model_steps_hot.c). A function whose calls are all long and call nothing (a built-in
 * such as run_backward) has the --python table's tottime of the same steps; one that
 * makes short calls has their time on top; the lines add up to the thread's time in its
 * outermost long calls (main() or <module>: the part's wall time). The nodes' paths are
 * then printed as the call trees' are. */
static void folded_span_times(const struct model_process *p, uint32_t tid, uint64_t lo, uint64_t hi,
                              uint64_t *node_ns)
{
    if (!p->py.nspan_list || hi <= lo)
        return;
    struct folded_span *sp = malloc(p->py.nspan_list * sizeof *sp);
    struct {
        size_t i;
        uint64_t end, nested;
    } *open = malloc(p->py.nspan_list * sizeof *open);
    if (!sp || !open)
        report_oom();
    size_t n = 0;
    /* every span cut at the same ticks (cut one by one, the roundings could put a call
     * that crosses lo before its caller, which would then end with it) */
    uint64_t lo_ticks = model_monotonic_ns_to_ticks(p, lo);
    uint64_t hi_ticks = model_monotonic_ns_to_ticks(p, hi);
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        struct model_py_span x = p->py.span_list[i];
        if (x.tid != tid || x.start >= hi_ticks || x.end <= lo_ticks)
            continue;
        x.start = x.start > lo_ticks ? x.start : lo_ticks;
        x.end = x.end < hi_ticks ? x.end : hi_ticks;
        size_t depth = 0;
        for (const struct model_py_node *up = model_python_node(p, x.node); up && depth < 1u << 20;
             up = up->parent ? model_python_node(p, up->parent) : NULL)
            depth++;
        sp[n++] = (struct folded_span){x, depth};
    }
    qsort(sp, n, sizeof *sp, folded_span_cmp);
    size_t top = 0;
    for (size_t i = 0; i <= n; i++) {
        /* close the open spans that end before this one starts (all of them at the end) */
        while (top && (i == n || sp[i].s.start >= open[top - 1].end)) {
            top--;
            uint64_t dur = open[top].end - sp[open[top].i].s.start;
            const struct model_py_node *node = model_python_node(p, sp[open[top].i].s.node);
            if (node && dur > open[top].nested)
                node_ns[node - p->py.nodes] += model_ticks_to_ns(p, dur - open[top].nested);
            if (top)
                open[top - 1].nested += dur;
        }
        if (i == n)
            break;
        uint64_t end = sp[i].s.end; /* inside its caller */
        if (top && end > open[top - 1].end)
            end = open[top - 1].end;
        open[top].i = i;
        open[top].end = end > sp[i].s.start ? end : sp[i].s.start;
        open[top++].nested = 0;
    }
    free(sp);
    free(open);
}

/* Whether p's steady steps are drawn from its call tree: the Python table holds them (its
 * part is the steady steps', on the step thread). */
static int folded_steady_exact(const struct model_process *p)
{
    return p->py.window == MODEL_WINDOW_STEADY && p->py.window_tid == p->steps.tid &&
           p->py.nwindow_rows;
}

/* The parts' self time of each node of p (calloc'd, indexed as p->py.nodes), and for the
 * steady steps from the call tree its CUDA API time (*api, else NULL); NULL for the phases
 * of the call trees (all, steps). The steady steps are those of the Python table when it
 * holds them (folded_steady_exact: the step thread's counts at the steps' edges,
 * every call), else its calls of at least PROF_PY_SPAN_US, as the startup's: a shorter
 * call's time is its caller's (a reinforcement learning loop's select_action read 676 ms
 * of self time in 2.1 s, its calls of torch.distributions of 40-60 us each: 18 ms). */
static uint64_t *folded_phase_times(const struct model_process *p, int phase, uint64_t **api)
{
    *api = NULL;
    if (phase != EXPORT_PHASE_STARTUP && phase != EXPORT_PHASE_STEADY)
        return NULL;
    uint64_t *node_ns = folded_alloc(p->py.nnodes, sizeof *node_ns);
    if (phase == EXPORT_PHASE_STEADY && folded_steady_exact(p)) {
        *api = folded_alloc(p->py.nnodes, sizeof **api);
        for (size_t i = 0; i < p->py.nwindow_rows; i++) {
            const struct model_py_window_row *w = &p->py.window_rows[i];
            node_ns[w->index] = w->self_ns;
            (*api)[w->index] = w->api_ns;
        }
        return node_ns;
    }
    /* warm-up steps lead: the steady ones run from the first after them to the last */
    model_steps_hold(p);
    const struct model_steps *st = &p->steps;
    double ratio;
    size_t warmup = phase == EXPORT_PHASE_STEADY ? steps_warmup(p, &ratio) : 0;
    uint64_t b0, b1, btid;
    uint32_t bnode;
    uint32_t tid = st->startup_tid ? st->startup_tid : st->tid;
    if (phase == EXPORT_PHASE_STARTUP && model_start_unrecorded(p)) {
        /* nothing: its startup ran before the recording opened (the calls between the
         * opening and the first step recorded are not it) */
    } else if (phase == EXPORT_PHASE_STARTUP) {
        folded_span_times(p, tid, 0, st->steps[0].start_ns, node_ns);
        /* the profiler's build of its torch bridge (a first run's) is not the program's:
         * out of the call open around it (model_python_unbill_build does so for the trees;
         * a review's startup flame graph gave _imp.create_dynamic 2.74 s, 2.39 s of it the
         * build) */
        const struct model_py_node *bn =
            model_torch_bridge_build(p, &b0, &b1, &btid, &bnode) && btid == tid
                ? model_python_node(p, bnode)
                : NULL;
        if (bn) {
            uint64_t d = model_ticks_to_ns(p, b1 - b0), *v = &node_ns[bn - p->py.nodes];
            *v -= d < *v ? d : *v;
        }
    } else
        folded_span_times(p, st->tid, st->steps[warmup].start_ns, st->steps[st->nsteps - 1].end_ns,
                          node_ns);
    model_steps_let_go(p);
    return node_ns;
}

/* f NULL: the total time the lines would hold, nothing printed. */
static uint64_t folded_all(FILE *f, const struct summary *s, const struct folded_opts *o)
{
    char frame[512];
    uint64_t total = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (o->phase != EXPORT_PHASE_ALL && !p->steps.nsteps)
            continue;
        uint64_t *phase_api, *phase_ns = folded_phase_times(p, o->phase, &phase_api);
        struct pystats_thread *threads;
        size_t n = pystats_threads(p, &threads);
        /* One forest for every thread (a forest per thread costs all the nodes each). */
        struct pystats_forest forest;
        pystats_forest_build(&forest, p, PYSTATS_EACH_THREAD);
        if (forest.nroots)
            qsort_r(forest.roots, forest.nroots, sizeof *forest.roots, folded_root_cmp,
                    p->py.nodes);
        struct folded_scratch x;
        folded_scratch_init(&x, p->py.nnodes);
        size_t r = 0;
        for (size_t k = 0; k < n; k++) {
            while (r < forest.nroots && p->py.nodes[forest.roots[r]].tid < threads[k].tid)
                r++;
            size_t first = r;
            while (r < forest.nroots && p->py.nodes[forest.roots[r]].tid == threads[k].tid)
                r++;
            size_t nodes, nrest;
            uint64_t rest;
            total += folded_measure(p, &forest, forest.roots + first, r - first, o, phase_ns,
                                    phase_api, &x, &nodes, &rest, &nrest);
            if (!f)
                continue;
            const char *name = pystats_thread_name(p, threads[k].tid);
            char *prefix = NULL;
            size_t len = 0, cap = 0;
            folded_process_label(p, frame, sizeof frame);
            folded_append(&prefix, &len, &cap, frame);
            snprintf(frame, sizeof frame, "%s %u", name && *name ? name : "thread", threads[k].tid);
            folded_append(&prefix, &len, &cap, frame);
            folded_print(f, p, &x, nodes, prefix, o, rest, nrest);
            free(prefix);
        }
        folded_scratch_free(&x);
        pystats_forest_free(&forest);
        free(threads);
        free(phase_ns);
        free(phase_api);
    }
    return total;
}

/* The lines, with min_share of the whole time as the narrowest node printed. */
static void folded_write_lines(FILE *f, const struct summary *s, struct folded_opts *o,
                               double min_share)
{
    o->min_ns = 0;
    if (min_share > 0) {
        double t = (double)folded_all(NULL, s, o) * min_share;
        o->min_ns = t < 1 ? 1 : (uint64_t)t;
    }
    folded_all(f, s, o);
}

void export_folded_fwrite(FILE *f, const struct summary *s, size_t max_depth, double min_share)
{
    struct folded_opts o = {max_depth, 0, s->phase, 0};
    folded_write_lines(f, s, &o, min_share);
}

void export_folded_stream(FILE *f, const struct summary *s, int with_api, int phase)
{
    struct folded_opts o = {EXPORT_FOLDED_FLAME_DEPTH, with_api, phase, 0};
    folded_write_lines(f, s, &o, EXPORT_FOLDED_FLAME_MIN_SHARE);
}

int export_folded_has_steps(const struct summary *s)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->steps.nsteps && s->procs[i]->py.nnodes)
            return 1;
    return 0;
}

int export_folded_steady_exact(const struct summary *s)
{
    size_t with = 0, exact = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->steps.nsteps && s->procs[i]->py.nnodes) {
            with++;
            exact += folded_steady_exact(s->procs[i]) ? 1 : 0;
        }
    return !exact ? 0 : exact == with ? 2 : 1;
}

int export_folded_steady_steps(const struct summary *s, uint64_t *first, uint64_t *last)
{
    int got = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (!p->steps.nsteps || !p->py.nnodes || !folded_steady_exact(p))
            continue;
        if (got && (p->py.window_first != *first || p->py.window_last != *last))
            return 0;
        *first = p->py.window_first;
        *last = p->py.window_last;
        got = 1;
    }
    return got;
}

static ssize_t folded_count(void *cookie, const char *buf, size_t n)
{
    (void)buf;
    *(uint64_t *)cookie += n;
    return (ssize_t)n;
}

/* The bytes export_folded_fwrite would write (0: not known). */
static uint64_t folded_size(const struct summary *s, size_t max_depth, double min_share)
{
    uint64_t n = 0;
    FILE *f = fopencookie(&n, "w", (cookie_io_functions_t){.write = folded_count});
    if (!f)
        return 0;
    export_folded_fwrite(f, s, max_depth, min_share);
    fclose(f);
    return n;
}

/* min_share EXPORT_FOLDED_MIN_SHARE_BOUNDED: the share that keeps the file bounded. */
static double folded_bounded_share(const char *path, const struct summary *s, size_t max_depth)
{
    uint64_t traces = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        traces += s->procs[i]->file_bytes;
    uint64_t most = EXPORT_FOLDED_TRACE_MULTIPLE * traces, n = 0;
    most = most > EXPORT_FOLDED_SMALL ? most : EXPORT_FOLDED_SMALL;
    double share = EXPORT_FOLDED_MIN_SHARE_DEFAULT;
    while (share < EXPORT_FOLDED_MIN_SHARE_MOST && (n = folded_size(s, max_depth, share)) > most)
        share *= 2;
    if (share > EXPORT_FOLDED_MIN_SHARE_DEFAULT) {
        char b[32];
        format_bytes(traces, b, sizeof b);
        format_say(stderr,
                   "%s: frames under %.2g %% of the time (with all they called) folded into "
                   "their callers, not %.2g %%, to keep the file within %d x the traces' %s "
                   "(--folded-min-share sets the share)",
                   path, 100 * share, 100 * EXPORT_FOLDED_MIN_SHARE_DEFAULT,
                   EXPORT_FOLDED_TRACE_MULTIPLE, b);
    }
    return share;
}

int export_folded_write(const char *path, const struct summary *s, size_t max_depth,
                        double min_share, char *err, size_t errlen)
{
    struct out_file x;
    if (min_share < 0)
        min_share = folded_bounded_share(path, s, max_depth);
    if (out_file_create(&x, path, 0666, err, errlen) != 0)
        return -1;
    export_folded_fwrite(x.f, s, max_depth, min_share);
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
