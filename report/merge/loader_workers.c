/* loader_workers: what a process's DataLoader worker processes ran, taken before the report
 * leaves them out (jobs_select), so that the data-loading finding can name the work the
 * step thread waits for: with workers, the main process only waits (the work is theirs).
 * Each worker's model keeps its main thread's busiest function (steps.worker_hot, from its
 * trace or its summary); the workers of one parent are merged by that function. */
#include "loader_workers.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "hashmap.h"
#include "jobs.h"

static struct loader_workers *noted;
static size_t nnoted, cap_noted;

static int loader_same(const char *a, const char *b)
{
    return !strcmp(a ? a : "", b ? b : "");
}

static int loader_worker_of(const struct model_process *w, const struct model_process *parent)
{
    return w != parent && w->ppid >= 0 && w->ppid == parent->pid &&
           loader_same(w->host, parent->host) && loader_same(w->run_id, parent->run_id);
}

/* One parent's workers (w[0, n), indices in procs): the function with the most time over
 * them, of those each worker keeps (its busiest few: two workers whose busiest differ by a
 * few ms still add up over one). */
static int loader_edge_cmp(const void *a, const void *b)
{
    const uint64_t *x = a, *y = b; /* (time, 1 start / 0 end): an end before a start */
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] > y[1]) - (x[1] < y[1]);
}

/* The most of workers w[0, n) alive at once: from each one's fork (its proc_start_ticks,
 * /proc's clock ticks since boot: a forked worker's other times start at its parent's
 * start) to its end; 0: not known. */
static size_t loader_at_once(struct model_process *const *procs, const size_t *w, size_t n)
{
    long hz = sysconf(_SC_CLK_TCK);
    uint64_t(*edge)[2] = malloc((2 * n + 1) * sizeof *edge);
    if (!edge)
        report_oom();
    for (size_t i = 0; i < n; i++) {
        const char *ticks = model_meta_get(procs[w[i]], "proc_start_ticks");
        if (!ticks || hz <= 0) {
            free(edge);
            return 0;
        }
        edge[2 * i][0] = strtoull(ticks, NULL, 10) * (1000000000ull / (uint64_t)hz);
        edge[2 * i][1] = 1;
        edge[2 * i + 1][0] = procs[w[i]]->wall_end_ns;
        edge[2 * i + 1][1] = 0;
    }
    qsort(edge, 2 * n, sizeof *edge, loader_edge_cmp);
    size_t alive = 0, most = 0;
    for (size_t i = 0; i < 2 * n; i++) {
        alive = edge[i][1] ? alive + 1 : alive ? alive - 1 : 0;
        most = alive > most ? alive : most;
    }
    free(edge);
    return most;
}

static void loader_workers_merge(struct model_process *const *procs, const size_t *w, size_t n,
                                 const struct model_process *parent)
{
    struct loader_workers x = {parent, n, loader_at_once(procs, w, n), NULL, NULL, 0, 0};
    for (size_t i = 0; i < n; i++) {
        const struct model_steps *st = &procs[w[i]]->steps;
        x.busy_ns += st->worker_hot[0].step;
        for (size_t j = 0; j < st->nworker_hot; j++) {
            const struct model_step_hot *h = &st->worker_hot[j];
            uint64_t ns = 0; /* h's function over every worker */
            for (size_t k = 0; k < n; k++) {
                const struct model_steps *other = &procs[w[k]]->steps;
                for (size_t m = 0; m < other->nworker_hot; m++)
                    if (!strcmp(other->worker_hot[m].name, h->name)) {
                        ns += other->worker_hot[m].self_ns;
                        break;
                    }
            }
            if (ns > x.self_ns) {
                x.self_ns = ns;
                x.name = h->name;
                x.caller = h->caller;
            }
        }
    }
    x.name = report_strdup(x.name ? x.name : "");
    x.caller = report_strdup(x.caller ? x.caller : "");
    noted = report_grow(noted, &cap_noted, nnoted + 1, sizeof *noted);
    noted[nnoted++] = x;
}

static int loader_pair_cmp(const void *a, const void *b)
{
    const size_t *x = a, *y = b; /* (parent, worker) */
    return x[0] != y[0] ? (x[0] < y[0] ? -1 : 1) : (x[1] > y[1]) - (x[1] < y[1]);
}

void loader_workers_note(struct model_process *const *procs, size_t n)
{
    /* the other processes by pid (index + 1; a pid two of them share: looked for in turn) */
    struct u64map by_pid;
    u64map_init(&by_pid);
    for (size_t i = 0; i < n; i++)
        if (procs[i]->pid >= 0 && strcmp(jobs_role(procs[i]), "worker")) {
            uint64_t *slot = u64map_slot(&by_pid, (uint64_t)procs[i]->pid);
            if (!slot)
                report_oom();
            *slot = *slot ? UINT64_MAX : i + 1;
        }
    size_t(*pairs)[2] = NULL, npairs = 0, cap = 0;
    for (size_t i = 0; i < n; i++) {
        const struct model_process *w = procs[i];
        if (!w->steps.nworker_hot || w->ppid < 0)
            continue;
        const uint64_t *at = u64map_find(&by_pid, (uint64_t)w->ppid);
        size_t parent = SIZE_MAX;
        if (at && *at != UINT64_MAX && loader_worker_of(w, procs[*at - 1]))
            parent = *at - 1;
        for (size_t k = 0; at && *at == UINT64_MAX && k < n && parent == SIZE_MAX; k++)
            if (strcmp(jobs_role(procs[k]), "worker") && loader_worker_of(w, procs[k]))
                parent = k;
        if (parent == SIZE_MAX)
            continue;
        pairs = report_grow(pairs, &cap, npairs + 1, sizeof *pairs);
        pairs[npairs][0] = parent;
        pairs[npairs++][1] = i;
    }
    u64map_free(&by_pid);
    if (npairs)
        qsort(pairs, npairs, sizeof *pairs, loader_pair_cmp);
    size_t *w = malloc((npairs + 1) * sizeof *w);
    if (!w)
        report_oom();
    for (size_t a = 0, b; a < npairs; a = b) {
        for (b = a; b < npairs && pairs[b][0] == pairs[a][0]; b++)
            w[b - a] = pairs[b][1];
        loader_workers_merge(procs, w, b - a, procs[pairs[a][0]]);
    }
    free(w);
    free(pairs);
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
