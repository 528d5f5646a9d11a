/* preamble: the first records of a trace file — META (profiler version, pid, ppid, the
 * process's start and boot id, host, exe, argv, run id, output file, rank, world size,
 * start times, clock kind, ring size), the API_NAME table of every wrapped API, and two
 * CLOCK records (at init and now). Only the collector's drain-lock holder writes them. */
#ifndef PROF_PREAMBLE_H
#define PROF_PREAMBLE_H

#include <stddef.h>
#include <stdint.h>

#include "collector.h"

#define COLLECTOR_PROFILER_VERSION "0.1.0"

struct preamble_api_table {
    const struct prof_api_desc *table;
    size_t count;
};

struct preamble_info {
    const struct collector_config *cfg;
    char **argv;
    int argc;
    uint64_t ticks, mono, real; /* the clocks at collector_init */
    const struct preamble_api_table *tables;
    int ntables;
};

void preamble_write(const struct preamble_info *in);
void preamble_write_meta(const char *key, const char *value);
/* A CLOCK record of now. */
void preamble_write_clock_now(void);

#endif
