#include "settings.h"

#include <stdlib.h>
#include <string.h>

const struct prof_setting_info settings_table[SETTING_COUNT] = {
#define PROF_SETTING(name, def, meaning) {#name, def, meaning},
#include "settings.def"
#undef PROF_SETTING
};

static const char *settings_values[SETTING_COUNT];
static int settings_set[SETTING_COUNT];

void settings_load(void)
{
    for (int i = 0; i < SETTING_COUNT; i++) {
        const char *v = getenv(settings_table[i].name);
        settings_set[i] = v != NULL && v[0] != '\0';
        settings_values[i] = settings_set[i] ? v : settings_table[i].default_value;
    }
}

const char *settings_get(enum prof_setting_id id)
{
    return settings_values[id] ? settings_values[id] : settings_table[id].default_value;
}

long settings_get_long(enum prof_setting_id id, long min, long max)
{
    char *end;
    long v = strtol(settings_get(id), &end, 10);
    if (*end != '\0')
        v = strtol(settings_table[id].default_value, NULL, 10);
    if (v < min)
        v = min;
    if (v > max)
        v = max;
    return v;
}

int settings_is_set(enum prof_setting_id id)
{
    return settings_set[id];
}

void settings_export(enum prof_setting_id id, const char *value)
{
    setenv(settings_table[id].name, value, 1);
    /* getenv's pointer stays valid until the variable is set again. */
    settings_values[id] = getenv(settings_table[id].name);
    settings_set[id] = 1;
}

static long settings_first_number(const char *const names[])
{
    for (int i = 0; names[i]; i++) {
        const char *v = getenv(names[i]);
        char *end;
        if (v && *v) {
            long n = strtol(v, &end, 10);
            if (*end == '\0' && n >= 0)
                return n;
        }
    }
    return -1;
}

void settings_rank(struct prof_rank_info *out)
{
    static const char *const rank[] = {"RANK",      "OMPI_COMM_WORLD_RANK", "PMI_RANK",
                                       "PMIX_RANK", "SLURM_PROCID",         NULL};
    static const char *const local[] = {"LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_RANK",
                                        "MPI_LOCALRANKID", "SLURM_LOCALID", NULL};
    static const char *const world[] = {"WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "PMI_SIZE",
                                        "SLURM_NTASKS", NULL};
    out->rank = settings_first_number(rank);
    out->local_rank = settings_first_number(local);
    out->world_size = settings_first_number(world);
}

const char *const settings_recorded_env[] = {"CUDA_VISIBLE_DEVICES",
                                             "CUDA_LAUNCH_BLOCKING",
                                             "OMP_NUM_THREADS",
                                             "PYTHONPATH",
                                             "SLURM_JOB_ID",
                                             "MASTER_ADDR",
                                             NULL};

const char *settings_env(const char *name)
{
    return getenv(name);
}

void settings_print_help(FILE *out)
{
    fprintf(out, "Environment (inherited by every process of the run):\n");
    for (int i = 0; i < SETTING_COUNT; i++)
        fprintf(out, "  %-16s default %-10s %s\n", settings_table[i].name,
                settings_table[i].default_value[0] ? settings_table[i].default_value : "(unset)",
                settings_table[i].meaning);
}
