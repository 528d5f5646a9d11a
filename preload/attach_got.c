/* profrun attach: the program's calls into the libraries whose calls we wrap (CUDA
 * runtime, cuBLAS, cuDNN, NCCL, MPI) go through GOT entries that the loader bound to the
 * real functions before libprof.so was there. Each such entry, in every object loaded at
 * attach but libprof.so itself, is pointed at our wrapper, as LD_PRELOAD would have bound
 * it: a relocation (JUMP_SLOT or GLOB_DAT) whose symbol libprof.so defines, whose entry
 * holds the function of that name (or the object's own lazy-binding stub). A GOT in the
 * read-only part after relocation (RELRO) is made writable for the write and read-only
 * again. Entries are pointer-sized and aligned: a thread calling through one meanwhile
 * takes the real function or the wrapper, either whole. Done from the library's
 * constructor, which the loader runs holding its lock: no other thread is relocating an
 * object meanwhile (an entry half relocated, a RELRO page not yet read-only), and every
 * object listed is relocated and protected. Libraries loaded after attach keep their own
 * bindings. */
#define _GNU_SOURCE
#include "attach.h"

#include <dlfcn.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "got.h"
#include "resolve.h"

static const char *const got_prefixes[] = {"cuda", "__cuda", "cublas", "cudnn", "nccl", "MPI_"};

struct got_pass {
    void *self;            /* dlopen handle of libprof.so */
    uintptr_t self_base;   /* its load address */
    unsigned long rebound; /* entries pointed at our wrappers */
};

static int got_wanted(const char *name)
{
    for (size_t i = 0; i < sizeof got_prefixes / sizeof *got_prefixes; i++)
        if (strncmp(name, got_prefixes[i], strlen(got_prefixes[i])) == 0)
            return 1;
    return 0;
}

static int got_in_object(const struct dl_phdr_info *info, uintptr_t a)
{
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t start = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && a >= start && a < start + ph->p_memsz)
            return 1;
    }
    return 0;
}

/* Our wrapper for the entry of a function we wrap, bound to that function or still to
 * the object's lazy-binding stub; NULL for any other entry, left as it is. */
static void *got_entry(const char *name, void *cur, int jump_slot, const struct dl_phdr_info *info,
                       void *arg)
{
    struct got_pass *c = arg;
    if (!got_wanted(name))
        return NULL;
    void *wrapper = dlsym(c->self, name);
    Dl_info w;
    if (!wrapper || !dladdr(wrapper, &w) || (uintptr_t)w.dli_fbase != c->self_base)
        return NULL; /* not ours */
    if (cur == wrapper)
        return NULL;
    Dl_info d;
    int real = cur && dladdr(cur, &d) && d.dli_sname && strcmp(d.dli_sname, name) == 0 &&
               (uintptr_t)d.dli_fbase != c->self_base;
    if (!real && !(jump_slot && got_in_object(info, (uintptr_t)cur)))
        return NULL; /* bound to something else */
    return wrapper;
}

static int got_visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct got_pass *c = arg;
    if (info->dlpi_addr != c->self_base)
        c->rebound += got_rebind_object(info, got_entry, c);
    return 0;
}

static unsigned long got_rebound;

void attach_got_rebind(void)
{
#if defined(__x86_64__)
    Dl_info me;
    if (!dladdr((void *)attach_got_rebind, &me))
        return;
    struct got_pass c = {.self = dlopen(resolve_self_path(), RTLD_LAZY | RTLD_NOLOAD),
                         .self_base = (uintptr_t)me.dli_fbase};
    if (!c.self)
        return;
    dl_iterate_phdr(got_visit, &c);
    dlclose(c.self);
    got_rebound = c.rebound;
#endif
}

unsigned long attach_got_rebound(void)
{
    return got_rebound;
}
