/* Offline symbolization rate: N distinct addresses spread over the code of a library with
 * DWARF (default: pyenv's libpython3.11, 2.3 MB of code) resolved to function, file:line
 * and inlined frames through report/symbols/, as profreport does for stacks. A first pass
 * warms libdw (it reads the units it meets); the second pass, N other addresses, is
 * timed and printed as addresses per second.
 *
 *   bench_symbols [LIBRARY] [N] */
#define _GNU_SOURCE
#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model.h"
#include "model_stacks.h"
#include "symbols.h"
#include "trace_read.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The executable segment of an ELF file: [lo, hi) virtual addresses. */
static int code_range(const char *path, uint64_t *lo, uint64_t *hi)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    Elf64_Ehdr eh;
    int rc = -1;
    if (fread(&eh, sizeof eh, 1, f) == 1 && fseek(f, (long)eh.e_phoff, SEEK_SET) == 0) {
        for (int i = 0; i < eh.e_phnum; i++) {
            Elf64_Phdr ph;
            if (fread(&ph, sizeof ph, 1, f) != 1)
                break;
            if (ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
                *lo = ph.p_vaddr;
                *hi = ph.p_vaddr + ph.p_memsz;
                rc = 0;
            }
        }
    }
    fclose(f);
    return rc;
}

static void add_map(struct model_process *p, const char *path, uint64_t bias, uint64_t end)
{
    static uint64_t buf[1024];
    struct prof_rec_map *m = (struct prof_rec_map *)buf;
    memset(buf, 0, sizeof buf);
    size_t len = strlen(path) + 1;
    m->h.type = PROF_REC_MAP;
    m->h.size = (uint16_t)prof_record_align((uint32_t)(sizeof *m + len));
    m->bias = bias;
    m->start = bias;
    m->end = bias + end;
    memcpy(m + 1, path, len);
    struct trace_record rec = {0, PROF_REC_MAP, m->h.size, buf};
    model_add_record(p, &rec);
}

static double resolve_pass(struct symbols *s, uint64_t bias, uint64_t lo, uint64_t hi, size_t n,
                           uint64_t salt, size_t *named)
{
    struct symbols_frame frames[32];
    double t0 = now_s();
    for (size_t i = 0; i < n; i++) {
        uint64_t off = lo + ((i * 2654435761u + salt) % (hi - lo));
        size_t k = symbols_resolve(s, bias + off, 1, frames, 32);
        *named += k && frames[0].function && frames[0].line;
    }
    return now_s() - t0;
}

int main(int argc, char **argv)
{
    const char *lib = argc > 1 ? argv[1] : "/root/.pyenv/versions/3.11.7/lib/libpython3.11.so.1.0";
    size_t n = argc > 2 ? strtoul(argv[2], NULL, 10) : 200000;
    uint64_t lo, hi;
    if (code_range(lib, &lo, &hi) != 0) {
        printf("symbolization: skipped (%s is not readable as ELF)\n", lib);
        return 0;
    }
    const uint64_t bias = 0x7f0000000000ull;
    struct model_process *p = model_process_new("bench", 0);
    add_map(p, lib, bias, hi + 0x1000);
    struct symbols *s = symbols_open(p, NULL, NULL);
    size_t named = 0;
    double warm = resolve_pass(s, bias, lo, hi, n, 0, &named);
    named = 0;
    double t = resolve_pass(s, bias, lo, hi, n, 7919, &named);
    printf("symbolization: %zu distinct addresses in %.2f s after a warming pass of %zu (%.2f s): "
           "%.0f k addresses/s (goal >= 100 k), %.0f%% named with a line\n",
           n, t, n, warm, (double)n / t / 1e3, 100.0 * (double)named / (double)n);
    symbols_close(s);
    model_process_free(p);
    return 0;
}
