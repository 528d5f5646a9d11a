/* tables_gpu: the GPU text tables — kernels as the GPU ran them (--kernels, and a section
 * of the default report), copies, sets, utilization, devices, library calls and the calls
 * only CUPTI saw (--gpu), NVTX ranges, record_function scopes and built-in PyTorch loop
 * functions as actions (--actions). */
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "steps_report.h"
#include "tables.h"
#include "text_table.h"

static const char *tables_gpu_u64(char *buf, size_t len, uint64_t v)
{
    snprintf(buf, len, "%" PRIu64, v);
    return buf;
}

static const char *tables_gpu_time(char *buf, size_t len, double ns)
{
    format_ns(ns, buf, len);
    return buf;
}

static const char *tables_gpu_seconds(char *buf, size_t len, double ns)
{
    snprintf(buf, len, "%.6f", ns / 1e9);
    return buf;
}

/* The GPU rows' part of one process. */
static int tables_gpu_part(const struct model_process *p, struct tables_part *part)
{
    const struct model_gpu_part *w = &p->gpu_part;
    *part = (struct tables_part){w->window, w->miss, w->window_ns, w->window_steps};
    if (w->window != MODEL_WINDOW_ALL || p->gpu.nops || p->gpu.ncalls || p->gpu.nkernels)
        return 1;
    for (size_t a = 0; a < p->napis; a++)
        if (p->apis[a] && p->apis[a]->calls)
            return 1;
    return 0;
}

const char *tables_gpu_window(const struct summary *s, char *note, size_t len)
{
    return tables_part_note(s, tables_gpu_part, note, len);
}

uint64_t tables_gpu_window_ns(const struct summary *s)
{
    return tables_part_ns(s, tables_gpu_part);
}

const char *tables_gpu_whole(const struct summary *s)
{
    char note[512];
    const char *window = tables_gpu_window(s, note, sizeof note);
    return window && strcmp(window, model_window_name(MODEL_WINDOW_ALL)) ? " (the whole process)"
                                                                         : "";
}

void tables_gpu_title(FILE *out, const struct summary *s, const char *name, const char *fmt, ...)
{
    char note[512];
    const char *window = tables_gpu_window(s, note, sizeof note);
    fprintf(out, "%s%s%s ", name, window ? " in " : "", window ? window : "");
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    if (window)
        fprintf(out, "  (%s)\n", note);
}

static void tables_gpu_kernel_table(FILE *out, const struct summary *s, size_t limit,
                                    const char *more)
{
    const struct summary_gpu *g = &s->gpu;
    char calls[24], total[32], avg[32], min[32], max[32], pct[16], grid[48], block[48], regs[16];
    char from[512], kname[512];
    int shortened = 0;
    struct text_table t;
    text_table_begin(&t, "<Kernel|>Calls|>GPU total|>Avg|>Min|>Max|>% GPU time|>Grid|>Block|"
                         ">Regs|<Launched from");
    for (size_t i = 0; i < g->nkernels && (!limit || i < limit); i++) {
        const struct summary_gpu_kernel_row *r = &g->kernels[i];
        snprintf(pct, sizeof pct, "%.1f%%", r->percent);
        model_dim3_format(r->grid, grid, sizeof grid);
        model_dim3_format(r->block, block, sizeof block);
        if (r->nsites > 1)
            snprintf(from, sizeof from, "%s (+%zu more)", r->sites[0].qualname, r->nsites - 1);
        else
            snprintf(from, sizeof from, "%s", r->nsites ? r->sites[0].qualname : "-");
        text_table_row(&t, format_kernel_name(r->name, kname, sizeof kname, &shortened),
                       tables_gpu_u64(calls, sizeof calls, r->calls),
                       tables_gpu_time(total, sizeof total, (double)r->total_ns),
                       tables_gpu_time(avg, sizeof avg, r->avg_ns),
                       tables_gpu_time(min, sizeof min, (double)r->min_ns),
                       tables_gpu_time(max, sizeof max, (double)r->max_ns), pct, grid, block,
                       tables_gpu_u64(regs, sizeof regs, r->registers), from);
    }
    text_table_end(out, &t);
    tables_kernel_names_note(out, shortened);
    if (limit && g->nkernels > limit)
        fprintf(out, "  (%zu more not shown; %s)\n", g->nkernels - limit, more);
    if (g->unattributed)
        fprintf(out, "  %" PRIu64 " kernel(s)%s matched no CUDA call: unattributed\n",
                g->unattributed, tables_gpu_whole(s)[0] ? " of the whole process" : "");
}

static void tables_gpu_kernels_title(FILE *out, const struct summary *s)
{
    char total[32];
    tables_gpu_title(out, s, "GPU kernels", "(CUPTI: %" PRIu64 " kernel%s, GPU time %s)",
                     s->gpu.kernel_calls, s->gpu.kernel_calls == 1 ? "" : "s",
                     tables_gpu_time(total, sizeof total, (double)s->gpu.kernel_ns));
}

void tables_gpu_kernels(FILE *out, const struct summary *s, size_t limit)
{
    tables_gpu_kernels_title(out, s);
    if (!s->gpu.nkernels) {
        fprintf(out, "  (no GPU kernels recorded; CUPTI off or unavailable?)\n");
        return;
    }
    tables_gpu_kernel_table(out, s, limit, "--limit");
    tables_over_ranks(out, "GPU time", s->gpu.kernels,
                      tables_over_ranks_rows(s->gpu.nkernels, limit), sizeof *s->gpu.kernels,
                      offsetof(struct summary_gpu_kernel_row, name),
                      offsetof(struct summary_gpu_kernel_row, over_ranks), 1);
}

void tables_gpu_section(FILE *out, const struct summary *s, size_t limit)
{
    if (!s->gpu.nkernels)
        return;
    tables_gpu_kernels_title(out, s);
    tables_gpu_kernel_table(out, s, limit ? limit : 15, "profreport --kernels");
    fputs("  (profreport --gpu: copies, utilization, library calls)\n\n", out);
}

/* ---- --gpu ---- */

static void tables_gpu_devices(FILE *out, const struct summary *s)
{
    char pid[24], dev[16], sms[16], mem[32], cc[16], clock[32];
    struct text_table t;
    text_table_begin(&t, ">PID|>Device|<Name|>SMs|>Memory|>Compute|>Clock");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t d = 0; d < p->gpu.ndevices; d++) {
            const struct model_gpu_device *m = &p->gpu.devices[d];
            snprintf(pid, sizeof pid, "%lld", (long long)p->pid);
            snprintf(dev, sizeof dev, "%u", m->device);
            snprintf(sms, sizeof sms, "%u", m->sm_count);
            format_bytes(m->global_memory_bytes, mem, sizeof mem);
            snprintf(cc, sizeof cc, "%u.%u", m->compute_major, m->compute_minor);
            snprintf(clock, sizeof clock, "%.0f MHz", m->core_clock_khz / 1e3);
            text_table_row(&t, pid, dev, m->name, sms, mem, cc, clock);
        }
    }
    fprintf(out, "GPU devices\n");
    if (t.nrows) {
        text_table_end(out, &t);
    } else {
        text_table_discard(&t);
        fprintf(out, "  (no GPU_DEVICE records)\n");
    }
    fputc('\n', out);
}

static void tables_gpu_utilization(FILE *out, const struct summary *s)
{
    char pid[24], dev[16], stream[24], busy[32], wall[32], pct[16];
    struct text_table t;
    text_table_begin(&t, ">PID|>Device|>Stream|>Busy|>Wall|>Busy %");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t b = 0; b < p->gpu.nbusy; b++) {
            const struct model_gpu_busy *u = &p->gpu.busy[b];
            snprintf(pid, sizeof pid, "%lld", (long long)p->pid);
            snprintf(dev, sizeof dev, "%u", u->device);
            if (u->stream < 0)
                strcpy(stream, "all");
            else
                snprintf(stream, sizeof stream, "%" PRId64, u->stream);
            snprintf(pct, sizeof pct, "%.1f%%",
                     p->wall_ns ? 100.0 * (double)u->busy_ns / (double)p->wall_ns : 0.0);
            text_table_row(&t, pid, dev, stream,
                           tables_gpu_time(busy, sizeof busy, (double)u->busy_ns),
                           tables_gpu_time(wall, sizeof wall, (double)p->wall_ns), pct);
        }
    }
    fprintf(out, "GPU utilization (busy = kernels, copies and sets running; wall = the "
                 "process's first to last event)\n");
    if (t.nrows) {
        text_table_end(out, &t);
    } else {
        text_table_discard(&t);
        fprintf(out, "  (no GPU activity)\n");
    }
    fputc('\n', out);
}

static void tables_gpu_copies(FILE *out, const struct summary *s)
{
    const struct summary_gpu *g = &s->gpu;
    char calls[24], bytes[32], total[32], gbps[32], dev[16];
    struct text_table t;
    fprintf(out, "GPU copies and sets (as the GPU ran them)%s\n", tables_gpu_whole(s));
    if (!g->ncopies && !g->nsets) {
        fprintf(out, "  (no copies or sets)\n\n");
        return;
    }
    text_table_begin(&t, "<Direction|<Source|<Destination|>Count|>Bytes|>GPU time|>GB/s");
    for (size_t i = 0; i < g->ncopies; i++) {
        const struct summary_gpu_copy_row *r = &g->copies[i];
        format_bytes(r->bytes, bytes, sizeof bytes);
        format_gbps(r->bytes, r->total_ns, gbps, sizeof gbps);
        text_table_row(
            &t, model_gpu_copy_kind_name(r->copy_kind), model_gpu_memory_kind_name(r->src_kind),
            model_gpu_memory_kind_name(r->dst_kind), tables_gpu_u64(calls, sizeof calls, r->calls),
            bytes, tables_gpu_time(total, sizeof total, (double)r->total_ns), gbps);
    }
    for (size_t i = 0; i < g->nsets; i++) {
        const struct summary_gpu_set_row *r = &g->sets[i];
        format_bytes(r->bytes, bytes, sizeof bytes);
        format_gbps(r->bytes, r->total_ns, gbps, sizeof gbps);
        snprintf(dev, sizeof dev, "device %u", r->device);
        text_table_row(&t, "memset", "-", dev, tables_gpu_u64(calls, sizeof calls, r->calls), bytes,
                       tables_gpu_time(total, sizeof total, (double)r->total_ns), gbps);
    }
    text_table_end(out, &t);
    fputc('\n', out);
}

static void tables_gpu_library(FILE *out, const struct summary *s)
{
    const struct summary_gpu *g = &s->gpu;
    char calls[24], cpu[32], gpu[32], kernels[24];
    tables_gpu_title(out, s, "Library calls", "(GPU time: the kernels each call launched)");
    if (!g->nlibrary) {
        fprintf(out, "  (no cuBLAS, cuBLASLt or cuDNN calls)\n\n");
        return;
    }
    struct text_table t;
    text_table_begin(&t, "<Name|>Calls|>CPU time|>GPU time|>Kernels");
    for (size_t i = 0; i < g->nlibrary; i++) {
        const struct summary_library_row *r = &g->library[i];
        text_table_row(&t, r->name, tables_gpu_u64(calls, sizeof calls, r->calls),
                       tables_gpu_time(cpu, sizeof cpu, (double)r->cpu_ns),
                       tables_gpu_time(gpu, sizeof gpu, (double)r->gpu_ns),
                       tables_gpu_u64(kernels, sizeof kernels, r->kernels));
    }
    text_table_end(out, &t);
    fputc('\n', out);
}

static void tables_gpu_cupti(FILE *out, const struct summary *s, size_t limit)
{
    const struct summary_gpu *g = &s->gpu;
    char name[512], calls[24], total[32], avg[32], max[32];
    tables_gpu_title(out, s, "CUDA calls only CUPTI saw",
                     "(driver calls of libraries with their own runtime)");
    if (!g->ncupti) {
        fprintf(out, "  (none)\n\n");
        return;
    }
    struct text_table t;
    text_table_begin(&t, "<Name|>Calls|>Total|>Avg|>Max");
    for (size_t i = 0; i < g->ncupti && (!limit || i < limit); i++) {
        const struct summary_cupti_row *r = &g->cupti[i];
        snprintf(name, sizeof name, "%s (CUPTI)", r->name);
        text_table_row(&t, name, tables_gpu_u64(calls, sizeof calls, r->calls),
                       tables_gpu_time(total, sizeof total, (double)r->total_ns),
                       tables_gpu_time(avg, sizeof avg, r->avg_ns),
                       tables_gpu_time(max, sizeof max, (double)r->max_ns));
    }
    text_table_end(out, &t);
    if (limit && g->ncupti > limit)
        fprintf(out, "  (%zu more not shown; --limit)\n", g->ncupti - limit);
    fputc('\n', out);
}

void tables_gpu(FILE *out, const struct summary *s, size_t limit)
{
    tables_gpu_devices(out, s);
    tables_gpu_utilization(out, s);
    tables_gpu_copies(out, s);
    tables_gpu_library(out, s);
    tables_gpu_cupti(out, s, limit);
}

/* ---- --actions ---- */

#define TABLES_ACTIONS_SECTION_ROWS 200

/* Rows per source, then what the percentages are of: "Actions (114 Lightning actions,
 * 3 record_function scopes; times in seconds, % of the 12.345 s from ...)". With training
 * steps, the training (summary_actions.c), or the wall time when an action has calls
 * outside it: then which, and the steps' span beside it. */
const char *tables_actions_base(const struct summary_gpu *g, char *buf, size_t size)
{
    char s[32], t[32];
    tables_gpu_seconds(s, sizeof s, (double)g->action_base_ns);
    switch (g->action_base) {
    case SUMMARY_ACTION_BASE_LIGHTNING:
        snprintf(buf, size,
                 "the training: the %s s from the first Lightning action's start to the last "
                 "one's end",
                 s);
        break;
    case SUMMARY_ACTION_BASE_STEPS:
        snprintf(buf, size, "the training: the %s s in torch.profiler's ProfilerStep#N steps", s);
        break;
    case SUMMARY_ACTION_BASE_BUILTIN:
        snprintf(buf, size, "the training: the %s s in the built-in loop actions, nested ones once",
                 s);
        break;
    case SUMMARY_ACTION_BASE_TRAINING:
        tables_gpu_seconds(t, sizeof t, (double)g->action_training_ns);
        if (g->action_base_ns == g->action_training_ns)
            snprintf(buf, size,
                     "the training: the %s s from the first training step's start to the last "
                     "one's end",
                     s);
        else
            snprintf(buf, size,
                     "the training: the %s s from the first training step's start to the last "
                     "one's end, with the actions' calls across them (a range around each step; "
                     "a forward or backward after the last optimizer step, such as an "
                     "evaluation; the steps take %s s)",
                     s, t);
        break;
    default:
        if (!g->action_training_ns) {
            snprintf(buf, size, "the wall time");
            break;
        }
        tables_gpu_seconds(t, sizeof t, (double)g->action_training_ns);
        char name[96]; /* a program's name: escaped, and cut */
        format_escape(g->action_outside ? g->action_outside : "an action", name, sizeof name);
        snprintf(buf, size,
                 "the wall time, %s s: %s takes more than the training (calls outside it, or on "
                 "several threads at once; the steps take %s s from the first one's start to the "
                 "last one's end), and the totals count every call",
                 s, name, t);
        break;
    }
    size_t used = strlen(buf);
    if (g->action_base_procs > 1 && used < size)
        snprintf(buf + used, size - used, ", summed over %zu processes", g->action_base_procs);
    return buf;
}

static void tables_actions_title(FILE *out, const struct summary_gpu *g)
{
    static const char *const what[][2] = {
        [MODEL_ACTION_LIGHTNING] = {"Lightning action", "Lightning actions"},
        [MODEL_ACTION_RECORD_FUNCTION] = {"record_function scope", "record_function scopes"},
        [MODEL_ACTION_BUILTIN] = {"built-in loop action", "built-in loop actions"},
        [MODEL_ACTION_NVTX] = {"NVTX range", "NVTX ranges"},
    };
    static const int order[] = {MODEL_ACTION_LIGHTNING, MODEL_ACTION_RECORD_FUNCTION,
                                MODEL_ACTION_BUILTIN, MODEL_ACTION_NVTX};
    fputs("Actions (", out);
    int parts = 0;
    for (size_t o = 0; o < sizeof order / sizeof *order; o++) {
        size_t n = 0;
        for (size_t i = 0; i < g->nactions; i++)
            n += g->actions[i].source == order[o];
        if (n)
            fprintf(out, "%s%zu %s", parts++ ? ", " : "", n, what[order[o]][n != 1]);
    }
    if (!parts)
        fputs("none", out);
    char base[320];
    fprintf(out, "; times in seconds, %% of %s)\n", tables_actions_base(g, base, sizeof base));
}

/* What the table folded or kept apart, and the marks. */
static void tables_actions_notes(FILE *out, const struct summary_gpu *g)
{
    if (g->action_folded)
        fprintf(out,
                "  (%zu record_function scope%s \"[pl][profile]X\" of Lightning's "
                "PyTorchProfiler folded into the Lightning action X: the same calls)\n",
                g->action_folded, g->action_folded == 1 ? "" : "s");
    if (g->action_unfolded) {
        fprintf(out,
                "  (%zu \"[pl][profile]X\" scope%s not folded into the Lightning action X: "
                "the calls differ, as ",
                g->action_unfolded, g->action_unfolded == 1 ? "" : "s");
        format_fputs_escaped(out, g->action_unfolded_example);
        fprintf(out, "'s %" PRIu64 " against %" PRIu64 ")\n", g->action_unfolded_calls[0],
                g->action_unfolded_calls[1]);
    }
    for (size_t i = 0; i < g->nmarks; i++) {
        fputs("  mark ", out);
        format_fputs_escaped(out, g->marks[i].name);
        fprintf(out, ": %" PRIu64 "\n", g->marks[i].calls);
    }
}

/* The built-in forward's calls: every module call the loop makes outside another, a loss
 * module's (nn.CrossEntropyLoss()) of its own and an evaluation's too (the call trees cannot
 * tell them apart): said when it counts two or more a backward pass (a review's loop read
 * 80 forward calls of half their time for 40 model calls), or when the steps' process
 * evaluates, which the Training steps' parts leave out of forward (model_steps_eval.c). */
static void tables_actions_forward_note(FILE *out, const struct summary *s)
{
    const struct summary_gpu *g = &s->gpu;
    uint64_t forward = 0, backward = 0;
    for (size_t k = 0; k < g->nactions; k++)
        if (g->actions[k].source == MODEL_ACTION_BUILTIN) {
            if (!strcmp(g->actions[k].name, "forward"))
                forward = g->actions[k].calls;
            else if (!strcmp(g->actions[k].name, "backward"))
                backward = g->actions[k].calls;
        }
    const struct model_process *p =
        steps_main_process((const struct model_process *const *)s->procs, s->nprocs);
    struct steps_stats st = {0};
    if (p) {
        steps_stats_of(p, 0, UINT64_MAX, &st);
        model_steps_let_go(p);
    }
    const char *eval = st.eval_ns ? "; an evaluation's under torch.no_grad() too, which the "
                                    "Training steps section counts apart, outside forward"
                                  : "";
    if (backward && forward >= 2 * backward)
        fprintf(out,
                "  (forward counts every module call the loop makes outside another: %" PRIu64
                " calls for %" PRIu64 " backward passes; a loss that is a module, such as "
                "nn.CrossEntropyLoss(), is a call of its own too%s)\n",
                forward, backward, eval);
    else if (*eval)
        fprintf(out, "  (forward counts every model call from the loop%s)\n", eval);
}

/* A process group's work spans (gloo:all_reduce, nccl:..., mpi:..., ucc:...) run on the
 * backend's threads, several at once (DDP's gradient buckets), each call timed whole: their
 * total can reach twice the time they cover (a review's gloo:all_reduce read 51.6 % of the
 * training for the 26 % its calls covered). */
static void tables_actions_comm_note(FILE *out, const struct summary_gpu *g)
{
    static const char *const groups[] = {"gloo:", "nccl:", "mpi:", "ucc:"};
    for (size_t i = 0; i < g->nactions; i++)
        for (size_t k = 0; k < sizeof groups / sizeof *groups; k++)
            if (g->actions[i].source == MODEL_ACTION_RECORD_FUNCTION &&
                !strncmp(g->actions[i].name, groups[k], strlen(groups[k]))) {
                fputs("  (a process group's work scopes (gloo:, nccl:, ...) run on the backend's "
                      "threads, several at once: their time is summed over calls that "
                      "overlap; --comm counts each rank's time in them once)\n",
                      out);
                return;
            }
}

int tables_actions_have_gpu(const struct summary *s)
{
    return s->gpu.action_gpu_ns || tables_torch_has_cuda(s);
}

void tables_actions_all_notes(FILE *out, const struct summary *s)
{
    tables_actions_notes(out, &s->gpu);
    tables_actions_comm_note(out, &s->gpu);
    tables_actions_forward_note(out, s);
}

/* One row of 7 cells; the GPU time (cell 5) left out without GPU work. */
static void tables_actions_row(struct text_table *t, int has_gpu, const char **cells)
{
    if (!has_gpu)
        cells[5] = cells[6];
    text_table_row_cells(t, cells);
}

static void tables_actions_table(FILE *out, const struct summary *s, size_t limit, const char *more)
{
    const struct summary_gpu *g = &s->gpu;
    char mean[32], calls[24], total[32], pct[16], gpu[32];
    tables_actions_title(out, g);
    if (!g->nactions && !g->nmarks) {
        fprintf(out, "  (no NVTX ranges, record_function scopes or PyTorch loop functions)\n");
        return;
    }
    struct text_table t;
    /* no GPU time column where the run had no GPU work (as the ops table's CUDA columns) */
    int has_gpu = tables_actions_have_gpu(s);
    text_table_begin(&t, has_gpu ? "<Action|>Mean duration (s)|>Num calls|>Total time (s)|"
                                   ">Percentage %|>GPU time (s)|<Source"
                                 : "<Action|>Mean duration (s)|>Num calls|>Total time (s)|"
                                   ">Percentage %|<Source");
    uint64_t ncalls = 0;
    for (size_t i = 0; i < g->nactions; i++)
        ncalls += g->actions[i].calls;
    const char *total_row[7] = {"Total",
                                "-",
                                tables_gpu_u64(calls, sizeof calls, ncalls),
                                tables_gpu_seconds(total, sizeof total, (double)g->action_base_ns),
                                "100 %",
                                tables_gpu_seconds(gpu, sizeof gpu, (double)g->action_gpu_ns),
                                ""};
    tables_actions_row(&t, has_gpu, total_row);
    for (size_t i = 0; i < g->nactions && (!limit || i < limit); i++) {
        const struct summary_action_row *r = &g->actions[i];
        snprintf(pct, sizeof pct, "%.3f", r->percent);
        const char *row[7] = {r->name,
                              tables_gpu_seconds(mean, sizeof mean, r->mean_ns),
                              tables_gpu_u64(calls, sizeof calls, r->calls),
                              tables_gpu_seconds(total, sizeof total, (double)r->total_ns),
                              pct,
                              tables_gpu_seconds(gpu, sizeof gpu, (double)r->gpu_ns),
                              summary_action_source_name(r->source)};
        tables_actions_row(&t, has_gpu, row);
    }
    text_table_end(out, &t);
    if (limit && g->nactions > limit)
        fprintf(out, "  (%zu more not shown; %s)\n", g->nactions - limit, more);
    tables_actions_all_notes(out, s);
}

void tables_actions(FILE *out, const struct summary *s, size_t limit)
{
    const struct summary_gpu *g = &s->gpu;
    tables_actions_table(out, s, limit, "--limit");
    tables_over_ranks(out, "time", g->actions, tables_over_ranks_rows(g->nactions, limit),
                      sizeof *g->actions, offsetof(struct summary_action_row, name),
                      offsetof(struct summary_action_row, over_ranks), 0);
}

void tables_actions_section(FILE *out, const struct summary *s, size_t limit)
{
    if (!s->gpu.nactions && !s->gpu.nmarks)
        return;
    /* Every action, as Lightning's SimpleProfiler lists them, up to a screenful of screens. */
    tables_actions_table(out, s, limit ? limit : TABLES_ACTIONS_SECTION_ROWS,
                         "profreport --actions lists every action; --limit N shows N here");
    fputc('\n', out);
}
