/* Settings from the PROF_* environment table (settings.def) and the launcher's rank
 * variables. Read once at load; read-only afterwards. */
#ifndef PROF_SETTINGS_H
#define PROF_SETTINGS_H

#include <stdio.h>

enum prof_setting_id {
#define PROF_SETTING(name, def, meaning) SETTING_##name,
#include "settings.def"
#undef PROF_SETTING
    SETTING_COUNT
};

struct prof_setting_info {
    const char *name;
    const char *default_value;
    const char *meaning;
};

extern const struct prof_setting_info settings_table[SETTING_COUNT];

/* Reads the environment into the table's values. */
void settings_load(void);
/* The current value (the default when unset); never NULL. */
const char *settings_get(enum prof_setting_id id);
long settings_get_long(enum prof_setting_id id, long min, long max);
/* Whether the variable was set in the environment at load. */
int settings_is_set(enum prof_setting_id id);
/* Sets a value for this process and exports it to children. */
void settings_export(enum prof_setting_id id, const char *value);

/* Rank of this process from the launcher (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK,
 * SLURM_PROCID), or -1. local_rank and world_size likewise. */
struct prof_rank_info {
    long rank, local_rank, world_size;
};
void settings_rank(struct prof_rank_info *out);

/* The environment variables worth recording in a trace, as "NAME" strings. */
extern const char *const settings_recorded_env[];
const char *settings_env(const char *name);

/* Prints the table for --help. */
void settings_print_help(FILE *out);

#endif
