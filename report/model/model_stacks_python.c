/* The Python frames the sampler read itself (PY_CODE, SAMPLE_PY; see trace_format.h):
 * code objects by id, and the distinct frame lists of samples, which model_stacks.c ties
 * to the SAMPLE record that follows each SAMPLE_PY (same thread and ticks). */
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_stacks.h"
#include "trace_read.h"

void model_stacks_on_py_code(struct model_process *p, const struct trace_record *rec, uint32_t tid)
{
    (void)tid;
    struct model_stacks *st = model_stacks_of(p);
    const struct prof_rec_py_code *r = rec->data;
    if (!r->code_id || u64map_find(&st->py_code_index, r->code_id))
        return; /* ids are unique in a process: a repeat says the same */
    uint64_t *slot = u64map_slot(&st->py_code_index, r->code_id);
    if (!slot)
        report_oom();
    size_t len = 0;
    const char *name = trace_record_text(rec, sizeof *r, &len);
    st->py_codes =
        report_grow(st->py_codes, &st->cap_py_codes, st->npy_codes + 1, sizeof *st->py_codes);
    struct model_py_code *c = &st->py_codes[st->npy_codes++];
    c->id = r->code_id;
    c->line = r->line;
    c->name = report_strdup(name);
    c->file = report_strdup(trace_record_text(rec, sizeof *r + len + 1, NULL));
    *slot = st->npy_codes;
}

const struct model_py_code *model_py_code_get(const struct model_process *p, uint32_t id)
{
    if (!p->stacks || !id)
        return NULL;
    const uint64_t *i = u64map_find(&p->stacks->py_code_index, id);
    return i ? &p->stacks->py_codes[*i - 1] : NULL;
}

static uint64_t model_py_path_hash(const uint32_t *ids, uint32_t n, int truncated)
{
    uint64_t h = 0xcbf29ce484222325ull ^ n ^ ((uint64_t)truncated << 40);
    for (uint32_t i = 0; i < n; i++)
        h = (h ^ ids[i]) * 0x100000001b3ull;
    return h;
}

/* The index + 1 of the path of these ids, interned. */
static uint32_t model_py_path_intern(struct model_stacks *st, const uint32_t *ids, uint32_t n,
                                     int truncated)
{
    for (uint64_t key = model_py_path_hash(ids, n, truncated);; key++) {
        uint64_t *slot = u64map_slot(&st->py_path_index, key);
        if (!slot)
            report_oom();
        if (*slot) {
            const struct model_py_path *pp = &st->py_paths[*slot - 1];
            if (pp->n == n && pp->truncated == truncated && !memcmp(pp->codes, ids, 4u * n))
                return (uint32_t)*slot;
            continue;
        }
        st->py_paths =
            report_grow(st->py_paths, &st->cap_py_paths, st->npy_paths + 1, sizeof *st->py_paths);
        struct model_py_path *pp = &st->py_paths[st->npy_paths++];
        pp->codes = malloc(n ? 4u * n : 1);
        if (!pp->codes)
            report_oom();
        memcpy(pp->codes, ids, 4u * n);
        pp->n = n;
        pp->truncated = truncated;
        *slot = st->npy_paths;
        return (uint32_t)st->npy_paths;
    }
}

void model_stacks_on_sample_py(struct model_process *p, const struct trace_record *rec,
                               uint32_t tid)
{
    struct model_stacks *st = model_stacks_of(p);
    const struct prof_rec_sample_py *r = rec->data;
    uint32_t n = r->nframes;
    if (n > (rec->size - sizeof *r) / 4)
        n = (uint32_t)((rec->size - sizeof *r) / 4);
    st->py_pending.tid = tid;
    st->py_pending.ticks = r->ticks;
    st->py_pending.path = model_py_path_intern(st, (const uint32_t *)(r + 1), n,
                                               (r->flags & PROF_SAMPLE_PY_TRUNCATED) != 0);
}

uint32_t model_stacks_take_py_path(struct model_stacks *st, uint32_t tid, uint64_t ticks)
{
    if (!st->py_pending.path || st->py_pending.tid != tid)
        return 0; /* another thread's samples may come between (the ring drained between) */
    uint32_t path = st->py_pending.ticks == ticks ? st->py_pending.path : 0;
    st->py_pending.path = 0; /* a SAMPLE_PY whose SAMPLE was dropped names no other sample */
    return path;
}

void model_stacks_python_free(struct model_stacks *st)
{
    for (size_t i = 0; i < st->npy_codes; i++) {
        free(st->py_codes[i].name);
        free(st->py_codes[i].file);
    }
    free(st->py_codes);
    for (size_t i = 0; i < st->npy_paths; i++)
        free(st->py_paths[i].codes);
    free(st->py_paths);
    u64map_free(&st->py_code_index);
    u64map_free(&st->py_path_index);
}
