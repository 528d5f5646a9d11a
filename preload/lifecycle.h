/* Process life: exec, _exit and fatal signals, so that every process's trace reaches its
 * file whatever way the process ends (fork: init.c runs the collector's and each layer's
 * handlers). */
#ifndef PROF_LIFECYCLE_H
#define PROF_LIFECYCLE_H

#include <spawn.h>

/* handle_signals: flush on SIGTERM/SIGINT/SIGHUP/SIGQUIT/SIGPIPE/SIGABRT and the faults
 * SIGSEGV/SIGBUS/SIGFPE/SIGILL while the program leaves them at their default action. */
void lifecycle_init(int handle_signals);
/* Puts handler on sig while the program leaves sig at its default action; the program
 * is told SIG_DFL, and its own handler, once it sets one, replaces ours (said once). 0, or
 * -1 when the program already handles or ignores sig. */
int lifecycle_manage_signal(int sig, void (*handler)(int));
/* Around a fork (first and last of init.c's handlers) and the file's making at load: the
 * sent signals we flush on wait until the process knows itself and its file has its
 * first bytes, so that one sent at once still leaves a readable trace. */
void lifecycle_signals_hold(void);
void lifecycle_signals_release(void);

/* posix_spawnp without our wrapper: for the profiler's own helpers (the bridge's
 * compiler), whose environment must stay as given. */
int lifecycle_spawnp_unprofiled(pid_t *pid, const char *file,
                                const posix_spawn_file_actions_t *actions,
                                const posix_spawnattr_t *attr, char *const argv[],
                                char *const envp[]);

#endif
