// Tensor memory made and freed on several threads at once, straight through c10's CPU
// allocator (c10::alloc_cpu / c10::free_cpu, which profrun interposes), for the exact
// totals of test/e2e/test_torch_memory.py. THREADS threads start together; each makes
// ROUNDS rounds of four blocks (64 to 4096 bytes by thread, round and block) and frees
// them, but keeps the last block of every 16th round. Then the threads start together
// again and each frees the blocks its neighbour kept (frees on another thread than the
// allocation's). Prints the blocks and bytes it allocated, and the bytes it kept (all
// live together at the end of the first part: the peak lies between them and them plus
// the blocks each thread holds at once, THREADS x 4 x 4096 bytes).
//
// With FORKS, one more thread forks FORKS times while the others make their blocks (a
// fork while another thread is inside the allocator hooks); each child makes and frees 10
// blocks of 1000 bytes, and prints "child PID" before it exits with _exit(0).
//
//     torch_alloc_threads [THREADS] [ROUNDS] [FORKS]
#include <atomic>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

namespace c10
{
void *alloc_cpu(size_t nbytes);
void free_cpu(void *data);
} // namespace c10

namespace
{

constexpr int kBlocks = 4;

size_t block_bytes(int thread, int round, int k)
{
    return 64 * (size_t)(1 + (thread * 7 + round * 3 + k) % 64);
}

constexpr int kKeepEvery = 16;

// Runs body(t) on threads 0..n-1, released together.
template <typename F> void together(int n, F body)
{
    std::atomic<int> ready{0};
    std::vector<std::thread> pool;
    for (int t = 0; t < n; t++)
        pool.emplace_back([&, t] {
            ready.fetch_add(1);
            while (ready.load() < n)
                std::this_thread::yield();
            body(t);
        });
    for (std::thread &th : pool)
        th.join();
}

} // namespace

int main(int argc, char **argv)
{
    int threads = argc > 1 ? std::atoi(argv[1]) : 4;
    int rounds = argc > 2 ? std::atoi(argv[2]) : 100000;
    int forks = argc > 3 ? std::atoi(argv[3]) : 0;
    std::vector<std::vector<void *>> kept(threads);
    together(threads + (forks > 0), [&](int t) {
        for (int f = 0; t == threads && f < forks; f++) {
            std::fflush(stdout);
            pid_t pid = fork();
            if (pid == 0) {
                for (int k = 0; k < 10; k++)
                    c10::free_cpu(c10::alloc_cpu(1000));
                std::printf("child %d\n", (int)getpid());
                std::fflush(stdout);
                _exit(0);
            }
            if (pid > 0)
                waitpid(pid, nullptr, 0);
        }
        for (int r = 0; t < threads && r < rounds; r++) {
            void *p[kBlocks];
            for (int k = 0; k < kBlocks; k++)
                p[k] = c10::alloc_cpu(block_bytes(t, r, k));
            for (int k = 0; k < kBlocks - 1; k++)
                c10::free_cpu(p[k]);
            if (r % kKeepEvery == 0)
                kept[t].push_back(p[kBlocks - 1]);
            else
                c10::free_cpu(p[kBlocks - 1]);
        }
    });
    together(threads, [&](int t) {
        for (void *p : kept[(t + 1) % threads])
            c10::free_cpu(p);
    });
    unsigned long long bytes = 0, kept_bytes = 0;
    for (int t = 0; t < threads; t++)
        for (int r = 0; r < rounds; r++) {
            for (int k = 0; k < kBlocks; k++)
                bytes += block_bytes(t, r, k);
            if (r % kKeepEvery == 0)
                kept_bytes += block_bytes(t, r, kBlocks - 1);
        }
    std::printf("blocks %llu bytes %llu kept %llu\n",
                (unsigned long long)threads * rounds * kBlocks, bytes, kept_bytes);
    return 0;
}
