/* The visitors of a summary (summary_model.h): one per part of the process model, used
 * both to write and to read (summary_codec.h), so the two directions cannot drift apart.
 * What a part keeps is what report/merge/ and the tables and findings read (the GPU facts
 * stand for the GPU timeline); the timeline itself (GPU operations, CUPTI calls, NVTX
 * events, memory curves), the op trees and the stacks stay in the trace. */
#include "summary_model.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model_steps_load.h"

typedef struct summary_codec sf_codec;

/* A string id and its text: written with the text the process has for it; read into
 * p->strings (once per id) and *text pointed at it. */
void summary_model_sid(sf_codec *c, struct model_process *p, uint32_t *sid, const char **text)
{
    summary_codec_u32(c, sid);
    char *s = c->reading ? NULL : u64map_get_ptr(&p->strings, *sid);
    summary_codec_str(c, &s);
    if (!c->reading)
        return;
    const char *have = s ? u64map_get_ptr(&p->strings, *sid) : NULL;
    if (s && !have) {
        uint64_t *slot = u64map_slot(&p->strings, *sid);
        if (!slot)
            report_oom();
        *slot = (uint64_t)(uintptr_t)s;
        have = s;
    } else {
        free(s);
    }
    if (text)
        *text = have;
}

void summary_model_text(sf_codec *c, char **s)
{
    summary_codec_str(c, s);
    if (c->reading && !*s)
        *s = report_strdup("");
}

static void sf_strings(sf_codec *c, char ***arr, size_t *n)
{
    summary_codec_count(c, n, 1);
    if (c->reading)
        *arr = summary_codec_array(c, *n, sizeof **arr);
    for (size_t i = 0; i < *n; i++)
        summary_model_text(c, &(*arr)[i]);
}

static void sf_mem_stats(sf_codec *c, struct model_mem_stats *m)
{
    summary_codec_u64(c, &m->alloc_count);
    summary_codec_u64(c, &m->alloc_bytes);
    summary_codec_u64(c, &m->free_count);
    summary_codec_u64(c, &m->free_bytes);
    summary_codec_u64(c, &m->peak_bytes);
    summary_codec_u64(c, &m->live_bytes);
}

static void sf_api(sf_codec *c, struct model_api *a)
{
    summary_codec_int(c, &a->defined);
    summary_codec_u16(c, &a->id);
    summary_codec_u8(c, &a->category);
    summary_model_text(c, &a->name);
    summary_codec_int(c, &a->is_set_device);
    summary_codec_u64(c, &a->calls);
    summary_codec_u64(c, &a->errors);
    summary_codec_u64(c, &a->recorded);
    summary_codec_u64(c, &a->total_ticks);
    summary_codec_u64(c, &a->min_ticks);
    summary_codec_u64(c, &a->max_ticks);
    summary_codec_u64(c, &a->total_ns);
    summary_codec_u64(c, &a->min_ns);
    summary_codec_u64(c, &a->max_ns);
    summary_codec_int(c, &a->library);
    summary_codec_u64(c, &a->gpu_kernels);
    summary_codec_u64(c, &a->gpu_ns);
    if (c->reading)
        for (int r = 0; r < MODEL_ARG_COUNT; r++)
            a->role[r] = -1;
}

static void sf_kernel(sf_codec *c, struct model_kernel *k)
{
    summary_codec_u64(c, &k->func);
    summary_model_text(c, &k->name);
    summary_codec_u64(c, &k->launches);
    summary_codec_u64(c, &k->errors);
    summary_codec_u64(c, &k->ticks);
    summary_codec_u64(c, &k->ns);
    summary_codec_map(c, &k->grids);
    summary_codec_map(c, &k->blocks);
}

static void sf_core(sf_codec *c, struct model_process *p)
{
    summary_codec_str(c, &p->file);
    summary_codec_u64(c, &p->file_bytes);
    summary_codec_u32(c, &p->features);
    summary_codec_u64(c, &p->records);
    summary_codec_int(c, &p->clean_end);
    summary_codec_int(c, &p->end_signal);
    summary_codec_int(c, &p->truncated);
    summary_codec_str(c, &p->stop_warning);
    p->meta = summary_codec_vector(c, p->meta, &p->nmeta, 2, sizeof *p->meta);
    for (size_t i = 0; i < p->nmeta; i++) {
        summary_model_text(c, &p->meta[i].key);
        summary_model_text(c, &p->meta[i].value);
    }
    summary_codec_i64(c, &p->pid);
    summary_codec_i64(c, &p->ppid);
    summary_codec_i64(c, &p->rank);
    summary_codec_str(c, &p->host);
    summary_codec_str(c, &p->run_id);
    summary_codec_str(c, &p->command);
    summary_codec_u64(c, &p->start_realtime_ns);
    summary_codec_double(c, &p->tsc_hz);
    summary_codec_double(c, &p->ns_per_tick);
    if (c->reading && !(p->tsc_hz >= 0 && p->tsc_hz < 1e15)) /* NaN, infinite, negative */
        p->tsc_hz = 0;
    if (c->reading && !(p->ns_per_tick > 0 && p->ns_per_tick < 1e9))
        p->ns_per_tick = 1.0;
    summary_codec_size(c, &p->nclocks);

    p->threads = summary_codec_vector(c, p->threads, &p->nthreads, 6, sizeof *p->threads);
    if (c->reading)
        p->cap_threads = p->nthreads;
    for (size_t i = 0; i < p->nthreads; i++) {
        struct model_thread *t = &p->threads[i];
        summary_codec_u32(c, &t->tid);
        summary_codec_str(c, &t->name);
        summary_codec_u64(c, &t->calls);
        summary_codec_u64(c, &t->api_ticks);
        summary_codec_u64(c, &t->api_ns);
        summary_codec_u64(c, &t->lost);
        summary_codec_int(c, &t->device);
        if (c->reading) {
            uint64_t *slot = u64map_slot(&p->thread_index, t->tid);
            if (!slot)
                report_oom();
            *slot = i + 1;
        }
    }

    p->apis = summary_codec_vector(c, p->apis, &p->napis, 1, sizeof *p->apis);
    for (size_t i = 0; i < p->napis; i++) {
        uint8_t present = p->apis[i] != NULL;
        summary_codec_u8(c, &present);
        if (!present)
            continue;
        if (c->reading)
            p->apis[i] = summary_codec_array(c, 1, sizeof *p->apis[i]);
        sf_api(c, p->apis[i]);
    }

    size_t nkernels = p->kernels.count;
    summary_codec_count(c, &nkernels, 6);
    if (!c->reading) {
        uint64_t k, v;
        for (size_t i = 0; u64map_next(&p->kernels, &i, &k, &v);)
            sf_kernel(c, (struct model_kernel *)(uintptr_t)v);
    }
    for (size_t i = 0; c->reading && i < nkernels && !c->bad; i++) {
        struct model_kernel *k = summary_codec_array(c, 1, sizeof *k);
        u64map_init(&k->grids);
        u64map_init(&k->blocks);
        sf_kernel(c, k);
        uint64_t *slot = u64map_slot(&p->kernels, k->func);
        if (!slot)
            report_oom();
        if (*slot) { /* a damaged file names one twice: keep the first */
            free(k->name);
            u64map_free(&k->grids);
            u64map_free(&k->blocks);
            free(k);
            continue;
        }
        *slot = (uint64_t)(uintptr_t)k;
    }

    for (int d = 0; d < MODEL_DIR_COUNT; d++) {
        struct model_copy_stats *s = &p->copies[d];
        summary_codec_u64(c, &s->calls);
        summary_codec_u64(c, &s->errors);
        summary_codec_u64(c, &s->bytes);
        summary_codec_u64(c, &s->ticks);
        summary_codec_u64(c, &s->ns);
    }
    for (int m = 0; m < MODEL_SPACE_COUNT; m++)
        sf_mem_stats(c, &p->mem[m]);
    p->device_mem =
        summary_codec_vector(c, p->device_mem, &p->ndevice_mem, 6, sizeof *p->device_mem);
    for (size_t i = 0; i < p->ndevice_mem; i++)
        sf_mem_stats(c, &p->device_mem[i]);
    summary_codec_int(c, &p->set_device_used);
    summary_codec_u64(c, &p->unmatched_frees);
    sf_strings(c, &p->notes, &p->nnotes);
    sf_strings(c, &p->warnings, &p->nwarnings);
    summary_codec_u64(c, &p->lost);
    summary_codec_u64(c, &p->lost_kept);
    summary_codec_u64(c, &p->lost_calls);
    summary_codec_u64(c, &p->end_lost);
    summary_codec_int(c, &p->cpu_seen);
    summary_codec_u64(c, &p->wall_start_ns);
    summary_codec_u64(c, &p->wall_end_ns);
    summary_codec_u64(c, &p->wall_ns);
}

void summary_model_kernel_counts(sf_codec *c, struct model_gpu_kernel *k)
{
    summary_codec_u64(c, &k->calls);
    summary_codec_u64(c, &k->total_ns);
    summary_codec_u64(c, &k->min_ns);
    summary_codec_u64(c, &k->max_ns);
    summary_codec_map(c, &k->grids);
    summary_codec_map(c, &k->blocks);
    summary_codec_map(c, &k->registers);
    summary_codec_map(c, &k->py_calls);
    summary_codec_map(c, &k->py_ns);
}

/* ---- Python: the functions the GPU rows and the memory peaks name ---- */
static void sf_py_func(sf_codec *c, struct model_process *p, struct model_py_func *f)
{
    summary_codec_u32(c, &f->id);
    summary_model_sid(c, p, &f->name_sid, &f->name);
    summary_model_sid(c, p, &f->qualname_sid, &f->qualname);
    summary_model_sid(c, p, &f->file_sid, &f->file);
    summary_model_sid(c, p, &f->module_sid, &f->module);
    summary_codec_u32(c, &f->line);
    summary_codec_u16(c, &f->kind);
}

/* Writing: function id of p into funcs once (seen: id + 1 -> 1); none when unknown. */
static void sf_keep_func(const struct model_process *p, uint32_t id, struct u64map *seen,
                         struct model_py_func ***funcs, size_t *n, size_t *cap)
{
    const struct model_py_func *f = model_python_func(p, id);
    uint64_t *slot = f ? u64map_slot(seen, (uint64_t)id + 1) : NULL;
    if (f && !slot)
        report_oom();
    if (!f || *slot)
        return;
    *slot = 1;
    *funcs = report_grow(*funcs, cap, *n + 1, sizeof **funcs);
    (*funcs)[(*n)++] = (struct model_py_func *)f;
}

static void sf_python(sf_codec *c, struct model_process *p)
{
    struct model_python *py = &p->py;
    /* Writing: the functions kernels were launched from, and one node per memory peak
     * whose function is the one model_torch_peak_func finds on the whole path. */
    struct model_py_func **funcs = NULL;
    struct model_py_node *nodes = NULL;
    size_t nfuncs = 0, nnodes = 0;
    if (!c->reading) {
        struct u64map seen;
        u64map_init(&seen);
        size_t cap = 0, ncap = 0;
        const struct model_torch_memory *mems[1 + 64];
        size_t nmems = 0;
        mems[nmems++] = &p->torch.memory;
        for (size_t i = 0; i < p->torch.ndevices && nmems < 65; i++)
            mems[nmems++] = &p->torch.devices[i];
        for (size_t i = 0; i < nmems; i++) {
            const struct model_py_func *f = model_torch_peak_func(p, mems[i]);
            if (!f)
                continue;
            nodes = report_grow(nodes, &ncap, nnodes + 1, sizeof *nodes);
            nodes[nnodes++] =
                (struct model_py_node){.id = mems[i]->peak_py_node, .func = f->id, .defined = 1};
        }
        /* the functions of the memory parts' sites */
        for (size_t i = 0; i < nmems; i++) {
            const struct model_torch_mem_site *sites[2] = {&mems[i]->part.peak,
                                                           &mems[i]->part.grew};
            for (size_t k = 0; k < 4; k++)
                sf_keep_func(p, k & 1 ? sites[k / 2]->own : sites[k / 2]->func, &seen, &funcs,
                             &nfuncs, &cap);
        }
        /* and the nodes the GPU facts name, as themselves */
        const struct model_gpu_facts *gf = &p->gpu.facts;
        for (size_t i = 0; i <= gf->nidle; i++) {
            uint32_t id = i < gf->nidle ? gf->idle[i].top_node : gf->sync_node;
            const struct model_py_node *n = id ? model_python_node(p, id) : NULL;
            if (!n || !model_python_func(p, n->func))
                continue;
            nodes = report_grow(nodes, &ncap, nnodes + 1, sizeof *nodes);
            nodes[nnodes++] = (struct model_py_node){.id = id, .func = n->func, .defined = 1};
        }
        for (size_t k = 0; k < p->gpu.nkernels; k++) {
            uint64_t id, v;
            for (size_t i = 0; u64map_next(&p->gpu.kernels[k].py_calls, &i, &id, &v);)
                sf_keep_func(p, (uint32_t)id, &seen, &funcs, &nfuncs, &cap);
        }
        for (size_t n = 0; n < nnodes; n++)
            sf_keep_func(p, nodes[n].func, &seen, &funcs, &nfuncs, &cap);
        u64map_free(&seen);
    }
    summary_codec_count(c, &nfuncs, 8);
    if (c->reading) {
        py->funcs = summary_codec_array(c, nfuncs, sizeof *py->funcs);
        py->nfuncs = py->cap_funcs = nfuncs;
    }
    for (size_t i = 0; i < nfuncs; i++) {
        struct model_py_func *f = c->reading ? &py->funcs[i] : funcs[i];
        sf_py_func(c, p, f);
        if (c->reading) {
            if (idmap_set(&py->func_index, f->id, i + 1) != 0)
                report_oom();
        }
    }
    summary_codec_count(c, &nnodes, 3);
    if (c->reading) {
        nodes = summary_codec_array(c, nnodes, sizeof *nodes);
        py->nodes = nodes;
        py->nnodes = py->cap_nodes = nnodes;
    }
    for (size_t i = 0; i < nnodes; i++) {
        summary_codec_u32(c, &nodes[i].id);
        summary_codec_u32(c, &nodes[i].func);
        summary_codec_u32(c, &nodes[i].tid);
        if (c->reading) {
            nodes[i].defined = 1;
            if (idmap_set(&py->node_index, nodes[i].id, i + 1) != 0)
                report_oom();
        }
    }
    if (!c->reading) {
        free(funcs);
        free(nodes);
    }
    py->gaps = summary_codec_vector(c, py->gaps, &py->ngaps, 6, sizeof *py->gaps);
    if (c->reading)
        py->cap_gaps = py->ngaps;
    for (size_t i = 0; i < py->ngaps; i++) {
        struct model_py_gap *g = &py->gaps[i];
        summary_codec_u32(c, &g->tid);
        summary_codec_u32(c, &g->reason);
        summary_codec_u64(c, &g->start_ticks);
        summary_codec_u64(c, &g->end_ticks);
        summary_codec_u64(c, &g->start_ns);
        summary_codec_u64(c, &g->end_ns);
    }
    summary_codec_u64(c, &py->spans);
    struct pystats_thread *threads = NULL;
    size_t nthreads = c->reading ? 0 : pystats_threads(p, &threads);
    py->thread_totals =
        summary_codec_vector(c, py->thread_totals, &nthreads, 3, sizeof *py->thread_totals);
    if (c->reading)
        py->nthread_totals = nthreads;
    for (size_t i = 0; i < nthreads; i++) {
        struct model_py_thread_total w = {0}, *t = c->reading ? &py->thread_totals[i] : &w;
        if (!c->reading)
            w = (struct model_py_thread_total){threads[i].tid, threads[i].functions,
                                               threads[i].calls};
        summary_codec_u32(c, &t->tid);
        summary_codec_u64(c, &t->functions);
        summary_codec_u64(c, &t->calls);
    }
    free(threads);
    /* --summarize asks for the steady steps: their Python rows (summary_pystats.c) beside
     * the whole process's */
    summary_codec_u8(c, &py->window);
    summary_codec_u8(c, &py->window_miss);
    summary_codec_u32(c, &py->window_tid);
    summary_codec_u64(c, &py->window_ns);
    summary_codec_u64(c, &py->window_first);
    summary_codec_u64(c, &py->window_last);
    uint64_t steps = py->window_steps;
    summary_codec_u64(c, &steps);
    py->window_steps = (size_t)steps;
    if (c->reading &&
        (py->window > MODEL_WINDOW_STARTUP || py->window_miss > MODEL_PY_WINDOW_MISS_BACKWARD))
        summary_codec_fail(c, "bad Python window");
    enum model_window asked = model_torch_window_asked();
    if (c->reading && !c->bad && py->window != asked && py->window != MODEL_WINDOW_ALL) {
        py->window = MODEL_WINDOW_ALL; /* the whole process's rows, said */
        py->window_miss =
            asked == MODEL_WINDOW_ALL ? MODEL_PY_WINDOW_MISS_NONE : MODEL_PY_WINDOW_MISS_SUMMARY;
    }
}

/* ---- GPU, NVTX and actions ---- */
static void sf_actions(sf_codec *c, struct model_action **arr, size_t *n)
{
    summary_codec_count(c, n, 6);
    if (c->reading)
        *arr = summary_codec_array(c, *n, sizeof **arr);
    for (size_t i = 0; i < *n; i++) {
        struct model_action *a = &(*arr)[i];
        summary_model_text(c, &a->name);
        summary_codec_u64(c, &a->calls);
        summary_codec_u64(c, &a->total_ns);
        summary_codec_u64(c, &a->gpu_ns);
        summary_codec_u64(c, &a->kernels);
        summary_codec_u8(c, &a->source);
        if (a->source > MODEL_ACTION_LIGHTNING)
            summary_codec_fail(c, "an action of no known source");
    }
}

static void sf_gpu(sf_codec *c, struct model_process *p)
{
    struct model_gpu *g = &p->gpu;
    g->kernels = summary_codec_vector(c, g->kernels, &g->nkernels, 10, sizeof *g->kernels);
    if (c->reading)
        g->cap_kernels = g->nkernels;
    for (size_t i = 0; i < g->nkernels; i++) {
        struct model_gpu_kernel *k = &g->kernels[i];
        summary_codec_u32(c, &k->name_sid);
        summary_model_text(c, &k->name);
        summary_model_kernel_counts(c, k);
        if (c->reading) {
            uint64_t *slot = u64map_slot(&g->kernel_index, k->name_sid);
            if (!slot)
                report_oom();
            *slot = i + 1;
        }
    }
    g->copies = summary_codec_vector(c, g->copies, &g->ncopies, 6, sizeof *g->copies);
    if (c->reading)
        g->cap_copies = g->ncopies;
    for (size_t i = 0; i < g->ncopies; i++) {
        summary_codec_u8(c, &g->copies[i].copy_kind);
        summary_codec_u8(c, &g->copies[i].src_kind);
        summary_codec_u8(c, &g->copies[i].dst_kind);
        summary_codec_u64(c, &g->copies[i].calls);
        summary_codec_u64(c, &g->copies[i].bytes);
        summary_codec_u64(c, &g->copies[i].ns);
    }
    g->sets = summary_codec_vector(c, g->sets, &g->nsets, 4, sizeof *g->sets);
    if (c->reading)
        g->cap_sets = g->nsets;
    for (size_t i = 0; i < g->nsets; i++) {
        summary_codec_u32(c, &g->sets[i].device);
        summary_codec_u64(c, &g->sets[i].calls);
        summary_codec_u64(c, &g->sets[i].bytes);
        summary_codec_u64(c, &g->sets[i].ns);
    }
    g->apis = summary_codec_vector(c, g->apis, &g->napis, 8, sizeof *g->apis);
    if (c->reading)
        g->cap_apis = g->napis;
    for (size_t i = 0; i < g->napis; i++) {
        struct model_gpu_api *a = &g->apis[i];
        summary_codec_u16(c, &a->domain);
        summary_codec_u16(c, &a->cbid);
        summary_model_text(c, &a->name);
        summary_codec_u64(c, &a->calls);
        summary_codec_u64(c, &a->total_ticks);
        summary_codec_u64(c, &a->max_ticks);
        summary_codec_u64(c, &a->total_ns);
        summary_codec_u64(c, &a->max_ns);
        if (c->reading) {
            uint64_t *slot = u64map_slot(&g->api_index, (uint64_t)a->domain << 16 | a->cbid);
            if (!slot)
                report_oom();
            *slot = i + 1;
        }
    }
    g->devices = summary_codec_vector(c, g->devices, &g->ndevices, 9, sizeof *g->devices);
    if (c->reading)
        g->cap_devices = g->ndevices;
    for (size_t i = 0; i < g->ndevices; i++) {
        struct model_gpu_device *d = &g->devices[i];
        summary_codec_u32(c, &d->device);
        summary_model_text(c, &d->name);
        summary_codec_u64(c, &d->global_memory_bytes);
        summary_codec_u32(c, &d->sm_count);
        summary_codec_u32(c, &d->core_clock_khz);
        summary_codec_u32(c, &d->memory_clock_khz);
        summary_codec_u16(c, &d->compute_major);
        summary_codec_u16(c, &d->compute_minor);
    }
    g->busy = summary_codec_vector(c, g->busy, &g->nbusy, 3, sizeof *g->busy);
    for (size_t i = 0; i < g->nbusy; i++) {
        summary_codec_u32(c, &g->busy[i].device);
        summary_codec_i64(c, &g->busy[i].stream);
        summary_codec_u64(c, &g->busy[i].busy_ns);
    }
    summary_codec_u64(c, &g->kernel_ns);
    summary_codec_u64(c, &g->unattributed);
    sf_actions(c, &g->actions, &g->nactions);
    sf_actions(c, &g->marks, &g->nmarks);
    summary_codec_u64(c, &g->nvtx_unclosed);
    summary_codec_u64(c, &g->nvtx_unmatched);
    g->nvtx_lost = summary_codec_vector(c, g->nvtx_lost, &g->nnvtx_lost, 6, sizeof *g->nvtx_lost);
    if (c->reading)
        g->cap_nvtx_lost = g->nnvtx_lost;
    for (size_t i = 0; i < g->nnvtx_lost; i++) {
        summary_model_sid(c, p, &g->nvtx_lost[i].name_sid, NULL);
        summary_model_sid(c, p, &g->nvtx_lost[i].domain_sid, NULL);
        summary_codec_u64(c, &g->nvtx_lost[i].count);
        summary_codec_u64(c, &g->nvtx_lost[i].ticks);
    }
    summary_codec_u64(c, &g->nvtx_lost_calls);
    summary_codec_size(c, &g->lightning_actions);
    summary_codec_u64(c, &g->lightning_span_ns);
    if (g->lightning_actions > g->nactions)
        summary_codec_fail(c, "more Lightning actions than actions");
    struct model_gpu_facts *f = &g->facts;
    f->idle = summary_codec_vector(c, f->idle, &f->nidle, 7, sizeof *f->idle);
    for (size_t i = 0; i < f->nidle; i++) {
        struct model_gpu_idle *d = &f->idle[i];
        summary_codec_u32(c, &d->device);
        summary_codec_u64(c, &d->ngaps);
        summary_codec_u64(c, &d->longest_ns);
        summary_codec_u64(c, &d->api_ns);
        summary_codec_u64(c, &d->api_calls);
        summary_codec_u32(c, &d->top_node);
        summary_codec_u64(c, &d->top_ns);
    }
    summary_codec_u32(c, &f->sync_node);
    summary_codec_u64(c, &f->sync_ns);
    summary_codec_map(c, &f->kernel_durations);
    summary_codec_u64(c, &f->kernels);
    int had = g->nops || g->ncalls || g->nnvtx || g->ndevices || g->summary_had_records;
    summary_codec_int(c, &had);
    if (c->reading)
        g->summary_had_records = had;
}

/* ---- PyTorch ---- */
/* What the process's own memory counters added (model_torch_take_totals). */
static void sf_torch_memory_exact(sf_codec *c, struct model_torch_memory *m)
{
    summary_codec_u64(c, &m->alloc_count);
    summary_codec_u64(c, &m->free_count);
    summary_codec_int(c, &m->exact);
    summary_codec_int(c, &m->peak_unattributed);
    summary_codec_u64(c, &m->records_lost);
}

static void sf_torch_memory(sf_codec *c, struct model_process *p, struct model_torch_memory *m)
{
    summary_codec_int(c, &m->any);
    summary_codec_i8(c, &m->dev_type);
    summary_codec_i8(c, &m->dev_index);
    summary_codec_u64(c, &m->reserved_peak);
    summary_codec_i64(c, &m->peak_bytes);
    summary_codec_u64(c, &m->peak_ns);
    summary_model_sid(c, p, &m->peak_op_sid, &m->peak_op);
    if (!m->peak_op_sid && c->reading)
        m->peak_op = NULL;
    summary_codec_u32(c, &m->peak_py_node);
    summary_codec_u64(c, &m->allocated);
    summary_codec_u64(c, &m->freed);
    summary_codec_i64(c, &m->live_at_end);
    sf_torch_memory_exact(c, m);
    summary_model_memory_part(c, p, &m->part);
}

static void sf_torch_rows(sf_codec *c, struct model_process *p, struct model_torch_row **rows,
                          size_t *n)
{
    *rows = summary_codec_vector(c, *rows, n, 15, sizeof **rows);
    for (size_t i = 0; i < *n; i++) {
        struct model_torch_row *r = &(*rows)[i];
        summary_model_sid(c, p, &r->name_sid, &r->name);
        summary_model_sid(c, p, &r->shapes_sid, &r->shapes);
        summary_codec_u8(c, &r->scope);
        summary_codec_u64(c, &r->calls);
        summary_codec_u64(c, &r->self_cpu_ticks);
        summary_codec_u64(c, &r->cpu_total_ticks);
        summary_codec_u64(c, &r->self_cpu_ns);
        summary_codec_u64(c, &r->cpu_total_ns);
        summary_codec_u64(c, &r->self_cuda_ns);
        summary_codec_u64(c, &r->cuda_total_ns);
        summary_codec_u64(c, &r->kernels);
        summary_codec_i64(c, &r->self_cpu_mem);
        summary_codec_i64(c, &r->cpu_mem);
        summary_codec_i64(c, &r->self_dev_mem);
        summary_codec_i64(c, &r->dev_mem);
    }
}

static void sf_torch(sf_codec *c, struct model_process *p)
{
    struct model_torch *t = &p->torch;
    summary_codec_u64(c, &t->spans_expected);
    summary_codec_u64(c, &t->spans_dropped);
    summary_codec_u64(c, &t->records);
    summary_codec_u64(c, &t->mem_records);
    summary_codec_u64(c, &t->dev_mem_records);
    sf_torch_memory(c, p, &t->memory);
    t->devices = summary_codec_vector(c, t->devices, &t->ndevices, 11, sizeof *t->devices);
    for (size_t i = 0; i < t->ndevices; i++)
        sf_torch_memory(c, p, &t->devices[i]);
    sf_torch_rows(c, p, &t->rows, &t->nrows);
    /* --summarize asks for the steady steps: the whole process's rows beside theirs */
    summary_codec_u8(c, &t->window);
    summary_codec_u8(c, &t->window_miss);
    summary_codec_u64(c, &t->window_ns);
    uint64_t steps = t->window_steps;
    summary_codec_u64(c, &steps);
    t->window_steps = (size_t)steps;
    sf_torch_rows(c, p, &t->whole_rows, &t->nwhole_rows);
    if (c->reading &&
        (t->window > MODEL_WINDOW_STARTUP || t->window_miss > MODEL_WINDOW_MISS_SUMMARY ||
         (t->window != MODEL_WINDOW_ALL) != (t->nwhole_rows != 0)))
        summary_codec_fail(c, "bad operator window");
    if (c->reading && !c->bad) {
        model_torch_window_pick(p);
        model_torch_memory_parts_pick(p);
    }
    sf_actions(c, &t->scopes, &t->nscopes);
    sf_actions(c, &t->builtin, &t->nbuiltin);
    summary_codec_u64(c, &t->builtin_top_ns);
    summary_codec_u64(c, &t->unnested);
}

/* ---- communication: every call, for the cross-rank matching ---- */
void summary_model_comm(sf_codec *c, struct model_comm *m)
{
    m->names = summary_codec_vector(c, m->names, &m->nnames, 1, sizeof *m->names);
    if (c->reading)
        m->cap_names = m->nnames;
    struct u64map index; /* writing: name pointer -> index + 1 */
    u64map_init(&index);
    for (size_t i = 0; i < m->nnames; i++) {
        summary_model_text(c, &m->names[i]);
        uint64_t *slot = c->reading ? NULL : u64map_slot(&index, (uintptr_t)m->names[i]);
        if (!c->reading && !slot)
            report_oom();
        if (slot)
            *slot = i + 1;
    }
    m->calls = summary_codec_vector(c, m->calls, &m->ncalls, 9, sizeof *m->calls);
    if (c->reading)
        m->cap_calls = m->ncalls;
    uint64_t prev = 0;
    for (size_t i = 0; i < m->ncalls; i++) {
        struct model_comm_call *call = &m->calls[i];
        uint64_t name = 0;
        if (!c->reading) {
            const uint64_t *v = u64map_find(&index, (uintptr_t)call->name);
            name = v ? *v : 0;
        }
        summary_codec_u64(c, &name);
        /* Times as differences: calls come in order, so these stay short. */
        int64_t since = (int64_t)(call->start_ns - prev);
        uint64_t length = call->end_ns - call->start_ns;
        summary_codec_i64(c, &since);
        summary_codec_u64(c, &length);
        summary_codec_u64(c, &call->bytes);
        summary_codec_u64(c, &call->comm);
        summary_codec_u32(c, &call->comm_size);
        summary_codec_i32(c, &call->peer);
        summary_codec_u32(c, &call->tid);
        summary_codec_u8(c, &call->source);
        if (call->source > MODEL_COMM_TORCH_OP)
            summary_codec_fail(c, "a communication call of no known source");
        summary_codec_u8(c, &call->setup);
        summary_codec_u8(c, &call->failed);
        if (c->reading) {
            if (name == 0 || name > m->nnames) {
                summary_codec_fail(c, "a communication call without a name");
                name = 0;
            }
            call->name = name ? m->names[name - 1] : "";
            call->start_ns = prev + (uint64_t)since;
            call->end_ns = call->start_ns + length;
        }
        prev = call->start_ns;
    }
    u64map_free(&index);
}

void summary_model_process(sf_codec *c, struct model_process *p)
{
    sf_core(c, p);
    sf_python(c, p);
    sf_gpu(c, p);
    summary_model_gpu_part(c, p);
    sf_torch(c, p);
    summary_model_steps(c, p);
    summary_codec_i64(c, &p->comm.realtime_offset_ns);
    /* The calls, behind their length: a reader skips them until the merge asks. */
    size_t len = 0;
    if (!c->reading) {
        sf_codec calls;
        summary_codec_writer(&calls);
        summary_model_comm(&calls, &p->comm);
        len = calls.len;
        summary_codec_size(c, &len);
        summary_codec_bytes(c, calls.buf, calls.len);
        free(calls.buf);
        return;
    }
    summary_codec_size(c, &len);
    if (!c->bad && len > c->len - c->pos)
        summary_codec_fail(c, "cut off in the communication calls");
    if (c->bad)
        return;
    p->summary_comm_offset = c->pos;
    c->pos += len;
}
