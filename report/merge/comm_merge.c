/* The cross-rank merge of communication: see comm_merge.h. */
#include "comm_merge.h"
#include "steps_report.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "comm_clock.h"
#include "comm_match.h"
#include "comm_pair.h"
#include "comm_window.h"
#include "format.h"
#include "summary_file.h"

static int comm_merge_matched_kind(enum comm_kind k)
{
    return k != COMM_KIND_P2P && k != COMM_KIND_WAIT && k != COMM_KIND_SETUP;
}

/* Collectives every rank leaves together (each waits for every other): their exits
 * measure the clocks' offsets. */
static int comm_merge_symmetric_kind(enum comm_kind k)
{
    return k == COMM_KIND_ALLREDUCE || k == COMM_KIND_ALLGATHER || k == COMM_KIND_REDUCE_SCATTER ||
           k == COMM_KIND_ALLTOALL || k == COMM_KIND_BARRIER;
}

/* ---- ranks ---- */

/* The calls of one rank's processes: their own, or read from their summaries for as long
 * as the rank is being merged; as collectives (comm_pair.h), and as recorded (raw: the
 * time they cover). */
struct comm_merge_calls {
    const struct model_comm_call **calls;
    size_t n, cap;
    const struct model_comm_call **raw;
    size_t nraw, cap_raw;
    struct model_comm *read; /* one per process, those read from summaries */
    size_t nread;
    struct model_comm_call **collectives; /* one per process, comm_pair_collectives' */
    /* the last row looked up (comm_merge_calls_row): a name is one pointer while it lives */
    const char *memo_name;
    uint8_t memo_source;
    size_t memo_row;
};

/* with_steps: a summary's steps are read with its calls (the merge asks for them next). */
static void comm_merge_calls_get(struct comm_merge_calls *out, const struct comm_merge_rank *r,
                                 int with_steps)
{
    memset(out, 0, sizeof *out);
    out->read = calloc(r->nprocs + 1, sizeof *out->read);
    out->collectives = calloc(r->nprocs + 1, sizeof *out->collectives);
    if (!out->read || !out->collectives)
        report_oom();
    for (size_t p = 0; p < r->nprocs; p++) {
        const struct model_process *proc = r->procs[p];
        const struct model_comm *c = &proc->comm;
        if (proc->summary_file) {
            char err[512];
            struct model_comm *m = &out->read[out->nread++];
            if (summary_file_read_comm(proc, with_steps, m, err, sizeof err) != 0)
                format_say(stderr, "warning: %s", err);
            c = m;
        }
        for (size_t i = 0; i < c->ncalls; i++) {
            out->raw = report_grow(out->raw, &out->cap_raw, out->nraw + 1, sizeof *out->raw);
            out->raw[out->nraw++] = &c->calls[i];
        }
        size_t n;
        out->collectives[p] = comm_pair_collectives(c->calls, c->ncalls, &n);
        for (size_t i = 0; i < n; i++) {
            out->calls = report_grow(out->calls, &out->cap, out->n + 1, sizeof *out->calls);
            out->calls[out->n++] = &out->collectives[p][i];
        }
    }
}

static void comm_merge_calls_free(struct comm_merge_calls *c)
{
    for (size_t i = 0; i < c->nread; i++)
        summary_file_free_comm(&c->read[i]);
    free(c->read);
    for (size_t i = 0; c->collectives && c->collectives[i]; i++)
        free(c->collectives[i]);
    free(c->collectives);
    free(c->calls);
    free(c->raw);
    memset(c, 0, sizeof *c);
}

/* A named action's calls and time over the lists a process has them in. */
static void comm_merge_named_steps(const struct model_process *proc, const char *name,
                                   uint64_t *steps, uint64_t *total)
{
    const struct model_action *lists[] = {proc->gpu.actions, proc->torch.scopes,
                                          proc->torch.builtin};
    size_t counts[] = {proc->gpu.nactions, proc->torch.nscopes, proc->torch.nbuiltin};
    for (size_t l = 0; l < 3; l++)
        for (size_t i = 0; i < counts[l]; i++)
            if (!strcmp(lists[l][i].name, name)) {
                *steps += lists[l][i].calls;
                *total += lists[l][i].total_ns;
            }
}

/* The rank the others waited for, and why (comm_merge.h). */
static void comm_merge_slowest(struct comm_report *r)
{
    r->slowest = (struct comm_slowest){.rank = -1};
    if (r->nranks < 2)
        return;
    size_t at = SIZE_MAX;
    for (size_t k = 0; k < r->nranks; k++)
        if (r->ranks[k].late_ns && (at == SIZE_MAX || r->ranks[k].late_ns > r->ranks[at].late_ns))
            at = k;
    for (size_t k = 0; k < r->nranks && at == SIZE_MAX; k++)
        if (r->ranks[k].steps && r->ranks[k].step_ns == r->step.max && r->step.max > r->step.median)
            at = k;
    if (at == SIZE_MAX)
        return;
    const struct comm_rank_row *k = &r->ranks[at];
    struct comm_slowest *w = &r->slowest;
    w->rank = k->rank;
    w->late_ns = k->late_ns;
    w->last_arrivals = k->last_arrivals;
    w->compute_ns = (int64_t)(k->compute_ns - r->compute.median);
    w->data_ns = (int64_t)(k->data_ns - r->data.median);
    w->sync_ns = (int64_t)(k->sync_ns - r->sync.median);
    w->idle_ns = (int64_t)(k->idle_ns - r->idle.median);
    int64_t best = 0;
    if (w->compute_ns > best) {
        best = w->compute_ns;
        w->why = "compute";
    }
    if (w->data_ns > best) {
        best = w->data_ns;
        w->why = "data loading";
    }
    if (w->sync_ns > best) {
        best = w->sync_ns;
        w->why = "host syncs";
    }
    /* idle holds data loading and syncs when they are not ops (no steps): only beyond
     * them; with steps they are apart */
    int64_t idle = w->idle_ns;
    if (!r->by_steps)
        idle -= (w->data_ns > 0 ? w->data_ns : 0) + (w->sync_ns > 0 ? w->sync_ns : 0);
    if (idle > best)
        w->why = "time outside ops and communication (Python, sleeps, I/O)";
    /* named steps leave gaps: a rank that arrives last with no excess inside them to speak
     * of (less than half the median rank's wait) spends it between them (--step
     * Tensor.backward: the others waited 38 ms a step in backward's allreduce for a rank that
     * slept before it; it was named for +670 us of compute, or not at all) */
    if (w->late_ns && r->by_steps && r->step_source == MODEL_STEPS_NAMED) {
        const int64_t parts[] = {w->compute_ns, w->data_ns, w->sync_ns, w->idle_ns};
        uint64_t excess = 0;
        for (size_t i = 0; i < sizeof parts / sizeof *parts; i++)
            excess += parts[i] > 0 ? (uint64_t)parts[i] : 0;
        if ((w->between = excess * 2 < r->ranks[comm_median_rank(r)].wait_ns))
            w->why = "time between the steps (outside the --step name's calls)";
    }
}

static void comm_merge_rank_times(struct comm_rank_row *row, const struct comm_merge_rank *r,
                                  const struct comm_merge_calls *calls, const char *step_name)
{
    uint64_t step_total = 0;
    for (size_t p = 0; p < r->nprocs; p++) {
        const struct model_process *proc = r->procs[p];
        if (proc->wall_ns > row->wall_ns)
            row->wall_ns = proc->wall_ns;
        if (step_name)
            comm_merge_named_steps(proc, step_name, &row->steps, &step_total);
        for (size_t i = 0; i < proc->torch.nbuiltin && !step_name; i++) {
            const struct model_action *a = &proc->torch.builtin[i];
            if (!strcmp(a->name, "optimizer_step"))
                row->steps += a->calls;
            step_total += a->total_ns;
        }
        steps_process_times(proc, &row->compute_ns, &row->data_ns, &row->sync_ns);
    }
    row->step_ns = row->steps ? step_total / row->steps : 0;
    row->comm_ns = comm_pair_covered_ns(calls->raw, calls->nraw);
    uint64_t busy = row->compute_ns + row->comm_ns;
    row->idle_ns = row->wall_ns > busy ? row->wall_ns - busy : 0;
}

/* ---- matching (comm_match.c) ---- */

static int comm_merge_straggler_cmp(const void *a, const void *b)
{
    const struct comm_straggler *x = a, *y = b;
    return x->start_ns < y->start_ns ? -1 : x->start_ns > y->start_ns;
}

static int comm_merge_row_cmp(const void *a, const void *b)
{
    const struct comm_row *x = a, *y = b;
    if (x->time_ns != y->time_ns)
        return x->time_ns > y->time_ns ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Per row and rank: calls, time, wait. */
struct comm_merge_cell {
    uint64_t calls, time_ns, wait_ns;
    uint64_t last, late_ns; /* operations it arrived last at, its lateness */
};

/* A list of spans (comm_pair.h), reused rank after rank. */
struct comm_merge_spans {
    struct comm_span *s;
    size_t n, cap;
};

static void comm_merge_span(struct comm_merge_spans *l, uint64_t start, uint64_t end, size_t row)
{
    l->s = report_grow(l->s, &l->cap, l->n + 1, sizeof *l->s);
    l->s[l->n++] = (struct comm_span){start, end, row};
}

/* The time l's spans cover in each of n rows, overlaps once: a new array (free it). */
static uint64_t *comm_merge_cover(struct comm_merge_spans *l, size_t n)
{
    uint64_t *by_row = calloc(n + 1, sizeof *by_row);
    if (!by_row)
        report_oom();
    comm_spans_cover(l->s, l->n, by_row);
    return by_row;
}

/* Rank k's time (wait 0) or wait (1) in each row: the time its spans cover, overlaps once.
 * DDP's gradient buckets run at once on two gloo threads: summed, a 15 s loop whose
 * allreduces covered 5.4 s read 10.5 s of allreduce. */
static void comm_merge_cover_cells(struct comm_report *r, struct comm_merge_spans *l,
                                   struct comm_merge_cell *cells, size_t k, int wait)
{
    uint64_t *by_row = comm_merge_cover(l, r->nrows);
    for (size_t row = 0; row < r->nrows; row++) {
        struct comm_merge_cell *cell = &cells[row * r->nranks + k];
        *(wait ? &cell->wait_ns : &cell->time_ns) = by_row[row];
        *(wait ? &r->rows[row].wait_ns : &r->rows[row].time_ns) += by_row[row];
    }
    free(by_row);
}

/* A rank's wait for the others over the window: the time its collectives covered before
 * the last rank arrived, overlaps once, less the part of their time that its own work hid
 * (with steps, comm is the part no op hides): a bucket queued early in a backward waits
 * for the others while the rank computes the rest. At most its communication time. */
static uint64_t comm_merge_rank_wait(const struct comm_rank_row *row,
                                     struct comm_merge_spans *calls, struct comm_merge_spans *waits)
{
    uint64_t covered = 0, waited = 0;
    comm_spans_cover(calls->s, calls->n, &covered);
    comm_spans_cover(waits->s, waits->n, &waited);
    uint64_t hidden = covered > row->comm_ns ? covered - row->comm_ns : 0;
    uint64_t wait = waited > hidden ? waited - hidden : 0;
    return wait < row->comm_ns ? wait : row->comm_ns;
}

/* Per operation matched on two ranks or more: the last rank, its lateness (the time from
 * the other ranks' arrival to its own; a rank late at two buckets at once is late once),
 * the straggler row. */
static void comm_merge_operations(struct comm_report *r, struct comm_match *m,
                                  struct comm_merge_cell *cells)
{
    size_t cap = 0;
    struct comm_merge_spans in_cells = {0}, in_run = {0}, in_window = {0};
    for (size_t i = 0; i < m->nops; i++) {
        const struct comm_match_op *op = &m->ops[i];
        if (op->nranks < 2)
            continue;
        r->rows[op->row].matched++;
        uint64_t late_ns = op->last - op->before;
        struct comm_rank_row *late = &r->ranks[op->last_rank];
        /* Ranks that arrive together: none of them was last. */
        if (late_ns) {
            cells[op->row * r->nranks + op->last_rank].last++;
            comm_merge_span(&in_cells, op->before, op->last, op->row * r->nranks + op->last_rank);
            late->run_last_arrivals++;
            comm_merge_span(&in_run, op->before, op->last, op->last_rank);
            if (!op->outside) {
                late->last_arrivals++;
                comm_merge_span(&in_window, op->before, op->last, op->last_rank);
            }
        }
        r->stragglers = report_grow(r->stragglers, &cap, r->nstragglers + 1, sizeof *r->stragglers);
        r->stragglers[r->nstragglers++] = (struct comm_straggler){
            /* the row index rides in name's place until the rows stop moving */
            .name = (const char *)(uintptr_t)(op->row + 1),
            .comm = op->comm,
            .index = op->k,
            .ranks = op->nranks,
            .last_rank = late_ns ? late->rank : -1,
            .late_ns = late_ns,
            .spread_ns = op->last - op->first,
            .start_ns = op->first,
        };
    }
    uint64_t *by_cell = comm_merge_cover(&in_cells, r->nrows * r->nranks);
    uint64_t *by_run = comm_merge_cover(&in_run, r->nranks);
    uint64_t *by_window = comm_merge_cover(&in_window, r->nranks);
    for (size_t i = 0; i < r->nrows * r->nranks; i++)
        cells[i].late_ns = by_cell[i];
    for (size_t k = 0; k < r->nranks; k++) {
        r->ranks[k].run_late_ns = by_run[k];
        r->ranks[k].late_ns = by_window[k];
    }
    free(by_cell);
    free(by_run);
    free(by_window);
    free(in_cells.s);
    free(in_run.s);
    free(in_window.s);
}

/* The GPU time of the kernels NCCL calls launched (model_gpu.c gives it to the library call
 * around each launch). */
static void comm_merge_gpu(struct comm_report *r, const struct comm_merge_rank *ranks)
{
    for (size_t k = 0; k < r->nranks; k++)
        for (size_t p = 0; p < ranks[k].nprocs; p++) {
            const struct model_process *proc = ranks[k].procs[p];
            for (size_t a = 0; a < proc->napis; a++) {
                const struct model_api *api = proc->apis[a];
                if (!api || api->category != PROF_CAT_COMM || !api->gpu_kernels)
                    continue;
                for (size_t i = 0; i < r->nrows; i++)
                    if (r->rows[i].source == MODEL_COMM_CALL &&
                        !strcmp(r->rows[i].name, api->name)) {
                        r->rows[i].gpu_ns += api->gpu_ns;
                        r->rows[i].kernels += api->gpu_kernels;
                    }
            }
        }
}

static size_t comm_merge_row_of(struct comm_report *r, size_t *cap, const struct model_comm_call *c)
{
    for (size_t i = 0; i < r->nrows; i++)
        if (r->rows[i].source == c->source && !strcmp(r->rows[i].name, c->name))
            return i;
    r->rows = report_grow(r->rows, cap, r->nrows + 1, sizeof *r->rows);
    struct comm_row *row = &r->rows[r->nrows];
    memset(row, 0, sizeof *row);
    row->name = report_strdup(c->name);
    row->source = c->source;
    row->kind = comm_kind_of(c->name);
    return r->nrows++;
}

/* The row of one of calls' calls, made when new. */
static size_t comm_merge_calls_row(struct comm_report *r, size_t *cap,
                                   struct comm_merge_calls *calls, const struct model_comm_call *c)
{
    if (!calls->memo_name || c->name != calls->memo_name || c->source != calls->memo_source) {
        calls->memo_row = comm_merge_row_of(r, cap, c);
        calls->memo_name = c->name;
        calls->memo_source = c->source;
    }
    return calls->memo_row;
}

/* The matched calls of one rank, numbered (comm_match_number), on the reference host's
 * clock (offset: the rank's host's); symmetric: only collectives all leave together. */
static size_t comm_merge_matched(struct comm_report *r, struct comm_merge_calls *c,
                                 size_t *cap_rows, int64_t offset, int symmetric,
                                 struct comm_match_call **out)
{
    struct comm_match_call *mc = malloc((c->n + 1) * sizeof *mc);
    if (!mc)
        report_oom();
    size_t n = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct model_comm_call *call = c->calls[i];
        /* the row exists: the first pass made it */
        size_t row = comm_merge_calls_row(r, cap_rows, c, call);
        enum comm_kind kind = r->rows[row].kind;
        if (comm_merge_matched_kind(kind) && !call->failed &&
            (!symmetric || comm_merge_symmetric_kind(kind)))
            mc[n++] = (struct comm_match_call){.row = row,
                                               .comm = call->comm,
                                               .start = call->start_ns - (uint64_t)offset,
                                               .end = call->end_ns - (uint64_t)offset};
    }
    comm_match_number(mc, n);
    *out = mc;
    return n;
}

/* The hosts' clock offsets (comm_clock.h), from one more pass over the ranks: first the
 * reference host's ranks give each symmetric operation its earliest exit, then every other
 * rank's exits of those operations are measured against it. */
static void comm_merge_clocks(struct comm_report *r, const struct comm_merge_rank *ranks,
                              const size_t *rank_host, size_t *cap_rows)
{
    struct comm_match match;
    comm_match_init(&match);
    struct comm_clock clock;
    comm_clock_init(&clock, r->hosts, r->nhosts);
    for (int reference = 1; reference >= 0; reference--)
        for (size_t k = 0; k < r->nranks; k++) {
            if ((rank_host[k] == 0) != reference)
                continue;
            struct comm_merge_calls calls;
            comm_merge_calls_get(&calls, &ranks[k], 0);
            for (size_t i = 0; i < calls.n; i++)
                comm_merge_calls_row(r, cap_rows, &calls, calls.calls[i]);
            struct comm_match_call *mc = NULL;
            size_t nmc = comm_merge_matched(r, &calls, cap_rows, 0, 1, &mc);
            for (size_t i = 0; i < nmc; i++) {
                struct comm_match_op *op = comm_match_op(&match, &mc[i], reference);
                if (reference && (!op->has_ref || mc[i].end < op->ref_end)) {
                    op->ref_end = mc[i].end;
                    op->has_ref = 1;
                } else if (!reference && op && op->has_ref) {
                    comm_clock_add(&clock, rank_host[k], mc[i].end, op->ref_end);
                }
            }
            free(mc);
            comm_merge_calls_free(&calls);
            for (size_t i = 0; i < ranks[k].nprocs; i++) /* read again from a summary if asked */
                model_steps_let_go(ranks[k].procs[i]);
        }
    comm_clock_finish(&clock);
    comm_match_free(&match);
    for (size_t h = 1; h < r->nhosts; h++) {
        if (!r->hosts[h].samples)
            r->clock_unknown = 1;
        if (r->hosts[h].uncertainty_ns > r->clock_uncertainty_ns)
            r->clock_uncertainty_ns = r->hosts[h].uncertainty_ns;
    }
}

void comm_merge_build(struct comm_report *r, const struct summary *s)
{
    memset(r, 0, sizeof *r);
    r->step_name = s->step_name;
    int has_rank = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        has_rank |= s->procs[i]->rank >= 0;
    /* The ranks, in the summary's order (by rank). */
    struct comm_merge_rank *ranks = NULL;
    size_t cap_ranks = 0, cap_rows = 0;
    size_t cap_hosts = 0;
    size_t *rank_host = NULL; /* per rank index: its host's index in r->hosts */
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (has_rank && p->rank < 0)
            continue; /* a launcher or helper process, not a rank */
        int64_t rank = has_rank ? p->rank : (int64_t)i;
        size_t k = 0;
        while (k < r->nranks && r->ranks[k].rank != rank)
            k++;
        if (k == r->nranks) {
            r->ranks = report_grow(r->ranks, &cap_ranks, k + 1, sizeof *r->ranks);
            ranks = realloc(ranks, cap_ranks * sizeof *ranks);
            rank_host = realloc(rank_host, cap_ranks * sizeof *rank_host);
            if (!ranks || !rank_host)
                report_oom();
            memset(&r->ranks[k], 0, sizeof r->ranks[k]);
            memset(&ranks[k], 0, sizeof ranks[k]);
            r->ranks[k].rank = rank;
            r->ranks[k].host = p->host;
            r->nranks++;
        }
        struct comm_merge_rank *mr = &ranks[k];
        mr->procs = report_grow(mr->procs, &mr->cap, mr->nprocs + 1, sizeof *mr->procs);
        mr->procs[mr->nprocs++] = p;
        r->ranks[k].nprocs++;
        size_t h = 0;
        while (h < r->nhosts && strcmp(r->hosts[h].host, p->host ? p->host : ""))
            h++;
        if (h == r->nhosts) {
            r->hosts = report_grow(r->hosts, &cap_hosts, h + 1, sizeof *r->hosts);
            r->hosts[r->nhosts++] = (struct comm_host){.host = p->host ? p->host : ""};
        }
        if (mr->nprocs == 1)
            rank_host[k] = h;
    }
    if (r->nhosts > 1)
        comm_merge_clocks(r, ranks, rank_host, &cap_rows);
    int windowed = comm_window_recorded(s);
    comm_window_steps(r, ranks, rank_host, windowed);
    /* Two passes over each rank's calls, one rank at a time (a summary's are read then and
     * let go): the first fills the rows, the per-rank cells and the operations; the second
     * gives each matched call its wait, once every rank's arrival is known. */
    struct comm_merge_cell *cells = NULL;
    size_t ncells = 0;
    struct comm_match match;
    comm_match_init(&match);
    struct comm_merge_spans spans = {0}, window_spans = {0}, window_waits = {0};
    struct comm_match_call *ref = NULL; /* windowed: the first rank's calls */
    size_t nref = 0;
    /* by steps: whether each matched call of a rank is in the window's steps, found on
     * the first pass while the rank's steps are read, used by the second */
    struct comm_window_calls *in_window = calloc(r->nranks + 1, sizeof *in_window);
    if (!in_window)
        report_oom();
    for (int pass = 0; pass < 2; pass++) {
        for (size_t k = 0; k < r->nranks; k++) {
            struct comm_merge_calls calls;
            comm_merge_calls_get(&calls, &ranks[k], pass == 0 && r->by_steps);
            if (pass == 0) {
                comm_merge_rank_times(&r->ranks[k], &ranks[k], &calls, s->step_name);
                if (r->by_steps)
                    comm_window_rank_steps(r, k, &ranks[k]);
                for (size_t i = 0; i < calls.n; i++)
                    comm_merge_calls_row(r, &cap_rows, &calls, calls.calls[i]);
                if (ncells < r->nrows * r->nranks) { /* new rows: their cells */
                    cells = realloc(cells, (r->nrows * r->nranks + 1) * sizeof *cells);
                    if (!cells)
                        report_oom();
                    memset(cells + ncells, 0, (r->nrows * r->nranks - ncells) * sizeof *cells);
                    ncells = r->nrows * r->nranks;
                }
                spans.n = 0;
                for (size_t i = 0; i < calls.n; i++) {
                    const struct model_comm_call *call = calls.calls[i];
                    size_t row = comm_merge_calls_row(r, &cap_rows, &calls, call);
                    struct comm_row *cr = &r->rows[row];
                    cells[row * r->nranks + k].calls++;
                    cr->calls++;
                    cr->bytes += call->bytes;
                    if (call->comm_size > cr->comm_size)
                        cr->comm_size = call->comm_size;
                    comm_merge_span(&spans, call->start_ns, call->end_ns, row);
                }
                comm_merge_cover_cells(r, &spans, cells, k, 0);
            }
            struct comm_match_call *mc = NULL;
            size_t nmc =
                comm_merge_matched(r, &calls, &cap_rows, r->hosts[rank_host[k]].offset_ns, 0, &mc);
            if (windowed && k == 0) { /* the first rank's calls: the others are aligned to them */
                free(ref);
                ref = malloc((nmc + 1) * sizeof *ref);
                if (!ref)
                    report_oom();
                memcpy(ref, mc, nmc * sizeof *mc);
                nref = nmc;
            } else if (windowed) {
                comm_match_align(mc, nmc, ref, nref);
            }
            if (pass == 0 && r->by_steps)
                comm_window_fill(&in_window[k], r, k, &ranks[k], mc, nmc,
                                 (uint64_t)r->hosts[rank_host[k]].offset_ns);
            spans.n = window_spans.n = window_waits.n = 0;
            for (size_t i = 0; i < nmc; i++) {
                struct comm_match_op *op = comm_match_op(&match, &mc[i], pass == 0);
                if (pass == 0) {
                    comm_match_arrive(op, k, mc[i].start);
                    continue;
                }
                if (!op || op->nranks < 2)
                    continue;
                uint64_t dur = mc[i].end - mc[i].start;
                uint64_t wait = op->last - mc[i].start;
                if (wait > dur)
                    wait = dur;
                comm_merge_span(&spans, mc[i].start, mc[i].start + wait, mc[i].row);
                int in = !r->by_steps || comm_window_at(&in_window[k], i, r, k, &ranks[k], &mc[i],
                                                        (uint64_t)r->hosts[rank_host[k]].offset_ns);
                if (in) {
                    comm_merge_span(&window_spans, mc[i].start, mc[i].end, 0);
                    comm_merge_span(&window_waits, mc[i].start, mc[i].start + wait, 0);
                } else if (k == op->last_rank) {
                    op->outside = 1; /* its lateness is not the steps' */
                }
            }
            if (pass == 1) {
                comm_merge_cover_cells(r, &spans, cells, k, 1);
                r->ranks[k].wait_ns =
                    comm_merge_rank_wait(&r->ranks[k], &window_spans, &window_waits);
            }
            free(mc);
            comm_merge_calls_free(&calls);
            for (size_t i = 0; i < ranks[k].nprocs; i++) /* read again from a summary if asked */
                model_steps_let_go(ranks[k].procs[i]);
        }
    }
    free(ref);
    free(spans.s);
    free(window_spans.s);
    free(window_waits.s);
    for (size_t k = 0; k < r->nranks; k++)
        free(in_window[k].bits);
    free(in_window);
    r->any = r->nrows > 0;
    if (!cells) {
        cells = calloc(1, sizeof *cells);
        if (!cells)
            report_oom();
    }
    comm_match_sort(&match);
    comm_merge_operations(r, &match, cells);
    comm_match_free(&match);
    comm_merge_gpu(r, ranks);
    /* Spreads over the ranks. */
    uint64_t *values = malloc((r->nranks + 1) * sizeof *values);
    int64_t *rank_ids = malloc((r->nranks + 1) * sizeof *rank_ids);
    if (!values || !rank_ids)
        report_oom();
    for (size_t row = 0; row < r->nrows; row++) {
        struct comm_row *cr = &r->rows[row];
        size_t m = 0;
        for (size_t k = 0; k < r->nranks; k++)
            if (cells[row * r->nranks + k].calls) {
                rank_ids[m] = r->ranks[k].rank;
                values[m++] = cells[row * r->nranks + k].time_ns;
            }
        cr->ranks = (uint32_t)m;
        cr->per_rank = malloc((m + 1) * sizeof *cr->per_rank);
        if (!cr->per_rank)
            report_oom();
        for (size_t k = 0; k < r->nranks; k++) {
            const struct comm_merge_cell *cell = &cells[row * r->nranks + k];
            if (cell->calls)
                cr->per_rank[cr->nper_rank++] = (struct comm_rank_part){
                    r->ranks[k].rank, cell->calls, cell->time_ns, cell->wait_ns};
        }
        cr->time = rank_spread_of(values, rank_ids, m);
        m = 0;
        for (size_t k = 0; k < r->nranks; k++)
            if (cells[row * r->nranks + k].calls)
                values[m++] = cells[row * r->nranks + k].wait_ns;
        cr->wait = rank_spread_of(values, rank_ids, m);
        m = 0;
        for (size_t k = 0; k < r->nranks; k++)
            if (cells[row * r->nranks + k].calls)
                values[m++] = cells[row * r->nranks + k].calls;
        cr->calls_per_rank = rank_spread_of(values, rank_ids, m);
        cr->last_rank = -1;
        for (size_t k = 0; k < r->nranks; k++) {
            const struct comm_merge_cell *cell = &cells[row * r->nranks + k];
            if (cell->last > cr->last_count) {
                cr->last_rank = r->ranks[k].rank;
                cr->last_count = cell->last;
                cr->late_ns = cell->late_ns;
            }
        }
        uint64_t bw_ns = cr->gpu_ns ? cr->gpu_ns : cr->time_ns;
        if (bw_ns && cr->bytes) {
            cr->algbw_gbs = (double)cr->bytes / (double)bw_ns; /* bytes/ns = GB/s */
            cr->busbw_gbs = cr->algbw_gbs * comm_busbw_factor(cr->kind, cr->comm_size);
        }
    }
    for (size_t k = 0; k < r->nranks; k++)
        rank_ids[k] = r->ranks[k].rank;
#define COMM_MERGE_SPREAD(field, member)                                                           \
    do {                                                                                           \
        for (size_t k = 0; k < r->nranks; k++)                                                     \
            values[k] = r->ranks[k].member;                                                        \
        r->field = rank_spread_of(values, rank_ids, r->nranks);                                    \
    } while (0)
    COMM_MERGE_SPREAD(wall, wall_ns);
    COMM_MERGE_SPREAD(steps, steps);
    COMM_MERGE_SPREAD(step, step_ns);
    COMM_MERGE_SPREAD(compute, compute_ns);
    COMM_MERGE_SPREAD(comm, comm_ns);
    COMM_MERGE_SPREAD(wait, wait_ns);
    COMM_MERGE_SPREAD(idle, idle_ns);
    COMM_MERGE_SPREAD(data, data_ns);
    COMM_MERGE_SPREAD(sync, sync_ns);
#undef COMM_MERGE_SPREAD
    comm_merge_slowest(r);
    free(values);
    free(rank_ids);
    free(cells);
    for (size_t k = 0; k < r->nranks; k++)
        free(ranks[k].procs);
    free(ranks);
    free(rank_host);
    /* Rows sorted by time; stragglers name their row's (stable) name string. */
    for (size_t i = 0; i < r->nstragglers; i++)
        r->stragglers[i].name = r->rows[(uintptr_t)r->stragglers[i].name - 1].name;
    /* (no qsort of an empty list: its array may be NULL) */
    if (r->nrows)
        qsort(r->rows, r->nrows, sizeof *r->rows, comm_merge_row_cmp);
    if (r->nstragglers)
        qsort(r->stragglers, r->nstragglers, sizeof *r->stragglers, comm_merge_straggler_cmp);
}

size_t comm_median_rank(const struct comm_report *r)
{
    size_t mid = SIZE_MAX;
    for (size_t k = 0; k < r->nranks; k++) {
        /* never the rank the others wait for (of two, the lower median would be it) */
        if (r->nranks > 1 && r->ranks[k].rank == r->slowest.rank)
            continue;
        double d = (double)r->ranks[k].comm_ns - (double)r->comm.median;
        double best = mid == SIZE_MAX ? 0 : (double)r->ranks[mid].comm_ns - (double)r->comm.median;
        if (mid == SIZE_MAX || d * d < best * best)
            mid = k;
    }
    return mid == SIZE_MAX ? 0 : mid;
}

int comm_slowest_holds_others(const struct comm_report *r)
{
    const struct comm_slowest *w = &r->slowest;
    if (w->rank < 0 || !w->why || r->nranks < 2)
        return 0;
    const struct comm_rank_row *mid = &r->ranks[comm_median_rank(r)], *slow = NULL;
    for (size_t k = 0; k < r->nranks && !slow; k++)
        if (r->ranks[k].rank == w->rank)
            slow = &r->ranks[k];
    if (!slow || !mid->steps || !slow->steps)
        return 0;
    double own = (double)slow->wait_ns / (double)slow->steps;
    double theirs = (double)mid->wait_ns / (double)mid->steps;
    return theirs > 0 && 2 * own <= theirs;
}

void comm_merge_free(struct comm_report *r)
{
    for (size_t i = 0; i < r->nrows; i++) {
        free(r->rows[i].name);
        free(r->rows[i].per_rank);
    }
    free(r->rows);
    free(r->ranks);
    free(r->step_shift);
    free(r->stragglers);
    free(r->hosts);
    memset(r, 0, sizeof *r);
}
