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
/* The value of field ("Uid", "TracerPid", ...) in /proc/PID/status into out: 0, or -1. */
int attach_status_field(pid_t pid, const char *field, char *out, size_t len);
/* 1 when thread tid of pid runs in seccomp strict mode (read, write, exit, sigreturn only:
 * any other system call kills its process), else 0. */
int attach_seccomp_strict(pid_t pid, pid_t tid);
/* The start of the windows of several processes, once all are attached (attach.start):
 * not before start_after, and far enough ahead for every library to see it on a collector
 * pass first. 0, or -1 and errno. */
int attach_write_start(const char *path, uint64_t start_after);
/* The same, at exactly at (realtime ns). */
int attach_write_start_at(const char *path, uint64_t at);
/* attach_start.c: the common start written to path once every process is attached: with
 * step ends (--steps over several processes: the files each library writes, n of them)
 * between two of their steps; else, or when their steps do not end together, from a time
 * not before start_after (said). Errors are said. */
void attach_start_now(const char *path, uint64_t start_after, const char *const *ends, int n,
                      volatile const sig_atomic_t *interrupted);

#endif
