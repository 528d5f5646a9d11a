/* What a trace must not keep: values that look like credentials, in the recorded argv and
 * environment (PROF_REDACT, on by default). A value is replaced by REDACT_TEXT when its
 * option or variable name says it is a secret:
 *   --password, --passwd, --token, --secret, --api-key (any case, '-' or '_'), any name
 *   ending in _KEY, _TOKEN or _SECRET (or -key, ...), any name holding PASSWORD or PASSWD;
 * in the forms --opt=value, --opt value (unless value starts with "--"), -opt value,
 * NAME=value (e.g. `env NAME=value cmd`)
 * and, for the recorded environment variables, by the variable's name. */
#ifndef PROF_REDACT_H
#define PROF_REDACT_H

#include <stddef.h>

#define REDACT_TEXT "<redacted>"

/* Whether an option or variable name (leading dashes allowed) names a secret. */
int redact_secret_name(const char *name, size_t len);
/* Redacts argv (malloc'd strings; argv[0] is kept) in place: a redacted entry is freed
 * and replaced by a malloc'd copy, or emptied if that copy cannot be made. */
void redact_argv(int argc, char **argv);
/* The value to record for META key: REDACT_TEXT for "env.NAME" where NAME names a
 * secret, else value. */
const char *redact_meta_value(const char *key, const char *value);

#endif
