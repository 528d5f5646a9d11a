/* model_steps_find.c's interface: the step boundaries of a process from its record_function
 * scopes, Python spans and ranges, fed one at a time (by the steps part, model_steps.c, and
 * by the timeline exports while a trace streams by). */
#ifndef REPORT_MODEL_STEPS_FIND_H
#define REPORT_MODEL_STEPS_FIND_H

#include "model.h"

/* Times are CLOCK_MONOTONIC ns; _end sets st's source, tid and steps (numbers and times;
 * no parts) and frees the finder. */
struct model_steps_finder;
struct model_steps_finder *model_steps_finder_new(const struct model_process *p);
void model_steps_finder_scope(struct model_steps_finder *f, const char *name, uint32_t tid,
                              uint64_t start_ns, uint64_t end_ns);
/* A record_function scope that marks steps (prof_torch_scope_kept), from the collector's log
 * of them (TORCH_SCOPE); name NULL: a thread's log was full from there. Once a process has
 * such a log and none was full, its scopes of those names are the log's, not the spans'
 * (model_steps_finder_scope), which the ring may have dropped. */
void model_steps_finder_logged_scope(struct model_steps_finder *f, const char *name, uint32_t tid,
                                     uint64_t start_ns, uint64_t end_ns);
void model_steps_finder_python(struct model_steps_finder *f, uint32_t node, uint32_t tid,
                               uint64_t start_ns, uint64_t end_ns);
/* An NVTX range or (lightning) a Lightning action. */
void model_steps_finder_range(struct model_steps_finder *f, const char *name, int lightning,
                              uint32_t tid, uint64_t start_ns, uint64_t end_ns);
/* Whether a range of that name is one the finder may use (kept by model_nvtx.c). */
int model_steps_range_wanted(const char *name, int lightning);
void model_steps_finder_end(struct model_steps_finder *f, struct model_steps *st);
/* The phase (enum model_step_part: data loading, forward, backward, optimizer) a
 * record_function scope or a Python node is, or -1. */
int model_steps_scope_phase(const char *name);
int model_steps_python_phase(const struct model_process *p, uint32_t node);
/* The phase of a node whose built-in action is action (model_torch_action_of_node), or -1;
 * whether a function is a torch.nn.functional loss (its node: forward, as a loss module's
 * call). model_torch_node_actions keeps each node's phase (py.node_phase) from these. */
int model_steps_action_phase(const char *action);
int model_steps_func_is_loss(const struct model_py_func *f);
/* The calls of the Python functions --step names in p's call tree (counted whatever their
 * length: a step needs a call's span, of at least PROF_PY_SPAN_US). */
uint64_t model_steps_named_calls(const struct model_process *p);
/* The phase of a Lightning action (its batch fetch, training_step, backward, optimizer_step
 * and zero_grad), or -1. */
int model_steps_lightning_phase(const char *name);

#endif
