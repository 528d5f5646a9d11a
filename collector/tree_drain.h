/* tree_drain: the collector's side of the per-thread trees of aggregated counts (Python
 * calls, python_tree_drain.c; PyTorch ops, torch_ops.c). A tree's thread appends nodes and
 * publishes their count; at each pass the collector writes, for every thread, each new
 * node's definition once and the stats of each node whose counts moved (all of them again
 * into a fresh file), then unlinks and frees the threads that ended. */
#ifndef PROF_TREE_DRAIN_H
#define PROF_TREE_DRAIN_H

#include <pthread.h>
#include <stdint.h>

/* One pass over one thread's nodes [0, count). */
struct tree_drain_pass {
    uint32_t tid, count;
    uint32_t *defined; /* the thread's nodes defined so far in the file */
    int fresh;         /* a new file: every node defined and its stats written again */
    int thread_written;
};

void tree_drain_begin(struct tree_drain_pass *d, uint32_t tid, uint32_t count, uint32_t *defined,
                      int fresh);
/* Whether node i is written now (new, or changed): then *define says whether its
 * definition is due, and the thread's THREAD record has been written before it. */
int tree_drain_due(struct tree_drain_pass *d, uint32_t i, int changed, int *define);
void tree_drain_end(struct tree_drain_pass *d);

/* The list of a layer's threads, pushed at its head by the threads themselves. */
struct tree_drain_list {
    void *(*next)(void *thread);
    void (*set_next)(void *thread, void *next); /* unlinks the one after thread */
    int (*exited)(void *thread);                /* read before the counts (acquire) */
    void (*drain)(void *thread, int fresh);     /* one tree_drain_pass over its nodes */
    void (*free)(void *thread);
    pthread_mutex_t *lock; /* held around an unlink and free; NULL: none */
};

/* Drains every thread from head; a thread that ended is unlinked and freed after its last
 * counts are written — never the head (pushes race on it), never in a signal handler (a
 * crash may be inside malloc). */
void tree_drain_threads(void *head, const struct tree_drain_list *l, int fresh);

#endif
