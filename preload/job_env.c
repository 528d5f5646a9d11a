/* The launcher's id of this one launch, from the environment alone: shared by libprof.so
 * (job.c) and profrun, so that `srun -n 4 profrun -- ...` names one run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "job.h"
#include "settings.h"

static long job_env_number(const char *name)
{
    const char *v = settings_env(name);
    if (!v || !*v)
        return -1;
    char *end;
    long n = strtol(v, &end, 10);
    return *end == '\0' && n >= 0 ? n : -1;
}

/* Letters, digits, '.', '-' and '+' stay; anything else becomes '-'. */
static void job_sanitize(char *s)
{
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '.' || *s == '-' || *s == '+'))
            *s = '-';
}

char *job_run_id_from_env(char *out, size_t len)
{
    out[0] = '\0';
    const char *slurm_job = settings_env("SLURM_JOB_ID");
    long step = job_env_number("SLURM_STEP_ID");
    const char *elastic = settings_env("TORCHELASTIC_RUN_ID");
    const char *ompi = settings_env("OMPI_MCA_ess_base_jobid");
    if (!ompi || !*ompi)
        ompi = settings_env("OMPI_MCA_orte_ess_jobid");
    const char *pmix = settings_env("PMIX_NAMESPACE");
    /* Slurm's batch and extern steps (4294967294, 4294967291) are no launch of their own:
     * two profrun runs in one batch script stay two runs. */
    if (slurm_job && *slurm_job && step >= 0 && step < 4294967000L)
        snprintf(out, len, "slurm-%s.%ld", slurm_job, step);
    else if (elastic && *elastic && strcmp(elastic, "none") != 0)
        snprintf(out, len, "torchelastic-%s", elastic);
    else if (ompi && *ompi)
        snprintf(out, len, "ompi-%s", ompi);
    else if (pmix && *pmix)
        snprintf(out, len, "pmix-%s", pmix);
    job_sanitize(out);
    return out;
}
