/* The window of steps the ranks are compared on: see comm_window.h. */
#include "comm_window.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "steps_report.h"

/* Whether some process recorded under a capture window (META window): its trace starts at
 * any iteration, so collectives are matched across ranks by time, and steps too unless
 * each rank's are numbered as its process's (model_steps_numbered). */
int comm_window_recorded(const struct summary *s)
{
    for (size_t i = 0; i < s->nprocs; i++) {
        const char *w = model_meta_get(s->procs[i], "window");
        if (w && *w)
            return 1;
    }
    return 0;
}

/* The window of steps every rank has in its steady state (comm_merge.h), when each rank
 * has steps (with --step: calls of that name on each rank's step thread; else the calls
 * of the action of that name are counted, comm_merge_rank_times). */
void comm_window_steps(struct comm_report *r, const struct comm_merge_rank *ranks,
                       const size_t *rank_host, int windowed)
{
    if (r->nranks < 1)
        return;
    const struct model_process **mains = malloc(r->nranks * sizeof *mains);
    int64_t *offset = malloc(r->nranks * sizeof *offset);
    r->step_shift = calloc(r->nranks, sizeof *r->step_shift);
    if (!mains || !offset || !r->step_shift)
        report_oom();
    for (size_t k = 0; k < r->nranks; k++) {
        mains[k] = steps_main_process(ranks[k].procs, ranks[k].nprocs);
        offset[k] = r->hosts[rank_host[k]].offset_ns;
        /* --step names no call of a rank's steps: its calls are counted as an action's */
        if (r->step_name && (!mains[k] || mains[k]->steps.source != MODEL_STEPS_NAMED))
            mains[k] = NULL;
    }
    /* Under a window, by number when every rank's steps are numbered as its process's */
    int by_time = 0;
    for (size_t k = 0; k < r->nranks && windowed; k++)
        by_time |= mains[k] && !model_steps_numbered(mains[k]);
    r->by_steps = steps_window_of(mains, offset, r->nranks, by_time, r->step_shift, &r->step_lo,
                                  &r->step_hi, &r->steps_unequal);
    r->steps_by_time = by_time;
    if (r->by_steps)
        r->step_source = mains[0]->steps.source;
    free(mains);
    free(offset);
}

/* A rank's time over the window's steps (comm_merge.h). */
void comm_window_rank_steps(struct comm_report *r, size_t k, const struct comm_merge_rank *rank)
{
    struct comm_rank_row *row = &r->ranks[k];
    const struct model_process *p = steps_main_process(rank->procs, rank->nprocs);
    struct steps_stats st;
    steps_stats_of(p, (uint64_t)((int64_t)r->step_lo - r->step_shift[k]),
                   (uint64_t)((int64_t)r->step_hi - r->step_shift[k]), &st);
    memcpy(row->part_ns, st.part_ns, sizeof row->part_ns);
    row->wall_ns = st.total_ns;
    row->steps = st.counted;
    row->step_ns = st.mean_ns;
    row->compute_ns = steps_compute_ns(&st);
    row->comm_ns = st.part_ns[MODEL_STEP_COMM];
    row->data_ns = st.part_ns[MODEL_STEP_DATA];
    row->sync_ns = st.part_ns[MODEL_STEP_SYNC];
    row->idle_ns = st.part_ns[MODEL_STEP_OTHER];
    row->comm_total_ns = st.comm_ns;
    row->gpu_busy_ns = st.gpu_busy_ns;
}

void comm_window_fill(struct comm_window_calls *w, const struct comm_report *r, size_t k,
                      const struct comm_merge_rank *rank, const struct comm_match_call *mc,
                      size_t n, uint64_t offset)
{
    w->n = n;
    w->bits = calloc(n / 8 + 1, 1);
    if (!w->bits)
        report_oom();
    const struct model_process *p = steps_main_process(rank->procs, rank->nprocs);
    if (!p)
        return;
    model_steps_hold(p);
    const struct model_step *steps = p->steps.steps;
    size_t nsteps = p->steps.nsteps, sorted = 1, a = 0;
    uint64_t before = 0;
    while (sorted < nsteps && steps[sorted - 1].end_ns <= steps[sorted].end_ns)
        sorted++;
    /* Steps end in order and each collective's calls come in time order: a call's step is
     * found from the last one's on, as steps_at finds it by halves (else asked of it). */
    for (size_t i = 0; i < n; i++) {
        uint64_t t = mc[i].start + offset - (uint64_t)p->comm.realtime_offset_ns;
        const struct model_step *at;
        if (sorted < nsteps) {
            at = steps_at(p, t);
        } else {
            if (i == 0 || t < before)
                a = 0;
            before = t;
            while (a < nsteps && steps[a].end_ns <= t)
                a++;
            at = a < nsteps && steps[a].start_ns <= t ? &steps[a] : NULL;
        }
        int64_t number = at ? (int64_t)at->number + r->step_shift[k] : 0;
        if (at && number >= (int64_t)r->step_lo && number <= (int64_t)r->step_hi)
            w->bits[i / 8] |= (uint8_t)(1u << (i % 8));
    }
}

/* The i-th call's bit; one beyond the first pass's calls (a summary changed since) asks. */
int comm_window_at(const struct comm_window_calls *w, size_t i, const struct comm_report *r,
                   size_t k, const struct comm_merge_rank *rank, const struct comm_match_call *call,
                   uint64_t offset)
{
    if (i < w->n)
        return (w->bits[i / 8] >> (i % 8)) & 1;
    struct comm_window_calls one;
    comm_window_fill(&one, r, k, rank, call, 1, offset);
    int in = one.bits[0] & 1;
    free(one.bits);
    return in;
}
