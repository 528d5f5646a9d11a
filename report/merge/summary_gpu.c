/* summary_gpu: the GPU tables of a report merged over the processes — kernels by
 * demangled name (with the Python functions that launched them), copies by direction and
 * memory kinds, sets by device, library calls and CUPTI-only calls by name; the actions
 * through summary_actions.c. Utilization and devices stay per process (model_gpu.c). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "summary.h"

static void summary_gpu_hist(struct u64map *into, const struct u64map *from)
{
    uint64_t k, v, *slot;
    for (size_t i = 0; u64map_next(from, &i, &k, &v);) {
        if (!(slot = u64map_slot(into, k)))
            report_oom();
        *slot += v;
    }
}

/* ---- kernels ---- */

static void summary_gpu_add_site(struct summary_gpu_kernel_row *r, size_t *cap,
                                 const struct model_process *p, uint64_t func, uint64_t calls,
                                 uint64_t ns)
{
    const struct model_py_func *f = model_python_func(p, (uint32_t)func);
    char unknown[48];
    const char *qual = f && f->qualname && *f->qualname ? f->qualname : f ? f->name : NULL;
    if (!qual) {
        snprintf(unknown, sizeof unknown, "<unknown function #%u>", (uint32_t)func);
        qual = unknown;
    }
    const char *file = f && f->file ? f->file : "~";
    uint32_t line = f ? f->line : 0;
    for (size_t i = 0; i < r->nsites; i++) {
        struct summary_launch_site *s = &r->sites[i];
        if (s->line == line && !strcmp(s->qualname, qual) && !strcmp(s->file, file)) {
            s->calls += calls;
            s->gpu_ns += ns;
            return;
        }
    }
    r->sites = report_grow(r->sites, cap, r->nsites + 1, sizeof *r->sites);
    r->sites[r->nsites++] =
        (struct summary_launch_site){report_strdup(qual), report_strdup(file), line, calls, ns};
}

static int summary_gpu_site_cmp(const void *a, const void *b)
{
    const struct summary_launch_site *x = a, *y = b;
    if (x->gpu_ns != y->gpu_ns)
        return x->gpu_ns > y->gpu_ns ? -1 : 1;
    return strcmp(x->qualname, y->qualname);
}

static struct summary_gpu_kernel_row *summary_gpu_kernel_row(struct summary_gpu *g, size_t *cap,
                                                             const char *name)
{
    for (size_t i = 0; i < g->nkernels; i++) /* a job runs tens to hundreds of kernels */
        if (!strcmp(g->kernels[i].name, name))
            return &g->kernels[i];
    g->kernels = report_grow(g->kernels, cap, g->nkernels + 1, sizeof *g->kernels);
    struct summary_gpu_kernel_row *r = &g->kernels[g->nkernels++];
    memset(r, 0, sizeof *r);
    r->name = report_strdup(name);
    u64map_init(&r->grids);
    u64map_init(&r->blocks);
    u64map_init(&r->regs);
    return r;
}

static void summary_gpu_kernels(struct summary *s)
{
    struct summary_gpu *g = &s->gpu;
    size_t cap = 0;
    size_t *site_caps = NULL, site_caps_n = 0;
    struct rank_table per_rank;
    rank_table_init(&per_rank, s->procs, s->nprocs);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        g->unattributed += p->gpu.unattributed;
        size_t nrows;
        const struct model_gpu_kernel *rows = model_gpu_part_kernels(p, &nrows);
        for (size_t k = 0; k < nrows; k++) {
            const struct model_gpu_kernel *m = &rows[k];
            if (!m->calls)
                continue; /* none in the part */
            struct summary_gpu_kernel_row *r = summary_gpu_kernel_row(g, &cap, m->name);
            size_t idx = (size_t)(r - g->kernels);
            site_caps = report_grow(site_caps, &site_caps_n, g->nkernels, sizeof *site_caps);
            if (r->calls == 0 && r->nsites == 0)
                site_caps[idx] = 0;
            if (!r->calls || m->min_ns < r->min_ns)
                r->min_ns = m->min_ns;
            if (m->max_ns > r->max_ns)
                r->max_ns = m->max_ns;
            r->calls += m->calls;
            r->total_ns += m->total_ns;
            rank_table_add(&per_rank, idx, i, m->total_ns);
            summary_gpu_hist(&r->grids, &m->grids);
            summary_gpu_hist(&r->blocks, &m->blocks);
            summary_gpu_hist(&r->regs, &m->registers);
            uint64_t func, calls;
            for (size_t it = 0; u64map_next(&m->py_calls, &it, &func, &calls);) {
                uint64_t *ns = u64map_find(&m->py_ns, func);
                summary_gpu_add_site(r, &site_caps[idx], p, func, calls, ns ? *ns : 0);
            }
        }
    }
    free(site_caps);
    for (size_t i = 0; i < g->nkernels; i++) {
        g->kernel_ns += g->kernels[i].total_ns;
        g->kernel_calls += g->kernels[i].calls;
    }
    for (size_t i = 0; i < g->nkernels; i++) {
        struct summary_gpu_kernel_row *r = &g->kernels[i];
        r->avg_ns = r->calls ? (double)r->total_ns / (double)r->calls : 0.0;
        r->percent = g->kernel_ns ? 100.0 * (double)r->total_ns / (double)g->kernel_ns : 0.0;
        r->grid = model_histogram_mode(&r->grids);
        r->block = model_histogram_mode(&r->blocks);
        r->registers = model_histogram_mode(&r->regs);
        if (r->nsites)
            qsort(r->sites, r->nsites, sizeof *r->sites, summary_gpu_site_cmp);
        r->over_ranks = rank_table_spread(&per_rank, i);
    }
    rank_table_free(&per_rank);
}

/* ---- copies, sets ---- */

static void summary_gpu_copies(struct summary *s)
{
    struct summary_gpu *g = &s->gpu;
    size_t ccap = 0, scap = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_gpu *m = &s->procs[i]->gpu;
        for (size_t c = 0; c < m->ncopies; c++) {
            const struct model_gpu_copy *mc = &m->copies[c];
            size_t k = 0;
            while (k < g->ncopies && !(g->copies[k].copy_kind == mc->copy_kind &&
                                       g->copies[k].src_kind == mc->src_kind &&
                                       g->copies[k].dst_kind == mc->dst_kind))
                k++;
            if (k == g->ncopies) {
                g->copies = report_grow(g->copies, &ccap, k + 1, sizeof *g->copies);
                g->copies[g->ncopies++] = (struct summary_gpu_copy_row){
                    .copy_kind = mc->copy_kind, .src_kind = mc->src_kind, .dst_kind = mc->dst_kind};
            }
            g->copies[k].calls += mc->calls;
            g->copies[k].bytes += mc->bytes;
            g->copies[k].total_ns += mc->ns;
        }
        for (size_t c = 0; c < m->nsets; c++) {
            const struct model_gpu_set *ms = &m->sets[c];
            size_t k = 0;
            while (k < g->nsets && g->sets[k].device != ms->device)
                k++;
            if (k == g->nsets) {
                g->sets = report_grow(g->sets, &scap, k + 1, sizeof *g->sets);
                g->sets[g->nsets++] = (struct summary_gpu_set_row){.device = ms->device};
            }
            g->sets[k].calls += ms->calls;
            g->sets[k].bytes += ms->bytes;
            g->sets[k].total_ns += ms->ns;
        }
    }
}

/* ---- library calls, CUPTI-only calls ---- */

static void summary_gpu_library(struct summary *s)
{
    struct summary_gpu *g = &s->gpu;
    size_t cap = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t a = 0; a < p->napis; a++) {
            const struct model_api *api = p->apis[a];
            struct model_api_counts c;
            model_gpu_part_api(p, a, &c);
            if (!api || !api->library || !c.calls)
                continue;
            size_t k = 0;
            while (k < g->nlibrary && strcmp(g->library[k].name, api->name))
                k++;
            if (k == g->nlibrary) {
                g->library = report_grow(g->library, &cap, k + 1, sizeof *g->library);
                g->library[g->nlibrary++] =
                    (struct summary_library_row){.name = report_strdup(api->name)};
            }
            g->library[k].calls += c.calls;
            g->library[k].cpu_ns += c.total_ns;
            g->library[k].gpu_ns += c.gpu_ns;
            g->library[k].kernels += c.gpu_kernels;
        }
    }
}

/* Whether a wrapper of p recorded calls of the function CUPTI names name. */
static int summary_gpu_wrapped(const struct model_process *p, const char *name)
{
    char base[256];
    model_gpu_api_base_name(name, base, sizeof base);
    for (size_t a = 0; a < p->napis; a++)
        if (p->apis[a] && p->apis[a]->calls && !strcmp(p->apis[a]->name, base))
            return 1;
    return 0;
}

static void summary_gpu_cupti(struct summary *s)
{
    struct summary_gpu *g = &s->gpu;
    size_t cap = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t a = 0; a < p->gpu.napis; a++) {
            const struct model_gpu_api *m = &p->gpu.apis[a];
            struct model_api_counts c;
            model_gpu_part_cupti(p, a, &c);
            if (!c.calls || summary_gpu_wrapped(p, m->name))
                continue;
            size_t k = 0;
            while (k < g->ncupti &&
                   !(g->cupti[k].domain == m->domain && !strcmp(g->cupti[k].name, m->name)))
                k++;
            if (k == g->ncupti) {
                g->cupti = report_grow(g->cupti, &cap, k + 1, sizeof *g->cupti);
                g->cupti[g->ncupti++] =
                    (struct summary_cupti_row){.name = report_strdup(m->name), .domain = m->domain};
            }
            struct summary_cupti_row *r = &g->cupti[k];
            r->calls += c.calls;
            r->total_ns += c.total_ns;
            if (c.max_ns > r->max_ns)
                r->max_ns = c.max_ns;
        }
    }
    for (size_t k = 0; k < g->ncupti; k++)
        g->cupti[k].avg_ns = (double)g->cupti[k].total_ns / (double)g->cupti[k].calls;
}

void summary_build_gpu(struct summary *s)
{
    struct summary_gpu *g = &s->gpu;
    memset(g, 0, sizeof *g);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_gpu *m = &s->procs[i]->gpu;
        g->any |= m->nops || m->ncalls || m->nnvtx || m->ndevices || m->summary_had_records;
    }
    summary_gpu_kernels(s);
    summary_gpu_copies(s);
    summary_gpu_library(s);
    summary_gpu_cupti(s);
    summary_actions_build(s);
}

/* ---- order ---- */

static enum summary_sort summary_gpu_sort_key;

static int summary_gpu_u64(uint64_t a, uint64_t b)
{
    return a > b ? -1 : a < b; /* descending */
}

static int summary_gpu_kernel_cmp(const void *a, const void *b)
{
    const struct summary_gpu_kernel_row *x = a, *y = b;
    int c = 0;
    switch (summary_gpu_sort_key) {
    case SUMMARY_SORT_CALLS:
        c = summary_gpu_u64(x->calls, y->calls);
        break;
    case SUMMARY_SORT_AVG:
        c = x->avg_ns > y->avg_ns ? -1 : x->avg_ns < y->avg_ns;
        break;
    case SUMMARY_SORT_MIN:
        c = summary_gpu_u64(x->min_ns, y->min_ns);
        break;
    case SUMMARY_SORT_MAX:
        c = summary_gpu_u64(x->max_ns, y->max_ns);
        break;
    case SUMMARY_SORT_NAME:
        break;
    default: /* total; a GPU kernel has no errors */
        c = summary_gpu_u64(x->total_ns, y->total_ns);
        break;
    }
    return c ? c : strcmp(x->name, y->name);
}

static int summary_gpu_library_cmp(const void *a, const void *b)
{
    const struct summary_library_row *x = a, *y = b;
    int c = summary_gpu_u64(x->gpu_ns, y->gpu_ns);
    if (!c)
        c = summary_gpu_u64(x->cpu_ns, y->cpu_ns);
    return c ? c : strcmp(x->name, y->name);
}

static int summary_gpu_cupti_cmp(const void *a, const void *b)
{
    const struct summary_cupti_row *x = a, *y = b;
    int c = summary_gpu_sort_key == SUMMARY_SORT_CALLS  ? summary_gpu_u64(x->calls, y->calls)
            : summary_gpu_sort_key == SUMMARY_SORT_NAME ? 0
                                                        : summary_gpu_u64(x->total_ns, y->total_ns);
    return c ? c : strcmp(x->name, y->name);
}

static int summary_gpu_copy_cmp(const void *a, const void *b)
{
    const struct summary_gpu_copy_row *x = a, *y = b;
    if (x->copy_kind != y->copy_kind)
        return x->copy_kind < y->copy_kind ? -1 : 1;
    if (x->src_kind != y->src_kind)
        return x->src_kind < y->src_kind ? -1 : 1;
    return x->dst_kind < y->dst_kind ? -1 : x->dst_kind > y->dst_kind;
}

void summary_sort_gpu(struct summary *s, enum summary_sort key)
{
    struct summary_gpu *g = &s->gpu;
    summary_gpu_sort_key = key;
    if (g->nkernels)
        qsort(g->kernels, g->nkernels, sizeof *g->kernels, summary_gpu_kernel_cmp);
    if (g->nlibrary)
        qsort(g->library, g->nlibrary, sizeof *g->library, summary_gpu_library_cmp);
    if (g->ncupti)
        qsort(g->cupti, g->ncupti, sizeof *g->cupti, summary_gpu_cupti_cmp);
    if (g->ncopies)
        qsort(g->copies, g->ncopies, sizeof *g->copies, summary_gpu_copy_cmp);
}

void summary_free_gpu(struct summary_gpu *g)
{
    for (size_t i = 0; i < g->nkernels; i++) {
        struct summary_gpu_kernel_row *r = &g->kernels[i];
        free(r->name);
        u64map_free(&r->grids);
        u64map_free(&r->blocks);
        u64map_free(&r->regs);
        for (size_t k = 0; k < r->nsites; k++) {
            free(r->sites[k].qualname);
            free(r->sites[k].file);
        }
        free(r->sites);
    }
    free(g->kernels);
    free(g->copies);
    free(g->sets);
    for (size_t i = 0; i < g->nlibrary; i++)
        free(g->library[i].name);
    free(g->library);
    for (size_t i = 0; i < g->ncupti; i++)
        free(g->cupti[i].name);
    free(g->cupti);
    for (size_t i = 0; i < g->nactions; i++)
        free(g->actions[i].name);
    free(g->actions);
    for (size_t i = 0; i < g->nmarks; i++)
        free(g->marks[i].name);
    free(g->marks);
    memset(g, 0, sizeof *g);
}
