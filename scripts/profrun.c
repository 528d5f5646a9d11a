/* profrun [options] [--] CMD ARGS...: runs CMD with libprof.so preloaded into it and
 * every process it starts, then prints the report. Exits with CMD's status (128+signal
 * when a signal ended it). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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
            "  -h, --help         this help\n\n");
    settings_print_help(out);
    fprintf(out, "\nOffline: profreport DIR (see profreport --help).\n");
}

static pid_t profrun_child;

static void profrun_forward(int sig)
{
    if (profrun_child > 0)
        kill(profrun_child, sig);
}

static int profrun_wait(pid_t pid)
{
    int status;
    while (waitpid(pid, &status, 0) < 0) {
        if (errno != EINTR)
            return 127;
    }
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 127;
}

int main(int argc, char **argv)
{
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
    char out_abs[2 * PATH_MAX + 2];
    if (output[0] == '/') {
        snprintf(out_abs, sizeof out_abs, "%s", output);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "profrun: cannot read the working directory: %s\n", strerror(errno));
            return 2;
        }
        snprintf(out_abs, sizeof out_abs, "%s/%s", cwd, output);
    }
    /* Made 0700 (0750 shared) and refused when another user owns it: see outdir.h. */
    outdir_set_shared(settings_bool(SETTING_PROF_OUTPUT_SHARED));
    char why[PATH_MAX + 256];
    int dirfd = outdir_open(out_abs, why, sizeof why);
    if (dirfd < 0) {
        fprintf(stderr, "profrun: %s\n", why);
        return 2;
    }
    int writable = faccessat(dirfd, ".", W_OK | X_OK, AT_EACCESS);
    close(dirfd);
    if (writable != 0) {
        fprintf(stderr, "profrun: cannot write to the output folder %s: %s\n", out_abs,
                strerror(errno));
        return 2;
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

    /* Like system(): the terminal's SIGINT/SIGQUIT reach the command directly; we wait
     * for it and then report. SIGTERM/SIGHUP sent to us are passed on. The command gets
     * the dispositions we were given: one ignored (a shell's background job, nohup) stays
     * ignored, for it and for us. */
    static const int passed[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP};
    struct sigaction given[4];
    for (int i = 0; i < 4; i++)
        sigaction(passed[i], NULL, &given[i]);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    if (given[2].sa_handler != SIG_IGN)
        signal(SIGTERM, profrun_forward);
    if (given[3].sa_handler != SIG_IGN)
        signal(SIGHUP, profrun_forward);

    profrun_child = fork();
    if (profrun_child < 0) {
        fprintf(stderr, "profrun: fork failed: %s\n", strerror(errno));
        return 2;
    }
    if (profrun_child == 0) {
        for (int i = 0; i < 4; i++) /* a handler of ours would be SIG_DFL after exec */
            if (given[i].sa_handler == SIG_IGN)
                signal(passed[i], SIG_IGN);
            else
                signal(passed[i], SIG_DFL);
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
        execvp(argv[optind], argv + optind);
        int err = errno;
        fprintf(stderr, "profrun: cannot run %s: %s\n", argv[optind], strerror(err));
        _exit(err == ENOENT ? 127 : 126);
    }
    int status = profrun_wait(profrun_child);

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
            profrun_wait(rp);
    }
    return status;
}
