/* --chrome-trace: the timelines in the JSON that torch.profiler (Kineto) writes, so that
 * TensorBoard's profiler plugin, HTA, chrome://tracing and Perfetto read it unchanged.
 *
 * Layout of one file (one per rank; see export_timeline.h for the names):
 *   {"schemaVersion": 1, "deviceProperties": [...], "distributedInfo": {"rank", "world_size"},
 *    "traceEvents": [ metadata ("M"), spans ("X"), flows ("s"/"f", cat ac2g), memory ("i") ],
 *    "traceName": ..., "displayTimeUnit": "ms", "baseTimeNanoseconds": N}
 * ts and dur are microseconds (3 decimals) since baseTimeNanoseconds (CLOCK_REALTIME ns when
 * the trace says how its clocks relate, else CLOCK_MONOTONIC). As in Kineto, GPU activities
 * have pid = device and tid = stream; a launch and its kernel share args.correlation and an
 * ac2g flow. Categories: python_function, cpu_op, user_annotation (record_function, NVTX,
 * Lightning actions), cuda_runtime and cuda_driver (CUPTI's calls), cuda_api and cuda_library
 * (our wrappers of the runtime and of cuBLAS/cuDNN: not Kineto's, so its tools skip them),
 * kernel, gpu_memcpy, gpu_memset; "[memory]" instant events as Kineto's profile_memory.
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

#include "alloc.h"
#include "export_timeline.h"
#include "out_file.h"
#include "timeline.h"

struct chrome_writer {
    FILE *f;
    const struct model_process *p;
    size_t index;         /* of the process in its file: flow ids of the next get it above 2^32 */
    int64_t offset;       /* add to a process's monotonic ns: ns since base */
    uint64_t base_ns;     /* baseTimeNanoseconds */
    struct u64map names;  /* name key -> escaped JSON string (malloc'd) */
    struct u64map shapes; /* shapes sid -> ", \"Input Dims\": ..., \"Input type\": ..." */
    struct u64map gpu;    /* device << 32 | stream + 1, and device: metadata written */
    uint64_t next_external;
    int first;
    struct export_timeline_stats *stats;
    char *out; /* CHROME_OUT bytes of JSON not yet written: fprintf cost 1 us per event */
    size_t used;
    int failed;
};

#define CHROME_OUT (1 << 20)

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
    if (!*slot)
        *slot = (uintptr_t)chrome_quote(ev->name);
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

/* ns since the base as Kineto's microseconds with 3 decimals. */
static void chrome_us(struct chrome_writer *w, int64_t ns)
{
    uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    char frac[4] = {'.', (char)('0' + a / 100 % 10), (char)('0' + a / 10 % 10),
                    (char)('0' + a % 10)};
    if (ns < 0)
        chrome_put(w, "-", 1);
    chrome_u64(w, a / 1000);
    chrome_put(w, frac, 4);
}

static int64_t chrome_ts(const struct chrome_writer *w, uint64_t mono_ns)
{
    return (int64_t)mono_ns + w->offset;
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
    [TIMELINE_PYTHON] = "python_function",  [TIMELINE_OP] = "cpu_op",
    [TIMELINE_SCOPE] = "user_annotation",   [TIMELINE_API] = "cuda_api",
    [TIMELINE_LIBRARY] = "cuda_library",    [TIMELINE_RUNTIME] = "cuda_runtime",
    [TIMELINE_DRIVER] = "cuda_driver",      [TIMELINE_NVTX] = "user_annotation",
    [TIMELINE_ACTION] = "user_annotation",  [TIMELINE_KERNEL] = "kernel",
    [TIMELINE_MEMCPY] = "gpu_memcpy",       [TIMELINE_MEMSET] = "gpu_memset",
    [TIMELINE_MEMORY] = "cpu_instant_event", [TIMELINE_STEP] = "user_annotation"};

static void chrome_memory(struct chrome_writer *w, const struct timeline_event *ev)
{
    chrome_sep(w);
    chrome_puts(w, "{\"ph\": \"i\", \"cat\": \"cpu_instant_event\", \"s\": \"t\", "
                   "\"name\": \"[memory]\", \"pid\": ");
    chrome_i64(w, w->p->pid);
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

static int chrome_on_event(void *ctx, const struct timeline_event *ev)
{
    struct chrome_writer *w = ctx;
    w->stats->events++;
    if (ev->kind == TIMELINE_MEMORY) {
        chrome_memory(w, ev);
        return w->failed ? -1 : 0;
    }
    int gpu =
        ev->kind == TIMELINE_KERNEL || ev->kind == TIMELINE_MEMCPY || ev->kind == TIMELINE_MEMSET;
    int64_t pid = gpu ? (int64_t)ev->device : w->p->pid;
    uint32_t tid = gpu ? ev->stream : ev->tid;
    if (gpu)
        chrome_gpu_meta(w, ev);
    chrome_sep(w);
    chrome_puts(w, "{\"ph\": \"X\", \"cat\": \"");
    chrome_puts(w, chrome_categories[ev->kind]);
    chrome_puts(w, "\", \"name\": ");
    chrome_puts(w, chrome_name(w, ev));
    chrome_arg(w, ", \"pid\": ", pid);
    chrome_arg(w, ", \"tid\": ", tid);
    chrome_puts(w, ", \"ts\": ");
    chrome_us(w, chrome_ts(w, ev->start_ns));
    chrome_puts(w, ", \"dur\": ");
    chrome_us(w, (int64_t)(ev->end_ns - ev->start_ns));
    chrome_puts(w, ", \"args\": {");
    switch (ev->kind) {
    case TIMELINE_PYTHON:
        chrome_arg(w, "\"Python id\": ", ev->py_node);
        break;
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
        if (ev->kind != TIMELINE_KERNEL) {
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
    if (ev->correlation && (ev->kind == TIMELINE_RUNTIME || ev->kind == TIMELINE_DRIVER || gpu)) {
        chrome_sep(w);
        chrome_puts(w, gpu ? "{\"ph\": \"f\", \"id\": " : "{\"ph\": \"s\", \"id\": ");
        chrome_u64(w, (uint64_t)w->index << 32 | ev->correlation);
        chrome_arg(w, ", \"pid\": ", pid);
        chrome_arg(w, ", \"tid\": ", tid);
        chrome_puts(w, ", \"ts\": ");
        chrome_us(w, chrome_ts(w, ev->start_ns));
        chrome_puts(w, gpu ? ", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"}"
                           : ", \"cat\": \"ac2g\", \"name\": \"ac2g\"}");
    }
    return w->failed ? -1 : 0;
}

static void chrome_free_map(struct u64map *m)
{
    uint64_t k, v;
    for (size_t i = 0; u64map_next(m, &i, &k, &v);)
        free((void *)(uintptr_t)v);
    u64map_free(m);
    u64map_init(m);
}

/* The group key of a process: its rank, or its pid when it has none. */
static int64_t chrome_group(const struct model_process *p)
{
    return p->rank >= 0 ? p->rank : -1 - p->pid;
}

static json_t *chrome_devices(struct model_process *const *procs, size_t n, int64_t group)
{
    json_t *list = json_array();
    struct u64map seen;
    u64map_init(&seen);
    for (size_t i = 0; i < n; i++) {
        if (chrome_group(procs[i]) != group)
            continue;
        for (size_t d = 0; d < procs[i]->gpu.ndevices; d++) {
            const struct model_gpu_device *g = &procs[i]->gpu.devices[d];
            uint64_t *slot = u64map_slot(&seen, g->device);
            if (!slot || *slot)
                continue;
            *slot = 1;
            json_array_append_new(list,
                                  json_pack("{s:I, s:s, s:I, s:i, s:i, s:i, s:I, s:I}", "id",
                                            (json_int_t)g->device, "name", g->name ? g->name : "",
                                            "totalGlobalMem", (json_int_t)g->global_memory_bytes,
                                            "computeMajor", g->compute_major, "computeMinor",
                                            g->compute_minor, "numSms", (int)g->sm_count,
                                            "clockRate", (json_int_t)g->core_clock_khz,
                                            "memoryClockRate", (json_int_t)g->memory_clock_khz));
        }
    }
    u64map_free(&seen);
    return list;
}

/* path with ".rank0" (or ".pid12") before its ".json", when there are several files. */
static char *chrome_file_name(const char *path, int64_t group, int several)
{
    if (!several)
        return report_strdup(path);
    char tag[48];
    if (group >= 0)
        snprintf(tag, sizeof tag, ".rank%" PRId64, group);
    else
        snprintf(tag, sizeof tag, ".pid%" PRId64, -1 - group);
    size_t len = strlen(path);
    size_t stem = len > 5 && !strcmp(path + len - 5, ".json") ? len - 5 : len;
    char *out = malloc(len + strlen(tag) + 1);
    if (!out)
        report_oom();
    memcpy(out, path, stem);
    strcpy(out + stem, tag);
    strcat(out, path + stem);
    return out;
}

static int chrome_write_group(const char *file, struct model_process *const *procs, size_t n,
                              int64_t group, struct export_timeline_stats *stats, char *err,
                              size_t errlen)
{
    struct chrome_writer w = {.first = 1, .next_external = 1, .stats = stats};
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
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct model_process *p = procs[i];
        if (chrome_group(p) != group)
            continue;
        w.p = p;
        w.offset = timeline_realtime_offset(p) - (int64_t)base;
        char label[512];
        chrome_meta(&w, "process_name", p->pid, 0, "name",
                    json_string(timeline_process_label(p, label, sizeof label)));
        chrome_meta(&w, "process_labels", p->pid, 0, "labels", json_string("CPU"));
        for (size_t t = 0; t < p->nthreads; t++)
            if (p->threads[t].name && *p->threads[t].name)
                chrome_meta(&w, "thread_name", p->pid, p->threads[t].tid, "name",
                            json_string(p->threads[t].name));
        rc = timeline_stream(p, chrome_on_event, &w, err, errlen);
        chrome_free_map(&w.names);
        chrome_free_map(&w.shapes);
        w.index++;
    }
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
    u64map_free(&w.names);
    u64map_free(&w.shapes);
    if (rc == 0) {
        stats->bytes += size > 0 ? (uint64_t)size : 0;
        stats->files++;
    }
    return rc;
}

int export_chrome_write(const char *path, struct model_process *const *procs, size_t n,
                        struct export_timeline_stats *stats, char *err, size_t errlen)
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
        rc = chrome_write_group(file, procs, n, group, &local, err, errlen);
        free(file);
    }
    if (stats)
        *stats = local;
    return rc;
}
