/* summary_actions: the actions table of a report, as Lightning's SimpleProfiler shows
 * actions — NVTX ranges, record_function scopes, Lightning's own actions and the built-in
 * PyTorch loop actions of every process merged by (source, name), NVTX marks by name.
 * Lightning's PyTorchProfiler opens a record_function scope "[pl][profile]X" around each
 * action X: that scope is the same interval, so it is folded into X's row when the calls
 * agree. Percentages are of the training, as Lightning's are of the time its profiler ran:
 * the span of the Lightning actions, else torch.profiler's steps, else the built-in loop
 * actions, else the wall time; with training steps and no Lightning, the wall time. Each
 * row's Total is the whole process's, so a base must hold every call of every action. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model_steps_load.h"
#include "summary.h"

#define SUMMARY_ACTIONS_PL_PREFIX "[pl][profile]"

const char *summary_action_source_name(unsigned source)
{
    return source == MODEL_ACTION_RECORD_FUNCTION ? "scope"
           : source == MODEL_ACTION_BUILTIN       ? "built-in"
           : source == MODEL_ACTION_LIGHTNING     ? "Lightning"
                                                  : "NVTX";
}

const char *summary_action_source_key(unsigned source)
{
    return source == MODEL_ACTION_RECORD_FUNCTION ? "record_function"
           : source == MODEL_ACTION_BUILTIN       ? "builtin"
           : source == MODEL_ACTION_LIGHTNING     ? "lightning"
                                                  : "nvtx";
}

/* per_rank, proc: the table of the actions' time per rank and the process given, or NULL
 * (marks). */
static void summary_actions_merge(struct summary_gpu *g, struct summary_action_row **rows,
                                  size_t *n, size_t *cap, const struct model_action *from,
                                  size_t nfrom, struct rank_table *per_rank, size_t proc)
{
    for (size_t i = 0; i < nfrom; i++) {
        size_t k = 0;
        const char *name = from[i].source == MODEL_ACTION_RECORD_FUNCTION
                               ? summary_row_name(from[i].name)
                               : from[i].name;
        /* One row per (source, name): a scope and a range of one name stay apart. */
        while (k < *n && ((*rows)[k].source != from[i].source || strcmp((*rows)[k].name, name)))
            k++;
        if (k == *n) {
            *rows = report_grow(*rows, cap, k + 1, sizeof **rows);
            (*rows)[(*n)++] =
                (struct summary_action_row){.name = report_strdup(name), .source = from[i].source};
        }
        (*rows)[k].calls += from[i].calls;
        (*rows)[k].total_ns += from[i].total_ns;
        (*rows)[k].gpu_ns += from[i].gpu_ns;
        (*rows)[k].kernels += from[i].kernels;
        if (per_rank)
            rank_table_add(per_rank, k, proc, from[i].total_ns);
        g->action_sources |= 1 << from[i].source;
    }
}

static int summary_actions_cmp(const void *a, const void *b)
{
    /* Lightning's order: the largest total first. */
    const struct summary_action_row *x = a, *y = b;
    if (x->total_ns != y->total_ns)
        return x->total_ns > y->total_ns ? -1 : 1;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->source > y->source) - (x->source < y->source);
}

/* The Lightning action row named name, or NULL. */
static struct summary_action_row *summary_actions_lightning(struct summary_gpu *g, const char *name)
{
    for (size_t k = 0; k < g->nactions; k++)
        if (g->actions[k].source == MODEL_ACTION_LIGHTNING && !strcmp(g->actions[k].name, name))
            return &g->actions[k];
    return NULL;
}

/* Each "[pl][profile]X" scope into the Lightning action X when both count the same calls:
 * its interval is X's (the profiler's start(X) opens it, stop(X) closes it), so one row
 * keeps the Total from counting each call twice. X's times stay Lightning's. */
static void summary_actions_fold(struct summary_gpu *g)
{
    const size_t plen = strlen(SUMMARY_ACTIONS_PL_PREFIX);
    size_t kept = 0;
    for (size_t k = 0; k < g->nactions; k++) {
        struct summary_action_row *r = &g->actions[k];
        struct summary_action_row *into = NULL;
        if (r->source == MODEL_ACTION_RECORD_FUNCTION &&
            !strncmp(r->name, SUMMARY_ACTIONS_PL_PREFIX, plen))
            into = summary_actions_lightning(g, r->name + plen);
        if (into && into->calls == r->calls) {
            into->folded_scope = 1;
            g->action_folded++;
            free(r->name);
            continue;
        }
        if (into && !g->action_unfolded++) {
            g->action_unfolded_example = r->name; /* the row keeps the string */
            g->action_unfolded_calls[0] = r->calls;
            g->action_unfolded_calls[1] = into->calls;
        }
        g->actions[kept++] = *r;
    }
    g->nactions = kept;
}

/* Whether a process has any action or mark (a summary keeps the actions, not the NVTX
 * events they came from). */
static int summary_actions_any(const struct model_process *p)
{
    return p->gpu.nnvtx || p->gpu.nactions || p->gpu.nmarks || p->torch.nscopes ||
           p->torch.nbuiltin;
}

/* What the percentages are of: the best base some process has, summed over processes: the
 * Trainer's span under Lightning (as its profilers compute them; its actions all lie inside
 * the fit), else the training: the steps' span, widened to the NVTX ranges' and scopes'
 * calls across its edges and to a built-in action's call after it (steps.actions_start_ns,
 * actions_end_ns: a range around each iteration, the loop's last evaluation),
 * else the ProfilerStep#N scopes', the built-in loop actions', the wall time.
 * A row's Total counts every call of the process, and the per-call times are gone here
 * (a summary keeps totals): a base must hold every call. The steps' own span did not (an
 * evaluation after the last step: a review found forward at 125 % of it); a call before
 * the first step, or a scope after the training, may still fall outside the training, so
 * a row whose Total exceeds it gives the wall time instead, the training said beside it. */
static void summary_actions_base(struct summary *s)
{
    struct summary_gpu *g = &s->gpu;
    uint64_t lightning = 0, steps = 0, builtin = 0, training = 0;
    size_t fits = 0, walls = 0; /* the processes each base sums */
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        walls += summary_actions_any(p);
        if (p->gpu.lightning_actions) {
            lightning += p->gpu.lightning_span_ns;
            fits++;
            continue;
        }
        /* as merged: a process's built-in actions count without Lightning's */
        builtin += p->torch.builtin_top_ns;
        if (p->steps.nsteps) {
            model_steps_hold(p);
            uint64_t first = p->steps.steps[0].start_ns;
            uint64_t last = p->steps.steps[p->steps.nsteps - 1].end_ns;
            uint64_t start = p->steps.actions_start_ns < first ? p->steps.actions_start_ns : first;
            uint64_t end = p->steps.actions_end_ns > last ? p->steps.actions_end_ns : last;
            g->action_training_ns += last - first;
            training += end - start;
            model_steps_let_go(p); /* (a summary's: read again when a view asks) */
            g->action_training_procs++;
        }
    }
    for (size_t k = 0; k < g->nactions; k++) {
        if (g->actions[k].source == MODEL_ACTION_RECORD_FUNCTION &&
            !strcmp(g->actions[k].name, SUMMARY_PROFILER_STEPS_ROW))
            steps += g->actions[k].total_ns;
        /* (the ProfilerStep* row counts the teardown's scope too, which is no step:
         * model_steps_find.c; it is no action of the loop) */
        else if (g->actions[k].total_ns > training)
            g->action_outside = g->actions[k].name; /* (then not the training's) */
    }
    int inside = training && !g->action_outside;
    int wall = training && !inside; /* the training said beside the wall time */
    g->action_base = lightning ? SUMMARY_ACTION_BASE_LIGHTNING
                     : inside  ? SUMMARY_ACTION_BASE_TRAINING
                     : wall    ? SUMMARY_ACTION_BASE_WALL
                     : steps   ? SUMMARY_ACTION_BASE_STEPS
                     : builtin ? SUMMARY_ACTION_BASE_BUILTIN
                               : SUMMARY_ACTION_BASE_WALL;
    g->action_base_ns = lightning ? lightning
                        : inside  ? training
                        : wall    ? g->action_wall_ns
                        : steps   ? steps
                        : builtin ? builtin
                                  : g->action_wall_ns;
    g->action_base_procs = lightning ? fits : inside ? g->action_training_procs : wall ? walls : 0;
    if (!wall)
        g->action_outside = NULL;
}

void summary_actions_build(struct summary *s)
{
    struct summary_gpu *g = &s->gpu;
    size_t acap = 0, mcap = 0;
    struct rank_table per_rank;
    rank_table_init(&per_rank, s->procs, s->nprocs);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (!summary_actions_any(p))
            continue;
        g->action_wall_ns += p->wall_ns;
        g->action_gpu_ns += p->gpu.kernel_ns;
        summary_actions_merge(g, &g->actions, &g->nactions, &acap, p->gpu.actions, p->gpu.nactions,
                              &per_rank, i);
        summary_actions_merge(g, &g->actions, &g->nactions, &acap, p->torch.scopes,
                              p->torch.nscopes, &per_rank, i);
        /* Lightning's own names cover the phases the built-in actions find (its training
         * step, backward, optimizer step, dataloader next): those of a process with
         * Lightning actions are left out. */
        if (!p->gpu.lightning_actions)
            summary_actions_merge(g, &g->actions, &g->nactions, &acap, p->torch.builtin,
                                  p->torch.nbuiltin, &per_rank, i);
        summary_actions_merge(g, &g->marks, &g->nmarks, &mcap, p->gpu.marks, p->gpu.nmarks, NULL,
                              i);
    }
    for (size_t k = 0; k < g->nactions; k++)
        g->actions[k].over_ranks = rank_table_spread(&per_rank, k);
    rank_table_free(&per_rank);
    summary_actions_fold(g);
    summary_actions_base(s);
    for (size_t k = 0; k < g->nactions; k++) {
        struct summary_action_row *r = &g->actions[k];
        r->mean_ns = r->calls ? (double)r->total_ns / (double)r->calls : 0.0;
        r->percent =
            g->action_base_ns ? 100.0 * (double)r->total_ns / (double)g->action_base_ns : 0.0;
    }
    if (g->nactions)
        qsort(g->actions, g->nactions, sizeof *g->actions, summary_actions_cmp);
}
