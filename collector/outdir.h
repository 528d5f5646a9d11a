/* The output folder and the trace files in it, safe on a machine shared with other users:
 * the folder is made 0700 (0750 when shared with the group), must belong to the user
 * (a folder, or a symbolic link to one, owned by anyone else is refused), and each file is
 * created anew beside it: never through a symbolic link, never over an existing file. */
#ifndef PROF_OUTDIR_H
#define PROF_OUTDIR_H

#include <stddef.h>

/* 1: folders made 0750 and files 0640 (PROF_OUTPUT_SHARED); 0 (default): 0700 and 0600. */
void outdir_set_shared(int shared);
/* Makes dir and its missing parents and checks it. Returns an O_DIRECTORY fd to create
 * files in, or -1 with why in err. */
int outdir_open(const char *dir, char *err, size_t errlen);
/* Creates name (one path component) in the folder of dirfd for appending: O_EXCL and
 * O_NOFOLLOW. Returns the fd, or -1 with errno set (EEXIST when it exists, EINVAL for a
 * name that is not a plain file name). */
int outdir_create_file(int dirfd, const char *name);
/* Whether id can be part of a file name: 1..64 of [A-Za-z0-9._-], not starting with '.'. */
int outdir_valid_id(const char *id);

#endif
