/* loader_workers: what a process's DataLoader worker processes ran, taken before the report
 * leaves them out (jobs_select), so that the data-loading finding can name the work the
 * step thread waits for: with workers, the main process only waits (the work is theirs).
 * Each worker's model keeps its main thread's busiest function (steps.worker_hot, from its
 * trace or its summary); the workers of one parent are merged by that function. */
#include "loader_workers.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "jobs.h"

static struct loader_workers *noted;
static size_t nnoted, cap_noted;

static int loader_worker_of(const struct model_process *w, const struct model_process *parent)
{
    return w != parent && w->ppid >= 0 && w->ppid == parent->pid &&
           !strcmp(jobs_role(w), "worker") &&
           !strcmp(w->host ? w->host : "", parent->host ? parent->host : "");
}

/* parent's workers: the function most of them name, by its time over them all */
static void loader_workers_of_parent(struct model_process *const *procs, size_t n,
                                     const struct model_process *parent)
{
    struct loader_workers w = {parent, 0, NULL, NULL, 0, 0};
    for (size_t i = 0; i < n; i++) {
        if (!loader_worker_of(procs[i], parent) || !procs[i]->steps.nworker_hot)
            continue;
        w.workers++;
        const struct model_step_hot *h = procs[i]->steps.worker_hot;
        w.busy_ns += h->step;
        uint64_t ns = 0; /* h's function over every worker */
        for (size_t k = 0; k < n; k++)
            if (loader_worker_of(procs[k], parent) && procs[k]->steps.nworker_hot &&
                !strcmp(procs[k]->steps.worker_hot[0].name, h->name))
                ns += procs[k]->steps.worker_hot[0].self_ns;
        if (ns > w.self_ns) {
            w.self_ns = ns;
            w.name = h->name;
            w.caller = h->caller;
        }
    }
    if (!w.workers)
        return;
    w.name = report_strdup(w.name);
    w.caller = report_strdup(w.caller);
    noted = report_grow(noted, &cap_noted, nnoted + 1, sizeof *noted);
    noted[nnoted++] = w;
}

void loader_workers_note(struct model_process *const *procs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (strcmp(jobs_role(procs[i]), "worker") == 0)
            continue;
        for (size_t k = 0; k < n; k++)
            if (loader_worker_of(procs[k], procs[i]) && procs[k]->steps.nworker_hot) {
                loader_workers_of_parent(procs, n, procs[i]);
                break;
            }
    }
}

const struct loader_workers *loader_workers_of(const struct model_process *parent)
{
    for (size_t i = 0; i < nnoted; i++)
        if (noted[i].parent == parent)
            return &noted[i];
    return NULL;
}

void loader_workers_free(void)
{
    for (size_t i = 0; i < nnoted; i++) {
        free(noted[i].name);
        free(noted[i].caller);
    }
    free(noted);
    noted = NULL;
    nnoted = cap_noted = 0;
}
