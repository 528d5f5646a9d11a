/* The communication part of the process model: NCCL and MPI calls from their API_CALL
 * records, torch.distributed's operators from the TORCH_OP records, each kept with its
 * times on CLOCK_REALTIME (the axis the ranks of one host share), bytes and communicator. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "model.h"
#include "model_part.h"

/* torch.distributed's operators: the dispatcher's c10d ops and the process groups'
 * work spans (start to completion), two records of each collective, both kept here (the
 * steps count the time they cover); the merge counts the collective once (comm_pair.h). */
int model_comm_is_torch_op(const char *name)
{
    static const char *const prefixes[] = {"c10d::", "gloo:", "nccl:", "mpi:", "ucc:"};
    if (!strchr("cgnmu", name[0]) || !name[0]) /* most ops (aten::...) leave here: asked per op */
        return 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

/* Calls that set up or tear down rather than communicate. */
static int model_comm_is_setup(const char *name)
{
    return !strncmp(name, "MPI_Init", 8) || !strcmp(name, "MPI_Finalize") ||
           !strncmp(name, "ncclComm", 8);
}

static int model_comm_arg(const struct model_api *api, const char *name)
{
    for (size_t i = 0; i < api->nargs; i++)
        if (!strcmp(api->arg_names[i], name))
            return (int)i;
    return -1;
}

/* The model's own copy of a name (one per distinct text). */
static const char *model_comm_name(struct model_comm *c, const char *name)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (const char *s = name; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    for (;; h++) {
        uint64_t *slot = u64map_slot(&c->name_index, h | 1);
        if (!slot)
            report_oom();
        if (*slot && !strcmp(c->names[*slot - 1], name))
            return c->names[*slot - 1];
        if (*slot)
            continue;
        c->names = report_grow(c->names, &c->cap_names, c->nnames + 1, sizeof *c->names);
        c->names[c->nnames] = report_strdup(name);
        *slot = ++c->nnames;
        return c->names[c->nnames - 1];
    }
}

static struct model_comm_call *model_comm_push(struct model_comm *c)
{
    c->calls = report_grow(c->calls, &c->cap_calls, c->ncalls + 1, sizeof *c->calls);
    struct model_comm_call *call = &c->calls[c->ncalls++];
    memset(call, 0, sizeof *call);
    call->peer = -1;
    return call;
}

static void model_comm_on_api_call(struct model_process *p, const struct model_api *api,
                                   const struct prof_rec_api_call *rec, const uint64_t *args,
                                   size_t nargs, uint32_t tid)
{
    if (api->category != PROF_CAT_COMM)
        return;
    struct model_comm_call *call = model_comm_push(&p->comm);
    call->name = model_comm_name(&p->comm, api->name);
    call->start_ns = rec->start; /* ticks until model_comm_finish */
    call->end_ns = rec->end >= rec->start ? rec->end : rec->start;
    call->tid = tid;
    call->source = MODEL_COMM_CALL;
    call->setup = (uint8_t)model_comm_is_setup(api->name);
    /* NCCL's ncclInProgress (7) is a nonblocking call issued, not a failure. */
    call->failed = rec->result != 0 && !(rec->result == 7 && !strncmp(api->name, "nccl", 4));
    if (call->failed)
        return;
    int i;
    if ((i = model_comm_arg(api, "bytes")) >= 0 && (size_t)i < nargs)
        call->bytes = args[i];
    if ((i = model_comm_arg(api, "comm")) >= 0 && (size_t)i < nargs)
        call->comm = args[i];
    if ((i = model_comm_arg(api, "comm_size")) >= 0 && (size_t)i < nargs)
        call->comm_size = (uint32_t)args[i];
    if ((i = model_comm_arg(api, "peer")) >= 0 && (size_t)i < nargs)
        call->peer = (int32_t)(int64_t)args[i];
}

static void model_comm_finish(struct model_process *p)
{
    struct model_comm *c = &p->comm;
    uint64_t mono0 = model_start_monotonic_ns(p);
    /* Unsigned arithmetic: a trace's clock values are data (the fuzzer found an offset
     * that overflowed int64_t); the offset wraps, it is never undefined. */
    c->realtime_offset_ns =
        p->start_realtime_ns && mono0 ? (int64_t)(p->start_realtime_ns - mono0) : 0;
    for (size_t i = 0; i < c->ncalls; i++) {
        struct model_comm_call *call = &c->calls[i];
        call->start_ns =
            model_ticks_to_monotonic_ns(p, call->start_ns) + (uint64_t)c->realtime_offset_ns;
        call->end_ns =
            model_ticks_to_monotonic_ns(p, call->end_ns) + (uint64_t)c->realtime_offset_ns;
    }
    /* torch.distributed's ops, before the torch part lets the raw ops go. */
    const struct model_torch *t = &p->torch;
    uint32_t world = 0;
    const char *ws = model_meta_get(p, "world_size");
    if (ws && *ws)
        world = (uint32_t)strtoul(ws, NULL, 10);
    for (size_t i = 0; i < t->nops; i++) {
        const struct model_torch_op *op = &t->ops[i];
        const char *name = u64map_get_ptr(&p->strings, op->name_sid);
        if (!name || !model_comm_is_torch_op(name))
            continue;
        struct model_comm_call *call = model_comm_push(c);
        call->name = model_comm_name(c, name);
        call->start_ns =
            model_ticks_to_monotonic_ns(p, op->start) + (uint64_t)c->realtime_offset_ns;
        uint64_t end = op->end >= op->start ? op->end : op->start;
        call->end_ns = model_ticks_to_monotonic_ns(p, end) + (uint64_t)c->realtime_offset_ns;
        call->tid = op->tid;
        call->source = MODEL_COMM_TORCH_OP;
        call->comm_size = world;
    }
    if (c->ncalls && !c->realtime_offset_ns)
        model_add_warning(p,
                          "%s: no start_realtime_ns / start_monotonic_ns in META: its "
                          "communication times are not on the other ranks' clock",
                          p->file);
}

static void model_comm_free(struct model_process *p)
{
    free(p->comm.calls);
    for (size_t i = 0; i < p->comm.nnames; i++)
        free(p->comm.names[i]);
    free(p->comm.names);
    u64map_free(&p->comm.name_index);
}

const struct model_part model_comm_part = {
    .name = "comm",
    .on_api_call = model_comm_on_api_call,
    .finish = model_comm_finish,
    .free = model_comm_free,
};
