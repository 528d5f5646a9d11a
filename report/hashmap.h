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

static inline void *u64map_get_ptr(const struct u64map *m, uint64_t key)
{
    uint64_t *v = u64map_find(m, key);
    return v ? (void *)(uintptr_t)*v : NULL;
}

#endif
