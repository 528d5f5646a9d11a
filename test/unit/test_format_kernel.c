/* format_kernel_name: demangled kernel names as torch 2.11 on CUDA 13 gave them on an H200
 * (gpu-check's run), shortened for the text tables; text_table aligns by characters. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "text_table.h"

static const char *shortened(const char *name, int *cut)
{
    static char buf[512];
    *cut = 0;
    return format_kernel_name(name, buf, sizeof buf, cut);
}

Test(format_kernel, return_type_parameters_and_inner_namespaces_go)
{
    int cut;
    cr_assert_str_eq(
        shortened(
            "void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float, "
            "float, float, at::native::(anonymous namespace)::threshold_kernel_impl<float>(at::"
            "TensorIteratorBase&, float, float)::{lambda(float, float)#1}>, std::array<char*, "
            "3ul> >(int, at::native::BinaryFunctor<float, float, float, at::native::(anonymous "
            "namespace)::threshold_kernel_impl<float>(at::TensorIteratorBase&, float, float)::"
            "{lambda(float, float)#1}>, std::array<char*, 3ul>)",
            &cut),
        "at::native::vectorized_elementwise_kernel<4, BinaryFunctor<float, flo\u2026loat)#1}>, "
        "array<char*, 3ul> >");
    cr_assert_eq(cut, 1);
    cr_assert_str_eq(
        shortened("void cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, "
                  "false, true, (cudnnKernelDataType_t)2>(cudnn::engines_precompiled::"
                  "nchw2nhwc_params_t<float>, float const*, float*)",
                  &cut),
        "cudnn::engines_precompiled::nchwToNhwcKernel<float, float, float, fal"
        "\u2026rue, (cudnnKernelDataType_t)2>"); /* 102 characters without them */
    /* the kernel's own namespaces stay, "(anonymous namespace)::" goes everywhere */
    cr_assert_str_eq(
        shortened("void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_"
                  "kernel_2d<float, float, long>(float*, float*, float const*, long "
                  "const*, float const*, bool, long, long, long, long)",
                  &cut),
        "at::native::nll_loss_forward_reduce_cuda_kernel_2d<float, float, long>");
    /* a lambda inside a const member function keeps its "const::" */
    cr_assert_str_eq(shortened("void k<a::f() const::{lambda(int)#1}>(int)", &cut),
                     "k<f() const::{lambda(int)#1}>");
    cr_assert_str_eq(shortened("f()", &cut), "f");
    cr_assert_eq(cut, 1);
}

Test(format_kernel, short_names_stay_as_they_are)
{
    int cut;
    const char *names[] = {
        "sm80_xmma_gemm_f32f32_f32f32_f32_nn_n_tilesize32x32x8_stage3_warpsize1x2x1_ffma",
        "Memset",
        "(",
        ")",
        "()",
        "void ",
        "_Z3fooPf",
        ""};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        const char *s = shortened(names[i], &cut);
        cr_assert_str_eq(s, names[i], "%s", names[i]);
        cr_assert_eq(cut, 0, "%s", names[i]);
    }
}

/* The longest name of that run, 5,050 bytes: 100 characters, its start and end kept, and
 * two long names that differ only past the first 69 stay apart. */
Test(format_kernel, long_names_are_cut_in_the_middle_to_the_columns)
{
    char *name = malloc(6000), a[512], b[512];
    strcpy(name, "void at::native::distribution_elementwise_grid_stride_kernel<float, 4, ");
    while (strlen(name) < 5000)
        strcat(name, "at::native::templates::cuda::normal_and_transform<float, ");
    strcat(name, "xmma_execute_kernel__5x_cublas_nn>(long, at::PhiloxCudaState)");
    int cut = 0;
    format_kernel_name(name, a, sizeof a, &cut);
    cr_assert_eq(cut, 1);
    cr_assert_eq(format_columns(a), FORMAT_KERNEL_COLS, "%s", a);
    const char *start = "at::native::distribution_elementwise_grid_stride_kernel<float, 4, ";
    cr_assert(!strncmp(a, start, strlen(start)), "%s", a);
    cr_assert(strstr(a, "\u2026"), "%s", a);
    cr_assert(strstr(a, "execute_kernel__5x_cublas_nn>"), "%s", a);
    name[strlen(name) - strlen("nn>(long, at::PhiloxCudaState)")] = 't';
    format_kernel_name(name, b, sizeof b, &cut);
    cr_assert_str_neq(a, b);
    /* a multi-byte character is never split: 200 of "é" keep 69 + 30 of them */
    char wide[512] = "";
    for (int i = 0; i < 200; i++)
        strcat(wide, "\u00e9");
    format_kernel_name(wide, a, sizeof a, &cut);
    cr_assert_eq(format_columns(a), FORMAT_KERNEL_COLS);
    cr_assert_eq(strlen(a), 99 * 2 + 3);
    free(name);
}

/* text_table pads by characters: a row with "…" lines up with an ASCII row. */
Test(format_kernel, text_table_aligns_characters_not_bytes)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    struct text_table t;
    text_table_begin(&t, "<Kernel|>Calls");
    text_table_row(&t, "ab\u2026cd", "1");
    text_table_row(&t, "abcdefg", "22");
    text_table_end(out, &t);
    fclose(out);
    cr_assert_str_eq(text, "  Kernel   Calls\n  ab\u2026cd        1\n  abcdefg     22\n");
    free(text);
}
