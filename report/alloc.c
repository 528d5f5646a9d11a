#define _GNU_SOURCE
#include "alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
