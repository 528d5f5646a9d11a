#include "alloc.h"
#include "format.h"
#include "summary.h"
#include "summary_file.h"

#include <stdlib.h>
#include <string.h>

static const char *const summary_sort_names[] = {
    [SUMMARY_SORT_TOTAL] = "total", [SUMMARY_SORT_CALLS] = "calls",
    [SUMMARY_SORT_AVG] = "avg",     [SUMMARY_SORT_MIN] = "min",
    [SUMMARY_SORT_MAX] = "max",     [SUMMARY_SORT_ERRORS] = "errors",
    [SUMMARY_SORT_NAME] = "name",
};

int summary_parse_sort(const char *s, enum summary_sort *out)
{
    for (size_t i = 0; i < sizeof summary_sort_names / sizeof *summary_sort_names; i++) {
        if (!strcmp(s, summary_sort_names[i])) {
            *out = (enum summary_sort)i;
            return 0;
        }
    }
    return -1;
}

static void *summary_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    return p;
}

static const char *summary_run_of(const struct model_process *p)
{
    return p->run_id ? p->run_id : "";
}

/* The distinct runs of procs, in order of start time. */
static size_t summary_list_runs(struct model_process **procs, size_t n, struct summary_run **out)
{
    struct summary_run *runs = summary_xcalloc(n, sizeof *runs);
    size_t nruns = 0;
    for (size_t i = 0; i < n; i++) {
        const char *id = summary_run_of(procs[i]);
        size_t r = 0;
        while (r < nruns && strcmp(runs[r].id, id))
            r++;
        if (r == nruns) {
            runs[r].id = report_strdup(id);
            runs[r].start_realtime_ns = procs[i]->start_realtime_ns;
            nruns++;
        }
        runs[r].nfiles++;
        /* A run starts when its first process does: the launcher starts first. */
        if (procs[i]->start_realtime_ns &&
            (runs[r].start_realtime_ns == 0 ||
             procs[i]->start_realtime_ns < runs[r].start_realtime_ns))
            runs[r].start_realtime_ns = procs[i]->start_realtime_ns;
    }
    for (size_t i = 1; i < nruns; i++) { /* insertion sort: a handful of runs */
        struct summary_run t = runs[i];
        size_t j = i;
        for (; j > 0 && runs[j - 1].start_realtime_ns > t.start_realtime_ns; j--)
            runs[j] = runs[j - 1];
        runs[j] = t;
    }
    *out = runs;
    return nruns;
}

static void summary_free_runs(struct summary_run *runs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(runs[i].id);
    free(runs);
}

int summary_select_run(struct model_process **procs, size_t *n, const char *run_id, int all_runs,
                       FILE *notes)
{
    struct summary_run *runs;
    size_t nruns = summary_list_runs(procs, *n, &runs);
    const char *pick = NULL;
    int rc = 0;
    if (all_runs) {
        summary_free_runs(runs, nruns);
        return 0;
    }
    if (run_id) {
        for (size_t r = 0; r < nruns; r++)
            if (!strcmp(runs[r].id, run_id))
                pick = runs[r].id;
        if (!pick) {
            /* Run ids come from the traces and the command line: escaped. */
            fputs("profreport: no input belongs to run '", notes);
            format_fputs_escaped(notes, run_id);
            fputs("'; runs found:", notes);
            for (size_t r = 0; r < nruns; r++) {
                fputc(' ', notes);
                format_fputs_escaped(notes, runs[r].id[0] ? runs[r].id : "(none)");
            }
            fprintf(notes, "\n");
            rc = -1;
        }
    } else if (nruns > 1) {
        pick = runs[nruns - 1].id;
        fprintf(notes, "profreport: the inputs hold %zu runs:", nruns);
        for (size_t r = 0; r < nruns; r++) {
            fputc(' ', notes);
            format_fputs_escaped(notes, runs[r].id[0] ? runs[r].id : "(none)");
            fprintf(notes, " (%zu file%s)%s", runs[r].nfiles, runs[r].nfiles == 1 ? "" : "s",
                    r + 1 < nruns ? "," : "");
        }
        fputs("; reporting the latest, ", notes);
        format_fputs_escaped(notes, pick[0] ? pick : "(none)");
        fputs(". Use --run ID to pick one or --all-runs to merge them.\n", notes);
    }
    if (pick) {
        size_t kept = 0;
        for (size_t i = 0; i < *n; i++) {
            if (!strcmp(summary_run_of(procs[i]), pick))
                procs[kept++] = procs[i];
            else
                model_process_free(procs[i]);
        }
        *n = kept;
    }
    summary_free_runs(runs, nruns);
    return rc;
}

static int summary_proc_cmp(const void *a, const void *b)
{
    const struct model_process *x = *(struct model_process *const *)a;
    const struct model_process *y = *(struct model_process *const *)b;
    /* Ranked processes first, by rank; then by pid; then by file. */
    if ((x->rank < 0) != (y->rank < 0))
        return x->rank < 0 ? 1 : -1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return strcmp(x->file, y->file);
}

static int summary_api_name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct summary_api_row *)a)->name,
                  ((const struct summary_api_row *)b)->name);
}

static int summary_kernel_name_cmp(const void *a, const void *b)
{
    return strcmp(((const struct summary_kernel_row *)a)->name,
                  ((const struct summary_kernel_row *)b)->name);
}

static void summary_merge_hist(struct u64map *into, const struct u64map *from)
{
    uint64_t k, v, *slot;
    for (size_t i = 0; u64map_next(from, &i, &k, &v);)
        if ((slot = u64map_slot(into, k)))
            *slot += v;
}

static void summary_build_api(struct summary *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        n += s->procs[i]->napis;
    struct summary_api_row *rows = summary_xcalloc(n, sizeof *rows);
    size_t k = 0;
    struct model_api_counts c; /* the part's calls (--phase), else the whole process's */
    for (size_t i = 0; i < s->nprocs; i++) {
        for (size_t a = 0; a < s->procs[i]->napis; a++) {
            const struct model_api *api = s->procs[i]->apis[a];
            model_gpu_part_api(s->procs[i], a, &c);
            if (!api || !c.calls)
                continue;
            rows[k++] = (struct summary_api_row){.name = api->name,
                                                 .category = api->category,
                                                 .calls = c.calls,
                                                 .errors = c.errors,
                                                 .total_ns = c.total_ns,
                                                 .min_ns = c.min_ns,
                                                 .max_ns = c.max_ns};
        }
    }
    n = k;
    /* Merge by name: API ids are per file, names are what processes share. */
    qsort(rows, n, sizeof *rows, summary_api_name_cmp);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && !strcmp(rows[out - 1].name, rows[i].name)) {
            struct summary_api_row *r = &rows[out - 1];
            r->calls += rows[i].calls;
            r->errors += rows[i].errors;
            r->total_ns += rows[i].total_ns;
            if (rows[i].min_ns < r->min_ns)
                r->min_ns = rows[i].min_ns;
            if (rows[i].max_ns > r->max_ns)
                r->max_ns = rows[i].max_ns;
        } else {
            rows[out++] = rows[i];
        }
    }
    s->api_total_ns = 0;
    for (size_t i = 0; i < out; i++) {
        rows[i].name = report_strdup(rows[i].name);
        rows[i].avg_ns = (double)rows[i].total_ns / (double)rows[i].calls;
        s->api_total_ns += rows[i].total_ns;
    }
    for (size_t i = 0; i < out; i++)
        rows[i].percent =
            s->api_total_ns ? 100.0 * (double)rows[i].total_ns / (double)s->api_total_ns : 0.0;
    s->api = rows;
    s->napi = out;
}

static void summary_build_kernels(struct summary *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        n += s->procs[i]->kernels.count;
    struct summary_kernel_row *rows = summary_xcalloc(n, sizeof *rows);
    size_t k = 0;
    uint64_t key, v;
    for (size_t i = 0; i < s->nprocs; i++) {
        for (size_t it = 0; u64map_next(&s->procs[i]->kernels, &it, &key, &v);) {
            const struct model_kernel *m = (const void *)(uintptr_t)v;
            struct summary_kernel_row *r = &rows[k++];
            r->name = m->name;
            r->launches = m->launches;
            r->errors = m->errors;
            r->total_ns = m->ns;
            u64map_init(&r->grids);
            u64map_init(&r->blocks);
            summary_merge_hist(&r->grids, &m->grids);
            summary_merge_hist(&r->blocks, &m->blocks);
        }
    }
    qsort(rows, n, sizeof *rows, summary_kernel_name_cmp);
    size_t out = 0;
    for (size_t i = 0; i < n; i++) {
        if (out && !strcmp(rows[out - 1].name, rows[i].name)) {
            struct summary_kernel_row *r = &rows[out - 1];
            r->launches += rows[i].launches;
            r->errors += rows[i].errors;
            r->total_ns += rows[i].total_ns;
            summary_merge_hist(&r->grids, &rows[i].grids);
            summary_merge_hist(&r->blocks, &rows[i].blocks);
            u64map_free(&rows[i].grids);
            u64map_free(&rows[i].blocks);
        } else {
            rows[out++] = rows[i];
        }
    }
    for (size_t i = 0; i < out; i++) {
        struct summary_kernel_row *r = &rows[i];
        r->name = report_strdup(r->name);
        r->avg_ns = r->launches ? (double)r->total_ns / (double)r->launches : 0.0;
        r->has_grid = r->grids.count > 0;
        r->has_block = r->blocks.count > 0;
        r->grid = model_histogram_mode(&r->grids);
        r->block = model_histogram_mode(&r->blocks);
    }
    s->kernels = rows;
    s->nkernels = out;
}

static void summary_add_warning(struct summary *s, const char *w)
{
    char **n = realloc(s->warnings, (s->nwarnings + 1) * sizeof *n);
    if (!n) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    s->warnings = n;
    s->warnings[s->nwarnings++] = report_strdup(w);
}

void summary_build(struct summary *s, struct model_process **procs, size_t n)
{
    memset(s, 0, sizeof *s);
    s->procs = procs;
    s->nprocs = n;
    qsort(procs, n, sizeof *procs, summary_proc_cmp);
    s->nruns = summary_list_runs(procs, n, &s->runs);
    summary_build_api(s);
    summary_build_kernels(s);
    for (size_t i = 0; i < n; i++) {
        const struct model_process *p = procs[i];
        for (int m = 0; m < MODEL_SPACE_COUNT; m++) {
            s->mem[m].alloc_count += p->mem[m].alloc_count;
            s->mem[m].alloc_bytes += p->mem[m].alloc_bytes;
            s->mem[m].free_count += p->mem[m].free_count;
            s->mem[m].free_bytes += p->mem[m].free_bytes;
            s->mem[m].live_bytes += p->mem[m].live_bytes;
            /* Processes do not share an address space: the peak that matters is the
             * largest one process reached. */
            if (p->mem[m].peak_bytes > s->mem[m].peak_bytes)
                s->mem[m].peak_bytes = p->mem[m].peak_bytes;
        }
        for (int d = 0; d < MODEL_DIR_COUNT; d++) {
            s->copies[d].calls += p->copies[d].calls;
            s->copies[d].errors += p->copies[d].errors;
            s->copies[d].bytes += p->copies[d].bytes;
            s->copies[d].ticks += p->copies[d].ticks;
            s->copies[d].ns += p->copies[d].ns;
        }
        for (size_t w = 0; w < p->nwarnings; w++)
            summary_add_warning(s, p->warnings[w]);
    }
    summary_sort(s, SUMMARY_SORT_TOTAL);
    pystats_init(&s->py);
    for (size_t i = 0; i < n; i++) {
        char err[512];
        if (!procs[i]->summary_file)
            pystats_add(&s->py, procs[i], -1, 1);
        else if (summary_file_add_python(&s->py, procs[i], err, sizeof err) != 0)
            summary_add_warning(s, err);
        if (procs[i]->summary_file && !procs[i]->summary_bytes) /* not folded here */
            s->nsummaries++;
        s->py_gaps += procs[i]->py.ngaps;
        s->py_spans += procs[i]->py.spans;
    }
    summary_sort_python(s, PYSTATS_SORT_CUMTIME);
    summary_build_gpu(s);
    summary_sort_gpu(s, SUMMARY_SORT_TOTAL);
    summary_build_torch(s, 0);
}

void summary_sort_python(struct summary *s, enum pystats_sort key)
{
    s->py_sort = key;
    pystats_finish(&s->py, key);
}

static enum summary_sort summary_sort_key;

static int summary_cmp_u64(uint64_t a, uint64_t b)
{
    return a > b ? -1 : a < b; /* descending */
}

static int summary_cmp_double(double a, double b)
{
    return a > b ? -1 : a < b;
}

static int summary_api_cmp(const void *a, const void *b)
{
    const struct summary_api_row *x = a, *y = b;
    int c = 0;
    switch (summary_sort_key) {
    case SUMMARY_SORT_TOTAL:
        c = summary_cmp_u64(x->total_ns, y->total_ns);
        break;
    case SUMMARY_SORT_CALLS:
        c = summary_cmp_u64(x->calls, y->calls);
        break;
    case SUMMARY_SORT_AVG:
        c = summary_cmp_double(x->avg_ns, y->avg_ns);
        break;
    case SUMMARY_SORT_MIN:
        c = summary_cmp_u64(x->min_ns, y->min_ns);
        break;
    case SUMMARY_SORT_MAX:
        c = summary_cmp_u64(x->max_ns, y->max_ns);
        break;
    case SUMMARY_SORT_ERRORS:
        c = summary_cmp_u64(x->errors, y->errors);
        break;
    case SUMMARY_SORT_NAME:
        break;
    }
    return c ? c : strcmp(x->name, y->name);
}

static int summary_kernel_cmp(const void *a, const void *b)
{
    const struct summary_kernel_row *x = a, *y = b;
    int c = 0;
    switch (summary_sort_key) {
    case SUMMARY_SORT_CALLS:
        c = summary_cmp_u64(x->launches, y->launches);
        break;
    case SUMMARY_SORT_AVG:
        c = summary_cmp_double(x->avg_ns, y->avg_ns);
        break;
    case SUMMARY_SORT_ERRORS:
        c = summary_cmp_u64(x->errors, y->errors);
        break;
    case SUMMARY_SORT_NAME:
        break;
    default: /* total; a kernel row has no min or max */
        c = summary_cmp_u64(x->total_ns, y->total_ns);
        break;
    }
    return c ? c : strcmp(x->name, y->name);
}

void summary_sort(struct summary *s, enum summary_sort key)
{
    /* qsort has no context argument in C11; the reporter is single-threaded. */
    summary_sort_key = key;
    qsort(s->api, s->napi, sizeof *s->api, summary_api_cmp);
    qsort(s->kernels, s->nkernels, sizeof *s->kernels, summary_kernel_cmp);
    summary_sort_gpu(s, key);
}

void summary_free(struct summary *s)
{
    for (size_t i = 0; i < s->nprocs; i++)
        model_process_free(s->procs[i]);
    free(s->procs);
    summary_free_runs(s->runs, s->nruns);
    for (size_t i = 0; i < s->napi; i++)
        free(s->api[i].name);
    free(s->api);
    for (size_t i = 0; i < s->nkernels; i++) {
        free(s->kernels[i].name);
        u64map_free(&s->kernels[i].grids);
        u64map_free(&s->kernels[i].blocks);
    }
    free(s->kernels);
    for (size_t i = 0; i < s->nwarnings; i++)
        free(s->warnings[i]);
    free(s->warnings);
    pystats_free(&s->py);
    summary_free_gpu(&s->gpu);
    summary_free_torch(&s->torch);
    memset(s, 0, sizeof *s);
}
