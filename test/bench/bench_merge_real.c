/* bench_merge_real: the final merge of a many-rank job whose ranks are clones of one real
 * rank's trace (issue 22, item 4: the final merge of 1,024 ranks <= 5 s CPU and <= 200 MB,
 * on traces cloned from real runs, not only bench_merge's generated ones).
 *
 *   bench_merge_real PROFREPORT TRACE DIR [RANKS [RANKS_PER_NODE]]   (default 1024 64)
 *
 * TRACE is one rank of a real job (run.sh makes one: a torchrun gloo DDP run on CPU under
 * profrun: Python calls, PyTorch ops, collectives). Node by node, RANKS_PER_NODE copies of
 * it are written to DIR/nodeNNN/, each made a rank of its own: its metadata says rank R of
 * world RANKS, pid 1000000 + R, host and node nodeNNN, local rank R % RANKS_PER_NODE;
 * every other record is copied byte for byte. `PROFREPORT --summarize DIR/nodeNNN` then
 * summarizes the node and its traces are deleted. The final merge reads every summary
 * (`--ranks --comm --stragglers`: wall, CPU from wait4 and peak RSS beside the goals),
 * then as JSON, which is checked against rank 0's own report: every rank in the ranks
 * table with rank 0's steps, and every collective with RANKS times rank 0's calls. A
 * failed run or a wrong count fails the bench. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_proc.h"
#include "trace_format.h"

#define BENCH_GOAL_CPU_S 5.0
#define BENCH_GOAL_RSS_MB 200.0

struct bench_trace {
    unsigned char *bytes;
    size_t len, header; /* header: bytes before the first record */
};

static int bench_load(const char *path, struct bench_trace *t)
{
    char *s = NULL;
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) != 0 || (t->len = (size_t)ftell(f)) < 24 ||
        fseek(f, 0, SEEK_SET) != 0 || !(s = malloc(t->len)) || fread(s, 1, t->len, f) != t->len) {
        fprintf(stderr, "bench_merge_real: cannot read %s\n", path);
        if (f)
            fclose(f);
        free(s);
        return -1;
    }
    fclose(f);
    t->bytes = (unsigned char *)s;
    struct prof_file_header h;
    memcpy(&h, s, sizeof h);
    t->header = h.header_size;
    if (memcmp(h.magic, PROF_TRACE_MAGIC, PROF_TRACE_MAGIC_LEN) || t->header < sizeof h ||
        t->header > t->len) {
        fprintf(stderr, "bench_merge_real: %s is not a profrun trace\n", path);
        return -1;
    }
    return 0;
}

/* The value this clone's META key takes, or NULL to keep the record as it is. */
static const char *bench_meta_value(const char *key, unsigned rank, unsigned world,
                                    unsigned per_node, const char *path, char *buf, size_t len)
{
    unsigned node = rank / per_node;
    if (!strcmp(key, "pid"))
        snprintf(buf, len, "%u", 1000000 + rank);
    else if (!strcmp(key, "rank"))
        snprintf(buf, len, "%u", rank);
    else if (!strcmp(key, "local_rank"))
        snprintf(buf, len, "%u", rank % per_node);
    else if (!strcmp(key, "world_size"))
        snprintf(buf, len, "%u", world);
    else if (!strcmp(key, "node_rank"))
        snprintf(buf, len, "%u", node);
    else if (!strcmp(key, "host") || !strcmp(key, "node"))
        snprintf(buf, len, "node%03u", node);
    else if (!strcmp(key, "output_file"))
        snprintf(buf, len, "%s", path);
    else
        return NULL;
    return buf;
}

/* Writes t as rank of world to path; 0, or -1. */
static int bench_clone(const struct bench_trace *t, unsigned rank, unsigned world,
                       unsigned per_node, const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FILE *f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!f) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    static unsigned char rec[PROF_RECORD_MAX];
    int ok = fwrite(t->bytes, 1, t->header, f) == t->header;
    size_t off = t->header;
    while (ok && off + sizeof(struct prof_record_header) <= t->len) {
        struct prof_record_header h;
        memcpy(&h, t->bytes + off, sizeof h);
        if (h.size < sizeof h || off + h.size > t->len)
            break; /* a trace cut in a record: copied up to it */
        const unsigned char *src = t->bytes + off;
        size_t size = h.size;
        char value[4200];
        const char *key = (const char *)src + sizeof h;
        const char *v =
            h.type == PROF_REC_META && memchr(key, 0, size - sizeof h)
                ? bench_meta_value(key, rank, world, per_node, path, value, sizeof value)
                : NULL;
        size_t klen = v ? strlen(key) + 1 : 0, vlen = v ? strlen(v) + 1 : 0;
        if (v && sizeof h + klen + vlen <= PROF_RECORD_MAX - 8) {
            size = prof_record_align((uint32_t)(sizeof h + klen + vlen));
            memset(rec, 0, size);
            struct prof_record_header nh = {PROF_REC_META, (uint16_t)size};
            memcpy(rec, &nh, sizeof nh);
            memcpy(rec + sizeof nh, key, klen);
            memcpy(rec + sizeof nh + klen, v, vlen);
            src = rec;
        }
        ok = fwrite(src, 1, size, f) == size;
        off += h.size;
    }
    return fclose(f) == 0 && ok ? 0 : -1;
}

static json_t *bench_load_json(const char *path)
{
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    bench_check(root != NULL, "%s: not JSON (%s)", path, jerr.text);
    return root;
}

/* The final merge's JSON against rank 0's: every rank present with rank 0's steps; every
 * collective with world times its calls. */
static void bench_check_merge(const char *base_path, const char *merged_path, unsigned world)
{
    json_t *base = bench_load_json(base_path), *merged = bench_load_json(merged_path);
    if (!base || !merged) {
        json_decref(base);
        json_decref(merged);
        return;
    }
    json_t *brows = json_object_get(json_object_get(base, "ranks"), "rows");
    json_t *rows = json_object_get(json_object_get(merged, "ranks"), "rows");
    json_int_t steps = json_integer_value(json_object_get(json_array_get(brows, 0), "steps"));
    bench_check(json_array_size(brows) == 1 && steps > 0,
                "rank 0 alone: %zu rows in the ranks table, %lld steps", json_array_size(brows),
                (long long)steps);
    bench_check(json_array_size(rows) == world, "--ranks: %zu rows, %u ranks cloned",
                json_array_size(rows), world);
    size_t i, wrong = 0;
    json_t *row;
    json_array_foreach(rows, i, row)
    {
        if (json_integer_value(json_object_get(row, "steps")) != steps ||
            json_integer_value(json_object_get(row, "rank")) != (json_int_t)i)
            wrong++;
    }
    bench_check(wrong == 0, "--ranks: %zu ranks out of order or without rank 0's %lld steps", wrong,
                (long long)steps);
    json_t *bcomm = json_object_get(base, "comm"), *comm = json_object_get(merged, "comm");
    bench_check(json_array_size(bcomm) > 0 && json_array_size(comm) == json_array_size(bcomm),
                "--comm: %zu collectives merged, %zu in rank 0's", json_array_size(comm),
                json_array_size(bcomm));
    json_array_foreach(bcomm, i, row)
    {
        const char *name = json_string_value(json_object_get(row, "name"));
        json_int_t calls = json_integer_value(json_object_get(row, "calls"));
        json_t *m = NULL, *c;
        size_t k;
        json_array_foreach(comm, k, c)
        {
            const char *cn = json_string_value(json_object_get(c, "name"));
            if (!m && name && cn && !strcmp(name, cn))
                m = c;
        }
        json_int_t got = m ? json_integer_value(json_object_get(m, "calls")) : -1;
        bench_check(got == calls * (json_int_t)world,
                    "--comm: %s has %lld calls merged, rank 0 alone %lld (x %u ranks)",
                    name ? name : "?", (long long)got, (long long)calls, world);
    }
    json_decref(base);
    json_decref(merged);
}

static char **bench_views(char *profreport, int json, char **inputs, size_t n)
{
    char **a = calloc(n + 10, sizeof *a);
    size_t k = 0;
    a[k++] = profreport;
    a[k++] = "--ranks";
    a[k++] = "--comm";
    a[k++] = "--stragglers";
    if (json) {
        a[k++] = "--format";
        a[k++] = "json";
        a[k++] = "--limit";
        a[k++] = "0";
    }
    memcpy(a + k, inputs, n * sizeof *a);
    return a;
}

int main(int argc, char **argv)
{
    bench_name = "bench_merge_real";
    if (argc < 4) {
        fprintf(stderr, "usage: bench_merge_real PROFREPORT TRACE DIR [RANKS "
                        "[RANKS_PER_NODE]]   (default 1024 64)\n");
        return 2;
    }
    char *profreport = argv[1], *dir = argv[3];
    unsigned ranks = argc > 4 ? (unsigned)strtoul(argv[4], NULL, 10) : 1024;
    unsigned per_node = argc > 5 ? (unsigned)strtoul(argv[5], NULL, 10) : 64;
    if (ranks < 2 || per_node < 1) {
        fprintf(stderr, "bench_merge_real: RANKS >= 2, RANKS_PER_NODE >= 1\n");
        return 2;
    }
    if (per_node > ranks)
        per_node = ranks;
    unsigned nodes = (ranks + per_node - 1) / per_node;
    struct bench_trace t;
    if (bench_load(argv[2], &t) != 0 || bench_mkdir(dir) != 0)
        return 1;
    printf("merge_real: %u ranks cloned from a real rank's trace (%.1f MB), %u per node on %u "
           "nodes\n",
           ranks, bench_mb(t.len), per_node, nodes);
    char **node_dirs = calloc(nodes, sizeof *node_dirs);
    char path[4096], out[4096], err[4096], base_json[4096];
    snprintf(err, sizeof err, "%s/bench.err", dir);
    struct bench_sums sums = {0};
    for (unsigned n = 0; n < nodes; n++) {
        if (asprintf(&node_dirs[n], "%s/node%03u", dir, n) < 0 || bench_mkdir(node_dirs[n]))
            return 1;
        unsigned first = n * per_node, last = first + per_node < ranks ? first + per_node : ranks;
        for (unsigned r = first; r < last; r++) {
            snprintf(path, sizeof path, "%s/clone_node%03u_pid%u_rank%u.trace", node_dirs[n], n,
                     1000000 + r, r);
            if (bench_clone(&t, r, ranks, per_node, path) != 0) {
                fprintf(stderr, "bench_merge_real: cannot write %s: %s\n", path, strerror(errno));
                return 1;
            }
        }
        char *a[] = {profreport, "--summarize", node_dirs[n], NULL};
        snprintf(out, sizeof out, "%s/summarize.out", dir);
        struct bench_run s = bench_exec(a, out, err);
        if (s.status != 0) {
            printf("bench_merge_real: profreport --summarize %s exited %d\n", node_dirs[n],
                   s.status);
            return 1;
        }
        bench_node_summarized(node_dirs[n], last - first, &s, &sums);
        if (n == 0) { /* rank 0 alone, from its summary: what every rank must show */
            snprintf(path, sizeof path, "%s/clone_node000_pid1000000_rank0.summary", node_dirs[0]);
            char **b = bench_views(profreport, 1, (char *[]){path}, 1);
            snprintf(base_json, sizeof base_json, "%s/rank0.json", dir);
            struct bench_run r0 = bench_exec(b, base_json, err);
            bench_check(r0.status == 0, "rank 0's report exited %d", r0.status);
            free(b);
        }
        for (unsigned r = first; r < last; r++) {
            snprintf(path, sizeof path, "%s/clone_node%03u_pid%u_rank%u.trace", node_dirs[n], n,
                     1000000 + r, r);
            unlink(path);
        }
    }
    printf("summarize, all %u nodes: %.1f s wall, %.1f s CPU (%.3f s CPU per rank, %.1f MB of "
           "traces per CPU second), peak RSS %.1f MB; summaries %.1f KB per rank, %.1f MB in "
           "all\n",
           nodes, sums.wall, sums.cpu, sums.cpu / ranks, bench_mb(t.len) * ranks / sums.cpu,
           (double)sums.max_rss_kb / 1024, (double)sums.summary_bytes / ranks / 1024,
           bench_mb(sums.summary_bytes));

    size_t nin;
    char **inputs = bench_inputs(node_dirs, nodes, 1, &nin);
    char **a = bench_views(profreport, 0, inputs, nin);
    snprintf(out, sizeof out, "%s/final-merge.txt", dir);
    struct bench_run fin = bench_exec(a, out, err);
    bench_check(fin.status == 0, "the final merge exited %d", fin.status);
    double rss_mb = (double)fin.max_rss_kb / 1024;
    printf("final merge: %.2f s wall, %.2f s CPU (goal <= %.0f: %s), peak RSS %.1f MB (goal <= "
           "%.0f: %s): %u ranks from their summaries, --ranks --comm --stragglers\n",
           fin.seconds, fin.cpu, BENCH_GOAL_CPU_S, fin.cpu <= BENCH_GOAL_CPU_S ? "met" : "NOT met",
           rss_mb, BENCH_GOAL_RSS_MB, rss_mb <= BENCH_GOAL_RSS_MB ? "met" : "NOT met", ranks);
    free(a);
    a = bench_views(profreport, 1, inputs, nin);
    char merged_json[4096];
    snprintf(merged_json, sizeof merged_json, "%s/final-merge.json", dir);
    struct bench_run r = bench_exec(a, merged_json, err);
    bench_check(r.status == 0, "the final merge as JSON exited %d", r.status);
    bench_print_run("final merge as JSON (--limit 0)", &r);
    free(a);
    a = calloc(nin + 2, sizeof *a);
    a[0] = profreport;
    memcpy(a + 1, inputs, nin * sizeof *a);
    snprintf(out, sizeof out, "%s/final-default.txt", dir);
    r = bench_exec(a, out, err);
    bench_check(r.status == 0, "the default report exited %d", r.status);
    bench_print_run("default report", &r);
    free(a);
    bench_check_merge(base_json, merged_json, ranks);

    if (!getenv("BENCH_KEEP")) {
        for (size_t i = 0; i < nin; i++)
            unlink(inputs[i]);
        for (unsigned n = 0; n < nodes; n++)
            rmdir(node_dirs[n]);
        const char *names[] = {"rank0.json",        "final-merge.txt", "final-merge.json",
                               "final-default.txt", "summarize.out",   "bench.err"};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            unlink(path);
        }
    }
    for (size_t i = 0; i < nin; i++)
        free(inputs[i]);
    free(inputs);
    for (unsigned n = 0; n < nodes; n++)
        free(node_dirs[n]);
    free(node_dirs);
    free(t.bytes);
    if (bench_failures) {
        printf("merge_real: %d check(s) failed%s\n", bench_failures,
               getenv("BENCH_KEEP") ? "" : " (BENCH_KEEP=1 keeps the outputs)");
        return 1;
    }
    printf("merge_real: every count checked: %u ranks, each with rank 0's steps and "
           "collectives\n",
           ranks);
    return 0;
}
