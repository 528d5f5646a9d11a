/* html_steps: the training steps in the HTML report, from each process's steps (model.h,
 * "training steps"; steps_report.h): a summary of the steady step first (its parts as one
 * bar, the startup left out), and per process a chart of every step — its height the step's
 * time on an axis in s, ms or us, its colours the parts, warm-up steps faded, slow steps marked. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "html.h"
#include "model.h"
#include "steps_report.h"
#include "steps_view.h"

static const char *const html_part_color[MODEL_STEP_PART_COUNT] = {
    "#e45756", /* data loading */
    "#4c78a8", /* forward */
    "#f58518", /* backward */
    "#54a24b", /* optimizer */
    "#9d755d", /* other ops */
    "#b279a2", /* communication */
    "#eeca3b", /* host syncs */
    "#d8d4d0", /* other CPU */
};

#define HTML_STARTUP_COLOR "#a8a8a8"
#define HTML_TEARDOWN_COLOR "#e4e4e4"

/* One segment of a 900-wide bar at *x: ns of wall, its name in the tooltip. */
static void html_steps_segment(FILE *out, double *x, uint64_t ns, uint64_t wall, const char *color,
                               const char *name)
{
    if (!ns || !wall)
        return;
    double w = 900.0 * (double)ns / (double)wall;
    char t[32];
    format_ns((double)ns, t, sizeof t);
    fprintf(out,
            "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"18\" fill=\"%s\"><title>%s %s "
            "(%.1f%%)</title></rect>",
            *x, w, color, name, t, 100.0 * (double)ns / (double)wall);
    *x += w;
}

void html_steps_wall_bar(FILE *out, const struct model_process *p)
{
    struct steps_stats st; /* every step (lo 0, hi UINT64_MAX would be the steady ones) */
    steps_stats_of(p, 0, UINT64_MAX - 1, &st);
    uint64_t wall = p->wall_ns, used = st.startup_ns + st.total_ns + st.teardown_ns;
    double x = 0;
    fputs("<svg class=\"bar\" width=\"900\" height=\"18\">", out);
    html_steps_segment(out, &x, st.startup_ns, wall, HTML_STARTUP_COLOR,
                       "startup (before the first step)");
    used += st.profiler_ns;
    html_steps_segment(out, &x, st.profiler_ns, wall, HTML_TEARDOWN_COLOR,
                       "the profiler building its torch bridge (a first run's)");
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
        html_steps_segment(out, &x, st.part_ns[k], wall, html_part_color[k],
                           model_step_part_name(k));
    html_steps_segment(out, &x, st.teardown_ns, wall, HTML_TEARDOWN_COLOR,
                       "teardown (after the last step)");
    html_steps_segment(out, &x, wall > used ? wall - used : 0, wall, HTML_TEARDOWN_COLOR,
                       "outside the steps' span");
    fputs("</svg>", out);
}

void html_steps_wall_legend(FILE *out)
{
    fputs("<div><span class=\"key\" style=\"background:" HTML_STARTUP_COLOR "\"></span>startup ",
          out);
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
        fprintf(out, "<span class=\"key\" style=\"background:%s\"></span>%s ", html_part_color[k],
                model_step_part_name(k));
    fputs("<span class=\"key\" style=\"background:" HTML_TEARDOWN_COLOR
          "\"></span>teardown</div>\n",
          out);
}

static void html_steps_legend(FILE *out)
{
    fputs("<div>", out);
    for (int k = 0; k < MODEL_STEP_PART_COUNT; k++)
        fprintf(out, "<span class=\"key\" style=\"background:%s\"></span>%s ",
                html_part_color[k], model_step_part_name(k));
    fputs("</div>\n", out);
}

/* The steady step of one process as one bar of its parts, with the figures beside it. */
static void html_steps_summary(FILE *out, const struct steps_stats *st)
{
    char med[32], p90[32], mx[32], startup[32], imp[32];
    format_ns((double)st->median_ns, med, sizeof med);
    format_ns((double)st->p90_ns, p90, sizeof p90);
    format_ns((double)st->max_ns, mx, sizeof mx);
    format_ns((double)st->startup_ns, startup, sizeof startup);
    const struct model_process *p = st->p;
    char costs[1024], source[384], left[384], build[256];
    steps_view_startup_costs(p, costs, sizeof costs);
    steps_view_profiler_note(st, build, sizeof build);
    fprintf(out, "<p class=\"note\">%s %lld: %zu steady steps of %zu (",
            p->rank >= 0 ? "rank" : "pid", (long long)(p->rank >= 0 ? p->rank : p->pid),
            st->counted, st->nsteps);
    html_text(out, model_steps_source_text(&p->steps, source, sizeof source));
    fputs("; ", out);
    html_text(out, steps_view_left_out(st, left, sizeof left));
    fprintf(out,
            "); step time median %s, p90 %s, max %s (step %" PRIu64 "). Startup %s before the "
            "first step (imports %s",
            med, p90, mx, st->max_number, startup, steps_view_imports(st, imp, sizeof imp));
    html_text(out, costs);
    html_text(out, build);
    fputs(") is left out of the steps.</p>\n", out);
    fputs("<svg class=\"stepbar\" width=\"900\" height=\"22\">", out);
    double x = 0;
    for (int k = 0; k < MODEL_STEP_PART_COUNT && st->total_ns; k++) {
        double w = 900.0 * (double)st->part_ns[k] / (double)st->total_ns;
        if (w <= 0)
            continue;
        char v[32];
        format_ns((double)st->part_ns[k] / (double)(st->counted ? st->counted : 1), v, sizeof v);
        fprintf(out,
                "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"22\" fill=\"%s\" "
                "data-part=\"%s\"><title>%s: %s per step, %.1f%%</title></rect>",
                x, w, html_part_color[k], model_step_part_name(k), model_step_part_name(k), v,
                100.0 * (double)st->part_ns[k] / (double)st->total_ns);
        x += w;
    }
    fputs("</svg>\n", out);
    char note[512];
    for (int k = 0; k < 3; k++) { /* as the text report's, under the parts */
        steps_view_notes[k](st, note, sizeof note);
        if (*note) {
            fputs("<p class=\"note\">", out);
            html_text(out, note);
            fputs(".</p>\n", out);
        }
    }
    char lost[512];
    steps_view_lost_note(p, lost, sizeof lost);
    if (*lost) { /* as the text report's Where a step's time goes */
        fputs("<p class=\"note\">", out);
        html_text(out, lost);
        fputs(".</p>\n", out);
    }
}

/* An axis label of ns on an axis up to top ns, in one unit for the whole axis: s from 1 s,
 * ms from 1 ms, else us; up to 3 significant digits, never an exponent ("1.04 s", not
 * "1.04e+03 ms", which the label's 42 px also cut). */
static void html_steps_axis_label(double ns, double top, char *buf, size_t len)
{
    const char *unit = top >= 1e9 ? "s" : top >= 1e6 ? "ms" : "us";
    double v = ns / (top >= 1e9 ? 1e9 : top >= 1e6 ? 1e6 : 1e3);
    char num[24];
    snprintf(num, sizeof num, "%.*f", v >= 100 ? 0 : v >= 10 ? 1 : 2, v);
    size_t n = strlen(num);
    if (strchr(num, '.')) { /* "1.50" is "1.5", "50.0" is "50" */
        while (num[n - 1] == '0')
            num[--n] = 0;
        if (num[n - 1] == '.')
            num[--n] = 0;
    }
    snprintf(buf, len, "%s %s", num, unit);
}

/* The longest of steps [first, last) of m. */
static size_t html_steps_longest(const struct model_steps *m, size_t first, size_t last)
{
    size_t at = first;
    for (size_t k = first + 1; k < last; k++)
        if (m->steps[k].end_ns - m->steps[k].start_ns >
            m->steps[at].end_ns - m->steps[at].start_ns)
            at = k;
    return at;
}

/* One process: a column per step, its height the step's time on the axis, stacked by part;
 * the GPU busy share beneath. More steps than the width takes: a column per few steps, the
 * longest of them drawn (a sum of three read as a step three times as long, and hid the
 * slow ones). */
static void html_steps_draw(FILE *out, const struct steps_stats *st)
{
    const struct model_steps *m = &st->p->steps;
    const size_t maxcols = 300;
    size_t n = m->nsteps, group = (n + maxcols - 1) / maxcols, cols = (n + group - 1) / group;
    double left = 48, cw = 850.0 / (double)cols, H = 120;
    /* the axis is the steady steps': a warm-up step far longer is cut at the top and
     * labelled with its time */
    uint64_t top = 0;
    for (int steady = 1; steady >= 0 && !top; steady--)
        for (size_t k = 0; k < n; k++) {
            uint64_t len = m->steps[k].end_ns - m->steps[k].start_ns;
            if (!steady || k >= st->warmup)
                top = len > top ? len : top;
        }
    if (!top)
        return;
    double label_end = 0; /* the right edge of the last cut column's label */
    /* the axis: 0, half and the top */
    fprintf(out, "<svg class=\"steps\" width=\"900\" height=\"%.0f\" data-steps=\"%zu\">", H + 36,
            n);
    for (int t = 0; t <= 2; t++) {
        double y = 10 + H - H * t / 2.0;
        char label[32];
        html_steps_axis_label((double)top * t / 2.0, (double)top, label, sizeof label);
        fprintf(out,
                "<line x1=\"%.0f\" x2=\"900\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ccc\"/>"
                "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" "
                "text-anchor=\"end\">%s</text>",
                left - 4, y, y, left - 6, y + 3, label);
    }
    for (size_t c = 0; c < cols; c++) {
        size_t first = c * group, last = first + group < n ? first + group : n;
        const struct model_step *s = &m->steps[html_steps_longest(m, first, last)];
        const uint64_t *ns = s->part_ns;
        uint64_t len = s->end_ns - s->start_ns, kernel = s->gpu_kernel_ns, busy = s->gpu_busy_ns;
        int warm = (size_t)(s - m->steps) < st->warmup;
        int slow = !warm && st->median_ns && (double)len >= 2.0 * (double)st->median_ns;
        char t[32];
        format_ns((double)len, t, sizeof t);
        double x = left + (double)c * cw;
        fprintf(out,
                "<g class=\"step\" data-step=\"%zu\" data-ns=\"%" PRIu64 "\" data-data=\"%" PRIu64
                "\" data-forward=\"%" PRIu64 "\" data-backward=\"%" PRIu64
                "\" data-optimizer=\"%" PRIu64 "\" data-gpu=\"%" PRIu64 "\"%s><title>step %" PRIu64
                ": %s%s%s",
                (size_t)(s - m->steps), len, ns[MODEL_STEP_DATA], ns[MODEL_STEP_FORWARD],
                ns[MODEL_STEP_BACKWARD], ns[MODEL_STEP_OPTIMIZER], kernel,
                warm ? " opacity=\"0.45\"" : "", s->number, t, warm ? " (warm-up)" : "",
                slow ? " (slow: 2x the median or more)" : "");
        if (last - first > 1)
            fprintf(out, " (the longest of steps %" PRIu64 "-%" PRIu64 ")", m->steps[first].number,
                    m->steps[last - 1].number);
        for (int i = 0; i < MODEL_STEP_PART_COUNT; i++)
            if (ns[i])
                fprintf(out, "; %s %.1f%%", model_step_part_name(i),
                        100.0 * (double)ns[i] / (double)len);
        if (busy)
            fprintf(out, "; GPU busy %.1f%%", 100.0 * (double)busy / (double)len);
        fputs("</title>", out);
        double y = 10 + H, scale = len > top ? (double)top / (double)len : 1.0;
        for (int i = 0; i < MODEL_STEP_PART_COUNT; i++) {
            double h = H * scale * (double)ns[i] / (double)top;
            if (h <= 0)
                continue;
            y -= h;
            fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>",
                    x, y, cw * 0.9, h, html_part_color[i]);
        }
        if (len > top && x >= label_end) { /* cut at the axis's top; labels never overlap */
            fprintf(out, "<text x=\"%.2f\" y=\"9\" font-size=\"9\">%s</text>", x, t);
            label_end = x + 5.5 * (double)strlen(t) + 3; /* (font-size 9: about 5.5 px a char) */
        }
        if (slow)
            fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" font-size=\"10\" fill=\"#c00\">&#9650;</text>",
                    x, y > 12 ? y - 2 : 12);
        double g = len ? (double)busy / (double)len : 0;
        g = g > 1 ? 1 : g;
        fprintf(out,
                "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"10\" "
                "fill=\"rgb(%d,%d,%d)\"/></g>",
                x, H + 16, cw * 0.9, 235 - (int)(g * 200), 235 - (int)(g * 120),
                235 - (int)(g * 40));
    }
    fputs("</svg>", out);
}

/* Several ranks with steps: the text report's per-rank table, the row of the rank holding
 * the others in bold, and the line naming it (or saying none does). */
static void html_steps_ranks(FILE *out, const struct summary *s)
{
    size_t ranked = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        ranked += s->procs[i]->rank >= 0 && s->procs[i]->steps.nsteps;
    if (ranked < 2)
        return;
    struct comm_report r;
    comm_merge_build(&r, s);
    if (r.by_steps && r.nranks > 1) {
        char title[512];
        steps_view_ranks_title(&r, title, sizeof title);
        html_table_begin(out, "steps-ranks", title, r.nranks, r.nranks, steps_view_rank_columns);
        int holds = comm_slowest_holds_others(&r);
        for (size_t i = 0; i < r.nranks; i++) {
            uint64_t ns[STEPS_VIEW_RANK_COLUMNS];
            char cell[STEPS_VIEW_RANK_COLUMNS][32];
            steps_view_rank_cells(&r, i, ns, cell);
            fprintf(out, "<tr%s><td class=\"n\" data-v=\"%lld\">%lld</td>",
                    holds && r.ranks[i].rank == r.slowest.rank
                        ? " style=\"font-weight:bold\""
                        : "",
                    (long long)r.ranks[i].rank, (long long)r.ranks[i].rank);
            for (int j = 1; j < STEPS_VIEW_RANK_COLUMNS; j++)
                html_td_ns(out, (double)ns[j]);
            fputs("</tr>\n", out);
        }
        fputs("</tbody></table>\n", out);
        if (steps_view_ranks_verdict(&r, steps_view_rank_look(s, r.slowest.rank, r.slowest.why),
                                     title, sizeof title)) {
            fputs("<p class=\"note\">", out);
            html_text(out, title);
            fputs("</p>\n", out);
        }
    }
    comm_merge_free(&r);
}

void html_steps(FILE *out, const struct summary *s)
{
    int any = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        if (!p->steps.nsteps)
            continue;
        struct steps_stats st;
        steps_stats_of(p, 0, UINT64_MAX, &st);
        if (!any++) {
            fputs("<section id=\"steps\"><h2>Training steps</h2>\n<p class=\"note\">A step is "
                  "one training iteration, boundary to boundary; its time is split without "
                  "overlap on the thread that runs the steps (the parts add up to the step). "
                  "The bar is the mean steady step; the chart a column per step (past 300 steps, "
                  "per few steps: the longest of them), its height the step's time, warm-up "
                  "steps faded, slow steps (2x the median or more) "
                  "marked &#9650;, beneath it the GPU busy share (darker: busier).</p>\n",
                  out);
            html_steps_legend(out);
            html_steps_ranks(out, s);
        }
        html_steps_summary(out, &st);
        html_steps_draw(out, &st);
        model_steps_let_go(p); /* one process's steps at a time */
    }
    if (any)
        fputs("</section>\n", out);
}
