/* The Chrome/Kineto export's GPU facts (export_chrome_gpu.h): deviceProperties, and the
 * kernels' occupancy args estimated from the device's compute capability. */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "alloc.h"
#include "export_chrome_gpu.h"
#include "pid_clash.h"

/* Per-SM limits of a compute capability (CUDA C Programming Guide, "Technical
 * Specifications per Compute Capability"); every one of them has 64 K registers per SM,
 * allocated 256 to a warp. The trace records only the device's capability and SM count. */
struct chrome_sm_limits {
    uint16_t major, minor;
    uint32_t threads, blocks, shared_kb;
};

static const struct chrome_sm_limits chrome_sm_table[] = {
    {6, 0, 2048, 32, 64},   {6, 1, 2048, 32, 96},   {6, 2, 2048, 32, 64},  {7, 0, 2048, 32, 96},
    {7, 2, 2048, 32, 96},   {7, 5, 1024, 16, 64},   {8, 0, 2048, 32, 164}, {8, 6, 1536, 16, 100},
    {8, 7, 1536, 16, 164},  {8, 9, 1536, 24, 100},  {9, 0, 2048, 32, 228}, {10, 0, 2048, 32, 228},
    {10, 3, 2048, 32, 228}, {12, 0, 1536, 32, 100}, {12, 1, 1536, 32, 100}};

static const struct chrome_sm_limits *chrome_sm_limits(const struct model_gpu_device *g)
{
    for (size_t i = 0; g && i < sizeof chrome_sm_table / sizeof *chrome_sm_table; i++)
        if (chrome_sm_table[i].major == g->compute_major &&
            chrome_sm_table[i].minor == g->compute_minor)
            return &chrome_sm_table[i];
    return NULL;
}

static const struct model_gpu_device *chrome_device(const struct model_process *p, uint32_t dev)
{
    for (size_t d = 0; d < p->gpu.ndevices; d++)
        if (p->gpu.devices[d].device == dev)
            return &p->gpu.devices[d];
    return NULL;
}

static uint64_t chrome_dim_product(uint64_t packed)
{
    uint64_t x = packed & 0xffffffffu, y = packed >> 32 & 0xffff, z = packed >> 48;
    return x * (y ? y : 1) * (z ? z : 1);
}

/* blocks and warps per SM and the estimated achieved occupancy — the blocks that fit on an
 * SM (threads, blocks, registers and shared memory limits), no more than the grid gives
 * each SM, in warps over the SM's warps — where the device's capability is known. */
void chrome_occupancy_format(const struct model_process *p, uint32_t device, uint64_t grid,
                             uint64_t block, uint32_t registers, uint32_t shared_bytes, char *buf,
                             size_t len)
{
    buf[0] = '\0';
    const struct model_gpu_device *g = chrome_device(p, device);
    const struct chrome_sm_limits *lim = chrome_sm_limits(g);
    uint64_t blocks = chrome_dim_product(grid), threads = chrome_dim_product(block);
    if (!lim || !g->sm_count || !blocks || !threads)
        return;
    uint64_t warps = (threads + 31) / 32, sm_warps = lim->threads / 32;
    double per_sm = (double)blocks / g->sm_count;
    uint64_t fit = sm_warps / warps;
    if (fit > lim->blocks)
        fit = lim->blocks;
    if (registers) {
        uint64_t reg_warp = ((uint64_t)registers * 32 + 255) / 256 * 256;
        uint64_t by_regs = 65536 / reg_warp / warps;
        fit = by_regs < fit ? by_regs : fit;
    }
    if (shared_bytes) {
        uint64_t by_shared = (uint64_t)lim->shared_kb * 1024 / shared_bytes;
        fit = by_shared < fit ? by_shared : fit;
    }
    double active = per_sm < (double)fit ? per_sm : (double)fit;
    snprintf(buf, len,
             ", \"blocks per SM\": %.6g, \"warps per SM\": %.6g, \"est. achieved occupancy %%\": "
             "%.0f",
             per_sm, per_sm * (double)warps, 100.0 * active * (double)warps / (double)sm_warps);
}

/* The launch calls that HTA finds by name, CUDA's of them: hta/common/trace_symbol_table.py,
 * get_runtime_launch_events_mask (critical_path_analysis, get_queue_length_summary);
 * hta/analyzers/cuda_kernel_analysis.py (get_cuda_kernel_launch_stats: the first two). */
static const char *const chrome_hta_launches[] = {"cudaLaunchKernel", "cudaLaunchKernelExC",
                                                  "cuLaunchKernel",   "cuLaunchKernelEx",
                                                  "cudaMemcpyAsync",  "cudaMemsetAsync"};

const char *chrome_launch_name(const char *name)
{
    if (name[0] != '_' || name[1] != '_')
        return name;
    for (size_t i = 0; i < sizeof chrome_hta_launches / sizeof *chrome_hta_launches; i++)
        if (!strcmp(name + 2, chrome_hta_launches[i]))
            return name + 2;
    return name;
}

/* The group key of a process: its rank, or its pid (pid_clash_export_pid) when it has
 * none. */
int64_t chrome_group(const struct model_process *p)
{
    return p->rank >= 0 ? p->rank : -1 - pid_clash_export_pid(p);
}

/* One device as Kineto lists it: what GPU_DEVICE records, and the per-SM limits of its
 * compute capability (chrome_sm_table) where it is known. */
static json_t *chrome_device_json(const struct model_gpu_device *g)
{
    json_t *o =
        json_pack("{s:I, s:s, s:I, s:i, s:i, s:i, s:I, s:I}", "id", (json_int_t)g->device, "name",
                  g->name ? g->name : "", "totalGlobalMem", (json_int_t)g->global_memory_bytes,
                  "computeMajor", g->compute_major, "computeMinor", g->compute_minor, "numSms",
                  (int)g->sm_count, "clockRate", (json_int_t)g->core_clock_khz, "memoryClockRate",
                  (json_int_t)g->memory_clock_khz);
    const struct chrome_sm_limits *lim = chrome_sm_limits(g);
    if (o && lim) {
        json_object_set_new(o, "maxThreadsPerBlock", json_integer(1024));
        json_object_set_new(o, "maxThreadsPerMultiprocessor", json_integer(lim->threads));
        json_object_set_new(o, "regsPerBlock", json_integer(65536));
        json_object_set_new(o, "regsPerMultiprocessor", json_integer(65536));
        json_object_set_new(o, "warpSize", json_integer(32));
        json_object_set_new(o, "sharedMemPerBlock", json_integer(48 * 1024));
        json_object_set_new(o, "sharedMemPerMultiprocessor",
                            json_integer((json_int_t)lim->shared_kb * 1024));
    }
    return o;
}

/* deviceProperties: the plugin takes a device's entry at the index of its id
 * (device_props[gpu_id], profiler/data.py and run_generator.py), so the list goes by id
 * from 0, an id the trace has no record of holding {"id": N} only. */
json_t *chrome_devices(struct model_process *const *procs, size_t n, int64_t group)
{
    enum { CHROME_MAX_DEVICES = 1024 };
    json_t *list = json_array();
    struct u64map seen; /* device id -> its model_gpu_device */
    u64map_init(&seen);
    uint64_t top = 0;
    for (size_t i = 0; i < n; i++) {
        if (chrome_group(procs[i]) != group)
            continue;
        for (size_t d = 0; d < procs[i]->gpu.ndevices; d++) {
            const struct model_gpu_device *g = &procs[i]->gpu.devices[d];
            if (g->device >= CHROME_MAX_DEVICES)
                continue;
            uint64_t *slot = u64map_slot(&seen, g->device);
            if (!slot)
                report_oom();
            if (*slot)
                continue;
            *slot = (uintptr_t)g;
            top = g->device + 1 > top ? g->device + 1 : top;
        }
    }
    for (uint64_t id = 0; id < top; id++) {
        const uint64_t *slot = u64map_find(&seen, id);
        json_array_append_new(
            list, slot && *slot
                      ? chrome_device_json((const struct model_gpu_device *)(uintptr_t)*slot)
                      : json_pack("{s:I}", "id", (json_int_t)id));
    }
    u64map_free(&seen);
    return list;
}
