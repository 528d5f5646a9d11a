/* The intervals a thread's Python calls were not seen (PY_GAP records): while the program
 * runs a profiler of its own (cProfile before 3.12, a debugger), from python_attach.c's
 * hooks. When ours is back (alone, or in front of the program's), the thread's stack is
 * made to agree with its real frames (python_tree_resync). */
#include <stdint.h>
#include <stdlib.h>

#include "clock.h"
#include "python.h"
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

/* Our stack starts over empty (it could not be made to agree with the real one). */
static void py_stack_restart(struct py_thread *pt)
{
    py_stack_emptied(pt);
    pt->depth = 0;
    pt->overflow = 0;
}

/* The frame below a frame (borrowed), or NULL. */
static py_object *py_frame_back(py_object *f)
{
    if (py.minor <= 10)
        return *(py_object **)((char *)f + 24); /* PyFrameObject.f_back */
    if (!py.FrameGetBack)
        return NULL;
    py_object *back = py.FrameGetBack(f); /* a new reference: the stack holds one */
    py_xdecref(back);
    return back;
}

/* top and the frames below it, outermost first, in *out (malloc'd); their number, or
 * -1. */
static long py_real_frames(py_object *top, py_object ***out)
{
    size_t n = 0, cap = 64;
    py_object **frames = malloc(cap * sizeof *frames);
    for (py_object *f = frames ? top : NULL; f; f = py_frame_back(f)) {
        if (n == cap) {
            py_object **bigger = realloc(frames, 2 * cap * sizeof *frames);
            if (!bigger) {
                free(frames);
                return -1;
            }
            frames = bigger;
            cap *= 2;
        }
        frames[n++] = f;
    }
    if (!frames)
        return -1;
    for (size_t i = 0; i < n / 2; i++) {
        py_object *t = frames[i];
        frames[i] = frames[n - 1 - i];
        frames[n - 1 - i] = t;
    }
    *out = frames;
    return (long)n;
}

/* 0, or -1 when our stack and the real one have no frame in common. */
static int py_resync(struct py_thread *pt, py_object *top, uint64_t now)
{
    if (!pt->depth)
        return 0;
    py_object **frames;
    long n = py_real_frames(top, &frames);
    if (n < 0)
        return -1;
    /* Our outermost Python frame among the real ones (those below it began before we
     * attached), then ours and theirs side by side while they agree. A builtin of ours
     * stays only if a Python frame of ours above it does. */
    long j = -1;
    uint32_t keep = 0;
    for (uint32_t d = 0; d < pt->depth; d++) {
        const struct py_frame *f = &pt->stack[d];
        if (f->tag == f->node->key)
            continue; /* a builtin (its tag is its PyMethodDef, its key too) */
        if (j < 0)
            for (j = 0; j < n && frames[j] != f->tag; j++)
                ;
        else if (j < n && frames[j] == f->tag)
            ;
        else
            break;
        if (j == n)
            break;
        j++;
        keep = d + 1;
    }
    if (!keep) {
        free(frames);
        return -1;
    }
    while (pt->depth > keep)
        python_tree_pop(now);
    for (; j < n; j++)
        python_tree_push(frames[j], now);
    free(frames);
    return 0;
}

void python_gap_resync(py_object *frame, int call, uint64_t now)
{
    struct py_thread *pt = python_tree_self();
    if (!pt)
        return;
    pt->resync = 0;
    if (py_resync(pt, call ? py_frame_back(frame) : frame, now) != 0) {
        py_stack_restart(pt);
    }
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
    pt->drift_used = 0;
    /* Calls and returns we were not told of: at our next event, which comes outside any
     * profile or trace function (this may run inside the program's own), our stack is
     * made to agree with the real one; failing that, it starts over empty. */
    if (pt->depth && !pt->overflow && !py_stack_stale(pt)) {
        pt->resync = 1;
        pt->fast_gen = 0; /* the fast paths wait for it */
    } else if (pt->depth) {
        py_stack_restart(pt);
    }
    py_write_gap(pt->gap_start, prof_clock_ticks());
}
