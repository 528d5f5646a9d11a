/* bench_proc: see bench_proc.h. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_proc.h"

double bench_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

struct bench_run bench_exec(char *const argv[], const char *out, const char *err)
{
    struct bench_run r = bench_run_child(argv, out, err);
    char *msg = r.status != 0 && err ? bench_read(err) : NULL;
    if (msg && *msg)
        printf("%s: %s said:\n%s", bench_name, argv[0], msg);
    free(msg);
    return r;
}

/* This process's resident set now, in KB (0: unknown). */
static long bench_self_rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb;
}

long bench_parent_rss_kb;

struct bench_run bench_run_child(char *const argv[], const char *out, const char *err)
{
    struct bench_run r = {0, 0, 0, -1};
    long self = bench_self_rss_kb();
    if (self > bench_parent_rss_kb)
        bench_parent_rss_kb = self;
    fflush(stdout);
    double t0 = bench_now();
    pid_t pid = fork();
    if (pid == 0) {
        int fd;
        if (out && (fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0)
            dup2(fd, 1);
        if (err && (fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644)) >= 0)
            dup2(fd, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    struct rusage ru;
    int status;
    if (pid < 0 || wait4(pid, &status, 0, &ru) != pid)
        return r;
    r.seconds = bench_now() - t0;
    r.max_rss_kb = ru.ru_maxrss;
    r.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    r.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

int bench_failures;
const char *bench_name = "bench";

void bench_check(int ok, const char *fmt, ...)
{
    if (ok)
        return;
    va_list ap;
    va_start(ap, fmt);
    printf("%s: CHECK FAILED: ", bench_name);
    vprintf(fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    bench_failures++;
}

char *bench_read(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0;
    char *s = malloc(cap);
    size_t n;
    while (s && (n = fread(s + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        char *more = len + 1 == cap ? realloc(s, cap *= 2) : s;
        if (!more)
            free(s);
        s = more;
    }
    fclose(f);
    if (s)
        s[len] = 0;
    return s;
}

double bench_mb(unsigned long long bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

void bench_print_run(const char *what, const struct bench_run *r)
{
    printf("%s: %.2f s wall, %.2f s CPU, peak RSS %.1f MB\n", what, r->seconds, r->cpu,
           (double)r->max_rss_kb / 1024);
}

unsigned bench_summaries(const char *dir, unsigned long long *bytes)
{
    unsigned n = 0;
    *bytes = 0;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        size_t len = strlen(e->d_name);
        if (len < 8 || strcmp(e->d_name + len - 8, ".summary"))
            continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) == 0) {
            n++;
            *bytes += (unsigned long long)st.st_size;
        }
    }
    if (d)
        closedir(d);
    return n;
}

char **bench_inputs(char **node_dirs, unsigned nodes, int summaries, size_t *n)
{
    char **in = NULL;
    *n = 0;
    for (unsigned k = 0; k < nodes; k++) {
        glob_t g = {0};
        char pattern[4096];
        snprintf(pattern, sizeof pattern, "%s/*.summary", node_dirs[k]);
        size_t add = summaries && glob(pattern, 0, NULL, &g) == 0 ? g.gl_pathc : 1;
        in = realloc(in, (*n + add) * sizeof *in);
        if (!in) {
            fprintf(stderr, "%s: out of memory\n", bench_name);
            exit(1);
        }
        for (size_t i = 0; i < add; i++)
            in[(*n)++] = strdup(summaries && g.gl_pathc ? g.gl_pathv[i] : node_dirs[k]);
        globfree(&g);
    }
    return in;
}

int bench_mkdir(const char *path)
{
    if (mkdir(path, 0755) == 0 || errno == EEXIST)
        return 0;
    fprintf(stderr, "%s: cannot create %s: %s\n", bench_name, path, strerror(errno));
    return -1;
}

unsigned long long bench_node_summarized(const char *node_dir, unsigned traces,
                                         const struct bench_run *s, struct bench_sums *sums)
{
    unsigned long long bytes;
    unsigned found = bench_summaries(node_dir, &bytes);
    bench_check(found == traces, "%s: %u summaries for %u traces", node_dir, found, traces);
    sums->summary_bytes += bytes;
    sums->wall += s->seconds;
    sums->cpu += s->cpu;
    if (s->max_rss_kb > sums->max_rss_kb)
        sums->max_rss_kb = s->max_rss_kb;
    return bytes;
}
