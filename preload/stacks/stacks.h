/* Native call stacks (PROF_STACKS=1, PROF_SAMPLE_HZ): captured with libunwind (loaded
 * with dlopen; without it this layer says so once and stays off), deduplicated in the
 * process (one STACK record per distinct stack and file, an id per use), symbolized
 * offline by profreport through the MAP records (stacks_maps.c). */
#ifndef PROF_STACKS_H
#define PROF_STACKS_H

#include <stdint.h>

#include "ring.h"

/* 1 while stacks are taken for chosen API calls (PROF_STACKS). Read on every call. */
extern int stacks_on;

void stacks_after_call_slow(uint16_t api, uint64_t start, uint64_t end);

/* After an intercepted call of `api` that ran [start, end] and whose API_CALL record was
 * just emitted: a STACK_REF for it when the call is one worth a stack (it synchronizes,
 * allocates or frees, or took at least PROF_STACK_SLOW_US). One predictable branch when
 * stacks are off. */
static inline __attribute__((always_inline)) void stacks_after_call(uint16_t api, uint64_t start,
                                                                    uint64_t end)
{
    if (__builtin_expect(stacks_on, 0))
        stacks_after_call_slow(api, start, end);
}

void stacks_after_tensor_slow(int64_t bytes, uint64_t ptr, uint64_t ticks, uint32_t py_node,
                              int8_t device_type, int8_t device_index);
extern uint64_t stacks_min_bytes;

/* After a tensor block was allocated (bytes > 0) or freed (bytes < 0): with PROF_STACKS,
 * a block of at least PROF_STACK_MIN_BYTES gets a STACK_MEM record (its stack when
 * allocated), so that the report can say where the blocks live at a memory peak came
 * from. */
static inline void stacks_after_tensor(int64_t bytes, uint64_t ptr, uint64_t ticks,
                                       uint32_t py_node, int8_t device_type, int8_t device_index)
{
    if (__builtin_expect(stacks_on, 0) &&
        (uint64_t)(bytes < 0 ? -(uint64_t)bytes : (uint64_t)bytes) >= stacks_min_bytes)
        stacks_after_tensor_slow(bytes, ptr, ticks, py_node, device_type, device_index);
}

/* A library marks the APIs whose calls always get a stack (at its setup). */
void stacks_want_api(uint16_t api);

/* The calling thread's stack as an id (0: none could be taken), with its STACK record
 * written into r the first time this file needs it; py_node (the thread's innermost
 * Python call-tree node, or 0) is part of it. Async-signal-safe once the layer is set
 * up: no lock, no allocation. */
uint32_t stacks_capture(struct prof_ring *r, uint32_t py_node);
/* The same from a signal handler, from the signal's context (stacks_unwind.c): no lock,
 * no allocation (unw_backtrace's thread-local cache is allocated at a thread's first use,
 * and its unwinder asks the loader under the loader's lock). */
uint32_t stacks_capture_in_signal(struct prof_ring *r, uint32_t py_node, void *ucontext,
                                  void *handler_return);

/* stacks_maps.c: MAP records for every loaded object, as a collector source. Before a
 * fork the list is brought up to date; a forked child writes it without asking the
 * loader again (objects a forked child loads later are not named). */
void stacks_maps_start(void);
void stacks_maps_before_fork(void);
void stacks_maps_after_fork_child(void);

/* stacks_unwind.c: the signal handler's unwinder. start: 0 when it can be used; context:
 * the frames from a signal's ucontext; refresh: the table of loaded objects it searches,
 * in normal context, when the loader's counters moved; stale: a dlclose began since it was
 * made, or while it was made (then its pages are checked before they are read). */
int stacks_unwind_start(void);
int stacks_unwind_context(void *ucontext, void **buf, int max);
void stacks_unwind_refresh(void);
int stacks_unwind_stale(void);
/* unsettled: an unwind was still under way when the fork came */
void stacks_unwind_after_fork_child(int unsettled);

/* stacks_sample.c: PROF_SAMPLE_HZ, per-thread CPU-time timers and their samples. */
/* Set by the torch and NVTX layers: the calling thread's innermost PyTorch op and pushed
 * NVTX range, as their name's string id (0: none). Async-signal-safe: the sampler's
 * handler reads them on the thread it interrupted. */
extern uint32_t (*stacks_current_torch_op)(void);
extern uint32_t (*stacks_current_nvtx_range)(void);
int stacks_sample_start(long hz);
void stacks_sample_after_fork_child(void);

/* Bumped in a forked child: its new file needs every STACK record again. */
extern _Atomic uint32_t stacks_generation;

#endif
