/* Every input the reader fuzzer keeps (test/fuzz/corpus: seeds and inputs it found;
 * test/fuzz/crashes: each input that once found a defect) through the fuzzer's own path
 * (test/fuzz/fuzz_input.c: reader, model, merge, every view), each in a child process:
 * it must exit cleanly, which in the sanitized build (make SAN=address,undefined unit)
 * also means no sanitizer report. Run from the repository root, as `make unit` does. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../fuzz/fuzz_input.h"

static uint8_t *read_all(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    cr_assert_not_null(f, "cannot open %s", path);
    struct stat st;
    cr_assert_eq(fstat(fileno(f), &st), 0);
    uint8_t *data = malloc((size_t)st.st_size + 1);
    cr_assert_not_null(data);
    *size = fread(data, 1, (size_t)st.st_size, f);
    cr_assert_eq(*size, (size_t)st.st_size, "short read of %s", path);
    fclose(f);
    return data;
}

/* Runs one input in a child; its exit status, or -signal. The child reports through its
 * exit code how many files read as traces (0..2), so the parent can check the seeds. */
static int replay(const char *path, int *loaded)
{
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        size_t size;
        uint8_t *data = read_all(path, &size);
        FILE *sink = fopen("/dev/null", "w");
        if (!sink)
            _exit(100);
        int n = fuzz_input_run(data, size, sink);
        fclose(sink);
        free(data);
        _exit(10 + n);
    }
    int status;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    if (WIFSIGNALED(status))
        return -WTERMSIG(status);
    int code = WEXITSTATUS(status);
    if (code >= 10 && code <= 12) {
        *loaded = code - 10;
        return 0;
    }
    return code;
}

/* Replays every file of dir; returns how many. */
static size_t replay_dir(const char *dir, size_t *traces)
{
    struct dirent **names;
    int n = scandir(dir, &names, NULL, alphasort);
    cr_assert(n >= 0, "cannot list %s (run from the repository root)", dir);
    size_t count = 0;
    for (int i = 0; i < n; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        struct stat st;
        if (names[i]->d_name[0] != '.' && stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            int loaded = 0;
            int rc = replay(path, &loaded);
            cr_expect_eq(rc, 0, "%s: %s %d", path, rc < 0 ? "killed by signal" : "exit status",
                         rc < 0 ? -rc : rc);
            if (loaded)
                ++*traces;
            count++;
        }
        free(names[i]);
    }
    free(names);
    return count;
}

Test(fuzz_inputs, saved_crashes_exit_cleanly)
{
    size_t traces = 0;
    cr_assert_gt(replay_dir("test/fuzz/crashes", &traces), 0);
}

Test(fuzz_inputs, corpus_exits_cleanly_and_seeds_read)
{
    size_t traces = 0;
    size_t n = replay_dir("test/fuzz/corpus", &traces);
    cr_assert_gt(n, 20);
    cr_assert_gt(traces, 15, "only %zu of %zu inputs read as traces", traces, n);
}

/* The harness itself: the seeds read as traces, a concatenation as two. */
Test(fuzz_inputs, harness_reads_one_or_two_files)
{
    size_t size;
    uint8_t *one = read_all("test/fuzz/corpus/synthetic-run-rank0.trace", &size);
    FILE *sink = fopen("/dev/null", "w");
    cr_assert_not_null(sink);
    cr_assert_eq(fuzz_input_run(one, size, sink), 1);
    uint8_t *two = malloc(2 * size);
    cr_assert_not_null(two);
    memcpy(two, one, size);
    memcpy(two + size, one, size);
    cr_assert_eq(fuzz_input_run(two, 2 * size, sink), 2);
    static const uint8_t junk[] = "not a trace";
    cr_assert_eq(fuzz_input_run(junk, sizeof junk, sink), 0);
    fclose(sink);
    free(one);
    free(two);
}
