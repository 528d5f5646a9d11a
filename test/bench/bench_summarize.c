/* bench_summarize: `profreport --summarize` on traces cloned from a real run (issue 22).
 *
 *   bench_summarize PROFREPORT TRACE DIR [CLONES [ROUNDS]]   (default 8 5)
 *
 * TRACE is one rank's trace from a real job (run.sh makes one: a torchrun gloo DDP run on
 * CPU under profrun, with Python and PyTorch ops recorded); generated traces are more
 * regular than real ones and read faster. CLONES byte copies of it go into DIR; then,
 * ROUNDS times each (summaries deleted in between), `PROFREPORT --summarize -j 1` runs on
 * DIR (one worker over every clone: a node's worker summarizes several ranks) and on one
 * clone alone (one process per trace: startup and first touches of memory included).
 * Printed: MB of trace per CPU second (user + system from wait4, the least of the rounds)
 * beside the goal (>= 200). Then the report straight from the clones, no summary beside
 * them (`PROFREPORT DIR`, the default text report): its peak RSS over the clones' bytes
 * beside the goal (<= 1, issue 22 item 4), the least of the rounds. A failed run, or a
 * summary missing or empty, fails the bench. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define BENCH_GOAL_MB_PER_CPU_S 200.0
#define BENCH_GOAL_RSS_PER_TRACE_BYTE 1.0

/* Runs `profreport [--summarize -j 1] path`, its output to /dev/null (the clones are one rank
 * of a larger world: its warning too); 0 and its usage in *ru, or -1 when it failed. */
static int bench_profreport(const char *profreport, int summarize, const char *path,
                            struct rusage *ru)
{
    pid_t pid = fork();
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
            dup2(null, 1);
            dup2(null, 2);
        }
        if (summarize)
            execl(profreport, profreport, "--summarize", "-j", "1", path, (char *)NULL);
        else
            execl(profreport, profreport, path, (char *)NULL);
        _exit(127);
    }
    int status;
    return pid < 0 || wait4(pid, &status, 0, ru) != pid || !WIFEXITED(status) ||
                   WEXITSTATUS(status) != 0
               ? -1
               : 0;
}

/* CPU seconds (user + system) of `profreport --summarize -j 1 path`; -1 when it failed. */
static double bench_summarize_cpu(const char *profreport, const char *path)
{
    struct rusage ru;
    if (bench_profreport(profreport, 1, path, &ru) != 0)
        return -1;
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

/* Peak RSS in bytes of `profreport path` (the default report); -1 when it failed. */
static double bench_report_rss(const char *profreport, const char *path)
{
    struct rusage ru;
    return bench_profreport(profreport, 0, path, &ru) != 0 ? -1 : (double)ru.ru_maxrss * 1024;
}

static int bench_copy(const char *from, const char *to)
{
    int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    char buf[1 << 16];
    ssize_t n = 0;
    while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
        if (write(out, buf, (size_t)n) != n) {
            n = -1;
            break;
        }
    int ok = in >= 0 && out >= 0 && n == 0;
    if (in >= 0)
        close(in);
    if (out >= 0 && close(out) != 0)
        ok = 0;
    return ok ? 0 : -1;
}

static void bench_path(char *buf, size_t len, const char *dir, unsigned i, const char *ext)
{
    snprintf(buf, len, "%s/clone%03u%s", dir, i, ext);
}

/* Deletes the clones' summaries; with check, first fails unless each is there and not
 * empty. 0, or -1 when one was missing. */
static int bench_summaries(const char *dir, unsigned clones, int check)
{
    int bad = 0;
    for (unsigned i = 0; i < clones; i++) {
        char path[4096];
        struct stat st;
        bench_path(path, sizeof path, dir, i, ".summary");
        if (check && (stat(path, &st) != 0 || st.st_size == 0)) {
            printf("bench_summarize: CHECK FAILED: %s missing or empty\n", path);
            bad = 1;
        }
        unlink(path);
    }
    return bad ? -1 : 0;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: bench_summarize PROFREPORT TRACE DIR [CLONES [ROUNDS]]\n");
        return 2;
    }
    const char *profreport = argv[1], *trace = argv[2], *dir = argv[3];
    unsigned clones = argc > 4 ? (unsigned)atoi(argv[4]) : 8;
    int rounds = argc > 5 ? atoi(argv[5]) : 5;
    struct stat st;
    if (clones < 1 || rounds < 1 || stat(trace, &st) != 0 || !S_ISREG(st.st_mode)) {
        fprintf(stderr, "bench_summarize: %s: %s\n", trace,
                errno ? strerror(errno) : "bad arguments");
        return 2;
    }
    mkdir(dir, 0700);
    for (unsigned i = 0; i < clones; i++) {
        char path[4096];
        bench_path(path, sizeof path, dir, i, ".trace");
        if (bench_copy(trace, path) != 0) {
            fprintf(stderr, "bench_summarize: cannot copy %s to %s\n", trace, path);
            return 1;
        }
    }
    char one[4096];
    bench_path(one, sizeof one, dir, 0, ".trace");
    double all_cpu = -1, one_cpu = -1;
    int failed = 0;
    for (int r = 0; r < rounds && !failed; r++) {
        double c = bench_summarize_cpu(profreport, dir);
        failed |= c < 0 || bench_summaries(dir, clones, 1) != 0;
        if (c >= 0 && (all_cpu < 0 || c < all_cpu))
            all_cpu = c;
        c = bench_summarize_cpu(profreport, one);
        failed |= c < 0 || bench_summaries(dir, 1, 1) != 0;
        if (c >= 0 && (one_cpu < 0 || c < one_cpu))
            one_cpu = c;
    }
    double rss = -1;
    for (int r = 0; r < rounds && !failed; r++) {
        double b = bench_report_rss(profreport, dir);
        failed |= b < 0;
        if (b >= 0 && (rss < 0 || b < rss))
            rss = b;
    }
    for (unsigned i = 0; i < clones; i++) {
        char path[4096];
        bench_path(path, sizeof path, dir, i, ".trace");
        unlink(path);
    }
    if (failed) {
        printf("bench_summarize: CHECK FAILED: %s --summarize, or the report, failed (run it on "
               "%s)\n",
               profreport, trace);
        return 1;
    }
    double mb = (double)st.st_size / 1e6;
    double rate = mb * clones / (all_cpu > 0 ? all_cpu : 1e-6);
    double rate_one = mb / (one_cpu > 0 ? one_cpu : 1e-6);
    printf("summarize: %.0f MB/CPU-s (goal >= %.0f: %s): %u clones of a %.1f MB real rank trace "
           "by one worker in %.3f CPU-s (least of %d rounds); one clone alone, a process of its "
           "own: %.0f MB/CPU-s (%.3f CPU-s)\n",
           rate, BENCH_GOAL_MB_PER_CPU_S, rate >= BENCH_GOAL_MB_PER_CPU_S ? "met" : "NOT met",
           clones, mb, all_cpu, rounds, rate_one, one_cpu);
    double ratio = rss / ((double)st.st_size * clones);
    printf("report from traces: peak RSS %.2fx the trace bytes (goal <= %.0f: %s): `profreport "
           "DIR` on the %u clones (%.1f MB), no summaries, peaks at %.1f MB (least of %d "
           "rounds)\n",
           ratio, BENCH_GOAL_RSS_PER_TRACE_BYTE,
           ratio <= BENCH_GOAL_RSS_PER_TRACE_BYTE ? "met" : "NOT met", clones, mb * clones,
           rss / 1e6, rounds);
    return 0;
}
