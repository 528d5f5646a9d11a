/* Returns that do not pair with the innermost call on a thread's stack, counted by
 * cProfile's rule (python_tree.c's py_leave sends them here): the recursion levels that
 * drift from the frames on the stack, and the calls counted against the tree's own rule. */
#include <stdint.h>

#include "python.h"
#include "python_tree.h"

static inline int py_drifts(const struct py_thread *pt, const void *key)
{
    for (uint32_t i = 0; i < pt->drift_used; i++)
        if (pt->drift[i].key == key)
            return 1;
    return 0;
}

static int32_t *py_drift_slot(struct py_thread *pt, const void *key)
{
    for (uint32_t i = 0; i < pt->drift_used; i++)
        if (pt->drift[i].key == key)
            return &pt->drift[i].level;
    if (pt->drift_used == PY_MAX_DRIFT)
        return NULL;
    pt->drift[pt->drift_used] = (struct py_drift){key, 0};
    pt->fast_gen = 0; /* the fast paths do not look at the drift */
    return &pt->drift[pt->drift_used++].level;
}

static void py_drift_add(struct py_thread *pt, const void *key, int32_t d)
{
    int32_t *level = py_drift_slot(pt, key);
    if (!level) {
        py_note_limits();
        return;
    }
    *level += d;
    if (*level == 0) { /* back in step: drop the entry */
        uint32_t i =
            (uint32_t)(((char *)level - (char *)&pt->drift[0].level) / sizeof pt->drift[0]);
        pt->drift[i] = pt->drift[--pt->drift_used];
    }
}

/* A return that does not pair with the innermost call on our stack (3.11 resumes a
 * coroutine through throw() without a call event, and still reports its return), or the
 * return of a function whose cProfile recursion level has drifted since. cProfile's rule
 * (_lsprof's ptrace_leave_call and Stop): the innermost call ends; if the returning
 * function was ever entered, one call of it is counted with that call's times, as a
 * primitive call when its recursion level (its calls entered minus its returns counted)
 * drops to 0; otherwise nothing is counted. Its level and the ended function's no longer
 * match the frames on the stack: the difference is kept in pt->drift. A call counted
 * against the tree's own rule (recursive when the function is among its callers) goes to a
 * node at the top of the tree: (none, function) for a primitive call, under a second node
 * of the same function for a recursive one. */
/* 0: the return pairs after all (py_leave goes on), 1: done here. */
int python_tree_leave_unpaired(struct py_thread *pt, int kind, py_object *obj, uint64_t now)
{
    const void *key = kind == PROF_PY_FUNC_PYTHON ? (const void *)py_frame_code(obj)
                                                  : ((struct py_cfunction *)obj)->m_ml;
    struct py_frame *f = &pt->stack[pt->depth - 1];
    struct py_node *ended = f->node;
    int paired = ended->key == key;
    if (paired && !py_drifts(pt, key))
        return 0;
    /* Never entered: the call ends uncounted. (cProfile asks its own profiler, one per
     * thread before 3.12; this asks the process: a function entered only in another
     * thread counts here.) */
    if (!paired && !python_func_known(key)) {
        if (!--pt->depth)
            py_stack_emptied(pt);
        py_drift_add(pt, ended->key, 1);
        return 1;
    }
    int32_t below = 0; /* frames of the function under the innermost one */
    for (uint32_t d = 0; d + 1 < pt->depth; d++)
        below += pt->stack[d].node->key == key;
    int32_t *drift = py_drift_slot(pt, key);
    int32_t level = below + paired + (drift ? *drift : 0);
    int primitive = level == 1;
    struct py_node *n = ended;
    if (!paired || primitive != (below == 0)) {
        struct py_node *top = py_node_find(pt, NULL, key, kind, obj);
        n = top && !primitive ? py_node_find(pt, top, key, kind, obj) : top;
    }
    pt->depth--;
    uint64_t dt = now - f->start;
    if (n) {
        if (n != ended && n->cut_mark != pt->cuts) /* a node not on the stack */
            python_tree_cut_entered(pt, n);
        py_add(&n->calls, 1);
        py_add(&n->total, dt);
        py_add(&n->self, dt - f->child);
        if (dt >= python_tree_span_threshold())
            py_emit_span(n, f->start, now, 0);
    }
    if (pt->depth)
        pt->stack[pt->depth - 1].child += dt;
    else
        py_stack_emptied(pt);
    if (!paired) { /* (drift may move here: it is not used after) */
        py_drift_add(pt, ended->key, 1);
        py_drift_add(pt, key, -1);
    }
    return 1;
}

