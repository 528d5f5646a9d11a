/* A capture layer of libprof.so (cuda/, python/, torch/, …) as the entry point sees it:
 * its switch and its hooks. Each layer defines one `struct preload_layer` beside its code;
 * preload/init.c lists them in one table and calls the hooks in the table's order.
 *
 * A layer's exit work needs no hook of its own: records it holds outside the rings reach
 * the file through its collector source (collector_add_source), whose drain(last = 1)
 * runs at exit, _exit, exec and a flushing signal. */
#ifndef PROF_LAYER_H
#define PROF_LAYER_H

#include <stdint.h>

#include "settings.h"

struct preload_layer {
    const char *name;
    /* Its PROF_* switch: the layer records only while this is on. */
    enum prof_setting_id enable;
    /* Feature bits (enum prof_feature) its records add to the file header when on. */
    uint32_t features;
    /* At load, even when profiling is off (PROF_DISABLE): only what the layer's
     * interposed functions need to pass calls through. May be NULL. */
    void (*load)(void);
    /* Before the collector starts, whether or not the layer is on: API tables, real
     * symbols; enabled says whether to record. May be NULL. */
    void (*setup)(int enabled);
    /* After the collector and process life are set up, when the layer is on. May be
     * NULL. */
    void (*start)(int argc, char **argv);
    /* Before a fork, in the forking thread, once the collector has stopped its thread and
     * holds the drain lock, when the layer is on. May be NULL. */
    void (*before_fork)(void);
    /* After a fork, in the parent, before the collector's own handler. May be NULL. */
    void (*after_fork_parent)(void);
    /* In a forked child, after the collector's own fork handler, when the layer is on
     * (single-threaded: only the forking thread goes on). May be NULL. */
    void (*after_fork_child)(void);
};

#ifdef PROF_HAVE_CUDA
extern const struct preload_layer cudart_layer;
extern const struct preload_layer cupti_layer;
extern const struct preload_layer cublas_layer;
extern const struct preload_layer cudnn_layer;
extern const struct preload_layer nvtx_layer;
#endif
extern const struct preload_layer comm_layer;
extern const struct preload_layer python_layer;
extern const struct preload_layer torch_layer;
extern const struct preload_layer stacks_layer;
extern const struct preload_layer sampling_layer;

#endif
