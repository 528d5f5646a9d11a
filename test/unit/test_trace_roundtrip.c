/* Format round trip: what the collector's writer and metadata log put in a file, the
 * reporter's reader gives back, record by record; interning gives one id per text. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "metalog.h"
#include "trace_read.h"
#include "writer.h"

static char dir[] = "/tmp/prof-unit-XXXXXX";

static void make_dir(void)
{
    cr_assert_not_null(mkdtemp(dir));
}

static void writer_sink(const void *data, size_t len)
{
    writer_append(data, len);
}

Test(roundtrip, writer_records_read_back, .init = make_dir)
{
    char err[256];
    cr_assert_eq(writer_open(dir, "run1", "host", 3, 0, err, sizeof err), 0, "%s", err);
    const char *path = writer_path();
    cr_assert(strstr(path, "run1_host_pid") && strstr(path, "_rank3.trace"), "name %s", path);

    struct prof_record_header meta = {PROF_REC_META, 0};
    writer_append_record(PROF_REC_META, &meta, sizeof meta, "host", "node-7");
    struct prof_rec_thread th = {{PROF_REC_THREAD, sizeof th}, 42};
    writer_append(&th, sizeof th);
    struct {
        struct prof_rec_api_call c;
        uint64_t args[2];
    } call = {{{PROF_REC_API_CALL, 40}, 5, -35, 1000, 2500}, {0xdead, 4096}};
    writer_append(&call, sizeof call);
    uint32_t id1 = metalog_intern("kernel_a");
    uint32_t id2 = metalog_intern("kernel_b");
    cr_assert_eq(metalog_intern("kernel_a"), id1, "one id per text");
    cr_assert_neq(id1, id2);
    size_t offset = 0;
    metalog_copy_out(&offset, writer_sink, 0);
    char copy[4096];
    snprintf(copy, sizeof copy, "%s", path);
    writer_close();

    struct trace_reader *r = trace_reader_open(copy, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct trace_record rec;
    int metas = 0, calls = 0, strings = 0, threads = 0;
    while (trace_reader_next(r, &rec)) {
        switch (rec.type) {
        case PROF_REC_META:
            metas++;
            cr_assert_str_eq(trace_record_text(&rec, 4, NULL), "host");
            cr_assert_str_eq(trace_record_text(&rec, 9, NULL), "node-7");
            break;
        case PROF_REC_THREAD:
            threads++;
            cr_assert_eq(((const struct prof_rec_thread *)rec.data)->tid, 42);
            break;
        case PROF_REC_API_CALL: {
            const struct prof_rec_api_call *c = rec.data;
            calls++;
            cr_assert_eq(c->api, 5);
            cr_assert_eq(c->result, -35);
            cr_assert_eq(c->start, 1000);
            cr_assert_eq(c->end, 2500);
            cr_assert_eq(rec.size, 40);
            cr_assert_eq(((const uint64_t *)(c + 1))[1], 4096);
            break;
        }
        case PROF_REC_STRING: {
            const struct prof_rec_string *s = rec.data;
            strings++;
            cr_assert_str_eq(trace_record_text(&rec, sizeof *s, NULL),
                             s->id == id1 ? "kernel_a" : "kernel_b");
            break;
        }
        }
    }
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_NONE);
    cr_assert_eq(metas, 1);
    cr_assert_eq(threads, 1);
    cr_assert_eq(calls, 1);
    cr_assert_eq(strings, 2, "each text once in the log");
    trace_reader_close(r);
    unlink(copy);
}

Test(roundtrip, second_file_in_same_folder_does_not_overwrite, .init = make_dir)
{
    char err[256], first[4096];
    cr_assert_eq(writer_open(dir, "run2", "h", -1, 0, err, sizeof err), 0, "%s", err);
    snprintf(first, sizeof first, "%s", writer_path());
    writer_close();
    cr_assert_eq(writer_open(dir, "run2", "h", -1, 0, err, sizeof err), 0, "%s", err);
    cr_assert_str_neq(writer_path(), first);
    cr_assert(strstr(writer_path(), "_1.trace"), "got %s", writer_path());
    unlink(writer_path());
    writer_close();
    unlink(first);
}

Test(roundtrip, unwritable_folder_is_a_clear_error)
{
    char err[256] = "";
    if (getuid() == 0) {
        /* root writes anywhere; a path under a regular file cannot be made by anyone */
        cr_assert_neq(writer_open("/etc/hostname/sub", "r", "h", -1, 0, err, sizeof err), 0);
    } else {
        cr_assert_neq(writer_open("/proc/forbidden", "r", "h", -1, 0, err, sizeof err), 0);
    }
    cr_assert(strstr(err, "cannot create"), "message: %s", err);
}
