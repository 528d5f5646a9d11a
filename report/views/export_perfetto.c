/* --perfetto: the processes' timelines as a Perfetto trace (TracePacket/TrackEvent protobuf
 * of report/views/perfetto/perfetto_trace.proto), which ui.perfetto.dev and trace_processor
 * open natively. protobuf-c (code generated from that file) packs the descriptors, clock
 * snapshots and interned data; the track events, nearly every packet, are encoded here
 * (pf_write_event: protobuf-c's generic packing cost 30 % of the export's CPU time).
 *
 * Tracks: a process track per process ("command [rank N]"); a thread track per thread with
 * the Python calls, PyTorch ops, CUDA runtime/driver calls (CUPTI's and our wrappers') and
 * cuBLAS/cuDNN calls; child tracks "NVTX" and "Actions" under the thread; a "GPU d" track
 * per device with a track per stream (kernels, copies, sets); a counter track of live
 * tensor bytes per device. A flow goes from each launch (CUPTI API call) to the kernel,
 * copy or set of the same correlation id (runtime or driver call, as CUPTI correlates them),
 * and from a forward op to the backward function autograd made for it: one id per arrow,
 * with one start and one end (pf_flow_once). Every slice has a category (pf_categories;
 * torch.distributed's ops and process-group spans that of comm, as --comm counts them),
 * and the slices of each track nest (timeline_nest).
 *
 * Size: every track has its own packet sequence, so that its events need no track_uuid
 * (TracePacketDefaults) and carry their time as a delta on a sequence-scoped incremental
 * clock (id 64) — a few bytes instead of eight. Spans reach us when they end, so a parent
 * comes after its children: an event earlier than its sequence's last time is written
 * with an absolute BOOTTIME timestamp instead (readers sort by time). Names, annotation
 * names and shapes are interned per sequence (InternedData), each sent once. Batches of
 * 256 KiB of packets are then deflated into TracePacket.compressed_packets, as Perfetto's
 * own tracing service writes them (bench_timeline: 38.5 bytes per event before, ~5 after). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "alloc.h"
#include "export_perfetto_writer.h"
#include "export_timeline.h"
#include "out_file.h"
#include "perfetto_trace.pb-c.h"
#include "pid_clash.h"
#include "timeline.h"

#define PF_CLOCK_BOOTTIME 6
#define PF_CLOCK_INCREMENTAL 64
#define PF_SEQ_CLEARED 1
#define PF_SEQ_NEEDS_STATE 2
/* Packets are gathered PF_OUT_SIZE bytes at a time and each batch written as one
 * TracePacket.compressed_packets (deflate, level 1): Perfetto's readers expand them, and
 * they must stay under 512 KiB. */
#define PF_OUT_SIZE (256 << 10)
#define PF_DEFLATE_LEVEL 1
#define PF_F_PACKET_COMPRESSED 50

/* Interning keys of one sequence beside event names (timeline name keys are < 1 << 56). */
#define PF_KEY_ANNOTATION ((uint64_t)0xff << 56)
#define PF_KEY_SHAPES ((uint64_t)0xfe << 56)

/* The category of each kind of slice (TrackEvent.category_iids): the UI filters and
 * colours by it, trace_processor's slice.category holds it. */
static const char *const pf_categories[TIMELINE_KIND_COUNT] = {[TIMELINE_PYTHON] = "python",
                                                               [TIMELINE_OP] = "cpu_op",
                                                               [TIMELINE_SCOPE] = "user_annotation",
                                                               [TIMELINE_API] = "cuda_api",
                                                               [TIMELINE_LIBRARY] = "cuda_library",
                                                               [TIMELINE_COMM] = "comm",
                                                               [TIMELINE_RUNTIME] = "cuda_runtime",
                                                               [TIMELINE_DRIVER] = "cuda_driver",
                                                               [TIMELINE_NVTX] = "nvtx",
                                                               [TIMELINE_ACTION] = "action",
                                                               [TIMELINE_KERNEL] = "kernel",
                                                               [TIMELINE_MEMCPY] = "gpu_memcpy",
                                                               [TIMELINE_MEMSET] = "gpu_memset",
                                                               [TIMELINE_MEMORY] = "memory",
                                                               [TIMELINE_STEP] = "step"};

enum pf_annotation { PF_ANN_SHAPES, PF_ANN_BYTES, PF_ANN_CORRELATION, PF_ANN_COUNT };
static const char *const pf_annotation_names[PF_ANN_COUNT] = {"shapes", "bytes", "correlation"};

static uint8_t *pf_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static void pf_write(struct pf_writer *w, const void *data, size_t len)
{
    if (fwrite(data, 1, len, w->f) != len)
        w->failed = 1;
    w->stats.bytes += len;
}

/* Writes the gathered packets as one compressed_packets packet. */
static void pf_flush(struct pf_writer *w)
{
    if (!w->used)
        return;
    uLongf len = w->zcap;
    if (compress2(w->zbuf, &len, w->out, w->used, PF_DEFLATE_LEVEL) != Z_OK) {
        w->failed = 1;
        return;
    }
    uint8_t head[32], *h = head;
    uint8_t inner[16], *i = pf_varint(inner, (uint64_t)PF_F_PACKET_COMPRESSED << 3 | 2);
    i = pf_varint(i, len);
    *h++ = 1 << 3 | 2;
    h = pf_varint(h, (size_t)(i - inner) + len);
    memcpy(h, inner, (size_t)(i - inner));
    h += i - inner;
    pf_write(w, head, (size_t)(h - head));
    pf_write(w, w->zbuf, len);
    w->used = 0;
}

/* Appends one TracePacket of len bytes, framed as Trace.packet (field 1, length-delimited). */
static void pf_put(struct pf_writer *w, const uint8_t *body, size_t len)
{
    if (w->used + len + 11 > PF_OUT_SIZE)
        pf_flush(w);
    uint8_t *p = w->out + w->used;
    *p++ = 1 << 3 | 2;
    p = pf_varint(p, len);
    if (len + 11 > PF_OUT_SIZE) { /* never for our packets: names are short */
        pf_flush(w);
        uint8_t head[11], *h = head;
        *h++ = 1 << 3 | 2;
        h = pf_varint(h, len);
        pf_write(w, head, (size_t)(h - head));
        pf_write(w, body, len);
    } else {
        memcpy(p, body, len);
        w->used = (size_t)(p + len - w->out);
    }
    w->stats.packets++;
}

/* One packet built with protobuf-c: descriptors, clock snapshots, new interned data. */
static void pf_write_packet(struct pf_writer *w, const Perfetto__Protos__TracePacket *pkt)
{
    size_t len = protobuf_c_message_get_packed_size(&pkt->base);
    w->buf = report_grow(w->buf, &w->cap, len, 1);
    protobuf_c_message_pack(&pkt->base, w->buf);
    pf_put(w, w->buf, len);
}

static void pf_write_descriptor(struct pf_writer *w, uint32_t seq, uint64_t ts,
                                Perfetto__Protos__TrackDescriptor *desc)
{
    Perfetto__Protos__TracePacket pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    pkt.has_timestamp = pkt.has_timestamp_clock_id = 1;
    pkt.timestamp = ts;
    pkt.timestamp_clock_id = PF_CLOCK_BOOTTIME;
    pkt.has_trusted_packet_sequence_id = 1;
    pkt.trusted_packet_sequence_id = seq;
    pkt.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
    pkt.track_descriptor = desc;
    pf_write_packet(w, &pkt);
}

/* A new track on a sequence of its own: its clock starts at t0. desc has its name, thread
 * or counter set; uuid and parent are filled here. */
struct pf_track *pf_track_new(struct pf_writer *w, uint64_t key, uint64_t parent, uint64_t t0,
                              Perfetto__Protos__TrackDescriptor *desc)
{
    struct pf_track *t = calloc(1, sizeof *t);
    uint64_t *slot = u64map_slot(&w->tracks, key);
    if (!t || !slot)
        report_oom();
    *slot = (uintptr_t)t;
    t->uuid = w->next_uuid++;
    t->seq = w->next_seq++;
    t->clock = t0;
    for (int i = 0; i < PF_SPACES; i++)
        t->next_iid[i] = 1;
    u64map_init(&t->iids);

    /* The sequence's start: the incremental clock at t0, its defaults. */
    Perfetto__Protos__ClockSnapshot__Clock inc = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
    Perfetto__Protos__ClockSnapshot__Clock boot = PERFETTO__PROTOS__CLOCK_SNAPSHOT__CLOCK__INIT;
    inc.has_clock_id = inc.has_timestamp = inc.has_is_incremental = 1;
    inc.clock_id = PF_CLOCK_INCREMENTAL;
    inc.timestamp = t0;
    inc.is_incremental = 1;
    boot.has_clock_id = boot.has_timestamp = 1;
    boot.clock_id = PF_CLOCK_BOOTTIME;
    boot.timestamp = t0;
    Perfetto__Protos__ClockSnapshot__Clock *clocks[2] = {&inc, &boot};
    Perfetto__Protos__ClockSnapshot snap = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
    snap.n_clocks = 2;
    snap.clocks = clocks;
    Perfetto__Protos__TrackEventDefaults ted = PERFETTO__PROTOS__TRACK_EVENT_DEFAULTS__INIT;
    ted.has_track_uuid = 1;
    ted.track_uuid = t->uuid;
    Perfetto__Protos__TracePacketDefaults defs = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
    defs.has_timestamp_clock_id = 1;
    defs.timestamp_clock_id = PF_CLOCK_INCREMENTAL;
    defs.track_event_defaults = &ted;
    Perfetto__Protos__TracePacket pkt = PERFETTO__PROTOS__TRACE_PACKET__INIT;
    pkt.has_timestamp = pkt.has_timestamp_clock_id = 1;
    pkt.timestamp = t0;
    pkt.timestamp_clock_id = PF_CLOCK_BOOTTIME;
    pkt.has_trusted_packet_sequence_id = pkt.has_sequence_flags = 1;
    pkt.trusted_packet_sequence_id = t->seq;
    pkt.sequence_flags = PF_SEQ_CLEARED;
    pkt.trace_packet_defaults = &defs;
    pkt.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
    pkt.clock_snapshot = &snap;
    pf_write_packet(w, &pkt);

    desc->has_uuid = 1;
    desc->uuid = t->uuid;
    if (parent) {
        desc->has_parent_uuid = 1;
        desc->parent_uuid = parent;
    }
    pf_write_descriptor(w, t->seq, t0, desc);
    return t;
}

static const char *pf_thread_name(const struct model_process *p, uint32_t tid)
{
    for (size_t i = 0; i < p->nthreads; i++)
        if (p->threads[i].tid == tid)
            return p->threads[i].name;
    return NULL;
}

struct pf_track *pf_find(struct pf_writer *w, uint64_t key)
{
    return u64map_get_ptr(&w->tracks, key);
}

static struct pf_track *pf_thread_track(struct pf_writer *w, uint32_t tid, uint64_t t0)
{
    uint64_t key = PF_TRACK_KEY(PF_TRACK_THREAD, 0, tid);
    struct pf_track *t = pf_find(w, key);
    if (t)
        return t;
    Perfetto__Protos__ThreadDescriptor thread = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
    thread.has_pid = thread.has_tid = 1;
    thread.pid = (int32_t)pid_clash_export_pid(w->p);
    thread.tid = (int32_t)tid;
    char name[64];
    const char *tn = pf_thread_name(w->p, tid);
    if (!tn || !*tn) {
        snprintf(name, sizeof name, "thread %u", tid);
        tn = name;
    }
    thread.thread_name = (char *)tn;
    Perfetto__Protos__TrackDescriptor desc = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    desc.thread = &thread;
    return pf_track_new(w, key, 0, t0, &desc);
}

/* The track an event goes on, made on first use. */
static struct pf_track *pf_track_of(struct pf_writer *w, const struct timeline_event *ev)
{
    Perfetto__Protos__TrackDescriptor desc = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    char name[96];
    uint64_t key;
    struct pf_track *t;
    switch (ev->kind) {
    case TIMELINE_NVTX:
    case TIMELINE_ACTION:
    case TIMELINE_STEP: {
        static const char *const names[] = {"NVTX", "Actions", "Training steps"};
        int which = ev->kind == TIMELINE_NVTX ? 0 : ev->kind == TIMELINE_ACTION ? 1 : 2;
        static const int kinds[] = {PF_TRACK_NVTX, PF_TRACK_ACTIONS, PF_TRACK_STEPS};
        key = PF_TRACK_KEY(kinds[which], 0, ev->tid);
        if ((t = pf_find(w, key)))
            return t;
        uint64_t parent = pf_thread_track(w, ev->tid, ev->start_ns)->uuid;
        desc.name = (char *)names[which];
        return pf_track_new(w, key, parent, ev->start_ns, &desc);
    }
    case TIMELINE_KERNEL:
    case TIMELINE_MEMCPY:
    case TIMELINE_MEMSET: {
        key = PF_TRACK_KEY(PF_TRACK_STREAM, ev->device & 0xfffffff, ev->stream);
        if ((t = pf_find(w, key)))
            return t;
        uint64_t gkey = PF_TRACK_KEY(PF_TRACK_GPU, ev->device & 0xfffffff, 0);
        struct pf_track *gpu = pf_find(w, gkey);
        if (!gpu) {
            snprintf(name, sizeof name, "GPU %u", ev->device);
            desc.name = name;
            gpu = pf_track_new(w, gkey, w->proc_uuid, ev->start_ns, &desc);
            desc = (Perfetto__Protos__TrackDescriptor)PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
        }
        snprintf(name, sizeof name, "GPU %u stream %u", ev->device, ev->stream);
        desc.name = name;
        return pf_track_new(w, key, gpu->uuid, ev->start_ns, &desc);
    }
    case TIMELINE_MEMORY: {
        uint32_t dev = (uint32_t)(uint8_t)ev->dev_type << 8 | (uint8_t)ev->dev_index;
        key = PF_TRACK_KEY(PF_TRACK_COUNTER, 0, dev);
        if ((t = pf_find(w, key)))
            return t;
        Perfetto__Protos__CounterDescriptor counter = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
        counter.has_unit = 1;
        counter.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
        snprintf(name, sizeof name, "live tensor bytes %s", ev->name);
        desc.name = name;
        desc.counter = &counter;
        return pf_track_new(w, key, w->proc_uuid, ev->start_ns, &desc);
    }
    default:
        return pf_thread_track(w, ev->tid, ev->start_ns);
    }
}

/* The iid of key on t's sequence; 0 when it is new (then *iid is the one to send). */
static int pf_intern(struct pf_track *t, uint64_t key, int space, uint64_t *iid)
{
    uint64_t *slot = u64map_slot(&t->iids, key);
    if (!slot)
        report_oom();
    if (*slot) {
        *iid = *slot;
        return 0;
    }
    *slot = *iid = t->next_iid[space]++;
    return 1;
}

/* Field numbers of perfetto_trace.proto that pf_write_event encodes by hand. */
enum {
    PF_F_PACKET_TIMESTAMP = 8,
    PF_F_PACKET_CLOCK_ID = 58,
    PF_F_PACKET_SEQUENCE_ID = 10,
    PF_F_PACKET_FLAGS = 13,
    PF_F_PACKET_TRACK_EVENT = 11,
    PF_F_PACKET_INTERNED_DATA = 12,
    PF_F_EVENT_CATEGORY_IIDS = 3,
    PF_F_EVENT_TYPE = 9,
    PF_F_EVENT_NAME_IID = 10,
    PF_F_EVENT_COUNTER_VALUE = 30,
    PF_F_EVENT_FLOW_IDS = 47,
    PF_F_EVENT_TERMINATING_FLOW_IDS = 48,
    PF_F_EVENT_DEBUG_ANNOTATIONS = 4,
    PF_F_ANNOTATION_NAME_IID = 1,
    PF_F_ANNOTATION_UINT = 3,
    PF_F_ANNOTATION_STRING_IID = 17
};

/* The event's time: a delta on the sequence's clock, or absolute when earlier. */
void pf_time(struct pf_track *t, struct pf_event *e, uint64_t ts)
{
    if (ts >= t->clock) {
        e->ts = ts - t->clock;
        t->clock = ts;
    } else {
        e->ts = ts;
        e->absolute = 1;
    }
}

static uint8_t *pf_tag(uint8_t *p, unsigned field, unsigned wire)
{
    return pf_varint(p, (uint64_t)field << 3 | wire);
}

static uint8_t *pf_field(uint8_t *p, unsigned field, uint64_t v)
{
    return pf_varint(pf_tag(p, field, 0), v);
}

/* A track-event packet, encoded here rather than by protobuf-c, whose descriptor-driven
 * size and pack passes took 30 % of the export's CPU time (perf, bench_timeline); the new
 * interned data it carries, if any, is packed by protobuf-c. The e2e tests decode the
 * result with protoc. */
void pf_write_event(struct pf_writer *w, uint32_t seq, const struct pf_event *e,
                    const Perfetto__Protos__InternedData *interned)
{
    uint8_t ev[96], *q = ev;
    if (e->category_iid)
        q = pf_field(q, PF_F_EVENT_CATEGORY_IIDS, e->category_iid);
    q = pf_field(q, PF_F_EVENT_TYPE, e->type);
    if (e->name_iid)
        q = pf_field(q, PF_F_EVENT_NAME_IID, e->name_iid);
    if (e->has_counter)
        q = pf_field(q, PF_F_EVENT_COUNTER_VALUE, (uint64_t)e->counter);
    if (e->flow_field) {
        q = pf_tag(q, e->flow_field, 1); /* fixed64 */
        for (int i = 0; i < 8; i++)
            *q++ = (uint8_t)(e->flow >> (8 * i));
    }
    if (e->ann_name_iid) {
        uint8_t ann[24], *a = pf_field(ann, PF_F_ANNOTATION_NAME_IID, e->ann_name_iid);
        a = pf_field(a, e->ann_field, e->ann_value);
        q = pf_varint(pf_tag(q, PF_F_EVENT_DEBUG_ANNOTATIONS, 2), (size_t)(a - ann));
        memcpy(q, ann, (size_t)(a - ann));
        q += a - ann;
    }
    size_t extra = interned ? protobuf_c_message_get_packed_size(&interned->base) : 0;
    if (w->cap < 160 + extra)
        w->buf = report_grow(w->buf, &w->cap, 160 + extra, 1);
    uint8_t *b = w->buf;
    b = pf_field(b, PF_F_PACKET_TIMESTAMP, e->ts);
    if (e->absolute)
        b = pf_field(b, PF_F_PACKET_CLOCK_ID, PF_CLOCK_BOOTTIME);
    b = pf_field(b, PF_F_PACKET_SEQUENCE_ID, seq);
    b = pf_field(b, PF_F_PACKET_FLAGS, PF_SEQ_NEEDS_STATE);
    b = pf_varint(pf_tag(b, PF_F_PACKET_TRACK_EVENT, 2), (size_t)(q - ev));
    memcpy(b, ev, (size_t)(q - ev));
    b += q - ev;
    if (interned) {
        b = pf_varint(pf_tag(b, PF_F_PACKET_INTERNED_DATA, 2), extra);
        protobuf_c_message_pack(&interned->base, b);
        b += extra;
    }
    pf_put(w, w->buf, (size_t)(b - w->buf));
}

/* What a slice's BEGIN interns for the first time on its sequence (protobuf-c messages,
 * initialized only when needed). */
struct pf_interned {
    int any;
    Perfetto__Protos__InternedData data;
    Perfetto__Protos__EventName name, *names[1];
    Perfetto__Protos__EventCategory cat, *cats[1];
    Perfetto__Protos__DebugAnnotationName ann, *anns[1];
    Perfetto__Protos__InternedString str, *strs[1];
};

static Perfetto__Protos__InternedData *pf_interned_data(struct pf_interned *in)
{
    if (!in->any) {
        in->any = 1;
        in->data = (Perfetto__Protos__InternedData)PERFETTO__PROTOS__INTERNED_DATA__INIT;
    }
    return &in->data;
}

static void pf_annotation(struct pf_track *t, struct pf_interned *in, struct pf_event *e,
                          enum pf_annotation which)
{
    if (!pf_intern(t, PF_KEY_ANNOTATION | which, 1, &e->ann_name_iid))
        return;
    Perfetto__Protos__InternedData *d = pf_interned_data(in);
    in->ann = (Perfetto__Protos__DebugAnnotationName)PERFETTO__PROTOS__DEBUG_ANNOTATION_NAME__INIT;
    in->ann.has_iid = 1;
    in->ann.iid = e->ann_name_iid;
    in->ann.name = (char *)pf_annotation_names[which];
    in->anns[0] = &in->ann;
    d->n_debug_annotation_names = 1;
    d->debug_annotation_names = in->anns;
}

/* A slice of ev from start to end (nested: pf_on_event) with the flow (field, id) if any. */
static void pf_slice(struct pf_writer *w, struct pf_track *t, const struct timeline_event *ev,
                     uint64_t start, uint64_t end, unsigned flow_field, uint64_t flow)
{
    struct pf_interned in;
    in.any = 0;
    struct pf_event b = {.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN,
                         .flow_field = flow_field,
                         .flow = flow};
    pf_time(t, &b, start);
    /* torch.distributed's ops and process-group work (c10d::, gloo:, nccl:, ...) are
     * communication, as --comm counts them */
    uint8_t cat =
        (ev->kind == TIMELINE_OP || ev->kind == TIMELINE_SCOPE) && model_comm_is_torch_op(ev->name)
            ? TIMELINE_COMM
            : ev->kind;
    b.category_iid = t->category_iid[cat]; /* a lookup per slice: not through iids */
    if (!b.category_iid) {
        b.category_iid = t->category_iid[cat] = t->next_iid[PF_SPACE_CATEGORY]++;
        Perfetto__Protos__InternedData *d = pf_interned_data(&in);
        in.cat = (Perfetto__Protos__EventCategory)PERFETTO__PROTOS__EVENT_CATEGORY__INIT;
        in.cat.has_iid = 1;
        in.cat.iid = b.category_iid;
        in.cat.name = (char *)pf_categories[cat];
        in.cats[0] = &in.cat;
        d->n_event_categories = 1;
        d->event_categories = in.cats;
    }
    if (pf_intern(t, ev->name_key, 0, &b.name_iid)) {
        Perfetto__Protos__InternedData *d = pf_interned_data(&in);
        in.name = (Perfetto__Protos__EventName)PERFETTO__PROTOS__EVENT_NAME__INIT;
        in.name.has_iid = 1;
        in.name.iid = b.name_iid;
        in.name.name = (char *)ev->name;
        in.names[0] = &in.name;
        d->n_event_names = 1;
        d->event_names = in.names;
    }
    if (ev->shapes && *ev->shapes) {
        pf_annotation(t, &in, &b, PF_ANN_SHAPES);
        b.ann_field = PF_F_ANNOTATION_STRING_IID;
        if (pf_intern(t, PF_KEY_SHAPES | ev->shapes_sid, 2, &b.ann_value)) {
            Perfetto__Protos__InternedData *d = pf_interned_data(&in);
            in.str = (Perfetto__Protos__InternedString)PERFETTO__PROTOS__INTERNED_STRING__INIT;
            in.str.has_iid = in.str.has_str = 1;
            in.str.iid = b.ann_value;
            in.str.str.data = (uint8_t *)ev->shapes;
            in.str.str.len = strlen(ev->shapes);
            in.strs[0] = &in.str;
            d->n_debug_annotation_string_values = 1;
            d->debug_annotation_string_values = in.strs;
        }
    } else if (ev->kind == TIMELINE_MEMCPY || ev->kind == TIMELINE_MEMSET) {
        pf_annotation(t, &in, &b, PF_ANN_BYTES);
        b.ann_field = PF_F_ANNOTATION_UINT;
        b.ann_value = ev->bytes;
    }
    pf_write_event(w, t->seq, &b, in.any ? &in.data : NULL);

    struct pf_event e = {.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END};
    pf_time(t, &e, end);
    pf_write_event(w, t->seq, &e, NULL);
}

static void pf_counter(struct pf_writer *w, struct pf_track *t, const struct timeline_event *ev)
{
    struct pf_event c = {.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER,
                         .has_counter = 1,
                         .counter = ev->live};
    pf_time(t, &c, ev->start_ns);
    pf_write_event(w, t->seq, &c, NULL);
}

/* 1 the first time id is seen in slots (see PF_FLOW_SLOTS). */
static int pf_flow_once(uint64_t *slots, uint64_t id)
{
    uint64_t *slot = &slots[id % PF_FLOW_SLOTS];
    if (*slot == id)
        return 0;
    *slot = id;
    return 1;
}

static int pf_flow_begun(const uint64_t *slots, uint64_t id)
{
    return slots[id % PF_FLOW_SLOTS] == id;
}

/* A forward op with a sequence number, held until its thread's next one: autograd numbers
 * its node with the sequence number that every op entered since the previous node peeked
 * (optimizer ops, aten::t, aten::linear...), and the op that made the node is the last of
 * them to end — the one whose flow goes to the backward function. */
struct pf_pending {
    struct timeline_event ev; /* an OP: its name and shapes live as long as the process */
    struct pf_track *t;
    uint64_t start, end;
};

/* Flow ids of forward -> backward: apart from the launch flows' by their top bit. */
static uint64_t pf_fwd_flow(const struct pf_writer *w, int64_t seq)
{
    return 1ull << 63 | (uint64_t)w->proc_index << 44 | ((uint64_t)seq & ((1ull << 44) - 1));
}

/* Writes the thread's held forward op: it begins the flow of its sequence number when it
 * is the last op of that number (next is another, or -1 for "none follows") and the flow
 * was not begun yet. */
static void pf_pending_write(struct pf_writer *w, uint32_t tid, int64_t next)
{
    uint64_t *slot = u64map_find(&w->pending, tid);
    struct pf_pending *p = slot ? (struct pf_pending *)(uintptr_t)*slot : NULL;
    if (!p || !p->t)
        return;
    uint64_t id = pf_fwd_flow(w, p->ev.sequence_nr);
    int begins = p->ev.sequence_nr != next && pf_flow_once(w->fwd_begun, id);
    pf_slice(w, p->t, &p->ev, p->start, p->end, begins ? PF_F_EVENT_FLOW_IDS : 0, id);
    p->t = NULL;
}

static void pf_pending_flush_all(struct pf_writer *w)
{
    uint64_t k, v;
    for (size_t i = 0; u64map_next(&w->pending, &i, &k, &v);) {
        pf_pending_write(w, (uint32_t)k, -1);
        free((void *)(uintptr_t)v);
    }
    u64map_free(&w->pending);
    u64map_init(&w->pending);
}

static int pf_on_event(void *ctx, const struct timeline_event *ev)
{
    struct pf_writer *w = ctx;
    struct pf_track *t = pf_track_of(w, ev);
    w->stats.events++;
    if (ev->kind == TIMELINE_KERNEL)
        pf_busy_add(w, ev);
    if (ev->kind == TIMELINE_MEMORY) {
        pf_counter(w, t, ev);
        return w->failed ? -1 : 0;
    }
    uint64_t start = ev->start_ns, end = ev->end_ns;
    if (!t->nest)
        t->nest = timeline_nest_new();
    timeline_nest_clip(t->nest, &start, &end);
    int gpu =
        ev->kind == TIMELINE_KERNEL || ev->kind == TIMELINE_MEMCPY || ev->kind == TIMELINE_MEMSET;
    unsigned field = 0;
    uint64_t flow = (uint64_t)(w->proc_index + 1) << 32 | ev->correlation;
    int launch = ev->kind == TIMELINE_RUNTIME || ev->kind == TIMELINE_DRIVER;
    if (gpu || launch) {
        /* one arrow per id, only where the file has both ends: none from or to nowhere */
        if (timeline_has_flow(w->p, ev->correlation) &&
            timeline_bits_once(gpu ? &w->launch_ended : &w->launch_begun, ev->correlation))
            field = gpu ? PF_F_EVENT_TERMINATING_FLOW_IDS : PF_F_EVENT_FLOW_IDS;
    } else if (ev->kind == TIMELINE_OP && ev->sequence_nr >= 0) {
        flow = pf_fwd_flow(w, ev->sequence_nr);
        if (ev->scope == MODEL_TORCH_SCOPE_BACKWARD) {
            /* The held op begins this arrow if it has the number; otherwise it stays held:
             * backward functions come between forward ops of one number (zero_grad's
             * aten::zero_ ... backward ... aten::conv2d) without taking a number. */
            uint64_t *slot = u64map_find(&w->pending, ev->tid);
            const struct pf_pending *held = slot ? (struct pf_pending *)(uintptr_t)*slot : NULL;
            if (held && held->t && held->ev.sequence_nr == ev->sequence_nr)
                pf_pending_write(w, ev->tid, -1);
            if (pf_flow_begun(w->fwd_begun, flow) && pf_flow_once(w->fwd_ended, flow))
                field = PF_F_EVENT_TERMINATING_FLOW_IDS;
        } else {
            pf_pending_write(w, ev->tid, ev->sequence_nr);
            uint64_t *slot = u64map_slot(&w->pending, ev->tid);
            if (!slot)
                report_oom();
            if (!*slot && !(*slot = (uintptr_t)calloc(1, sizeof(struct pf_pending))))
                report_oom();
            *(struct pf_pending *)(uintptr_t)*slot =
                (struct pf_pending){.ev = *ev, .t = t, .start = start, .end = end};
            return w->failed ? -1 : 0;
        }
    }
    pf_slice(w, t, ev, start, end, field, flow);
    return w->failed ? -1 : 0;
}

static void pf_tracks_free(struct pf_writer *w)
{
    uint64_t k, v;
    for (size_t i = 0; u64map_next(&w->tracks, &i, &k, &v);) {
        struct pf_track *t = (struct pf_track *)(uintptr_t)v;
        u64map_free(&t->iids);
        timeline_nest_free(t->nest);
        free(t);
    }
    u64map_free(&w->tracks);
    u64map_init(&w->tracks);
}

static void pf_process_track(struct pf_writer *w)
{
    const struct model_process *p = w->p;
    char label[512];
    Perfetto__Protos__ProcessDescriptor proc = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
    proc.has_pid = 1;
    proc.pid = (int32_t)pid_clash_export_pid(p);
    proc.process_name = (char *)timeline_process_label(p, label, sizeof label);
    Perfetto__Protos__TrackDescriptor desc = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
    desc.has_uuid = 1;
    desc.uuid = w->proc_uuid = w->next_uuid++;
    desc.process = &proc;
    pf_write_descriptor(w, w->next_seq++, model_start_monotonic_ns(p), &desc);
}

int export_perfetto_write(const char *path, struct model_process *const *procs, size_t n,
                          struct export_timeline_stats *stats, char *err, size_t errlen)
{
    struct pf_writer w = {.next_uuid = 1, .next_seq = 1};
    struct out_file o;
    if (out_file_create(&o, path, 0666, err, errlen) != 0)
        return -1;
    w.f = o.f;
    w.out = malloc(PF_OUT_SIZE);
    w.zcap = compressBound(PF_OUT_SIZE);
    w.zbuf = malloc(w.zcap);
    if (!w.out || !w.zbuf)
        report_oom();
    u64map_init(&w.tracks);
    u64map_init(&w.pending);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        w.p = procs[i];
        w.proc_index = i;
        pf_process_track(&w);
        u64map_init(&w.busy);
        timeline_flows_prepare(procs[i]);
        memset(w.fwd_begun, 0, sizeof w.fwd_begun);
        memset(w.fwd_ended, 0, sizeof w.fwd_ended);
        rc = timeline_stream(procs[i], pf_on_event, &w, err, errlen);
        pf_pending_flush_all(&w); /* written, or freed when the export stopped */
        if (rc == 0)
            pf_busy_write(&w);
        u64map_free(&w.busy);
        idbits_free(&w.launch_begun);
        idbits_free(&w.launch_ended);
        pf_tracks_free(&w);
    }
    pf_flush(&w);
    if (w.failed && rc == 0) {
        snprintf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
        rc = -1;
    }
    if (out_file_commit(&o, rc == 0, err, errlen) != 0)
        rc = -1;
    u64map_free(&w.tracks);
    u64map_free(&w.pending);
    free(w.buf);
    free(w.out);
    free(w.zbuf);
    w.stats.files = rc == 0;
    if (stats)
        *stats = w.stats;
    return rc;
}
