/* torch.distributed's two records of one collective made one: see comm_pair.h. */
#include "comm_pair.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "comm_merge.h"

/* One torch.distributed record: its call index, start and kind. */
struct comm_pair_op {
    size_t i;
    uint64_t start;
    enum comm_kind kind;
};

static int comm_pair_op_cmp(const void *a, const void *b)
{
    const struct comm_pair_op *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->i < y->i ? -1 : x->i > y->i;
}

/* The kind of a call, remembered by name (a process's names are one pointer each). */
struct comm_pair_kinds {
    const char *name[16];
    enum comm_kind kind[16];
    size_t n, next;
};

static enum comm_kind comm_pair_kind(struct comm_pair_kinds *m, const char *name)
{
    for (size_t i = 0; i < m->n; i++)
        if (m->name[i] == name)
            return m->kind[i];
    size_t at = m->n < 16 ? m->n++ : m->next++ % 16;
    m->name[at] = name;
    m->kind[at] = comm_kind_of(name);
    return m->kind[at];
}

/* The dispatcher ops of one kind not yet paired: the next one in start order at or after
 * *at (ops sorted by start), or NULL. */
static struct comm_pair_op *comm_pair_front(struct comm_pair_op *ops, size_t n, size_t *at,
                                            enum comm_kind kind, const size_t *pair)
{
    while (*at < n && (ops[*at].kind != kind || pair[ops[*at].i] != SIZE_MAX))
        (*at)++;
    return *at < n ? &ops[*at] : NULL;
}

/* Whether a dispatcher op of kind dk may have queued a work span of kind wk (NCCL runs a
 * barrier as an allreduce). */
static int comm_pair_kinds_match(enum comm_kind dk, enum comm_kind wk)
{
    return dk == wk || (dk == COMM_KIND_BARRIER && wk == COMM_KIND_ALLREDUCE);
}

/* The dispatcher op not yet paired, of w's kind and on w's thread, that holds w's whole
 * span (ops sorted by start), or NULL: the innermost one that began last before w. */
static struct comm_pair_op *comm_pair_around(struct comm_pair_op *ops, size_t n,
                                             const struct model_comm_call *calls,
                                             const struct comm_pair_op *w, const size_t *pair)
{
    size_t a = 0, b = n; /* the ops that started at or before w: [0, a) */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (ops[m].start <= w->start)
            a = m + 1;
        else
            b = m;
    }
    const struct model_comm_call *wc = &calls[w->i];
    for (size_t k = a, looked = 0; k-- > 0 && looked < 16; looked++) {
        const struct model_comm_call *d = &calls[ops[k].i];
        if (pair[ops[k].i] == SIZE_MAX && d->tid == wc->tid && d->end_ns >= wc->end_ns &&
            comm_pair_kinds_match(ops[k].kind, w->kind))
            return &ops[k];
    }
    return NULL;
}

struct model_comm_call *comm_pair_collectives(const struct model_comm_call *calls, size_t ncalls,
                                              size_t *n)
{
    struct model_comm_call *out = malloc((ncalls + 1) * sizeof *out);
    /* per call: the index of the call it is paired with; SIZE_MAX: none */
    size_t *pair = malloc((ncalls + 1) * sizeof *pair);
    struct comm_pair_op *ops = malloc((ncalls + 1) * sizeof *ops);
    if (!out || !pair || !ops)
        report_oom();
    struct comm_pair_kinds kinds = {0};
    size_t ndispatch = 0, nwork = 0;
    for (size_t i = 0; i < ncalls; i++) {
        pair[i] = SIZE_MAX;
        if (calls[i].source == MODEL_COMM_TORCH_OP && !strncmp(calls[i].name, "c10d::", 6))
            ops[ndispatch++] = (struct comm_pair_op){i, calls[i].start_ns, 0};
    }
    /* the work spans after the dispatcher ops, in the same array */
    struct comm_pair_op *work = ops + ndispatch;
    for (size_t i = 0; i < ncalls; i++)
        if (calls[i].source == MODEL_COMM_TORCH_OP && strncmp(calls[i].name, "c10d::", 6))
            work[nwork++] = (struct comm_pair_op){i, calls[i].start_ns, 0};
    if (ndispatch && nwork) {
        for (size_t i = 0; i < ndispatch + nwork; i++)
            ops[i].kind = comm_pair_kind(&kinds, calls[ops[i].i].name);
        qsort(ops, ndispatch, sizeof *ops, comm_pair_op_cmp);
        qsort(work, nwork, sizeof *work, comm_pair_op_cmp);
        /* first a work span run inside its dispatcher op, on its thread (NCCL, a blocking
         * backend): whatever other groups have queued, that op is its own */
        for (size_t w = 0; w < nwork; w++) {
            struct comm_pair_op *d = comm_pair_around(ops, ndispatch, calls, &work[w], pair);
            if (d) {
                pair[d->i] = work[w].i;
                pair[work[w].i] = d->i;
            }
        }
        /* then the others in queue order. Per kind, where its next dispatcher op not yet
         * paired may be: each kind's ops are paired in start order, so this only moves on */
        size_t at[COMM_KIND_SETUP + 1] = {0};
        for (size_t w = 0; w < nwork; w++) {
            if (pair[work[w].i] != SIZE_MAX)
                continue;
            enum comm_kind k = work[w].kind;
            struct comm_pair_op *d = comm_pair_front(ops, ndispatch, &at[k], k, pair);
            if (k == COMM_KIND_ALLREDUCE) { /* a barrier run as an allreduce (NCCL) */
                struct comm_pair_op *b = comm_pair_front(ops, ndispatch, &at[COMM_KIND_BARRIER],
                                                         COMM_KIND_BARRIER, pair);
                if (b && b->start <= work[w].start && (!d || b->start < d->start))
                    d = b;
            }
            if (!d || d->start > work[w].start)
                continue; /* no op queued it: a collective of its own */
            pair[d->i] = work[w].i;
            pair[work[w].i] = d->i;
        }
    }
    size_t m = 0;
    for (size_t i = 0; i < ncalls; i++) {
        if (pair[i] == SIZE_MAX) {
            out[m++] = calls[i];
            continue;
        }
        const struct model_comm_call *d = &calls[i], *w = &calls[pair[i]];
        if (strncmp(d->name, "c10d::", 6))
            continue; /* a work span: with its dispatcher op */
        struct model_comm_call *c = &out[m++];
        *c = *w;
        c->start_ns = d->start_ns;
        c->end_ns = w->end_ns > d->end_ns ? w->end_ns : d->end_ns;
        c->tid = d->tid;
        c->failed = d->failed || w->failed;
    }
    free(pair);
    free(ops);
    *n = m;
    return out;
}

static int comm_span_cmp(const void *a, const void *b)
{
    const struct comm_span *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

void comm_spans_cover(struct comm_span *s, size_t n, uint64_t *by_row)
{
    if (!n)
        return;
    size_t sorted = 1; /* calls come in time order: most often nothing to sort */
    while (sorted < n && comm_span_cmp(&s[sorted - 1], &s[sorted]) <= 0)
        sorted++;
    if (sorted < n)
        qsort(s, n, sizeof *s, comm_span_cmp);
    uint64_t a = s[0].start, e = s[0].end;
    for (size_t i = 1; i <= n; i++) {
        if (i < n && s[i].row == s[i - 1].row && s[i].start <= e) {
            if (s[i].end > e)
                e = s[i].end;
            continue;
        }
        by_row[s[i - 1].row] += e > a ? e - a : 0;
        if (i < n) {
            a = s[i].start;
            e = s[i].end;
        }
    }
}

uint64_t comm_pair_covered_ns(const struct model_comm_call *const *calls, size_t ncalls)
{
    size_t n = 0, cap = 0;
    struct comm_span *iv = NULL;
    for (size_t i = 0; i < ncalls; i++) {
        if (calls[i]->setup)
            continue;
        iv = report_grow(iv, &cap, n + 1, sizeof *iv);
        iv[n++] = (struct comm_span){calls[i]->start_ns, calls[i]->end_ns, 0};
    }
    uint64_t total = 0;
    comm_spans_cover(iv, n, &total);
    free(iv);
    return total;
}

void comm_pair_process(const struct model_comm *c, uint64_t *collectives, uint64_t *covered_ns)
{
    size_t n;
    struct model_comm_call *calls = comm_pair_collectives(c->calls, c->ncalls, &n);
    *collectives = 0;
    for (size_t i = 0; i < n; i++)
        *collectives += !calls[i].setup; /* a failed one took its time too */
    free(calls);
    const struct model_comm_call **raw = malloc((c->ncalls + 1) * sizeof *raw);
    if (!raw)
        report_oom();
    for (size_t i = 0; i < c->ncalls; i++)
        raw[i] = &c->calls[i];
    *covered_ns = comm_pair_covered_ns(raw, c->ncalls);
    free(raw);
}
