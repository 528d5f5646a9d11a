/* The collector's side of the PyTorch op trees (torch_ops_tree.h): each thread's new nodes
 * and changed counts written as TORCH_NODE / TORCH_STATS records, its log of step scopes as
 * TORCH_SCOPE records, ended threads freed, the trees reset in a forked child. */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "torch_ops_tree.h"
#include "tree_drain.h"

/* The collector's: the log's new entries, after the thread's THREAD record. */
static void torch_scope_drain(struct torch_thread *tt, struct tree_drain_pass *d)
{
    /* full before len: the entries before the end are all counted in len */
    int full = atomic_load_explicit(&tt->scope_full, memory_order_acquire);
    uint64_t len = atomic_load_explicit(&tt->scope_len, memory_order_acquire);
    if (tt->scope_written == len && (!full || tt->scope_full_written))
        return;
    if (!d->thread_written) {
        collector_write_thread(d->tid);
        d->thread_written = 1;
    }
    for (uint64_t i = tt->scope_written; i < len; i++) {
        struct prof_rec_torch_scope *_Atomic *slot =
            &tt->scope_chunks[(i / TORCH_SCOPE_CHUNK) % TORCH_SCOPE_SLOTS];
        struct prof_rec_torch_scope *c = atomic_load_explicit(slot, memory_order_relaxed);
        collector_write(&c[i % TORCH_SCOPE_CHUNK], sizeof *c);
        /* a chunk written whole: the thread has moved past it for good */
        if ((i + 1) % TORCH_SCOPE_CHUNK == 0 && !collector_drain_in_signal()) {
            munmap(c, TORCH_SCOPE_CHUNK * sizeof *c);
            atomic_store_explicit(slot, NULL, memory_order_release);
        }
    }
    tt->scope_written = len;
    if (full && !tt->scope_full_written) {
        struct prof_rec_torch_scope mark = {{PROF_REC_TORCH_SCOPE, sizeof mark}, 0, 0, 0};
        collector_write(&mark, sizeof mark);
        tt->scope_full_written = 1;
    }
}

void torch_scope_free(struct torch_thread *tt)
{
    for (int i = 0; i < TORCH_SCOPE_SLOTS; i++) {
        struct prof_rec_torch_scope *c = atomic_load(&tt->scope_chunks[i]);
        if (c)
            munmap(c, TORCH_SCOPE_CHUNK * sizeof *c);
        atomic_store(&tt->scope_chunks[i], NULL);
    }
    atomic_store(&tt->scope_len, 0);
    atomic_store(&tt->scope_full, 0);
    tt->scope_written = 0;
    tt->scope_full_written = 0;
}

static struct torch_node *torch_node_at(struct torch_thread *tt, uint32_t i)
{
    return &tt->chunks[i / TORCH_CHUNK_NODES][i % TORCH_CHUNK_NODES];
}

static void torch_drain_thread(void *thread, int fresh)
{
    struct torch_thread *tt = thread;
    struct tree_drain_pass d;
    tree_drain_begin(&d, tt->tid, atomic_load_explicit(&tt->node_count, memory_order_acquire),
                     &tt->nodes_defined, fresh);
    for (uint32_t i = 0; i < d.count; i++) {
        struct torch_node *n = torch_node_at(tt, i);
        uint64_t version = atomic_load_explicit(&n->version, memory_order_relaxed);
        if (fresh)
            n->written_version = 0;
        int define;
        if (!tree_drain_due(&d, i, version != n->written_version, &define))
            continue;
        if (define) {
            struct prof_rec_torch_node rec;
            memset(&rec, 0, sizeof rec);
            rec.h.type = PROF_REC_TORCH_NODE;
            rec.h.size = sizeof rec;
            rec.node_id = n->id;
            rec.parent_id = n->parent ? n->parent->id : 0;
            rec.name_sid = n->name_sid;
            rec.shapes_sid = n->shapes_sid;
            rec.scope = n->scope;
            collector_write(&rec, sizeof rec);
        }
        if (version != n->written_version) {
            struct prof_rec_torch_stats st;
            memset(&st, 0, sizeof st);
            st.h.type = PROF_REC_TORCH_STATS;
            st.h.size = sizeof st;
            st.node_id = n->id;
            st.calls = atomic_load_explicit(&n->calls, memory_order_relaxed);
            st.raw_calls = atomic_load_explicit(&n->raw_calls, memory_order_relaxed);
            st.total_ticks = atomic_load_explicit(&n->total, memory_order_relaxed);
            st.self_ticks = atomic_load_explicit(&n->self, memory_order_relaxed);
            st.cpu_mem = atomic_load_explicit(&n->mem[0], memory_order_relaxed);
            st.self_cpu_mem = atomic_load_explicit(&n->self_mem[0], memory_order_relaxed);
            st.dev_mem = atomic_load_explicit(&n->mem[1], memory_order_relaxed);
            st.self_dev_mem = atomic_load_explicit(&n->self_mem[1], memory_order_relaxed);
            collector_write(&st, sizeof st);
            n->written_version = version;
        }
    }
    torch_scope_drain(tt, &d);
    tree_drain_end(&d);
}

static void torch_free_thread(void *thread)
{
    struct torch_thread *tt = thread;
    for (uint32_t c = 0; c < TORCH_MAX_CHUNKS && tt->chunks[c]; c++)
        munmap(tt->chunks[c], TORCH_CHUNK_NODES * sizeof(struct torch_node));
    for (int i = 0; i < TORCH_TEXT_SLOTS; i++)
        free(tt->texts[i].text);
    free(tt->table);
    torch_scope_free(tt);
    munmap(tt, sizeof *tt);
}

static void *torch_thread_next(void *thread)
{
    return atomic_load_explicit(&((struct torch_thread *)thread)->next, memory_order_relaxed);
}

static void torch_thread_set_next(void *thread, void *next)
{
    atomic_store_explicit(&((struct torch_thread *)thread)->next, next, memory_order_relaxed);
}

/* read before the counters: what the thread did last is in them */
static int torch_thread_ended(void *thread)
{
    return atomic_load_explicit(&((struct torch_thread *)thread)->exited, memory_order_acquire);
}

void torch_ops_drain(int fresh, int last)
{
    (void)last;
    static const struct tree_drain_list list = {torch_thread_next,  torch_thread_set_next,
                                                torch_thread_ended, torch_drain_thread,
                                                torch_free_thread,  NULL};
    tree_drain_threads(atomic_load(&torch_threads), &list, fresh);
}

/* In a forked child only the forking thread goes on: its tree restarts at zero (the
 * parent's file has what came before), the other threads' trees are dropped. */
void torch_ops_tree_after_fork(struct torch_thread *self)
{
    for (struct torch_thread *tt = atomic_load(&torch_threads); tt;) {
        struct torch_thread *next = atomic_load_explicit(&tt->next, memory_order_relaxed);
        if (tt != self)
            torch_free_thread(tt);
        tt = next;
    }
    atomic_store(&torch_threads, self);
    if (!self)
        return;
    atomic_store(&self->next, NULL);
    self->tid = (uint32_t)syscall(SYS_gettid);
    torch_scope_free(self); /* the scopes logged so far are the parent's */
    uint32_t count = atomic_load(&self->node_count);
    for (uint32_t i = 0; i < count; i++) {
        struct torch_node *n = torch_node_at(self, i);
        atomic_store(&n->calls, 0);
        atomic_store(&n->raw_calls, 0);
        atomic_store(&n->total, 0);
        atomic_store(&n->self, 0);
        for (int d = 0; d < 2; d++) {
            atomic_store(&n->mem[d], 0);
            atomic_store(&n->self_mem[d], 0);
        }
    }
    /* ops still open were entered in the parent: their time so far is the parent's */
    uint64_t now = prof_clock_ticks();
    for (uint32_t d = 0; d < self->depth; d++) {
        struct torch_frame *f = &self->stack[d];
        f->start = now;
        f->child_ticks = 0;
        f->mem[0] = f->mem[1] = f->self_mem[0] = f->self_mem[1] = 0;
        f->children = 0;
        f->pending = NULL;
    }
}
