/* model_steps: the training steps of a process (model_steps.c, model_steps_find.c,
 * model_steps_hot.c): what a step is, its parts, and what struct model_steps keeps.
 * Included by model.h (struct model_process holds its steps). */
#ifndef REPORT_MODEL_STEPS_H
#define REPORT_MODEL_STEPS_H

#include <stddef.h>
#include <stdint.h>

struct model_process;

/* ---- training steps (model_steps.c) ----
 * A step is one training iteration, boundary to boundary, found on one thread (the step
 * thread): the calls named by --step (model_steps_set_name) when there are any, else
 * torch.profiler's ProfilerStep#N scopes, else the ends of the optimizer's step scope
 * (Optimizer.step#...), else the ends of Lightning's run_training_batch actions, else the
 * ends of the built-in optimizer_step Python calls.
 * Its time is split without overlap among the parts below, on the step thread: each
 * instant goes to the first that holds it of data loading, host syncs, PyTorch ops (as
 * forward, backward or optimizer by the phase around them, else other ops),
 * communication of any thread (exposed: no op of the step thread runs), the phases'
 * Python time, and the rest. The parts of a step add up to its duration. */

enum model_step_source {
    MODEL_STEPS_NONE,
    MODEL_STEPS_PROFILER_STEP, /* ProfilerStep#N scopes (prof.step()) */
    MODEL_STEPS_OPTIMIZER,     /* ends of Optimizer.step#... record_function scopes */
    MODEL_STEPS_PYTHON,        /* ends of the built-in optimizer_step Python calls */
    MODEL_STEPS_LIGHTNING,     /* ends of Lightning's run_training_batch actions */
    MODEL_STEPS_NAMED,         /* each call of the --step name, as it is */
    MODEL_STEPS_BACKWARD       /* ends of the built-in backward Python calls (no optimizer) */
};

enum model_step_part {
    MODEL_STEP_DATA,      /* waiting for the next batch (DataLoader's __next__) */
    MODEL_STEP_FORWARD,   /* the model's forward (Module._call_impl outside data loading), and
                             a torch.nn.functional loss (PROF_PY_FUNCTIONAL_LOSSES) */
    MODEL_STEP_BACKWARD,  /* Tensor.backward, torch.autograd.backward */
    MODEL_STEP_OPTIMIZER, /* Optimizer.step, zero_grad */
    MODEL_STEP_OTHER_OPS, /* PyTorch ops outside those phases */
    MODEL_STEP_COMM,      /* communication not hidden behind an op of the step thread */
    MODEL_STEP_SYNC,      /* host-device syncs: synchronizing calls, blocking copies */
    MODEL_STEP_OTHER,     /* the rest: Python outside the phases, sleeps, I/O */
    MODEL_STEP_PART_COUNT
};

struct model_step {
    uint64_t number;           /* ProfilerStep's N (unique: model_steps_find.c); else 1, 2, ... */
    uint64_t start_ns, end_ns; /* CLOCK_MONOTONIC */
    uint64_t part_ns[MODEL_STEP_PART_COUNT]; /* they add up to end_ns - start_ns */
    uint64_t comm_ns; /* communication of any thread in the step (hidden or not) */
    uint64_t gpu_busy_ns, gpu_kernel_ns, gpu_copy_ns; /* unions over the devices */
    uint64_t syncs; /* host-device syncs that started in the step */
    /* Of forward, the time no operator ran on the step thread (a tokenizer in a forward,
     * the module calls' own); of backward, the time a Python callback of the autograd
     * engine (an autograd.Function's backward) ran outside the operators it calls */
    uint64_t python_ns;
    /* Of other ops, other CPU and communication, the evaluation's (steps.evals) */
    uint64_t eval_ns;
    /* Of backward, the model's forward calls run inside it on the step thread: activation
     * checkpointing recomputing them (on a GPU the engine's device thread runs them) */
    uint64_t recompute_ns;
};

/* An NVTX range or a Lightning action that may make or open steps (model_nvtx.c keeps
 * those model_steps_range_wanted names), kept until the steps are made. */
struct model_step_range {
    const char *name;    /* the action's name (model_gpu.actions) */
    uint64_t start, end; /* ticks */
    uint32_t tid;
    int lightning;
};

/* A record_function scope that marks steps, from the collector's log of them (TORCH_SCOPE,
 * never dropped), kept until the steps are made; name_sid 0: a thread's log was full. */
struct model_step_scope {
    uint32_t name_sid, tid;
    uint64_t start, end; /* ticks */
};

/* A collection of Python's garbage collector (PY_GC): the pause of thread tid. */
struct model_step_gc {
    uint64_t start, end; /* ticks */
    uint32_t tid;
    uint16_t generation;
};

/* A host-device sync of a wrapped call (API_CALL), kept until the steps are made. */
struct model_step_sync {
    uint64_t start, end; /* ticks */
    uint32_t tid;
};

#define MODEL_STEPS_PER_BATCH 4
/* A DataLoader worker's busiest functions kept: workers whose first differs (a builtin
 * against its caller, within a few ms) still add up over the same one. */
#define MODEL_STEPS_WORKER_HOT 3
enum model_steps_group {
    MODEL_STEPS_GROUP_BATCH,   /* one step per DataLoader batch */
    MODEL_STEPS_GROUP_BACKWARD /* one step per backward: no forward nor backward between */
};

#define MODEL_STEPS_MAX_PASSES 64 /* backward passes per step told (gradient accumulation) */

struct model_steps {
    uint8_t source; /* enum model_step_source */
    /* Optimizer steps per step: k ≤ MODEL_STEPS_PER_BATCH when a loop steps k optimizers per
     * DataLoader batch (a GAN's two), its steps then one per batch, or k after one backward
     * (an encoder's and a head's); else 1. grouped_by: which (enum model_steps_group). */
    uint8_t per_step;
    uint8_t grouped_by;
    /* Backward passes per step, k > 1 when 3 in 4 steps hold exactly k (gradient
     * accumulation: k micro-batches per optimizer step); else 1. */
    uint8_t backward_passes;
    /* Steps from ends (optimizer steps, Lightning's batches) of a process recorded from its
     * start: the first step's start is its first phase span's, no boundary. */
    uint8_t first_inferred;
    /* The recording opened after the process's first steps (a capture window opened at a
     * step's end, or after optimizer steps it counted): its first steps are no warm-up.
     * 2: by an attach to a process with GPU kernels, whose window's first step is left out
     * when slow (model_steps_warmup): on the H200 its first CUDA calls took 4-6 ms each,
     * against about 10 us after, in 2 attaches of 2 (not on the CPU). */
    uint8_t opened_late;
    uint32_t tid; /* the step thread */
    /* the startup's thread: whose Python calls cover the most time before the first step
     * (model_steps_hot.c), the main one when a loop trains on another */
    uint32_t startup_tid;
    struct model_step *steps;
    size_t nsteps;
    uint64_t startup_import_ns; /* before the first step: imports (importlib) on the step thread */
    /* While model_steps_hot runs: the indexes of the Python spans by thread, then start, the
     * longer first (model_steps_spans_in_order gives a thread's run of it). */
    size_t *span_order;
    struct model_step_sync *syncs; /* freed by model_steps_finish */
    size_t nsyncs, cap_syncs;
    struct model_step_range *ranges; /* freed by model_steps_finish */
    size_t nranges, cap_ranges;
    struct model_step_scope *scopes; /* freed by model_steps_finish */
    size_t nscopes, cap_scopes;
    struct model_step_gc *gcs; /* in the order read (each thread's in time) */
    size_t ngcs, cap_gcs;
    /* The step thread's garbage collections in the steady steps (model_steps_gc.c): their
     * pauses per steady step, how many, how many of generation 2, the longest and the
     * number of its step */
    uint64_t gc_ns, gc_count, gc_full, gc_max_ns, gc_max_number;
    /* The step thread's Python functions with the most self time in the steady steps
     * (model_steps_hot.c), most first. */
    struct model_step_hot *hot;
    size_t nhot;
    /* Before the first step, outside imports: the MODEL_STEPS_STARTUP_HOT functions with the
     * most self time, theirs in all (model_steps_hot.c), most first. */
    struct model_step_hot *startup_hot;
    size_t nstartup_hot;
    /* Inside data loading in the steady steps: the MODEL_STEPS_DATA_HOT functions with the
     * most self time, per steady step, most first. */
    struct model_step_hot *data_hot;
    size_t ndata_hot;
    /* The MODEL_STEPS_SLOW slowest steady steps, slowest first: each its function whose self
     * time exceeds its mean per steady step the most, by self_ns (step: its number). */
    struct model_step_hot *slow_hot;
    size_t nslow_hot;
    /* Periodic work: of the functions that run in fewer than half the steady steps, the one
     * with the most whole time in them, self_ns that time in all, step the number of steady
     * steps it ran in; then, when another holds >= 1/4 of that, the function with the most
     * self time inside its calls, with its caller (at most MODEL_STEPS_RARE). */
    struct model_step_hot *rare_hot;
    size_t nrare_hot;
    /* A DataLoader worker's (no steps): its main thread's MODEL_STEPS_WORKER_HOT functions
     * with the most self time, idle waits aside, most first, the first's step its main
     * thread's time outside waits (model_steps_worker_hot): what data loading waits for. */
    struct model_step_hot *worker_hot;
    size_t nworker_hot;
    /* Outside the built-in actions in the steady steps (the Python of "other CPU": a
     * generator's batches, logging): the MODEL_STEPS_OTHER_HOT functions with the most
     * self time, per steady step, most first. */
    struct model_step_hot *other_hot;
    size_t nother_hot;
    /* Where the steady steps' collectives begin on the step thread (calls of at least
     * PROF_PY_SPAN_US): the innermost function of the program's own files around each (name)
     * and the library function it called (caller; "" none), by the collectives' time per
     * steady step, most first (MODEL_STEPS_COMM_HOT): a metric's all_reduce in a logging
     * function apart from DDP's gradient buckets, under Tensor.backward. */
    struct model_step_hot *comm_hot;
    size_t ncomm_hot;
    /* The thread besides the step thread that runs the most Python in the steady steps
     * (model_steps_threads.c): its function of the program's own files with the most time
     * there, or its busiest (name), its Python and builtins outside idle waits and sleeps
     * per steady step (self_ns), its thread id (step); none when it runs none. */
    struct model_step_hot *thread_hot;
    size_t nthread_hot;
    uint64_t rare_other_ns; /* rare_hot's self time outside the built-in actions, per step */
    /* rare_hot[0]'s outermost calls on the step thread after the last step, and their whole
     * time: the loop's last evaluation or checkpoint, made after its last optimizer step,
     * is in the teardown. */
    uint64_t rare_after, rare_after_ns;
    /* After the last step, the evaluation regions of the call paths that evaluate inside the
     * steps (model_steps_eval.c): their time, the loop's last evaluation (an inline one,
     * which rare_after cannot name) */
    uint64_t eval_after_ns;
    /* The training (CLOCK_MONOTONIC), what the Actions' percentages are of
     * (summary_actions.c): from the first step's start, or that of an NVTX range or
     * record_function scope's call around it (a range around each iteration, pushed a few
     * us before the step begins), to the last step's end, or the end of such a call, or of
     * a built-in loop action's after it (the loop's last evaluation: its forward). */
    uint64_t actions_start_ns, actions_end_ns;
    /* The DataLoader the steady steps wait for (enum model_steps_loader), by the iterator
     * whose calls inside their data loading took the most time. */
    uint8_t loader;
    /* Evaluation inside the steps (model_steps_eval.c): the step thread's regions under
     * torch.no_grad() or torch.inference_mode() that run a forward, those of one call path
     * in at most a quarter of the steps (CLOCK_MONOTONIC ns, in time order); made and freed
     * by model_steps_finish. */
    uint64_t (*evals)[2];
    size_t nevals;
};

#include "model_steps_hot.h" /* the Python functions the steps name (model_steps_hot.c) */

/* The index of the step of st holding t (CLOCK_MONOTONIC ns); SIZE_MAX: none. */
size_t model_steps_index_at(const struct model_steps *st, uint64_t t);

/* The time of [a, b) (CLOCK_MONOTONIC ns) inside the steps of st from index `from` on:
 * named steps leave gaps (--step forward), and a call across them counts its time in the
 * steps alone; steps that follow each other make it [a, b) clipped to them. */
uint64_t model_steps_inside(const struct model_steps *st, size_t from, uint64_t a, uint64_t b);

/* model_steps_eval.c: p->steps.evals (steps found); whether [start_ns, end_ns] lies in one. */
void model_steps_evals(struct model_process *p);
int model_steps_in_eval(const struct model_steps *st, uint64_t start_ns, uint64_t end_ns);

/* What a step is, for every process read after: the calls named so (an NVTX range, a
 * Lightning action, a record_function scope, or a Python function by name or qualified
 * name, a call of at least PROF_PY_SPAN_US); NULL: the built-in order. */
void model_steps_set_name(const char *name);
const char *model_steps_name(void);
/* Keep each process's Python spans (py.span_list) after its steps are made, for the
 * flame graph of the startup (--phase startup); else they are freed then. */
void model_steps_keep_spans(int keep);
/* Whether every training phase's span of p is in its trace: nothing was lost, or the ring
 * kept room for them (META ring_kept_bytes) and none of them was dropped (lost_kept). The
 * parts of the steps are then whole, operators lost aside (other ops read as other CPU). */
int model_steps_phases_whole(const struct model_process *p);

/* Whether p's step numbers are the process's own, so that ranks' steps match by number:
 * no capture window, torch.profiler's ProfilerStep#N, or optimizer steps counted before
 * the window opened (META window_open); else they count from its first recorded step. */
int model_steps_numbered(const struct model_process *p);

/* Warm-up: the leading steps slower than MODEL_STEPS_WARMUP_RATIO times the median of the
 * later half of the steps (their times less their evaluation, model_step.eval_ns), at most
 * a quarter of them (none of fewer than 4 steps, none when the recording opened late:
 * st->opened_late), and the first at least when its start is inferred (first_inferred);
 * *ratio: the first step's time over that median (0 when none). st->steps must be held. */
#define MODEL_STEPS_WARMUP_RATIO 1.5
size_t model_steps_warmup(const struct model_steps *st, double *ratio);

/* "ProfilerStep#N scopes", "optimizer step scopes", ... */
const char *model_step_source_name(unsigned source);
/* The source's name and, when the steps group optimizer steps, how many per step: in buf */
const char *model_steps_source_text(const struct model_steps *st, char *buf, size_t size);
/* "data loading", "forward", ... */
const char *model_step_part_name(unsigned part);

#endif
