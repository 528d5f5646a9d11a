/* findings_steps: the findings in step terms (findings.h), from the steady-state steps of a
 * process (steps_report.h) or, with several ranks, from the ranks compared on the same
 * steps (comm_merge.h; findings_ranks.c); and the whole-process DataLoader finding, which
 * gives way to them. */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader_workers.h"
#include "alloc.h"
#include "comm_merge.h"
#include "findings.h"
#include "findings_steps.h"
#include "format.h"
#include "model_steps_hot.h"
#include "model_steps_load.h"
#include "steps_report.h"
#include "steps_view.h"
#include "sort_keys.h"

const char *findings_after_step(uint8_t source)
{
    return source == MODEL_STEPS_OPTIMIZER || source == MODEL_STEPS_PYTHON
               ? "; a step ends where its optimizer step ends: work after optimizer.step() (a "
                 "checkpoint save, an evaluation, logging) counts in the next step"
           : source == MODEL_STEPS_BACKWARD
               ? "; a step ends where its backward pass ends: work after loss.backward() (a "
                 "parameter update by hand, gradient clipping, logging) counts in the next step"
               : "";
}

double findings_share(uint64_t part, uint64_t total)
{
    return total ? (double)part / (double)total : 0.0;
}

/* Exposed communication. waited_rank: the rank the others wait for, already named
 * (waiting_rank), or -1; with one, only the transfer beyond that wait is a finding of its
 * own, and it is the transfer's share (a review's read "82% of the training step is
 * communication", 20.46 ms of it the wait for a rank that slept). */
void findings_step_comm(struct findings *f, const struct findings_step *m, long long waited_rank,
                        const struct model_process *p)
{
    double share = findings_share(m->part_ns[MODEL_STEP_COMM], m->step_ns);
    uint64_t transfer =
        m->part_ns[MODEL_STEP_COMM] > m->wait_ns ? m->part_ns[MODEL_STEP_COMM] - m->wait_ns : 0;
    if (waited_rank >= 0)
        share = findings_share(transfer, m->step_ns);
    if (share < T(STEP_COMM_SHARE))
        return;
    char exposed[32], all[32], wait[32], step[32], moved[32];
    format_ns((double)m->part_ns[MODEL_STEP_COMM], exposed, sizeof exposed);
    format_ns((double)m->comm_ns, all, sizeof all);
    format_ns((double)m->wait_ns, wait, sizeof wait);
    format_ns((double)m->step_ns, step, sizeof step);
    format_ns((double)transfer, moved, sizeof moved);
    struct finding *x = findings_add(f, "step_comm", share);
    if (waited_rank >= 0) {
        findings_set(x->title, sizeof x->title,
                     "communication: %.0f%% of the training step%s is transfer no compute "
                     "hides, besides the wait for rank %lld",
                     100 * share, m->who, waited_rank);
        findings_set(x->evidence, sizeof x->evidence,
                     "%s per step of %s exposed (%s in communication in all): %s of it waiting "
                     "for rank %lld to arrive (the finding on it), the rest, %s, the "
                     "collectives' own time (their bytes over the backend's bandwidth; ranks "
                     "that share a machine's cores slow it too)",
                     exposed, step, all, wait, waited_rank, moved);
    } else {
        findings_set(x->title, sizeof x->title,
                     "communication: %.0f%% of the training step%s is communication no compute "
                     "hides",
                     100 * share, m->who);
        if (m->wait_known)
            findings_set(x->evidence, sizeof x->evidence,
                         "%s per step of %s exposed (%s in communication in all); %s of it "
                         "waiting for other ranks to arrive, the rest transfer",
                         exposed, step, all, wait);
        else /* one rank read (--rank N), or one process: its wait needs the others' traces */
            findings_set(x->evidence, sizeof x->evidence,
                         "%s per step of %s exposed (%s in communication in all); how much of it "
                         "is waiting for other ranks needs their traces (without --rank the "
                         "ranks are compared, and a rank the others wait for is named)",
                         exposed, step, all);
    }
    /* where the collectives begin: a metric's all_reduce apart from DDP's gradients */
    const struct model_steps *st = p ? &p->steps : NULL;
    size_t used = 0;
    for (size_t i = 0; st && i < st->ncomm_hot; i++) {
        const struct model_step_hot *h = &st->comm_hot[i];
        if (h->self_ns * 10 < m->places_comm_ns)
            break; /* (under a tenth of the communication) */
        char t[32];
        format_ns((double)h->self_ns, t, sizeof t);
        used +=
            (size_t)snprintf(x->where + used, used < sizeof x->where ? sizeof x->where - used : 0,
                             "%s%s%s%s: %s per step", i ? "; " : "collectives begun in ", h->name,
                             *h->caller == '(' ? " "
                             : *h->caller      ? " calling "
                                               : "",
                             h->caller, t);
    }
    /* the places add up to no more than the communication of the steps they were measured
     * on: when those are not the steps of the evidence, say theirs (a review's places summed
     * 11.00 ms against the 10.56 ms of the ranks' common steps) */
    if (used && m->places_comm_ns != m->comm_ns && used < sizeof x->where) {
        char own[32];
        format_ns((double)m->places_comm_ns, own, sizeof own);
        snprintf(x->where + used, sizeof x->where - used,
                 "; these over %s own steady steps, with %s per step in communication in "
                 "all there",
                 m->who[0] ? "the median rank's" : "the process's", own);
    }
}

static struct finding *findings_step_part(struct findings *f, const struct findings_step *m,
                                          int part, const char *kind, double threshold,
                                          const char *title)
{
    double share = findings_share(m->part_ns[part], m->step_ns);
    if (share < threshold)
        return NULL;
    char v[32], step[32];
    format_ns((double)m->part_ns[part], v, sizeof v);
    format_ns((double)m->step_ns, step, sizeof step);
    struct finding *x = findings_add(f, kind, share);
    findings_set(x->title, sizeof x->title, "%s: %.0f%% of the training step%s", title, 100 * share,
                 m->who);
    findings_set(x->evidence, sizeof x->evidence, "%s per step of %s", v, step);
    if (part == MODEL_STEP_SYNC)
        findings_set(x->evidence, sizeof x->evidence, "%s per step of %s, %.2f syncs per step", v,
                     step, (double)m->syncs_per_step_x100 / 100);
    return x;
}

/* p's DataLoader started its worker processes again each epoch (persistent_workers=False,
 * the default: more workers than were ever alive at once): what that costs and its remedy,
 * added to text, and 1; else 0. */
static int findings_loader_restarts(const struct model_process *p, char *text, size_t len)
{
    const struct loader_workers *w = loader_workers_of(p);
    if (p->steps.loader != MODEL_STEPS_LOADER_WORKERS || !w || !w->at_once ||
        w->workers < 2 * w->at_once)
        return 0;
    /* (a review's 8 epochs started 16 workers, 2 at a time: each epoch's first batch waited
     * 590 ms for them, the others 1 ms) */
    size_t used = strlen(text);
    snprintf(text + used, len - used,
             "; the DataLoader starts its workers again every epoch (%zu worker processes, %zu "
             "at a time: persistent_workers=False, the default), and each epoch's first batches "
             "wait for them to start: DataLoader(persistent_workers=True) keeps them",
             w->workers, w->at_once);
    return 1;
}

/* A data-loading stall of p (data_ns per steady step): what its DataLoader is, added to
 * evidence, and where: the step thread's function with the most time inside data loading,
 * when it holds a quarter of it or more (p loads its batches itself). */
static void findings_data_loading(const struct model_process *p, uint64_t data_ns, char *evidence,
                                  size_t evidence_len, char *where, size_t where_len)
{
    uint8_t loader = p->steps.loader;
    size_t used = strlen(evidence);
    /* With workers the step thread only waits: the work is in them. */
    const struct loader_workers *w = loader_workers_of(p);
    if (loader == MODEL_STEPS_LOADER_SINGLE)
        snprintf(evidence + used, evidence_len - used,
                 "; the DataLoader loads every batch in this process (num_workers=0): "
                 "DataLoader(num_workers=N) moves that work to N worker processes");
    else if (findings_loader_restarts(p, evidence, evidence_len)) {
        used = strlen(evidence);
        snprintf(evidence + used, evidence_len - used,
                 "; else more workers (num_workers), or less work per sample");
    } else if (loader == MODEL_STEPS_LOADER_WORKERS)
        snprintf(evidence + used, evidence_len - used,
                 "; the DataLoader's worker processes do not keep up: more workers "
                 "(num_workers), or less work per sample in the dataset");
    else
        snprintf(evidence + used, evidence_len - used,
                 "; DataLoader workers (num_workers) or prefetching would hide it");
    if (loader == MODEL_STEPS_LOADER_WORKERS && w && w->self_ns * 4 >= w->busy_ns) {
        char t[32], all[32];
        format_ns((double)w->self_ns, t, sizeof t);
        format_ns((double)w->busy_ns, all, sizeof all);
        snprintf(where, where_len,
                 "in its %zu DataLoader worker process%s: %s%s%s, %s of self time (its own "
                 "code, not what it calls) of the %s their main threads ran outside idle waits (a "
                 "queue lock, a poll); the tables, flame graph and exports leave the workers out "
                 "unless --all-roles",
                 w->workers, w->workers == 1 ? "" : "es", w->name, *w->caller ? ", " : "",
                 w->caller, t, all);
        return;
    }
    const struct model_step_hot *h = p->steps.ndata_hot ? &p->steps.data_hot[0] : NULL;
    if (!h || loader == MODEL_STEPS_LOADER_WORKERS || !data_ns || h->self_ns * 4 < data_ns ||
        h->self_ns > data_ns + data_ns / 10)
        return; /* (data_hot and the part are measured apart: within 10 %) */
    char t[32], d[32], whole[32];
    format_ns((double)h->self_ns, t, sizeof t);
    format_ns((double)data_ns, d, sizeof d);
    format_ns((double)h->outer_ns, whole, sizeof whole);
    if (h->outer_ns && h->outer_ns <= data_ns + data_ns / 10)
        snprintf(where, where_len,
                 "%s%s%s: %s per step with what it calls (%s in its own code) of the %s of "
                 "data loading",
                 h->name, *h->caller ? ", called from " : "", h->caller, whole, t, d);
    else
        snprintf(where, where_len, "%s%s%s: %s per step in its own code of the %s of data loading",
                 h->name, *h->caller ? ", called from " : "", h->caller, t, d);
}

static const struct model_action *findings_builtin(const struct model_process *p, const char *name)
{
    for (size_t a = 0; a < p->torch.nbuiltin; a++)
        if (p->torch.builtin[a].name && !strcmp(p->torch.builtin[a].name, name))
            return &p->torch.builtin[a];
    return NULL;
}

/* DataLoader wait: the dataloader_next action against the process's wall time. */
void findings_dataloader(struct findings *f, const struct summary *s)
{
    /* the process whose steps' finding (step_data) says it, in step terms; the rank the
     * others wait for because of its data loading (waiting_rank) likewise */
    const struct model_process *said =
        findings_find(f, "step_data") ? findings_steps_process_of(s) : NULL;
    const struct finding *waiting = findings_find(f, "waiting_rank");
    long long waiting_rank =
        waiting && waiting->why && !strcmp(waiting->why, "data loading") ? waiting->rank : -1;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        const struct model_action *a = findings_builtin(p, "dataloader_next");
        if (!a || !p->wall_ns || p == said || (waiting_rank >= 0 && p->rank == waiting_rank))
            continue;
        struct steps_stats st; /* data_hot is per steady step: so is the part it is held to */
        steps_stats_of(p, 0, UINT64_MAX, &st);
        model_steps_let_go(p); /* (read again from a summary if asked) */
        /* with steady steps, their data loading (a review's spawned ranks waited 1.66 s for
         * their workers to start in the first step, then 2.4 ms a step: "45.8 %") */
        double share = st.counted ? findings_share(st.part_ns[MODEL_STEP_DATA], st.total_ns)
                                  : (double)a->total_ns / (double)p->wall_ns;
        if (share < T(DATALOADER_SHARE))
            continue;
        char who[96], total[32], wall[32], mean[32];
        format_ns((double)(st.counted ? st.part_ns[MODEL_STEP_DATA] / st.counted : a->total_ns),
                  total, sizeof total);
        format_ns((double)(st.counted ? st.total_ns / st.counted : p->wall_ns), wall, sizeof wall);
        format_ns(a->calls ? (double)a->total_ns / (double)a->calls : 0, mean, sizeof mean);
        struct finding *x = findings_add(f, "dataloader", share);
        findings_set(x->title, sizeof x->title, "waiting for the DataLoader %.1f %% of the %s (%s)",
                     100.0 * share, st.counted ? "steady steps" : "time",
                     findings_proc_name(p, 1, who, sizeof who));
        if (st.counted)
            findings_set(x->evidence, sizeof x->evidence,
                         "%s per steady step of %s waiting for batches (in the whole "
                         "process, the first step's included: %" PRIu64 " batches, %s each)",
                         total, wall, a->calls, mean);
        else
            findings_set(x->evidence, sizeof x->evidence,
                         "%" PRIu64 " batches waited %s of %s wall time, %s each", a->calls, total,
                         wall, mean);
        findings_data_loading(p, st.counted ? st.part_ns[MODEL_STEP_DATA] / st.counted : 0,
                              x->evidence, sizeof x->evidence, x->where, sizeof x->where);
        if (!x->where[0])
            findings_set(x->where, sizeof x->where,
                         "_BaseDataLoaderIter.__next__ (torch/utils/data/dataloader.py)");
    }
}

static void findings_step_gpu(struct findings *f, const struct findings_step *m)
{
    if (!m->has_gpu || !m->step_ns)
        return;
    double idle = 1.0 - findings_share(m->gpu_busy_ns, m->step_ns);
    if (idle < T(STEP_GPU_IDLE_SHARE))
        return;
    char busy[32], step[32];
    format_ns((double)m->gpu_busy_ns, busy, sizeof busy);
    format_ns((double)m->step_ns, step, sizeof step);
    struct finding *x = findings_add(f, "step_gpu_idle", idle);
    findings_set(x->title, sizeof x->title, "GPU idle %.0f%% of the training step%s", 100 * idle,
                 m->who);
    /* what the step's time goes to instead: its largest part, and what shortens it (an
     * H200's small model read only "busy 240.86 us per step of 2.48 ms") */
    int big = 0;
    for (int k = 1; k < MODEL_STEP_PART_COUNT; k++)
        if (m->part_ns[k] > m->part_ns[big])
            big = k;
    const char *advice =
        big == MODEL_STEP_DATA    ? "the GPU waits for batches (see data loading)"
        : big == MODEL_STEP_COMM  ? "the GPU waits for communication"
        : big == MODEL_STEP_SYNC  ? "the host waits on the GPU, then the GPU on the host"
        : big == MODEL_STEP_OTHER ? "the host's work outside the model's phases (Python, I/O, "
                                    "sleeps) keeps the GPU waiting"
                                  : "the host's operators and launches take longer than the "
                                    "kernels they start: larger batches, CUDA graphs "
                                    "(torch.compile(mode=\"reduce-overhead\")), fused or "
                                    "foreach optimizers";
    char part[32];
    format_ns((double)m->part_ns[big], part, sizeof part);
    findings_set(x->evidence, sizeof x->evidence,
                 "kernels, copies and sets keep it busy %s per step of %s; the step's largest "
                 "part is %s, %s per step: %s",
                 busy, step, model_step_part_name(big), part, advice);
}

void findings_numbers_add(struct findings_numbers *l, uint64_t number)
{
    if (l->n >= 2 && number - l->last != l->gap)
        l->irregular = 1;
    l->gap = l->n ? number - l->last : 0;
    l->last = number;
    size_t used = strlen(l->text);
    if (++l->n <= 8)
        snprintf(l->text + used, sizeof l->text - used, "%s%llu", l->n > 1 ? ", " : "",
                 (unsigned long long)number);
    else if (l->n == 9)
        snprintf(l->text + used, sizeof l->text - used, ", ...");
    if (!l->irregular && l->n >= 3 && l->gap >= 2)
        snprintf(l->every, sizeof l->every, ", every %llu steps", (unsigned long long)l->gap);
    else
        l->every[0] = '\0';
}

/* The slow steps' title and evidence: the slowest step, and when there are more of them
 * (steady steps of T(STEP_OUTLIER_RATIO) times the median or more), how many, their share
 * of the steps' time, and their numbers: a pattern (every 7th step: long sequences, an
 * evaluation) reads differently from a one-off. */
static void findings_slow_steps(struct finding *x, const struct steps_stats *st, const char *mx,
                                const char *med)
{
    const struct model_steps *m = &st->p->steps;
    struct findings_numbers l = {0};
    uint64_t slow_ns = 0;
    for (size_t i = 0; i < m->nsteps; i++) {
        const struct model_step *k = &m->steps[i];
        uint64_t ns = k->end_ns - k->start_ns;
        if (i < st->warmup || k->number < st->first_number || k->number > st->last_number ||
            (double)ns < T(STEP_OUTLIER_RATIO) * (double)st->median_ns)
            continue;
        findings_numbers_add(&l, k->number);
        slow_ns += ns;
    }
    double ratio = (double)st->max_ns / (double)st->median_ns;
    if (l.n < 2) {
        x->minor = 1;
        findings_set(x->title, sizeof x->title, "slow steps: step %llu takes %.1fx the median",
                     (unsigned long long)st->max_number, ratio);
        findings_set(x->evidence, sizeof x->evidence,
                     "%s against a median of %s (the Training steps section names its cause)", mx,
                     med);
        return;
    }
    findings_set(x->title, sizeof x->title,
                 "slow steps: %zu of %zu steps take %gx the median or more%s, %.0f%% of the "
                 "steps' time",
                 l.n, st->counted, T(STEP_OUTLIER_RATIO), l.every,
                 100 * findings_share(slow_ns, st->total_ns));
    findings_set(x->evidence, sizeof x->evidence,
                 "steps %s; the slowest, step %llu, takes %s (%.1fx the median of %s; the "
                 "Training steps section names the slowest ones' causes)",
                 l.text, (unsigned long long)st->max_number, mx, ratio, med);
}

/* Whether a function's text ("f (path:line)") names one in the program's own files. */
static int findings_own_function(const char *text)
{
    const char *open = strrchr(text, '('), *colon = strrchr(text, ':'), *close = strrchr(text, ')');
    if (!open || !close || close < open)
        return 0;
    if (!colon || colon < open) /* "<module> (train.py)" */
        colon = close;
    char file[1024];
    snprintf(file, sizeof file, "%.*s", (int)(colon - open - 1), open + 1);
    return model_torch_own_file(file);
}

/* Python inside forward and backward: forward's time outside operators, backward's in a
 * Python callback of the autograd engine outside the operators it runs (model_step.
 * python_ns), and where: the function of the program's own files with the most self time
 * in the steps (steps.hot, whose self time holds its calls shorter than PROF_PY_SPAN_US,
 * short operators among them: said). The step breakdown puts this time in forward or
 * backward, and the op table cannot show it: a tokenizer in a forward, an
 * autograd.Function's backward in Python. who: "" or " (median rank)". */
void findings_step_python(struct findings *f, const struct steps_stats *st, const char *who)
{
    double share = findings_share(st->python_ns, st->total_ns);
    /* (not when events were lost: a lost operator's time reads as Python) */
    if (share < T(STEP_PYTHON_SHARE) || !st->counted || st->p->lost)
        return;
    char py[32], step[32];
    format_ns((double)st->python_ns / (double)st->counted, py, sizeof py);
    format_ns((double)st->total_ns / (double)st->counted, step, sizeof step);
    struct finding *x = findings_add(f, "step_python", share);
    findings_set(x->title, sizeof x->title,
                 "Python inside forward and backward: %.0f%% of the training step%s is Python "
                 "code, not operators",
                 100 * share, who);
    findings_set(x->evidence, sizeof x->evidence,
                 "%s per step of %s runs Python, not PyTorch operators: in forward outside "
                 "them (a Python loop, module call overhead) or in an autograd.Function's "
                 "Python forward, in backward its Python backward; the operator table shows "
                 "the operators' time (a Function's operator holds its Python too)",
                 py, step);
    const struct model_steps *ms = &st->p->steps;
    for (size_t i = 0; i < ms->nhot; i++) {
        const struct model_step_hot *h = &ms->hot[i];
        if (!findings_own_function(h->name))
            continue; /* a builtin's self time holds the operators it runs; a library's too */
        if (h->self_ns * 4 >= st->python_ns / st->counted) {
            char t[32], outer[32];
            format_ns((double)h->self_ns, t, sizeof t);
            format_ns((double)h->outer_ns, outer, sizeof outer);
            if (h->outer_ns) /* a comprehension: named with the function it is written in */
                findings_set(x->where, sizeof x->where,
                             "%s: %s per step in it, %s of it in %s (with its calls shorter "
                             "than PROF_PY_SPAN_US)",
                             h->caller, outer, t, h->name);
            else
                findings_set(x->where, sizeof x->where,
                             "%s: %s per step in it (with its calls shorter than "
                             "PROF_PY_SPAN_US)",
                             h->name, t);
        }
        break;
    }
}

/* A thread besides the step thread that runs Python in the steps (steps.thread_hot): Python
 * runs one thread at a time, and the training thread waits for its turns (a review's
 * background JSON logger made the steps 9x slower and no finding named it). */
static void findings_step_thread(struct findings *f, const struct steps_stats *st, const char *who)
{
    const struct model_steps *ms = &st->p->steps;
    const struct model_step_hot *h = ms->nthread_hot ? ms->thread_hot : NULL;
    uint64_t n = st->counted ? st->counted : 1;
    double share = h ? findings_share(h->self_ns * n, st->total_ns) : 0;
    if (share < T(STEP_THREAD_SHARE))
        return;
    char t[32], step[32];
    format_ns((double)h->self_ns, t, sizeof t);
    format_ns((double)st->total_ns / (double)n, step, sizeof step);
    struct finding *x = findings_add(f, "step_thread", share);
    findings_set(x->title, sizeof x->title,
                 "another thread runs Python during the training steps%s: %s per step, %.0f%% of "
                 "the step time",
                 who, t, 100 * share);
    findings_set(x->evidence, sizeof x->evidence,
                 "thread %llu runs Python and builtins (idle waits and sleeps aside) %s per steady "
                 "step of %s; Python runs one thread at a time (the GIL): while it runs, the "
                 "training thread's Python and operator calls wait, and the step's parts hold "
                 "that wait where it falls; move the work to another process, do less of it, or "
                 "run it between the steps",
                 (unsigned long long)h->step, t, step);
    findings_set(x->where, sizeof x->where, "%s: the thread's own outermost function", h->name);
}

/* Whether name is function's, or a comprehension, lambda or generator expression of it
 * ("validate.<locals>.<listcomp> (f.py:9)" of "validate (f.py:6)"): names as the steps
 * keep them, "qualname (file:line)". */
static int findings_same_function(const char *name, const char *function)
{
    const char *paren = strstr(function, " (");
    size_t q = paren ? (size_t)(paren - function) : strlen(function);
    return !strcmp(name, function) ||
           (!strncmp(name, function, q) && !strncmp(name + q, ".<locals>.<", 11));
}

struct finding *findings_periodic(struct findings *f, const struct steps_stats *st, const char *who)
{
    const struct model_step_hot *rare = st->p->steps.nrare_hot ? st->p->steps.rare_hot : NULL;
    double rare_share = rare ? findings_share(rare->self_ns, st->total_ns) : 0;
    if (!rare || rare_share < T(PERIODIC_SHARE))
        return NULL;
    char t[32], all[32];
    format_ns((double)rare->self_ns, t, sizeof t);
    format_ns((double)st->total_ns, all, sizeof all);
    struct finding *work = findings_add(f, "periodic_work", rare_share);
    findings_set(work->title, sizeof work->title,
                 "periodic work%s: %.0f%% of the steady steps' time is one function, run in "
                 "%llu of %zu steps",
                 who, 100 * rare_share, (unsigned long long)rare->step, st->counted);
    const struct model_steps *ms = &st->p->steps;
    if (ms->rare_after) { /* the loop's last one, after its last optimizer step */
        char after[32];
        format_ns((double)ms->rare_after_ns, after, sizeof after);
        size_t used = strlen(work->title);
        char times[32] = "once";
        if (ms->rare_after > 1)
            snprintf(times, sizeof times, "%llu times", (unsigned long long)ms->rare_after);
        snprintf(work->title + used, sizeof work->title - used,
                 " and %s after the last one (%s in the teardown)", times, after);
    }
    findings_set(work->evidence, sizeof work->evidence,
                 "%s of %s; its time counts in the parts of the steps it runs in (a "
                 "forward it runs, in forward; under torch.no_grad() or torch.inference_mode(), "
                 "in other ops): run it less often, or outside the timed loop",
                 t, all);
    if (st->p->steps.nrare_hot > 1) { /* what takes its time */
        const struct model_step_hot *in = &st->p->steps.rare_hot[1];
        int own = !*in->caller || !strcmp(in->caller, rare->name); /* called from it */
        char it[32];
        format_ns((double)in->self_ns, it, sizeof it);
        findings_set(work->where, sizeof work->where, "%s; inside it: %s%s%s, %s of its %s",
                     rare->name, in->name, own ? "" : ", called from ", own ? "" : in->caller, it,
                     t);
    } else {
        findings_set(work->where, sizeof work->where, "%s", rare->name);
    }
    return work;
}

void findings_step_startup(struct findings *f, const struct steps_stats *st, const char *who)
{
    uint64_t steps_ns = 0;
    for (size_t i = 0; i < st->p->steps.nsteps; i++)
        steps_ns += st->p->steps.steps[i].end_ns - st->p->steps.steps[i].start_ns;
    const char *window = model_meta_get(st->p, "window");
    if (steps_ns && !(window && *window) &&
        (double)st->startup_ns >= T(STARTUP_RATIO) * (double)steps_ns) {
        char a[32], b[32], imp[32];
        format_ns((double)st->startup_ns, a, sizeof a);
        format_ns((double)steps_ns, b, sizeof b);
        const char *imports = steps_view_imports(st, imp, sizeof imp);
        int known = steps_view_imports_known(st->p);
        struct finding *x = findings_add(f, "startup", findings_share(st->startup_ns, steps_ns));
        x->minor = 1;
        findings_set(x->title, sizeof x->title,
                     "startup%s: %s before the first step, more than the %s of all the steps", who,
                     a, b);
        char costs[1024];
        steps_view_startup_costs(st->p, costs, sizeof costs);
        findings_set(x->evidence, sizeof x->evidence,
                     "%s%s%s%s; short runs measure mostly startup: profile more steps, or read "
                     "the steps' figures (Training steps)",
                     known ? "imports take " : "its imports are ", imports, known ? " of it" : "",
                     costs);
    }
}

/* One process's own findings: its steady steps. */
static void findings_steps_process(struct findings *f, const struct steps_stats *st)
{
    uint64_t n = st->counted ? st->counted : 1;
    struct findings_step m = {.step_ns = st->total_ns / n,
                              .comm_ns = st->comm_ns / n,
                              .places_comm_ns = st->comm_ns / n,
                              .gpu_busy_ns = st->gpu_busy_ns / n,
                              .has_gpu = st->has_gpu,
                              .syncs_per_step_x100 = st->syncs * 100 / n,
                              .who = ""};
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
        m.part_ns[k] = st->part_ns[k] / n;
    findings_step_comm(f, &m, -1, st->p);
    struct finding *data = findings_step_part(f, &m, MODEL_STEP_DATA, "step_data",
                                              T(STEP_DATA_SHARE), "data-loading stall");
    if (data)
        findings_data_loading(st->p, m.part_ns[MODEL_STEP_DATA], data->evidence,
                              sizeof data->evidence, data->where, sizeof data->where);
    findings_step_part(f, &m, MODEL_STEP_SYNC, "step_sync", T(STEP_SYNC_SHARE), "host syncs");
    findings_step_gc(f, st, ""); /* (before the parts it pauses: the cause first) */
    /* Work outside the phases (ops and Python: a metric, logging, an EMA of the weights),
     * less the periodic work (said by its own finding). Operators and Python together: an
     * EMA update is mostly operators, a logging loop mostly Python, and either alone
     * understated it (an EMA at half the step read 23 %). */
    const struct model_step_hot *rare = st->p->steps.nrare_hot ? st->p->steps.rare_hot : NULL;
    int periodic = rare && findings_share(rare->self_ns, st->total_ns) >= T(PERIODIC_SHARE);
    struct findings_step o = m;
    uint64_t rare_per_step = periodic ? st->p->steps.rare_other_ns : 0;
    uint64_t outside = m.part_ns[MODEL_STEP_OTHER] + m.part_ns[MODEL_STEP_OTHER_OPS];
    o.part_ns[MODEL_STEP_OTHER] = outside > rare_per_step ? outside - rare_per_step : 0;
    /* an evaluation inside the steps (no_grad forwards in some steps, steps.evals) outside
     * the periodic function's: most of that work, it names the finding */
    uint64_t eval = periodic ? 0 : st->eval_ns / n;
    int evaluates = eval && eval * 2 >= o.part_ns[MODEL_STEP_OTHER];
    /* not when a phase's span was lost: a forward, backward or optimizer step whose span was
     * dropped counts here (a review's busy loop at a 64 KB ring read 66 % for 22 %); the
     * ring keeps room for them (model_steps_phases_whole); nor when forward or backward
     * could not be found (no Python calls recorded: a CNN read 83 % here of its model) */
    struct finding *other =
        !model_steps_phases_whole(st->p) || steps_view_phases_unknown(st)
            ? NULL
            : findings_step_part(
                  f, &o, MODEL_STEP_OTHER, "step_other", T(STEP_OTHER_SHARE),
                  evaluates  ? "evaluation inside the training steps, outside forward, backward, "
                               "the optimizer and data loading"
                  : periodic ? "work outside forward, backward, the optimizer and data loading "
                               "(the periodic work aside)"
                             : "work outside forward, backward, the optimizer and data loading");
    if (other) {
        char ops[32], rest[32], ev[32];
        format_ns((double)m.part_ns[MODEL_STEP_OTHER_OPS], ops, sizeof ops);
        format_ns((double)m.part_ns[MODEL_STEP_OTHER], rest, sizeof rest);
        format_ns((double)eval, ev, sizeof ev);
        size_t used = strlen(other->evidence);
        snprintf(other->evidence + used, sizeof other->evidence - used,
                 ": PyTorch operators %s, Python and the rest %s%s%s", ops, rest,
                 evaluates ? "" : " (metrics, logging, an EMA, code between the phases)",
                 st->p->lost ? " (events were lost: operators among them count as the rest)" : "");
        used = strlen(other->evidence); /* (its pauses fall in the phases and out of them) */
        if (findings_find(f, "step_gc")) /* (made before this one) */
            snprintf(other->evidence + used, sizeof other->evidence - used,
                     "; Python's garbage collection pauses some of it (step_gc)");
        used = strlen(other->evidence);
        if (eval)
            snprintf(other->evidence + used, sizeof other->evidence - used,
                     "; of it %s per step is evaluation, in %zu of %zu steps: the model run "
                     "under torch.no_grad() or torch.inference_mode() between two optimizer "
                     "steps%s",
                     ev, st->eval_steps, st->counted, findings_after_step(st->p->steps.source));
    }
    const struct model_step_hot *oh = st->p->steps.nother_hot ? st->p->steps.other_hot : NULL;
    if (other && oh && oh->self_ns * 4 >= o.part_ns[MODEL_STEP_OTHER]) {
        char t[32];
        format_ns((double)oh->self_ns, t, sizeof t);
        findings_set(other->where, sizeof other->where,
                     "%s%s%s: %s per step outside forward, backward, the optimizer and the "
                     "DataLoader",
                     oh->name, *oh->caller ? ", called from " : "", oh->caller, t);
    }
    findings_step_gpu(f, &m);
    findings_step_python(f, st, "");
    findings_step_thread(f, st, "");
    /* periodic work (an evaluation, a checkpoint): its share of the steady steps, and the
     * slowest step with it when that step's cause is the same function */
    struct finding *work = periodic ? findings_periodic(f, st, "") : NULL;
    if (st->median_ns && (double)st->max_ns >= T(STEP_OUTLIER_RATIO) * (double)st->median_ns) {
        char mx[32], med[32];
        format_ns((double)st->max_ns, mx, sizeof mx);
        format_ns((double)st->median_ns, med, sizeof med);
        const struct model_step_hot *h = steps_view_slow_hot(st->p, st->max_number);
        /* the slowest step's largest excess over the mean step: data loading is the stall's */
        const struct model_step *slow = NULL;
        for (size_t i = 0; i < st->p->steps.nsteps && !slow; i++)
            if (st->p->steps.steps[i].number == st->max_number)
                slow = &st->p->steps.steps[i];
        uint64_t excess;
        int part = slow ? steps_largest_excess(slow->part_ns, m.part_ns, &excess) : -1;
        /* the same cause: one finding */
        /* the periodic work's: the function or what takes its time (its second entry) */
        int in_work =
            work && h &&
            (findings_same_function(h->name, rare->name) ||
             (st->p->steps.nrare_hot > 1 && !strcmp(h->name, st->p->steps.rare_hot[1].name)));
        /* or the evaluation's, when it is most of the slowest step's excess */
        int in_eval = evaluates && other && slow && slow->eval_ns * 2 >= excess &&
                      (part == MODEL_STEP_OTHER || part == MODEL_STEP_OTHER_OPS);
        struct finding *same = data && part == MODEL_STEP_DATA ? data
                               : in_work                       ? work
                               : in_eval                       ? other
                                                               : NULL;
        if (same) {
            size_t used = strlen(same->evidence);
            snprintf(same->evidence + used, sizeof same->evidence - used,
                     "; %s: step %llu takes %.1fx the median (%s against %s%s)",
                     same == data ? "the slowest steps wait the longest"
                                  : "the steps that run it are the slowest",
                     (unsigned long long)st->max_number, (double)st->max_ns / (double)st->median_ns,
                     mx, med, same == work ? findings_after_step(st->p->steps.source) : "");
        } else {
            struct finding *x =
                findings_add(f, "slow_steps", (double)st->max_ns / (double)st->median_ns);
            findings_slow_steps(x, st, mx, med);
            /* a stall at an epoch's start, below the data-loading finding's share: the
             * DataLoader's workers starting again (a review's MNIST loop: its slowest step,
             * the second epoch's first, named select.poll, where the step thread waited) */
            char why[sizeof x->evidence] = "";
            if (part == MODEL_STEP_DATA && findings_loader_restarts(st->p, why, sizeof why)) {
                uint64_t mean = 0;
                for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
                    mean += m.part_ns[k];
                char ex[32], all[32];
                format_ns((double)excess, ex, sizeof ex);
                format_ns(st->max_ns > mean ? (double)(st->max_ns - mean) : 0, all, sizeof all);
                size_t used = strlen(x->evidence);
                snprintf(x->evidence + used, sizeof x->evidence - used,
                         "; its largest excess over the mean step is data loading (+%s of +%s)%s",
                         ex, all, why);
            }
            if (!x->minor && (part == MODEL_STEP_OTHER || part == MODEL_STEP_OTHER_OPS) &&
                !steps_view_phases_unknown(st)) {  /* (else other ops hold the model) */
                size_t used = strlen(x->evidence); /* (their excess is outside the phases) */
                snprintf(x->evidence + used, sizeof x->evidence - used, "%s",
                         findings_after_step(st->p->steps.source));
            }
            if (h) {
                char o[32];
                format_ns((double)h->self_ns, o, sizeof o);
                findings_set(x->where, sizeof x->where,
                             "%s%s%s: +%s in step %llu over its mean per steady step%s", h->name,
                             *h->caller ? ", called from " : "", h->caller, o,
                             (unsigned long long)st->max_number,
                             strncmp(h->name, MODEL_STEPS_GC_NAME, strlen(MODEL_STEPS_GC_NAME))
                                 ? ""
                                 : " (a collection pauses the thread that allocated; one of "
                                   "generation 2 walks every object alive: gc.freeze() after "
                                   "the set-up keeps those out of later collections)");
            }
        }
    }
    findings_step_growth(f, st);
    findings_step_startup(f, st, "");
}

int findings_steps_ranked(const struct summary *s)
{
    int ranked = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        ranked += s->procs[i]->rank >= 0 && s->procs[i]->steps.nsteps;
    return ranked > 1;
}

const struct model_process *findings_steps_process_of(const struct summary *s)
{
    return findings_steps_ranked(s)
               ? NULL
               : steps_main_process((const struct model_process *const *)s->procs, s->nprocs);
}

void findings_steps(struct findings *f, const struct summary *s)
{
    if (findings_steps_ranked(s)) {
        struct comm_report r;
        comm_merge_build(&r, s);
        if (r.by_steps && r.nranks > 1)
            findings_steps_ranks(f, &r, s);
        comm_merge_free(&r);
        return;
    }
    const struct model_process *p = findings_steps_process_of(s);
    if (!p)
        return;
    struct steps_stats st;
    steps_stats_of(p, 0, UINT64_MAX, &st);
    findings_steps_process(f, &st);
}
