#include "model_stacks.h"

#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"
#include "trace_read.h"

struct model_stacks *model_stacks_of(struct model_process *p)
{
    if (!p->stacks) {
        p->stacks = calloc(1, sizeof *p->stacks);
        if (!p->stacks)
            report_oom();
        u64map_init(&p->stacks->stack_index);
        u64map_init(&p->stacks->use_index);
        u64map_init(&p->stacks->sample_index);
        u64map_init(&p->stacks->last_call_index);
        u64map_init(&p->stacks->by_op.index);
        u64map_init(&p->stacks->by_range.index);
        u64map_init(&p->stacks->py_code_index);
        u64map_init(&p->stacks->py_path_index);
    }
    return p->stacks;
}

const struct model_stack *model_stack_get(const struct model_process *p, uint32_t id)
{
    if (!p->stacks)
        return NULL;
    const uint64_t *i = u64map_find(&p->stacks->stack_index, id);
    return i ? &p->stacks->stacks[*i - 1] : NULL;
}

static void model_stacks_on_stack(struct model_process *p, const struct trace_record *rec,
                                  uint32_t tid)
{
    (void)tid;
    struct model_stacks *st = model_stacks_of(p);
    const struct prof_rec_stack *r = rec->data;
    size_t room = (rec->size - sizeof *r) / sizeof(uint64_t);
    uint32_t n = r->nframes < room ? r->nframes : (uint32_t)room;
    if (!r->stack_id || u64map_find(&st->stack_index, r->stack_id))
        return; /* a repeat (two threads wrote it, or a forked child's file) */
    uint64_t *slot = u64map_slot(&st->stack_index, r->stack_id);
    if (!slot)
        return;
    st->stacks = report_grow(st->stacks, &st->cap_stacks, st->nstacks + 1, sizeof *st->stacks);
    struct model_stack *s = &st->stacks[st->nstacks++];
    s->id = r->stack_id;
    s->nframes = n;
    s->py_node = r->py_node;
    s->frames = malloc(n ? n * sizeof *s->frames : 1);
    if (!s->frames)
        report_oom();
    memcpy(s->frames, r + 1, n * sizeof *s->frames);
    *slot = st->nstacks;
}

static void model_stacks_on_map(struct model_process *p, const struct trace_record *rec,
                                uint32_t tid)
{
    (void)tid;
    struct model_stacks *st = model_stacks_of(p);
    const struct prof_rec_map *r = rec->data;
    st->maps = report_grow(st->maps, &st->cap_maps, st->nmaps + 1, sizeof *st->maps);
    struct model_map *m = &st->maps[st->nmaps++];
    m->path = report_strdup(trace_record_text(rec, sizeof *r, NULL));
    m->bias = r->bias;
    m->start = r->start;
    m->end = r->end;
    m->build_id_len = r->build_id_len <= sizeof m->build_id ? r->build_id_len : 0;
    memcpy(m->build_id, r->build_id, sizeof m->build_id);
}

/* The stacks part's view of every API call: the last one of each thread. */
static void model_stacks_on_api_call(struct model_process *p, const struct model_api *api,
                                     const struct prof_rec_api_call *call, const uint64_t *args,
                                     size_t nargs, uint32_t tid)
{
    (void)args;
    (void)nargs;
    if (!(p->features & PROF_FEATURE_STACKS))
        return; /* the writer takes no stacks of API calls */
    struct model_stacks *st = model_stacks_of(p);
    uint64_t *slot = u64map_slot(&st->last_call_index, tid);
    if (!slot)
        return;
    if (!*slot) {
        st->last_calls = report_grow(st->last_calls, &st->cap_last_calls, st->nlast_calls + 1,
                                     sizeof *st->last_calls);
        *slot = ++st->nlast_calls;
    }
    st->last_calls[*slot - 1].tid = tid;
    st->last_calls[*slot - 1].api = api->id;
    st->last_calls[*slot - 1].start = call->start;
    st->last_calls[*slot - 1].ticks = call->end >= call->start ? call->end - call->start : 0;
}

static void model_stacks_on_ref(struct model_process *p, const struct trace_record *rec,
                                uint32_t tid)
{
    struct model_stacks *st = model_stacks_of(p);
    const struct prof_rec_stack_ref *r = rec->data;
    const uint64_t *i = u64map_find(&st->last_call_index, tid);
    if (!i || st->last_calls[*i - 1].start != r->start) {
        st->unmatched_refs++; /* its call was dropped from a full ring */
        return;
    }
    uint16_t api = st->last_calls[*i - 1].api;
    uint64_t key = (uint64_t)api << 32 | r->stack_id;
    uint64_t *slot = u64map_slot(&st->use_index, key);
    if (!slot)
        return;
    if (!*slot) {
        st->uses = report_grow(st->uses, &st->cap_uses, st->nuses + 1, sizeof *st->uses);
        st->uses[st->nuses] = (struct model_stack_use){.api = api, .stack_id = r->stack_id};
        *slot = ++st->nuses;
    }
    st->uses[*slot - 1].calls++;
    st->uses[*slot - 1].ticks += st->last_calls[*i - 1].ticks;
}

static void model_stacks_tally_add(struct model_sample_tally *t, uint32_t sid, uint64_t count)
{
    uint64_t *slot = u64map_slot(&t->index, (uint64_t)sid + 1);
    if (!slot)
        return;
    if (!*slot) {
        t->rows = report_grow(t->rows, &t->cap, t->n + 1, sizeof *t->rows);
        t->rows[t->n].sid = sid;
        t->rows[t->n].count = 0;
        *slot = ++t->n;
    }
    t->rows[*slot - 1].count += count;
}

static void model_stacks_on_sample(struct model_process *p, const struct trace_record *rec,
                                   uint32_t tid)
{
    struct model_stacks *st = model_stacks_of(p);
    const struct prof_rec_sample *r = rec->data;
    uint32_t py_path = model_stacks_take_py_path(st, tid, r->ticks);
    uint64_t key = ((uint64_t)r->stack_id * 0x9E3779B97F4A7C15ull) ^
                   ((uint64_t)r->py_node << 32 | tid) * 0xC2B2AE3D27D4EB4Full ^
                   (uint64_t)py_path * 0x165667B19E3779F9ull;
    /* The key is a hash: the entry found must hold the same triple, else probe on. */
    for (;; key++) {
        uint64_t *slot = u64map_slot(&st->sample_index, key);
        if (!slot)
            return;
        if (*slot) {
            struct model_stack_sample *s = &st->samples[*slot - 1];
            if (s->stack_id != r->stack_id || s->py_node != r->py_node || s->tid != tid ||
                s->py_path != py_path)
                continue;
            s->count += r->periods ? r->periods : 1;
            break;
        }
        st->samples =
            report_grow(st->samples, &st->cap_samples, st->nsamples + 1, sizeof *st->samples);
        st->samples[st->nsamples] =
            (struct model_stack_sample){.stack_id = r->stack_id,
                                        .py_node = r->py_node,
                                        .tid = tid,
                                        .py_path = py_path,
                                        .count = r->periods ? r->periods : 1};
        *slot = ++st->nsamples;
        break;
    }
    st->sample_count += r->periods ? r->periods : 1;
    int second_form = rec->size >= sizeof *r;
    model_stacks_tally_add(&st->by_op, second_form ? r->op_sid : 0, r->periods ? r->periods : 1);
    model_stacks_tally_add(&st->by_range, second_form ? r->nvtx_sid : 0,
                           r->periods ? r->periods : 1);
    model_cpu_event(p, r->ticks, r->ticks);
}

static void model_stacks_on_mem(struct model_process *p, const struct trace_record *rec,
                                uint32_t tid)
{
    struct model_stacks *st = model_stacks_of(p);
    const struct prof_rec_stack_mem *r = rec->data;
    st->mems = report_grow(st->mems, &st->cap_mems, st->nmems + 1, sizeof *st->mems);
    st->mems[st->nmems++] = (struct model_stack_mem){.ticks = r->ticks,
                                                     .ptr = r->ptr,
                                                     .bytes = r->bytes,
                                                     .stack_id = r->stack_id,
                                                     .py_node = r->py_node,
                                                     .tid = tid,
                                                     .device_type = r->device_type,
                                                     .device_index = r->device_index};
}

static void model_stacks_finish(struct model_process *p)
{
    struct model_stacks *st = p->stacks;
    if (!st)
        return;
    for (size_t i = 0; i < st->nuses; i++)
        st->uses[i].ns = model_ticks_to_ns(p, st->uses[i].ticks);
    if (st->unmatched_refs)
        model_add_warning(p,
                          "%s (pid %lld): %llu call stacks belong to calls dropped from a full "
                          "ring; they are left out of --stacks",
                          p->file, (long long)p->pid, (unsigned long long)st->unmatched_refs);
}

static void model_stacks_free(struct model_process *p)
{
    struct model_stacks *st = p->stacks;
    if (!st)
        return;
    for (size_t i = 0; i < st->nstacks; i++)
        free(st->stacks[i].frames);
    free(st->stacks);
    for (size_t i = 0; i < st->nmaps; i++)
        free(st->maps[i].path);
    free(st->maps);
    free(st->uses);
    free(st->samples);
    free(st->mems);
    free(st->last_calls);
    u64map_free(&st->stack_index);
    u64map_free(&st->use_index);
    u64map_free(&st->sample_index);
    u64map_free(&st->last_call_index);
    free(st->by_op.rows);
    free(st->by_range.rows);
    u64map_free(&st->by_op.index);
    u64map_free(&st->by_range.index);
    model_stacks_python_free(st);
    free(st);
    p->stacks = NULL;
}

static const struct model_record_handler model_stacks_handlers[] = {
    {PROF_REC_STACK, model_stacks_on_stack},
    {PROF_REC_STACK_REF, model_stacks_on_ref},
    {PROF_REC_MAP, model_stacks_on_map},
    {PROF_REC_SAMPLE, model_stacks_on_sample},
    {PROF_REC_STACK_MEM, model_stacks_on_mem},
    {PROF_REC_PY_CODE, model_stacks_on_py_code},
    {PROF_REC_SAMPLE_PY, model_stacks_on_sample_py},
};

const struct model_part model_stacks_part = {
    .name = "stacks",
    MODEL_PART_HANDLERS(model_stacks_handlers),
    .on_api_call = model_stacks_on_api_call,
    .finish = model_stacks_finish,
    .free = model_stacks_free,
};
