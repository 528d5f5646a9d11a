/* tables_torch: the PyTorch operator table (--ops) in the columns, meanings and units of
 * torch.profiler's key_averages().table(): times as "1.234ms", shares as "12.34%", memory
 * as "1.50 Kb". */
#include <inttypes.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "tables.h"
#include "alloc.h"
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

int tables_torch_has_cuda(const struct summary *s)
{
    if (s->gpu.nkernels)
        return 1;
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->torch.ndevices)
            return 1;
    for (size_t i = 0; i < s->torch.nrows; i++) {
        const struct summary_op_row *r = &s->torch.rows[i];
        if (r->self_cuda_ns || r->cuda_total_ns || r->dev_mem || r->self_dev_mem)
            return 1;
    }
    return 0;
}

/* The columns of torch's table; a CPU-only run (tables_torch_has_cuda 0) leaves out the
 * CUDA ones, as torch.profiler's table does without device events. */
enum {
    OPS_NAME,
    OPS_SELF_PCT,
    OPS_SELF_CPU,
    OPS_TOTAL_PCT,
    OPS_TOTAL,
    OPS_AVG,
    OPS_SELF_CUDA,
    OPS_SELF_CUDA_PCT,
    OPS_CUDA_TOTAL,
    OPS_CUDA_AVG,
    OPS_CPU_MEM,
    OPS_SELF_CPU_MEM,
    OPS_CUDA_MEM,
    OPS_SELF_CUDA_MEM,
    OPS_CALLS,
    OPS_SHAPES,
    OPS_COLS
};
static const char *const tables_ops_heads[OPS_COLS] = {
    "<Name",      ">Self CPU %",    ">Self CPU",   ">CPU total %",   ">CPU total", ">CPU time avg",
    ">Self CUDA", ">Self CUDA %",   ">CUDA total", ">CUDA time avg", ">CPU Mem",   ">Self CPU Mem",
    ">CUDA Mem",  ">Self CUDA Mem", "># of Calls", "<Input Shapes"};

static int tables_ops_col_shown(int col, int cuda, int by_shape)
{
    if (col == OPS_SHAPES)
        return by_shape;
    if (col == OPS_CUDA_MEM || col == OPS_SELF_CUDA_MEM ||
        (col >= OPS_SELF_CUDA && col <= OPS_CUDA_AVG))
        return cuda;
    return 1;
}

static void tables_torch_table(FILE *out, const struct summary *s, size_t limit, const char *more)
{
    const struct summary_torch *t = &s->torch;
    char buf[OPS_COLS][32];
    const char *cell[OPS_COLS], *shown[OPS_COLS];
    double cpu_sum = (double)t->self_cpu_total_ns, cuda_sum = (double)t->self_cuda_total_ns;
    int cuda = tables_torch_has_cuda(s);
    char spec[256] = "";
    for (int c = 0; c < OPS_COLS; c++)
        if (tables_ops_col_shown(c, cuda, t->by_shape)) {
            if (*spec)
                strcat(spec, "|");
            strcat(spec, tables_ops_heads[c]);
        }
    for (int c = 0; c < OPS_COLS; c++)
        cell[c] = buf[c];
    struct text_table tt;
    text_table_begin(&tt, spec);
    for (size_t i = 0; i < t->nrows && (!limit || i < limit); i++) {
        const struct summary_op_row *r = &t->rows[i];
        tables_torch_share((double)r->self_cpu_ns, cpu_sum, buf[OPS_SELF_PCT], 32);
        tables_torch_time((double)r->self_cpu_ns, buf[OPS_SELF_CPU], 32);
        tables_torch_share((double)r->cpu_total_ns, cpu_sum, buf[OPS_TOTAL_PCT], 32);
        tables_torch_time((double)r->cpu_total_ns, buf[OPS_TOTAL], 32);
        tables_torch_time(r->cpu_avg_ns, buf[OPS_AVG], 32);
        tables_torch_time((double)r->self_cuda_ns, buf[OPS_SELF_CUDA], 32);
        tables_torch_share((double)r->self_cuda_ns, cuda_sum, buf[OPS_SELF_CUDA_PCT], 32);
        tables_torch_time((double)r->cuda_total_ns, buf[OPS_CUDA_TOTAL], 32);
        tables_torch_time(r->cuda_avg_ns, buf[OPS_CUDA_AVG], 32);
        tables_torch_memory(r->cpu_mem, buf[OPS_CPU_MEM], 32);
        tables_torch_memory(r->self_cpu_mem, buf[OPS_SELF_CPU_MEM], 32);
        tables_torch_memory(r->dev_mem, buf[OPS_CUDA_MEM], 32);
        tables_torch_memory(r->self_dev_mem, buf[OPS_SELF_CUDA_MEM], 32);
        snprintf(buf[OPS_CALLS], 32, "%" PRIu64, r->calls);
        cell[OPS_NAME] = r->name;
        cell[OPS_SHAPES] = r->shapes && *r->shapes ? r->shapes : "[]";
        size_t n = 0;
        for (int c = 0; c < OPS_COLS; c++)
            if (tables_ops_col_shown(c, cuda, t->by_shape))
                shown[n++] = cell[c];
        text_table_row_cells(&tt, shown);
    }
    text_table_end(out, &tt);
    if (limit && t->nrows > limit)
        fprintf(out, "  (%zu more not shown; %s)\n", t->nrows - limit, more);
    tables_torch_time(cpu_sum, buf[0], 32);
    fprintf(out, "  Self CPU time total: %s\n", buf[0]);
    if (cuda) {
        tables_torch_time(cuda_sum, buf[0], 32);
        fprintf(out, "  Self CUDA time total: %s\n", buf[0]);
    } else {
        fprintf(out, "  (no CUDA events: a CPU-only run, the CUDA columns left out)\n");
    }
    if (!t->mem_records && !t->dev_mem_records)
        fprintf(out, "  (no tensor memory was recorded: the memory columns are 0)\n");
}

/* The operator rows' part of one process. */
static int tables_torch_part(const struct model_process *p, struct tables_part *part)
{
    const struct model_torch *t = &p->torch;
    *part = (struct tables_part){t->window, t->window_miss, t->window_ns, t->window_steps};
    return t->nrows || t->window != MODEL_WINDOW_ALL; /* a part with none still covers it */
}

const char *tables_part_note(const struct summary *s, tables_part_fn part_of, char *note,
                             size_t len)
{
    size_t n = 0, in = 0, lo = SIZE_MAX, hi = 0, stepless = 0;
    uint64_t ns = 0;
    unsigned asked = model_torch_window_asked(), window = MODEL_WINDOW_ALL;
    const char *why = NULL;
    *note = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        struct tables_part t;
        if (!part_of(p, &t))
            continue; /* nothing of the table's at all */
        n++;
        if (t.window != MODEL_WINDOW_ALL) {
            window = t.window;
            in++;
            ns += t.ns;
            lo = t.steps < lo ? t.steps : lo;
            hi = t.steps > hi ? t.steps : hi;
        } else if (!p->steps.nsteps) {
            stepless++;
        } else if (!why && t.miss != MODEL_WINDOW_MISS_NONE) {
            why = model_window_miss_text(t.miss);
        }
    }
    if (asked == MODEL_WINDOW_ALL || stepless == n) /* the steps section says there are none */
        return NULL;
    if (!in) {
        snprintf(note, len, "not %s: %s; --phase all", model_window_name(asked),
                 why ? why : "no training steps");
        return model_window_name(MODEL_WINDOW_ALL);
    }
    char steps[64] = "", spent[32], rest[320] = "";
    format_ns((double)ns, spent, sizeof spent);
    if (window != MODEL_WINDOW_STARTUP && lo == hi)
        snprintf(steps, sizeof steps, "%zu step%s%s, ", lo, lo == 1 ? "" : "s",
                 in > 1 ? " each" : "");
    else if (window != MODEL_WINDOW_STARTUP)
        snprintf(steps, sizeof steps, "%zu-%zu steps each, ", lo, hi);
    if (in < n)
        snprintf(rest, sizeof rest, "; the whole process for %zu of %zu processes (%s)", n - in, n,
                 why ? why : "no training steps");
    snprintf(note, len, "%s%s%s%s; --phase all: the whole process", steps, spent,
             in > 1 ? " in all" : "", rest);
    return model_window_name(window);
}

uint64_t tables_part_ns(const struct summary *s, tables_part_fn part_of)
{
    uint64_t ns = 0;
    struct tables_part t;
    for (size_t i = 0; i < s->nprocs; i++)
        if (part_of(s->procs[i], &t) && t.window != MODEL_WINDOW_ALL)
            ns += t.ns;
    return ns;
}

const char *tables_torch_window(const struct summary *s, char *note, size_t len)
{
    return tables_part_note(s, tables_torch_part, note, len);
}

uint64_t tables_torch_window_ns(const struct summary *s)
{
    return tables_part_ns(s, tables_torch_part);
}

/* Ops were recorded, none in the part of the run the table covers: says so (1). */
static int tables_torch_none_in_part(FILE *out, const struct summary *s)
{
    char note[512];
    const char *window = tables_torch_window(s, note, sizeof note);
    if (!window || !strcmp(window, model_window_name(MODEL_WINDOW_ALL)))
        return 0;
    fprintf(out, "  (no PyTorch operator ran in %s)\n", window);
    return 1;
}

static void tables_torch_title(FILE *out, const struct summary *s)
{
    const struct summary_torch *t = &s->torch;
    char note[512];
    const char *window = tables_torch_window(s, note, sizeof note);
    fprintf(out, "PyTorch operators%s%s (%" PRIu64 " op%s", window ? " in " : "",
            window ? window : "", t->calls, t->calls == 1 ? "" : "s");
    if (t->spans_expected > t->records) /* the op trees count what the timeline dropped */
        fprintf(out, "; the timeline kept %" PRIu64 " of %" PRIu64 " op spans", t->records,
                t->spans_expected);
    fprintf(out, "; ordered by %s%s)\n", summary_op_sort_name(t->sort),
            t->by_shape ? "; grouped by input shapes" : "");
    if (window)
        fprintf(out, "  (%s)\n", note);
}

void tables_ops(FILE *out, const struct summary *s, size_t limit)
{
    tables_torch_title(out, s);
    if (!s->torch.nrows) {
        if (!tables_torch_none_in_part(out, s))
            fprintf(out, "  (no PyTorch operators recorded; is the torch hook on?)\n");
        return;
    }
    tables_torch_table(out, s, limit, "--limit");
    tables_over_ranks(out, "Self CPU", s->torch.rows, tables_over_ranks_rows(s->torch.nrows, limit),
                      sizeof *s->torch.rows, offsetof(struct summary_op_row, name),
                      offsetof(struct summary_op_row, over_ranks), 0);
    if (summary_torch_memory_any(s)) {
        fputc('\n', out);
        tables_torch_memory_section(out, s);
    }
}

void tables_ops_section(FILE *out, const struct summary *s, size_t limit)
{
    if (!s->torch.nrows) {
        char note[512];
        if (tables_torch_window(s, note, sizeof note)) { /* ops, none in the part asked */
            tables_torch_title(out, s);
            tables_torch_none_in_part(out, s);
            fputc('\n', out);
        }
        return;
    }
    tables_torch_title(out, s);
    tables_torch_table(out, s, limit ? limit : 15, "profreport --ops");
    fputc('\n', out);
}

static void tables_torch_memory_shown(FILE *out, const struct summary *s, size_t limit);

void tables_torch_memory_default(FILE *out, const struct summary *s, size_t limit)
{
    if (!summary_torch_memory_any(s))
        return;
    tables_torch_memory_shown(out, s, limit);
    fputc('\n', out);
}

static void tables_torch_memory_func(FILE *out, const struct model_py_func *f)
{
    format_fputs_escaped(out, f->file ? f->file : "?");
    fprintf(out, ":%" PRIu32 "(", f->line);
    format_fputs_escaped(out, f->qualname ? f->qualname : (f->name ? f->name : "?"));
    fputc(')', out);
}

/* " in aten::addmm, from linear.py:114(Linear.forward) under train.py:20(main)": op (NULL:
 * none, or lost when lost), the innermost Python-code function f and the innermost one of
 * the program's own files (own), when another. */
static void tables_torch_memory_site(FILE *out, const char *op, int lost,
                                     const struct model_py_func *f, const struct model_py_func *own)
{
    fputs(" in ", out);
    format_fputs_escaped(out, op ? op : lost ? "(record lost)" : "(no op)");
    if (f) {
        fputs(", from ", out);
        tables_torch_memory_func(out, f);
    }
    if (own && own != f) {
        fputs(f ? " under " : ", from ", out);
        tables_torch_memory_func(out, own);
    }
}

static void tables_torch_memory_at(FILE *out, const struct model_process *p,
                                   const struct model_torch_mem_site *site)
{
    tables_torch_memory_site(out, site->op, 0, model_python_func(p, site->func),
                             model_python_func(p, site->own));
}

/* The part's figures (memory.part made): live bytes at its edges, the steps that grew, its
 * peak, what it allocated and freed, the site that grew the most. */
static void tables_torch_memory_part(FILE *out, const struct model_process *p,
                                     const struct model_torch_memory_part *q)
{
    char a[32], b[32], d[32], peak[32], alloc[32], freed[32];
    int64_t growth = model_i64_sub(q->live_end, q->live_start);
    tables_torch_memory(q->live_start, a, sizeof a);
    tables_torch_memory(q->live_end, b, sizeof b);
    tables_torch_memory(growth, d, sizeof d);
    tables_torch_memory(q->peak_bytes, peak, sizeof peak);
    fprintf(out, "live %s at the start, %s at the end (%s%s", a, b, growth > 0 ? "+" : "", d);
    if (q->steps > 1) {
        tables_torch_memory(model_torch_memory_growth(q) / (int64_t)(q->steps - 1), d, sizeof d);
        fprintf(out,
                "; after the first step: %s per step, live bytes up in %" PRIu64 " of the %" PRIu64
                " steps after it",
                d, q->steps_grown, q->steps - 1);
    }
    fprintf(out, "); peak %s at +%.3f s", peak, (double)q->peak_ns / 1e9);
    if (q->peak_inside)
        tables_torch_memory_at(out, p, &q->peak);
    else
        fputs(", as it began", out);
    tables_torch_memory((int64_t)q->allocated, alloc, sizeof alloc);
    tables_torch_memory((int64_t)q->freed, freed, sizeof freed);
    fprintf(out, "\n    allocated %s in %" PRIu64 " allocation%s, freed %s in %" PRIu64 " free%s",
            alloc, q->alloc_count, q->alloc_count == 1 ? "" : "s", freed, q->free_count,
            q->free_count == 1 ? "" : "s");
    if (q->grew_bytes > 0 && model_torch_memory_growth(q) > 0) { /* else a site's growth is
                                                                  * another's shrinking */
        tables_torch_memory(q->grew_bytes, d, sizeof d);
        fprintf(out, "; grew most%s (allocated, not freed): +%s",
                q->steps > 1 ? " after the first step" : "", d);
        tables_torch_memory_at(out, p, &q->grew);
    }
    fputc('\n', out);
}

static void tables_torch_memory_line(FILE *out, const struct model_process *p,
                                     const struct model_torch_memory *m)
{
    char peak[32], alloc[32], freed[32], live[32], reserved[32], device[48];
    int part = m->part.window != MODEL_WINDOW_ALL;
    tables_torch_memory(m->peak_bytes, peak, sizeof peak);
    tables_torch_memory((int64_t)m->allocated, alloc, sizeof alloc);
    tables_torch_memory((int64_t)m->freed, freed, sizeof freed);
    tables_torch_memory(m->live_at_end, live, sizeof live);
    model_torch_device_name(m->dev_type, m->dev_index, device, sizeof device);
    if (p->rank >= 0)
        fprintf(out, "  rank %lld (pid %lld) %s: ", (long long)p->rank, (long long)p->pid, device);
    else if (p->pid >= 0)
        fprintf(out, "  pid %lld %s: ", (long long)p->pid, device);
    else
        fprintf(out, "  %s %s: ", p->file, device);
    if (part) {
        tables_torch_memory_part(out, p, &m->part);
        fputs("    the whole process: ", out);
    } else if (m->part.miss != MODEL_WINDOW_MISS_NONE &&
               m->part.miss != MODEL_WINDOW_MISS_NO_STEPS) { /* (the title says that one) */
        fprintf(out,
                "the whole process (not %s: %s): ", model_window_name(model_torch_window_asked()),
                model_window_miss_text(m->part.miss));
    }
    fprintf(out, "peak %s at +%.3f s", peak, (double)m->peak_ns / 1e9);
    tables_torch_memory_site(out, m->peak_op, m->peak_unattributed, model_torch_peak_func(p, m),
                             NULL);
    fprintf(out, "%sallocated %s, freed %s, live at end %s", part ? "; " : "\n    ", alloc, freed,
            live);
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

/* The part the memory figures of p cover: the first device's (the CPU's), unless one of
 * its devices has no part though one was asked (then the whole process, and why). */
static int tables_torch_memory_part_of(const struct model_process *p, struct tables_part *part)
{
    const struct model_torch *t = &p->torch;
    const struct model_torch_memory *first = NULL;
    for (size_t d = 0; d <= t->ndevices; d++) {
        const struct model_torch_memory *m = d ? &t->devices[d - 1] : &t->memory;
        if (!m->any)
            continue;
        if (!first ||
            (m->part.window == MODEL_WINDOW_ALL && first->part.window != MODEL_WINDOW_ALL))
            first = m;
    }
    if (!first)
        return 0;
    *part = (struct tables_part){first->part.window, first->part.miss, first->part.window_ns,
                                 (size_t)first->part.steps};
    return 1;
}

const char *tables_torch_memory_window(const struct summary *s, char *note, size_t len)
{
    return tables_part_note(s, tables_torch_memory_part_of, note, len);
}

uint64_t tables_torch_memory_window_ns(const struct summary *s)
{
    return tables_part_ns(s, tables_torch_memory_part_of);
}

/* "pid 7300 CPU: peak 1.50 Mb at +2.345 s in aten::addmm, from train.py:20(Model.forward)"
 * and the totals, one line pair per process and device; nothing without memory records. */
struct tables_mem_entry {
    const struct model_process *p;
    const struct model_torch_memory *m;
    int64_t peak, growth; /* the part's when made, else the whole process's peak */
    size_t order;         /* in the processes' order: ties keep it */
};

static int tables_mem_entry_cmp(const void *a, const void *b)
{
    const struct tables_mem_entry *x = a, *y = b;
    if (x->peak != y->peak)
        return x->peak < y->peak ? 1 : -1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* limit (0: every one): that many lines, the largest peaks, the one that grew the most
 * after its part's first step among them. */
static void tables_torch_memory_lines(FILE *out, const struct summary *s, size_t limit)
{
    struct tables_mem_entry *e = NULL;
    size_t n = 0, cap = 0, most = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t d = 0; d <= p->torch.ndevices; d++) {
            const struct model_torch_memory *m = d ? &p->torch.devices[d - 1] : &p->torch.memory;
            if (!m->any)
                continue;
            int part = m->part.window != MODEL_WINDOW_ALL;
            e = report_grow(e, &cap, n + 1, sizeof *e);
            e[n] = (struct tables_mem_entry){p, m, part ? m->part.peak_bytes : m->peak_bytes,
                                             part ? model_torch_memory_growth(&m->part) : 0, n};
            if (e[n].growth > e[most].growth)
                most = n;
            n++;
        }
    }
    size_t shown = limit && n > limit ? limit : n;
    if (shown < n) {
        struct tables_mem_entry grew = e[most];
        qsort(e, n, sizeof *e, tables_mem_entry_cmp);
        size_t k = 0;
        while (k < shown && e[k].m != grew.m)
            k++;
        if (k == shown && grew.growth > 0)
            e[shown - 1] = grew;
    }
    for (size_t i = 0; i < shown; i++)
        tables_torch_memory_line(out, e[i].p, e[i].m);
    if (shown < n)
        fprintf(out,
                "  (%zu of %zu process memories shown: the largest peaks%s; profreport --memory "
                "shows each)\n",
                shown, n, e[most].growth > 0 ? " and the most growth" : "");
    free(e);
}

static void tables_torch_memory_shown(FILE *out, const struct summary *s, size_t limit)
{
    if (!summary_torch_memory_any(s))
        return;
    char note[512];
    const char *window = tables_torch_memory_window(s, note, sizeof note);
    fprintf(out,
            "PyTorch memory%s%s (tensor bytes live, per process and device, as torch's own "
            "allocators report them:\nc10's CPU allocator, the CUDA caching allocator; not the "
            "CUDA runtime's cudaMalloc)\n",
            window ? " in " : "", window ? window : "");
    if (window)
        fprintf(out, "  (%s)\n", note);
    tables_torch_memory_lines(out, s, limit);
}

void tables_torch_memory_section(FILE *out, const struct summary *s)
{
    tables_torch_memory_shown(out, s, 0);
}
