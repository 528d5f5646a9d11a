/* got: the GOT entries of one loaded object, by symbol name (x86-64, RELA relocations).
 * attach points the program's entries at our wrappers with it (attach_got.c), the sampler
 * points libunwind's signal-mask calls at its own (stacks_unwind.c). */
#ifndef PROF_GOT_H
#define PROF_GOT_H

#include <link.h>

/* What to write into one entry: NULL leaves it. name: its symbol; cur: what it holds;
 * jump_slot: a PLT entry (else GLOB_DAT). */
typedef void *(*got_entry_fn)(const char *name, void *cur, int jump_slot,
                              const struct dl_phdr_info *info, void *arg);

/* Offers every JUMP_SLOT and GLOB_DAT entry with a named symbol of the object info
 * describes to fn, and writes fn's value into it (an entry in the read-only part after
 * relocation, RELRO, is made writable for the write and read-only again). Entries are
 * pointer-sized and aligned: a thread calling through one meanwhile takes the old
 * function or the new, either whole. Returns the entries written; 0 on other machines. */
unsigned long got_rebind_object(const struct dl_phdr_info *info, got_entry_fn fn, void *arg);

#endif
