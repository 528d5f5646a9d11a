/* CUPTI's own kernel count for a run, for `make gpu-check`: an injection library
 * (CUDA_INJECTION64_PATH) that subscribes to CUPTI, counts CONCURRENT_KERNEL records and
 * writes the count to $CUPTI_COUNT_FILE at exit. Independent of libprof.so on purpose:
 * gpu-check compares profrun's kernel table with this number for the same workload. */
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>

static unsigned long long kernels;

static void CUPTIAPI requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = aligned_alloc(8, 8u << 20);
    *size = *buffer ? 8u << 20 : 0;
    *max_records = 0;
}

static void CUPTIAPI completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                               size_t valid)
{
    (void)ctx;
    (void)stream;
    (void)size;
    CUpti_Activity *a = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &a) == CUPTI_SUCCESS)
        if (a->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            a->kind == CUPTI_ACTIVITY_KIND_KERNEL)
            kernels++;
    free(buffer);
}

static void report(void)
{
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const char *path = getenv("CUPTI_COUNT_FILE");
    FILE *f = path ? fopen(path, "w") : stderr;
    if (f) {
        fprintf(f, "%llu\n", kernels);
        if (f != stderr)
            fclose(f);
    }
}

static void CUPTIAPI on_resource(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                 const void *data)
{
    (void)u;
    (void)data;
    if (d == CUPTI_CB_DOMAIN_RESOURCE && id == CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING)
        cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

__attribute__((visibility("default"))) int InitializeInjection(void)
{
    CUpti_SubscriberHandle sub;
    cuptiSubscribe(&sub, on_resource, NULL);
    cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RESOURCE);
    cuptiActivityRegisterCallbacks(requested, completed);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    atexit(report);
    return 1;
}
