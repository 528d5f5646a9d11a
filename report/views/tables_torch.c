/* tables_torch: the PyTorch operator table (--ops) in the columns, meanings and units of
 * torch.profiler's key_averages().table(): times as "1.234ms", shares as "12.34%", memory
 * as "1.50 Kb". */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tables.h"
#include "format.h"
#include "text_table.h"

/* Some process has CPU or device tensor memory records. */
static int summary_torch_memory_any(const struct summary *s)
{
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->torch.memory.any || s->procs[i]->torch.ndevices)
            return 1;
    return 0;
}

void tables_torch_time(double ns, char *buf, size_t len)
{
    /* torch's _format_time, from microseconds. */
    double us = ns / 1e3;
    if (us >= 1e6)
        snprintf(buf, len, "%.3fs", us / 1e6);
    else if (us >= 1e3)
        snprintf(buf, len, "%.3fms", us / 1e3);
    else
        snprintf(buf, len, "%.3fus", us);
}

void tables_torch_share(double part, double total, char *buf, size_t len)
{
    /* torch's _format_time_share: NaN when nothing is counted at all. */
    if (total <= 0)
        snprintf(buf, len, "NaN");
    else
        snprintf(buf, len, "%.2f%%", 100.0 * part / total);
}

void tables_torch_memory(int64_t bytes, char *buf, size_t len)
{
    /* torch's _format_memory */
    const double kb = 1024.0, mb = 1024.0 * kb, gb = 1024.0 * mb;
    double v = (double)bytes, a = v < 0 ? -v : v;
    if (a >= gb)
        snprintf(buf, len, "%.2f Gb", v / gb);
    else if (a >= mb)
        snprintf(buf, len, "%.2f Mb", v / mb);
    else if (a >= kb)
        snprintf(buf, len, "%.2f Kb", v / kb);
    else
        snprintf(buf, len, "%" PRId64 " b", bytes);
}

static void tables_torch_table(FILE *out, const struct summary *s, size_t limit, const char *more)
{
    const struct summary_torch *t = &s->torch;
    char self_pct[16], self_cpu[32], total_pct[16], total[32], avg[32];
    char self_cuda[32], self_cuda_pct[16], cuda_total[32], cuda_avg[32], calls[24];
    char cpu_mem[32], self_cpu_mem[32], cuda_mem[32], self_cuda_mem[32];
    double cpu_sum = (double)t->self_cpu_total_ns, cuda_sum = (double)t->self_cuda_total_ns;
    struct text_table tt;
    text_table_begin(&tt, t->by_shape
                              ? "<Name|>Self CPU %|>Self CPU|>CPU total %|>CPU total|>CPU time avg|"
                                ">Self CUDA|>Self CUDA %|>CUDA total|>CUDA time avg|>CPU Mem|"
                                ">Self CPU Mem|>CUDA Mem|>Self CUDA Mem|># of Calls|<Input Shapes"
                              : "<Name|>Self CPU %|>Self CPU|>CPU total %|>CPU total|>CPU time avg|"
                                ">Self CUDA|>Self CUDA %|>CUDA total|>CUDA time avg|>CPU Mem|"
                                ">Self CPU Mem|>CUDA Mem|>Self CUDA Mem|># of Calls");
    for (size_t i = 0; i < t->nrows && (!limit || i < limit); i++) {
        const struct summary_op_row *r = &t->rows[i];
        tables_torch_share((double)r->self_cpu_ns, cpu_sum, self_pct, sizeof self_pct);
        tables_torch_time((double)r->self_cpu_ns, self_cpu, sizeof self_cpu);
        tables_torch_share((double)r->cpu_total_ns, cpu_sum, total_pct, sizeof total_pct);
        tables_torch_time((double)r->cpu_total_ns, total, sizeof total);
        tables_torch_time(r->cpu_avg_ns, avg, sizeof avg);
        tables_torch_time((double)r->self_cuda_ns, self_cuda, sizeof self_cuda);
        tables_torch_share((double)r->self_cuda_ns, cuda_sum, self_cuda_pct, sizeof self_cuda_pct);
        tables_torch_time((double)r->cuda_total_ns, cuda_total, sizeof cuda_total);
        tables_torch_time(r->cuda_avg_ns, cuda_avg, sizeof cuda_avg);
        tables_torch_memory(r->cpu_mem, cpu_mem, sizeof cpu_mem);
        tables_torch_memory(r->self_cpu_mem, self_cpu_mem, sizeof self_cpu_mem);
        tables_torch_memory(r->dev_mem, cuda_mem, sizeof cuda_mem);
        tables_torch_memory(r->self_dev_mem, self_cuda_mem, sizeof self_cuda_mem);
        snprintf(calls, sizeof calls, "%" PRIu64, r->calls);
        text_table_row(&tt, r->name, self_pct, self_cpu, total_pct, total, avg, self_cuda,
                       self_cuda_pct, cuda_total, cuda_avg, cpu_mem, self_cpu_mem, cuda_mem,
                       self_cuda_mem, calls, r->shapes && *r->shapes ? r->shapes : "[]");
    }
    text_table_end(out, &tt);
    if (limit && t->nrows > limit)
        fprintf(out, "  (%zu more not shown; %s)\n", t->nrows - limit, more);
    tables_torch_time(cpu_sum, self_cpu, sizeof self_cpu);
    tables_torch_time(cuda_sum, self_cuda, sizeof self_cuda);
    fprintf(out, "  Self CPU time total: %s\n", self_cpu);
    fprintf(out, "  Self CUDA time total: %s\n", self_cuda);
    if (!t->mem_records && !t->dev_mem_records)
        fprintf(out, "  (no tensor memory was recorded: the memory columns are 0)\n");
}

static void tables_torch_title(FILE *out, const struct summary *s)
{
    const struct summary_torch *t = &s->torch;
    fprintf(out, "PyTorch operators (%" PRIu64 " op%s", t->calls, t->calls == 1 ? "" : "s");
    if (t->spans_expected > t->records) /* the op trees count what the timeline dropped */
        fprintf(out, "; the timeline kept %" PRIu64 " of %" PRIu64 " op spans", t->records,
                t->spans_expected);
    fprintf(out, "; ordered by %s%s)\n", summary_op_sort_name(t->sort),
            t->by_shape ? "; grouped by input shapes" : "");
}

void tables_ops(FILE *out, const struct summary *s, size_t limit)
{
    tables_torch_title(out, s);
    if (!s->torch.nrows) {
        fprintf(out, "  (no PyTorch operators recorded; is the torch hook on?)\n");
        return;
    }
    tables_torch_table(out, s, limit, "--limit");
    tables_over_ranks(out, "Self CPU", s->torch.rows, tables_over_ranks_rows(s->torch.nrows, limit),
                      sizeof *s->torch.rows, offsetof(struct summary_op_row, name),
                      offsetof(struct summary_op_row, over_ranks));
    if (summary_torch_memory_any(s)) {
        fputc('\n', out);
        tables_torch_memory_section(out, s);
    }
}

void tables_ops_section(FILE *out, const struct summary *s, size_t limit)
{
    if (!s->torch.nrows)
        return;
    tables_torch_title(out, s);
    tables_torch_table(out, s, limit ? limit : 15, "profreport --ops");
    fputc('\n', out);
}

void tables_torch_memory_default(FILE *out, const struct summary *s)
{
    if (!summary_torch_memory_any(s))
        return;
    tables_torch_memory_section(out, s);
    fputc('\n', out);
}

static void tables_torch_memory_line(FILE *out, const struct model_process *p,
                                     const struct model_torch_memory *m)
{
    char peak[32], alloc[32], freed[32], live[32], reserved[32], device[48];
    tables_torch_memory(m->peak_bytes, peak, sizeof peak);
    tables_torch_memory((int64_t)m->allocated, alloc, sizeof alloc);
    tables_torch_memory((int64_t)m->freed, freed, sizeof freed);
    tables_torch_memory(m->live_at_end, live, sizeof live);
    model_torch_device_name(m->dev_type, m->dev_index, device, sizeof device);
    if (p->pid >= 0)
        fprintf(out, "  pid %lld %s: ", (long long)p->pid, device);
    else
        fprintf(out, "  %s %s: ", p->file, device);
    fprintf(out, "peak %s at +%.3f s in ", peak, (double)m->peak_ns / 1e9);
    format_fputs_escaped(out, m->peak_op             ? m->peak_op
                              : m->peak_unattributed ? "(record lost)"
                                                     : "(no op)");
    const struct model_py_func *f = model_torch_peak_func(p, m);
    if (f) {
        fputs(", from ", out);
        format_fputs_escaped(out, f->file ? f->file : "?");
        fprintf(out, ":%" PRIu32 "(", f->line);
        format_fputs_escaped(out, f->qualname ? f->qualname : (f->name ? f->name : "?"));
        fputc(')', out);
    }
    fprintf(out, "\n    allocated %s, freed %s, live at end %s", alloc, freed, live);
    if (m->dev_type != MODEL_TORCH_DEVICE_CPU) {
        tables_torch_memory((int64_t)m->reserved_peak, reserved, sizeof reserved);
        fprintf(out, "; allocator reserved at most %s", reserved);
    }
    fputc('\n', out);
    if (m->records_lost)
        fprintf(out,
                "    (%" PRIu64 " of %" PRIu64 " memory records lost: peak, allocated, freed and "
                "live at end are the process's own exact counts; the peak's op %s)\n",
                m->records_lost, m->alloc_count + m->free_count,
                m->peak_unattributed ? "is unknown" : "is from its record");
}

/* "pid 7300 CPU: peak 1.50 Mb at +2.345 s in aten::addmm, from train.py:20(Model.forward)"
 * and the totals, one line pair per process and device; nothing without memory records. */
void tables_torch_memory_section(FILE *out, const struct summary *s)
{
    if (!summary_torch_memory_any(s))
        return;
    fprintf(out, "PyTorch memory (tensor bytes live, per process and device, as torch's own "
                 "allocators report them:\nc10's CPU allocator, the CUDA caching allocator; "
                 "not the CUDA runtime's cudaMalloc)\n");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (p->torch.memory.any)
            tables_torch_memory_line(out, p, &p->torch.memory);
        for (size_t d = 0; d < p->torch.ndevices; d++)
            tables_torch_memory_line(out, p, &p->torch.devices[d]);
    }
}
