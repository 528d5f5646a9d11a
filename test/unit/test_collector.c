/* The collector end to end inside one process: threads emit through their rings while
 * the collector thread drains to a file; every event is either in the file or counted
 * in a LOST record, and thread exit releases rings after they are written. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"
#include "trace_read.h"

static char dir[] = "/tmp/prof-collector-XXXXXX";

static void start_collector(uint64_t ring_bytes)
{
    cr_assert_not_null(mkdtemp(dir));
    struct collector_config cfg = {.output_dir = dir,
                                   .run_id = "unit",
                                   .ring_bytes = ring_bytes,
                                   .flush_ms = 5,
                                   .quiet = 1,
                                   .rank = -1,
                                   .local_rank = -1,
                                   .world_size = -1};
    char *argv[] = {"test_collector", NULL};
    collector_init(&cfg, 1, argv);
}

struct totals {
    uint64_t calls, lost, lost_calls, threads_named, ends;
};

static struct totals read_back(void)
{
    struct totals t = {0};
    DIR *d = opendir(dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d))) {
        if (!strstr(e->d_name, ".trace"))
            continue;
        files++;
        char path[4096], err[256];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct trace_reader *r = trace_reader_open(path, err, sizeof err);
        cr_assert_not_null(r, "%s", err);
        struct trace_record rec;
        while (trace_reader_next(r, &rec)) {
            if (rec.type == PROF_REC_API_CALL)
                t.calls++;
            else if (rec.type == PROF_REC_LOST)
                t.lost += ((const struct prof_rec_lost *)rec.data)->count;
            else if (rec.type == PROF_REC_THREAD_NAME)
                t.threads_named++;
            else if (rec.type == PROF_REC_END)
                t.ends++;
            else if (rec.type == PROF_REC_LOST_CALLS)
                t.lost_calls += ((const struct prof_rec_lost_calls *)rec.data)->calls;
        }
        cr_assert_eq(trace_reader_stop(r), TRACE_STOP_NONE);
        trace_reader_close(r);
    }
    closedir(d);
    cr_assert_eq(files, 1, "one file per process");
    return t;
}

#define PER_THREAD 200000

static void *emitter(void *arg)
{
    (void)arg;
    uint64_t args[1] = {7};
    for (int i = 0; i < PER_THREAD; i++)
        emit_api_call(1, 0, (uint64_t)i, (uint64_t)i + 1, args, 1);
    return NULL;
}

Test(collector, every_event_is_written_or_counted_lost, .timeout = 60)
{
    start_collector(64 * 1024); /* small rings: some drops are likely, all must be counted */
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, emitter, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    collector_finish();
    struct totals t = read_back();
    cr_assert_eq(t.calls + t.lost, 4u * PER_THREAD, "written %lu + lost %lu", t.calls, t.lost);
    cr_assert_eq(t.lost_calls, t.lost, "every dropped call is in the per-API sums");
    cr_assert_eq(t.ends, 1);
    cr_assert_geq(t.threads_named, 4, "exited threads are named");
}

Test(collector, no_drops_when_rings_are_large_enough, .timeout = 60)
{
    start_collector(16u << 20);
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        pthread_create(&th[i], NULL, emitter, NULL);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    collector_finish();
    struct totals t = read_back();
    cr_assert_eq(t.lost, 0);
    cr_assert_eq(t.calls, 2u * PER_THREAD);
}

Test(collector, events_after_finish_are_not_recorded)
{
    start_collector(64 * 1024);
    emit_api_call(1, 0, 1, 2, NULL, 0);
    collector_finish();
    emit_api_call(1, 0, 3, 4, NULL, 0);
    struct totals t = read_back();
    cr_assert_eq(t.calls, 1);
}
