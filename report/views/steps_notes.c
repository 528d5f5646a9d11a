/* steps_notes: what the steps' views (the text report's section, the HTML page's, the
 * findings) say beside the figures: the profiler's own bridge build, evaluation and
 * recomputing inside the steps, the startup's imports and the phases that cannot be found
 * when Python calls were not recorded (steps_view.h). */
#include <stdio.h>

#include "format.h"
#include "steps_view.h"

void steps_view_profiler_note(const struct steps_stats *st, char *buf, size_t len)
{
    *buf = 0;
    if (!st->profiler_ns)
        return;
    char t[32];
    format_ns((double)st->profiler_ns, t, sizeof t);
    snprintf(buf, len,
             "; the profiler's own %s building its torch bridge left out (a first run's: "
             "`profrun --prepare` builds it beforehand)",
             t);
}

void steps_view_eval_note(const struct steps_stats *st, char *buf, size_t len)
{
    *buf = 0;
    if (!st->eval_ns)
        return;
    char t[32];
    format_ns((double)st->eval_ns / (double)(st->counted ? st->counted : 1), t, sizeof t);
    snprintf(buf, len,
             "evaluation inside the steps: %s per step of other ops, other CPU and "
             "communication, in %zu of the %zu steps (the model run under torch.no_grad() or "
             "torch.inference_mode() between two optimizer steps: no part of forward)",
             t, st->eval_steps, st->counted);
}

void steps_view_recompute_note(const struct steps_stats *st, char *buf, size_t len)
{
    *buf = 0;
    if (!st->recompute_ns)
        return;
    char t[32], b[32];
    uint64_t n = st->counted ? st->counted : 1;
    format_ns((double)st->recompute_ns / (double)n, t, sizeof t);
    format_ns((double)st->part_ns[MODEL_STEP_BACKWARD] / (double)n, b, sizeof b);
    snprintf(buf, len,
             "backward recomputes the model's forward: %s per step of its %s (activation "
             "checkpointing, torch.utils.checkpoint: memory bought with compute)",
             t, b);
}

int steps_view_imports_known(const struct model_process *p)
{
    return !model_python_unrecorded(p) && !model_start_unrecorded(p);
}

const char *steps_view_imports(const struct steps_stats *st, char *buf, size_t len)
{
    if (model_python_unrecorded(st->p))
        return "not known (Python calls not recorded)";
    if (model_start_unrecorded(st->p))
        return "not known (before the recording opened)";
    format_ns((double)st->startup_import_ns, buf, len);
    return buf;
}

int steps_view_phases_unknown(const struct steps_stats *st)
{
    if (!model_python_unrecorded(st->p) || !model_meta_get(st->p, "torch_lib"))
        return 0; /* the Python calls find them, or there is no PyTorch model to find */
    return (st->part_ns[MODEL_STEP_FORWARD] ? 0 : 1) |
           (st->part_ns[MODEL_STEP_BACKWARD] || !model_torch_ran_backward(&st->p->torch) ? 0 : 2);
}

void steps_view_phases_note(const struct steps_stats *st, char *buf, size_t len)
{
    *buf = 0;
    int unknown = steps_view_phases_unknown(st);
    if (!unknown)
        return;
    static const char *const what[4][2] = {
        {"", ""},
        {"forward is", "the model's calls"},
        {"backward is", "loss.backward()"},
        {"forward and backward are", "the model's calls, loss.backward()"}};
    const char *its = unknown == 3 ? "their" : "its";
    snprintf(buf, len,
             "%s not told apart: this process's Python calls were not recorded (PROF_PYTHON=0 "
             "turns them off), and they are what finds %s (%s); %s operators count in other "
             "ops here, %s Python in other CPU, and no finding is made of those parts",
             what[unknown][0], unknown == 3 ? "them" : "it", what[unknown][1], its, its);
}

void (*const steps_view_notes[3])(const struct steps_stats *, char *, size_t) = {
    steps_view_phases_note, steps_view_eval_note, steps_view_recompute_note};
