#define _GNU_SOURCE
#include "outdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int outdir_shared;

void outdir_set_shared(int shared)
{
    outdir_shared = shared;
}

static mode_t outdir_dir_mode(void)
{
    return outdir_shared ? 0750 : 0700;
}

/* mkdir -p with the folder mode for every folder it makes; existing ones stay as they are. */
static int outdir_mkdirs(const char *dir)
{
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] == '/' || path[i] == '\0') {
            char c = path[i];
            path[i] = '\0';
            if (mkdir(path, outdir_dir_mode()) != 0 && errno != EEXIST)
                return -1;
            path[i] = c;
        }
    }
    return 0;
}

int outdir_open(const char *dir, char *err, size_t errlen)
{
    if (outdir_mkdirs(dir) != 0) {
        snprintf(err, errlen, "cannot write to the output folder %s (cannot create it: %s)", dir,
                 strerror(errno));
        return -1;
    }
    struct stat st;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0 && (errno == ELOOP || errno == ENOTDIR) && lstat(dir, &st) == 0 &&
        S_ISLNK(st.st_mode)) {
        /* A link the user made may lead elsewhere; one made by someone else may not. */
        if (st.st_uid != geteuid()) {
            /* uid only: a name lookup may reach the network (NSS) inside the job */
            snprintf(err, errlen,
                     "the output folder %s is a symbolic link owned by another user (uid %ld); "
                     "refusing to write traces through it",
                     dir, (long)st.st_uid);
            return -1;
        }
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    }
    if (fd < 0) {
        snprintf(err, errlen, "cannot open output folder %s: %s", dir, strerror(errno));
        return -1;
    }
    if (fstat(fd, &st) != 0) {
        snprintf(err, errlen, "cannot read output folder %s: %s", dir, strerror(errno));
        close(fd);
        return -1;
    }
    if (st.st_uid != geteuid()) {
        snprintf(err, errlen,
                 "the output folder %s is owned by another user (uid %ld); refusing to write "
                 "traces there (choose another with -o or PROF_OUTPUT_DIR)",
                 dir, (long)st.st_uid);
        close(fd);
        return -1;
    }
    return fd;
}

int outdir_create_file(int dirfd, const char *name)
{
    if (!name[0] || strchr(name, '/') || name[0] == '.') {
        errno = EINVAL;
        return -1;
    }
    mode_t mode = outdir_shared ? 0640 : 0600;
    int fd =
        openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_APPEND, mode);
    if (fd >= 0 && outdir_shared)
        fchmod(fd, mode); /* the group asked for it: not narrowed by the umask */
    return fd;
}

int outdir_valid_id(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > 64 || id[0] == '.')
        return 0;
    return strspn(id, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-") == n;
}
