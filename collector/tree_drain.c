/* The per-thread trees' drain (tree_drain.h). */
#include "tree_drain.h"

#include "collector.h"

void tree_drain_begin(struct tree_drain_pass *d, uint32_t tid, uint32_t count, uint32_t *defined,
                      int fresh)
{
    *d = (struct tree_drain_pass){tid, count, defined, fresh, 0};
    if (fresh)
        *defined = 0;
}

int tree_drain_due(struct tree_drain_pass *d, uint32_t i, int changed, int *define)
{
    *define = i >= *d->defined;
    if (!*define && !changed)
        return 0;
    if (!d->thread_written) {
        collector_write_thread(d->tid);
        d->thread_written = 1;
    }
    return 1;
}

void tree_drain_end(struct tree_drain_pass *d)
{
    *d->defined = d->count;
}

void tree_drain_threads(void *head, const struct tree_drain_list *l, int fresh)
{
    void *prev = NULL;
    for (void *t = head; t;) {
        void *next = l->next(t);
        int exited = l->exited(t);
        l->drain(t, fresh);
        if (exited && prev && !collector_drain_in_signal()) {
            if (l->lock)
                pthread_mutex_lock(l->lock);
            l->set_next(prev, next);
            l->free(t);
            if (l->lock)
                pthread_mutex_unlock(l->lock);
        } else {
            prev = t;
        }
        t = next;
    }
}
