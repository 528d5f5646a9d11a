#include "symbols.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "alloc.h"
#include "hashmap.h"
#include "model.h"
#include "model_stacks.h"
#include "symbols_scopes.h"
#include "symbols_table.h"

struct symbols_object {
    const struct model_map *map;
    Dwfl_Module *mod; /* NULL: not usable (no file, or not the file of the run) */
    int profiler;
    int table_made;              /* table: made at the first frame DWARF does not name */
    struct symbols_table *table; /* NULL: libdwfl names them all */
};

/* The frames of one resolved address: frames[first .. first + n). */
struct symbols_entry {
    size_t first, n;
};

struct symbols {
    Dwfl *dwfl;
    char *debuginfo_path;
    Dwfl_Callbacks callbacks;
    struct symbols_scopes *scopes;
    struct symbols_object *objects;
    size_t nobjects;
    struct u64map cache; /* address << 1 | return_address -> entry index + 1 */
    struct symbols_entry *entries;
    size_t nentries, cap_entries;
    struct symbols_frame *frames;
    size_t nframes, cap_frames;
    char **strings; /* every string the frames point at */
    size_t nstrings, cap_strings;
    char **notes; /* NULL-terminated */
    size_t nnotes;
};

static const char *symbols_keep(struct symbols *s, char *text)
{
    if (!text)
        return NULL;
    s->strings = report_grow(s->strings, &s->cap_strings, s->nstrings + 1, sizeof *s->strings);
    s->strings[s->nstrings++] = text;
    return text;
}

static void symbols_note(struct symbols *s, const char *path, const char *why)
{
    size_t cap = s->nnotes + 1; /* a handful: grows one at a time */
    s->notes = report_grow(s->notes, &cap, s->nnotes + 2, sizeof *s->notes);
    size_t len = strlen(path) + strlen(why) + 3;
    char *line = malloc(len);
    if (!line)
        report_oom();
    snprintf(line, len, "%s: %s", path, why);
    s->notes[s->nnotes++] = line;
    s->notes[s->nnotes] = NULL;
}

static int symbols_is_profiler(const char *path)
{
    const char *base = strrchr(path, '/');
    return !strcmp(base ? base + 1 : path, "libprof.so");
}

/* Reports the object to libdwfl and checks that the file on disk is the one the process
 * had loaded. */
static void symbols_add_object(struct symbols *s, const struct model_map *m, const char *sysroot)
{
    struct symbols_object *o = &s->objects[s->nobjects++];
    o->map = m;
    o->mod = NULL;
    o->profiler = symbols_is_profiler(m->path);
    if (m->path[0] != '/' || o->profiler)
        return; /* the vDSO, or our own frames (dropped anyway) */
    /* With a sysroot, the object is looked for under it first (a report made on another
     * machine that holds a copy of the job's files). */
    char rooted[8192];
    const char *file = m->path;
    if (sysroot && *sysroot) {
        snprintf(rooted, sizeof rooted, "%s%s", sysroot, m->path);
        if (access(rooted, R_OK) == 0)
            file = rooted;
    }
    /* The path comes from the trace: only a regular file is opened (a FIFO would block). */
    struct stat st;
    if (stat(file, &st) != 0 || access(file, R_OK) != 0) {
        symbols_note(s, m->path, "not found on this machine; its frames are shown as path+offset");
        return;
    }
    if (!S_ISREG(st.st_mode)) {
        symbols_note(s, m->path, "not a regular file; its frames are shown as path+offset");
        return;
    }
    Dwfl_Module *mod = dwfl_report_elf(s->dwfl, m->path, file, -1, m->bias, true);
    if (!mod) {
        symbols_note(s, m->path, "not readable as ELF; its frames are shown as path+offset");
        return;
    }
    const unsigned char *bits;
    GElf_Addr vaddr;
    int len = dwfl_module_build_id(mod, &bits, &vaddr);
    if (m->build_id_len &&
        (len != (int)m->build_id_len || memcmp(bits, m->build_id, m->build_id_len) != 0)) {
        symbols_note(s, m->path,
                     "rebuilt since the run (build id differs); its frames are "
                     "shown as path+offset");
        return;
    }
    o->mod = mod;
}

struct symbols *symbols_open(const struct model_process *p, const char *debug_dirs,
                             const char *sysroot)
{
    struct symbols *s = calloc(1, sizeof *s);
    if (!s)
        report_oom();
    u64map_init(&s->cache);
    s->scopes = symbols_scopes_new();
    const char *std = "-:.debug:/usr/lib/debug";
    size_t len = strlen(std) + (debug_dirs ? strlen(debug_dirs) + 1 : 0) + 1;
    s->debuginfo_path = malloc(len);
    if (!s->debuginfo_path)
        report_oom();
    snprintf(s->debuginfo_path, len, "%s%s%s", std, debug_dirs ? ":" : "",
             debug_dirs ? debug_dirs : "");
    s->callbacks.find_elf = dwfl_build_id_find_elf;
    s->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
    s->callbacks.section_address = dwfl_offline_section_address;
    s->callbacks.debuginfo_path = &s->debuginfo_path;
    s->dwfl = dwfl_begin(&s->callbacks);
    const struct model_stacks *st = p->stacks;
    size_t n = st ? st->nmaps : 0;
    s->objects = calloc(n ? n : 1, sizeof *s->objects);
    if (!s->objects)
        report_oom();
    if (s->dwfl) {
        dwfl_report_begin(s->dwfl);
        for (size_t i = 0; i < n; i++)
            symbols_add_object(s, &st->maps[i], sysroot);
        dwfl_report_end(s->dwfl, NULL, NULL);
    }
    return s;
}

void symbols_close(struct symbols *s)
{
    if (!s)
        return;
    if (s->dwfl)
        dwfl_end(s->dwfl);
    symbols_scopes_free(s->scopes);
    for (size_t i = 0; i < s->nobjects; i++)
        symbols_table_free(s->objects[i].table);
    for (size_t i = 0; i < s->nstrings; i++)
        free(s->strings[i]);
    for (size_t i = 0; i < s->nnotes; i++)
        free(s->notes[i]);
    free(s->strings);
    free(s->notes);
    free(s->frames);
    free(s->entries);
    free(s->objects);
    free(s->debuginfo_path);
    u64map_free(&s->cache);
    free(s);
}

const char *const *symbols_notes(const struct symbols *s)
{
    static const char *const none[] = {NULL};
    return s->notes ? (const char *const *)s->notes : none;
}

static struct symbols_object *symbols_object_of(const struct symbols *s, uint64_t address)
{
    for (size_t i = 0; i < s->nobjects; i++) {
        const struct model_map *m = s->objects[i].map;
        if (address >= m->start && address < m->end)
            return &s->objects[i];
    }
    return NULL;
}

static void symbols_push(struct symbols *s, struct symbols_frame f)
{
    s->frames = report_grow(s->frames, &s->cap_frames, s->nframes + 1, sizeof *s->frames);
    s->frames[s->nframes++] = f;
}

/* A DIE's function name: the linkage name demangled (C++), else its name; through the
 * abstract origin of an inlined or out-of-line instance. */
static char *symbols_die_name(Dwarf_Die *die)
{
    Dwarf_Attribute attr;
    const char *linkage = NULL;
    if (dwarf_attr_integrate(die, DW_AT_linkage_name, &attr) ||
        dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr))
        linkage = dwarf_formstring(&attr);
    if (linkage)
        return model_demangle(linkage);
    const char *name =
        dwarf_attr_integrate(die, DW_AT_name, &attr) ? dwarf_formstring(&attr) : NULL;
    return name ? report_strdup(name) : NULL;
}

/* The call site of an inlined instance: the file and line its caller called it from. */
static void symbols_call_site(Dwarf_Die *cudie, Dwarf_Die *inlined, const char **file, int *line)
{
    Dwarf_Attribute attr;
    Dwarf_Word v;
    *file = NULL;
    *line = 0;
    if (dwarf_attr(inlined, DW_AT_call_line, &attr) && dwarf_formudata(&attr, &v) == 0)
        *line = (int)v;
    Dwarf_Files *files;
    size_t nfiles;
    if (dwarf_attr(inlined, DW_AT_call_file, &attr) && dwarf_formudata(&attr, &v) == 0 &&
        dwarf_getsrcfiles(cudie, &files, &nfiles) == 0 && v < nfiles)
        *file = dwarf_filesrc(files, v, NULL, NULL);
}

static void symbols_lookup(struct symbols *s, uint64_t address, int return_address)
{
    struct symbols_object *o = symbols_object_of(s, address);
    struct symbols_frame base = {.offset = o ? address - o->map->bias : address,
                                 .object = o ? o->map->path : NULL,
                                 .profiler = o ? o->profiler : 0};
    if (!o || !o->mod) {
        symbols_push(s, base);
        return;
    }
    Dwarf_Addr pc = return_address ? address - 1 : address;
    const char *file = NULL;
    int line = 0;
    Dwfl_Line *l = dwfl_module_getsrc(o->mod, pc);
    if (l)
        file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
    Dwarf_Addr bias = 0;
    Dwarf_Die *cudie = dwfl_module_addrdie(o->mod, pc, &bias);
    Dwarf_Off offsets[64];
    size_t nscopes = cudie ? symbols_scopes_at(s->scopes, cudie, pc - bias, offsets, 64) : 0;
    Dwarf *dwarf = cudie ? dwarf_cu_getdwarf(cudie->cu) : NULL;
    size_t pushed = 0;
    for (size_t i = 0; i < nscopes; i++) {
        Dwarf_Die die;
        if (!dwarf_offdie(dwarf, offsets[i], &die))
            break;
        int tag = dwarf_tag(&die);
        struct symbols_frame f = base;
        f.function = symbols_keep(s, symbols_die_name(&die));
        f.file = file; /* libdw's, valid until symbols_close */
        f.line = line;
        f.inlined = tag == DW_TAG_inlined_subroutine;
        symbols_push(s, f);
        pushed++;
        if (tag != DW_TAG_inlined_subroutine)
            break;
        /* The next frame out is the function this instance was inlined into, at the
         * line that called it. */
        symbols_call_site(cudie, &die, &file, &line);
    }
    if (pushed)
        return;
    /* No DWARF here: the symbol table's name, if any (a stripped object has only its
     * exported symbols), with the line table's answer if one exists. */
    if (!o->table_made) {
        o->table = symbols_table_new(o->mod);
        o->table_made = 1;
    }
    const char *name;
    if (!symbols_table_name(o->table, pc, &name))
        name = dwfl_module_addrname(o->mod, pc);
    struct symbols_frame f = base;
    f.function = name ? symbols_keep(s, model_demangle(name)) : NULL;
    f.file = file; /* libdw's, valid until symbols_close */
    f.line = line;
    symbols_push(s, f);
}

size_t symbols_resolve(struct symbols *s, uint64_t address, int return_address,
                       struct symbols_frame *out, size_t max)
{
    uint64_t key = address << 1 | (return_address ? 1 : 0);
    uint64_t *slot = u64map_slot(&s->cache, key);
    if (!slot)
        return 0;
    if (!*slot) {
        size_t first = s->nframes;
        symbols_lookup(s, address, return_address);
        s->entries = report_grow(s->entries, &s->cap_entries, s->nentries + 1, sizeof *s->entries);
        s->entries[s->nentries] = (struct symbols_entry){first, s->nframes - first};
        *slot = ++s->nentries;
    }
    const struct symbols_entry *e = &s->entries[*slot - 1];
    size_t n = e->n < max ? e->n : max;
    memcpy(out, &s->frames[e->first], n * sizeof *out);
    return n;
}
