/* Texts the trace keeps (interned names, META values, notes) have a bounded length: a
 * longer one is kept as its first bytes and a marker that says it was cut and how long it
 * was, "…[truncated, 1048577 bytes]", never dropped or cut without a word. */
#ifndef PROF_TEXT_BOUND_H
#define PROF_TEXT_BOUND_H

#include <stddef.h>

#define TEXT_BOUND_KEEP 16384 /* bytes kept of a text that is cut */
/* The most bytes a bounded text takes, NUL included: two of them and a record's fixed
 * part fit in one record (PROF_RECORD_MAX). A text shorter than this is kept whole, so a
 * bounded text (the kept bytes and the marker) is never cut again. */
#define TEXT_BOUND_MAX (TEXT_BOUND_KEEP + 48)

/* The length of text once bounded, its NUL not counted. */
size_t text_bound_len(const char *text);
/* Writes text bounded, NUL-terminated, into out (text_bound_len(text) + 1 bytes): the text
 * itself when shorter than TEXT_BOUND_MAX bytes; else its first bytes, never ending inside
 * a UTF-8 character, then "…[truncated, N bytes]" (N: the whole text's length). Returns
 * the length written, its NUL not counted. */
size_t text_bound_copy(char *out, const char *text);

#endif
