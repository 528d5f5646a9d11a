/* profrun attach's injection: libprof.so loaded into a running process that was started
 * without the preload (the command is attach.c; the library's side preload/attach.c).
 *
 * How the library gets in, and why it cannot hang the target:
 *
 *  1. One thread is chosen, never more: one blocked in a system call that glibc never makes
 *     while it holds one of its own locks (poll, epoll_wait, select, nanosleep, read, wait4,
 *     accept, recvfrom, pause; futex last, since a futex wait may be a lock waiter). Never
 *     one inside mmap/brk/munmap/mprotect (malloc makes those holding its arena lock), nor
 *     in ppoll/pselect6/epoll_pwait given a signal mask, nor rt_sigsuspend (the kernel swaps
 *     the mask for theirs: a restart made by us would leave the wrong one).
 *  2. It is seized (PTRACE_SEIZE) and stopped (PTRACE_INTERRUPT). Its registers are saved;
 *     the stop must show it inside the syscall it was seen in (rax = -ERESTART*, the
 *     instruction before rip a `syscall`), else it is let go untouched and another is tried.
 *  3. That very `syscall` instruction (in the target's libc) makes raw system calls for us:
 *     mmap of a code page (written through /proc/PID/mem, then mprotect'ed R-X), a data page
 *     and a stack; then one raw clone(CLONE_VM|FS|FILES|SIGHAND|THREAD|SYSVSEM) whose child
 *     starts in our code page. The child shares the stopped thread's TLS: it is as if that
 *     thread, at its syscall boundary and holding no lock of glibc's, ran the child's code.
 *     The child blocks every signal, calls the target's pthread_create (a proper thread,
 *     with its own TLS), sets a flag and leaves with a raw exit. Only then is the stopped
 *     thread restored and let go: it is stopped for the time of a pthread_create.
 *  4. The new thread names itself "profrun-attach", detaches itself, and calls dlopen on
 *     libprof.so (whose constructor then does almost nothing), dlsym and
 *     prof_attach_start(settings): all of it in a thread of its own, at no unknown point.
 *  5. Restoring: the saved registers, with the interrupted syscall restarted as the kernel
 *     would (rip back onto the `syscall`, rax = the syscall number, or restart_syscall for
 *     -ERESTART_RESTARTBLOCK); a signal that arrived meanwhile is delivered at the detach
 *     (one that arrives before the stop is delivered at once, and the thread stopped again).
 *
 * What remains: a thread blocked in futex (chosen only when no other kind waits) may be
 * waiting for one lock while holding another that pthread_create needs (glibc's stack-cache
 * or TLS lock). The child would then wait for a thread that cannot run: after 30 s the
 * thread is let go anyway, with a line saying the target may be inconsistent.
 *
 * Every wait is bounded; on any failure the thread is restored and let go, what was mapped
 * is unmapped when nothing can run there, and one line says why. The ptrace work runs in a
 * child process of profrun: if it were stuck, its exit would detach everything (the kernel
 * does it), and profrun still answers. The code page and the data page (20 KiB) stay mapped
 * in the target: the library's thread may still be returning through them.
 *
 * x86-64 only (other architectures are refused). */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach_util.h"
#include "attach_inject.h"

/* ---- the target's memory ---- */

static int attach_mem_fd = -1;

static int attach_mem_write(uint64_t addr, const void *data, size_t len)
{
    return pwrite(attach_mem_fd, data, len, (off_t)addr) == (ssize_t)len ? 0 : -1;
}

static int attach_mem_read(uint64_t addr, void *data, size_t len)
{
    return pread(attach_mem_fd, data, len, (off_t)addr) == (ssize_t)len ? 0 : -1;
}

/* ---- symbols of the target's libc, from the ELF files it mapped ---- */

struct attach_object {
    char path[PATH_MAX];
    uint64_t base; /* address of the mapping at file offset 0 */
};

/* libc, libdl, libpthread as the target mapped them (dlopen lives in libdl before glibc
 * 2.34, pthread_create in libpthread). Returns how many, 0 when none (static, musl). */
static int attach_find_libc(pid_t pid, struct attach_object *objs, int max)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    static const char *const names[] = {"/libc.so.6", "/libdl.so.2", "/libpthread.so.0"};
    int n = 0;
    char line[PATH_MAX + 256];
    while (fgets(line, sizeof line, f) && n < max) {
        unsigned long start, offset;
        char perms[8];
        int pos = 0;
        if (sscanf(line, "%lx-%*x %7s %lx %*s %*s %n", &start, perms, &offset, &pos) < 3 || !pos)
            continue;
        char *file = line + pos;
        file[strcspn(file, "\n")] = '\0';
        if (offset != 0 || file[0] != '/')
            continue;
        for (size_t k = 0; k < 3; k++) {
            size_t fl = strlen(file), nl = strlen(names[k]);
            if (fl < nl || strcmp(file + fl - nl, names[k]))
                continue;
            int seen = 0;
            for (int i = 0; i < n; i++)
                seen |= !strcmp(objs[i].path, file);
            if (!seen) {
                if (snprintf(objs[n].path, sizeof objs[n].path, "%s", file) >=
                    (int)sizeof objs[n].path)
                    continue;
                objs[n++].base = start;
            }
        }
    }
    fclose(f);
    return n;
}

/* The default version of each symbol asked for, in the ELF file at path (read through
 * the target's root) mapped at base. Fills the addresses still 0. */
static void attach_elf_symbols(pid_t pid, const struct attach_object *obj, const char *const *names,
                               uint64_t *addrs, int count)
{
    char path[PATH_MAX + 64];
    if (snprintf(path, sizeof path, "/proc/%d/root%s", pid, obj->path) >= (int)sizeof path)
        return;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(Elf64_Ehdr)) {
        if (fd >= 0)
            close(fd);
        return;
    }
    const unsigned char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return;
    size_t size = (size_t)st.st_size;
    const Elf64_Ehdr *eh = (const void *)m;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shoff + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr) > size)
        goto done;
    const Elf64_Shdr *sh = (const void *)(m + eh->e_shoff);
    const Elf64_Shdr *dynsym = NULL, *versym = NULL;
    for (int i = 0; i < eh->e_shnum; i++) {
        if (sh[i].sh_type == SHT_DYNSYM)
            dynsym = &sh[i];
        if (sh[i].sh_type == SHT_GNU_versym)
            versym = &sh[i];
    }
    if (!dynsym || dynsym->sh_link >= eh->e_shnum || dynsym->sh_offset + dynsym->sh_size > size)
        goto done;
    const Elf64_Shdr *strs = &sh[dynsym->sh_link];
    if (strs->sh_offset + strs->sh_size > size)
        goto done;
    /* the load bias: base minus the first PT_LOAD's page-aligned address (0 for a DSO) */
    uint64_t first_vaddr = 0;
    const Elf64_Phdr *ph = (const void *)(m + eh->e_phoff);
    if (eh->e_phoff + (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr) <= size)
        for (int i = 0; i < eh->e_phnum; i++)
            if (ph[i].p_type == PT_LOAD) {
                first_vaddr = ph[i].p_vaddr & ~(uint64_t)0xfff;
                break;
            }
    const Elf64_Sym *syms = (const void *)(m + dynsym->sh_offset);
    size_t nsyms = dynsym->sh_size / sizeof(Elf64_Sym);
    const uint16_t *vers = versym && versym->sh_offset + nsyms * 2 <= size
                               ? (const void *)(m + versym->sh_offset)
                               : NULL;
    const char *str = (const char *)(m + strs->sh_offset);
    for (size_t i = 1; i < nsyms; i++) {
        const Elf64_Sym *s = &syms[i];
        if (s->st_shndx == SHN_UNDEF || s->st_name >= strs->sh_size ||
            ELF64_ST_TYPE(s->st_info) != STT_FUNC)
            continue;
        if (vers && (vers[i] & 0x8000))
            continue; /* a hidden (non-default) version */
        for (int k = 0; k < count; k++)
            if (!addrs[k] && !strcmp(str + s->st_name, names[k]))
                addrs[k] = obj->base - first_vaddr + s->st_value;
    }
done:
    munmap((void *)m, size);
}

/* ---- the code put into the target (x86-64): the data page is attach_inject.h's ---- */

#ifdef __x86_64__
extern const unsigned char attach_code[], attach_code_child[], attach_code_thread[],
    attach_code_end[];
/* clang-format off */
__asm__(".pushsection .rodata\n"
        ".globl attach_code\n"
        "attach_code:\n"
        /* the raw clone; the parent is caught at the syscall's exit and never goes on */
        "    syscall\n"
        ".globl attach_code_child\n"
        "attach_code_child:\n"
        "    mov $14, %eax\n" /* rt_sigprocmask(SIG_SETMASK, all, NULL, 8) */
        "    mov $2, %edi\n"
        "    lea " STR(D_SIGSET) "(%rbx), %rsi\n"
        "    xor %edx, %edx\n"
        "    mov $8, %r10d\n"
        "    syscall\n"
        "    and $-16, %rsp\n"
        "    lea " STR(D_THREAD) "(%rbx), %rdi\n"
        "    xor %esi, %esi\n"
        "    mov %r12, %rdx\n"
        "    mov %rbx, %rcx\n"
        "    call *" STR(D_FN_CREATE) "(%rbx)\n"
        "    mov %eax, " STR(D_CREATE_RC) "(%rbx)\n"
        "    movl $1, " STR(D_CREATED) "(%rbx)\n"
        "    mov $60, %eax\n" /* exit(0): this task only */
        "    xor %edi, %edi\n"
        "    syscall\n"
        "    ud2\n"
        /* the thread's start routine: rdi = the data page */
        ".globl attach_code_thread\n"
        "attach_code_thread:\n"
        "    push %rbx\n"
        "    mov %rdi, %rbx\n"
        "    mov $157, %eax\n" /* prctl(PR_SET_NAME, "profrun-attach") */
        "    mov $15, %edi\n"
        "    lea " STR(D_NAME) "(%rbx), %rsi\n"
        "    syscall\n"
        "    call *" STR(D_FN_SELF) "(%rbx)\n"
        "    mov %rax, %rdi\n"
        "    call *" STR(D_FN_DETACH) "(%rbx)\n"
        "    lea " STR(D_PATH) "(%rbx), %rdi\n"
        "    mov $2, %esi\n" /* RTLD_NOW */
        "    call *" STR(D_FN_DLOPEN) "(%rbx)\n"
        "    test %rax, %rax\n"
        "    jz 1f\n"
        "    mov %rax, %rdi\n"
        "    lea " STR(D_SYMBOL) "(%rbx), %rsi\n"
        "    call *" STR(D_FN_DLSYM) "(%rbx)\n"
        "    test %rax, %rax\n"
        "    jz 2f\n"
        "    lea " STR(D_SETTINGS) "(%rbx), %rdi\n"
        "    lea " STR(D_MSG) "(%rbx), %rsi\n"
        "    mov $" STR(D_MSG_LEN) ", %edx\n"
        "    call *%rax\n"
        "    mov %eax, " STR(D_START_RC) "(%rbx)\n"
        "    movl $1, " STR(D_DONE) "(%rbx)\n"
        "    jmp 3f\n"
        "1:  call *" STR(D_FN_DLERROR) "(%rbx)\n"
        "    mov %rax, " STR(D_DLERROR) "(%rbx)\n"
        "    movl $2, " STR(D_DONE) "(%rbx)\n"
        "    jmp 3f\n"
        "2:  call *" STR(D_FN_DLERROR) "(%rbx)\n"
        "    mov %rax, " STR(D_DLERROR) "(%rbx)\n"
        "    movl $3, " STR(D_DONE) "(%rbx)\n"
        "3:  xor %eax, %eax\n"
        "    pop %rbx\n"
        "    ret\n"
        ".globl attach_code_end\n"
        "attach_code_end:\n"
        ".popsection\n");
/* clang-format on */
#endif

/* ---- choosing a thread ---- */

#define ERESTARTSYS 512
#define ERESTARTNOINTR 513
#define ERESTARTNOHAND 514
#define ERESTART_RESTARTBLOCK 516

/* The rank of a syscall as a place to stop a thread: lower is better, -1 never. args: the
 * six arguments from /proc (pselect6, ppoll and epoll_pwait only when they swap no signal
 * mask: glibc's select() and a sleep in Python 3.8 make pselect6 with none). */
static int attach_syscall_rank(long nr, const unsigned long *args)
{
#ifdef __x86_64__
    switch (nr) {
    case SYS_pselect6:
        return args[5] == 0 ? 0 : -1;
    case SYS_ppoll:
        return args[3] == 0 ? 0 : -1;
    case SYS_epoll_pwait:
        return args[4] == 0 ? 0 : -1;
    case SYS_poll:
    case SYS_epoll_wait:
    case SYS_select:
    case SYS_nanosleep:
    case SYS_clock_nanosleep:
    case SYS_pause:
    case SYS_wait4:
    case SYS_waitid:
        return 0;
    case SYS_read:
    case SYS_recvfrom:
    case SYS_recvmsg:
    case SYS_accept:
    case SYS_accept4:
        return 1;
    case SYS_futex:
        return 2;
    default:
        return -1;
    }
#else
    (void)nr;
    (void)args;
    return -1;
#endif
}

struct attach_candidate {
    pid_t tid;
    long nr;
    int rank;
};

/* Threads of pid blocked in a suitable syscall, best first. */
static int attach_candidates(pid_t pid, struct attach_candidate *out, int max, int *nthreads,
                             int *nstrict)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/task", pid);
    DIR *d = opendir(path);
    if (!d)
        return -1;
    int n = 0;
    *nthreads = *nstrict = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        ++*nthreads;
        char p[96], buf[256];
        if (snprintf(p, sizeof p, "/proc/%d/task/%.16s/syscall", pid, e->d_name) >= (int)sizeof p)
            continue;
        if (attach_read_file(p, buf, sizeof buf) <= 0)
            continue;
        char *end;
        long nr = strtol(buf, &end, 10);
        if (end == buf) /* "running" */
            continue;
        unsigned long args[6] = {1, 1, 1, 1, 1, 1};
        char *p2 = end;
        for (int a = 0; a < 6; a++) {
            char *e2;
            args[a] = strtoul(p2, &e2, 16);
            if (e2 == p2)
                break;
            p2 = e2;
        }
        int rank = attach_syscall_rank(nr, args);
        if (rank < 0 || n >= max)
            continue;
        if (attach_seccomp_strict(pid, atoi(e->d_name))) {
            ++*nstrict;
            continue;
        }
        out[n].tid = atoi(e->d_name);
        out[n].nr = nr;
        out[n++].rank = rank;
    }
    closedir(d);
    for (int i = 1; i < n; i++) /* by rank, stable */
        for (int j = i; j > 0 && out[j].rank < out[j - 1].rank; j--) {
            struct attach_candidate t = out[j];
            out[j] = out[j - 1];
            out[j - 1] = t;
        }
    return n;
}

/* ---- ptrace, every wait bounded ---- */

#ifdef __x86_64__
static int attach_pending_sig; /* a signal that reached the stopped thread meanwhile */

/* Waits up to timeout_ms for tid's next stop. 0 and *status, or -1 (timeout, or the
 * thread is gone: *status says how). */
static int attach_wait(pid_t tid, int *status, int timeout_ms)
{
    uint64_t until = attach_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        pid_t r = waitpid(tid, status, __WALL | WNOHANG);
        if (r == tid)
            return WIFSTOPPED(*status) ? 0 : -1;
        if (r < 0 && errno != EINTR)
            return -1;
        if (attach_now_ns() > until)
            return -1;
        attach_sleep_us(50);
    }
}

/* Runs tid to the next syscall stop (entry or exit); a signal-delivery stop on the way is
 * kept for the detach. */
static int attach_to_syscall_stop(pid_t tid)
{
    for (int tries = 0; tries < 8; tries++) {
        if (ptrace(PTRACE_SYSCALL, tid, 0, 0) != 0)
            return -1;
        int st;
        if (attach_wait(tid, &st, 2000) != 0)
            return -1;
        if (WSTOPSIG(st) == (SIGTRAP | 0x80))
            return 0;
        if (st >> 16) /* an event stop (another interrupt): go on */
            continue;
        attach_pending_sig = WSTOPSIG(st); /* delivered at the detach */
    }
    return -1;
}

/* One raw syscall made by the stopped thread at the `syscall` instruction at insn.
 * Returns the kernel's result (-errno on failure), or -ENOTRECOVERABLE when the thread
 * could not be driven. */
static long attach_syscall(pid_t tid, const struct user_regs_struct *saved, uint64_t insn, long nr,
                           uint64_t a1, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5,
                           uint64_t a6, struct user_regs_struct *after)
{
    struct user_regs_struct r = *saved;
    r.rip = insn;
    r.rax = (uint64_t)nr;
    r.orig_rax = (uint64_t)-1; /* no restart logic on the way back to user mode */
    r.rdi = a1;
    r.rsi = a2;
    r.rdx = a3;
    r.r10 = a4;
    r.r8 = a5;
    r.r9 = a6;
    if (after) { /* the registers the clone child needs too */
        r.rbx = after->rbx;
        r.r12 = after->r12;
    }
    if (ptrace(PTRACE_SETREGS, tid, 0, &r) != 0)
        return -ENOTRECOVERABLE;
    if (attach_to_syscall_stop(tid) != 0 || attach_to_syscall_stop(tid) != 0)
        return -ENOTRECOVERABLE;
    if (ptrace(PTRACE_GETREGS, tid, 0, &r) != 0)
        return -ENOTRECOVERABLE;
    return (long)r.rax;
}

/* The thread goes on as if never stopped: its syscall restarts as the kernel would. */
static int attach_restore(pid_t tid, const struct user_regs_struct *saved, int rewind)
{
    struct user_regs_struct r = *saved;
    if (rewind) {
        long err = -(long)saved->rax;
        if (err == ERESTART_RESTARTBLOCK)
            r.rax = SYS_restart_syscall;
        else
            r.rax = saved->orig_rax;
        r.rip -= 2;
        r.orig_rax = (uint64_t)-1;
    }
    int rc = ptrace(PTRACE_SETREGS, tid, 0, &r);
    if (ptrace(PTRACE_DETACH, tid, 0, (void *)(long)attach_pending_sig) != 0)
        rc = -1;
    return rc;
}

/* A flag in the data page becomes non-zero within timeout_ms. */
static int attach_wait_flag(uint64_t addr, uint32_t *value, int timeout_ms)
{
    uint64_t until = attach_now_ns() + (uint64_t)timeout_ms * 1000000u;
    for (;;) {
        if (attach_mem_read(addr, value, sizeof *value) != 0)
            return -1;
        if (*value)
            return 0;
        if (attach_now_ns() > until)
            return -1;
        attach_sleep_us(20);
    }
}

static int attach_task_alive(pid_t pid, pid_t tid)
{
    char p[64];
    snprintf(p, sizeof p, "/proc/%d/task/%d", pid, tid);
    return access(p, F_OK) == 0;
}

/* Steps 2-5 on one thread. 0: the thread was let go and the library's thread started;
 * 1: this thread was not at a syscall boundary after all (let go untouched: try another);
 * -1: failed (why). */
static int attach_inject_thread(pid_t pid, const struct attach_candidate *c, const char *lib,
                                const char *settings, const uint64_t *fns, uint64_t *data_out,
                                struct attach_timing *timing, char *why, size_t why_len)
{
    pid_t tid = c->tid;
    attach_pending_sig = 0;
    if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)PTRACE_O_TRACESYSGOOD) != 0) {
        attach_fail(why, why_len, "PTRACE_SEIZE %d: %s", tid, strerror(errno));
        return errno == ESRCH ? 1 : -1;
    }
    uint64_t t0 = attach_now_ns();
    int st;
    if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 || attach_wait(tid, &st, 2000) != 0) {
        /* not stopped: nothing was changed; our exit (this is profrun's child) detaches */
        attach_fail(why, why_len, "thread %d did not stop within 2 s", tid);
        return -2;
    }
    /* A signal came first: it is delivered now, as it would have been (its handler runs;
     * the thread is then seen outside its syscall and let go), and the thread stopped
     * again. Never held back here, where a failure would lose it. */
    for (int tries = 0; (st >> 16) != PTRACE_EVENT_STOP; tries++) {
        if (tries > 16) { /* a storm of signals: let it go with the one it stopped for */
            ptrace(PTRACE_DETACH, tid, 0, (void *)(long)WSTOPSIG(st));
            attach_fail(why, why_len, "thread %d kept receiving signals; it was let go", tid);
            return -1;
        }
        if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) != 0 ||
            ptrace(PTRACE_CONT, tid, 0, (void *)(long)WSTOPSIG(st)) != 0 ||
            attach_wait(tid, &st, 2000) != 0) {
            attach_fail(why, why_len, "thread %d did not stop within 2 s", tid);
            return -2;
        }
    }
    /* Seen outside strict mode before, but it may have entered it since (only the thread
     * itself can, so not while it is stopped): no system call of ours in it then. */
    if (attach_seccomp_strict(pid, tid)) {
        ptrace(PTRACE_DETACH, tid, 0, (void *)(long)attach_pending_sig);
        return 1;
    }
    struct user_regs_struct saved;
    if (ptrace(PTRACE_GETREGS, tid, 0, &saved) != 0) {
        attach_fail(why, why_len, "PTRACE_GETREGS %d: %s", tid, strerror(errno));
        ptrace(PTRACE_DETACH, tid, 0, (void *)(long)attach_pending_sig);
        return -1;
    }
    /* At its syscall boundary: interrupted inside the syscall we saw, after a `syscall`. */
    long err = -(long)saved.rax;
    unsigned char insn[2] = {0, 0};
    int in_syscall = (long)saved.orig_rax == c->nr &&
                     (err == ERESTARTSYS || err == ERESTARTNOINTR || err == ERESTARTNOHAND ||
                      err == ERESTART_RESTARTBLOCK) &&
                     attach_mem_read(saved.rip - 2, insn, 2) == 0 && insn[0] == 0x0f &&
                     insn[1] == 0x05;
    if (!in_syscall) {
        attach_restore(tid, &saved, 0);
        return 1;
    }
    uint64_t sys_insn = saved.rip - 2;
    int rc = -1;
    uint64_t code = 0, data = 0, stack = 0;
    const size_t stack_size = 256 * 1024;
    long r =
        attach_syscall(tid, &saved, sys_insn, SYS_mmap, 0, 4096 + D_SIZE, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, (uint64_t)-1, 0, NULL);
    if (r == -ENOTRECOVERABLE)
        goto lost;
    if (r < 0 && r > -4096) {
        attach_fail(why, why_len, "mmap in the target failed: %s", strerror((int)-r));
        goto restore;
    }
    code = (uint64_t)r;
    data = code + 4096;
    r = attach_syscall(tid, &saved, sys_insn, SYS_mmap, 0, stack_size, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, (uint64_t)-1, 0,
                       NULL);
    if (r == -ENOTRECOVERABLE)
        goto lost;
    if (r < 0 && r > -4096) {
        attach_fail(why, why_len, "mmap in the target failed: %s", strerror((int)-r));
        goto unmap;
    }
    stack = (uint64_t)r;
    /* code and data */
    size_t code_len = (size_t)(attach_code_end - attach_code);
    static unsigned char page[D_SIZE];
    memset(page, 0, sizeof page);
    memcpy(page + D_FN_DLOPEN, &fns[0], 8 * 6);
    memset(page + D_SIGSET, 0xff, 8);
    memcpy(page + D_NAME, "profrun-attach", 15);
    memcpy(page + D_SYMBOL, "prof_attach_start", 18);
    snprintf((char *)page + D_PATH, D_SETTINGS - D_PATH, "%s", lib);
    snprintf((char *)page + D_SETTINGS, D_SIZE - D_SETTINGS, "%s", settings);
    if (attach_mem_write(code, attach_code, code_len) != 0 ||
        attach_mem_write(data, page, sizeof page) != 0) {
        attach_fail(why, why_len, "cannot write into the target's memory: %s", strerror(errno));
        goto unmap;
    }
    r = attach_syscall(tid, &saved, sys_insn, SYS_mprotect, code, 4096, PROT_READ | PROT_EXEC, 0, 0,
                       0, NULL);
    if (r == -ENOTRECOVERABLE)
        goto lost;
    if (r != 0) {
        attach_fail(why, why_len, "mprotect in the target failed: %s", strerror((int)-r));
        goto unmap;
    }
    struct user_regs_struct child = saved;
    child.rbx = data;
    child.r12 = code + (uint64_t)(attach_code_thread - attach_code);
    r = attach_syscall(tid, &saved, code, SYS_clone,
                       CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
                           CLONE_SYSVSEM,
                       stack + stack_size, 0, 0, 0, 0, &child);
    if (r == -ENOTRECOVERABLE)
        goto lost;
    if (r <= 0) {
        attach_fail(why, why_len, "clone in the target failed: %s", strerror((int)-r));
        goto unmap;
    }
    pid_t child_tid = (pid_t)r;
    uint32_t created = 0;
    if (attach_wait_flag(data + D_CREATED, &created, 5000) != 0) {
        /* The child shares the stopped thread's TLS: letting the thread go while the child
         * is still inside pthread_create would be unsafe; keeping it stopped for ever would
         * hang it. Neither is chosen silently: wait longer, then let it go and say so. */
        if (attach_wait_flag(data + D_CREATED, &created, 25000) != 0) {
            attach_fail(why, why_len,
                        "the injected thread did not finish pthread_create in 30 s; the target "
                        "was let go (it may be in an inconsistent state)");
            attach_restore(tid, &saved, 1);
            return -1;
        }
    }
    int32_t create_rc = 0;
    attach_mem_read(data + D_CREATE_RC, &create_rc, sizeof create_rc);
    /* the child leaves with a raw exit right after the flag: then its stack can go */
    for (int i = 0; i < 20000 && attach_task_alive(pid, child_tid); i++)
        attach_sleep_us(50);
    if (!attach_task_alive(pid, child_tid))
        attach_syscall(tid, &saved, sys_insn, SYS_munmap, stack, stack_size, 0, 0, 0, 0, NULL);
    if (create_rc != 0) {
        attach_fail(why, why_len, "pthread_create in the target failed: %s", strerror(create_rc));
        attach_syscall(tid, &saved, sys_insn, SYS_munmap, code, 4096 + D_SIZE, 0, 0, 0, 0, NULL);
        goto restore;
    }
    rc = 0;
    *data_out = data;
    goto restore;
unmap:
    if (stack)
        attach_syscall(tid, &saved, sys_insn, SYS_munmap, stack, stack_size, 0, 0, 0, 0, NULL);
    if (code)
        attach_syscall(tid, &saved, sys_insn, SYS_munmap, code, 4096 + D_SIZE, 0, 0, 0, 0, NULL);
restore:
    if (attach_restore(tid, &saved, 1) != 0 && rc == 0) {
        attach_fail(why, why_len, "cannot restore thread %d: %s", tid, strerror(errno));
        rc = -1;
    }
    timing->stopped_ns = attach_now_ns() - t0;
    timing->tid = tid;
    timing->nr = c->nr;
    return rc;
lost:
    attach_fail(why, why_len, "thread %d stopped answering to ptrace", tid);
    attach_restore(tid, &saved, 1);
    return -1;
}
#endif

/* ---- the injector: a child process of profrun ---- */

static void attach_injector(pid_t pid, const char *lib, const char *settings, int timeout_ms,
                            pid_t attach_only_tid, struct attach_result *res)
{
#ifndef __x86_64__
    (void)pid;
    (void)lib;
    (void)settings;
    (void)timeout_ms;
    (void)attach_only_tid;
    res->rc = 1;
    attach_fail(res->why, sizeof res->why, "profrun attach works on x86-64 only");
#else
    struct attach_object objs[4];
    int nobj = attach_find_libc(pid, objs, 4);
    if (nobj <= 0) {
        res->rc = 1;
        attach_fail(res->why, sizeof res->why,
                    "process %d has no glibc mapped (a static program, or another libc): "
                    "cannot load a library into it",
                    pid);
        return;
    }
    static const char *const names[] = {"dlopen",         "dlsym",          "dlerror",
                                        "pthread_create", "pthread_detach", "pthread_self"};
    uint64_t fns[6] = {0};
    for (int i = 0; i < nobj; i++)
        attach_elf_symbols(pid, &objs[i], names, fns, 6);
    for (int k = 0; k < 6; k++)
        if (!fns[k]) {
            res->rc = 1;
            attach_fail(res->why, sizeof res->why, "%s not found in the target's glibc (%s)",
                        names[k], objs[0].path);
            return;
        }
    char mem[64];
    snprintf(mem, sizeof mem, "/proc/%d/mem", pid);
    attach_mem_fd = open(mem, O_RDWR | O_CLOEXEC);
    if (attach_mem_fd < 0) {
        res->rc = 1;
        attach_fail(res->why, sizeof res->why, "cannot open %s: %s", mem, strerror(errno));
        return;
    }
    if (attach_only_tid && attach_seccomp_strict(pid, attach_only_tid)) {
        attach_fail(res->why, sizeof res->why,
                    "thread %d of process %d runs in seccomp strict mode: the system calls "
                    "attach makes in it would kill the process",
                    attach_only_tid, pid);
        res->rc = 1;
        return;
    }
    uint64_t until = attach_now_ns() + (uint64_t)timeout_ms * 1000000u;
    int nthreads = 0, tried = 0, nstrict = 0;
    do {
        struct attach_candidate c[256];
        int n = attach_candidates(pid, c, 256, &nthreads, &nstrict);
        if (n < 0) {
            res->rc = 1;
            attach_fail(res->why, sizeof res->why, "process %d is gone", pid);
            return;
        }
        for (int i = 0; i < n; i++) {
            if (attach_only_tid && c[i].tid != attach_only_tid)
                continue;
            tried++;
            int r = attach_inject_thread(pid, &c[i], lib, settings, fns, &res->data, &res->timing,
                                         res->why, sizeof res->why);
            if (r == 0) {
                res->rc = 0;
                return;
            }
            if (r < 0) {
                res->rc = 2;
                return;
            }
        }
        attach_sleep_us(10000);
    } while (attach_now_ns() < until);
    res->rc = 1;
    if (nstrict) {
        attach_fail(res->why, sizeof res->why,
                    "no thread of process %d could be stopped safely within %.1f s: %d blocked "
                    "in a system call run in seccomp strict mode (attach's calls would kill the "
                    "process), the others were not blocked where they can be stopped",
                    pid, timeout_ms / 1000.0, nstrict);
        return;
    }
    attach_fail(res->why, sizeof res->why,
                "no thread of process %d was blocked in a system call where it can be stopped "
                "safely within %.1f s (%d threads, %d tries); try again while it waits (I/O, "
                "a lock, a sleep)",
                pid, timeout_ms / 1000.0, nthreads, tried);
#endif
}

int attach_run_injector(pid_t pid, const char *lib, const char *settings, int timeout_ms,
                        pid_t only_tid, struct attach_result *res)
{
    struct attach_result *shared =
        mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED)
        return -1;
    memset(shared, 0, sizeof *shared);
    shared->rc = 2;
    snprintf(shared->why, sizeof shared->why, "the injector ended without an answer");
    pid_t child = fork();
    if (child < 0)
        return -1;
    if (child == 0) {
        attach_injector(pid, lib, settings, timeout_ms, only_tid, shared);
        _exit(0);
    }
    uint64_t until = attach_now_ns() + (uint64_t)(timeout_ms + 70000) * 1000000u;
    int st;
    while (waitpid(child, &st, WNOHANG) == 0) {
        if (attach_now_ns() > until) {
            kill(child, SIGKILL);
            waitpid(child, &st, 0);
            snprintf(shared->why, sizeof shared->why, "the injector did not finish in time");
            break;
        }
        attach_sleep_us(1000);
    }
    *res = *shared;
    munmap(shared, sizeof *shared);
    return 0;
}
