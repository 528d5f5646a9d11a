/* The collector: the registry of per-thread rings, the process-wide metadata log, and
 * the thread that drains both into this process's trace file. */
#ifndef PROF_COLLECTOR_H
#define PROF_COLLECTOR_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "ring.h"

#define PROF_TLS __attribute__((tls_model("initial-exec")))
/* A thread's ring keeps 1/32 of its room, at least 16 KiB (a quarter of the smallest
 * ring), for the records a report needs whole (a training phase's span:
 * ring_reserve_kept), taken when the rest is full: about 680 records, 130 ms of a small-op
 * loop's phases while the collector is held up. */
static inline uint64_t collector_ring_kept(uint64_t ring_bytes)
{
    uint64_t part = ring_bytes / 32, least = ring_bytes / 4 < 16384 ? ring_bytes / 4 : 16384;
    return part > least ? part : least;
}

/* Per-API sums of the calls a full ring dropped: written by the owning thread only,
 * read by the collector (relaxed: each field is a single-writer counter). */
struct prof_lost_calls {
    _Atomic uint64_t calls, errors, ticks;
    uint64_t reported_calls, reported_errors, reported_ticks; /* collector's */
};

/* One per thread that emitted an event. Lives at the start of the mmap'd block that
 * also holds the ring's buffer. */
struct prof_thread {
    struct prof_ring ring;
    struct prof_thread *_Atomic next;
    uint32_t tid;
    _Atomic int exited; /* set by the thread's key destructor; the collector frees it */
    struct prof_lost_calls *_Atomic lost_calls; /* PROF_API_MAX entries, made on first drop */
    char name[16];
};

/* Description of one intercepted function, written into every trace as API_NAME. */
struct prof_api_desc {
    uint16_t id;
    uint8_t category;
    uint8_t nargs;
    const char *name;
    const char *args; /* comma-separated argument names */
};

struct collector_config {
    const char *output_dir; /* absolute */
    const char *run_id;
    uint64_t ring_bytes; /* power of two */
    unsigned flush_ms;
    int flush_period_only; /* 1: the collector runs every flush_ms only, not also when a
                            * thread's ring is half full (PROF_RING_WAKE=0) */
    int quiet;
    long rank, local_rank, world_size;
    uint32_t features;
    int redact; /* credential-like argv and env values become <redacted> (redact.h) */
};

/* 1 while events are recorded; 0 before init, after the final flush, when a failure
 * turned recording off, or outside a capture window (window.c). Read on every event. */
extern _Atomic int prof_recording;
/* Opens (1) or closes (0) the capture window: prof_recording, unless the collector is
 * finished or failed. Async-signal-safe. */
void collector_set_recording(int on);
/* 1 from init until the final flush or a failure, whether a window is open or not. */
int collector_is_live(void);
/* Keeps the collector thread running (and its sources called every pass) even before
 * any event, and again after every fork: a window that opens by time needs it. */
void collector_keep_running(void);

extern __thread struct prof_thread *prof_tls_thread PROF_TLS;
/* Non-zero while this thread runs profiler code: events from inside it are not recorded. */
extern __thread int prof_tls_busy PROF_TLS;

/* Called once at load, single-threaded. argv is copied. */
void collector_init(const struct collector_config *cfg, int argc, char **argv);
/* API tables are written at the top of every trace file. Call before any event. */
/* Fills each row's nargs from its argument names. */
void collector_add_api_table(struct prof_api_desc *table, size_t count);
/* 0 after a fork until the next event starts the collector thread again. */
extern _Atomic int prof_collector_running;
/* Moves on after every change of prof_recording and prof_collector_running, and once
 * prof_clock_hz is measured: a hot path
 * may check them once and keep the answer while it reads the same generation (the Python
 * layer's fast paths). Starts at 1. Async-signal-safe, as the stores are. */
extern _Atomic uint64_t prof_state_gen;
static inline void prof_state_set(_Atomic int *flag, int value)
{
    atomic_store(flag, value);
    atomic_fetch_add(&prof_state_gen, 1);
}
void collector_resume(void);
/* Registers the calling thread (first event). NULL when not recording. */
struct prof_thread *collector_thread_register(void);

/* Slow path of emit_api_call when the ring is full: keeps the call in the sums. */
void collector_count_lost_call(struct prof_thread *t, uint16_t api, int failed, uint64_t ticks);

/* Process-wide records that every file of this process needs (strings, symbols). */
uint32_t collector_intern(const char *text);
void collector_add_symbol(uint16_t kind, uint64_t address, uint32_t string_id, uint64_t target);
void collector_add_meta(const char *key, const char *value);
/* A message from the profiler: stderr (unless quiet) and a NOTE record. */
void collector_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Record sources that are not rings (Python call trees, CUPTI): drain(fresh, last) is
 * called by the drain-lock holder on every pass, after the rings, and writes with
 * collector_write_thread / collector_write. fresh: a new file was started since the last
 * call (after a fork), so everything must be written again. last: the process is about
 * to exit or exec: flush what is held elsewhere. */
void collector_add_source(void (*drain)(int fresh, int last));
/* True while the drain runs inside a signal handler (a crash may have interrupted
 * malloc or any lock holder): a source then takes no lock it would wait on, frees
 * nothing and calls no library that might. */
int collector_drain_in_signal(void);
void collector_write_thread(uint32_t tid);
void collector_write(const void *data, size_t len);
/* A process-wide record (like a symbol) that every file of this process carries. */
void collector_add_process_record(const void *rec, size_t len);
/* Called with the duration of every intercepted API call, when set (Python attributes
 * API time to the running function). */
extern void (*prof_api_observer)(uint64_t ticks);
/* The innermost Python call-tree node of the calling thread (0: none), when set.
 * Async-signal-safe (the sampler calls it). */
extern uint32_t (*prof_current_py_node)(void);
/* A training step's boundary on the calling thread at ticks (the PyTorch layer sees the
 * ends of the optimizer's steps, or the starts of torch.profiler's): the Python layer cuts
 * the thread's call tree there (python_tree_cuts.c), when set. */
extern void (*prof_py_cut)(uint64_t ticks);

/* Writes everything recorded so far and closes the file; recording stops. A process that
 * recorded nothing still writes its file (metadata, clock, END). */
void collector_finish(void);
/* Before exec: writes everything and an END record; recording goes on in this file if
 * the exec fails. */
void collector_flush_for_exec(void);
/* At load and in a forked child: the file made now, its preamble on disk, so that a
 * process killed with SIGKILL at any later moment still leaves a readable trace. */
void collector_open_early(void);
/* Writes everything recorded so far, from a signal handler: bounded wait, no locks
 * held forever; the END record names sig, whose default action ends the process next.
 * Also for a process that recorded nothing. Returns 0 on success. */
int collector_flush_from_signal(int sig);
/* Fork handlers: prepare/parent keep the collector consistent; child starts afresh. */
void collector_atfork_prepare(void);
void collector_atfork_parent(void);
void collector_atfork_child(void);
/* Totals for this process so far. */
uint64_t collector_events_lost(void);

#endif
