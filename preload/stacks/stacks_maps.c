/* MAP records: every object loaded in the process (path, load bias, address range, GNU
 * build id), so that profreport can symbolize stack addresses offline and tell when a
 * file changed since the run. Written by the collector (a source), never by the threads
 * that take stacks: a new scan only when the loader's add/remove counters moved. */
#define _GNU_SOURCE
#include <elf.h>
#include <limits.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "resolve.h"
#include "stacks.h"
#include "trace_format.h"

/* Every object seen, as its MAP record, and whether the current file has it. The list
 * outlives a fork: a forked child writes it into its own file without asking the loader,
 * whose lock another thread of the parent may have held at the fork (dl_iterate_phdr
 * would then wait forever in the child). */
struct stacks_map_entry {
    uint64_t bias, path_hash;
    int written;
    uint32_t size;
    unsigned char *record;
};

static struct stacks_map_entry *stacks_maps;
static size_t stacks_maps_n, stacks_maps_cap;
static unsigned long long stacks_maps_adds = ~0ull, stacks_maps_subs = ~0ull;
static int stacks_maps_in_child; /* a forked child: the loader is not asked any more */

static uint64_t stacks_maps_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h;
}

static int stacks_maps_known(uint64_t bias, uint64_t path_hash)
{
    for (size_t i = 0; i < stacks_maps_n; i++)
        if (stacks_maps[i].bias == bias && stacks_maps[i].path_hash == path_hash)
            return 1;
    return 0;
}

static void stacks_maps_keep(uint64_t bias, uint64_t path_hash, const void *record, uint32_t size)
{
    if (stacks_maps_n == stacks_maps_cap) {
        size_t cap = stacks_maps_cap ? 2 * stacks_maps_cap : 64;
        void *p = realloc(stacks_maps, cap * sizeof *stacks_maps);
        if (!p)
            return;
        stacks_maps = p;
        stacks_maps_cap = cap;
    }
    unsigned char *copy = malloc(size);
    if (!copy)
        return;
    memcpy(copy, record, size);
    stacks_maps[stacks_maps_n++] = (struct stacks_map_entry){bias, path_hash, 0, size, copy};
}

static void stacks_maps_build_id(const struct dl_phdr_info *info, struct prof_rec_map *rec)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
        const char *end = p + ph->p_memsz;
        while (p + sizeof(ElfW(Nhdr)) <= end) {
            const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
            const char *name = p + sizeof *n;
            const char *desc = name + ((n->n_namesz + 3u) & ~3u);
            const char *next = desc + ((n->n_descsz + 3u) & ~3u);
            if (next > end)
                break;
            if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && !memcmp(name, "GNU", 4) &&
                n->n_descsz <= sizeof rec->build_id) {
                memcpy(rec->build_id, desc, n->n_descsz);
                rec->build_id_len = (uint16_t)n->n_descsz;
                return;
            }
            p = next;
        }
    }
}

static int stacks_maps_one(struct dl_phdr_info *info, size_t info_size, void *arg)
{
    (void)info_size;
    (void)arg;
    char path[PATH_MAX];
    resolve_object_name(info->dlpi_name, path, sizeof path);
    if (!path[0]) { /* the main program */
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        path[n > 0 ? n : 0] = '\0';
    }
    uint64_t path_hash = stacks_maps_hash(path);
    if (stacks_maps_known(info->dlpi_addr, path_hash))
        return 0;
    struct prof_rec_map rec;
    memset(&rec, 0, sizeof rec);
    rec.h.type = PROF_REC_MAP;
    rec.bias = info->dlpi_addr;
    rec.start = UINT64_MAX;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (lo < rec.start)
            rec.start = lo;
        if (hi > rec.end)
            rec.end = hi;
    }
    if (rec.start == UINT64_MAX)
        rec.start = 0;
    stacks_maps_build_id(info, &rec);
    size_t len = strlen(path) + 1;
    uint32_t size = prof_record_align((uint32_t)(sizeof rec + len));
    if (size > PROF_RECORD_MAX)
        return 0;
    rec.h.size = (uint16_t)size;
    char buf[sizeof rec + PATH_MAX + 8];
    if (size > sizeof buf)
        return 0;
    memset(buf, 0, size);
    memcpy(buf, &rec, sizeof rec);
    memcpy(buf + sizeof rec, path, len);
    stacks_maps_keep(info->dlpi_addr, path_hash, buf, size);
    return 0;
}

static int stacks_maps_counters(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    unsigned long long *c = arg;
    c[0] = info->dlpi_adds;
    c[1] = info->dlpi_subs;
    return 1; /* the counters are the same in every entry */
}

/* Asks the loader for objects not seen yet (only when its counters moved), and remakes
 * the unwinder's table then, or when a dlclose left it to be checked page by page. */
static void stacks_maps_scan(void)
{
    unsigned long long c[2] = {0, 0};
    dl_iterate_phdr(stacks_maps_counters, c);
    if (c[0] == stacks_maps_adds && c[1] == stacks_maps_subs) {
        if (stacks_unwind_stale())
            stacks_unwind_refresh();
        return;
    }
    stacks_maps_adds = c[0];
    stacks_maps_subs = c[1];
    dl_iterate_phdr(stacks_maps_one, NULL);
    stacks_unwind_refresh();
}

/* The collector's source: the objects this file does not have yet. */
static void stacks_maps_drain(int fresh, int last)
{
    (void)last;
    if (fresh)
        for (size_t i = 0; i < stacks_maps_n; i++)
            stacks_maps[i].written = 0;
    /* The loader's lock and malloc are not for a signal's drain: what is known is written. */
    if (!stacks_maps_in_child && !collector_drain_in_signal())
        stacks_maps_scan();
    for (size_t i = 0; i < stacks_maps_n; i++)
        if (!stacks_maps[i].written) {
            collector_write(stacks_maps[i].record, stacks_maps[i].size);
            stacks_maps[i].written = 1;
        }
}

void stacks_maps_start(void)
{
    collector_add_source(stacks_maps_drain);
}

void stacks_maps_before_fork(void)
{
    stacks_maps_scan(); /* the child gets the list as it is now */
}

void stacks_maps_after_fork_child(void)
{
    stacks_maps_in_child = 1;
}
