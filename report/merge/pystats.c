#include "alloc.h"
#include "pystats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"

static const struct {
    const char *name;
    enum pystats_sort key;
} pystats_sort_names[] = {
    {"ncalls", PYSTATS_SORT_NCALLS},     {"calls", PYSTATS_SORT_NCALLS},
    {"tottime", PYSTATS_SORT_TOTTIME},   {"time", PYSTATS_SORT_TOTTIME},
    {"cumtime", PYSTATS_SORT_CUMTIME},   {"cumulative", PYSTATS_SORT_CUMTIME},
    {"percall", PYSTATS_SORT_PERCALL},   {"name", PYSTATS_SORT_NAME},
    {"filename", PYSTATS_SORT_FILENAME}, {"line", PYSTATS_SORT_LINE},
};

int pystats_parse_sort(const char *s, enum pystats_sort *out)
{
    for (size_t i = 0; i < sizeof pystats_sort_names / sizeof *pystats_sort_names; i++) {
        if (!strcmp(s, pystats_sort_names[i].name)) {
            *out = pystats_sort_names[i].key;
            return 0;
        }
    }
    return -1;
}

const char *pystats_sort_title(enum pystats_sort key)
{
    static const char *const titles[] = {
        [PYSTATS_SORT_NCALLS] = "call count",
        [PYSTATS_SORT_TOTTIME] = "internal time",
        [PYSTATS_SORT_CUMTIME] = "cumulative time",
        [PYSTATS_SORT_PERCALL] = "internal time per call",
        [PYSTATS_SORT_NAME] = "function name",
        [PYSTATS_SORT_FILENAME] = "file name",
        [PYSTATS_SORT_LINE] = "line number",
    };
    return titles[key];
}

const char *pystats_sort_name(enum pystats_sort key)
{
    static const char *const names[] = {
        [PYSTATS_SORT_NCALLS] = "ncalls",   [PYSTATS_SORT_TOTTIME] = "tottime",
        [PYSTATS_SORT_CUMTIME] = "cumtime", [PYSTATS_SORT_PERCALL] = "percall",
        [PYSTATS_SORT_NAME] = "name",       [PYSTATS_SORT_FILENAME] = "filename",
        [PYSTATS_SORT_LINE] = "line",
    };
    return names[key];
}

static void *pystats_alloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        report_oom();
    return p;
}

static uint64_t *pystats_slot(struct u64map *m, uint64_t key)
{
    uint64_t *slot = u64map_slot(m, key);
    if (!slot)
        report_oom();
    return slot;
}

void pystats_init(struct pystats *s)
{
    memset(s, 0, sizeof *s);
    u64map_init(&s->index);
    u64map_init(&s->edges);
}

void pystats_free(struct pystats *s)
{
    for (size_t i = 0; i < s->nfuncs; i++) {
        struct pystats_func *f = &s->funcs[i];
        free(f->file);
        free(f->name);
        free(f->qualname);
        free(f->module);
        free(f->callers);
    }
    free(s->funcs);
    free(s->order);
    u64map_free(&s->index);
    u64map_free(&s->edges);
    memset(s, 0, sizeof *s);
}

static uint64_t pystats_hash(const char *file, uint32_t line, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (const char *c = file; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
    h = (h ^ 0xff) * 0x100000001b3ULL; /* a separator no UTF-8 text holds */
    for (int i = 0; i < 4; i++)
        h = (h ^ ((line >> (8 * i)) & 0xff)) * 0x100000001b3ULL;
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 0x100000001b3ULL;
    return h;
}

/* The index of the key (file, line, name) in s->funcs, added (with qualname, module and
 * kind) when new. */
/* Python's import machinery: importlib, zipimport, builtins.__import__ and _imp's
 * functions (a builtin's name is cProfile's: "<built-in method builtins.__import__>"). */
static int pystats_importer(const char *file, const char *name, uint16_t kind)
{
    if (!strncmp(file, "<frozen importlib.", 18) || !strcmp(file, "<frozen zipimport>"))
        return 1;
    return kind == PROF_PY_FUNC_C && (!strncmp(name, "<built-in method _imp.", 22) ||
                                      !strcmp(name, "<built-in method builtins.__import__>"));
}

static size_t pystats_intern_key(struct pystats *s, const char *file, uint32_t line,
                                 const char *name, const char *qualname, const char *module,
                                 uint16_t kind)
{
    /* Open addressing over the hash: a collision of two keys moves to the next value. */
    for (uint64_t h = pystats_hash(file, line, name);; h++) {
        uint64_t *slot = pystats_slot(&s->index, h);
        if (*slot) {
            const struct pystats_func *f = &s->funcs[*slot - 1];
            if (f->line == line && !strcmp(f->name, name) && !strcmp(f->file, file))
                return *slot - 1;
            continue;
        }
        s->funcs = report_grow(s->funcs, &s->cap_funcs, s->nfuncs + 1, sizeof *s->funcs);
        struct pystats_func *f = &s->funcs[s->nfuncs];
        memset(f, 0, sizeof *f);
        f->file = report_strdup(file);
        f->name = report_strdup(name);
        f->qualname = qualname ? report_strdup(qualname) : NULL;
        f->module = module ? report_strdup(module) : NULL;
        f->line = line;
        f->kind = kind;
        f->importer = (uint8_t)pystats_importer(file, name, kind);
        *slot = ++s->nfuncs;
        return s->nfuncs - 1;
    }
}

/* The index of a key in s->funcs, added when new. */
static size_t pystats_intern(struct pystats *s, const struct model_py_func *mf, uint32_t func_id)
{
    char unknown[48];
    const char *file, *name;
    uint32_t line;
    uint16_t kind;
    if (mf) {
        kind = mf->kind;
        name = mf->name ? mf->name : "?";
        if (kind == PROF_PY_FUNC_C) { /* cProfile's key for builtins, whatever was written */
            file = "~";
            line = 0;
        } else {
            file = mf->file ? mf->file : "?";
            line = mf->line;
        }
    } else { /* no PY_FUNC record named it */
        snprintf(unknown, sizeof unknown, "<unknown function #%u>", func_id);
        kind = PROF_PY_FUNC_C;
        file = "~";
        line = 0;
        name = unknown;
    }
    return pystats_intern_key(s, file, line, name, mf ? mf->qualname : NULL, mf ? mf->module : NULL,
                              kind);
}

static struct pystats_caller *pystats_edge(struct pystats *s, size_t caller, size_t callee)
{
    uint64_t *slot = pystats_slot(&s->edges, (uint64_t)caller << 32 | callee);
    struct pystats_func *f = &s->funcs[callee];
    if (!*slot) {
        f->callers = report_grow(f->callers, &f->cap_callers, f->ncallers + 1, sizeof *f->callers);
        f->callers[f->ncallers] = (struct pystats_caller){.caller = caller};
        *slot = ++f->ncallers;
    }
    return &f->callers[*slot - 1];
}

size_t pystats_merge_func(struct pystats *s, const struct pystats_func *f)
{
    size_t i = pystats_intern_key(s, f->file, f->line, f->name, f->qualname, f->module, f->kind);
    struct pystats_func *d = &s->funcs[i];
    d->ncalls += f->ncalls;
    d->pcalls += f->pcalls;
    d->tottime_ns += f->tottime_ns;
    d->cumtime_ns += f->cumtime_ns;
    d->api_calls += f->api_calls;
    d->api_ns += f->api_ns;
    d->gpu_kernels += f->gpu_kernels;
    d->gpu_ns += f->gpu_ns;
    d->outside_imports |= f->outside_imports;
    return i;
}

void pystats_merge_caller(struct pystats *s, size_t callee, const struct pystats_caller *e)
{
    struct pystats_caller *d = pystats_edge(s, e->caller, callee);
    d->nc += e->nc;
    d->cc += e->cc;
    d->tt_ns += e->tt_ns;
    d->ct_ns += e->ct_ns;
}

/* The counts the tables take of node i: the whole process's (row NULL), or a part's
 * (row[i]: its window row + 1; 0: it did not run in the part). */
struct pystats_counts {
    uint64_t calls, total_ns, self_ns, api_calls, api_ns, gpu_kernels, gpu_ns;
};

static inline struct pystats_counts pystats_counts_of(const struct model_process *p,
                                                      const uint32_t *row, size_t i)
{
    if (!row) {
        const struct model_py_node *n = &p->py.nodes[i];
        return (struct pystats_counts){n->calls,  n->total_ns,    n->self_ns, n->api_calls,
                                       n->api_ns, n->gpu_kernels, n->gpu_ns};
    }
    if (!row[i])
        return (struct pystats_counts){0};
    const struct model_py_window_row *r = &p->py.window_rows[row[i] - 1];
    return (struct pystats_counts){r->calls,  r->total_ns,    r->self_ns, r->api_calls,
                                   r->api_ns, r->gpu_kernels, r->gpu_ns};
}

/* Whether node i of p is in the forest: defined, of the thread asked, and (counts of a
 * part) run in the part; a node that ran in it has every caller running in it too. */
static inline int pystats_node_in(const struct model_process *p, const uint32_t *row, size_t i,
                                  int64_t tid)
{
    const struct model_py_node *n = &p->py.nodes[i];
    if (!n->defined || (tid >= 0 && n->tid != (uint32_t)tid))
        return 0;
    if (!row)
        return 1;
    struct pystats_counts c = pystats_counts_of(p, row, i);
    return c.calls || c.total_ns || c.api_calls;
}

static void pystats_forest_of(struct pystats_forest *f, const struct model_process *p,
                              const uint32_t *row, int64_t tid)
{
    const struct model_python *py = &p->py;
    size_t n = py->nnodes;
    f->n = n;
    f->first_child = pystats_alloc(n, sizeof *f->first_child);
    f->next_sibling = pystats_alloc(n, sizeof *f->next_sibling);
    f->roots = pystats_alloc(n, sizeof *f->roots);
    f->nroots = 0;
    size_t *last = pystats_alloc(n, sizeof *last);
    for (size_t i = 0; i < n; i++)
        f->first_child[i] = f->next_sibling[i] = last[i] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        const struct model_py_node *node = &py->nodes[i];
        if (!pystats_node_in(p, row, i, tid))
            continue;
        uint64_t pv = node->parent ? idmap_get(&py->node_index, node->parent) : 0;
        size_t parent = pv ? (size_t)pv - 1 : SIZE_MAX;
        if (parent != SIZE_MAX && (!pystats_node_in(p, row, parent, -1) ||
                                   (tid != -1 && py->nodes[parent].tid != node->tid)))
            parent = SIZE_MAX;
        if (parent == SIZE_MAX) {
            f->roots[f->nroots++] = i;
        } else {
            if (last[parent] == SIZE_MAX)
                f->first_child[parent] = i;
            else
                f->next_sibling[last[parent]] = i;
            last[parent] = i;
        }
    }
    free(last);
    /* Nodes on a parent cycle (a damaged file) are reached from no root: left out. */
}

void pystats_forest_build(struct pystats_forest *f, const struct model_process *p, int64_t tid)
{
    pystats_forest_of(f, p, NULL, tid);
}

void pystats_forest_free(struct pystats_forest *f)
{
    free(f->first_child);
    free(f->next_sibling);
    free(f->roots);
    memset(f, 0, sizeof *f);
}

/* What the walk keeps per node of the forest. */
struct pystats_visit {
    size_t func;      /* index in s->funcs */
    size_t parent;    /* node index, SIZE_MAX at a root */
    size_t same_func; /* the innermost node of its function active above it; SIZE_MAX: none */
    int recursive;    /* the node's function is active above it */
    int pair_active;  /* the parent -> node pair of functions is active above it */
    uint64_t sub_api_calls, sub_api_ns;
};

/* Whether the caller -> callee pair of node i is active above it: some node of its
 * function active above it (they are chained) called by the function of its caller. */
static int pystats_pair_active(const struct pystats_visit *v, size_t i)
{
    size_t caller = v[v[i].parent].func;
    for (size_t a = v[i].same_func; a != SIZE_MAX; a = v[a].same_func)
        if (v[a].parent != SIZE_MAX && v[v[a].parent].func == caller)
            return 1;
    return 0;
}

void pystats_add(struct pystats *s, const struct model_process *p, int64_t tid, int part)
{
    const struct model_python *py = &p->py;
    if (!py->nnodes)
        return;
    /* A part's counts: the nodes that ran in it, the others 0 (not in the forest). */
    uint32_t *row = NULL;
    if (part && py->window != MODEL_WINDOW_ALL) {
        row = pystats_alloc(py->nnodes, sizeof *row);
        for (size_t i = 0; i < py->nwindow_rows; i++)
            row[py->window_rows[i].index] = (uint32_t)i + 1;
    }
    struct pystats_forest forest;
    pystats_forest_of(&forest, p, row, tid);
    struct pystats_visit *v = pystats_alloc(py->nnodes, sizeof *v);
    size_t *gfunc = pystats_alloc(py->nfuncs + 1, sizeof *gfunc); /* process func -> s->funcs */
    for (size_t i = 0; i <= py->nfuncs; i++)
        gfunc[i] = SIZE_MAX;
    for (size_t i = 0; i < py->nnodes; i++) {
        v[i].parent = SIZE_MAX;
        v[i].func = SIZE_MAX;
        if (!pystats_node_in(p, row, i, tid))
            continue; /* not in the forest: its function must not make a row */
        uint64_t fv = idmap_get(&py->func_index, py->nodes[i].func);
        size_t local = fv ? (size_t)fv - 1 : py->nfuncs; /* nfuncs: the unknown one */
        if (!fv || gfunc[local] == SIZE_MAX)
            gfunc[local] = pystats_intern(s, fv ? &py->funcs[local] : NULL, py->nodes[i].func);
        v[i].func = gfunc[local];
    }
    free(gfunc);

    /* Depth-first, with an explicit stack: Python recursion runs thousands deep. active:
     * per function, its innermost node on the path from the root to the current node. */
    size_t *active = pystats_alloc(s->nfuncs, sizeof *active);
    for (size_t f = 0; f < s->nfuncs; f++)
        active[f] = SIZE_MAX;
    size_t cap = 64, top = 0, importing = 0;           /* importer calls on the path */
    size_t *stack = pystats_alloc(cap, sizeof *stack); /* node * 2 + (1: leaving) */
    stack = report_grow(stack, &cap, forest.nroots + 1, sizeof *stack);
    for (size_t r = forest.nroots; r-- > 0;)
        stack[top++] = forest.roots[r] * 2;
    while (top) {
        size_t e = stack[--top], i = e / 2;
        struct pystats_visit *n = &v[i];
        struct pystats_counts node = pystats_counts_of(p, row, i);
        if (!(e & 1)) { /* entering */
            n->same_func = active[n->func];
            n->recursive = n->same_func != SIZE_MAX;
            /* (a pair is active only where its callee's function is) */
            n->pair_active = n->recursive && n->parent != SIZE_MAX && pystats_pair_active(v, i);
            active[n->func] = i;
            importing += s->funcs[n->func].importer;
            n->sub_api_calls = node.api_calls;
            n->sub_api_ns = node.api_ns;
            stack = report_grow(stack, &cap, top + 1, sizeof *stack);
            stack[top++] = i * 2 + 1;
            /* Children pushed in reverse so that they are entered in order. */
            size_t nchild = 0;
            for (size_t c = forest.first_child[i]; c != SIZE_MAX; c = forest.next_sibling[c])
                nchild++;
            stack = report_grow(stack, &cap, top + nchild, sizeof *stack);
            size_t k = top + nchild;
            for (size_t c = forest.first_child[i]; c != SIZE_MAX; c = forest.next_sibling[c]) {
                v[c].parent = i;
                stack[--k] = c * 2;
            }
            top += nchild;
            continue;
        }
        /* leaving: the subtree's API sums are complete */
        active[n->func] = n->same_func;
        struct pystats_func *f = &s->funcs[n->func];
        if (f->importer)
            importing--;
        else if (!importing)
            f->outside_imports = 1;
        f->ncalls += node.calls;
        f->tottime_ns += node.self_ns;
        f->gpu_kernels += node.gpu_kernels;
        f->gpu_ns += node.gpu_ns;
        if (!n->recursive) {
            f->pcalls += node.calls;
            f->cumtime_ns += node.total_ns;
            f->api_calls += n->sub_api_calls;
            f->api_ns += n->sub_api_ns;
        }
        if (n->parent != SIZE_MAX) {
            struct pystats_caller *c = pystats_edge(s, v[n->parent].func, n->func);
            c->nc += node.calls;
            c->tt_ns += node.self_ns;
            if (!n->pair_active) {
                c->cc += node.calls;
                c->ct_ns += node.total_ns;
            }
            v[n->parent].sub_api_calls += n->sub_api_calls;
            v[n->parent].sub_api_ns += n->sub_api_ns;
        }
    }
    free(stack);
    free(active);
    free(v);
    free(row);
    pystats_forest_free(&forest);
}

static enum pystats_sort pystats_sort_key;
static const struct pystats *pystats_sorting;

static int pystats_cmp_u64(uint64_t a, uint64_t b)
{
    return a > b ? -1 : a < b; /* descending */
}

static int pystats_cmp(const void *a, const void *b)
{
    const struct pystats_func *x = &pystats_sorting->funcs[*(const size_t *)a];
    const struct pystats_func *y = &pystats_sorting->funcs[*(const size_t *)b];
    int c = 0;
    switch (pystats_sort_key) {
    case PYSTATS_SORT_NCALLS:
        c = pystats_cmp_u64(x->ncalls, y->ncalls);
        break;
    case PYSTATS_SORT_TOTTIME:
        c = pystats_cmp_u64(x->tottime_ns, y->tottime_ns);
        break;
    case PYSTATS_SORT_CUMTIME:
        break; /* the first tie-breaker */
    case PYSTATS_SORT_PERCALL: {
        double px = x->ncalls ? (double)x->tottime_ns / (double)x->ncalls : 0;
        double py = y->ncalls ? (double)y->tottime_ns / (double)y->ncalls : 0;
        c = px > py ? -1 : px < py;
        break;
    }
    case PYSTATS_SORT_NAME:
        c = strcmp(x->name, y->name);
        break;
    case PYSTATS_SORT_FILENAME:
        c = strcmp(x->file, y->file);
        break;
    case PYSTATS_SORT_LINE:
        c = x->line < y->line ? -1 : x->line > y->line;
        break;
    }
    if (!c)
        c = pystats_cmp_u64(x->cumtime_ns, y->cumtime_ns);
    if (!c)
        c = strcmp(x->file, y->file);
    if (!c)
        c = x->line < y->line ? -1 : x->line > y->line;
    if (!c)
        c = strcmp(x->name, y->name);
    return c;
}

void pystats_finish(struct pystats *s, enum pystats_sort key)
{
    s->total_calls = s->total_pcalls = s->total_tt_ns = 0;
    s->any_api = 0;
    s->any_gpu = 0;
    free(s->order);
    s->order = pystats_alloc(s->nfuncs, sizeof *s->order);
    for (size_t i = 0; i < s->nfuncs; i++) {
        const struct pystats_func *f = &s->funcs[i];
        s->order[i] = i;
        s->total_calls += f->ncalls;
        s->total_pcalls += f->pcalls;
        s->total_tt_ns += f->tottime_ns;
        s->any_api |= f->api_calls > 0;
        s->any_gpu |= f->gpu_kernels > 0;
    }
    /* qsort has no context argument in C11; the reporter is single-threaded. */
    pystats_sort_key = key;
    pystats_sorting = s;
    qsort(s->order, s->nfuncs, sizeof *s->order, pystats_cmp);
    pystats_sorting = NULL;
}

void pystats_func_label(const struct pystats_func *f, int qualified, char *buf, size_t len)
{
    if (f->kind == PROF_PY_FUNC_C || (!strcmp(f->file, "~") && f->line == 0)) {
        size_t n = strlen(f->name);
        int full;
        if (n >= 2 && f->name[0] == '<' && f->name[n - 1] == '>')
            full = snprintf(buf, len, "{%.*s}", (int)(n - 2), f->name + 1);
        else
            full = snprintf(buf, len, "%s", f->name);
        format_mark_cut(buf, len, (size_t)full);
        return;
    }
    const char *name = qualified && f->qualname && *f->qualname ? f->qualname : f->name;
    int full = snprintf(buf, len, "%s:%u(%s)", f->file, f->line, name);
    format_mark_cut(buf, len, (size_t)full);
}

static int pystats_thread_cmp(const void *a, const void *b)
{
    const struct pystats_thread *x = a, *y = b;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

size_t pystats_threads(const struct model_process *p, struct pystats_thread **out)
{
    const struct model_python *py = &p->py;
    if (p->summary_file) {
        struct pystats_thread *t = pystats_alloc(py->nthread_totals, sizeof *t);
        for (size_t i = 0; i < py->nthread_totals; i++)
            t[i] = (struct pystats_thread){py->thread_totals[i].tid, py->thread_totals[i].functions,
                                           py->thread_totals[i].calls};
        *out = t;
        return py->nthread_totals;
    }
    /* Each node's thread (tix), then the nodes thread by thread, so that one mark per
     * function (the thread index + 1 that counted it last) tells whether the thread being
     * counted called it already; ids without a PY_FUNC record by tid << 32 | func_id. */
    struct u64map seen, index; /* tid -> index + 1 */
    u64map_init(&seen);
    u64map_init(&index);
    struct pystats_thread *t = NULL;
    uint32_t *tix = pystats_alloc(py->nnodes, sizeof *tix);
    size_t n = 0, cap = 0, last = 0; /* last: the thread of the node before */
    for (size_t i = 0; i < py->nnodes; i++) {
        const struct model_py_node *node = &py->nodes[i];
        if (!node->defined)
            continue;
        if (!n || t[last].tid != node->tid) { /* (a thread's nodes mostly come together) */
            uint64_t *slot = pystats_slot(&index, node->tid);
            if (!*slot) {
                t = report_grow(t, &cap, n + 1, sizeof *t);
                t[n] = (struct pystats_thread){.tid = node->tid};
                *slot = ++n;
            }
            last = *slot - 1;
        }
        tix[i] = (uint32_t)last + 1;
        t[last].calls += node->calls;
    }
    size_t *from = pystats_alloc(n + 1, sizeof *from); /* each thread's first in order */
    uint32_t *order = pystats_alloc(py->nnodes, sizeof *order);
    uint32_t *mark = pystats_alloc(py->nfuncs, sizeof *mark);
    for (size_t i = 0; i < py->nnodes; i++)
        if (tix[i])
            from[tix[i]]++;
    for (size_t k = 1; k <= n; k++)
        from[k] += from[k - 1]; /* from[k]: the end of thread k - 1's nodes, then its start */
    size_t defined = from[n];
    for (size_t i = py->nnodes; i-- > 0;)
        if (tix[i])
            order[--from[tix[i]]] = (uint32_t)i;
    for (size_t k = 0; k < defined; k++) {
        const struct model_py_node *node = &py->nodes[order[k]];
        uint32_t th = tix[order[k]];
        uint64_t fv = idmap_get(&py->func_index, node->func);
        if (fv ? mark[fv - 1] == th : *pystats_slot(&seen, (uint64_t)node->tid << 32 | node->func))
            continue;
        if (fv)
            mark[fv - 1] = th;
        else
            *pystats_slot(&seen, (uint64_t)node->tid << 32 | node->func) = 1;
        t[th - 1].functions++;
    }
    free(tix);
    free(from);
    free(order);
    free(mark);
    u64map_free(&seen);
    u64map_free(&index);
    if (n)
        qsort(t, n, sizeof *t, pystats_thread_cmp);
    *out = t;
    return n;
}

const char *pystats_thread_name(const struct model_process *p, uint32_t tid)
{
    const uint64_t *i = u64map_find(&p->thread_index, tid);
    return i ? p->threads[*i - 1].name : NULL;
}
