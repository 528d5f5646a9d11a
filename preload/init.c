/* libprof.so's entry: read the settings, set up the collector and the capture layers at
 * load (the table below); write everything out when the process ends normally. */
#define _GNU_SOURCE
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "collector.h"
#include "layer.h"
#include "lifecycle.h"
#include "settings.h"
#include "trace_format.h"

/* The capture layers, in the order their hooks run. */
static const struct preload_layer *const init_layers[] = {
#ifdef PROF_HAVE_CUDA
    &cudart_layer, &cupti_layer, &cublas_layer, &cudnn_layer, &nvtx_layer,
#endif
    &comm_layer, &python_layer, &torch_layer,
};
#define INIT_LAYER_COUNT (sizeof init_layers / sizeof init_layers[0])

/* Which layers are on (their switch), decided once at load. */
static int init_layer_on[INIT_LAYER_COUNT];

static void init_after_fork_child(void)
{
    collector_atfork_child();
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++)
        if (init_layer_on[i] && init_layers[i]->after_fork_child)
            init_layers[i]->after_fork_child();
}

static uint64_t init_round_up_pow2(uint64_t v)
{
    uint64_t p = 1;
    while (p < v)
        p <<= 1;
    return p;
}

/* The output folder as an absolute path, exported so that children that change their
 * working directory still write beside their parent. */
static const char *init_output_dir(void)
{
    static char abs[2 * PATH_MAX];
    const char *dir = settings_get(SETTING_PROF_OUTPUT_DIR);
    if (dir[0] == '/')
        return dir;
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return dir;
    snprintf(abs, sizeof abs, "%s/%s", cwd, dir);
    settings_export(SETTING_PROF_OUTPUT_DIR, abs);
    return settings_get(SETTING_PROF_OUTPUT_DIR);
}

/* Every process of one run shares the id of the first one; children inherit it. */
static const char *init_run_id(void)
{
    if (settings_is_set(SETTING_PROF_RUN_ID))
        return settings_get(SETTING_PROF_RUN_ID);
    char id[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    size_t n = strftime(id, sizeof id, "%Y%m%d-%H%M%S", &tm);
    snprintf(id + n, sizeof id - n, "-%ld", (long)getpid());
    settings_export(SETTING_PROF_RUN_ID, id);
    return settings_get(SETTING_PROF_RUN_ID);
}

__attribute__((constructor)) static void init_load(int argc, char **argv, char **envp)
{
    (void)envp;
    prof_tls_busy = 1;
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++)
        if (init_layers[i]->load)
            init_layers[i]->load();
    settings_load();
    if (strcmp(settings_get(SETTING_PROF_DISABLE), "1") == 0) {
        prof_tls_busy = 0;
        return;
    }
    clock_init();
    struct collector_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.output_dir = init_output_dir();
    cfg.run_id = init_run_id();
    cfg.ring_bytes =
        init_round_up_pow2((uint64_t)settings_get_long(SETTING_PROF_RING_KB, 64, 65536) * 1024);
    cfg.flush_ms = (unsigned)settings_get_long(SETTING_PROF_FLUSH_MS, 1, 1000);
    cfg.quiet = strcmp(settings_get(SETTING_PROF_QUIET), "1") == 0;
    struct prof_rank_info rank;
    settings_rank(&rank);
    cfg.rank = rank.rank;
    cfg.local_rank = rank.local_rank;
    cfg.world_size = rank.world_size;
    cfg.features = prof_clock_tsc ? PROF_FEATURE_TSC_CLOCK : 0;
#ifdef PROF_HAVE_CUDA
    cfg.features |= PROF_FEATURE_CUDART;
#endif
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++) {
        init_layer_on[i] = strcmp(settings_get(init_layers[i]->enable), "0") != 0;
        if (init_layers[i]->setup)
            init_layers[i]->setup(init_layer_on[i]);
    }
    collector_init(&cfg, argc, argv);
    for (int i = 0; settings_recorded_env[i]; i++) {
        const char *v = settings_env(settings_recorded_env[i]);
        if (v) {
            char key[128];
            snprintf(key, sizeof key, "env.%s", settings_recorded_env[i]);
            collector_add_meta(key, v);
        }
    }
    pthread_atfork(collector_atfork_prepare, collector_atfork_parent, init_after_fork_child);
    lifecycle_init(strcmp(settings_get(SETTING_PROF_SIGNALS), "0") != 0);
    for (size_t i = 0; i < INIT_LAYER_COUNT; i++)
        if (init_layer_on[i] && init_layers[i]->start)
            init_layers[i]->start(argc, argv);
    prof_tls_busy = 0;
}

__attribute__((destructor)) static void init_unload(void)
{
    collector_finish();
}
