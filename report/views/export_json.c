#include "export.h"
#include "steps_view.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "findings.h"
#include "format.h"
#include "jobs.h"
#include "model_steps_load.h"
#include "tables.h"

/* Builders that never fail in practice (jansson allocates), kept short at call sites. */
static json_t *export_json_u64(uint64_t v)
{
    return json_integer((json_int_t)v);
}

/* What part of the run a table's rows cover (tables_torch_window and its kind). */
static json_t *export_json_cover(const char *window, const char *note, uint64_t ns)
{
    return json_pack("{s:s,s:s,s:o}", "part", window ? window : "the whole process", "note",
                     window ? note : "", "ns", export_json_u64(ns));
}

json_t *export_json_str(const char *s)
{
    if (!s)
        return json_null();
    json_t *j = json_string(s);
    if (j)
        return j;
    char *copy = strdup(s);
    if (!copy)
        return json_null();
    for (char *c = copy; *c; c++)
        if ((unsigned char)*c >= 0x80)
            *c = '?';
    j = json_string(copy);
    free(copy);
    return j ? j : json_null();
}

static json_t *export_json_dim3(uint64_t packed, int present)
{
    char buf[48];
    if (!present)
        return json_null();
    model_dim3_format(packed, buf, sizeof buf);
    return json_string(buf);
}

static json_t *export_json_mem_stats(const struct model_mem_stats *m)
{
    return json_pack("{s:o,s:o,s:o,s:o,s:o}", "alloc_count", export_json_u64(m->alloc_count),
                     "alloc_bytes", export_json_u64(m->alloc_bytes), "free_count",
                     export_json_u64(m->free_count), "free_bytes", export_json_u64(m->free_bytes),
                     "peak_bytes", export_json_u64(m->peak_bytes));
}

static json_t *export_json_memory(const struct model_mem_stats mem[MODEL_SPACE_COUNT])
{
    json_t *o = json_object();
    for (int m = 0; m < MODEL_SPACE_COUNT; m++)
        json_object_set_new(o, model_space_name(m), export_json_mem_stats(&mem[m]));
    return o;
}

static json_t *export_json_meta(const struct model_process *p)
{
    json_t *o = json_object(), *argv = json_array();
    for (size_t i = 0; i < p->nmeta; i++) {
        if (!strcmp(p->meta[i].key, "argv"))
            json_array_append_new(argv, export_json_str(p->meta[i].value));
        else
            json_object_set_new(o, p->meta[i].key, export_json_str(p->meta[i].value));
    }
    json_object_set_new(o, "argv", argv);
    return o;
}

/* A site of a memory part: its op and Python functions (null: none). */
static json_t *export_json_mem_site(const struct model_process *p,
                                    const struct model_torch_mem_site *site)
{
    const struct model_py_func *fn[2] = {model_python_func(p, site->func),
                                         model_python_func(p, site->own)};
    json_t *o = json_object();
    json_object_set_new(o, "op", export_json_str(site->op));
    for (int k = 0; k < 2; k++)
        json_object_set_new(
            o, k ? "own_python" : "python",
            fn[k] ? json_pack("{s:o,s:o,s:I}", "qualname",
                              export_json_str(fn[k]->qualname ? fn[k]->qualname : fn[k]->name),
                              "file", export_json_str(fn[k]->file), "line", (json_int_t)fn[k]->line)
                  : json_null());
    return o;
}

/* The memory of one device in the part the tables cover (model_torch_memory_part.c); null
 * when the figures are the whole process's (torch_memory_cover says why). */
static json_t *export_json_memory_part(const struct model_process *p,
                                       const struct model_torch_memory_part *q)
{
    if (q->window == MODEL_WINDOW_ALL)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "part", export_json_str(model_window_name(q->window)));
    json_object_set_new(o, "ns", export_json_u64(q->window_ns));
    json_object_set_new(o, "steps", export_json_u64(q->steps));
    /* of the steps after the first, those whose live bytes grew */
    json_object_set_new(o, "later_steps_grown", export_json_u64(q->steps_grown));
    json_object_set_new(o, "live_start_bytes", json_integer((json_int_t)q->live_start));
    json_object_set_new(o, "live_after_first_step_bytes",
                        json_integer((json_int_t)q->live_first_end));
    json_object_set_new(o, "live_end_bytes", json_integer((json_int_t)q->live_end));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)q->peak_bytes));
    json_object_set_new(o, "peak_ns", export_json_u64(q->peak_ns));
    json_object_set_new(o, "peak_site",
                        q->peak_inside ? export_json_mem_site(p, &q->peak) : json_null());
    json_object_set_new(o, "allocated_bytes", export_json_u64(q->allocated));
    json_object_set_new(o, "freed_bytes", export_json_u64(q->freed));
    json_object_set_new(o, "allocations", export_json_u64(q->alloc_count));
    json_object_set_new(o, "frees", export_json_u64(q->free_count));
    /* the site whose live bytes grew the most after the part's first step */
    json_object_set_new(o, "grew_bytes", json_integer((json_int_t)q->grew_bytes));
    json_object_set_new(o, "grew_site",
                        q->grew_bytes > 0 ? export_json_mem_site(p, &q->grew) : json_null());
    return o;
}

/* The tensor memory peak of one device of a process; null without its records. */
static json_t *export_json_torch_memory(const struct model_process *p,
                                        const struct model_torch_memory *m)
{
    if (!m->any)
        return json_null();
    char device[48];
    json_t *o = json_object();
    json_object_set_new(
        o, "device",
        export_json_str(model_torch_device_name(m->dev_type, m->dev_index, device, sizeof device)));
    json_object_set_new(o, "peak_bytes", json_integer((json_int_t)m->peak_bytes));
    json_object_set_new(o, "peak_ns", export_json_u64(m->peak_ns));
    json_object_set_new(o, "peak_op",
                        export_json_str(m->peak_op             ? m->peak_op
                                        : m->peak_unattributed ? "(record lost)"
                                                               : "(no op)"));
    const struct model_py_func *f = model_torch_peak_func(p, m);
    json_object_set_new(o, "peak_python",
                        f ? json_pack("{s:o,s:o,s:I}", "qualname",
                                      export_json_str(f->qualname ? f->qualname : f->name), "file",
                                      export_json_str(f->file), "line", (json_int_t)f->line)
                          : json_null());
    json_object_set_new(o, "allocated_bytes", export_json_u64(m->allocated));
    json_object_set_new(o, "freed_bytes", export_json_u64(m->freed));
    json_object_set_new(o, "live_at_end_bytes", json_integer((json_int_t)m->live_at_end));
    json_object_set_new(o, "allocations", export_json_u64(m->alloc_count));
    json_object_set_new(o, "frees", export_json_u64(m->free_count));
    /* true: peak, allocated, freed, live at end and the counts are the process's own */
    json_object_set_new(o, "exact", json_boolean(m->exact));
    json_object_set_new(o, "records_lost", export_json_u64(m->records_lost));
    if (m->dev_type != MODEL_TORCH_DEVICE_CPU)
        json_object_set_new(o, "reserved_peak_bytes", export_json_u64(m->reserved_peak));
    json_object_set_new(o, "part", export_json_memory_part(p, &m->part));
    return o;
}

/* mark: the process's every step is left to steps_view_json_every (steps_view_json). */
static json_t *export_json_process(const struct model_process *p, const char *mark,
                                   uint64_t *warmup)
{
    json_t *o = json_object();
    json_object_set_new(o, "file", export_json_str(p->file));
    json_object_set_new(o, "pid", p->pid >= 0 ? json_integer(p->pid) : json_null());
    json_object_set_new(o, "ppid", p->ppid >= 0 ? json_integer(p->ppid) : json_null());
    json_object_set_new(o, "host", export_json_str(p->host));
    json_object_set_new(o, "rank", p->rank >= 0 ? json_integer(p->rank) : json_null());
    json_object_set_new(o, "run_id", export_json_str(p->run_id));
    json_object_set_new(o, "command", export_json_str(p->command));
    json_object_set_new(o, "clean_end", json_boolean(p->clean_end));
    char why[64];
    json_object_set_new(o, "end_signal", json_integer(p->end_signal));
    json_object_set_new(o, "end", json_string(tables_end_text(p, why, sizeof why)));
    json_object_set_new(o, "truncated", json_boolean(p->truncated));
    json_object_set_new(o, "lost", export_json_u64(p->lost));
    json_object_set_new(o, "records", export_json_u64(p->records));
    json_t *notes = json_array();
    for (size_t i = 0; i < p->nnotes; i++)
        json_array_append_new(notes, export_json_str(p->notes[i]));
    json_object_set_new(o, "notes", notes);
    json_object_set_new(o, "meta", export_json_meta(p));
    json_object_set_new(o, "memory", export_json_memory(p->mem));
    json_object_set_new(o, "torch_memory", export_json_torch_memory(p, &p->torch.memory));
    json_t *devices = json_array();
    for (size_t d = 0; d < p->torch.ndevices; d++)
        json_array_append_new(devices, export_json_torch_memory(p, &p->torch.devices[d]));
    json_object_set_new(o, "torch_device_memory", devices);
    json_object_set_new(o, "steps", steps_view_json(p, mark, warmup));
    if (p->set_device_used) {
        json_t *devs = json_array();
        for (size_t d = 0; d < p->ndevice_mem; d++) {
            json_t *m = export_json_mem_stats(&p->device_mem[d]);
            json_object_set_new(m, "device", json_integer((json_int_t)d));
            json_array_append_new(devs, m);
        }
        json_object_set_new(o, "memory_by_device", devs);
    }
    json_t *threads = json_array();
    for (size_t i = 0; i < p->nthreads; i++) {
        const struct model_thread *t = &p->threads[i];
        json_array_append_new(threads, json_pack("{s:I,s:o,s:o,s:o,s:o}", "tid", (json_int_t)t->tid,
                                                 "name", export_json_str(t->name), "calls",
                                                 export_json_u64(t->calls), "api_time_ns",
                                                 export_json_u64(t->api_ns), "lost",
                                                 export_json_u64(t->lost)));
    }
    json_object_set_new(o, "threads", threads);

    struct pystats_thread *pt;
    size_t npt = pystats_threads(p, &pt);
    json_t *py_threads = json_array();
    for (size_t i = 0; i < npt; i++)
        json_array_append_new(py_threads, json_pack("{s:I,s:o,s:o}", "tid", (json_int_t)pt[i].tid,
                                                    "functions", export_json_u64(pt[i].functions),
                                                    "calls", export_json_u64(pt[i].calls)));
    free(pt);
    json_object_set_new(o, "python_threads", py_threads);
    json_t *gaps = json_array();
    for (size_t i = 0; i < p->py.ngaps; i++) {
        const struct model_py_gap *g = &p->py.gaps[i];
        json_array_append_new(gaps,
                              json_pack("{s:I,s:s,s:o,s:o}", "tid", (json_int_t)g->tid, "reason",
                                        model_py_gap_reason_name(g->reason), "start_ns",
                                        export_json_u64(g->start_ns), "end_ns",
                                        g->end_ticks ? export_json_u64(g->end_ns) : json_null()));
    }
    json_object_set_new(o, "python_gaps", gaps);
    json_object_set_new(o, "python_spans", export_json_u64(p->py.spans));
    return o;
}

static json_t *export_json_python(const struct pystats *py, size_t limit, int gpu)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < py->nfuncs && (!limit || i < limit); i++) {
        const struct pystats_func *f = &py->funcs[py->order[i]];
        json_t *o = json_object();
        json_object_set_new(o, "file", export_json_str(f->file));
        json_object_set_new(o, "line", export_json_u64(f->line));
        json_object_set_new(o, "name", export_json_str(f->name));
        json_object_set_new(o, "qualname", export_json_str(f->qualname));
        json_object_set_new(o, "module", export_json_str(f->module));
        json_object_set_new(o, "kind", json_string(f->kind == PROF_PY_FUNC_C ? "c" : "python"));
        json_object_set_new(o, "ncalls", export_json_u64(f->ncalls));
        json_object_set_new(o, "primitive_calls", export_json_u64(f->pcalls));
        json_object_set_new(o, "tottime_ns", export_json_u64(f->tottime_ns));
        json_object_set_new(o, "cumtime_ns", export_json_u64(f->cumtime_ns));
        json_object_set_new(o, "api_calls", export_json_u64(f->api_calls));
        json_object_set_new(o, "api_ns", export_json_u64(f->api_ns));
        if (gpu) /* the inputs hold GPU records */
            json_object_set_new(o, "gpu_ns", export_json_u64(f->gpu_ns));
        json_array_append_new(rows, o);
    }
    return rows;
}

/* A row's value over the ranks, added as "over_ranks" when the inputs hold two ranks or
 * more. */
static void export_json_over_ranks(json_t *o, const struct rank_spread *r)
{
    if (!r->ranks)
        return;
    json_object_set_new(o, "over_ranks",
                        json_pack("{s:o,s:o,s:o,s:o,s:I}", "min_ns", export_json_u64(r->min),
                                  "median_ns", export_json_u64(r->median), "max_ns",
                                  export_json_u64(r->max), "ranks", export_json_u64(r->ranks),
                                  "rank_at_max", (json_int_t)r->rank_at_max));
}

/* ---- GPU ---- */

static json_t *export_json_kernel(const struct summary_gpu_kernel_row *r)
{
    json_t *from = json_array();
    for (size_t i = 0; i < r->nsites; i++) {
        const struct summary_launch_site *l = &r->sites[i];
        json_array_append_new(
            from, json_pack("{s:o,s:o,s:o,s:o,s:o}", "python", export_json_str(l->qualname), "file",
                            export_json_str(l->file), "line", export_json_u64(l->line), "calls",
                            export_json_u64(l->calls), "gpu_ns", export_json_u64(l->gpu_ns)));
    }
    json_t *o = json_object();
    json_object_set_new(o, "name", export_json_str(r->name));
    json_object_set_new(o, "calls", export_json_u64(r->calls));
    json_object_set_new(o, "total_ns", export_json_u64(r->total_ns));
    json_object_set_new(o, "avg_ns", json_real(r->avg_ns));
    json_object_set_new(o, "min_ns", export_json_u64(r->min_ns));
    json_object_set_new(o, "max_ns", export_json_u64(r->max_ns));
    json_object_set_new(o, "percent", json_real(r->percent));
    json_object_set_new(o, "grid", export_json_dim3(r->grid, 1));
    json_object_set_new(o, "block", export_json_dim3(r->block, 1));
    json_object_set_new(o, "registers", export_json_u64(r->registers));
    json_object_set_new(o, "launched_from", from);
    export_json_over_ranks(o, &r->over_ranks);
    return o;
}

static json_t *export_json_gpu_processes(const struct summary *s, int devices)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        json_t *pid = p->pid >= 0 ? json_integer(p->pid) : json_null();
        for (size_t d = 0; devices && d < p->gpu.ndevices; d++) {
            const struct model_gpu_device *m = &p->gpu.devices[d];
            char cc[16];
            snprintf(cc, sizeof cc, "%u.%u", m->compute_major, m->compute_minor);
            json_array_append_new(
                rows, json_pack("{s:O,s:o,s:o,s:o,s:o,s:o,s:o,s:s}", "pid", pid, "device",
                                export_json_u64(m->device), "name", export_json_str(m->name),
                                "sm_count", export_json_u64(m->sm_count), "global_memory_bytes",
                                export_json_u64(m->global_memory_bytes), "core_clock_khz",
                                export_json_u64(m->core_clock_khz), "memory_clock_khz",
                                export_json_u64(m->memory_clock_khz), "compute_capability", cc));
        }
        for (size_t b = 0; !devices && b < p->gpu.nbusy; b++) {
            const struct model_gpu_busy *u = &p->gpu.busy[b];
            json_array_append_new(
                rows,
                json_pack("{s:O,s:o,s:o,s:o,s:o,s:f}", "pid", pid, "device",
                          export_json_u64(u->device), "stream",
                          u->stream < 0 ? json_null() : json_integer(u->stream), "busy_ns",
                          export_json_u64(u->busy_ns), "wall_ns", export_json_u64(p->wall_ns),
                          "fraction", p->wall_ns ? (double)u->busy_ns / (double)p->wall_ns : 0.0));
        }
        json_decref(pid);
    }
    return rows;
}

/* torch.profiler's key_averages() rows; shapes null unless grouped by shape. */
static json_t *export_json_ops(const struct summary *s, size_t limit)
{
    json_t *a = json_array();
    for (size_t i = 0; i < s->torch.nrows && (!limit || i < limit); i++) {
        const struct summary_op_row *r = &s->torch.rows[i];
        json_t *o = json_object();
        json_object_set_new(o, "name", export_json_str(r->name));
        json_object_set_new(o, "shapes", export_json_str(r->shapes));
        json_object_set_new(o, "calls", export_json_u64(r->calls));
        json_object_set_new(o, "self_cpu_ns", export_json_u64(r->self_cpu_ns));
        json_object_set_new(o, "cpu_total_ns", export_json_u64(r->cpu_total_ns));
        json_object_set_new(o, "cpu_avg_ns", json_real(r->cpu_avg_ns));
        json_object_set_new(o, "self_cuda_ns", export_json_u64(r->self_cuda_ns));
        json_object_set_new(o, "cuda_total_ns", export_json_u64(r->cuda_total_ns));
        json_object_set_new(o, "cuda_avg_ns", json_real(r->cuda_avg_ns));
        json_object_set_new(o, "cpu_mem_bytes", json_integer((json_int_t)r->cpu_mem));
        json_object_set_new(o, "self_cpu_mem_bytes", json_integer((json_int_t)r->self_cpu_mem));
        json_object_set_new(o, "cuda_mem_bytes", json_integer((json_int_t)r->dev_mem));
        json_object_set_new(o, "self_cuda_mem_bytes", json_integer((json_int_t)r->self_dev_mem));
        json_object_set_new(o, "self_cpu_percent", json_real(r->self_cpu_percent));
        json_object_set_new(o, "cpu_total_percent", json_real(r->cpu_total_percent));
        json_object_set_new(o, "self_cuda_percent", json_real(r->self_cuda_percent));
        export_json_over_ranks(o, &r->over_ranks);
        json_array_append_new(a, o);
    }
    return a;
}

static void export_json_gpu(json_t *root, const struct summary *s, size_t limit)
{
    const struct summary_gpu *g = &s->gpu;
    json_t *a = json_array();
    for (size_t i = 0; i < g->nkernels && (!limit || i < limit); i++)
        json_array_append_new(a, export_json_kernel(&g->kernels[i]));
    json_object_set_new(root, "gpu_kernels", a);

    a = json_array();
    for (size_t i = 0; i < g->ncopies; i++) {
        const struct summary_gpu_copy_row *r = &g->copies[i];
        json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:o,s:o,s:o,s:f}", "direction",
                                           model_gpu_copy_kind_name(r->copy_kind), "src",
                                           model_gpu_memory_kind_name(r->src_kind), "dst",
                                           model_gpu_memory_kind_name(r->dst_kind), "calls",
                                           export_json_u64(r->calls), "bytes",
                                           export_json_u64(r->bytes), "total_ns",
                                           export_json_u64(r->total_ns), "gbps",
                                           format_gbps_value(r->bytes, r->total_ns)));
    }
    json_object_set_new(root, "gpu_copies", a);

    a = json_array();
    for (size_t i = 0; i < g->nsets; i++) {
        const struct summary_gpu_set_row *r = &g->sets[i];
        json_array_append_new(
            a, json_pack("{s:o,s:o,s:o,s:o,s:f}", "device", export_json_u64(r->device), "calls",
                         export_json_u64(r->calls), "bytes", export_json_u64(r->bytes), "total_ns",
                         export_json_u64(r->total_ns), "gbps",
                         format_gbps_value(r->bytes, r->total_ns)));
    }
    json_object_set_new(root, "gpu_sets", a);
    json_object_set_new(root, "gpu_utilization", export_json_gpu_processes(s, 0));
    json_object_set_new(root, "gpu_devices", export_json_gpu_processes(s, 1));

    a = json_array();
    for (size_t i = 0; i < g->nlibrary; i++) {
        const struct summary_library_row *r = &g->library[i];
        json_array_append_new(
            a, json_pack("{s:o,s:o,s:o,s:o,s:o}", "name", export_json_str(r->name), "calls",
                         export_json_u64(r->calls), "cpu_ns", export_json_u64(r->cpu_ns), "gpu_ns",
                         export_json_u64(r->gpu_ns), "kernels", export_json_u64(r->kernels)));
    }
    json_object_set_new(root, "library_calls", a);

    a = json_array();
    for (size_t i = 0; i < g->ncupti && (!limit || i < limit); i++) {
        const struct summary_cupti_row *r = &g->cupti[i];
        json_array_append_new(a, json_pack("{s:o,s:s,s:o,s:o,s:f,s:o}", "name",
                                           export_json_str(r->name), "domain",
                                           r->domain == PROF_GPU_API_DRIVER    ? "driver"
                                           : r->domain == PROF_GPU_API_RUNTIME ? "runtime"
                                                                               : "other",
                                           "calls", export_json_u64(r->calls), "total_ns",
                                           export_json_u64(r->total_ns), "avg_ns", r->avg_ns,
                                           "max_ns", export_json_u64(r->max_ns)));
    }
    json_object_set_new(root, "cupti_api", a);

    a = json_array();
    for (size_t i = 0; i < g->nactions && (!limit || i < limit); i++) {
        const struct summary_action_row *r = &g->actions[i];
        json_t *o = json_pack("{s:o,s:o,s:f,s:f,s:f,s:f,s:o,s:s}", "name", export_json_str(r->name),
                              "calls", export_json_u64(r->calls), "mean_s", r->mean_ns / 1e9,
                              "total_s", (double)r->total_ns / 1e9, "percent", r->percent, "gpu_s",
                              (double)r->gpu_ns / 1e9, "kernels", export_json_u64(r->kernels),
                              "source", summary_action_source_key(r->source));
        if (r->folded_scope) /* its "[pl][profile]" record_function scope is this row */
            json_object_set_new(o, "folded_scope", json_true());
        export_json_over_ranks(o, &r->over_ranks);
        json_array_append_new(a, o);
    }
    json_object_set_new(root, "actions", a);
    static const char *const bases[] = {
        [SUMMARY_ACTION_BASE_WALL] = "wall",
        [SUMMARY_ACTION_BASE_LIGHTNING] = "lightning_span",
        [SUMMARY_ACTION_BASE_STEPS] = "profiler_steps",
        [SUMMARY_ACTION_BASE_BUILTIN] = "builtin_actions",
        [SUMMARY_ACTION_BASE_TRAINING] = "training",
    };
    json_object_set_new(root, "actions_percent_of",
                        json_pack("{s:s,s:o,s:o,s:o,s:o}", "base", bases[g->action_base], "ns",
                                  export_json_u64(g->action_base_ns), "wall_ns",
                                  export_json_u64(g->action_wall_ns), "folded_scopes",
                                  export_json_u64(g->action_folded), "unfolded_scopes",
                                  export_json_u64(g->action_unfolded)));
    if (g->action_training_ns) /* said beside the base (summary_actions.c) */
        json_object_set_new(json_object_get(root, "actions_percent_of"), "training_steps_ns",
                            export_json_u64(g->action_training_ns));
    a = json_array();
    for (size_t i = 0; i < g->nmarks; i++)
        json_array_append_new(a, json_pack("{s:o,s:o}", "name", export_json_str(g->marks[i].name),
                                           "calls", export_json_u64(g->marks[i].calls)));
    json_object_set_new(root, "nvtx_marks", a);
    json_object_set_new(root, "gpu_unattributed_kernels", export_json_u64(g->unattributed));
}

/* The findings (findings.h), first in the report as in the text. */
static json_t *export_json_findings(const struct summary *s)
{
    struct findings f;
    findings_build(&f, s);
    json_t *a = json_array();
    for (size_t i = 0; i < f.n; i++) {
        const struct finding *x = &f.items[i];
        json_array_append_new(a, json_pack("{s:s,s:o,s:o,s:o,s:f}", "kind", x->kind, "title",
                                           export_json_str(x->title), "evidence",
                                           export_json_str(x->evidence), "where",
                                           export_json_str(x->where), "value", x->value));
    }
    findings_free(&f);
    return a;
}

/* The "processes" value's place holder in the dumped root: a control character that a
 * string of the report's is written escaped as \u0001, after a newline and the root's one
 * space of indent that only a key of the root's has (a string never holds a raw newline). */
#define EXPORT_JSON_PROCS_MARK "\001processes\001"
#define EXPORT_JSON_PROCS_AT "\n \"processes\": \"\\u0001processes\\u0001\""

/* text's first n bytes, with two more spaces after each newline: a process's own dump
 * (depth 0) as it stands in the root's "processes" array (depth 2). */
static int export_json_put_indented(FILE *out, const char *text, size_t n)
{
    for (const char *c = text, *end = text + n; c < end;) {
        const char *nl = memchr(c, '\n', (size_t)(end - c));
        size_t len = nl ? (size_t)(nl - c) : (size_t)(end - c);
        if (fwrite(c, 1, len, out) != len || (nl && fputs("\n  ", out) == EOF))
            return -1;
        c += len + (nl != NULL);
    }
    return 0;
}

/* A process's steps' place holder: its "steps" object's key, at depth 2 of the process's
 * own dump, and the mark as jansson escapes it (used only when it occurs once). */
#define EXPORT_JSON_STEPS_MARK "\001steps\001"
#define EXPORT_JSON_STEPS_AT "\n  \"steps\": \"\\u0001steps\\u0001\""

/* One process as json_dumpf(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER) writes it in the
 * root's "processes" array (depth 2); its every step written straight (a jansson object of
 * 17 per step was most of the JSON report's time). */
static int export_json_dump_process(FILE *out, const struct model_process *p)
{
    uint64_t warmup = 0;
    json_t *o = export_json_process(p, p->steps.nsteps ? EXPORT_JSON_STEPS_MARK : NULL, &warmup);
    char *text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(o);
    char *at = text && p->steps.nsteps ? strstr(text, EXPORT_JSON_STEPS_AT) : NULL;
    if (text && p->steps.nsteps && (!at || strstr(at + 1, EXPORT_JSON_STEPS_AT))) {
        /* a string of the trace's looks like the mark: every step through jansson */
        free(text);
        o = export_json_process(p, NULL, NULL);
        text = json_dumps(o, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
        json_decref(o);
        at = NULL;
    }
    if (!text)
        return -1;
    int rc;
    if (at) {
        size_t head = (size_t)(at - text) + strlen("\n  \"steps\": ");
        const char *tail = at + strlen(EXPORT_JSON_STEPS_AT);
        rc = export_json_put_indented(out, text, head) ||
                     steps_view_json_every(out, p, warmup, 4) ||
                     export_json_put_indented(out, tail, strlen(tail))
                 ? -1
                 : 0;
    } else {
        rc = export_json_put_indented(out, text, strlen(text));
    }
    free(text);
    model_steps_let_go(p); /* one process's steps at a time */
    return rc;
}

/* root as json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER) would write it with
 * every process in "processes", byte for byte, holding one process's tree at a time. */
static int export_json_dump(FILE *out, json_t *root, const struct summary *s)
{
    if (!s->nprocs)
        return json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    char *text = json_dumps(root, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    char *at = text ? strstr(text, EXPORT_JSON_PROCS_AT) : NULL;
    if (!at) {
        free(text);
        return -1;
    }
    size_t head = (size_t)(at - text) + strlen("\n \"processes\": ");
    int rc = fwrite(text, 1, head, out) == head && fputs("[\n  ", out) != EOF ? 0 : -1;
    for (size_t i = 0; i < s->nprocs && !rc; i++) {
        rc = export_json_dump_process(out, s->procs[i]);
        if (!rc && fputs(i + 1 < s->nprocs ? ",\n  " : "\n ]", out) == EOF)
            rc = -1;
    }
    const char *tail = at + strlen(EXPORT_JSON_PROCS_AT);
    if (!rc && fputs(tail, out) == EOF)
        rc = -1;
    free(text);
    return rc;
}

int export_json_write(FILE *out, const struct summary *s, size_t limit)
{
    json_t *root = json_object();
    json_t *runs = json_array();
    for (size_t i = 0; i < s->nruns; i++)
        json_array_append_new(runs,
                              s->runs[i].id[0] ? export_json_str(s->runs[i].id) : json_null());
    json_object_set_new(root, "runs", runs);
    json_object_set_new(root, "findings", export_json_findings(s));
    if (s->job)
        json_object_set_new(root, "job", jobs_json(s->job));

    /* The processes are written one at a time where this mark is (export_json_dump): each
     * holds its every step, so the whole tree of 1,024 ranks' steps took gigabytes. */
    json_object_set_new(root, "processes",
                        s->nprocs ? json_string(EXPORT_JSON_PROCS_MARK) : json_array());

    json_t *api = json_array();
    for (size_t i = 0; i < s->napi && (!limit || i < limit); i++) {
        const struct summary_api_row *r = &s->api[i];
        json_array_append_new(
            api, json_pack("{s:o,s:s,s:o,s:o,s:o,s:f,s:o,s:o,s:f}", "name",
                           export_json_str(r->name), "category", model_category_name(r->category),
                           "calls", export_json_u64(r->calls), "errors", export_json_u64(r->errors),
                           "total_ns", export_json_u64(r->total_ns), "avg_ns", r->avg_ns, "min_ns",
                           export_json_u64(r->min_ns), "max_ns", export_json_u64(r->max_ns),
                           "percent", r->percent));
    }
    json_object_set_new(root, "api", api);

    json_t *kernels = json_array();
    for (size_t i = 0; i < s->nkernels && (!limit || i < limit); i++) {
        const struct summary_kernel_row *r = &s->kernels[i];
        json_array_append_new(
            kernels, json_pack("{s:o,s:o,s:o,s:o,s:f,s:o,s:o}", "name", export_json_str(r->name),
                               "launches", export_json_u64(r->launches), "errors",
                               export_json_u64(r->errors), "total_ns", export_json_u64(r->total_ns),
                               "avg_ns", r->avg_ns, "grid", export_json_dim3(r->grid, r->has_grid),
                               "block", export_json_dim3(r->block, r->has_block)));
    }
    json_object_set_new(root, "kernels", kernels);
    json_object_set_new(root, "memory", export_json_memory(s->mem));

    json_t *copies = json_array();
    for (int d = 0; d < MODEL_DIR_COUNT; d++) {
        const struct model_copy_stats *c = &s->copies[d];
        if (!c->calls)
            continue;
        json_array_append_new(
            copies,
            json_pack("{s:s,s:o,s:o,s:o,s:o,s:f}", "direction", model_direction_name(d), "calls",
                      export_json_u64(c->calls), "errors", export_json_u64(c->errors), "bytes",
                      export_json_u64(c->bytes), "total_ns", export_json_u64(c->ns), "gbps",
                      format_gbps_value(c->bytes, c->ns)));
    }
    json_object_set_new(root, "copies", copies);
    json_object_set_new(root, "python", export_json_python(&s->py, limit, tables_python_gpu(s)));
    char py_note[768];
    const char *py_window = tables_python_window(s, py_note, sizeof py_note);
    json_object_set_new(root, "python_cover",
                        export_json_cover(py_window, py_note, tables_python_window_ns(s)));
    export_json_gpu(root, s, limit);
    json_object_set_new(root, "ops", export_json_ops(s, limit));
    char note[512];
    const char *window = tables_torch_window(s, note, sizeof note);
    json_object_set_new(root, "ops_cover",
                        export_json_cover(window, note, tables_torch_window_ns(s)));
    window = tables_torch_memory_window(s, note, sizeof note);
    json_object_set_new(root, "torch_memory_cover",
                        export_json_cover(window, note, tables_torch_memory_window_ns(s)));
    window = tables_gpu_window(s, note, sizeof note);
    json_object_set_new(root, "gpu_cover",
                        export_json_cover(window, note, tables_gpu_window_ns(s)));

    json_t *warnings = json_array();
    for (size_t i = 0; i < s->nwarnings; i++)
        json_array_append_new(warnings, export_json_str(s->warnings[i]));
    json_object_set_new(root, "warnings", warnings);

    int rc = export_json_dump(out, root, s);
    fputc('\n', out);
    json_decref(root);
    return rc;
}
