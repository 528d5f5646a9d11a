/* The Python frames the sampler read (PY_CODE, SAMPLE_PY): a SAMPLE_PY belongs to the
 * SAMPLE of the same thread and ticks that follows it, even with another thread's records
 * between; one whose SAMPLE was dropped names no other sample; equal frame lists are one
 * path; a PY_CODE names its code id. */
#include <criterion/criterion.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "model.h"
#include "model_stacks.h"
#include "report_test.h"

static char path[64];

static void setup(void)
{
    report_test_temp(path, "report_sample_py");
}

static void teardown(void)
{
    unlink(path);
}

TestSuite(report_sample_py, .init = setup, .fini = teardown);

static void py_code(struct trace_build *b, uint32_t id, uint32_t line, const char *name,
                    const char *file)
{
    uint8_t buf[256] = {0};
    size_t nlen = strlen(name), flen = strlen(file);
    uint32_t size =
        prof_record_align((uint32_t)(sizeof(struct prof_rec_py_code) + nlen + flen + 2));
    struct prof_rec_py_code *r = (struct prof_rec_py_code *)buf;
    r->h.type = PROF_REC_PY_CODE;
    r->h.size = (uint16_t)size;
    r->code_id = id;
    r->line = line;
    r->flags = PROF_PY_CODE_QUALNAME;
    memcpy(buf + sizeof *r, name, nlen + 1);
    memcpy(buf + sizeof *r + nlen + 1, file, flen + 1);
    trace_build_raw(b, buf, size);
}

static void sample_py(struct trace_build *b, uint64_t ticks, const uint32_t *ids, uint16_t n,
                      uint16_t flags)
{
    uint8_t buf[256] = {0};
    uint32_t size = prof_record_align((uint32_t)(sizeof(struct prof_rec_sample_py) + 4u * n));
    struct prof_rec_sample_py *r = (struct prof_rec_sample_py *)buf;
    r->h.type = PROF_REC_SAMPLE_PY;
    r->h.size = (uint16_t)size;
    r->nframes = n;
    r->flags = flags;
    r->ticks = ticks;
    memcpy(buf + sizeof *r, ids, 4u * n);
    trace_build_raw(b, buf, size);
}

static void sample(struct trace_build *b, uint64_t ticks)
{
    struct prof_rec_sample s = {{PROF_REC_SAMPLE, sizeof s}, 0, ticks, 0, 1, 0, 0};
    trace_build_raw(b, &s, sizeof s);
}

/* The samples' count per path index (+1; 0: no Python frames), over all threads. */
static uint64_t count_of(const struct model_stacks *st, uint32_t path)
{
    uint64_t n = 0;
    for (size_t i = 0; i < st->nsamples; i++)
        if (st->samples[i].py_path == path)
            n += st->samples[i].count;
    return n;
}

Test(report_sample_py, frames_follow_their_sample)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, PROF_FEATURE_STACKS), 0);
    trace_build_meta(&b, "pid", "77");
    const uint32_t inner[2] = {1, 2}, other[3] = {1, 2, 3};
    trace_build_thread(&b, 9);
    py_code(&b, 1, 9, "fib", "/w/py_hot.py");
    py_code(&b, 2, 28, "main", "/w/py_hot.py");
    sample_py(&b, 100, inner, 2, 0);
    sample(&b, 100);
    sample_py(&b, 110, inner, 2, 0);
    trace_build_thread(&b, 10); /* the ring of thread 9 was drained between */
    sample(&b, 105);            /* thread 10: no Python frames */
    trace_build_thread(&b, 9);
    sample(&b, 110);
    sample_py(&b, 120, other, 3, PROF_SAMPLE_PY_TRUNCATED); /* its SAMPLE was dropped */
    sample(&b, 130);
    trace_build_close(&b);

    struct model_process *p = report_test_load(path);
    const struct model_stacks *st = p->stacks;
    cr_assert_not_null(st);
    cr_assert_eq(st->sample_count, 4);
    cr_assert_eq(st->npy_paths, 2);
    cr_assert_eq(st->py_paths[0].n, 2);
    cr_assert_eq(st->py_paths[0].codes[0], 1);
    cr_assert_eq(st->py_paths[1].truncated, 1);
    cr_assert_eq(count_of(st, 1), 2, "both samples of thread 9 with frames: one path");
    cr_assert_eq(count_of(st, 2), 0, "a SAMPLE_PY without its SAMPLE names no sample");
    cr_assert_eq(count_of(st, 0), 2);
    const struct model_py_code *c = model_py_code_get(p, 2);
    cr_assert_not_null(c);
    cr_assert_str_eq(c->name, "main");
    cr_assert_str_eq(c->file, "/w/py_hot.py");
    cr_assert_eq(c->line, 28);
    cr_assert_null(model_py_code_get(p, 3));
    model_process_free(p);
}
