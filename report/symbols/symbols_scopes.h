/* symbols_scopes: the function scopes (subprograms and inlined instances) of each DWARF
 * unit, indexed once per unit, so that finding the scopes around an address costs a
 * binary search and a walk up its few ancestors instead of a walk of the whole unit
 * (dwarf_getscopes), which made symbolizing big units (CPython's ceval.c) cost ms per
 * address. */
#ifndef REPORT_SYMBOLS_SCOPES_H
#define REPORT_SYMBOLS_SCOPES_H

#include <elfutils/libdw.h>
#include <stddef.h>

struct symbols_scopes;

struct symbols_scopes *symbols_scopes_new(void);
void symbols_scopes_free(struct symbols_scopes *sc);

/* The DIE offsets of the function scopes that contain pc (a unit-relative address, as
 * dwarf_getscopes takes it) in the unit cudie, innermost first, into out[0..max); the
 * last one is a subprogram, the others inlined instances. Returns how many. */
size_t symbols_scopes_at(struct symbols_scopes *sc, Dwarf_Die *cudie, Dwarf_Addr pc, Dwarf_Off *out,
                         size_t max);

#endif
