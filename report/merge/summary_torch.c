/* summary_torch: the PyTorch operator table of a report — the per-process rows of
 * model_torch.c merged by name (and input shapes when grouped) over the processes, with
 * torch.profiler's averages and percentages: Self CPU % and CPU total % of the sum of Self
 * CPU over every op, Self CUDA % of the sum of Self CUDA. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "hashmap.h"
#include "summary.h"

static const struct {
    const char *name;
    enum summary_op_sort key;
} summary_op_sort_names[] = {
    {"self_cpu", SUMMARY_OP_SORT_SELF_CPU},
    {"cpu_total", SUMMARY_OP_SORT_CPU_TOTAL},
    {"self_cuda", SUMMARY_OP_SORT_SELF_CUDA},
    {"cuda_total", SUMMARY_OP_SORT_CUDA_TOTAL},
    {"calls", SUMMARY_OP_SORT_CALLS},
    {"name", SUMMARY_OP_SORT_NAME},
    /* torch's key_averages().table(sort_by=...) spellings */
    {"self_cpu_time_total", SUMMARY_OP_SORT_SELF_CPU},
    {"cpu_time_total", SUMMARY_OP_SORT_CPU_TOTAL},
    {"self_cuda_time_total", SUMMARY_OP_SORT_SELF_CUDA},
    {"cuda_time_total", SUMMARY_OP_SORT_CUDA_TOTAL},
    {"count", SUMMARY_OP_SORT_CALLS},
    {"cpu_memory_usage", SUMMARY_OP_SORT_CPU_MEM},
    {"self_cpu_memory_usage", SUMMARY_OP_SORT_SELF_CPU_MEM},
    {"cuda_memory_usage", SUMMARY_OP_SORT_CUDA_MEM},
    {"self_cuda_memory_usage", SUMMARY_OP_SORT_SELF_CUDA_MEM},
};

int summary_parse_op_sort(const char *s, enum summary_op_sort *out)
{
    for (size_t i = 0; i < sizeof summary_op_sort_names / sizeof *summary_op_sort_names; i++) {
        if (!strcmp(s, summary_op_sort_names[i].name)) {
            *out = summary_op_sort_names[i].key;
            return 0;
        }
    }
    return -1;
}

const char *summary_op_sort_name(enum summary_op_sort key)
{
    for (size_t i = 0; i < sizeof summary_op_sort_names / sizeof *summary_op_sort_names; i++)
        if (summary_op_sort_names[i].key == key)
            return summary_op_sort_names[i].name;
    return "?";
}

const char *summary_row_name(const char *name)
{
    static const char prefix[] = "ProfilerStep#";
    const size_t n = sizeof prefix - 1;
    if (!name || strncmp(name, prefix, n) || !name[n])
        return name;
    for (const char *c = name + n; *c; c++)
        if (*c < '0' || *c > '9')
            return name;
    return SUMMARY_PROFILER_STEPS_ROW;
}

/* FNV-1a of the row key, for the index; collisions are probed by comparing the strings. */
static uint64_t summary_torch_hash(const char *name, const char *shapes)
{
    uint64_t h = 1469598103934665603ull;
    for (const char *c = name; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *c = shapes ? shapes : ""; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h;
}

static int summary_torch_same(const struct summary_op_row *r, const char *name, const char *shapes)
{
    if (strcmp(r->name, name))
        return 0;
    if (!r->shapes || !shapes)
        return !r->shapes && !shapes;
    return !strcmp(r->shapes, shapes);
}

static struct summary_op_row *summary_torch_row(struct summary_torch *t, struct u64map *index,
                                                size_t *cap, const char *name, const char *shapes)
{
    uint64_t h = summary_torch_hash(name, shapes);
    for (;; h++) { /* linear probing over the hash values */
        uint64_t *slot = u64map_slot(index, h);
        if (!slot)
            report_oom();
        if (!*slot) {
            t->rows = report_grow(t->rows, cap, t->nrows + 1, sizeof *t->rows);
            struct summary_op_row *r = &t->rows[t->nrows];
            memset(r, 0, sizeof *r);
            r->name = report_strdup(name);
            r->shapes = shapes ? report_strdup(shapes) : NULL;
            *slot = ++t->nrows;
            return r;
        }
        if (summary_torch_same(&t->rows[*slot - 1], name, shapes))
            return &t->rows[*slot - 1];
    }
}

void summary_build_torch(struct summary *s, int by_shape)
{
    struct summary_torch *t = &s->torch;
    enum summary_op_sort sort = t->sort;
    summary_free_torch(t);
    t->by_shape = by_shape;
    struct u64map index;
    u64map_init(&index);
    size_t cap = 0;
    char unknown[48];
    struct rank_table per_rank;
    rank_table_init(&per_rank, s->procs, s->nprocs);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        t->records += p->torch.records;
        t->spans_expected += p->torch.spans_expected;
        t->mem_records += p->torch.mem_records;
        t->dev_mem_records += p->torch.dev_mem_records;
        for (size_t k = 0; k < p->torch.nrows; k++) {
            const struct model_torch_row *m = &p->torch.rows[k];
            const char *name = summary_row_name(m->name);
            if (!name) {
                snprintf(unknown, sizeof unknown, "(op name #%u)", m->name_sid);
                name = unknown;
            }
            const char *shapes = by_shape ? (m->shapes ? m->shapes : "") : NULL;
            struct summary_op_row *r = summary_torch_row(t, &index, &cap, name, shapes);
            r->calls += m->calls;
            r->self_cpu_ns += m->self_cpu_ns;
            r->cpu_total_ns += m->cpu_total_ns;
            r->self_cuda_ns += m->self_cuda_ns;
            r->cuda_total_ns += m->cuda_total_ns;
            r->self_cpu_mem = model_i64_add(r->self_cpu_mem, m->self_cpu_mem);
            r->cpu_mem = model_i64_add(r->cpu_mem, m->cpu_mem);
            r->self_dev_mem = model_i64_add(r->self_dev_mem, m->self_dev_mem);
            r->dev_mem = model_i64_add(r->dev_mem, m->dev_mem);
            rank_table_add(&per_rank, (size_t)(r - t->rows), i, m->self_cpu_ns);
        }
    }
    u64map_free(&index);
    for (size_t i = 0; i < t->nrows; i++)
        t->rows[i].over_ranks = rank_table_spread(&per_rank, i);
    rank_table_free(&per_rank);
    for (size_t i = 0; i < t->nrows; i++) {
        t->calls += t->rows[i].calls;
        t->self_cpu_total_ns += t->rows[i].self_cpu_ns;
        t->self_cuda_total_ns += t->rows[i].self_cuda_ns;
        t->any_cuda |= t->rows[i].cuda_total_ns > 0;
    }
    double cpu = (double)t->self_cpu_total_ns, cuda = (double)t->self_cuda_total_ns;
    for (size_t i = 0; i < t->nrows; i++) {
        struct summary_op_row *r = &t->rows[i];
        r->cpu_avg_ns = r->calls ? (double)r->cpu_total_ns / (double)r->calls : 0.0;
        r->cuda_avg_ns = r->calls ? (double)r->cuda_total_ns / (double)r->calls : 0.0;
        r->self_cpu_percent = cpu > 0 ? 100.0 * (double)r->self_cpu_ns / cpu : 0.0;
        r->cpu_total_percent = cpu > 0 ? 100.0 * (double)r->cpu_total_ns / cpu : 0.0;
        r->self_cuda_percent = cuda > 0 ? 100.0 * (double)r->self_cuda_ns / cuda : 0.0;
    }
    summary_sort_torch(s, sort);
}

static enum summary_op_sort summary_torch_sort_key;

static int summary_torch_u64(uint64_t a, uint64_t b)
{
    return a > b ? -1 : a < b; /* descending */
}

static int summary_torch_i64(int64_t a, int64_t b)
{
    return a > b ? -1 : a < b; /* descending */
}

static int summary_torch_cmp(const void *a, const void *b)
{
    const struct summary_op_row *x = a, *y = b;
    int c = 0;
    switch (summary_torch_sort_key) {
    case SUMMARY_OP_SORT_SELF_CPU:
        c = summary_torch_u64(x->self_cpu_ns, y->self_cpu_ns);
        break;
    case SUMMARY_OP_SORT_CPU_TOTAL:
        c = summary_torch_u64(x->cpu_total_ns, y->cpu_total_ns);
        break;
    case SUMMARY_OP_SORT_SELF_CUDA:
        c = summary_torch_u64(x->self_cuda_ns, y->self_cuda_ns);
        break;
    case SUMMARY_OP_SORT_CUDA_TOTAL:
        c = summary_torch_u64(x->cuda_total_ns, y->cuda_total_ns);
        break;
    case SUMMARY_OP_SORT_CALLS:
        c = summary_torch_u64(x->calls, y->calls);
        break;
    case SUMMARY_OP_SORT_NAME:
        break;
    case SUMMARY_OP_SORT_CPU_MEM:
        c = summary_torch_i64(x->cpu_mem, y->cpu_mem);
        break;
    case SUMMARY_OP_SORT_SELF_CPU_MEM:
        c = summary_torch_i64(x->self_cpu_mem, y->self_cpu_mem);
        break;
    case SUMMARY_OP_SORT_CUDA_MEM:
        c = summary_torch_i64(x->dev_mem, y->dev_mem);
        break;
    case SUMMARY_OP_SORT_SELF_CUDA_MEM:
        c = summary_torch_i64(x->self_dev_mem, y->self_dev_mem);
        break;
    }
    if (!c)
        c = strcmp(x->name, y->name);
    if (!c && x->shapes && y->shapes)
        c = strcmp(x->shapes, y->shapes);
    return c;
}

void summary_sort_torch(struct summary *s, enum summary_op_sort key)
{
    struct summary_torch *t = &s->torch;
    t->sort = key;
    summary_torch_sort_key = key;
    if (t->nrows)
        qsort(t->rows, t->nrows, sizeof *t->rows, summary_torch_cmp);
}

void summary_free_torch(struct summary_torch *t)
{
    for (size_t i = 0; i < t->nrows; i++) {
        free(t->rows[i].name);
        free(t->rows[i].shapes);
    }
    free(t->rows);
    memset(t, 0, sizeof *t);
}
