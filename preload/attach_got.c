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
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

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

/* A dynamic-section address: glibc has relocated it in place on x86-64; not elsewhere. */
static uintptr_t got_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return p >= info->dlpi_addr ? (uintptr_t)p : (uintptr_t)p + info->dlpi_addr;
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

static void got_write(void **slot, void *value, uintptr_t relro_start, uintptr_t relro_end)
{
    uintptr_t a = (uintptr_t)slot;
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t first = a & ~((uintptr_t)page - 1);
    int ro = a >= relro_start && a < relro_end;
    if (ro && mprotect((void *)first, (size_t)page, PROT_READ | PROT_WRITE) != 0)
        return;
    __atomic_store_n(slot, value, __ATOMIC_RELEASE);
    if (ro)
        mprotect((void *)first, (size_t)page, PROT_READ);
}

static void got_relocs(const struct dl_phdr_info *info, struct got_pass *c, const ElfW(Rela) * r,
                       size_t bytes, const ElfW(Sym) * symtab, const char *strtab,
                       uintptr_t relro_start, uintptr_t relro_end)
{
    for (size_t i = 0; i < bytes / sizeof *r; i++) {
        unsigned long type = ELF64_R_TYPE(r[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const ElfW(Sym) *sym = &symtab[ELF64_R_SYM(r[i].r_info)];
        const char *name = strtab + sym->st_name;
        if (!sym->st_name || !got_wanted(name))
            continue;
        void *wrapper = dlsym(c->self, name);
        Dl_info w;
        if (!wrapper || !dladdr(wrapper, &w) || (uintptr_t)w.dli_fbase != c->self_base)
            continue; /* not ours */
        void **slot = (void **)(info->dlpi_addr + r[i].r_offset);
        void *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        if (cur == wrapper)
            continue;
        Dl_info d;
        int real = cur && dladdr(cur, &d) && d.dli_sname && strcmp(d.dli_sname, name) == 0 &&
                   (uintptr_t)d.dli_fbase != c->self_base;
        if (!real && !(type == R_X86_64_JUMP_SLOT && got_in_object(info, (uintptr_t)cur)))
            continue; /* bound to something else: left as it is */
        got_write(slot, wrapper, relro_start, relro_end);
        c->rebound++;
    }
}

static int got_visit(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct got_pass *c = arg;
    if (info->dlpi_addr == c->self_base)
        return 0;
    const ElfW(Dyn) *dyn = NULL;
    uintptr_t relro_start = 0, relro_end = 0;
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        else if (ph->p_type == PT_GNU_RELRO) {
            relro_start = info->dlpi_addr + ph->p_vaddr;
            relro_end = (relro_start + ph->p_memsz) & ~((uintptr_t)page - 1);
        }
    }
    if (!dyn)
        return 0;
    const ElfW(Sym) *symtab = NULL;
    const char *strtab = NULL;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmpsz = 0, relasz = 0;
    long pltrel = DT_RELA;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            symtab = (const ElfW(Sym) *)got_ptr(info, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            strtab = (const char *)got_ptr(info, d->d_un.d_ptr);
            break;
        case DT_JMPREL:
            jmprel = (const ElfW(Rela) *)got_ptr(info, d->d_un.d_ptr);
            break;
        case DT_PLTRELSZ:
            jmpsz = d->d_un.d_val;
            break;
        case DT_PLTREL:
            pltrel = (long)d->d_un.d_val;
            break;
        case DT_RELA:
            rela = (const ElfW(Rela) *)got_ptr(info, d->d_un.d_ptr);
            break;
        case DT_RELASZ:
            relasz = d->d_un.d_val;
            break;
        default:
            break;
        }
    }
    if (!symtab || !strtab)
        return 0;
    if (jmprel && pltrel == DT_RELA)
        got_relocs(info, c, jmprel, jmpsz, symtab, strtab, relro_start, relro_end);
    if (rela)
        got_relocs(info, c, rela, relasz, symtab, strtab, relro_start, relro_end);
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
