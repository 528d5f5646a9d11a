/* Python call trees: one per thread, built in the profile callback, written out by the
 * collector. A node is a call path (parent node + function); its counters are written
 * only by the owning thread (which holds the GIL) and read by the collector, so each is
 * a relaxed atomic. Nodes live in chunks that never move and are published by a release
 * store of the node count. Functions (PY_FUNC) are named in python_names.c. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "emit.h"
#include "python.h"
#include "python_tree.h"
#include "window.h"

_Atomic uint64_t python_tree_open;
int py_frame_layout_checked, py_frame_layout_direct;

/* Outside the capture window: step-function calls under way in this thread. */
static __thread uint32_t py_closed_step_depth PROF_TLS;

static __thread struct py_thread *py_tls PROF_TLS;

struct py_thread *python_tree_self(void)
{
    return py_tls;
}
struct py_thread *_Atomic python_tree_threads;
static pthread_key_t py_thread_key;
static uint64_t py_span_ns;
static uint64_t py_span_ticks = UINT64_MAX; /* until the tick rate is known */

/* The span threshold in ticks. Before the collector has measured the tick rate, an
 * estimate from the load-time clock sample (a call cannot be that long in the first
 * millisecond anyway). */
static inline uint64_t py_span_threshold(void)
{
    if (__builtin_expect(py_span_ticks != UINT64_MAX, 1))
        return py_span_ticks;
    uint64_t hz = atomic_load_explicit(&prof_clock_hz, memory_order_relaxed);
    if (hz) {
        py_span_ticks = (uint64_t)((double)py_span_ns * (double)hz / 1e9);
        return py_span_ticks;
    }
    hz = clock_hz_estimate();
    return hz ? (uint64_t)((double)py_span_ns * (double)hz / 1e9) : UINT64_MAX;
}
static uint32_t py_next_node_id = 1; /* under the GIL */
static int py_noted_limits;

/* ---- per-thread trees ---- */

static void py_thread_key_destroy(void *arg)
{
    struct py_thread *pt = arg;
    if (pt->depth)
        py_stack_emptied(pt);
    atomic_store_explicit(&pt->exited, 1, memory_order_release);
    atomic_fetch_add_explicit(&python_tree_exits, 1, memory_order_relaxed); /* drain it */
    py_tls = NULL;
}

static struct py_thread *py_thread_create(void)
{
    struct py_thread *pt =
        mmap(NULL, sizeof *pt, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pt == MAP_FAILED)
        return NULL;
    pt->stack = mmap(NULL, PY_STACK_FRAMES * sizeof *pt->stack, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (pt->stack == MAP_FAILED) {
        munmap(pt, sizeof *pt);
        return NULL;
    }
    pt->stack_cap = PY_STACK_FRAMES;
    pt->tid = (uint32_t)syscall(SYS_gettid);
    struct py_thread *head = atomic_load(&python_tree_threads);
    do {
        atomic_store_explicit(&pt->next, head, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak(&python_tree_threads, &head, pt));
    pthread_setspecific(py_thread_key, pt);
    py_tls = pt;
    emit_thread(); /* the thread's ring (spans, gaps) and, for the first, the collector */
    return pt;
}

static int py_table_grow(struct py_thread *pt)
{
    uint32_t cap = pt->table ? (pt->table_mask + 1) * 2 : 1024;
    struct py_node **t = calloc(cap, sizeof *t);
    if (!t)
        return -1;
    for (uint32_t i = 0; pt->table && i <= pt->table_mask; i++) {
        struct py_node *n = pt->table[i];
        if (!n)
            continue;
        uint32_t j = (uint32_t)python_hash_ptr(n->parent, n->key) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = n;
    }
    free(pt->table);
    pt->table = t;
    pt->table_mask = cap - 1;
    return 0;
}

static struct py_node *py_node_new(struct py_thread *pt, struct py_node *parent, const void *key,
                                   int kind, py_object *obj)
{
    uint32_t count = atomic_load_explicit(&pt->node_count, memory_order_relaxed);
    uint32_t chunk = count / PY_CHUNK_NODES;
    if (chunk >= PY_MAX_CHUNKS)
        return NULL;
    if (!pt->chunks[chunk]) {
        void *p = mmap(NULL, PY_CHUNK_NODES * sizeof(struct py_node), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        pt->chunks[chunk] = p;
    }
    uint32_t func = python_func_id(key, kind, obj);
    if (!func)
        return NULL;
    struct py_node *n = &pt->chunks[chunk][count % PY_CHUNK_NODES];
    n->id = py_next_node_id++;
    n->func_id = func;
    n->key = key;
    n->parent = parent;
    n->action = (uint8_t)(python_func_action(func) | (python_func_step(func) ? PY_NODE_STEP : 0) |
                          (python_func_phase(func) ? PY_NODE_PHASE : 0));
    /* release: the collector that reads the new count sees the node's fields */
    atomic_store_explicit(&pt->node_count, count + 1, memory_order_release);
    return n;
}

static struct py_node *py_node_find(struct py_thread *pt, struct py_node *parent, const void *key,
                                    int kind, py_object *obj)
{
    if ((pt->table_used + 1) * 2 > (pt->table ? pt->table_mask + 1 : 0) && py_table_grow(pt) != 0)
        return NULL;
    uint32_t j = (uint32_t)python_hash_ptr(parent, key) & pt->table_mask;
    for (struct py_node *n; (n = pt->table[j]); j = (j + 1) & pt->table_mask)
        if (n->parent == parent && n->key == key)
            return n;
    struct py_node *n = py_node_new(pt, parent, key, kind, obj);
    if (n) {
        pt->table[j] = n;
        pt->table_used++;
    }
    return n;
}

static inline void py_add(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

static void py_note_limits(void)
{
    if (!py_noted_limits) {
        py_noted_limits = 1;
        collector_note("Python calls deeper than %u frames, or beyond %u call paths per thread, "
                       "are not counted",
                       PY_MAX_DEPTH, PY_CHUNK_NODES * PY_MAX_CHUNKS);
    }
}

/* Doubles the thread's stack. The sampling signal handler reads the stack of the thread
 * it interrupts (py_current_node): signals are held while the stack may move. */
static __attribute__((noinline)) int py_stack_grow(struct py_thread *pt)
{
    if (pt->stack_cap >= PY_MAX_DEPTH)
        return -1;
    size_t old = (size_t)pt->stack_cap * sizeof *pt->stack;
    sigset_t all, prev;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &prev);
    void *p = mremap(pt->stack, old, old * 2, MREMAP_MAYMOVE);
    if (p != MAP_FAILED) {
        pt->stack = p;
        pt->stack_cap *= 2;
    }
    pthread_sigmask(SIG_SETMASK, &prev, NULL);
    return p == MAP_FAILED ? -1 : 0;
}

static inline __attribute__((always_inline)) void py_enter(struct py_thread *pt, const void *key,
                                                           int kind, py_object *obj, uint64_t now,
                                                           const void *tag)
{
    if (__builtin_expect(pt->depth == pt->stack_cap, 0) && !pt->overflow)
        py_stack_grow(pt); /* if it cannot, the stack stays full: the call is not counted */
    if (pt->overflow || pt->depth == pt->stack_cap) {
        /* overflow > 0 may also be calls begun after the window closed (py_closed_event) */
        if (!pt->overflow)
            py_note_limits();
        pt->overflow++;
        return;
    }
    struct py_node *parent = pt->depth ? pt->stack[pt->depth - 1].node : NULL;
    struct py_node **last = parent ? &parent->last_child : &pt->root_last;
    struct py_node *n = *last;
    if (!n || n->key != key) {
        n = py_node_find(pt, parent, key, kind, obj);
        if (!n) {
            pt->overflow++;
            py_note_limits();
            return;
        }
        *last = n;
    }
    if (__builtin_expect(n->cut_mark != pt->cuts, 0))
        python_tree_cut_entered(pt, n); /* its counts until now: those at the last cut */
    if (__builtin_expect(!pt->depth, 0))
        py_stack_opened(pt);
    struct py_frame *f = &pt->stack[pt->depth++];
    f->node = n;
    f->start = now;
    f->child = 0;
    f->tag = tag;
    if (__builtin_expect(n->action, 0)) {
        if (n->action & PY_NODE_STEP)
            pt->step_depth++;
        if (n->action & ~(PY_NODE_STEP | PY_NODE_PHASE))
            python_action_called(n->action & ~(PY_NODE_STEP | PY_NODE_PHASE),
                                 kind == PROF_PY_FUNC_PYTHON ? obj : NULL, now);
    }
}

/* Whether a training phase's call is under way on pt's stack (the returning call popped). */
static int py_phase_below(const struct py_thread *pt)
{
    for (uint32_t d = pt->depth; d-- > 0;)
        if (pt->stack[d].node->action & PY_NODE_PHASE)
            return 1;
    return 0;
}

/* A span of a call: while recording, or (PY_SPAN_EDGE) one that ended at the window's
 * closing; PY_SPAN_KEPT: a phase's outermost call, in the ring's kept room if need be. */
enum { PY_SPAN_EDGE = 1, PY_SPAN_KEPT = 2 };
static void py_emit_span(struct py_node *n, uint64_t start, uint64_t end, int how)
{
    struct prof_thread *t = emit_thread();
    if (!t ||
        (!(how & PY_SPAN_EDGE) && !atomic_load_explicit(&prof_recording, memory_order_relaxed)))
        return;
    struct prof_rec_py_span *rec = how & PY_SPAN_KEPT ? ring_reserve_kept(&t->ring, sizeof *rec)
                                                      : ring_reserve(&t->ring, sizeof *rec);
    if (!rec)
        return; /* counted as lost; the tree keeps the call */
    rec->h.type = PROF_REC_PY_SPAN;
    rec->h.size = sizeof *rec;
    rec->node_id = n->id;
    rec->start = start;
    rec->end = end;
    ring_commit(&t->ring);
}

static int py_leave_unpaired(struct py_thread *pt, int kind, py_object *obj, uint64_t now);

static inline int py_drifts(const struct py_thread *pt, const void *key)
{
    for (uint32_t i = 0; i < pt->drift_used; i++)
        if (pt->drift[i].key == key)
            return 1;
    return 0;
}

/* A return. paired: the caller knows it pairs with the innermost call (sys.monitoring,
 * 3.12+, reports each frame's start, resume and throw). Otherwise (setprofile) tag is
 * the returning frame object or builtin's PyMethodDef (obj: the frame or builtin): a tag
 * other than the innermost call's, or drifted recursion levels, take the slow path. */
static inline __attribute__((always_inline)) void
py_leave(struct py_thread *pt, const void *tag, int kind, py_object *obj, uint64_t now, int paired)
{
    if (pt->overflow) {
        pt->overflow--;
        return;
    }
    if (!pt->depth)
        return; /* a frame that started before we attached */
    if (!paired && __builtin_expect(pt->stack[pt->depth - 1].tag != tag || pt->drift_used, 0) &&
        py_leave_unpaired(pt, kind, obj, now))
        return;
    struct py_frame *f = &pt->stack[--pt->depth];
    uint64_t dt = now - f->start;
    struct py_node *n = f->node;
    py_add(&n->calls, 1);
    py_add(&n->total, dt);
    py_add(&n->self, dt - f->child);
    if (pt->depth)
        pt->stack[pt->depth - 1].child += dt;
    else
        py_stack_emptied(pt);
    if (__builtin_expect(n->action & PY_NODE_PHASE, 0) && !py_phase_below(pt))
        py_emit_span(n, f->start, now, PY_SPAN_KEPT); /* (however short) */
    else if (dt >= py_span_threshold())
        py_emit_span(n, f->start, now, 0);
    if (__builtin_expect(n->action & PY_NODE_STEP, 0) && pt->step_depth && !--pt->step_depth)
        window_step_done(); /* may close the window */
}

/* The window closed with frames entered inside it still on a thread's stack (the
 * program's main function, when the window was open from the start): each is counted as a
 * call that ended at the closing, with its time up to there, and the stack is emptied, so
 * that the Python layer can go quiet without waiting for returns that may come at the
 * end of the run. Their returns, when they come, find an empty stack and are ignored. A
 * step function among them is handed to the closed window's step count (its return ends
 * the step). */
void python_tree_close_at_edge(struct py_thread *pt)
{
    unsigned closings = atomic_load(&window_closings);
    uint64_t edge = window_close_edge(pt->epoch < closings ? pt->epoch + 1 : closings);
    for (uint32_t d = pt->depth; d-- > 0;) {
        struct py_frame *f = &pt->stack[d];
        uint64_t dt = edge > f->start ? edge - f->start : 0;
        py_add(&f->node->calls, 1);
        py_add(&f->node->total, dt);
        py_add(&f->node->self, dt > f->child ? dt - f->child : 0);
        if (d)
            pt->stack[d - 1].child += dt;
        if (dt >= py_span_threshold())
            py_emit_span(f->node, f->start, f->start + dt, PY_SPAN_EDGE);
    }
    if (pt == py_tls) /* (another thread's step frames are not followed) */
        py_closed_step_depth += pt->step_depth;
    pt->step_depth = 0;
    pt->depth = 0;
    pt->overflow = 0;
    pt->drift_used = 0;
    py_stack_emptied(pt);
}

/* For python_gaps.c's resync, in the thread under the GIL: a Python frame entered unseen
 * starts now; the innermost frame of ours returned unseen and ends now. */
void python_tree_push(py_object *frame, uint64_t now)
{
    py_enter(py_tls, py_frame_code(frame), PROF_PY_FUNC_PYTHON, frame, now, frame);
}

void python_tree_pop(uint64_t now)
{
    py_leave(py_tls, NULL, PROF_PY_FUNC_PYTHON, NULL, now, 1);
}

/* An event outside the capture window (prof_recording off). A thread with frames entered
 * inside the window still on its stack ends them at the window's edge first; then it does
 * nothing more, except, with PROF_STEPS counted here, watch for the end of each step.
 * code: the code object of a Python call or return; NULL for a builtin. Returns 0 (the
 * profile function's result). */
static int py_closed_event(py_object *code, py_object *frame, int call)
{
    struct py_thread *pt = py_tls;
    if (pt && pt->depth && !pt->in_gap)
        python_tree_close_at_edge(pt);
    if (window_steps_by_python() && code) {
        if (call) {
            if (python_code_step(code) ||
                python_func_step(python_func_id(code, PROF_PY_FUNC_PYTHON, frame)))
                py_closed_step_depth++;
        } else if (py_closed_step_depth && python_code_step(code) && !--py_closed_step_depth) {
            window_step_done(); /* may open the window */
            if (atomic_load_explicit(&prof_recording, memory_order_relaxed)) {
                python_events_opened();
                return 0;
            }
        }
    }
    python_events_idle(); /* 3.12+: the events may go off */
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
static __attribute__((noinline)) int py_leave_unpaired(struct py_thread *pt, int kind,
                                                       py_object *obj, uint64_t now)
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
        if (dt >= py_span_threshold())
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

static inline int py_is_cfunction(py_object *o)
{
    return o && (o->ob_type == py.CFunctionType || o->ob_type == py.CMethodType ||
                 py.TypeIsSubtype(o->ob_type, py.CFunctionType));
}

static inline struct py_thread *py_thread_here(void);

/* Outside the window: only the calls and returns that matter there. */
static __attribute__((noinline)) int py_profile_closed(py_object *frame, int what, py_object *arg)
{
    switch (what) {
    case PY_TRACE_CALL:
    case PY_TRACE_RETURN:
        return py_closed_event(py_frame_code(frame), frame, what == PY_TRACE_CALL);
    case PY_TRACE_C_CALL:
    case PY_TRACE_C_RETURN:
    case PY_TRACE_C_EXCEPTION:
        if (py_tls && py_tls->depth && py_is_cfunction(arg))
            return py_closed_event(NULL, NULL, what == PY_TRACE_C_CALL);
        return 0;
    default:
        return 0;
    }
}

static __attribute__((noinline)) int py_profile_slow(py_object *frame, int what, py_object *arg)
{
    if (__builtin_expect(!atomic_load_explicit(&prof_recording, memory_order_relaxed), 0))
        return py_profile_closed(frame, what, arg);
    uint64_t now = prof_clock_ticks();
    struct py_thread *pt = py_thread_here();
    if (!pt)
        return 0;
    if (__builtin_expect(pt->resync, 0))
        python_gap_resync(frame, what == PY_TRACE_CALL, now);
    switch (what) {
    case PY_TRACE_CALL:
        py_enter(pt, py_frame_code(frame), PROF_PY_FUNC_PYTHON, frame, now, frame);
        break;
    case PY_TRACE_RETURN:
        py_leave(pt, frame, PROF_PY_FUNC_PYTHON, frame, now, 0);
        break;
    case PY_TRACE_C_CALL:
        if (py_is_cfunction(arg))
            py_enter(pt, ((struct py_cfunction *)arg)->m_ml, PROF_PY_FUNC_C, arg, now,
                     ((struct py_cfunction *)arg)->m_ml);
        break;
    case PY_TRACE_C_RETURN:
    case PY_TRACE_C_EXCEPTION:
        if (py_is_cfunction(arg))
            py_leave(pt, ((struct py_cfunction *)arg)->m_ml, PROF_PY_FUNC_C, arg, now, 0);
        break;
    default:
        break;
    }
    return 0;
}

/* ---- the fast paths ----
 * The common call and return, checked first and done without a call, so that the
 * compiler needs no stack frame for them; anything else (the first or last frame of a
 * stack, a call path not seen from this parent yet, actions and steps, long calls,
 * unpaired returns, overflow, the window closed, no tick counter, the collector
 * stopped) goes to the full path, which reads the clock again. */

/* The tick counter, which py_fast_ok checked is in use (no clock_gettime call here). */
static inline uint64_t py_fast_ticks(void)
{
#ifdef PROF_CLOCK_HAVE_TSC
    return __rdtsc();
#else
    return 0;
#endif
}

static inline int py_fast_ok(const struct py_thread *pt)
{
#ifdef PROF_CLOCK_HAVE_TSC
    return atomic_load_explicit(&prof_recording, memory_order_relaxed) && prof_clock_tsc &&
           atomic_load_explicit(&prof_collector_running, memory_order_relaxed) &&
           py_span_ticks != UINT64_MAX && !py_stack_stale(pt) && !pt->resync;
#else
    (void)pt;
    return 0;
#endif
}

/* A call from a frame of ours (depth >= 1) along a path seen last time. */
static inline int py_fast_enter(struct py_thread *pt, const void *key, uint64_t now,
                                const void *tag)
{
    uint32_t depth = pt->depth;
    if (__builtin_expect(pt->overflow || !depth || depth == pt->stack_cap, 0))
        return 0;
    struct py_node *n = pt->stack[depth - 1].node->last_child;
    if (__builtin_expect(!n || n->key != key || n->action, 0))
        return 0;
    if (__builtin_expect(n->cut_mark != pt->cuts, 0))
        python_tree_cut_entered(pt, n); /* its counts until now: those at the last cut */
    struct py_frame *f = &pt->stack[depth];
    pt->depth = depth + 1;
    f->node = n;
    f->start = now;
    f->child = 0;
    f->tag = tag;
    return 1;
}

/* A return to a frame of ours, pairing with the innermost call (tag NULL: paired by the
 * caller), shorter than the span threshold. */
static inline int py_fast_leave(struct py_thread *pt, const void *tag, uint64_t now)
{
    uint32_t depth = pt->depth;
    if (__builtin_expect(pt->overflow || depth < 2 || pt->drift_used, 0))
        return 0;
    struct py_frame *f = &pt->stack[depth - 1];
    struct py_node *n = f->node;
    uint64_t dt = now - f->start;
    if (__builtin_expect((tag && f->tag != tag) || n->action || dt >= py_span_ticks, 0))
        return 0;
    pt->depth = depth - 1;
    py_add(&n->calls, 1);
    py_add(&n->total, dt);
    py_add(&n->self, dt - f->child);
    pt->stack[depth - 2].child += dt;
    return 1;
}

int python_profile(py_object *obj, py_object *frame, int what, py_object *arg)
{
    (void)obj;
    struct py_thread *pt = py_tls;
    if (__builtin_expect(pt && py_fast_ok(pt), 1)) {
        uint64_t now = py_fast_ticks();
        if (what == PY_TRACE_CALL) {
            if ((py.minor <= 10 || py_frame_layout_direct) &&
                py_fast_enter(pt, py_frame_code(frame), now, frame))
                return 0;
        } else if (what == PY_TRACE_RETURN) {
            if (py_fast_leave(pt, frame, now))
                return 0;
        }
    }
    return py_profile_slow(frame, what, arg);
}

/* ---- sys.monitoring (3.12+): interpreter-wide, every thread, one dispatch per event ----
 * The callbacks are METH_FASTCALL builtins; they see the same calls and returns as
 * cProfile's own monitoring callbacks, and key builtins the same way (PyMethodDef). */

static inline struct py_thread *py_thread_here(void)
{
    if (__builtin_expect(!atomic_load_explicit(&prof_collector_running, memory_order_relaxed), 0))
        collector_resume();
    struct py_thread *pt = py_tls;
    if (__builtin_expect(!pt, 0))
        pt = py_thread_create();
    else if (__builtin_expect(py_stack_stale(pt), 0) && !pt->in_gap)
        python_tree_close_at_edge(pt); /* its frames of an earlier window end there */
    return pt;
}

void python_tree_enter_started(py_object *frame, int profile)
{
    struct py_thread *pt = py_thread_here();
    if (pt && !pt->in_gap)
        py_enter(pt, py_frame_code(frame), PROF_PY_FUNC_PYTHON, profile ? frame : NULL,
                 prof_clock_ticks(), profile ? frame : NULL);
}

/* PY_START, PY_RESUME, PY_THROW (code, offset, ...) */
static __attribute__((noinline)) py_object *py_monitor_enter_slow(py_object *const *args,
                                                                  intptr_t nargs)
{
    if (__builtin_expect(!atomic_load_explicit(&prof_recording, memory_order_relaxed), 0)) {
        if (nargs >= 1)
            py_closed_event(args[0], NULL, 1);
        return py.NoneStruct;
    }
    uint64_t now = prof_clock_ticks();
    struct py_thread *pt = py_thread_here();
    if (pt && nargs >= 1 && !pt->in_gap)
        py_enter(pt, args[0], PROF_PY_FUNC_PYTHON, NULL, now, NULL);
    return py.NoneStruct;
}

py_object *python_monitor_enter(py_object *self, py_object *const *args, intptr_t nargs)
{
    (void)self;
    struct py_thread *pt = py_tls;
    if (__builtin_expect(pt && nargs >= 1 && !pt->in_gap && py_fast_ok(pt), 1) &&
        py_fast_enter(pt, args[0], py_fast_ticks(), NULL))
        return py.NoneStruct;
    return py_monitor_enter_slow(args, nargs);
}

/* PY_RETURN, PY_YIELD, PY_UNWIND */
static __attribute__((noinline)) py_object *py_monitor_leave_slow(py_object *const *args,
                                                                  intptr_t nargs)
{
    if (__builtin_expect(!atomic_load_explicit(&prof_recording, memory_order_relaxed), 0)) {
        if (nargs >= 1)
            py_closed_event(args[0], NULL, 0);
        return py.NoneStruct;
    }
    uint64_t now = prof_clock_ticks();
    struct py_thread *pt = py_thread_here();
    if (pt && !pt->in_gap)
        py_leave(pt, NULL, PROF_PY_FUNC_PYTHON, NULL, now, 1);
    return py.NoneStruct;
}

py_object *python_monitor_leave(py_object *self, py_object *const *args, intptr_t nargs)
{
    (void)self;
    struct py_thread *pt = py_tls;
    if (__builtin_expect(pt && !pt->in_gap && py_fast_ok(pt), 1) &&
        py_fast_leave(pt, NULL, py_fast_ticks()))
        return py.NoneStruct;
    return py_monitor_leave_slow(args, nargs);
}

/* The PyMethodDef a call to callable (with first argument self_arg) runs, as cProfile
 * finds it: a builtin function, or a method descriptor called with its self. */
static inline const void *py_c_callee(py_object *callable, py_object *self_arg)
{
    void *type = callable->ob_type;
    /* Most calls are to Python functions and bound methods: answer those first, without
     * PyType_IsSubtype's walk of the MRO. */
    if (type == py.FunctionType || type == py.MethodType)
        return NULL;
    if (type == py.CFunctionType || type == py.CMethodType)
        return ((struct py_cfunction *)callable)->m_ml;
    if (type == py.MethodDescrType)
        return self_arg != py.MonitoringMissing
                   ? *(void **)((char *)callable + PY_METHOD_DESCR_D_METHOD)
                   : NULL;
    if (py.TypeIsSubtype(type, py.CFunctionType))
        return ((struct py_cfunction *)callable)->m_ml;
    return NULL;
}

static __attribute__((noinline)) py_object *py_monitor_call_slow(py_object *const *args,
                                                                 intptr_t nargs)
{
    const void *ml = nargs >= 4 ? py_c_callee(args[2], args[3]) : NULL;
    struct py_thread *pt;
    if (__builtin_expect(!atomic_load_explicit(&prof_recording, memory_order_relaxed), 0)) {
        if (ml && py_tls && py_tls->depth)
            py_closed_event(NULL, NULL, 1);
        return py.NoneStruct;
    }
    if (ml && (pt = py_thread_here()) && !pt->in_gap) {
        python_descr_self = args[3]; /* names a method descriptor the first time */
        py_enter(pt, ml, PROF_PY_FUNC_C, args[2], prof_clock_ticks(), NULL);
    }
    return py.NoneStruct;
}

/* CALL (code, offset, callable, arg0). Every call comes here, Python functions too (their
 * PY_START follows): those are let go at once; the clock is read only for builtins. */
py_object *python_monitor_call(py_object *self, py_object *const *args, intptr_t nargs)
{
    (void)self;
    if (__builtin_expect(nargs >= 4, 1)) {
        void *type = args[2]->ob_type;
        if (type == py.FunctionType || type == py.MethodType)
            return py.NoneStruct;
    }
    return py_monitor_call_slow(args, nargs);
}

/* C_RETURN, C_RAISE (code, offset, callable, arg0) */
py_object *python_monitor_c_leave(py_object *self, py_object *const *args, intptr_t nargs)
{
    (void)self;
    /* Also called after classes and other non-builtin callables: check first. */
    struct py_thread *pt;
    if (__builtin_expect(!atomic_load_explicit(&prof_recording, memory_order_relaxed), 0)) {
        if (py_tls && py_tls->depth && nargs >= 4 && py_c_callee(args[2], args[3]))
            py_closed_event(NULL, NULL, 0);
        return py.NoneStruct;
    }
    if (nargs >= 4 && py_c_callee(args[2], args[3]) && (pt = py_thread_here()) && !pt->in_gap)
        py_leave(pt, NULL, PROF_PY_FUNC_C, NULL, prof_clock_ticks(), 1);
    return py.NoneStruct;
}

/* API calls (CUDA, ...) made while a Python function is the innermost frame. */
static void py_observe_api_call(uint64_t ticks)
{
    struct py_thread *pt = py_tls;
    if (!pt || !pt->depth || pt->overflow)
        return;
    struct py_node *n = pt->stack[pt->depth - 1].node;
    py_add(&n->api_calls, 1);
    py_add(&n->api_ticks, ticks);
}

/* Also called from the sampling signal handler, which may interrupt a push between the
 * depth's increment and the frame's node: a slot not yet filled holds NULL or the node
 * of an earlier call at that depth (nodes live as long as the thread). */
static uint32_t py_current_node(void)
{
    struct py_thread *pt = py_tls;
    if (!pt || !pt->depth || pt->overflow)
        return 0;
    const struct py_node *n = pt->stack[pt->depth - 1].node;
    return n ? n->id : 0;
}

void python_tree_init(uint64_t span_threshold_ns)
{
    py_span_ns = span_threshold_ns;
    pthread_key_create(&py_thread_key, py_thread_key_destroy);
    collector_add_source(python_tree_drain);
    prof_api_observer = py_observe_api_call;
    prof_current_py_node = py_current_node;
    python_tree_cuts_init();
}
