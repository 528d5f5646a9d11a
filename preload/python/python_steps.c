/* The step functions of PROF_STEPS (window.c): a function is one when it is first named
 * (its code object and file), so that the call tree flags its nodes and, outside the
 * window, the profile callback can tell its returns by code object alone.
 *   default          `step` of a module under torch/optim/ (Optimizer.step's hook wrapper
 *                    and each optimizer's own step), not the lr_scheduler's or swa_utils'
 *   PROF_STEP_FUNC   the Python function of that name (co_name, or co_qualname on 3.11+)
 * Not once the PyTorch layer counts the default steps (window.h, window_steps_by_torch).
 * Everything here runs under the GIL. */
#define _GNU_SOURCE
#include <string.h>

#include "python.h"
#include "settings.h"
#include "window.h"

#define PY_STEP_FUNCS 32

static struct {
    uint32_t func_id;
    const void *code;
} py_step_funcs[PY_STEP_FUNCS];
static int py_nstep_funcs;

static int py_step_matches(const char *name, const char *qualname, const char *path)
{
    if (settings_is_set(SETTING_PROF_STEP_FUNC)) {
        const char *want = settings_string(SETTING_PROF_STEP_FUNC);
        return (name && !strcmp(name, want)) || (qualname && !strcmp(qualname, want));
    }
    return name && !strcmp(name, "step") && strstr(path, "/torch/optim/") &&
           !strstr(path, "lr_scheduler") && !strstr(path, "swa_utils");
}

void python_step_classify(uint32_t func_id, py_object *code, const char *path)
{
    if (!window_steps_by_python() || py_nstep_funcs == PY_STEP_FUNCS)
        return;
    py_object *name = py.GetAttrString(code, "co_name");
    py_object *qual = py.minor >= 11 ? py.GetAttrString(code, "co_qualname") : NULL;
    const char *n = name ? py.AsUTF8(name) : NULL;
    const char *q = qual ? py.AsUTF8(qual) : NULL;
    if (py_step_matches(n, q, path)) {
        py_step_funcs[py_nstep_funcs].func_id = func_id;
        py_step_funcs[py_nstep_funcs].code = code;
        py_nstep_funcs++;
    }
    if (name)
        py.DecRef(name);
    if (qual)
        py.DecRef(qual);
    py.ErrClear();
}

int python_func_step(uint32_t func_id)
{
    for (int i = 0; i < py_nstep_funcs; i++)
        if (py_step_funcs[i].func_id == func_id)
            return 1;
    return 0;
}

int python_code_step(const void *code)
{
    for (int i = 0; i < py_nstep_funcs; i++)
        if (py_step_funcs[i].code == code)
            return 1;
    return 0;
}

int python_step_count(void)
{
    return py_nstep_funcs;
}

const void *python_step_code(int i)
{
    return py_step_funcs[i].code;
}
