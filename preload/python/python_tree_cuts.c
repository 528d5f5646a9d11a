/* Cuts of the Python call trees at training-step boundaries (PY_CUT / PY_CUT_STATS in
 * trace_format.h): each node's counts as they stood at the end of an optimizer step, or at
 * the start of a ProfilerStep, so that the report gives the Python functions of the
 * steady steps exactly, as the trees give the whole process's.
 *
 * The thread that ends the step cuts its own tree, in the PyTorch layer's callback
 * (between two of its own Python events; torch runs the record_function ops, and so the
 * callback, with the GIL released: only the tree's own thread may touch it). At the
 * cut only the calls on the stack are written (their time runs up to the cut). Any other
 * node's counts stay those of the cut until it is next entered: the first entry after a
 * cut (one compare per call) writes them then, before they move. A node never entered
 * again is written never: its counts at the cut are its final ones.
 *
 * Which cuts are taken: the report needs one at or soon after the end of the warm-up (a
 * few steps in) and the one at the end of the last step, known only when the process
 * ends. Boundaries 1 to 8, 16 and 32 are cut through the thread's ring (a dropped record
 * is a LOST one there, and the report does not use the thread's cuts). Every other
 * boundary is cut into the thread's log of the latest cut, which each such cut empties,
 * and the collector writes that log when the process, or the thread, ends, checking with
 * cut_gen that no cut was being taken meanwhile; a node's first record after the latest
 * ringed cut still goes to the ring (it holds the node's counts at that cut too: it was not
 * entered in between), its later ones to the log. So a run of 12 steps keeps cuts 1-8 and
 * 12. Capture windows (and attach) take no cuts: the Python layer is quiet outside
 * them. */
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>

#include "collector.h"
#include "emit.h"
#include "python_tree.h"
#include "trace_format.h"
#include "window.h"

static void py_cut_fail(struct py_thread *pt)
{
    int ok = 0;
    atomic_compare_exchange_strong(&pt->cut_failed, &ok, 1);
}

static void py_cut_stats(struct prof_rec_py_cut_stats *rec, uint32_t node, uint32_t k,
                         const uint64_t v[5])
{
    memset(rec, 0, sizeof *rec);
    rec->h.type = PROF_REC_PY_CUT_STATS;
    rec->h.size = sizeof *rec;
    rec->node_id = node;
    rec->cut = k;
    memcpy(&rec->calls, v, 5 * sizeof *v);
}

static void py_cut_mark(struct prof_rec_py_cut *rec, uint32_t tid, uint32_t k, uint64_t ticks)
{
    memset(rec, 0, sizeof *rec);
    rec->h.type = PROF_REC_PY_CUT;
    rec->h.size = sizeof *rec;
    rec->tid = tid;
    rec->cut = k;
    rec->ticks = ticks;
}

/* A record in the calling thread's ring; NULL: none (a full ring counts a LOST record
 * itself; no ring at all is said by the collector, as cut 0). */
static void *py_cut_reserve(struct py_thread *pt, uint32_t size, struct prof_thread **t)
{
    *t = emit_thread();
    if (*t && !atomic_load_explicit(&prof_collector_running, memory_order_relaxed))
        collector_resume(); /* (a forked child's first records) */
    void *rec = *t ? ring_reserve(&(*t)->ring, size) : NULL;
    if (!*t)
        py_cut_fail(pt);
    return rec;
}

/* The next entry of the latest cut's log (published by the caller), or NULL. */
static struct prof_rec_py_cut_stats *py_cut_log_next(struct py_thread *pt)
{
    uint32_t len = atomic_load_explicit(&pt->cut_log_len, memory_order_relaxed);
    uint32_t chunk = len / PY_CHUNK_NODES;
    if (chunk >= PY_MAX_CHUNKS)
        return NULL;
    if (!pt->cut_log[chunk]) {
        void *p = mmap(NULL, PY_CHUNK_NODES * sizeof(struct prof_rec_py_cut_stats),
                       PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        pt->cut_log[chunk] = p;
    }
    return &pt->cut_log[chunk][len % PY_CHUNK_NODES];
}

/* Whether the k-th step boundary of a thread is cut through its ring (see the top). */
static int py_cut_ringed(uint32_t k)
{
    return k <= 8 || k == 16 || k == PY_CUT_RING_MAX;
}

/* n's counts at cut k (its own time up to the cut added when it is on the stack). */
static void py_cut_record(struct py_thread *pt, struct py_node *n, uint32_t k, uint64_t add_total,
                          uint64_t add_self)
{
    uint64_t v[5] = {atomic_load_explicit(&n->calls, memory_order_relaxed),
                     atomic_load_explicit(&n->total, memory_order_relaxed) + add_total,
                     atomic_load_explicit(&n->self, memory_order_relaxed) + add_self,
                     atomic_load_explicit(&n->api_calls, memory_order_relaxed),
                     atomic_load_explicit(&n->api_ticks, memory_order_relaxed)};
    uint32_t before = n->cut_mark; /* the cut of its last record */
    n->cut_mark = k;
    if (py_cut_ringed(k) || before < pt->cut_ringed) {
        struct prof_thread *t;
        struct prof_rec_py_cut_stats *rec = py_cut_reserve(pt, sizeof *rec, &t);
        if (rec) {
            py_cut_stats(rec, n->id, k, v);
            ring_commit(&t->ring);
        }
        return;
    }
    struct prof_rec_py_cut_stats *e = py_cut_log_next(pt);
    if (!e) {
        py_cut_fail(pt);
        return;
    }
    py_cut_stats(e, n->id, k, v);
    atomic_fetch_add_explicit(&pt->cut_log_len, 1, memory_order_release);
}

void python_tree_cut_entered(struct py_thread *pt, struct py_node *n)
{
    if (atomic_load_explicit(&pt->cut_failed, memory_order_relaxed))
        n->cut_mark = pt->cuts; /* nothing more is written */
    else
        py_cut_record(pt, n, pt->cuts, 0, 0);
}

/* prof_py_cut: on the thread ending a step, at the step's boundary (ticks). */
static void py_cut(uint64_t ticks)
{
    struct py_thread *pt = python_tree_self();
    if (!pt || window_active || pt->cut_bounds == UINT32_MAX ||
        atomic_load_explicit(&pt->cut_failed, memory_order_relaxed) ||
        !atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return;
    uint32_t k = ++pt->cut_bounds, gen = 0;
    int ringed = py_cut_ringed(k);
    if (ringed)
        pt->cut_ringed = k;
    else { /* a new latest cut: its log starts empty */
        gen = atomic_load_explicit(&pt->cut_gen, memory_order_relaxed);
        atomic_store_explicit(&pt->cut_gen, gen + 1, memory_order_relaxed); /* odd */
        atomic_thread_fence(memory_order_release);
        atomic_store_explicit(&pt->cut_log_len, 0, memory_order_relaxed);
        pt->cut_kept = k;
        pt->cut_kept_ticks = ticks;
    }
    /* The calls under way: their time up to the cut, their self time less the call above. */
    for (uint32_t d = 0; d < pt->depth; d++) {
        const struct py_frame *f = &pt->stack[d];
        uint64_t total = ticks > f->start ? ticks - f->start : 0;
        uint64_t inner = d + 1 < pt->depth && ticks > f[1].start ? ticks - f[1].start : 0;
        uint64_t used = f->child + inner;
        py_cut_record(pt, f->node, k, total, total > used ? total - used : 0);
    }
    pt->cuts = k; /* every other node's counts are taken at its next entry */
    if (!ringed) {
        atomic_store_explicit(&pt->cut_gen, gen + 2, memory_order_release); /* even */
        return;
    }
    struct prof_thread *t;
    struct prof_rec_py_cut *rec = py_cut_reserve(pt, sizeof *rec, &t);
    if (rec) {
        py_cut_mark(rec, pt->tid, k, ticks);
        ring_commit(&t->ring);
    }
}

/* The collector's, on each pass over pt: when the process or the thread ends, the latest
 * cut's log (copied first, then written if no cut was being taken meanwhile; what a thread
 * that goes on logs after that, at a later such pass); a thread whose records could not
 * all be kept or written is said (cut 0). */
void python_tree_cut_drain(struct py_thread *pt, int last)
{
    struct prof_rec_py_cut mark;
    int failed = 1;
    if (atomic_compare_exchange_strong(&pt->cut_failed, &failed, 2)) {
        py_cut_mark(&mark, pt->tid, 0, 0);
        collector_write(&mark, sizeof mark);
    }
    if (failed || (!last && !atomic_load_explicit(&pt->exited, memory_order_acquire)))
        return;
    uint32_t gen = atomic_load_explicit(&pt->cut_gen, memory_order_acquire);
    uint32_t k = pt->cut_kept, len = atomic_load_explicit(&pt->cut_log_len, memory_order_acquire);
    uint64_t ticks = pt->cut_kept_ticks;
    uint32_t from = k == pt->cut_kept_written ? pt->cut_log_written : 0;
    if ((gen & 1) || !k || (k == pt->cut_kept_written && len <= from))
        return; /* (a cut under way as the process ends: the ones written stand) */
    size_t size = (size_t)(len - from) * sizeof(struct prof_rec_py_cut_stats);
    struct prof_rec_py_cut_stats *copy =
        size ? mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
    if (copy == MAP_FAILED)
        return;
    for (uint32_t i = from; i < len; i++)
        copy[i - from] = pt->cut_log[i / PY_CHUNK_NODES][i % PY_CHUNK_NODES];
    atomic_thread_fence(memory_order_acquire);
    if (atomic_load_explicit(&pt->cut_gen, memory_order_relaxed) == gen) {
        for (uint32_t i = 0; i < len - from; i++)
            collector_write(&copy[i], sizeof copy[i]);
        if (k != pt->cut_kept_written) {
            py_cut_mark(&mark, pt->tid, k, ticks);
            collector_write(&mark, sizeof mark);
        }
        pt->cut_kept_written = k;
        pt->cut_log_written = len;
    }
    if (copy)
        munmap(copy, size);
}

void python_tree_cut_reset(struct py_thread *pt, uint32_t count)
{
    pt->cuts = pt->cut_bounds = pt->cut_ringed = pt->cut_kept = 0;
    pt->cut_kept_written = pt->cut_log_written = 0;
    atomic_store(&pt->cut_log_len, 0);
    atomic_store(&pt->cut_gen, 0);
    atomic_store(&pt->cut_failed, 0);
    for (uint32_t i = 0; i < count; i++) {
        struct py_node *n = &pt->chunks[i / PY_CHUNK_NODES][i % PY_CHUNK_NODES];
        n->cut_mark = 0;
    }
}

void python_tree_cut_free(struct py_thread *pt)
{
    for (uint32_t c = 0; c < PY_MAX_CHUNKS && pt->cut_log[c]; c++)
        munmap(pt->cut_log[c], PY_CHUNK_NODES * sizeof(struct prof_rec_py_cut_stats));
}

void python_tree_cuts_init(void)
{
    prof_py_cut = py_cut;
}
