/* Memory calls of one process: allocations and frees are held as small events until the
 * file ends, then sorted by time and paired by pointer across all the process's threads
 * to count live and peak bytes. Copies and sets are aggregated at once. */
#include "model.h"
#include "model_part.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct model_mem_event {
    uint64_t time; /* the call's end tick: its effect is visible once it returns */
    uint64_t seq;  /* record order, to keep the sort stable */
    uint64_t ptr;
    uint64_t bytes;
    int32_t device;
    uint8_t is_free;
    uint8_t space;
};

static void model_memory_push(struct model_process *p, const struct model_mem_event *e)
{
    if (p->nmem_events == p->cap_mem_events) {
        size_t cap = p->cap_mem_events ? p->cap_mem_events * 2 : 256;
        struct model_mem_event *n = realloc(p->mem_events, cap * sizeof *n);
        if (!n) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        p->mem_events = n;
        p->cap_mem_events = cap;
    }
    p->mem_events[p->nmem_events] = *e;
    p->mem_events[p->nmem_events].seq = p->nmem_events;
    p->nmem_events++;
}

static uint64_t model_arg(const struct model_api *api, enum model_arg role, const uint64_t *args,
                          size_t nargs, int *present)
{
    int i = api->role[role];
    int ok = i >= 0 && (size_t)i < nargs;
    if (present)
        *present = ok;
    return ok ? args[i] : 0;
}

static enum model_direction model_copy_direction(const struct model_api *api, const uint64_t *args,
                                                 size_t nargs)
{
    int has_src, has_dst, has_kind;
    if (api->category == PROF_CAT_SET)
        return MODEL_DIR_MEMSET;
    model_arg(api, MODEL_ARG_SRC_DEVICE, args, nargs, &has_src);
    model_arg(api, MODEL_ARG_DST_DEVICE, args, nargs, &has_dst);
    if (has_src || has_dst)
        return MODEL_DIR_PTOP;
    uint64_t kind = model_arg(api, MODEL_ARG_KIND, args, nargs, &has_kind);
    if (has_kind && kind <= 4)
        return (enum model_direction)(MODEL_DIR_HTOH + kind);
    return MODEL_DIR_UNKNOWN;
}

static void model_memory_on_call(struct model_process *p, const struct model_api *api,
                                 const struct prof_rec_api_call *call, const uint64_t *args,
                                 size_t nargs, uint32_t tid)
{
    (void)tid;
    static const enum model_arg alloc_roles[MODEL_SPACE_COUNT] = {
        [MODEL_SPACE_DEVICE] = MODEL_ARG_DEVICE_ALLOC,
        [MODEL_SPACE_HOST_PINNED] = MODEL_ARG_HOST_ALLOC,
        [MODEL_SPACE_MANAGED] = MODEL_ARG_MANAGED_ALLOC,
    };
    int present;
    struct model_thread *t = &p->threads[p->current_thread];

    if (api->category == PROF_CAT_COPY || api->category == PROF_CAT_SET) {
        struct model_copy_stats *c = &p->copies[model_copy_direction(api, args, nargs)];
        c->calls++;
        c->ticks += call->end >= call->start ? call->end - call->start : 0;
        if (call->result != 0)
            c->errors++;
        else /* a failed copy moved nothing */
            c->bytes += model_arg(api, MODEL_ARG_BYTES, args, nargs, NULL);
    }
    if (call->result != 0)
        return; /* a failed allocation allocates nothing, a failed free frees nothing */

    for (int s = 0; s < MODEL_SPACE_COUNT; s++) {
        uint64_t ptr = model_arg(api, alloc_roles[s], args, nargs, &present);
        if (!present || ptr == 0)
            continue;
        struct model_mem_event e = {
            .time = call->end,
            .ptr = ptr,
            .bytes = model_arg(api, MODEL_ARG_BYTES, args, nargs, NULL),
            .device = t->device,
            .space = (uint8_t)s,
        };
        model_memory_push(p, &e);
    }
    uint64_t ptr = model_arg(api, MODEL_ARG_FREE_PTR, args, nargs, &present);
    if (present && ptr != 0) {
        struct model_mem_event e = {.time = call->end, .ptr = ptr, .is_free = 1};
        model_memory_push(p, &e);
    }
}

static int model_mem_event_cmp(const void *a, const void *b)
{
    const struct model_mem_event *x = a, *y = b;
    if (x->time != y->time)
        return x->time < y->time ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static struct model_mem_stats *model_device_stats(struct model_process *p, int32_t device)
{
    if (device < 0 || device > 4096)
        device = 0; /* a nonsense device id: keep it out of the way */
    if ((size_t)device >= p->ndevice_mem) {
        size_t n = (size_t)device + 1;
        struct model_mem_stats *m = realloc(p->device_mem, n * sizeof *m);
        if (!m) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        memset(m + p->ndevice_mem, 0, (n - p->ndevice_mem) * sizeof *m);
        p->device_mem = m;
        p->ndevice_mem = n;
    }
    return &p->device_mem[device];
}

static void model_mem_add(struct model_mem_stats *m, uint64_t bytes)
{
    m->alloc_count++;
    m->alloc_bytes += bytes;
    m->live_bytes += bytes;
    if (m->live_bytes > m->peak_bytes)
        m->peak_bytes = m->live_bytes;
}

static void model_mem_drop(struct model_mem_stats *m, uint64_t bytes, int count_free)
{
    if (count_free) {
        m->free_count++;
        m->free_bytes += bytes;
    }
    m->live_bytes = m->live_bytes >= bytes ? m->live_bytes - bytes : 0;
}

static void model_memory_finish(struct model_process *p)
{
    struct u64map live; /* pointer -> index of its allocation event + 1 */
    u64map_init(&live);
    if (p->nmem_events) /* qsort wants a non-NULL array even when empty */
        qsort(p->mem_events, p->nmem_events, sizeof *p->mem_events, model_mem_event_cmp);
    for (size_t i = 0; i < p->nmem_events; i++) {
        const struct model_mem_event *e = &p->mem_events[i];
        uint64_t *slot = u64map_find(&live, e->ptr);
        const struct model_mem_event *a = slot ? &p->mem_events[*slot - 1] : NULL;
        if (a) {
            /* A free, or an allocation at an address still live: its free was lost, so
             * the old block is gone without counting a free. */
            model_mem_drop(&p->mem[a->space], a->bytes, e->is_free);
            if (a->space == MODEL_SPACE_DEVICE)
                model_mem_drop(model_device_stats(p, a->device), a->bytes, e->is_free);
            u64map_remove(&live, e->ptr);
        } else if (e->is_free) {
            p->unmatched_frees++;
        }
        if (e->is_free)
            continue;
        model_mem_add(&p->mem[e->space], e->bytes);
        if (e->space == MODEL_SPACE_DEVICE)
            model_mem_add(model_device_stats(p, e->device), e->bytes);
        slot = u64map_slot(&live, e->ptr);
        if (slot)
            *slot = i + 1;
    }
    u64map_free(&live);
    free(p->mem_events);
    p->mem_events = NULL;
    p->nmem_events = p->cap_mem_events = 0;
}

const struct model_part model_memory_part = {
    .name = "memory",
    .on_api_call = model_memory_on_call,
    .finish = model_memory_finish,
};
