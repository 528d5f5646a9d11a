/* trace_dir: the files of a directory that profreport reads, by name suffix. */
#ifndef REPORT_TRACE_DIR_H
#define REPORT_TRACE_DIR_H

#include <stddef.h>

/* The paths (dir/name, malloc'd) of the entries of dir whose name ends with one of the
 * suffixes (a NULL-ended list), in name order. Returns the count; -1 with errno set when
 * dir cannot be read. Free with trace_dir_free. */
long trace_dir_list(const char *dir, const char *const *suffixes, char ***paths);
void trace_dir_free(char **paths, long n);

#endif
