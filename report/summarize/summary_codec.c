#include "summary_codec.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

void summary_codec_writer(struct summary_codec *c)
{
    memset(c, 0, sizeof *c);
}

void summary_codec_reader(struct summary_codec *c, const uint8_t *buf, size_t len)
{
    memset(c, 0, sizeof *c);
    c->reading = 1;
    c->buf = (uint8_t *)buf;
    c->len = len;
}

void summary_codec_fail(struct summary_codec *c, const char *why)
{
    if (c->bad)
        return;
    c->bad = 1;
    strncpy(c->why, why, sizeof c->why - 1);
}

static void summary_codec_put(struct summary_codec *c, const void *p, size_t n)
{
    c->buf = report_grow_raw(c->buf, &c->cap, c->len + n, 1);
    memcpy(c->buf + c->len, p, n);
    c->len += n;
}

static int summary_codec_get(struct summary_codec *c, void *p, size_t n)
{
    if (c->bad || c->len - c->pos < n) {
        summary_codec_fail(c, "cut off");
        memset(p, 0, n);
        return -1;
    }
    memcpy(p, c->buf + c->pos, n);
    c->pos += n;
    return 0;
}

void summary_codec_bytes(struct summary_codec *c, void *p, size_t n)
{
    if (c->reading)
        summary_codec_get(c, p, n);
    else
        summary_codec_put(c, p, n);
}

void summary_codec_u64_checked(struct summary_codec *c, uint64_t *v)
{
    if (!c->reading) {
        uint8_t b[10];
        size_t n = 0;
        uint64_t x = *v;
        do {
            b[n] = (uint8_t)(x & 0x7f);
            x >>= 7;
            if (x)
                b[n] |= 0x80;
            n++;
        } while (x);
        summary_codec_put(c, b, n);
        return;
    }
    uint64_t x = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b;
        if (summary_codec_get(c, &b, 1) != 0 || shift > 63) {
            if (shift > 63)
                summary_codec_fail(c, "a number longer than 64 bits");
            *v = 0;
            return;
        }
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
    }
    *v = x;
}

void summary_codec_i64_checked(struct summary_codec *c, int64_t *v)
{
    uint64_t z = ((uint64_t)*v << 1) ^ (uint64_t)(*v >> 63);
    summary_codec_u64(c, &z);
    if (c->reading)
        *v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
}

/* Reads a value that must fit max; a larger one marks the stream bad. */
static uint64_t summary_codec_bounded(struct summary_codec *c, uint64_t value, uint64_t max)
{
    uint64_t v = value;
    summary_codec_u64(c, &v);
    if (c->reading && v > max) {
        summary_codec_fail(c, "a value out of range");
        v = 0;
    }
    return v;
}

void summary_codec_u32_checked(struct summary_codec *c, uint32_t *v)
{
    *v = (uint32_t)summary_codec_bounded(c, *v, UINT32_MAX);
}

void summary_codec_u16(struct summary_codec *c, uint16_t *v)
{
    *v = (uint16_t)summary_codec_bounded(c, *v, UINT16_MAX);
}

void summary_codec_u8_checked(struct summary_codec *c, uint8_t *v)
{
    *v = (uint8_t)summary_codec_bounded(c, *v, UINT8_MAX);
}

void summary_codec_i32_checked(struct summary_codec *c, int32_t *v)
{
    int64_t x = *v;
    summary_codec_i64(c, &x);
    if (c->reading && (x < INT32_MIN || x > INT32_MAX)) {
        summary_codec_fail(c, "a value out of range");
        x = 0;
    }
    *v = (int32_t)x;
}

void summary_codec_i8(struct summary_codec *c, int8_t *v)
{
    int64_t x = *v;
    summary_codec_i64(c, &x);
    if (c->reading && (x < INT8_MIN || x > INT8_MAX)) {
        summary_codec_fail(c, "a value out of range");
        x = 0;
    }
    *v = (int8_t)x;
}

void summary_codec_int(struct summary_codec *c, int *v)
{
    int64_t x = *v;
    summary_codec_i64(c, &x);
    if (c->reading && (x < INT_MIN || x > INT_MAX)) {
        summary_codec_fail(c, "a value out of range");
        x = 0;
    }
    *v = (int)x;
}

void summary_codec_size(struct summary_codec *c, size_t *v)
{
    *v = (size_t)summary_codec_bounded(c, *v, SIZE_MAX);
}

void summary_codec_double(struct summary_codec *c, double *v)
{
    summary_codec_bytes(c, v, sizeof *v);
}

void summary_codec_str(struct summary_codec *c, char **s)
{
    uint64_t n = *s && !c->reading ? strlen(*s) + 1 : 0; /* 0: NULL */
    summary_codec_u64(c, &n);
    if (!c->reading) {
        if (n)
            summary_codec_put(c, *s, (size_t)n - 1);
        return;
    }
    *s = NULL;
    if (!n || c->bad)
        return;
    if (n - 1 > c->len - c->pos) {
        summary_codec_fail(c, "cut off in a string");
        return;
    }
    char *t = malloc((size_t)n);
    if (!t)
        report_oom();
    memcpy(t, c->buf + c->pos, (size_t)n - 1);
    t[n - 1] = '\0';
    c->pos += (size_t)n - 1;
    *s = t;
}

void summary_codec_count(struct summary_codec *c, size_t *n, size_t min_bytes)
{
    summary_codec_size(c, n);
    if (!c->reading)
        return;
    if (min_bytes == 0)
        min_bytes = 1;
    if (!c->bad && *n > (c->len - c->pos) / min_bytes)
        summary_codec_fail(c, "a count larger than the file");
    if (c->bad)
        *n = 0;
}

void *summary_codec_array(struct summary_codec *c, size_t n, size_t size)
{
    (void)c;
    if (!n)
        return NULL;
    void *p = calloc(n, size);
    if (!p)
        report_oom();
    return p;
}

void *summary_codec_vector(struct summary_codec *c, void *arr, size_t *n, size_t min_bytes,
                           size_t size)
{
    summary_codec_count(c, n, min_bytes);
    return c->reading ? summary_codec_array(c, *n, size) : arr;
}

void summary_codec_map(struct summary_codec *c, struct u64map *m)
{
    size_t n = m->count;
    summary_codec_count(c, &n, 2);
    if (!c->reading) {
        uint64_t k, v;
        for (size_t i = 0; u64map_next(m, &i, &k, &v);) {
            summary_codec_u64(c, &k);
            summary_codec_u64(c, &v);
        }
        return;
    }
    for (size_t i = 0; i < n && !c->bad; i++) {
        uint64_t k = 0, v = 0;
        summary_codec_u64(c, &k);
        summary_codec_u64(c, &v);
        uint64_t *slot = u64map_slot(m, k);
        if (!slot)
            report_oom();
        *slot = v;
    }
}
