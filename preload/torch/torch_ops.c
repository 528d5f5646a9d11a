/* PyTorch operators: the op stack of each thread, fed by the bridge's begin/end hooks.
 *
 * Two outputs. The tables come from a per-thread op tree (a node is parent node + op name
 * + input shapes) whose counters the owning thread updates when an op ends and the
 * collector writes as TORCH_NODE / TORCH_STATS records (see trace_format.h): nothing is
 * ever dropped there, whatever the op rate. The timeline comes from one TORCH_OP span per
 * op, written into the thread's ring as space allows (a full ring drops the span, counted
 * as lost; the report says how many spans it kept). The few scopes that mark training
 * steps are also logged per thread and written by the collector (TORCH_SCOPE), never lost.
 *
 * Counting follows torch.profiler's key_averages() (torch/autograd/profiler_util.py,
 * EventList._remove_dup_nodes): an op that is the only child of an op of the same name is
 * not counted; its self time and self memory go to that parent. It is what a wrapper op
 * that re-dispatches to itself looks like: aten::div_(Tensor, Scalar) calls
 * aten::div_(Tensor, Tensor), aten::mean calls aten::mean.out (both named aten::mean),
 * aten::abs calls aten::abs.out. torch decides "only child" on microsecond-truncated
 * times, so its own counts of these ops wander from run to run by a few; here the
 * nesting is exact. Ops torch.profiler leaves out of its tables altogether (_filter_name)
 * are not recorded at all.
 *
 * Memory follows torch.profiler's profile_memory: an op's CPU Mem is what the allocator
 * handed out minus what it took back while the op ran (frees of blocks allocated in other
 * ops, or before, included; blocks allocated before recording started are unknown and not
 * counted, as torch's size table does not know them either), Self CPU Mem the part with
 * this op innermost. torch matches a memory event to every op of any thread whose
 * microsecond-truncated window holds it; here an event belongs to the ops open on the
 * thread that made it, at the moment it made it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "attach.h"
#include "clock.h"
#include "collector.h"
#include "emit.h"
#include "stacks.h"
#include "settings.h"
#include "torch_ops.h"
#include "window.h"

#include "torch_ops_tree.h"

static __thread struct torch_thread *torch_tls PROF_TLS;
struct torch_thread *_Atomic torch_threads;
static pthread_key_t torch_thread_key;
static _Atomic uint32_t torch_next_node_id = 1;
static _Atomic int torch_noted_limits;

/* torch.profiler's _filter_name: utility ops it never shows. */
static const char *const torch_filtered_names[] = {"profiler::_record_function_enter",
                                                   "profiler::_record_function_enter_new",
                                                   "profiler::_record_function_exit",
                                                   "aten::is_leaf",
                                                   "aten::output_nr",
                                                   "aten::_version"};

static void torch_thread_exited(void *arg)
{
    struct torch_thread *tt = arg;
    if (tt == torch_tls)
        torch_tls = NULL;
    /* the collector frees it after writing what it holds */
    atomic_store_explicit(&tt->exited, 1, memory_order_release);
}

static struct torch_thread *torch_thread_new(void)
{
    /* mmap, not malloc: zeroed and never re-entering an allocator the op may hold. */
    struct torch_thread *tt =
        mmap(NULL, sizeof *tt, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (tt == MAP_FAILED)
        return NULL;
    tt->tid = (uint32_t)syscall(SYS_gettid);
    struct torch_thread *head = atomic_load(&torch_threads);
    do {
        atomic_store_explicit(&tt->next, head, memory_order_relaxed);
    } while (!atomic_compare_exchange_weak(&torch_threads, &head, tt));
    torch_tls = tt;
    pthread_setspecific(torch_thread_key, tt);
    return tt;
}

static void torch_note_limits(void)
{
    if (!atomic_exchange(&torch_noted_limits, 1))
        collector_note("PyTorch ops nested deeper than %d, or beyond %d op paths per thread, "
                       "are not counted",
                       TORCH_MAX_DEPTH, TORCH_CHUNK_NODES * TORCH_MAX_CHUNKS);
}

static uint32_t torch_intern(const char *text)
{
    prof_tls_busy++; /* interning allocates */
    uint32_t sid = collector_intern(text);
    prof_tls_busy--;
    return sid;
}

/* A name: found by its pointer (two ways per set: operator names are static, and two of
 * them may share a set), else by its text's hash (probing a few slots from its own, so
 * that two names of one hash set do not evict each other op after op), else interned and
 * copied into the first free text slot of those (its own when all are taken). The text is
 * compared in both cases: an owned name's memory is reused by later, different names.
 * (glibc's strcmp: measured cheaper here than an inline loop over long names.) */
#define TORCH_TEXT_PROBES 8

/* The text's hash, eight bytes a step (a byte a step cost 70 ns on an autograd node's
 * 51-byte "autograd::engine::evaluate_function: ..." name, which takes this path at every
 * op: its memory is a new std::string's), each word mixed in, then the whole mixed again:
 * every bit of the slot's index depends on every byte (with FNV-1a's bits alone,
 * aten::zeros and aten::zero_ took one slot in turn, op after op). */
static inline uint64_t torch_text_hash(const char *text)
{
    size_t len = strlen(text);
    uint64_t h = 0xcbf29ce484222325ull ^ len, w;
    for (; len >= 8; len -= 8, text += 8) {
        memcpy(&w, text, 8);
        h = (h ^ w) * 0x9E3779B97F4A7C15ull;
        h ^= h >> 29;
    }
    w = 0;
    memcpy(&w, text, len);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h;
}

static inline int torch_name_is(const struct torch_name_slot *s, const char *name)
{
    if (s->ptr != name)
        return 0;
    if (s->fits)
        return strcmp(s->inline_text, name) == 0;
    return s->text->text && strcmp(s->text->text, name) == 0;
}

static const struct torch_name_slot *torch_name(struct torch_thread *tt, const char *name)
{
    uint64_t h = (uint64_t)(uintptr_t)name * 0x9E3779B97F4A7C15ull;
    struct torch_name_slot *s = &tt->names[(h >> 40) & (TORCH_NAME_SLOTS - 2)];
    if (torch_name_is(&s[0], name))
        return &s[0];
    if (torch_name_is(&s[1], name))
        return &s[1];
    h = torch_text_hash(name);
    struct torch_text_slot *t = NULL, *home = &tt->texts[h & (TORCH_TEXT_SLOTS - 1)];
    for (unsigned i = 0; i < TORCH_TEXT_PROBES && !t; i++) {
        struct torch_text_slot *c = &tt->texts[(h + i) & (TORCH_TEXT_SLOTS - 1)];
        if (c->text && c->hash == h && strcmp(c->text, name) == 0)
            t = c;
    }
    if (!t) {
        for (unsigned i = 0; i < TORCH_TEXT_PROBES && !t; i++) {
            struct torch_text_slot *c = &tt->texts[(h + i) & (TORCH_TEXT_SLOTS - 1)];
            if (!c->text)
                t = c;
        }
        if (!t)
            t = home;
        prof_tls_busy++;
        uint32_t sid = collector_intern(name);
        char *copy = strdup(name);
        free(t->text);
        prof_tls_busy--;
        t->hash = h;
        t->text = copy; /* NULL when out of memory: found by neither path, interned again */
        t->sid = sid;
        t->filtered = 0;
        t->kept = prof_torch_scope_kept(name);
        for (size_t i = 0; i < sizeof torch_filtered_names / sizeof *torch_filtered_names; i++)
            if (strcmp(name, torch_filtered_names[i]) == 0)
                t->filtered = 1;
    }
    s[1] = s[0]; /* the set's other way keeps the name found before */
    s[0].ptr = name;
    s[0].text = t;
    s[0].sid = t->sid;
    s[0].filtered = (uint8_t)t->filtered;
    s[0].kept = (uint8_t)t->kept;
    size_t len = t->text ? strlen(t->text) : TORCH_NAME_INLINE;
    s[0].fits = len < TORCH_NAME_INLINE;
    if (s[0].fits)
        memcpy(s[0].inline_text, t->text, len + 1);
    return &s[0];
}

/* ---- the tree ---- */

static inline uint32_t torch_node_hash(const struct torch_node *parent, uint32_t name,
                                       uint32_t shapes)
{
    uint64_t h =
        ((uint64_t)(uintptr_t)parent ^ ((uint64_t)name << 32 | shapes)) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32);
}

static int torch_table_grow(struct torch_thread *tt)
{
    uint32_t cap = tt->table ? (tt->table_mask + 1) * 2 : 256;
    prof_tls_busy++; /* our own allocations are not tensor memory */
    struct torch_node **t = calloc(cap, sizeof *t);
    prof_tls_busy--;
    if (!t)
        return -1;
    for (uint32_t i = 0; tt->table && i <= tt->table_mask; i++) {
        struct torch_node *n = tt->table[i];
        if (!n)
            continue;
        uint32_t j = torch_node_hash(n->parent, n->name_sid, n->shapes_sid) & (cap - 1);
        while (t[j])
            j = (j + 1) & (cap - 1);
        t[j] = n;
    }
    prof_tls_busy++;
    free(tt->table);
    prof_tls_busy--;
    tt->table = t;
    tt->table_mask = cap - 1;
    return 0;
}

static struct torch_node *torch_node_new(struct torch_thread *tt, struct torch_node *parent,
                                         const struct torch_frame *f)
{
    uint32_t count = atomic_load_explicit(&tt->node_count, memory_order_relaxed);
    uint32_t chunk = count / TORCH_CHUNK_NODES;
    if (chunk >= TORCH_MAX_CHUNKS)
        return NULL;
    if (!tt->chunks[chunk]) {
        void *p = mmap(NULL, TORCH_CHUNK_NODES * sizeof(struct torch_node), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return NULL;
        tt->chunks[chunk] = p;
    }
    struct torch_node *n = &tt->chunks[chunk][count % TORCH_CHUNK_NODES];
    n->id = atomic_fetch_add_explicit(&torch_next_node_id, 1, memory_order_relaxed);
    n->name_sid = f->name_sid;
    n->shapes_sid = f->shapes_sid;
    n->scope = f->scope;
    n->parent = parent;
    /* release: the collector that reads the new count sees the node's fields */
    atomic_store_explicit(&tt->node_count, count + 1, memory_order_release);
    return n;
}

static struct torch_node *torch_node_find(struct torch_thread *tt, struct torch_node *parent,
                                          const struct torch_frame *f)
{
    struct torch_node **last = parent ? &parent->last_child : &tt->root_last;
    struct torch_node *prev = *last, *n = prev;
    if (n && n->name_sid == f->name_sid && n->shapes_sid == f->shapes_sid)
        return n;
    if (prev && (n = prev->next_call) && n->name_sid == f->name_sid &&
        n->shapes_sid == f->shapes_sid) {
        *last = n;
        return n;
    }
    if ((tt->table_used + 1) * 2 > (tt->table ? tt->table_mask + 1 : 0) &&
        torch_table_grow(tt) != 0)
        return NULL;
    uint32_t j = torch_node_hash(parent, f->name_sid, f->shapes_sid) & tt->table_mask;
    for (; (n = tt->table[j]); j = (j + 1) & tt->table_mask)
        if (n->parent == parent && n->name_sid == f->name_sid && n->shapes_sid == f->shapes_sid)
            break;
    if (!n && (n = torch_node_new(tt, parent, f))) {
        tt->table[j] = n;
        tt->table_used++;
    }
    if (n) {
        if (prev)
            prev->next_call = n;
        *last = n;
    }
    return n;
}

static inline void torch_add_u(_Atomic uint64_t *c, uint64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

static inline void torch_add_i(_Atomic int64_t *c, int64_t v)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + v,
                          memory_order_relaxed);
}

/* One counted call (counted = 1) or one folded into its parent (counted = 0: only raw). */
static void torch_node_add(struct torch_node *n, const struct torch_tally *t, int counted)
{
    if (!n)
        return;
    torch_add_u(&n->raw_calls, 1);
    if (counted) {
        torch_add_u(&n->calls, 1);
        torch_add_u(&n->total, t->total);
        torch_add_u(&n->self, t->self);
        for (int d = 0; d < 2; d++) {
            torch_add_i(&n->mem[d], t->mem[d]);
            torch_add_i(&n->self_mem[d], t->self_mem[d]);
        }
    }
    torch_add_u(&n->version, 1);
}

/* ---- the steps of PROF_STEPS ---- */

#define TORCH_STEP_SCOPE "Optimizer.step#"

/* at::RecordScope::USER_SCOPE of the loaded torch; -1 until the bridge says it. */
static int torch_user_scope = -1;

/* The outermost optimizer step scope open on this thread (its RecordFunction's address),
 * or 0. Two live RecordFunctions never share an address. */
static __thread uint64_t torch_step_handle PROF_TLS;
/* A ProfilerStep# scope began on this thread: its steps are those (prof_py_cut). */
static __thread int torch_profiler_steps PROF_TLS;

void torch_ops_installed(int user_scope)
{
    if (user_scope < 0)
        return;
    torch_user_scope = user_scope; /* the steps cut the Python trees (torch_step_begin) */
    /* Installed as torch loads, before any step: every optimizer step is counted from
     * here when the scopes are watched; not in a library attached to a running torch,
     * which saw none of the steps before. */
    if (!attach_starting() &&
        (prof_py_cut || (window_steps_on && !settings_is_set(SETTING_PROF_STEP_FUNC))))
        atomic_store(&window_torch_steps_counted, 1);
    if (!window_steps_on || settings_is_set(SETTING_PROF_STEP_FUNC))
        return;
    atomic_store(&window_steps_by_torch, 1);
    collector_add_meta("window_steps_from", "torch: record_function " TORCH_STEP_SCOPE "*");
}

#define TORCH_PROFILER_STEP_SCOPE "ProfilerStep#"

/* Whether recording or not: the window's steps are counted outside it. The ends of the
 * optimizer steps also cut the Python call tree of the thread (prof_py_cut), for the
 * report's tables of the steady steps; once a ProfilerStep began on it (the report's steps
 * are those then), the starts of the ProfilerSteps instead. Returns 1 for a ProfilerStep
 * (cut at its start, once the start is taken). */
/* An outermost optimizer step begins: counted (window_torch_steps), by its begin, so that
 * a window opening inside a step counts the step it does not record. Steps of a second
 * thread: the process's steps are no one sequence, the count is dropped. */
static void torch_step_count(void)
{
    static _Atomic int threads;
    static __thread int seen PROF_TLS;
    if (!seen) {
        seen = 1;
        if (atomic_fetch_add(&threads, 1))
            atomic_store(&window_torch_steps_counted, 0);
    }
    atomic_fetch_add_explicit(&window_torch_steps, 1, memory_order_relaxed);
}

static int torch_step_begin(const struct prof_torch_op_info *op)
{
    if (!op->name)
        return 0;
    if (!torch_step_handle && !strncmp(op->name, TORCH_STEP_SCOPE, strlen(TORCH_STEP_SCOPE)) &&
        (prof_py_cut || atomic_load_explicit(&window_steps_by_torch, memory_order_relaxed))) {
        torch_step_handle = op->handle;
        torch_step_count();
    }
    if (prof_py_cut &&
        !strncmp(op->name, TORCH_PROFILER_STEP_SCOPE, strlen(TORCH_PROFILER_STEP_SCOPE))) {
        torch_profiler_steps = 1;
        return 1;
    }
    return 0;
}

/* ---- the steps' scopes ----
 * The scopes that mark steps (TORCH_SCOPE in trace_format.h) are a handful per step, and
 * the report's steps are wrong when one is lost (two steps read as one): each is logged
 * in the thread's memory as well as spanned through its ring, and the collector writes
 * the log. Only when the collector falls TORCH_SCOPE_SLOTS chunks behind is the log full,
 * and it ends there (said by a record, the report then uses the spans). */
static void torch_scope_log(struct torch_thread *tt, const struct torch_frame *f, uint64_t end)
{
    if (atomic_load_explicit(&tt->scope_full, memory_order_relaxed))
        return;
    uint64_t len = atomic_load_explicit(&tt->scope_len, memory_order_relaxed);
    struct prof_rec_torch_scope *_Atomic *slot =
        &tt->scope_chunks[(len / TORCH_SCOPE_CHUNK) % TORCH_SCOPE_SLOTS];
    /* acquire: a slot the collector emptied is one it has read to the end */
    struct prof_rec_torch_scope *c = atomic_load_explicit(slot, memory_order_acquire);
    if (len % TORCH_SCOPE_CHUNK == 0) {
        void *p = c ? MAP_FAILED
                    : mmap(NULL, TORCH_SCOPE_CHUNK * sizeof *c, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            atomic_store_explicit(&tt->scope_full, 1, memory_order_release);
            return;
        }
        c = p;
        atomic_store_explicit(slot, c, memory_order_relaxed); /* published with scope_len */
    }
    c[len % TORCH_SCOPE_CHUNK] = (struct prof_rec_torch_scope){
        {PROF_REC_TORCH_SCOPE, sizeof *c}, f->name_sid, f->start, end};
    atomic_store_explicit(&tt->scope_len, len + 1, memory_order_release);
}

/* ---- the hooks ---- */

uint64_t torch_ops_begin(const struct prof_torch_op_info *op)
{
    int profiler_step = 0;
    if (__builtin_expect(op->scope == torch_user_scope, 0))
        profiler_step = torch_step_begin(op);
    if (prof_tls_busy || !atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return 0;
    struct torch_thread *tt = torch_tls;
    if (__builtin_expect(!tt, 0) && !(tt = torch_thread_new()))
        return 0;
    if (tt->depth >= TORCH_MAX_DEPTH) {
        torch_note_limits();
        return 0;
    }
    const struct torch_name_slot *name = op->name ? torch_name(tt, op->name) : NULL;
    if (name && name->filtered)
        return 0;
    struct torch_frame *f = &tt->stack[tt->depth];
    f->name_sid = name ? name->sid : 0;
    f->shapes_sid = op->shapes ? torch_intern(op->shapes) : 0;
    f->sequence_nr = op->sequence_nr;
    f->fwd_thread = op->fwd_thread;
    f->scope = op->scope;
    f->kept = name && name->kept && op->scope == torch_user_scope;
    f->handle = op->handle;
    f->node = torch_node_find(tt, tt->depth ? tt->stack[tt->depth - 1].node : NULL, f);
    if (!f->node)
        torch_note_limits();
    f->child_ticks = 0;
    f->mem[0] = f->mem[1] = f->self_mem[0] = f->self_mem[1] = 0;
    f->children = 0;
    f->pending = NULL;
    /* the sampler's handler on this thread reads depth, then the frame below it */
    atomic_signal_fence(memory_order_release);
    tt->depth++;
    f->start = prof_clock_ticks(); /* last: the naming above is not the op's time */
    if (__builtin_expect(profiler_step, 0))
        prof_py_cut(f->start);
    return 1;
}

static void torch_emit(const struct torch_frame *f, uint32_t depth, uint64_t end)
{
    /* No test of prof_recording: torch_ops_begin made the frame inside the capture
     * window, and an op begun there is recorded even if the window closed before its end. */
    struct prof_thread *t = emit_thread();
    if (!t)
        return;
    if (__builtin_expect(!atomic_load_explicit(&prof_collector_running, memory_order_relaxed), 0))
        collector_resume();
    uint64_t duration = end - f->start;
    if (!f->fwd_thread && duration <= UINT32_MAX && f->sequence_nr >= INT32_MIN &&
        f->sequence_nr <= INT32_MAX && f->scope != torch_user_scope) {
        struct prof_rec_torch_op_short *rec = ring_reserve(&t->ring, sizeof *rec);
        if (!rec)
            return; /* counted by the ring; the tree keeps the op */
        *rec = (struct prof_rec_torch_op_short){
            {PROF_REC_TORCH_OP_SHORT, sizeof *rec}, f->name_sid, f->start, (uint32_t)duration,
            (int32_t)f->sequence_nr, f->scope, (uint8_t)depth, 0, f->shapes_sid};
        ring_commit(&t->ring);
        return;
    }
    /* a record_function scope (an optimizer step: a training phase) may use the room the
     * ring keeps (ring_keep) */
    struct prof_rec_torch_op *rec = f->scope == torch_user_scope
                                        ? ring_reserve_kept(&t->ring, sizeof *rec)
                                        : ring_reserve(&t->ring, sizeof *rec);
    if (!rec)
        return; /* counted by the ring; the tree keeps the op */
    rec->h.type = PROF_REC_TORCH_OP;
    rec->h.size = sizeof *rec;
    rec->name_sid = f->name_sid;
    rec->start = f->start;
    rec->end = end;
    rec->sequence_nr = f->sequence_nr;
    rec->fwd_thread = f->fwd_thread;
    rec->scope = f->scope;
    rec->depth = (uint8_t)depth;
    rec->reserved = 0;
    rec->shapes_sid = f->shapes_sid;
    ring_commit(&t->ring);
}

/* The op of frame i ended at end: its tally goes to its node, or waits in its parent's
 * frame while it may be a same-name only child (see the top of the file). */
static void torch_frame_close(struct torch_thread *tt, uint32_t i, uint64_t end)
{
    struct torch_frame *f = &tt->stack[i];
    uint64_t dt = end > f->start ? end - f->start : 0;
    struct torch_tally t = {.total = dt, .self = dt > f->child_ticks ? dt - f->child_ticks : 0};
    for (int d = 0; d < 2; d++) {
        t.mem[d] = f->mem[d];
        t.self_mem[d] = f->self_mem[d];
    }
    if (f->pending) { /* its only child had its name: folded into it */
        t.self += f->pending_tally.self;
        for (int d = 0; d < 2; d++)
            t.self_mem[d] += f->pending_tally.self_mem[d];
        torch_node_add(f->pending, &f->pending_tally, 0);
        f->pending = NULL;
    }
    struct torch_frame *p = i ? &tt->stack[i - 1] : NULL;
    if (!p) {
        torch_node_add(f->node, &t, 1);
        return;
    }
    p->child_ticks += dt;
    for (int d = 0; d < 2; d++)
        p->mem[d] += f->mem[d];
    if (p->children++ == 0 && p->name_sid == f->name_sid && f->node) {
        p->pending = f->node;
        p->pending_tally = t;
        return;
    }
    if (p->pending) { /* a second child: the first was not an only child after all */
        torch_node_add(p->pending, &p->pending_tally, 1);
        p->pending = NULL;
    }
    torch_node_add(f->node, &t, 1);
}

void torch_ops_end(uint64_t handle)
{
    uint64_t end = prof_clock_ticks();
    if (__builtin_expect(handle == torch_step_handle, 0)) {
        torch_step_handle = 0;
        if (prof_py_cut && !torch_profiler_steps)
            prof_py_cut(end);
        if (atomic_load_explicit(&window_steps_by_torch, memory_order_relaxed))
            window_step_done(); /* may open or close the window */
    }
    struct torch_thread *tt = torch_tls;
    if (!tt || !tt->depth)
        return;
    /* Normally the top. Not found: an op that was not recorded, or one that ends on
     * another thread than it began on (async ops), which is not recorded. Found deeper:
     * the ops above it never ended (they ended on another thread); they are popped with
     * it, ended now. Two live RecordFunctions never share an address. */
    uint32_t i = tt->depth;
    while (i > 0 && tt->stack[i - 1].handle != handle)
        i--;
    if (i == 0)
        return;
    for (uint32_t k = tt->depth; k-- > i;)
        torch_frame_close(tt, k, end);
    tt->depth = i - 1;
    torch_frame_close(tt, i - 1, end);
    if (__builtin_expect(tt->stack[i - 1].kept, 0))
        torch_scope_log(tt, &tt->stack[i - 1], end);
    if (!prof_tls_busy)
        torch_emit(&tt->stack[i - 1], i - 1, end);
}

void torch_ops_memory(int64_t bytes, int device)
{
    struct torch_thread *tt = torch_tls;
    if (!tt || !tt->depth)
        return;
    int d = device ? 1 : 0;
    tt->stack[tt->depth - 1].self_mem[d] += bytes;
    tt->stack[tt->depth - 1].mem[d] += bytes;
}

/* In a forked child only the forking thread goes on (torch_ops_drain.c). */
static void torch_atfork_child(void)
{
    torch_ops_tree_after_fork(torch_tls);
}

/* stacks_current_torch_op: the innermost op of the thread a signal interrupted. */
static uint32_t torch_ops_current(void)
{
    const struct torch_thread *tt = torch_tls;
    uint32_t depth = tt ? tt->depth : 0;
    atomic_signal_fence(memory_order_acquire);
    return depth ? tt->stack[depth - 1].name_sid : 0;
}

void torch_ops_init(void)
{
    stacks_current_torch_op = torch_ops_current;
    pthread_key_create(&torch_thread_key, torch_thread_exited);
    pthread_atfork(NULL, NULL, torch_atfork_child);
    collector_add_meta("torch.scheme", "calltree");
    collector_add_source(torch_ops_drain);
}
