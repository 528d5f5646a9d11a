/* profrun [options] [--] CMD ARGS...: runs CMD with libprof.so preloaded into it and
 * every process it starts, then prints the report. Exits with CMD's status (128+signal
 * when a signal ended it). */
#define _GNU_SOURCE
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach_cli.h"
#include "outdir.h"
#include "job.h"
#include "settings.h"

static void profrun_usage(FILE *out)
{
    fprintf(out,
            "usage: profrun [options] [--] CMD [ARGS...]\n"
            "Runs CMD (any launcher: python, torchrun, mpirun, srun) with libprof.so preloaded,\n"
            "writes one trace per process, then prints the report.\n\n"
            "       profrun attach PID [--duration S | --steps N] [-o DIR]  (profrun attach -h)\n"
            "Options:\n"
            "  -o, --output DIR   folder for the traces (default ./prof-out; PROF_OUTPUT_DIR)\n"
            "      --no-report    do not print the report at the end\n"
            "      --format FMT   report format: text, json or csv\n"
            "      --sort KEY     report sort key (see profreport --help)\n"
            "      --limit N      report row limit\n"
            "      --prepare [PYTHON]  build the libtorch bridge for PYTHON's torch (default\n"
            "                     python3) now, so that no profiled run waits for it\n"
            "  -h, --help         this help\n\n");
    settings_print_help(out);
    fprintf(out, "\nOffline: profreport DIR (see profreport --help).\n");
}

/* The program's pid while it runs; 0 once it is being reaped (a signal arriving then
 * must not reach a process that took the pid over). */
static volatile sig_atomic_t profrun_child;

/* A signal sent to profrun alone (kill(2), sigqueue, a scheduler) is passed on; one the
 * terminal generated (Ctrl-C, Ctrl-\, a hangup: si_code SI_KERNEL) went to the whole
 * foreground process group, the program included, and is not sent twice. Nor is one the
 * program itself sent to its group (kill(0, sig): si_pid is the program's). The program
 * stays in our process group: moving it to its own would take it off the terminal and
 * out of the reach of job control and of a launcher's group signals. */
static void profrun_forward(int sig, siginfo_t *info, void *context)
{
    (void)context;
    pid_t child = profrun_child;
    if (child <= 0 || !info)
        return;
    if (info->si_code != SI_USER && info->si_code != SI_QUEUE && info->si_code != SI_TKILL)
        return;
    if (info->si_pid == child)
        return;
    int saved = errno;
    kill(child, sig);
    errno = saved;
}

static int profrun_status(int status)
{
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 127;
}

static int profrun_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return 127;
    }
    return profrun_status(status);
}

/* Waits for the program's end without reaping it, stops forwarding, then reaps it. */
static int profrun_wait_program(pid_t pid)
{
    siginfo_t info;
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) < 0) {
        if (errno != EINTR)
            break;
    }
    profrun_child = 0;
    return profrun_wait(pid);
}

/* The program's environment: libprof.so preloaded, the output folder and run id. */
static void profrun_profile_env(const char *lib_abs, const char *out_abs, const char *run_id,
                                const char *run_from)
{
    const char *old = getenv("LD_PRELOAD");
    char preload[2 * PATH_MAX];
    if (old && *old)
        snprintf(preload, sizeof preload, "%s:%s", lib_abs, old);
    else
        snprintf(preload, sizeof preload, "%s", lib_abs);
    setenv("LD_PRELOAD", preload, 1);
    setenv("PROF_LIB", lib_abs, 1);
    setenv("PROF_OUTPUT_DIR", out_abs, 1);
    setenv("PROF_RUN_ID", run_id, 1);
    if (run_from)
        setenv("PROF_RUN_ID_FROM", run_from, 1);
    /* The driver calls our InitializeInjection at cuInit: programs whose CUDA runtime
     * is linked statically are seen too. A user's own injection library wins. */
    setenv("CUDA_INJECTION64_PATH", lib_abs, 0);
    setenv("NVTX_INJECTION64_PATH", lib_abs, 0);
}

/* The file execvp would run for cmd, in path; 0 when found. */
static int profrun_find_program(const char *cmd, char *path, size_t len)
{
    if (strchr(cmd, '/')) {
        snprintf(path, len, "%s", cmd);
        return access(path, X_OK);
    }
    const char *dirs = getenv("PATH");
    if (!dirs || !*dirs)
        dirs = "/bin:/usr/bin";
    for (const char *d = dirs; *d;) {
        size_t n = strcspn(d, ":");
        struct stat st;
        snprintf(path, len, "%.*s%s%s", (int)n, d, n ? "/" : "", cmd);
        if (access(path, X_OK) == 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
            return 0;
        d += n + (d[n] == ':');
    }
    return -1;
}

/* Why the dynamic loader will not load libprof.so into the program at path, or NULL
 * (a script, a dynamically linked 64-bit program, or one we cannot read: then exec
 * tells). */
static const char *profrun_unpreloadable(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat st;
    Elf64_Ehdr eh;
    const char *why = NULL;
    if (fstat(fd, &st) != 0 || pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
        memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) {
        close(fd);
        return NULL;
    }
    if (eh.e_ident[EI_CLASS] != ELFCLASS64) {
        why = "a 32-bit program";
    } else if (eh.e_type == ET_EXEC || eh.e_type == ET_DYN) {
        int interp = 0;
        for (unsigned i = 0; i < eh.e_phnum && i < 256; i++) {
            Elf64_Phdr ph;
            if (pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + (uint64_t)i * eh.e_phentsize)) !=
                (ssize_t)sizeof ph)
                break;
            interp |= ph.p_type == PT_INTERP;
        }
        if (!interp)
            why = "statically linked";
    }
    close(fd);
    /* The loader's secure mode (the ids change at exec, or file capabilities) ignores
     * LD_PRELOAD entries with a '/'. */
    if (!why && (((st.st_mode & S_ISUID) && st.st_uid != geteuid()) ||
                 ((st.st_mode & S_ISGID) && st.st_gid != getegid())))
        why = "setuid or setgid";
    if (!why && getxattr(path, "security.capability", NULL, 0) > 0)
        why = "given file capabilities";
    return why;
}

/* A report that did not reach its reader is said, not lost in silence: its reader went
 * away (`profrun ... | head -1`: the pipe's other end is closed, which poll reports as an
 * error on ours) or profreport failed. The exit status stays the program's. */
static void profrun_report_check(int report_status, const char *out_abs)
{
    struct pollfd pfd = {STDOUT_FILENO, POLLOUT, 0};
    int closed = poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLERR | POLLHUP));
    if (closed)
        fprintf(stderr,
                "profrun: the report's reader closed its end before the report was all read; "
                "`profreport %s` prints it again\n",
                out_abs);
    else if (report_status > 128)
        fprintf(stderr,
                "profrun: the report ended with signal %d; `profreport %s` prints it again\n",
                report_status - 128, out_abs);
}

/* Whether a trace in dir holds the bytes of word (a META key). */
static int profrun_trace_says(const char *dir, const char *word)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = e->d_name[0] != '.' ? fopen(path, "rb") : NULL;
        if (!f)
            continue;
        static char buf[1 << 16];
        size_t n, keep = 0, w = strlen(word);
        while (!found && (n = fread(buf + keep, 1, sizeof buf - keep, f)) > 0) {
            n += keep;
            found = memmem(buf, n, word, w) != NULL;
            keep = n >= w ? w - 1 : n;
            memmove(buf, buf + n - keep, keep);
        }
        fclose(f);
    }
    if (d)
        closedir(d);
    return found;
}

/* profrun --prepare [PYTHON]: imports torch in PYTHON under the profiler (its Python layer
 * off), which builds the bridge into the cache if it is not there; the traces go into a
 * temporary folder, removed after. */
static int profrun_prepare(const char *python)
{
    char dir[] = "/tmp/profrun-prepare.XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "profrun: --prepare: cannot make a folder in /tmp: %s\n", strerror(errno));
        return 2;
    }
    pid_t pid = fork();
    if (pid == 0) {
        setenv("PROF_PYTHON", "0", 1);
        execl("/proc/self/exe", "profrun", "--no-report", "-o", dir, "--", python, "-c",
              "import torch", (char *)NULL);
        _exit(127);
    }
    int rc = pid > 0 ? profrun_wait(pid) : 127;
    int installed = rc == 0 && profrun_trace_says(dir, "torch_lib");
    char cmd[sizeof dir + 16];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "profrun: --prepare: could not remove %s\n", dir);
    if (rc != 0) {
        fprintf(stderr, "profrun: --prepare: `%s -c \"import torch\"` failed (status %d)\n", python,
                rc);
        return 1;
    }
    if (!installed) {
        fprintf(stderr,
                "profrun: --prepare: %s imported torch but the bridge was not installed "
                "(the lines above say why)\n",
                python);
        return 1;
    }
    printf("profrun: the libtorch bridge for %s's torch is ready\n", python);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "--prepare"))
        return profrun_prepare(argc >= 3 ? argv[2] : "python3");
    const char *output = NULL, *format = NULL, *sort = NULL, *limit = NULL;
    int no_report = 0;
    static const struct option opts[] = {{"output", required_argument, NULL, 'o'},
                                         {"no-report", no_argument, NULL, 'n'},
                                         {"format", required_argument, NULL, 'f'},
                                         {"sort", required_argument, NULL, 's'},
                                         {"limit", required_argument, NULL, 'l'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    if (argc > 1 && strcmp(argv[1], "attach") == 0) /* profrun attach PID ...: attach.c */
        return attach_main(argc - 1, argv + 1);
    int c;
    /* '+': stop at the first non-option, so CMD's own options stay CMD's. */
    while ((c = getopt_long(argc, argv, "+o:h", opts, NULL)) != -1) {
        switch (c) {
        case 'o':
            output = optarg;
            break;
        case 'n':
            no_report = 1;
            break;
        case 'f':
            format = optarg;
            break;
        case 's':
            sort = optarg;
            break;
        case 'l':
            limit = optarg;
            break;
        case 'h':
            profrun_usage(stdout);
            return 0;
        default:
            fprintf(stderr, "profrun: see profrun --help\n");
            return 2;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "profrun: no command given\n");
        profrun_usage(stderr);
        return 2;
    }
    settings_load();

    char self[PATH_MAX], lib[PATH_MAX + 32], report[PATH_MAX + 32];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        fprintf(stderr, "profrun: cannot find my own path: %s\n", strerror(errno));
        return 2;
    }
    self[n] = '\0';
    char *bindir = dirname(self);
    snprintf(lib, sizeof lib, "%s/../lib/libprof.so", bindir);
    snprintf(report, sizeof report, "%s/profreport", bindir);
    char lib_abs[PATH_MAX];
    if (!realpath(lib, lib_abs)) {
        fprintf(stderr, "profrun: cannot find libprof.so at %s: %s\n", lib, strerror(errno));
        return 2;
    }

    if (!output)
        output = settings_string(SETTING_PROF_OUTPUT_DIR);
    /* An output folder we cannot use leaves profiling off, said in one line: the program
     * runs all the same (and no report follows). */
    int profiling = 1;
    char out_abs[2 * PATH_MAX + 2];
    char why[3 * PATH_MAX];
    if (output[0] == '/') {
        snprintf(out_abs, sizeof out_abs, "%s", output);
    } else {
        char cwd[PATH_MAX];
        if (getcwd(cwd, sizeof cwd)) {
            snprintf(out_abs, sizeof out_abs, "%s/%s", cwd, output);
        } else {
            snprintf(why, sizeof why, "cannot read the working directory: %s", strerror(errno));
            profiling = 0;
        }
    }
    if (profiling) {
        /* Made 0700 (0750 shared) and refused when another user owns it: see outdir.h. */
        outdir_set_shared(settings_bool(SETTING_PROF_OUTPUT_SHARED));
        int dirfd = outdir_open(out_abs, why, sizeof why);
        if (dirfd < 0) {
            profiling = 0;
        } else {
            int writable = faccessat(dirfd, ".", W_OK | X_OK, AT_EACCESS);
            if (writable != 0)
                snprintf(why, sizeof why, "cannot write to the output folder %s: %s", out_abs,
                         strerror(errno));
            close(dirfd);
            profiling = writable == 0;
        }
    }
    if (!profiling) {
        fprintf(stderr, "profrun: %s; the program runs without profiling\n", why);
        no_report = 1;
    }

    /* A run id given (by the user, or an outer profrun) stays; inside a launch that names
     * itself (srun -n 4 profrun -- ...) every copy of profrun takes the launch's id. */
    char run_id[200];
    const char *run_from = NULL; /* NULL: keep PROF_RUN_ID_FROM as it is (unset: the user) */
    if (settings_is_set(SETTING_PROF_RUN_ID)) {
        snprintf(run_id, sizeof run_id, "%s", settings_get(SETTING_PROF_RUN_ID));
    } else if (job_run_id_from_env(run_id, sizeof run_id)[0]) {
        run_from = "job";
    } else {
        time_t now = time(NULL);
        struct tm tm;
        localtime_r(&now, &tm);
        size_t len = strftime(run_id, sizeof run_id, "%Y%m%d-%H%M%S", &tm);
        snprintf(run_id + len, sizeof run_id - len, "-%ld", (long)getpid());
        run_from = "profrun";
    }

    char program[PATH_MAX + 256];
    if (profrun_find_program(argv[optind], program, sizeof program) != 0) {
        fprintf(stderr, "profrun: cannot run %s: %s\n", argv[optind],
                strchr(argv[optind], '/') ? strerror(errno) : "not found in PATH");
        return errno == EACCES ? 126 : 127;
    }
    const char *unloadable = profiling ? profrun_unpreloadable(program) : NULL;
    if (unloadable)
        fprintf(stderr,
                "profrun: %s is %s: libprof.so cannot be loaded into it, so it is not profiled "
                "(programs it starts are)\n",
                program, unloadable);

    /* SIGINT, SIGQUIT, SIGTERM and SIGHUP sent to us reach the program (profrun_forward);
     * we wait for its end and then report. The command gets the dispositions we were
     * given: one ignored (a shell's background job, nohup) stays ignored, for it and for
     * us. */
    static const int passed[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
    struct sigaction given[4];
    for (int i = 0; i < 4; i++) {
        sigaction(passed[i], NULL, &given[i]);
        if (given[i].sa_handler == SIG_IGN)
            continue;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = profrun_forward;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        sigaction(passed[i], &sa, NULL);
    }

    /* Held back across the fork until the program's pid is known: none is lost. */
    sigset_t held, unheld;
    sigemptyset(&held);
    for (int i = 0; i < 4; i++)
        sigaddset(&held, passed[i]);
    sigprocmask(SIG_BLOCK, &held, &unheld);
    pid_t child = fork();
    if (child < 0) {
        fprintf(stderr, "profrun: fork failed: %s\n", strerror(errno));
        return 2;
    }
    if (child == 0) {
        for (int i = 0; i < 4; i++) /* a handler of ours would be SIG_DFL after exec */
            if (given[i].sa_handler == SIG_IGN)
                signal(passed[i], SIG_IGN);
            else
                signal(passed[i], SIG_DFL);
        sigprocmask(SIG_SETMASK, &unheld, NULL);
        if (profiling)
            profrun_profile_env(lib_abs, out_abs, run_id, run_from);
        else
            setenv("PROF_DISABLE", "1", 1); /* a library the user preloads stays off too */
        execvp(argv[optind], argv + optind);
        int err = errno;
        fprintf(stderr, "profrun: cannot run %s: %s\n", argv[optind], strerror(err));
        _exit(err == ENOENT ? 127 : 126);
    }
    profrun_child = child;
    sigprocmask(SIG_SETMASK, &unheld, NULL);
    int status = profrun_wait_program(child);

    if (!no_report) {
        char *rargv[16];
        int k = 0;
        rargv[k++] = report;
        rargv[k++] = "--run";
        rargv[k++] = run_id;
        if (format) {
            rargv[k++] = "--format";
            rargv[k++] = (char *)format;
        }
        if (sort) {
            rargv[k++] = "--sort";
            rargv[k++] = (char *)sort;
        }
        if (limit) {
            rargv[k++] = "--limit";
            rargv[k++] = (char *)limit;
        }
        rargv[k++] = out_abs;
        rargv[k] = NULL;
        fflush(stdout);
        pid_t rp = fork();
        if (rp == 0) {
            execv(report, rargv);
            fprintf(stderr, "profrun: cannot run %s: %s\n", report, strerror(errno));
            _exit(127);
        }
        if (rp > 0)
            profrun_report_check(profrun_wait(rp), out_abs);
    }
    return status;
}
