/* summary_torch_memory: the tensor memory of the part --summarize asked
 * (model_torch_memory_part.c) in a summary, after each device's whole-process figures in
 * summary_model.c's PyTorch section. A reader asking for another part gets none, and the
 * reason (model_torch_memory_parts_pick). */
#include "summary_model.h"

typedef struct summary_codec sf_codec;

static void mem_site(sf_codec *c, struct model_process *p,
                              struct model_torch_mem_site *site)
{
    summary_model_sid(c, p, &site->op_sid, &site->op);
    if (!site->op_sid && c->reading)
        site->op = NULL;
    summary_codec_u32(c, &site->func);
    summary_codec_u32(c, &site->own);
}

void summary_model_memory_part(sf_codec *c, struct model_process *p,
                                 struct model_torch_memory_part *q)
{
    summary_codec_u8(c, &q->window);
    summary_codec_u8(c, &q->miss);
    if (c->reading && (q->window > MODEL_WINDOW_STARTUP || q->miss > MODEL_WINDOW_MISS_REOPENED))
        summary_codec_fail(c, "bad memory window");
    summary_codec_u64(c, &q->start_ns);
    summary_codec_u64(c, &q->window_ns);
    summary_codec_u64(c, &q->steps);
    summary_codec_u64(c, &q->steps_grown);
    summary_codec_i64(c, &q->live_start);
    summary_codec_i64(c, &q->live_end);
    summary_codec_i64(c, &q->live_first_end);
    summary_codec_i64(c, &q->peak_bytes);
    summary_codec_u64(c, &q->peak_ns);
    summary_codec_u8(c, &q->peak_inside);
    summary_codec_u64(c, &q->allocated);
    summary_codec_u64(c, &q->freed);
    summary_codec_u64(c, &q->alloc_count);
    summary_codec_u64(c, &q->free_count);
    summary_codec_i64(c, &q->grew_bytes);
    mem_site(c, p, &q->peak);
    mem_site(c, p, &q->grew);
}
