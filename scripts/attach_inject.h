/* profrun attach's injection (attach_inject.c): libprof.so loaded into a running process
 * through one thread stopped at a system call; see attach_inject.c for how and why. */
#ifndef PROF_ATTACH_INJECT_H
#define PROF_ATTACH_INJECT_H

#include <stdint.h>
#include <sys/types.h>

/* The data page put into the target, as the injected code and profrun read it. rbx holds
 * it in both pieces of code (attach_inject.c); r12 the start routine in the clone child. */
#define D_CREATED 0   /* u32: 1 once pthread_create returned */
#define D_CREATE_RC 4 /* s32 */
#define D_DONE 8      /* u32: 1 prof_attach_start returned, 2 dlopen failed, 3 dlsym */
#define D_START_RC 12 /* s32: prof_attach_start's result */
#define D_DLERROR 16  /* u64: dlerror() after a failure */
#define D_THREAD 24   /* pthread_t */
#define D_FN_DLOPEN 32
#define D_FN_DLSYM 40
#define D_FN_DLERROR 48
#define D_FN_CREATE 56
#define D_FN_DETACH 64
#define D_FN_SELF 72
#define D_SIGSET 80  /* 8 bytes, all ones */
#define D_NAME 96    /* "profrun-attach" */
#define D_SYMBOL 112 /* "prof_attach_start" */
#define D_MSG 256    /* prof_attach_start's message */
#define D_MSG_LEN 768
#define D_PATH 1024     /* libprof.so */
#define D_SETTINGS 5120 /* the settings block */
#define D_SIZE 16384
#define STR_(x) #x
#define STR(x) STR_(x)

struct attach_timing {
    uint64_t stopped_ns; /* how long the chosen thread was stopped */
    pid_t tid;
    long nr;
};

struct attach_result {
    int rc; /* 0 injected; 1 refused (why); 2 failed (why) */
    uint64_t data;
    struct attach_timing timing;
    char why[512];
};

/* Loads lib into pid from a thread that profrun attach starts there (settings: the block
 * prof_attach_start gets), looking for a thread to stop for up to timeout_ms (only_tid:
 * that one alone, when not 0). The ptrace work runs in a child process: if it were stuck,
 * its exit would detach everything (the kernel does it). Returns -1 when the child cannot
 * be made; else 0 and res (rc 0: the library's thread runs; its data page is res->data). */
int attach_run_injector(pid_t pid, const char *lib, const char *settings, int timeout_ms,
                        pid_t only_tid, struct attach_result *res);

#endif
