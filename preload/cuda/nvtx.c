/* NVTX: the injection callbacks that header-only NVTX code calls, and the exported
 * libnvToolsExt functions; both end in nvtx_record(), one PROF_REC_NVTX record in the
 * calling thread's ring. Names are interned (STRING records); a domain handle and a
 * registered-string handle we hand out are the string id of their text. */
#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <wchar.h>

#define NVTX_NO_IMPL /* declarations and types only: we are the implementation */
#include <nvtx3/nvToolsExt.h>

#include "clock.h"
#include "layer.h"
#include "emit.h"
#include "nvtx.h"
#include "nvtx_ranges.h"
#include "resolve.h"
#include "stacks.h"

#define PROF_EXPORT __attribute__((visibility("default")))

static int nvtx_enabled;
/* Set by every injected callback: tells an exported wrapper that the real library
 * forwarded its call to us (NVTX_INJECTION64_PATH names libprof.so), so the event is
 * already recorded. */
static __thread int nvtx_tls_handled PROF_TLS;
/* Nesting levels that nvtxRangePush/Pop return: the default domain, and the others. */
static __thread int nvtx_tls_level[2] PROF_TLS;
/* nvtxRangeStart ids, unique in the process. */
static _Atomic uint64_t nvtx_next_range_id = 1;
/* A tool other than us answered the real library's calls: its domain and string handles
 * are not our string ids. */
static _Atomic int nvtx_foreign_tool;

/* ---- recording ---- */

static inline int nvtx_capture(void)
{
    return nvtx_enabled && !prof_tls_busy;
}

/* 1: written; 0: the ring was full (counted there); -1: not recording. */
static int nvtx_record(uint16_t kind, uint32_t name_sid, uint32_t domain_sid, uint64_t id,
                       uint64_t ticks)
{
    struct prof_thread *t = emit_thread();
    if (!t || !atomic_load_explicit(&prof_recording, memory_order_relaxed))
        return -1;
    if (__builtin_expect(!atomic_load_explicit(&prof_collector_running, memory_order_relaxed), 0))
        collector_resume();
    struct prof_rec_nvtx *rec = ring_reserve(&t->ring, sizeof *rec);
    if (!rec)
        return 0; /* counted by the ring; the collector writes a LOST record */
    rec->h.type = PROF_REC_NVTX;
    rec->h.size = sizeof *rec;
    rec->kind = kind;
    rec->reserved = 0;
    rec->name_sid = name_sid;
    rec->domain_sid = domain_sid;
    rec->id = id;
    rec->ticks = ticks;
    ring_commit(&t->ring);
    return 1;
}

static uint32_t nvtx_intern(const char *text)
{
    if (!text)
        return 0;
    prof_tls_busy++; /* interning may allocate */
    uint32_t sid = collector_intern(text);
    prof_tls_busy--;
    return sid;
}

/* UTF-32 (Linux wchar_t) to UTF-8 into buf, or only counted when buf is NULL; returns the
 * bytes, the NUL not counted. Values past U+10FFFF are left out. */
static size_t nvtx_utf8(const wchar_t *w, char *buf)
{
    static const uint8_t lead[5] = {0, 0, 0xc0, 0xe0, 0xf0};
    size_t n = 0;
    for (; *w; w++) {
        uint32_t c = (uint32_t)*w;
        size_t k = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : c < 0x110000 ? 4 : 0;
        if (buf && k) {
            buf[n] = (char)(lead[k] | (c >> (6 * (k - 1))));
            for (size_t i = 1; i < k; i++)
                buf[n + i] = (char)(0x80 | ((c >> (6 * (k - 1 - i))) & 0x3f));
        }
        n += k;
    }
    if (buf)
        buf[n] = '\0';
    return n;
}

/* Converted whole: the interning bounds a long name, with a marker (text_bound.h). */
static uint32_t nvtx_intern_wide(const wchar_t *text)
{
    if (!text)
        return 0;
    char small[256];
    size_t len = nvtx_utf8(text, NULL) + 1;
    prof_tls_busy++; /* a long name's buffer is allocated */
    char *buf = len <= sizeof small ? small : malloc(len);
    prof_tls_busy--;
    if (!buf)
        return 0;
    nvtx_utf8(text, buf);
    uint32_t sid = nvtx_intern(buf);
    if (buf != small) {
        prof_tls_busy++;
        free(buf);
        prof_tls_busy--;
    }
    return sid;
}

/* Our handles carry string ids; a foreign tool's handles mean nothing to us. */
static uint32_t nvtx_handle_sid(const void *handle)
{
    if (!handle || atomic_load_explicit(&nvtx_foreign_tool, memory_order_relaxed))
        return 0;
    return (uint32_t)(uintptr_t)handle;
}

static uint32_t nvtx_message_sid(const nvtxEventAttributes_t *a)
{
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message)
        return 0;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
        return nvtx_intern(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
        return nvtx_intern_wide(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
        return nvtx_handle_sid(a->message.registered);
    default:
        return 0;
    }
}

/* The events, shared by the callbacks and the exported wrappers. domain: 0 default. */
static int nvtx_push(uint32_t domain_sid, uint32_t name_sid, uint64_t ticks)
{
    nvtx_record(PROF_NVTX_PUSH, name_sid, domain_sid, 0, ticks);
    struct nvtx_thread *nt = nvtx_thread_here();
    int d = domain_sid != 0;
    if (nt && nt->depth[d] >= 0 && nt->depth[d] < NVTX_STACK_MAX)
        nt->stack[d][nt->depth[d]] = (struct nvtx_open){name_sid, ticks};
    /* the sampler's handler on this thread reads depth, then the range below it */
    atomic_signal_fence(memory_order_release);
    if (nt)
        nt->depth[d]++;
    return nvtx_tls_level[d]++;
}

static int nvtx_pop(uint32_t domain_sid)
{
    uint64_t ticks = prof_clock_ticks();
    struct nvtx_thread *nt = nvtx_thread_here();
    int d = domain_sid != 0;
    const struct nvtx_open *open = NULL;
    if (nt && nt->depth[d] > 0 && --nt->depth[d] < NVTX_STACK_MAX)
        open = &nt->stack[d][nt->depth[d]];
    if (!open) {
        nvtx_record(PROF_NVTX_POP, 0, domain_sid, 0, ticks);
    } else if (nvtx_record(PROF_NVTX_POP, open->name_sid, domain_sid, open->start, ticks) == 0) {
        nvtx_lost_add(nt, domain_sid, open->name_sid, ticks - open->start);
    }
    int *level = &nvtx_tls_level[d];
    return *level > 0 ? --*level : -1;
}

static nvtxRangeId_t nvtx_start(uint32_t domain_sid, uint32_t name_sid, uint64_t ticks)
{
    uint64_t id = atomic_fetch_add_explicit(&nvtx_next_range_id, 1, memory_order_relaxed);
    nvtx_record(PROF_NVTX_START, name_sid, domain_sid, id, ticks);
    return id;
}

static void nvtx_end(uint32_t domain_sid, nvtxRangeId_t id)
{
    nvtx_record(PROF_NVTX_END, 0, domain_sid, id, prof_clock_ticks());
}

static void nvtx_mark(uint32_t domain_sid, uint32_t name_sid, uint64_t ticks)
{
    nvtx_record(PROF_NVTX_MARK, name_sid, domain_sid, 0, ticks);
}

/* ---- injected callbacks (NVTX_CB_MODULE_CORE and CORE2) ----
 * Each records the event (when recording is on) and sets nvtx_tls_handled. The clock is
 * read first: interning a name may wait for a lock. */

static void NVTX_API nvtx_cb_mark_ex(const nvtxEventAttributes_t *a)
{
    nvtx_tls_handled = 1;
    if (nvtx_capture()) {
        uint64_t ticks = prof_clock_ticks();
        nvtx_mark(0, nvtx_message_sid(a), ticks);
    }
}

static void NVTX_API nvtx_cb_mark_a(const char *message)
{
    nvtx_tls_handled = 1;
    if (nvtx_capture()) {
        uint64_t ticks = prof_clock_ticks();
        nvtx_mark(0, nvtx_intern(message), ticks);
    }
}

static void NVTX_API nvtx_cb_mark_w(const wchar_t *message)
{
    nvtx_tls_handled = 1;
    if (nvtx_capture()) {
        uint64_t ticks = prof_clock_ticks();
        nvtx_mark(0, nvtx_intern_wide(message), ticks);
    }
}

static nvtxRangeId_t NVTX_API nvtx_cb_start_ex(const nvtxEventAttributes_t *a)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return 0;
    uint64_t ticks = prof_clock_ticks();
    return nvtx_start(0, nvtx_message_sid(a), ticks);
}

static nvtxRangeId_t NVTX_API nvtx_cb_start_a(const char *message)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return 0;
    uint64_t ticks = prof_clock_ticks();
    return nvtx_start(0, nvtx_intern(message), ticks);
}

static nvtxRangeId_t NVTX_API nvtx_cb_start_w(const wchar_t *message)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return 0;
    uint64_t ticks = prof_clock_ticks();
    return nvtx_start(0, nvtx_intern_wide(message), ticks);
}

static void NVTX_API nvtx_cb_end(nvtxRangeId_t id)
{
    nvtx_tls_handled = 1;
    if (nvtx_capture())
        nvtx_end(0, id);
}

static int NVTX_API nvtx_cb_push_ex(const nvtxEventAttributes_t *a)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return NVTX_NO_PUSH_POP_TRACKING;
    uint64_t ticks = prof_clock_ticks();
    return nvtx_push(0, nvtx_message_sid(a), ticks);
}

static int NVTX_API nvtx_cb_push_a(const char *message)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return NVTX_NO_PUSH_POP_TRACKING;
    uint64_t ticks = prof_clock_ticks();
    return nvtx_push(0, nvtx_intern(message), ticks);
}

static int NVTX_API nvtx_cb_push_w(const wchar_t *message)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return NVTX_NO_PUSH_POP_TRACKING;
    uint64_t ticks = prof_clock_ticks();
    return nvtx_push(0, nvtx_intern_wide(message), ticks);
}

static int NVTX_API nvtx_cb_pop(void)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return NVTX_NO_PUSH_POP_TRACKING;
    return nvtx_pop(0);
}

static void NVTX_API nvtx_cb_domain_mark_ex(nvtxDomainHandle_t domain,
                                            const nvtxEventAttributes_t *a)
{
    nvtx_tls_handled = 1;
    if (nvtx_capture()) {
        uint64_t ticks = prof_clock_ticks();
        nvtx_mark(nvtx_handle_sid(domain), nvtx_message_sid(a), ticks);
    }
}

static nvtxRangeId_t NVTX_API nvtx_cb_domain_start_ex(nvtxDomainHandle_t domain,
                                                      const nvtxEventAttributes_t *a)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return 0;
    uint64_t ticks = prof_clock_ticks();
    return nvtx_start(nvtx_handle_sid(domain), nvtx_message_sid(a), ticks);
}

static void NVTX_API nvtx_cb_domain_end(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    nvtx_tls_handled = 1;
    if (nvtx_capture())
        nvtx_end(nvtx_handle_sid(domain), id);
}

static int NVTX_API nvtx_cb_domain_push_ex(nvtxDomainHandle_t domain,
                                           const nvtxEventAttributes_t *a)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return NVTX_NO_PUSH_POP_TRACKING;
    uint64_t ticks = prof_clock_ticks();
    return nvtx_push(nvtx_handle_sid(domain), nvtx_message_sid(a), ticks);
}

static int NVTX_API nvtx_cb_domain_pop(nvtxDomainHandle_t domain)
{
    nvtx_tls_handled = 1;
    if (!nvtx_capture())
        return NVTX_NO_PUSH_POP_TRACKING;
    return nvtx_pop(nvtx_handle_sid(domain));
}

/* Handles are handed out even while not recording, so that events recorded later
 * still name their domain and string. */
static nvtxStringHandle_t NVTX_API nvtx_cb_register_string_a(nvtxDomainHandle_t domain,
                                                             const char *string)
{
    (void)domain;
    nvtx_tls_handled = 1;
    return (nvtxStringHandle_t)(uintptr_t)nvtx_intern(string);
}

static nvtxStringHandle_t NVTX_API nvtx_cb_register_string_w(nvtxDomainHandle_t domain,
                                                             const wchar_t *string)
{
    (void)domain;
    nvtx_tls_handled = 1;
    return (nvtxStringHandle_t)(uintptr_t)nvtx_intern_wide(string);
}

static nvtxDomainHandle_t NVTX_API nvtx_cb_domain_create_a(const char *name)
{
    nvtx_tls_handled = 1;
    return (nvtxDomainHandle_t)(uintptr_t)nvtx_intern(name);
}

static nvtxDomainHandle_t NVTX_API nvtx_cb_domain_create_w(const wchar_t *name)
{
    nvtx_tls_handled = 1;
    return (nvtxDomainHandle_t)(uintptr_t)nvtx_intern_wide(name);
}

static void NVTX_API nvtx_cb_domain_destroy(nvtxDomainHandle_t domain)
{
    (void)domain;
    nvtx_tls_handled = 1;
}

struct nvtx_slot {
    unsigned cbid;
    NvtxFunctionPointer fn;
};

#define NVTX_SLOT(module, name, fn)                                                                \
    {                                                                                              \
        NVTX_CBID_##module##_##name, (NvtxFunctionPointer)(fn)                                     \
    }

static const struct nvtx_slot nvtx_core_slots[] = {
    NVTX_SLOT(CORE, MarkEx, nvtx_cb_mark_ex),      NVTX_SLOT(CORE, MarkA, nvtx_cb_mark_a),
    NVTX_SLOT(CORE, MarkW, nvtx_cb_mark_w),        NVTX_SLOT(CORE, RangeStartEx, nvtx_cb_start_ex),
    NVTX_SLOT(CORE, RangeStartA, nvtx_cb_start_a), NVTX_SLOT(CORE, RangeStartW, nvtx_cb_start_w),
    NVTX_SLOT(CORE, RangeEnd, nvtx_cb_end),        NVTX_SLOT(CORE, RangePushEx, nvtx_cb_push_ex),
    NVTX_SLOT(CORE, RangePushA, nvtx_cb_push_a),   NVTX_SLOT(CORE, RangePushW, nvtx_cb_push_w),
    NVTX_SLOT(CORE, RangePop, nvtx_cb_pop),
};

static const struct nvtx_slot nvtx_core2_slots[] = {
    NVTX_SLOT(CORE2, DomainMarkEx, nvtx_cb_domain_mark_ex),
    NVTX_SLOT(CORE2, DomainRangeStartEx, nvtx_cb_domain_start_ex),
    NVTX_SLOT(CORE2, DomainRangeEnd, nvtx_cb_domain_end),
    NVTX_SLOT(CORE2, DomainRangePushEx, nvtx_cb_domain_push_ex),
    NVTX_SLOT(CORE2, DomainRangePop, nvtx_cb_domain_pop),
    NVTX_SLOT(CORE2, DomainRegisterStringA, nvtx_cb_register_string_a),
    NVTX_SLOT(CORE2, DomainRegisterStringW, nvtx_cb_register_string_w),
    NVTX_SLOT(CORE2, DomainCreateA, nvtx_cb_domain_create_a),
    NVTX_SLOT(CORE2, DomainCreateW, nvtx_cb_domain_create_w),
    NVTX_SLOT(CORE2, DomainDestroy, nvtx_cb_domain_destroy),
};

/* Writes our callbacks into one module's table of the calling NVTX instance. The table
 * holds pointers to that instance's function-pointer variables; out_size counts the
 * usable entries (index 0 is unused). Slots we leave alone become no-ops. */
static int nvtx_fill_module(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module,
                            const struct nvtx_slot *slots, size_t nslots)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return 0;
    for (size_t i = 0; i < nslots; i++)
        if (slots[i].cbid < size && table[slots[i].cbid])
            *table[slots[i].cbid] = slots[i].fn;
    return 1;
}

/* Called by NVTX's loader at the first NVTX call of each NVTX instance (a program or
 * library compiled with the v3 headers), once NVTX_INJECTION64_PATH named libprof.so.
 * Callbacks are installed even before nvtx_init (another library's constructor may be
 * first): they check at each event whether to record. Returns 1: attached. */
PROF_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table)
{
    int saved = errno;
    const NvtxExportTableCallbacks *cb =
        get_export_table ? get_export_table(NVTX_ETID_CALLBACKS) : NULL;
    int ok = 0;
    if (cb && cb->struct_size >= sizeof *cb && cb->GetModuleFunctionTable) {
        ok = nvtx_fill_module(cb, NVTX_CB_MODULE_CORE, nvtx_core_slots,
                              sizeof nvtx_core_slots / sizeof nvtx_core_slots[0]);
        ok &= nvtx_fill_module(cb, NVTX_CB_MODULE_CORE2, nvtx_core2_slots,
                               sizeof nvtx_core2_slots / sizeof nvtx_core2_slots[0]);
    }
    const NvtxExportTableVersionInfo *vi =
        get_export_table ? get_export_table(NVTX_ETID_VERSIONINFO) : NULL;
    if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    errno = saved;
    return ok;
}

/* ---- exported libnvToolsExt functions ----
 * Hand-written (no table): each forwards to the real library first. When that library
 * injected us, our callback already recorded the call (nvtx_tls_handled) and its result
 * is ours; otherwise the wrapper records. Results pass through, except those a program
 * needs from a tool to use NVTX at all: with no tool, nvtxRangeStart returns 0 and
 * nvtxDomainCreate / RegisterString return NULL, and we hand out our own. */

static void *nvtx_resolve(const char *name)
{
    int saved = errno;
    prof_tls_busy++;
    void *p = resolve_symbol(name, "libnvToolsExt");
    if (!p)
        p = resolve_symbol(name, "libnvtx3interop");
    prof_tls_busy--;
    errno = saved;
    return p;
}

/* The real functions, resolved on first use; nvtx_missing marks one that is not there. */
static char nvtx_missing;
#define NVTX_EXPORTED(X)                                                                           \
    X(nvtxMarkA)                                                                                   \
    X(nvtxMarkW)                                                                                   \
    X(nvtxMarkEx)                                                                                  \
    X(nvtxDomainMarkEx)                                                                            \
    X(nvtxRangeStartA)                                                                             \
    X(nvtxRangeStartW)                                                                             \
    X(nvtxRangeStartEx)                                                                            \
    X(nvtxDomainRangeStartEx)                                                                      \
    X(nvtxRangeEnd)                                                                                \
    X(nvtxDomainRangeEnd)                                                                          \
    X(nvtxRangePushA)                                                                              \
    X(nvtxRangePushW)                                                                              \
    X(nvtxRangePushEx)                                                                             \
    X(nvtxDomainRangePushEx)                                                                       \
    X(nvtxRangePop)                                                                                \
    X(nvtxDomainRangePop)                                                                          \
    X(nvtxDomainCreateA)                                                                           \
    X(nvtxDomainCreateW)                                                                           \
    X(nvtxDomainRegisterStringA)                                                                   \
    X(nvtxDomainRegisterStringW)                                                                   \
    X(nvtxDomainDestroy)
#define NVTX_REAL_SLOT(name) static void *_Atomic nvtx_real_##name;
NVTX_EXPORTED(NVTX_REAL_SLOT)
#undef NVTX_REAL_SLOT

static void *nvtx_real(void *_Atomic *slot, const char *name)
{
    void *p = atomic_load_explicit(slot, memory_order_acquire);
    if (__builtin_expect(p == NULL, 0)) {
        p = nvtx_resolve(name);
        if (!p)
            p = &nvtx_missing;
        atomic_store_explicit(slot, p, memory_order_release);
    }
    return p == &nvtx_missing ? NULL : p;
}

#define NVTX_REAL(name) ((name##_impl_fntype)nvtx_real(&nvtx_real_##name, #name))

/* Before the real function: our callback marks the call handled if the library forwards it. */
static inline void nvtx_forward_begin(void)
{
    nvtx_tls_handled = 0;
}

/* After the real function: whether the wrapper records the call itself. */
static inline int nvtx_forward_unhandled(void)
{
    return !nvtx_tls_handled && nvtx_capture();
}

PROF_EXPORT void nvtxMarkA(const char *message)
{
    nvtxMarkA_impl_fntype real = NVTX_REAL(nvtxMarkA);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    if (real)
        real(message);
    if (nvtx_forward_unhandled())
        nvtx_mark(0, nvtx_intern(message), ticks);
}

PROF_EXPORT void nvtxMarkW(const wchar_t *message)
{
    nvtxMarkW_impl_fntype real = NVTX_REAL(nvtxMarkW);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    if (real)
        real(message);
    if (nvtx_forward_unhandled())
        nvtx_mark(0, nvtx_intern_wide(message), ticks);
}

PROF_EXPORT void nvtxMarkEx(const nvtxEventAttributes_t *eventAttrib)
{
    nvtxMarkEx_impl_fntype real = NVTX_REAL(nvtxMarkEx);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    if (real)
        real(eventAttrib);
    if (nvtx_forward_unhandled())
        nvtx_mark(0, nvtx_message_sid(eventAttrib), ticks);
}

PROF_EXPORT void nvtxDomainMarkEx(nvtxDomainHandle_t domain,
                                  const nvtxEventAttributes_t *eventAttrib)
{
    nvtxDomainMarkEx_impl_fntype real = NVTX_REAL(nvtxDomainMarkEx);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    if (real)
        real(domain, eventAttrib);
    if (nvtx_forward_unhandled())
        nvtx_mark(nvtx_handle_sid(domain), nvtx_message_sid(eventAttrib), ticks);
}

/* A range id for the program: the real one, or ours when no tool gave one. */
static nvtxRangeId_t nvtx_start_unhandled(nvtxRangeId_t real_id, uint32_t domain_sid,
                                          uint32_t name_sid, uint64_t ticks)
{
    if (real_id) {
        nvtx_record(PROF_NVTX_START, name_sid, domain_sid, real_id, ticks);
        return real_id;
    }
    return nvtx_start(domain_sid, name_sid, ticks);
}

PROF_EXPORT nvtxRangeId_t nvtxRangeStartA(const char *message)
{
    nvtxRangeStartA_impl_fntype real = NVTX_REAL(nvtxRangeStartA);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    nvtxRangeId_t id = real ? real(message) : 0;
    if (nvtx_forward_unhandled())
        id = nvtx_start_unhandled(id, 0, nvtx_intern(message), ticks);
    return id;
}

PROF_EXPORT nvtxRangeId_t nvtxRangeStartW(const wchar_t *message)
{
    nvtxRangeStartW_impl_fntype real = NVTX_REAL(nvtxRangeStartW);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    nvtxRangeId_t id = real ? real(message) : 0;
    if (nvtx_forward_unhandled())
        id = nvtx_start_unhandled(id, 0, nvtx_intern_wide(message), ticks);
    return id;
}

PROF_EXPORT nvtxRangeId_t nvtxRangeStartEx(const nvtxEventAttributes_t *eventAttrib)
{
    nvtxRangeStartEx_impl_fntype real = NVTX_REAL(nvtxRangeStartEx);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    nvtxRangeId_t id = real ? real(eventAttrib) : 0;
    if (nvtx_forward_unhandled())
        id = nvtx_start_unhandled(id, 0, nvtx_message_sid(eventAttrib), ticks);
    return id;
}

PROF_EXPORT nvtxRangeId_t nvtxDomainRangeStartEx(nvtxDomainHandle_t domain,
                                                 const nvtxEventAttributes_t *eventAttrib)
{
    nvtxDomainRangeStartEx_impl_fntype real = NVTX_REAL(nvtxDomainRangeStartEx);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    nvtxRangeId_t id = real ? real(domain, eventAttrib) : 0;
    if (nvtx_forward_unhandled())
        id =
            nvtx_start_unhandled(id, nvtx_handle_sid(domain), nvtx_message_sid(eventAttrib), ticks);
    return id;
}

PROF_EXPORT void nvtxRangeEnd(nvtxRangeId_t id)
{
    nvtxRangeEnd_impl_fntype real = NVTX_REAL(nvtxRangeEnd);
    nvtx_forward_begin();
    if (real)
        real(id);
    if (nvtx_forward_unhandled())
        nvtx_end(0, id);
}

PROF_EXPORT void nvtxDomainRangeEnd(nvtxDomainHandle_t domain, nvtxRangeId_t id)
{
    nvtxDomainRangeEnd_impl_fntype real = NVTX_REAL(nvtxDomainRangeEnd);
    nvtx_forward_begin();
    if (real)
        real(domain, id);
    if (nvtx_forward_unhandled())
        nvtx_end(nvtx_handle_sid(domain), id);
}

/* Push/pop: the real level when a tool tracks it, else ours. */
static int nvtx_level(int real_level, int real_found, int ours)
{
    return real_found && real_level != NVTX_NO_PUSH_POP_TRACKING ? real_level : ours;
}

PROF_EXPORT int nvtxRangePushA(const char *message)
{
    nvtxRangePushA_impl_fntype real = NVTX_REAL(nvtxRangePushA);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    int level = real ? real(message) : NVTX_NO_PUSH_POP_TRACKING;
    if (nvtx_forward_unhandled())
        level = nvtx_level(level, real != NULL, nvtx_push(0, nvtx_intern(message), ticks));
    return level;
}

PROF_EXPORT int nvtxRangePushW(const wchar_t *message)
{
    nvtxRangePushW_impl_fntype real = NVTX_REAL(nvtxRangePushW);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    int level = real ? real(message) : NVTX_NO_PUSH_POP_TRACKING;
    if (nvtx_forward_unhandled())
        level = nvtx_level(level, real != NULL, nvtx_push(0, nvtx_intern_wide(message), ticks));
    return level;
}

PROF_EXPORT int nvtxRangePushEx(const nvtxEventAttributes_t *eventAttrib)
{
    nvtxRangePushEx_impl_fntype real = NVTX_REAL(nvtxRangePushEx);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    int level = real ? real(eventAttrib) : NVTX_NO_PUSH_POP_TRACKING;
    if (nvtx_forward_unhandled())
        level = nvtx_level(level, real != NULL, nvtx_push(0, nvtx_message_sid(eventAttrib), ticks));
    return level;
}

PROF_EXPORT int nvtxDomainRangePushEx(nvtxDomainHandle_t domain,
                                      const nvtxEventAttributes_t *eventAttrib)
{
    nvtxDomainRangePushEx_impl_fntype real = NVTX_REAL(nvtxDomainRangePushEx);
    uint64_t ticks = prof_clock_ticks();
    nvtx_forward_begin();
    int level = real ? real(domain, eventAttrib) : NVTX_NO_PUSH_POP_TRACKING;
    if (nvtx_forward_unhandled())
        level =
            nvtx_level(level, real != NULL,
                       nvtx_push(nvtx_handle_sid(domain), nvtx_message_sid(eventAttrib), ticks));
    return level;
}

PROF_EXPORT int nvtxRangePop(void)
{
    nvtxRangePop_impl_fntype real = NVTX_REAL(nvtxRangePop);
    nvtx_forward_begin();
    int level = real ? real() : NVTX_NO_PUSH_POP_TRACKING;
    if (nvtx_forward_unhandled())
        level = nvtx_level(level, real != NULL, nvtx_pop(0));
    return level;
}

PROF_EXPORT int nvtxDomainRangePop(nvtxDomainHandle_t domain)
{
    nvtxDomainRangePop_impl_fntype real = NVTX_REAL(nvtxDomainRangePop);
    nvtx_forward_begin();
    int level = real ? real(domain) : NVTX_NO_PUSH_POP_TRACKING;
    if (nvtx_forward_unhandled())
        level = nvtx_level(level, real != NULL, nvtx_pop(nvtx_handle_sid(domain)));
    return level;
}

/* A handle for the program: ours when no tool made one; a foreign tool's handle is
 * passed through and its later events go unnamed. */
static void *nvtx_handle_unhandled(void *real_handle, uint32_t sid)
{
    if (!real_handle)
        return (void *)(uintptr_t)sid;
    atomic_store_explicit(&nvtx_foreign_tool, 1, memory_order_relaxed);
    return real_handle;
}

PROF_EXPORT nvtxDomainHandle_t nvtxDomainCreateA(const char *name)
{
    nvtxDomainCreateA_impl_fntype real = NVTX_REAL(nvtxDomainCreateA);
    nvtx_forward_begin();
    nvtxDomainHandle_t h = real ? real(name) : NULL;
    if (!nvtx_tls_handled && nvtx_enabled)
        h = nvtx_handle_unhandled(h, nvtx_intern(name));
    return h;
}

PROF_EXPORT nvtxDomainHandle_t nvtxDomainCreateW(const wchar_t *name)
{
    nvtxDomainCreateW_impl_fntype real = NVTX_REAL(nvtxDomainCreateW);
    nvtx_forward_begin();
    nvtxDomainHandle_t h = real ? real(name) : NULL;
    if (!nvtx_tls_handled && nvtx_enabled)
        h = nvtx_handle_unhandled(h, nvtx_intern_wide(name));
    return h;
}

PROF_EXPORT nvtxStringHandle_t nvtxDomainRegisterStringA(nvtxDomainHandle_t domain,
                                                         const char *string)
{
    nvtxDomainRegisterStringA_impl_fntype real = NVTX_REAL(nvtxDomainRegisterStringA);
    nvtx_forward_begin();
    nvtxStringHandle_t h = real ? real(domain, string) : NULL;
    if (!nvtx_tls_handled && nvtx_enabled)
        h = nvtx_handle_unhandled(h, nvtx_intern(string));
    return h;
}

PROF_EXPORT nvtxStringHandle_t nvtxDomainRegisterStringW(nvtxDomainHandle_t domain,
                                                         const wchar_t *string)
{
    nvtxDomainRegisterStringW_impl_fntype real = NVTX_REAL(nvtxDomainRegisterStringW);
    nvtx_forward_begin();
    nvtxStringHandle_t h = real ? real(domain, string) : NULL;
    if (!nvtx_tls_handled && nvtx_enabled)
        h = nvtx_handle_unhandled(h, nvtx_intern_wide(string));
    return h;
}

PROF_EXPORT void nvtxDomainDestroy(nvtxDomainHandle_t domain)
{
    nvtxDomainDestroy_impl_fntype real = NVTX_REAL(nvtxDomainDestroy);
    /* our handles own nothing; a foreign one goes back to its tool */
    if (real)
        real(domain);
}

static void nvtx_init(int enabled)
{
    nvtx_enabled = enabled;
    if (enabled) {
        collector_add_source(nvtx_lost_drain);
        stacks_current_nvtx_range = nvtx_ranges_current;
    }
}

const struct preload_layer nvtx_layer = {
    .name = "nvtx",
    .enable = SETTING_PROF_NVTX,
    .setup = nvtx_init,
};
