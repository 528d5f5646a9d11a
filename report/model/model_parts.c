/* The parts of the process model, in the order their hooks run (see model_part.h).
 * Memory and kernels come before the GPU part, which attributes GPU work to the calls
 * and spans they name, and the GPU facts (model_gpu_facts.c) read the GPU part's work;
 * PyTorch's built-in actions read the finished Python trees; the
 * communication part copies torch.distributed's ops before the torch part frees them, and
 * the steps (model_steps.c) read the ops, Python spans, communication and GPU work, and
 * the Python window (model_python_window.c) and the GPU window (model_gpu_window.c) read
 * the steps. */
#include "model_part.h"

const struct model_part *const model_parts[] = {
    &model_core_part,          &model_memory_part,     &model_kernel_part,
    &model_python_part,        &model_gpu_part,        &model_gpu_facts_part,
    &model_nvtx_part,          &model_comm_part,       &model_steps_part,
    &model_python_window_part, &model_gpu_window_part, &model_torch_part,
    &model_torch_actions_part, &model_stacks_part,
};
const size_t model_part_count = sizeof model_parts / sizeof model_parts[0];
