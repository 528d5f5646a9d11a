/* GPU truth from CUPTI: kernels, copies and sets as the GPU ran them, tied by correlation
 * id to the runtime/driver call that launched them. libcupti is loaded with dlopen only
 * once the process uses CUDA. */
#ifndef PROF_CUPTI_SUB_H
#define PROF_CUPTI_SUB_H

/* First use of CUDA seen (a runtime wrapper, or the driver's injection call): subscribe. */
void cupti_start(void);
/* A GPU_DEVICE record for each device the driver lists (once each): at an attach, whose
 * contexts were made before CUPTI could hear of them. */
void cupti_describe_devices(void);
extern int cupti_started;

#endif
