/* The reader on inputs that were quadratic (issue 11, item 14), in one run:
 *  1. threads: traces of 10 000 and 100 000 THREAD records (one LOST each) read into a
 *     model; prints the time of each and the ratio of their per-record times (1 is
 *     linear; the linear search it replaces made it about 10, and 18.6 s at 100 000).
 *  2. folded stacks of a 10 000-deep chain of distinct Python calls: bytes and time at
 *     the default --folded-depth (128) and with no limit (0: the format's own
 *     depth^2 / 2 frames), written to a stream that only counts.
 *  3. folded stacks of 5 000 and 50 000 threads of one Python call each: the ratio of
 *     their per-thread times (1 is linear; a call forest built per thread made it 10). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../fixtures/traces/py_traces.h"
#include "../fixtures/traces/trace_build.h"
#include "export.h"
#include "model.h"
#include "summary.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static struct model_process *load(const char *path)
{
    char err[512];
    struct model_process *p = model_load_file(path, err, sizeof err);
    if (!p) {
        fprintf(stderr, "bench_report: %s\n", err);
        exit(1);
    }
    return p;
}

static double threads_time(const char *path, uint32_t n)
{
    struct trace_build b;
    if (trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0) != 0) {
        perror(path);
        exit(1);
    }
    trace_build_meta(&b, "pid", "1");
    for (uint32_t i = 0; i < n; i++) {
        trace_build_thread(&b, 1000 + i);
        trace_build_lost(&b, 1000 + i, 1);
    }
    trace_build_close(&b);
    double t0 = now_s();
    struct model_process *p = load(path);
    double t = now_s() - t0;
    if (p->nthreads != n || p->lost != n) {
        fprintf(stderr, "bench_report: %zu threads, %llu lost; want %u\n", p->nthreads,
                (unsigned long long)p->lost, n);
        exit(1);
    }
    model_process_free(p);
    return t;
}

static ssize_t count_write(void *cookie, const char *buf, size_t size)
{
    (void)buf;
    *(unsigned long long *)cookie += size;
    return (ssize_t)size;
}

static unsigned long long folded_bytes(const struct summary *s, size_t depth, double *secs)
{
    unsigned long long bytes = 0;
    cookie_io_functions_t io = {.write = count_write};
    FILE *f = fopencookie(&bytes, "w", io);
    if (!f) {
        perror("fopencookie");
        exit(1);
    }
    double t0 = now_s();
    export_folded_fwrite(f, s, depth, 0); /* the format's own size: nothing folded */
    fclose(f);
    *secs = now_s() - t0;
    return bytes;
}

static struct summary *threads_summary(const char *path, uint32_t n)
{
    struct trace_build b;
    if (trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0) != 0) {
        perror(path);
        exit(1);
    }
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "work");
    trace_build_string(&b, 2, "/w/pool.py");
    trace_build_py_func(&b, 1, 1, 1, 2, 0, 7, PROF_PY_FUNC_PYTHON);
    for (uint32_t i = 0; i < n; i++) {
        trace_build_thread(&b, 1000 + i);
        trace_build_py_node(&b, i + 1, 0, 1);
        trace_build_py_stats(&b, i + 1, 1, 1000, 1000, 0, 0);
    }
    trace_build_close(&b);
    struct model_process **procs = malloc(sizeof *procs);
    struct summary *s = malloc(sizeof *s);
    if (!procs || !s)
        exit(1);
    procs[0] = load(path);
    summary_build(s, procs, 1);
    return s;
}

static double folded_threads_time(const char *path, uint32_t n)
{
    struct summary *s = threads_summary(path, n);
    double secs;
    unsigned long long bytes = folded_bytes(s, EXPORT_FOLDED_DEPTH_DEFAULT, &secs);
    if (bytes < (unsigned long long)n * 20) {
        fprintf(stderr, "bench_report: folded stacks of %u threads: %llu bytes\n", n, bytes);
        exit(1);
    }
    summary_free(s);
    free(s);
    return secs;
}

int main(void)
{
    char path[] = "/tmp/bench_report_XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        perror("mkstemp");
        return 1;
    }
    close(fd);

    double small = threads_time(path, 10000), large = threads_time(path, 100000);
    printf("threads: 10000 THREAD records read in %.3f s, 100000 in %.3f s; per-record time "
           "ratio %.2f (1 = linear)\n",
           small, large, (large / 100000) / (small / 10000));

    enum { DEPTH = 10000 };
    if (py_trace_deep(path, DEPTH) != 0) {
        perror(path);
        return 1;
    }
    struct model_process **procs = malloc(sizeof *procs);
    procs[0] = load(path);
    struct summary s;
    summary_build(&s, procs, 1);
    double capped_s, full_s;
    unsigned long long capped = folded_bytes(&s, EXPORT_FOLDED_DEPTH_DEFAULT, &capped_s);
    unsigned long long full = folded_bytes(&s, 0, &full_s);
    printf("folded: %d-deep chain: %.1f MB in %.2f s at --folded-depth %d, %.1f MB in %.2f s "
           "with no limit (%.1fx the bytes; counted, not written)\n",
           DEPTH, capped / 1e6, capped_s, EXPORT_FOLDED_DEPTH_DEFAULT, full / 1e6, full_s,
           (double)full / (double)capped);
    summary_free(&s);

    double few = folded_threads_time(path, 5000), many = folded_threads_time(path, 50000);
    printf("folded: 5000 threads in %.3f s, 50000 in %.3f s; per-thread time ratio %.2f "
           "(1 = linear)\n",
           few, many, (many / 50000) / (few / 5000));
    unlink(path);
    return 0;
}
