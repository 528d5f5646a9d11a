/* steps_view: the training steps in the text report (steps_view.c). */
#ifndef REPORT_STEPS_VIEW_H
#define REPORT_STEPS_VIEW_H

#include <stdio.h>

#include <jansson.h>

#include "comm_merge.h"
#include "steps_report.h"
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
/* Which steps were left out of the steady ones and why, in buf: "2 warm-up steps left out
 * (slower than 1.5x ...)", "the first step left out (it starts before any step boundary
 * ...)", "no warm-up step (...)"; the text's Training steps line and the HTML's say it. */
const char *steps_view_left_out(const struct steps_stats *st, char *buf, size_t len);
/* The profiler's own torch bridge build left out of the startup (steps_stats.profiler_ns):
 * "; the profiler's own 2.53 s building ..." or "". */
void steps_view_profiler_note(const struct steps_stats *st, char *buf, size_t len);
/* The evaluation inside the steps of st (model_step.eval_ns), said under the parts: "" when
 * none. */
void steps_view_eval_note(const struct steps_stats *st, char *buf, size_t len);
/* The model's forward recomputed inside backward (model_step.recompute_ns), said under the
 * parts: "" when none. */
void steps_view_recompute_note(const struct steps_stats *st, char *buf, size_t len);
/* The training phases the steps' parts cannot show in st's process: a bit each for forward
 * (1) and backward (2) when the process ran Python with PyTorch but its Python calls,
 * which find them, were not recorded (PROF_PYTHON=0; model_python_unrecorded) and no
 * scope named them (DistributedDataParallel.forward names forward), backward only when
 * the process ran one (an autograd node's op); 0 otherwise, a program without Python
 * among them. Their time then counts in other ops and other CPU, and no finding is made
 * of those parts. */
int steps_view_phases_unknown(const struct steps_stats *st);
/* The startup's imports: their time in buf, or "not known (...)" when st's process ran
 * Python whose calls were not recorded (model_python_unrecorded: they are what times
 * them) or its recording opened after its start (model_start_unrecorded); a program
 * without Python imports nothing: 0 ns. */
const char *steps_view_imports(const struct steps_stats *st, char *buf, size_t len);
/* Whether p's startup imports are known (steps_view_imports gives their time); the startup's
 * functions by self time are listed only then too. */
int steps_view_imports_known(const struct model_process *p);
/* That said under the parts: "" when none is unknown. */
void steps_view_phases_note(const struct steps_stats *st, char *buf, size_t len);
/* The notes under the parts, in their order (the text report's and the HTML page's). */
extern void (*const steps_view_notes[3])(const struct steps_stats *, char *, size_t);
/* What events p lost do to its steps' parts ("" when none were lost), for the text and
 * the HTML page. */
void steps_view_lost_note(const struct model_process *p, char *buf, size_t len);
/* The per-rank table of the ranks compared by steps (r->by_steps): its title ("Per rank,
 * mean per step over steps 2-40"), its columns (text_table.h's form), each rank's cells
 * (ns: the rank, then the figures in ns), and the line under it naming the rank that holds
 * the others ("" when none stands out). The writers return snprintf's count. */
#define STEPS_VIEW_RANK_COLUMNS 11
extern const char *const steps_view_rank_columns;
int steps_view_ranks_title(const struct comm_report *r, char *buf, size_t len);
void steps_view_rank_cells(const struct comm_report *r, size_t i, uint64_t *ns,
                           char cell[STEPS_VIEW_RANK_COLUMNS][32]);
/* look: how to look at the rank's excess (steps_view_rank_look) */
int steps_view_ranks_verdict(const struct comm_report *r, const char *look, char *buf, size_t len);
/* The process of rank whose steps describe it: the one with the most steps; NULL: none. */
const struct model_process *steps_view_rank_process(const struct summary *s, long long rank);
/* What follows "--rank N" to show why rank is slow (why: comm_slowest's): " --python" (its
 * functions); when its Python calls were not recorded, " --samples" when it was sampled,
 * " --ops" for compute or data loading (its DataLoader scope), else nothing, each with why
 * (a pointer to an empty table is none). */
const char *steps_view_rank_look(const struct summary *s, long long rank, const char *why);
/* The function that most slows p's steady step `number` (steps.slow_hot), or NULL. */
const struct model_step_hot *steps_view_slow_hot(const struct model_process *p, uint64_t number);

#endif
