/* The records that open a trace file: the process's metadata, the wrapped APIs' names and
 * the clocks (preamble.h). Written by the drain-lock holder (collector.c). */
#define _GNU_SOURCE
#include "preamble.h"

#include <fcntl.h>
#include <stdio.h>
#include <sched.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "trace_format.h"
#include "writer.h"

void preamble_write_meta(const char *key, const char *value)
{
    struct prof_record_header h = {PROF_REC_META, 0};
    writer_append_record(PROF_REC_META, &h, sizeof h, key, value);
}

static void preamble_write_meta_long(const char *key, long long value)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", value);
    preamble_write_meta(key, buf);
}

static void preamble_write_clock(uint64_t ticks, uint64_t mono, uint64_t real)
{
    struct prof_rec_clock rec;
    memset(&rec, 0, sizeof rec);
    rec.h.type = PROF_REC_CLOCK;
    rec.h.size = sizeof rec;
    rec.ticks = ticks;
    rec.monotonic_ns = mono;
    rec.realtime_ns = real;
    writer_append(&rec, sizeof rec);
}

void preamble_write_clock_now(void)
{
    uint64_t t, m, r;
    clock_sample(&t, &m, &r);
    preamble_write_clock(t, m, r);
}

/* Reads a small /proc file into buf (open/read only: a signal handler may call this). */
static void preamble_read_small(const char *path, char *buf, size_t len)
{
    buf[0] = '\0';
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    buf[strcspn(buf, "\n")] = '\0';
}

/* This process's start in clock ticks since boot (/proc/self/stat, field 22), with the
 * boot's id: a reader on the same host and boot tells "still running" (the pid is alive
 * with this start) from "killed" (it is not). With its pid namespace, they tell two
 * processes that held one pid apart (report/merge/pid_clash.c). */
static void preamble_write_process_start(void)
{
    char stat[1024], boot[64];
    preamble_read_small("/proc/self/stat", stat, sizeof stat);
    const char *p = strrchr(stat, ')'); /* the command may hold spaces and parentheses */
    for (int field = 2; p && *p && field < 22; p++)
        if (*p == ' ')
            field++;
    if (p && *p) {
        char start[32];
        size_t n = strcspn(p, " ");
        if (n < sizeof start) {
            memcpy(start, p, n);
            start[n] = '\0';
            preamble_write_meta("proc_start_ticks", start);
        }
    }
    preamble_read_small("/proc/sys/kernel/random/boot_id", boot, sizeof boot);
    if (boot[0])
        preamble_write_meta("boot_id", boot);
    /* "pid:[4026531836]": processes of two pid namespaces may hold one pid (containers) */
    char ns[64];
    ssize_t n = readlink("/proc/self/ns/pid", ns, sizeof ns - 1);
    if (n > 0) {
        ns[n] = '\0';
        preamble_write_meta("pid_ns", ns);
    }
}

void preamble_write(const struct preamble_info *in)
{
    char host[256] = "", exe[4096] = "";
    gethostname(host, sizeof host - 1);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    preamble_write_meta("profiler_version", COLLECTOR_PROFILER_VERSION);
    preamble_write_meta_long("pid", getpid());
    preamble_write_meta_long("ppid", getppid());
    preamble_write_process_start();
    preamble_write_meta("host", host);
    cpu_set_t cpus; /* the CPUs it may run on: ranks sharing fewer compete for them */
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0)
        preamble_write_meta_long("cpus", CPU_COUNT(&cpus));
    preamble_write_meta("exe", exe);
    for (int i = 0; in->argv && i < in->argc; i++)
        preamble_write_meta("argv", in->argv[i]);
    preamble_write_meta("run_id", in->cfg->run_id);
    preamble_write_meta("output_file", writer_path());
    if (in->cfg->rank >= 0)
        preamble_write_meta_long("rank", in->cfg->rank);
    if (in->cfg->local_rank >= 0)
        preamble_write_meta_long("local_rank", in->cfg->local_rank);
    if (in->cfg->world_size >= 0)
        preamble_write_meta_long("world_size", in->cfg->world_size);
    preamble_write_meta_long("start_realtime_ns", (long long)in->real);
    preamble_write_meta_long("start_monotonic_ns", (long long)in->mono);
    preamble_write_meta("clock", prof_clock_tsc ? "tsc" : "monotonic");
    preamble_write_meta_long("ring_bytes", (long long)in->cfg->ring_bytes);
    preamble_write_meta_long("ring_kept_bytes",
                             (long long)collector_ring_kept(in->cfg->ring_bytes));
    for (int t = 0; t < in->ntables; t++) {
        for (size_t i = 0; i < in->tables[t].count; i++) {
            const struct prof_api_desc *d = &in->tables[t].table[i];
            struct prof_rec_api_name rec = {{PROF_REC_API_NAME, 0}, d->id, d->category, d->nargs};
            writer_append_record(PROF_REC_API_NAME, &rec, sizeof rec, d->name, d->args);
        }
    }
    preamble_write_clock(in->ticks, in->mono, in->real);
    preamble_write_clock_now();
}
