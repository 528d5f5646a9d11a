/* summary_pystats: the Python functions of a summary as cProfile's table (summary_model.h),
 * read lazily: written from a process's call trees, read merged into a pystats. */
#include <stdlib.h>

#include "summary_model.h"

typedef struct summary_codec sf_codec;

static void sf_pystats_func(sf_codec *c, struct pystats_func *f)
{
    summary_codec_str(c, &f->file);
    summary_codec_str(c, &f->name);
    summary_codec_str(c, &f->qualname);
    summary_codec_str(c, &f->module);
    summary_codec_u32(c, &f->line);
    summary_codec_u16(c, &f->kind);
    summary_codec_u64(c, &f->ncalls);
    summary_codec_u64(c, &f->pcalls);
    summary_codec_u64(c, &f->tottime_ns);
    summary_codec_u64(c, &f->cumtime_ns);
    summary_codec_u64(c, &f->api_calls);
    summary_codec_u64(c, &f->api_ns);
    summary_codec_u64(c, &f->gpu_kernels);
    summary_codec_u64(c, &f->gpu_ns);
    summary_codec_u8(c, &f->outside_imports);
}

static void sf_pystats_caller(sf_codec *c, struct pystats_caller *e)
{
    summary_codec_size(c, &e->caller);
    summary_codec_u64(c, &e->nc);
    summary_codec_u64(c, &e->cc);
    summary_codec_u64(c, &e->tt_ns);
    summary_codec_u64(c, &e->ct_ns);
}

static void sf_pystats_write(sf_codec *c, const struct model_process *p, int part)
{
    struct pystats py;
    pystats_init(&py);
    pystats_add(&py, p, -1, part);
    summary_codec_count(c, &py.nfuncs, 14);
    for (size_t i = 0; i < py.nfuncs; i++)
        sf_pystats_func(c, &py.funcs[i]);
    for (size_t i = 0; i < py.nfuncs; i++) {
        summary_codec_count(c, &py.funcs[i].ncallers, 5);
        for (size_t e = 0; e < py.funcs[i].ncallers; e++)
            sf_pystats_caller(c, &py.funcs[i].callers[e]);
    }
    pystats_free(&py);
}

/* The part's functions (py.window: --summarize asks for the steady steps) when the process
 * has them, then the whole process's. */
void summary_model_write_pystats(sf_codec *c, const struct model_process *p)
{
    uint8_t part = p->py.window != MODEL_WINDOW_ALL;
    summary_codec_u8(c, &part);
    if (part)
        sf_pystats_write(c, p, 1);
    sf_pystats_write(c, p, 0);
}

/* Into s: the functions merged by key, then their callers with indices mapped. */
static void sf_pystats_read(sf_codec *c, struct pystats *s)
{
    size_t n = 0;
    summary_codec_count(c, &n, 14);
    size_t *at = summary_codec_array(c, n, sizeof *at);
    for (size_t i = 0; i < n && !c->bad; i++) {
        struct pystats_func f = {0};
        sf_pystats_func(c, &f);
        if (!f.file || !f.name)
            summary_codec_fail(c, "a Python function without a name");
        if (!c->bad)
            at[i] = pystats_merge_func(s, &f);
        free(f.file);
        free(f.name);
        free(f.qualname);
        free(f.module);
    }
    for (size_t i = 0; i < n && !c->bad; i++) {
        size_t ncallers = 0;
        summary_codec_count(c, &ncallers, 5);
        for (size_t k = 0; k < ncallers && !c->bad; k++) {
            struct pystats_caller e = {0};
            sf_pystats_caller(c, &e);
            if (e.caller >= n) {
                summary_codec_fail(c, "a Python caller out of range");
                break;
            }
            e.caller = at[e.caller];
            pystats_merge_caller(s, at[i], &e);
        }
    }
    free(at);
}

void summary_model_read_pystats(sf_codec *c, struct pystats *s, int part)
{
    uint8_t has_part = 0;
    summary_codec_u8(c, &has_part);
    if (has_part > 1)
        summary_codec_fail(c, "a bad Python part");
    if (has_part && part) {
        sf_pystats_read(c, s);
        return;
    }
    if (has_part) { /* read past the part's */
        struct pystats skip;
        pystats_init(&skip);
        sf_pystats_read(c, &skip);
        pystats_free(&skip);
    }
    if (part && !c->bad)
        summary_codec_fail(c, "no Python part where the process says one");
    if (!c->bad)
        sf_pystats_read(c, s);
}
