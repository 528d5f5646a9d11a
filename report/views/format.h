/* format: numbers for people — durations, byte counts, rates — and CSV/text helpers
 * shared by the writers. */
#ifndef REPORT_FORMAT_H
#define REPORT_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* "812 ns", "3.25 us", "41.0 ms", "2.503 s" */
void format_ns(double ns, char *buf, size_t len);
/* "512 B", "1.50 KiB", "2.00 GiB" */
void format_bytes(uint64_t bytes, char *buf, size_t len);
/* bytes per ns == GB/s (10^9 bytes per second); "-" when there is no time */
void format_gbps(uint64_t bytes, uint64_t ns, char *buf, size_t len);
double format_gbps_value(uint64_t bytes, uint64_t ns);
/* Trace strings are untrusted: before they reach a terminal or a CSV file, control
 * characters (C0, DEL, C1 as UTF-8) and bidi overrides (U+202A..E, U+2066..9 as UTF-8)
 * are written as \xHH per byte, e.g. ESC as \x1b, U+202E as \xe2\x80\xae. */
size_t format_escaped_len(const char *s);
/* Writes the escaped s into buf (cut to len - 1 bytes); returns buf. */
char *format_escape(const char *s, char *buf, size_t len);
/* A malloc'd escaped copy, or NULL when out of memory. */
char *format_escape_dup(const char *s);
void format_fputs_escaped(FILE *out, const char *s);
/* buf (len bytes, at least 64) holds a text that snprintf cut from `full` bytes: ends it
 * with whole UTF-8 characters and the marker the trace writer uses for a cut name,
 * "…[truncated, N bytes]" (N: full), so no cut goes unsaid. Nothing when full < len. */
void format_mark_cut(char *buf, size_t len, size_t full);
/* The columns s takes on a terminal: its UTF-8 characters (bytes other than continuation
 * bytes), so "…" counts one. */
size_t format_columns(const char *s);
/* A GPU kernel's demangled name as the text tables and findings show it, at most
 * FORMAT_KERNEL_COLS columns: without the return type "void " and the parameter list,
 * "(anonymous namespace)::" dropped, the namespaces inside template arguments dropped
 * (at::native::FillFunctor<float> -> FillFunctor<float>), and a name still longer cut in
 * its middle with "…", its start and end kept. Returns buf; sets *shortened to 1 when the
 * text differs from name, else leaves it. JSON and CSV keep the whole name; the HTML gives
 * it as the cell's title. */
#define FORMAT_KERNEL_COLS 100
const char *format_kernel_name(const char *name, char *buf, size_t len, int *shortened);
/* One line for the user on out: "profreport: " and the formatted message, escaped (file
 * names and messages quoted from files are untrusted), then a newline. */
void format_say(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Writes s as one CSV field, control characters escaped, quoted when it holds a comma
 * or quote, a single quote first when it starts with = + - @ (a spreadsheet formula). */
void format_csv_field(FILE *out, const char *s);

#endif
