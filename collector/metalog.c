#define _GNU_SOURCE
#include "metalog.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "text_bound.h"
#include "trace_format.h"

static pthread_mutex_t metalog_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *metalog_data;
static size_t metalog_used, metalog_capacity;

/* Interned strings: open addressing over (hash, id, text); grows at half full. */
struct intern_slot {
    uint64_t hash;
    uint32_t id;
    const char *text;
};
static struct intern_slot *intern_slots;
static size_t intern_capacity, intern_count;
static uint32_t intern_next_id = 1; /* 0 means "no string" */

static int metalog_reserve(size_t more)
{
    if (metalog_used + more <= metalog_capacity)
        return 0;
    size_t cap = metalog_capacity ? metalog_capacity * 2 : 64 * 1024;
    while (cap < metalog_used + more)
        cap *= 2;
    void *p = metalog_data
                  ? mremap(metalog_data, metalog_capacity, cap, MREMAP_MAYMOVE)
                  : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return -1;
    metalog_data = p;
    metalog_capacity = cap;
    return 0;
}

static void metalog_append_locked(uint16_t type, const void *fixed, size_t fixed_len,
                                  const char *text1, const char *text2)
{
    size_t l1 = text1 ? text_bound_len(text1) + 1 : 0, l2 = text2 ? text_bound_len(text2) + 1 : 0;
    size_t n = fixed_len + l1 + l2;
    if (n > PROF_RECORD_MAX)
        return; /* bounded texts always fit: only a fixed part this large could not */
    uint32_t size = prof_record_align((uint32_t)n);
    if (metalog_reserve(size) != 0)
        return;
    uint8_t *rec = metalog_data + metalog_used;
    memcpy(rec, fixed, fixed_len);
    if (l1)
        text_bound_copy((char *)rec + fixed_len, text1);
    if (l2)
        text_bound_copy((char *)rec + fixed_len + l1, text2);
    memset(rec + n, 0, size - n);
    struct prof_record_header *h = (struct prof_record_header *)rec;
    h->type = type;
    h->size = (uint16_t)size;
    metalog_used += size;
}

void metalog_append(uint16_t type, const void *fixed, size_t fixed_len, const char *text1,
                    const char *text2)
{
    pthread_mutex_lock(&metalog_lock);
    metalog_append_locked(type, fixed, fixed_len, text1, text2);
    pthread_mutex_unlock(&metalog_lock);
}

static uint64_t intern_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 1099511628211ull;
    return h;
}

static int intern_grow(void)
{
    size_t cap = intern_capacity ? intern_capacity * 2 : 1024;
    struct intern_slot *slots = calloc(cap, sizeof *slots);
    if (!slots)
        return -1;
    for (size_t i = 0; i < intern_capacity; i++) {
        if (!intern_slots[i].text)
            continue;
        size_t j = intern_slots[i].hash & (cap - 1);
        while (slots[j].text)
            j = (j + 1) & (cap - 1);
        slots[j] = intern_slots[i];
    }
    free(intern_slots);
    intern_slots = slots;
    intern_capacity = cap;
    return 0;
}

uint32_t metalog_intern(const char *text)
{
    /* An over-long name is interned as its bounded text: the one the trace keeps, so that
     * neither the table nor the record holds the whole of it. */
    char *bounded = NULL;
    if (strnlen(text, TEXT_BOUND_MAX) == TEXT_BOUND_MAX) {
        bounded = malloc(TEXT_BOUND_MAX);
        if (!bounded)
            return 0;
        text_bound_copy(bounded, text);
        text = bounded;
    }
    uint64_t h = intern_hash(text);
    uint32_t id = 0;
    pthread_mutex_lock(&metalog_lock);
    if ((intern_count + 1) * 2 > intern_capacity && intern_grow() != 0)
        goto out;
    size_t j = h & (intern_capacity - 1);
    while (intern_slots[j].text) {
        if (intern_slots[j].hash == h && strcmp(intern_slots[j].text, text) == 0) {
            id = intern_slots[j].id;
            goto out;
        }
        j = (j + 1) & (intern_capacity - 1);
    }
    char *copy = strdup(text);
    if (!copy)
        goto out;
    id = intern_next_id++;
    intern_slots[j] = (struct intern_slot){h, id, copy};
    intern_count++;
    struct prof_rec_string rec = {{PROF_REC_STRING, 0}, id};
    metalog_append_locked(PROF_REC_STRING, &rec, sizeof rec, text, NULL);
out:
    pthread_mutex_unlock(&metalog_lock);
    free(bounded);
    return id;
}

int metalog_copy_out(size_t *offset, void (*write)(const void *, size_t), int try_only)
{
    if (try_only) {
        if (pthread_mutex_trylock(&metalog_lock) != 0)
            return -1;
    } else {
        pthread_mutex_lock(&metalog_lock);
    }
    if (*offset < metalog_used)
        write(metalog_data + *offset, metalog_used - *offset);
    *offset = metalog_used;
    pthread_mutex_unlock(&metalog_lock);
    return 0;
}

void metalog_atfork_prepare(void)
{
    pthread_mutex_lock(&metalog_lock);
}

void metalog_atfork_parent(void)
{
    pthread_mutex_unlock(&metalog_lock);
}

void metalog_atfork_child(void)
{
    pthread_mutex_init(&metalog_lock, NULL);
}
