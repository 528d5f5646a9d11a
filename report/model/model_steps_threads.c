/* model_steps_threads: the thread besides the step thread that runs the most Python in the
 * steady steps (steps.thread_hot, model_steps.h). Python runs one thread at a time (the
 * GIL): a thread that logs, aggregates metrics or tokenizes beside the training loop takes
 * the training thread's turns, and the steps read slower in whatever part they wait in (a
 * review's background JSON logger made the steps 9x slower and showed nowhere). From the
 * calls of at least PROF_PY_SPAN_US: a call's self time holds its shorter calls. */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "hashmap.h"
#include "model.h"
#include "model_steps_hot.h"

/* A call that gives the GIL up: an idle wait (a lock, a poll) or a sleep. */
static int threads_gives_up(const struct model_py_func *f)
{
    return f && (model_steps_idle_wait(f) ||
                 (f->kind == PROF_PY_FUNC_C && f->name && strstr(f->name, "time.sleep")));
}

struct threads_open {
    size_t span;
    uint64_t len, children; /* its time in the steady steps, its callees' there */
};

/* The outermost function of the program's own files above node, itself included; else the
 * node's own function (func ids). */
static uint32_t threads_name(const struct model_process *p, const struct model_py_node *node)
{
    uint32_t name = node->func;
    for (int hops = 0; node && hops < 4096; hops++) {
        const struct model_py_func *f = model_python_func(p, node->func);
        if (f && f->kind == PROF_PY_FUNC_PYTHON && model_torch_own_file(f->file))
            name = node->func;
        node = node->parent ? model_python_node(p, node->parent) : NULL;
    }
    return name;
}

/* One thread's Python time in the steady steps (from index warm on) outside calls that give the GIL
 * up, and the name of its work (*name, a func id + 1): the outermost function of the program's own
 * files above its call with the most self time (a thread's target may still run at the end: no span
 * of its own), else that call's function; 0: none. */
static uint64_t threads_busy(const struct model_process *p, uint32_t tid, size_t warm,
                             struct threads_open *stack, uint32_t *name)
{
    size_t n, top = 0;
    const size_t *order = model_steps_spans_in_order(p, tid, &n);
    uint64_t busy = 0, most = 0;
    const struct model_py_node *busiest = NULL;
    struct u64map self; /* node id + 1 -> self ns */
    u64map_init(&self);
    for (size_t k = 0; k <= n; k++) {
        const struct model_py_span *sp = k < n ? &p->py.span_list[order[k]] : NULL;
        while (top && (!sp || p->py.span_list[stack[top - 1].span].end <= sp->start)) {
            struct threads_open *o = &stack[--top];
            const struct model_py_node *node = model_python_node(p, p->py.span_list[o->span].node);
            const struct model_py_func *f = node ? model_python_func(p, node->func) : NULL;
            uint64_t mine = o->len > o->children ? o->len - o->children : 0;
            if (f && !threads_gives_up(f)) {
                busy += mine;
                uint64_t *slot = u64map_slot(&self, (uint64_t)node->id + 1);
                if (!slot)
                    report_oom();
                if ((*slot += mine) > most) {
                    most = *slot;
                    busiest = node;
                }
            }
            if (top)
                stack[top - 1].children += o->len;
        }
        if (!sp)
            break;
        const char *action = model_torch_action_of_node(p, sp->node);
        if (action && !strcmp(action, "backward")) {
            busy = 0; /* the autograd engine's thread: its Python is the training's */
            break;
        }
        uint64_t a = model_ticks_to_monotonic_ns(p, sp->start);
        uint64_t b = model_ticks_to_monotonic_ns(p, sp->end);
        stack[top++] =
            (struct threads_open){order[k], model_steps_inside(&p->steps, warm, a, b), 0};
    }
    u64map_free(&self);
    *name = busiest ? threads_name(p, busiest) + 1 : 0;
    return busy;
}

void model_steps_threads(struct model_process *p, size_t warm, uint64_t per)
{
    struct model_steps *st = &p->steps;
    struct threads_open *stack = malloc((p->py.nspan_list + 1) * sizeof *stack);
    if (!stack)
        report_oom();
    struct u64map done; /* tid + 1 */
    u64map_init(&done);
    uint64_t best = 0;
    uint32_t best_tid = 0, best_name = 0;
    for (size_t i = 0; i < p->py.nspan_list; i++) {
        uint32_t tid = p->py.span_list[i].tid;
        if (tid == st->tid)
            continue;
        uint64_t *slot = u64map_slot(&done, (uint64_t)tid + 1);
        if (!slot)
            report_oom();
        if (*slot)
            continue;
        *slot = 1;
        uint32_t name;
        uint64_t busy = threads_busy(p, tid, warm, stack, &name);
        if (busy > best && name) {
            best = busy;
            best_tid = tid;
            best_name = name;
        }
    }
    u64map_free(&done);
    free(stack);
    if (!best || !per)
        return;
    st->thread_hot = malloc(sizeof *st->thread_hot);
    if (!st->thread_hot)
        report_oom();
    st->thread_hot[0] = (struct model_step_hot){model_steps_hot_text(p, best_name - 1),
                                                report_strdup(""), best / per, best_tid, 0};
    st->nthread_hot = 1;
}
