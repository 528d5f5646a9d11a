/* summary_model: the process model in a summary, one visitor per part for both directions
 * (summary_file.c puts them in a file). Each reads when the codec reads, writes when it
 * writes (the model is then left as it was). */
#ifndef REPORT_SUMMARY_MODEL_H
#define REPORT_SUMMARY_MODEL_H

#include "model.h"
#include "pystats.h"
#include "summary_codec.h"

/* The process: core, the Python functions its GPU rows and memory peaks name, GPU,
 * PyTorch, then its communication calls behind their length (a reader skips them and
 * keeps their offset in p->summary_comm_offset). */
void summary_model_process(struct summary_codec *c, struct model_process *p);
/* A string the model never leaves NULL: a damaged summary's NULL reads as "". */
void summary_model_text(struct summary_codec *c, char **s);
/* summary_steps.c: the process's steps part, the steps behind their length (a reader skips
 * them and keeps their offset in p->summary_steps_offset). */
void summary_model_steps(struct summary_codec *c, struct model_process *p);
/* A process's steps (the section read when a view asks for every step, n of them). */
void summary_model_step_list(struct summary_codec *c, struct model_step **steps, size_t *n);
/* The communication calls (the section read when the merge asks). */
void summary_model_comm(struct summary_codec *c, struct model_comm *m);
/* A GPU kernel row's counts and maps (the name's encoding is the caller's). */
void summary_model_kernel_counts(struct summary_codec *c, struct model_gpu_kernel *k);
/* A string id and its text (into p->strings; text may be NULL): the id, then the string. */
void summary_model_sid(struct summary_codec *c, struct model_process *p, uint32_t *sid,
                       const char **text);
/* summary_torch_memory.c: one device's memory in the part --summarize asked (memory.part). */
void summary_model_memory_part(struct summary_codec *c, struct model_process *p,
                               struct model_torch_memory_part *q);
/* summary_gpu_part.c: the GPU tables of the part --summarize asked (p->gpu_part). */
void summary_model_gpu_part(struct summary_codec *c, struct model_process *p);
/* summary_pystats.c: the Python functions as cProfile's table: written from p's call
 * trees; read merged into s (functions by key, callers with their indices mapped). */
void summary_model_write_pystats(struct summary_codec *c, const struct model_process *p);
/* part: the part of the process the summary's Python rows cover (py.window), when it holds
 * one; else the whole process's. */
void summary_model_read_pystats(struct summary_codec *c, struct pystats *s, int part);

#endif
