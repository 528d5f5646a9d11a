/* One object's symbol table, sorted by address, for the frames that DWARF does not name
 * (stripped objects: Debian's libtorch_cpu has only its dynamic symbols). libdwfl's
 * dwfl_module_addrname reads every symbol at each call: 0.5-0.9 ms an address among
 * libtorch_cpu's 35,000 (2026-12-01). This answers the same name in a binary search when a symbol
 * with a size holds the address, by libdwfl's own rules (globals first, then the closest
 * start, the binding, the size), or that it has none (code of hidden functions, padding),
 * and says when to ask libdwfl (an assembly label without a size may name it). */
#ifndef PROF_SYMBOLS_TABLE_H
#define PROF_SYMBOLS_TABLE_H

#include <elfutils/libdwfl.h>
#include <stdint.h>

struct symbols_table;

/* The module's table, built from libdwfl's symbols (names stay libdwfl's, valid until
 * dwfl_end); NULL when the module has none or is for a machine whose symbols may be
 * function descriptors (libdwfl tries two addresses there): libdwfl answers them all. */
struct symbols_table *symbols_table_new(Dwfl_Module *mod);
void symbols_table_free(struct symbols_table *t);

/* 1 with *name set: the name libdwfl's dwfl_module_addrname gives for address (module
 * addresses, the bias applied), NULL where it gives none; 0: ask libdwfl. */
int symbols_table_name(const struct symbols_table *t, uint64_t address, const char **name);

#endif
