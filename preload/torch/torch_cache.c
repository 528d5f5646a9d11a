#define _GNU_SOURCE
#include "torch_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "settings.h"

/* The folder the user asked for or owns; no folder shared between users. */
static int torch_cache_choose(char *out, size_t len, char *err, size_t err_len)
{
    const char *dir = settings_string(SETTING_PROF_TORCH_CACHE);
    const char *xdg = settings_env("XDG_CACHE_HOME");
    const char *home = settings_env("HOME");
    int n;
    if (dir[0])
        n = snprintf(out, len, "%s", dir);
    else if (xdg && xdg[0] == '/')
        n = snprintf(out, len, "%s/profrun", xdg);
    else if (home && home[0] == '/')
        n = snprintf(out, len, "%s/.cache/profrun", home);
    else {
        struct passwd pw, *found = NULL;
        char text[4096];
        if (getpwuid_r(geteuid(), &pw, text, sizeof text, &found) != 0 || !found ||
            found->pw_dir[0] != '/') {
            snprintf(err, err_len,
                     "no folder of this user for the bridge cache (HOME and XDG_CACHE_HOME "
                     "unset, no home folder for uid %ld); set PROF_TORCH_CACHE",
                     (long)geteuid());
            return -1;
        }
        n = snprintf(out, len, "%s/.cache/profrun", found->pw_dir);
    }
    if (n < 0 || (size_t)n >= len) {
        snprintf(err, err_len, "the bridge cache path is too long");
        return -1;
    }
    return 0;
}

/* mkdir -p; the folders it makes are 0700. */
static int torch_cache_mkdirs(const char *dir)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

/* One folder on the way: the user's or root's, and writable by no one else (an ancestor
 * may be sticky: others cannot then rename or remove what the user made in it). */
static int torch_cache_check_folder(const char *path, const struct stat *st, int last, char *err,
                                    size_t err_len)
{
    uid_t me = geteuid();
    if (!S_ISDIR(st->st_mode)) {
        snprintf(err, err_len, "the bridge cache %s is not a folder", path);
        return -1;
    }
    if (st->st_uid != me && st->st_uid != 0) {
        snprintf(err, err_len,
                 "the bridge cache folder %s belongs to uid %ld, not to this user (uid %ld): "
                 "not loading code from it (set PROF_TORCH_CACHE to a folder of yours)",
                 path, (long)st->st_uid, (long)me);
        return -1;
    }
    if (last && st->st_uid != me) {
        snprintf(err, err_len,
                 "the bridge cache folder %s belongs to root, not to this user: not loading "
                 "code from it (set PROF_TORCH_CACHE to a folder of yours)",
                 path);
        return -1;
    }
    int sticky_ok = !last && (st->st_mode & S_ISVTX);
    if ((st->st_mode & (S_IWGRP | S_IWOTH)) && !sticky_ok) {
        snprintf(err, err_len,
                 "the bridge cache folder %s is writable by others (mode %03o): not loading "
                 "code from it (chmod go-w, or set PROF_TORCH_CACHE)",
                 path, (unsigned)(st->st_mode & 07777));
        return -1;
    }
    return 0;
}

/* Checks every folder from / down to real (a path without links). */
static int torch_cache_check_path(const char *real, char *err, size_t err_len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s", real);
    size_t n = strlen(path);
    for (size_t i = 1; i <= n; i++) {
        if (path[i] != '/' && path[i] != '\0')
            continue;
        char c = path[i];
        path[i] = '\0';
        struct stat st;
        if (lstat(path, &st) != 0) {
            snprintf(err, err_len, "cannot read the bridge cache folder %s: %s", path,
                     strerror(errno));
            return -1;
        }
        if (torch_cache_check_folder(path, &st, c == '\0', err, err_len) != 0)
            return -1;
        path[i] = c;
    }
    struct stat root;
    if (stat("/", &root) != 0 || torch_cache_check_folder("/", &root, n == 1, err, err_len))
        return -1;
    return 0;
}

int torch_cache_open(char *path, size_t path_len, char *err, size_t err_len)
{
    char dir[PATH_MAX];
    if (torch_cache_choose(dir, sizeof dir, err, err_len) != 0)
        return -1;
    if (torch_cache_mkdirs(dir) != 0) {
        snprintf(err, err_len, "cannot make the bridge cache %s: %s", dir, strerror(errno));
        return -1;
    }
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        snprintf(err, err_len, "cannot read the bridge cache %s: %s", dir, strerror(errno));
        return -1;
    }
    if (torch_cache_check_path(real, err, err_len) != 0)
        return -1;
    /* The folder checked is the folder used: no link, same inode. */
    int fd = open(real, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        snprintf(err, err_len, "cannot open the bridge cache %s: %s", real, strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    if (torch_cache_check_folder(real, &st, 1, err, err_len) != 0) {
        close(fd);
        return -1;
    }
    if (snprintf(path, path_len, "%s", real) >= (int)path_len) {
        snprintf(err, err_len, "the bridge cache path %s is too long", real);
        close(fd);
        return -1;
    }
    return fd;
}

int torch_cache_trusted_file(int dirfd, const char *dir, const char *name, char *err,
                             size_t err_len)
{
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? 0 : -1;
    if (!S_ISREG(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH))) {
        snprintf(err, err_len,
                 "%s/%s is not a file of this user that only it can write (owner uid %ld, mode "
                 "%03o%s): not loading it",
                 dir, name, (long)st.st_uid, (unsigned)(st.st_mode & 07777),
                 S_ISLNK(st.st_mode) ? ", a symbolic link" : "");
        return -1;
    }
    return 1;
}

int torch_cache_mkdir(int dirfd, const char *name)
{
    return mkdirat(dirfd, name, 0700);
}

int torch_cache_open_for_write(int dirfd, const char *name, int truncate)
{
    int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | (truncate ? O_TRUNC : O_EXCL);
    return openat(dirfd, name, flags, 0600);
}

int torch_cache_write_file(int dirfd, const char *name, const char *text)
{
    int fd = torch_cache_open_for_write(dirfd, name, 0);
    if (fd < 0)
        return -1;
    size_t len = strlen(text), done = 0;
    while (done < len) {
        ssize_t n = write(fd, text + done, len - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            close(fd);
            return -1;
        }
        done += (size_t)n;
    }
    return close(fd);
}
