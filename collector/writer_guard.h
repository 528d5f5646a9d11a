/* Keeps the trace file's writes from harming the program: they never land in a file of
 * the program's (it may close or dup2 over any descriptor, ours included), never exceed
 * its file size limit (which would kill it with SIGXFSZ), and a file that could not be
 * written is not left behind empty. Async-signal-safe: system calls only. */
#ifndef PROF_WRITER_GUARD_H
#define PROF_WRITER_GUARD_H

#include <stddef.h>
#include <sys/types.h>

/* Takes a freshly opened trace file descriptor: moves it far up and remembers which
 * file it is. Returns the descriptor to use from now on. */
int writer_guard_adopt(int fd);

/* Before a write of len bytes to *fd (the file at path): if the program closed or
 * replaced *fd, reopens the same file to append and stores the new descriptor in *fd
 * (never touching the old number, which is the program's now). Sets *size to the file's
 * size. Returns 0, or -1 with errno (EFBIG: the write would pass RLIMIT_FSIZE; ESTALE:
 * the file cannot be reopened or is not ours any more, *fd is then -1). */
int writer_guard_check(int *fd, const char *path, size_t len, off_t *size);

/* After a failed write that started at size: cuts the file back there (a record
 * boundary), and removes it if that leaves it empty. Returns whether it was removed. */
int writer_guard_cut(int fd, const char *path, off_t size);

/* Closes fd if it is still the trace file (else it is the program's: left alone). */
void writer_guard_close(int fd);

/* How many times the descriptor was reopened since the last call (for a note). */
int writer_guard_take_reopens(void);

#endif
