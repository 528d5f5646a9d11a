/* The intervals a thread's Python calls were not seen (PY_GAP records): while the program
 * runs a profiler of its own (cProfile before 3.12, a debugger), from python_attach.c's
 * hooks; the thread's tree starts over from an empty stack when ours comes back. */
#include <stdint.h>

#include "clock.h"
#include "emit.h"
#include "python_tree.h"
#include "ring.h"
#include "trace_format.h"

static void py_write_gap(uint64_t start, uint64_t end)
{
    struct prof_thread *t = emit_thread();
    if (!t)
        return;
    struct prof_rec_py_gap *rec = ring_reserve(&t->ring, sizeof *rec);
    if (!rec)
        return;
    rec->h.type = PROF_REC_PY_GAP;
    rec->h.size = sizeof *rec;
    rec->reason = PROF_PY_GAP_OTHER_PROFILER;
    rec->start = start;
    rec->end = end;
    ring_commit(&t->ring);
}

/* A gap is written when it opens (end 0) and again when it closes: the reader keeps the
 * closed one. */
void python_gap_begin(void)
{
    struct py_thread *pt = python_tree_self();
    if (!pt || pt->in_gap)
        return;
    pt->in_gap = 1;
    pt->gap_start = prof_clock_ticks();
    py_write_gap(pt->gap_start, 0);
}

/* Ours is the calling thread's profile function: it has a tree and no gap is open. */
int python_profile_is_ours(void)
{
    struct py_thread *pt = python_tree_self();
    return pt && !pt->in_gap;
}

void python_gap_end(void)
{
    struct py_thread *pt = python_tree_self();
    if (!pt || !pt->in_gap)
        return;
    pt->in_gap = 0;
    /* Frames that returned while we were not told: start over from an empty stack. */
    if (pt->depth)
        py_stack_emptied(pt);
    pt->depth = 0;
    pt->overflow = 0;
    pt->drift_used = 0;
    py_write_gap(pt->gap_start, prof_clock_ticks());
}
