/* The cross-rank views as text tables: see comm_views.h. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "comm_views.h"
#include "format.h"
#include "steps_view.h"
#include "text_table.h"

/* Several hosts: each one's clock against the first's, as estimated from the
 * collectives' exits, and what that leaves uncertain. */
#define COMM_TABLES_HOSTS_LISTED 8
static void comm_tables_clock_note(FILE *out, const struct comm_report *r)
{
    if (r->nhosts <= 1)
        return;
    char u[32];
    format_ns((double)r->clock_uncertainty_ns, u, sizeof u);
    fprintf(out, "  clocks: %zu hosts, on the clock of ", r->nhosts);
    format_fputs_escaped(out, r->hosts[0].host);
    fputs(" (offsets estimated from the exits of the collectives every rank leaves "
          "together):",
          out);
    for (size_t h = 1; h < r->nhosts && h <= COMM_TABLES_HOSTS_LISTED; h++) {
        const struct comm_host *x = &r->hosts[h];
        fputs(h > 1 ? ", " : " ", out);
        format_fputs_escaped(out, x->host);
        if (!x->samples) {
            fputs(" not known (no collective shared)", out);
            continue;
        }
        char off[32], unc[32];
        format_ns((double)(x->offset_ns < 0 ? -(double)x->offset_ns : (double)x->offset_ns), off,
                  sizeof off);
        format_ns((double)x->uncertainty_ns, unc, sizeof unc);
        fprintf(out, " %s%s \u00b1 %s", x->offset_ns < 0 ? "-" : "+", off, unc);
    }
    if (r->nhosts > COMM_TABLES_HOSTS_LISTED + 1)
        fprintf(out, ", and %zu more", r->nhosts - COMM_TABLES_HOSTS_LISTED - 1);
    fprintf(out, "; arrivals, waits and lateness across hosts are uncertain by \u00b1 %s%s\n", u,
            r->clock_unknown ? " (more where a host's offset is not known)" : "");
}

/* "1.25 ms (rank 3)" */
static void comm_tables_at(const struct rank_spread *s, char *buf, size_t len)
{
    char v[32];
    format_ns((double)s->max, v, sizeof v);
    snprintf(buf, len, "%s (rank %lld)", v, (long long)s->rank_at_max);
}

static void comm_tables_spread_row(struct text_table *t, const char *what,
                                   const struct rank_spread *s, int is_count)
{
    char mn[32], md[32], mx[48], at[16];
    if (is_count) {
        snprintf(mn, sizeof mn, "%" PRIu64, s->min);
        snprintf(md, sizeof md, "%" PRIu64, s->median);
        snprintf(mx, sizeof mx, "%" PRIu64, s->max);
    } else {
        format_ns((double)s->min, mn, sizeof mn);
        format_ns((double)s->median, md, sizeof md);
        format_ns((double)s->max, mx, sizeof mx);
    }
    snprintf(at, sizeof at, "%lld", (long long)s->rank_at_max);
    text_table_row(t, what, mn, md, mx, at);
}

static void comm_tables_signed_ns(int64_t ns, char *buf, size_t len)
{
    char v[32];
    format_ns(ns < 0 ? -(double)ns : (double)ns, v, sizeof v);
    snprintf(buf, len, "%s%s", ns < 0 ? "-" : "+", v);
}

static void comm_tables_ranks(FILE *out, const struct summary *s, const struct comm_report *r)
{
    if (r->by_steps) {
        fprintf(out,
                "Ranks (%zu; on steps %" PRIu64 "-%" PRIu64 ", the steady steps every rank has%s; "
                "wall = their time, step mean = wall / steps, compute = forward + backward + "
                "optimizer + other ops, comm "
                "= communication no op of the step thread hides, wait = the part of it before "
                "the last rank arrived, idle = the rest outside data loading and host syncs: "
                "wall = compute + comm + data + syncs + idle)\n",
                r->nranks, r->step_lo, r->step_hi,
                r->steps_unequal ? " (the ranks' own steady steps differ)" : "");
    } else {
        fprintf(out, "Ranks (%zu; wall = the process's wall time, ", r->nranks);
    }
    if (r->by_steps) {
    } else if (r->step_name) {
        fputs("steps = calls of '", out);
        format_fputs_escaped(out, r->step_name);
        fputs("', step = its mean time", out);
    } else {
        fputs("step = forward + backward + optimizer step + data loading per optimizer step", out);
    }
    if (!r->by_steps)
        fprintf(out, ", compute = PyTorch ops' self CPU time outside communication, comm = "
                     "time in communication calls, wait = the part of it before the last rank "
                     "arrived, idle = wall - compute - comm, which holds data loading and host "
                     "syncs)\n");
    if (!r->nranks) {
        fprintf(out, "  (no ranks)\n");
        return;
    }
    struct text_table t;
    text_table_begin(&t, ">Rank|<Host|>Wall|>Steps|>Step mean|>Compute|>Comm|>Wait|>Data|"
                         ">Syncs|>Idle|>Last at|>Late by");
    for (size_t i = 0; i < r->nranks; i++) {
        const struct comm_rank_row *k = &r->ranks[i];
        char rank[24], wall[32], steps[24], step[32], compute[32], comm[32], wait[32], data[32],
            syncs[32], idle[32], last[24], late[32];
        snprintf(rank, sizeof rank, "%lld", (long long)k->rank);
        format_ns((double)k->wall_ns, wall, sizeof wall);
        snprintf(steps, sizeof steps, "%" PRIu64, k->steps);
        if (k->steps)
            format_ns((double)k->step_ns, step, sizeof step);
        else
            snprintf(step, sizeof step, "-");
        format_ns((double)k->compute_ns, compute, sizeof compute);
        format_ns((double)k->comm_ns, comm, sizeof comm);
        format_ns((double)k->wait_ns, wait, sizeof wait);
        format_ns((double)k->data_ns, data, sizeof data);
        format_ns((double)k->sync_ns, syncs, sizeof syncs);
        format_ns((double)k->idle_ns, idle, sizeof idle);
        snprintf(last, sizeof last, "%" PRIu64, k->last_arrivals);
        format_ns((double)k->late_ns, late, sizeof late);
        text_table_row(&t, rank, k->host ? k->host : "", wall, steps, step, compute, comm, wait,
                       data, syncs, idle, last, late);
    }
    text_table_end(out, &t);
    fprintf(out, "\n  Over the ranks:\n");
    text_table_begin(&t, "<Column|>Min|>Median|>Max|>Rank at max");
    comm_tables_spread_row(&t, "wall", &r->wall, 0);
    comm_tables_spread_row(&t, "steps", &r->steps, 1);
    comm_tables_spread_row(&t, "step mean", &r->step, 0);
    comm_tables_spread_row(&t, "compute", &r->compute, 0);
    comm_tables_spread_row(&t, "comm", &r->comm, 0);
    comm_tables_spread_row(&t, "wait", &r->wait, 0);
    comm_tables_spread_row(&t, "idle", &r->idle, 0);
    comm_tables_spread_row(&t, "data loading", &r->data, 0);
    comm_tables_spread_row(&t, "host syncs", &r->sync, 0);
    text_table_end(out, &t);
    const struct comm_slowest *w = &r->slowest;
    if (w->rank >= 0) {
        char late[32], c[40], d[40], y[40], i[40];
        format_ns((double)w->late_ns, late, sizeof late);
        comm_tables_signed_ns(w->compute_ns, c, sizeof c);
        comm_tables_signed_ns(w->data_ns, d, sizeof d);
        comm_tables_signed_ns(w->sync_ns, y, sizeof y);
        comm_tables_signed_ns(w->idle_ns, i, sizeof i);
        fprintf(out, "\n  Slowest rank: %lld", (long long)w->rank);
        if (w->late_ns)
            fprintf(out, " (last at %" PRIu64 " collectives, late by %s %s)", w->last_arrivals,
                    late, r->by_steps ? "in these steps" : "in all");
        else
            fputs(" (the longest step)", out);
        fprintf(out,
                ": against the ranks' median, compute %s, data loading %s, host syncs %s, "
                "idle %s",
                c, d, y, i);
        if (w->why)
            fprintf(out, " — mostly %s; its own time: --rank %lld%s\n", w->why, (long long)w->rank,
                    steps_view_rank_look(s, w->rank, w->why));
        else
            fputs(" — none of these stands out\n", out);
    }
    comm_tables_clock_note(out, r);
}

static void comm_tables_comm(FILE *out, const struct comm_report *r, size_t limit)
{
    fprintf(out, "Communication (calls, bytes and time summed over the ranks; a rank's time "
                 "is the time its calls cover, calls at once counted once; busBw as "
                 "nccl-tests defines it, over the GPU time of the call's kernels when it "
                 "launched any, else over the call's time; wait = time in the call before the "
                 "last rank arrived; min / median / max of the time per rank)\n");
    if (!r->nrows) {
        fprintf(out, "  (no communication calls)\n");
        return;
    }
    struct text_table t;
    text_table_begin(&t, "<Name|<Kind|>Ranks|>Calls|>Bytes|>Time|>Wait|>Transfer|>GPU time|"
                         ">algBw GB/s|>busBw GB/s|>Min/rank|>Median/rank|<Max/rank");
    for (size_t i = 0; i < r->nrows && (!limit || i < limit); i++) {
        const struct comm_row *c = &r->rows[i];
        char ranks[16], calls[24], bytes[32], time[32], wait[32], xfer[32], gpu[32], alg[24],
            bus[24], mn[32], md[32], mx[64];
        snprintf(ranks, sizeof ranks, "%u", c->ranks);
        snprintf(calls, sizeof calls, "%" PRIu64, c->calls);
        if (c->bytes)
            format_bytes(c->bytes, bytes, sizeof bytes);
        else
            snprintf(bytes, sizeof bytes, "-");
        format_ns((double)c->time_ns, time, sizeof time);
        format_ns((double)c->wait_ns, wait, sizeof wait);
        format_ns((double)(c->time_ns - c->wait_ns), xfer, sizeof xfer);
        if (c->kernels)
            format_ns((double)c->gpu_ns, gpu, sizeof gpu);
        else
            snprintf(gpu, sizeof gpu, "-");
        if (c->bytes && (c->time_ns || c->gpu_ns)) {
            snprintf(alg, sizeof alg, "%.3f", c->algbw_gbs);
            snprintf(bus, sizeof bus, "%.3f", c->busbw_gbs);
        } else {
            snprintf(alg, sizeof alg, "-");
            snprintf(bus, sizeof bus, "-");
        }
        format_ns((double)c->time.min, mn, sizeof mn);
        format_ns((double)c->time.median, md, sizeof md);
        comm_tables_at(&c->time, mx, sizeof mx);
        text_table_row(&t, c->name, comm_kind_name(c->kind), ranks, calls, bytes, time, wait, xfer,
                       gpu, alg, bus, mn, md, mx);
    }
    text_table_end(out, &t);
    comm_tables_clock_note(out, r);
}

static void comm_tables_stragglers(FILE *out, const struct comm_report *r, size_t limit)
{
    fprintf(out, "Stragglers (the k-th call of a collective on one communicator, matched "
                 "across ranks: the rank that arrived last, by how much after the one before "
                 "it, and the spread from the first arrival)\n");
    if (!r->nstragglers) {
        fprintf(out, "  (no collective matched across two or more ranks)\n");
        return;
    }
    /* The rank late by the most in all (a rank last at most calls by a few us is not the
     * one the others wait for: a review's rank 1, last at 24 calls, late by 18.78 ms,
     * was named over rank 0, late by 624.71 ms in its periodic evaluations). */
    const struct comm_rank_row *worst = NULL; /* over every operation of the run, listed */
    for (size_t i = 0; i < r->nranks; i++)
        if (!worst || r->ranks[i].run_late_ns > worst->run_late_ns ||
            (r->ranks[i].run_late_ns == worst->run_late_ns &&
             r->ranks[i].run_last_arrivals > worst->run_last_arrivals))
            worst = &r->ranks[i];
    char late[32];
    format_ns((double)worst->run_late_ns, late, sizeof late);
    fprintf(out, "  slowest rank: %lld, last at %" PRIu64 " of %zu operations, late by %s in all\n",
            (long long)worst->rank, worst->run_last_arrivals, r->nstragglers, late);
    struct text_table t;
    text_table_begin(&t, ">Rank|>Last at|>Late by");
    for (size_t i = 0; i < r->nranks; i++) {
        char rank[24], last[24];
        snprintf(rank, sizeof rank, "%lld", (long long)r->ranks[i].rank);
        snprintf(last, sizeof last, "%" PRIu64, r->ranks[i].run_last_arrivals);
        format_ns((double)r->ranks[i].run_late_ns, late, sizeof late);
        text_table_row(&t, rank, last, late);
    }
    text_table_end(out, &t);
    fputc('\n', out);
    text_table_begin(&t, "<Collective|>Operations|>Most often last|>Times|>Late by");
    for (size_t i = 0; i < r->nrows; i++) {
        const struct comm_row *c = &r->rows[i];
        if (!c->matched)
            continue;
        char ops[24], rank[24], times[24];
        snprintf(ops, sizeof ops, "%" PRIu64, c->matched);
        snprintf(rank, sizeof rank, "%lld", (long long)c->last_rank);
        snprintf(times, sizeof times, "%" PRIu64, c->last_count);
        format_ns((double)c->late_ns, late, sizeof late);
        text_table_row(&t, c->name, ops, rank, times, late);
    }
    text_table_end(out, &t);
    fputc('\n', out);
    text_table_begin(&t, "<Collective|>Call|>Ranks|>Last rank|>Late by|>Spread");
    for (size_t i = 0; i < r->nstragglers && (!limit || i < limit); i++) {
        const struct comm_straggler *g = &r->stragglers[i];
        char call[24], ranks[16], last[24], spread[32];
        snprintf(call, sizeof call, "%zu", g->index);
        snprintf(ranks, sizeof ranks, "%u", g->ranks);
        if (g->last_rank >= 0)
            snprintf(last, sizeof last, "%lld", (long long)g->last_rank);
        else
            snprintf(last, sizeof last, "(tie)");
        format_ns((double)g->late_ns, late, sizeof late);
        format_ns((double)g->spread_ns, spread, sizeof spread);
        text_table_row(&t, g->name, call, ranks, last, late, spread);
    }
    text_table_end(out, &t);
    if (limit && r->nstragglers > limit)
        fprintf(out, "  (%zu more; --limit 0 shows all)\n", r->nstragglers - limit);
    comm_tables_clock_note(out, r);
}

void comm_tables_print(FILE *out, const struct summary *s, const struct comm_report *r, int views,
                       size_t limit)
{
    int first = 1;
    if (views & COMM_VIEW_RANKS) {
        comm_tables_ranks(out, s, r);
        first = 0;
    }
    if (views & COMM_VIEW_COMM) {
        if (!first)
            fputc('\n', out);
        comm_tables_comm(out, r, limit);
        first = 0;
    }
    if (views & COMM_VIEW_STRAGGLERS) {
        if (!first)
            fputc('\n', out);
        comm_tables_stragglers(out, r, limit ? limit : 20);
    }
}
