#include "settings.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

const struct prof_setting_info settings_table[SETTING_COUNT] = {
#define PROF_SETTING(name, type, def, min, max, meaning)                                           \
    {#name, SETTING_TYPE_##type, def, min, max, meaning},
#include "settings.def"
#undef PROF_SETTING
};

static const char *settings_getenv(const char *name)
{
    return getenv(name);
}
const char *(*settings_lookup)(const char *name) = settings_getenv;

static const char *settings_values[SETTING_COUNT];
static int settings_set[SETTING_COUNT];
static int settings_bools[SETTING_COUNT];
static long settings_ints[SETTING_COUNT];

#define SETTINGS_BOOL_WORDS "1/0, true/false, yes/no, on/off (any case)"

int settings_parse_bool(const char *text)
{
    static const char *const yes[] = {"1", "true", "yes", "on"};
    static const char *const no[] = {"0", "false", "no", "off"};
    for (size_t i = 0; i < sizeof yes / sizeof yes[0]; i++) {
        if (strcasecmp(text, yes[i]) == 0)
            return 1;
        if (strcasecmp(text, no[i]) == 0)
            return 0;
    }
    return -1;
}

/* The one way numbers are written in settings: an optional '-', decimal digits and, where
 * fraction allows, a '.' and more digits. No spaces, '+', hex, exponent, inf or nan: what
 * one setting refuses, no other accepts. */
static int settings_number_text(const char *text, int fraction)
{
    const char *p = text + (text[0] == '-');
    size_t digits = strspn(p, "0123456789");
    p += digits;
    if (fraction && *p == '.') {
        size_t more = strspn(p + 1, "0123456789");
        digits += more;
        p += 1 + more;
    }
    return digits > 0 && *p == '\0';
}

int settings_parse_seconds(const char *text, double *out)
{
    if (!settings_number_text(text, 1) || text[0] == '-')
        return -1;
    *out = strtod(text, NULL);
    return 0;
}

/* 0 and the number in *out, 1 when it had to be clamped, -1 when text is no number. */
static int settings_parse_int(const char *text, long min, long max, long *out)
{
    if (!settings_number_text(text, 0))
        return -1;
    errno = 0;
    long v = strtol(text, NULL, 10);
    int clamped = errno == ERANGE;
    if (v < min) {
        v = min;
        clamped = 1;
    }
    if (v > max) {
        v = max;
        clamped = 1;
    }
    *out = v;
    return clamped;
}

/* The default of a table row, parsed by its own type (the table is trusted). */
static void settings_use_default(int i)
{
    const struct prof_setting_info *s = &settings_table[i];
    settings_values[i] = s->default_value;
    if (s->type == SETTING_TYPE_BOOL)
        settings_bools[i] = settings_parse_bool(s->default_value) == 1;
    else if (s->type == SETTING_TYPE_INT)
        settings_parse_int(s->default_value, s->min, s->max, &settings_ints[i]);
}

/* Checks the value of row i; on a bad one says so (into msg) and falls back. */
static void settings_check(int i, const char *v, char *msg, size_t msg_len)
{
    const struct prof_setting_info *s = &settings_table[i];
    msg[0] = '\0';
    if (s->type == SETTING_TYPE_BOOL) {
        int b = settings_parse_bool(v);
        if (b >= 0) {
            settings_bools[i] = b;
            return;
        }
        snprintf(msg, msg_len, "%s=%s is not a boolean (accepted: %s); using the default %s",
                 s->name, v, SETTINGS_BOOL_WORDS, s->default_value);
        settings_use_default(i);
    } else if (s->type == SETTING_TYPE_INT) {
        long n;
        int rc = settings_parse_int(v, s->min, s->max, &n);
        if (rc == 0) {
            settings_ints[i] = n;
            return;
        }
        if (rc > 0) {
            static char clamped[SETTING_COUNT][24];
            snprintf(msg, msg_len,
                     "%s=%s is out of range (accepted: a whole number %ld..%ld); "
                     "clamped to %ld",
                     s->name, v, s->min, s->max, n);
            snprintf(clamped[i], sizeof clamped[i], "%ld", n);
            settings_ints[i] = n;
            settings_values[i] = clamped[i];
        } else {
            snprintf(msg, msg_len,
                     "%s=%s is not a number (accepted: a whole number %ld..%ld); using the "
                     "default %s",
                     s->name, v, s->min, s->max, s->default_value);
            settings_use_default(i);
        }
    }
}

void settings_load(void)
{
    char msgs[SETTING_COUNT][320];
    for (int i = 0; i < SETTING_COUNT; i++) {
        const char *v = settings_lookup(settings_table[i].name);
        msgs[i][0] = '\0';
        settings_set[i] = v != NULL && v[0] != '\0';
        settings_use_default(i);
        if (settings_set[i]) {
            settings_values[i] = v;
            settings_check(i, v, msgs[i], sizeof msgs[i]);
        }
    }
    /* Said after the loop: PROF_QUIET itself may come later in the table. */
    for (int i = 0; i < SETTING_COUNT; i++) {
        if (!msgs[i][0])
            continue;
        if (!settings_bools[SETTING_PROF_QUIET])
            fprintf(stderr, "profrun: %s\n", msgs[i]);
        /* Children inherit the value used, and so say nothing more about it. */
        if (settings_lookup == settings_getenv)
            setenv(settings_table[i].name, settings_values[i], 1);
    }
}

int settings_bool(enum prof_setting_id id)
{
    return settings_bools[id];
}

long settings_int(enum prof_setting_id id)
{
    return settings_ints[id];
}

const char *settings_string(enum prof_setting_id id)
{
    return settings_get(id);
}

const char *settings_get(enum prof_setting_id id)
{
    return settings_values[id] ? settings_values[id] : settings_table[id].default_value;
}

int settings_is_set(enum prof_setting_id id)
{
    return settings_set[id];
}

void settings_export(enum prof_setting_id id, const char *value)
{
    /* attached (profrun attach): the program's environment stays its own */
    if (settings_lookup != settings_getenv) {
        static char kept[SETTING_COUNT][256];
        snprintf(kept[id], sizeof kept[id], "%s", value);
        value = kept[id];
    } else {
        setenv(settings_table[id].name, value, 1);
        /* getenv's pointer stays valid until the variable is set again. */
        value = getenv(settings_table[id].name);
    }
    settings_values[id] = value;
    settings_set[id] = 1;
    if (settings_table[id].type == SETTING_TYPE_BOOL)
        settings_bools[id] = settings_parse_bool(value) == 1;
    else if (settings_table[id].type == SETTING_TYPE_INT)
        settings_parse_int(value, settings_table[id].min, settings_table[id].max,
                           &settings_ints[id]);
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
    fprintf(out,
            "Environment (inherited by every process of the run). Booleans accept %s;\n"
            "numbers are whole and clamped to their range; a value not accepted is\n"
            "named on stderr and the default used.\n",
            SETTINGS_BOOL_WORDS);
    fprintf(out, "  %-18s %-17s %-10s %s\n", "NAME", "TYPE", "DEFAULT", "MEANING");
    for (int i = 0; i < SETTING_COUNT; i++) {
        const struct prof_setting_info *s = &settings_table[i];
        char type[32];
        if (s->type == SETTING_TYPE_BOOL)
            snprintf(type, sizeof type, "bool");
        else if (s->type == SETTING_TYPE_INT)
            snprintf(type, sizeof type, "int %ld..%ld", s->min, s->max);
        else
            snprintf(type, sizeof type, "string");
        fprintf(out, "  %-18s %-17s %-10s %s\n", s->name, type,
                s->default_value[0] ? s->default_value : "(unset)", s->meaning);
    }
}

int settings_on(enum prof_setting_id id)
{
    return settings_table[id].type == SETTING_TYPE_INT ? settings_int(id) != 0 : settings_bool(id);
}
