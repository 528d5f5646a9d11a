/* Traces of different processes that claim one host and pid (pid_clash.h). */
#include "pid_clash.h"

#include <string.h>

/* What a trace recorded of its process, or NULL (older traces, summaries). */
static const char *pid_clash_meta(const struct model_process *p, const char *key)
{
    const char *v = model_meta_get(p, key);
    return v && *v ? v : NULL;
}

static int pid_clash_same_host(const struct model_process *a, const struct model_process *b)
{
    return !strcmp(a->host ? a->host : "", b->host ? b->host : "");
}

/* Different processes: other hosts, or a fact both traces recorded differs. Unknown facts
 * tell nothing. */
static int pid_clash_differ(const struct model_process *a, const struct model_process *b)
{
    static const char *const keys[] = {"boot_id", "proc_start_ticks", "pid_ns"};
    if (!pid_clash_same_host(a, b))
        return 1;
    for (size_t k = 0; k < sizeof keys / sizeof *keys; k++) {
        const char *x = pid_clash_meta(a, keys[k]), *y = pid_clash_meta(b, keys[k]);
        if (x && y && strcmp(x, y))
            return 1;
    }
    return 0;
}

size_t pid_clash_mark(struct model_process **procs, size_t n, int64_t *example_pid,
                      const char **example_host)
{
    size_t clashes = 0;
    for (size_t i = 0; i < n; i++) {
        struct model_process *p = procs[i];
        /* the instance of the first earlier trace of this process, else a new one */
        int next = 0, found = -1, same_host = 0;
        for (size_t j = 0; j < i && found < 0 && p->pid >= 0; j++) {
            if (procs[j]->pid != p->pid)
                continue;
            if (!pid_clash_differ(procs[j], p)) {
                found = procs[j]->pid_instance;
                continue;
            }
            next = procs[j]->pid_instance >= next ? procs[j]->pid_instance + 1 : next;
            same_host |= pid_clash_same_host(procs[j], p);
        }
        p->pid_instance = found >= 0 ? found : next;
        if (found < 0 && same_host && clashes++ == 0) {
            *example_pid = p->pid;
            *example_host = p->host ? p->host : "";
        }
    }
    return clashes;
}

int64_t pid_clash_export_pid(const struct model_process *p)
{
    return p->pid + (int64_t)p->pid_instance * PID_CLASH_STRIDE;
}
