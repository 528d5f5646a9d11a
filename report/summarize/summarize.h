/* summarize: `profreport --summarize [-j N] PATH...`, the per-node step of a large merge.
 * Every X.trace under PATH (files, or the *.trace of directories) is read and reduced to
 * X.summary beside it (summary_file.h), by N worker processes (default: the CPUs), each
 * reading one trace at a time. A trace whose summary is bound to it (made from it as it
 * is now, owned like it) is skipped.
 *
 * Run through the job's own launcher (`srun --ntasks-per-node=1 profreport --summarize
 * out/`, `mpirun --map-by ppr:1:node ...`), each task takes its share of the traces: the
 * k-th of the sorted list when k modulo the tasks is its task number, read from
 * SLURM_PROCID/SLURM_NTASKS, OMPI_COMM_WORLD_RANK/_SIZE or PMI_RANK/PMI_SIZE. */
#ifndef REPORT_SUMMARIZE_H
#define REPORT_SUMMARIZE_H

#include <stdio.h>

/* Returns the exit status: 0 every summary written or up to date, 1 some trace could not
 * be read or its summary written (said on stderr). A line of totals goes to out. */
int summarize_run(char *const *paths, int npaths, long jobs, FILE *out);

/* X.trace -> X.summary (malloc'd); any other name gets the suffix added. */
char *summarize_summary_path(const char *trace);
/* 1 when the summary may stand for the trace (summary_file_bound). */
int summarize_up_to_date(const char *trace, const char *summary);

#endif
