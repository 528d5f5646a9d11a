#define _GNU_SOURCE
#include "alloc.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

void report_oom(void)
{
    fprintf(stderr, "profreport: out of memory\n");
    exit(1);
}

void *report_grow_raw(void *ptr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return ptr;
    size_t n = *cap ? *cap * 2 : 16;
    while (n < need)
        n *= 2;
    void *q = realloc(ptr, n * elem);
    if (!q)
        report_oom();
    *cap = n;
    return q;
}

void *report_grow(void *ptr, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap)
        return ptr;
    size_t old = *cap;
    void *q = report_grow_raw(ptr, cap, need, elem);
    memset((char *)q + old * elem, 0, (*cap - old) * elem); /* new slots start zeroed */
    return q;
}

/* Page faults were a third of the time to read a real rank's trace: its model touches
 * about 8,000 fresh pages (a 10 MB DDP rank), and a first touch costs 19 us on the VMs we
 * run on. With transparent huge pages the kernel maps 2 MB at a fault, but only in memory
 * advised for them (the "madvise" setting, Debian's default), and the heap grows by brk,
 * whose new memory is never advised. So the heap is taken ahead in blocks under the mmap
 * threshold (they come from the heap), advised and freed: the model's arrays are carved
 * from it after. A model of a real rank peaks at about 4 times its trace's bytes;
 * untouched memory costs nothing. Where the kernel has no huge pages the advice fails and
 * nothing changes.
 *
 * The heap keeps what is freed: by default glibc maps large blocks (a process's nodes, ops,
 * sort buffers) apart and trims the heap's free top, so freed memory went back to the
 * kernel and came back as fresh pages for the next trace (a worker summarizing 8 copies of
 * a real DDP rank took 1.6 CPU-s, 0.64 with this). Blocks over 32 MB are still mapped
 * apart. */
void report_heap_for_trace(long long trace_bytes)
{
    /* Blocks under the mmap threshold, all of them under the trim threshold (1 GB). */
    enum { BLOCK = 30 << 20, MAX_BLOCKS = 32 };
    static long long advised; /* bytes advised so far: the most any trace asked */
    if (advised == 0) {
        mallopt(M_MMAP_THRESHOLD, 32 << 20);
        mallopt(M_TRIM_THRESHOLD, 1 << 30);
    }
    if (trace_bytes <= 0 || 4 * trace_bytes <= advised)
        return;
    size_t want = (size_t)((4 * trace_bytes + BLOCK - 1) / BLOCK);
    void *blocks[MAX_BLOCKS];
    size_t got = 0;
    while (got < want && got < MAX_BLOCKS && (blocks[got] = malloc(BLOCK)) != NULL)
        got++;
    const uintptr_t huge = 2 << 20;
    for (size_t i = 0; i < got; i++) {
        uintptr_t start = ((uintptr_t)blocks[i] + huge - 1) & ~(huge - 1);
        uintptr_t end = ((uintptr_t)blocks[i] + BLOCK) & ~(huge - 1);
        (void)madvise((void *)start, end - start, MADV_HUGEPAGE);
    }
    while (got)
        free(blocks[--got]);
    advised = 4 * trace_bytes;
}

char *report_strdup(const char *s)
{
    char *d = strdup(s ? s : "");
    if (!d)
        report_oom();
    return d;
}

char *report_asprintf(const char *fmt, ...)
{
    char *s;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        report_oom();
    return s;
}
