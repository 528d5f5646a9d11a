/* Test double of the CUDA runtime (no GPU): devices, errors and versions. See
 * fake_cudart.c. */
#include "fake_cudart.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- devices ---- */

cudaError_t fake_impl_cudaGetDeviceCount(int *count)
{
    if (!count)
        return fake_result(cudaErrorInvalidValue);
    *count = fake_device_count;
    return fake_device_count > 0 ? cudaSuccess : fake_result(cudaErrorNoDevice);
}

cudaError_t fake_impl_cudaSetDevice(int device)
{
    if (fake_no_device())
        return fake_result(cudaErrorNoDevice);
    if (device < 0 || device >= fake_device_count)
        return fake_result(cudaErrorInvalidDevice);
    fake_current_device = device;
    return cudaSuccess;
}

/* The benchmark's reference call: two thread-local accesses and a global read, no lock. */
cudaError_t fake_impl_cudaGetDevice(int *device)
{
    if (__builtin_expect(!device || fake_device_count <= 0, 0))
        return fake_result(device ? cudaErrorNoDevice : cudaErrorInvalidValue);
    *device = fake_current_device;
    return cudaSuccess;
}

cudaError_t fake_impl_cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (!prop)
        return fake_result(cudaErrorInvalidValue);
    if (device < 0 || device >= fake_device_count)
        return fake_result(fake_no_device() ? cudaErrorNoDevice : cudaErrorInvalidDevice);
    memset(prop, 0, sizeof(*prop));
    snprintf(prop->name, sizeof(prop->name), "Fake CUDA Device (test double)");
    prop->uuid.bytes[0] = (char)device;
    prop->totalGlobalMem = 80ull << 30;
    prop->sharedMemPerBlock = 48 << 10;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 64 << 10;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->managedMemory = 1;
    prop->concurrentKernels = 1;
    prop->unifiedAddressing = 1;
    prop->asyncEngineCount = 2;
    prop->pciBusID = device + 1;
    return cudaSuccess;
}

cudaError_t fake_impl_cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (!value)
        return fake_result(cudaErrorInvalidValue);
    if (device < 0 || device >= fake_device_count)
        return fake_result(fake_no_device() ? cudaErrorNoDevice : cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrComputeCapabilityMajor:
        *value = 9;
        break;
    case cudaDevAttrMultiProcessorCount:
        *value = 132;
        break;
    case cudaDevAttrWarpSize:
        *value = 32;
        break;
    case cudaDevAttrMaxThreadsPerBlock:
        *value = 1024;
        break;
    default:
        *value = 0;
        break;
    }
    return cudaSuccess;
}

cudaError_t fake_impl_cudaDeviceReset(void)
{
    fake_wait_until(fake_device_idle_at());
    fake_do_resource(FAKE_CUPTI_CONTEXT_DESTROY_STARTING, NULL);
    return cudaSuccess;
}

/* ---- errors and versions ---- */

cudaError_t fake_impl_cudaGetLastError(void)
{
    cudaError_t err = fake_last_error;

    fake_last_error = cudaSuccess;
    return err;
}

cudaError_t fake_impl_cudaPeekAtLastError(void)
{
    return fake_last_error;
}

static const char *fake_error_name(cudaError_t error)
{
    switch (error) {
    case cudaSuccess:
        return "cudaSuccess";
    case cudaErrorInvalidValue:
        return "cudaErrorInvalidValue";
    case cudaErrorMemoryAllocation:
        return "cudaErrorMemoryAllocation";
    case cudaErrorInvalidConfiguration:
        return "cudaErrorInvalidConfiguration";
    case cudaErrorInvalidPitchValue:
        return "cudaErrorInvalidPitchValue";
    case cudaErrorInvalidMemcpyDirection:
        return "cudaErrorInvalidMemcpyDirection";
    case cudaErrorMissingConfiguration:
        return "cudaErrorMissingConfiguration";
    case cudaErrorInsufficientDriver:
        return "cudaErrorInsufficientDriver";
    case cudaErrorInvalidDeviceFunction:
        return "cudaErrorInvalidDeviceFunction";
    case cudaErrorNoDevice:
        return "cudaErrorNoDevice";
    case cudaErrorInvalidDevice:
        return "cudaErrorInvalidDevice";
    case cudaErrorInvalidResourceHandle:
        return "cudaErrorInvalidResourceHandle";
    case cudaErrorNotReady:
        return "cudaErrorNotReady";
    default:
        return "cudaErrorUnknown";
    }
}

FAKE_API const char *cudaGetErrorName(cudaError_t error)
{
    return fake_error_name(error);
}

FAKE_API const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
    case cudaSuccess:
        return "no error";
    case cudaErrorInvalidValue:
        return "invalid argument";
    case cudaErrorMemoryAllocation:
        return "out of memory";
    case cudaErrorInvalidConfiguration:
        return "invalid configuration argument";
    case cudaErrorInvalidDeviceFunction:
        return "invalid device function";
    case cudaErrorNoDevice:
        return "no CUDA-capable device is detected";
    case cudaErrorInvalidDevice:
        return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle:
        return "invalid resource handle";
    case cudaErrorNotReady:
        return "device not ready";
    default:
        return fake_error_name(error);
    }
}

cudaError_t fake_impl_cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return fake_result(cudaErrorInvalidValue);
    *runtimeVersion = 13000;
    return cudaSuccess;
}

cudaError_t fake_impl_cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return fake_result(cudaErrorInvalidValue);
    *driverVersion = 13000;
    return cudaSuccess;
}
