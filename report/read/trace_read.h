/* trace_read: open a profrun trace, validate its file header and stream its records.
 *
 * The reader keeps one buffer of at most a few MiB whatever the file size: a record is
 * valid only until the next call to trace_reader_next. A file that ends inside a record,
 * or whose size field is impossible, stops the iteration; trace_reader_warning then says
 * where, and the records before it stay good. */
#ifndef REPORT_TRACE_READ_H
#define REPORT_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>

#include "trace_format.h"

struct trace_reader;

struct trace_record {
    uint64_t offset; /* byte offset of the record in the file */
    uint16_t type;
    uint16_t size;
    const void *data; /* the whole record, header included; 8-byte aligned */
};

enum trace_read_stop {
    TRACE_STOP_NONE = 0,      /* still reading, or reached the end of the file cleanly */
    TRACE_STOP_TRUNCATED = 1, /* the file ends inside a record */
    TRACE_STOP_CORRUPT = 2,   /* a record's size field is impossible */
    TRACE_STOP_IO = 3         /* read() failed */
};

/* Opens path and checks its file header. On failure returns NULL and writes a one-line
 * message naming the file into err. */
struct trace_reader *trace_reader_open(const char *path, char *err, size_t errlen);
void trace_reader_close(struct trace_reader *r);

/* Whether path, met while scanning a folder, is no trace at all and is to be skipped
 * with a warning rather than failing the report: an empty file (a process that could
 * not write it), one cut off inside its file header, or one of another format. 1 with
 * the reason in why; 0 for anything trace_reader_open should judge (a real trace, a
 * newer version, an unreadable file). */
int trace_file_not_a_trace(const char *path, char *why, size_t whylen);

/* 1: *rec holds the next record; 0: no more records (see trace_reader_stop). */
int trace_reader_next(struct trace_reader *r, struct trace_record *rec);

const struct prof_file_header *trace_reader_header(const struct trace_reader *r);
const char *trace_reader_path(const struct trace_reader *r);
uint64_t trace_reader_count(const struct trace_reader *r); /* records returned so far */
enum trace_read_stop trace_reader_stop(const struct trace_reader *r);
/* The one-line warning for a stop other than NONE, or NULL. */
const char *trace_reader_warning(const struct trace_reader *r);

/* The smallest valid size of a record of this type (4 for types this reader does not
 * know): a record smaller than that is corrupt. */
uint16_t trace_record_min_size(uint16_t type);
/* "META", "API_CALL", ...; NULL for an unknown type. */
const char *trace_record_type_name(uint16_t type);

/* The NUL-terminated text that starts at byte off of rec (the payload of STRING, NOTE,
 * ...), bounded by the record: returns "" when off is past the end, and never reads
 * outside the record. *len gets the text's length when len is not NULL. */
const char *trace_record_text(const struct trace_record *rec, size_t off, size_t *len);

#endif
