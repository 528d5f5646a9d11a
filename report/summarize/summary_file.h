/* summary_file: a trace reduced to what the merged tables need — one process's API,
 * kernel, memory, GPU, operator, action and communication rows, its metadata, and its
 * Python functions as cProfile's table (pystats) — written beside the trace as
 * X.summary by `profreport --summarize` and read back by the final merge in place of the
 * trace. Its size follows the distinct keys of the process (names, call paths,
 * operators) and its collective calls, not its events: no timeline, no stacks.
 *
 * The Python section is read lazily (summary_file_add_python), straight into the merged
 * table, so that a merge of many ranks holds one rank's Python functions at a time. */
#ifndef REPORT_SUMMARY_FILE_H
#define REPORT_SUMMARY_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"
#include "pystats.h"

/* ".summary" */
extern const char summary_file_suffix[];

/* The checksum a summary ends with (before its end mark): CRC-32 of everything before
 * it, little-endian. */
void summary_file_crc(const uint8_t *body, size_t len, uint8_t out[4]);
/* A summary stands for the trace it was made from, as that trace was then: its device,
 * inode, size, modification time and a CRC-32 of its first SUMMARY_FILE_HEAD bytes. */
#define SUMMARY_FILE_HEAD 4096
struct summary_trace_id {
    uint64_t dev, ino, size;
    int64_t mtime_sec;
    uint32_t mtime_nsec, head_crc;
    uint32_t uid, gid; /* its owner: not stored (the summary's own owner must be it) */
};
/* The identity of the trace file now. 0, or -1 (not a regular file that can be read). */
int summary_file_trace_id(const char *trace, struct summary_trace_id *id);
/* 1 when summary may stand for trace: a regular file (not a link) owned by the trace's
 * owner, closed to others (0600, like the trace), of this format version, made from the
 * trace as it is now. Else 0 with the reason in why (when not NULL). Reads the summary's
 * first bytes only: its checksum is checked when it is loaded. */
int summary_file_bound(const char *summary, const char *trace, char *why, size_t whylen);
/* p's summary as bytes (malloc'd), what summary_file_write writes; id: the trace's (NULL:
 * bound to no trace). */
void summary_file_encode(const struct model_process *p, const struct summary_trace_id *id,
                         uint8_t **buf, size_t *len);
/* Writes p's summary to path (a new file, mode 0600, renamed into place: out_file.h;
 * run as root, owned by the trace's owner, id's uid). 0, or -1 with a one-line message in
 * err. */
int summary_file_write(const char *path, const struct model_process *p,
                       const struct summary_trace_id *id, char *err, size_t errlen);
/* Reads a summary into a process model (its Python section left on disk:
 * p->summary_file and p->summary_py_offset say where). NULL with a one-line message in err
 * when the file is not a summary, is cut off or corrupt, or comes from another version. */
struct model_process *summary_file_load(const char *path, char *err, size_t errlen);
/* p, read from its trace, reduced to its summary kept in memory (p->summary_bytes, read
 * where summary_file is read otherwise): what a report of many traces holds of each, so
 * that it holds one whole model at a time. Frees p and returns its summary's process, or
 * NULL with a one-line message in err (p is then left as it was). */
struct model_process *summary_file_fold(struct model_process *p, char *err, size_t errlen);
/* Adds the Python functions of a process read from a summary to s. 0 (nothing to do for
 * a process read from a trace), or -1 with a message in err. */
int summary_file_add_python(struct pystats *s, const struct model_process *p, char *err,
                            size_t errlen);
/* The training steps of a process read from a summary (p->steps.nsteps of them), into a
 * new array *out (model_steps_loader). 0, or -1 with a message in err and *out NULL. */
int summary_file_read_steps(const struct model_process *p, struct model_step **out, char *err,
                            size_t errlen);
/* The communication calls of a process read from a summary, into out (names and calls;
 * free with summary_file_free_comm), and, with_steps, p's steps when it holds none
 * (model_steps_give). 0 (out empty for a process read from a trace: its calls are
 * p->comm's), or -1 with a message in err and out empty. A summary read again reads the
 * sections asked for alone, when it is still the file loaded (its size and checksum). */
int summary_file_read_comm(const struct model_process *p, int with_steps, struct model_comm *out,
                           char *err, size_t errlen);
void summary_file_free_comm(struct model_comm *m);
/* 1 if path names a summary file (by its first bytes), else 0. */
int summary_file_is_summary(const char *path);

#endif
