/* Python call trees: the model's records and pystats's cProfile arithmetic (recursion,
 * cumulative time counted once, callers, merging, last stats win). The numbers are those
 * test/fixtures/traces/py_traces.h documents. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../fixtures/traces/py_traces.h"
#include "model.h"
#include "pystats.h"
#include "summary.h"
#include "report_test.h"

static char path[64], path2[64];

static void setup(void)
{
    report_test_temp(path, "report_python");
    report_test_temp(path2, "report_python");
}

static void teardown(void)
{
    unlink(path);
    unlink(path2);
}

TestSuite(report_python, .init = setup, .fini = teardown);

static const struct pystats_func *func_named(const struct pystats *s, const char *name)
{
    for (size_t i = 0; i < s->nfuncs; i++)
        if (!strcmp(s->funcs[i].name, name))
            return &s->funcs[i];
    return NULL;
}

static const struct pystats_caller *caller_named(const struct pystats *s,
                                                 const struct pystats_func *f, const char *name)
{
    for (size_t i = 0; i < f->ncallers; i++)
        if (!strcmp(s->funcs[f->callers[i].caller].name, name))
            return &f->callers[i];
    return NULL;
}

/* The caller edge name -> f: calls, primitive calls, self and cumulative time. */
static void expect_caller(const struct pystats *s, const struct pystats_func *f, const char *name,
                          uint64_t nc, uint64_t cc, uint64_t tt_ns, uint64_t ct_ns)
{
    const struct pystats_caller *c = caller_named(s, f, name);
    cr_assert_not_null(c, "no caller %s of %s", name, f->name);
    cr_expect_eq(c->nc, nc, "%s -> %s: nc %llu", name, f->name, (unsigned long long)c->nc);
    cr_expect_eq(c->cc, cc, "%s -> %s: cc %llu", name, f->name, (unsigned long long)c->cc);
    cr_expect_eq(c->tt_ns, tt_ns, "%s -> %s: tt %llu", name, f->name, (unsigned long long)c->tt_ns);
    cr_expect_eq(c->ct_ns, ct_ns, "%s -> %s: ct %llu", name, f->name, (unsigned long long)c->ct_ns);
}

/* A trace at path of pid 1: file "g.py" (string 1), functions 1..n named names[] (strings
 * 2..n+1, line = the function's id), then thread 1's records. */
static void build_funcs(struct trace_build *b, const char *const *names, uint32_t n)
{
    cr_assert_eq(trace_build_open(b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(b, "pid", "1");
    trace_build_string(b, 1, "g.py");
    for (uint32_t fn = 1; fn <= n; fn++) {
        trace_build_string(b, fn + 1, names[fn - 1]);
        trace_build_py_func(b, fn, fn + 1, fn + 1, 1, 0, fn, PROF_PY_FUNC_PYTHON);
    }
}

static void stats_of(struct pystats *s, const struct model_process *p, int64_t tid)
{
    pystats_init(s);
    pystats_add(s, p, tid, 0);
    pystats_finish(s, PYSTATS_SORT_CUMTIME);
}

Test(report_python, recursion_splits_calls_and_counts_cumtime_once)
{
    cr_assert_eq(py_trace_main(path), 0);
    struct model_process *p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, -1);
    cr_assert_eq(s.nfuncs, 4);
    const struct pystats_func *fib = func_named(&s, "fib");
    cr_assert_not_null(fib);
    cr_assert_eq(fib->ncalls, 8);
    cr_assert_eq(fib->pcalls, 2);
    cr_assert_eq(fib->tottime_ns, 1300 * PY_U);
    cr_assert_eq(fib->cumtime_ns, 1300 * PY_U); /* 800 + 500: the inner fibs add nothing */
    const struct pystats_func *len = func_named(&s, "<built-in method builtins.len>");
    cr_assert_not_null(len);
    cr_assert_str_eq(len->file, "~");
    cr_assert_eq(len->line, 0);
    cr_assert_eq(len->kind, PROF_PY_FUNC_C);
    cr_assert_eq(len->ncalls, 6);
    cr_assert_eq(len->pcalls, 6);
    cr_assert_eq(len->tottime_ns, 70 * PY_U);
    cr_assert_eq(s.total_calls, 17);
    cr_assert_eq(s.total_pcalls, 11);
    cr_assert_eq(s.total_tt_ns, 1510 * PY_U);
    pystats_free(&s);
    model_process_free(p);
}

Test(report_python, callers_follow_lsprof_pairs)
{
    cr_assert_eq(py_trace_main(path), 0);
    struct model_process *p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, -1);
    const struct pystats_func *fib = func_named(&s, "fib");
    cr_assert_eq(fib->ncallers, 2); /* the worker's root fib has no caller */
    const struct pystats_caller *c = caller_named(&s, fib, "main");
    cr_assert_eq(c->nc, 1);
    cr_assert_eq(c->cc, 1);
    cr_assert_eq(c->tt_ns, 200 * PY_U);
    cr_assert_eq(c->ct_ns, 800 * PY_U);
    c = caller_named(&s, fib, "fib");
    cr_assert_eq(c->nc, 6);
    cr_assert_eq(c->cc, 2); /* fib(n-1) called from the outermost fib is not recursive */
    cr_assert_eq(c->tt_ns, 600 * PY_U);
    cr_assert_eq(c->ct_ns, 600 * PY_U);
    const struct pystats_func *len = func_named(&s, "<built-in method builtins.len>");
    cr_assert_eq(len->ncallers, 2);
    c = caller_named(&s, len, "forward");
    cr_assert_eq(c->nc, 2);
    cr_assert_eq(c->ct_ns, 30 * PY_U);
    cr_assert_eq(func_named(&s, "main")->ncallers, 0);
    pystats_free(&s);
    model_process_free(p);
}

Test(report_python, api_time_is_cumulative_below_a_function)
{
    cr_assert_eq(py_trace_main(path), 0);
    struct model_process *p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, -1);
    const struct pystats_func *main_f = func_named(&s, "main");
    cr_assert_eq(main_f->api_calls, 3);
    cr_assert_eq(main_f->api_ns, 25 * PY_U);
    const struct pystats_func *fwd = func_named(&s, "forward");
    cr_assert_eq(fwd->api_calls, 3);
    cr_assert_eq(fwd->api_ns, 25 * PY_U);
    cr_assert_eq(func_named(&s, "<built-in method builtins.len>")->api_calls, 1);
    cr_assert_eq(func_named(&s, "fib")->api_calls, 0);
    cr_assert(s.any_api);
    pystats_free(&s);
    model_process_free(p);
}

Test(report_python, last_stats_win_and_late_func_names_resolve)
{
    cr_assert_eq(py_trace_main(path), 0);
    struct model_process *p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, -1);
    const struct pystats_func *main_f = func_named(&s, "main");
    cr_assert_eq(main_f->tottime_ns, 100 * PY_U); /* not the first record's 50 */
    cr_assert_eq(main_f->cumtime_ns, 1000 * PY_U);
    const struct pystats_func *fwd = func_named(&s, "forward");
    cr_assert_str_eq(fwd->qualname, "Model.forward");
    cr_assert_str_eq(fwd->module, "__main__");
    cr_assert_eq(fwd->line, 20);
    char label[256];
    pystats_func_label(fwd, 1, label, sizeof label);
    cr_assert_str_eq(label, "/w/train.py:20(Model.forward)");
    pystats_func_label(fwd, 0, label, sizeof label);
    cr_assert_str_eq(label, "/w/train.py:20(forward)");
    pystats_func_label(func_named(&s, "<built-in method builtins.len>"), 1, label, sizeof label);
    cr_assert_str_eq(label, "{built-in method builtins.len}");
    cr_assert_eq(p->py.spans, 2);
    cr_assert_eq(p->nwarnings, 0);
    /* PY_FUNC before any THREAD record makes no thread 0 */
    for (size_t i = 0; i < p->nthreads; i++)
        cr_assert_neq(p->threads[i].tid, 0);
    pystats_free(&s);
    model_process_free(p);
}

Test(report_python, one_thread)
{
    cr_assert_eq(py_trace_main(path), 0);
    struct model_process *p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, 6001);
    cr_assert_eq(s.nfuncs, 2); /* functions of other threads make no rows */
    const struct pystats_func *fib = func_named(&s, "fib");
    cr_assert_eq(fib->ncalls, 1);
    cr_assert_eq(fib->cumtime_ns, 500 * PY_U);
    cr_assert_eq(s.total_calls, 2);
    pystats_free(&s);
    struct pystats_thread *t;
    size_t n = pystats_threads(p, &t);
    cr_assert_eq(n, 2);
    cr_assert_eq(t[0].tid, 6000);
    cr_assert_eq(t[0].functions, 4);
    cr_assert_eq(t[0].calls, 15);
    cr_assert_eq(t[1].tid, 6001);
    cr_assert_eq(t[1].functions, 2);
    cr_assert_eq(t[1].calls, 2);
    free(t);
    model_process_free(p);
}

Test(report_python, processes_merge_by_key_not_by_id)
{
    cr_assert_eq(py_trace_main(path), 0);
    cr_assert_eq(py_trace_other(path2), 0);
    struct model_process **procs = malloc(2 * sizeof *procs);
    procs[0] = report_test_load(path);
    procs[1] = report_test_load(path2);
    struct summary sum;
    summary_build(&sum, procs, 2);
    const struct pystats_func *fib = func_named(&sum.py, "fib");
    cr_assert_eq(sum.py.nfuncs, 4);
    cr_assert_eq(fib->ncalls, 9);
    cr_assert_eq(fib->pcalls, 3);
    cr_assert_eq(fib->tottime_ns, 1360 * PY_U);
    cr_assert_eq(fib->cumtime_ns, 1400 * PY_U);
    const struct pystats_func *len = func_named(&sum.py, "<built-in method builtins.len>");
    cr_assert_eq(len->ncalls, 10);
    cr_assert_eq(len->tottime_ns, 110 * PY_U);
    cr_assert_eq(caller_named(&sum.py, len, "fib")->nc, 4);
    summary_sort_python(&sum, PYSTATS_SORT_TOTTIME);
    cr_assert_str_eq(sum.py.funcs[sum.py.order[0]].name, "fib");
    cr_assert_str_eq(sum.py.funcs[sum.py.order[1]].name, "<built-in method builtins.len>");
    cr_assert_str_eq(sum.py.funcs[sum.py.order[2]].name, "main");
    summary_sort_python(&sum, PYSTATS_SORT_NCALLS);
    cr_assert_str_eq(sum.py.funcs[sum.py.order[0]].name, "<built-in method builtins.len>");
    summary_sort_python(&sum, PYSTATS_SORT_LINE);
    cr_assert_eq(sum.py.funcs[sum.py.order[0]].line, 0);
    cr_assert_eq(sum.py.funcs[sum.py.order[3]].line, 20);
    summary_free(&sum);
}

/* a -> b -> a -> b: cProfile gives b's caller a as 2/1 and a's caller b as 1/1. */
Test(report_python, mutual_recursion)
{
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "f.py");
    trace_build_string(&b, 2, "a");
    trace_build_string(&b, 3, "b");
    trace_build_py_func(&b, 1, 2, 2, 1, 0, 1, PROF_PY_FUNC_PYTHON);
    trace_build_py_func(&b, 2, 3, 3, 1, 0, 5, PROF_PY_FUNC_PYTHON);
    trace_build_thread(&b, 1);
    trace_build_py_node(&b, 1, 0, 1); /* a */
    trace_build_py_node(&b, 2, 1, 2); /* a b */
    trace_build_py_node(&b, 3, 2, 1); /* a b a */
    trace_build_py_node(&b, 4, 3, 2); /* a b a b */
    trace_build_py_stats(&b, 1, 1, 100, 10, 0, 0);
    trace_build_py_stats(&b, 2, 1, 90, 20, 0, 0);
    trace_build_py_stats(&b, 3, 1, 70, 30, 0, 0);
    trace_build_py_stats(&b, 4, 1, 40, 40, 0, 0);
    trace_build_close(&b);
    struct model_process *p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, -1);
    const struct pystats_func *fa = func_named(&s, "a"), *fb = func_named(&s, "b");
    cr_assert_eq(fa->ncalls, 2);
    cr_assert_eq(fa->pcalls, 1);
    cr_assert_eq(fa->cumtime_ns, 100);
    cr_assert_eq(fb->ncalls, 2);
    cr_assert_eq(fb->pcalls, 1);
    cr_assert_eq(fb->cumtime_ns, 90);
    const struct pystats_caller *c = caller_named(&s, fb, "a");
    cr_assert_eq(c->nc, 2);
    cr_assert_eq(c->cc, 1);
    cr_assert_eq(c->ct_ns, 90);
    cr_assert_eq(c->tt_ns, 60);
    c = caller_named(&s, fa, "b");
    cr_assert_eq(c->nc, 1);
    cr_assert_eq(c->cc, 1);
    cr_assert_eq(c->ct_ns, 70);
    pystats_free(&s);
    model_process_free(p);
}

/* x -> f -> y -> f -> x -> f: the last f's pair (x -> f) is active above it through the
 * first f, found past the f between them (whose caller is y). */
Test(report_python, recursion_through_other_callers)
{
    static const char *const names[] = {"x", "f", "y"};
    struct trace_build b;
    build_funcs(&b, names, 3);
    trace_build_thread(&b, 1);
    static const uint32_t func[] = {0, 1, 2, 3, 2, 1, 2}; /* by node: x f y f x f */
    for (uint32_t i = 1; i <= 6; i++) {
        trace_build_py_node(&b, i, i - 1, func[i]);
        trace_build_py_stats(&b, i, 1, 700 - 100 * i, 100, 0, 0);
    }
    trace_build_close(&b);
    struct model_process *p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, -1);
    const struct pystats_func *x = func_named(&s, "x"), *fn = func_named(&s, "f");
    cr_assert_eq(fn->ncalls, 3);
    cr_assert_eq(fn->pcalls, 1);
    cr_assert_eq(fn->cumtime_ns, 500);
    expect_caller(&s, fn, "x", 2, 1, 200, 500); /* the last f's pair is active above it */
    expect_caller(&s, fn, "y", 1, 1, 100, 300); /* f is active above, but called from x */
    cr_assert_eq(x->ncalls, 2);
    cr_assert_eq(x->pcalls, 1);
    expect_caller(&s, x, "f", 1, 1, 100, 200);
    pystats_free(&s);
    model_process_free(p);
}

/* Two threads whose nodes come interleaved: each counts the functions it called once,
 * a function without a PY_FUNC record too. */
Test(report_python, threads_count_their_own_functions)
{
    static const char *const names[] = {"a", "b"};
    struct trace_build b;
    build_funcs(&b, names, 2);
    static const struct {
        uint32_t tid, node, parent, func;
    } nodes[] = {{7001, 1, 0, 1},  {7002, 2, 0, 1},  {7001, 3, 1, 2},  {7001, 4, 3, 1},
                 {7002, 5, 2, 77}, {7002, 6, 5, 77}, {7001, 7, 1, 77}, {7002, 8, 2, 2}};
    for (size_t i = 0; i < sizeof nodes / sizeof *nodes; i++) {
        trace_build_thread(&b, nodes[i].tid);
        trace_build_py_node(&b, nodes[i].node, nodes[i].parent, nodes[i].func);
        trace_build_py_stats(&b, nodes[i].node, nodes[i].node, 10, 10, 0, 0);
    }
    trace_build_close(&b);
    struct model_process *p = report_test_load(path);
    struct pystats_thread *t;
    size_t n = pystats_threads(p, &t);
    cr_assert_eq(n, 2);
    cr_assert_eq(t[0].tid, 7001);
    cr_assert_eq(t[0].functions, 3); /* a, b, #77 */
    cr_assert_eq(t[0].calls, 1 + 3 + 4 + 7);
    cr_assert_eq(t[1].tid, 7002);
    cr_assert_eq(t[1].functions, 3); /* a, #77, b */
    cr_assert_eq(t[1].calls, 2 + 5 + 6 + 8);
    free(t);
    model_process_free(p);
}

/* A recursion 200000 deep: the walk must not use the C stack. */
Test(report_python, deep_recursion)
{
    const uint32_t depth = 200000;
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_meta(&b, "pid", "1");
    trace_build_string(&b, 1, "r.py");
    trace_build_string(&b, 2, "r");
    trace_build_py_func(&b, 1, 2, 2, 1, 0, 3, PROF_PY_FUNC_PYTHON);
    trace_build_thread(&b, 1);
    for (uint32_t i = 1; i <= depth; i++) {
        trace_build_py_node(&b, i, i - 1, 1);
        trace_build_py_stats(&b, i, 1, depth - i + 1, 1, 0, 0);
    }
    trace_build_close(&b);
    struct model_process *p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, -1);
    cr_assert_eq(s.nfuncs, 1);
    cr_assert_eq(s.funcs[0].ncalls, depth);
    cr_assert_eq(s.funcs[0].pcalls, 1);
    cr_assert_eq(s.funcs[0].tottime_ns, depth);
    cr_assert_eq(s.funcs[0].cumtime_ns, depth);
    cr_assert_eq(s.funcs[0].callers[0].nc, depth - 1);
    cr_assert_eq(s.funcs[0].callers[0].cc, 1);
    pystats_free(&s);
    model_process_free(p);
}

Test(report_python, gaps_and_unknown_functions)
{
    cr_assert_eq(py_trace_gap(path), 0);
    struct model_process *p = report_test_load(path);
    cr_assert_eq(p->py.ngaps, 2);
    cr_assert_eq(p->py.gaps[0].tid, 6200);
    cr_assert_eq(p->py.gaps[0].reason, PROF_PY_GAP_OTHER_PROFILER);
    cr_assert_eq(p->py.gaps[0].start_ns - model_start_monotonic_ns(p), 500 * PY_U);
    cr_assert_eq(p->py.gaps[0].end_ns - model_start_monotonic_ns(p), 1500 * PY_U);
    cr_assert_eq(p->py.gaps[1].tid, 6201);
    cr_assert_eq(p->py.gaps[1].end_ticks, 0);
    model_process_free(p);

    /* A node whose function no PY_FUNC names still counts, under a name that says so. */
    struct trace_build b;
    cr_assert_eq(trace_build_open(&b, path, PROF_TRACE_VERSION, 24, 0), 0);
    trace_build_thread(&b, 1);
    trace_build_py_node(&b, 1, 0, 42);
    trace_build_py_stats(&b, 1, 3, 30, 30, 0, 0);
    trace_build_py_stats(&b, 9, 1, 1, 1, 0, 0); /* stats of a node never defined */
    trace_build_close(&b);
    p = report_test_load(path);
    struct pystats s;
    stats_of(&s, p, -1);
    cr_assert_eq(s.nfuncs, 1);
    cr_assert_str_eq(s.funcs[0].name, "<unknown function #42>");
    cr_assert_eq(s.funcs[0].ncalls, 3);
    cr_assert_eq(p->nwarnings, 1);
    pystats_free(&s);
    model_process_free(p);
}

Test(report_python, sort_keys)
{
    enum pystats_sort k;
    cr_assert_eq(pystats_parse_sort("cumulative", &k), 0);
    cr_assert_eq(k, PYSTATS_SORT_CUMTIME);
    cr_assert_eq(pystats_parse_sort("time", &k), 0);
    cr_assert_eq(k, PYSTATS_SORT_TOTTIME);
    cr_assert_eq(pystats_parse_sort("calls", &k), 0);
    cr_assert_eq(k, PYSTATS_SORT_NCALLS);
    cr_assert_eq(pystats_parse_sort("filename", &k), 0);
    cr_assert_eq(pystats_parse_sort("total", &k), -1);
}
