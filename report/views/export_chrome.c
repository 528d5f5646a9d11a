/* --chrome-trace: the timelines in the JSON that torch.profiler (Kineto) writes, so that
 * TensorBoard's profiler plugin, HTA, chrome://tracing and Perfetto read it unchanged.
 *
 * Layout of one file (one per rank; see export_timeline.h for the names):
 *   {"schemaVersion": 1, "deviceProperties": [...], "distributedInfo": {"rank", "world_size"},
 *    "traceEvents": [ metadata ("M"), spans ("X"), flows ("s"/"f", cat ac2g), memory ("i") ],
 *    "traceName": ..., "displayTimeUnit": "ms", "baseTimeNanoseconds": N}
 * ts and dur are whole microseconds since baseTimeNanoseconds (CLOCK_REALTIME ns when the
 * trace says how its clocks relate, else CLOCK_MONOTONIC): see chrome_round_us; with
 * --chrome-ns multiples of 1/1024 us, exact in doubles (chrome_us). As in
 * Kineto, GPU activities have pid = device and tid = stream; a launch and its kernel share
 * args.correlation and an ac2g flow (one id per arrow); a launch is named as HTA looks for
 * it (chrome_launch_name: __cudaLaunchKernel as cudaLaunchKernel). Categories: python_function,
 * cpu_op, user_annotation (record_function, NVTX, Lightning actions), cuda_runtime and
 * cuda_driver (CUPTI's calls), cuda_api, cuda_library and comm (our wrappers of the runtime,
 * of cuBLAS/cuDNN and of NCCL/MPI: not Kineto's, so its tools skip them), kernel,
 * gpu_memcpy, gpu_memset;
 * "[memory]" instant events as Kineto's profile_memory. The training steps (ProfilerStep#N)
 * found by the model are on a "Training steps" thread (tid 0) of their process.
 *
 * What the readers need beyond the schema: every thread's spans nest (timeline_nest), as
 * speedscope, HTA's call stacks and the TensorBoard plugin's op trees build a stack per
 * thread; a Python call's args are the same on every call, so that speedscope (which keys a
 * frame by name and args) merges calls; a file with kernels but no CPU op gets one cpu_op
 * span over its process (chrome_whole_span), else the plugin's overview has no step.
 *
 * Streaming: each event is formatted as it comes into a 1 MiB buffer (fprintf took 1 us per
 * event); names are escaped once (jansson) and kept per process; jansson builds the small
 * objects (header, metadata, shapes). */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "export_chrome_gpu.h"
#include "export_timeline.h"
#include "out_file.h"
#include "pid_clash.h"
#include "timeline.h"

#define CHROME_OUT (1 << 20)
#define CHROME_STEPS_TID 0 /* the training steps' thread in each process */

struct chrome_writer {
    FILE *f;
    const struct model_process *p;
    size_t index;         /* of the process in its file: flow ids of the next get it above 2^32 */
    int64_t offset;       /* add to a process's monotonic ns: ns since base */
    uint64_t base_ns;     /* baseTimeNanoseconds */
    struct u64map names;  /* name key -> escaped JSON string (malloc'd) */
    struct u64map shapes; /* shapes sid -> ", \"Input Dims\": ..., \"Input type\": ..." */
    struct u64map gpu;    /* device << 32 | stream + 1, and device: metadata written */
    struct u64map occupancy; /* launch shape hash -> struct chrome_occupancy * (formatting
                              * three doubles per kernel tripled the export's time) */
    uint64_t next_external;
    struct u64map nests; /* tid -> struct chrome_nest *, of the process being written */
    /* correlation ids of the ac2g flows begun and ended (timeline_bits): one arrow per id
     * even where CUPTI gives one launch several activities (a graph launch) */
    struct idbits flow_begun, flow_ended;
    int cpu_seen;             /* the group has a cpu_op or a ProfilerStep#N (the plugin's CPU) */
    int span_any;             /* an event of the group came: span_lo, span_hi hold */
    int64_t span_lo, span_hi; /* the group's events, ns since base */
    int first;
    int ns; /* EXPORT_CHROME_NS */
    struct export_timeline_stats *stats;
    char *out; /* CHROME_OUT bytes of JSON not yet written: fprintf cost 1 us per event */
    size_t used;
    int failed;
};

static void chrome_flush(struct chrome_writer *w)
{
    if (w->used && fwrite(w->out, 1, w->used, w->f) != w->used)
        w->failed = 1;
    w->used = 0;
}

static void chrome_put(struct chrome_writer *w, const char *s, size_t n)
{
    if (w->used + n > CHROME_OUT)
        chrome_flush(w);
    if (n > CHROME_OUT) {
        if (fwrite(s, 1, n, w->f) != n)
            w->failed = 1;
        return;
    }
    memcpy(w->out + w->used, s, n);
    w->used += n;
}

static void chrome_puts(struct chrome_writer *w, const char *s)
{
    chrome_put(w, s, strlen(s));
}

static void chrome_u64(struct chrome_writer *w, uint64_t v)
{
    char b[24];
    size_t i = sizeof b;
    do
        b[--i] = (char)('0' + v % 10);
    while (v /= 10);
    chrome_put(w, b + i, sizeof b - i);
}

static void chrome_i64(struct chrome_writer *w, int64_t v)
{
    if (v < 0) {
        chrome_put(w, "-", 1);
        chrome_u64(w, (uint64_t)0 - (uint64_t)v);
    } else {
        chrome_u64(w, (uint64_t)v);
    }
}

/* s as a JSON string literal (malloc'd); bytes that are not UTF-8 become '?'. */
static char *chrome_quote(const char *s)
{
    json_t *j = json_string(s);
    if (!j) {
        char *copy = report_strdup(s);
        for (char *c = copy; *c; c++)
            if ((unsigned char)*c >= 0x80)
                *c = '?';
        j = json_string(copy);
        free(copy);
    }
    char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    json_decref(j);
    if (!out)
        report_oom();
    return out;
}

static const char *chrome_name(struct chrome_writer *w, const struct timeline_event *ev)
{
    uint64_t *slot = u64map_slot(&w->names, ev->name_key);
    if (!slot)
        report_oom();
    int launch = ev->kind == TIMELINE_RUNTIME || ev->kind == TIMELINE_DRIVER;
    if (!*slot)
        *slot = (uintptr_t)chrome_quote(launch ? chrome_launch_name(ev->name) : ev->name);
    return (const char *)(uintptr_t)*slot;
}

/* torch.profiler's "Input Dims" and "Input type" from our shapes text
 * ("float[8, 1, 8, 8], long int[8], [1, 1], Scalar"): a type and dims per input. */
static char *chrome_shapes_args(const char *text)
{
    json_t *dims = json_array(), *types = json_array();
    const char *s = text;
    while (*s) {
        const char *open = NULL, *end = s;
        int depth = 0;
        for (; *end && !(depth == 0 && end[0] == ',' && end[1] == ' '); end++) {
            if (*end == '[' && depth++ == 0 && !open)
                open = end;
            else if (*end == ']')
                depth--;
        }
        json_t *d = json_array();
        const char *type_end = open ? open : end;
        if (open)
            for (const char *c = open + 1; *c && c < end;) {
                char *next;
                long long v = strtoll(c, &next, 10);
                if (next == c)
                    break;
                json_array_append_new(d, json_integer(v));
                c = next;
                while (*c == ',' || *c == ' ')
                    c++;
            }
        json_array_append_new(dims, d);
        json_array_append_new(types, json_stringn(s, (size_t)(type_end - s)));
        s = *end ? end + 2 : end;
    }
    char *d = json_dumps(dims, JSON_COMPACT), *t = json_dumps(types, JSON_COMPACT);
    size_t len = strlen(d) + strlen(t) + 64;
    char *out = malloc(len);
    if (!d || !t || !out)
        report_oom();
    snprintf(out, len, ", \"Input Dims\": %s, \"Input type\": %s", d, t);
    free(d);
    free(t);
    json_decref(dims);
    json_decref(types);
    return out;
}

static void chrome_sep(struct chrome_writer *w)
{
    chrome_puts(w, w->first ? "\n  " : ",\n  ");
    w->first = 0;
    w->stats->packets++;
}

/* Two's complement arithmetic on times (a damaged trace's can be anything): no overflow. */
static int64_t chrome_add(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

static int64_t chrome_sub(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a - (uint64_t)b);
}

/* ns since the base as whole microseconds, rounded to the nearest. HTA rounds float times
 * by ceiling the start and flooring the end (trace_parser.py, for pytorch PR 122425), which
 * gave every sub-microsecond event a duration of -1 and failed its call stacks; integer
 * times it leaves alone. Every instant goes through this one monotone function and a
 * duration is the difference of two rounded instants, so no order between instants
 * changes: what nested still nests, nothing ends before it begins (a span shorter than
 * half a microsecond may become 0 long). */
static int64_t chrome_round_us(int64_t ns)
{
    int64_t q = ns / 1000, r = ns % 1000;
    if (r < 0) {
        q--;
        r += 1000;
    }
    return r >= 500 ? q + 1 : q;
}

/* ns on the grid of 1/1024 us (EXPORT_CHROME_NS), rounded to the nearest: finer than a ns,
 * so distinct instants stay distinct and ordered, each within 0.49 ns of the record. */
static int64_t chrome_grid(int64_t ns)
{
    __int128 x = (__int128)ns * 256 + 125, q = x / 250; /* round(ns * 1024 / 1000) */
    return (int64_t)(q * 250 > x ? q - 1 : q);          /* floor for negative ns too */
}

/* A multiple g of 1/1024 us, written exactly: g / 1024 and up to 10 decimals. */
static void chrome_grid_put(struct chrome_writer *w, int64_t g)
{
    uint64_t a = g < 0 ? (uint64_t)0 - (uint64_t)g : (uint64_t)g;
    if (g < 0)
        chrome_put(w, "-", 1);
    chrome_u64(w, a >> 10);
    uint64_t frac = (a & 1023) * 9765625; /* the fraction in units of 10^-10 */
    char digits[11] = {'.'};
    size_t n = 1;
    for (uint64_t scale = 1000000000; scale && (n == 1 || frac); scale /= 10) {
        digits[n++] = (char)('0' + frac / scale);
        frac %= scale;
    }
    chrome_put(w, digits, n);
}

/* A time in ns as microseconds: whole (chrome_round_us), or with EXPORT_CHROME_NS on the
 * grid of 1/1024 us (chrome_grid). Readers add and subtract these times as doubles —
 * speedscope takes each thread's first ts from every ts, then adds dur (its trace-event
 * importer) — and 3 decimals of us, which no double holds exactly, made that sum land a
 * span's end past the start of the span that abuts it (ProfilerStep#N and #N+1: 13
 * mis-ends on a 40-step run). Binary fractions below 2^43 us (101 days from
 * baseTimeNanoseconds) add and subtract exactly: the end a reader computes is exactly the
 * next span's start; no duration is shortened to fit. */
static void chrome_us(struct chrome_writer *w, int64_t ns)
{
    if (w->ns)
        chrome_grid_put(w, chrome_grid(ns));
    else
        chrome_i64(w, chrome_round_us(ns));
}

/* The duration of [lo, hi] (ns since base) as written: the difference of the two instants
 * as chrome_us writes them, so that ts + dur is the end's own time, exactly. */
static void chrome_dur(struct chrome_writer *w, int64_t lo, int64_t hi)
{
    chrome_puts(w, ", \"dur\": ");
    if (w->ns)
        chrome_grid_put(w, chrome_sub(chrome_grid(hi), chrome_grid(lo)));
    else
        chrome_i64(w, chrome_sub(chrome_round_us(hi), chrome_round_us(lo)));
}

static int64_t chrome_ts(const struct chrome_writer *w, uint64_t mono_ns)
{
    return chrome_add((int64_t)mono_ns, w->offset);
}

/* A metadata event ("M") whose args are {key: value}. */
static void chrome_meta(struct chrome_writer *w, const char *what, long long pid, long long tid,
                        const char *key, json_t *value)
{
    json_t *ev = json_pack("{s:s, s:s, s:I, s:I, s:I, s:{s:o}}", "name", what, "ph", "M", "ts",
                           (json_int_t)0, "pid", (json_int_t)pid, "tid", (json_int_t)tid, "args",
                           key, value);
    chrome_sep(w);
    char *text = ev ? json_dumps(ev, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    if (text)
        chrome_puts(w, text);
    free(text);
    json_decref(ev);
}

static void chrome_gpu_meta(struct chrome_writer *w, const struct timeline_event *ev)
{
    uint64_t key = (uint64_t)ev->device << 32 | ((uint64_t)ev->stream + 1);
    uint64_t *dslot = u64map_slot(&w->gpu, (uint64_t)ev->device << 32);
    if (!dslot)
        report_oom();
    char buf[64];
    if (!*dslot) {
        *dslot = 1;
        snprintf(buf, sizeof buf, "GPU %u", ev->device);
        chrome_meta(w, "process_name", ev->device, 0, "name", json_string(buf));
        chrome_meta(w, "process_labels", ev->device, 0, "labels", json_string(buf));
    }
    uint64_t *slot = u64map_slot(&w->gpu, key);
    if (!slot)
        report_oom();
    if (!*slot) {
        *slot = 1;
        snprintf(buf, sizeof buf, "stream %u", ev->stream);
        chrome_meta(w, "thread_name", ev->device, ev->stream, "name", json_string(buf));
    }
}

static const char *const chrome_categories[TIMELINE_KIND_COUNT] = {
    [TIMELINE_PYTHON] = "python_function", [TIMELINE_OP] = "cpu_op",
    [TIMELINE_SCOPE] = "user_annotation",  [TIMELINE_API] = "cuda_api",
    [TIMELINE_LIBRARY] = "cuda_library",   [TIMELINE_COMM] = "comm",
    [TIMELINE_RUNTIME] = "cuda_runtime",   [TIMELINE_DRIVER] = "cuda_driver",
    [TIMELINE_NVTX] = "user_annotation",   [TIMELINE_ACTION] = "user_annotation",
    [TIMELINE_KERNEL] = "kernel",          [TIMELINE_MEMCPY] = "gpu_memcpy",
    [TIMELINE_MEMSET] = "gpu_memset",      [TIMELINE_MEMORY] = "cpu_instant_event",
    [TIMELINE_STEP] = "user_annotation"};

static void chrome_memory(struct chrome_writer *w, const struct timeline_event *ev)
{
    chrome_sep(w);
    chrome_puts(w, "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", "
                   "\"name\": \"[memory]\", \"pid\": ");
    chrome_i64(w, pid_clash_export_pid(w->p));
    chrome_puts(w, ", \"tid\": ");
    chrome_u64(w, ev->tid);
    chrome_puts(w, ", \"ts\": ");
    chrome_us(w, chrome_ts(w, ev->start_ns));
    chrome_puts(w, ", \"args\": {\"Device Type\": ");
    chrome_i64(w, ev->dev_type);
    chrome_puts(w, ", \"Device Id\": ");
    chrome_i64(w, ev->dev_index);
    chrome_puts(w, ", \"Addr\": ");
    chrome_u64(w, ev->ptr);
    chrome_puts(w, ", \"Bytes\": ");
    chrome_i64(w, ev->delta);
    chrome_puts(w, ", \"Total Allocated\": ");
    chrome_i64(w, ev->live);
    chrome_puts(w, ", \"Total Reserved\": ");
    chrome_u64(w, ev->reserved);
    chrome_puts(w, "}}");
}

/* "name": number, after a comma unless first. */
static void chrome_arg(struct chrome_writer *w, const char *key, int64_t v)
{
    chrome_puts(w, key);
    chrome_i64(w, v);
}

/* Makes [*start, *end] nest with what its thread has written (timeline_nest_clip). */
static void chrome_nest(struct chrome_writer *w, uint32_t tid, uint64_t *start, uint64_t *end)
{
    uint64_t *slot = u64map_slot(&w->nests, tid);
    if (!slot)
        report_oom();
    if (!*slot)
        *slot = (uintptr_t)timeline_nest_new();
    timeline_nest_clip((struct timeline_nest *)(uintptr_t)*slot, start, end);
}

static void chrome_nests_free(struct chrome_writer *w)
{
    uint64_t k, v;
    for (size_t i = 0; u64map_next(&w->nests, &i, &k, &v);)
        timeline_nest_free((struct timeline_nest *)(uintptr_t)v);
    u64map_free(&w->nests);
    u64map_init(&w->nests);
}

static void chrome_dim(struct chrome_writer *w, const char *key, uint64_t packed)
{
    chrome_puts(w, key);
    chrome_u64(w, packed & 0xffffffffu);
    chrome_puts(w, ", ");
    chrome_u64(w, packed >> 32 & 0xffff);
    chrome_puts(w, ", ");
    chrome_u64(w, packed >> 48);
    chrome_puts(w, "]");
}

/* The occupancy args of one launch shape on one device, formatted once. */
struct chrome_occupancy {
    uint64_t grid, block;
    uint32_t registers, shared_bytes, device;
    char text[160]; /* "" where the device's capability is unknown */
};

static void chrome_occupancy_text(const struct chrome_writer *w, const struct timeline_event *ev,
                                  char *buf, size_t len)
{
    chrome_occupancy_format(w->p, ev->device, ev->grid, ev->block, ev->registers, ev->shared_bytes,
                            buf, len);
}

/* Kineto's kernel args: grid, block, registers per thread, shared memory, and the
 * occupancy args (chrome_occupancy_text), cached per launch shape. */
static void chrome_kernel_args(struct chrome_writer *w, const struct timeline_event *ev)
{
    chrome_arg(w, ", \"registers per thread\": ", ev->registers);
    chrome_arg(w, ", \"shared memory\": ", ev->shared_bytes);
    chrome_dim(w, ", \"grid\": [", ev->grid);
    chrome_dim(w, ", \"block\": [", ev->block);
    uint64_t h = ev->grid * 0x9e3779b97f4a7c15ull ^ ev->block * 0xc2b2ae3d27d4eb4full ^
                 ((uint64_t)ev->registers << 40 | (uint64_t)ev->shared_bytes << 8 | ev->device);
    uint64_t *slot = u64map_slot(&w->occupancy, h);
    if (!slot)
        report_oom();
    struct chrome_occupancy *c = (struct chrome_occupancy *)(uintptr_t)*slot;
    if (c && c->grid == ev->grid && c->block == ev->block && c->registers == ev->registers &&
        c->shared_bytes == ev->shared_bytes && c->device == ev->device) {
        chrome_puts(w, c->text);
        return;
    }
    if (c) { /* another shape with this hash: formatted anew each time */
        char buf[160];
        chrome_occupancy_text(w, ev, buf, sizeof buf);
        chrome_puts(w, buf);
        return;
    }
    if (!(c = malloc(sizeof *c)))
        report_oom();
    *c = (struct chrome_occupancy){ev->grid,         ev->block,  ev->registers,
                                   ev->shared_bytes, ev->device, ""};
    chrome_occupancy_text(w, ev, c->text, sizeof c->text);
    *slot = (uintptr_t)c;
    chrome_puts(w, c->text);
}

static void chrome_steps_thread(struct chrome_writer *w)
{
    /* a key no device << 32 | stream + 1 can be */
    uint64_t *slot = u64map_slot(&w->gpu, UINT64_MAX - w->index);
    if (!slot)
        report_oom();
    if (!*slot) {
        *slot = 1;
        chrome_meta(w, "thread_name", pid_clash_export_pid(w->p), CHROME_STEPS_TID, "name",
                    json_string("Training steps"));
    }
}

static int chrome_on_event(void *ctx, const struct timeline_event *ev)
{
    struct chrome_writer *w = ctx;
    w->stats->events++;
    int64_t lo = chrome_ts(w, ev->start_ns), hi = chrome_ts(w, ev->end_ns);
    if (!w->span_any || lo < w->span_lo)
        w->span_lo = lo;
    if (!w->span_any || hi > w->span_hi)
        w->span_hi = hi;
    w->span_any = 1;
    if (ev->kind == TIMELINE_MEMORY) {
        chrome_memory(w, ev);
        return w->failed ? -1 : 0;
    }
    int gpu =
        ev->kind == TIMELINE_KERNEL || ev->kind == TIMELINE_MEMCPY || ev->kind == TIMELINE_MEMSET;
    int64_t pid = gpu ? (int64_t)ev->device : pid_clash_export_pid(w->p);
    uint32_t tid = gpu ? ev->stream : ev->kind == TIMELINE_STEP ? CHROME_STEPS_TID : ev->tid;
    uint64_t start = ev->start_ns, end = ev->end_ns;
    if (gpu)
        chrome_gpu_meta(w, ev);
    else
        chrome_nest(w, tid, &start, &end);
    if (ev->kind == TIMELINE_STEP)
        chrome_steps_thread(w);
    if (ev->kind == TIMELINE_OP || ev->kind == TIMELINE_STEP ||
        (ev->kind == TIMELINE_SCOPE && !strncmp(ev->name, "ProfilerStep#", 13)))
        w->cpu_seen = 1;
    int64_t ts = chrome_ts(w, start);
    chrome_sep(w);
    chrome_puts(w, "{\"ph\": \"X\", \"cat\": \"");
    chrome_puts(w, chrome_categories[ev->kind]);
    chrome_puts(w, "\", \"name\": ");
    chrome_puts(w, chrome_name(w, ev));
    chrome_arg(w, ", \"pid\": ", pid);
    chrome_arg(w, ", \"tid\": ", tid);
    chrome_puts(w, ", \"ts\": ");
    chrome_us(w, ts);
    chrome_dur(w, ts, chrome_ts(w, end));
    chrome_puts(w, ", \"args\": {");
    switch (ev->kind) {
    case TIMELINE_PYTHON:
        break; /* nothing per call: speedscope keys a frame by its name and args */
    case TIMELINE_OP:
    case TIMELINE_SCOPE:
    case TIMELINE_NVTX:
    case TIMELINE_ACTION:
        chrome_arg(w, "\"External id\": ", (int64_t)w->next_external++);
        if (ev->sequence_nr >= 0)
            chrome_arg(w, ", \"Sequence number\": ", ev->sequence_nr);
        if (ev->shapes && *ev->shapes) {
            uint64_t *slot = u64map_slot(&w->shapes, ev->shapes_sid);
            if (!slot)
                report_oom();
            if (!*slot)
                *slot = (uintptr_t)chrome_shapes_args(ev->shapes);
            chrome_puts(w, (const char *)(uintptr_t)*slot);
        }
        break;
    case TIMELINE_RUNTIME:
    case TIMELINE_DRIVER:
        chrome_arg(w, "\"External id\": 0, \"cbid\": ", ev->cbid);
        chrome_arg(w, ", \"correlation\": ", ev->correlation);
        break;
    case TIMELINE_KERNEL:
    case TIMELINE_MEMCPY:
    case TIMELINE_MEMSET:
        chrome_arg(w, "\"External id\": 0, \"device\": ", ev->device);
        chrome_arg(w, ", \"stream\": ", ev->stream);
        chrome_arg(w, ", \"correlation\": ", ev->correlation);
        if (ev->kind == TIMELINE_KERNEL) {
            chrome_kernel_args(w, ev);
        } else {
            double dur = (double)(ev->end_ns - ev->start_ns);
            char bw[64];
            snprintf(bw, sizeof bw, ", \"memory bandwidth (GB/s)\": %.6g",
                     dur > 0 ? (double)ev->bytes / dur : 0.0);
            chrome_arg(w, ", \"bytes\": ", (int64_t)ev->bytes);
            chrome_puts(w, bw);
        }
        break;
    default:
        break;
    }
    chrome_puts(w, "}}");
    /* An arrow only where the file has both the launch and an activity of its correlation
     * id (timeline_has_flow): none from nowhere, none to nowhere (a failed launch). */
    int launch = ev->kind == TIMELINE_RUNTIME || ev->kind == TIMELINE_DRIVER;
    if ((launch || gpu) && timeline_has_flow(w->p, ev->correlation) &&
        timeline_bits_once(launch ? &w->flow_begun : &w->flow_ended, ev->correlation)) {
        chrome_sep(w);
        chrome_puts(w, gpu ? "{\"ph\": \"f\", \"id\": " : "{\"ph\": \"s\", \"id\": ");
        chrome_u64(w, (uint64_t)w->index << 32 | ev->correlation);
        chrome_arg(w, ", \"pid\": ", pid);
        chrome_arg(w, ", \"tid\": ", tid);
        chrome_puts(w, ", \"ts\": ");
        chrome_us(w, ts);
        chrome_puts(w, gpu ? ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}"
                           : ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
    }
    return w->failed ? -1 : 0;
}

/* A group (file) with no cpu_op and no ProfilerStep#N — a C program's CUDA calls, Python
 * without the torch bridge — gives the TensorBoard plugin no CPU range: its one step is
 * then (sys.maxsize, -sys.maxsize - 1) and its overview a total of -1.8e19 us. One cpu_op
 * span "[process] COMMAND" over all the group's events, on its first process's main thread
 * (it holds everything there), gives it the run's extent instead. */
static void chrome_whole_span(struct chrome_writer *w, const struct model_process *p)
{
    if (w->cpu_seen || !w->span_any)
        return;
    char label[512], name[600];
    snprintf(name, sizeof name, "[process] %s", timeline_process_label(p, label, sizeof label));
    char *quoted = chrome_quote(name);
    chrome_sep(w);
    chrome_puts(w, "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": ");
    chrome_puts(w, quoted);
    chrome_arg(w, ", \"pid\": ", pid_clash_export_pid(p));
    chrome_arg(w, ", \"tid\": ", p->pid);
    chrome_puts(w, ", \"ts\": ");
    chrome_us(w, w->span_lo);
    chrome_dur(w, w->span_lo, w->span_hi);
    chrome_arg(w, ", \"args\": {\"External id\": ", (int64_t)w->next_external++);
    chrome_puts(w, "}}");
    free(quoted);
}

static void chrome_free_map(struct u64map *m)
{
    uint64_t k, v;
    for (size_t i = 0; u64map_next(m, &i, &k, &v);)
        free((void *)(uintptr_t)v);
    u64map_free(m);
    u64map_init(m);
}

/* The file of one group: FILE.pt.trace.json, as the TensorBoard plugin lists only files
 * named *.pt.trace.json (profiler/data.py); a ".json" or ".pt.trace.json" that FILE already
 * ends with is not repeated. With several groups ".rank<N>" (".pid<P>" unranked, ".pid<P>_<k>"
 * for the k-th other process with pid P, pid_clash.h) comes before ".pt.trace.json":
 * run.json -> run.rank0.pt.trace.json, run.rank1.pt.trace.json.
 * FILE an existing folder (or ending in "/"): rank<N>.pt.trace.json in it. */
static char *chrome_file_name(const char *path, int64_t group, int several)
{
    static const char suffix[] = ".pt.trace.json";
    char tag[48] = "";
    size_t len = strlen(path);
    struct stat st;
    int folder = (len && path[len - 1] == '/') || (stat(path, &st) == 0 && S_ISDIR(st.st_mode));
    if (several || folder) {
        int64_t pid = (-1 - group) % PID_CLASH_STRIDE, other = (-1 - group) / PID_CLASH_STRIDE;
        if (group >= 0)
            snprintf(tag, sizeof tag, "%srank%" PRId64, folder ? "" : ".", group);
        else if (other) /* pid P's k-th other process (pid_clash.h): pidP_k */
            snprintf(tag, sizeof tag, "%spid%" PRId64 "_%" PRId64, folder ? "" : ".", pid, other);
        else
            snprintf(tag, sizeof tag, "%spid%" PRId64, folder ? "" : ".", pid);
    }
    size_t stem = len;
    if (folder)
        stem = len && path[len - 1] == '/' ? len : len + 1;
    else if (len >= sizeof suffix - 1 && !strcmp(path + len - (sizeof suffix - 1), suffix))
        stem = len - (sizeof suffix - 1);
    else if (len > 5 && !strcmp(path + len - 5, ".json"))
        stem = len - 5;
    char *out = malloc(stem + strlen(tag) + sizeof suffix + 1);
    if (!out)
        report_oom();
    memcpy(out, path, stem < len ? stem : len);
    if (stem > len)
        out[len] = '/';
    strcpy(out + stem, tag);
    strcat(out, suffix);
    return out;
}

static int chrome_write_group(const char *file, struct model_process *const *procs, size_t n,
                              int64_t group, unsigned flags, struct export_timeline_stats *stats,
                              char *err, size_t errlen)
{
    struct chrome_writer w = {
        .first = 1, .next_external = 1, .stats = stats, .ns = (flags & EXPORT_CHROME_NS) != 0};
    uint64_t base = UINT64_MAX;
    int64_t rank = -1, world = 1;
    for (size_t i = 0; i < n; i++) {
        if (chrome_group(procs[i]) != group)
            continue;
        uint64_t start = model_start_monotonic_ns(procs[i]) + timeline_realtime_offset(procs[i]);
        base = start < base ? start : base;
        const char *ws = model_meta_get(procs[i], "world_size");
        rank = procs[i]->rank;
        if (ws && *ws)
            world = strtoll(ws, NULL, 10);
    }
    w.base_ns = base;
    struct out_file o;
    if (out_file_create(&o, file, 0666, err, errlen) != 0)
        return -1;
    w.f = o.f;
    w.out = malloc(CHROME_OUT);
    if (!w.out)
        report_oom();
    json_t *dist = json_pack("{s:I, s:I}", "rank", (json_int_t)(rank >= 0 ? rank : 0), "world_size",
                             (json_int_t)world);
    json_t *devs = chrome_devices(procs, n, group);
    char *dist_s = json_dumps(dist, JSON_PRESERVE_ORDER);
    char *devs_s = json_dumps(devs, JSON_INDENT(2));
    fprintf(w.f,
            "{\n\"schemaVersion\": 1,\n\"deviceProperties\": %s,\n\"distributedInfo\": %s,\n"
            "\"traceEvents\": [",
            devs_s ? devs_s : "[]", dist_s ? dist_s : "{}");
    free(dist_s);
    free(devs_s);
    json_decref(dist);
    json_decref(devs);
    u64map_init(&w.names);
    u64map_init(&w.shapes);
    u64map_init(&w.gpu);
    u64map_init(&w.nests);
    u64map_init(&w.occupancy);
    int rc = 0;
    const struct model_process *first = NULL;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct model_process *p = procs[i];
        if (chrome_group(p) != group)
            continue;
        w.p = p;
        first = first ? first : p;
        timeline_flows_prepare(procs[i]);
        w.offset = chrome_sub(timeline_realtime_offset(p), (int64_t)base);
        char label[512];
        chrome_meta(&w, "process_name", pid_clash_export_pid(p), 0, "name",
                    json_string(timeline_process_label(p, label, sizeof label)));
        chrome_meta(&w, "process_labels", pid_clash_export_pid(p), 0, "labels", json_string("CPU"));
        for (size_t t = 0; t < p->nthreads; t++)
            if (p->threads[t].name && *p->threads[t].name)
                chrome_meta(&w, "thread_name", pid_clash_export_pid(p), p->threads[t].tid, "name",
                            json_string(p->threads[t].name));
        rc = timeline_stream(p, chrome_on_event, &w, err, errlen);
        chrome_free_map(&w.names);
        chrome_free_map(&w.shapes);
        chrome_free_map(&w.occupancy); /* its devices are the process's */
        chrome_nests_free(&w);
        idbits_free(&w.flow_begun);
        idbits_free(&w.flow_ended);
        w.index++;
    }
    if (rc == 0 && first)
        chrome_whole_span(&w, first);
    chrome_flush(&w);
    json_t *name = json_string(file);
    char *name_s = name ? json_dumps(name, JSON_ENCODE_ANY) : NULL;
    fprintf(w.f,
            "\n],\n\"traceName\": %s,\n\"displayTimeUnit\": \"ms\",\n"
            "\"baseTimeNanoseconds\": %" PRIu64 "\n}\n",
            name_s ? name_s : "\"\"", base);
    free(name_s);
    json_decref(name);
    long size = ftell(w.f);
    if (w.failed && rc == 0) {
        snprintf(err, errlen, "%s: cannot write: %s", file, strerror(errno));
        rc = -1;
    }
    if (out_file_commit(&o, rc == 0, err, errlen) != 0)
        rc = -1;
    free(w.out);
    u64map_free(&w.gpu);
    chrome_nests_free(&w);
    u64map_free(&w.nests);
    chrome_free_map(&w.occupancy);
    u64map_free(&w.occupancy);
    u64map_free(&w.names);
    u64map_free(&w.shapes);
    if (rc == 0) {
        stats->bytes += size > 0 ? (uint64_t)size : 0;
        stats->files++;
    }
    return rc;
}

int export_chrome_write(const char *path, struct model_process *const *procs, size_t n,
                        unsigned flags, struct export_timeline_stats *stats, char *err,
                        size_t errlen)
{
    struct export_timeline_stats local = {0};
    int several = 0, rc = 0;
    for (size_t i = 1; i < n; i++)
        if (chrome_group(procs[i]) != chrome_group(procs[0]))
            several = 1;
    for (size_t i = 0; i < n && rc == 0; i++) {
        int64_t group = chrome_group(procs[i]);
        size_t first = 0;
        while (chrome_group(procs[first]) != group)
            first++;
        if (first != i)
            continue; /* written with the group's first process */
        char *file = chrome_file_name(path, group, several);
        rc = chrome_write_group(file, procs, n, group, flags, &local, err, errlen);
        free(file);
    }
    if (stats)
        *stats = local;
    return rc;
}
