/* symbols: stack addresses of one process -> function, source file and line, inlined
 * frames included, with elfutils' libdwfl, offline: the objects are the ones the MAP
 * records name, opened from disk (or found by build id under the debug directories).
 * An object that is gone, or whose build id differs from the one recorded (rebuilt since
 * the run), is not trusted: its frames are named by path and offset, and the report says
 * why once per object. */
#ifndef REPORT_SYMBOLS_H
#define REPORT_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct model_process;
struct symbols;

/* One frame as printed. Strings belong to the symbols object. */
struct symbols_frame {
    const char *function; /* demangled; NULL when unknown */
    const char *file;     /* source file, or NULL */
    int line;             /* 0 when unknown */
    const char *object;   /* the object's path, or NULL when no MAP covers the address */
    uint64_t offset;      /* address - load bias */
    int inlined;          /* 1: inlined into the next frame out */
    int profiler;         /* 1: inside libprof.so (the capture itself) */
};

/* debug_dirs: extra ':'-separated directories searched for separate debug info (as
 * /usr/lib/debug, also by .build-id), or NULL. sysroot: a folder that holds the job's
 * objects under their paths (looked in first), or NULL. */
struct symbols *symbols_open(const struct model_process *p, const char *debug_dirs,
                             const char *sysroot);
void symbols_close(struct symbols *s);

/* The frames of one captured address (several when inlined functions sit there),
 * innermost first, into out[0..max); returns how many. return_address: the address is
 * one a call returns to (the line of the call is wanted, so address - 1 is looked up). */
size_t symbols_resolve(struct symbols *s, uint64_t address, int return_address,
                       struct symbols_frame *out, size_t max);

/* Why objects could not be used ("path: rebuilt since the run (build id differs)"), one
 * line each, for the report's warnings; NULL-terminated, owned by s. */
const char *const *symbols_notes(const struct symbols *s);

#endif
