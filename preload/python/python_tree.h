/* The Python call trees' shared parts (private to preload/python): the per-thread tree
 * and stack that python_tree.c builds in the interpreter's callbacks, and that
 * python_tree_drain.c writes out, frees and resets from the collector's side. */
#ifndef PROF_PYTHON_TREE_H
#define PROF_PYTHON_TREE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "python.h"
#include "trace_format.h"
#include "window.h"

/* The call stack starts at PY_STACK_FRAMES frames and doubles as calls go deeper, up to
 * PY_MAX_DEPTH (512 MiB of frames: deeper than any interpreter's C stack or recursion
 * limit allows in practice); calls beyond it are counted as not counted (a NOTE record). */
#define PY_STACK_FRAMES 4096
#define PY_MAX_DEPTH (1u << 24)
#define PY_CHUNK_NODES 1024
#define PY_MAX_CHUNKS 4096
#define PY_MAX_DRIFT 32
/* Of the step boundaries up to it some are cut through the ring; of the others only the
 * latest is kept (python_tree_cuts.c) */
#define PY_CUT_RING_MAX 32

struct py_node {
    uint32_t id;
    uint32_t func_id;
    const void *key; /* code object, or PyMethodDef of a builtin */
    struct py_node *parent;
    struct py_node *last_child; /* the child found last: loops call the same one again */
    /* the sibling called after this node the last time: a loop's body calls the same
     * sequence of functions again (the owner's; a guess, checked by its key) */
    struct py_node *next_call;
    _Atomic uint64_t calls, total, self, api_calls, api_ticks;
    uint64_t written_calls, written_api_calls; /* the collector's */
    /* its function starts or stops a Lightning action (python_actions.c), and/or
     * (PY_NODE_STEP) ends a step of PROF_STEPS (python_steps.c), and/or (PY_NODE_PHASE) is a
     * training phase's */
    uint8_t action;
    /* Training-step cuts (python_tree_cuts.c), the owner's: py_thread.cuts when the counts
     * at that cut were taken (in the padding: the collector's pass over every node reads no
     * more bytes). */
    uint32_t cut_mark;
};
_Static_assert(sizeof(struct py_node) == 104, "the cuts' fields fit in the node's padding");
#define PY_NODE_STEP 0x80
#define PY_NODE_PHASE 0x40 /* a training phase's function (python_func_phase) */

struct py_frame {
    struct py_node *node;
    uint64_t start;
    uint64_t child;  /* ticks spent in calls made from this frame */
    const void *tag; /* setprofile: the frame object, or the builtin's PyMethodDef */
};

struct py_thread {
    struct py_thread *_Atomic next;
    uint32_t tid;
    _Atomic int exited;
    uint32_t depth, overflow;
    uint32_t stack_cap; /* frames that stack holds now */
    struct py_frame *stack;
    /* the prof_state_gen at which a full path found py_fast_ok true (0: not armed): the
     * fast paths run while it is current (python_tree.c); beside depth and stack, which
     * they read too */
    uint64_t fast_gen;
    struct py_node *root_last; /* last_child of the (virtual) root */
    struct py_node *chunks[PY_MAX_CHUNKS];
    _Atomic uint32_t node_count; /* published: nodes [0, node_count) are initialized */
    uint32_t nodes_defined;      /* the collector's: PY_NODE records written */
    /* The collector's (python_tree_drain.c): the nodes a pass between two full ones reads,
     * those that changed at the last full pass or were made since (nhot of them; hot_all:
     * too many to list, every pass reads them all) */
    uint32_t *hot;
    uint32_t nhot;
    int hot_all;
    /* (parent, key) -> node, open addressing; the owning thread's only. */
    struct py_node **table;
    uint32_t table_mask, table_used;
    uint64_t gap_start;
    int in_gap;
    int resync; /* a gap ended: the stack is made to agree with the real one at the next event */
    uint32_t step_depth; /* step-function calls on the stack (the outermost ends a step) */
    uint32_t epoch;      /* window_closings when the stack last turned non-empty */
    /* Functions whose cProfile recursion level differs from their frames on our stack,
     * after returns that did not pair with the innermost call (python_leave_unpaired). */
    uint32_t drift_used;
    struct py_drift {
        const void *key;
        int32_t level;
    } drift[PY_MAX_DRIFT];
    /* Training-step cuts (python_tree_cuts.c), numbered by the step boundaries: the latest
     * cut taken; the boundaries seen; the latest cut through the ring; the latest cut not
     * through the ring (cut_kept, at cut_kept_ticks; 0: none) and its records, kept for the
     * collector to write when the process or the thread ends: cut_log_len of them in chunks
     * of PY_CHUNK_NODES; cut_gen, odd while the owner takes such a cut; cut_failed: 1 when a
     * record could not be kept or written (no cut is taken any more), 2 once the collector
     * said so. */
    uint32_t cuts, cut_bounds, cut_ringed;
    uint32_t cut_kept, cut_kept_written, cut_log_written; /* the latter two the collector's */
    uint64_t cut_kept_ticks;
    struct prof_rec_py_cut_stats *cut_log[PY_MAX_CHUNKS];
    _Atomic uint32_t cut_log_len, cut_gen;
    _Atomic int cut_failed;
};

/* Threads with frames on their stack entered since the window's latest closing
 * (python_tree_frames_open), counted when a stack turns empty or not: walking the threads
 * would race with the collector freeing exited ones. (epoch << 32) | count, epoch being
 * window_closings when they were counted: a closing makes every stack of an earlier epoch
 * stale (its frames end at that closing, at the thread's next event) and the count 0 at
 * once, so that a thread blocked with frames of the window keeps no one's hook on.
 * Atomic: a thread's exit (its key's destructor) runs without the GIL. */
extern _Atomic uint64_t python_tree_open;

static inline void py_stack_emptied(struct py_thread *pt)
{
    uint64_t w = atomic_load(&python_tree_open);
    while ((uint32_t)(w >> 32) == pt->epoch && (uint32_t)w &&
           !atomic_compare_exchange_weak(&python_tree_open, &w, w - 1))
        ;
}

/* This thread's stack turned non-empty: counted in the current epoch. */
static inline void py_stack_opened(struct py_thread *pt)
{
    unsigned cur = atomic_load(&window_closings);
    uint64_t w = atomic_load(&python_tree_open), v;
    do
        v = (uint32_t)(w >> 32) == cur ? w + 1 : ((uint64_t)cur << 32) | 1;
    while (!atomic_compare_exchange_weak(&python_tree_open, &w, v));
    pt->epoch = cur;
}

/* Frames entered before the window's latest closing are on this thread's stack. */
static inline int py_stack_stale(const struct py_thread *pt)
{
    return pt->depth && pt->epoch != atomic_load_explicit(&window_closings, memory_order_relaxed);
}

/* Every thread's tree, newest first (pushed by the threads, unlinked by the collector). */
extern struct py_thread *_Atomic python_tree_threads;
/* Held while python_tree_end_stale_stacks walks the threads and while the collector frees
 * an ended one. */
extern pthread_mutex_t python_tree_lock;

/* The calling thread's tree, or NULL. */
struct py_thread *python_tree_self(void);
/* In the thread under the GIL: a Python frame entered unseen starts now; the innermost
 * frame of ours returned unseen and ends now (python_tree_resync, after a gap). */
void python_tree_push(py_object *frame, uint64_t now);
void python_tree_pop(uint64_t now);
/* python_events.c, in the thread under the GIL: the window opened in a pending call run at
 * the very start of frame's call, whose start event went by while the events were off:
 * the call starts now (profile: entered as the profile function enters calls, not as
 * sys.monitoring's callbacks do). */
void python_tree_enter_started(py_object *frame, int profile);
/* Ends the frames of an earlier window on pt's stack at that window's closing. */
void python_tree_close_at_edge(struct py_thread *pt);
/* The collector's source: writes the trees' new nodes and counts, frees ended threads. */
void python_tree_drain(int fresh, int last);
/* Threads whose tree ended: each makes the collector's next pass a full one. */
extern _Atomic unsigned python_tree_exits;

/* python_tree.c's, for python_tree_unpaired.c: the node of (parent, key), made if new
 * (NULL beyond the limits, said once by py_note_limits); a call's span on the timeline
 * (how: PY_SPAN_EDGE, one that ended at the window's closing; PY_SPAN_KEPT, a phase's
 * outermost call, in the ring's kept room if need be); the spans' threshold in ticks. */
struct py_node *py_node_find(struct py_thread *pt, struct py_node *parent, const void *key,
                             int kind, py_object *obj);
void py_note_limits(void);
enum { PY_SPAN_EDGE = 1, PY_SPAN_KEPT = 2 };
void py_emit_span(struct py_node *n, uint64_t start, uint64_t end, int how);
uint64_t python_tree_span_threshold(void);
/* python_tree_unpaired.c: a return that may not pair with the innermost call (see there):
 * 0 when it pairs after all (the caller goes on), 1 when counted there. */
int python_tree_leave_unpaired(struct py_thread *pt, int kind, py_object *obj, uint64_t now);

/* A counter only its owner thread writes (the collector reads it). */
static inline void py_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

/* python_tree_cuts.c. A node is entered for the first time since pt's last cut: its
 * counts now are those at that cut. */
void python_tree_cut_entered(struct py_thread *pt, struct py_node *n);
/* The collector's: the cut pt keeps, written when the process (last) or the thread ends. */
void python_tree_cut_drain(struct py_thread *pt, int last);
/* In a forked child: no cut taken yet (count: the thread's nodes). Freeing the thread. */
void python_tree_cut_reset(struct py_thread *pt, uint32_t count);
void python_tree_cut_free(struct py_thread *pt);
/* Sets prof_py_cut. */
void python_tree_cuts_init(void);

/* A Python frame's code object (borrowed). */
/* 3.11: PyFrameObject.f_frame (after PyObject_HEAD and f_back) points to the
 * _PyInterpreterFrame, whose f_code follows f_func, f_globals, f_builtins, f_locals. Read
 * directly once the first frame showed the layout agrees with PyFrame_GetCode. */
#define PY311_FRAME_F_FRAME 24
#define PY311_IFRAME_F_CODE 32
extern int py_frame_layout_checked, py_frame_layout_direct;

static inline py_object *py_frame_code_api(py_object *frame)
{
    /* a new reference; the frame holds another, so dropping ours at once is safe */
    py_object *code = py.FrameGetCode(frame);
    py.DecRef(code);
    return code;
}

static inline py_object *py_frame_code(py_object *frame)
{
    /* 3.8-3.10: PyFrameObject.f_code after PyObject_VAR_HEAD and f_back. */
    if (py.minor <= 10)
        return *(py_object **)((char *)frame + 32);
    if (__builtin_expect(py_frame_layout_direct, 1))
        return *(py_object **)(*(char **)((char *)frame + PY311_FRAME_F_FRAME) +
                               PY311_IFRAME_F_CODE);
    if (!py_frame_layout_checked && py.minor == 11) {
        py_frame_layout_checked = 1;
        py_object *direct =
            *(py_object **)(*(char **)((char *)frame + PY311_FRAME_F_FRAME) + PY311_IFRAME_F_CODE);
        py_frame_layout_direct = direct == py_frame_code_api(frame);
    }
    return py_frame_code_api(frame);
}

#endif
