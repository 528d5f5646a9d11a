/* Allocation for profreport: out of memory ends the program with one line. */
#ifndef REPORT_ALLOC_H
#define REPORT_ALLOC_H

#include <stddef.h>

void report_oom(void) __attribute__((noreturn));
/* Grows ptr (cap elements of elem bytes) to hold need, doubling. */
void *report_grow(void *ptr, size_t *cap, size_t need, size_t elem);
/* The same, the new slots not zeroed: for an array whose slots are written whole as they
 * are taken (zeroing a read's largest arrays was a tenth of --summarize's time). */
void *report_grow_raw(void *ptr, size_t *cap, size_t need, size_t elem);
/* Readies the heap for reading a trace of trace_bytes: freed memory stays for the next
 * trace, and about 4 times the bytes are advised for huge pages (alloc.c says why). */
void report_heap_for_trace(long long trace_bytes);
/* A copy of s ("" for NULL). */
char *report_strdup(const char *s);
/* The formatted text in a buffer of its own length: names from traces are never cut. */
char *report_asprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
