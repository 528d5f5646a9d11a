/* The kinds of communication calls: names, the kind of a call by its name, nccl-tests' bus
 * bandwidth factor (comm_merge.h). */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "comm_merge.h"

const char *comm_kind_name(enum comm_kind kind)
{
    static const char *const names[] = {
        [COMM_KIND_ALLREDUCE] = "allreduce", [COMM_KIND_REDUCE_SCATTER] = "reduce_scatter",
        [COMM_KIND_ALLGATHER] = "allgather", [COMM_KIND_ALLTOALL] = "alltoall",
        [COMM_KIND_BROADCAST] = "broadcast", [COMM_KIND_REDUCE] = "reduce",
        [COMM_KIND_GATHER] = "gather",       [COMM_KIND_SCATTER] = "scatter",
        [COMM_KIND_BARRIER] = "barrier",     [COMM_KIND_P2P] = "p2p",
        [COMM_KIND_WAIT] = "wait",           [COMM_KIND_SETUP] = "setup",
    };
    return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : "?";
}

/* Lower case without the library's prefix and without '_' and ':' ("allreduce"). */
static void comm_merge_fold(const char *name, char *out, size_t len)
{
    static const char *const prefixes[] = {"MPI_", "nccl", "c10d::", "gloo:", "mpi:", "ucc:"};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strncmp(name, prefixes[i], strlen(prefixes[i]))) {
            name += strlen(prefixes[i]);
            break;
        }
    size_t o = 0;
    for (; *name && o + 1 < len; name++)
        if (*name != '_' && *name != ':')
            out[o++] = (char)tolower((unsigned char)*name);
    out[o] = 0;
}

enum comm_kind comm_kind_of(const char *name)
{
    if (!strncmp(name, "MPI_Init", 8) || !strcmp(name, "MPI_Finalize") ||
        !strncmp(name, "ncclComm", 8))
        return COMM_KIND_SETUP;
    char f[64];
    comm_merge_fold(name, f, sizeof f);
    static const struct {
        const char *stem;
        enum comm_kind kind;
    } stems[] = {
        /* longest first where one contains another */
        {"reducescatter", COMM_KIND_REDUCE_SCATTER},
        {"allreduce", COMM_KIND_ALLREDUCE},
        {"allgather", COMM_KIND_ALLGATHER},
        {"alltoall", COMM_KIND_ALLTOALL},
        {"bcast", COMM_KIND_BROADCAST},
        {"broadcast", COMM_KIND_BROADCAST},
        {"reduce", COMM_KIND_REDUCE},
        {"gather", COMM_KIND_GATHER},
        {"scatter", COMM_KIND_SCATTER},
        {"barrier", COMM_KIND_BARRIER},
        {"send", COMM_KIND_P2P},
        {"recv", COMM_KIND_P2P},
    };
    for (size_t i = 0; i < sizeof stems / sizeof stems[0]; i++)
        if (strstr(f, stems[i].stem))
            return stems[i].kind;
    return COMM_KIND_WAIT;
}

double comm_busbw_factor(enum comm_kind kind, uint32_t n)
{
    if (n == 0)
        return 0;
    double ranks = n;
    switch (kind) {
    case COMM_KIND_ALLREDUCE:
        return 2.0 * (ranks - 1) / ranks;
    case COMM_KIND_REDUCE_SCATTER:
    case COMM_KIND_ALLGATHER:
    case COMM_KIND_ALLTOALL:
    case COMM_KIND_GATHER:
    case COMM_KIND_SCATTER:
        return (ranks - 1) / ranks;
    case COMM_KIND_BROADCAST:
    case COMM_KIND_REDUCE:
    case COMM_KIND_P2P:
        return 1.0;
    default:
        return 0;
    }
}
