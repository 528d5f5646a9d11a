/* model_steps_load: the steps of a process read from a summary stay there (only their count
 * is read) until something asks for every step; model.h's struct model_steps is then filled.
 * The loader is the summary's (summary_file_read_steps), set when a summary is read. */
#ifndef REPORT_MODEL_STEPS_LOAD_H
#define REPORT_MODEL_STEPS_LOAD_H

#include <stddef.h>

#include "model.h"

/* Reads p's p->steps.nsteps steps into a new array (*out); 0, or -1 with err set. */
typedef int (*model_steps_loader)(const struct model_process *p, struct model_step **out, char *err,
                                  size_t errlen);
void model_steps_set_loader(model_steps_loader fn);
/* Makes p->steps.steps hold every step of p (read from its summary if they are not yet);
 * a summary that cannot be read again gives zeroed steps, with a warning. */
void model_steps_hold(const struct model_process *p);
/* Makes steps (p->steps.nsteps of them, read by whoever had p's summary open) p's when it
 * holds none yet, else frees them. */
void model_steps_give(const struct model_process *p, struct model_step *steps);
/* Frees p's steps when they came from its summary (a later hold reads them again); those
 * of a trace stay. Never while a pointer into them is in use. */
void model_steps_let_go(const struct model_process *p);

#endif
