/* html: --html FILE, the report as one self-contained HTML page (html.c): the findings, a
 * timeline overview per process, the memory curve (html_charts.c), the tables (sortable by
 * a small script of our own), and the flame graph (flame.c) inline. Everything is
 * aggregated: the page's size follows the number of functions, kernels and ops, not the
 * number of events. Also --flamegraph FILE from the summary. */
#ifndef REPORT_HTML_H
#define REPORT_HTML_H

#include <stdio.h>

#include "summary.h"

struct stacks_view_options;

/* --html and --flamegraph (either may be NULL): 0, or -1 with the reason said on err. */
int html_write_files(const char *html_path, const char *flame_path, const struct summary *s,
                     FILE *err);
/* --flamegraph with --samples or --stacks NAME: the flame graph of those call paths. 0, or
 * 1 said on err. */
int html_write_stacks_flame(const char *flame_path, struct model_process *const *procs, size_t n,
                            const struct stacks_view_options *o, FILE *err);

/* html_charts.c: the timeline overview (per process: the built-in actions' shares of the
 * wall time, the GPU busy over time) and the memory curve (live tensor bytes per device,
 * at most HTML_MEMORY_POINTS points each, the peak kept). */
#define HTML_MEMORY_POINTS 2000
#define HTML_BUSY_BINS 200
void html_timeline(FILE *out, const struct summary *s);
void html_memory(FILE *out, const struct summary *s);
/* html_steps.c: the training steps: the steady step's parts and a chart of every step per
 * process (from the model's steps). */
void html_steps(FILE *out, const struct summary *s);
/* The whole wall time of p, which has steps, as one bar: the startup, every step split into
 * its parts (the Training steps section's colours), the teardown; and its legend. */
void html_steps_wall_bar(FILE *out, const struct model_process *p);
void html_steps_wall_legend(FILE *out);
/* Text for HTML: markup characters as entities, control characters escaped. */
void html_text(FILE *out, const char *s);
/* A sortable table's title (h3), a note when only shown of total rows are, and its head:
 * columns '|'-separated, a leading '>' for a number; then rows of cells such as
 * html_td_ns's (a time, sorted by its ns), and "</tbody></table>". */
void html_table_begin(FILE *out, const char *id, const char *title, size_t shown, size_t total,
                      const char *columns);
void html_td_ns(FILE *out, double ns);

#endif
