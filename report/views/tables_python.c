/* tables_python: the Python function table in cProfile's columns and meaning, merged or
 * per thread or process, and the intervals another profiler held Python's hook. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "tables.h"
#include "text_table.h"

#define TABLES_PY_LABEL PYSTATS_LABEL_MAX

static const char *tables_py_seconds(char *buf, size_t len, double ns)
{
    snprintf(buf, len, "%.3f", ns / 1e9);
    return buf;
}

/* The header line, the table and the "more not shown" line of one pystats; imports: the
 * import machinery's rows left out (said). */
static void tables_py_table(FILE *out, const struct pystats *py, size_t limit, const char *more,
                            int imports)
{
    char ncalls[48], tt[32], ttpc[32], ct[32], ctpc[32], api[32], apicalls[24], gpu[32];
    char label[TABLES_PY_LABEL];
    fprintf(out, "  %" PRIu64 " function calls", py->total_calls);
    if (py->total_pcalls != py->total_calls)
        fprintf(out, " (%" PRIu64 " primitive calls)", py->total_pcalls);
    fprintf(out, " in %.3f seconds\n\n", (double)py->total_tt_ns / 1e9);
    struct text_table t;
    /* GPU time: of the kernels launched while the function was innermost. */
    char spec[160];
    snprintf(spec, sizeof spec,
             ">ncalls|>tottime|>percall|>cumtime|>percall|%s%s"
             "<filename:lineno(function)",
             py->any_api ? ">API time|>API calls|" : "", py->any_gpu ? ">GPU time|" : "");
    text_table_begin(&t, spec);
    size_t shown = 0, hidden = 0;
    uint64_t import_ns = 0, hidden_ns = 0; /* _find_and_load's time; the rows' own */
    for (size_t i = 0; i < py->nfuncs; i++) {
        const struct pystats_func *f = &py->funcs[py->order[i]];
        if (imports && !f->outside_imports) {
            hidden++;
            hidden_ns += f->tottime_ns;
            if (f->name && !strcmp(f->name, "_find_and_load") && f->cumtime_ns > import_ns)
                import_ns = f->cumtime_ns;
            continue;
        }
        if (limit && shown == limit)
            continue;
        shown++;
        if (f->ncalls != f->pcalls)
            snprintf(ncalls, sizeof ncalls, "%" PRIu64 "/%" PRIu64, f->ncalls, f->pcalls);
        else
            snprintf(ncalls, sizeof ncalls, "%" PRIu64, f->ncalls);
        tables_py_seconds(tt, sizeof tt, (double)f->tottime_ns);
        tables_py_seconds(ttpc, sizeof ttpc,
                          f->ncalls ? (double)f->tottime_ns / (double)f->ncalls : 0);
        tables_py_seconds(ct, sizeof ct, (double)f->cumtime_ns);
        tables_py_seconds(ctpc, sizeof ctpc,
                          f->pcalls ? (double)f->cumtime_ns / (double)f->pcalls : 0);
        pystats_func_label(f, 1, label, sizeof label);
        format_ns((double)f->api_ns, api, sizeof api);
        snprintf(apicalls, sizeof apicalls, "%" PRIu64, f->api_calls);
        format_ns((double)f->gpu_ns, gpu, sizeof gpu);
        if (py->any_api && py->any_gpu)
            text_table_row(&t, ncalls, tt, ttpc, ct, ctpc, api, apicalls, gpu, label);
        else if (py->any_api)
            text_table_row(&t, ncalls, tt, ttpc, ct, ctpc, api, apicalls, label);
        else if (py->any_gpu)
            text_table_row(&t, ncalls, tt, ttpc, ct, ctpc, gpu, label);
        else
            text_table_row(&t, ncalls, tt, ttpc, ct, ctpc, label);
    }
    text_table_end(out, &t);
    if (limit && py->nfuncs - hidden > shown)
        fprintf(out, "  (%zu more not shown; %s)\n", py->nfuncs - hidden - shown, more);
    if (hidden) {
        char ns[32]; /* (a part can hold the rows without the import that ran them) */
        format_ns((double)(import_ns > hidden_ns ? import_ns : hidden_ns), ns, sizeof ns);
        fprintf(out,
                "  (%zu functions that ran only inside imports left out: importlib, module "
                "code and what only they called, %s in imports; %s shows them)\n",
                hidden, ns, more);
    }
}

static void tables_py_thread_label(const struct model_process *p, uint32_t tid, char *buf,
                                   size_t len)
{
    const char *name = pystats_thread_name(p, tid);
    if (name && *name)
        snprintf(buf, len, "%u (%s)", tid, name);
    else
        snprintf(buf, len, "%u", tid);
}

/* One line per gap; a thread with more than a few (a profiler of the program's own,
 * enabled and disabled around each batch) gets one line for all of them. */
#define TABLES_PY_GAPS_LISTED 3

static void tables_py_gap_line(FILE *out, const struct summary *s, const struct model_process *p,
                               const struct model_py_gap *gap, const char *thread)
{
    uint64_t origin = model_start_monotonic_ns(p);
    if (s->nprocs > 1)
        fprintf(out, "  pid %lld: ", (long long)p->pid);
    else
        fputs("  ", out);
    fprintf(out, "Python profiling was %s in thread ",
            gap->reason == PROF_PY_GAP_OTHER_PROFILER ? "replaced by another profiler"
                                                      : "interrupted");
    format_fputs_escaped(out, thread);
    fprintf(out, " from +%.3f s ", ((double)gap->start_ns - (double)origin) / 1e9);
    if (gap->end_ticks) {
        char len[32];
        format_ns(gap->end_ns > gap->start_ns ? (double)(gap->end_ns - gap->start_ns) : 0, len,
                  sizeof len);
        fprintf(out, "for %s (calls begun and ended inside it are not counted)\n", len);
    } else {
        fputs("to the end (its calls are not counted)\n", out);
    }
}

void tables_python_gaps(FILE *out, const struct summary *s)
{
    char thread[300];
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t g = 0; g < p->py.ngaps; g++) {
            const struct model_py_gap *gap = &p->py.gaps[g];
            size_t same = 0, first = g;
            uint64_t sum = 0, longest = 0;
            for (size_t k = 0; k < p->py.ngaps; k++) {
                const struct model_py_gap *o = &p->py.gaps[k];
                if (o->tid != gap->tid)
                    continue;
                if (!same++)
                    first = k;
                uint64_t d = o->end_ticks && o->end_ns > o->start_ns ? o->end_ns - o->start_ns : 0;
                sum += d;
                longest = d > longest ? d : longest;
            }
            tables_py_thread_label(p, gap->tid, thread, sizeof thread);
            if (same <= TABLES_PY_GAPS_LISTED) {
                tables_py_gap_line(out, s, p, gap, thread);
                continue;
            }
            if (first != g)
                continue; /* the thread's one line is written at its first gap */
            if (s->nprocs > 1)
                fprintf(out, "  pid %lld: ", (long long)p->pid);
            else
                fputs("  ", out);
            fputs("Python profiling was replaced by another profiler in thread ", out);
            format_fputs_escaped(out, thread);
            char all[32], most[32];
            format_ns((double)sum, all, sizeof all);
            format_ns((double)longest, most, sizeof most);
            fprintf(out,
                    " %zu times (ours runs in front of the program's own profiler again "
                    "each time): %s in all, the longest %s; calls begun and ended inside "
                    "them are not counted (profreport --format json: python_gaps)\n",
                    same, all, most);
        }
    }
}

const char *tables_python_window(const struct summary *s, char *note, size_t len)
{
    size_t n = 0, in = 0, stepless = 0;
    uint64_t ns = 0, lo = UINT64_MAX, hi = 0;
    unsigned asked = model_torch_window_asked(), window = MODEL_WINDOW_ALL;
    const char *why = NULL;
    const struct model_process *one = NULL;
    *note = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_python *py = &s->procs[i]->py;
        if (!py->nnodes && !py->nthread_totals)
            continue;
        n++;
        if (py->window != MODEL_WINDOW_ALL) {
            window = py->window;
            in++;
            one = s->procs[i];
            ns += py->window_ns;
            lo = py->window_first < lo ? py->window_first : lo;
            hi = py->window_last > hi ? py->window_last : hi;
        } else if (!s->procs[i]->steps.nsteps) {
            stepless++;
        } else if (!why && py->window_miss != MODEL_PY_WINDOW_MISS_NONE) {
            why = model_python_window_miss_text(py->window_miss);
        }
    }
    if (asked == MODEL_WINDOW_ALL || !n || stepless == n)
        return NULL;
    if (!in) {
        snprintf(note, len, "not %s: %s; --phase all", model_window_name(asked),
                 why ? why : "no training steps");
        return model_window_name(MODEL_WINDOW_ALL);
    }
    char who[64], steps[64] = "", spent[32], rest[320] = "";
    if (in == 1)
        snprintf(who, sizeof who, "thread %u", one->py.window_tid);
    else
        snprintf(who, sizeof who, "each process's step thread");
    format_ns((double)ns, spent, sizeof spent);
    if (window != MODEL_WINDOW_STARTUP && lo == hi)
        snprintf(steps, sizeof steps, "step %" PRIu64 ", ", lo);
    else if (window != MODEL_WINDOW_STARTUP)
        snprintf(steps, sizeof steps, "steps %" PRIu64 "-%" PRIu64 ", ", lo, hi);
    if (in < n)
        snprintf(rest, sizeof rest, "; the whole process for %zu of %zu processes (%s)", n - in, n,
                 why ? why : "no training steps");
    snprintf(note, len,
             "the training loop's thread only (%s), %s%s%s%s; a call under way at the edges "
             "counts its time inside, its call where it returns%s; --phase all: the whole "
             "process, every thread",
             who, steps, spent, in > 1 ? " in all" : "", rest,
             s->py.any_gpu ? "; GPU time: the kernels it launched in the part" : "");
    return model_window_name(window);
}

int tables_python_gpu(const struct summary *s)
{
    return s->gpu.any;
}

uint64_t tables_python_window_ns(const struct summary *s)
{
    uint64_t ns = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->py.window != MODEL_WINDOW_ALL)
            ns += s->procs[i]->py.window_ns;
    return ns;
}

void tables_python_section(FILE *out, const struct summary *s, size_t limit)
{
    if (!s->py.nfuncs && !s->py_gaps)
        return;
    size_t n = limit ? limit : 15;
    char note[768];
    const char *window = tables_python_window(s, note, sizeof note);
    fprintf(out, "Python functions%s%s (top %zu by %s; profreport --python for all)\n",
            window ? " in " : "", window ? window : "", n, pystats_sort_name(s->py_sort));
    if (window)
        fprintf(out, "  (%s)\n", note);
    tables_py_table(out, &s->py, n, "profreport --python", 1);
    tables_python_gaps(out, s);
    fputc('\n', out);
}

static void tables_python_one(FILE *out, const struct model_process *p, int64_t tid,
                              const struct summary *s, size_t limit)
{
    struct pystats py;
    pystats_init(&py);
    pystats_add(&py, p, tid, 0);
    pystats_finish(&py, s->py_sort);
    tables_py_table(out, &py, limit, "--limit", 0);
    pystats_free(&py);
}

void tables_python(FILE *out, const struct summary *s, size_t limit, enum tables_python_split split)
{
    char thread[300], note[768];
    const char *window = tables_python_window(s, note, sizeof note);
    fprintf(out, "Python functions%s%s (ordered by: %s)\n", window ? " in " : "",
            window ? window : "", pystats_sort_title(s->py_sort));
    if (window)
        fprintf(out, "  (%s%s)\n", note,
                split != TABLES_PYTHON_MERGED ? "; the tables per process or thread below: the "
                                                "whole process"
                                              : "");
    /* what the trace says the counts miss, beside the counts, not only in the notes */
    for (size_t i = 0; i < s->nprocs; i++)
        for (size_t k = 0; k < s->procs[i]->nnotes; k++)
            if (strstr(s->procs[i]->notes[k], "are not counted")) {
                fprintf(out, "  incomplete (pid %lld): ", (long long)s->procs[i]->pid);
                format_fputs_escaped(out, s->procs[i]->notes[k]);
                fputc('\n', out);
            }
    if (!s->py.nfuncs) {
        fprintf(out, "  (no Python calls profiled)\n");
    } else if (split == TABLES_PYTHON_MERGED) {
        tables_py_table(out, &s->py, limit, "--limit", 0);
    } else {
        for (size_t i = 0; i < s->nprocs; i++) {
            const struct model_process *p = s->procs[i];
            if (!p->py.nnodes)
                continue;
            if (split == TABLES_PYTHON_PER_PROCESS) {
                fprintf(out, "\npid %lld (", (long long)p->pid);
                format_fputs_escaped(out, p->command ? p->command : p->file);
                fputs(")\n", out);
                tables_python_one(out, p, -1, s, limit);
                continue;
            }
            struct pystats_thread *threads;
            size_t nthreads = pystats_threads(p, &threads);
            for (size_t k = 0; k < nthreads; k++) {
                tables_py_thread_label(p, threads[k].tid, thread, sizeof thread);
                fprintf(out, "\npid %lld thread ", (long long)p->pid);
                format_fputs_escaped(out, thread);
                fputc('\n', out);
                tables_python_one(out, p, threads[k].tid, s, limit);
            }
            free(threads);
        }
    }
    if (s->py_gaps) {
        fputc('\n', out);
        tables_python_gaps(out, s);
    }
}
