/* summary_codec: the primitives of a summary file, one function per value for both
 * directions, so that what is written and what is read are one piece of code.
 *
 * Writing appends to a growing buffer; reading walks a buffer of the whole file with
 * every length checked against what is left: a cut-off, corrupt or foreign file sets
 * bad (with the first reason) and every later call reads zeros, never past the end.
 * Integers are LEB128 varints (signed ones zigzag-coded). */
#ifndef REPORT_SUMMARY_CODEC_H
#define REPORT_SUMMARY_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "hashmap.h"

struct summary_codec {
    int reading;
    uint8_t *buf; /* writing: owned, grown; reading: the file (not owned) */
    size_t len, cap, pos;
    int bad;
    char why[160];
};

void summary_codec_writer(struct summary_codec *c);
void summary_codec_reader(struct summary_codec *c, const uint8_t *buf, size_t len);
/* Marks the stream bad with the first reason given (reading only). */
void summary_codec_fail(struct summary_codec *c, const char *why);

/* Each number both ways, every check made (the functions below take this way but for the
 * commonest reading). */
void summary_codec_u64_checked(struct summary_codec *c, uint64_t *v);
void summary_codec_i64_checked(struct summary_codec *c, int64_t *v);
void summary_codec_u32_checked(struct summary_codec *c, uint32_t *v);
void summary_codec_i32_checked(struct summary_codec *c, int32_t *v);
void summary_codec_u8_checked(struct summary_codec *c, uint8_t *v);

/* Reading a number of at most ten bytes with ten bytes or more left, as the checked way
 * reads it: 1 and *v, else 0 and nothing read. Inline: a merge reads millions. */
static inline int summary_codec_read_fast(struct summary_codec *c, uint64_t *v)
{
    if (!c->reading || c->bad || c->len - c->pos < 10)
        return 0;
    const uint8_t *b = c->buf + c->pos;
    uint64_t x = 0;
    for (unsigned i = 0; i < 10; i++) {
        x |= (uint64_t)(b[i] & 0x7f) << (7 * i);
        if (!(b[i] & 0x80)) {
            c->pos += i + 1;
            *v = x;
            return 1;
        }
    }
    return 0;
}

static inline void summary_codec_u64(struct summary_codec *c, uint64_t *v)
{
    if (!summary_codec_read_fast(c, v))
        summary_codec_u64_checked(c, v);
}

static inline void summary_codec_i64(struct summary_codec *c, int64_t *v)
{
    uint64_t z;
    if (summary_codec_read_fast(c, &z))
        *v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
    else
        summary_codec_i64_checked(c, v);
}

/* A number read fast that does not fit is read again the checked way, which says so. */
static inline void summary_codec_u32(struct summary_codec *c, uint32_t *v)
{
    size_t at = c->pos;
    uint64_t x;
    if (summary_codec_read_fast(c, &x) && x <= UINT32_MAX) {
        *v = (uint32_t)x;
        return;
    }
    c->pos = at;
    summary_codec_u32_checked(c, v);
}

static inline void summary_codec_u8(struct summary_codec *c, uint8_t *v)
{
    size_t at = c->pos;
    uint64_t x;
    if (summary_codec_read_fast(c, &x) && x <= UINT8_MAX) {
        *v = (uint8_t)x;
        return;
    }
    c->pos = at;
    summary_codec_u8_checked(c, v);
}

static inline void summary_codec_i32(struct summary_codec *c, int32_t *v)
{
    size_t at = c->pos;
    uint64_t z;
    if (summary_codec_read_fast(c, &z)) {
        int64_t x = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
        if (x >= INT32_MIN && x <= INT32_MAX) {
            *v = (int32_t)x;
            return;
        }
    }
    c->pos = at;
    summary_codec_i32_checked(c, v);
}

void summary_codec_u16(struct summary_codec *c, uint16_t *v);
void summary_codec_i8(struct summary_codec *c, int8_t *v);
void summary_codec_int(struct summary_codec *c, int *v);
void summary_codec_size(struct summary_codec *c, size_t *v);
void summary_codec_double(struct summary_codec *c, double *v);
/* A string or NULL; reading allocates it. */
void summary_codec_str(struct summary_codec *c, char **s);
/* An element count; reading checks that count elements of at least min_bytes each fit in
 * what is left, and sets it to 0 when the stream is bad. */
void summary_codec_count(struct summary_codec *c, size_t *n, size_t min_bytes);
/* Reading: a zeroed array of n elements (NULL when n is 0). */
void *summary_codec_array(struct summary_codec *c, size_t n, size_t size);
/* An array's count, then (reading) the array itself allocated for it: returns arr as
 * given when writing, the new zeroed array (NULL for none) when reading. */
void *summary_codec_vector(struct summary_codec *c, void *arr, size_t *n, size_t min_bytes,
                           size_t size);
/* Every key and value of a map (reading: into m, which must be initialized). */
void summary_codec_map(struct summary_codec *c, struct u64map *m);
/* Raw bytes (a magic). */
void summary_codec_bytes(struct summary_codec *c, void *p, size_t n);

#endif
