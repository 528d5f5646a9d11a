#include "alloc.h"
#include "model.h"
#include "model_part.h"

#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>

#include "trace_read.h"

/* Record type -> the one handler that decodes it, from every part's list (built once,
 * before the first model). */
static model_record_fn model_dispatch[PROF_REC_TYPE_COUNT];
static pthread_once_t model_dispatch_once = PTHREAD_ONCE_INIT;
static void model_dispatch_build(void);

static const char *const model_arg_names[MODEL_ARG_COUNT] = {
    [MODEL_ARG_STREAM] = "stream",
    [MODEL_ARG_BYTES] = "bytes",
    [MODEL_ARG_KIND] = "kind",
    [MODEL_ARG_DEVICE] = "device",
    [MODEL_ARG_SET_DEVICE] = "set_device",
    [MODEL_ARG_SRC_DEVICE] = "src_device",
    [MODEL_ARG_DST_DEVICE] = "dst_device",
    [MODEL_ARG_FUNC] = "func",
    [MODEL_ARG_GRID] = "grid",
    [MODEL_ARG_BLOCK] = "block",
    [MODEL_ARG_SHMEM] = "shmem",
    [MODEL_ARG_DEVICE_ALLOC] = "device_alloc",
    [MODEL_ARG_HOST_ALLOC] = "host_alloc",
    [MODEL_ARG_MANAGED_ALLOC] = "managed_alloc",
    [MODEL_ARG_FREE_PTR] = "free_ptr",
    [MODEL_ARG_EVENT] = "event",
    [MODEL_ARG_GRAPH_EXEC] = "graph_exec",
    [MODEL_ARG_VALUE] = "value",
};

const char *model_arg_name(enum model_arg a)
{
    return a < MODEL_ARG_COUNT ? model_arg_names[a] : "?";
}

const char *model_space_name(enum model_space s)
{
    static const char *const names[MODEL_SPACE_COUNT] = {"device", "host_pinned", "managed"};
    return s < MODEL_SPACE_COUNT ? names[s] : "?";
}

const char *model_direction_name(enum model_direction d)
{
    static const char *const names[MODEL_DIR_COUNT] = {"HtoH",    "HtoD", "DtoH",   "DtoD",
                                                       "Default", "PtoP", "memset", "unknown"};
    return d < MODEL_DIR_COUNT ? names[d] : "?";
}

const char *model_category_name(unsigned category)
{
    static const char *const names[PROF_CAT_COUNT] = {
        [PROF_CAT_OTHER] = "other",   [PROF_CAT_MEMORY] = "memory", [PROF_CAT_COPY] = "copy",
        [PROF_CAT_SET] = "set",       [PROF_CAT_LAUNCH] = "launch", [PROF_CAT_SYNC] = "sync",
        [PROF_CAT_STREAM] = "stream", [PROF_CAT_DEVICE] = "device", [PROF_CAT_COMM] = "comm",
    };
    if (category == MODEL_CAT_LIBRARY)
        return "library";
    return category < PROF_CAT_COUNT && names[category] ? names[category] : "other";
}

void model_dim3_unpack(uint64_t packed, uint32_t *x, uint32_t *y, uint32_t *z)
{
    *x = (uint32_t)(packed & 0xffffffffu);
    *y = (uint32_t)((packed >> 32) & 0xffffu);
    *z = (uint32_t)(packed >> 48);
}

void model_dim3_format(uint64_t packed, char *buf, size_t len)
{
    uint32_t x, y, z;
    model_dim3_unpack(packed, &x, &y, &z);
    snprintf(buf, len, "%" PRIu32 ",%" PRIu32 ",%" PRIu32, x, y, z);
}

uint64_t model_histogram_mode(const struct u64map *hist)
{
    uint64_t best = 0, best_count = 0, k, v;
    for (size_t i = 0; u64map_next(hist, &i, &k, &v);) {
        if (v > best_count || (v == best_count && k < best)) {
            best = k;
            best_count = v;
        }
    }
    return best;
}

static void model_push_string(char ***list, size_t *n, char *s)
{
    size_t cap = *n; /* lists grow one at a time: they hold a handful of entries */
    *list = report_grow(*list, &cap, *n + 1, sizeof **list);
    (*list)[(*n)++] = s;
}

void model_add_warning(struct model_process *p, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    model_push_string(&p->warnings, &p->nwarnings, report_strdup(buf));
}

struct model_process *model_process_new(const char *file, uint32_t features)
{
    pthread_once(&model_dispatch_once, model_dispatch_build);
    struct model_process *p = calloc(1, sizeof *p);
    if (!p) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    p->file = report_strdup(file);
    p->features = features;
    p->pid = p->ppid = p->rank = -1;
    p->current_thread = SIZE_MAX;
    p->ns_per_tick = 1.0;
    u64map_init(&p->strings);
    u64map_init(&p->thread_index);
    u64map_init(&p->kernel_names);
    u64map_init(&p->kernel_alias);
    u64map_init(&p->kernels);
    idmap_init(&p->py.func_index);
    idmap_init(&p->py.node_index);
    u64map_init(&p->gpu.kernel_index);
    u64map_init(&p->gpu.config_index);
    u64map_init(&p->gpu.call_index);
    u64map_init(&p->gpu.api_index);
    return p;
}

static void model_api_free(struct model_api *a)
{
    if (!a)
        return;
    free(a->name);
    for (size_t i = 0; i < a->nargs; i++)
        free(a->arg_names[i]);
    free(a->arg_names);
    free(a);
}

void model_process_free(struct model_process *p)
{
    if (!p)
        return;
    uint64_t k, v;
    free(p->file);
    free(p->summary_file);
    free(p->summary_bytes);
    free(p->stop_warning);
    for (size_t i = 0; i < p->nmeta; i++) {
        free(p->meta[i].key);
        free(p->meta[i].value);
    }
    free(p->meta);
    free(p->host);
    free(p->run_id);
    free(p->command);
    for (size_t i = 0; i < p->nthreads; i++)
        free(p->threads[i].name);
    free(p->threads);
    u64map_free(&p->thread_index);
    for (size_t i = 0; i < p->napis; i++)
        model_api_free(p->apis[i]);
    free(p->apis);
    for (size_t i = 0; u64map_next(&p->strings, &i, &k, &v);)
        free((void *)(uintptr_t)v);
    u64map_free(&p->strings);
    u64map_free(&p->kernel_names);
    u64map_free(&p->kernel_alias);
    for (size_t i = 0; u64map_next(&p->kernels, &i, &k, &v);) {
        struct model_kernel *kern = (void *)(uintptr_t)v;
        free(kern->name);
        u64map_free(&kern->grids);
        u64map_free(&kern->blocks);
        free(kern);
    }
    u64map_free(&p->kernels);
    idbits_free(&p->timeline_flows);
    free(p->device_mem);
    free(p->mem_events);
    for (size_t i = 0; i < p->nnotes; i++)
        free(p->notes[i]);
    free(p->notes);
    for (size_t i = 0; i < p->nwarnings; i++)
        free(p->warnings[i]);
    free(p->warnings);
    for (size_t i = 0; i < model_part_count; i++)
        if (model_parts[i]->free)
            model_parts[i]->free(p);
    free(p);
}

const char *model_meta_get(const struct model_process *p, const char *key)
{
    for (size_t i = 0; i < p->nmeta; i++)
        if (!strcmp(p->meta[i].key, key))
            return p->meta[i].value;
    return NULL;
}

int model_python_unrecorded(const struct model_process *p)
{
    if (model_meta_get(p, "python.scheme"))
        return 0;
    const char *exe = model_meta_get(p, "exe"), *slash = exe ? strrchr(exe, '/') : NULL;
    return model_meta_get(p, "torch_lib") ||
           (exe && !strncmp(slash ? slash + 1 : exe, "python", 6));
}

void model_window_first_open(const struct model_process *p, struct model_window_open *o)
{
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < p->nmeta; i++) {
        if (strcmp(p->meta[i].key, "window_open"))
            continue;
        unsigned long long at, counted = 0;
        if (!o->opens++) {
            int got =
                sscanf(p->meta[i].value, "%llu %15s %ld %llu", &at, o->why, &o->value, &counted);
            o->fields = got > 0 ? got : 0;
            o->counted = counted;
        }
    }
}

int model_start_unrecorded(const struct model_process *p)
{
    const char *window = model_meta_get(p, "window");
    struct model_window_open o;
    if (!window || !*window)
        return 0;
    model_window_first_open(p, &o);
    return o.fields < 2 || strcmp(o.why, "start") != 0;
}

/* Through a map: a file may name a hundred thousand threads. */
static struct model_thread *model_thread_get(struct model_process *p, uint32_t tid)
{
    uint64_t *slot = u64map_slot(&p->thread_index, tid);
    if (!slot) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    if (*slot)
        return &p->threads[*slot - 1];
    p->threads = report_grow(p->threads, &p->cap_threads, p->nthreads + 1, sizeof *p->threads);
    struct model_thread *t = &p->threads[p->nthreads++];
    memset(t, 0, sizeof *t);
    t->tid = tid;
    *slot = p->nthreads;
    return t;
}

void model_cpu_event(struct model_process *p, uint64_t start, uint64_t end)
{
    if (end < start)
        end = start;
    if (!p->cpu_seen || start < p->cpu_first_ticks)
        p->cpu_first_ticks = start;
    if (!p->cpu_seen || end > p->cpu_last_ticks)
        p->cpu_last_ticks = end;
    p->cpu_seen = 1;
}

static struct model_thread *model_thread_current(struct model_process *p)
{
    /* Records before the first THREAD record belong to no known thread: tid 0. */
    if (p->current_thread == SIZE_MAX)
        p->current_thread = (size_t)(model_thread_get(p, 0) - p->threads);
    return &p->threads[p->current_thread];
}

static uint32_t model_current_tid(const struct model_process *p)
{
    return p->current_thread == SIZE_MAX ? 0 : p->threads[p->current_thread].tid;
}

static struct model_api *model_api_get(struct model_process *p, uint16_t id)
{
    if (id >= p->napis) {
        size_t cap = p->napis;
        p->apis = report_grow(p->apis, &cap, (size_t)id + 1, sizeof *p->apis);
        p->napis = cap;
    }
    if (!p->apis[id]) {
        struct model_api *a = calloc(1, sizeof *a);
        if (!a) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        char name[32];
        snprintf(name, sizeof name, "api#%u", id);
        a->id = id;
        a->name = report_strdup(name);
        for (int r = 0; r < MODEL_ARG_COUNT; r++)
            a->role[r] = -1;
        p->apis[id] = a;
    }
    return p->apis[id];
}

static void model_on_meta(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    size_t klen;
    const char *key = trace_record_text(rec, sizeof(struct prof_record_header), &klen);
    char *k = report_strdup(key);
    char *v =
        report_strdup(trace_record_text(rec, sizeof(struct prof_record_header) + klen + 1, NULL));
    size_t cap = p->nmeta;
    p->meta = report_grow(p->meta, &cap, p->nmeta + 1, sizeof *p->meta);
    p->meta[p->nmeta].key = k;
    p->meta[p->nmeta].value = v;
    p->nmeta++;

    if (!strcmp(k, "pid"))
        p->pid = strtoll(v, NULL, 10);
    else if (!strcmp(k, "ppid"))
        p->ppid = strtoll(v, NULL, 10);
    else if (!strcmp(k, "rank") && *v)
        p->rank = strtoll(v, NULL, 10);
    else if (!strcmp(k, "host")) {
        free(p->host);
        p->host = report_strdup(v);
    } else if (!strcmp(k, "run_id")) {
        free(p->run_id);
        p->run_id = report_strdup(v);
    } else if (!strcmp(k, "start_realtime_ns"))
        p->start_realtime_ns = strtoull(v, NULL, 10);
    else if (!strcmp(k, "tsc_hz"))
        p->tsc_hz = strtod(v, NULL);
    else if (!strcmp(k, "argv")) {
        /* Quote an argument that the shell would split, so the line reads back. */
        int quote = !*v || strpbrk(v, " \t\n'\"\\$`") != NULL;
        size_t old = p->command ? strlen(p->command) : 0;
        size_t need = old + 1 + strlen(v) * 4 + 3;
        char *c = realloc(p->command, need + 1);
        if (!c) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        char *o = c + old;
        if (old)
            *o++ = ' ';
        if (quote)
            *o++ = '\'';
        for (const char *s = v; *s; s++) {
            if (quote && *s == '\'') {
                memcpy(o, "'\\''", 4);
                o += 4;
            } else {
                *o++ = *s;
            }
        }
        if (quote)
            *o++ = '\'';
        *o = 0;
        p->command = c;
    }
}

static void model_on_api_name(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    const struct prof_rec_api_name *r = rec->data;
    struct model_api *a = model_api_get(p, r->api);
    size_t nlen;
    const char *name = trace_record_text(rec, sizeof *r, &nlen);
    const char *args = trace_record_text(rec, sizeof *r + nlen + 1, NULL);
    free(a->name);
    a->name = report_strdup(name);
    for (size_t i = 0; i < a->nargs; i++)
        free(a->arg_names[i]);
    free(a->arg_names);
    a->arg_names = NULL;
    a->nargs = 0;
    a->defined = 1;
    a->category = r->category;
    for (int k = 0; k < MODEL_ARG_COUNT; k++)
        a->role[k] = -1;
    /* The list may name fewer arguments than nargs says, never more are used. */
    size_t cap = 0;
    for (const char *s = args; *s;) {
        size_t len = strcspn(s, ",");
        a->arg_names = report_grow(a->arg_names, &cap, a->nargs + 1, sizeof *a->arg_names);
        char *n = strndup(s, len);
        if (!n) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        for (int k = 0; k < MODEL_ARG_COUNT; k++)
            if (!strcmp(n, model_arg_names[k]) && a->role[k] < 0)
                a->role[k] = (int)a->nargs;
        a->arg_names[a->nargs++] = n;
        s += len;
        if (*s == ',')
            s++;
    }
    /* The argument name says that a successful call makes `set_device` the thread's
     * current device (cudaSetDevice). */
    a->is_set_device = a->role[MODEL_ARG_SET_DEVICE] >= 0;
    /* Library calls are spans that own the GPU calls inside them. The category says so;
     * the name does for a writer older than the category. */
    /* NCCL calls own the kernels NCCL launches. */
    a->library = a->category == MODEL_CAT_LIBRARY || a->category == PROF_CAT_COMM ||
                 !strncmp(a->name, "cublas", 6) || !strncmp(a->name, "cudnn", 5);
}

static void model_on_api_call(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    const struct prof_rec_api_call *c = rec->data;
    struct model_api *a = model_api_get(p, c->api);
    struct model_thread *t = model_thread_current(p);
    uint64_t ticks = c->end >= c->start ? c->end - c->start : 0;
    const uint64_t *args = (const uint64_t *)(c + 1);
    size_t nargs = (rec->size - sizeof *c) / sizeof(uint64_t);

    if (a->recorded == 0 || ticks < a->min_ticks)
        a->min_ticks = ticks;
    if (ticks > a->max_ticks)
        a->max_ticks = ticks;
    a->recorded++;
    a->calls++;
    a->total_ticks += ticks;
    if (c->result != 0)
        a->errors++;
    t->calls++;
    t->api_ticks += ticks;

    int dev = a->role[MODEL_ARG_SET_DEVICE];
    if (a->is_set_device && c->result == 0 && dev >= 0 && (size_t)dev < nargs) {
        t->device = (int)args[dev];
        p->set_device_used = 1;
    }
    for (size_t i = 0; i < model_part_count; i++)
        if (model_parts[i]->on_api_call)
            model_parts[i]->on_api_call(p, a, c, args, nargs, t->tid);
    model_cpu_event(p, c->start, c->end);
}

static void model_on_string(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    const struct prof_rec_string *s = rec->data;
    uint64_t *slot = u64map_slot(&p->strings, s->id);
    if (!slot)
        return;
    free((void *)(uintptr_t)*slot);
    *slot = (uintptr_t)report_strdup(trace_record_text(rec, sizeof *s, NULL));
}

static void model_on_thread(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    const struct prof_rec_thread *t = rec->data;
    p->current_thread = (size_t)(model_thread_get(p, t->tid) - p->threads);
}

static void model_on_thread_name(struct model_process *p, const struct trace_record *rec,
                                 uint32_t tid)
{
    (void)tid;
    const struct prof_rec_thread_name *n = rec->data;
    struct model_thread *t = model_thread_get(p, n->tid);
    free(t->name);
    t->name = report_strdup(trace_record_text(rec, sizeof *n, NULL));
}

static void model_on_clock(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    const struct prof_rec_clock *c = rec->data;
    if (p->nclocks == 0) {
        p->clock_first_ticks = c->ticks;
        p->clock_first_ns = c->monotonic_ns;
    }
    p->clock_last_ticks = c->ticks;
    p->clock_last_ns = c->monotonic_ns;
    p->nclocks++;
}

static void model_on_lost_kept(struct model_process *p, const struct trace_record *rec,
                               uint32_t tid)
{
    (void)tid;
    p->lost_kept += ((const struct prof_rec_lost_kept *)rec->data)->count;
}

static void model_on_lost(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    const struct prof_rec_lost *l = rec->data;
    model_thread_get(p, l->tid)->lost += l->count;
    p->lost += l->count;
}

/* Calls a full ring dropped, summed per API: they count in the API table. */
static void model_on_lost_calls(struct model_process *p, const struct trace_record *rec,
                                uint32_t tid)
{
    (void)tid;
    const struct prof_rec_lost_calls *l = rec->data;
    struct model_api *a = model_api_get(p, l->api);
    struct model_thread *t = model_thread_get(p, l->tid);
    a->calls += l->calls;
    a->errors += l->errors;
    a->total_ticks += l->ticks;
    t->calls += l->calls;
    t->api_ticks += l->ticks;
    p->lost_calls += l->calls;
}

static void model_on_symbol(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    const struct prof_rec_symbol *s = rec->data;
    uint64_t *slot = NULL;
    if (s->kind == PROF_SYMBOL_KERNEL_NAME && (slot = u64map_slot(&p->kernel_names, s->address)))
        *slot = s->string_id;
    else if (s->kind == PROF_SYMBOL_KERNEL_ALIAS &&
             (slot = u64map_slot(&p->kernel_alias, s->address)))
        *slot = s->target;
}

static void model_on_note(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    model_push_string(&p->notes, &p->nnotes,
                      report_strdup(trace_record_text(rec, sizeof(struct prof_rec_note), NULL)));
}

static void model_on_end(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    const struct prof_rec_end *e = rec->data;
    p->clean_end = 1;
    p->end_signal = (int)e->signal;
    p->end_lost = e->events_lost;
}

static const struct model_record_handler model_core_handlers[] = {
    {PROF_REC_META, model_on_meta},
    {PROF_REC_STRING, model_on_string},
    {PROF_REC_API_NAME, model_on_api_name},
    {PROF_REC_THREAD, model_on_thread},
    {PROF_REC_THREAD_NAME, model_on_thread_name},
    {PROF_REC_CLOCK, model_on_clock},
    {PROF_REC_LOST, model_on_lost},
    {PROF_REC_LOST_KEPT, model_on_lost_kept},
    {PROF_REC_API_CALL, model_on_api_call},
    {PROF_REC_LOST_CALLS, model_on_lost_calls},
    {PROF_REC_SYMBOL, model_on_symbol},
    {PROF_REC_NOTE, model_on_note},
    {PROF_REC_END, model_on_end},
};

const struct model_part model_core_part = {
    .name = "core",
    MODEL_PART_HANDLERS(model_core_handlers),
};

static void model_dispatch_build(void)
{
    for (size_t i = 0; i < model_part_count; i++) {
        const struct model_part *part = model_parts[i];
        for (size_t h = 0; h < part->nhandlers; h++) {
            uint16_t type = part->handlers[h].type;
            if (type >= PROF_REC_TYPE_COUNT || model_dispatch[type]) {
                fprintf(stderr, "profreport: record type %u claimed twice (part %s)\n",
                        (unsigned)type, part->name);
                abort();
            }
            model_dispatch[type] = part->handlers[h].on_record;
        }
    }
}

void model_add_record(struct model_process *p, const struct trace_record *rec)
{
    p->records++;
    /* PAD and types this reader does not know have no handler: skipped by size. */
    model_record_fn fn = rec->type < PROF_REC_TYPE_COUNT ? model_dispatch[rec->type] : NULL;
    if (fn)
        fn(p, rec, model_current_tid(p));
}

/* ns rounded to u64, saturating: a damaged file can make any tick count or rate, and a
 * double outside [0, 2^64) cast to u64 is undefined. NaN gives 0. */
uint64_t model_monotonic_ns_to_ticks(const struct model_process *p, uint64_t ns)
{
    if (!(p->features & PROF_FEATURE_TSC_CLOCK) || p->nclocks == 0)
        return model_ns_round((double)ns / p->ns_per_tick);
    double t = ((double)ns - (double)p->clock_first_ns) / p->ns_per_tick;
    return model_ns_round((double)p->clock_first_ticks + t);
}

uint64_t model_start_monotonic_ns(const struct model_process *p)
{
    const char *v = model_meta_get(p, "start_monotonic_ns");
    if (v && *v)
        return strtoull(v, NULL, 10);
    return p->nclocks ? p->clock_first_ns : 0;
}

static void model_clock_finish(struct model_process *p)
{
    p->ns_per_tick = 1.0;
    if (!(p->features & PROF_FEATURE_TSC_CLOCK))
        return; /* ticks are CLOCK_MONOTONIC nanoseconds already */
    if (p->nclocks >= 2 && p->clock_last_ticks > p->clock_first_ticks &&
        p->clock_last_ns >= p->clock_first_ns) {
        /* A linear fit between the first and the last pair: the TSC rate is constant on
         * the machines we run on, and the span between them is the whole run. */
        p->ns_per_tick = (double)(p->clock_last_ns - p->clock_first_ns) /
                         (double)(p->clock_last_ticks - p->clock_first_ticks);
        return;
    }
    /* A rate that is no finite positive number (META tsc_hz "1e-320", "inf") is none. */
    if (p->tsc_hz > 0 && isfinite(p->tsc_hz) && isfinite(1e9 / p->tsc_hz)) {
        p->ns_per_tick = 1e9 / p->tsc_hz;
        model_add_warning(p,
                          "%s: %zu usable CLOCK record(s); tick rate estimated from META "
                          "tsc_hz = %.0f Hz",
                          p->file, p->nclocks, p->tsc_hz);
    } else {
        model_add_warning(p,
                          "%s: %zu usable CLOCK record(s) and no META tsc_hz; times are "
                          "shown in TSC ticks, not ns",
                          p->file, p->nclocks);
    }
}

void model_finish(struct model_process *p)
{
    model_clock_finish(p);
    for (size_t i = 0; i < p->napis; i++) {
        struct model_api *a = p->apis[i];
        if (!a)
            continue;
        a->total_ns = model_ticks_to_ns(p, a->total_ticks);
        a->min_ns = model_ticks_to_ns(p, a->min_ticks);
        a->max_ns = model_ticks_to_ns(p, a->max_ticks);
    }
    for (size_t i = 0; i < p->nthreads; i++)
        p->threads[i].api_ns = model_ticks_to_ns(p, p->threads[i].api_ticks);
    for (int d = 0; d < MODEL_DIR_COUNT; d++)
        p->copies[d].ns = model_ticks_to_ns(p, p->copies[d].ticks);
    for (size_t i = 0; i < model_part_count; i++)
        if (model_parts[i]->finish)
            model_parts[i]->finish(p);
    if (p->end_lost > p->lost)
        p->lost = p->end_lost;
    /* Op spans the op trees still count, and NVTX pops the NVTX sums count, are
     * timeline-only losses (model_torch.c, model_nvtx.c). */
    uint64_t kept_in_sums = p->torch.spans_dropped + p->gpu.nvtx_lost_calls;
    uint64_t short_lost = p->lost > kept_in_sums ? p->lost - kept_in_sums : 0;
    if (p->lost && p->lost_calls >= short_lost)
        model_add_warning(p,
                          "%s (pid %lld): %llu events dropped from the timeline (ring full; "
                          "raise PROF_RING_KB): API call counts and times, the PyTorch op and "
                          "the NVTX tables include them, the memory, copy and kernel tables do "
                          "not",
                          p->file, (long long)p->pid, (unsigned long long)p->lost);
    else if (p->lost)
        /* the rings also carry Python spans, NVTX pushes and tensor memory events: which
         * were lost is not known, but the tables with sums do not depend on them */
        model_add_warning(p,
                          "%s (pid %lld): %llu events lost (ring full; raise PROF_RING_KB): "
                          "the API, Python, PyTorch operator and NVTX tables count them; the "
                          "timeline, the memory, copy and kernel tables and the tensor memory "
                          "timeline may be short of them",
                          p->file, (long long)p->pid, (unsigned long long)p->lost);
    if (p->unmatched_frees)
        model_add_warning(p,
                          "%s (pid %lld): %llu frees of pointers allocated before profiling "
                          "or lost; not counted",
                          p->file, (long long)p->pid, (unsigned long long)p->unmatched_frees);
}

struct model_process *model_load_file(const char *path, char *err, size_t errlen)
{
    struct trace_reader *r = trace_reader_open(path, err, errlen);
    if (!r)
        return NULL;
    struct model_process *p = model_process_new(path, trace_reader_header(r)->features);
    struct trace_record rec;
    while (trace_reader_next(r, &rec))
        model_add_record(p, &rec);
    const char *w = trace_reader_warning(r);
    if (w) {
        p->truncated = 1;
        p->stop_warning = report_strdup(w);
        model_add_warning(p, "%s", w);
    }
    trace_reader_close(r);
    struct stat st;
    if (stat(path, &st) == 0)
        p->file_bytes = (uint64_t)st.st_size;
    model_finish(p);
    return p;
}
