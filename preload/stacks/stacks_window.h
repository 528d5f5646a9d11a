/* stacks_window: reads of this process's memory that cannot fault, for the sampler's
 * signal handler, a page at a time. Each read is a process_vm_readv on our own pid (it
 * fails, EFAULT, where a load would fault), and a system call is the read's whole cost:
 * about 1 us for any call, 2.6-2.9 us for this one, on 2026-12-01's VM. So the page (or
 * the two pages) holding what is asked for is copied whole, and the next reads inside it
 * are served from the copy: the frames of a Python stack sit side by side (3.11+: in the
 * thread's frame stack; before, in the same allocator pools), as do the code objects of
 * one module. Only pages that hold what was asked for are read: no page of a mapping the
 * program's own pointers do not lead to (another mapping's memory may be a device's). */
#ifndef PROF_STACKS_WINDOW_H
#define PROF_STACKS_WINDOW_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define STACKS_WINDOW_PAGE 4096u

struct stacks_window {
    uint64_t lo, hi; /* the copy holds [lo, hi): whole pages; lo == hi: empty */
    uint8_t buf[2 * STACKS_WINDOW_PAGE];
};

/* Forgets the copy: memory may have changed since it was made (the next sample). */
static inline void stacks_window_clear(struct stacks_window *w)
{
    w->lo = w->hi = 0;
}

/* Copies len bytes (at most a page) at addr in process pid (our own: getpid in the
 * handler, a forked child's is its own) into out: from w's copy when it holds them all,
 * else from the page(s) holding them, read into w first. 0, or -1 when any of them
 * cannot be read (w is then empty). */
int stacks_window_read(pid_t pid, struct stacks_window *w, uint64_t addr, void *out, size_t len);

#endif
