#include "dump.h"

#include "format.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"
#include "model.h"
#include "trace_read.h"

/* What dump remembers of an API_NAME record to name the arguments of later calls. */
struct dump_api {
    char *name;
    char *args; /* comma separated */
};

static void dump_text(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c == '\n')
            fputs("\\n", out);
        else if (c < 0x20 || c == 0x7f)
            fprintf(out, "\\x%02x", c);
        else if (c == 0xc2 && (unsigned char)s[1] >= 0x80 && (unsigned char)s[1] <= 0x9f) {
            fprintf(out, "\\x%02x\\x%02x", c, (unsigned char)s[1]); /* a C1 control */
            s++;
        } else
            fputc(c, out);
    }
    fputc('"', out);
}

static void dump_api_call(FILE *out, const struct trace_record *rec, const struct u64map *apis)
{
    const struct prof_rec_api_call *c = rec->data;
    const struct dump_api *a = u64map_get_ptr(apis, c->api);
    const uint64_t *args = (const uint64_t *)(c + 1);
    size_t nargs = (rec->size - sizeof *c) / sizeof(uint64_t);
    fprintf(out, " api=%u", c->api);
    if (a) {
        fputs(" (", out);
        format_fputs_escaped(out, a->name);
        fputc(')', out);
    }
    fprintf(out, " result=%d start=%" PRIu64 " end=%" PRIu64 " dur=%" PRIu64, c->result, c->start,
            c->end, c->end >= c->start ? c->end - c->start : 0);
    const char *names = a ? a->args : "";
    for (size_t i = 0; i < nargs; i++) {
        size_t len = strcspn(names, ",");
        char name[64];
        if (len > 0 && len < sizeof name) {
            memcpy(name, names, len);
            name[len] = 0;
        } else {
            snprintf(name, sizeof name, "arg%zu", i);
        }
        names += len;
        if (*names == ',')
            names++;
        if (!strcmp(name, "grid") || !strcmp(name, "block")) {
            char dim[48];
            model_dim3_format(args[i], dim, sizeof dim);
            fputc(' ', out);
            format_fputs_escaped(out, name);
            fprintf(out, "=%s", dim);
        } else if (!strcmp(name, "bytes") || !strcmp(name, "kind") || !strcmp(name, "device") ||
                   !strcmp(name, "src_device") || !strcmp(name, "dst_device") ||
                   !strcmp(name, "shmem") || !strcmp(name, "value")) {
            fputc(' ', out);
            format_fputs_escaped(out, name);
            fprintf(out, "=%" PRIu64, args[i]);
        } else {
            fputc(' ', out);
            format_fputs_escaped(out, name);
            fprintf(out, "=0x%" PRIx64, args[i]);
        }
    }
}

static void dump_string_field(FILE *out, const char *key, uint32_t sid,
                              const struct u64map *strings)
{
    const char *text = sid ? u64map_get_ptr(strings, sid) : NULL;
    fprintf(out, " %s=%u", key, sid);
    if (text) {
        fputc(':', out);
        dump_text(out, text);
    }
}

static void dump_py_func(FILE *out, const struct prof_rec_py_func *f, const struct u64map *strings)
{
    fprintf(out, " func=%u kind=%s", f->func_id,
            f->kind == PROF_PY_FUNC_PYTHON ? "python"
            : f->kind == PROF_PY_FUNC_C    ? "c"
                                           : "?");
    dump_string_field(out, "name", f->name_sid, strings);
    dump_string_field(out, "qualname", f->qualname_sid, strings);
    dump_string_field(out, "file", f->file_sid, strings);
    dump_string_field(out, "module", f->module_sid, strings);
    fprintf(out, " line=%u", f->line);
}

static void dump_gpu_op(FILE *out, uint32_t correlation, uint64_t start, uint64_t end,
                        uint32_t device, uint32_t stream)
{
    fprintf(out,
            " correlation=%u start_ns=%" PRIu64 " end_ns=%" PRIu64 " dur=%" PRIu64
            " device=%u stream=%u",
            correlation, start, end, end >= start ? end - start : 0, device, stream);
}

static const char *dump_nvtx_kind(unsigned kind)
{
    static const char *const names[] = {"?", "push", "pop", "start", "end", "mark"};
    return kind < sizeof names / sizeof *names ? names[kind] : "?";
}

/* The GPU and NVTX records. 0 when rec is none of them. */
static int dump_gpu_record(FILE *out, const struct trace_record *rec, const struct u64map *strings)
{
    char dim[48];
    switch (rec->type) {
    case PROF_REC_GPU_KERNEL: {
        const struct prof_rec_gpu_kernel *k = rec->data;
        dump_gpu_op(out, k->correlation, k->start_ns, k->end_ns, k->device, k->stream);
        dump_string_field(out, "name", k->name_sid, strings);
        fprintf(out, " context=%u", k->context);
        model_dim3_format(k->grid, dim, sizeof dim);
        fprintf(out, " grid=%s", dim);
        model_dim3_format(k->block, dim, sizeof dim);
        fprintf(out, " block=%s registers=%u shared_bytes=%u", dim, k->registers, k->shared_bytes);
        return 1;
    }
    case PROF_REC_GPU_MEMCPY: {
        const struct prof_rec_gpu_memcpy *m = rec->data;
        dump_gpu_op(out, m->correlation, m->start_ns, m->end_ns, m->device, m->stream);
        fprintf(out,
                " bytes=%" PRIu64 " copy_kind=%u (%s) src_kind=%u (%s) dst_kind=%u (%s) flags=%u",
                m->bytes, m->copy_kind, model_gpu_copy_kind_name(m->copy_kind), m->src_kind,
                model_gpu_memory_kind_name(m->src_kind), m->dst_kind,
                model_gpu_memory_kind_name(m->dst_kind), m->flags);
        return 1;
    }
    case PROF_REC_GPU_MEMSET: {
        const struct prof_rec_gpu_memset *m = rec->data;
        dump_gpu_op(out, m->correlation, m->start_ns, m->end_ns, m->device, m->stream);
        fprintf(out, " bytes=%" PRIu64 " value=%u", m->bytes, m->value);
        return 1;
    }
    case PROF_REC_GPU_API: {
        const struct prof_rec_gpu_api *a = rec->data;
        fprintf(out,
                " domain=%u (%s) cbid=%u correlation=%u py_node=%u start=%" PRIu64 " end=%" PRIu64
                " dur=%" PRIu64,
                a->domain,
                a->domain == PROF_GPU_API_RUNTIME  ? "runtime"
                : a->domain == PROF_GPU_API_DRIVER ? "driver"
                                                   : "?",
                a->cbid, a->correlation, a->py_node, a->start, a->end,
                a->end >= a->start ? a->end - a->start : 0);
        return 1;
    }
    case PROF_REC_GPU_API_NAME: {
        const struct prof_rec_gpu_api_name *n = rec->data;
        fprintf(out, " domain=%u cbid=%u name=", n->domain, n->cbid);
        dump_text(out, trace_record_text(rec, sizeof *n, NULL));
        return 1;
    }
    case PROF_REC_GPU_DEVICE: {
        const struct prof_rec_gpu_device *d = rec->data;
        fprintf(out, " device=%u name=", d->device);
        dump_text(out, trace_record_text(rec, sizeof *d, NULL));
        fprintf(out,
                " global_memory_bytes=%" PRIu64 " sm_count=%u core_clock_khz=%u "
                "memory_clock_khz=%u compute=%u.%u",
                d->global_memory_bytes, d->sm_count, d->core_clock_khz, d->memory_clock_khz,
                d->compute_major, d->compute_minor);
        return 1;
    }
    case PROF_REC_ACTION: {
        const struct prof_rec_action *a = rec->data;
        fprintf(out, " kind=%u (%s) source=%u (%s)", a->kind,
                a->kind == PROF_ACTION_START  ? "start"
                : a->kind == PROF_ACTION_STOP ? "stop"
                                              : "?",
                a->source, a->source == PROF_ACTION_LIGHTNING ? "Lightning" : "?");
        dump_string_field(out, "name", a->name_sid, strings);
        fprintf(out, " ticks=%" PRIu64, a->ticks);
        return 1;
    }
    case PROF_REC_NVTX: {
        const struct prof_rec_nvtx *n = rec->data;
        fprintf(out, " kind=%u (%s)", n->kind, dump_nvtx_kind(n->kind));
        dump_string_field(out, "name", n->name_sid, strings);
        dump_string_field(out, "domain", n->domain_sid, strings);
        fprintf(out, " id=%" PRIu64 " ticks=%" PRIu64, n->id, n->ticks);
        return 1;
    }
    default:
        return 0;
    }
}

static void dump_record(FILE *out, const struct trace_record *rec, struct u64map *apis,
                        struct u64map *strings)
{
    const char *type = trace_record_type_name(rec->type);
    fprintf(out, "%" PRIu64 " %s", rec->offset, type ? type : "UNKNOWN");
    switch (rec->type) {
    case PROF_REC_META: {
        size_t klen;
        const char *k = trace_record_text(rec, sizeof(struct prof_record_header), &klen);
        fputc(' ', out);
        format_fputs_escaped(out, k);
        fputc('=', out);
        dump_text(out, trace_record_text(rec, sizeof(struct prof_record_header) + klen + 1, NULL));
        break;
    }
    case PROF_REC_STRING: {
        const struct prof_rec_string *s = rec->data;
        const char *text = trace_record_text(rec, sizeof *s, NULL);
        fprintf(out, " id=%u text=", s->id);
        dump_text(out, text);
        uint64_t *slot = u64map_slot(strings, s->id);
        if (slot) {
            free((void *)(uintptr_t)*slot);
            *slot = (uintptr_t)strdup(text);
        }
        break;
    }
    case PROF_REC_API_NAME: {
        const struct prof_rec_api_name *n = rec->data;
        size_t nlen;
        const char *name = trace_record_text(rec, sizeof *n, &nlen);
        const char *args = trace_record_text(rec, sizeof *n + nlen + 1, NULL);
        fprintf(out, " api=%u name=", n->api);
        format_fputs_escaped(out, name);
        fprintf(out, " category=%s nargs=%u args=", model_category_name(n->category), n->nargs);
        format_fputs_escaped(out, args);
        uint64_t *slot = u64map_slot(apis, n->api);
        struct dump_api *a = slot ? (void *)(uintptr_t)*slot : NULL;
        if (slot && !a && (a = calloc(1, sizeof *a)))
            *slot = (uintptr_t)a;
        if (a) {
            free(a->name);
            free(a->args);
            a->name = strdup(name);
            a->args = strdup(args);
            if (!a->name || !a->args) {
                fprintf(stderr, "profreport: out of memory\n");
                exit(1);
            }
        }
        break;
    }
    case PROF_REC_THREAD:
        fprintf(out, " tid=%u", ((const struct prof_rec_thread *)rec->data)->tid);
        break;
    case PROF_REC_THREAD_NAME: {
        const struct prof_rec_thread_name *n = rec->data;
        fprintf(out, " tid=%u name=", n->tid);
        dump_text(out, trace_record_text(rec, sizeof *n, NULL));
        break;
    }
    case PROF_REC_CLOCK: {
        const struct prof_rec_clock *c = rec->data;
        fprintf(out, " ticks=%" PRIu64 " monotonic_ns=%" PRIu64 " realtime_ns=%" PRIu64, c->ticks,
                c->monotonic_ns, c->realtime_ns);
        break;
    }
    case PROF_REC_LOST: {
        const struct prof_rec_lost *l = rec->data;
        fprintf(out, " tid=%u count=%" PRIu64, l->tid, l->count);
        break;
    }
    case PROF_REC_LOST_KEPT: {
        const struct prof_rec_lost_kept *l = rec->data;
        fprintf(out, " tid=%u count=%" PRIu64 " (of the LOST before it: phase spans)", l->tid,
                l->count);
        break;
    }
    case PROF_REC_API_CALL:
        dump_api_call(out, rec, apis);
        break;
    case PROF_REC_SYMBOL: {
        const struct prof_rec_symbol *s = rec->data;
        if (s->kind == PROF_SYMBOL_KERNEL_NAME) {
            const char *text = u64map_get_ptr(strings, s->string_id);
            fprintf(out, " kind=kernel_name address=0x%" PRIx64 " string=%u", s->address,
                    s->string_id);
            if (text) {
                fputs(" name=", out);
                dump_text(out, text);
            }
        } else if (s->kind == PROF_SYMBOL_KERNEL_ALIAS) {
            fprintf(out, " kind=kernel_alias address=0x%" PRIx64 " target=0x%" PRIx64, s->address,
                    s->target);
        } else {
            fprintf(out, " kind=%u address=0x%" PRIx64 " string=%u target=0x%" PRIx64, s->kind,
                    s->address, s->string_id, s->target);
        }
        break;
    }
    case PROF_REC_NOTE:
        fputs(" message=", out);
        dump_text(out, trace_record_text(rec, sizeof(struct prof_rec_note), NULL));
        break;
    case PROF_REC_END: {
        const struct prof_rec_end *e = rec->data;
        fprintf(out,
                " ticks=%" PRIu64 " events_written=%" PRIu64 " events_lost=%" PRIu64 " signal=%u",
                e->ticks, e->events_written, e->events_lost, e->signal);
        break;
    }
    case PROF_REC_LOST_CALLS: {
        const struct prof_rec_lost_calls *l = rec->data;
        fprintf(out, " api=%u tid=%u calls=%" PRIu64 " errors=%" PRIu64 " ticks=%" PRIu64, l->api,
                l->tid, l->calls, l->errors, l->ticks);
        break;
    }
    case PROF_REC_PY_FUNC:
        dump_py_func(out, rec->data, strings);
        break;
    case PROF_REC_PY_NODE: {
        const struct prof_rec_py_node *n = rec->data;
        fprintf(out, " node=%u parent=%u func=%u", n->node_id, n->parent_id, n->func_id);
        break;
    }
    case PROF_REC_PY_STATS: {
        const struct prof_rec_py_stats *st = rec->data;
        fprintf(out,
                " node=%u calls=%" PRIu64 " total=%" PRIu64 " self=%" PRIu64 " api_calls=%" PRIu64
                " api_ticks=%" PRIu64,
                st->node_id, st->calls, st->total_ticks, st->self_ticks, st->api_calls,
                st->api_ticks);
        break;
    }
    case PROF_REC_PY_CUT: {
        const struct prof_rec_py_cut *c = rec->data;
        fprintf(out, " tid=%u cut=%u ticks=%" PRIu64, c->tid, c->cut, c->ticks);
        break;
    }
    case PROF_REC_PY_CUT_STATS: {
        const struct prof_rec_py_cut_stats *st = rec->data;
        fprintf(out,
                " node=%u cut=%u calls=%" PRIu64 " total=%" PRIu64 " self=%" PRIu64
                " api_calls=%" PRIu64 " api_ticks=%" PRIu64,
                st->node_id, st->cut, st->calls, st->total_ticks, st->self_ticks, st->api_calls,
                st->api_ticks);
        break;
    }
    case PROF_REC_PY_SPAN: {
        const struct prof_rec_py_span *sp = rec->data;
        fprintf(out, " node=%u start=%" PRIu64 " end=%" PRIu64, sp->node_id, sp->start, sp->end);
        break;
    }
    case PROF_REC_TORCH_OP: {
        const struct prof_rec_torch_op *op = rec->data;
        dump_string_field(out, "name", op->name_sid, strings);
        fprintf(out,
                " start=%" PRIu64 " end=%" PRIu64 " dur=%" PRIu64 " sequence_nr=%" PRId64
                " fwd_thread=%" PRIu64 " scope=%u (%s) depth=%u",
                op->start, op->end, op->end >= op->start ? op->end - op->start : 0, op->sequence_nr,
                op->fwd_thread, op->scope, model_torch_scope_name(op->scope), op->depth);
        dump_string_field(out, "shapes", op->shapes_sid, strings);
        break;
    }
    case PROF_REC_PY_GC: {
        const struct prof_rec_py_gc *gc = rec->data;
        fprintf(out, " generation=%u start=%" PRIu64 " end=%" PRIu64 " collected=%" PRIu64,
                gc->generation, gc->start, gc->end, gc->collected);
        break;
    }
    case PROF_REC_TORCH_SCOPE: {
        const struct prof_rec_torch_scope *sc = rec->data;
        dump_string_field(out, "name", sc->name_sid, strings);
        fprintf(out, " start=%" PRIu64 " end=%" PRIu64 "%s", sc->start, sc->end,
                sc->name_sid ? "" : " (the thread's log was full from here)");
        break;
    }
    case PROF_REC_TORCH_NODE: {
        const struct prof_rec_torch_node *n = rec->data;
        fprintf(out, " node=%u parent=%u", n->node_id, n->parent_id);
        dump_string_field(out, "name", n->name_sid, strings);
        fprintf(out, " scope=%u (%s)", n->scope, model_torch_scope_name(n->scope));
        dump_string_field(out, "shapes", n->shapes_sid, strings);
        break;
    }
    case PROF_REC_TORCH_STATS: {
        const struct prof_rec_torch_stats *st = rec->data;
        fprintf(out,
                " node=%u calls=%" PRIu64 " raw_calls=%" PRIu64 " total=%" PRIu64 " self=%" PRIu64
                " cpu_mem=%" PRId64 " self_cpu_mem=%" PRId64 " dev_mem=%" PRId64
                " self_dev_mem=%" PRId64,
                st->node_id, st->calls, st->raw_calls, st->total_ticks, st->self_ticks, st->cpu_mem,
                st->self_cpu_mem, st->dev_mem, st->self_dev_mem);
        break;
    }
    case PROF_REC_TORCH_MEM: {
        const struct prof_rec_torch_mem *m = rec->data;
        fprintf(out, " bytes=%" PRId64 " ptr=0x%" PRIx64 " ticks=%" PRIu64 " py_node=%" PRIu32,
                m->bytes, m->ptr, m->ticks, m->py_node);
        break;
    }
    case PROF_REC_TORCH_DEV_MEM: {
        const struct prof_rec_torch_dev_mem *m = rec->data;
        fprintf(out,
                " device=%d:%d bytes=%" PRId64 " ptr=0x%" PRIx64 " ticks=%" PRIu64
                " allocated=%" PRIu64 " reserved=%" PRIu64 " py_node=%" PRIu32,
                m->device_type, m->device_index, m->bytes, m->ptr, m->ticks, m->total_allocated,
                m->total_reserved, m->py_node);
        break;
    }
    case PROF_REC_TORCH_MEM_TOTALS: {
        const struct prof_rec_torch_mem_totals *m = rec->data;
        fprintf(out,
                " device=%d:%d allocs=%" PRIu64 " alloc_bytes=%" PRIu64 " frees=%" PRIu64
                " free_bytes=%" PRIu64 " live=%" PRId64 " peak=%" PRId64 " peak_ticks=%" PRIu64
                " reserved_peak=%" PRIu64,
                m->device_type, m->device_index, m->alloc_count, m->alloc_bytes, m->free_count,
                m->free_bytes, m->live_bytes, m->peak_bytes, m->peak_ticks, m->reserved_peak);
        break;
    }
    case PROF_REC_PY_GAP: {
        const struct prof_rec_py_gap *g = rec->data;
        fprintf(out, " reason=%u (%s) start=%" PRIu64 " end=%" PRIu64, g->reason,
                model_py_gap_reason_name(g->reason), g->start, g->end);
        break;
    }
    case PROF_REC_NVTX_LOST: {
        const struct prof_rec_nvtx_lost *l = rec->data;
        fprintf(out, " tid=%" PRIu32, l->tid);
        dump_string_field(out, "name", l->name_sid, strings);
        dump_string_field(out, "domain", l->domain_sid, strings);
        fprintf(out, " count=%" PRIu64 " ticks=%" PRIu64, l->count, l->ticks);
        break;
    }
    case PROF_REC_STACK: {
        const struct prof_rec_stack *s = rec->data;
        const uint64_t *frames = (const uint64_t *)(s + 1);
        uint32_t n = s->nframes;
        if (n > (rec->size - sizeof *s) / 8)
            n = (uint32_t)((rec->size - sizeof *s) / 8);
        fprintf(out, " id=%" PRIu32 " frames=%" PRIu32 " py_node=%" PRIu32, s->stack_id, s->nframes,
                s->py_node);
        for (uint32_t i = 0; i < n; i++)
            fprintf(out, "%s0x%" PRIx64, i ? "," : " ", frames[i]);
        break;
    }
    case PROF_REC_STACK_REF: {
        const struct prof_rec_stack_ref *s = rec->data;
        fprintf(out, " stack=%" PRIu32 " start=%" PRIu64, s->stack_id, s->start);
        break;
    }
    case PROF_REC_SAMPLE: {
        const struct prof_rec_sample *s = rec->data;
        fprintf(out, " stack=%" PRIu32 " ticks=%" PRIu64 " py_node=%" PRIu32 " periods=%" PRIu32,
                s->stack_id, s->ticks, s->py_node, s->periods);
        if (rec->size >= sizeof *s)
            fprintf(out, " op=%" PRIu32 " nvtx=%" PRIu32, s->op_sid, s->nvtx_sid);
        break;
    }
    case PROF_REC_STACK_MEM: {
        const struct prof_rec_stack_mem *m = rec->data;
        fprintf(out,
                " stack=%" PRIu32 " bytes=%" PRId64 " ptr=0x%" PRIx64 " ticks=%" PRIu64
                " py_node=%" PRIu32 " device=%d:%d",
                m->stack_id, m->bytes, m->ptr, m->ticks, m->py_node, m->device_type,
                m->device_index);
        break;
    }
    case PROF_REC_MAP: {
        const struct prof_rec_map *m = rec->data;
        fprintf(out, " bias=0x%" PRIx64 " start=0x%" PRIx64 " end=0x%" PRIx64 " build_id=", m->bias,
                m->start, m->end);
        for (unsigned i = 0; i < m->build_id_len && i < sizeof m->build_id; i++)
            fprintf(out, "%02x", m->build_id[i]);
        fputs(" path=", out);
        dump_text(out, trace_record_text(rec, sizeof *m, NULL));
        break;
    }
    case PROF_REC_PY_CODE: {
        const struct prof_rec_py_code *c = rec->data;
        size_t len = 0;
        const char *name = trace_record_text(rec, sizeof *c, &len);
        fprintf(out, " id=%" PRIu32 " line=%" PRIu32 " flags=%" PRIu32 " name=", c->code_id,
                c->line, c->flags);
        dump_text(out, name);
        fputs(" file=", out);
        dump_text(out, trace_record_text(rec, sizeof *c + len + 1, NULL));
        break;
    }
    case PROF_REC_SAMPLE_PY: {
        const struct prof_rec_sample_py *s = rec->data;
        const uint32_t *ids = (const uint32_t *)(s + 1);
        uint32_t n = s->nframes;
        if (n > (rec->size - sizeof *s) / 4)
            n = (uint32_t)((rec->size - sizeof *s) / 4);
        fprintf(out, " ticks=%" PRIu64 " frames=%u flags=%u", s->ticks, (unsigned)s->nframes,
                (unsigned)s->flags);
        for (uint32_t i = 0; i < n; i++)
            fprintf(out, "%s%" PRIu32, i ? "," : " codes=", ids[i]);
        break;
    }
    case PROF_REC_PAD:
        break;
    default:
        if (!dump_gpu_record(out, rec, strings))
            fprintf(out, " type=%u", rec->type);
        break;
    }
    fprintf(out, " size=%u\n", rec->size);
}

int dump_file(FILE *out, FILE *err, const char *path)
{
    char msg[512];
    struct trace_reader *r = trace_reader_open(path, msg, sizeof msg);
    if (!r) {
        format_say(err, "%s", msg);
        return 1;
    }
    const struct prof_file_header *h = trace_reader_header(r);
    fprintf(out, "# %s: profrun trace version %u, header %u bytes, features 0x%x%s%s%s\n", path,
            h->version, h->header_size, h->features,
            (h->features & PROF_FEATURE_CUDART) ? " cudart" : "",
            (h->features & PROF_FEATURE_STACKS) ? " stacks" : "",
            (h->features & PROF_FEATURE_TSC_CLOCK) ? " tsc_clock" : "");
    struct u64map apis, strings;
    u64map_init(&apis);
    u64map_init(&strings);
    struct trace_record rec;
    while (trace_reader_next(r, &rec))
        dump_record(out, &rec, &apis, &strings);
    const char *w = trace_reader_warning(r);
    if (w)
        format_say(err, "%s", w);
    fprintf(out, "# %" PRIu64 " records\n", trace_reader_count(r));
    uint64_t k, v;
    for (size_t i = 0; u64map_next(&apis, &i, &k, &v);) {
        struct dump_api *a = (void *)(uintptr_t)v;
        free(a->name);
        free(a->args);
        free(a);
    }
    for (size_t i = 0; u64map_next(&strings, &i, &k, &v);)
        free((void *)(uintptr_t)v);
    u64map_free(&apis);
    u64map_free(&strings);
    trace_reader_close(r);
    return 0;
}
