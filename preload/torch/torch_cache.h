/* The folder the PyTorch bridge is built into and loaded from. Loading a library runs its
 * code, so the folder must be the user's alone: it and every folder above it belong to the
 * user or root, none of them writable by anyone else (an ancestor may be sticky, as /tmp);
 * folders made for it are 0700, files 0600, never created through a link. There is no
 * shared fallback: $PROF_TORCH_CACHE, $XDG_CACHE_HOME/profrun, $HOME/.cache/profrun, or
 * .cache/profrun in the home folder of the user's passwd entry; else no bridge. */
#ifndef PROF_TORCH_CACHE_H
#define PROF_TORCH_CACHE_H

#include <stddef.h>

/* Finds, makes and checks the cache folder. Returns an O_DIRECTORY fd and the folder's
 * path (symbolic links resolved) in path, or -1 with why in err. */
int torch_cache_open(char *path, size_t path_len, char *err, size_t err_len);
/* Whether name in the checked folder is a regular file (not a link) of the user's that
 * no one else can write: 1 yes, 0 absent, -1 present but not trustworthy (why in err). */
int torch_cache_trusted_file(int dirfd, const char *dir, const char *name, char *err,
                             size_t err_len);
/* Makes a fresh 0700 folder name inside the checked folder. 0 or -1 (errno). */
int torch_cache_mkdir(int dirfd, const char *name);
/* Writes text into a new file (O_EXCL, O_NOFOLLOW, 0600). 0 or -1 (errno). */
int torch_cache_write_file(int dirfd, const char *name, const char *text);
/* Opens name for writing, truncated, never through a link (0600). fd or -1 (errno). */
int torch_cache_open_for_write(int dirfd, const char *name, int truncate);

#endif
