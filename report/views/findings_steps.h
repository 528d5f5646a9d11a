/* findings_steps.h: what the step findings of one process (findings_steps.c) and of ranks
 * compared on the same steps (findings_ranks.c) share. */
#ifndef REPORT_FINDINGS_STEPS_H
#define REPORT_FINDINGS_STEPS_H

#include <stddef.h>
#include <stdint.h>

#include "comm_merge.h"
#include "findings.h"
#include "steps_report.h"

#define T(name) findings_threshold[FINDINGS_##name]

/* "; a step ends where its optimizer step ends: work after optimizer.step() ..." for steps
 * from optimizer steps (source: enum model_step_source), else "". */
const char *findings_after_step(uint8_t source);
/* part / total, 0 when total is 0. */
double findings_share(uint64_t part, uint64_t total);

/* The parts of one step (the mean steady step of a process, or of the median rank). */
struct findings_step {
    uint64_t step_ns, part_ns[MODEL_STEP_PART_COUNT], comm_ns, wait_ns, gpu_busy_ns;
    /* the communication per step over the steps the places where collectives begin were
     * measured on (the process's own steady steps; the ranks' common steps may differ) */
    uint64_t places_comm_ns;
    uint64_t syncs_per_step_x100;
    int has_gpu;
    int wait_known;  /* wait_ns: ranks were compared (one rank alone cannot tell its wait) */
    const char *who; /* "" or " (median rank)" */
};

/* Step numbers as a finding lists them: the first 8, then "..."; every, ", every N steps"
 * when 3 or more are evenly N >= 2 apart (consecutive ones are a burst). */
struct findings_numbers {
    size_t n;
    uint64_t gap, last;
    int irregular;
    char text[256], every[48];
};
void findings_numbers_add(struct findings_numbers *l, uint64_t number);

/* Exposed communication. waited_rank: the rank the others wait for, already named
 * (waiting_rank), or -1; with one, only the transfer beyond that wait is a finding of its
 * own (its share: the transfer's). where: the
 * functions of p's step thread the collectives begin under (steps.comm_hot; p NULL: none). */
void findings_step_comm(struct findings *f, const struct findings_step *m, long long waited_rank,
                        const struct model_process *p);
/* Python inside forward and backward (step_python), of st's steps; who: "" or " (median
 * rank)". */
void findings_step_python(struct findings *f, const struct steps_stats *st, const char *who);
/* findings_growth.c: step time that grows through the run (step_growth), or that changed
 * once (step_jump), over st's steady steps. */
void findings_step_growth(struct findings *f, const struct steps_stats *st);
/* findings_gc.c: Python's garbage collections pausing the step thread (step_gc), in st's
 * steady steps; who: "" or " (median rank)". */
void findings_step_gc(struct findings *f, const struct steps_stats *st, const char *who);
/* The startup of st's process when it exceeds all its steps' time (startup; who: "" or
 * " (median rank)"); its steps' findings say it last. */
void findings_step_startup(struct findings *f, const struct steps_stats *st, const char *who);
/* Periodic work (an evaluation, a checkpoint) of st's process: its share of the steady
 * steps (periodic_work; who: "" or " on rank R"), or NULL when under PERIODIC_SHARE. */
struct finding *findings_periodic(struct findings *f, const struct steps_stats *st,
                                  const char *who);
/* The ranks compared on their common steps (findings_ranks.c): waiting_rank, step_comm,
 * step_python of the median rank. */
void findings_steps_ranks(struct findings *f, const struct comm_report *r, const struct summary *s);

#endif
