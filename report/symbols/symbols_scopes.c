#include "symbols_scopes.h"

#include <dwarf.h>
#include <stdint.h>
#include <stdlib.h>

#include "alloc.h"
#include "hashmap.h"

/* A function scope of a unit: its DIE and the scope it sits in. */
#define SYMBOLS_SCOPE_RANGES 4

struct symbols_scope {
    Dwarf_Off die;
    int32_t parent; /* index in the unit's scopes, -1 at the top */
    int32_t depth;
    int nranges; /* its first SYMBOLS_SCOPE_RANGES ranges are kept here too */
    Dwarf_Addr lo[SYMBOLS_SCOPE_RANGES], hi[SYMBOLS_SCOPE_RANGES];
};

/* One address range of a scope. */
struct symbols_range {
    Dwarf_Addr lo, hi;
    int32_t scope;
    int32_t depth;
};

struct symbols_unit {
    const void *dwarf;
    Dwarf_Off offset;
    struct symbols_scope *scopes;
    size_t nscopes, cap_scopes;
    struct symbols_range *ranges; /* by lo, then depth: the deepest last among equals */
    size_t nranges, cap_ranges;
};

struct symbols_scopes {
    struct symbols_unit *units;
    size_t nunits, cap_units;
    struct u64map index; /* hash of (dwarf, unit offset) -> unit index + 1, probing on */
};

struct symbols_scopes *symbols_scopes_new(void)
{
    struct symbols_scopes *sc = calloc(1, sizeof *sc);
    if (!sc)
        report_oom();
    u64map_init(&sc->index);
    return sc;
}

void symbols_scopes_free(struct symbols_scopes *sc)
{
    if (!sc)
        return;
    for (size_t i = 0; i < sc->nunits; i++) {
        free(sc->units[i].scopes);
        free(sc->units[i].ranges);
    }
    free(sc->units);
    u64map_free(&sc->index);
    free(sc);
}

static void symbols_scopes_walk(struct symbols_unit *u, Dwarf_Die *die, int32_t parent,
                                int32_t depth)
{
    Dwarf_Die child;
    if (depth > 256 || dwarf_child(die, &child) != 0)
        return;
    do {
        int tag = dwarf_tag(&child);
        int32_t inner = parent;
        if (tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine) {
            Dwarf_Addr base, lo, hi;
            ptrdiff_t off = 0;
            int32_t me = -1;
            while ((off = dwarf_ranges(&child, off, &base, &lo, &hi)) > 0) {
                if (hi <= lo)
                    continue;
                if (me < 0) {
                    u->scopes =
                        report_grow(u->scopes, &u->cap_scopes, u->nscopes + 1, sizeof *u->scopes);
                    me = (int32_t)u->nscopes++;
                    u->scopes[me] = (struct symbols_scope){
                        .die = dwarf_dieoffset(&child), .parent = parent, .depth = depth};
                }
                struct symbols_scope *sp = &u->scopes[me];
                if (sp->nranges < SYMBOLS_SCOPE_RANGES) {
                    sp->lo[sp->nranges] = lo;
                    sp->hi[sp->nranges] = hi;
                }
                sp->nranges++;
                u->ranges =
                    report_grow(u->ranges, &u->cap_ranges, u->nranges + 1, sizeof *u->ranges);
                u->ranges[u->nranges++] = (struct symbols_range){lo, hi, me, depth};
            }
            if (me >= 0)
                inner = me;
        }
        symbols_scopes_walk(u, &child, inner, depth + 1);
    } while (dwarf_siblingof(&child, &child) == 0);
}

static int symbols_range_cmp(const void *a, const void *b)
{
    const struct symbols_range *x = a, *y = b;
    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return (x->depth > y->depth) - (x->depth < y->depth);
}

static struct symbols_unit *symbols_scopes_unit(struct symbols_scopes *sc, Dwarf_Die *cudie)
{
    const void *dwarf = dwarf_cu_getdwarf(cudie->cu);
    Dwarf_Off offset = dwarf_dieoffset(cudie);
    uint64_t h = ((uint64_t)(uintptr_t)dwarf * 0x9E3779B97F4A7C15ull) ^ (offset * 0xC2B2AE3Dull);
    for (;; h++) {
        uint64_t *slot = u64map_slot(&sc->index, h | 1);
        if (!slot)
            report_oom();
        if (*slot) {
            struct symbols_unit *u = &sc->units[*slot - 1];
            if (u->dwarf == dwarf && u->offset == offset)
                return u;
            continue;
        }
        sc->units = report_grow(sc->units, &sc->cap_units, sc->nunits + 1, sizeof *sc->units);
        struct symbols_unit *u = &sc->units[sc->nunits];
        *u = (struct symbols_unit){.dwarf = dwarf, .offset = offset};
        *slot = ++sc->nunits;
        symbols_scopes_walk(u, cudie, -1, 0);
        qsort(u->ranges, u->nranges, sizeof *u->ranges, symbols_range_cmp);
        return u;
    }
}

static int symbols_scope_has(const struct symbols_unit *u, int32_t scope, Dwarf_Addr pc)
{
    const struct symbols_scope *sp = &u->scopes[scope];
    for (int i = 0; i < sp->nranges && i < SYMBOLS_SCOPE_RANGES; i++)
        if (pc >= sp->lo[i] && pc < sp->hi[i])
            return 1;
    if (sp->nranges <= SYMBOLS_SCOPE_RANGES)
        return 0;
    for (size_t i = 0; i < u->nranges; i++) /* a scope in many pieces: rare */
        if (u->ranges[i].scope == scope && pc >= u->ranges[i].lo && pc < u->ranges[i].hi)
            return 1;
    return 0;
}

size_t symbols_scopes_at(struct symbols_scopes *sc, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Off *out,
                         size_t max)
{
    struct symbols_unit *u = symbols_scopes_unit(sc, cudie);
    /* The last range starting at or before pc. Ranges nest, so the innermost scope
     * around pc is that range's scope or one of its ancestors. */
    size_t lo = 0, hi = u->nranges;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (u->ranges[mid].lo <= pc)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return 0;
    const struct symbols_range *r = &u->ranges[lo - 1];
    int32_t scope = r->scope;
    if (!(pc >= r->lo && pc < r->hi)) {
        scope = u->scopes[scope].parent;
        while (scope >= 0 && !symbols_scope_has(u, scope, pc))
            scope = u->scopes[scope].parent;
    }
    size_t n = 0;
    for (; scope >= 0 && n < max; scope = u->scopes[scope].parent)
        out[n++] = u->scopes[scope].die;
    return n;
}
