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
