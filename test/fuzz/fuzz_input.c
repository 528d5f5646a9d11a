#define _GNU_SOURCE
#include "fuzz_input.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "comm_merge.h"
#include "comm_views.h"
#include "dump.h"
#include "export.h"
#include "model.h"
#include "model_stacks.h"
#include "stacks_view.h"
#include "summary.h"
#include "summary_file.h"
#include "tables.h"

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
    export_folded_fwrite(sink, s, EXPORT_FOLDED_DEPTH_DEFAULT);
    export_folded_fwrite(sink, s, 2);
    export_memory_timeline_fwrite(sink, s);
    struct comm_report r;
    comm_merge_build(&r, s);
    int views = COMM_VIEW_RANKS | COMM_VIEW_COMM | COMM_VIEW_STRAGGLERS;
    comm_tables_print(sink, &r, views, 0);
    comm_export_json(sink, &r, views, 0);
    comm_export_csv(sink, &r, views, 0);
    comm_merge_free(&r);
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
    size_t cut = fuzz_input_split(data, size);
    const uint8_t *part[2] = {data, data + cut};
    size_t len[2] = {cut, size - cut};
    struct model_process **procs = calloc(2, sizeof *procs);
    size_t n = 0;
    if (!procs)
        abort();
    int fds[2] = {-1, -1}; /* a summary's Python section is read when the tables are built */
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
            p = summary_file_load(path, err, sizeof err);
            fds[i] = fd;
        } else {
            dump_file(sink, sink, path);
            p = model_load_file(path, err, sizeof err);
            close(fd);
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
