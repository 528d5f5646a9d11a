/* cuBLAS and cuBLASLt interposition: wrappers generated from cublas.def, plus
 * cublasLtMatmul, whose shape lives in descriptors that must be read. */
#include <errno.h>
#include <stdint.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "clock.h"
#include "layer.h"
#include "cublas_wrap.h"
#include "emit.h"
#include "resolve.h"

#define PROF_EXPORT __attribute__((visibility("default")))
#define PROF_STRIP(...) __VA_ARGS__
#define CUBLAS_PTR(p) ((uint64_t)(uintptr_t)(p))
/* An output pointer argument, read only when the call succeeded. */
#define CUBLAS_OUT_PTR(pp) (rc == CUBLAS_STATUS_SUCCESS && (pp) ? (uint64_t)(uintptr_t) * (pp) : 0)
/* A signed value kept signed when widened (algo -1 reads back as -1). */
#define CUBLAS_SIGNED(v) ((uint64_t)(int64_t)(v))
#define CUBLAS_GEMM_ARGS                                                                           \
    "transa,transb,m,n,k,batch,dtype_a,dtype_b,dtype_c,compute_type,algo,stream"
#define CUBLAS_GEMM_REC(ta, tb, m, n, k, batch, type_a, type_b, type_c, compute, algo)             \
    (uint64_t)(ta), (uint64_t)(tb), (uint64_t)(m), (uint64_t)(n), (uint64_t)(k),                   \
        (uint64_t)(batch), (uint64_t)(type_a), (uint64_t)(type_b), (uint64_t)(type_c),             \
        (uint64_t)(compute), CUBLAS_SIGNED(algo), cublas_stream_of(handle, rc)

/* Where the real functions live: a prefix of the file name, so libcublas.so never
 * matches libcublasLt.so. */
#define CUBLAS_LIB_CUBLAS "libcublas.so"
#define CUBLAS_LIB_CUBLASLT "libcublasLt.so"

/* cuBLAS declares its __half functions for C++ only; the wrappers see the pointers. */
typedef struct cublas_half cublas_half;

__thread unsigned prof_tls_lib_depth PROF_TLS;
static int cublas_enabled;

enum cublas_api {
#define PROF_CUBLAS_FN(name, lib, cat, params, args, argnames, record) CUBLAS_API_##name,
#include "cublas.def"
#undef PROF_CUBLAS_FN
    CUBLAS_API_cublasLtMatmul,
    CUBLAS_API_COUNT
};
_Static_assert(CUBLAS_API_COUNT <= 256, "cuBLAS ids stay below the next library's base");

/* Every row names at least one argument, so appending ",nested" keeps the list well formed. */
#define PROF_CUBLAS_FN(name, lib, cat, params, args, argnames, record)                             \
    _Static_assert(sizeof(argnames) > 1, #name " records an argument");
#include "cublas.def"
#undef PROF_CUBLAS_FN

static struct prof_api_desc cublas_apis[] = {
#define PROF_CUBLAS_FN(name, lib, cat, params, args, argnames, record)                             \
    {PROF_API_CUBLAS_BASE + CUBLAS_API_##name, PROF_CAT_##cat, 0, #name, argnames ",nested"},
#include "cublas.def"
#undef PROF_CUBLAS_FN
    {PROF_API_CUBLAS_BASE + CUBLAS_API_cublasLtMatmul, PROF_CAT_LIBRARY, 0, "cublasLtMatmul",
     "transa,transb,m,n,k,batch,dtype_a,dtype_b,dtype_c,compute_type,algo,workspace_bytes,stream,"
     "nested"},
};
_Static_assert(sizeof cublas_apis / sizeof cublas_apis[0] == CUBLAS_API_COUNT, "one row per API");

/* Real entry points, resolved on first use. */
#define PROF_CUBLAS_FN(name, lib, cat, params, args, argnames, record)                             \
    typedef cublasStatus_t(*cublas_##name##_fn) params;                                            \
    static cublas_##name##_fn cublas_real_##name;
#include "cublas.def"
#undef PROF_CUBLAS_FN

static void *cublas_resolve(const char *name, const char *lib)
{
    int saved = errno;
    prof_tls_busy++;
    void *p = resolve_symbol(name, lib);
    prof_tls_busy--;
    if (!p)
        collector_note("cannot find the real %s; the call fails with CUBLAS_STATUS_NOT_INITIALIZED",
                       name);
    errno = saved;
    return p;
}

/* Whether this call is recorded: not from inside the profiler, not when turned off. */
static inline int cublas_capture(void)
{
    return cublas_enabled && !prof_tls_busy &&
           atomic_load_explicit(&prof_recording, memory_order_relaxed);
}

/* Emits the call; runs as profiler code (busy), after the library call returned. */
static inline void cublas_emit(unsigned api, cublasStatus_t rc, uint64_t t0, uint64_t t1,
                               const uint64_t *recorded, unsigned n)
{
    emit_api_call((uint16_t)(PROF_API_CUBLAS_BASE + api), rc, t0, t1, recorded, n);
}

/* The stream a successful call ran on: the handle's, asked from cuBLAS itself. */
typedef cublasStatus_t (*cublas_get_stream_fn)(cublasHandle_t, cudaStream_t *);
static cublas_get_stream_fn cublas_real_get_stream;

static uint64_t cublas_stream_of(cublasHandle_t handle, cublasStatus_t rc)
{
    if (rc != CUBLAS_STATUS_SUCCESS || !handle)
        return 0;
    if (!cublas_real_get_stream) {
        cublas_real_get_stream =
            (cublas_get_stream_fn)resolve_symbol("cublasGetStream_v2", CUBLAS_LIB_CUBLAS);
        if (!cublas_real_get_stream)
            return 0;
    }
    cudaStream_t stream = NULL;
    if (cublas_real_get_stream(handle, &stream) != CUBLAS_STATUS_SUCCESS)
        return 0;
    return CUBLAS_PTR(stream);
}

#define PROF_CUBLAS_FN(name, lib, cat, params, args, argnames, record)                             \
    PROF_EXPORT cublasStatus_t name params                                                         \
    {                                                                                              \
        cublas_##name##_fn real = cublas_real_##name;                                              \
        if (__builtin_expect(real == NULL, 0)) {                                                   \
            real = (cublas_##name##_fn)cublas_resolve(#name, CUBLAS_LIB_##lib);                    \
            if (!real)                                                                             \
                return CUBLAS_STATUS_NOT_INITIALIZED;                                              \
            cublas_real_##name = real;                                                             \
        }                                                                                          \
        if (!cublas_capture())                                                                     \
            return real args;                                                                      \
        unsigned prof_depth = prof_tls_lib_depth++;                                                \
        uint64_t prof_t0 = prof_clock_ticks();                                                     \
        cublasStatus_t rc = real args;                                                             \
        uint64_t prof_t1 = prof_clock_ticks();                                                     \
        prof_tls_lib_depth = prof_depth;                                                           \
        int saved_errno = errno;                                                                   \
        prof_tls_busy++;                                                                           \
        uint64_t recorded[] = {PROF_STRIP record, prof_depth};                                     \
        cublas_emit(CUBLAS_API_##name, rc, prof_t0, prof_t1, recorded,                             \
                    sizeof recorded / sizeof recorded[0]);                                         \
        prof_tls_busy--;                                                                           \
        errno = saved_errno;                                                                       \
        return rc;                                                                                 \
    }
#include "cublas.def"
#undef PROF_CUBLAS_FN

/* ---- cublasLtMatmul ---- */

typedef cublasStatus_t (*cublaslt_matmul_fn)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *,
                                             const void *, cublasLtMatrixLayout_t, const void *,
                                             cublasLtMatrixLayout_t, const void *, const void *,
                                             cublasLtMatrixLayout_t, void *, cublasLtMatrixLayout_t,
                                             const cublasLtMatmulAlgo_t *, void *, size_t,
                                             cudaStream_t);
typedef cublasStatus_t (*cublaslt_layout_get_fn)(cublasLtMatrixLayout_t,
                                                 cublasLtMatrixLayoutAttribute_t, void *, size_t,
                                                 size_t *);
typedef cublasStatus_t (*cublaslt_desc_get_fn)(cublasLtMatmulDesc_t, cublasLtMatmulDescAttributes_t,
                                               void *, size_t, size_t *);
typedef cublasStatus_t (*cublaslt_algo_get_fn)(const cublasLtMatmulAlgo_t *,
                                               cublasLtMatmulAlgoConfigAttributes_t, void *, size_t,
                                               size_t *);

static cublaslt_matmul_fn cublaslt_real_matmul;
/* The descriptor readers; all three resolved together, or the shape is left at 0. */
static cublaslt_layout_get_fn cublaslt_layout_get;
static cublaslt_desc_get_fn cublaslt_desc_get;
static cublaslt_algo_get_fn cublaslt_algo_get;
static _Atomic int cublaslt_readers_state; /* 0 not tried, 1 ready, -1 missing */

static int cublaslt_readers(void)
{
    int state = atomic_load_explicit(&cublaslt_readers_state, memory_order_acquire);
    if (state)
        return state > 0;
    cublaslt_layout_get = (cublaslt_layout_get_fn)resolve_symbol("cublasLtMatrixLayoutGetAttribute",
                                                                 CUBLAS_LIB_CUBLASLT);
    cublaslt_desc_get =
        (cublaslt_desc_get_fn)resolve_symbol("cublasLtMatmulDescGetAttribute", CUBLAS_LIB_CUBLASLT);
    cublaslt_algo_get = (cublaslt_algo_get_fn)resolve_symbol("cublasLtMatmulAlgoConfigGetAttribute",
                                                             CUBLAS_LIB_CUBLASLT);
    state = cublaslt_layout_get && cublaslt_desc_get && cublaslt_algo_get ? 1 : -1;
    /* release: a thread that reads 1 also sees the three pointers */
    atomic_store_explicit(&cublaslt_readers_state, state, memory_order_release);
    return state > 0;
}

/* One integer attribute of a layout; `fallback` when the descriptor cannot say. */
static uint64_t cublaslt_layout_u64(cublasLtMatrixLayout_t layout,
                                    cublasLtMatrixLayoutAttribute_t attr, int is_signed32,
                                    uint64_t fallback)
{
    if (!layout)
        return fallback;
    if (is_signed32) {
        int32_t v = 0;
        size_t written = 0;
        if (cublaslt_layout_get(layout, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS)
            return fallback;
        return (uint64_t)(int64_t)v;
    }
    uint64_t v = 0;
    size_t written = 0;
    if (cublaslt_layout_get(layout, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS)
        return fallback;
    return v;
}

static int32_t cublaslt_desc_i32(cublasLtMatmulDesc_t desc, cublasLtMatmulDescAttributes_t attr,
                                 int32_t fallback)
{
    int32_t v = 0;
    size_t written = 0;
    if (!desc || cublaslt_desc_get(desc, attr, &v, sizeof v, &written) != CUBLAS_STATUS_SUCCESS)
        return fallback;
    return v;
}

/* The values recorded for one matmul; index order is the API_NAME argument list. */
enum {
    LT_TRANSA,
    LT_TRANSB,
    LT_M,
    LT_N,
    LT_K,
    LT_BATCH,
    LT_DTYPE_A,
    LT_DTYPE_B,
    LT_DTYPE_C,
    LT_COMPUTE,
    LT_ALGO,
    LT_WORKSPACE,
    LT_STREAM,
    LT_NESTED,
    LT_NARGS
};

static void cublaslt_describe(uint64_t *out, cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t a,
                              cublasLtMatrixLayout_t b, cublasLtMatrixLayout_t d,
                              const cublasLtMatmulAlgo_t *algo)
{
    if (!cublaslt_readers())
        return;
    int32_t transa = cublaslt_desc_i32(desc, CUBLASLT_MATMUL_DESC_TRANSA, CUBLAS_OP_N);
    out[LT_TRANSA] = (uint64_t)transa;
    out[LT_TRANSB] = (uint64_t)cublaslt_desc_i32(desc, CUBLASLT_MATMUL_DESC_TRANSB, CUBLAS_OP_N);
    out[LT_COMPUTE] = (uint64_t)cublaslt_desc_i32(desc, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 0);
    out[LT_M] = cublaslt_layout_u64(d, CUBLASLT_MATRIX_LAYOUT_ROWS, 0, 0);
    out[LT_N] = cublaslt_layout_u64(d, CUBLASLT_MATRIX_LAYOUT_COLS, 0, 0);
    out[LT_K] = cublaslt_layout_u64(
        a, transa == CUBLAS_OP_N ? CUBLASLT_MATRIX_LAYOUT_COLS : CUBLASLT_MATRIX_LAYOUT_ROWS, 0, 0);
    out[LT_BATCH] = cublaslt_layout_u64(d, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 1, 1);
    /* LAYOUT_TYPE is a uint32_t cudaDataType */
    out[LT_DTYPE_A] = (uint32_t)cublaslt_layout_u64(a, CUBLASLT_MATRIX_LAYOUT_TYPE, 1, 0);
    out[LT_DTYPE_B] = (uint32_t)cublaslt_layout_u64(b, CUBLASLT_MATRIX_LAYOUT_TYPE, 1, 0);
    out[LT_DTYPE_C] = (uint32_t)cublaslt_layout_u64(d, CUBLASLT_MATRIX_LAYOUT_TYPE, 1, 0);
    if (algo) {
        int32_t id = -1;
        size_t written = 0;
        if (cublaslt_algo_get(algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written) ==
            CUBLAS_STATUS_SUCCESS)
            out[LT_ALGO] = CUBLAS_SIGNED(id);
    }
}

/* Hand-written: m, n, k, batch and types are not arguments but attributes of the
 * descriptors, read (after the call) with cuBLASLt's own getters. */
PROF_EXPORT cublasStatus_t cublasLtMatmul(
    cublasLtHandle_t lightHandle, cublasLtMatmulDesc_t computeDesc, const void *alpha,
    const void *A, cublasLtMatrixLayout_t Adesc, const void *B, cublasLtMatrixLayout_t Bdesc,
    const void *beta, const void *C, cublasLtMatrixLayout_t Cdesc, void *D,
    cublasLtMatrixLayout_t Ddesc, const cublasLtMatmulAlgo_t *algo, void *workspace,
    size_t workspaceSizeInBytes, cudaStream_t stream)
{
    cublaslt_matmul_fn real = cublaslt_real_matmul;
    if (__builtin_expect(real == NULL, 0)) {
        real = (cublaslt_matmul_fn)cublas_resolve("cublasLtMatmul", CUBLAS_LIB_CUBLASLT);
        if (!real)
            return CUBLAS_STATUS_NOT_INITIALIZED;
        cublaslt_real_matmul = real;
    }
    if (!cublas_capture())
        return real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc,
                    algo, workspace, workspaceSizeInBytes, stream);
    unsigned depth = prof_tls_lib_depth++;
    uint64_t t0 = prof_clock_ticks();
    cublasStatus_t rc = real(lightHandle, computeDesc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D,
                             Ddesc, algo, workspace, workspaceSizeInBytes, stream);
    uint64_t t1 = prof_clock_ticks();
    prof_tls_lib_depth = depth;
    int saved_errno = errno;
    prof_tls_busy++;
    uint64_t recorded[LT_NARGS] = {0};
    recorded[LT_BATCH] = 1;
    recorded[LT_ALGO] = CUBLAS_SIGNED(-1);
    cublaslt_describe(recorded, computeDesc, Adesc, Bdesc, Ddesc, algo);
    recorded[LT_WORKSPACE] = workspaceSizeInBytes;
    recorded[LT_STREAM] = CUBLAS_PTR(stream);
    recorded[LT_NESTED] = depth;
    cublas_emit(CUBLAS_API_cublasLtMatmul, rc, t0, t1, recorded, LT_NARGS);
    prof_tls_busy--;
    errno = saved_errno;
    return rc;
}

static void cublas_init(int enabled)
{
    cublas_enabled = enabled;
    collector_add_api_table(cublas_apis, CUBLAS_API_COUNT);
}

const struct preload_layer cublas_layer = {
    .name = "cublas",
    .enable = SETTING_PROF_CUBLAS,
    .setup = cublas_init,
};
