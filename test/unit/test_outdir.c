/* Trace files are created anew in a checked folder: a link planted at the file's name is
 * never followed, a name with a '/' never leaves the folder, run ids are checked. */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outdir.h"
#include "writer.h"

Test(outdir, planted_link_at_the_trace_name_is_not_followed)
{
    char dir[] = "/tmp/prof-outdir-XXXXXX", victim[] = "/tmp/prof-victim-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    int v = mkstemp(victim);
    cr_assert(v >= 0);
    close(v);
    char link[256];
    snprintf(link, sizeof link, "%s/run_host_pid%ld.trace", dir, (long)getpid());
    cr_assert_eq(symlink(victim, link), 0);
    char err[512];
    cr_assert_eq(writer_open(dir, "run", "host", -1, 0, err, sizeof err), 0, "%s", err);
    char want[300];
    snprintf(want, sizeof want, "%s/run_host_pid%ld_1.trace", dir, (long)getpid());
    cr_expect_str_eq(writer_path(), want);
    writer_close();
    struct stat st;
    cr_assert_eq(stat(victim, &st), 0);
    cr_expect_eq(st.st_size, 0, "the link's target was written");
    cr_assert_eq(lstat(want, &st), 0);
    cr_expect(S_ISREG(st.st_mode));
    cr_expect_eq(st.st_mode & 0777, 0600);
    unlink(want);
    unlink(link);
    unlink(victim);
    rmdir(dir);
}

Test(outdir, file_names_stay_in_the_folder)
{
    char dir[] = "/tmp/prof-outdir-XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char err[256];
    int fd = outdir_open(dir, err, sizeof err);
    cr_assert(fd >= 0, "%s", err);
    const char *bad[] = {"../x.trace", "a/b.trace", ".hidden", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        errno = 0;
        cr_expect_eq(outdir_create_file(fd, bad[i]), -1, "%s", bad[i]);
        cr_expect_eq(errno, EINVAL, "%s", bad[i]);
    }
    int f = outdir_create_file(fd, "ok.trace");
    cr_expect(f >= 0);
    cr_expect_eq(outdir_create_file(fd, "ok.trace"), -1);
    cr_expect_eq(errno, EEXIST);
    close(f);
    close(fd);
    char path[300];
    snprintf(path, sizeof path, "%s/ok.trace", dir);
    unlink(path);
    rmdir(dir);
}

Test(outdir, run_ids)
{
    cr_expect(outdir_valid_id("20261124-050620-25984"));
    cr_expect(outdir_valid_id("my_run.v2"));
    const char *bad[] = {"", "../x", "a/b", ".x", "a b", "x\x1b", NULL};
    for (int i = 0; bad[i]; i++)
        cr_expect(!outdir_valid_id(bad[i]), "%s", bad[i]);
    char long_id[66];
    memset(long_id, 'x', 65);
    long_id[65] = '\0';
    cr_expect(!outdir_valid_id(long_id));
}
