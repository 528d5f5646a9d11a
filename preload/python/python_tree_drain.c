/* The collector's side of the Python call trees (python_tree.h): each thread's new nodes
 * and changed counts written as PY_NODE / PY_STATS records, ended threads freed, the
 * trees reset in a forked child; and what must walk every thread's stack (the layer
 * going quiet outside a capture window). */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "python.h"
#include "python_tree.h"
#include "trace_format.h"
#include "tree_drain.h"
#include "window.h"

pthread_mutex_t python_tree_lock = PTHREAD_MUTEX_INITIALIZER;

/* Under the GIL, before the Python layer goes quiet: no other thread is inside a
 * callback of ours, so their stacks hold still; a thread blocked with frames of an
 * earlier window (main() in a join) gets no event to end them itself. */
void python_tree_end_stale_stacks(void)
{
    pthread_mutex_lock(&python_tree_lock);
    for (struct py_thread *pt = atomic_load(&python_tree_threads); pt;
         pt = atomic_load_explicit(&pt->next, memory_order_relaxed))
        if (!atomic_load_explicit(&pt->exited, memory_order_acquire) && py_stack_stale(pt) &&
            !pt->in_gap)
            python_tree_close_at_edge(pt);
    pthread_mutex_unlock(&python_tree_lock);
}

int python_tree_frames_open(void)
{
    uint64_t w = atomic_load(&python_tree_open);
    return (uint32_t)(w >> 32) == atomic_load(&window_closings) && (uint32_t)w > 0;
}

static struct py_node *py_node_at(struct py_thread *pt, uint32_t i)
{
    return &pt->chunks[i / PY_CHUNK_NODES][i % PY_CHUNK_NODES];
}

static int py_drain_last; /* the pass before the process exits or execs */
static int py_drain_hot;  /* a pass between full ones: the hot lists only */

#define PY_HOT_MAX 16384 /* listed nodes per thread */

/* Node i, written when new or changed; a node written by a full pass, or made since, goes
 * on its thread's hot list. */
static void py_drain_node(struct py_thread *pt, struct tree_drain_pass *d, uint32_t i, int fresh)
{
    struct py_node *n = py_node_at(pt, i);
    uint64_t calls = atomic_load_explicit(&n->calls, memory_order_relaxed);
    uint64_t api_calls = atomic_load_explicit(&n->api_calls, memory_order_relaxed);
    if (fresh) {
        n->written_calls = 0;
        n->written_api_calls = 0;
    }
    int define, changed = calls != n->written_calls || api_calls != n->written_api_calls;
    if (!tree_drain_due(d, i, changed, &define))
        return;
    if (define) {
        struct prof_rec_py_node rec = {
            {PROF_REC_PY_NODE, sizeof rec}, n->id, n->parent ? n->parent->id : 0, n->func_id};
        collector_write(&rec, sizeof rec);
    }
    if (changed) {
        struct prof_rec_py_stats st;
        memset(&st, 0, sizeof st);
        st.h.type = PROF_REC_PY_STATS;
        st.h.size = sizeof st;
        st.node_id = n->id;
        st.calls = calls;
        st.total_ticks = atomic_load_explicit(&n->total, memory_order_relaxed);
        st.self_ticks = atomic_load_explicit(&n->self, memory_order_relaxed);
        st.api_calls = api_calls;
        st.api_ticks = atomic_load_explicit(&n->api_ticks, memory_order_relaxed);
        collector_write(&st, sizeof st);
        n->written_calls = calls;
        n->written_api_calls = api_calls;
    }
    if (pt->hot_all || (py_drain_hot && !define))
        return; /* (a listed node stays listed until the next full pass) */
    if (!pt->hot && !collector_drain_in_signal()) {
        void *p = mmap(NULL, PY_HOT_MAX * sizeof *pt->hot, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        pt->hot = p == MAP_FAILED ? NULL : p;
    }
    if (pt->hot && pt->nhot < PY_HOT_MAX)
        pt->hot[pt->nhot++] = i;
    else
        pt->hot_all = 1;
}

static void py_drain_thread(void *thread, int fresh)
{
    struct py_thread *pt = thread;
    /* (an ended thread is freed after this pass: all its counts now) */
    int hot = py_drain_hot && !fresh && !atomic_load_explicit(&pt->exited, memory_order_acquire);
    if (hot && pt->hot_all)
        return; /* too many nodes move to list them: the next full pass writes them */
    struct tree_drain_pass d;
    tree_drain_begin(&d, pt->tid, atomic_load_explicit(&pt->node_count, memory_order_acquire),
                     &pt->nodes_defined, fresh);
    if (hot) {
        uint32_t listed = pt->nhot, defined = pt->nodes_defined;
        for (uint32_t k = 0; k < listed; k++)
            py_drain_node(pt, &d, pt->hot[k], 0);
        for (uint32_t i = defined; i < d.count; i++)
            py_drain_node(pt, &d, i, 0);
    } else {
        pt->nhot = 0;
        pt->hot_all = 0;
        for (uint32_t i = 0; i < d.count; i++)
            py_drain_node(pt, &d, i, fresh);
    }
    python_tree_cut_drain(pt, py_drain_last);
    tree_drain_end(&d);
}

static void py_free_thread(void *thread)
{
    struct py_thread *pt = thread;
    for (uint32_t c = 0; c < PY_MAX_CHUNKS && pt->chunks[c]; c++)
        munmap(pt->chunks[c], PY_CHUNK_NODES * sizeof(struct py_node));
    free(pt->table);
    munmap(pt->stack, (size_t)pt->stack_cap * sizeof *pt->stack);
    python_tree_cut_free(pt);
    if (pt->hot)
        munmap(pt->hot, PY_HOT_MAX * sizeof *pt->hot);
    munmap(pt, sizeof *pt);
}

static void *py_thread_next(void *thread)
{
    return atomic_load_explicit(&((struct py_thread *)thread)->next, memory_order_relaxed);
}

static void py_thread_set_next(void *thread, void *next)
{
    atomic_store_explicit(&((struct py_thread *)thread)->next, next, memory_order_relaxed);
}

/* read before the counters: what the thread did last is in them */
static int py_thread_exited(void *thread)
{
    return atomic_load_explicit(&((struct py_thread *)thread)->exited, memory_order_acquire);
}

/* A full pass reads every node of every tree (an import-heavy program has 100,000 of them,
 * most never called again) to find the counts that moved: it runs in at most
 * PY_DRAIN_SHARE of the time, the next one waiting for the ones in between to have taken
 * that long (up to PY_DRAIN_WAIT_NS), and always at the last pass, into a fresh file, once a
 * thread ended and in a fatal signal's pass. The passes between read only each thread's
 * hot list: the nodes that changed at the last full pass and those made since (a training
 * loop's), so that those counts go out at every pass, the others within PY_DRAIN_WAIT_NS. */
#define PY_DRAIN_SHARE 0.002
#define PY_DRAIN_WAIT_NS 2000000000ull

_Atomic unsigned python_tree_exits;

void python_tree_drain(int fresh, int last)
{
    /* The process ends in this thread (exit, not a signal): frames of an earlier window
     * still on its own stack (main() under a join, its hook off since) end at their edge. */
    struct py_thread *self = python_tree_self();
    if (last && self && py_stack_stale(self) && !self->in_gap && !collector_drain_in_signal())
        python_tree_close_at_edge(self);
    static uint64_t next_ns;
    static unsigned exits_seen;
    unsigned exits = atomic_load_explicit(&python_tree_exits, memory_order_relaxed);
    uint64_t start = clock_monotonic_ns();
    py_drain_hot = !fresh && !last && !collector_drain_in_signal() && exits == exits_seen &&
                   start < next_ns; /* (a fatal signal's pass reads everything) */
    exits_seen = exits;
    py_drain_last = last;
    static const struct tree_drain_list list = {py_thread_next,   py_thread_set_next,
                                                py_thread_exited, py_drain_thread,
                                                py_free_thread,   &python_tree_lock};
    tree_drain_threads(atomic_load(&python_tree_threads), &list, fresh);
    if (py_drain_hot)
        return;
    uint64_t took = clock_monotonic_ns() - start;
    uint64_t wait = (uint64_t)((double)took * (1.0 / PY_DRAIN_SHARE - 1.0));
    next_ns = start + took + (wait < PY_DRAIN_WAIT_NS ? wait : PY_DRAIN_WAIT_NS);
}

/* In a forked child only the forking thread goes on: its tree restarts at zero (the
 * parent's file has what came before), the other threads' trees are dropped. */
void python_tree_after_fork_child(void)
{
    pthread_mutex_init(&python_tree_lock, NULL); /* the collector may have held it */
    struct py_thread *self = python_tree_self();
    for (struct py_thread *pt = atomic_load(&python_tree_threads); pt;) {
        struct py_thread *next = atomic_load_explicit(&pt->next, memory_order_relaxed);
        if (pt != self)
            py_free_thread(pt);
        pt = next;
    }
    atomic_store(&python_tree_threads, self);
    unsigned closings = atomic_load(&window_closings);
    atomic_store(&python_tree_open, self && self->depth && self->epoch == closings
                                        ? ((uint64_t)closings << 32) | 1
                                        : (uint64_t)closings << 32);
    if (!self)
        return;
    atomic_store(&self->next, NULL);
    self->tid = (uint32_t)syscall(SYS_gettid);
    uint32_t count = atomic_load(&self->node_count);
    for (uint32_t i = 0; i < count; i++) {
        struct py_node *n = py_node_at(self, i);
        atomic_store(&n->calls, 0);
        atomic_store(&n->total, 0);
        atomic_store(&n->self, 0);
        atomic_store(&n->api_calls, 0);
        atomic_store(&n->api_ticks, 0);
    }
    python_tree_cut_reset(self, count);
    /* frames still on the stack were entered in the parent: their time is the parent's */
    uint64_t now = prof_clock_ticks();
    for (uint32_t d = 0; d < self->depth; d++) {
        self->stack[d].start = now;
        self->stack[d].child = 0;
    }
}
