#define _GNU_SOURCE
#include "lifecycle.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "resolve.h"
#include "settings.h"

#define PROF_EXPORT __attribute__((visibility("default")))

extern char **environ;

/* ---- exit paths ---- */

typedef void (*lifecycle_exit_fn)(int);

static void *lifecycle_next(const char *name)
{
    return dlsym(RTLD_NEXT, name);
}

/* _exit skips atexit and destructors: write the trace first (os._exit in a forked
 * DataLoader worker ends exactly this way). */
PROF_EXPORT void _exit(int status)
{
    lifecycle_exit_fn real = (lifecycle_exit_fn)lifecycle_next("_exit");
    collector_finish();
    real(status);
    __builtin_unreachable();
}

PROF_EXPORT void _Exit(int status)
{
    lifecycle_exit_fn real = (lifecycle_exit_fn)lifecycle_next("_Exit");
    collector_finish();
    real(status);
    __builtin_unreachable();
}

/* ---- exec: write what we have, and make sure the new image is profiled too ---- */

#define LIFECYCLE_ENV_TEXT 8192

/* Builds in the caller's buffers an environment that has libprof.so in LD_PRELOAD and
 * every PROF_* setting of this process. Uses the stack only: a vfork child may call it. */
static char *const *lifecycle_env(char *const envp[], char **out, size_t out_slots, char *text,
                                  size_t text_len)
{
    const char *lib =
        settings_is_set(SETTING_PROF_LIB) ? settings_get(SETTING_PROF_LIB) : resolve_self_path();
    size_t n = 0, used = 0;
    int have_preload = 0;
    for (size_t i = 0; envp && envp[i]; i++) {
        if (n + SETTING_COUNT + 2 >= out_slots)
            return envp; /* an enormous environment: pass it unchanged */
        const char *e = envp[i];
        if (strncmp(e, "LD_PRELOAD=", 11) == 0) {
            have_preload = 1;
            if (lib[0] && !strstr(e + 11, lib)) {
                int w = snprintf(text + used, text_len - used, "LD_PRELOAD=%s:%s", lib, e + 11);
                if (w < 0 || (size_t)w >= text_len - used)
                    return envp;
                out[n++] = text + used;
                used += (size_t)w + 1;
                continue;
            }
        }
        out[n++] = (char *)e;
    }
    if (!have_preload && lib[0]) {
        int w = snprintf(text + used, text_len - used, "LD_PRELOAD=%s", lib);
        if (w < 0 || (size_t)w >= text_len - used)
            return envp;
        out[n++] = text + used;
        used += (size_t)w + 1;
    }
    for (int s = 0; s < SETTING_COUNT; s++) {
        if (!settings_is_set(s))
            continue;
        size_t len = strlen(settings_table[s].name);
        int present = 0;
        for (size_t i = 0; envp && envp[i]; i++)
            if (strncmp(envp[i], settings_table[s].name, len) == 0 && envp[i][len] == '=')
                present = 1;
        if (present)
            continue;
        int w = snprintf(text + used, text_len - used, "%s=%s", settings_table[s].name,
                         settings_get(s));
        if (w < 0 || (size_t)w >= text_len - used)
            return envp;
        out[n++] = text + used;
        used += (size_t)w + 1;
    }
    out[n] = NULL;
    return out;
}

static size_t lifecycle_env_count(char *const envp[])
{
    size_t n = 0;
    while (envp && envp[n])
        n++;
    return n;
}

typedef int (*lifecycle_execve_fn)(const char *, char *const[], char *const[]);
typedef int (*lifecycle_fexecve_fn)(int, char *const[], char *const[]);

PROF_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    lifecycle_execve_fn real = (lifecycle_execve_fn)lifecycle_next("execve");
    size_t slots = lifecycle_env_count(envp) + SETTING_COUNT + 3;
    char *env[slots];
    char text[LIFECYCLE_ENV_TEXT];
    char *const *use = lifecycle_env(envp, env, slots, text, sizeof text);
    collector_flush_for_exec();
    return real(path, argv, use);
}

PROF_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    lifecycle_execve_fn real = (lifecycle_execve_fn)lifecycle_next("execvpe");
    size_t slots = lifecycle_env_count(envp) + SETTING_COUNT + 3;
    char *env[slots];
    char text[LIFECYCLE_ENV_TEXT];
    char *const *use = lifecycle_env(envp, env, slots, text, sizeof text);
    collector_flush_for_exec();
    return real(file, argv, use);
}

PROF_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    lifecycle_fexecve_fn real = (lifecycle_fexecve_fn)lifecycle_next("fexecve");
    size_t slots = lifecycle_env_count(envp) + SETTING_COUNT + 3;
    char *env[slots];
    char text[LIFECYCLE_ENV_TEXT];
    char *const *use = lifecycle_env(envp, env, slots, text, sizeof text);
    collector_flush_for_exec();
    return real(fd, argv, use);
}

PROF_EXPORT int execv(const char *path, char *const argv[])
{
    return execve(path, argv, environ);
}

PROF_EXPORT int execvp(const char *file, char *const argv[])
{
    return execvpe(file, argv, environ);
}

/* posix_spawn runs the new program without going through our execve (glibc calls its
 * internal one): same rule as exec, the child gets libprof.so and the PROF_* settings
 * back even when the caller gives it a cleared environment. */
typedef int (*lifecycle_spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
                                  const posix_spawnattr_t *, char *const[], char *const[]);

static int lifecycle_spawn(const char *name, pid_t *pid, const char *path,
                           const posix_spawn_file_actions_t *actions, const posix_spawnattr_t *attr,
                           char *const argv[], char *const envp[])
{
    lifecycle_spawn_fn real = (lifecycle_spawn_fn)lifecycle_next(name);
    if (!real)
        return ENOSYS;
    size_t slots = lifecycle_env_count(envp) + SETTING_COUNT + 3;
    char *env[slots];
    char text[LIFECYCLE_ENV_TEXT];
    char *const *use = lifecycle_env(envp, env, slots, text, sizeof text);
    return real(pid, path, actions, attr, argv, use);
}

PROF_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *actions,
                            const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return lifecycle_spawn("posix_spawn", pid, path, actions, attr, argv, envp);
}

PROF_EXPORT int posix_spawnp(pid_t *pid, const char *file,
                             const posix_spawn_file_actions_t *actions,
                             const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
    return lifecycle_spawn("posix_spawnp", pid, file, actions, attr, argv, envp);
}

int lifecycle_spawnp_unprofiled(pid_t *pid, const char *file,
                                const posix_spawn_file_actions_t *actions,
                                const posix_spawnattr_t *attr, char *const argv[],
                                char *const envp[])
{
    lifecycle_spawn_fn real = (lifecycle_spawn_fn)lifecycle_next("posix_spawnp");
    return real ? real(pid, file, actions, attr, argv, envp) : ENOSYS;
}

/* The list forms: collect the variadic arguments into an array on the stack. */
static size_t lifecycle_count_args(const char *arg0, va_list ap)
{
    size_t n = 1;
    for (const char *a = arg0; a; a = va_arg(ap, const char *))
        n++;
    return n;
}

/* Copies arg0 and the variadic arguments up to NULL into argv (n slots, NULL included). */
static void lifecycle_fill_args(char **argv, size_t n, const char *arg0, va_list *ap)
{
    argv[0] = (char *)arg0;
    for (size_t i = 1; i < n; i++)
        argv[i] = va_arg(*ap, char *);
}

PROF_EXPORT int execl(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = lifecycle_count_args(arg, ap);
    va_end(ap);
    char *argv[n];
    va_start(ap, arg);
    lifecycle_fill_args(argv, n, arg, &ap);
    va_end(ap);
    return execve(path, argv, environ);
}

PROF_EXPORT int execlp(const char *file, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = lifecycle_count_args(arg, ap);
    va_end(ap);
    char *argv[n];
    va_start(ap, arg);
    lifecycle_fill_args(argv, n, arg, &ap);
    va_end(ap);
    return execvpe(file, argv, environ);
}

PROF_EXPORT int execle(const char *path, const char *arg, ...)
{
    va_list ap;
    va_start(ap, arg);
    size_t n = lifecycle_count_args(arg, ap);
    va_end(ap);
    char *argv[n];
    va_start(ap, arg);
    lifecycle_fill_args(argv, n, arg, &ap);
    char *const *envp = va_arg(ap, char *const *); /* after the NULL that ends the list */
    va_end(ap);
    return execve(path, argv, envp);
}

/* ---- signals: flush, then do what the program asked for (the default action) ----
 * While the program leaves one of these signals at SIG_DFL, our handler sits there and
 * the program is told SIG_DFL; once it sets its own handler (Python's SIGINT, a JIT's
 * SIGSEGV), that handler is installed for real and ours steps aside. A handler that
 * chains to the "previous" action it was told of (faulthandler) sets SIG_DFL back, which
 * puts ours there again, so the flush still happens before the process dies. */

static const int lifecycle_signals[] = {SIGTERM, SIGINT,  SIGHUP, SIGQUIT, SIGPIPE,
                                        SIGABRT, SIGSEGV, SIGBUS, SIGFPE,  SIGILL};
#define LIFECYCLE_NSIG 65

static int lifecycle_managed[LIFECYCLE_NSIG];
static int lifecycle_ours_installed[LIFECYCLE_NSIG];
static struct sigaction lifecycle_app_action[LIFECYCLE_NSIG];

typedef int (*lifecycle_sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static lifecycle_sigaction_fn lifecycle_real_sigaction;

/* A fault the CPU raised (si_code > 0: SEGV_MAPERR, FPE_INTDIV, ...), not one sent with
 * kill/raise: returning re-runs the faulting instruction. */
static int lifecycle_is_hardware_fault(int sig, const siginfo_t *info)
{
    return (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info &&
           info->si_code > 0;
}

/* Async-signal-safe throughout: the flush takes no lock it could wait on forever (the
 * drain lock with a timeout) and allocates nothing. */
static void lifecycle_on_signal(int sig, siginfo_t *info, void *context)
{
    (void)context;
    int saved = errno;
    collector_flush_from_signal(sig);
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    lifecycle_real_sigaction(sig, &dfl, NULL);
    lifecycle_ours_installed[sig] = 0;
    /* A hardware fault happens again when we return, now with the default action: the
     * core and the parent's status are those of the original fault (same si_code and
     * address). A sent signal is blocked while we run; sent again, it is delivered
     * with its default action as soon as this handler returns. */
    if (!lifecycle_is_hardware_fault(sig, info))
        pthread_kill(pthread_self(), sig);
    errno = saved;
}

/* A signal of the profiler's own (the capture window's), with its handler. */
static void (*lifecycle_own_handler[LIFECYCLE_NSIG])(int);

static int lifecycle_install_ours(int sig)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    if (lifecycle_own_handler[sig])
        sa.sa_handler = lifecycle_own_handler[sig];
    else
        sa.sa_sigaction = lifecycle_on_signal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART | (lifecycle_own_handler[sig] ? 0 : SA_SIGINFO);
    /* A thread that set up an alternate stack to survive a stack overflow gets our flush
     * there too; only for faults: a small one (faulthandler's) must not carry a SIGTERM
     * flush that the thread's own stack would hold easily. */
    if (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL)
        sa.sa_flags |= SA_ONSTACK;
    int rc = lifecycle_real_sigaction(sig, &sa, NULL);
    if (rc == 0)
        lifecycle_ours_installed[sig] = 1;
    return rc;
}

static int lifecycle_sigaction_managed(int sig, const struct sigaction *act, struct sigaction *old);

PROF_EXPORT PROF_UNINSTRUMENTED int sigaction(int sig, const struct sigaction *act,
                                              struct sigaction *old)
{
    lifecycle_sigaction_fn real = lifecycle_real_sigaction;
    if (!real) {
        real = (lifecycle_sigaction_fn)dlsym(RTLD_NEXT, "sigaction");
        lifecycle_real_sigaction = real;
    }
    if (sig <= 0 || sig >= LIFECYCLE_NSIG || !lifecycle_managed[sig])
        return real(sig, act, old);
    return lifecycle_sigaction_managed(sig, act, old);
}

static int lifecycle_sigaction_managed(int sig, const struct sigaction *act, struct sigaction *old)
{
    struct sigaction believed = lifecycle_app_action[sig];
    if (act) {
        int rc;
        if (act->sa_handler == SIG_DFL) {
            rc = lifecycle_ours_installed[sig] ? 0 : lifecycle_install_ours(sig);
        } else {
            rc = lifecycle_real_sigaction(sig, act, NULL);
            if (rc == 0 && lifecycle_own_handler[sig] && lifecycle_ours_installed[sig])
                collector_note("the program set its own handler for signal %d: it no longer "
                               "opens or closes the capture window",
                               sig);
            if (rc == 0)
                lifecycle_ours_installed[sig] = 0;
        }
        if (rc != 0)
            return rc;
        lifecycle_app_action[sig] = *act;
    }
    if (old)
        *old = believed;
    return 0;
}

static sighandler_t lifecycle_signal_managed(int sig, sighandler_t handler);

PROF_EXPORT PROF_UNINSTRUMENTED sighandler_t signal(int sig, sighandler_t handler)
{
    if (sig <= 0 || sig >= LIFECYCLE_NSIG || !lifecycle_managed[sig]) {
        sighandler_t (*real)(int, sighandler_t) =
            (sighandler_t(*)(int, sighandler_t))dlsym(RTLD_NEXT, "signal");
        return real(sig, handler);
    }
    return lifecycle_signal_managed(sig, handler);
}

static sighandler_t lifecycle_signal_managed(int sig, sighandler_t handler)
{
    /* glibc's signal(): BSD semantics. */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = handler;
    sigemptyset(&sa.sa_mask);
    sigaddset(&sa.sa_mask, sig);
    sa.sa_flags = SA_RESTART;
    if (sigaction(sig, &sa, &old) != 0)
        return SIG_ERR;
    return old.sa_handler;
}

int lifecycle_manage_signal(int sig, void (*handler)(int))
{
    if (!lifecycle_real_sigaction)
        lifecycle_real_sigaction = (lifecycle_sigaction_fn)lifecycle_next("sigaction");
    struct sigaction cur;
    if (sig <= 0 || sig >= LIFECYCLE_NSIG || lifecycle_managed[sig] || !lifecycle_real_sigaction ||
        lifecycle_real_sigaction(sig, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
        return -1;
    lifecycle_app_action[sig] = cur;
    lifecycle_own_handler[sig] = handler;
    if (lifecycle_install_ours(sig) != 0) {
        lifecycle_own_handler[sig] = NULL;
        return -1;
    }
    lifecycle_managed[sig] = 1;
    return 0;
}

/* A signal sent to a forked child before the fork handlers have made it a process of its
 * own (its pid, its file) would find the parent's state, and one that comes while the
 * file is being made (the drain lock held by the same thread) could not flush it: the
 * signals we flush on wait, blocked, over those moments. */
static __thread sigset_t lifecycle_held_mask PROF_TLS;

void lifecycle_signals_hold(void)
{
    sigset_t held;
    sigemptyset(&held);
    for (size_t i = 0; i < sizeof lifecycle_signals / sizeof lifecycle_signals[0]; i++)
        if (lifecycle_signals[i] != SIGSEGV && lifecycle_signals[i] != SIGBUS &&
            lifecycle_signals[i] != SIGFPE && lifecycle_signals[i] != SIGILL)
            sigaddset(&held, lifecycle_signals[i]);
    pthread_sigmask(SIG_BLOCK, &held, &lifecycle_held_mask);
}

void lifecycle_signals_release(void)
{
    pthread_sigmask(SIG_SETMASK, &lifecycle_held_mask, NULL);
}

void lifecycle_init(int handle_signals)
{
    lifecycle_real_sigaction = (lifecycle_sigaction_fn)lifecycle_next("sigaction");
    if (!handle_signals || !lifecycle_real_sigaction)
        return;
    for (size_t i = 0; i < sizeof lifecycle_signals / sizeof lifecycle_signals[0]; i++) {
        int sig = lifecycle_signals[i];
        struct sigaction cur;
        if (lifecycle_real_sigaction(sig, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL)
            continue; /* ignored or handled since before us (nohup): leave it alone */
        lifecycle_app_action[sig] = cur;
        if (lifecycle_install_ours(sig) == 0)
            lifecycle_managed[sig] = 1;
    }
}
