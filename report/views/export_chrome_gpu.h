/* export_chrome_gpu: what the Chrome/Kineto export (export_chrome.c) writes of the GPUs:
 * the deviceProperties list and each kernel's occupancy args. */
#ifndef REPORT_EXPORT_CHROME_GPU_H
#define REPORT_EXPORT_CHROME_GPU_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "model.h"

/* The group key of a process (one file per group): its rank, or -1 - pid without one. */
int64_t chrome_group(const struct model_process *p);
/* ", \"blocks per SM\": ..., \"warps per SM\": ..., \"est. achieved occupancy %\": ..."
 * of a launch (grid and block packed x | y << 32 | z << 48) on p's device, or "" where
 * the device's compute capability is unknown. */
void chrome_occupancy_format(const struct model_process *p, uint32_t device, uint64_t grid,
                             uint64_t block, uint32_t registers, uint32_t shared_bytes, char *buf,
                             size_t len);
/* The name of a CUDA runtime or driver call as HTA expects a launch's: CUPTI 13 names the
 * runtime's launch (cbid 505) "__cudaLaunchKernel", which HTA's launch list lacks, so a
 * leading "__" goes where the rest is a launch HTA knows; else name. Our tables keep
 * CUPTI's names. */
const char *chrome_launch_name(const char *name);
/* deviceProperties of the processes of group, by device id from 0. */
json_t *chrome_devices(struct model_process *const *procs, size_t n, int64_t group);

#endif
