#include "hashmap.h"

#include <stdlib.h>
#include <string.h>

void u64map_init(struct u64map *m)
{
    m->keys = NULL;
    m->values = NULL;
    m->used = NULL;
    m->cap = 0;
    m->count = 0;
}

void u64map_free(struct u64map *m)
{
    free(m->keys);
    free(m->values);
    free(m->used);
    u64map_init(m);
}

static size_t u64map_hash(uint64_t key, size_t cap)
{
    key ^= key >> 33;
    key *= 0xff51afd7ed558ccdULL;
    key ^= key >> 33;
    key *= 0xc4ceb9fe1a85ec53ULL;
    key ^= key >> 33;
    return (size_t)key & (cap - 1);
}

static int u64map_grow(struct u64map *m)
{
    size_t cap = m->cap ? m->cap * 2 : 16;
    struct u64map n = {calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(uint64_t)), calloc(cap, 1),
                       cap, 0};
    if (!n.keys || !n.values || !n.used) {
        u64map_free(&n);
        return -1;
    }
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->used[i])
            continue;
        size_t j = u64map_hash(m->keys[i], cap);
        while (n.used[j])
            j = (j + 1) & (cap - 1);
        n.used[j] = 1;
        n.keys[j] = m->keys[i];
        n.values[j] = m->values[i];
        n.count++;
    }
    u64map_free(m);
    *m = n;
    return 0;
}

uint64_t *u64map_find(const struct u64map *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    for (size_t j = u64map_hash(key, m->cap);; j = (j + 1) & (m->cap - 1)) {
        if (!m->used[j])
            return NULL;
        if (m->keys[j] == key)
            return &m->values[j];
    }
}

uint64_t *u64map_slot(struct u64map *m, uint64_t key)
{
    uint64_t *v = u64map_find(m, key);
    if (v)
        return v;
    /* Keep the load under 1/2 so probes stay short. */
    if ((m->count + 1) * 2 > m->cap && u64map_grow(m) != 0)
        return NULL;
    size_t j = u64map_hash(key, m->cap);
    while (m->used[j])
        j = (j + 1) & (m->cap - 1);
    m->used[j] = 1;
    m->keys[j] = key;
    m->values[j] = 0;
    m->count++;
    return &m->values[j];
}

int u64map_remove(struct u64map *m, uint64_t key)
{
    if (!m->cap)
        return 0;
    size_t mask = m->cap - 1, j = u64map_hash(key, m->cap);
    while (m->used[j] && m->keys[j] != key)
        j = (j + 1) & mask;
    if (!m->used[j])
        return 0;
    /* Backward-shift deletion: move later entries of the probe chain into the hole so
     * lookups never stop early at it. */
    size_t hole = j;
    for (size_t k = (j + 1) & mask; m->used[k]; k = (k + 1) & mask) {
        size_t home = u64map_hash(m->keys[k], m->cap);
        int movable = (hole <= k) ? (home <= hole || home > k) : (home <= hole && home > k);
        if (movable) {
            m->keys[hole] = m->keys[k];
            m->values[hole] = m->values[k];
            hole = k;
        }
    }
    m->used[hole] = 0;
    m->count--;
    return 1;
}

int u64map_next(const struct u64map *m, size_t *iter, uint64_t *key, uint64_t *value)
{
    for (size_t i = *iter; i < m->cap; i++) {
        if (m->used[i]) {
            if (key)
                *key = m->keys[i];
            if (value)
                *value = m->values[i];
            *iter = i + 1;
            return 1;
        }
    }
    *iter = m->cap;
    return 0;
}

void idmap_init(struct idmap *m)
{
    m->dense = NULL;
    m->cap = m->count = 0;
    u64map_init(&m->sparse);
}

void idmap_free(struct idmap *m)
{
    free(m->dense);
    u64map_free(&m->sparse);
    idmap_init(m);
}

/* 1 when id has a place in the array (grown to hold it), 0 when not, -1: out of memory. */
static int idmap_dense_fits(struct idmap *m, uint64_t id)
{
    if (id < m->cap)
        return 1;
    size_t limit = 2 * (m->count + m->sparse.count) + 65536;
    if (id >= limit)
        return 0;
    size_t cap = m->cap ? m->cap * 2 : 4096;
    if (cap <= id)
        cap = (size_t)id + 1;
    if (cap > limit)
        cap = limit;
    uint32_t *d = realloc(m->dense, cap * sizeof *d);
    if (!d)
        return -1;
    memset(d + m->cap, 0, (cap - m->cap) * sizeof *d);
    m->dense = d;
    m->cap = cap;
    return 1;
}

int idmap_set(struct idmap *m, uint64_t id, uint64_t value)
{
    uint64_t *v = m->sparse.count ? u64map_find(&m->sparse, id) : NULL;
    if (v) {
        *v = value;
        return 0;
    }
    int fits = value <= UINT32_MAX ? idmap_dense_fits(m, id) : 0;
    if (fits < 0)
        return -1;
    if (fits) {
        m->count += !m->dense[id];
        m->dense[id] = (uint32_t)value;
        return 0;
    }
    if (id < m->cap && m->dense[id]) { /* a value too large for the array replaces it */
        m->dense[id] = 0;
        m->count--;
    }
    v = u64map_slot(&m->sparse, id);
    if (!v)
        return -1;
    *v = value;
    return 0;
}

#define IDBITS_WORDS 8 /* words per chunk: 512 ids */

void idbits_init(struct idbits *b)
{
    u64map_init(&b->chunks);
    b->words = NULL;
    b->nchunks = b->cap = 0;
}

void idbits_free(struct idbits *b)
{
    u64map_free(&b->chunks);
    free(b->words);
    idbits_init(b);
}

/* The words of key's chunk, made (zeroed) when absent; NULL only when out of memory. */
static uint64_t *idbits_words(struct idbits *b, uint64_t key)
{
    uint64_t *slot = u64map_find(&b->chunks, key);
    if (slot)
        return b->words + *slot * IDBITS_WORDS;
    if (b->nchunks == b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 16;
        uint64_t *w = realloc(b->words, cap * IDBITS_WORDS * sizeof *w);
        if (!w)
            return NULL;
        b->words = w;
        b->cap = cap;
    }
    if (!(slot = u64map_slot(&b->chunks, key)))
        return NULL;
    *slot = b->nchunks;
    uint64_t *w = b->words + b->nchunks++ * IDBITS_WORDS;
    memset(w, 0, IDBITS_WORDS * sizeof *w);
    return w;
}

int idbits_add(struct idbits *b, uint64_t id)
{
    uint64_t *w = idbits_words(b, id / (64 * IDBITS_WORDS));
    if (!w)
        return -1;
    w[id / 64 % IDBITS_WORDS] |= 1ull << (id % 64);
    return 0;
}

const uint64_t *idbits_chunk(const struct idbits *b, uint64_t key)
{
    const uint64_t *slot = b->nchunks ? u64map_find(&b->chunks, key) : NULL;
    return slot ? b->words + *slot * IDBITS_WORDS : NULL;
}

int idbits_has(const struct idbits *b, uint64_t id)
{
    const uint64_t *w = idbits_chunk(b, id / (64 * IDBITS_WORDS));
    return w && (w[id / 64 % IDBITS_WORDS] >> (id % 64) & 1);
}

int idbits_next(const struct idbits *b, size_t *iter, uint64_t *key, const uint64_t **words)
{
    uint64_t index;
    if (!u64map_next(&b->chunks, iter, key, &index))
        return 0;
    *words = b->words + index * IDBITS_WORDS;
    return 1;
}

int idbits_set_chunk(struct idbits *b, uint64_t key, const uint64_t *words)
{
    uint64_t *w = idbits_words(b, key);
    if (!w)
        return -1;
    memcpy(w, words, IDBITS_WORDS * sizeof *w);
    return 0;
}
