#include "format.h"

#include "alloc.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void format_ns(double ns, char *buf, size_t len)
{
    if (ns < 1e3)
        snprintf(buf, len, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, len, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, len, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, len, "%.3f s", ns / 1e9);
}

void format_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%" PRIu64 " B", bytes);
        return;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof *units) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.2f %s", v, units[u]);
}

double format_gbps_value(uint64_t bytes, uint64_t ns)
{
    return ns ? (double)bytes / (double)ns : 0.0;
}

void format_gbps(uint64_t bytes, uint64_t ns, char *buf, size_t len)
{
    if (!ns || !bytes)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%.2f", format_gbps_value(bytes, ns));
}

/* How many bytes at p form a control character a terminal would act on: C0 controls,
 * DEL, C1 controls as UTF-8 (U+0080..U+009F, CSI among them), and the bidirectional
 * embeddings, overrides and isolates (U+202A..U+202E, U+2066..U+2069) that make text read
 * other than it is. 0 for any other. */
static size_t format_control_len(const unsigned char *p)
{
    if (p[0] < 0x20 || p[0] == 0x7f)
        return 1;
    if (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f)
        return 2;
    if (p[0] == 0xe2 && ((p[1] == 0x80 && p[2] >= 0xaa && p[2] <= 0xae) ||
                         (p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9)))
        return 3;
    return 0;
}

size_t format_escaped_len(const char *s)
{
    size_t n = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t c = format_control_len(p);
        n += c ? 4 * c : 1;
        p += c ? c : 1;
    }
    return n;
}

char *format_escape(const char *s, char *buf, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = 0;
    if (len == 0)
        return buf;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t c = format_control_len(p);
        if (!c) {
            if (n + 1 >= len)
                break;
            buf[n++] = (char)*p++;
            continue;
        }
        if (n + 4 * c >= len)
            break;
        for (size_t k = 0; k < c; k++, p++) {
            buf[n++] = '\\';
            buf[n++] = 'x';
            buf[n++] = hex[*p >> 4];
            buf[n++] = hex[*p & 15];
        }
    }
    buf[n] = '\0';
    return buf;
}

char *format_escape_dup(const char *s)
{
    size_t len = format_escaped_len(s) + 1;
    char *d = malloc(len);
    return d ? format_escape(s, d, len) : NULL;
}

void format_fputs_escaped(FILE *out, const char *s)
{
    if (format_escaped_len(s) == strlen(s)) {
        fputs(s, out);
        return;
    }
    char *e = format_escape_dup(s);
    fputs(e ? e : "?", out);
    free(e);
}

void format_say(FILE *out, const char *fmt, ...)
{
    char buf[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fputs("profreport: ", out);
    format_fputs_escaped(out, buf);
    fputc('\n', out);
}

void format_csv_field(FILE *out, const char *s)
{
    char *e = format_escaped_len(s) == strlen(s) ? NULL : format_escape_dup(s);
    if (e)
        s = e;
    /* A spreadsheet would run a cell that starts like a formula: a quote first makes it
     * text (OWASP's rule; tab and CR are escaped above). */
    int formula = strchr("=+-@", s[0]) && s[0];
    if (!strpbrk(s, ",\"")) {
        if (formula)
            fputc('\'', out);
        fputs(s, out);
        free(e);
        return;
    }
    fputc('"', out);
    if (formula)
        fputc('\'', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
    free(e);
}

void format_mark_cut(char *buf, size_t len, size_t full)
{
    char marker[48];
    if (full < len || len < 64)
        return;
    int m = snprintf(marker, sizeof marker, "\u2026[truncated, %zu bytes]", full);
    size_t keep = len - 1 - (size_t)m;
    /* buf[keep] is the first byte left out: a UTF-8 continuation byte there means the
     * character began before it, so it goes whole (three steps at most, as the writer) */
    for (int i = 0; i < 3 && keep > 0 && ((unsigned char)buf[keep] & 0xc0) == 0x80; i++)
        keep--;
    memcpy(buf + keep, marker, (size_t)m + 1);
}

size_t format_columns(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

static int format_ident_char(char c)
{
    return c == '_' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* The byte offset after the first `cols` characters of s (m bytes). */
static size_t format_cols_to_bytes(const char *s, size_t m, size_t cols)
{
    size_t i = 0, c = 0;
    for (; i < m; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80 && c++ == cols)
            break;
    return i;
}

/* Copies name (n bytes) into s, leaving out "(anonymous namespace)::" and, inside template
 * arguments, namespace and class qualifiers ("const::" of a lambda in a const member
 * function stays); returns the bytes written. */
static size_t format_kernel_unqualify(const char *name, size_t n, char *s)
{
    static const char anon[] = "(anonymous namespace)::";
    size_t m = 0;
    int angle = 0;
    for (size_t i = 0; i < n;) {
        if (n - i >= sizeof anon - 1 && !memcmp(name + i, anon, sizeof anon - 1)) {
            i += sizeof anon - 1;
            continue;
        }
        if (angle > 0 && format_ident_char(name[i]) &&
            (i == 0 || !format_ident_char(name[i - 1]))) {
            size_t e = i;
            while (e < n && format_ident_char(name[e]))
                e++;
            if (e + 1 < n && name[e] == ':' && name[e + 1] == ':' &&
                !(e - i == 5 && !memcmp(name + i, "const", 5))) {
                i = e + 2;
                continue;
            }
            memcpy(s + m, name + i, e - i);
            m += e - i;
            i = e;
            continue;
        }
        if (name[i] == '<')
            angle++;
        else if (name[i] == '>' && angle > 0)
            angle--;
        s[m++] = name[i++];
    }
    return m;
}

const char *format_kernel_name(const char *name, char *buf, size_t len, int *shortened)
{
    size_t n = strlen(name);
    const char *full = name;
    if (!strncmp(name, "void ", 5) && name[5]) {
        name += 5;
        n -= 5;
    }
    if (n && name[n - 1] == ')') { /* the parameter list: from the '(' matching the last ')' */
        size_t depth = 0;
        for (size_t i = n; i-- > 0;) {
            if (name[i] == ')')
                depth++;
            else if (name[i] == '(' && --depth == 0) {
                if (i)
                    n = i;
                break;
            }
        }
    }
    char *s = malloc(n + 1);
    if (!s)
        report_oom();
    size_t m = format_kernel_unqualify(name, n, s);
    s[m] = 0;
    if (format_columns(s) > FORMAT_KERNEL_COLS) { /* its start, "…", its end */
        size_t tail_cols = FORMAT_KERNEL_COLS * 3 / 10,
               head_cols = FORMAT_KERNEL_COLS - 1 - tail_cols;
        size_t head = format_cols_to_bytes(s, m, head_cols);
        size_t tail = format_cols_to_bytes(s, m, format_columns(s) - tail_cols);
        snprintf(buf, len, "%.*s\u2026%s", (int)head, s, s + tail);
    } else {
        snprintf(buf, len, "%s", s);
    }
    free(s);
    if (strcmp(buf, full))
        *shortened = 1;
    return buf;
}
