/* summary_gpu_part: the GPU tables of the part --summarize asked (model_gpu_window.c) in a
 * summary, beside the whole process's in summary_model.c's sections: the API counts by API
 * id, the kernel rows by the whole process's kernel index, the CUPTI calls by the whole
 * process's CUPTI API index. A reader asking for another part gets the whole process's
 * (model_gpu_part_pick). */
#include <stdlib.h>

#include "summary_model.h"

typedef struct summary_codec sf_codec;

static void sf_counts(sf_codec *c, struct model_api_counts *a)
{
    summary_codec_u64(c, &a->calls);
    summary_codec_u64(c, &a->errors);
    summary_codec_u64(c, &a->total_ns);
    summary_codec_u64(c, &a->min_ns);
    summary_codec_u64(c, &a->max_ns);
    summary_codec_u64(c, &a->gpu_kernels);
    summary_codec_u64(c, &a->gpu_ns);
}

void summary_model_gpu_part(sf_codec *c, struct model_process *p)
{
    struct model_gpu_part *w = &p->gpu_part;
    summary_codec_u8(c, &w->window);
    summary_codec_u8(c, &w->miss);
    summary_codec_u64(c, &w->window_ns);
    uint64_t steps = w->window_steps;
    summary_codec_u64(c, &steps);
    w->window_steps = (size_t)steps;
    if (c->reading && !c->bad &&
        (w->window > MODEL_WINDOW_STARTUP || w->miss > MODEL_WINDOW_MISS_CALLS))
        summary_codec_fail(c, "bad GPU window");
    if (c->bad || w->window == MODEL_WINDOW_ALL)
        return;
    w->apis = summary_codec_vector(c, w->apis, &w->napis, 7, sizeof *w->apis);
    for (size_t i = 0; i < w->napis; i++)
        sf_counts(c, &w->apis[i]);
    w->cupti = summary_codec_vector(c, w->cupti, &w->ncupti, 7, sizeof *w->cupti);
    for (size_t i = 0; i < w->ncupti; i++)
        sf_counts(c, &w->cupti[i]);
    w->kernels = summary_codec_vector(c, w->kernels, &w->nkernels, 9, sizeof *w->kernels);
    if (c->reading && !c->bad &&
        (w->napis > p->napis || w->ncupti > p->gpu.napis || w->nkernels != p->gpu.nkernels))
        summary_codec_fail(c, "GPU window rows that the process does not have");
    for (size_t i = 0; i < w->nkernels; i++) {
        struct model_gpu_kernel *k = &w->kernels[i];
        if (c->reading) {
            model_gpu_kernel_init(k, 0);
            if (c->bad)
                continue; /* maps made, to be freed */
            k->name_sid = p->gpu.kernels[i].name_sid;
            k->name = p->gpu.kernels[i].name;
        }
        summary_model_kernel_counts(c, k);
    }
    if (c->reading && !c->bad)
        model_gpu_part_pick(p);
}
