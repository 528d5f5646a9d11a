/* trace_read: header checks, record iteration, cut-off and corrupt files. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/trace_build.h"
#include "trace_read.h"
#include "report_test.h"

static char path[64];

static void setup(void)
{
    report_test_temp(path, "report_reader");
}

static void teardown(void)
{
    unlink(path);
}

TestSuite(report_reader, .init = setup, .fini = teardown);

static void write_small(unsigned version, unsigned header_size)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, version, header_size, PROF_FEATURE_CUDART), 0);
    trace_build_meta(&b, "pid", "42");
    trace_build_string(&b, 7, "hello");
    trace_build_thread(&b, 42);
    trace_build_call(&b, 3, 0, 10, 20, 2, 5ull, 6ull);
    trace_build_end(&b, 30, 1, 0);
    cr_assert_eq(trace_build_close(&b), 0);
}

Test(report_reader, good_file_iterates_every_record)
{
    char err[256];
    write_small(PROF_TRACE_VERSION, 24);
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    cr_assert_eq(trace_reader_header(r)->features, PROF_FEATURE_CUDART);
    struct trace_record rec;
    uint16_t types[8];
    uint64_t offsets[8];
    int n = 0;
    while (trace_reader_next(r, &rec) && n < 8) {
        offsets[n] = rec.offset;
        types[n++] = rec.type;
    }
    cr_assert_eq(n, 5);
    cr_assert_eq(types[0], PROF_REC_META);
    cr_assert_eq(types[1], PROF_REC_STRING);
    cr_assert_eq(types[3], PROF_REC_API_CALL);
    cr_assert_eq(types[4], PROF_REC_END);
    cr_assert_eq(offsets[0], 24);
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_NONE);
    cr_assert_null(trace_reader_warning(r));
    cr_assert_eq(trace_reader_count(r), 5);
    trace_reader_close(r);
}

Test(report_reader, text_is_bounded_by_the_record)
{
    char err[256];
    write_small(PROF_TRACE_VERSION, 24);
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r);
    struct trace_record rec;
    cr_assert(trace_reader_next(r, &rec));
    size_t len;
    cr_assert_str_eq(trace_record_text(&rec, 4, &len), "pid");
    cr_assert_eq(len, 3);
    cr_assert_str_eq(trace_record_text(&rec, 8, NULL), "42");
    cr_assert_str_eq(trace_record_text(&rec, 1000, NULL), "");
    trace_reader_close(r);
}

Test(report_reader, larger_header_is_skipped)
{
    char err[256];
    write_small(PROF_TRACE_VERSION, 40);
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct trace_record rec;
    cr_assert(trace_reader_next(r, &rec));
    cr_assert_eq(rec.offset, 40);
    cr_assert_eq(rec.type, PROF_REC_META);
    trace_reader_close(r);
}

Test(report_reader, bad_magic)
{
    char err[256];
    FILE *f = fopen(path, "w");
    fputs("#!/bin/sh\necho this is not a trace at all\n", f);
    fclose(f);
    cr_assert_null(trace_reader_open(path, err, sizeof err));
    cr_assert(strstr(err, "not a profrun trace (bad magic)"), "%s", err);
    cr_assert(strstr(err, path), "%s", err);
}

Test(report_reader, empty_file_is_not_a_trace)
{
    char err[256];
    cr_assert_null(trace_reader_open(path, err, sizeof err));
    cr_assert(strstr(err, "not a profrun trace"), "%s", err);
}

Test(report_reader, newer_version)
{
    char err[256];
    write_small(PROF_TRACE_VERSION + 1, 24);
    cr_assert_null(trace_reader_open(path, err, sizeof err));
    cr_assert(strstr(err, "written by a newer profrun (format version 2, this reader knows 1)"),
              "%s", err);
}

Test(report_reader, header_size_too_small)
{
    char err[256];
    write_small(PROF_TRACE_VERSION, 16);
    cr_assert_null(trace_reader_open(path, err, sizeof err));
    cr_assert(strstr(err, "header size 16"), "%s", err);
}

Test(report_reader, unreadable_path)
{
    char err[256];
    cr_assert_null(trace_reader_open("/nonexistent/dir/x.trace", err, sizeof err));
    cr_assert(strstr(err, "No such file or directory"), "%s", err);
}

/* Writes META, THREAD, then the call record that will be damaged; returns its offset. */
static unsigned long long write_then(int damage_size)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "42");
    trace_build_thread(&b, 42);
    unsigned long long at = b.offset;
    trace_build_call(&b, 3, 0, 10, 20, 2, 5ull, 6ull);
    trace_build_end(&b, 30, 1, 0);
    cr_assert_eq(trace_build_close(&b), 0);
    if (damage_size >= 0) {
        FILE *f = fopen(path, "r+b");
        uint16_t size = (uint16_t)damage_size;
        fseek(f, (long)at + 2, SEEK_SET);
        fwrite(&size, 2, 1, f);
        fclose(f);
    } else {
        cr_assert_eq(truncate(path, (off_t)(at - (unsigned long long)damage_size)), 0);
    }
    return at;
}

static int count_records(struct trace_reader *r)
{
    struct trace_record rec;
    int n = 0;
    while (trace_reader_next(r, &rec))
        n++;
    return n;
}

Test(report_reader, truncated_mid_record)
{
    char err[256], want[512];
    unsigned long long at = write_then(-20); /* 20 bytes into the 40-byte call */
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    cr_assert_eq(count_records(r), 2);
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_TRUNCATED);
    snprintf(want, sizeof want,
             "%s: truncated at byte %llu (record cut off); reporting the 2 records before it", path,
             at);
    cr_assert_str_eq(trace_reader_warning(r), want);
    trace_reader_close(r);
}

Test(report_reader, truncated_inside_record_header)
{
    char err[256];
    write_then(-2);
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r);
    cr_assert_eq(count_records(r), 2);
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_TRUNCATED);
    trace_reader_close(r);
}

Test(report_reader, corrupt_sizes)
{
    static const int sizes[] = {0, 4, 12, 16 /* < 24 for a call */};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        char err[256], want[128];
        unsigned long long at = write_then(sizes[i]);
        struct trace_reader *r = trace_reader_open(path, err, sizeof err);
        cr_assert_not_null(r);
        cr_assert_eq(count_records(r), 2, "size %d", sizes[i]);
        cr_assert_eq(trace_reader_stop(r), TRACE_STOP_CORRUPT, "size %d", sizes[i]);
        snprintf(want, sizeof want, "corrupt record at byte %llu", at);
        cr_assert(strstr(trace_reader_warning(r), want), "%s", trace_reader_warning(r));
        cr_assert(strstr(trace_reader_warning(r), "reporting the 2 records before it"));
        trace_reader_close(r);
    }
}

Test(report_reader, size_past_end_is_truncation)
{
    char err[256];
    write_then(4096); /* a plausible size running past the end of the file */
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r);
    cr_assert_eq(count_records(r), 2);
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_TRUNCATED);
    trace_reader_close(r);
}

Test(report_reader, unknown_type_is_skipped_by_size)
{
    char err[256];
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    unsigned char unknown[24] = {250, 0, 24, 0};
    trace_build_raw(&b, unknown, sizeof unknown);
    trace_build_thread(&b, 9);
    cr_assert_eq(trace_build_close(&b), 0);
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    struct trace_record rec;
    cr_assert(trace_reader_next(r, &rec));
    cr_assert_eq(rec.type, 250);
    cr_assert_eq(rec.size, 24);
    cr_assert(trace_reader_next(r, &rec));
    cr_assert_eq(rec.type, PROF_REC_THREAD);
    cr_assert_eq(rec.offset, 48);
    cr_assert_not(trace_reader_next(r, &rec));
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_NONE);
    trace_reader_close(r);
}

Test(report_reader, short_torch_ops_read_as_torch_ops)
{
    /* The writer's 32-byte form of an op, and the 48-byte one where it does not fit (a
     * forward thread), read alike: every consumer of the reader sees a TORCH_OP. */
    char err[256];
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_thread(&b, 9);
    trace_build_torch_op(&b, 3, 1000, 1000 + 0xfffffff0ull, -1, 0, 0, 2, 5);
    trace_build_torch_op(&b, 4, 50, 70, 7, 1, 1, 0, 0);
    trace_build_torch_op(&b, 6, 10, 90, 2000000000, 0, 0, 0, 0);
    unsigned char cut[24] = {PROF_REC_TORCH_OP_SHORT, 0, 24, 0}; /* shorter than the form */
    trace_build_raw(&b, cut, sizeof cut);
    cr_assert_eq(trace_build_close(&b), 0);
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    struct trace_record rec;
    cr_assert(trace_reader_next(r, &rec)); /* THREAD */
    cr_assert(trace_reader_next(r, &rec));
    cr_assert_eq(rec.type, PROF_REC_TORCH_OP);
    cr_assert_eq(rec.size, 32, "the file's bytes");
    const struct prof_rec_torch_op *op = rec.data;
    cr_assert_eq(op->name_sid, 3);
    cr_assert_eq(op->start, 1000);
    cr_assert_eq(op->end, 1000 + 0xfffffff0ull);
    cr_assert_eq(op->sequence_nr, -1);
    cr_assert_eq(op->fwd_thread, 0);
    cr_assert_eq(op->depth, 2);
    cr_assert_eq(op->shapes_sid, 5);
    cr_assert(trace_reader_next(r, &rec));
    cr_assert_eq(rec.type, PROF_REC_TORCH_OP);
    cr_assert_eq(rec.size, 48);
    op = rec.data;
    cr_assert_eq(op->fwd_thread, 1);
    cr_assert_eq(op->sequence_nr, 7);
    cr_assert_eq(op->scope, 1);
    cr_assert(trace_reader_next(r, &rec));
    cr_assert_eq(rec.size, 32);
    op = rec.data;
    cr_assert_eq(op->sequence_nr, 2000000000);
    cr_assert_eq(op->end, 90);
    cr_assert_not(trace_reader_next(r, &rec));
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_CORRUPT);
    trace_reader_close(r);
}

Test(report_reader, many_records_cross_buffer_refills)
{
    char err[256];
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_thread(&b, 1);
    /* ~9.6 MB of 40-byte calls: more than two reader buffers. */
    for (int i = 0; i < 240000; i++)
        trace_build_call(&b, 0, 0, (uint64_t)i, (uint64_t)i + 1, 2, (uint64_t)i, 0ull);
    cr_assert_eq(trace_build_close(&b), 0);
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    struct trace_record rec;
    uint64_t n = 0, bad = 0;
    while (trace_reader_next(r, &rec)) {
        if (rec.type == PROF_REC_API_CALL) {
            const struct prof_rec_api_call *c = rec.data;
            uint64_t arg0;
            memcpy(&arg0, c + 1, 8);
            bad += c->start != n || arg0 != n;
            n++;
        }
    }
    cr_assert_eq(n, 240000);
    cr_assert_eq(bad, 0);
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_NONE);
    trace_reader_close(r);
}

/* The buffer is sized to the file when it is opened; a file that grows while read (a
 * live trace) still gives its later records whole, even one larger than that buffer. */
Test(report_reader, file_growing_while_read_gives_a_record_larger_than_the_buffer)
{
    char err[256];
    write_small(PROF_TRACE_VERSION, 24); /* 5 records, a few hundred bytes */
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    cr_assert_not_null(r, "%s", err);
    static char text[60000];
    memset(text, 'x', sizeof text - 1);
    FILE *f = fopen(path, "ab");
    cr_assert_not_null(f);
    struct trace_build b = {.f = f};
    struct prof_rec_note note = {{PROF_REC_NOTE, 0}, 0};
    trace_build_record(&b, PROF_REC_NOTE, &note, sizeof note, text, NULL);
    cr_assert_eq(fclose(f), 0);
    struct trace_record rec;
    size_t n = 0, big = 0;
    while (trace_reader_next(r, &rec)) {
        n++;
        if (rec.type == PROF_REC_NOTE)
            big = strlen(trace_record_text(&rec, sizeof note, NULL));
    }
    cr_assert_eq(trace_reader_stop(r), TRACE_STOP_NONE, "%s", trace_reader_warning(r));
    cr_assert_eq(n, 6);
    cr_assert_eq(big, sizeof text - 1);
    trace_reader_close(r);
}
