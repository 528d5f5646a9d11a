/* The hot path: write one record into the calling thread's ring. */
#ifndef PROF_EMIT_H
#define PROF_EMIT_H

#include <string.h>

#include "collector.h"

static inline __attribute__((always_inline)) struct prof_thread *emit_thread(void)
{
    struct prof_thread *t = prof_tls_thread;
    if (__builtin_expect(t != NULL, 1))
        return t;
    return collector_thread_register();
}

static inline int16_t emit_clamp_result(long result)
{
    if (result > INT16_MAX)
        return INT16_MAX;
    if (result < INT16_MIN)
        return INT16_MIN;
    return (int16_t)result;
}

static inline __attribute__((always_inline)) void emit_api_call(uint16_t api, long result,
                                                                uint64_t start, uint64_t end,
                                                                const uint64_t *args,
                                                                unsigned nargs)
{
    struct prof_thread *t = emit_thread();
    if (!t || !atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return;
    if (__builtin_expect(!atomic_load_explicit(&prof_collector_running, memory_order_relaxed), 0))
        collector_resume();
    if (prof_api_observer)
        prof_api_observer(end - start);
    uint32_t size = (uint32_t)sizeof(struct prof_rec_api_call) + 8u * nargs;
    struct prof_rec_api_call *rec = ring_reserve(&t->ring, size);
    if (__builtin_expect(!rec, 0)) {
        collector_count_lost_call(t, api, result != 0, end - start);
        return;
    }
    rec->h.type = PROF_REC_API_CALL;
    rec->h.size = (uint16_t)size;
    rec->api = api;
    rec->result = emit_clamp_result(result);
    rec->start = start;
    rec->end = end;
    if (nargs)
        memcpy(rec + 1, args, 8u * nargs);
    ring_commit(&t->ring);
}

#endif
