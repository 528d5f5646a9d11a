#include "trace_dir.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"

static const char *const *trace_dir_suffixes; /* scandir's filter takes no context */

static int trace_dir_wanted(const struct dirent *d)
{
    size_t len = strlen(d->d_name);
    for (const char *const *s = trace_dir_suffixes; *s; s++) {
        size_t n = strlen(*s);
        if (len > n && !strcmp(d->d_name + len - n, *s))
            return 1;
    }
    return 0;
}

long trace_dir_list(const char *dir, const char *const *suffixes, char ***paths)
{
    struct dirent **names;
    trace_dir_suffixes = suffixes;
    int n = scandir(dir, &names, trace_dir_wanted, alphasort);
    *paths = NULL;
    if (n < 0)
        return -1;
    char **out = calloc((size_t)n + 1, sizeof *out);
    if (!out)
        report_oom();
    const char *sep = dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
    for (int i = 0; i < n; i++) {
        size_t len = strlen(dir) + strlen(names[i]->d_name) + 2;
        out[i] = malloc(len);
        if (!out[i])
            report_oom();
        snprintf(out[i], len, "%s%s%s", dir, sep, names[i]->d_name);
        free(names[i]);
    }
    free(names);
    *paths = out;
    return n;
}

void trace_dir_free(char **paths, long n)
{
    for (long i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}
