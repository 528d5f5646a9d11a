/* html_charts: the timeline overview and the memory curve of the HTML report, as inline
 * SVG drawn here from the summary (no script needed to see them). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "comm_pair.h"
#include "format.h"
#include "html.h"
#include "summary_file.h"
#include "model.h"

void html_text(FILE *out, const char *s)
{
    char *esc = format_escape_dup(s ? s : "");
    for (const char *t = esc ? esc : ""; *t; t++) {
        switch (*t) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        default:
            fputc(*t, out);
        }
    }
    free(esc);
}

static void html_proc_label(FILE *out, const struct model_process *p)
{
    if (p->rank >= 0)
        fprintf(out, "rank %lld, ", (long long)p->rank);
    fprintf(out, "pid %lld", (long long)p->pid);
}

/* The action shares of one process: forward, backward, optimizer_step, dataloader_next and
 * the rest of the wall time. */
static const char *const html_actions[] = {"forward", "backward", "optimizer_step",
                                           "dataloader_next"};
static const char *const html_action_colors[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756",
                                                 "#bab0ac"};

static void html_action_bar(FILE *out, const struct model_process *p)
{
    double x = 0, W = 900;
    uint64_t shown = 0;
    fputs("<svg class=\"bar\" width=\"900\" height=\"18\">", out);
    for (size_t a = 0; a < 4; a++) {
        uint64_t ns = 0;
        for (size_t k = 0; k < p->torch.nbuiltin; k++)
            if (p->torch.builtin[k].name && !strcmp(p->torch.builtin[k].name, html_actions[a]))
                ns = p->torch.builtin[k].total_ns;
        if (!ns || !p->wall_ns)
            continue;
        shown += ns;
        double w = W * (double)ns / (double)p->wall_ns;
        char t[32];
        format_ns((double)ns, t, sizeof t);
        fprintf(out,
                "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"18\" fill=\"%s\"><title>%s "
                "%s (%.1f%%)</title></rect>",
                x, w, html_action_colors[a], html_actions[a], t,
                100.0 * (double)ns / (double)p->wall_ns);
        x += w;
    }
    if (p->wall_ns > shown && x < W)
        fprintf(out,
                "<rect x=\"%.1f\" y=\"0\" width=\"%.1f\" height=\"18\" fill=\"%s\"><title>other "
                "(no training action) %.1f%%</title></rect>",
                x, W - x, html_action_colors[4],
                100.0 * (double)(p->wall_ns - shown) / (double)p->wall_ns);
    fputs("</svg>", out);
}

/* GPU busy of one device over the wall time in HTML_BUSY_BINS bins: the share of each bin
 * some kernel, copy or set of the device covered (overlaps counted once per op, capped). */
static void html_busy_strip(FILE *out, const struct model_process *p, uint32_t device)
{
    double bins[HTML_BUSY_BINS] = {0};
    uint64_t t0 = p->wall_start_ns, wall = p->wall_ns;
    double bw = (double)wall / HTML_BUSY_BINS;
    for (size_t i = 0; i < p->gpu.nops && wall; i++) {
        const struct model_gpu_op *op = &p->gpu.ops[i];
        if (op->device != device || op->end_ns <= t0 || op->start_ns >= t0 + wall)
            continue;
        double s = (double)(op->start_ns < t0 ? 0 : op->start_ns - t0);
        double e = (double)(op->end_ns - t0 > wall ? wall : op->end_ns - t0);
        for (size_t b = (size_t)(s / bw); b < HTML_BUSY_BINS && (double)b * bw < e; b++) {
            double lo = (double)b * bw, hi = lo + bw;
            double cover = (e < hi ? e : hi) - (s > lo ? s : lo);
            if (cover > 0)
                bins[b] += cover / bw;
        }
    }
    fputs("<svg class=\"bar\" width=\"900\" height=\"18\">", out);
    for (size_t b = 0; b < HTML_BUSY_BINS; b++) {
        double v = bins[b] > 1 ? 1 : bins[b];
        fprintf(out,
                "<rect x=\"%.1f\" y=\"0\" width=\"4.6\" height=\"18\" fill=\"rgb(%d,%d,%d)\">"
                "<title>%.0f%% busy</title></rect>",
                (double)b * 4.5, 235 - (int)(v * 200), 235 - (int)(v * 120), 235 - (int)(v * 40),
                100 * v);
    }
    fputs("</svg>", out);
}

/* The process's communication: the time its calls cover (overlaps once, as the steps count
 * it) and its collectives, a torch.distributed one once for its two records (comm_pair.h). */
static void html_comm_share(FILE *out, const struct model_process *p)
{
    uint64_t ns, calls;
    struct model_comm read = {0}; /* a summary keeps the calls in a section of their own */
    if (p->summary_file) {
        char err[512];
        if (summary_file_read_comm(p, 0, &read, err, sizeof err) != 0)
            format_say(stderr, "warning: %s", err);
    }
    comm_pair_process(p->summary_file ? &read : &p->comm, &calls, &ns);
    summary_file_free_comm(&read);
    if (!calls)
        return;
    char t[32];
    format_ns((double)ns, t, sizeof t);
    double share = p->wall_ns ? 100.0 * (double)ns / (double)p->wall_ns : 0;
    fprintf(out, "<br><small>communication: %s in %" PRIu64 " calls (%.1f%% of wall)</small>", t,
            calls, share > 100 ? 100 : share);
}

void html_timeline(FILE *out, const struct summary *s)
{
    size_t stepped = 0, actions = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        stepped += s->procs[i]->steps.nsteps > 0;
        actions += !s->procs[i]->steps.nsteps && s->procs[i]->torch.nbuiltin;
    }
    fputs("<section id=\"timeline\"><h2>Timeline overview</h2>\n<p class=\"note\">Per "
          "process, over its whole wall time: ",
          out);
    if (stepped)
        fputs("a process with training steps as its startup, every step split into the parts "
              "the Training steps section gives (communication: the part no op hides; a wait "
              "inside backward is communication, not backward), and its teardown; ",
              out);
    if (actions)
        fputs("a process without steps as its training actions' shares (forward, backward, "
              "optimizer_step, dataloader_next as the Python call tree shows them, a wait "
              "inside one included); ",
              out);
    fputs("each GPU's busy share over the run (darker: busier), and the share of the wall time "
          "spent in communication calls (NCCL, MPI, torch.distributed; --comm and --stragglers "
          "have the detail).</p>\n",
          out);
    if (stepped)
        html_steps_wall_legend(out);
    if (actions) {
        fputs("<div>", out);
        for (size_t a = 0; a < 5; a++)
            fprintf(out, "<span class=\"key\" style=\"background:%s\"></span>%s ",
                    html_action_colors[a], a < 4 ? html_actions[a] : "other");
        fputs("</div>\n", out);
    }
    fputs("<table class=\"tl\">\n", out);
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        char wall[32];
        format_ns((double)p->wall_ns, wall, sizeof wall);
        fputs("<tr><th>", out);
        html_proc_label(out, p);
        fprintf(out, "<br><small>%s</small></th><td>", wall);
        if (p->steps.nsteps)
            html_steps_wall_bar(out, p);
        else if (p->torch.nbuiltin)
            html_action_bar(out, p);
        else
            fputs("<small>no training actions in the Python call tree</small>", out);
        html_comm_share(out, p);
        fputs("</td></tr>\n", out);
        for (size_t b = 0; b < p->gpu.nbusy; b++) {
            const struct model_gpu_busy *d = &p->gpu.busy[b];
            if (d->stream != -1)
                continue;
            fprintf(out, "<tr><th>GPU %u<br><small>busy %.1f%%</small></th><td>", d->device,
                    p->wall_ns ? 100.0 * (double)d->busy_ns / (double)p->wall_ns : 0.0);
            html_busy_strip(out, p, d->device);
            fputs("</td></tr>\n", out);
        }
    }
    fputs("</table>\n", out);
    fputs("</section>\n", out);
}

/* One device's curve: max per bucket of time, so the peak survives the downsampling. */
static void html_memory_curve(FILE *out, const struct model_process *p,
                              const struct model_torch_memory *m)
{
    uint64_t tmax = m->timeline[m->ntimeline - 1].ns, tmin = m->timeline[0].ns;
    int64_t vmax = m->peak_bytes > 0 ? m->peak_bytes : 1;
    for (size_t k = 0; k < m->ntimeline; k++)
        if (m->timeline[k].live > vmax)
            vmax = m->timeline[k].live;
    /* L: the y axis's labels at the left */
    double W = 900, H = 160, L = 70, span = tmax > tmin ? (double)(tmax - tmin) : 1;
    char device[48], peak[32];
    model_torch_device_name(m->dev_type, m->dev_index, device, sizeof device);
    format_bytes((uint64_t)vmax, peak, sizeof peak);
    fputs("<div class=\"mem\"><h3>", out);
    html_proc_label(out, p);
    const struct model_torch_memory_part *q = &m->part;
    fprintf(out, ", %s: peak %s", device, peak);
    if (q->window != MODEL_WINDOW_ALL) {
        char grew[32];
        int64_t d = model_torch_memory_growth(q);
        format_bytes(d > 0 ? (uint64_t)d / (q->steps > 1 ? q->steps - 1 : 1) : 0, grew,
                     sizeof grew);
        fprintf(out, "; %s shaded", model_window_name(q->window));
        if (q->steps > 1 && d > 0)
            fprintf(out, ", live bytes +%s per step after the first", grew);
        else if (q->steps > 1)
            fputs(", no growth after the first step", out);
    }
    fprintf(out,
            "</h3><svg class=\"memcurve\" width=\"%.0f\" height=\"%.0f\">"
            "<rect x=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#fafafa\" stroke=\"#ccc\"/>",
            W + L, H + 4, L, W, H + 4);
    if (q->window != MODEL_WINDOW_ALL) { /* the part the tables cover, clipped to the curve */
        double a = (double)q->start_ns - (double)tmin, b = a + (double)q->window_ns;
        a = a < 0 ? 0 : a > span ? span : a;
        b = b < a ? a : b > span ? span : b;
        fprintf(out, "<rect x=\"%.1f\" width=\"%.1f\" height=\"%.0f\" fill=\"#e8f0e0\"/>",
                L + W * a / span, W * (b - a) / span, H + 4);
    }
    /* the y axis: live bytes at 0, half and the top, with grid lines */
    for (int k = 0; k <= 2; k++) {
        char label[32];
        double v = (double)vmax * k / 2, ty = 2 + H - H * k / 2.0;
        format_bytes((uint64_t)v, label, sizeof label);
        fprintf(out,
                "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.0f\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>",
                L, L + W, ty, ty, L - 4,
                ty + (k == 2   ? 9
                      : k == 0 ? -2
                               : 3),
                label);
    }
    fprintf(out,
            "<polyline transform=\"translate(%.0f,0)\" fill=\"none\" stroke=\"#4c78a8\" "
            "stroke-width=\"1.2\" points=\"",
            L);
    /* A step curve from 0 bytes at the left; the last level held to the right edge. */
    size_t bucket = (m->ntimeline + HTML_MEMORY_POINTS - 1) / HTML_MEMORY_POINTS;
    if (!bucket)
        bucket = 1;
    double y = 2 + H;
    fprintf(out, "0,%.1f ", y);
    for (size_t k = 0; k < m->ntimeline; k += bucket) {
        size_t best = k;
        for (size_t j = k; j < k + bucket && j < m->ntimeline; j++)
            if (m->timeline[j].live > m->timeline[best].live)
                best = j;
        double x = W * (double)(m->timeline[best].ns - tmin) / span;
        fprintf(out, "%.1f,%.1f ", x, y);
        y = 2 + H - H * (double)m->timeline[best].live / (double)vmax;
        fprintf(out, "%.1f,%.1f ", x, y);
    }
    fprintf(out, "%.1f,%.1f", W, y);
    char t0[32], t1[32];
    format_ns((double)tmin, t0, sizeof t0);
    format_ns((double)tmax, t1, sizeof t1);
    fprintf(out,
            "\"/></svg><div class=\"axis\">y: live tensor bytes; x: %s .. %s since the "
            "process start; %zu changes%s</div></div>\n",
            t0, t1, m->ntimeline, bucket > 1 ? " (the largest of each span drawn)" : "");
}

void html_memory(FILE *out, const struct summary *s)
{
    int any = 0;
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        for (size_t d = 0; d <= p->torch.ndevices; d++) {
            const struct model_torch_memory *m = d ? &p->torch.devices[d - 1] : &p->torch.memory;
            if (m->ntimeline < 1)
                continue;
            if (!any++)
                fputs("<section id=\"memory\"><h2>Tensor memory over time</h2>\n", out);
            html_memory_curve(out, p, m);
        }
    }
    if (any)
        fputs("</section>\n", out);
}
