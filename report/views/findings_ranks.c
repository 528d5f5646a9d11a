/* findings_ranks: the step findings of ranks compared on the same steps (comm_merge.h):
 * the rank the others wait for (waiting_rank) and in which steps, the median rank's exposed
 * communication and its Python inside forward and backward. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "comm_merge.h"
#include "findings.h"
#include "findings_steps.h"
#include "format.h"
#include "model_steps_load.h"
#include "sort_keys.h"
#include "steps_report.h"
#include "steps_view.h"

/* A function's self time per steady step in p: its entry, else at most the smallest p kept
 * (p keeps its MODEL_STEPS_HOT largest; fewer: every function it has). */
static uint64_t findings_hot_of(const struct model_process *p, const char *name)
{
    const struct model_steps *st = &p->steps;
    for (size_t k = 0; k < st->nhot; k++)
        if (!strcmp(st->hot[k].name, name))
            return st->hot[k].self_ns;
    return st->nhot == MODEL_STEPS_HOT ? st->hot[st->nhot - 1].self_ns : 0;
}

/* The Python function that holds most of the slow rank's excess: the largest of its
 * functions' self time per steady step over the median of the other ranks' (where a rank
 * does not keep it, the most it can have: an excess never overstated), when it is at least
 * a quarter of the excess; NULL: none. */
static const struct model_step_hot *findings_hot(const struct summary *s, long long rank,
                                                 uint64_t excess_ns, uint64_t *over_ns)
{
    const struct model_process *slow = steps_view_rank_process(s, rank);
    size_t nothers = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        nothers += s->procs[i]->rank >= 0 && s->procs[i]->rank != rank && s->procs[i]->steps.nsteps;
    if (!slow || !nothers || !excess_ns) /* (none inside the steps: --step's gaps hold it) */
        return NULL;
    uint64_t *v = malloc(nothers * sizeof *v);
    if (!v)
        report_oom();
    const struct model_step_hot *best = NULL;
    for (size_t h = 0; h < slow->steps.nhot; h++) {
        const struct model_step_hot *mine = &slow->steps.hot[h];
        size_t n = 0;
        for (size_t i = 0; i < s->nprocs; i++) {
            const struct model_process *p = s->procs[i];
            if (p->rank >= 0 && p->rank != rank && p->steps.nsteps)
                v[n++] = findings_hot_of(p, mine->name);
        }
        qsort(v, n, sizeof *v, sort_u64_cmp);
        uint64_t median = v[(n - 1) / 2];
        uint64_t over = mine->self_ns > median ? mine->self_ns - median : 0;
        if (over * 4 >= excess_ns && over > 0 && (!best || over > *over_ns)) {
            best = mine;
            *over_ns = over;
        }
    }
    free(v);
    return best;
}

/* ns / n with its sign: "+1.20 ms", "-313.48 us". */
static void findings_signed_ns(int64_t ns, uint64_t n, char *buf, size_t len)
{
    char t[32];
    format_ns(ns < 0 ? -(double)ns / (double)n : (double)ns / (double)n, t, sizeof t);
    snprintf(buf, len, "%s%s", ns < 0 ? "-" : "+", t);
}

/* The steps of the median rank (index k of r) that hold its wait: those whose exposed
 * communication is T(STEP_OUTLIER_RATIO) times its median step's and a quarter of the
 * longest or more, listed in l, when
 * they are fewer than half the steps and hold 2/3 of it or more (a rank that holds the
 * others now and then: an evaluation every 10 steps); *share their part of it. 0: spread. */
static size_t findings_wait_steps(const struct comm_report *r, const struct summary *s, size_t k,
                                  struct findings_numbers *l, double *share)
{
    const struct model_process *p = steps_view_rank_process(s, r->ranks[k].rank);
    if (!p || !r->step_shift)
        return 0;
    model_steps_hold(p);
    const struct model_steps *st = &p->steps;
    int64_t lo = (int64_t)r->step_lo - r->step_shift[k],
            hi = (int64_t)r->step_hi - r->step_shift[k];
    uint64_t *v = malloc((st->nsteps + 1) * sizeof *v), total = 0;
    if (!v)
        report_oom();
    size_t n = 0;
    for (size_t i = 0; i < st->nsteps; i++)
        if ((int64_t)st->steps[i].number >= lo && (int64_t)st->steps[i].number <= hi)
            total += v[n++] = st->steps[i].part_ns[MODEL_STEP_COMM];
    qsort(v, n, sizeof *v, sort_u64_cmp);
    /* (and a quarter of the longest: short waits vary twice over between steps) */
    double limit = n ? T(STEP_OUTLIER_RATIO) * (double)v[(n - 1) / 2] : 0;
    limit = n && limit < 0.25 * (double)v[n - 1] ? 0.25 * (double)v[n - 1] : limit;
    free(v);
    uint64_t in = 0;
    for (size_t i = 0; i < st->nsteps && n >= 4; i++) {
        const struct model_step *x = &st->steps[i];
        if ((int64_t)x->number >= lo && (int64_t)x->number <= hi &&
            (double)x->part_ns[MODEL_STEP_COMM] >= limit && x->part_ns[MODEL_STEP_COMM]) {
            findings_numbers_add(l, (uint64_t)((int64_t)x->number + r->step_shift[k]));
            in += x->part_ns[MODEL_STEP_COMM];
        }
    }
    model_steps_let_go(p);
    *share = findings_share(in, total);
    return l->n * 2 < n && *share >= 2.0 / 3 ? l->n : 0;
}

/* The rank with the most periodic work (an evaluation or a checkpoint on rank 0 alone),
 * unless it is the rank the others wait for (waiting_rank names its function): a review's
 * 4-rank job whose rank 0 saved a checkpoint every 10 steps read only "communication". */
static void findings_ranks_periodic(struct findings *f, const struct comm_report *r,
                                    const struct summary *s, long long named)
{
    const struct model_process *best = NULL;
    double best_share = 0;
    for (size_t k = 0; k < r->nranks; k++) {
        const struct model_process *p = steps_view_rank_process(s, r->ranks[k].rank);
        if (!p || !p->steps.nrare_hot || r->ranks[k].rank == named)
            continue;
        struct steps_stats st;
        steps_stats_of(p, 0, UINT64_MAX, &st);
        model_steps_let_go(p);
        double share = findings_share(p->steps.rare_hot[0].self_ns, st.total_ns);
        if (share > best_share) {
            best = p;
            best_share = share;
        }
    }
    if (!best)
        return;
    struct steps_stats st;
    steps_stats_of(best, 0, UINT64_MAX, &st);
    char who[48];
    snprintf(who, sizeof who, " on rank %lld", (long long)best->rank);
    findings_periodic(f, &st, who);
    model_steps_let_go(best);
}

/* The evaluation of a rank's steps lo..hi (steps.evals): per step, and the steps holding
 * one in *steps. */
static uint64_t findings_eval_of(const struct model_process *p, uint64_t lo, uint64_t hi,
                                 size_t *steps)
{
    struct steps_stats st;
    steps_stats_of(p, lo, hi, &st);
    model_steps_let_go(p);
    *steps = st.eval_steps;
    return st.counted ? st.eval_ns / st.counted : 0;
}

/* The rank the others wait for evaluates in its steps (rank 0 alone, every N steps) and
 * the median rank does not: when that is most of its compute excess, x's evidence says so
 * (a review's job read "compute", where linear under <module>). */
static void findings_rank_eval(struct finding *x, const struct comm_report *r,
                               const struct summary *s, long long median,
                               const struct comm_slowest *w)
{
    const struct model_process *slow = steps_view_rank_process(s, (long long)w->rank);
    const struct model_process *mid = steps_view_rank_process(s, median);
    size_t steps, mid_steps;
    uint64_t eval = slow ? findings_eval_of(slow, r->step_lo, r->step_hi, &steps) : 0;
    uint64_t theirs = eval && mid ? findings_eval_of(mid, r->step_lo, r->step_hi, &mid_steps) : 0;
    uint64_t n = r->step_hi >= r->step_lo ? r->step_hi - r->step_lo + 1 : 1;
    if (!eval || w->compute_ns <= 0 ||
        (eval - (theirs < eval ? theirs : eval)) * 2 < (uint64_t)w->compute_ns / n)
        return;
    char t[32], m[32];
    format_ns((double)eval, t, sizeof t);
    format_ns((double)theirs, m, sizeof m);
    size_t used = strlen(x->evidence);
    snprintf(x->evidence + used, sizeof x->evidence - used,
             "; its compute is evaluation: %s per step, in %zu of the %llu steps (its model "
             "under torch.no_grad(); the median rank's %s)",
             t, steps, (unsigned long long)n, m);
}

/* Several ranks on the same steps: the median rank's step, and the rank it waits for. */
void findings_steps_ranks(struct findings *f, const struct comm_report *r, const struct summary *s)
{
    const struct comm_rank_row *k = &r->ranks[comm_median_rank(r)];
    uint64_t n = k->steps ? k->steps : 1;
    struct findings_step m = {.step_ns = k->wall_ns / n,
                              .comm_ns = k->comm_total_ns / n,
                              .wait_ns = k->wait_ns / n,
                              .gpu_busy_ns = k->gpu_busy_ns / n,
                              .wait_known = 1,
                              .who = " (median rank)"};
    for (int i = 0; i < MODEL_STEP_PART_COUNT; i++)
        m.part_ns[i] = k->part_ns[i] / n;
    /* the rank the others wait for first: their exposed communication is mostly that wait */
    const struct comm_slowest *w = &r->slowest;
    double wait_share = findings_share(k->wait_ns, k->wall_ns); /* the median rank's */
    int waited = comm_slowest_holds_others(r) && wait_share >= T(STEP_WAIT_SHARE);
    if (waited) {
        /* the median rank's own wait, beside its own communication; the excess signed, as
         * the --ranks table gives it */
        char wait[32], c[40], d[40], y[40], i[40];
        format_ns((double)k->wait_ns / (double)n, wait, sizeof wait);
        findings_signed_ns(w->compute_ns, n, c, sizeof c);
        findings_signed_ns(w->data_ns, n, d, sizeof d);
        findings_signed_ns(w->sync_ns, n, y, sizeof y);
        findings_signed_ns(w->idle_ns, n, i, sizeof i);
        struct finding *x = findings_add(f, "waiting_rank", wait_share);
        x->rank = (long long)w->rank;
        x->why = w->why;
        const char *why =
            !strncmp(w->why, "time outside", 12) ? "outside ops (Python, sleeps, I/O)" : w->why;
        struct findings_numbers l = {0};
        double in_share = 0;
        size_t few = findings_wait_steps(r, s, comm_median_rank(r), &l, &in_share);
        if (few)
            findings_set(x->title, sizeof x->title,
                         "rank %lld holds the others in %zu of %llu steps%s: they wait %.0f%% "
                         "of the steps' time for it; its excess: %s",
                         (long long)w->rank, few, (unsigned long long)k->steps, l.every,
                         100 * wait_share, why);
        else
            findings_set(x->title, sizeof x->title,
                         "rank %lld holds the others: they wait %.0f%% of each step for it; its "
                         "excess: %s",
                         (long long)w->rank, 100 * wait_share, why);
        char exposed[32];
        format_ns((double)m.part_ns[MODEL_STEP_COMM], exposed, sizeof exposed);
        findings_set(x->evidence, sizeof x->evidence,
                     "the median rank (rank %lld) waits %s per step in collectives (of %s of "
                     "communication no compute hides); rank %lld's excess per step over the "
                     "ranks' median: compute (forward, backward, optimizer, other ops) %s, data "
                     "loading %s, host syncs %s, other CPU %s (steps %llu-%llu)",
                     (long long)k->rank, wait, exposed, (long long)w->rank, c, d, y, i,
                     (unsigned long long)r->step_lo, (unsigned long long)r->step_hi);
        if (few) {
            size_t used = strlen(x->evidence);
            snprintf(x->evidence + used, sizeof x->evidence - used,
                     "; steps %s hold %.0f%% of the wait (rank %lld's work there: the "
                     "Training steps section names it%s)",
                     l.text, 100 * in_share, (long long)w->rank,
                     findings_after_step(r->step_source));
        }
        findings_rank_eval(x, r, s, k->rank, w);
        uint64_t excess = 0, over = 0;
        const int64_t parts[] = {w->compute_ns, w->data_ns, w->sync_ns, w->idle_ns};
        for (size_t k = 0; k < sizeof parts / sizeof *parts; k++)
            excess += parts[k] > 0 ? (uint64_t)parts[k] / n : 0;
        const struct model_step_hot *hot =
            w->between ? NULL : findings_hot(s, (long long)w->rank, excess, &over);
        const char *look = steps_view_rank_look(s, (long long)w->rank, w->why);
        if (hot) {
            char o[32];
            format_ns((double)over, o, sizeof o);
            findings_set(x->where, sizeof x->where,
                         "%s%s%s: +%s per step on rank %lld (profreport DIR --rank %lld%s)",
                         hot->name, *hot->caller ? ", called from " : "", hot->caller, o,
                         (long long)w->rank, (long long)w->rank, look);
        } else if (w->between) { /* its time between the --step name's calls */
            findings_set(x->where, sizeof x->where,
                         "profreport DIR --rank %lld%s, without --step (its whole iterations)",
                         (long long)w->rank, look);
        } else {
            findings_set(x->where, sizeof x->where, "profreport DIR --rank %lld%s",
                         (long long)w->rank, look);
        }
    }
    findings_ranks_periodic(f, r, s, waited ? (long long)w->rank : -1);
    const struct model_process *median = steps_view_rank_process(s, k->rank);
    struct steps_stats st; /* the median rank's own steady steps */
    steps_stats_of(median, 0, UINT64_MAX, &st);
    m.places_comm_ns = st.counted ? st.comm_ns / st.counted : 0; /* (its comm_hot's steps) */
    findings_step_comm(f, &m, waited ? (long long)w->rank : -1, median);
    if (median) { /* Python inside forward and backward: the median rank's own steps */
        findings_step_python(f, &st, " (median rank)");
        findings_step_gc(f, &st, " (median rank)");
        /* (a review's 4 ranks: 4.2 s of startup each, 0.7 s of steps) */
        findings_step_startup(f, &st, " (median rank)");
        model_steps_let_go(median); /* (a summary's: read again when a view asks) */
    }
}
