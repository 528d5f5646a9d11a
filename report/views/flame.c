/* flame: the frame tree (children merged by name), laid out root at the bottom with widths
 * by weight, and the SVG with its script. */
#define _GNU_SOURCE /* qsort_r */
#include "flame.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export.h"
#include "format.h"
#include "out_file.h"
#include "stacks_view.h"

#define FLAME_WIDTH 1200.0
#define FLAME_PAD 10.0
#define FLAME_FRAME_H 16.0
#define FLAME_TOP 50.0    /* title, buttons */
#define FLAME_BOTTOM 24.0 /* the details line */
#define FLAME_MIN_PX 0.1  /* narrower frames (and what is above them) are left out */
/* At most this many frames drawn, the widest (ties: none of them), so that a page stays a
 * few MB and opens at once whatever the trace: about 250 bytes a frame. */
#define FLAME_MAX_FRAMES 4000
#define FLAME_NAME_MAX 300 /* characters of a name in the title and data-n */

static void flame_oom(void)
{
    fprintf(stderr, "profreport: out of memory\n");
    exit(1);
}

static size_t flame_new_node(struct flame *fl, const char *name, size_t len)
{
    if (fl->n == fl->cap) {
        fl->cap = fl->cap ? fl->cap * 2 : 256;
        struct flame_node *n = realloc(fl->nodes, fl->cap * sizeof *n);
        if (!n)
            flame_oom();
        fl->nodes = n;
    }
    char *copy = malloc(len + 1);
    if (!copy)
        flame_oom();
    memcpy(copy, name, len);
    copy[len] = 0;
    fl->nodes[fl->n] = (struct flame_node){copy, 0, SIZE_MAX, SIZE_MAX};
    return fl->n++;
}

void flame_init(struct flame *fl)
{
    memset(fl, 0, sizeof *fl);
    flame_new_node(fl, "all", 3);
    fl->depth = 1;
}

void flame_free(struct flame *fl)
{
    for (size_t i = 0; i < fl->n; i++)
        free(fl->nodes[i].name);
    free(fl->nodes);
    memset(fl, 0, sizeof *fl);
}

/* The child of parent named name[0..len), made when absent. The child looked up last is
 * kept first in the list: folded lines come in depth-first order. */
static size_t flame_child(struct flame *fl, size_t parent, const char *name, size_t len)
{
    size_t prev = SIZE_MAX;
    for (size_t c = fl->nodes[parent].first_child; c != SIZE_MAX; c = fl->nodes[c].next_sibling) {
        if (strlen(fl->nodes[c].name) == len && !memcmp(fl->nodes[c].name, name, len)) {
            if (prev != SIZE_MAX) { /* move to the front */
                fl->nodes[prev].next_sibling = fl->nodes[c].next_sibling;
                fl->nodes[c].next_sibling = fl->nodes[parent].first_child;
                fl->nodes[parent].first_child = c;
            }
            return c;
        }
        prev = c;
    }
    size_t c = flame_new_node(fl, name, len);
    fl->nodes[c].next_sibling = fl->nodes[parent].first_child;
    fl->nodes[parent].first_child = c;
    return c;
}

static void flame_add_line(struct flame *fl, char *line)
{
    size_t len = strlen(line);
    while (len && (line[len - 1] == '\n' || line[len - 1] == '\r'))
        line[--len] = 0;
    char *sp = strrchr(line, ' ');
    if (!sp || sp == line)
        return;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(sp + 1, &end, 10);
    if (errno || end == sp + 1 || *end || !v)
        return;
    *sp = 0;
    size_t node = 0, depth = 1;
    fl->nodes[0].value += v;
    for (char *f = line; f;) {
        char *semi = strchr(f, ';');
        size_t flen = semi ? (size_t)(semi - f) : strlen(f);
        node = flame_child(fl, node, f, flen);
        fl->nodes[node].value += v;
        depth++;
        f = semi ? semi + 1 : NULL;
    }
    if (depth > fl->depth)
        fl->depth = depth;
}

void flame_read_folded(struct flame *fl, FILE *in)
{
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, in) != -1)
        flame_add_line(fl, line);
    free(line);
}

void flame_build_python(struct flame *fl, const struct summary *s)
{
    FILE *tmp = tmpfile();
    if (!tmp)
        return;
    export_folded_stream(tmp, s, 1, s->phase);
    rewind(tmp);
    flame_read_folded(fl, tmp);
    fclose(tmp);
}

const char *flame_python_title(const struct summary *s, int section)
{
    switch (s->phase) {
    case EXPORT_PHASE_STEPS:
        return section ? "inside the training steps' phases (data loading, forward, backward, "
                         "optimizer) of every step, warm-up included; startup and the rest "
                         "left out (--phase all: the whole process, --phase startup: before "
                         "the first step)"
                       : "Python call stacks in the training steps' phases, warm-up included "
                         "(us of wall time; --phase all: the whole process)";
    case EXPORT_PHASE_STEADY: {
        /* which calls: the calls of at least PROF_PY_SPAN_US (0), the Python table's every
         * call in some processes (1), in all (2, below); long and short */
        static const char *const calls[2][2] = {
            {"calls of at least PROF_PY_SPAN_US; a shorter call's time is its caller's",
             "calls of at least PROF_PY_SPAN_US"},
            {"every call in the processes whose Python table holds those steps; in the "
             "others, calls of at least PROF_PY_SPAN_US, a shorter call's time its caller's",
             "every call, or in some processes calls of at least PROF_PY_SPAN_US"}};
        static char title[512];
        char which[192], steps[96] = "each process's steps of its Python table";
        int exact = export_folded_steady_exact(s);
        uint64_t a, b;
        if (exact == 2 && export_folded_steady_steps(s, &a, &b))
            snprintf(steps, sizeof steps, "steps %" PRIu64 "-%" PRIu64 ", the Python table's", a,
                     b);
        if (exact == 2)
            snprintf(which, sizeof which, section ? "every call, exact: %s" : "every call: %s",
                     steps);
        else
            snprintf(which, sizeof which, "%s", calls[exact][!section]);
        snprintf(title, sizeof title,
                 section ? "in the steady training steps, warm-up left out (%s; --phase steps: "
                           "every step's phases, exact; --phase all: the whole process)"
                         : "Python call stacks in the steady training steps (us of wall time; "
                           "%s)",
                 which);
        return title;
    }
    case EXPORT_PHASE_STARTUP:
        return section ? "before the first training step (calls of at least PROF_PY_SPAN_US; "
                         "a shorter call's time is its caller's; --phase steps: the steps' "
                         "phases)"
                       : "Python call stacks before the first training step (us of wall "
                         "time; calls of at least PROF_PY_SPAN_US)";
    default:
        return section ? "of the whole process" : "Python call stacks (us of wall time)";
    }
}

int flame_build_stacks(struct flame *fl, struct model_process *const *procs, size_t n,
                       const struct stacks_view_options *o, FILE *err)
{
    FILE *tmp = tmpfile(), *sink = fopen("/dev/null", "w");
    if (!tmp || !sink) {
        fprintf(err, "profreport: cannot make a temporary file: %s\n", strerror(errno));
        if (tmp)
            fclose(tmp);
        if (sink)
            fclose(sink);
        return 1;
    }
    struct stacks_view_options mine = *o;
    mine.folded_stream = tmp;
    mine.folded_path = NULL;
    mine.json = 0;
    int rc = stacks_view(sink, err, procs, n, &mine);
    rewind(tmp);
    flame_read_folded(fl, tmp);
    fclose(tmp);
    fclose(sink);
    return rc;
}

/* XML text of s: markup characters as entities, control characters as format_escape
 * spells them; at most max characters (bytes of s) kept, ".." after a cut. */
static void flame_xml(FILE *out, const char *s, size_t max)
{
    char *esc = format_escape_dup(s);
    const char *t = esc ? esc : s;
    size_t len = strlen(t), keep = len > max ? (max > 2 ? max - 2 : 0) : len;
    for (size_t i = 0; i < keep; i++) {
        switch (t[i]) {
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
            fputc(t[i], out);
        }
    }
    if (keep < len)
        fputs("..", out);
    free(esc);
}

static uint32_t flame_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static int flame_cmp_name(const void *a, const void *b, void *arg)
{
    const struct flame *fl = arg;
    return strcmp(fl->nodes[*(const size_t *)a].name, fl->nodes[*(const size_t *)b].name);
}

/* Our script (no library): zoom on click, search by regular expression, reset. Frames are
 * <g class="f" data-n="name"> with a rect and a text. */
static const char flame_script[] =
    "(function(){\n"
    "var svg=document.getElementById('flamegraph');if(!svg)return;\n"
    "var X0=10,WW=+svg.getAttribute('data-w'),fr=[].slice.call(svg.querySelectorAll('g.f'));\n"
    "var det=svg.querySelector('#fg-details'),mt=svg.querySelector('#fg-matched');\n"
    "var un=svg.querySelector('#fg-reset');\n"
    "fr.forEach(function(g){var r=g.querySelector('rect');g._x=+r.getAttribute('x');\n"
    " g._w=+r.getAttribute('width');g._y=+r.getAttribute('y');g._f=r.getAttribute('fill');\n"
    " g._n=g.getAttribute('data-n');g._t=g.querySelector('title').textContent;\n"
    " g.addEventListener('click',function(){zoom(g)});\n"
    " g.addEventListener('mouseover',function(){det.textContent=g._t});\n"
    " g.addEventListener('mouseout',function(){det.textContent=' '});});\n"
    "function fit(g,x,w){var r=g.querySelector('rect'),t=g.querySelector('text');\n"
    " r.setAttribute('x',x.toFixed(2));r.setAttribute('width',w.toFixed(2));\n"
    " t.setAttribute('x',(x+3).toFixed(2));var c=Math.floor((w-6)/7),n=g._n;\n"
    " t.textContent=c<3?'':(n.length<=c?n:n.slice(0,c-2)+'..');}\n"
    "function zoom(z){var e=1e-6;fr.forEach(function(f){var show;\n"
    " if(f._y>z._y){show=f._x<=z._x+e&&f._x+f._w>=z._x+z._w-e;if(show)fit(f,X0,WW);}\n"
    " else{var nw=f._w/z._w*WW;show=f._x>=z._x-e&&f._x+f._w<=z._x+z._w+e&&nw>=0.1;\n"
    "  if(show)fit(f,(f._x-z._x)/z._w*WW+X0,nw);}\n"
    " f.style.display=show?'':'none';});un.style.opacity=1;}\n"
    "function reset(){fr.forEach(function(f){f.style.display='';fit(f,f._x,f._w)});\n"
    " un.style.opacity=0.3;}\n"
    "function search(term){var re;fr.forEach(function(f){f.querySelector('rect')\n"
    " .setAttribute('fill',f._f)});mt.textContent=' ';if(!term)return;\n"
    " try{re=new RegExp(term)}catch(x){return}var iv=[];\n"
    " fr.forEach(function(f){if(re.test(f._n)){f.querySelector('rect')\n"
    "  .setAttribute('fill','rgb(230,0,230)');iv.push([f._x,f._x+f._w]);}});\n"
    " iv.sort(function(a,b){return a[0]-b[0]});var tot=0,end=-1;\n"
    " iv.forEach(function(v){if(v[1]<=end)return;tot+=v[1]-Math.max(v[0],end);end=v[1];});\n"
    " mt.textContent='Matched: '+(100*tot/WW).toFixed(1)+'%';}\n"
    "un.addEventListener('click',reset);\n"
    "svg.querySelector('#fg-search').addEventListener('click',function(){\n"
    " search(window.prompt('Search (regular expression):',''))});\n"
    "svg.querySelector('#fg-clear').addEventListener('click',function(){search('')});\n"
    "window.addEventListener('keydown',function(e){if((e.ctrlKey||e.metaKey)&&e.keyCode===70)\n"
    " {e.preventDefault();search(window.prompt('Search (regular expression):',''));}});\n"
    "svg.flameSearch=search;svg.flameZoom=zoom;svg.flameReset=reset;\n"
    "svg.setAttribute('data-ready','1');})();\n";

struct flame_layout {
    FILE *out;
    const struct flame *fl;
    double scale; /* px per unit of weight */
    double height;
    uint64_t total;
    const char *unit;
    uint64_t min_value; /* frames of a smaller weight are not drawn */
};

static int flame_cmp_u64_desc(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The smallest weight drawn: FLAME_MIN_PX wide, and no more than FLAME_MAX_FRAMES frames
 * (a frame weighs at least what its children do, so what is drawn is a tree). Sets the
 * levels drawn and the frames left out. */
static uint64_t flame_min_value(const struct flame *fl, double scale, size_t *levels,
                                size_t *left_out)
{
    uint64_t min = (uint64_t)(FLAME_MIN_PX / scale);
    while ((double)min * scale < FLAME_MIN_PX)
        min++;
    uint64_t *v = malloc(fl->n * sizeof *v);
    size_t *stack = malloc(fl->n * sizeof *stack), *depth = malloc(fl->n * sizeof *depth);
    if (!v || !stack || !depth)
        flame_oom();
    size_t nv = 0;
    for (size_t i = 0; i < fl->n; i++)
        if (fl->nodes[i].value >= min)
            v[nv++] = fl->nodes[i].value;
    if (nv > FLAME_MAX_FRAMES) {
        qsort(v, nv, sizeof *v, flame_cmp_u64_desc);
        min = v[FLAME_MAX_FRAMES] + 1; /* ties at the cut: none of them */
    }
    /* the levels and the count of what is drawn */
    size_t top = 0, drawn = 0;
    *levels = 0;
    stack[top] = 0;
    depth[top++] = 1;
    while (top) {
        top--;
        size_t i = stack[top], d = depth[top];
        if (fl->nodes[i].value < min)
            continue;
        drawn++;
        if (d > *levels)
            *levels = d;
        for (size_t c = fl->nodes[i].first_child; c != SIZE_MAX; c = fl->nodes[c].next_sibling) {
            stack[top] = c;
            depth[top++] = d + 1;
        }
    }
    *left_out = fl->n - drawn;
    free(v);
    free(stack);
    free(depth);
    return min;
}

static void flame_frame(struct flame_layout *L, size_t i, double x, size_t depth)
{
    const struct flame_node *n = &L->fl->nodes[i];
    double w = (double)n->value * L->scale;
    if (n->value < L->min_value)
        return;
    double y = L->height - FLAME_BOTTOM - (double)(depth + 1) * FLAME_FRAME_H;
    uint32_t h = flame_hash(n->name);
    int api = !strcmp(n->name, "[CUDA API calls]");
    fputs("<g class=\"f\" data-n=\"", L->out);
    flame_xml(L->out, n->name, FLAME_NAME_MAX);
    fputs("\"><title>", L->out);
    flame_xml(L->out, n->name, FLAME_NAME_MAX);
    fprintf(L->out, " (%" PRIu64 " %s, %.2f%%)</title>", n->value, L->unit,
            L->total ? 100.0 * (double)n->value / (double)L->total : 0.0);
    if (api)
        fprintf(L->out,
                "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"15\" rx=\"2\" "
                "fill=\"rgb(%u,%u,230)\"/>",
                x, y, w, 60 + h % 40, 120 + (h >> 8) % 60);
    else
        fprintf(L->out,
                "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"15\" rx=\"2\" "
                "fill=\"rgb(%u,%u,%u)\"/>",
                x, y, w, 205 + h % 50, (h >> 8) % 230, (h >> 16) % 55);
    size_t chars = w > 6 ? (size_t)((w - 6) / 7) : 0;
    fprintf(L->out, "<text x=\"%.2f\" y=\"%.0f\">", x + 3, y + 11.5);
    if (chars >= 3)
        flame_xml(L->out, n->name, chars);
    fputs("</text></g>\n", L->out);

    size_t nc = 0;
    for (size_t c = n->first_child; c != SIZE_MAX; c = L->fl->nodes[c].next_sibling)
        nc++;
    if (!nc)
        return;
    size_t *kids = malloc(nc * sizeof *kids);
    if (!kids)
        flame_oom();
    nc = 0;
    for (size_t c = n->first_child; c != SIZE_MAX; c = L->fl->nodes[c].next_sibling)
        kids[nc++] = c;
    qsort_r(kids, nc, sizeof *kids, flame_cmp_name, (void *)L->fl);
    double cx = x;
    for (size_t k = 0; k < nc; k++) {
        flame_frame(L, kids[k], cx, depth + 1);
        cx += (double)L->fl->nodes[kids[k]].value * L->scale;
    }
    free(kids);
}

void flame_svg(FILE *out, const struct flame *fl, const char *title, const char *unit,
               int standalone)
{
    double inner = FLAME_WIDTH - 2 * FLAME_PAD;
    struct flame_layout L = {out, fl, 0, 0, fl->n ? fl->nodes[0].value : 0, unit, 1};
    L.scale = L.total ? inner / (double)L.total : 0;
    size_t levels = fl->depth, left_out = 0;
    if (L.total)
        L.min_value = flame_min_value(fl, L.scale, &levels, &left_out);
    L.height = FLAME_TOP + (double)levels * FLAME_FRAME_H + FLAME_BOTTOM;
    if (standalone)
        fputs("<?xml version=\"1.0\" standalone=\"no\"?>\n", out);
    fprintf(out,
            "<svg id=\"flamegraph\" version=\"1.1\" width=\"%.0f\" height=\"%.0f\" "
            "viewBox=\"0 0 %.0f %.0f\" data-w=\"%.0f\" xmlns=\"http://www.w3.org/2000/svg\">\n",
            FLAME_WIDTH, L.height, FLAME_WIDTH, L.height, inner);
    fputs("<!-- profrun flame graph; the script is profrun's own (no library): click a frame "
          "to zoom, Ctrl-F or Search to highlight by regular expression, Reset Zoom. -->\n",
          out);
    fputs("<style>#flamegraph text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}"
          "#flamegraph g.f{cursor:pointer}#flamegraph g.f:hover rect{stroke:#000;"
          "stroke-width:0.5}#flamegraph .fg-b{cursor:pointer;fill:#06c}</style>\n",
          out);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"#f8f8f0\"/>\n",
            FLAME_WIDTH, L.height);
    fprintf(out, "<text x=\"%.0f\" y=\"24\" text-anchor=\"middle\" style=\"font-size:17px\">",
            FLAME_WIDTH / 2);
    flame_xml(out, title, 200);
    fputs("</text>\n", out);
    if (left_out) {
        char w[32];
        snprintf(w, sizeof w, "%.2g", 100.0 * (double)L.min_value / (double)L.total);
        fprintf(out,
                "<text id=\"fg-left-out\" x=\"%.0f\" y=\"42\" text-anchor=\"middle\" "
                "style=\"font-size:11px\">%zu frames narrower than %s%% of the total not drawn "
                "(their time is in their caller's width)</text>\n",
                FLAME_WIDTH / 2, left_out, w);
    }
    fprintf(out,
            "<text id=\"fg-reset\" class=\"fg-b\" x=\"10\" y=\"24\" style=\"opacity:0.3\">"
            "Reset Zoom</text>\n<text id=\"fg-search\" class=\"fg-b\" x=\"%.0f\" y=\"24\">"
            "Search</text>\n<text id=\"fg-clear\" class=\"fg-b\" x=\"%.0f\" y=\"24\">Clear"
            "</text>\n<text id=\"fg-matched\" x=\"%.0f\" y=\"%.0f\"> </text>\n"
            "<text id=\"fg-details\" x=\"10\" y=\"%.0f\"> </text>\n",
            FLAME_WIDTH - 120, FLAME_WIDTH - 60, FLAME_WIDTH - 160, L.height - 8, L.height - 8);
    if (L.total)
        flame_frame(&L, 0, FLAME_PAD, 0);
    fputs("<script type=\"text/ecmascript\"><![CDATA[\n", out);
    fputs(flame_script, out);
    fputs("]]></script>\n</svg>\n", out);
}

int flame_svg_write(const char *path, const struct flame *fl, const char *title, const char *unit,
                    char *err, size_t errlen)
{
    struct out_file o;
    if (out_file_create(&o, path, 0666, err, errlen) != 0)
        return -1;
    flame_svg(o.f, fl, title, unit, 1);
    return out_file_commit(&o, 1, err, errlen);
}
