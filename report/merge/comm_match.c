/* Matching collective calls across ranks: see comm_match.h. */
#include "comm_match.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"

void comm_match_init(struct comm_match *m)
{
    memset(m, 0, sizeof *m);
    u64map_init(&m->index);
}

void comm_match_free(struct comm_match *m)
{
    free(m->ops);
    u64map_free(&m->index);
    memset(m, 0, sizeof *m);
}

static int comm_match_call_cmp(const void *a, const void *b)
{
    const struct comm_match_call *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* A rank's calls come in time order, a few collectives and communicators among them:
 * sorted then by moving each (row, communicator) group apart, in order, which is what the
 * stable sort (glibc's qsort merges) gives. 0, or -1 when they do not come so (the caller
 * sorts). */
#define COMM_MATCH_FEW_GROUPS 32
static int comm_match_group_sort(struct comm_match_call *calls, size_t n)
{
    struct comm_match_group {
        size_t row;
        uint64_t comm, last_start;
        size_t count, at;
    } g[COMM_MATCH_FEW_GROUPS];
    size_t ng = 0, cur = 0;
    for (size_t i = 0; i < n; i++) {
        const struct comm_match_call *c = &calls[i];
        if (!ng || g[cur].row != c->row || g[cur].comm != c->comm) {
            for (cur = 0; cur < ng && (g[cur].row != c->row || g[cur].comm != c->comm); cur++)
                ;
            if (cur == ng) {
                if (ng == COMM_MATCH_FEW_GROUPS)
                    return -1;
                g[ng++] = (struct comm_match_group){c->row, c->comm, c->start, 0, 0};
            }
        }
        if (c->start < g[cur].last_start)
            return -1;
        g[cur].last_start = c->start;
        g[cur].count++;
    }
    /* groups in (row, communicator) order: a handful, by insertion */
    for (size_t i = 1; i < ng; i++) {
        struct comm_match_group t = g[i];
        size_t j = i;
        for (; j > 0 && (g[j - 1].row > t.row || (g[j - 1].row == t.row && g[j - 1].comm > t.comm));
             j--)
            g[j] = g[j - 1];
        g[j] = t;
    }
    for (size_t i = 0, at = 0; i < ng; i++) {
        g[i].at = at;
        at += g[i].count;
    }
    struct comm_match_call *out = malloc(n * sizeof *out);
    if (!out)
        report_oom();
    cur = 0;
    for (size_t i = 0; i < n; i++) {
        const struct comm_match_call *c = &calls[i];
        if (g[cur].row != c->row || g[cur].comm != c->comm)
            for (cur = 0; g[cur].row != c->row || g[cur].comm != c->comm; cur++)
                ;
        out[g[cur].at++] = *c;
    }
    memcpy(calls, out, n * sizeof *out);
    free(out);
    return 0;
}

void comm_match_number(struct comm_match_call *calls, size_t n)
{
    if (!n)
        return;
    if (comm_match_group_sort(calls, n) != 0)
        qsort(calls, n, sizeof *calls, comm_match_call_cmp);
    for (size_t i = 0; i < n; i++)
        calls[i].k = i > 0 && calls[i - 1].row == calls[i].row && calls[i - 1].comm == calls[i].comm
                         ? calls[i - 1].k + 1
                         : 0;
}

static int comm_match_group_cmp(const struct comm_match_call *x, size_t row, uint64_t comm)
{
    if (x->row != row)
        return x->row < row ? -1 : 1;
    return x->comm < comm ? -1 : x->comm > comm;
}

static uint64_t comm_match_distance(uint64_t a, uint64_t b)
{
    return a > b ? a - b : b - a;
}

/* The index of the call among c[0..n) whose end is nearest t. */
static size_t comm_match_nearest_end(const struct comm_match_call *c, size_t n, uint64_t t)
{
    size_t best = 0;
    for (size_t i = 1; i < n; i++)
        if (comm_match_distance(c[i].end, t) < comm_match_distance(c[best].end, t))
            best = i;
    return best;
}

void comm_match_align(struct comm_match_call *calls, size_t n, const struct comm_match_call *ref,
                      size_t nref)
{
    for (size_t g = 0; g < n;) {
        size_t end = g;
        while (end < n && !comm_match_group_cmp(&calls[end], calls[g].row, calls[g].comm))
            end++;
        size_t a = 0, b = nref; /* ref's group: [a, b) */
        while (a < b) {
            size_t m = a + (b - a) / 2;
            if (comm_match_group_cmp(&ref[m], calls[g].row, calls[g].comm) < 0)
                a = m + 1;
            else
                b = m;
        }
        size_t lo = a;
        b = lo;
        while (b < nref && !comm_match_group_cmp(&ref[b], calls[g].row, calls[g].comm))
            b++;
        if (b > lo) {
            /* two pairings: this rank's first call with ref's nearest, ref's first call with
             * this rank's nearest; the closer decides (either side may have calls from
             * before the other's window: k then wraps, alike on every rank) */
            size_t ia = comm_match_nearest_end(ref + lo, b - lo, calls[g].end) + lo;
            size_t ib = comm_match_nearest_end(calls + g, end - g, ref[lo].end) + g;
            uint64_t da = comm_match_distance(ref[ia].end, calls[g].end);
            uint64_t db = comm_match_distance(ref[lo].end, calls[ib].end);
            size_t shift = da <= db ? ref[ia].k - calls[g].k : ref[lo].k - calls[ib].k;
            for (size_t i = g; i < end; i++)
                calls[i].k += shift;
        }
        g = end;
    }
}

static uint64_t comm_match_hash(size_t row, uint64_t comm, size_t k)
{
    uint64_t h = 0xcbf29ce484222325ull;
    uint64_t v[3] = {row, comm, k};
    for (int i = 0; i < 3; i++)
        for (int b = 0; b < 8; b++)
            h = (h ^ ((v[i] >> (8 * b)) & 0xff)) * 0x100000001b3ull;
    return h | 1; /* never 0 */
}

struct comm_match_op *comm_match_op(struct comm_match *m, const struct comm_match_call *c, int add)
{
    /* Ranks number their calls alike, in one order: the next operation is most often the
     * one after the last found. */
    if (m->next < m->nops) {
        struct comm_match_op *op = &m->ops[m->next];
        if (op->row == c->row && op->comm == c->comm && op->k == c->k) {
            m->next++;
            return op;
        }
    }
    for (uint64_t h = comm_match_hash(c->row, c->comm, c->k);; h++) {
        uint64_t *slot = add ? u64map_slot(&m->index, h) : u64map_find(&m->index, h);
        if (add && !slot)
            report_oom();
        if (!slot)
            return NULL;
        if (*slot) {
            struct comm_match_op *op = &m->ops[*slot - 1];
            if (op->row == c->row && op->comm == c->comm && op->k == c->k) {
                m->next = *slot;
                return op;
            }
            continue;
        }
        if (!add) /* u64map_find never gives an empty slot; kept for clarity */
            return NULL;
        m->ops = report_grow(m->ops, &m->cap, m->nops + 1, sizeof *m->ops);
        struct comm_match_op *op = &m->ops[m->nops];
        memset(op, 0, sizeof *op);
        op->row = c->row;
        op->comm = c->comm;
        op->k = c->k;
        *slot = ++m->nops;
        m->next = m->nops;
        return op;
    }
}

void comm_match_arrive(struct comm_match_op *op, size_t rank, uint64_t start)
{
    if (op->nranks == 0) {
        op->last = op->first = start;
        op->last_rank = rank;
    } else {
        if (start > op->last) {
            op->before = op->last;
            op->last = start;
            op->last_rank = rank;
        } else if (op->nranks == 1 || start > op->before) {
            op->before = start;
        }
        if (start < op->first)
            op->first = start;
    }
    op->nranks++;
}

static int comm_match_op_cmp(const void *a, const void *b)
{
    const struct comm_match_op *x = a, *y = b;
    if (x->row != y->row)
        return x->row < y->row ? -1 : 1;
    if (x->comm != y->comm)
        return x->comm < y->comm ? -1 : 1;
    return x->k < y->k ? -1 : x->k > y->k;
}

void comm_match_sort(struct comm_match *m)
{
    if (m->nops)
        qsort(m->ops, m->nops, sizeof *m->ops, comm_match_op_cmp);
    u64map_free(&m->index); /* the indices moved */
    u64map_init(&m->index);
    m->next = 0;
}
