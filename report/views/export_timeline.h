/* The timeline exports: a Perfetto trace (export_perfetto.c) and torch.profiler's
 * Chrome/Kineto JSON (export_chrome.c), written while the traces stream by (timeline.h):
 * memory stays bounded whatever the number of events. */
#ifndef REPORT_EXPORT_TIMELINE_H
#define REPORT_EXPORT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

struct export_timeline_stats {
    uint64_t events;  /* timeline events read from the traces */
    uint64_t packets; /* Perfetto: TracePackets written; Chrome: traceEvents written */
    uint64_t bytes;   /* bytes written (all files) */
    size_t files;     /* files written */
};

/* One Perfetto trace (protobuf TracePacket stream) of every process in procs. procs need
 * only their definitions (timeline_load_defs); each file is read again. 0, or -1 with a
 * message in err (nothing usable is left at path then). stats may be NULL. */
int export_perfetto_write(const char *path, struct model_process *const *procs, size_t n,
                          struct export_timeline_stats *stats, char *err, size_t errlen);

/* torch.profiler's JSON: one file per rank (processes without a rank: one per pid), named
 * *.pt.trace.json as TensorBoard's plugin lists them. With one such group the file is path
 * with ".pt.trace.json" for its ".json"; with several, ".rank<N>" or ".pid<P>" goes before
 * it: run.json -> run.rank0.pt.trace.json, run.rank1.pt.trace.json. path an existing folder
 * (or ending in '/'): rank<N>.pt.trace.json (pid<P>...) in it. */
enum export_chrome_flags {
    /* times to the ns (microseconds on a grid of 1/1024 us, binary fractions that a
     * reader's doubles add exactly) instead of whole microseconds: what speedscope's
     * importer needs to keep spans under 1 us apart; HTA's rounding then gives them a
     * duration of -1 */
    EXPORT_CHROME_NS = 1
};
int export_chrome_write(const char *path, struct model_process *const *procs, size_t n,
                        unsigned flags, struct export_timeline_stats *stats, char *err,
                        size_t errlen);

#endif
