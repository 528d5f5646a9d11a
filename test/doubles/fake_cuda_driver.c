/* TEST DOUBLE of the CUDA driver's device queries (libcuda.so.1), for machines without a
 * GPU: the fake runtime (fake_cudart.c) needs it, as the real runtime needs the driver, so
 * a process using the doubles has a libcuda.so.1 loaded. The profiler describes a device
 * from it when CUPTI reports a new context (cupti_sub.c: its name, memory, SM count,
 * clocks and compute capability, which the Kineto export's deviceProperties and occupancy
 * read), and an attach starts CUPTI only when it is loaded (attach.c). Its one device model
 * answers for every ordinal FAKE_CUDA_DEVICE_COUNT allows (default 1), with an H100's
 * figures. */
#include <cuda.h>
#include <stdlib.h>
#include <string.h>

static int fake_driver_devices(void)
{
    const char *v = getenv("FAKE_CUDA_DEVICE_COUNT");
    return v ? atoi(v) : 1;
}

CUresult cuInit(unsigned int flags)
{
    (void)flags;
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *version)
{
    if (!version)
        return CUDA_ERROR_INVALID_VALUE;
    *version = CUDA_VERSION;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = fake_driver_devices();
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= fake_driver_devices())
        return CUDA_ERROR_INVALID_DEVICE;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice device)
{
    static const char model[] = "NVIDIA H100 80GB HBM3 (test double)";
    if (!name || len <= 0 || device < 0 || device >= fake_driver_devices())
        return CUDA_ERROR_INVALID_VALUE;
    strncpy(name, model, (size_t)len - 1);
    name[len - 1] = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem(size_t *bytes, CUdevice device)
{
    if (!bytes || device < 0 || device >= fake_driver_devices())
        return CUDA_ERROR_INVALID_VALUE;
    *bytes = (size_t)85520809984ull;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetAttribute(int *value, CUdevice_attribute attr, CUdevice device)
{
    if (!value || device < 0 || device >= fake_driver_devices())
        return CUDA_ERROR_INVALID_VALUE;
    switch (attr) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        *value = 132;
        break;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        *value = 1980000;
        break;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        *value = 2619000;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        *value = 9;
        break;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        *value = 0;
        break;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        *value = 32;
        break;
    default:
        *value = 0;
        break;
    }
    return CUDA_SUCCESS;
}
