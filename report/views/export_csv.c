#include "export.h"

#include <inttypes.h>
#include <string.h>

#include "format.h"
#include "tables.h"

static void export_csv_mem_row(FILE *out, const char *scope, const char *space,
                               const struct model_mem_stats *m)
{
    format_csv_field(out, scope);
    fprintf(out, ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", space,
            m->alloc_count, m->alloc_bytes, m->free_count, m->free_bytes, m->peak_bytes);
}

static void export_csv_gpu(FILE *out, const struct summary *s, size_t limit)
{
    const struct summary_gpu *g = &s->gpu;
    char grid[48], block[48];
    fprintf(out, "\n# gpu_kernels\nname,calls,total_ns,avg_ns,min_ns,max_ns,percent,grid,block,"
                 "registers,launched_from\n");
    for (size_t i = 0; i < g->nkernels && (!limit || i < limit); i++) {
        const struct summary_gpu_kernel_row *r = &g->kernels[i];
        model_dim3_format(r->grid, grid, sizeof grid);
        model_dim3_format(r->block, block, sizeof block);
        format_csv_field(out, r->name);
        fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%.1f,%" PRIu64 ",%" PRIu64 ",%.3f,", r->calls,
                r->total_ns, r->avg_ns, r->min_ns, r->max_ns, r->percent);
        format_csv_field(out, grid);
        fputc(',', out);
        format_csv_field(out, block);
        fprintf(out, ",%" PRIu64 ",", r->registers);
        format_csv_field(out, r->nsites ? r->sites[0].qualname : "");
        fputc('\n', out);
    }
    fprintf(out, "\n# gpu_copies\ndirection,src,dst,calls,bytes,total_ns,gbps\n");
    for (size_t i = 0; i < g->ncopies; i++) {
        const struct summary_gpu_copy_row *r = &g->copies[i];
        fprintf(out, "%s,%s,%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f\n",
                model_gpu_copy_kind_name(r->copy_kind), model_gpu_memory_kind_name(r->src_kind),
                model_gpu_memory_kind_name(r->dst_kind), r->calls, r->bytes, r->total_ns,
                format_gbps_value(r->bytes, r->total_ns));
    }
    fprintf(out, "\n# gpu_sets\ndevice,calls,bytes,total_ns,gbps\n");
    for (size_t i = 0; i < g->nsets; i++) {
        const struct summary_gpu_set_row *r = &g->sets[i];
        fprintf(out, "%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f\n", r->device, r->calls, r->bytes,
                r->total_ns, format_gbps_value(r->bytes, r->total_ns));
    }
    fprintf(out, "\n# gpu_utilization\npid,device,stream,busy_ns,wall_ns,fraction\n");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t b = 0; b < p->gpu.nbusy; b++) {
            const struct model_gpu_busy *u = &p->gpu.busy[b];
            fprintf(out, "%lld,%u,", (long long)p->pid, u->device);
            if (u->stream >= 0)
                fprintf(out, "%" PRId64, u->stream);
            fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%.6f\n", u->busy_ns, p->wall_ns,
                    p->wall_ns ? (double)u->busy_ns / (double)p->wall_ns : 0.0);
        }
    }
    fprintf(out, "\n# gpu_devices\npid,device,name,sm_count,global_memory_bytes,core_clock_khz,"
                 "memory_clock_khz,compute_capability\n");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t d = 0; d < p->gpu.ndevices; d++) {
            const struct model_gpu_device *m = &p->gpu.devices[d];
            fprintf(out, "%lld,%u,", (long long)p->pid, m->device);
            format_csv_field(out, m->name);
            fprintf(out, ",%u,%" PRIu64 ",%u,%u,%u.%u\n", m->sm_count, m->global_memory_bytes,
                    m->core_clock_khz, m->memory_clock_khz, m->compute_major, m->compute_minor);
        }
    }
    fprintf(out, "\n# library_calls\nname,calls,cpu_ns,gpu_ns,kernels\n");
    for (size_t i = 0; i < g->nlibrary; i++) {
        const struct summary_library_row *r = &g->library[i];
        format_csv_field(out, r->name);
        fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", r->calls, r->cpu_ns,
                r->gpu_ns, r->kernels);
    }
    fprintf(out, "\n# cupti_api\nname,domain,calls,total_ns,avg_ns,max_ns\n");
    for (size_t i = 0; i < g->ncupti && (!limit || i < limit); i++) {
        const struct summary_cupti_row *r = &g->cupti[i];
        format_csv_field(out, r->name);
        fprintf(out, ",%s,%" PRIu64 ",%" PRIu64 ",%.1f,%" PRIu64 "\n",
                r->domain == PROF_GPU_API_DRIVER ? "driver" : "runtime", r->calls, r->total_ns,
                r->avg_ns, r->max_ns);
    }
    fprintf(out, "\n# actions\nname,calls,mean_s,total_s,percent,gpu_s,kernels,source\n");
    for (size_t i = 0; i < g->nactions && (!limit || i < limit); i++) {
        const struct summary_action_row *r = &g->actions[i];
        format_csv_field(out, r->name);
        fprintf(out, ",%" PRIu64 ",%.9f,%.9f,%.3f,%.9f,%" PRIu64 ",%s\n", r->calls,
                r->mean_ns / 1e9, (double)r->total_ns / 1e9, r->percent, (double)r->gpu_ns / 1e9,
                r->kernels, summary_action_source_key(r->source));
    }
}

/* torch.profiler's key_averages() rows; shapes empty unless grouped by shape. */
/* What part of the run a table's rows cover (tables_torch_window, tables_python_window). */
static void export_csv_cover(FILE *out, const char *section, const char *window, const char *note,
                             uint64_t ns)
{
    fprintf(out, "\n# %s\npart,note,ns\n", section);
    format_csv_field(out, window ? window : "the whole process");
    fputc(',', out);
    format_csv_field(out, window ? note : "");
    fprintf(out, ",%" PRIu64 "\n", ns);
}

static void export_csv_ops(FILE *out, const struct summary *s, size_t limit)
{
    fprintf(out, "\n# ops\nname,shapes,calls,self_cpu_ns,cpu_total_ns,cpu_avg_ns,self_cuda_ns,"
                 "cuda_total_ns,cuda_avg_ns,self_cpu_percent,cpu_total_percent,"
                 "self_cuda_percent,cpu_mem_bytes,self_cpu_mem_bytes,cuda_mem_bytes,"
                 "self_cuda_mem_bytes\n");
    for (size_t i = 0; i < s->torch.nrows && (!limit || i < limit); i++) {
        const struct summary_op_row *r = &s->torch.rows[i];
        format_csv_field(out, r->name);
        fputc(',', out);
        format_csv_field(out, r->shapes ? r->shapes : "");
        fprintf(out,
                ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f,%" PRIu64 ",%" PRIu64
                ",%.1f,%.3f,%.3f,%.3f,%" PRId64 ",%" PRId64 ",%" PRId64 ",%" PRId64 "\n",
                r->calls, r->self_cpu_ns, r->cpu_total_ns, r->cpu_avg_ns, r->self_cuda_ns,
                r->cuda_total_ns, r->cuda_avg_ns, r->self_cpu_percent, r->cpu_total_percent,
                r->self_cuda_percent, r->cpu_mem, r->self_cpu_mem, r->dev_mem, r->self_dev_mem);
    }
    char note[512]; /* what the rows cover, as the JSON's ops_cover */
    const char *window = tables_torch_window(s, note, sizeof note);
    export_csv_cover(out, "ops_cover", window, note, tables_torch_window_ns(s));
}

static void export_csv_over_ranks_row(FILE *out, const char *table, const char *name,
                                      const struct rank_spread *r)
{
    if (r->ranks < 2)
        return;
    fprintf(out, "%s,", table);
    format_csv_field(out, name ? name : "");
    fprintf(out, ",%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%lld\n", r->ranks, r->min, r->median,
            r->max, (long long)r->rank_at_max);
}

/* Of two ranks or more: each op's Self CPU, kernel's GPU time and action's time per rank
 * (rows of one rank only are left out). */
static void export_csv_over_ranks(FILE *out, const struct summary *s, size_t limit)
{
    int any = 0;
    for (size_t i = 0; i < s->torch.nrows && !any; i++)
        any = s->torch.rows[i].over_ranks.ranks >= 2;
    for (size_t i = 0; i < s->gpu.nkernels && !any; i++)
        any = s->gpu.kernels[i].over_ranks.ranks >= 2;
    for (size_t i = 0; i < s->gpu.nactions && !any; i++)
        any = s->gpu.actions[i].over_ranks.ranks >= 2;
    if (!any)
        return;
    fprintf(out, "\n# over_ranks\ntable,name,ranks,min_ns,median_ns,max_ns,rank_at_max\n");
    for (size_t i = 0; i < s->torch.nrows && (!limit || i < limit); i++)
        export_csv_over_ranks_row(out, "ops", s->torch.rows[i].name, &s->torch.rows[i].over_ranks);
    for (size_t i = 0; i < s->gpu.nkernels && (!limit || i < limit); i++)
        export_csv_over_ranks_row(out, "gpu_kernels", s->gpu.kernels[i].name,
                                  &s->gpu.kernels[i].over_ranks);
    for (size_t i = 0; i < s->gpu.nactions && (!limit || i < limit); i++)
        export_csv_over_ranks_row(out, "actions", s->gpu.actions[i].name,
                                  &s->gpu.actions[i].over_ranks);
}

int export_csv_write(FILE *out, const struct summary *s, size_t limit)
{
    char a[48], b[48], scope[64];

    fprintf(out, "# api\nname,category,calls,errors,total_ns,avg_ns,min_ns,max_ns,percent\n");
    for (size_t i = 0; i < s->napi && (!limit || i < limit); i++) {
        const struct summary_api_row *r = &s->api[i];
        format_csv_field(out, r->name);
        fprintf(out, ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f,%" PRIu64 ",%" PRIu64 ",%.3f\n",
                model_category_name(r->category), r->calls, r->errors, r->total_ns, r->avg_ns,
                r->min_ns, r->max_ns, r->percent);
    }

    fprintf(out, "\n# kernels\nname,launches,errors,total_ns,avg_ns,grid,block\n");
    for (size_t i = 0; i < s->nkernels && (!limit || i < limit); i++) {
        const struct summary_kernel_row *r = &s->kernels[i];
        format_csv_field(out, r->name);
        fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.1f,", r->launches, r->errors,
                r->total_ns, r->avg_ns);
        a[0] = b[0] = 0;
        if (r->has_grid)
            model_dim3_format(r->grid, a, sizeof a);
        if (r->has_block)
            model_dim3_format(r->block, b, sizeof b);
        format_csv_field(out, a);
        fputc(',', out);
        format_csv_field(out, b);
        fputc('\n', out);
    }

    fprintf(out, "\n# memory\nscope,space,alloc_count,alloc_bytes,free_count,free_bytes,"
                 "peak_bytes\n");
    for (int m = 0; m < MODEL_SPACE_COUNT; m++)
        export_csv_mem_row(out, "all", model_space_name(m), &s->mem[m]);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        snprintf(scope, sizeof scope, "pid %lld", (long long)p->pid);
        for (int m = 0; m < MODEL_SPACE_COUNT; m++)
            export_csv_mem_row(out, scope, model_space_name(m), &p->mem[m]);
        for (size_t d = 0; p->set_device_used && d < p->ndevice_mem; d++) {
            snprintf(scope, sizeof scope, "pid %lld device %zu", (long long)p->pid, d);
            export_csv_mem_row(out, scope, "device", &p->device_mem[d]);
        }
    }

    fprintf(out, "\n# copies\ndirection,calls,errors,bytes,total_ns,gbps\n");
    for (int d = 0; d < MODEL_DIR_COUNT; d++) {
        const struct model_copy_stats *c = &s->copies[d];
        if (c->calls)
            fprintf(out, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%.3f\n",
                    model_direction_name(d), c->calls, c->errors, c->bytes, c->ns,
                    format_gbps_value(c->bytes, c->ns));
    }

    fprintf(out,
            "\n# processes\nfile,pid,ppid,host,rank,command,clean_end,truncated,lost,end_signal\n");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        format_csv_field(out, p->file);
        fprintf(out, ",%lld,%lld,", (long long)p->pid, (long long)p->ppid);
        format_csv_field(out, p->host ? p->host : "");
        if (p->rank >= 0)
            fprintf(out, ",%lld,", (long long)p->rank);
        else
            fputs(",,", out);
        format_csv_field(out, p->command ? p->command : "");
        fprintf(out, ",%d,%d,%" PRIu64 ",%d\n", p->clean_end, p->truncated, p->lost, p->end_signal);
    }

    fprintf(out, "\n# threads\npid,tid,name,calls,api_time_ns,lost\n");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t k = 0; k < p->nthreads; k++) {
            const struct model_thread *t = &p->threads[k];
            fprintf(out, "%lld,%u,", (long long)p->pid, t->tid);
            format_csv_field(out, t->name ? t->name : "");
            fprintf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 "\n", t->calls, t->api_ns, t->lost);
        }
    }

    export_csv_gpu(out, s, limit);
    char gpu_note[512]; /* what the API and kernel rows cover, as the JSON's gpu_cover */
    const char *gpu_window = tables_gpu_window(s, gpu_note, sizeof gpu_note);
    export_csv_cover(out, "gpu_cover", gpu_window, gpu_note, tables_gpu_window_ns(s));
    export_csv_ops(out, s, limit);

    /* gpu_ns only when the inputs hold GPU records (tables_python_gpu): the columns stay as
     * they were else. */
    fprintf(out,
            "\n# python\nfile,line,name,qualname,module,kind,ncalls,primitive_calls,"
            "tottime_ns,cumtime_ns,api_calls,api_ns%s\n",
            tables_python_gpu(s) ? ",gpu_ns" : "");
    for (size_t i = 0; i < s->py.nfuncs && (!limit || i < limit); i++) {
        const struct pystats_func *f = &s->py.funcs[s->py.order[i]];
        format_csv_field(out, f->file);
        fprintf(out, ",%" PRIu32 ",", f->line);
        format_csv_field(out, f->name);
        fputc(',', out);
        format_csv_field(out, f->qualname ? f->qualname : "");
        fputc(',', out);
        format_csv_field(out, f->module ? f->module : "");
        fprintf(out, ",%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64,
                f->kind == PROF_PY_FUNC_C ? "c" : "python", f->ncalls, f->pcalls, f->tottime_ns,
                f->cumtime_ns, f->api_calls, f->api_ns);
        if (tables_python_gpu(s))
            fprintf(out, ",%" PRIu64, f->gpu_ns);
        fputc('\n', out);
    }
    char note[768]; /* what the rows cover, as the JSON's python_cover */
    const char *window = tables_python_window(s, note, sizeof note);
    export_csv_cover(out, "python_cover", window, note, tables_python_window_ns(s));

    export_csv_over_ranks(out, s, limit);

    fprintf(out, "\n# warnings\nmessage\n");
    for (size_t i = 0; i < s->nwarnings; i++) {
        format_csv_field(out, s->warnings[i]);
        fputc('\n', out);
    }
    return ferror(out) ? -1 : 0;
}
