/* Finding the real definition of a symbol we interpose. dlsym(RTLD_NEXT) misses
 * libraries that live in a local scope (what a Python extension pulls in, or any
 * dlopen(RTLD_LOCAL)), so we also walk the loaded objects whose file name starts with
 * the library's stem and ask each of them directly. */
#ifndef PROF_RESOLVE_H
#define PROF_RESOLVE_H

/* Returns the address of `name` outside libprof.so, or NULL. lib_stem: e.g. "libcudart". */
void *resolve_symbol(const char *name, const char *lib_stem);
/* The path of libprof.so itself. */
const char *resolve_self_path(void);

/* For the pass-through of a libc function we interpose that a sanitizer's runtime,
 * preloaded before us, calls as its "real" one before its own state exists (while it
 * starts, or in a new thread before registering it): not instrumented in a sanitized
 * build (ThreadSanitizer's __tsan_func_entry crashed in sigaction and
 * pthread_setspecific there). Such a function calls only functions marked alike until it
 * knows the call is the program's. */
#define PROF_UNINSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))

#endif
