/* profrun attach: which processes to attach to when given a job rather than a PID: the
 * children of a launcher (--children-of), the ranks of a Slurm job on this node (--job),
 * and every node of a Slurm job through srun (--slurm-job). */
#define _GNU_SOURCE
#include "attach_util.h"
#include "attach_job.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The children of a process (the ranks under a torchrun agent or mpirun on this node). */
int attach_children(pid_t parent, pid_t *out, int max)
{
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) && n < max) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        char path[64], buf[1024];
        snprintf(path, sizeof path, "/proc/%.16s/stat", e->d_name);
        if (attach_read_file(path, buf, sizeof buf) <= 0)
            continue;
        char *rp = strrchr(buf, ')'); /* the command may hold spaces and ')' */
        int ppid = 0;
        if (rp && sscanf(rp + 1, " %*c %d", &ppid) == 1 && ppid == parent)
            out[n++] = atoi(e->d_name);
    }
    closedir(d);
    return n;
}

/* The value of NAME in a process's environment (its start), or NULL. */
static const char *attach_environ(const char *env, size_t len, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < len; i += strlen(env + i) + 1)
        if (!strncmp(env + i, name, nl) && env[i + nl] == '=')
            return env + i + nl + 1;
    return NULL;
}

/* The ranks of Slurm job `job` on this node: processes with SLURM_JOB_ID=job (not of our
 * own job step, not srun or slurmstepd); those with RANK (torchrun's workers) when there
 * are, else the job step's tasks; never a child of one already chosen (DataLoader
 * workers inherit the environment). */
int attach_job_ranks(const char *job, pid_t *out, int max)
{
    static pid_t pid[4096], ppid[4096];
    static char has_rank[4096];
    int n = 0;
    const char *my_step = getenv("SLURM_STEP_ID");
    DIR *d = opendir("/proc");
    if (!d)
        return -1;
    struct dirent *e;
    static char env[65536];
    while ((e = readdir(d)) && n < 4096) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || atoi(e->d_name) == getpid())
            continue;
        char path[64], comm[64], stat[1024];
        snprintf(path, sizeof path, "/proc/%.16s/comm", e->d_name);
        if (attach_read_file(path, comm, sizeof comm) <= 0 || !strncmp(comm, "srun", 4) ||
            !strncmp(comm, "slurmstepd", 10))
            continue;
        snprintf(path, sizeof path, "/proc/%.16s/environ", e->d_name);
        int len = attach_read_file(path, env, sizeof env);
        if (len <= 0)
            continue;
        const char *j = attach_environ(env, (size_t)len, "SLURM_JOB_ID");
        const char *step = attach_environ(env, (size_t)len, "SLURM_STEP_ID");
        if (!j || strcmp(j, job) || !attach_environ(env, (size_t)len, "SLURM_PROCID") ||
            (my_step && step && !strcmp(step, my_step)))
            continue;
        snprintf(path, sizeof path, "/proc/%.16s/stat", e->d_name);
        char *rp = attach_read_file(path, stat, sizeof stat) > 0 ? strrchr(stat, ')') : NULL;
        int pp = 0;
        if (!rp || sscanf(rp + 1, " %*c %d", &pp) != 1)
            continue;
        pid[n] = atoi(e->d_name);
        ppid[n] = pp;
        has_rank[n++] = attach_environ(env, (size_t)len, "RANK") != NULL;
    }
    closedir(d);
    int any_rank = 0;
    for (int i = 0; i < n; i++)
        any_rank |= has_rank[i];
    int k = 0;
    for (int i = 0; i < n && k < max; i++) {
        if (any_rank && !has_rank[i])
            continue;
        int child = 0;
        for (int m = 0; m < n; m++)
            child |= ppid[i] == pid[m] && (!any_rank || has_rank[m]);
        if (!child)
            out[k++] = pid[i];
    }
    return k;
}

/* profrun attach --slurm-job JOBID: one `profrun attach --job JOBID` per node of the job
 * through srun --overlap, all with one run id and one start time; then one report. */
int attach_slurm(const char *job, const char *run_id, const char *out_abs, uint64_t start_after,
                 const char *report, int no_report, char **pass, int npass,
                 volatile sig_atomic_t *interrupted)
{
    char cmd[256], nodes[64] = "";
    snprintf(cmd, sizeof cmd, "squeue -h -j '%s' -o %%D 2>/dev/null", job);
    for (const char *c = job; *c; c++)
        if (*c < '0' || *c > '9') {
            fprintf(stderr, "profrun attach: --slurm-job %s is not a job id\n", job);
            return 2;
        }
    FILE *f = popen(cmd, "r");
    if (!f || !fgets(nodes, sizeof nodes, f) || atoi(nodes) <= 0) {
        if (f)
            pclose(f);
        fprintf(stderr, "profrun attach: Slurm job %s is not running (squeue)\n", job);
        return 1;
    }
    pclose(f);
    nodes[strcspn(nodes, "\n")] = '\0';
    char self[PATH_MAX];
    ssize_t sn = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sn <= 0)
        return 2;
    self[sn] = '\0';
    char jobid[80], nflag[80], start[64];
    snprintf(jobid, sizeof jobid, "--jobid=%s", job);
    snprintf(nflag, sizeof nflag, "--nodes=%s", nodes);
    snprintf(start, sizeof start, "%llu", (unsigned long long)start_after);
    char *argv[64];
    int k = 0;
    argv[k++] = "srun";
    argv[k++] = jobid;
    argv[k++] = "--overlap";
    argv[k++] = nflag;
    argv[k++] = "--ntasks-per-node=1";
    argv[k++] = self;
    argv[k++] = "attach";
    argv[k++] = "--job";
    argv[k++] = (char *)job;
    argv[k++] = "--run-id";
    argv[k++] = (char *)run_id;
    argv[k++] = "--start-at";
    argv[k++] = start;
    argv[k++] = "-o";
    argv[k++] = (char *)out_abs;
    argv[k++] = "--no-report";
    for (int i = 0; i < npass && k < 60; i++)
        argv[k++] = pass[i];
    argv[k] = NULL;
    pid_t child = fork();
    if (child == 0) {
        execvp("srun", argv);
        fprintf(stderr, "profrun attach: cannot run srun: %s\n", strerror(errno));
        _exit(127);
    }
    int st = 0, forwarded = 0;
    while (waitpid(child, &st, 0) < 0) {
        if (errno != EINTR)
            break;
        if (*interrupted && !forwarded) { /* srun passes SIGTERM on to the tasks */
            kill(child, SIGTERM);
            forwarded = 1;
        }
    }
    int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    if (no_report)
        return rc;
    pid_t rp = fork();
    if (rp == 0) {
        execl(report, report, "--run", run_id, out_abs, (char *)NULL);
        _exit(127);
    }
    if (rp > 0)
        waitpid(rp, &st, 0);
    return rc;
}
