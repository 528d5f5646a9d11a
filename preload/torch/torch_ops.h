/* PyTorch operators (torch_ops.c): the per-thread op stack behind the bridge's begin and
 * end hooks, the per-thread op trees that keep counts, times and memory exact, and the
 * TORCH_OP timeline spans. */
#ifndef PROF_TORCH_OPS_H
#define PROF_TORCH_OPS_H

#include <stdint.h>

#include "torch.h"

/* The bridge's hooks (struct prof_torch_hooks). */
uint64_t torch_ops_begin(const struct prof_torch_op_info *op);
void torch_ops_end(uint64_t token);

/* Tensor memory handed out (bytes > 0) or taken back (bytes < 0) on the calling thread:
 * counted in the ops open on it. device: 0 CPU, 1 any device allocator's report. */
void torch_ops_memory(int64_t bytes, int device);

/* The bridge is installed: with PROF_STEPS and the default step, the steps are counted
 * here from now on (window.h, window_steps_by_torch). user_scope: this torch's
 * at::RecordScope::USER_SCOPE, as the bridge says (-1: not said; then not counted here). */
void torch_ops_installed(int user_scope);

/* Once, before any op: thread key, fork handler, the collector source. */
void torch_ops_init(void);

#endif
