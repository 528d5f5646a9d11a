/* attach_util: what profrun attach's files share (attach.c, attach_inject.c,
 * attach_job.c). */
#ifndef PROF_ATTACH_UTIL_H
#define PROF_ATTACH_UTIL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The reason of a refusal or failure into why. */
void attach_fail(char *why, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
uint64_t attach_now_ns(void); /* CLOCK_MONOTONIC */
void attach_sleep_us(long us);
/* A small file (/proc) into buf, NUL-terminated: its length, or -1. */
int attach_read_file(const char *path, char *buf, size_t len);
/* 1 when thread tid of pid runs in seccomp strict mode (read, write, exit, sigreturn only:
 * any other system call kills its process), else 0. */
int attach_seccomp_strict(pid_t pid, pid_t tid);
/* The start of the windows of several processes, once all are attached (attach.start):
 * not before start_after, and far enough ahead for every library to see it on a collector
 * pass first. 0, or -1 and errno. */
int attach_write_start(const char *path, uint64_t start_after);
/* The same, at exactly at (realtime ns). */
int attach_write_start_at(const char *path, uint64_t at);
/* attach_start.c: with --steps over several processes, the start put between two steps
 * from the step ends each library writes to ends[i] (n files); 0 when a process wrote
 * none within no_steps_s seconds, or no step of all came together within give_up_s, or
 * *interrupted. */
uint64_t attach_pick_start(const char *const *ends, int n, double no_steps_s, double give_up_s,
                           volatile const sig_atomic_t *interrupted);

#endif
