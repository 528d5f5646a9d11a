/* u64map: an open-addressing hash map from u64 keys to u64 values (or pointers), used by
 * the reporter for strings, symbols, live allocations and per-kernel histograms. */
#ifndef REPORT_HASHMAP_H
#define REPORT_HASHMAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map {
    uint64_t *keys;
    uint64_t *values;
    uint8_t *used;
    size_t cap; /* power of two, or 0 before the first insert */
    size_t count;
};

void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
/* The slot of key's value, inserted as 0 when absent; NULL only when out of memory. */
uint64_t *u64map_slot(struct u64map *m, uint64_t key);
/* The value's address, or NULL when key is absent. */
uint64_t *u64map_find(const struct u64map *m, uint64_t key);
int u64map_remove(struct u64map *m, uint64_t key);

/* Iterate: for (size_t i = 0; u64map_next(m, &i, &k, &v);) */
int u64map_next(const struct u64map *m, size_t *iter, uint64_t *key, uint64_t *value);

/* idmap: ids to index + 1 (never 0), for the ids a trace writer numbers 1, 2, 3, ...: an
 * array holds the ids below twice the count (plus a margin), read in the order they were
 * made; a u64map holds any other (a damaged trace's). The array keeps a large model's
 * lookups off the hash map's scattered slots. */
struct idmap {
    uint32_t *dense; /* id -> value, 0: not here */
    size_t cap, count;
    struct u64map sparse;
};

void idmap_init(struct idmap *m);
void idmap_free(struct idmap *m);
/* Sets id's value (not 0); -1 only when out of memory. */
int idmap_set(struct idmap *m, uint64_t id, uint64_t value);

static inline uint64_t idmap_get(const struct idmap *m, uint64_t id)
{
    if (id < m->cap && m->dense[id])
        return m->dense[id];
    if (!m->sparse.count)
        return 0;
    uint64_t *v = u64map_find(&m->sparse, id);
    return v ? *v : 0;
}

/* idbits: a set of ids, a bit per id in chunks of 512 (8 words) found by id / 512 in a
 * u64map: ids that come in runs (CUPTI's correlation ids count up from 1) cost about a bit
 * each, 5 M of them 0.9 MB (as one map entry per 64-bit word, 4.5 MB: a streamed export of
 * 10 M events held three such sets); an id far from the others costs a chunk, 64 bytes. */
struct idbits {
    struct u64map chunks; /* id / 512 -> the chunk's index */
    uint64_t *words;      /* 8 per chunk */
    size_t nchunks, cap;
};

void idbits_init(struct idbits *b);
void idbits_free(struct idbits *b);
/* Adds id; -1 only when out of memory. */
int idbits_add(struct idbits *b, uint64_t id);
int idbits_has(const struct idbits *b, uint64_t id);
/* The chunk of ids [512 * key, 512 * key + 512): 8 words, or NULL when none is set. */
const uint64_t *idbits_chunk(const struct idbits *b, uint64_t key);
/* Iterate over the chunks: for (size_t i = 0; idbits_next(b, &i, &key, &words);) */
int idbits_next(const struct idbits *b, size_t *iter, uint64_t *key, const uint64_t **words);
/* Sets the chunk of key to words (8); -1 only when out of memory. */
int idbits_set_chunk(struct idbits *b, uint64_t key, const uint64_t *words);

static inline void *u64map_get_ptr(const struct u64map *m, uint64_t key)
{
    uint64_t *v = u64map_find(m, key);
    return v ? (void *)(uintptr_t)*v : NULL;
}

#endif
