#define _GNU_SOURCE
#include "fuzz_input.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm_merge.h"
#include "comm_views.h"
#include "dump.h"
#include "export.h"
#include "export_timeline.h"
#include "html.h"
#include "model.h"
#include "model_stacks.h"
#include "stacks_view.h"
#include "summary.h"
#include "summary_file.h"
#include "tables.h"

int fuzz_input_writers = FUZZ_WRITERS_ALL;

/* FUZZ_WRITERS_SOME: the inputs whose bytes hash to 0 modulo 4, so that an input always
 * takes the same path (a finding replays) and the writers, the dearest part, cost a
 * quarter of their price per execution. */
static uint32_t fuzz_input_hash(const uint8_t *data, size_t size)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 16777619u;
    return h;
}

static int fuzz_input_writes(const uint8_t *data, size_t size)
{
    if (fuzz_input_writers != FUZZ_WRITERS_SOME)
        return fuzz_input_writers == FUZZ_WRITERS_ALL;
    return (fuzz_input_hash(data, size) >> 7) % 4 == 0;
}

/* The part of each process the tables cover (profreport --phase), by the input's bytes as
 * above: the steady steps (profreport's default) for half of the inputs, the whole process,
 * every step or the startup for the others. */
static enum model_window fuzz_input_window(const uint8_t *data, size_t size)
{
    static const enum model_window w[] = {MODEL_WINDOW_STEADY, MODEL_WINDOW_STEADY,
                                          MODEL_WINDOW_ALL, MODEL_WINDOW_STEPS,
                                          MODEL_WINDOW_STARTUP};
    return w[(fuzz_input_hash(data, size) >> 11) % 5];
}

/* An in-memory file holding data, named by a path the reader can open like any other. */
static int fuzz_input_file(const uint8_t *data, size_t size, char *path, size_t len)
{
    int fd = memfd_create("fuzz_trace", MFD_CLOEXEC);
    if (fd < 0) {
        perror("fuzz: memfd_create");
        abort();
    }
    for (size_t off = 0; off < size;) {
        ssize_t n = write(fd, data + off, size - off);
        if (n <= 0) {
            perror("fuzz: write");
            abort();
        }
        off += (size_t)n;
    }
    snprintf(path, len, "/proc/self/fd/%d", fd);
    return fd;
}

/* Where a second file starts: the magic again at an aligned offset; else size. */
static size_t fuzz_input_split(const uint8_t *data, size_t size)
{
    for (size_t off = PROF_RECORD_ALIGN; off + PROF_TRACE_MAGIC_LEN <= size;
         off += PROF_RECORD_ALIGN)
        if (!memcmp(data + off, PROF_TRACE_MAGIC, PROF_TRACE_MAGIC_LEN))
            return off;
    return size;
}

static void fuzz_input_views(struct summary *s, FILE *sink)
{
    static const enum tables_python_split splits[] = {
        TABLES_PYTHON_MERGED, TABLES_PYTHON_PER_THREAD, TABLES_PYTHON_PER_PROCESS};
    for (size_t i = 0; i < s->nwarnings; i++)
        fprintf(sink, "warning: %s\n", s->warnings[i]);
    tables_print(sink, s, 0);
    tables_ops(sink, s, 0);
    tables_gpu_kernels(sink, s, 0);
    tables_gpu(sink, s, 0);
    tables_actions(sink, s, 0);
    for (size_t i = 0; i < sizeof splits / sizeof *splits; i++)
        tables_python(sink, s, 0, splits[i]);
    export_json_write(sink, s, 0);
    export_csv_write(sink, s, 0);
    export_pstats_fwrite(sink, &s->py);
    export_folded_fwrite(sink, s, EXPORT_FOLDED_DEPTH_DEFAULT, EXPORT_FOLDED_MIN_SHARE_DEFAULT);
    export_folded_fwrite(sink, s, 2, 0);
    /* the flame graphs' phases: the steps' trees, the spans of the steady steps and startup */
    for (int phase = EXPORT_PHASE_ALL; phase <= EXPORT_PHASE_STEADY; phase++)
        export_folded_stream(sink, s, 1, phase);
    export_memory_timeline_fwrite(sink, s);
    struct comm_report r;
    comm_merge_build(&r, s);
    int views = COMM_VIEW_RANKS | COMM_VIEW_COMM | COMM_VIEW_STRAGGLERS;
    comm_tables_print(sink, s, &r, views, 0);
    comm_export_json(sink, &r, views, 0);
    comm_export_csv(sink, &r, views, 0);
    comm_merge_free(&r);
}

/* Where the writers that take a file name write: a private folder made for each input
 * that runs them (tmpfs when there is one), removed with what they wrote (the Chrome
 * export names its files after the ranks) when the input is done. */
static char fuzz_input_dir_name[64];

static const char *fuzz_input_dir(void)
{
    if (!fuzz_input_dir_name[0]) {
        snprintf(fuzz_input_dir_name, sizeof fuzz_input_dir_name, "%s/fuzz-out-XXXXXX",
                 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
        if (!mkdtemp(fuzz_input_dir_name)) {
            perror("fuzz: mkdtemp");
            abort();
        }
    }
    return fuzz_input_dir_name;
}

static void fuzz_input_dir_remove(void)
{
    if (!fuzz_input_dir_name[0])
        return;
    DIR *d = opendir(fuzz_input_dir_name);
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlinkat(dirfd(d), e->d_name, 0);
    if (d)
        closedir(d);
    rmdir(fuzz_input_dir_name);
    fuzz_input_dir_name[0] = '\0';
}

static char *fuzz_input_out(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", fuzz_input_dir(), name);
    return buf;
}

/* The writers to files: the HTML page, the flame graphs (SVG: the Python calls, the
 * samples), the exports through out_file (pstats, folded, memory timeline, the samples'
 * folded paths). */
static void fuzz_input_files(struct summary *s, struct model_process **procs, size_t n, FILE *sink)
{
    char html[128], svg[128], path[128], err[512];
    html_write_files(fuzz_input_out("r.html", html, sizeof html),
                     fuzz_input_out("r.svg", svg, sizeof svg), s, sink);
    struct stacks_view_options o = {0};
    html_write_stacks_flame(svg, procs, n, &o, sink);
    o.folded_path = fuzz_input_out("s.folded", path, sizeof path);
    stacks_view(sink, sink, procs, n, &o);
    if (export_pstats_write(fuzz_input_out("r.prof", path, sizeof path), &s->py, err, sizeof err) !=
            0 ||
        export_folded_write(fuzz_input_out("r.folded", path, sizeof path), s,
                            EXPORT_FOLDED_DEPTH_DEFAULT, EXPORT_FOLDED_MIN_SHARE_DEFAULT, err,
                            sizeof err) != 0 ||
        export_memory_timeline_write(fuzz_input_out("r.csv", path, sizeof path), s, err,
                                     sizeof err) != 0)
        fprintf(sink, "%s\n", err);
}

/* The timeline exports (Perfetto, Chrome/Kineto JSON) of the processes read from traces:
 * they stream the events from the trace files again. */
static void fuzz_input_timelines(struct model_process **procs, size_t n, FILE *sink)
{
    struct model_process **traces = malloc((n ? n : 1) * sizeof *traces);
    size_t nt = 0;
    if (!traces)
        abort();
    for (size_t i = 0; i < n; i++)
        if (!procs[i]->summary_file)
            traces[nt++] = procs[i];
    char path[128], err[512];
    if (nt && export_perfetto_write(fuzz_input_out("r.pftrace", path, sizeof path), traces, nt,
                                    NULL, err, sizeof err) != 0)
        fprintf(sink, "%s\n", err);
    if (nt && export_chrome_write(fuzz_input_out("r.json", path, sizeof path), traces, nt, 0,
                                  NULL, err, sizeof err) != 0)
        fprintf(sink, "%s\n", err);
    free(traces);
}

/* The call-stack views: the samples, and the stacks of the first API with any. */
static void fuzz_input_stacks(struct model_process **procs, size_t n, FILE *sink)
{
    struct stacks_view_options o = {.print = 1};
    stacks_view(sink, sink, procs, n, &o);
    o.json = 1;
    stacks_view(sink, sink, procs, n, &o);
    for (size_t i = 0; i < n; i++) {
        const struct model_stacks *st = procs[i]->stacks;
        uint16_t api = st && st->nuses ? st->uses[0].api : 0;
        if (st && st->nuses && api < procs[i]->napis && procs[i]->apis[api]) {
            o.api_name = procs[i]->apis[api]->name;
            o.json = 0;
            stacks_view(sink, sink, procs, n, &o);
            break;
        }
    }
}

/* p through its summary and back (summary_file.h); the copy's tables are printed. */
static void fuzz_input_summary_round_trip(const struct model_process *p, FILE *sink)
{
    uint8_t *buf;
    size_t len;
    char path[64], err[512];
    summary_file_encode(p, NULL, &buf, &len);
    int fd = fuzz_input_file(buf, len, path, sizeof path);
    free(buf);
    struct model_process *q = summary_file_load(path, err, sizeof err);
    if (!q) { /* a summary of a model always reads back */
        fprintf(stderr, "fuzz: a summary does not read back: %s\n", err);
        abort();
    }
    struct model_process **one = malloc(sizeof *one);
    if (!one)
        abort();
    one[0] = q;
    struct summary s;
    summary_build(&s, one, 1);
    tables_print(sink, &s, 0);
    summary_free(&s);
    close(fd);
}

int fuzz_input_run(const uint8_t *data, size_t size, FILE *sink)
{
    model_steps_keep_spans(1); /* the flame graphs of the steady steps and startup read them */
    model_torch_set_window(fuzz_input_window(data, size));
    size_t cut = fuzz_input_split(data, size);
    const uint8_t *part[2] = {data, data + cut};
    size_t len[2] = {cut, size - cut};
    struct model_process **procs = calloc(2, sizeof *procs);
    size_t n = 0;
    if (!procs)
        abort();
    /* A summary's Python section is read when the tables are built, a trace's events
     * again by the timeline exports: both stay open until then. */
    int fds[2] = {-1, -1};
    for (int i = 0; i < 2; i++) {
        if (i == 1 && !len[1])
            break;
        char path[64], err[512];
        /* A summary's checksum is made good, so that its content reaches the decoder. */
        uint8_t *copy = NULL;
        if (len[i] >= 20 && !memcmp(part[i], "PRFSUMM\n", 8)) {
            copy = malloc(len[i]);
            if (!copy)
                abort();
            memcpy(copy, part[i], len[i]);
            summary_file_crc(copy, len[i] - 12, copy + len[i] - 12);
        }
        int fd = fuzz_input_file(copy ? copy : part[i], len[i], path, sizeof path);
        free(copy);
        struct model_process *p;
        if (summary_file_is_summary(path)) {
            if (summary_file_bound(path, path, err, sizeof err)) /* its header's reader */
                fprintf(sink, "bound\n");
            p = summary_file_load(path, err, sizeof err);
            fds[i] = fd;
        } else {
            dump_file(sink, sink, path);
            p = model_load_file(path, err, sizeof err);
            fds[i] = fd; /* the timeline exports read the trace again */
            if (p)
                fuzz_input_summary_round_trip(p, sink);
        }
        if (p)
            procs[n++] = p;
        else
            fprintf(sink, "%s\n", err);
    }
    int loaded = (int)n;
    if (n == 0) {
        free(procs);
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return 0;
    }
    /* The latest run, as by default (it frees the others), then every key of the tables. */
    if (summary_select_run(procs, &n, NULL, 0, sink) != 0) {
        for (size_t i = 0; i < n; i++)
            model_process_free(procs[i]);
        free(procs);
        for (int i = 0; i < 2; i++)
            if (fds[i] >= 0)
                close(fds[i]);
        return loaded;
    }
    fuzz_input_stacks(procs, n, sink);
    struct summary s;
    summary_build(&s, procs, n);
    summary_sort(&s, SUMMARY_SORT_TOTAL);
    summary_sort_python(&s, PYSTATS_SORT_CUMTIME);
    summary_sort_torch(&s, SUMMARY_OP_SORT_SELF_CPU);
    fuzz_input_views(&s, sink);
    if (fuzz_input_writes(data, size)) {
        fuzz_input_files(&s, procs, n, sink);
        fuzz_input_timelines(procs, n, sink);
        fuzz_input_dir_remove();
    }
    summary_sort(&s, SUMMARY_SORT_NAME);
    summary_sort_python(&s, PYSTATS_SORT_TOTTIME);
    summary_build_torch(&s, 1);
    summary_sort_torch(&s, SUMMARY_OP_SORT_SELF_CPU);
    tables_print(sink, &s, 1);
    tables_ops(sink, &s, 0);
    summary_free(&s);
    for (int i = 0; i < 2; i++)
        if (fds[i] >= 0)
            close(fds[i]);
    return loaded;
}
