/* Lightning's action names from an unmodified run: the Trainer wraps every hook, loop step
 * and dataloader fetch in `with self.profiler.profile(name)`, which calls the profiler's
 * start(name) and stop(name) — PassThroughProfiler's empty methods unless the user chose a
 * profiler. The start and stop methods defined in Lightning's profilers package are
 * recognised when their code is first named; each call then writes an ACTION record with
 * the name it was given (read from the frame's first argument after self).
 *
 * The same way, torch.distributed's init_process_group: its rank and world_size arguments
 * name the process's rank when no launcher's variable did (job_rank_from_program). */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "collector.h"
#include "emit.h"
#include "job.h"
#include "python.h"

#define PY_ACTION_FUNCS 32 /* start/stop of every profiler class Lightning ships, twice over */

static struct {
    uint32_t func_id;
    int kind;
} py_action_funcs[PY_ACTION_FUNCS];
static int py_naction_funcs; /* under the GIL */

/* lightning.pytorch (the `lightning` package) and the standalone pytorch_lightning. */
static const char *const py_action_dirs[] = {"/lightning/pytorch/profilers/",
                                             "/pytorch_lightning/profilers/"};

/* torch.distributed's init_process_group: a program that starts its own ranks
 * (torch.multiprocessing.spawn) gives each its rank there, in no variable. */
static const char py_dist_file[] = "torch/distributed/distributed_c10d.py";

void python_action_classify(uint32_t func_id, py_object *code, const char *path)
{
    int in_dir = 0;
    for (size_t i = 0; i < sizeof py_action_dirs / sizeof *py_action_dirs; i++)
        in_dir |= strstr(path, py_action_dirs[i]) != NULL;
    size_t len = strlen(path), k = sizeof py_dist_file - 1;
    int dist = len >= k && !strcmp(path + len - k, py_dist_file);
    if ((!in_dir && !dist) || py_naction_funcs == PY_ACTION_FUNCS)
        return;
    py_object *name = py.GetAttrString(code, "co_name");
    const char *s = name ? py.AsUTF8(name) : NULL;
    int kind = !s                    ? 0
               : dist                ? (!strcmp(s, "init_process_group") ? PY_ACTION_DIST_INIT : 0)
               : !strcmp(s, "start") ? PROF_ACTION_START
               : !strcmp(s, "stop")  ? PROF_ACTION_STOP
                                     : 0;
    if (name)
        py.DecRef(name);
    py.ErrClear();
    if (kind)
        py_action_funcs[py_naction_funcs++] = (typeof(py_action_funcs[0])){func_id, kind};
}

#define PY_PHASE_FUNCS 64
static uint32_t py_phase_funcs[PY_PHASE_FUNCS];
static int py_nphase_funcs; /* under the GIL */

/* The report's phases (report/model/model_torch_actions.c) by file and name, more broadly:
 * a span too many is harmless. */
void python_phase_classify(uint32_t func_id, py_object *code, const char *path)
{
    static const struct {
        const char *file, *names; /* the file's path ends so, or holds it ("/": a folder) */
    } phases[] = {{"torch/nn/modules/module.py", " _call_impl _wrapped_call_impl "},
                  {"torch/_tensor.py", " backward "},
                  {"torch/autograd/__init__.py", " backward "},
                  {"torch/utils/data/dataloader.py", " __next__ "},
                  {"torch/optim/", " step wrapper zero_grad "},
                  {"torch/nn/functional.py", PROF_PY_FUNCTIONAL_LOSSES},
                  /* no_grad and inference_mode: evaluation (report/model/model_steps_eval.c) */
                  {"torch/autograd/grad_mode.py", " __enter__ __exit__ "}};
    size_t len = strlen(path), i = 0;
    for (; i < sizeof phases / sizeof *phases; i++) {
        size_t k = strlen(phases[i].file);
        if (phases[i].file[k - 1] == '/' ? strstr(path, phases[i].file) != NULL
                                         : len >= k && !strcmp(path + len - k, phases[i].file))
            break;
    }
    if (i == sizeof phases / sizeof *phases || py_nphase_funcs == PY_PHASE_FUNCS)
        return;
    py_object *name = py.GetAttrString(code, "co_name");
    const char *s = name ? py.AsUTF8(name) : NULL;
    char key[64];
    if (s && strlen(s) + 3 <= sizeof key) {
        snprintf(key, sizeof key, " %s ", s);
        if (strstr(phases[i].names, key))
            py_phase_funcs[py_nphase_funcs++] = func_id;
    }
    if (name)
        py.DecRef(name);
    py.ErrClear();
}

int python_func_phase(uint32_t func_id)
{
    for (int i = 0; i < py_nphase_funcs; i++)
        if (py_phase_funcs[i] == func_id)
            return 1;
    return 0;
}

int python_func_action(uint32_t func_id)
{
    for (int i = 0; i < py_naction_funcs; i++)
        if (py_action_funcs[i].func_id == func_id)
            return py_action_funcs[i].kind;
    return 0;
}

/* The value of the frame's first argument after self, interned; 0 when it is not a str. */
static uint32_t py_action_name(py_object *frame)
{
    uint32_t sid = 0;
    py_object *code = py.GetAttrString(frame, "f_code");
    py_object *names = code ? py.GetAttrString(code, "co_varnames") : NULL;
    py_object *arg = names ? py.TupleGetItem(names, 1) : NULL; /* borrowed */
    py_object *locals = arg ? py.GetAttrString(frame, "f_locals") : NULL;
    py_object *value = locals ? py.ObjectGetItem(locals, arg) : NULL;
    const char *s = value ? py.AsUTF8(value) : NULL;
    if (s)
        sid = collector_intern(s);
    if (value)
        py.DecRef(value);
    if (locals)
        py.DecRef(locals);
    if (names)
        py.DecRef(names);
    if (code)
        py.DecRef(code);
    return sid;
}

/* The int the frame's local variable name holds, else -1. */
static long py_local_long(py_object *frame, const char *name)
{
    py_object *locals = py.GetAttrString(frame, "f_locals"); /* a dict, or 3.13's proxy */
    py_object *key = locals ? py.UnicodeFromString(name) : NULL;
    py_object *value = key ? py.ObjectGetItem(locals, key) : NULL;
    long n = value ? py.AsLong(value) : -1;
    py_xdecref(value);
    py_xdecref(key);
    py_xdecref(locals);
    py.ErrClear();
    return n;
}

void python_action_called(int kind, py_object *frame, uint64_t now)
{
    struct prof_thread *t = emit_thread();
    int dist = kind == PY_ACTION_DIST_INIT; /* who this process is: recording or not */
    if (!dist && (!t || !atomic_load_explicit(&prof_recording, memory_order_relaxed)))
        return;
    /* The program may be between raising and catching an exception: keep it intact. */
    py_object *et, *ev, *etb;
    py.ErrFetch(&et, &ev, &etb);
    if (!frame)
        frame = py.EvalGetFrame(); /* borrowed */
    uint32_t sid = frame && !dist ? py_action_name(frame) : 0;
    if (frame && dist) /* rank=-1 (env://): a launcher's variables name it */
        job_rank_from_program(py_local_long(frame, "rank"), py_local_long(frame, "world_size"));
    py.ErrClear();
    py.ErrRestore(et, ev, etb);
    if (!sid)
        return;
    struct prof_rec_action *rec = ring_reserve(&t->ring, sizeof *rec);
    if (!rec)
        return; /* counted as lost */
    rec->h.type = PROF_REC_ACTION;
    rec->h.size = sizeof *rec;
    rec->kind = (uint16_t)kind;
    rec->source = PROF_ACTION_LIGHTNING;
    rec->name_sid = sid;
    rec->reserved = 0;
    rec->ticks = now;
    ring_commit(&t->ring);
}
