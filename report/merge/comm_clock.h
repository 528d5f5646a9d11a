/* comm_clock: the offsets between the hosts' clocks, estimated from the collectives
 * themselves. The ranks of an allreduce, allgather, reduce-scatter, all-to-all or barrier
 * leave it together, to within its latency; so for each host the median, over the
 * operations it shares with the reference host (the host of the lowest rank), of its
 * ranks' exit minus the reference's earliest exit is its clock's offset, and the median
 * absolute deviation of those differences is the residual uncertainty, printed next to
 * the cross-rank figures. */
#ifndef REPORT_COMM_CLOCK_H
#define REPORT_COMM_CLOCK_H

#include <stddef.h>
#include <stdint.h>

/* One host's clock against the reference host's. */
struct comm_host {
    const char *host;        /* into the processes */
    int64_t offset_ns;       /* its clock minus the reference's; 0 for the reference */
    uint64_t uncertainty_ns; /* median absolute deviation of the differences */
    uint64_t samples;        /* operations measured; 0: no shared collective, not known */
};

/* Differences gathered per host, at most COMM_CLOCK_SAMPLES each. */
#define COMM_CLOCK_SAMPLES 65536
struct comm_clock {
    struct comm_host *hosts;
    size_t nhosts;
    int64_t **diffs; /* per host */
    size_t *ndiffs;
};

void comm_clock_init(struct comm_clock *c, struct comm_host *hosts, size_t nhosts);
/* An exit of a rank on host h at end_ns, of an operation whose reference exit is ref_ns. */
void comm_clock_add(struct comm_clock *c, size_t h, uint64_t end_ns, uint64_t ref_ns);
/* Sets each host's offset, uncertainty and samples; frees the differences. */
void comm_clock_finish(struct comm_clock *c);

#endif
