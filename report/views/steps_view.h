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
 * step's parts and every step; null without steps. */
json_t *steps_view_json(const struct model_process *p);

#endif
