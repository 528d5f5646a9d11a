/* This process's trace file: naming, the header, buffered appends. Used by the one
 * consumer that holds the collector's drain lock. */
#ifndef PROF_WRITER_H
#define PROF_WRITER_H

#include <stddef.h>
#include <stdint.h>

/* Creates dir (and parents) and a new file named
 * <run_id>_<host>_pid<pid>[_rank<rank>][_<n>].trace that overwrites nothing.
 * Returns 0, or -1 with a message in err. */
int writer_open(const char *dir, const char *run_id, const char *host, long rank, uint32_t features,
                char *err, size_t errlen);
int writer_is_open(void);
const char *writer_path(void);
void writer_append(const void *data, size_t len);
/* A record made of a fixed part and up to two NUL-terminated strings, padded to 8. */
void writer_append_record(uint16_t type, const void *fixed, size_t fixed_len, const char *text1,
                          const char *text2);
/* Writes the buffer out. Returns 0, or -1 (the file is then closed, errno kept). */
int writer_flush(void);
void writer_close(void);
/* After fork: forget the parent's file without writing its buffer. */
void writer_abandon(void);
/* Closes and removes the file: it holds nothing worth keeping. */
void writer_discard(void);
/* The errno of the write that failed and closed the file (0: none); *removed: the file
 * was left empty by it and removed. */
int writer_failure(int *removed);

#endif
