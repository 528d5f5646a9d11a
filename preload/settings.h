/* Settings from the PROF_* environment table (settings.def) and the launcher's rank
 * variables. Read and checked once at load; read-only afterwards. */
#ifndef PROF_SETTINGS_H
#define PROF_SETTINGS_H

#include <stdio.h>

enum prof_setting_id {
#define PROF_SETTING(name, type, def, min, max, meaning) SETTING_##name,
#include "settings.def"
#undef PROF_SETTING
    SETTING_COUNT
};

enum prof_setting_type { SETTING_TYPE_BOOL, SETTING_TYPE_INT, SETTING_TYPE_STRING };

struct prof_setting_info {
    const char *name;
    enum prof_setting_type type;
    const char *default_value;
    long min, max; /* INT only */
    const char *meaning;
};

extern const struct prof_setting_info settings_table[SETTING_COUNT];

/* Reads the environment into the table's values. A value its type does not accept gets
 * one message on stderr (unless PROF_QUIET) naming the variable and what it accepts;
 * the default (or, for a number out of range, the nearest bound) is then used and
 * exported, so that children do not complain again. */
void settings_load(void);
/* Where settings_load reads a variable: getenv, or (profrun attach) the settings block
 * the attacher wrote; then nothing is exported into the program's environment. */
extern const char *(*settings_lookup)(const char *name);
/* Typed values; each asserts nothing at run time but is only meant for its own type. */
int settings_bool(enum prof_setting_id id);
long settings_int(enum prof_setting_id id);
const char *settings_string(enum prof_setting_id id);
/* Whether a layer's switch is on: a BOOL that is true, or an INT that is not 0. */
int settings_on(enum prof_setting_id id);
/* The value as text (the default when unset), for passing settings on to children. */
const char *settings_get(enum prof_setting_id id);
/* Whether the variable was set in the environment at load. */
int settings_is_set(enum prof_setting_id id);
/* Sets a value for this process and exports it to children. */
void settings_export(enum prof_setting_id id, const char *value);

/* Parses a boolean as the table accepts it: 1 or 0, or -1 when it is not one. */
int settings_parse_bool(const char *text);
/* Parses seconds >= 0 written as the integer settings are, with an optional fraction
 * ("2", "0.5"; not "1e3", "0x10", " 2"): 0 and *out, or -1. */
int settings_parse_seconds(const char *text, double *out);

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
