/* A process's training steps in a summary (summary_model.h): their thread, sources and
 * the functions the findings name, then the steps themselves behind their length. */
#include "summary_model.h"

#include <stdlib.h>

#include "alloc.h"
#include "model_steps_load.h"

typedef struct summary_codec sf_codec;

void summary_model_step_list(sf_codec *c, struct model_step **steps, size_t *n)
{
    *steps = summary_codec_vector(c, *steps, n, 4 + MODEL_STEP_PART_COUNT, sizeof **steps);
    for (size_t i = 0; i < *n && !c->bad; i++) {
        struct model_step *s = &(*steps)[i];
        summary_codec_u64(c, &s->number);
        summary_codec_u64(c, &s->start_ns);
        summary_codec_u64(c, &s->end_ns);
        for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
            summary_codec_u64(c, &s->part_ns[k]);
        summary_codec_u64(c, &s->comm_ns);
        summary_codec_u64(c, &s->gpu_busy_ns);
        summary_codec_u64(c, &s->gpu_kernel_ns);
        summary_codec_u64(c, &s->gpu_copy_ns);
        summary_codec_u64(c, &s->syncs);
        summary_codec_u64(c, &s->python_ns);
        summary_codec_u64(c, &s->eval_ns);
        summary_codec_u64(c, &s->recompute_ns);
    }
}

/* The functions with the most self time in the steady steps, or in the startup. */
static void sf_steps_hot(sf_codec *c, struct model_step_hot **hot, size_t *n, size_t most)
{
    *hot = summary_codec_vector(c, *hot, n, 4, sizeof **hot);
    if (c->reading && *n > most)
        summary_codec_fail(c, "too many functions of the steps");
    for (size_t i = 0; i < *n && !c->bad; i++) {
        summary_model_text(c, &(*hot)[i].name);
        summary_model_text(c, &(*hot)[i].caller);
        summary_codec_u64(c, &(*hot)[i].self_ns);
        summary_codec_u64(c, &(*hot)[i].step);
        summary_codec_u64(c, &(*hot)[i].outer_ns);
    }
}

/* The steps' thread and count, then the steps behind their length: a reader skips them
 * (p->summary_steps_offset) until a view asks for every step (model_steps_hold). */
void summary_model_steps(sf_codec *c, struct model_process *p)
{
    struct model_steps *st = &p->steps;
    summary_codec_u8(c, &st->source);
    summary_codec_u8(c, &st->per_step);
    summary_codec_u8(c, &st->grouped_by);
    if (c->reading && st->grouped_by > MODEL_STEPS_GROUP_BACKWARD)
        summary_codec_fail(c, "an unknown grouping of optimizer steps");
    summary_codec_u8(c, &st->first_inferred);
    summary_codec_u8(c, &st->opened_late);
    summary_codec_u8(c, &st->backward_passes);
    if (c->reading &&
        (st->per_step > MODEL_STEPS_PER_BATCH || st->backward_passes > MODEL_STEPS_MAX_PASSES))
        summary_codec_fail(c, "more optimizer steps or backward passes per step than told");
    summary_codec_u32(c, &st->tid);
    summary_codec_u32(c, &st->startup_tid);
    summary_codec_u64(c, &st->startup_import_ns);
    sf_steps_hot(c, &st->hot, &st->nhot, MODEL_STEPS_HOT);
    sf_steps_hot(c, &st->startup_hot, &st->nstartup_hot, MODEL_STEPS_STARTUP_HOT);
    /* none when the recording opened late (a summary written before d9c2be9 kept them) */
    if (c->reading && !c->bad && model_start_unrecorded(p)) {
        model_steps_hot_free(st->startup_hot, st->nstartup_hot);
        st->startup_hot = NULL;
        st->nstartup_hot = 0;
    }
    sf_steps_hot(c, &st->data_hot, &st->ndata_hot, MODEL_STEPS_DATA_HOT);
    sf_steps_hot(c, &st->slow_hot, &st->nslow_hot, MODEL_STEPS_SLOW);
    sf_steps_hot(c, &st->rare_hot, &st->nrare_hot, MODEL_STEPS_RARE);
    sf_steps_hot(c, &st->other_hot, &st->nother_hot, MODEL_STEPS_OTHER_HOT);
    sf_steps_hot(c, &st->comm_hot, &st->ncomm_hot, MODEL_STEPS_COMM_HOT);
    sf_steps_hot(c, &st->worker_hot, &st->nworker_hot, MODEL_STEPS_WORKER_HOT);
    sf_steps_hot(c, &st->thread_hot, &st->nthread_hot, MODEL_STEPS_THREAD_HOT);
    summary_codec_u64(c, &st->rare_other_ns);
    summary_codec_u64(c, &st->rare_after);
    summary_codec_u64(c, &st->rare_after_ns);
    summary_codec_u64(c, &st->eval_after_ns);
    summary_codec_u64(c, &st->actions_start_ns);
    summary_codec_u64(c, &st->actions_end_ns);
    summary_codec_u64(c, &st->gc_ns);
    summary_codec_u64(c, &st->gc_count);
    summary_codec_u64(c, &st->gc_full);
    summary_codec_u64(c, &st->gc_max_ns);
    summary_codec_u64(c, &st->gc_max_number);
    summary_codec_u8(c, &st->loader);
    if (c->reading && st->loader > MODEL_STEPS_LOADER_WORKERS)
        summary_codec_fail(c, "an unknown DataLoader kind");
    summary_codec_size(c, &st->nsteps);
    size_t len = 0;
    if (!c->reading) {
        model_steps_hold(p);
        sf_codec list;
        summary_codec_writer(&list);
        size_t n = st->nsteps;
        summary_model_step_list(&list, &st->steps, &n);
        len = list.len;
        summary_codec_size(c, &len);
        summary_codec_bytes(c, list.buf, list.len);
        free(list.buf);
        return;
    }
    summary_codec_size(c, &len);
    if (!c->bad && (len > c->len - c->pos || st->nsteps > len))
        summary_codec_fail(c, "cut off in the training steps");
    if (c->bad) {
        st->nsteps = 0;
        return;
    }
    st->steps = NULL;
    p->summary_steps_offset = c->pos;
    c->pos += len;
}
