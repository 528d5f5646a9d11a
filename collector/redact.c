#include "redact.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* name (len bytes) lower-cased with '-' as '_', leading dashes dropped, into buf. */
static size_t redact_normalize(const char *name, size_t len, char *buf, size_t buf_len)
{
    while (len && *name == '-') {
        name++;
        len--;
    }
    size_t n = 0;
    for (size_t i = 0; i < len && n + 1 < buf_len; i++)
        buf[n++] = name[i] == '-' ? '_' : (char)tolower((unsigned char)name[i]);
    buf[n] = '\0';
    return n;
}

static int redact_ends_with(const char *s, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && memcmp(s + n - k, suffix, k) == 0;
}

int redact_secret_name(const char *name, size_t len)
{
    static const char *const exact[] = {"password", "passwd",  "token",
                                        "secret",   "api_key", "apikey"};
    static const char *const suffix[] = {"_key", "_token", "_secret"};
    char buf[256];
    size_t n = redact_normalize(name, len, buf, sizeof buf);
    if (n == 0)
        return 0;
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        if (strcmp(buf, exact[i]) == 0)
            return 1;
    for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++)
        if (redact_ends_with(buf, n, suffix[i]))
            return 1;
    return strstr(buf, "password") != NULL || strstr(buf, "passwd") != NULL;
}

/* A word that may name an option or a variable: dashes, then letters, digits, '_', '-'. */
static int redact_is_name(const char *s, size_t len)
{
    if (len == 0)
        return 0;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
            return 0;
    return 1;
}

static void redact_replace(char **slot, const char *prefix, size_t prefix_len)
{
    size_t len = prefix_len + sizeof REDACT_TEXT;
    char *text = malloc(len);
    if (text) {
        memcpy(text, prefix, prefix_len);
        memcpy(text + prefix_len, REDACT_TEXT, sizeof REDACT_TEXT);
        free(*slot);
        *slot = text;
    } else {
        (*slot)[0] = '\0'; /* never keep the secret */
    }
}

void redact_argv(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        char *a = argv[i];
        if (!a)
            continue;
        const char *eq = strchr(a, '=');
        if (eq) {
            /* --opt=value, -opt=value, NAME=value */
            size_t name_len = (size_t)(eq - a);
            if (redact_is_name(a, name_len) && redact_secret_name(a, name_len))
                redact_replace(&argv[i], a, name_len + 1);
            continue;
        }
        /* --opt value: the next word, unless it is a long option itself (a password may
         * well start with one '-') */
        if (a[0] == '-' && redact_is_name(a, strlen(a)) && redact_secret_name(a, strlen(a)) &&
            i + 1 < argc && argv[i + 1] && strncmp(argv[i + 1], "--", 2) != 0) {
            redact_replace(&argv[i + 1], "", 0);
            i++;
        }
    }
}

const char *redact_meta_value(const char *key, const char *value)
{
    if (value && strncmp(key, "env.", 4) == 0 && redact_secret_name(key + 4, strlen(key + 4)))
        return REDACT_TEXT;
    return value;
}
