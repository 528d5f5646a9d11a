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
 * forward is the model's, called from the training step: a _call_impl inside the data
 * pipeline (under a dataloader_next node or any function of torch/utils/data: fetch,
 * collate, a Dataset's __getitem__ called from there) is a transform applied to samples, not
 * a forward; nor is any call in a DataLoader worker process (role worker, the last META
 * value); nor one inside a backward: activation checkpointing's recompute, which runs under
 * the backward on a CPU and from the autograd engine's callbacks on its device threads on a
 * GPU (see model_builtin_engine). Its calls and time are backward's, as the steps count them;
 * counted as forwards too, a checkpointed model read forward 200 calls for 40 steps and the
 * shares added up to 119 %. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"
#include "model_steps_find.h"

enum model_builtin {
    MODEL_BUILTIN_FORWARD,
    MODEL_BUILTIN_BACKWARD,
    MODEL_BUILTIN_OPTIMIZER_STEP,
    MODEL_BUILTIN_DATALOADER_NEXT,
    MODEL_BUILTIN_COUNT,
    /* No action: Python the autograd engine calls inside a backward (model_builtin_engine).
     * It opens a backward on the paths below it that counts no call of its own. */
    MODEL_BUILTIN_ENGINE = MODEL_BUILTIN_COUNT
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

/* Whether the autograd engine calls f back inside a backward, on the thread that runs the
 * backward's nodes: the step thread on a CPU (under Tensor.backward), a device thread of the
 * engine on a GPU, where nothing above it says backward. Two of them recompute forwards
 * (activation checkpointing): an autograd.Function's backward, which BackwardCFunction.apply
 * calls (the reentrant checkpoint's CheckpointFunction.backward, DeepSpeed's and Megatron's
 * alike), and the non-reentrant checkpoint's saved-tensor unpack hook (unpack in torch 1.13,
 * unpack_hook in 2.x). Function.apply, the forward side of a Function, is another apply of
 * the same file: the qualified name tells them apart. */
static int model_builtin_engine(const struct model_py_func *f)
{
    if (!strcmp(f->name, "apply"))
        return model_builtin_eq(f->qualname, "BackwardCFunction.apply") &&
               model_builtin_in(f, "torch.autograd.function", "torch/autograd/function.py");
    return model_builtin_prefix(f->name, "unpack") &&
           model_builtin_in(f, "torch.utils.checkpoint", "torch/utils/checkpoint.py");
}

/* The action a function is, MODEL_BUILTIN_ENGINE, or -1. */
static int model_builtin_of(const struct model_py_func *f)
{
    if (!f || f->kind != PROF_PY_FUNC_PYTHON || !f->name)
        return -1;
    const char *name = f->name;
    if (model_builtin_engine(f))
        return MODEL_BUILTIN_ENGINE;
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

static int model_builtin_data(const struct model_py_func *f, int action)
{
    return action == MODEL_BUILTIN_DATALOADER_NEXT || model_builtin_in_data(f);
}

/* What the path from the root to a node holds, made from its parent's (top-down: one pass
 * over the nodes, however deep the trees): the outermost node of each action (an engine
 * callback's for backward), the outermost action other than forward, and which the
 * outermost forward, backward or data node is: a forward counts only when it is the
 * forward (one below a data node is a transform, one below a backward a recompute). */
enum { PATH_FD_NONE, PATH_FD_FORWARD, PATH_FD_DATA, PATH_FD_BACKWARD };
struct model_builtin_path {
    uint32_t outer[MODEL_BUILTIN_COUNT]; /* node index + 1, 0: none */
    int8_t outermost;                    /* the outermost action, or -1 */
    int8_t outer_other;                  /* the outermost action other than forward, or -1 */
    uint8_t fd;                          /* PATH_FD_* */
    uint8_t done;
};

static void model_builtin_path_of(struct model_builtin_path *x, const struct model_builtin_path *up,
                                  size_t i, int action, int data)
{
    if (up)
        *x = *up;
    else
        *x = (struct model_builtin_path){{0}, -1, -1, PATH_FD_NONE, 0};
    if (action == MODEL_BUILTIN_ENGINE)
        action = MODEL_BUILTIN_BACKWARD;
    if (action >= 0 && !x->outer[action])
        x->outer[action] = (uint32_t)i + 1;
    if (action >= 0 && x->outermost < 0)
        x->outermost = (int8_t)action;
    if (action >= 0 && action != MODEL_BUILTIN_FORWARD && x->outer_other < 0)
        x->outer_other = (int8_t)action;
    if (x->fd == PATH_FD_NONE)
        x->fd = action == MODEL_BUILTIN_FORWARD    ? PATH_FD_FORWARD
                : action == MODEL_BUILTIN_BACKWARD ? PATH_FD_BACKWARD
                : data                             ? PATH_FD_DATA
                                                   : PATH_FD_NONE;
    x->done = 1;
}

/* The paths of every node (n of them), each after its parent's; NULL: none. */
static struct model_builtin_path *model_builtin_paths(const struct model_process *p,
                                                      const int *action, const char *data)
{
    const struct model_python *py = &p->py;
    struct model_builtin_path *x = calloc(py->nnodes, sizeof *x);
    size_t *chain = malloc(py->nnodes * sizeof *chain);
    if (!x || !chain)
        report_oom();
    for (size_t i = 0; i < py->nnodes; i++) {
        /* the ancestors not done yet, innermost first; a corrupt tree's cycle ends it */
        size_t n = 0, k = i;
        const struct model_builtin_path *up = NULL;
        while (!x[k].done && n < py->nnodes) {
            chain[n++] = k;
            const struct model_py_node *parent =
                py->nodes[k].parent ? model_python_node(p, py->nodes[k].parent) : NULL;
            if (!parent)
                break;
            k = (size_t)(parent - py->nodes);
            if (x[k].done) {
                up = &x[k];
                break;
            }
        }
        while (n-- > 0) {
            size_t c = chain[n];
            model_builtin_path_of(&x[c], up, c, action[c], data[c]);
            up = &x[c];
        }
    }
    free(chain);
    return x;
}

/* The action of a path: the outermost (backward under an engine callback); a forward that
 * is none (a data node above it, or a worker process) gives way to the outermost other
 * action; under an optimizer step, its closure's backward and forward (LBFGS, Lightning's
 * automatic optimization: optimizer.step(closure) runs them inside the step; counted as the
 * optimizer's, a review's closure loop read 100 % optimizer, forward and backward 0, for
 * the 97 % they took). */
static int model_builtin_path_action(const struct model_builtin_path *x, int worker)
{
    int forward = x->fd == PATH_FD_FORWARD && !worker;
    if (x->outermost == MODEL_BUILTIN_OPTIMIZER_STEP) {
        if (x->outer[MODEL_BUILTIN_BACKWARD])
            return MODEL_BUILTIN_BACKWARD;
        if (x->outer[MODEL_BUILTIN_FORWARD] && forward)
            return MODEL_BUILTIN_FORWARD;
    }
    if (x->outermost == MODEL_BUILTIN_FORWARD && !forward)
        return x->outer_other;
    return x->outermost;
}

/* The action of every node (py.node_action), and the paths the actions table needs. */
static struct model_builtin_path *model_builtin_node_actions(struct model_process *p,
                                                             const int *action, const char *data)
{
    struct model_builtin_path *path = model_builtin_paths(p, action, data);
    int worker = model_builtin_in_worker(p);
    const struct model_python *py = &p->py;
    free(p->py.node_action);
    free(p->py.node_recompute);
    free(p->py.node_phase);
    p->py.node_action = malloc(py->nnodes ? py->nnodes : 1);
    p->py.node_recompute = malloc(py->nnodes ? py->nnodes : 1);
    p->py.node_phase = malloc(py->nnodes ? py->nnodes : 1);
    int8_t *loss = malloc(py->nfuncs + 1); /* per function: a functional loss */
    if (!py->node_action || !py->node_recompute || !py->node_phase || !loss)
        report_oom();
    for (size_t j = 0; j < py->nfuncs; j++)
        loss[j] = (int8_t)model_steps_func_is_loss(&py->funcs[j]);
    loss[py->nfuncs] = 0; /* a function without its record */
    for (size_t i = 0; i < py->nnodes; i++) {
        const struct model_builtin_path *x = &path[i];
        int a = model_builtin_path_action(x, worker);
        p->py.node_action[i] = (int8_t)a;
        uint64_t fv = idmap_get(&py->func_index, py->nodes[i].func);
        p->py.node_phase[i] = (int8_t)(a >= 0 ? model_steps_action_phase(model_builtin_names[a])
                                       : loss[fv ? fv - 1 : py->nfuncs] ? MODEL_STEP_FORWARD
                                                                        : -1);
        /* a forward below the path's first backward: recomputed in it */
        p->py.node_recompute[i] = a == MODEL_BUILTIN_BACKWARD && x->fd == PATH_FD_BACKWARD &&
                                  x->outer[MODEL_BUILTIN_FORWARD];
    }
    free(loss);
    return path;
}

/* Each node's function: its action, MODEL_BUILTIN_ENGINE, or -1; whether it is part of the
 * data pipeline. 1 when any node has one. Worked out once per function: many nodes share one. */
static int model_builtin_funcs(const struct model_process *p, int *action, char *data)
{
    const struct model_python *py = &p->py;
    int *func_action = malloc((py->nfuncs + 1) * sizeof *func_action);
    char *func_data = malloc(py->nfuncs + 1);
    if (!func_action || !func_data)
        report_oom();
    for (size_t j = 0; j < py->nfuncs; j++) {
        func_action[j] = model_builtin_of(&py->funcs[j]);
        func_data[j] = (char)model_builtin_data(&py->funcs[j], func_action[j]);
    }
    func_action[py->nfuncs] = model_builtin_of(NULL); /* a node whose function is unknown */
    func_data[py->nfuncs] = (char)model_builtin_data(NULL, func_action[py->nfuncs]);
    int any = 0;
    for (size_t i = 0; i < py->nnodes; i++) {
        uint64_t v = idmap_get(&py->func_index, py->nodes[i].func);
        size_t j = v ? (size_t)v - 1 : py->nfuncs;
        action[i] = func_action[j];
        data[i] = func_data[j];
        any |= action[i] >= 0;
    }
    free(func_action);
    free(func_data);
    return any;
}

/* What model_torch_node_actions found, kept for the actions table (the tree and the
 * functions do not change between the two). */
struct model_builtin_memo {
    size_t nnodes;
    int any;
    int *action;
    char *data;
    struct model_builtin_path *path;
};

void model_torch_node_actions_free(struct model_process *p)
{
    struct model_builtin_memo *m = p->py.builtin_memo;
    if (!m)
        return;
    free(m->action);
    free(m->data);
    free(m->path);
    free(m);
    p->py.builtin_memo = NULL;
}

static struct model_builtin_memo *model_builtin_memo_make(struct model_process *p)
{
    struct model_builtin_memo *m = calloc(1, sizeof *m);
    if (!m)
        report_oom();
    m->nnodes = p->py.nnodes;
    m->action = malloc(m->nnodes * sizeof *m->action);
    m->data = malloc(m->nnodes);
    if (!m->action || !m->data)
        report_oom();
    m->any = model_builtin_funcs(p, m->action, m->data);
    m->path = model_builtin_node_actions(p, m->action, m->data);
    return m;
}

void model_torch_node_actions(struct model_process *p)
{
    model_torch_node_actions_free(p);
    if (!p->py.nnodes)
        return;
    p->py.builtin_memo = model_builtin_memo_make(p);
}

const char *model_torch_action_of_node(const struct model_process *p, uint32_t node_id)
{
    uint64_t slot = node_id ? idmap_get(&p->py.node_index, node_id) : 0;
    if (!slot || !p->py.node_action || slot - 1 >= p->py.nnodes)
        return NULL;
    int a = p->py.node_action[slot - 1];
    return a >= 0 ? model_builtin_names[a] : NULL;
}

int model_torch_node_recomputes(const struct model_process *p, uint32_t node_id)
{
    uint64_t slot = node_id ? idmap_get(&p->py.node_index, node_id) : 0;
    return slot && p->py.node_recompute && slot - 1 < p->py.nnodes &&
           p->py.node_recompute[slot - 1];
}

static void model_torch_actions_finish(struct model_process *p)
{
    const struct model_python *py = &p->py;
    if (!py->nnodes)
        return;
    /* The action of each node, or -1; whether it is part of the data pipeline. */
    struct model_builtin_memo *m = py->builtin_memo;
    if (!m || m->nnodes != py->nnodes) {
        model_torch_node_actions(p);
        m = py->builtin_memo;
    }
    const int *action = m->action;
    const struct model_builtin_path *path = m->path;
    int any = m->any;
    int worker = model_builtin_in_worker(p);
    struct model_action acc[MODEL_BUILTIN_COUNT];
    memset(acc, 0, sizeof acc);
    uint64_t top_ns = 0; /* the outermost actions' nodes: the denominator of shares */
    for (size_t i = 0; i < py->nnodes && any; i++) {
        const struct model_py_node *n = &py->nodes[i];
        const struct model_builtin_path *x = &path[i];
        if (!n->defined)
            continue;
        /* an ancestor of n runs an action: the outermost is not n */
        int nested = x->outermost >= 0 && x->outer[x->outermost] != i + 1;
        /* (an engine callback's time is its backward's, which a thread that waits for it
         * runs: not a second time) */
        if (action[i] >= 0 && action[i] < MODEL_BUILTIN_COUNT && !nested)
            top_ns += n->total_ns;
        for (int a = 0; a < MODEL_BUILTIN_COUNT; a++) {
            uint32_t outer = x->outer[a];
            if (!outer || (a == MODEL_BUILTIN_FORWARD && (x->fd != PATH_FD_FORWARD || worker)))
                continue;
            if (outer == i + 1 && action[i] == a) { /* (an engine callback counts none) */
                acc[a].calls += n->calls;
                acc[a].total_ns += n->total_ns;
            }
            acc[a].gpu_ns += n->gpu_ns;
            acc[a].kernels += n->gpu_kernels;
        }
    }
    model_torch_node_actions_free(p);
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
