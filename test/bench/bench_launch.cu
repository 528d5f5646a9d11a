// Kernel launches in a loop, for the CPU-side cost of the CUPTI path per kernel
// (test/bench/run.sh runs it bare, profiled without CUPTI and profiled with it, against
// the device doubles). Prints the mean time per launch.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

__global__ void empty_kernel()
{
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100000;
    empty_kernel<<<1, 1>>>();
    cudaDeviceSynchronize();
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; i++)
        empty_kernel<<<1, 1>>>();
    cudaDeviceSynchronize();
    auto t1 = std::chrono::steady_clock::now();
    printf("%.1f\n", std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    return 0;
}
