#include "symbols_table.h"

#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "sort_keys.h"

/* A symbol with a size. */
struct symbols_sym {
    uint64_t start, size;
    uint64_t reach; /* the highest end of this symbol and of every one sorted before it */
    const char *name;
    uint32_t index; /* libdwfl's order, which breaks its ties */
    uint8_t bind;   /* libdwfl's preference: global 3, weak 2, local 1, other 0 */
};

struct symbols_part {
    struct symbols_sym *s;
    size_t n, cap;
};

struct symbols_table {
    /* libdwfl searches the global part of the table first ([0]: from its first global
     * symbol on) and the locals ([1]) only when no global holds the address */
    struct symbols_part part[2];
    /* the symbols without a size (assembly labels): their addresses, sorted; [0] the
     * global part's, [1] every one */
    struct symbols_labels {
        uint64_t *at;
        size_t n, cap;
    } labels[2];
};

static uint8_t symbols_bind(const GElf_Sym *sym)
{
    switch (GELF_ST_BIND(sym->st_info)) {
    case STB_GLOBAL:
        return 3;
    case STB_WEAK:
        return 2;
    case STB_LOCAL:
        return 1;
    default:
        return 0;
    }
}

static int symbols_sym_order(const void *a, const void *b)
{
    const struct symbols_sym *x = a, *y = b;
    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->index < y->index ? -1 : x->index > y->index;
}

void symbols_table_free(struct symbols_table *t)
{
    if (!t)
        return;
    free(t->part[0].s);
    free(t->part[1].s);
    free(t->labels[0].at);
    free(t->labels[1].at);
    free(t);
}

struct symbols_table *symbols_table_new(Dwfl_Module *mod)
{
    /* Where a symbol's value may be a function descriptor (ppc64), libdwfl tries the
     * resolved address too: only machines without them get a table. */
    Dwarf_Addr main_bias;
    Elf *main_elf = dwfl_module_getelf(mod, &main_bias);
    GElf_Ehdr ehdr;
    if (!main_elf || !gelf_getehdr(main_elf, &ehdr) ||
        (ehdr.e_machine != EM_X86_64 && ehdr.e_machine != EM_AARCH64 && ehdr.e_machine != EM_386))
        return NULL;
    int n = dwfl_module_getsymtab(mod);
    int first_global = dwfl_module_getsymtab_first_global(mod);
    if (n <= 1 || first_global < 0)
        return NULL;
    struct symbols_table *t = calloc(1, sizeof *t);
    if (!t)
        report_oom();
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr value;
        GElf_Word shndx;
        const char *name = dwfl_module_getsym_info(mod, i, &sym, &value, &shndx, NULL, NULL);
        /* the symbols libdwfl's search considers */
        if (!name || !name[0] || sym.st_shndx == SHN_UNDEF ||
            GELF_ST_TYPE(sym.st_info) == STT_SECTION || GELF_ST_TYPE(sym.st_info) == STT_FILE ||
            GELF_ST_TYPE(sym.st_info) == STT_TLS)
            continue;
        int global = first_global <= 1 || i >= first_global;
        if (!sym.st_size) {
            for (int k = global ? 0 : 1; k < 2; k++) {
                struct symbols_labels *l = &t->labels[k];
                l->at = report_grow(l->at, &l->cap, l->n + 1, sizeof *l->at);
                l->at[l->n++] = value;
            }
            continue;
        }
        struct symbols_part *p = &t->part[global ? 0 : 1];
        p->s = report_grow(p->s, &p->cap, p->n + 1, sizeof *p->s);
        p->s[p->n++] =
            (struct symbols_sym){value, sym.st_size, 0, name, (uint32_t)i, symbols_bind(&sym)};
    }
    for (int k = 0; k < 2; k++) {
        struct symbols_part *p = &t->part[k];
        if (p->n)
            qsort(p->s, p->n, sizeof *p->s, symbols_sym_order);
        uint64_t reach = 0;
        for (size_t i = 0; i < p->n; i++) {
            uint64_t end = p->s[i].start + p->s[i].size;
            if (end < p->s[i].start)
                end = UINT64_MAX;
            reach = end > reach ? end : reach;
            p->s[i].reach = reach;
        }
    }
    for (int k = 0; k < 2; k++)
        if (t->labels[k].n)
            qsort(t->labels[k].at, t->labels[k].n, sizeof *t->labels[k].at, sort_u64_cmp);
    return t;
}

#define SYMBOLS_HOLDERS 64

/* How many of the sorted values are at or below address. */
static size_t symbols_at_or_below(const uint64_t *at, size_t n, uint64_t address)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (at[mid] <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* libdwfl's choice among the part's symbols with a size that hold address: taken in its
 * order, a symbol replaces the one kept when it starts later or binds better, or, at the
 * same start, is shorter and binds as well, or as long and binds better. 1: *name set;
 * 0: none holds it (*reach: the highest end of the part's symbols starting at or below
 * address, 0 if none); -1: too many to say (libdwfl answers). */
static int symbols_part_name(const struct symbols_part *p, uint64_t address, const char **name,
                             uint64_t *reach)
{
    size_t lo = 0, hi = p->n;
    while (lo < hi) { /* the first symbol starting after address */
        size_t mid = lo + (hi - lo) / 2;
        if (p->s[mid].start <= address)
            lo = mid + 1;
        else
            hi = mid;
    }
    *reach = lo ? p->s[lo - 1].reach : 0;
    const struct symbols_sym *holders[SYMBOLS_HOLDERS];
    size_t n = 0;
    for (size_t i = lo; i-- > 0 && p->s[i].reach > address;) {
        if (address - p->s[i].start >= p->s[i].size)
            continue;
        if (n == SYMBOLS_HOLDERS)
            return -1;
        holders[n++] = &p->s[i];
    }
    if (!n)
        return 0;
    for (size_t i = 1; i < n; i++) /* into libdwfl's order: a few, mostly one */
        for (size_t j = i; j > 0 && holders[j - 1]->index > holders[j]->index; j--) {
            const struct symbols_sym *x = holders[j];
            holders[j] = holders[j - 1];
            holders[j - 1] = x;
        }
    const struct symbols_sym *best = holders[0];
    for (size_t i = 1; i < n; i++) {
        const struct symbols_sym *s = holders[i];
        if (best->start < s->start || best->bind < s->bind ||
            (best->start == s->start && ((best->size > s->size && best->bind <= s->bind) ||
                                         (best->size >= s->size && best->bind < s->bind))))
            best = s;
    }
    *name = best->name;
    return 1;
}

int symbols_table_name(const struct symbols_table *t, uint64_t address, const char **name)
{
    /* (the last address: a symbol whose end wraps holds it, which the reaches, capped
     * at UINT64_MAX, cannot say; no code is there) */
    if (!t || address == UINT64_MAX)
        return 0;
    uint64_t reach, local_reach;
    int r = symbols_part_name(&t->part[0], address, name, &reach);
    if (r)
        return r > 0;
    /* No global holds it. libdwfl then reads the locals, unless a global label sits at
     * the address itself (which it may answer): ask libdwfl then. */
    const struct symbols_labels *g = &t->labels[0], *all = &t->labels[1];
    size_t k = symbols_at_or_below(g->at, g->n, address);
    if (k && g->at[k - 1] == address)
        return 0;
    r = symbols_part_name(&t->part[1], address, name, &local_reach);
    if (r)
        return r > 0;
    /* None holds it. libdwfl falls back to a label at or below it, taken only when no
     * symbol it read starting at or below the address ends above that label (it read
     * both parts: no global label sits at the address): none when every such label lies
     * below such an end. Else libdwfl answers (the label's section is its to check). */
    if (local_reach > reach)
        reach = local_reach;
    k = symbols_at_or_below(all->at, all->n, address);
    if (k && all->at[k - 1] >= reach)
        return 0;
    *name = NULL;
    return 1;
}
