/* Shared internals of the fake libcupti.so.13 (a TEST DOUBLE of NVIDIA's CUPTI, see
 * fake_cupti.c). Everything here is hidden: only cupti* and the fake runtime's attach function
 * (fake_cupti_link.h) leave the library. */
#ifndef FAKE_CUPTI_H
#define FAKE_CUPTI_H

#include "fake_cupti_link.h"

#include <cupti.h>

#include <pthread.h>
#include <stdint.h>

#define FC_API __attribute__((visibility("default")))
#define FC_DEVICE_ID 0
#define FC_CONTEXT_ID 1

#pragma GCC visibility push(hidden)
/* FAKE_CUPTI_NO_DRIVER=1: what the real library answers on a machine without a driver. */
extern int fc_no_driver;

/* fake_cupti_activity.c */
/* Now on CUPTI's clock: the timestamp callback when it took effect, else CLOCK_REALTIME. */
uint64_t fc_now(void);
/* A fake-runtime device time (CLOCK_MONOTONIC ns) on CUPTI's clock. */
uint64_t fc_from_mono(uint64_t mono_ns);
/* Whether any activity kind is enabled (cheap). */
int fc_activity_any(void);
int fc_activity_on(CUpti_ActivityKind kind);
/* The EXIT side of a runtime call: external-correlation and API records. */
void fc_activity_api(const struct fake_cupti_call *call, uint64_t end, uint32_t code);
void fc_activity_kernel(const struct fake_cupti_call *call, const struct fake_cupti_kernel *k);
void fc_activity_copy(const struct fake_cupti_call *call, const struct fake_cupti_copy *c);
void fc_activity_set(const struct fake_cupti_call *call, const struct fake_cupti_set *s);
/* Forced flush and reset, for cuptiFinalize. */
void fc_activity_finalize(void);
#pragma GCC visibility pop

#endif
