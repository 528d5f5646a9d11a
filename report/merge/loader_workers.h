/* loader_workers: the Python work of a process's DataLoader worker processes, kept when the
 * report leaves them out (loader_workers.c). */
#ifndef REPORT_LOADER_WORKERS_H
#define REPORT_LOADER_WORKERS_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct loader_workers {
    const struct model_process *parent;
    size_t workers; /* its DataLoader worker processes */
    size_t at_once; /* the most of them alive at once: fewer than workers, they were started
                     * again (every epoch, without persistent_workers) */
    /* the function with the most self time over them, each its main thread's busiest
     * (steps.worker_hot: "time.sleep", "Dataset.__getitem__ (data.py:9)"), with its caller
     * ("called from X", "under X" or ""), that time; and the self time of every function
     * counted, summed */
    char *name, *caller;
    uint64_t self_ns, busy_ns;
};

/* Notes what the DataLoader workers of each other process in procs ran (before they are
 * left out and freed). */
void loader_workers_note(struct model_process *const *procs, size_t n);
/* parent's note, or NULL: no worker with Python calls. */
const struct loader_workers *loader_workers_of(const struct model_process *parent);
void loader_workers_free(void);

#endif
