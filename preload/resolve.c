#define _GNU_SOURCE
#include "resolve.h"

#include <dlfcn.h>
#include <link.h>
#include <string.h>

static int resolve_is_ours(void *addr)
{
    Dl_info self, other;
    if (!dladdr((void *)resolve_self_path, &self) || !dladdr(addr, &other))
        return 0;
    return self.dli_fbase == other.dli_fbase;
}

const char *resolve_self_path(void)
{
    static char path[4096];
    if (!path[0]) {
        Dl_info info;
        if (dladdr((void *)resolve_self_path, &info) && info.dli_fname)
            strncpy(path, info.dli_fname, sizeof path - 1);
    }
    return path;
}

#define RESOLVE_MAX_CANDIDATES 8

struct resolve_candidates {
    const char *stem;
    int count;
    char paths[RESOLVE_MAX_CANDIDATES][512];
};

PROF_UNINSTRUMENTED void resolve_object_name(const char *dlpi_name, char *buf, unsigned long cap)
{
    unsigned long i = 0;
    for (; dlpi_name && i + 1 < cap && dlpi_name[i]; i++)
        buf[i] = dlpi_name[i];
    buf[i] = '\0';
}

static int resolve_visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct resolve_candidates *c = arg;
    char path[sizeof c->paths[0]];
    resolve_object_name(info->dlpi_name, path, sizeof path);
    if (!*path || c->count == RESOLVE_MAX_CANDIDATES)
        return 0;
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    if (strncmp(base, c->stem, strlen(c->stem)) == 0)
        memcpy(c->paths[c->count++], path, sizeof path);
    return 0;
}

void *resolve_symbol(const char *name, const char *lib_stem)
{
    void *sym = dlsym(RTLD_NEXT, name);
    if (sym && !resolve_is_ours(sym))
        return sym;
    /* Collect first, open after: no dlopen while dl_iterate_phdr holds the loader's lock. */
    struct resolve_candidates c;
    memset(&c, 0, sizeof c);
    c.stem = lib_stem;
    dl_iterate_phdr(resolve_visit, &c);
    for (int i = 0; i < c.count; i++) {
        /* RTLD_NOLOAD: a handle to what is already there, never a new load. */
        void *h = dlopen(c.paths[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        sym = dlsym(h, name);
        dlclose(h);
        if (sym && !resolve_is_ours(sym))
            return sym;
    }
    return NULL;
}
