/* See stacks_window.h. */
#define _GNU_SOURCE
#include "stacks_window.h"

#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

int stacks_window_read(pid_t pid, struct stacks_window *w, uint64_t addr, void *out, size_t len)
{
    if (!addr || !len || len > STACKS_WINDOW_PAGE || addr + len < addr)
        return -1;
    if (addr >= w->lo && addr + len <= w->hi) {
        memcpy(out, w->buf + (addr - w->lo), len);
        return 0;
    }
    uint64_t first = addr & ~(uint64_t)(STACKS_WINDOW_PAGE - 1);
    uint64_t end = ((addr + len - 1) | (STACKS_WINDOW_PAGE - 1)) + 1; /* 0 after the last page */
    size_t size = end ? (size_t)(end - first) : (size_t)(0 - first);
    struct iovec local = {w->buf, size}, remote = {(void *)(uintptr_t)first, size};
    if (syscall(SYS_process_vm_readv, pid, &local, 1ul, &remote, 1ul, 0ul) != (long)size) {
        stacks_window_clear(w); /* a page of the two may have been read: not kept */
        return -1;
    }
    w->lo = first;
    w->hi = first + size;
    memcpy(out, w->buf + (addr - first), len);
    return 0;
}
