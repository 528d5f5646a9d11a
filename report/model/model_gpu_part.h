/* model_gpu_part: the GPU tables of one part of a process (model_gpu_window.c), beside
 * the model's whole-process tables; included by model.h, where the types it names are. */
#ifndef REPORT_MODEL_GPU_PART_H
#define REPORT_MODEL_GPU_PART_H

/* The API, kernel and CUPTI-call tables of the part asked (profreport --phase): every
 * wrapped call that began and ended in it, every kernel whose launching call began in it
 * (a kernel with no known launch: its start on the GPU), every call CUPTI saw that began and
 * ended in it. The model's own tables stay the whole process's. */

/* One wrapped call (API_CALL), kept until the steps are made: 16 bytes, as a call record
 * is not much larger. A call of UINT32_MAX ticks or more has its length in long_spans. */
struct model_api_span {
    uint64_t start; /* ticks */
    uint32_t ticks;
    uint16_t api;
    uint8_t error;
};

/* An API's calls in the part (ns). */
struct model_api_counts {
    uint64_t calls, errors, total_ns, min_ns, max_ns;
    uint64_t gpu_kernels, gpu_ns; /* a library call's kernels, launched in the part */
};

struct model_gpu_part {
    /* enum model_window; MODEL_WINDOW_ALL: no part rows, the tables give the whole process
     * and miss (enum model_window_miss) says why. */
    uint8_t window, miss;
    uint64_t window_ns;
    size_t window_steps;
    struct model_api_counts *apis; /* by API id, p->napis of them */
    size_t napis;
    struct model_gpu_kernel *kernels; /* by gpu.kernels' index; names are gpu.kernels' */
    size_t nkernels;
    struct model_api_counts *cupti; /* by gpu.apis' index */
    size_t ncupti;
    struct model_api_span *spans; /* freed at the end of the file */
    size_t nspans, cap_spans;
    struct u64map long_spans; /* span index -> its length (ticks), when UINT32_MAX or more */
};

/* The part's rows when the process has them, else the whole process's; *n: how many. */
const struct model_gpu_kernel *model_gpu_part_kernels(const struct model_process *p, size_t *n);
/* An API's figures in the part (p->gpu_part), else the whole process's, in c. */
void model_gpu_part_api(const struct model_process *p, size_t api, struct model_api_counts *c);
void model_gpu_part_cupti(const struct model_process *p, size_t i, struct model_api_counts *c);
/* A summary read for another part than asked: the whole process's tables. */
void model_gpu_part_pick(struct model_process *p);
/* A kernel row of name_sid with no call; frees its maps; adds a kernel of ns launched with
 * c; adds a kernel of ns launched from the Python function func (Launched from). */
void model_gpu_kernel_init(struct model_gpu_kernel *k, uint32_t name_sid);
void model_gpu_kernel_free(struct model_gpu_kernel *k);
void model_gpu_kernel_add(struct model_gpu_kernel *k, uint64_t ns,
                          const struct model_gpu_config *c);
void model_gpu_kernel_site(struct model_gpu_kernel *k, uint32_t func, uint64_t ns);

#endif
