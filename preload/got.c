/* See got.h. */
#define _GNU_SOURCE
#include "got.h"

#include <elf.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__x86_64__)

/* A dynamic-section address: glibc has relocated it in place on x86-64; not elsewhere. */
static uintptr_t got_ptr(const struct dl_phdr_info *info, ElfW(Addr) p)
{
    return p >= info->dlpi_addr ? (uintptr_t)p : (uintptr_t)p + info->dlpi_addr;
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

struct got_object {
    const struct dl_phdr_info *info;
    const ElfW(Sym) * symtab;
    const char *strtab;
    uintptr_t relro_start, relro_end;
};

static unsigned long got_relocs(const struct got_object *o, const ElfW(Rela) * r, size_t bytes,
                                got_entry_fn fn, void *arg)
{
    unsigned long written = 0;
    for (size_t i = 0; i < bytes / sizeof *r; i++) {
        unsigned long type = ELF64_R_TYPE(r[i].r_info);
        if (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT)
            continue;
        const ElfW(Sym) *sym = &o->symtab[ELF64_R_SYM(r[i].r_info)];
        if (!sym->st_name)
            continue;
        void **slot = (void **)(o->info->dlpi_addr + r[i].r_offset);
        void *cur = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
        void *value = fn(o->strtab + sym->st_name, cur, type == R_X86_64_JUMP_SLOT, o->info, arg);
        if (!value || value == cur)
            continue;
        got_write(slot, value, o->relro_start, o->relro_end);
        written++;
    }
    return written;
}

unsigned long got_rebind_object(const struct dl_phdr_info *info, got_entry_fn fn, void *arg)
{
    const ElfW(Dyn) *dyn = NULL;
    struct got_object o = {.info = info};
    long page = sysconf(_SC_PAGESIZE);
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_DYNAMIC)
            dyn = (const ElfW(Dyn) *)(info->dlpi_addr + ph->p_vaddr);
        else if (ph->p_type == PT_GNU_RELRO) {
            o.relro_start = info->dlpi_addr + ph->p_vaddr;
            o.relro_end = (o.relro_start + ph->p_memsz) & ~((uintptr_t)page - 1);
        }
    }
    if (!dyn)
        return 0;
    const ElfW(Rela) *jmprel = NULL, *rela = NULL;
    size_t jmpsz = 0, relasz = 0;
    long pltrel = DT_RELA;
    for (const ElfW(Dyn) *d = dyn; d->d_tag != DT_NULL; d++) {
        switch (d->d_tag) {
        case DT_SYMTAB:
            o.symtab = (const ElfW(Sym) *)got_ptr(info, d->d_un.d_ptr);
            break;
        case DT_STRTAB:
            o.strtab = (const char *)got_ptr(info, d->d_un.d_ptr);
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
    if (!o.symtab || !o.strtab)
        return 0;
    unsigned long written = 0;
    if (jmprel && pltrel == DT_RELA)
        written += got_relocs(&o, jmprel, jmpsz, fn, arg);
    if (rela)
        written += got_relocs(&o, rela, relasz, fn, arg);
    return written;
}

#else

unsigned long got_rebind_object(const struct dl_phdr_info *info, got_entry_fn fn, void *arg)
{
    (void)info;
    (void)fn;
    (void)arg;
    return 0;
}

#endif
