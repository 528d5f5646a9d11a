/* Over-long texts kept as their first bytes and a marker (text_bound.h). */
#include "text_bound.h"

#include <stdio.h>
#include <string.h>

#include "trace_format.h"

_Static_assert(2 * TEXT_BOUND_MAX + 64 <= PROF_RECORD_MAX,
               "two bounded texts and a fixed part fit in one record");

#define TEXT_BOUND_MARKER "\u2026[truncated, %zu bytes]"

/* The bytes of text kept, and its whole length in *total. */
static size_t text_bound_keep(const char *text, size_t *total)
{
    size_t n = strnlen(text, TEXT_BOUND_MAX);
    if (n < TEXT_BOUND_MAX) {
        *total = n;
        return n;
    }
    *total = n + strlen(text + n);
    size_t keep = TEXT_BOUND_KEEP;
    /* text[keep] is the first byte left out: while it continues a UTF-8 character (10xxxxxx),
     * that character's lead byte is before it, so leave the whole character out. Three
     * steps at most: a longer run is not UTF-8, and is cut where it stands. */
    for (int i = 0; i < 3 && keep > 0 && ((unsigned char)text[keep] & 0xc0) == 0x80; i++)
        keep--;
    return keep;
}

size_t text_bound_len(const char *text)
{
    size_t total, keep = text_bound_keep(text, &total);
    if (keep == total)
        return total;
    return keep + (size_t)snprintf(NULL, 0, TEXT_BOUND_MARKER, total);
}

size_t text_bound_copy(char *out, const char *text)
{
    size_t total, keep = text_bound_keep(text, &total);
    memcpy(out, text, keep);
    if (keep == total) {
        out[keep] = '\0';
        return keep;
    }
    return keep + (size_t)snprintf(out + keep, TEXT_BOUND_MAX - keep, TEXT_BOUND_MARKER, total);
}
