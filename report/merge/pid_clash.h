/* Two traces that claim one host and pid but are different processes: pid namespaces
 * (containers, `unshare --pid`) hand out the same small pids, and two runs sharing one
 * PROF_RUN_ID write into one folder. The traces tell them apart by what their preamble
 * recorded of the process: boot_id, proc_start_ticks, pid_ns. Views keyed by pid alone
 * (the timeline exports) keep them, and one pid on two hosts, apart by
 * pid_clash_export_pid. */
#ifndef REPORT_PID_CLASH_H
#define REPORT_PID_CLASH_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* Above every Linux pid (PID_MAX_LIMIT is 2^22 on 64-bit): pid + k * this is no real pid. */
#define PID_CLASH_STRIDE (INT64_C(1) << 22)

/* Sets pid_instance of each process: 0 for the first process of each pid, and 1, 2, ...
 * for each different one after it (on another host, or on the same one with other
 * facts); a trace of the same process (an exec'd program) shares its instance. Returns
 * how many processes share host and pid with a different one before them;
 * *example_pid, *example_host: one of them. */
size_t pid_clash_mark(struct model_process **procs, size_t n, int64_t *example_pid,
                      const char **example_host);
/* The pid a view keyed by pid shows: the pid, or pid + instance * PID_CLASH_STRIDE. */
int64_t pid_clash_export_pid(const struct model_process *p);

#endif
