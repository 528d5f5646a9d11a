/* writer_guard: the trace descriptor is kept far up, a descriptor the program closed or
 * replaced is never written or closed by us (the same file is reopened instead), the
 * file size limit is honoured without a write, and a file cut back to empty goes. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "writer_guard.h"

static char dir[] = "/tmp/prof-guard-XXXXXX";
static char trace[4096], other[4096];

static void setup(void)
{
    cr_assert_not_null(mkdtemp(dir));
    snprintf(trace, sizeof trace, "%s/t.trace", dir);
    snprintf(other, sizeof other, "%s/data", dir);
}

static void teardown(void)
{
    unlink(trace);
    unlink(other);
    rmdir(dir);
}

static int open_trace(void)
{
    int fd = open(trace, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
    cr_assert_geq(fd, 0);
    return writer_guard_adopt(fd);
}

static off_t size_of(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size : -1;
}

TestSuite(writer_guard, .init = setup, .fini = teardown);

Test(writer_guard, keeps_the_descriptor_far_up)
{
    int fd = open_trace();
    cr_assert_gt(fd, 100, "fd %d", fd);
    cr_assert_eq(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    off_t size;
    cr_assert_eq(writer_guard_check(&fd, trace, 10, &size), 0);
    cr_assert_eq(size, 0);
    cr_assert_eq(writer_guard_take_reopens(), 0);
    writer_guard_close(fd);
}

Test(writer_guard, replaced_descriptor_is_left_to_the_program)
{
    int fd = open_trace();
    cr_assert_eq(write(fd, "abc", 3), 3);
    int data = open(other, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_eq(dup2(data, fd), fd); /* the program's file now has our number */
    close(data);
    int theirs = fd;
    off_t size;
    cr_assert_eq(writer_guard_check(&fd, trace, 3, &size), 0);
    cr_assert_neq(fd, theirs);
    cr_assert_eq(size, 3, "the trace's own size, not the program's file's");
    cr_assert_eq(writer_guard_take_reopens(), 1);
    cr_assert_eq(write(fd, "def", 3), 3);
    writer_guard_close(theirs); /* not ours: stays open */
    cr_assert_eq(fcntl(theirs, F_GETFD) >= 0, 1);
    close(theirs);
    writer_guard_close(fd);
    cr_assert_eq(size_of(trace), 6);
    cr_assert_eq(size_of(other), 0);
}

Test(writer_guard, closed_descriptor_is_reopened_to_append)
{
    int fd = open_trace();
    cr_assert_eq(write(fd, "abc", 3), 3);
    close(fd);
    off_t size;
    cr_assert_eq(writer_guard_check(&fd, trace, 3, &size), 0);
    cr_assert_eq(size, 3);
    cr_assert_eq(write(fd, "def", 3), 3);
    writer_guard_close(fd);
    cr_assert_eq(size_of(trace), 6);
    writer_guard_take_reopens();
}

Test(writer_guard, a_replaced_file_is_not_reopened)
{
    int fd = open_trace();
    close(fd);
    char moved[4200];
    snprintf(moved, sizeof moved, "%s.moved", trace);
    cr_assert_eq(rename(trace, moved), 0); /* alive elsewhere: its inode is not reused */
    int planted = open(trace, O_WRONLY | O_CREAT | O_EXCL, 0600); /* another file, same name */
    close(planted);
    off_t size;
    cr_assert_eq(writer_guard_check(&fd, trace, 3, &size), -1);
    cr_assert_eq(errno, ESTALE);
    cr_assert_eq(fd, -1);
    cr_assert_eq(size_of(trace), 0, "nothing written into the file found there");
    unlink(moved);
}

Test(writer_guard, file_size_limit_fails_before_writing)
{
    int fd = open_trace();
    cr_assert_eq(write(fd, "abcd", 4), 4);
    struct rlimit old, lim = {8, 8};
    getrlimit(RLIMIT_FSIZE, &old);
    lim.rlim_max = old.rlim_max;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    off_t size;
    int ok = writer_guard_check(&fd, trace, 4, &size);
    int over = writer_guard_check(&fd, trace, 5, &size);
    int err = errno;
    setrlimit(RLIMIT_FSIZE, &old);
    cr_assert_eq(ok, 0);
    cr_assert_eq(over, -1);
    cr_assert_eq(err, EFBIG);
    writer_guard_close(fd);
}

Test(writer_guard, cut_back_to_empty_removes_the_file)
{
    int fd = open_trace();
    cr_assert_eq(write(fd, "partial", 7), 7);
    cr_assert_eq(writer_guard_cut(fd, trace, 0), 1);
    cr_assert_eq(access(trace, F_OK), -1);
    writer_guard_close(fd);
}

Test(writer_guard, cut_keeps_what_was_written_before)
{
    int fd = open_trace();
    cr_assert_eq(write(fd, "wholepartial", 12), 12);
    cr_assert_eq(writer_guard_cut(fd, trace, 5), 0);
    cr_assert_eq(size_of(trace), 5);
    writer_guard_close(fd);
}
