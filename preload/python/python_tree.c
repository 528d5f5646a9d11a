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
static uint64_t py_span_ticks = UINT64_MAX; /* until the tick rate is known or estimated */
static int py_span_measured;

/* The span threshold in ticks. Before the collector has measured the tick rate (20 ms
 * after it starts; prof_state_gen moves then, so the fast paths come here again), an
 * estimate from the load-time clock sample (a call cannot be that long in the first
 * millisecond anyway). */
static inline uint64_t py_span_threshold(void)
{
    if (__builtin_expect(py_span_measured, 1))
        return py_span_ticks;
    uint64_t hz = atomic_load_explicit(&prof_clock_hz, memory_order_relaxed);
    py_span_measured = hz != 0;
    if (!hz)
        hz = clock_hz_estimate();
    py_span_ticks = hz ? (uint64_t)((double)py_span_ns * (double)hz / 1e9) : UINT64_MAX;
    return py_span_ticks;
}
uint64_t python_tree_span_threshold(void)
{
    return py_span_threshold();
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

struct py_node *py_node_find(struct py_thread *pt, struct py_node *parent, const void *key,
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

void py_note_limits(void)
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
        pt->fast_gen = 0; /* (the fast paths do not look at overflow) */
        return;
    }
    struct py_node *parent = pt->depth ? pt->stack[pt->depth - 1].node : NULL;
    struct py_node **last = parent ? &parent->last_child : &pt->root_last;
    struct py_node *n = *last;
    if (!n || n->key != key) {
        struct py_node *prev = n;
        n = prev && prev->next_call && prev->next_call->key == key
                ? prev->next_call
                : py_node_find(pt, parent, key, kind, obj);
        if (!n) {
            pt->overflow++;
            pt->fast_gen = 0;
            py_note_limits();
            return;
        }
        if (prev)
            prev->next_call = n;
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

void py_emit_span(struct py_node *n, uint64_t start, uint64_t end, int how)
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
        python_tree_leave_unpaired(pt, kind, obj, now))
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

static inline void py_fast_arm(struct py_thread *pt, uint64_t gen);

static __attribute__((noinline)) int py_profile_slow(py_object *frame, int what, py_object *arg)
{
    uint64_t gen = atomic_load(&prof_state_gen);
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
    py_fast_arm(pt, gen);
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
           py_span_ticks != UINT64_MAX && !py_stack_stale(pt) && !pt->resync && !pt->overflow &&
           !pt->drift_used;
#else
    (void)pt;
    return 0;
#endif
}

/* py_fast_ok's answer is kept in the thread until the state it reads moves: the recording,
 * the collector and the measured tick rate (prof_state_gen, read before them: gen), the
 * window's closings (each turns the recording off); a resync (python_gaps.c), calls beyond
 * the limits (py_enter) and drifted recursion levels (python_tree_unpaired.c) disarm the
 * thread; the tick counter is set once. The fast paths then test one word. */
static inline void py_fast_arm(struct py_thread *pt, uint64_t gen)
{
    py_span_threshold(); /* (the fast paths read py_span_ticks) */
    pt->fast_gen = py_fast_ok(pt) ? gen : 0;
}

static inline int py_fast_armed(const struct py_thread *pt)
{
    return pt->fast_gen == atomic_load_explicit(&prof_state_gen, memory_order_relaxed);
}

/* A call from a frame of ours (depth >= 1) along a path seen last time. */
static inline int py_fast_enter(struct py_thread *pt, const void *key, uint64_t now,
                                const void *tag)
{
    uint32_t depth = pt->depth;
    if (__builtin_expect(!depth || depth == pt->stack_cap, 0))
        return 0;
    struct py_node *parent = pt->stack[depth - 1].node;
    struct py_node *n = parent->last_child;
    if (__builtin_expect(!n, 0))
        return 0;
    if (__builtin_expect(n->key != key, 0)) { /* the call after it last time? */
        n = n->next_call;
        if (!n || n->key != key)
            return 0;
        parent->last_child = n;
    }
    if (__builtin_expect(n->action, 0))
        return 0;
    struct py_frame *f = &pt->stack[depth];
    pt->depth = depth + 1;
    f->node = n;
    f->start = now;
    f->child = 0;
    f->tag = tag;
    /* last, with nothing left to do after it: only this path pays for the call's frame */
    if (__builtin_expect(n->cut_mark != pt->cuts, 0))
        python_tree_cut_entered(pt, n); /* its counts until now: those at the last cut */
    return 1;
}

/* A return to a frame of ours, pairing with the innermost call (tag NULL: paired by the
 * caller), shorter than the span threshold. */
static inline int py_fast_leave(struct py_thread *pt, const void *tag, uint64_t now)
{
    uint32_t depth = pt->depth;
    if (__builtin_expect(depth < 2, 0))
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
    if (__builtin_expect(pt && py_fast_armed(pt), 1)) {
        uint64_t now = py_fast_ticks();
        if (what == PY_TRACE_CALL) {
            if ((py.minor <= 10 || py_frame_layout_direct) &&
                py_fast_enter(pt, py_frame_code(frame), now, frame))
                return 0;
        } else if (what == PY_TRACE_RETURN) {
            if (py_fast_leave(pt, frame, now))
                return 0;
        } else if ((what == PY_TRACE_C_CALL || what == PY_TRACE_C_RETURN) && arg &&
                   (arg->ob_type == py.CFunctionType || arg->ob_type == py.CMethodType)) {
            /* a builtin (a torch function, a tensor's method): keyed and tagged by its
             * PyMethodDef, as in py_profile_slow */
            const void *ml = ((struct py_cfunction *)arg)->m_ml;
            if (what == PY_TRACE_C_CALL ? py_fast_enter(pt, ml, now, ml)
                                        : py_fast_leave(pt, ml, now))
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
    uint64_t gen = atomic_load(&prof_state_gen);
    if (__builtin_expect(!atomic_load_explicit(&prof_recording, memory_order_relaxed), 0)) {
        if (nargs >= 1)
            py_closed_event(args[0], NULL, 1);
        return py.NoneStruct;
    }
    uint64_t now = prof_clock_ticks();
    struct py_thread *pt = py_thread_here();
    if (pt && nargs >= 1 && !pt->in_gap) {
        py_enter(pt, args[0], PROF_PY_FUNC_PYTHON, NULL, now, NULL);
        py_fast_arm(pt, gen);
    }
    return py.NoneStruct;
}

py_object *python_monitor_enter(py_object *self, py_object *const *args, intptr_t nargs)
{
    (void)self;
    struct py_thread *pt = py_tls;
    if (__builtin_expect(pt && nargs >= 1 && !pt->in_gap && py_fast_armed(pt), 1) &&
        py_fast_enter(pt, args[0], py_fast_ticks(), NULL))
        return py.NoneStruct;
    return py_monitor_enter_slow(args, nargs);
}

/* PY_RETURN, PY_YIELD, PY_UNWIND */
static __attribute__((noinline)) py_object *py_monitor_leave_slow(py_object *const *args,
                                                                  intptr_t nargs)
{
    uint64_t gen = atomic_load(&prof_state_gen);
    if (__builtin_expect(!atomic_load_explicit(&prof_recording, memory_order_relaxed), 0)) {
        if (nargs >= 1)
            py_closed_event(args[0], NULL, 0);
        return py.NoneStruct;
    }
    uint64_t now = prof_clock_ticks();
    struct py_thread *pt = py_thread_here();
    if (pt && !pt->in_gap) {
        py_leave(pt, NULL, PROF_PY_FUNC_PYTHON, NULL, now, 1);
        py_fast_arm(pt, gen);
    }
    return py.NoneStruct;
}

py_object *python_monitor_leave(py_object *self, py_object *const *args, intptr_t nargs)
{
    (void)self;
    struct py_thread *pt = py_tls;
    if (__builtin_expect(pt && !pt->in_gap && py_fast_armed(pt), 1) &&
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
