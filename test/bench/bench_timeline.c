/* bench_timeline: profreport's timeline exports on generated kernel-heavy traces.
 *
 * Writes a trace of N events — N/2 kernels on 4 streams, each with the cudaLaunchKernel
 * that CUPTI reported for it (32 kernel names, 5 us apart) — then runs
 * `profreport --perfetto` (and `--chrome-trace` at the smaller size) on it and prints:
 * Perfetto bytes per event on disk (goal <= 12), export rate (goal >= 5 M events/s, the
 * whole profreport run: both passes over the trace, encoding and writing; per CPU second of
 * profreport, user + system, since the wall clock of a shared machine measures its
 * neighbours too — both are printed), and profreport's peak RSS at each size (goal: flat in
 * the number of events).
 *
 *   bench_timeline PROFREPORT DIR [N...]     (default N: 1000000 10000000) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"

#define BENCH_NAMES 32
#define BENCH_STREAMS 4

static int bench_write_trace(const char *path, unsigned long long events)
{
    struct trace_build b;
    if (trace_build_open(&b, path, PROF_TRACE_VERSION, sizeof(struct prof_file_header), 0) != 0)
        return -1;
    trace_build_meta(&b, "pid", "4242");
    trace_build_meta(&b, "argv", "python3");
    trace_build_meta(&b, "argv", "train.py");
    trace_build_meta(&b, "run_id", "bench");
    trace_build_meta(&b, "start_monotonic_ns", "1000000");
    trace_build_meta(&b, "start_realtime_ns", "1700000000000000000");
    trace_build_clock(&b, 1000000, 1000000, 1700000000000000000ull);
    char name[128];
    for (unsigned i = 0; i < BENCH_NAMES; i++) {
        snprintf(name, sizeof name,
                 "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_%uEEEviT0_", i);
        trace_build_string(&b, i + 1, name);
    }
    trace_build_gpu_api_name(&b, PROF_GPU_API_RUNTIME, 211, "cudaLaunchKernel_v7000");
    trace_build_thread(&b, 4242);
    trace_build_thread_name(&b, 4242, "MainThread");
    uint64_t t = 2000000;
    for (unsigned long long k = 0; k < events / 2; k++) {
        uint32_t corr = (uint32_t)k + 1;
        struct prof_rec_gpu_api api = {
            {PROF_REC_GPU_API, sizeof api}, PROF_GPU_API_RUNTIME, 211, corr, 0, t, t + 2100};
        trace_build_raw(&b, &api, sizeof api);
        struct prof_rec_gpu_kernel kern = {.h = {PROF_REC_GPU_KERNEL, sizeof kern},
                                           .correlation = corr,
                                           .start_ns = t + 9000,
                                           .end_ns = t + 12000 + (k % 7) * 100,
                                           .name_sid = (uint32_t)(k % BENCH_NAMES) + 1,
                                           .context = 1,
                                           .stream = 7 + (uint32_t)(k % BENCH_STREAMS),
                                           .grid = 1024,
                                           .block = 256,
                                           .registers = 32};
        trace_build_raw(&b, &kern, sizeof kern);
        t += 5000;
    }
    trace_build_clock(&b, t, t, 1700000000000000000ull + t);
    trace_build_end(&b, t, events, 0);
    return trace_build_close(&b);
}

struct bench_run {
    double seconds, cpu; /* wall; user + system of profreport */
    long max_rss_kb;
    int status;
};

static struct bench_run bench_exec(char *const argv[])
{
    struct bench_run r = {0, 0, 0, -1};
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t pid = fork();
    if (pid == 0) {
        execv(argv[0], argv);
        _exit(127);
    }
    struct rusage ru;
    if (pid < 0 || wait4(pid, &r.status, 0, &ru) != pid)
        return r;
    clock_gettime(CLOCK_MONOTONIC, &b);
    r.seconds = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
    r.max_rss_kb = ru.ru_maxrss;
    r.cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
            (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
    return r;
}

static long long bench_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_timeline PROFREPORT DIR [N...]\n");
        return 2;
    }
    unsigned long long sizes[8] = {1000000, 10000000};
    int nsizes = 2;
    if (argc > 3) {
        nsizes = 0;
        for (int i = 3; i < argc && nsizes < 8; i++)
            sizes[nsizes++] = strtoull(argv[i], NULL, 10);
    }
    char trace[4096], out[4096];
    long rss[8] = {0};
    for (int s = 0; s < nsizes; s++) {
        unsigned long long n = sizes[s];
        snprintf(trace, sizeof trace, "%s/bench%llu.trace", argv[2], n);
        snprintf(out, sizeof out, "%s/bench%llu.pftrace", argv[2], n);
        if (bench_write_trace(trace, n) != 0) {
            fprintf(stderr, "bench_timeline: cannot write %s: %s\n", trace, strerror(errno));
            return 1;
        }
        char *pf[] = {argv[1], "--perfetto", out, trace, NULL};
        struct bench_run r = bench_exec(pf);
        if (r.status != 0) {
            fprintf(stderr, "bench_timeline: profreport --perfetto failed (%d)\n", r.status);
            return 1;
        }
        long long bytes = bench_size(out);
        rss[s] = r.max_rss_kb;
        printf("perfetto: %llu events (%llu kernels + their launches), trace %lld MB: %.3f s "
               "wall, %.3f s CPU: %.2f M events/s per CPU second (goal >= 5; %.2f by wall "
               "clock), %.2f bytes per event (goal <= 12), %.2f bytes per kernel with its "
               "launch and flow, peak RSS %.1f MB\n",
               n, n / 2, bench_size(trace) >> 20, r.seconds, r.cpu, (double)n / r.cpu / 1e6,
               (double)n / r.seconds / 1e6, (double)bytes / (double)n,
               2.0 * (double)bytes / (double)n, (double)r.max_rss_kb / 1024);
        unlink(out);
        if (s == 0) {
            /* written as bench<N>.pt.trace.json (the TensorBoard plugin's pattern) */
            snprintf(out, sizeof out, "%s/bench%llu.pt.trace.json", argv[2], n);
            char *ch[] = {argv[1], "--chrome-trace", out, trace, NULL};
            r = bench_exec(ch);
            if (r.status != 0) {
                fprintf(stderr, "bench_timeline: profreport --chrome-trace failed (%d)\n",
                        r.status);
                return 1;
            }
            printf("chrome-trace: %llu events: %.3f s wall, %.3f s CPU, %.2f M events/s per CPU "
                   "second, %.1f bytes per event, peak RSS %.1f MB\n",
                   n, r.seconds, r.cpu, (double)n / r.cpu / 1e6,
                   (double)bench_size(out) / (double)n, (double)r.max_rss_kb / 1024);
            unlink(out);
        }
        if (!getenv("BENCH_KEEP"))
            unlink(trace);
    }
    if (nsizes >= 2)
        printf("perfetto: peak RSS at %llu events / at %llu events = %.2f (flat: 1.00)\n",
               sizes[nsizes - 1], sizes[0], (double)rss[nsizes - 1] / (double)rss[0]);
    return 0;
}
