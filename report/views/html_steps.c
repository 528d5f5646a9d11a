/* html_steps: the per-step overview of the HTML report. A step of a process ends where an
 * optimizer_step call ends (the first begins at the process's start). Two streamed passes
 * over each trace (timeline.h), nothing kept but one small record per step: the first finds
 * the ends of the optimizer_step spans (Python calls long enough to be on the timeline,
 * PROF_PY_SPAN_US), the second adds to each step the time of the outermost
 * dataloader_next, forward, backward and optimizer_step spans and of the GPU kernels that
 * fall in it (clipped at the step's edges; kernels summed over streams). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "html.h"
#include "model.h"
#include "timeline.h"

enum { HTML_DATA, HTML_FORWARD, HTML_BACKWARD, HTML_OPTIMIZER, HTML_GPU, HTML_PARTS };

static const char *const html_step_action[] = {"dataloader_next", "forward", "backward",
                                               "optimizer_step"};
static const char *const html_step_color[] = {"#e45756", "#4c78a8", "#f58518", "#54a24b"};

struct html_step {
    uint64_t end;
    uint64_t ns[HTML_PARTS];
};

struct html_steps {
    const struct model_process *p;
    struct html_step *steps;
    size_t n, cap;
};

/* The built-in action a span's node starts (it is one, and no ancestor is one), or -1. */
static int html_step_part(const struct model_process *p, uint32_t node_id)
{
    const char *a = model_torch_action_of_node(p, node_id);
    if (!a)
        return -1;
    const struct model_py_node *n = model_python_node(p, node_id);
    if (n && n->parent && model_torch_action_of_node(p, n->parent))
        return -1;
    for (int i = 0; i < 4; i++)
        if (!strcmp(a, html_step_action[i]))
            return i;
    return -1;
}

static int html_steps_ends(void *ctx, const struct timeline_event *ev)
{
    struct html_steps *st = ctx;
    if (ev->kind != TIMELINE_PYTHON || html_step_part(st->p, ev->py_node) != HTML_OPTIMIZER)
        return 0;
    if (st->n == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 64;
        struct html_step *n = realloc(st->steps, st->cap * sizeof *n);
        if (!n)
            return -1;
        st->steps = n;
    }
    memset(&st->steps[st->n], 0, sizeof st->steps[0]);
    st->steps[st->n++].end = ev->end_ns;
    return 0;
}

static int html_steps_cmp(const void *a, const void *b)
{
    uint64_t x = ((const struct html_step *)a)->end, y = ((const struct html_step *)b)->end;
    return x < y ? -1 : x > y;
}

/* Adds [lo, hi) to part of every step it overlaps. */
static void html_steps_add(struct html_steps *st, int part, uint64_t lo, uint64_t hi)
{
    size_t a = 0, b = st->n; /* the first step ending after lo */
    while (a < b) {
        size_t m = a + (b - a) / 2;
        if (st->steps[m].end <= lo)
            a = m + 1;
        else
            b = m;
    }
    for (size_t k = a; k < st->n && hi > lo; k++) {
        uint64_t start = k ? st->steps[k - 1].end : st->p->wall_start_ns;
        uint64_t x = lo > start ? lo : start, y = hi < st->steps[k].end ? hi : st->steps[k].end;
        if (y > x)
            st->steps[k].ns[part] += y - x;
        if (hi <= st->steps[k].end)
            break;
    }
}

static int html_steps_fill(void *ctx, const struct timeline_event *ev)
{
    struct html_steps *st = ctx;
    if (ev->kind == TIMELINE_KERNEL)
        html_steps_add(st, HTML_GPU, ev->start_ns, ev->end_ns);
    else if (ev->kind == TIMELINE_PYTHON) {
        int part = html_step_part(st->p, ev->py_node);
        if (part >= 0)
            html_steps_add(st, part, ev->start_ns, ev->end_ns);
    }
    return 0;
}

/* One process: a column per step (steps grouped when there are more than the width takes),
 * heights by share of the step's time; the GPU kernels' share as a band beneath. */
static void html_steps_draw(FILE *out, const struct html_steps *st)
{
    const size_t maxcols = 300;
    size_t group = (st->n + maxcols - 1) / maxcols, cols = (st->n + group - 1) / group;
    double cw = 900.0 / (double)cols, H = 80;
    fprintf(out, "<svg class=\"steps\" width=\"900\" height=\"%.0f\" data-steps=\"%zu\">", H + 14,
            st->n);
    for (size_t c = 0; c < cols; c++) {
        uint64_t ns[HTML_PARTS] = {0}, len = 0;
        size_t first = c * group, last = first + group < st->n ? first + group : st->n;
        for (size_t k = first; k < last; k++) {
            uint64_t start = k ? st->steps[k - 1].end : st->p->wall_start_ns;
            len += st->steps[k].end - start;
            for (int i = 0; i < HTML_PARTS; i++)
                ns[i] += st->steps[k].ns[i];
        }
        char t[32];
        format_ns((double)len, t, sizeof t);
        fprintf(out,
                "<g class=\"step\" data-step=\"%zu\" data-ns=\"%" PRIu64 "\" data-data=\"%" PRIu64
                "\" data-forward=\"%" PRIu64 "\" data-backward=\"%" PRIu64
                "\" data-optimizer=\"%" PRIu64 "\" data-gpu=\"%" PRIu64 "\"><title>step%s %zu%s: "
                "%s",
                first, len, ns[HTML_DATA], ns[HTML_FORWARD], ns[HTML_BACKWARD], ns[HTML_OPTIMIZER],
                ns[HTML_GPU], group > 1 ? "s" : "", first, group > 1 ? "+" : "", t);
        for (int i = 0; i < 4; i++)
            fprintf(out, "; %s %.1f%%", html_step_action[i],
                    len ? 100.0 * (double)ns[i] / (double)len : 0.0);
        fprintf(out, "; GPU kernels %.1f%%</title>",
                len ? 100.0 * (double)ns[HTML_GPU] / (double)len : 0.0);
        double y = H;
        for (int i = 0; i < 4 && len; i++) {
            double h = H * (double)ns[i] / (double)len;
            if (h <= 0)
                continue;
            y -= h;
            fprintf(out, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>",
                    (double)c * cw, y, cw * 0.9, h, html_step_color[i]);
        }
        if (y > 0) /* the rest of the step: other CPU work, or idle */
            fprintf(out,
                    "<rect x=\"%.2f\" y=\"0\" width=\"%.2f\" height=\"%.2f\" fill=\"#e6e3e0\"/>",
                    (double)c * cw, cw * 0.9, y);
        double g = len ? (double)ns[HTML_GPU] / (double)len : 0;
        g = g > 1 ? 1 : g;
        fprintf(out,
                "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"10\" "
                "fill=\"rgb(%d,%d,%d)\"/></g>",
                (double)c * cw, H + 4, cw * 0.9, 235 - (int)(g * 200), 235 - (int)(g * 120),
                235 - (int)(g * 40));
    }
    fputs("</svg>", out);
}

void html_steps(FILE *out, const struct summary *s)
{
    int any = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        int has_opt = 0;
        for (size_t a = 0; a < p->torch.nbuiltin; a++)
            has_opt |=
                p->torch.builtin[a].name && !strcmp(p->torch.builtin[a].name, "optimizer_step");
        if (!has_opt || !p->file)
            continue;
        struct html_steps st = {p, NULL, 0, 0};
        char err[256];
        if (timeline_stream(p, html_steps_ends, &st, err, sizeof err) == 0 && st.n) {
            qsort(st.steps, st.n, sizeof *st.steps, html_steps_cmp);
            if (timeline_stream(p, html_steps_fill, &st, err, sizeof err) == 0) {
                if (!any++)
                    fputs("<h3>Per step</h3><p class=\"note\">A column per training step (it "
                          "ends where optimizer_step ends): its time in dataloader_next "
                          "(red), forward (blue), backward (orange), optimizer_step (green), "
                          "the rest grey; beneath, the GPU kernels' share of the step (darker: "
                          "busier). Only calls long enough for the timeline "
                          "(PROF_PY_SPAN_US) are seen here.</p>\n<table class=\"tl\">",
                          out);
                fprintf(out, "<tr><th>%s%lld<br><small>%zu steps</small></th><td>",
                        p->rank >= 0 ? "rank " : "pid ",
                        (long long)(p->rank >= 0 ? p->rank : p->pid), st.n);
                html_steps_draw(out, &st);
                fputs("</td></tr>\n", out);
            }
        }
        free(st.steps);
    }
    if (any)
        fputs("</table>\n", out);
}
