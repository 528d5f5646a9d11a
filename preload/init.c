/* libprof.so's entry: read the settings, set up the collector and the capture layers at
 * load (the table below); write everything out when the process ends normally. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "attach.h"
#include "clock.h"
#include "collector.h"
#include "job.h"
#include "layer.h"
#include "lifecycle.h"
#include "outdir.h"
#include "settings.h"
#include "trace_format.h"
#include "window.h"

/* The capture layers, in the order their hooks run. */
static const struct preload_layer *const init_layers[] = {
#ifdef PROF_HAVE_CUDA
    &cudart_layer, &cupti_layer,  &cublas_layer, &cudnn_layer,  &nvtx_layer,
#endif
    &comm_layer,   &python_layer, &torch_layer,  &stacks_layer, &sampling_layer,
};
#define INIT_LAYER_COUNT (sizeof init_layers / sizeof init_layers[0])

/* Which layers are on (their switch), decided once at load. */
static int init_layer_on[INIT_LAYER_COUNT];

static void init_before_fork(void)
{
    lifecycle_signals_hold();
    collector_atfork_prepare();
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++)
        if (init_layer_on[i] && init_layers[i]->before_fork)
            init_layers[i]->before_fork();
}

static void init_after_fork_parent(void)
{
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++)
        if (init_layer_on[i] && init_layers[i]->after_fork_parent)
            init_layers[i]->after_fork_parent();
    collector_atfork_parent();
    lifecycle_signals_release();
}

static void init_after_fork_child(void)
{
    collector_atfork_child();
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++)
        if (init_layer_on[i] && init_layers[i]->after_fork_child)
            init_layers[i]->after_fork_child();
    collector_open_early();
    lifecycle_signals_release();
}

static uint64_t init_round_up_pow2(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* The output folder as an absolute path, exported so that children that change their
 * working directory still write beside their parent. Its checks (owner, links, modes)
 * happen when the first file is made: outdir.h. */
static const char *init_output_dir(void)
{
    static char abs[2 * PATH_MAX];
    outdir_set_shared(settings_bool(SETTING_PROF_OUTPUT_SHARED));
    const char *dir = settings_string(SETTING_PROF_OUTPUT_DIR);
    if (dir[0] == '/')
        return dir;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return dir;
    snprintf(abs, sizeof abs, "%s/%s", cwd, dir);
    settings_export(SETTING_PROF_OUTPUT_DIR, abs);
    return settings_string(SETTING_PROF_OUTPUT_DIR);
}

/* Every process of one run shares the id of the first one; children inherit it. The id
 * is part of file names: one that could lead out of the folder ('/', "..") is replaced. */
static const char *init_run_id(void)
{
    if (settings_is_set(SETTING_PROF_RUN_ID)) {
        const char *given = settings_string(SETTING_PROF_RUN_ID);
        if (outdir_valid_id(given))
            return given;
        if (!settings_bool(SETTING_PROF_QUIET))
            fprintf(stderr,
                    "profrun: PROF_RUN_ID=%s is not accepted (1 to 64 letters, digits, '.', '_' "
                    "or '-', not starting with '.'); using a generated id\n",
                    given);
    }
    if (job_run_id()) /* the launcher's job id: every rank names it alike */
        return settings_get(SETTING_PROF_RUN_ID);
    char id[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    size_t n = strftime(id, sizeof id, "%Y%m%d-%H%M%S", &tm);
    snprintf(id + n, sizeof id - n, "-%ld", (long)getpid());
    settings_export(SETTING_PROF_RUN_ID, id);
    return settings_string(SETTING_PROF_RUN_ID);
}

/* One process, one trace. Every copy of the library exports this name; the dynamic
 * linker's global search finds one definition for the whole process, whatever path each
 * copy was loaded from (an exported LD_PRELOAD plus profrun's, a copy of the file, the
 * driver's CUDA_INJECTION64_PATH). Only the copy that owns that definition records; any
 * other stays passive, as with PROF_DISABLE, and passes every call through. A copy that
 * the global search cannot see (dlopen'd RTLD_LOCAL) finds the visible one, or none. */
static const char init_marker_self[] = "libprof";
/* Exported under an alias: a reference to the exported name from inside this copy would
 * be bound to the first copy's definition, as the program's are. */
extern const char prof_instance_marker[sizeof init_marker_self]
    __attribute__((alias("init_marker_self"), visibility("default")));

static int init_is_first_copy(void)
{
    const void *first = dlsym(RTLD_DEFAULT, "prof_instance_marker");
    return !first || first == (const void *)init_marker_self;
}

__attribute__((constructor)) static void init_load(int argc, char **argv, char **envp)
{
    (void)envp;
    prof_tls_busy = 1;
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++)
        if (init_layers[i]->load)
            init_layers[i]->load();
    if (attach_loading()) {  /* dlopen'd by profrun attach: prof_attach_start starts us */
        attach_got_rebind(); /* here, under the loader's lock: see attach_got.c */
        prof_tls_busy = 0;
        return;
    }
    init_begin(argc, argv);
}

void init_begin(int argc, char **argv)
{
    prof_tls_busy = 1;
    settings_load();
    if (settings_bool(SETTING_PROF_DISABLE) || !init_is_first_copy()) {
        prof_tls_busy = 0;
        return;
    }
    clock_init();
    struct collector_config cfg;
    memset(&cfg, 0, sizeof cfg);
    job_identify(argc, argv);
    cfg.output_dir = init_output_dir();
    cfg.run_id = init_run_id();
    cfg.ring_bytes = init_round_up_pow2((uint64_t)settings_int(SETTING_PROF_RING_KB) * 1024);
    cfg.flush_ms = (unsigned)settings_int(SETTING_PROF_FLUSH_MS);
    cfg.flush_period_only = !settings_bool(SETTING_PROF_RING_WAKE);
    cfg.quiet = settings_bool(SETTING_PROF_QUIET);
    cfg.redact = settings_bool(SETTING_PROF_REDACT);
    cfg.rank = job_self()->rank;
    cfg.local_rank = job_self()->local_rank;
    cfg.world_size = job_self()->world_size;
    cfg.features = prof_clock_tsc ? PROF_FEATURE_TSC_CLOCK : 0;
#ifdef PROF_HAVE_CUDA
    cfg.features |= PROF_FEATURE_CUDART;
#endif
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++) {
        init_layer_on[i] = settings_on(init_layers[i]->enable);
        if (init_layer_on[i])
            cfg.features |= init_layers[i]->features;
        if (init_layers[i]->setup)
            init_layers[i]->setup(init_layer_on[i]);
    }
    collector_init(&cfg, argc, argv);
    job_start();
    for (int i = 0; settings_recorded_env[i]; i++) {
        const char *v = settings_env(settings_recorded_env[i]);
        if (v) {
            char key[128];
            snprintf(key, sizeof key, "env.%s", settings_recorded_env[i]);
            collector_add_meta(key, v);
        }
    }
    pthread_atfork(init_before_fork, init_after_fork_parent, init_after_fork_child);
    lifecycle_init(settings_bool(SETTING_PROF_SIGNALS));
    if (attach_starting())
        window_init_attached("attach");
    else
        window_init();
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++)
        if (init_layer_on[i] && init_layers[i]->start)
            init_layers[i]->start(argc, argv);
    lifecycle_signals_hold();
    collector_open_early();
    lifecycle_signals_release();
    prof_tls_busy = 0;
}

__attribute__((destructor)) static void init_unload(void)
{
    collector_finish();
}
