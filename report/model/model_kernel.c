/* Kernel launches of one process, keyed by the address a launch passed, and the SYMBOL
 * records that name those addresses. Names are resolved once the file ends, since a
 * symbol may be written after the launches that use it. */
#include "model.h"
#include "model_part.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* From the C++ ABI runtime (libstdc++): the one reason profreport links it. */
extern char *__cxa_demangle(const char *mangled, char *out, size_t *len, int *status);

char *model_demangle(const char *name)
{
    if (name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        char *d = __cxa_demangle(name, NULL, NULL, &status);
        if (d && status == 0)
            return d;
        free(d);
    }
    char *copy = strdup(name);
    if (!copy) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    return copy;
}

char *model_kernel_resolve(const struct model_process *p, uint64_t address)
{
    uint64_t a = address;
    /* Aliases may chain (a handle to a stub); a bound stops a cycle. */
    for (int hops = 0; hops < 16; hops++) {
        uint64_t *sid = u64map_find(&p->kernel_names, a);
        if (sid) {
            const char *s = u64map_get_ptr(&p->strings, *sid);
            if (s)
                return model_demangle(s);
            break;
        }
        uint64_t *target = u64map_find(&p->kernel_alias, a);
        if (!target)
            break;
        a = *target;
    }
    char buf[40];
    snprintf(buf, sizeof buf, "kernel@0x%" PRIx64, address);
    return model_demangle(buf);
}

static void model_kernel_on_call(struct model_process *p, const struct model_api *api,
                                 const struct prof_rec_api_call *call, const uint64_t *args,
                                 size_t nargs, uint32_t tid)
{
    (void)tid;
    int f = api->role[MODEL_ARG_FUNC];
    if (f < 0 || (size_t)f >= nargs)
        return;
    uint64_t *slot = u64map_slot(&p->kernels, args[f]);
    if (!slot)
        return;
    struct model_kernel *k = (void *)(uintptr_t)*slot;
    if (!k) {
        k = calloc(1, sizeof *k);
        if (!k) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        k->func = args[f];
        u64map_init(&k->grids);
        u64map_init(&k->blocks);
        *slot = (uintptr_t)k;
    }
    k->launches++;
    if (call->result != 0)
        k->errors++;
    k->ticks += call->end >= call->start ? call->end - call->start : 0;
    int g = api->role[MODEL_ARG_GRID], b = api->role[MODEL_ARG_BLOCK];
    if (g >= 0 && (size_t)g < nargs && (slot = u64map_slot(&k->grids, args[g])))
        ++*slot;
    if (b >= 0 && (size_t)b < nargs && (slot = u64map_slot(&k->blocks, args[b])))
        ++*slot;
}

static void model_kernel_finish(struct model_process *p)
{
    uint64_t key, v;
    for (size_t i = 0; u64map_next(&p->kernels, &i, &key, &v);) {
        struct model_kernel *k = (void *)(uintptr_t)v;
        free(k->name);
        k->name = model_kernel_resolve(p, k->func);
        k->ns = model_ticks_to_ns(p, k->ticks);
    }
}

const struct model_part model_kernel_part = {
    .name = "kernel",
    .on_api_call = model_kernel_on_call,
    .finish = model_kernel_finish,
};
