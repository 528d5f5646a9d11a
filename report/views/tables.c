#define _GNU_SOURCE /* sigabbrev_np */
#include "tables.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "text_table.h"

static const char *tables_u64(char *buf, uint64_t v)
{
    sprintf(buf, "%" PRIu64, v);
    return buf;
}

static const char *tables_time(char *buf, double ns)
{
    format_ns(ns, buf, 32);
    return buf;
}

/* The library an API row belongs to, by the prefix its names share (the .def tables of
 * preload/cuda and preload/comm). */
enum tables_lib { LIB_CUDART, LIB_DRIVER, LIB_CUBLAS, LIB_CUDNN, LIB_NCCL, LIB_MPI, LIB_OTHER };
static const char *const tables_lib_names[] = {"CUDA runtime", "CUDA driver", "cuBLAS", "cuDNN",
                                               "NCCL",         "MPI",         "Other"};

static enum tables_lib tables_api_lib(const char *name)
{
    if (!strncmp(name, "MPI_", 4) || !strncmp(name, "PMPI_", 5))
        return LIB_MPI;
    if (!strncmp(name, "nccl", 4))
        return LIB_NCCL;
    if (!strncmp(name, "cublas", 6))
        return LIB_CUBLAS;
    if (!strncmp(name, "cudnn", 5))
        return LIB_CUDNN;
    if (!strncmp(name, "cuda", 4) || !strncmp(name, "__cuda", 6))
        return LIB_CUDART;
    if (name[0] == 'c' && name[1] == 'u' && name[2] >= 'A' && name[2] <= 'Z')
        return LIB_DRIVER;
    return LIB_OTHER;
}

const char *tables_api_library(const char *name)
{
    return tables_lib_names[tables_api_lib(name)];
}

/* The processes that made calls of lib (as summary.c counts their calls). */
static size_t tables_lib_procs(const struct summary *s, enum tables_lib lib)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        int made = 0;
        for (size_t a = 0; a < p->napis && !made; a++) {
            struct model_api_counts c;
            model_gpu_part_api(p, a, &c);
            made = p->apis[a] && c.calls && tables_api_lib(p->apis[a]->name) == lib;
        }
        n += (size_t)made;
    }
    return n;
}

/* One table per library (CUDA runtime, cuBLAS, MPI, ...), with the processes that called
 * it; % API time is of every library's calls together. */
static void tables_api(FILE *out, const struct summary *s, size_t limit)
{
    char calls[24], errors[24], total[32], avg[32], min[32], max[32], pct[16];
    if (!s->napi) {
        tables_gpu_title(out, s, "CUDA runtime API summary", "(%zu process%s, API time %s)",
                         s->nprocs, s->nprocs == 1 ? "" : "es",
                         tables_time(total, (double)s->api_total_ns));
        fprintf(out, "  (no CUDA API calls)\n\n");
        return;
    }
    for (int lib = LIB_CUDART; lib <= LIB_OTHER; lib++) {
        size_t n = 0, shown = 0;
        uint64_t lib_ns = 0;
        for (size_t i = 0; i < s->napi; i++)
            if (tables_api_lib(s->api[i].name) == (enum tables_lib)lib) {
                n++;
                lib_ns += s->api[i].total_ns;
            }
        if (!n)
            continue;
        char name[48];
        snprintf(name, sizeof name, "%s API summary", tables_lib_names[lib]);
        size_t procs = tables_lib_procs(s, (enum tables_lib)lib);
        tables_gpu_title(out, s, name, "(%zu process%s, %s time %s)", procs,
                         procs == 1 ? "" : "es", tables_lib_names[lib],
                         tables_time(total, (double)lib_ns));
        struct text_table t;
        text_table_begin(&t, "<Name|>Calls|>Errors|>Total|>Avg|>Min|>Max|>% API time");
        for (size_t i = 0; i < s->napi && (!limit || shown < limit); i++) {
            const struct summary_api_row *r = &s->api[i];
            if (tables_api_lib(r->name) != (enum tables_lib)lib)
                continue;
            shown++;
            snprintf(pct, sizeof pct, "%.1f%%", r->percent);
            text_table_row(&t, r->name, tables_u64(calls, r->calls), tables_u64(errors, r->errors),
                           tables_time(total, (double)r->total_ns), tables_time(avg, r->avg_ns),
                           tables_time(min, (double)r->min_ns), tables_time(max, (double)r->max_ns),
                           pct);
        }
        text_table_end(out, &t);
        if (shown < n)
            fprintf(out, "  (%zu more not shown; --limit)\n", n - shown);
        fputc('\n', out);
    }
}

static void tables_kernels(FILE *out, const struct summary *s, size_t limit)
{
    char launches[24], errors[24], total[32], avg[32], grid[48], block[48], kname[512];
    int shortened = 0;
    fprintf(out, "Kernel launches%s\n", tables_gpu_whole(s));
    if (!s->nkernels) {
        fprintf(out, "  (no kernel launches)\n\n");
        return;
    }
    struct text_table t;
    text_table_begin(&t,
                     "<Kernel|>Launches|>Errors|>Launch API total|>Launch API avg|>Grid|>Block");
    for (size_t i = 0; i < s->nkernels && (!limit || i < limit); i++) {
        const struct summary_kernel_row *r = &s->kernels[i];
        if (r->has_grid)
            model_dim3_format(r->grid, grid, sizeof grid);
        else
            strcpy(grid, "-");
        if (r->has_block)
            model_dim3_format(r->block, block, sizeof block);
        else
            strcpy(block, "-");
        text_table_row(&t, format_kernel_name(r->name, kname, sizeof kname, &shortened),
                       tables_u64(launches, r->launches), tables_u64(errors, r->errors),
                       tables_time(total, (double)r->total_ns), tables_time(avg, r->avg_ns), grid,
                       block);
    }
    text_table_end(out, &t);
    tables_kernel_names_note(out, shortened);
    if (limit && s->nkernels > limit)
        fprintf(out, "  (%zu more not shown; --limit)\n", s->nkernels - limit);
    fputc('\n', out);
}

static void tables_mem_row(struct text_table *t, const char *scope, const char *space,
                           const struct model_mem_stats *m)
{
    char ac[24], ab[32], fc[24], fb[32], peak[32];
    format_bytes(m->alloc_bytes, ab, sizeof ab);
    format_bytes(m->free_bytes, fb, sizeof fb);
    format_bytes(m->peak_bytes, peak, sizeof peak);
    text_table_row(t, scope, space, tables_u64(ac, m->alloc_count), ab,
                   tables_u64(fc, m->free_count), fb, peak);
}

static int tables_mem_used(const struct model_mem_stats *m)
{
    return m->alloc_count || m->free_count;
}

static int tables_memory_any(const struct summary *s)
{
    for (int m = 0; m < MODEL_SPACE_COUNT; m++)
        if (tables_mem_used(&s->mem[m]))
            return 1;
    for (int d = 0; d < MODEL_DIR_COUNT; d++)
        if (s->copies[d].calls)
            return 1;
    return 0;
}

static void tables_memory(FILE *out, const struct summary *s)
{
    char scope[64];
    struct text_table t;
    fprintf(out, "CUDA runtime memory (cudaMalloc, cudaMallocHost, cudaMallocManaged calls; "
                 "peak = most\nbytes live at once in one process): not PyTorch's tensor "
                 "memory, which its own allocators\nreport (the PyTorch memory section)\n");
    text_table_begin(&t, "<Scope|<Space|>Allocs|>Alloc bytes|>Frees|>Free bytes|>Peak live");
    for (int m = 0; m < MODEL_SPACE_COUNT; m++)
        if (tables_mem_used(&s->mem[m]))
            tables_mem_row(&t, "all", model_space_name(m), &s->mem[m]);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (s->nprocs > 1) {
            for (int m = 0; m < MODEL_SPACE_COUNT; m++) {
                snprintf(scope, sizeof scope, "pid %lld", (long long)p->pid);
                if (tables_mem_used(&p->mem[m]))
                    tables_mem_row(&t, scope, model_space_name(m), &p->mem[m]);
            }
        }
        if (!p->set_device_used)
            continue;
        for (size_t d = 0; d < p->ndevice_mem; d++) {
            snprintf(scope, sizeof scope, "pid %lld device %zu", (long long)p->pid, d);
            if (tables_mem_used(&p->device_mem[d]))
                tables_mem_row(&t, scope, "device", &p->device_mem[d]);
        }
    }
    if (t.nrows)
        text_table_end(out, &t);
    else {
        text_table_discard(&t);
        fprintf(out, "  (no CUDA runtime allocations)\n");
    }

    char calls[24], bytes[32], total[32], gbps[32];
    fprintf(out, "\nCopies and sets%s\n", tables_gpu_whole(s));
    text_table_begin(&t, "<Direction|>Calls|>Bytes|>API time|>GB/s over API time");
    for (int d = 0; d < MODEL_DIR_COUNT; d++) {
        const struct model_copy_stats *c = &s->copies[d];
        if (!c->calls)
            continue;
        format_bytes(c->bytes, bytes, sizeof bytes);
        format_gbps(c->bytes, c->ns, gbps, sizeof gbps);
        text_table_row(&t, model_direction_name(d), tables_u64(calls, c->calls), bytes,
                       tables_time(total, (double)c->ns), gbps);
    }
    if (t.nrows)
        text_table_end(out, &t);
    else {
        text_table_discard(&t);
        fprintf(out, "  (no copies or sets)\n");
    }
    fputc('\n', out);
}

/* Whether the process of a trace without its END is still running: the trace's boot id is
 * this machine's and its pid has the start time the trace recorded (META boot_id,
 * proc_start_ticks: field 22 of /proc/PID/stat). */
static int tables_still_running(const struct model_process *p)
{
    const char *boot = model_meta_get(p, "boot_id"), *start = model_meta_get(p, "proc_start_ticks");
    char here[64] = "", path[64], stat[1024];
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    if (!boot || !start || p->pid <= 0 || !f) {
        if (f)
            fclose(f);
        return 0;
    }
    if (!fgets(here, sizeof here, f))
        here[0] = '\0';
    fclose(f);
    here[strcspn(here, "\n")] = '\0';
    if (strcmp(here, boot))
        return 0;
    snprintf(path, sizeof path, "/proc/%lld/stat", (long long)p->pid);
    if (!(f = fopen(path, "r")))
        return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *x = strrchr(stat, ')'); /* the command may hold spaces and parentheses */
    for (int field = 2; x && field < 22; field++)
        x = strchr(x + 1, ' ');
    return x && strtoull(x + 1, NULL, 10) == strtoull(start, NULL, 10);
}

const char *tables_end_text(const struct model_process *p, char *buf, size_t len)
{
    if (!p->clean_end)
        return tables_still_running(p) ? "still running when read (the trace so far)"
                                       : "process did not finish writing (killed?)";
    if (!p->end_signal)
        return p->truncated ? "clean, file damaged" : "clean";
    const char *name = p->end_signal > 0 && p->end_signal < 65 ? sigabbrev_np(p->end_signal) : NULL;
    snprintf(buf, len, "ended by signal %d%s%s%s%s", p->end_signal, name ? " (SIG" : "",
             name ? name : "", name ? ")" : "", p->truncated ? ", file damaged" : "");
    return buf;
}

/* The threads of every process; all: every one, else those that made an intercepted API
 * call or lost events, the others counted (a CPU-only run's dozen "0 calls" rows said in
 * one line). */
static void tables_threads(FILE *out, const struct summary *s, int all)
{
    char pid[24], tid[24], calls[24], time[32], lost[24];
    size_t nthreads = 0, shown = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        for (size_t k = 0; k < s->procs[i]->nthreads; k++) {
            const struct model_thread *th = &s->procs[i]->threads[k];
            nthreads++;
            shown += all || th->calls || th->lost;
        }
    if (!shown) { /* (with all: no thread at all) */
        fprintf(out,
                "\nThreads: %zu in %zu process%s, none with intercepted API calls or lost "
                "events%s\n",
                nthreads, s->nprocs, s->nprocs == 1 ? "" : "es",
                all ? "" : " (--threads lists them)");
        return;
    }
    struct text_table t;
    fprintf(out, "\nThreads\n");
    text_table_begin(&t, ">PID|>TID|<Name|>Calls|>API time|>Lost");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        snprintf(pid, sizeof pid, "%lld", (long long)p->pid);
        for (size_t k = 0; k < p->nthreads; k++) {
            const struct model_thread *th = &p->threads[k];
            if (!all && !th->calls && !th->lost)
                continue;
            snprintf(tid, sizeof tid, "%u", th->tid);
            text_table_row(&t, pid, tid, th->name ? th->name : "", tables_u64(calls, th->calls),
                           tables_time(time, (double)th->api_ns), tables_u64(lost, th->lost));
        }
    }
    text_table_end(out, &t);
    if (shown < nthreads)
        fprintf(out,
                "  (%zu threads without API calls or lost events not shown; --threads lists "
                "them)\n",
                nthreads - shown);
}

static void tables_processes(FILE *out, const struct summary *s, int all_threads)
{
    char pid[24], ppid[24], rank[24], lost[24];
    struct text_table t;
    fprintf(out, "Processes\n");
    text_table_begin(&t, "<File|>PID|>PPID|<Host|>Rank|<End|>Lost|<Command");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        snprintf(pid, sizeof pid, "%lld", (long long)p->pid);
        snprintf(ppid, sizeof ppid, "%lld", (long long)p->ppid);
        if (p->rank >= 0)
            snprintf(rank, sizeof rank, "%lld", (long long)p->rank);
        else
            strcpy(rank, "-");
        char why[64];
        const char *end = tables_end_text(p, why, sizeof why);
        text_table_row(&t, p->file, p->pid >= 0 ? pid : "?", p->ppid >= 0 ? ppid : "?",
                       p->host ? p->host : "?", rank, end, tables_u64(lost, p->lost),
                       p->command ? p->command : "?");
    }
    text_table_end(out, &t);
    tables_threads(out, s, all_threads);

    int header = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        for (size_t k = 0; k < s->procs[i]->nnotes; k++) {
            if (!header++)
                fprintf(out, "\nProfiler notes\n");
            fprintf(out, "  pid %lld: ", (long long)s->procs[i]->pid);
            format_fputs_escaped(out, s->procs[i]->notes[k]);
            fputc('\n', out);
        }
    }
}

void tables_memory_view(FILE *out, const struct summary *s)
{
    tables_torch_memory_default(out, s, 0); /* every process's */
    tables_memory(out, s);
}

void tables_print(FILE *out, const struct summary *s, size_t limit)
{
    /* A Python job without CUDA gets no screen of "(no ...)" tables. */
    int python = s->py.nfuncs > 0 || s->py_gaps > 0;
    if (!python || s->napi || tables_gpu_whole(s)[0]) /* (calls, none in the part) */
        tables_api(out, s, limit);
    if (!python || s->nkernels)
        tables_kernels(out, s, limit);
    tables_gpu_section(out, s, limit);
    tables_actions_section(out, s, limit);
    tables_ops_section(out, s, limit);
    tables_torch_memory_default(out, s, 4);
    if (!python || tables_memory_any(s))
        tables_memory(out, s);
    tables_python_section(out, s, limit);
    tables_processes(out, s, 0);
}

void tables_threads_view(FILE *out, const struct summary *s)
{
    tables_processes(out, s, 1);
}

void tables_over_ranks(FILE *out, const char *value, const void *rows, size_t n, size_t stride,
                       size_t name_at, size_t spread_at, int kernel_names)
{
    const char *base = rows;
    size_t ranks = 0;
    for (size_t i = 0; i < n; i++) {
        const struct rank_spread *r = (const void *)(base + i * stride + spread_at);
        if (r->ranks > ranks)
            ranks = r->ranks;
    }
    if (ranks < 2)
        return;
    fprintf(out, "\n  Over the ranks (%s per rank, of the ranks that ran it):\n", value);
    int shortened = 0;
    struct text_table t;
    text_table_begin(&t, "<Name|>Ranks|>Min|>Median|>Max|>Rank at max");
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)(const void *)(base + i * stride + name_at);
        const struct rank_spread *r = (const void *)(base + i * stride + spread_at);
        char nr[24], mn[32], md[32], mx[32], at[24], kname[512];
        if (kernel_names && name)
            name = format_kernel_name(name, kname, sizeof kname, &shortened);
        snprintf(nr, sizeof nr, "%zu", r->ranks);
        format_ns((double)r->min, mn, sizeof mn);
        format_ns((double)r->median, md, sizeof md);
        format_ns((double)r->max, mx, sizeof mx);
        if (r->rank_at_max >= 0)
            snprintf(at, sizeof at, "%lld", (long long)r->rank_at_max);
        else
            snprintf(at, sizeof at, "-");
        text_table_row(&t, name ? name : "?", nr, mn, md, mx, at);
    }
    text_table_end(out, &t);
    tables_kernel_names_note(out, shortened);
}

void tables_kernel_names_note(FILE *out, int shortened)
{
    if (shortened)
        fprintf(out,
                "  (kernel names without their return type, parameters and the namespaces "
                "inside <>, cut in the middle past %d columns; --format json or csv gives "
                "them whole)\n",
                FORMAT_KERNEL_COLS);
}

size_t tables_over_ranks_rows(size_t nrows, size_t limit)
{
    size_t n = limit && limit < nrows ? limit : nrows;
    return !limit && n > 20 ? 20 : n;
}
