/* out_file: every file profreport writes (exports, HTML, flame graphs, summaries) is made
 * new and whole. A temporary file with a random name is created beside the target with
 * O_CREAT|O_EXCL|O_NOFOLLOW — never through a link someone planted in a shared folder,
 * never truncating a file profreport did not make — written, then renamed over the
 * target (which replaces a link there instead of following it). A failed write removes
 * the temporary and leaves the target as it was. A target that is a device or a pipe
 * (/dev/stdout, /dev/null, a FIFO) is written straight, never replaced. */
#ifndef REPORT_OUT_FILE_H
#define REPORT_OUT_FILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

struct out_file {
    FILE *f;    /* write here */
    char *tmp;  /* the temporary's name; NULL: a device or pipe written straight */
    char *path; /* the target's */
};

/* Creates the temporary for path with mode (less the umask: 0666 for an export, 0600 for
 * what must stay private). 0, or -1 with "PATH: cannot create: why" in err. */
int out_file_create(struct out_file *o, const char *path, mode_t mode, char *err, size_t errlen);
/* Closes the file and, when ok and every write succeeded, renames it over the target;
 * otherwise removes it. 0, or -1 with "PATH: cannot write: why" in err (unless !ok: the
 * caller has said why). */
int out_file_commit(struct out_file *o, int ok, char *err, size_t errlen);

#endif
