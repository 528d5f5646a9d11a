/* steps_view: the training steps in the text report (steps_view.c). */
#ifndef REPORT_STEPS_VIEW_H
#define REPORT_STEPS_VIEW_H

#include <stdio.h>

#include <jansson.h>

#include "comm_merge.h"
#include "summary.h"

/* The "Training steps" section, then a blank line; r: the ranks (NULL: not built). */
void steps_view_print(FILE *out, const struct summary *s, const struct comm_report *r);
/* JSON "steps" of a process: source, counts, warm-up, step times, startup, the mean steady
 * step's parts and every step; null without steps. mark: "steps" (every step) is the string
 * mark instead, and *warmup the warm-up steps, for steps_view_json_every. */
json_t *steps_view_json(const struct model_process *p, const char *mark, uint64_t *warmup);
/* The "steps" array of every step as json_dumpf(JSON_INDENT(1)) writes it at depth (its
 * '[' at the current column; its lines indented depth + 1, ...); 0, or -1 on a write error. */
int steps_view_json_every(FILE *out, const struct model_process *p, uint64_t warmup, int depth);
/* The startup's largest costs outside imports, "; outside imports: init_process_group
 * (distributed_c10d.py:633) 437.12 ms, ..." (files by their base name); "" without any. */
void steps_view_startup_costs(const struct model_process *p, char *buf, size_t len);
/* The function that most slows p's steady step `number` (steps.slow_hot), or NULL. */
const struct model_step_hot *steps_view_slow_hot(const struct model_process *p, uint64_t number);

#endif
