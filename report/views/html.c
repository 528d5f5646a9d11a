/* html: the one-file report. The page holds no event, only aggregates: the findings, the
 * timeline overview and memory curve (html_charts.c), the first HTML_ROWS rows of each table,
 * and the flame graph (flame.c). Its two scripts are ours: table sorting here, zoom and
 * search in the flame graph; no library, nothing fetched. */
#include "html.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "findings.h"
#include "flame.h"
#include "format.h"
#include "jobs.h"
#include "out_file.h"
#include "stacks_view.h"
#include "tables.h"

#define HTML_ROWS 50 /* rows per table: the page stays small whatever the run */

static const char html_style[] =
    "body{font-family:system-ui,sans-serif;margin:20px;color:#222;max-width:1260px}"
    "h1{font-size:22px}h2{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;"
    "margin-top:28px}h3{font-size:14px;margin:10px 0 4px}"
    "table.sortable{border-collapse:collapse;font-size:13px;margin:6px 0}"
    "table.sortable th,table.sortable td{padding:3px 8px;border-bottom:1px solid #eee}"
    "table.sortable th{background:#f2f2f2;cursor:pointer;text-align:left;user-select:none}"
    "table.sortable th.n,table.sortable td.n{text-align:right}"
    "th[data-dir=asc]:after{content:' \\25B2'}th[data-dir=desc]:after{content:' \\25BC'}"
    "td.name{max-width:620px;overflow-wrap:anywhere;font-family:monospace}"
    ".finding{border-left:4px solid #e45756;background:#fff5f5;padding:6px 10px;margin:8px 0}"
    ".finding .t{font-weight:600}.finding .w{font-family:monospace;color:#555}"
    ".note{color:#666;font-size:13px}table.tl th{text-align:right;font-weight:normal;"
    "font-size:13px;padding-right:8px;white-space:nowrap}"
    ".key{display:inline-block;width:12px;height:12px;margin:0 4px 0 10px}"
    ".axis{font-size:12px;color:#666}";

/* Ours: click a column header to sort by it (numbers by their data-v value). */
static const char html_script[] =
    "(function(){\n"
    "[].forEach.call(document.querySelectorAll('table.sortable'),function(t){\n"
    " var hs=t.tHead.rows[0].cells;\n"
    " [].forEach.call(hs,function(th,i){th.addEventListener('click',function(){\n"
    "  var num=th.className==='n',d=th.getAttribute('data-dir');\n"
    "  d=d?(d==='asc'?'desc':'asc'):(num?'desc':'asc');\n"
    "  var tb=t.tBodies[0],rows=[].slice.call(tb.rows);\n"
    "  rows.sort(function(a,b){var x=a.cells[i],y=b.cells[i];\n"
    "   var u=num?+x.getAttribute('data-v'):x.textContent,v=num?+y.getAttribute('data-v')"
    ":y.textContent;\n"
    "   return (u<v?-1:u>v?1:0)*(d==='asc'?1:-1);});\n"
    "  rows.forEach(function(r){tb.appendChild(r)});\n"
    "  [].forEach.call(hs,function(h){h.removeAttribute('data-dir')});\n"
    "  th.setAttribute('data-dir',d);});});});\n"
    "document.body.setAttribute('data-ready','1');})();\n";

void html_table_begin(FILE *out, const char *id, const char *title, size_t shown, size_t total,
                      const char *columns)
{
    fputs("<h3>", out); /* a title may hold a program's names (a scope's) */
    html_text(out, title);
    fputs("</h3>", out);
    if (shown < total)
        fprintf(out,
                "<p class=\"note\">the first %zu of %zu rows (profreport prints them "
                "all)</p>",
                shown, total);
    fprintf(out, "<table class=\"sortable\" id=\"%s\"><thead><tr>", id);
    /* columns: '|'-separated, a leading '>' for a number */
    for (const char *c = columns; *c;) {
        const char *bar = strchr(c, '|');
        size_t len = bar ? (size_t)(bar - c) : strlen(c);
        int num = *c == '>';
        fprintf(out, "<th%s>%.*s</th>", num ? " class=\"n\"" : "", (int)(len - (size_t)num),
                c + num);
        c += len + (bar ? 1 : 0);
    }
    fputs("</tr></thead><tbody>\n", out);
}

static void html_td_text(FILE *out, const char *s)
{
    fputs("<td class=\"name\">", out);
    html_text(out, s);
    fputs("</td>", out);
}

/* A kernel's cell: its name as the text tables show it, the whole name its title. */
static void html_td_kernel(FILE *out, const char *name)
{
    char kname[512];
    int shortened = 0;
    format_kernel_name(name, kname, sizeof kname, &shortened);
    if (!shortened) {
        html_td_text(out, name);
        return;
    }
    fputs("<td class=\"name\" title=\"", out);
    html_text(out, name);
    fputs("\">", out);
    html_text(out, kname);
    fputs("</td>", out);
}

static void html_td_u64(FILE *out, uint64_t v)
{
    fprintf(out, "<td class=\"n\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>", v, v);
}

void html_td_ns(FILE *out, double ns)
{
    char t[32];
    format_ns(ns, t, sizeof t);
    fprintf(out, "<td class=\"n\" data-v=\"%.0f\">%s</td>", ns, t);
}

static void html_td_pct(FILE *out, double pct)
{
    fprintf(out, "<td class=\"n\" data-v=\"%.4f\">%.1f%%</td>", pct, pct);
}

/* Bytes in torch's units ("16.00 Kb"), sorted by the signed count. */
static void html_td_mem(FILE *out, int64_t bytes)
{
    char t[32];
    tables_torch_memory(bytes, t, sizeof t);
    fprintf(out, "<td class=\"n\" data-v=\"%" PRId64 "\">%s</td>", bytes, t);
}

/* The text report's notes under the actions table (the forward's calls, folded scopes), a
 * paragraph each. */
static void html_actions_notes(FILE *out, const struct summary *s)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        report_oom();
    tables_actions_all_notes(m, s);
    fclose(m);
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        line += strspn(line, " ");
        if (*line) {
            fputs("<p class=\"note\">", out);
            html_text(out, line);
            fputs("</p>\n", out);
        }
    }
    free(buf);
}

static void html_findings(FILE *out, const struct summary *s)
{
    struct findings f;
    findings_build(&f, s);
    fputs("<section id=\"findings\"><h2>Findings</h2>\n", out);
    if (!f.n)
        fputs("<p class=\"note\">Nothing crossed a threshold in what these traces hold.</p>\n",
              out);
    for (size_t i = 0; i < f.n; i++) {
        fprintf(out, "<div class=\"finding\" data-kind=\"%s\"><div class=\"t\">", f.items[i].kind);
        html_text(out, f.items[i].title);
        fputs("</div><div>", out);
        html_text(out, f.items[i].evidence);
        fputs("</div>", out);
        if (f.items[i].where[0]) {
            fputs("<div class=\"w\">where: ", out);
            html_text(out, f.items[i].where);
            fputs("</div>", out);
        }
        fputs("</div>\n", out);
    }
    fputs("</section>\n", out);
    findings_free(&f);
}

/* A GPU table's title with the part its rows cover, as the text's. */
static void html_gpu_title(const struct summary *s, const char *name, char *title, size_t len)
{
    char note[512];
    const char *window = tables_gpu_window(s, note, sizeof note);
    snprintf(title, len, "%s%s%s%s%s%s", name, window ? " in " : "", window ? window : "",
             window ? " (" : "", window ? note : "", window ? ")" : "");
}

static void html_tables(FILE *out, const struct summary *s)
{
    fputs("<section id=\"tables\"><h2>Tables</h2><p class=\"note\">Click a column to sort."
          "</p>\n",
          out);
    size_t n;
    char title[700];
    if (s->napi) {
        n = s->napi < HTML_ROWS ? s->napi : HTML_ROWS;
        html_gpu_title(s, "API calls (CUDA runtime, cuBLAS, cuDNN, NCCL, MPI ...)", title,
                       sizeof title);
        html_table_begin(out, "t-api", title, n, s->napi,
                         "Name|Category|>Calls|>Errors|>Total|>Avg|>Max|>% API time|Library");
        for (size_t i = 0; i < n; i++) {
            const struct summary_api_row *r = &s->api[i];
            fputs("<tr>", out);
            html_td_text(out, r->name);
            html_td_text(out, model_category_name(r->category));
            html_td_u64(out, r->calls);
            html_td_u64(out, r->errors);
            html_td_ns(out, (double)r->total_ns);
            html_td_ns(out, r->avg_ns);
            html_td_ns(out, (double)r->max_ns);
            html_td_pct(out, r->percent);
            html_td_text(out, tables_api_library(r->name));
            fputs("</tr>\n", out);
        }
        fputs("</tbody></table>\n", out);
    }
    if (s->gpu.nkernels) {
        n = s->gpu.nkernels < HTML_ROWS ? s->gpu.nkernels : HTML_ROWS;
        html_gpu_title(s, "GPU kernels (as the GPU ran them)", title, sizeof title);
        html_table_begin(out, "t-kernels", title, n, s->gpu.nkernels,
                         "Kernel|>Calls|>GPU total|>Avg|>Max|>% GPU time");
        for (size_t i = 0; i < n; i++) {
            const struct summary_gpu_kernel_row *r = &s->gpu.kernels[i];
            fputs("<tr>", out);
            html_td_kernel(out, r->name);
            html_td_u64(out, r->calls);
            html_td_ns(out, (double)r->total_ns);
            html_td_ns(out, r->avg_ns);
            html_td_ns(out, (double)r->max_ns);
            html_td_pct(out, r->percent);
            fputs("</tr>\n", out);
        }
        fputs("</tbody></table>\n", out);
    }
    if (s->gpu.nactions) {
        n = s->gpu.nactions < HTML_ROWS ? s->gpu.nactions : HTML_ROWS;
        char base[320], title[360];
        snprintf(title, sizeof title, "Actions (%% of %s)",
                 tables_actions_base(&s->gpu, base, sizeof base));
        int has_gpu = tables_actions_have_gpu(s); /* as the text table */
        html_table_begin(out, "t-actions", title, n, s->gpu.nactions,
                         has_gpu ? "Action|>Calls|>Total|>Mean|>%|>GPU time|Source"
                                 : "Action|>Calls|>Total|>Mean|>%|Source");
        for (size_t i = 0; i < n; i++) {
            const struct summary_action_row *r = &s->gpu.actions[i];
            fputs("<tr>", out);
            html_td_text(out, r->name);
            html_td_u64(out, r->calls);
            html_td_ns(out, (double)r->total_ns);
            html_td_ns(out, r->mean_ns);
            html_td_pct(out, r->percent);
            if (has_gpu)
                html_td_ns(out, (double)r->gpu_ns);
            html_td_text(out, summary_action_source_name(r->source));
            fputs("</tr>\n", out);
        }
        fputs("</tbody></table>\n", out);
        html_actions_notes(out, s);
    }
    if (s->torch.nrows) {
        n = s->torch.nrows < HTML_ROWS ? s->torch.nrows : HTML_ROWS;
        /* as the text table: CPU Mem columns; no CUDA columns in a CPU-only run */
        int cuda = tables_torch_has_cuda(s);
        char note[512], title[700];
        const char *window = tables_torch_window(s, note, sizeof note);
        snprintf(title, sizeof title, "PyTorch operators%s%s%s%s%s%s", window ? " in " : "",
                 window ? window : "", window ? " (" : "", window ? note : "", window ? ")" : "",
                 cuda ? "" : " (no CUDA events: a CPU-only run)");
        html_table_begin(out, "t-ops", title, n, s->torch.nrows,
                         cuda ? "Name|>Calls|>Self CPU|>CPU total|>Self CUDA|>CUDA total|"
                                ">CPU Mem|>Self CPU Mem|>CUDA Mem|>Self CUDA Mem"
                              : "Name|>Calls|>Self CPU|>CPU total|>CPU Mem|>Self CPU Mem");
        for (size_t i = 0; i < n; i++) {
            const struct summary_op_row *r = &s->torch.rows[i];
            fputs("<tr>", out);
            html_td_text(out, r->name);
            html_td_u64(out, r->calls);
            html_td_ns(out, (double)r->self_cpu_ns);
            html_td_ns(out, (double)r->cpu_total_ns);
            if (cuda) {
                html_td_ns(out, (double)r->self_cuda_ns);
                html_td_ns(out, (double)r->cuda_total_ns);
            }
            html_td_mem(out, r->cpu_mem);
            html_td_mem(out, r->self_cpu_mem);
            if (cuda) {
                html_td_mem(out, r->dev_mem);
                html_td_mem(out, r->self_dev_mem);
            }
            fputs("</tr>\n", out);
        }
        fputs("</tbody></table>\n", out);
    }
    if (s->py.nfuncs) {
        n = s->py.nfuncs < HTML_ROWS ? s->py.nfuncs : HTML_ROWS;
        char note[768], title[900];
        const char *window = tables_python_window(s, note, sizeof note);
        snprintf(title, sizeof title, "Python functions%s%s%s%s%s", window ? " in " : "",
                 window ? window : "", window ? " (" : "", window ? note : "", window ? ")" : "");
        /* as the text table: API and GPU columns when some function has them */
        char spec[128];
        snprintf(spec, sizeof spec, "Function|>ncalls|>tottime|>cumtime%s%s",
                 s->py.any_api ? "|>CUDA API" : "", s->py.any_gpu ? "|>GPU time" : "");
        html_table_begin(out, "t-python", title, n, s->py.nfuncs, spec);
        char label[1024];
        for (size_t i = 0; i < n; i++) {
            const struct pystats_func *f = &s->py.funcs[s->py.order[i]];
            pystats_func_label(f, 1, label, sizeof label);
            fputs("<tr>", out);
            html_td_text(out, label);
            html_td_u64(out, f->ncalls);
            html_td_ns(out, (double)f->tottime_ns);
            html_td_ns(out, (double)f->cumtime_ns);
            if (s->py.any_api)
                html_td_ns(out, (double)f->api_ns);
            if (s->py.any_gpu)
                html_td_ns(out, (double)f->gpu_ns);
            fputs("</tr>\n", out);
        }
        fputs("</tbody></table>\n", out);
    }
    html_table_begin(out, "t-processes", "Processes", s->nprocs, s->nprocs,
                     "File|>PID|>Rank|Host|>Wall|>Lost|Command");
    for (size_t i = 0; i < s->nprocs; i++) {
        const struct model_process *p = s->procs[i];
        fputs("<tr>", out);
        html_td_text(out, p->file);
        fprintf(out, "<td class=\"n\" data-v=\"%lld\">%lld</td>", (long long)p->pid,
                (long long)p->pid);
        if (p->rank >= 0)
            fprintf(out, "<td class=\"n\" data-v=\"%lld\">%lld</td>", (long long)p->rank,
                    (long long)p->rank);
        else /* no rank: sorted before rank 0 */
            fputs("<td class=\"n\" data-v=\"-1\">-</td>", out);
        html_td_text(out, p->host ? p->host : "?");
        html_td_ns(out, (double)p->wall_ns);
        html_td_u64(out, p->lost);
        html_td_text(out, p->command ? p->command : "?");
        fputs("</tr>\n", out);
    }
    fputs("</tbody></table></section>\n", out);
}

static void html_document(FILE *out, const struct summary *s)
{
    fputs("<!DOCTYPE html>\n<!-- profrun report: one self-contained file, no network. Its "
          "scripts (table sorting, flame graph zoom and search) are profrun's own, a few "
          "dozen lines each; no library. -->\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
          "<title>profrun report</title>\n<script>window.onerror=function(m){var e=document."
          "documentElement;e.setAttribute('data-js-errors',(e.getAttribute('data-js-errors')"
          "||'')+m+';')};</script>\n<style>",
          out);
    fputs(html_style, out);
    fputs("</style></head><body>\n<h1>profrun report</h1>\n<p class=\"note\">", out);
    uint64_t wall = 0;
    for (size_t i = 0; i < s->nprocs; i++)
        wall = s->procs[i]->wall_ns > wall ? s->procs[i]->wall_ns : wall;
    char w[32];
    format_ns((double)wall, w, sizeof w);
    fprintf(out, "%zu process%s, longest wall time %s", s->nprocs, s->nprocs == 1 ? "" : "es", w);
    for (size_t i = 0; i < s->nruns; i++)
        if (s->runs[i].id[0]) {
            fputs("; run ", out);
            html_text(out, s->runs[i].id);
        }
    if (s->nprocs && s->procs[0]->command) {
        fputs("; ", out);
        html_text(out, s->procs[0]->command);
    }
    fputs("</p>\n", out);
    html_findings(out, s);
    html_steps(out, s);
    html_timeline(out, s);
    html_memory(out, s);
    if (s->py.nfuncs) {
        struct flame fl;
        flame_init(&fl);
        flame_build_python(&fl, s);
        fprintf(out, "<section id=\"flame\"><h2>Flame graph (Python, wall time %s)</h2>\n",
                flame_python_title(s, 1));
        flame_svg(out, &fl, flame_python_title(s, 0), "us", 0);
        fputs("</section>\n", out);
        flame_free(&fl);
    }
    html_tables(out, s);
    fputs("<script>", out);
    fputs(html_script, out);
    fputs("</script>\n</body></html>\n", out);
}

static int html_write(const char *path, const struct summary *s, FILE *err)
{
    char msg[512];
    struct out_file o;
    if (out_file_create(&o, path, 0666, msg, sizeof msg) == 0) {
        html_document(o.f, s);
        if (out_file_commit(&o, 1, msg, sizeof msg) == 0)
            return 0;
    }
    format_say(err, "%s", msg);
    return -1;
}

int html_write_files(const char *html_path, const char *flame_path, const struct summary *s,
                     FILE *err)
{
    int rc = 0;
    if (html_path && html_write(html_path, s, err) != 0)
        rc = -1;
    if (flame_path) {
        if (!s->py.nfuncs) {
            format_say(err,
                       "the inputs hold no Python calls; %s not written (with "
                       "PROF_SAMPLE_HZ traces: --samples --flamegraph FILE)",
                       flame_path);
            return -1;
        }
        struct flame fl;
        flame_init(&fl);
        flame_build_python(&fl, s);
        char msg[512];
        if (flame_svg_write(flame_path, &fl, flame_python_title(s, 0), "us", msg, sizeof msg)) {
            format_say(err, "%s", msg);
            rc = -1;
        }
        flame_free(&fl);
    }
    return rc;
}

int html_write_stacks_flame(const char *flame_path, struct model_process *const *procs, size_t n,
                            const struct stacks_view_options *o, FILE *err)
{
    struct flame fl;
    flame_init(&fl);
    int rc = flame_build_stacks(&fl, procs, n, o, err);
    if (!rc) {
        char msg[512];
        if (flame_svg_write(flame_path, &fl, o->api_name ? "Call paths (us)" : "CPU samples",
                            o->api_name ? "us" : "samples", msg, sizeof msg)) {
            format_say(err, "%s", msg);
            rc = 1;
        }
    }
    flame_free(&fl);
    return rc;
}
