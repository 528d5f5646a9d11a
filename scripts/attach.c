/* profrun attach PID [--duration S | --steps N] [-o DIR] | --children-of PID: loads
 * libprof.so into running processes started without the preload (attach_inject.c), asks
 * it for the window (preload/attach.c), waits until the window closed and its records are
 * on disk, then prints the report. Refusals are said in one line before anything in the
 * target is touched. */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <linux/capability.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "attach_util.h"
#include "attach_cli.h"
#include "attach_inject.h"
#include "attach_job.h"
#include "outdir.h"
#include "settings.h"

static int attach_verbose;

/* ---- checks before touching the target ---- */

/* The same file inside the target's mount namespace (its /proc/PID/root). */
/* 1: path is the same file inside pid's mount namespace; 0: not; -1: /proc/PID/root may
 * not be looked into (the ptrace access check: another user, missing CAP_SYS_PTRACE). */
static int attach_same_file(pid_t pid, const char *path)
{
    char inside[PATH_MAX + 64];
    snprintf(inside, sizeof inside, "/proc/%d/root%s", pid, path);
    struct stat a, b;
    if (stat(path, &a) != 0)
        return 0;
    if (stat(inside, &b) != 0)
        return errno == EACCES || errno == EPERM ? -1 : 0;
    return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* The target's architecture from its executable's ELF header; NULL when it is ours. */
static const char *attach_foreign_arch(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/exe", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL; /* said later by ptrace */
    Elf64_Ehdr eh;
    ssize_t n = read(fd, &eh, sizeof eh);
    close(fd);
    if (n < (ssize_t)EI_NIDENT || memcmp(eh.e_ident, ELFMAG, SELFMAG))
        return "a program that is not ELF";
    if (eh.e_ident[EI_CLASS] != ELFCLASS64)
        return "a 32-bit program";
#ifdef __x86_64__
    if (eh.e_machine != EM_X86_64)
        return eh.e_machine == EM_AARCH64 ? "an aarch64 program"
                                          : "a program of another architecture";
#endif
    return NULL;
}

static void attach_explain_eperm(pid_t pid, char *why, size_t len);

/* Refusals that need no ptrace: 0, or 1 and why. */
static int attach_precheck(pid_t pid, const char *lib, const char *outdir, char *why, size_t len)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d", pid);
    if (pid <= 0 || access(path, F_OK) != 0) {
        attach_fail(why, len, "no process %d", pid);
        return 1;
    }
    if (pid == getpid()) {
        attach_fail(why, len, "cannot attach to profrun itself");
        return 1;
    }
#ifndef __x86_64__
    attach_fail(why, len, "profrun attach works on x86-64 only");
    return 1;
#endif
    char uid[128], tracer[32];
    if (attach_status_field(pid, "Uid", uid, sizeof uid) == 0) {
        unsigned ruid = 0, euid = 0;
        sscanf(uid, "%u %u", &ruid, &euid);
        if (geteuid() != 0 && (euid != geteuid() || ruid != geteuid())) {
            attach_fail(why, len,
                        "process %d belongs to another user (uid %u): attaching needs that "
                        "user or root (CAP_SYS_PTRACE)",
                        pid, euid);
            return 1;
        }
    }
    if (attach_status_field(pid, "TracerPid", tracer, sizeof tracer) == 0 && atoi(tracer) != 0) {
        attach_fail(why, len, "process %d is traced already by process %s (a debugger?)", pid,
                    tracer);
        return 1;
    }
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    int maps = open(path, O_RDONLY | O_CLOEXEC);
    if (maps < 0 && (errno == EACCES || errno == EPERM)) {
        attach_explain_eperm(pid, why, len);
        return 1;
    }
    if (maps >= 0)
        close(maps);
    char state[64];
    if (attach_status_field(pid, "State", state, sizeof state) == 0 &&
        (state[0] == 'T' || state[0] == 't' || state[0] == 'Z' || state[0] == 'X')) {
        attach_fail(why, len, "process %d is %s: %s", pid,
                    state[0] == 'Z' || state[0] == 'X' ? "ending" : "stopped",
                    state[0] == 'Z' || state[0] == 'X' ? "nothing to attach to"
                                                       : "continue it first (kill -CONT)");
        return 1;
    }
    /* A libprof.so of another build (preloaded from elsewhere): two profilers in one
     * process would each take the same hooks. */
    snprintf(path, sizeof path, "/proc/%d/maps", pid);
    FILE *mf = fopen(path, "re");
    char line[PATH_MAX + 256];
    while (mf && fgets(line, sizeof line, mf)) {
        char *file = strchr(line, '/');
        if (!file)
            continue;
        file[strcspn(file, "\n")] = '\0';
        const char *base = strrchr(file, '/') + 1;
        if (!strcmp(base, "libprof.so") && strcmp(file, lib)) {
            attach_fail(why, len,
                        "process %d runs with another libprof.so (%s): attach with the profrun "
                        "beside it",
                        pid, file);
            fclose(mf);
            return 1;
        }
    }
    if (mf)
        fclose(mf);
    char seccomp[16];
    if (attach_status_field(pid, "Seccomp", seccomp, sizeof seccomp) == 0 && atoi(seccomp) == 1) {
        attach_fail(why, len,
                    "process %d runs in seccomp strict mode: the system calls attach makes "
                    "in it would kill it",
                    pid);
        return 1;
    }
    const char *arch = attach_foreign_arch(pid);
    if (arch) {
        attach_fail(why, len, "process %d is %s: profrun attach supports x86-64 programs", pid,
                    arch);
        return 1;
    }
    int same = attach_same_file(pid, lib);
    if (same < 0) {
        attach_explain_eperm(pid, why, len);
        return 1;
    }
    if (!same) {
        attach_fail(why, len,
                    "%s is not the same file inside process %d's mount namespace (a container?): "
                    "put libprof.so at the same path there",
                    lib, pid);
        return 1;
    }
    if (outdir && attach_same_file(pid, outdir) != 1) {
        attach_fail(why, len,
                    "the output folder %s is not the same inside process %d's mount namespace: "
                    "use -o with a folder both see",
                    outdir, pid);
        return 1;
    }
    return 0;
}

/* EPERM from ptrace, in words: Yama forbidding all, then capabilities (the kernel lets
 * a caller without CAP_SYS_PTRACE trace only a process whose permitted capabilities are a
 * subset of its own), then Yama's other scopes. */
static void attach_explain_eperm(pid_t pid, char *why, size_t len)
{
    char scope_s[16] = "", own[64], its[64];
    int scope = attach_read_file("/proc/sys/kernel/yama/ptrace_scope", scope_s, sizeof scope_s) > 0
                    ? atoi(scope_s)
                    : 0;
    unsigned long long mine = ~0ull, theirs = 0;
    if (attach_status_field(getpid(), "CapEff", own, sizeof own) == 0 &&
        attach_status_field(pid, "CapPrm", its, sizeof its) == 0) {
        mine = strtoull(own, NULL, 16);
        theirs = strtoull(its, NULL, 16);
    }
    if (scope == 3)
        attach_fail(why, len,
                    "ptrace is not allowed: kernel.yama.ptrace_scope=3 (no process may be traced "
                    "until a reboot)");
    else if (!(mine & (1ull << CAP_SYS_PTRACE)) && (theirs & ~mine))
        attach_fail(why, len,
                    "ptrace is not allowed: profrun runs without CAP_SYS_PTRACE and process %d "
                    "holds capabilities it lacks (a container, capsh --drop): run it with "
                    "CAP_SYS_PTRACE",
                    pid);
    else if (scope > 0)
        attach_fail(why, len,
                    "ptrace is not allowed: kernel.yama.ptrace_scope=%d (run as root, or with "
                    "CAP_SYS_PTRACE, or set it to 0)",
                    scope);
    else
        attach_fail(why, len,
                    "ptrace is not allowed (EPERM): another user's process, a container "
                    "without CAP_SYS_PTRACE, or a security policy");
}

/* ---- one target ---- */

struct attach_opts {
    const char *lib, *out_abs, *run_id;
    double duration, find_timeout;
    long steps;
    pid_t only_tid;
    uint64_t start_after;           /* realtime ns: the window of every process from then on */
    char start_file[PATH_MAX + 64]; /* with start_after: the start, once every one is in */
    int step_ends;                  /* the libraries write their step ends (attach_start.c) */
};

struct attach_target {
    pid_t pid;
    int started; /* the library's window is asked for */
    int finished;
    char done[2 * PATH_MAX + 128], stop[2 * PATH_MAX + 128], ends[PATH_MAX + 96];
    char trace_dir[2 * PATH_MAX + 2], run[128];
};

static int attach_mem_read_at(int fd, uint64_t addr, void *data, size_t len)
{
    return pread(fd, data, len, (off_t)addr) == (ssize_t)len ? 0 : -1;
}

/* The output folder, made and given to the target's user (it writes there as that user). */
static int attach_prepare_outdir(pid_t pid, const char *out_abs)
{
    char why[PATH_MAX + 512];
    outdir_set_shared(settings_bool(SETTING_PROF_OUTPUT_SHARED));
    int dirfd = outdir_open(out_abs, why, sizeof why);
    if (dirfd < 0) {
        fprintf(stderr, "profrun attach: %s\n", why);
        return 2;
    }
    char uid[128];
    unsigned tuid = 0, tgid = 0;
    if (geteuid() == 0 && attach_status_field(pid, "Uid", uid, sizeof uid) == 0 &&
        sscanf(uid, "%*u %u", &tuid) == 1 && tuid != 0) {
        char gid[128];
        if (attach_status_field(pid, "Gid", gid, sizeof gid) == 0)
            sscanf(gid, "%*u %u", &tgid);
        if (fchown(dirfd, tuid, tgid) != 0) {
            fprintf(stderr, "profrun attach: cannot give %s to uid %u: %s\n", out_abs, tuid,
                    strerror(errno));
            close(dirfd);
            return 2;
        }
    }
    close(dirfd);
    return 0;
}

/* The settings block: the PROF_* settings of this environment, ours, attach.* keys. */
static void attach_settings(const struct attach_opts *o, const struct attach_target *t,
                            char *settings, size_t size)
{
    size_t used = 0;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(settings + used, size - used, __VA_ARGS__);                              \
        if (w_ > 0 && (size_t)w_ < size - used)                                                    \
            used += (size_t)w_;                                                                    \
    } while (0)
    settings[0] = '\0';
    for (int i = 0; i < SETTING_COUNT; i++) {
        if (i == SETTING_PROF_OUTPUT_DIR || i == SETTING_PROF_RUN_ID ||
            i == SETTING_PROF_RUN_ID_FROM || i == SETTING_PROF_STEPS || i == SETTING_PROF_DELAY ||
            i == SETTING_PROF_DURATION || i == SETTING_PROF_WINDOW_SIGNAL ||
            i == SETTING_PROF_SIGNALS || !settings_is_set(i))
            continue;
        ADD("%s=%s\n", settings_table[i].name, settings_get(i));
    }
    /* PROF_SIGNALS=0: the program's signal dispositions stay as they are */
    ADD("PROF_OUTPUT_DIR=%s\nPROF_RUN_ID=%s\nPROF_RUN_ID_FROM=profrun\nPROF_LIB=%s\n"
        "PROF_SIGNALS=0\n",
        o->out_abs, o->run_id, o->lib);
    if (o->duration > 0)
        ADD("attach.duration=%.9g\n", o->duration);
    if (o->steps > 0)
        ADD("attach.steps=%ld\n", o->steps);
    if (o->start_after)
        ADD("attach.start_after=%llu\nattach.start=%s\n", (unsigned long long)o->start_after,
            o->start_file);
    if (o->step_ends)
        ADD("attach.step_ends=%s\n", t->ends);
    ADD("attach.attacher=%d\nattach.done=%s\nattach.stop=%s\n", getpid(), t->done, t->stop);
#undef ADD
}

/* Checks, injection, prof_attach_start's answer. 0: recording is asked for; 1: refused
 * or failed (said); 2: a local error (said). */
static int attach_one(const struct attach_opts *o, struct attach_target *t)
{
    pid_t pid = t->pid;
    char why[PATH_MAX + 512];
    if (attach_precheck(pid, o->lib, NULL, why, sizeof why) != 0) {
        fprintf(stderr, "profrun attach: %s\n", why);
        return 1;
    }
    int rc = attach_prepare_outdir(pid, o->out_abs);
    if (rc)
        return rc;
    if (attach_precheck(pid, o->lib, o->out_abs, why, sizeof why) != 0) {
        fprintf(stderr, "profrun attach: %s\n", why);
        return 1;
    }
    snprintf(t->done, sizeof t->done, "%s/.profrun-attach-%d-%d.done", o->out_abs, pid, getpid());
    snprintf(t->stop, sizeof t->stop, "%s/.profrun-attach-%d-%d.stop", o->out_abs, pid, getpid());
    unlink(t->done);
    unlink(t->stop);
    static char settings[D_SIZE - D_SETTINGS];
    attach_settings(o, t, settings, sizeof settings);

    struct attach_result res;
    uint64_t t0 = attach_now_ns();
    if (attach_run_injector(pid, o->lib, settings, (int)(o->find_timeout * 1000), o->only_tid,
                            &res) != 0) {
        fprintf(stderr, "profrun attach: cannot start the injector: %s\n", strerror(errno));
        return 2;
    }
    if (res.rc != 0) {
        if (strstr(res.why, "PTRACE_SEIZE") && strstr(res.why, strerror(EPERM)))
            attach_explain_eperm(pid, res.why, sizeof res.why);
        fprintf(stderr, "profrun attach: %s\n", res.why);
        return 1;
    }
    uint64_t t_injected = attach_now_ns();
    if (attach_verbose)
        fprintf(stderr, "profrun attach: thread %d (in syscall %ld) stopped for %.3f ms\n",
                res.timing.tid, res.timing.nr, res.timing.stopped_ns / 1e6);

    /* The library's thread: dlopen, prof_attach_start (a PyTorch bridge may be built). */
    char mem[64];
    snprintf(mem, sizeof mem, "/proc/%d/mem", pid);
    int fd = open(mem, O_RDONLY | O_CLOEXEC);
    uint32_t state = 0;
    uint64_t until = attach_now_ns() + 300ull * 1000000000u;
    int said = 0;
    while (fd >= 0 && attach_now_ns() < until) {
        if (attach_mem_read_at(fd, res.data + D_DONE, &state, sizeof state) != 0 || state)
            break;
        if (!said && attach_now_ns() - t_injected > 3000000000ull) {
            said = 1;
            fprintf(stderr,
                    "profrun attach: libprof.so is starting in process %d (the first time, its "
                    "PyTorch bridge is built: a minute or so)\n",
                    pid);
        }
        attach_sleep_us(200);
    }
    if (state == 0) {
        if (kill(pid, 0) != 0 && errno == ESRCH)
            fprintf(stderr, "profrun attach: process %d ended while libprof.so was loading\n", pid);
        else
            fprintf(stderr, "profrun attach: libprof.so did not start in process %d within 300 s\n",
                    pid);
        if (fd >= 0)
            close(fd);
        return 1;
    }
    if (state != 1) {
        uint64_t err_ptr = 0;
        char err[256] = "unknown error";
        attach_mem_read_at(fd, res.data + D_DLERROR, &err_ptr, sizeof err_ptr);
        size_t i = 0; /* byte by byte: the string may end near the end of a mapping */
        while (err_ptr && i < sizeof err - 1 &&
               attach_mem_read_at(fd, err_ptr + i, err + i, 1) == 0 && err[i])
            i++;
        if (err_ptr)
            err[i] = '\0';
        fprintf(stderr, "profrun attach: %s in process %d failed: %s\n",
                state == 2 ? "dlopen" : "dlsym", pid, err);
        close(fd);
        return 1;
    }
    int32_t start_rc = 0;
    char msg[D_MSG_LEN];
    attach_mem_read_at(fd, res.data + D_START_RC, &start_rc, sizeof start_rc);
    attach_mem_read_at(fd, res.data + D_MSG, msg, sizeof msg);
    close(fd);
    msg[sizeof msg - 1] = '\0';
    if (start_rc != 0) {
        fprintf(stderr, "profrun attach: process %d: %s\n", pid, msg);
        return 1;
    }
    uint64_t t_started = attach_now_ns();
    char *tab = strchr(msg, '\t');
    snprintf(t->trace_dir, sizeof t->trace_dir, "%s", o->out_abs);
    snprintf(t->run, sizeof t->run, "%s", o->run_id);
    if (tab) {
        *tab = '\0';
        snprintf(t->trace_dir, sizeof t->trace_dir, "%s", msg);
        snprintf(t->run, sizeof t->run, "%s", tab + 1);
    }
    if (attach_verbose)
        fprintf(stderr, "profrun attach: injected in %.3f ms, library started in %.3f ms\n",
                (t_injected - t0) / 1e6, (t_started - t0) / 1e6);
    fprintf(stderr, "profrun attach: recording process %d %s; traces in %s\n", pid,
            o->duration > 0 ? "for the duration asked"
                            : (o->steps > 0 ? "for the steps asked" : "until Ctrl-C"),
            t->trace_dir);
    t->started = 1;
    return 0;
}

static volatile sig_atomic_t attach_interrupted;

static void attach_on_sigint(int sig)
{
    (void)sig;
    attach_interrupted = 1;
}

/* ---- the command ---- */

static void attach_usage(FILE *out)
{
    fprintf(out,
            "usage: profrun attach [options] PID\n"
            "       profrun attach [options] --children-of PID | --slurm-job JOBID\n"
            "Loads libprof.so into running process PID (started without profrun), records\n"
            "for S seconds, for N optimizer steps from the next step's end, or until Ctrl-C,\n"
            "then prints the report. Attaching again later reuses the loaded library. A\n"
            "process started under profrun with its window closed (PROF_WINDOW_SIGNAL,\n"
            "PROF_DELAY) is attached the same way: its window opens.\n"
            "Recorded after attach: Python calls, PyTorch ops, GPU activity (CUPTI); not the\n"
            "CUDA runtime/cuBLAS/cuDNN/NCCL/MPI call wrappers (the program's calls are bound\n"
            "already). x86-64, glibc programs; needs ptrace rights over PID.\n\n"
            "  -d, --duration S   seconds to record\n"
            "  -s, --steps N      optimizer steps to record (from the end of the step under way)\n"
            "  -o, --output DIR   folder for the trace (default ./prof-out)\n"
            "      --children-of PID  every child process of PID (torchrun's or mpirun's ranks\n"
            "                     on this node): one run, one report\n"
            "      --slurm-job ID every rank of a running Slurm job, through srun --overlap on\n"
            "                     each of its nodes (the traces folder must be shared)\n"
            "      --job ID       the ranks of Slurm job ID on this node (what --slurm-job runs)\n"
            "      --timeout S    how long to look for a thread that can be stopped (default 10)\n"
            "      --tid TID      stop only this thread of PID (when it waits in a system call)\n"
            "      --no-report    do not print the report\n"
            "  -v, --verbose      say which thread was stopped, and for how long\n");
}

int attach_main(int argc, char **argv)
{
    char self[PATH_MAX], lib[PATH_MAX + 32], lib_abs[PATH_MAX], report[PATH_MAX + 32];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sn <= 0) {
        fprintf(stderr, "profrun attach: cannot find my own path: %s\n", strerror(errno));
        return 2;
    }
    self[sn] = '\0';
    *strrchr(self, '/') = '\0';
    snprintf(lib, sizeof lib, "%s/../lib/libprof.so", self);
    snprintf(report, sizeof report, "%s/profreport", self);
    if (!realpath(lib, lib_abs)) {
        fprintf(stderr, "profrun attach: cannot find libprof.so at %s: %s\n", lib, strerror(errno));
        return 2;
    }
    struct attach_opts o = {.lib = lib_abs, .duration = -1, .find_timeout = 10};
    const char *output = NULL;
    int no_report = 0;
    pid_t children_of = 0;
    const char *slurm_job = NULL, *job = NULL, *given_run = NULL;
    char *pass[8]; /* options passed on to each node's profrun attach (--slurm-job) */
    int npass = 0;
    static const struct option opts[] = {{"duration", required_argument, NULL, 'd'},
                                         {"steps", required_argument, NULL, 's'},
                                         {"output", required_argument, NULL, 'o'},
                                         {"timeout", required_argument, NULL, 't'},
                                         {"no-report", no_argument, NULL, 'n'},
                                         {"tid", required_argument, NULL, 'T'},
                                         {"children-of", required_argument, NULL, 'C'},
                                         {"slurm-job", required_argument, NULL, 'S'},
                                         {"job", required_argument, NULL, 'J'},
                                         {"run-id", required_argument, NULL, 'R'},
                                         {"start-at", required_argument, NULL, 'A'},
                                         {"verbose", no_argument, NULL, 'v'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "d:s:o:vh", opts, NULL)) != -1) {
        char *end;
        switch (c) {
        case 'd':
            if (npass < 7) {
                pass[npass++] = "--duration";
                pass[npass++] = optarg;
            }
            o.duration = strtod(optarg, &end);
            if (*end || !(o.duration > 0)) {
                fprintf(stderr, "profrun attach: --duration %s is not a number of seconds > 0\n",
                        optarg);
                return 2;
            }
            break;
        case 's':
            if (npass < 7) {
                pass[npass++] = "--steps";
                pass[npass++] = optarg;
            }
            o.steps = strtol(optarg, &end, 10);
            if (*end || o.steps <= 0) {
                fprintf(stderr, "profrun attach: --steps %s is not a whole number > 0\n", optarg);
                return 2;
            }
            break;
        case 'o':
            output = optarg;
            break;
        case 't':
            o.find_timeout = strtod(optarg, &end);
            if (*end || !(o.find_timeout > 0))
                o.find_timeout = 10;
            break;
        case 'n':
            no_report = 1;
            break;
        case 'T':
            o.only_tid = (pid_t)atoi(optarg);
            break;
        case 'C':
            children_of = (pid_t)strtol(optarg, &end, 10);
            if (*end || children_of <= 0) {
                fprintf(stderr, "profrun attach: --children-of %s is not a process id\n", optarg);
                return 2;
            }
            break;
        case 'S':
            slurm_job = optarg;
            break;
        case 'J':
            job = optarg;
            break;
        case 'R':
            given_run = optarg;
            break;
        case 'A':
            o.start_after = strtoull(optarg, NULL, 10);
            break;
        case 'v':
            attach_verbose = 1;
            if (npass < 8)
                pass[npass++] = "-v";
            break;
        case 'h':
            attach_usage(stdout);
            return 0;
        default:
            fprintf(stderr, "profrun attach: see profrun attach --help\n");
            return 2;
        }
    }
    if (optind != argc - (children_of || slurm_job || job ? 0 : 1)) {
        attach_usage(stderr);
        return 2;
    }
    if (o.duration > 0 && o.steps > 0) {
        fprintf(stderr, "profrun attach: --duration and --steps: one or the other\n");
        return 2;
    }
    static pid_t pids[1024];
    int npids = 0;
    if (job) {
        npids = attach_job_ranks(job, pids, 1024);
        if (npids <= 0) {
            fprintf(stderr, "profrun attach: no process of Slurm job %s on this node\n", job);
            return 1;
        }
    } else if (slurm_job) {
        npids = 0;
    } else if (children_of) {
        npids = attach_children(children_of, pids, 1024);
        if (npids <= 0) {
            fprintf(stderr, "profrun attach: process %d has no child process to attach to\n",
                    children_of);
            return 1;
        }
    } else {
        char *end;
        long lpid = strtol(argv[optind], &end, 10);
        if (*end || lpid <= 0 || lpid > INT32_MAX) {
            fprintf(stderr, "profrun attach: %s is not a process id\n", argv[optind]);
            return 2;
        }
        pids[npids++] = (pid_t)lpid;
    }
    settings_load();
    if (!output)
        output = settings_string(SETTING_PROF_OUTPUT_DIR);
    char out_abs[2 * PATH_MAX + 2];
    if (output[0] == '/') {
        snprintf(out_abs, sizeof out_abs, "%s", output);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof cwd)) {
            fprintf(stderr, "profrun attach: cannot read the working directory: %s\n",
                    strerror(errno));
            return 2;
        }
        snprintf(out_abs, sizeof out_abs, "%s/%s", cwd, output);
    }
    o.out_abs = out_abs;
    /* one run id for every process attached now: one job in the report */
    char run_id[64];
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    size_t len = strftime(run_id, sizeof run_id, "attach-%Y%m%d-%H%M%S", &tm);
    if (slurm_job)
        snprintf(run_id + len, sizeof run_id - len, "-job%s", slurm_job);
    else
        snprintf(run_id + len, sizeof run_id - len, "-%d", children_of ? children_of : pids[0]);
    o.run_id = given_run ? given_run : run_id;
    /* Several processes: their windows open together, from a time after the last attach
     * (at the first step boundary after it, with --steps: the same step in every rank). */
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    uint64_t real_now = (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec;
    if (!o.start_after && slurm_job)
        o.start_after = real_now + 8000000000ull; /* srun's start, then each node's attaches */
    else if (!o.start_after && npids > 1)
        o.start_after = real_now + 500000000ull + (uint64_t)npids * 300000000ull;
    snprintf(o.start_file, sizeof o.start_file, "%s/.profrun-attach-%d.start", o.out_abs, getpid());
    unlink(o.start_file);
    /* --steps over several processes: the start between two of their steps, from the step
     * ends they write (attach_start.c; the start file says when, start_after a fall-back) */
    uint64_t fall_back = o.start_after;
    o.step_ends = o.steps > 0 && npids > 1 && !slurm_job;
    o.start_after = o.step_ends ? 1 : o.start_after;

    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = attach_on_sigint;
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (slurm_job) {
        struct sigaction sj;
        memset(&sj, 0, sizeof sj);
        sj.sa_handler = attach_on_sigint;
        sigaction(SIGINT, &sj, NULL);
        sigaction(SIGTERM, &sj, NULL);
        return attach_slurm(slurm_job, o.run_id, o.out_abs, o.start_after, report, no_report, pass,
                            npass, &attach_interrupted);
    }
    static struct attach_target targets[1024];
    int started = 0, worst = 0;
    for (int i = 0; i < npids && !attach_interrupted; i++) {
        targets[i].pid = pids[i];
        snprintf(targets[i].ends, sizeof targets[i].ends, "%s.ends.%d", o.start_file, pids[i]);
        unlink(targets[i].ends);
        int rc = attach_one(&o, &targets[i]);
        if (rc > worst)
            worst = rc;
        started += rc == 0;
    }
    if (!started)
        return worst ? worst : 1;
    if (started < npids)
        fprintf(stderr, "profrun attach: %d of %d processes are recorded\n", started, npids);
    const char *ends[1024];
    int nends = 0;
    for (int i = 0; i < npids; i++)
        if (o.step_ends && targets[i].started)
            ends[nends++] = targets[i].ends;
    if (o.start_after)
        attach_start_now(o.start_file, fall_back, ends, nends, &attach_interrupted);

    /* Until each library says its window closed and its records are on disk. */
    uint64_t stop_at = 0, started_at = attach_now_ns();
    if (o.steps > 0)
        fprintf(stderr, "profrun attach: waiting for %ld steps (Ctrl-C to stop earlier)\n",
                o.steps);
    for (;;) {
        int waiting = 0;
        for (int i = 0; i < npids; i++) {
            struct attach_target *t = &targets[i];
            if (!t->started || t->finished)
                continue;
            if (access(t->done, F_OK) == 0) {
                t->finished = 1;
                fprintf(stderr, "profrun attach: window closed; process %d goes on unrecorded\n",
                        t->pid);
            } else if (kill(t->pid, 0) != 0 && errno == ESRCH) {
                t->finished = 1;
                fprintf(stderr,
                        "profrun attach: process %d ended; its trace was written at its exit\n",
                        t->pid);
            } else {
                waiting++;
            }
        }
        if (!waiting)
            break;
        if (o.duration > 0 && !stop_at &&
            attach_now_ns() - started_at > (uint64_t)((o.duration + 30) * 1e9)) {
            fprintf(stderr,
                    "profrun attach: %d processes did not close their window %.0f s "
                    "after it should have; reporting what is on disk\n",
                    waiting, 30.0);
            break;
        }
        if (attach_interrupted && !stop_at) {
            for (int i = 0; i < npids; i++) {
                int fd = targets[i].started
                             ? open(targets[i].stop, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)
                             : -1;
                if (fd >= 0)
                    close(fd);
            }
            stop_at = attach_now_ns();
        }
        if (stop_at && attach_now_ns() - stop_at > 10ull * 1000000000u) {
            fprintf(stderr, "profrun attach: %d processes did not close their window within 10 s\n",
                    waiting);
            break;
        }
        attach_sleep_us(10000);
    }
    const struct attach_target *first = NULL;
    for (int i = 0; i < npids; i++) {
        if (targets[i].started) {
            unlink(targets[i].done);
            unlink(targets[i].stop);
            unlink(targets[i].ends);
            unlink(o.start_file);
            if (!first)
                first = &targets[i];
        }
    }
    if (no_report)
        return 0;
    /* Every trace of the run: one report (processes attached before keep their run). */
    char *rargv[1024 + 8];
    int k = 0;
    rargv[k++] = report;
    rargv[k++] = "--run";
    rargv[k++] = (char *)first->run;
    int dirs = 0;
    for (int i = 0; i < npids; i++) {
        if (!targets[i].started)
            continue;
        int seen = 0;
        for (int j = 0; j < i; j++)
            seen |= targets[j].started && !strcmp(targets[j].trace_dir, targets[i].trace_dir);
        if (!seen && !strcmp(targets[i].run, first->run)) {
            rargv[k++] = targets[i].trace_dir;
            dirs++;
        }
    }
    rargv[k] = NULL;
    fflush(stdout);
    pid_t rp = fork();
    if (rp == 0) {
        execv(report, rargv);
        fprintf(stderr, "profrun: cannot run %s: %s\n", report, strerror(errno));
        _exit(127);
    }
    int st = 0;
    if (rp > 0)
        waitpid(rp, &st, 0);
    (void)dirs;
    return started < npids ? 1 : 0;
}
