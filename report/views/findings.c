/* findings: each rule reads the summary and its processes' models, and adds a finding only
 * when the records it needs are there and the measure crosses its threshold (findings.h). */
#include "findings.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "model.h"
#include "tables.h"
#include "sort_keys.h"

const double findings_threshold[FINDINGS_THRESHOLD_COUNT] = {
#define FINDINGS_VALUE(name, value, meaning) value,
    FINDINGS_THRESHOLDS(FINDINGS_VALUE)
#undef FINDINGS_VALUE
};

#define T(name) findings_threshold[FINDINGS_##name]

struct finding *findings_add(struct findings *f, const char *kind, double value)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        struct finding *n = realloc(f->items, f->cap * sizeof *n);
        if (!n) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        f->items = n;
    }
    struct finding *x = &f->items[f->n++];
    memset(x, 0, sizeof *x);
    x->kind = kind;
    x->value = value;
    x->rank = -1;
    return x;
}

void findings_set(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* "Qual.name (file:line)" of a Python node of p, or "" when unknown. */
static void findings_py_place(const struct model_process *p, uint32_t node_id, char *buf,
                              size_t len)
{
    buf[0] = 0;
    const struct model_py_node *n = model_python_node(p, node_id);
    if (n && model_python_func(p, n->func))
        model_python_place(p, n->func, buf, len);
}

/* "rank 2 (pid 17)", or "pid 17" without a rank; in_parens: "rank 2, pid 17" (a title's
 * "(...)" holds it). */
const char *findings_proc_name(const struct model_process *p, int in_parens, char *buf, size_t len)
{
    if (p->rank >= 0)
        snprintf(buf, len, in_parens ? "rank %lld, pid %lld" : "rank %lld (pid %lld)",
                 (long long)p->rank, (long long)p->pid);
    else
        snprintf(buf, len, "pid %lld", (long long)p->pid);
    return buf;
}

static const char *findings_proc_label(const struct model_process *p, char *buf, size_t len)
{
    return findings_proc_name(p, 0, buf, len);
}

static const char *findings_proc_in_parens(const struct model_process *p, char *buf, size_t len)
{
    return findings_proc_name(p, 1, buf, len);
}

/* One device of one process idle at least GPU_IDLE_SHARE of its wall time. */
struct findings_idle {
    const struct model_process *p;
    const struct model_gpu_busy *d;
    const struct model_gpu_idle *g;
    double idle;
};

static int findings_idle_cmp(const void *a, const void *b)
{
    const struct findings_idle *x = a, *y = b;
    return x->idle > y->idle ? -1 : x->idle < y->idle;
}

static void findings_idle_one(struct findings *f, const struct findings_idle *c)
{
    const struct model_process *p = c->p;
    char who[96], busy[32], wall[32], api[32], longest[32];
    format_ns((double)c->d->busy_ns, busy, sizeof busy);
    format_ns((double)p->wall_ns, wall, sizeof wall);
    format_ns((double)c->g->api_ns, api, sizeof api);
    format_ns((double)c->g->longest_ns, longest, sizeof longest);
    struct finding *x = findings_add(f, "gpu_idle", c->idle);
    findings_set(x->title, sizeof x->title, "GPU %u idle %.1f %% of the time (%s)", c->d->device,
                 100.0 * c->idle, findings_proc_in_parens(p, who, sizeof who));
    findings_set(x->evidence, sizeof x->evidence,
                 "device %u busy %s of %s wall time, idle in %" PRIu64
                 " gaps (the longest %s); during them the CPU spent %s in %" PRIu64
                 " CUDA calls and the rest in its own work (the Python and ops tables)",
                 c->d->device, busy, wall, c->g->ngaps, longest, api, c->g->api_calls);
    char place[256], ns[32];
    findings_py_place(p, c->g->top_node, place, sizeof place);
    format_ns((double)c->g->top_ns, ns, sizeof ns);
    if (place[0])
        findings_set(x->where, sizeof x->where, "%s: %s of CUDA calls in the gaps", place, ns);
}

/* GPU idle: per process and device, the device's busy time (the union of its kernels,
 * copies and sets) against the process's wall time. A few are listed each; of many (a
 * job of many ranks) the idlest few, then one finding for the rest. */
#define FINDINGS_IDLE_LISTED 4
static void findings_gpu_idle(struct findings *f, const struct summary *s)
{
    struct findings_idle *c = NULL;
    size_t n = 0, cap = 0;
    const struct model_process *stepped =
        model_torch_window_asked() != MODEL_WINDOW_ALL ? findings_steps_process_of(s) : NULL;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (!p->gpu.facts.nidle || !p->wall_ns)
            continue;
        if (p == stepped)
            continue; /* the steps' findings (step_gpu_idle) say it of its steady steps */
        for (size_t b = 0; b < p->gpu.nbusy; b++) {
            const struct model_gpu_busy *d = &p->gpu.busy[b];
            if (d->stream != -1 || d->busy_ns > p->wall_ns)
                continue;
            double idle = 1.0 - (double)d->busy_ns / (double)p->wall_ns;
            if (idle < T(GPU_IDLE_SHARE))
                continue;
            const struct model_gpu_idle *g = NULL;
            for (size_t k = 0; k < p->gpu.facts.nidle && !g; k++)
                if (p->gpu.facts.idle[k].device == d->device)
                    g = &p->gpu.facts.idle[k];
            if (!g)
                continue;
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                struct findings_idle *m = realloc(c, cap * sizeof *c);
                if (!m) {
                    free(c);
                    return;
                }
                c = m;
            }
            c[n++] = (struct findings_idle){p, d, g, idle};
        }
    }
    if (n > FINDINGS_IDLE_LISTED) /* the idlest first, the rest summed up after them */
        qsort(c, n, sizeof *c, findings_idle_cmp);
    size_t listed = n > FINDINGS_IDLE_LISTED ? FINDINGS_IDLE_LISTED - 1 : n;
    for (size_t i = 0; i < listed; i++)
        findings_idle_one(f, &c[i]);
    if (listed < n) {
        size_t rest = n - listed;
        double most = c[listed].idle, least = c[n - 1].idle, median = c[listed + rest / 2].idle;
        struct finding *x = findings_add(f, "gpu_idle", median);
        findings_set(x->title, sizeof x->title,
                     "GPUs idle %.1f %% of the time (median) on %zu more devices of the processes",
                     100.0 * median, rest);
        findings_set(x->evidence, sizeof x->evidence,
                     "%zu more devices idle at least %.0f %% of their process's wall time: from "
                     "%.1f %% to %.1f %%; each process's own device rows: --gpu, --rank N",
                     rest, 100.0 * T(GPU_IDLE_SHARE), 100.0 * least, 100.0 * most);
    }
    free(c);
}

/* A tensor method of torch's C type as cProfile names it, "<method 'item' of
 * 'torch._C.TensorBase' objects>" (or a bare name). */
static int findings_is_method(const char *name, const char *method)
{
    char want[64];
    snprintf(want, sizeof want, "<method '%s' of '", method);
    return name && (!strcmp(name, method) || !strncmp(name, want, strlen(want)));
}

/* Host-device syncs: synchronizing calls (category SYNC, or CUPTI's *Synchronize*) and
 * blocking copies, the Python line that made the most of their time, and .item()/.cpu()
 * calls. */
/* Whether p made a synchronizing call or a blocking copy (its wrappers' or CUPTI's). */
static int findings_proc_syncs(const struct model_process *p)
{
    for (size_t i = 0; i < p->napis; i++) {
        const struct model_api *a = p->apis[i];
        if (a && a->calls &&
            (a->category == PROF_CAT_SYNC ||
             (a->category == PROF_CAT_COPY && model_gpu_is_blocking_copy(a->name))))
            return 1;
    }
    for (size_t i = 0; i < p->gpu.napis; i++) {
        const struct model_gpu_api *a = &p->gpu.apis[i];
        if (a->calls && a->name &&
            (model_gpu_is_sync_name(a->name) || model_gpu_is_blocking_copy(a->name)))
            return 1;
    }
    return p->gpu.facts.sync_ns > 0;
}

static void findings_sync(struct findings *f, const struct summary *s)
{
    /* A rank the others wait for because of its syncs is named with them already. */
    const struct finding *waiting = findings_find(f, "waiting_rank");
    if (waiting && waiting->why && !strcmp(waiting->why, "host syncs"))
        return;
    uint64_t wall = 0, sync_ns = 0, sync_calls = 0, copy_ns = 0, copy_calls = 0;
    size_t parts = 0, syncing = 0; /* processes whose API rows cover a part (tables_gpu_window) */
    const struct model_process *only = NULL;
    /* The time of the processes that synchronize at all, each over what its rows cover:
     * the others' time would dilute the share. */
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_gpu_part *w = &s->procs[i]->gpu_part;
        if (!findings_proc_syncs(s->procs[i]))
            continue;
        syncing++;
        only = s->procs[i];
        parts += w->window != MODEL_WINDOW_ALL;
        wall += w->window != MODEL_WINDOW_ALL ? w->window_ns : s->procs[i]->wall_ns;
    }
    for (size_t i = 0; i < s->napi; i++)
        if (s->api[i].category == PROF_CAT_SYNC) {
            sync_ns += s->api[i].total_ns;
            sync_calls += s->api[i].calls;
        } else if (s->api[i].category == PROF_CAT_COPY &&
                   model_gpu_is_blocking_copy(s->api[i].name)) {
            copy_ns += s->api[i].total_ns;
            copy_calls += s->api[i].calls;
        }
    if (!sync_calls && !copy_calls) /* no wrapper saw them: CUPTI's calls */
        for (size_t i = 0; i < s->gpu.ncupti; i++) {
            const struct summary_cupti_row *r = &s->gpu.cupti[i];
            if (model_gpu_is_sync_name(r->name)) {
                sync_ns += r->total_ns;
                sync_calls += r->calls;
            } else if (model_gpu_is_blocking_copy(r->name)) {
                copy_ns += r->total_ns;
                copy_calls += r->calls;
            }
        }
    if ((!sync_calls && !copy_calls) || !wall)
        return;
    double share = (double)(sync_ns + copy_ns) / (double)wall;
    struct finding *steps = NULL; /* the steps' (step_sync) says it: where, .item() added */
    for (size_t i = 0; i < f->n && !steps; i++)
        steps = !strcmp(f->items[i].kind, "step_sync") ? &f->items[i] : NULL;
    if (share < T(SYNC_SHARE) && !steps)
        return;
    /* The Python node under which CUPTI saw the most synchronizing time (the first
     * process's on a tie). */
    const struct model_process *best_p = NULL;
    uint32_t best_node = 0;
    uint64_t best_ns = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->gpu.facts.sync_ns > best_ns) {
            best_p = s->procs[i];
            best_node = best_p->gpu.facts.sync_node;
            best_ns = best_p->gpu.facts.sync_ns;
        }
    char total[32], wall_s[32], syncs[32], copies[32];
    format_ns((double)(sync_ns + copy_ns), total, sizeof total);
    format_ns((double)sync_ns, syncs, sizeof syncs);
    format_ns((double)copy_ns, copies, sizeof copies);
    format_ns((double)wall, wall_s, sizeof wall_s);
    char extra[160] = "";
    uint64_t item = 0, cpu = 0;
    for (size_t i = 0; i < s->py.nfuncs; i++) {
        const struct pystats_func *fn = &s->py.funcs[i];
        if (fn->kind != PROF_PY_FUNC_C || !fn->name)
            continue;
        if (findings_is_method(fn->name, "item"))
            item += fn->ncalls;
        else if (findings_is_method(fn->name, "cpu"))
            cpu += fn->ncalls;
    }
    char note[768];
    const char *part = tables_python_window(s, note, sizeof note); /* what s->py covers */
    int whole = !part || !strcmp(part, model_window_name(MODEL_WINDOW_ALL));
    if (item || cpu)
        snprintf(extra, sizeof extra,
                 "; Python called .item() %" PRIu64 " and .cpu() %" PRIu64 " times%s%s", item, cpu,
                 whole ? "" : " in ", whole ? "" : part);
    char where[400] = "";
    if (best_p) {
        char place[256], ns[32];
        findings_py_place(best_p, best_node, place, sizeof place);
        format_ns((double)best_ns, ns, sizeof ns);
        if (place[0])
            snprintf(where, sizeof where, "%s: %s of %s", place, ns,
                     parts ? "the whole run's synchronizing time" : "them");
    }
    if (steps) { /* one finding: the steps' figures, with where and what Python called */
        if (extra[0] && strlen(steps->evidence) + strlen(extra) < sizeof steps->evidence)
            strcat(steps->evidence, extra);
        if (!steps->where[0])
            findings_set(steps->where, sizeof steps->where, "%s", where);
        return;
    }
    struct finding *x = findings_add(f, "sync", share);
    char who[96] = "";
    if (syncing == 1 && s->nprocs > 1) { /* the share is that process's */
        char label[80];
        snprintf(who, sizeof who, " (%s)", findings_proc_in_parens(only, label, sizeof label));
    }
    findings_set(x->title, sizeof x->title, "host-device syncs take %.1f %% of the time%s",
                 100.0 * share, who);
    findings_set(x->evidence, sizeof x->evidence,
                 "%" PRIu64 " synchronizing calls (cudaDeviceSynchronize, stream and event "
                 "syncs: %s) and %" PRIu64 " blocking copies (%s) took %s of %s%s%s",
                 sync_calls, syncs, copy_calls, copies, total, wall_s,
                 parts == syncing ? " in " : " wall time",
                 parts == syncing ? model_window_name(only->gpu_part.window) : "");
    if (extra[0] && strlen(x->evidence) + strlen(extra) < sizeof x->evidence)
        strcat(x->evidence, extra);
    findings_set(x->where, sizeof x->where, "%s", where);
}

/* The median of n values given as value -> count. */
static double findings_median(const struct u64map *counts, uint64_t n)
{
    uint64_t *keys = malloc(counts->count * sizeof *keys);
    if (!keys)
        return 0;
    size_t nk = 0;
    uint64_t k, v;
    for (size_t it = 0; u64map_next(counts, &it, &k, &v);)
        keys[nk++] = k;
    qsort(keys, nk, sizeof *keys, sort_u64_cmp);
    /* the values at ranks lo and hi (from 0): the middle one, or the middle two */
    uint64_t lo = (n - 1) / 2, hi = n / 2, seen = 0;
    double a = 0, b = 0;
    for (size_t i = 0; i < nk; i++) {
        uint64_t c = *u64map_find(counts, keys[i]);
        if (lo >= seen && lo < seen + c)
            a = (double)keys[i];
        if (hi >= seen && hi < seen + c)
            b = (double)keys[i];
        seen += c;
    }
    free(keys);
    return (a + b) / 2.0;
}

/* Launch-bound: many kernels with a small median duration. */
static void findings_small_kernels(struct findings *f, const struct summary *s)
{
    size_t m = 0;
    uint64_t wall = 0;
    struct u64map merged; /* duration (3 significant digits) -> kernels */
    u64map_init(&merged);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        wall += p->wall_ns;
        m += p->gpu.facts.kernels;
        uint64_t k, v;
        for (size_t it = 0; u64map_next(&p->gpu.facts.kernel_durations, &it, &k, &v);) {
            uint64_t *slot = u64map_slot(&merged, k);
            if (!slot) {
                u64map_free(&merged);
                return;
            }
            *slot += v;
        }
    }
    if (m < (size_t)T(SMALL_KERNELS_COUNT) || !merged.count) {
        u64map_free(&merged);
        return;
    }
    double median = findings_median(&merged, m);
    u64map_free(&merged);
    if (median >= T(SMALL_KERNEL_MEDIAN_US) * 1000.0)
        return;
    char med[32];
    format_ns(median, med, sizeof med);
    struct finding *x = findings_add(f, "small_kernels", median);
    findings_set(x->title, sizeof x->title, "many small kernels: launch-bound (median %s)", med);
    findings_set(x->evidence, sizeof x->evidence,
                 "%zu kernels, median duration %s (%.0f kernels per second of wall time); "
                 "fusing them (torch.compile, CUDA graphs) cuts the launch cost",
                 m, med, wall ? (double)m * 1e9 / (double)wall : 0.0);
    if (s->gpu.nkernels) { /* the kernel launched most often */
        const struct summary_gpu_kernel_row *top = &s->gpu.kernels[0];
        for (size_t i = 1; i < s->gpu.nkernels; i++)
            if (s->gpu.kernels[i].calls > top->calls)
                top = &s->gpu.kernels[i];
        char note[512], kname[512];
        int shortened = 0; /* the name is the table's, which says so */
        const char *name = format_kernel_name(top->name, kname, sizeof kname, &shortened);
        const char *part = tables_gpu_window(s, note, sizeof note); /* what the rows cover */
        int whole = !part || !strcmp(part, model_window_name(MODEL_WINDOW_ALL));
        char site[1024] = ""; /* a builtin's has no file (cProfile's "~:0"): its name alone */
        if (top->nsites && strcmp(top->sites[0].file, "~"))
            snprintf(site, sizeof site, ", most from %s (%s:%u)", top->sites[0].qualname,
                     top->sites[0].file, top->sites[0].line);
        else if (top->nsites)
            snprintf(site, sizeof site, ", most from %s", top->sites[0].qualname);
        findings_set(x->where, sizeof x->where, "%s launched %" PRIu64 " times%s%s%s", name,
                     top->calls, whole ? "" : " in ", whole ? "" : part, site);
    }
}

/* Pageable host memory in copies: CUPTI's memory kind 1 (PAGEABLE) on either side. */
static void findings_pageable(struct findings *f, const struct summary *s)
{
    uint64_t bytes = 0, calls = 0, ns = 0;
    for (size_t i = 0; i < s->gpu.ncopies; i++) {
        const struct summary_gpu_copy_row *c = &s->gpu.copies[i];
        if (c->src_kind == 1 || c->dst_kind == 1) {
            bytes += c->bytes;
            calls += c->calls;
            ns += c->total_ns;
        }
    }
    if (!calls || (double)bytes < T(PAGEABLE_BYTES))
        return;
    char b[32], t[32], rate[32];
    format_bytes(bytes, b, sizeof b);
    format_ns((double)ns, t, sizeof t);
    format_gbps(bytes, ns, rate, sizeof rate);
    struct finding *x = findings_add(f, "pageable_copies", (double)bytes);
    findings_set(x->title, sizeof x->title, "copies from pageable host memory: %s", b);
    findings_set(x->evidence, sizeof x->evidence,
                 "%" PRIu64 " copies moved %s to or from pageable memory in %s (%s GB/s); pinned "
                 "memory (pin_memory=True, cudaMallocHost) copies faster and asynchronously",
                 calls, b, t, rate);
}

/* CPU-bound: PyTorch ops' self CPU time against the GPU's kernel time: of the part both
 * tables cover (the steady steps), else of the whole processes (an H200 run's 228.7 x was
 * its whole process's, startup and CUDA set-up in it, beside its steps' 7.7 x). */
static void findings_cpu_ops(struct findings *f, const struct summary *s)
{
    char tnote[512], gnote[512];
    const char *tw = tables_torch_window(s, tnote, sizeof tnote);
    const char *gw = tables_gpu_window(s, gnote, sizeof gnote);
    int part = tw && gw && !strcmp(tw, gw) && !strcmp(tnote, gnote); /* (in every process) */
    uint64_t self_cpu = 0, kernel_ns = part ? s->gpu.kernel_ns : 0;
    for (size_t k = 0; part && k < s->torch.nrows; k++)
        self_cpu += s->torch.rows[k].self_cpu_ns;
    for (size_t i = 0; !part && i < s->nprocs; i++) {
        size_t n;
        const struct model_torch_row *rows = model_torch_whole_rows(&s->procs[i]->torch, &n);
        for (size_t k = 0; k < n; k++)
            self_cpu += rows[k].self_cpu_ns;
        kernel_ns += s->procs[i]->gpu.kernel_ns;
    }
    if (!s->torch.nrows || !kernel_ns || !self_cpu)
        return;
    double ratio = (double)self_cpu / (double)kernel_ns;
    if (ratio < T(CPU_OPS_RATIO))
        return;
    const struct summary_op_row *top = &s->torch.rows[0];
    for (size_t i = 1; i < s->torch.nrows; i++)
        if (s->torch.rows[i].self_cpu_ns > top->self_cpu_ns)
            top = &s->torch.rows[i];
    char cpu[32], gpu[32], tcpu[32];
    format_ns((double)self_cpu, cpu, sizeof cpu);
    format_ns((double)kernel_ns, gpu, sizeof gpu);
    format_ns((double)top->self_cpu_ns, tcpu, sizeof tcpu);
    struct finding *x = findings_add(f, "cpu_ops", ratio);
    findings_set(x->title, sizeof x->title,
                 "CPU ops dominate a GPU job: %.1f x the GPU kernel time", ratio);
    findings_set(x->evidence, sizeof x->evidence,
                 "PyTorch ops' self CPU time %s against %s of GPU kernels%s%s", cpu, gpu,
                 part ? " in " : " (the whole process)", part ? tw : "");
    findings_set(x->where, sizeof x->where, "op %s: %s self CPU in %" PRIu64 " calls%s%s",
                 top->name, tcpu, top->calls, tw ? " in " : "", tw ? tw : "");
}

/* Memory peak near capacity: a CUDA device's peak reserved (else live) tensor bytes against
 * the memory GPU_DEVICE reports. */
static void findings_memory_peak(struct findings *f, const struct summary *s)
{
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t d = 0; d < p->torch.ndevices; d++) {
            const struct model_torch_memory *m = &p->torch.devices[d];
            if (m->dev_type != 1 || m->dev_index < 0)
                continue;
            const struct model_gpu_device *dev = NULL;
            for (size_t g = 0; g < p->gpu.ndevices; g++)
                if (p->gpu.devices[g].device == (uint32_t)m->dev_index)
                    dev = &p->gpu.devices[g];
            if (!dev || !dev->global_memory_bytes)
                continue;
            uint64_t peak = m->reserved_peak > (uint64_t)(m->peak_bytes > 0 ? m->peak_bytes : 0)
                                ? m->reserved_peak
                                : (uint64_t)(m->peak_bytes > 0 ? m->peak_bytes : 0);
            double share = (double)peak / (double)dev->global_memory_bytes;
            if (share < T(MEMORY_PEAK_SHARE))
                continue;
            char who[96], pk[32], cap[32], live[32];
            format_bytes(peak, pk, sizeof pk);
            format_bytes(dev->global_memory_bytes, cap, sizeof cap);
            format_bytes((uint64_t)(m->peak_bytes > 0 ? m->peak_bytes : 0), live, sizeof live);
            struct finding *x = findings_add(f, "memory_peak", share);
            findings_set(x->title, sizeof x->title,
                         "GPU %d memory peak at %.1f %% of capacity (%s)", m->dev_index,
                         100.0 * share, findings_proc_in_parens(p, who, sizeof who));
            findings_set(x->evidence, sizeof x->evidence,
                         "peak %s (live tensors %s, the allocator's reserve included) of %s on %s",
                         pk, live, cap, dev->name ? dev->name : "the device");
            char place[256];
            findings_py_place(p, m->peak_py_node, place, sizeof place);
            if (m->peak_op || place[0])
                findings_set(x->where, sizeof x->where, "at the peak: op %s, %s",
                             m->peak_op ? m->peak_op : "?", place[0] ? place : "no Python line");
        }
    }
}

/* "Qual.name (file:line)" of a Python function of p into buf; "" when unknown. */
static const char *findings_func_place(const struct model_process *p, uint32_t func, char *buf,
                                       size_t len)
{
    buf[0] = 0;
    if (model_python_func(p, func))
        model_python_place(p, func, buf, len);
    return buf;
}

/* Tensor memory that grows step after step (something keeps a tensor of every step): over
 * the steady steps after the first, live bytes grew in at least half the steps, by at
 * least MEMORY_GROWTH_SHARE of the steps' peak and MEMORY_GROWTH_BYTES. The process and
 * device that grew the most, with the allocation site that grew the most there. */
static void findings_memory_growth(struct findings *f, const struct summary *s)
{
    const struct model_process *wp = NULL;
    const struct model_torch_memory_part *w = NULL;
    const struct model_torch_memory *wm = NULL;
    int64_t most = 0;
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t d = 0; d <= p->torch.ndevices; d++) {
            const struct model_torch_memory *m = d ? &p->torch.devices[d - 1] : &p->torch.memory;
            const struct model_torch_memory_part *q = &m->part;
            int64_t grew = model_torch_memory_growth(q);
            /* steps_grown counts the steps after the first: at least 2, and half of them */
            if (!m->any || q->window == MODEL_WINDOW_ALL || q->steps < 3 || q->peak_bytes <= 0 ||
                q->steps_grown < 2 || 2 * q->steps_grown < q->steps - 1 ||
                grew < (int64_t)T(MEMORY_GROWTH_BYTES) ||
                (double)grew < T(MEMORY_GROWTH_SHARE) * (double)q->peak_bytes)
                continue;
            n++;
            if (grew > most) {
                most = grew;
                wp = p;
                w = q;
                wm = m;
            }
        }
    }
    if (!w)
        return;
    char who[96], device[48], per[32], grew[32], a[32], b[32], peak[32], others[64] = "";
    format_bytes((uint64_t)most / (w->steps - 1), per, sizeof per);
    format_bytes((uint64_t)most, grew, sizeof grew);
    format_bytes(w->live_start > 0 ? (uint64_t)w->live_start : 0, a, sizeof a);
    format_bytes(w->live_end > 0 ? (uint64_t)w->live_end : 0, b, sizeof b);
    format_bytes(w->peak_bytes > 0 ? (uint64_t)w->peak_bytes : 0, peak, sizeof peak);
    model_torch_device_name(wm->dev_type, wm->dev_index, device, sizeof device);
    if (n > 1)
        snprintf(others, sizeof others, "; %zu process memories grow so", n);
    /* what grew most was allocated in torch.optim's code (a review's LBFGS loop, whose
     * history grows, read as outputs kept in a list): said, and the rest may be a leak */
    const struct model_py_func *gf = w->grew_bytes > 0 ? model_python_func(wp, w->grew.func) : 0;
    char optim[640] = "";
    if (gf && gf->file && strstr(gf->file, "/torch/optim/") &&
        !strstr(gf->file, "/torch/optim/lr_scheduler.py")) {
        char site[32];
        format_bytes((uint64_t)w->grew_bytes, site, sizeof site);
        snprintf(optim, sizeof optim,
                 "What grew the most, %s of it, was allocated in %s (torch.optim) and kept: the "
                 "optimizer's state grows (LBFGS keeps up to history_size pairs of update "
                 "vectors: a lower history_size caps it; the state an optimizer makes in its "
                 "first step, as Adam's, is not counted here). Growth outside the optimizer's "
                 "code, if any, would be ",
                 site,
                 gf->qualname ? gf->qualname
                 : gf->name   ? gf->name
                              : "its step");
    }
    struct finding *x = findings_add(f, "memory_growth", (double)most / (double)w->peak_bytes);
    findings_set(x->title, sizeof x->title, "tensor memory grows %s per step (%s, %s)", per, device,
                 findings_proc_in_parens(wp, who, sizeof who));
    findings_set(
        x->evidence, sizeof x->evidence,
        "live tensor bytes %s as %s begin, %s at their end: +%s after the first of %" PRIu64
        " steps (%.0f %% of their peak %s), grown in %" PRIu64 " of them%s. %s%s (outputs or "
        "losses kept in a list without .detach() or .item(), a growing cache)",
        a, model_window_name(w->window), b, grew, w->steps,
        100.0 * (double)most / (double)w->peak_bytes, peak, w->steps_grown, others,
        *optim ? optim : "",
        *optim ? "something kept of every step" : "Something keeps a tensor of every step");
    if (w->grew_bytes > 0) {
        char site[64], fn[256], own[256];
        format_bytes((uint64_t)w->grew_bytes, site, sizeof site);
        findings_func_place(wp, w->grew.func, fn, sizeof fn);
        findings_func_place(wp, w->grew.own, own, sizeof own);
        findings_set(x->where, sizeof x->where, "allocated and not freed: %s by op %s, %s%s%s",
                     site, w->grew.op ? w->grew.op : "(none)", fn[0] ? fn : "no Python line",
                     own[0] && w->grew.own != w->grew.func ? " under " : "",
                     own[0] && w->grew.own != w->grew.func ? own : "");
    }
}

/* The profiler's own cost: events it had to drop, and how fast the trace grew. */
static void findings_overhead(struct findings *f, const struct summary *s)
{
    uint64_t lost = 0, records = 0, bytes = 0, wall = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        lost += p->lost > p->end_lost ? p->lost : p->end_lost;
        records += p->records;
        wall += p->wall_ns;
        bytes += p->file_bytes;
    }
    double rate = wall ? (double)bytes * 1e9 / (double)wall : 0.0;
    if (!lost && rate < T(OVERHEAD_BYTES_PER_S))
        return;
    char b[32];
    format_bytes(bytes, b, sizeof b);
    struct finding *x = findings_add(f, "overhead", (double)lost);
    if (lost)
        findings_set(x->title, sizeof x->title, "the profiler dropped %" PRIu64 " events", lost);
    else
        findings_set(x->title, sizeof x->title, "the profiler wrote %.1f MiB/s of trace",
                     rate / 1048576.0);
    findings_set(x->evidence, sizeof x->evidence,
                 "%" PRIu64 " events lost against %" PRIu64 " records kept (%.2f %%); trace %s, "
                 "%.1f MiB per second of wall time; a larger PROF_RING_KB or fewer captured "
                 "layers lowers it",
                 lost, records,
                 records + lost ? 100.0 * (double)lost / (double)(records + lost) : 0, b,
                 rate / 1048576.0);
}

static int findings_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Straggler: with two ranks or more, the rank whose busy time (GPU kernel time, else its
 * forward + backward + optimizer_step) is well above the median rank's. Not when the ranks
 * have training steps: waiting_rank and step_comm compare them there, their waits in
 * collectives apart (a DDP backward holds its allreduce waits: a review's "busy" median was
 * 4.5 s of waiting in a 4.9 s loop, and a rank slowed in its forward read as no straggler). */
static void findings_straggler(struct findings *f, const struct summary *s)
{
    if (findings_steps_ranked(s))
        return;
    size_t nr = 0;
    int gpu = 1;
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->rank >= 0) {
            nr++;
            gpu &= s->procs[i]->gpu.kernel_ns > 0;
        }
    if (nr < 2)
        return;
    double *v = malloc(nr * sizeof *v), *sorted = malloc(nr * sizeof *sorted);
    const struct model_process **who = malloc(nr * sizeof *who);
    if (!v || !sorted || !who) {
        free(v);
        free(sorted);
        free(who);
        return;
    }
    size_t k = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (p->rank < 0)
            continue;
        double busy = 0;
        if (gpu)
            busy = (double)p->gpu.kernel_ns;
        else
            for (size_t a = 0; a < p->torch.nbuiltin; a++)
                if (p->torch.builtin[a].name &&
                    strcmp(p->torch.builtin[a].name, "dataloader_next") != 0)
                    busy += (double)p->torch.builtin[a].total_ns;
        who[k] = p;
        v[k] = sorted[k] = busy;
        k++;
    }
    qsort(sorted, nr, sizeof *sorted, findings_cmp_double);
    double median = nr % 2 ? sorted[nr / 2] : (sorted[nr / 2 - 1] + sorted[nr / 2]) / 2.0;
    size_t worst = 0;
    for (size_t i = 1; i < nr; i++)
        if (v[i] > v[worst])
            worst = i;
    if (median > 0 && v[worst] / median >= T(STRAGGLER_RATIO)) {
        char slow[32], med[32], lbl[96];
        format_ns(v[worst], slow, sizeof slow);
        format_ns(median, med, sizeof med);
        struct finding *x = findings_add(f, "straggler", v[worst] / median);
        findings_set(x->title, sizeof x->title, "straggler: %s is %.2f x the median rank",
                     findings_proc_label(who[worst], lbl, sizeof lbl), v[worst] / median);
        findings_set(x->evidence, sizeof x->evidence,
                     "%s busy %s (%s) against a median of %s over %zu ranks; the others wait "
                     "for it at every collective",
                     lbl, slow, gpu ? "GPU kernel time" : "forward + backward + optimizer_step",
                     med, nr);
    }
    free(v);
    free(sorted);
    free(who);
}

void findings_build(struct findings *f, const struct summary *s)
{
    memset(f, 0, sizeof *f);
    /* the training steps' first: they describe the steady state, the others the whole
     * process (startup included) */
    findings_steps(f, s);
    findings_memory_growth(f, s);
    findings_gpu_idle(f, s);
    findings_sync(f, s);
    findings_dataloader(f, s);
    findings_small_kernels(f, s);
    findings_pageable(f, s);
    findings_cpu_ops(f, s);
    findings_memory_peak(f, s);
    findings_straggler(f, s);
    findings_overhead(f, s);
    size_t kept = 0; /* the minor ones last, each group in its order */
    struct finding *minor = malloc((f->n + 1) * sizeof *minor);
    if (!minor) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    size_t nminor = 0;
    for (size_t i = 0; i < f->n; i++) {
        if (f->items[i].minor)
            minor[nminor++] = f->items[i];
        else
            f->items[kept++] = f->items[i];
    }
    if (nminor) /* (no finding at all: items is NULL) */
        memcpy(f->items + kept, minor, nminor * sizeof *minor);
    free(minor);
}

void findings_free(struct findings *f)
{
    free(f->items);
    memset(f, 0, sizeof *f);
}

const struct finding *findings_find(const struct findings *f, const char *kind)
{
    for (size_t i = 0; i < f->n; i++)
        if (!strcmp(f->items[i].kind, kind))
            return &f->items[i];
    return NULL;
}

void findings_print(FILE *out, const struct findings *f)
{
    if (!f->n) { /* (one line, as the HTML page's: the analysis ran) */
        fputs("Findings: nothing crossed a threshold in what these traces hold\n\n", out);
        return;
    }
    fputs("Findings\n", out);
    for (size_t i = 0; i < f->n; i++) {
        const struct finding *x = &f->items[i];
        fputs("  * ", out);
        format_fputs_escaped(out, x->title);
        fputs("\n      ", out);
        format_fputs_escaped(out, x->evidence);
        fputc('\n', out);
        if (x->where[0]) {
            fputs("      where: ", out);
            format_fputs_escaped(out, x->where);
            fputc('\n', out);
        }
    }
    fputc('\n', out);
}
