/* export_perfetto_writer: the Perfetto export's writer, tracks and track events, shared by
 * export_perfetto.c (tracks, slices, flows) and export_perfetto_busy.c (GPU busy counters). */
#ifndef REPORT_EXPORT_PERFETTO_WRITER_H
#define REPORT_EXPORT_PERFETTO_WRITER_H

#include <stdint.h>
#include <stdio.h>

#include "export_timeline.h"
#include "hashmap.h"
#include "perfetto_trace.pb-c.h"
#include "timeline.h"

/* Interning spaces of a sequence, each numbered from 1. */
enum pf_space { PF_SPACE_NAME, PF_SPACE_ANNOTATION, PF_SPACE_STRING, PF_SPACE_CATEGORY, PF_SPACES };

/* Forward -> backward flow ids already begun or ended, direct-mapped (an id comes back to
 * its slot only after PF_FLOW_SLOTS others): one start and one end per arrow, though many
 * forward ops share a sequence number. */
#define PF_FLOW_SLOTS 4096

/* Track keys within one process. */
enum pf_track_kind {
    PF_TRACK_THREAD = 1,
    PF_TRACK_NVTX,
    PF_TRACK_ACTIONS,
    PF_TRACK_GPU,
    PF_TRACK_STREAM,
    PF_TRACK_COUNTER,
    PF_TRACK_STEPS
};
#define PF_TRACK_KEY(kind, a, b) ((uint64_t)(kind) << 60 | (uint64_t)(a) << 32 | (uint64_t)(b))

struct pf_track {
    uint64_t uuid;
    uint32_t seq;
    uint64_t clock; /* the incremental clock's value on this sequence */
    uint64_t next_iid[PF_SPACES];
    struct timeline_nest *nest; /* slice tracks: what was written, to make slices nest */
    uint64_t category_iid[TIMELINE_KIND_COUNT]; /* 0: not interned yet on this sequence */
    struct u64map iids;                         /* interning key -> iid */
};

struct pf_writer {
    FILE *f;
    uint64_t next_uuid;
    uint32_t next_seq;
    const struct model_process *p;
    size_t proc_index;
    uint64_t proc_uuid;
    struct u64map tracks; /* track key -> struct pf_track *; one process at a time */
    uint8_t *out;         /* PF_OUT_SIZE bytes of packets not yet written */
    size_t used;
    uint8_t *zbuf; /* out compressed */
    size_t zcap;
    uint8_t *buf; /* a packet built by protobuf-c */
    size_t cap;
    struct export_timeline_stats stats;
    int failed;
    /* GPU busy time per device and PF_BUSY_BIN_NS bin of one process: device << 40 | bin
     * -> kernel ns in it (summed over streams; shown capped at 100 %). */
    struct u64map busy;
    /* flows of the process being written: launch -> activity by correlation id, where
     * the file has both (timeline_has_flow; timeline_bits, though CUPTI may give one launch
     * several activities: a graph launch), forward op -> backward function by sequence
     * number (pf_flow_once) */
    struct idbits launch_begun, launch_ended;
    uint64_t fwd_begun[PF_FLOW_SLOTS], fwd_ended[PF_FLOW_SLOTS];
    struct u64map pending; /* tid -> struct pf_pending *: the thread's last forward op */
};

#define PF_BUSY_BIN_NS 10000000u /* 10 ms */

/* One track event as pf_write_event encodes it. */
struct pf_event {
    uint64_t ts;
    int absolute;          /* ts on BOOTTIME, not a delta on the sequence's clock */
    unsigned type;         /* TrackEvent.Type */
    uint64_t category_iid; /* 0: none */
    uint64_t name_iid;     /* 0: none */
    int has_counter;
    int64_t counter;
    unsigned flow_field; /* PF_F_EVENT_FLOW_IDS or PF_F_EVENT_TERMINATING_FLOW_IDS; 0: none */
    uint64_t flow;
    uint64_t ann_name_iid; /* 0: no debug annotation */
    unsigned ann_field;    /* PF_F_ANNOTATION_UINT or PF_F_ANNOTATION_STRING_IID */
    uint64_t ann_value;
};

/* The event's time: a delta on the sequence's clock, or absolute when earlier. */
void pf_time(struct pf_track *t, struct pf_event *e, uint64_t ts);
/* One track event (and the interned data it brings, if any) as one packet of seq. */
void pf_write_event(struct pf_writer *w, uint32_t seq, const struct pf_event *e,
                    const Perfetto__Protos__InternedData *interned);
/* A new track on a sequence of its own under parent, its clock from t0. */
struct pf_track *pf_track_new(struct pf_writer *w, uint64_t key, uint64_t parent, uint64_t t0,
                              Perfetto__Protos__TrackDescriptor *desc);
/* The track of a key in the process being written, or NULL. */
struct pf_track *pf_find(struct pf_writer *w, uint64_t key);
/* export_perfetto_busy.c: a kernel's time into its device's busy bins; after a process's
 * events, the "GPU d busy %" counter tracks. */
void pf_busy_add(struct pf_writer *w, const struct timeline_event *ev);
void pf_busy_write(struct pf_writer *w);

#endif
