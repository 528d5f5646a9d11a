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

/* Copies the loader's name of an object seen in dl_iterate_phdr into buf ("" for the main
 * program). Every dl_iterate_phdr callback reads the name through this copy: the loader
 * wrote it under its own lock, which ThreadSanitizer cannot see, and TSan's
 * dl_iterate_phdr interceptor clears the name's characters of their history but not its
 * terminating NUL, so a strlen or strrchr of the name itself was reported as a race with
 * the dlopen of another thread that allocated it. */
void resolve_object_name(const char *dlpi_name, char *buf, unsigned long cap);

/* For the pass-through of a libc function we interpose that a sanitizer's runtime,
 * preloaded before us, calls as its "real" one before its own state exists (while it
 * starts, or in a new thread before registering it): not instrumented in a sanitized
 * build (ThreadSanitizer's __tsan_func_entry crashed in sigaction and
 * pthread_setspecific there). Such a function calls only functions marked alike until it
 * knows the call is the program's. */
#define PROF_UNINSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))

#endif
