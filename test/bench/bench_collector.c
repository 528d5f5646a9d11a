/* Collector throughput, in one run:
 *  1. drain: 4 threads fill their rings with N call records while the collector waits,
 *     then the final drain writes them all; events/s = N / drain time (goal >= 20 M/s).
 *  2. paced: 4 threads emit 250 k events/s each (1 M/s together) for 2 s with the
 *     default ring size and flush period; the trace must show no LOST record.
 *  3. paced at 10 M events/s in the process (4 threads x 2.5 M/s) for 2 s at the default
 *     ring size and flush period: the share of events the timeline keeps (goal >= 95 %,
 *     issue 22). What binds there is the wake-up, not the drain: a 1 MiB ring holds
 *     about 17 ms of one thread's events at 2.5 M/s, less than the 50 ms flush period;
 *     a producer whose ring is half full wakes the collector (ring_half_full_hook).
 * Prints the numbers and the bytes per call record on disk (goal <= 24). */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "clock.h"
#include "emit.h"
#include "trace_read.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static long per_thread;
static int paced; /* events per millisecond per thread; 0: as fast as it can */

static void *producer(void *arg)
{
    (void)arg;
    if (!paced) {
        for (long i = 0; i < per_thread; i++) {
            uint64_t t = prof_clock_ticks();
            emit_api_call(1, 0, t, t + 10, NULL, 0);
        }
        return NULL;
    }
    /* `paced` events every millisecond. */
    double start = now_s();
    for (long i = 0; i < per_thread; i += paced) {
        for (int j = 0; j < paced; j++) {
            uint64_t t = prof_clock_ticks();
            emit_api_call(1, 0, t, t + 10, NULL, 0);
        }
        double due = start + (i + paced) / (paced * 1000.0);
        double wait = due - now_s();
        if (wait > 0) {
            struct timespec ts = {0, (long)(wait * 1e9)};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

struct result {
    uint64_t calls, lost, bytes;
};

static struct result read_dir(const char *dir)
{
    struct result res = {0, 0, 0};
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        if (!strstr(e->d_name, ".trace"))
            continue;
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        stat(path, &st);
        res.bytes += st.st_size;
        struct trace_reader *r = trace_reader_open(path, err, sizeof err);
        struct trace_record rec;
        while (r && trace_reader_next(r, &rec)) {
            if (rec.type == PROF_REC_API_CALL)
                res.calls++;
            else if (rec.type == PROF_REC_LOST)
                res.lost += ((const struct prof_rec_lost *)rec.data)->count;
        }
        if (r)
            trace_reader_close(r);
        unlink(path);
    }
    if (d)
        closedir(d);
    rmdir(dir);
    return res;
}

/* Each phase runs in a child process: the collector is one per process. */
static void run_phase(int per_ms, long events_per_thread, uint64_t ring_bytes, unsigned flush_ms)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid != 0) {
        int status;
        waitpid(pid, &status, 0);
        return;
    }
    char dir[] = "/tmp/prof-bench-XXXXXX";
    if (!mkdtemp(dir))
        _exit(1);
    clock_init();
    struct collector_config cfg = {.output_dir = dir,
                                   .run_id = "bench",
                                   .ring_bytes = ring_bytes,
                                   .flush_ms = flush_ms,
                                   .quiet = 1,
                                   .rank = -1,
                                   .local_rank = -1,
                                   .world_size = -1};
    char *argv[] = {"bench_collector", NULL};
    collector_init(&cfg, 1, argv);
    per_thread = events_per_thread;
    paced = per_ms;
    if (!per_ms)
        ring_half_full_hook = NULL; /* the final drain alone is measured */
    pthread_t th[4];
    double t0 = now_s();
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, producer, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    double t1 = now_s();
    collector_finish();
    double t2 = now_s();
    struct result res = read_dir(dir);
    if (!per_ms) {
        printf("collector drain: %lu events written in %.3f s: %.1f M events/s (goal >= 20)\n",
               (unsigned long)res.calls, t2 - t1, res.calls / (t2 - t1) / 1e6);
        printf("collector drain: trace %lu bytes, %.2f bytes per call record on disk "
               "(goal <= 24), lost %lu\n",
               (unsigned long)res.bytes, (double)res.bytes / res.calls, (unsigned long)res.lost);
    } else if (per_ms == 250) {
        printf("collector paced: 4 threads x 250 k/s for %.2f s: %lu events written, %lu lost "
               "(goal 0)\n",
               t1 - t0, (unsigned long)res.calls, (unsigned long)res.lost);
    } else {
        double all = (double)(res.calls + res.lost);
        printf("collector paced: 4 threads x %.1f M/s (%.0f M events/s in the process) for "
               "%.2f s, default ring and flush: %lu of %.0f events kept, %.1f %% (goal >= 95)\n",
               per_ms / 1000.0, 4 * per_ms / 1000.0, t1 - t0, (unsigned long)res.calls, all,
               all > 0 ? 100.0 * res.calls / all : 0.0);
    }
    fflush(stdout);
    _exit(0);
}

/* The same volume written with plain 1 MiB write() calls to the same file system: what
 * the disk allows, against which the drain rate above is read. */
static void disk_rate(size_t bytes)
{
    char path[] = "/tmp/prof-bench-disk-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0)
        return;
    static char chunk[1 << 20];
    memset(chunk, 1, sizeof chunk);
    double t0 = now_s();
    for (size_t done = 0; done < bytes; done += sizeof chunk)
        if (write(fd, chunk, sizeof chunk) < 0)
            break;
    double t1 = now_s();
    close(fd);
    unlink(path);
    printf("collector drain: the file system takes %.0f MB/s with plain writes of the same "
           "volume (= %.1f M records/s of 24 bytes)\n",
           bytes / (t1 - t0) / 1e6, bytes / 24.0 / (t1 - t0) / 1e6);
}

int main(void)
{
    /* 4 x 2 M events of 24 bytes = 192 MB in rings of 64 MiB each; the collector waits
     * (flush period 1 s) until the final drain. */
    /* On a VM, page-cache pages the guest has not touched before cost a hypervisor exit
     * each: the plain-write measure before the drain also warms them, the one after
     * shows what the file system gives then. */
    disk_rate(192u << 20);
    run_phase(0, 2000000, 64u << 20, 1000);
    disk_rate(192u << 20);
    run_phase(250, 500000, 1u << 20, 50);
    run_phase(2500, 5000000, 1u << 20, 50);
    return 0;
}
