/* model_torch_actions: the actions of a plain PyTorch training loop, read off the Python
 * call trees as Lightning's SimpleProfiler names them for its own loop:
 *   forward          Module._call_impl (torch/nn/modules/module.py): a model (or loss) call
 *   backward         Tensor.backward (torch/_tensor.py), torch.autograd.backward
 *   optimizer_step   Optimizer.step and its hook wrapper (torch/optim/optimizer.py), the step
 *                    of torch.optim's optimizers (torch.optim.sgd, ...)
 *   dataloader_next  _BaseDataLoaderIter.__next__ (torch/utils/data/dataloader.py): the wait
 *                    for the next batch
 * A node counts (its calls and cumulative time) when no ancestor matches the same action,
 * as cProfile's cumtime counts a recursion once: a submodule's _call_impl is part of its
 * parent's forward, SGD.step inside the wrapper part of one optimizer step. GPU time: the
 * kernels launched with the counted node or a descendant innermost.
 * forward is the model's: a _call_impl inside the data pipeline (under a dataloader_next
 * node or any function of torch/utils/data: fetch, collate, a Dataset's __getitem__ called
 * from there) is a transform applied to samples, not a forward; nor is any call in a
 * DataLoader worker process (role worker, the last META value). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"

enum model_builtin {
    MODEL_BUILTIN_FORWARD,
    MODEL_BUILTIN_BACKWARD,
    MODEL_BUILTIN_OPTIMIZER_STEP,
    MODEL_BUILTIN_DATALOADER_NEXT,
    MODEL_BUILTIN_COUNT
};

static const char *const model_builtin_names[MODEL_BUILTIN_COUNT] = {
    "forward", "backward", "optimizer_step", "dataloader_next"};

static int model_builtin_eq(const char *s, const char *want)
{
    return s && !strcmp(s, want);
}

static int model_builtin_prefix(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

/* Whether file is, or ends with "/" + tail: "torch/_tensor.py" in any site-packages. */
static int model_builtin_file(const char *file, const char *tail)
{
    if (!file)
        return 0;
    size_t n = strlen(file), t = strlen(tail);
    return n >= t && !strcmp(file + n - t, tail) && (n == t || file[n - t - 1] == '/');
}

/* The module, or a file under torch/ spelled as the module it would be. */
static int model_builtin_in(const struct model_py_func *f, const char *module, const char *file)
{
    return model_builtin_eq(f->module, module) || model_builtin_file(f->file, file);
}

/* Whether a function is part of the data pipeline: torch.utils.data and its files. */
static int model_builtin_in_data(const struct model_py_func *f)
{
    if (!f)
        return 0;
    if (model_builtin_eq(f->module, "torch.utils.data") ||
        model_builtin_prefix(f->module, "torch.utils.data."))
        return 1;
    return f->file && (model_builtin_prefix(f->file, "torch/utils/data/") ||
                       strstr(f->file, "/torch/utils/data/"));
}

/* Whether the process is a DataLoader worker (or another worker of a rank). */
static int model_builtin_in_worker(const struct model_process *p)
{
    for (size_t i = p->nmeta; i-- > 0;)
        if (!strcmp(p->meta[i].key, "role"))
            return !strcmp(p->meta[i].value, "worker");
    return 0;
}

/* The action a function is, or -1. */
static int model_builtin_of(const struct model_py_func *f)
{
    if (!f || f->kind != PROF_PY_FUNC_PYTHON || !f->name)
        return -1;
    const char *name = f->name;
    if (!strcmp(name, "_call_impl") &&
        model_builtin_in(f, "torch.nn.modules.module", "torch/nn/modules/module.py"))
        return MODEL_BUILTIN_FORWARD;
    if (!strcmp(name, "backward") &&
        (model_builtin_eq(f->qualname, "Tensor.backward") ||
         model_builtin_in(f, "torch._tensor", "torch/_tensor.py") ||
         model_builtin_in(f, "torch.autograd", "torch/autograd/__init__.py")))
        return MODEL_BUILTIN_BACKWARD;
    if (!strcmp(name, "__next__") &&
        (model_builtin_eq(f->qualname, "_BaseDataLoaderIter.__next__") ||
         model_builtin_in(f, "torch.utils.data.dataloader", "torch/utils/data/dataloader.py")))
        return MODEL_BUILTIN_DATALOADER_NEXT;
    /* The learning-rate schedulers' step (torch.optim.lr_scheduler) is not an optimizer's. */
    if (model_builtin_prefix(f->module, "torch.optim.lr_scheduler") ||
        model_builtin_prefix(f->module, "torch.optim.swa_utils"))
        return -1;
    if (model_builtin_eq(f->qualname, "Optimizer.step") ||
        (!strcmp(name, "step") && (model_builtin_eq(f->module, "torch.optim") ||
                                   model_builtin_prefix(f->module, "torch.optim."))) ||
        ((!strcmp(name, "wrapper") || !strcmp(name, "step")) &&
         model_builtin_in(f, "torch.optim.optimizer", "torch/optim/optimizer.py") &&
         (!f->qualname || strstr(f->qualname, "step"))))
        return MODEL_BUILTIN_OPTIMIZER_STEP;
    return -1;
}

/* Walking from a node up to the root: the outermost action seen, and whether a data
 * node was seen above (later than) the outermost forward, which makes it no forward. */
struct model_builtin_walk {
    int outer;         /* the outermost action so far, or -1 */
    int forward_valid; /* the outermost forward so far has no data node above it (yet) */
};

static void model_builtin_step(struct model_builtin_walk *w, int action, int data)
{
    if (action == MODEL_BUILTIN_FORWARD)
        w->forward_valid = 1;
    else if (data)
        w->forward_valid = 0;
    if (action >= 0)
        w->outer = action;
}

static int model_builtin_data(const struct model_py_func *f, int action)
{
    return action == MODEL_BUILTIN_DATALOADER_NEXT || model_builtin_in_data(f);
}

const char *model_torch_action_of_node(const struct model_process *p, uint32_t node_id)
{
    struct model_builtin_walk w = {-1, 0};
    int outer_other = -1; /* the outermost action other than forward */
    size_t steps = 0;
    for (const struct model_py_node *n = node_id ? model_python_node(p, node_id) : NULL;
         n && steps++ <= p->py.nnodes; n = n->parent ? model_python_node(p, n->parent) : NULL) {
        const struct model_py_func *f = model_python_func(p, n->func);
        int a = model_builtin_of(f);
        model_builtin_step(&w, a, model_builtin_data(f, a));
        if (a >= 0 && a != MODEL_BUILTIN_FORWARD)
            outer_other = a;
    }
    /* The outermost wins, as in the actions table; a forward that is none does not. */
    if (w.outer == MODEL_BUILTIN_FORWARD && (!w.forward_valid || model_builtin_in_worker(p)))
        w.outer = outer_other;
    return w.outer >= 0 ? model_builtin_names[w.outer] : NULL;
}

static void model_torch_actions_finish(struct model_process *p)
{
    const struct model_python *py = &p->py;
    if (!py->nnodes)
        return;
    /* The action of each node, or -1; whether it is part of the data pipeline. */
    int *action = malloc(py->nnodes * sizeof *action);
    char *data = malloc(py->nnodes);
    if (!action || !data)
        report_oom();
    int any = 0;
    for (size_t i = 0; i < py->nnodes; i++) {
        const struct model_py_func *f = model_python_func(p, py->nodes[i].func);
        action[i] = model_builtin_of(f);
        data[i] = (char)model_builtin_data(f, action[i]);
        any |= action[i] >= 0;
    }
    int worker = model_builtin_in_worker(p);
    if (!any) {
        free(action);
        free(data);
        return;
    }
    struct model_action acc[MODEL_BUILTIN_COUNT];
    memset(acc, 0, sizeof acc);
    uint64_t top_ns = 0; /* the outermost actions' nodes: the denominator of shares */
    for (size_t i = 0; i < py->nnodes; i++) {
        const struct model_py_node *n = &py->nodes[i];
        if (!n->defined)
            continue;
        /* The outermost node of each action on the path from the root to n. */
        size_t outer[MODEL_BUILTIN_COUNT];
        for (int a = 0; a < MODEL_BUILTIN_COUNT; a++)
            outer[a] = SIZE_MAX;
        struct model_builtin_walk w = {-1, 0};
        size_t k = i, steps = 0;
        int nested = 0; /* an ancestor of n runs an action */
        for (;;) {
            model_builtin_step(&w, action[k], data[k]);
            if (action[k] >= 0)
                outer[action[k]] = k;
            nested |= k != i && action[k] >= 0;
            const struct model_py_node *up;
            /* steps: a corrupt tree with a cycle ends the walk. */
            if (!py->nodes[k].parent || ++steps > py->nnodes ||
                !(up = model_python_node(p, py->nodes[k].parent)))
                break;
            k = (size_t)(up - py->nodes);
        }
        if (action[i] >= 0 && !nested)
            top_ns += n->total_ns;
        if (!w.forward_valid || worker)
            outer[MODEL_BUILTIN_FORWARD] = SIZE_MAX;
        for (int a = 0; a < MODEL_BUILTIN_COUNT; a++) {
            if (outer[a] == SIZE_MAX)
                continue;
            if (outer[a] == i) {
                acc[a].calls += n->calls;
                acc[a].total_ns += n->total_ns;
            }
            acc[a].gpu_ns += n->gpu_ns;
            acc[a].kernels += n->gpu_kernels;
        }
    }
    free(action);
    free(data);
    struct model_torch *t = &p->torch;
    size_t cap = 0;
    t->builtin_top_ns = top_ns;
    for (int a = 0; a < MODEL_BUILTIN_COUNT; a++) {
        if (!acc[a].calls)
            continue;
        t->builtin = report_grow(t->builtin, &cap, t->nbuiltin + 1, sizeof *t->builtin);
        acc[a].name = report_strdup(model_builtin_names[a]);
        acc[a].source = MODEL_ACTION_BUILTIN;
        t->builtin[t->nbuiltin++] = acc[a];
    }
}

const struct model_part model_torch_actions_part = {
    .name = "torch_actions",
    .finish = model_torch_actions_finish,
};
