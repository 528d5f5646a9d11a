/* steps_view: the "Training steps" section that opens the default text report and the
 * "steps" object of the JSON report: what a steady-state step costs and where its time
 * goes, per process or over the ranks (steps_report.h, comm_merge.h). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "export.h"
#include "findings.h"
#include "format.h"
#include "steps_report.h"
#include "model_steps_find.h"
#include "model_steps_hot.h"
#include "steps_view.h"
#include "tables.h"
#include "text_table.h"

static void steps_view_ms(uint64_t ns, char *buf, size_t len)
{
    format_ns((double)ns, buf, len);
}

static void steps_view_share(uint64_t part, uint64_t total, char *buf, size_t len)
{
    snprintf(buf, len, "%.1f%%", total ? 100.0 * (double)part / (double)total : 0.0);
}

/* The header lines: which steps, warm-up, step times, startup. */
/* A function's name as the steps keep it, its file by its base name: "main (train.py:12)". */
static void steps_view_short_name(const char *name, char *buf, size_t len)
{
    const char *open = strrchr(name, '('), *slash = open ? strrchr(open, '/') : NULL;
    if (!slash) {
        snprintf(buf, len, "%s", name);
        return;
    }
    snprintf(buf, len, "%.*s%s", (int)(open + 1 - name), name, slash + 1);
}

void steps_view_startup_costs(const struct model_process *p, char *buf, size_t len)
{
    size_t used = 0;
    *buf = 0;
    for (size_t i = 0; i < p->steps.nstartup_hot && used < len; i++) {
        const struct model_step_hot *h = &p->steps.startup_hot[i];
        char name[512], caller[512], ns[32];
        steps_view_short_name(h->name, name, sizeof name);
        steps_view_short_name(h->caller, caller, sizeof caller);
        format_ns((double)h->self_ns, ns, sizeof ns);
        int n =
            snprintf(buf + used, len - used, "%s%s%s%s %s", i ? ", " : "; outside imports, by self time: ", name,
                     *caller ? " from " : "", caller, ns);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

/* What the tables cover: windows[i], the part of tables[i] when not the whole process ("the
 * steady training steps"); NULL: the whole process. Tables of one part are named together:
 * "the operator, Python, tensor memory and CUDA API and kernel tables below cover the steady
 * training steps, the other tables the whole process". */
static void steps_view_cover(FILE *out, const char *const *windows)
{
    static const char *const tables[] = {"operator", "Python", "tensor memory",
                                         "CUDA API and kernel"};
    enum { N = sizeof tables / sizeof tables[0] };
    int done[N] = {0}, any = 0;
    for (int i = 0; i < N; i++) {
        if (!windows[i] || done[i])
            continue;
        int n = 0, last = i;
        for (int j = i; j < N; j++)
            if (windows[j] && !strcmp(windows[j], windows[i]))
                n += j == N - 1 ? 2 : 1, last = j; /* the GPU's are several tables */
        fputs(any ? ", the " : "the ", out);
        for (int j = i, k = 0; j < N; j++) {
            if (!windows[j] || strcmp(windows[j], windows[i]))
                continue;
            done[j] = 1;
            fprintf(out, "%s%s", k ? (j == last ? " and " : ", ") : "", tables[j]);
            k++;
        }
        fprintf(out, " table%s%s %s %s", n > 1 ? "s" : "", any ? "" : " below",
                n > 1 ? "cover" : "covers", windows[i]);
        any = 1;
    }
    fputs(any ? ", the other tables the whole process" : "the tables below cover the whole process",
          out);
}

/* Why --step's name made no step: no call, or only calls too short to have spans. */
static void steps_view_no_call(FILE *out, uint64_t calls)
{
    if (calls)
        fprintf(out,
                "' named %" PRIu64 " calls, each shorter than PROF_PY_SPAN_US: a step needs a "
                "call's span (PROF_PY_SPAN_US=0 records every call's)",
                calls);
    else
        fputs("' named no call", out);
}

const char *steps_view_left_out(const struct steps_stats *st, char *buf, size_t len)
{
    int inferred = st->p->steps.first_inferred && st->nsteps >= 2; /* (model_steps_warmup) */
    if (st->warmup == 1 && (inferred || st->warmup_ratio <= STEPS_WARMUP_RATIO)) {
        size_t n = (size_t)snprintf(buf, len,
                                    "the first step left out (it starts before any step boundary, "
                                    "where no table can start: every table covers the same steps");
        if (st->warmup_ratio > 0 && n < len)
            n += (size_t)snprintf(buf + n, len - n, "; %.1fx the median of the later steps",
                                  st->warmup_ratio);
        if (n < len)
            snprintf(buf + n, len - n, ")");
    } else if (st->warmup == 1 && st->p->steps.opened_late == 2)
        snprintf(buf, len,
                 "the attach window's first step left out (%.1fx the median of the later "
                 "steps: in a GPU process the first CUDA calls after an attach are slow, "
                 "4-6 ms each on an H200)",
                 st->warmup_ratio);
    else if (st->warmup > 1 && inferred) /* (its ratio is the first's) */
        snprintf(buf, len,
                 "the first step left out (it starts before any step boundary, where no table "
                 "can start) and %zu warm-up step%s after it (slower than %.1fx the median of "
                 "the later steps)",
                 st->warmup - 1, st->warmup == 2 ? "" : "s", STEPS_WARMUP_RATIO);
    else if (st->warmup)
        snprintf(buf, len,
                 "%zu warm-up step%s left out (slower than %.1fx the median of the later "
                 "steps; the first %.1fx)",
                 st->warmup, st->warmup == 1 ? "" : "s", STEPS_WARMUP_RATIO, st->warmup_ratio);
    else if (st->p->steps.opened_late)
        snprintf(buf, len, "no warm-up step (the recording opened after the process's first steps)");
    else
        snprintf(buf, len, "no warm-up step (none slower than %.1fx the median of the later steps)",
                 STEPS_WARMUP_RATIO);
    return buf;
}

static void steps_view_head(FILE *out, const struct steps_stats *st, const char *const *windows)
{
    char med[32], p90[32], mx[32], startup[32], imp[32], tear[32], source[384];
    fprintf(out, "Training steps: %zu steady of %zu, from %s", st->counted, st->nsteps,
            model_steps_source_text(&st->p->steps, source, sizeof source));
    if (model_steps_name()) {
        fputs(st->p->steps.source == MODEL_STEPS_NAMED ? " '" : " (--step '", out);
        format_fputs_escaped(out, model_steps_name());
        if (st->p->steps.source == MODEL_STEPS_NAMED)
            fputs("'", out);
        else {
            steps_view_no_call(out, model_steps_named_calls(st->p));
            fputc(')', out);
        }
    }
    char left[384];
    fprintf(out, "; %s", steps_view_left_out(st, left, sizeof left));
    fputc('\n', out);
    steps_view_ms(st->median_ns, med, sizeof med);
    steps_view_ms(st->p90_ns, p90, sizeof p90);
    steps_view_ms(st->max_ns, mx, sizeof mx);
    fprintf(out, "  Step time: median %s, p90 %s, max %s (step %" PRIu64 ")\n", med, p90, mx,
            st->max_number);
    steps_view_ms(st->startup_ns, startup, sizeof startup);
    steps_view_ms(st->teardown_ns, tear, sizeof tear);
    uint64_t wall = st->p->wall_ns;
    const char *window = model_meta_get(st->p, "window");
    if (window && *window) {
        fprintf(out, "  Capture window (%s): ", window);
        if (model_steps_numbered(st->p)) /* (PROF_STEPS counts from 0) */
            fprintf(out, "the process's steps %" PRIu64 "-%" PRIu64 " (%s)",
                    st->first_number - st->warmup, st->last_number,
                    st->p->steps.source == MODEL_STEPS_PROFILER_STEP ? "ProfilerStep#N's N"
                                                                      : "the first is 1");
        else
            fputs("steps numbered from its first,", out); /* "... recorded inside it only" */
        /* a window opened by time, signal or attach after the first steps cuts into one
         * (PROF_STEPS opens at a step's end; one open from the start or before the first
         * step cuts none): the first step counted is that step's part inside it */
        const char *open = model_meta_get(st->p, "window_open");
        char why[16];
        int cut = st->p->steps.opened_late && open && sscanf(open, "%*u %15s", why) == 1 &&
                  strcmp(why, "step");
        fprintf(out, " recorded inside it only%s; %s before its first step, %s after its last\n",
                cut ? " (the first began before the window opened: its part inside it counts)" : "",
                startup, tear);
        return;
    }
    char costs[1024], after[1024] = "", build[256];
    steps_view_startup_costs(st->p, costs, sizeof costs);
    steps_view_profiler_note(st, build, sizeof build);
    wall -= st->profiler_ns < wall ? st->profiler_ns : wall;
    const struct model_steps *ms = &st->p->steps;
    /* the periodic work's last call, after the loop, when periodic_work would say it */
    if (ms->rare_after && ms->nrare_hot &&
        (double)ms->rare_hot[0].self_ns >=
            findings_threshold[FINDINGS_PERIODIC_SHARE] * (double)st->total_ns) {
        char t[32];
        steps_view_ms(ms->rare_after_ns, t, sizeof t);
        snprintf(after, sizeof after, " (%s of it the periodic work %s, %llu call%s)", t,
                 ms->rare_hot[0].name, (unsigned long long)ms->rare_after,
                 ms->rare_after == 1 ? "" : "s");
    } else if (ms->eval_after_ns) { /* an inline evaluation, after the loop */
        char t[32];
        steps_view_ms(ms->eval_after_ns, t, sizeof t);
        snprintf(after, sizeof after,
                 " (%s of it evaluation: the model under torch.no_grad() or "
                 "torch.inference_mode(), as inside the steps)",
                 t);
    }
    const char *imports = steps_view_imports(st, imp, sizeof imp);
    /* the startup's flame graph: Python calls recorded (a summary holds no call tree, and
     * the same text is printed from it) */
    int flame = model_meta_get(st->p, "python.scheme") != NULL;
    fprintf(out,
            "  Startup: %s before the first step (%.0f%% of the process; imports %s%s%s%s), "
            "teardown %s%s; ",
            startup, wall ? 100.0 * (double)st->startup_ns / (double)wall : 0.0, imports, costs,
            build, flame ? "; its flame graph: --flamegraph FILE --phase startup" : "", tear,
            after);
    steps_view_cover(out, windows);
    fputc('\n', out);
}

void steps_view_lost_note(const struct model_process *p, char *buf, size_t len)
{
    *buf = '\0';
    if (!p->lost)
        return;
    if (model_steps_phases_whole(p)) /* (the ring keeps room for the phases' spans) */
        snprintf(buf, len,
                 "%" PRIu64 " events were lost (the ring was full: PROF_RING_KB raises it), "
                 "none of the phases' spans: the parts are whole, but a lost operator's time "
                 "counts as other CPU here, not other ops",
                 p->lost);
    else /* the phases are spans through the ring (the boundaries are not) */
        snprintf(buf, len,
                 "%" PRIu64 " events were lost (the ring was full: PROF_RING_KB raises it): a "
                 "forward, backward or optimizer step whose span was among them counts as "
                 "other CPU or other ops here; no finding is made of those parts",
                 p->lost);
}

/* One process: its parts per step. */
/* wait_ns: the process's wait for other ranks, when ranks were compared (known) */
static void steps_view_parts(FILE *out, const struct steps_stats *st, uint64_t wait_ns, int known)
{
    fprintf(out, "  Where a step's time goes (mean per steady step; the parts add up to it):\n");
    struct text_table t;
    text_table_begin(&t, "<Part|>Per step|>Share");
    uint64_t n = st->counted ? st->counted : 1;
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++) {
        char v[32], sh[16];
        steps_view_ms(st->part_ns[k] / n, v, sizeof v);
        steps_view_share(st->part_ns[k], st->total_ns, sh, sizeof sh);
        text_table_row(&t, model_step_part_name(k), v, sh);
    }
    text_table_end(out, &t);
    char note[512];
    for (int k = 0; k < 3; k++) {
        steps_view_notes[k](st, note, sizeof note);
        if (*note)
            fprintf(out, "  (%s)\n", note);
    }
    char lost[512];
    steps_view_lost_note(st->p, lost, sizeof lost);
    if (*lost)
        fprintf(out, "  (%s)\n", lost);
    if (st->comm_ns) {
        char all[32], exposed[32], wait[32];
        steps_view_ms(st->comm_ns / n, all, sizeof all);
        steps_view_ms(st->part_ns[MODEL_STEP_COMM] / n, exposed, sizeof exposed);
        steps_view_ms(wait_ns / n, wait, sizeof wait);
        if (known)
            fprintf(out,
                    "  Communication: %s per step in all, %s of it not hidden behind ops; waiting "
                    "for other ranks %s per step\n",
                    all, exposed, wait);
        else /* (a wait is the time before the last rank arrived: other ranks' traces) */
            fprintf(out,
                    "  Communication: %s per step in all, %s of it not hidden behind ops; how much "
                    "is waiting for other ranks needs their traces (without --rank they are "
                    "compared)\n",
                    all, exposed);
    }
    if (st->has_gpu) {
        char b[16], k[16], c[16];
        steps_view_share(st->gpu_busy_ns, st->total_ns, b, sizeof b);
        steps_view_share(st->gpu_kernel_ns, st->total_ns, k, sizeof k);
        steps_view_share(st->gpu_copy_ns, st->total_ns, c, sizeof c);
        fprintf(out,
                "  GPU in the steps: busy %s of the step time (kernels %s, copies %s), "
                "idle the rest\n",
                b, k, c);
    }
}

const struct model_step_hot *steps_view_slow_hot(const struct model_process *p, uint64_t number)
{
    for (size_t i = 0; i < p->steps.nslow_hot; i++)
        if (p->steps.slow_hot[i].step == number)
            return &p->steps.slow_hot[i];
    return NULL;
}

/* The slowest steady steps, the part that made each slow against the mean step, and the
 * function that explains it (steps.slow_hot). */
static void steps_view_slowest(FILE *out, const struct steps_stats *st)
{
    const struct model_steps *m = &st->p->steps;
    uint64_t mean[MODEL_STEP_PART_COUNT];
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
        mean[k] = st->counted ? st->part_ns[k] / st->counted : 0;
    size_t shown[3] = {SIZE_MAX, SIZE_MAX, SIZE_MAX};
    for (int r = 0; r < 3; r++) {
        size_t best = SIZE_MAX;
        for (size_t i = 0; i < m->nsteps; i++) {
            const struct model_step *s = &m->steps[i];
            if (s->number < st->first_number || s->number > st->last_number || i == shown[0] ||
                i == shown[1])
                continue;
            if (best == SIZE_MAX ||
                s->end_ns - s->start_ns > m->steps[best].end_ns - m->steps[best].start_ns)
                best = i;
        }
        const struct model_step *s = best == SIZE_MAX ? NULL : &m->steps[best];
        if (!s || (double)(s->end_ns - s->start_ns) < 1.2 * (double)st->median_ns)
            break;
        shown[r] = best;
        uint64_t excess;
        int part = steps_largest_excess(s->part_ns, mean, &excess);
        char d[32], e[32];
        steps_view_ms(s->end_ns - s->start_ns, d, sizeof d);
        steps_view_ms(excess, e, sizeof e);
        fprintf(out, "%s step %" PRIu64 " %s (%.1fx the median",
                r ? "," : "  Slowest steps:", s->number, d,
                (double)(s->end_ns - s->start_ns) / (double)st->median_ns);
        if (part >= 0)
            fprintf(out, "; by part most %s +%s", model_step_part_name(part), e);
        const struct model_step_hot *h = steps_view_slow_hot(st->p, s->number);
        if (h) {
            char name[512], caller[512];
            steps_view_short_name(h->name, name, sizeof name);
            steps_view_short_name(h->caller, caller, sizeof caller);
            steps_view_ms(h->self_ns, e, sizeof e);
            int gc = !strncmp(h->name, MODEL_STEPS_GC_NAME, strlen(MODEL_STEPS_GC_NAME));
            fprintf(out, "; its %s %s%s%s +%s", gc ? "cause" : "function", name,
                    *caller ? " from " : "", caller, e);
        }
        fputc(')', out);
    }
    if (shown[0] != SIZE_MAX)
        fputc('\n', out);
}

const char *const steps_view_rank_columns =
    ">Rank|>Step|>Data|>Forward|>Backward|>Optimizer|>Other ops|>Comm|>(wait)|>Syncs|>Other CPU";

void steps_view_rank_cells(const struct comm_report *r, size_t i, uint64_t *ns,
                           char cell[STEPS_VIEW_RANK_COLUMNS][32])
{
    const struct comm_rank_row *k = &r->ranks[i];
    uint64_t n = k->steps ? k->steps : 1;
    static const int order[] = {MODEL_STEP_DATA,      MODEL_STEP_FORWARD,   MODEL_STEP_BACKWARD,
                                MODEL_STEP_OPTIMIZER, MODEL_STEP_OTHER_OPS, MODEL_STEP_COMM};
    ns[0] = (uint64_t)k->rank;
    ns[1] = k->wall_ns / n;
    for (int j = 0; j < 6; j++)
        ns[2 + j] = k->part_ns[order[j]] / n;
    ns[8] = k->wait_ns / n;
    ns[9] = k->part_ns[MODEL_STEP_SYNC] / n;
    ns[10] = k->part_ns[MODEL_STEP_OTHER] / n;
    snprintf(cell[0], sizeof cell[0], "%lld", (long long)k->rank);
    for (int j = 1; j < STEPS_VIEW_RANK_COLUMNS; j++)
        steps_view_ms(ns[j], cell[j], sizeof cell[j]);
}

int steps_view_ranks_title(const struct comm_report *r, char *buf, size_t len)
{
    return snprintf(buf, len, "Per rank, mean per step over steps %" PRIu64 "-%" PRIu64 "%s",
                    r->step_lo, r->step_hi,
                    r->steps_unequal ? " (the steps every rank has; the ranks' own differ)" : "");
}

const struct model_process *steps_view_rank_process(const struct summary *s, long long rank)
{
    const struct model_process *p = NULL;
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->rank == rank && s->procs[i]->steps.nsteps &&
            (!p || s->procs[i]->steps.nsteps > p->steps.nsteps))
            p = s->procs[i];
    return p;
}

const char *steps_view_rank_look(const struct summary *s, long long rank, const char *why)
{
    const struct model_process *p = steps_view_rank_process(s, rank);
    if (!p || !model_python_unrecorded(p)) /* (a program without Python: as ever) */
        return " --python";
    if (model_meta_get(p, "sample_python"))
        return " --samples: its Python calls were not recorded, its CPU samples were";
    /* its operators hold its compute, and its DataLoader's scope */
    if (why && (!strcmp(why, "compute") || !strcmp(why, "data loading")))
        return " --ops: its Python calls were not recorded (PROF_PYTHON=0 turns them off); "
               "with them --python names the function";
    return ": its Python calls were not recorded (PROF_PYTHON=0 turns them off); with them "
           "--python names the function";
}

int steps_view_ranks_verdict(const struct comm_report *r, const char *look, char *buf, size_t len)
{
    const struct comm_slowest *w = &r->slowest;
    if (w->rank < 0 || !w->why)
        return (int)(buf[0] = 0);
    char wait[32];
    const struct comm_rank_row *mid = &r->ranks[comm_median_rank(r)]; /* as the findings' */
    uint64_t per_step = mid->wait_ns / (mid->steps ? mid->steps : 1);
    steps_view_ms(per_step, wait, sizeof wait);
    if (!per_step) /* e.g. --step names a part of the iteration with no collective */
        return snprintf(buf, len,
                        "Rank %lld is the slowest; no rank waits for it inside these steps; its "
                        "excess over the ranks' median is mostly %s (--rank %lld%s)",
                        (long long)w->rank, w->why, (long long)w->rank, look);
    if (!comm_slowest_holds_others(r))
        return snprintf(buf, len,
                        "No rank holds the others: the median rank (rank %lld) waits %s per step "
                        "in collectives, and rank %lld, the slowest (its excess over the ranks' "
                        "median mostly %s), waits more than half as long itself",
                        (long long)mid->rank, wait, (long long)w->rank, w->why);
    return snprintf(buf, len,
                    "Rank %lld holds the others: the median rank (rank %lld) waits %s per step "
                    "for it; its excess over the ranks' median is mostly %s (--rank %lld%s)",
                    (long long)w->rank, (long long)mid->rank, wait, w->why, (long long)w->rank,
                    look);
}

/* Over the ranks: one row per rank of its parts per step over the common window. */
static void steps_view_ranks(FILE *out, const struct summary *s, const struct comm_report *r)
{
    char line[512];
    steps_view_ranks_title(r, line, sizeof line);
    fprintf(out, "  %s:\n", line);
    struct text_table t;
    text_table_begin(&t, steps_view_rank_columns);
    for (size_t i = 0; i < r->nranks; i++) {
        uint64_t ns[STEPS_VIEW_RANK_COLUMNS];
        char c[STEPS_VIEW_RANK_COLUMNS][32];
        steps_view_rank_cells(r, i, ns, c);
        text_table_row(&t, c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7], c[8], c[9], c[10]);
    }
    text_table_end(out, &t);
    if (steps_view_ranks_verdict(r, steps_view_rank_look(s, r->slowest.rank, r->slowest.why), line,
                                 sizeof line))
        fprintf(out, "  %s\n", line);
}

/* Processes without ranks that trained beside p (hogwild's workers, two scripts' runs):
 * whose steps the section shows, and how to see another's. */
static void steps_view_others(FILE *out, const struct summary *s, const struct model_process *p)
{
    const struct model_process *other = NULL;
    size_t n = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i] != p && s->procs[i]->steps.nsteps && n++ == 0)
            other = s->procs[i];
    if (!other)
        return;
    fprintf(out, "  (%s %lld's steps above; %zu processes have training steps: another is ",
            p->rank >= 0 ? "rank" : "pid", (long long)(p->rank >= 0 ? p->rank : p->pid), n + 1);
    if (other->rank >= 0) {
        fprintf(out, "rank %lld (%zu steps), its own report: `profreport DIR --rank %lld`",
                (long long)other->rank, other->steps.nsteps, (long long)other->rank);
    } else { /* its trace, or the summary read in its place when the trace is gone */
        fprintf(out, "pid %lld (%zu steps), its own report: `profreport ", (long long)other->pid,
                other->steps.nsteps);
        format_fputs_escaped(out, other->summary_file && !other->summary_bytes &&
                                          access(other->file, R_OK) != 0
                                      ? other->summary_file
                                      : other->file);
        fputc('`', out);
    }
    fprintf(out, "%s)\n", n > 1 ? "; the rest likewise" : "");
}

void steps_view_print(FILE *out, const struct summary *s, const struct comm_report *r)
{
    const struct model_process *p = NULL;
    if (r && r->by_steps && r->nranks > 1) {
        for (size_t i = 0; i < s->nprocs && !p; i++)
            if (s->procs[i]->rank == r->ranks[0].rank)
                p = steps_main_process((const struct model_process *const *)&s->procs[i], 1);
    } else {
        p = steps_main_process((const struct model_process *const *)s->procs, s->nprocs);
    }
    if (!p) {
        fputs("Training steps: none found (no ProfilerStep#N scope, optimizer step scope, "
              "Lightning batch, optimizer step call or backward pass",
              out);
        if (model_steps_name()) {
            fputs("; --step '", out);
            format_fputs_escaped(out, model_steps_name());
            uint64_t calls = 0; /* (no process has steps: every one's) */
            for (size_t i = 0; i < s->nprocs; i++)
                calls += model_steps_named_calls(s->procs[i]);
            steps_view_no_call(out, calls);
        } else {
            fputs("; --step NAME names them", out);
        }
        fputs(")", out);
        uint64_t lost = 0;
        for (size_t i = 0; i < s->nprocs; i++)
            lost += s->procs[i]->lost;
        if (lost) /* the boundaries may be among them */
            fprintf(out,
                    "; %" PRIu64 " events were lost (the ring was full: PROF_RING_KB raises it), "
                    "step boundaries among them maybe",
                    lost);
        fputs("; the tables cover the whole process\n\n", out);
        return;
    }
    struct steps_stats st;
    steps_stats_of(p, 0, UINT64_MAX, &st);
    char note[512];
    const char *windows[] = {
        tables_torch_window(s, note, sizeof note), tables_python_window(s, note, sizeof note),
        tables_torch_memory_window(s, note, sizeof note), tables_gpu_window(s, note, sizeof note)};
    for (size_t i = 0; i < sizeof windows / sizeof windows[0]; i++)
        if (windows[i] && !strcmp(windows[i], model_window_name(MODEL_WINDOW_ALL)))
            windows[i] = NULL;
    /* The Python layer keeps its counts at a few step boundaries (1-8, 16, 32, the last):
     * after a long warm-up its table starts later than the others (a review found the line
     * saying all three cover the steady steps beside a Python table of steps 17-40) */
    char py_part[160];
    if (windows[1] && p->py.window != MODEL_WINDOW_ALL &&
        (p->py.window_first > st.first_number || p->py.window_last < st.last_number)) {
        snprintf(py_part, sizeof py_part,
                 "steps %" PRIu64 "-%" PRIu64 " of them (the Python layer's counts are kept at "
                 "steps 1-8, 16, 32 and the last)",
                 p->py.window_first, p->py.window_last);
        windows[1] = py_part;
    }
    if (r && r->by_steps && r->nranks > 1) {
        steps_view_head(out, &st, windows);
        fprintf(out, "  (rank %lld's steps above)\n", (long long)p->rank);
        steps_view_ranks(out, s, r);
        char note[512]; /* (that rank's: the others' are said by --rank N) */
        steps_view_phases_note(&st, note, sizeof note);
        if (*note)
            fprintf(out, "  (rank %lld: %s)\n", (long long)p->rank, note);
    } else {
        steps_view_head(out, &st, windows);
        steps_view_others(out, s, p);
        steps_view_parts(out, &st, 0, 0);
        steps_view_slowest(out, &st);
    }
    fputc('\n', out);
}

static json_t *steps_view_json_u64(uint64_t v)
{
    return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

static json_t *steps_view_json_parts(const uint64_t *parts, uint64_t div)
{
    json_t *o = json_object();
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
        json_object_set_new(o, model_step_part_name(k), steps_view_json_u64(parts[k] / div));
    return o;
}

json_t *steps_view_json(const struct model_process *p, const char *mark, uint64_t *warmup)
{
    if (!p->steps.nsteps)
        return json_null();
    struct steps_stats st;
    steps_stats_of(p, 0, UINT64_MAX, &st);
    const struct model_steps *m = &p->steps;
    json_t *o = json_object();
    json_object_set_new(o, "source", json_string(model_step_source_name(m->source)));
    /* optimizer steps per step: more than 1 when a loop steps several per DataLoader batch */
    json_object_set_new(
        o, "optimizer_steps_per_step",
        json_integer(m->source == MODEL_STEPS_OPTIMIZER || m->source == MODEL_STEPS_PYTHON
                         ? (m->per_step > 1 ? m->per_step : 1)
                         : 0));
    /* more than 1: gradient accumulation, that many forward and backward passes per step */
    json_object_set_new(o, "backward_passes_per_step",
                        json_integer(m->backward_passes > 1 ? m->backward_passes : 1));
    /* --step's name, also when it named no call (the source then says what was used) */
    json_object_set_new(o, "step_name",
                        model_steps_name() ? json_string(model_steps_name()) : json_null());
    json_object_set_new(o, "thread", json_integer(m->tid));
    json_object_set_new(o, "count", steps_view_json_u64(st.nsteps));
    json_object_set_new(o, "warmup", steps_view_json_u64(st.warmup));
    json_object_set_new(o, "warmup_rule", json_real(STEPS_WARMUP_RATIO));
    json_object_set_new(o, "steady", steps_view_json_u64(st.counted));
    json_object_set_new(o, "median_ns", steps_view_json_u64(st.median_ns));
    json_object_set_new(o, "p90_ns", steps_view_json_u64(st.p90_ns));
    json_object_set_new(o, "max_ns", steps_view_json_u64(st.max_ns));
    json_object_set_new(o, "max_step", steps_view_json_u64(st.max_number));
    json_object_set_new(o, "startup_ns", steps_view_json_u64(st.startup_ns));
    json_object_set_new(o, "startup_import_ns",
                        steps_view_imports_known(p) ? steps_view_json_u64(st.startup_import_ns)
                                                    : json_null());
    /* (the profiler's torch bridge build, left out of startup_ns) */
    json_object_set_new(o, "profiler_ns", steps_view_json_u64(st.profiler_ns));
    json_t *top = json_array(); /* the startup's largest costs outside imports */
    for (size_t i = 0; i < p->steps.nstartup_hot; i++) {
        const struct model_step_hot *h = &p->steps.startup_hot[i];
        json_array_append_new(top, json_pack("{s:o,s:o,s:o}", "name", export_json_str(h->name),
                                             "caller", export_json_str(h->caller), "self_ns",
                                             steps_view_json_u64(h->self_ns)));
    }
    json_object_set_new(o, "startup_top", top);
    json_object_set_new(o, "teardown_ns", steps_view_json_u64(st.teardown_ns));
    json_object_set_new(o, "mean_parts_ns",
                        steps_view_json_parts(st.part_ns, st.counted ? st.counted : 1));
    /* forward, backward: parts not found (no Python calls recorded), counted in other ops */
    json_t *unknown = json_array();
    int phases = steps_view_phases_unknown(&st);
    for (int k = 0; k < 2; k++)
        if (phases & (1 << k))
            json_array_append_new(unknown, json_string(k ? "backward" : "forward"));
    json_object_set_new(o, "parts_not_found", unknown);
    if (mark) {
        *warmup = st.warmup;
        json_object_set_new(o, "steps", json_string(mark));
        return o;
    }
    json_t *all = json_array();
    for (size_t i = 0; i < m->nsteps; i++) {
        const struct model_step *s = &m->steps[i];
        json_t *j = json_object();
        json_object_set_new(j, "number", steps_view_json_u64(s->number));
        json_object_set_new(j, "start_ns", steps_view_json_u64(s->start_ns));
        json_object_set_new(j, "ns", steps_view_json_u64(s->end_ns - s->start_ns));
        json_object_set_new(j, "parts_ns", steps_view_json_parts(s->part_ns, 1));
        json_object_set_new(j, "comm_ns", steps_view_json_u64(s->comm_ns));
        /* (of other ops, other CPU and communication: an evaluation under no_grad) */
        json_object_set_new(j, "eval_ns", steps_view_json_u64(s->eval_ns));
        /* (of backward: forward calls recomputed in it, activation checkpointing) */
        json_object_set_new(j, "recompute_ns", steps_view_json_u64(s->recompute_ns));
        json_object_set_new(j, "gpu_busy_ns", steps_view_json_u64(s->gpu_busy_ns));
        json_object_set_new(j, "syncs", steps_view_json_u64(s->syncs));
        json_object_set_new(j, "warmup", json_boolean(i < st.warmup));
        json_array_append_new(all, j);
    }
    json_object_set_new(o, "steps", all);
    return o;
}

/* A step's text, built in a buffer and written at once (fprintf per figure was most of the
 * time of a 1,024-rank JSON report). */
struct steps_view_buf {
    char b[4096];
    size_t n;
};

static void steps_view_put(struct steps_view_buf *b, const char *s, size_t n)
{
    if (n > sizeof b->b - b->n)
        n = sizeof b->b - b->n; /* never: a step's text is under 1 KB at depth 64 */
    memcpy(b->b + b->n, s, n);
    b->n += n;
}

/* Newline and depth spaces, as jansson's JSON_INDENT(1) starts a line. */
static void steps_view_json_line(struct steps_view_buf *b, int depth)
{
    static const char spaces[] =
        "\n                                                                ";
    steps_view_put(b, spaces, (size_t)(depth < 64 ? depth : 64) + 1);
}

/* key: value as jansson writes an integer (clamped to INT64_MAX like steps_view_json_u64),
 * then ',' and the next line unless last. */
static void steps_view_json_key_u64(struct steps_view_buf *b, int depth, const char *key,
                                    uint64_t v, int last)
{
    char d[24];
    size_t n = sizeof d;
    if (v > (uint64_t)INT64_MAX)
        v = (uint64_t)INT64_MAX;
    do
        d[--n] = (char)('0' + v % 10);
    while (v /= 10);
    steps_view_put(b, key, strlen(key));
    steps_view_put(b, ": ", 2);
    steps_view_put(b, d + n, sizeof d - n);
    if (!last) {
        steps_view_put(b, ",", 1);
        steps_view_json_line(b, depth);
    }
}

int steps_view_json_every(FILE *out, const struct model_process *p, uint64_t warmup, int depth)
{
    const struct model_steps *m = &p->steps;
    if (!m->nsteps)
        return fputs("[]", out) == EOF ? -1 : 0;
    model_steps_hold(p);
    if (depth > 60)
        return -1;                     /* never: a process's steps are at depth 4 */
    char *part[MODEL_STEP_PART_COUNT]; /* the parts' names as jansson writes them */
    int rc = 0;
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++) {
        json_t *name = json_string(model_step_part_name(k));
        part[k] = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
        json_decref(name);
        rc |= !part[k] || strlen(part[k]) > 256;
    }
    fputc('[', out);
    for (size_t i = 0; i < m->nsteps && !rc; i++) {
        const struct model_step *s = &m->steps[i];
        struct steps_view_buf b = {.n = 0};
        int d = depth + 2; /* the step's keys */
        steps_view_json_line(&b, depth + 1);
        steps_view_put(&b, "{", 1);
        steps_view_json_line(&b, d);
        steps_view_json_key_u64(&b, d, "\"number\"", s->number, 0);
        steps_view_json_key_u64(&b, d, "\"start_ns\"", s->start_ns, 0);
        steps_view_json_key_u64(&b, d, "\"ns\"", s->end_ns - s->start_ns, 0);
        steps_view_put(&b, "\"parts_ns\": {", 13);
        steps_view_json_line(&b, d + 1);
        for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
            steps_view_json_key_u64(&b, d + 1, part[k], s->part_ns[k],
                                    k == MODEL_STEP_PART_COUNT - 1);
        steps_view_json_line(&b, d);
        steps_view_put(&b, "},", 2);
        steps_view_json_line(&b, d);
        steps_view_json_key_u64(&b, d, "\"comm_ns\"", s->comm_ns, 0);
        steps_view_json_key_u64(&b, d, "\"eval_ns\"", s->eval_ns, 0);
        steps_view_json_key_u64(&b, d, "\"recompute_ns\"", s->recompute_ns, 0);
        steps_view_json_key_u64(&b, d, "\"gpu_busy_ns\"", s->gpu_busy_ns, 0);
        steps_view_json_key_u64(&b, d, "\"syncs\"", s->syncs, 0);
        if (i < warmup)
            steps_view_put(&b, "\"warmup\": true", 14);
        else
            steps_view_put(&b, "\"warmup\": false", 15);
        steps_view_json_line(&b, depth + 1);
        steps_view_put(&b, i + 1 < m->nsteps ? "}," : "}", i + 1 < m->nsteps ? 2 : 1);
        if (fwrite(b.b, 1, b.n, out) != b.n)
            rc = -1;
    }
    if (!rc && (fputc('\n', out) == EOF || fprintf(out, "%*s]", depth, "") < 0))
        rc = -1;
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
        free(part[k]);
    return rc || ferror(out) ? -1 : 0;
}
