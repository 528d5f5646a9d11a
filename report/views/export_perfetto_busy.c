/* The Perfetto export's GPU busy counters: each device's kernel time in PF_BUSY_BIN_NS bins,
 * written as a "GPU d busy %" counter track after a process's events. */
#include <stdio.h>
#include <stdlib.h>

#include "alloc.h"
#include "export_perfetto_writer.h"

/* A kernel's time into the busy bins of its device. */
void pf_busy_add(struct pf_writer *w, const struct timeline_event *ev)
{
    uint64_t start = ev->start_ns, end = ev->end_ns > ev->start_ns ? ev->end_ns : ev->start_ns;
    for (uint64_t bin = start / PF_BUSY_BIN_NS, steps = 0;
         bin * PF_BUSY_BIN_NS < end && steps < 100000; bin++, steps++) {
        uint64_t lo = bin * PF_BUSY_BIN_NS, hi = lo + PF_BUSY_BIN_NS;
        uint64_t a = start > lo ? start : lo, b = end < hi ? end : hi;
        uint64_t *slot = u64map_slot(&w->busy, (uint64_t)(ev->device & 0xffffff) << 40 | bin);
        if (!slot)
            report_oom();
        *slot += b - a;
    }
}

static int pf_busy_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void pf_busy_value(struct pf_writer *w, struct pf_track *t, uint64_t bin, int64_t value)
{
    struct pf_event c = {.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER,
                         .has_counter = 1,
                         .counter = value};
    pf_time(t, &c, bin * PF_BUSY_BIN_NS);
    pf_write_event(w, t->seq, &c, NULL);
}

/* After a process's events: a "GPU d busy %" counter track per device, one value per bin
 * with kernels, and 0 where a run of such bins ends. */
void pf_busy_write(struct pf_writer *w)
{
    if (!w->busy.count)
        return;
    uint64_t *keys = malloc(w->busy.count * sizeof *keys);
    if (!keys)
        report_oom();
    size_t n = 0;
    uint64_t k, v;
    for (size_t i = 0; u64map_next(&w->busy, &i, &k, &v);)
        keys[n++] = k;
    qsort(keys, n, sizeof *keys, pf_busy_cmp);
    const uint64_t mask = (1ull << 40) - 1;
    struct pf_track *t = NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t device = (uint32_t)(keys[i] >> 40);
        uint64_t bin = keys[i] & mask;
        if (i == 0 || device != (uint32_t)(keys[i - 1] >> 40)) {
            uint64_t tkey = PF_TRACK_KEY(PF_TRACK_COUNTER, 1, device);
            if (!(t = pf_find(w, tkey))) {
                Perfetto__Protos__TrackDescriptor desc = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
                Perfetto__Protos__CounterDescriptor counter =
                    PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
                char name[64];
                snprintf(name, sizeof name, "GPU %u busy %%", device);
                desc.name = name;
                desc.counter = &counter;
                t = pf_track_new(w, tkey, w->proc_uuid, bin * PF_BUSY_BIN_NS, &desc);
            }
        }
        uint64_t ns = *u64map_find(&w->busy, keys[i]);
        pf_busy_value(w, t, bin, ns >= PF_BUSY_BIN_NS ? 100 : (int64_t)(ns * 100 / PF_BUSY_BIN_NS));
        int last_of_run = i + 1 == n || keys[i + 1] != keys[i] + 1;
        if (last_of_run)
            pf_busy_value(w, t, bin + 1, 0);
    }
    free(keys);
}
