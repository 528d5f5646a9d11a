/* stacks: the call paths that made the calls of one API (--stacks NAME), or the CPU
 * samples (--samples), symbolized and merged over the processes by their text; and the
 * same as folded stacks (--stacks-folded FILE) for flame graph tools.
 *
 * A path is printed innermost first. The profiler's own frames (the capture inside
 * libprof.so, the signal trampoline of a sample) are dropped. A sample taken in Python
 * code gets the thread's Python call path then (its innermost call-tree node) in place of
 * the interpreter's own frames, as py-spy --native shows them. */
#include "stacks_view.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "alloc.h"
#include "format.h"
#include "model.h"
#include "model_stacks.h"
#include "out_file.h"
#include "symbols.h"

#define STACKS_VIEW_MAX_FRAMES 512

struct stacks_path {
    char *key;    /* frame labels joined by '\n', innermost first */
    char *folded; /* the same root first, joined by ';' */
    uint64_t count, ns;
};

/* Samples by the training action they fell in (model_torch_action_of_node). */
struct stacks_action {
    const char *name; /* static: the action's name, or NULL for none */
    uint64_t count;
};

/* Samples by the innermost PyTorch op or NVTX range they were taken in (NULL: none),
 * merged over the processes by name. */
struct stacks_named {
    const char *name; /* into a process's strings */
    uint64_t count;
};

struct stacks_names {
    struct stacks_named *rows;
    size_t n, cap;
};

struct stacks_paths {
    struct stacks_path *rows;
    size_t n, cap;
    struct u64map index; /* hash of key -> index + 1 (probing on a different key) */
    uint64_t total_count, total_ns;
    struct stacks_action actions[8];
    size_t nactions;
    struct stacks_names ops, ranges;
};

static void stacks_names_add(struct stacks_names *ns, const char *name, uint64_t count)
{
    for (size_t i = 0; i < ns->n; i++)
        if (ns->rows[i].name == name ||
            (name && ns->rows[i].name && !strcmp(ns->rows[i].name, name))) {
            ns->rows[i].count += count;
            return;
        }
    ns->rows = report_grow(ns->rows, &ns->cap, ns->n + 1, sizeof *ns->rows);
    ns->rows[ns->n++] = (struct stacks_named){name, count};
}

static void stacks_names_collect(struct stacks_names *ns, const struct model_process *p,
                                 const struct model_sample_tally *t)
{
    for (size_t i = 0; i < t->n; i++)
        stacks_names_add(ns, t->rows[i].sid ? u64map_get_ptr(&p->strings, t->rows[i].sid) : NULL,
                         t->rows[i].count);
}

static int stacks_named_cmp(const void *a, const void *b)
{
    const struct stacks_named *x = a, *y = b;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    if (!x->name || !y->name)
        return !x->name - !y->name; /* "none" last among equals */
    return strcmp(x->name, y->name);
}

static int stacks_names_any(const struct stacks_names *ns)
{
    for (size_t i = 0; i < ns->n; i++)
        if (ns->rows[i].name)
            return 1;
    return 0;
}

static void stacks_action_add(struct stacks_paths *ps, const char *name, uint64_t count)
{
    for (size_t i = 0; i < ps->nactions; i++)
        if (ps->actions[i].name == name ||
            (name && ps->actions[i].name && !strcmp(ps->actions[i].name, name))) {
            ps->actions[i].count += count;
            return;
        }
    if (ps->nactions < sizeof ps->actions / sizeof ps->actions[0])
        ps->actions[ps->nactions++] = (struct stacks_action){name, count};
}

static uint64_t stacks_view_hash(const char *s)
{
    uint64_t h = 0xcbf29ce484222325ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h ? h : 1;
}

static void stacks_paths_add(struct stacks_paths *ps, char *key, char *folded, uint64_t count,
                             uint64_t ns)
{
    ps->total_count += count;
    ps->total_ns += ns;
    for (uint64_t h = stacks_view_hash(key);; h++) {
        uint64_t *slot = u64map_slot(&ps->index, h);
        if (!slot)
            report_oom();
        if (*slot && strcmp(ps->rows[*slot - 1].key, key) != 0)
            continue;
        if (*slot) {
            ps->rows[*slot - 1].count += count;
            ps->rows[*slot - 1].ns += ns;
            free(key);
            free(folded);
            return;
        }
        ps->rows = report_grow(ps->rows, &ps->cap, ps->n + 1, sizeof *ps->rows);
        ps->rows[ps->n] = (struct stacks_path){key, folded, count, ns};
        *slot = ++ps->n;
        return;
    }
}

/* A growing string. */
struct stacks_text {
    char *s;
    size_t len, cap;
};

static void stacks_text_add(struct stacks_text *t, const char *part)
{
    size_t n = strlen(part);
    t->s = report_grow(t->s, &t->cap, t->len + n + 1, 1);
    memcpy(t->s + t->len, part, n + 1);
    t->len += n;
}

static void stacks_frame_label(const struct symbols_frame *f, char *buf, size_t len)
{
    const char *obj = f->object ? strrchr(f->object, '/') : NULL;
    obj = obj ? obj + 1 : f->object;
    if (f->function && f->file && f->line)
        snprintf(buf, len, "%s%s  %s:%d", f->function, f->inlined ? " (inlined)" : "", f->file,
                 f->line);
    else if (f->function)
        snprintf(buf, len, "%s  [%s]", f->function, obj ? obj : "?");
    else if (f->object)
        snprintf(buf, len, "%s+0x%" PRIx64, f->object, f->offset);
    else
        snprintf(buf, len, "0x%" PRIx64 " (no loaded object)", f->offset);
}

static int stacks_is_interpreter(const struct symbols_frame *f)
{
    const char *fn = f->function;
    return fn && (!strncmp(fn, "_PyEval_", 8) || !strncmp(fn, "PyEval_", 7) ||
                  !strncmp(fn, "_PyFunction_", 12) || !strncmp(fn, "_PyObject_Vectorcall", 20) ||
                  !strncmp(fn, "PyObject_Vectorcall", 19) || !strncmp(fn, "_PyObject_Call", 14) ||
                  !strncmp(fn, "PyObject_Call", 13) || !strncmp(fn, "method_vectorcall", 17) ||
                  !strncmp(fn, "cfunction_", 10) || !strncmp(fn, "slot_tp_call", 12));
}

/* The Python functions of a call-tree node and its ancestors, innermost first. */
static size_t stacks_python_frames(const struct model_process *p, uint32_t node, char **out,
                                   size_t max)
{
    size_t n = 0;
    for (int guard = 0; node && n < max && guard < 4096; guard++) {
        const struct model_py_node *pn = model_python_node(p, node);
        if (!pn)
            break;
        const struct model_py_func *f = model_python_func(p, pn->func);
        char buf[1024];
        if (f && f->kind == PROF_PY_FUNC_PYTHON)
            snprintf(buf, sizeof buf, "%s  %s:%u  [python]", f->qualname ? f->qualname : f->name,
                     f->file ? f->file : "?", f->line);
        else
            snprintf(buf, sizeof buf, "%s  [python]", f && f->name ? f->name : "?");
        out[n++] = report_strdup(buf);
        node = pn->parent;
    }
    return n;
}

/* The Python frames the sampler read for a sample (PROF_PYTHON=0), innermost first,
 * labelled as the call tree's are. */
static size_t stacks_sampled_python_frames(const struct model_process *p,
                                           const struct model_py_path *pp, char **out, size_t max)
{
    size_t n = 0;
    for (uint32_t i = 0; i < pp->n && n + 1 < max; i++) {
        const struct model_py_code *c = model_py_code_get(p, pp->codes[i]);
        char buf[1024];
        if (c)
            snprintf(buf, sizeof buf, "%s  %s:%u  [python]", c->name, c->file, c->line);
        else
            snprintf(buf, sizeof buf, "<code not read>  [python]");
        out[n++] = report_strdup(buf);
    }
    if (pp->truncated && n < max)
        out[n++] = report_strdup("<outer Python frames not read>  [python]");
    return n;
}

/* Symbolizes one stack into a path (key and folded text), Python frames spliced in: the
 * call tree's (py_node) or, without one, those the sampler read (pp, may be NULL). */
static void stacks_render(const struct model_process *p, struct symbols *sym,
                          const struct model_stack *st, int sample, uint32_t py_node,
                          const struct model_py_path *pp, char **key, char **folded)
{
    static struct symbols_frame frames[STACKS_VIEW_MAX_FRAMES];
    size_t n = 0;
    for (uint32_t i = 0; st && i < st->nframes && n < STACKS_VIEW_MAX_FRAMES; i++)
        n += symbols_resolve(sym, st->frames[i], 1, frames + n, STACKS_VIEW_MAX_FRAMES - n);
    size_t skip = 0;
    while (skip < n && frames[skip].profiler)
        skip++;
    if (sample && skip < n)
        skip++; /* the signal trampoline (__restore_rt) the handler returns through */
    /* The interpreter's frames between the innermost and the outermost eval frame are
     * the Python calls, which the call tree names. */
    size_t first_eval = n, last_eval = n;
    char *py[256];
    size_t npy = py_node ? stacks_python_frames(p, py_node, py, 256)
                 : pp    ? stacks_sampled_python_frames(p, pp, py, 256)
                         : 0;
    if (npy)
        for (size_t i = skip; i < n; i++)
            if (stacks_is_interpreter(&frames[i])) {
                if (first_eval == n)
                    first_eval = i;
                last_eval = i;
            }
    char *labels[STACKS_VIEW_MAX_FRAMES + 256];
    size_t nl = 0;
    for (size_t i = skip; i < n; i++) {
        if (i == first_eval) {
            for (size_t k = 0; k < npy; k++)
                labels[nl++] = py[k];
            npy = 0;
            i = last_eval;
            continue;
        }
        char buf[1024];
        stacks_frame_label(&frames[i], buf, sizeof buf);
        labels[nl++] = report_strdup(buf);
    }
    for (size_t k = 0; k < npy; k++) /* no interpreter frame seen: Python goes outermost */
        labels[nl++] = py[k];
    struct stacks_text k = {0}, f = {0};
    stacks_text_add(&k, "");
    stacks_text_add(&f, "");
    for (size_t i = 0; i < nl; i++) {
        if (i)
            stacks_text_add(&k, "\n");
        stacks_text_add(&k, labels[i]);
    }
    for (size_t i = nl; i-- > 0;) {
        char *semi;
        while ((semi = strchr(labels[i], ';')))
            *semi = ','; /* ';' separates folded frames */
        stacks_text_add(&f, labels[i]);
        if (i)
            stacks_text_add(&f, ";");
    }
    for (size_t i = 0; i < nl; i++)
        free(labels[i]);
    *key = k.s;
    *folded = f.s;
}

static int stacks_cmp(const void *a, const void *b)
{
    const struct stacks_path *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return strcmp(x->key, y->key);
}

static uint16_t stacks_api_id(const struct model_process *p, const char *name, int *found)
{
    for (size_t i = 0; i < p->napis; i++)
        if (p->apis[i] && p->apis[i]->name && !strcmp(p->apis[i]->name, name)) {
            *found = 1;
            return (uint16_t)i;
        }
    *found = 0;
    return 0;
}

static int stacks_mem_cmp(const void *a, const void *b)
{
    const struct model_stack_mem *x = *(const struct model_stack_mem *const *)a;
    const struct model_stack_mem *y = *(const struct model_stack_mem *const *)b;
    if (x->ticks != y->ticks)
        return x->ticks < y->ticks ? -1 : 1;
    return x < y ? -1 : x > y;
}

/* --stacks memory: the large blocks of one device live at its peak, by call path. count:
 * blocks, ns: bytes. */
static void stacks_collect_peak(struct stacks_paths *ps, const struct model_process *p,
                                struct symbols *sym, const struct model_torch_memory *m)
{
    const struct model_stacks *st = p->stacks;
    if (!m->any || !st->nmems)
        return;
    const struct model_stack_mem **ev = malloc(st->nmems * sizeof *ev);
    if (!ev)
        report_oom();
    size_t n = 0;
    for (size_t i = 0; i < st->nmems; i++)
        if (st->mems[i].device_type == m->dev_type &&
            (m->dev_type == MODEL_TORCH_DEVICE_CPU || st->mems[i].device_index == m->dev_index))
            ev[n++] = &st->mems[i];
    qsort(ev, n, sizeof *ev, stacks_mem_cmp);
    /* Replay up to the peak: ptr -> the allocation live at that address. */
    struct u64map live;
    u64map_init(&live);
    uint64_t start = model_start_monotonic_ns(p);
    for (size_t i = 0; i < n; i++) {
        uint64_t at = model_ticks_to_monotonic_ns(p, ev[i]->ticks);
        if ((at > start ? at - start : 0) > m->peak_ns)
            break;
        uint64_t *slot = u64map_slot(&live, ev[i]->ptr);
        if (!slot)
            report_oom();
        *slot = ev[i]->bytes > 0 ? i + 1 : 0;
    }
    char device[32];
    model_torch_device_name(m->dev_type, m->dev_index, device, sizeof device);
    uint64_t k, v;
    for (size_t i = 0; u64map_next(&live, &i, &k, &v);) {
        if (!v)
            continue;
        const struct model_stack_mem *e = ev[v - 1];
        char *key, *folded;
        stacks_render(p, sym, model_stack_get(p, e->stack_id), 0, e->py_node, NULL, &key, &folded);
        char label[64];
        snprintf(label, sizeof label, "[%s memory peak]", device);
        struct stacks_text tk = {0}, tf = {0};
        stacks_text_add(&tk, key);
        stacks_text_add(&tk, *key ? "\n" : "");
        stacks_text_add(&tk, label);
        stacks_text_add(&tf, label);
        stacks_text_add(&tf, *folded ? ";" : "");
        stacks_text_add(&tf, folded);
        free(key);
        free(folded);
        stacks_paths_add(ps, tk.s, tf.s, 1, (uint64_t)e->bytes);
    }
    u64map_free(&live);
    free(ev);
}

static void stacks_collect(struct stacks_paths *ps, struct model_process *const *procs, size_t n,
                           const struct stacks_view_options *o, int *any_stacks, FILE *err)
{
    for (size_t i = 0; i < n; i++) {
        const struct model_process *p = procs[i];
        const struct model_stacks *st = p->stacks;
        if (!st)
            continue;
        *any_stacks = 1;
        int memory = o->api_name && !strcmp(o->api_name, "memory");
        int found = 0;
        uint16_t api = o->api_name && !memory ? stacks_api_id(p, o->api_name, &found) : 0;
        if (o->api_name && !memory && !found)
            continue;
        struct symbols *sym = symbols_open(p, o->debug_dirs, o->sysroot);
        if (memory) {
            stacks_collect_peak(ps, p, sym, &p->torch.memory);
            for (size_t d = 0; d < p->torch.ndevices; d++)
                stacks_collect_peak(ps, p, sym, &p->torch.devices[d]);
        } else if (o->api_name) {
            for (size_t u = 0; u < st->nuses; u++) {
                if (st->uses[u].api != api)
                    continue;
                char *key, *folded;
                const struct model_stack *sk = model_stack_get(p, st->uses[u].stack_id);
                stacks_render(p, sym, sk, 0, sk ? sk->py_node : 0, NULL, &key, &folded);
                stacks_paths_add(ps, key, folded, st->uses[u].calls, st->uses[u].ns);
            }
        } else {
            for (size_t u = 0; u < st->nsamples; u++) {
                const struct model_stack_sample *sm = &st->samples[u];
                char *key, *folded;
                const struct model_py_path *pp = sm->py_path && sm->py_path <= st->npy_paths
                                                     ? &st->py_paths[sm->py_path - 1]
                                                     : NULL;
                stacks_render(p, sym, model_stack_get(p, sm->stack_id), 1, sm->py_node, pp, &key,
                              &folded);
                stacks_paths_add(ps, key, folded, sm->count, 0);
                stacks_action_add(ps, model_torch_action_of_node(p, sm->py_node), sm->count);
            }
            stacks_names_collect(&ps->ops, p, &st->by_op);
            stacks_names_collect(&ps->ranges, p, &st->by_range);
        }
        for (const char *const *note = symbols_notes(sym); *note; note++)
            format_say(err, "note: %s", *note);
        symbols_close(sym);
    }
}

static void stacks_print_names(FILE *out, const char *title, const struct stacks_names *ns,
                               uint64_t total, size_t limit)
{
    if (!stacks_names_any(ns))
        return;
    fprintf(out, "\n%s\n", title);
    for (size_t i = 0; i < ns->n && i < limit; i++)
        fprintf(out, "    %-30s %10" PRIu64 " samples (%.1f%%)\n",
                ns->rows[i].name ? ns->rows[i].name : "(none)", ns->rows[i].count,
                total ? 100.0 * (double)ns->rows[i].count / (double)total : 0);
    if (ns->n > limit)
        fprintf(out, "    (%zu more)\n", ns->n - limit);
}

static json_t *stacks_names_json(const struct stacks_names *ns, const char *key)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < ns->n; i++) {
        json_t *r = json_object();
        json_object_set_new(r, key, ns->rows[i].name ? json_string(ns->rows[i].name) : json_null());
        json_object_set_new(r, "samples", json_integer((json_int_t)ns->rows[i].count));
        json_array_append_new(rows, r);
    }
    return rows;
}

static void stacks_print(FILE *out, const struct stacks_paths *ps,
                         const struct stacks_view_options *o)
{
    size_t limit = o->limit ? o->limit : 10;
    int memory = o->api_name && !strcmp(o->api_name, "memory");
    if (memory) {
        char total[32];
        format_bytes(ps->total_ns, total, sizeof total);
        fprintf(out,
                "Tensor blocks live at each memory peak, by call path (blocks of at least "
                "PROF_STACK_MIN_BYTES): %" PRIu64 " blocks, %s, %zu distinct call paths\n",
                ps->total_count, total, ps->n);
    } else if (o->api_name) {
        char total[32];
        format_ns((double)ps->total_ns, total, sizeof total);
        fprintf(out, "Call stacks of %s: %" PRIu64 " calls, %s, %zu distinct call paths\n",
                o->api_name, ps->total_count, total, ps->n);
    } else {
        fprintf(out, "CPU samples: %" PRIu64 " in %zu distinct call paths\n", ps->total_count,
                ps->n);
        int any = 0;
        for (size_t i = 0; i < ps->nactions; i++)
            any |= ps->actions[i].name != NULL;
        if (any) {
            fputs("\nBy training action (forward, backward, optimizer_step, dataloader_next):\n",
                  out);
            for (size_t i = 0; i < ps->nactions; i++)
                fprintf(out, "    %-18s %10" PRIu64 " samples (%.1f%%)\n",
                        ps->actions[i].name ? ps->actions[i].name : "(none of these)",
                        ps->actions[i].count,
                        100.0 * (double)ps->actions[i].count / (double)ps->total_count);
        }
        stacks_print_names(out, "By PyTorch op (the thread's innermost op):", &ps->ops,
                           ps->total_count, limit);
        stacks_print_names(out, "By NVTX range (the thread's innermost pushed range):", &ps->ranges,
                           ps->total_count, limit);
    }
    for (size_t i = 0; i < ps->n && i < limit; i++) {
        const struct stacks_path *r = &ps->rows[i];
        double share = ps->total_count ? 100.0 * (double)r->count / (double)ps->total_count : 0;
        if (memory) {
            char b[32];
            format_bytes(r->ns, b, sizeof b);
            fprintf(out, "\n#%zu  %s (%.1f%%), %" PRIu64 " blocks\n", i + 1, b,
                    ps->total_ns ? 100.0 * (double)r->ns / (double)ps->total_ns : 0, r->count);
        } else if (o->api_name) {
            char t[32];
            format_ns((double)r->ns, t, sizeof t);
            fprintf(out, "\n#%zu  %" PRIu64 " calls (%.1f%%), %s\n", i + 1, r->count, share, t);
        } else {
            fprintf(out, "\n#%zu  %" PRIu64 " samples (%.1f%%)\n", i + 1, r->count, share);
        }
        for (const char *line = r->key; *line;) {
            size_t len = strcspn(line, "\n");
            fprintf(out, "    %.*s\n", (int)len, line);
            line += len + (line[len] == '\n');
        }
    }
    if (ps->n > limit)
        fprintf(out, "\n(%zu more call paths; --limit N shows more)\n", ps->n - limit);
}

/* --format json: the same paths, frames as their labels (innermost first). */
static int stacks_print_json(FILE *out, const struct stacks_paths *ps,
                             const struct stacks_view_options *o)
{
    json_t *root = json_object();
    json_object_set_new(root, "kind", json_string(o->api_name ? "api" : "samples"));
    if (o->api_name)
        json_object_set_new(root, "api", json_string(o->api_name));
    json_object_set_new(root, "total_count", json_integer((json_int_t)ps->total_count));
    if (o->api_name)
        json_object_set_new(root, "total_ns", json_integer((json_int_t)ps->total_ns));
    json_t *actions = json_array();
    for (size_t i = 0; !o->api_name && i < ps->nactions; i++) {
        json_t *a = json_object();
        json_object_set_new(a, "action",
                            ps->actions[i].name ? json_string(ps->actions[i].name) : json_null());
        json_object_set_new(a, "samples", json_integer((json_int_t)ps->actions[i].count));
        json_array_append_new(actions, a);
    }
    json_object_set_new(root, "actions", actions);
    if (!o->api_name) {
        json_object_set_new(root, "ops", stacks_names_json(&ps->ops, "op"));
        json_object_set_new(root, "nvtx_ranges", stacks_names_json(&ps->ranges, "range"));
    }
    json_t *paths = json_array();
    for (size_t i = 0; i < ps->n && (!o->limit || i < o->limit); i++) {
        json_t *row = json_object(), *frames = json_array();
        json_object_set_new(row, "count", json_integer((json_int_t)ps->rows[i].count));
        if (o->api_name)
            json_object_set_new(row, "ns", json_integer((json_int_t)ps->rows[i].ns));
        for (const char *line = ps->rows[i].key; *line;) {
            size_t len = strcspn(line, "\n");
            json_array_append_new(frames, json_stringn(line, len));
            line += len + (line[len] == '\n');
        }
        json_object_set_new(row, "frames", frames);
        json_array_append_new(paths, row);
    }
    json_object_set_new(root, "paths", paths);
    int rc = json_dumpf(root, out, JSON_INDENT(2)) == 0 && fputc('\n', out) != EOF ? 0 : -1;
    json_decref(root);
    return rc;
}

static int stacks_write_folded(const struct stacks_paths *ps, const char *path, int by_time,
                               char *err, size_t errlen)
{
    struct out_file o;
    if (out_file_create(&o, path, 0666, err, errlen) != 0)
        return -1;
    FILE *f = o.f;
    for (size_t i = 0; i < ps->n; i++) {
        /* by_time: 1 us of the calls; 2: bytes (--stacks memory); else samples */
        uint64_t weight = by_time == 2 ? ps->rows[i].ns
                          : by_time    ? (ps->rows[i].ns + 500) / 1000
                                       : ps->rows[i].count;
        if (weight)
            fprintf(f, "%s %" PRIu64 "\n", ps->rows[i].folded, weight);
    }
    return out_file_commit(&o, 1, err, errlen);
}

int stacks_view(FILE *out, FILE *err, struct model_process *const *procs, size_t n,
                const struct stacks_view_options *o)
{
    struct stacks_paths ps = {0};
    u64map_init(&ps.index);
    int any_stacks = 0, rc = 0;
    stacks_collect(&ps, procs, n, o, &any_stacks, err);
    if (!any_stacks && o->left_out) {
        /* the stacks may be in those: a DataLoader worker's trace given alone */
        fprintf(err,
                "profreport: the processes reported hold no call stacks; left out: %s "
                "(--all-roles includes them)\n",
                o->left_out);
        rc = 1;
    } else if (!any_stacks) {
        fprintf(err, "profreport: the inputs hold no call stacks (run with %s)\n",
                o->api_name ? "PROF_STACKS=1" : "PROF_SAMPLE_HZ=199");
        rc = 1;
    } else if (!ps.n) {
        format_say(err, "no %s in the inputs carries a call stack",
                   o->api_name ? o->api_name : "sample");
        rc = 1;
    } else {
        qsort(ps.rows, ps.n, sizeof *ps.rows, stacks_cmp);
        if (ps.ops.n)
            qsort(ps.ops.rows, ps.ops.n, sizeof *ps.ops.rows, stacks_named_cmp);
        if (ps.ranges.n)
            qsort(ps.ranges.rows, ps.ranges.n, sizeof *ps.ranges.rows, stacks_named_cmp);
        char msg[512];
        if (o->folded_path &&
            stacks_write_folded(&ps, o->folded_path,
                                o->api_name ? (strcmp(o->api_name, "memory") ? 1 : 2) : 0, msg,
                                sizeof msg) != 0) {
            format_say(err, "%s", msg);
            rc = 1;
        }
        for (size_t i = 0; o->folded_stream && i < ps.n; i++) { /* the flame graph's input */
            uint64_t weight = o->api_name ? (ps.rows[i].ns + 500) / 1000 : ps.rows[i].count;
            if (weight)
                fprintf(o->folded_stream, "%s %" PRIu64 "\n", ps.rows[i].folded, weight);
        }
        if (o->json)
            rc = stacks_print_json(out, &ps, o) ? 1 : rc;
        else if (!o->folded_path || o->print)
            stacks_print(out, &ps, o);
    }
    for (size_t i = 0; i < ps.n; i++) {
        free(ps.rows[i].key);
        free(ps.rows[i].folded);
    }
    free(ps.rows);
    free(ps.ops.rows);
    free(ps.ranges.rows);
    u64map_free(&ps.index);
    return rc;
}
