/* profreport: the offline reporter of profrun. Reads trace files and directories of them,
 * prints the tables (text, JSON or CSV), or dumps one file's records. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "alloc.h"
#include "comm_views.h"
#include "dump.h"
#include "export.h"
#include "findings.h"
#include "format.h"
#include "html.h"
#include "inputs.h"
#include "export_timeline.h"
#include "jobs.h"
#include "model.h"
#include "stacks_view.h"
#include "summarize.h"
#include "summary.h"
#include "steps_report.h"
#include "steps_view.h"
#include "summary_file.h"
#include "tables.h"
#include "trace_dir.h"
#include "trace_read.h"
#include "timeline.h"
#include "usage.h"

enum main_format { MAIN_FORMAT_TEXT, MAIN_FORMAT_JSON, MAIN_FORMAT_CSV };

/* Warnings quote trace strings: control characters escaped. */
static void main_print_warning(const char *text)
{
    fputs("profreport: warning: ", stderr);
    format_fputs_escaped(stderr, text);
    fputc('\n', stderr);
}

static int main_bad_usage(const char *fmt, const char *what)
{
    /* what comes from the command line, which a script may have made from file names */
    char *e = format_escape_dup(what);
    fputs("profreport: ", stderr);
    fprintf(stderr, fmt, e ? e : "?");
    free(e);
    fputs("\nTry 'profreport --help' for usage.\n", stderr);
    return 2;
}

/* --pstats and --folded: each file is written whole or not at all. 0, or -1 said. */
static int main_write_python_files(const struct summary *s, const char *pstats_path,
                                   const char *folded_path, size_t folded_depth,
                                   double folded_min_share)
{
    char err[512];
    int rc = 0;
    if ((pstats_path || folded_path) && !s->py.nfuncs) {
        format_say(stderr, "the inputs hold no Python calls; %s not written",
                   pstats_path && folded_path ? "--pstats and --folded files"
                   : pstats_path              ? pstats_path
                                              : folded_path);
        return -1;
    }
    if (pstats_path && export_pstats_write(pstats_path, &s->py, err, sizeof err) != 0) {
        format_say(stderr, "%s", err);
        rc = -1;
    }
    if (folded_path &&
        export_folded_write(folded_path, s, folded_depth, folded_min_share, err, sizeof err) != 0) {
        format_say(stderr, "%s", err);
        rc = -1;
    }
    return rc;
}

/* --perfetto and --chrome-trace: 0, or -1 said. */
static int main_write_timelines(struct model_process **procs, size_t n, const char *perfetto_path,
                                const char *chrome_path, unsigned chrome_flags)
{
    char err[512];
    int rc = 0;
    if (perfetto_path && export_perfetto_write(perfetto_path, procs, n, NULL, err, sizeof err)) {
        format_say(stderr, "%s", err);
        rc = -1;
    }
    if (chrome_path &&
        export_chrome_write(chrome_path, procs, n, chrome_flags, NULL, err, sizeof err)) {
        format_say(stderr, "%s", err);
        rc = -1;
    }
    return rc;
}

/* --rank N: keeps the processes of rank N. 0, or -1 said (none has it). */
static int main_keep_rank(struct report_inputs *in, long long rank)
{
    size_t kept = 0;
    for (size_t i = 0; i < in->n; i++) {
        if (in->procs[i]->rank == rank)
            in->procs[kept++] = in->procs[i];
        else
            model_process_free(in->procs[i]);
    }
    in->n = kept;
    if (kept)
        return 0;
    fprintf(stderr, "profreport: no trace of rank %lld in the inputs\n", rank);
    free(in->procs);
    return -1;
}

/* --ranks, --comm, --stragglers (COMM_VIEW_* in views). 0, or the writer's error. */
static int main_print_comm(const struct summary *s, enum main_format format, int views,
                           size_t limit)
{
    struct comm_report r;
    comm_merge_build(&r, s);
    int rc = 0;
    if (format == MAIN_FORMAT_JSON)
        rc = comm_export_json(stdout, &r, views, limit);
    else if (format == MAIN_FORMAT_CSV)
        rc = comm_export_csv(stdout, &r, views, limit);
    else
        comm_tables_print(stdout, s, &r, views, limit);
    comm_merge_free(&r);
    return rc;
}

/* The default text report ends with the communication table when there was any. */
static void main_print_comm_default(const struct summary *s, const struct comm_report *r,
                                    size_t limit)
{
    if (r->any) {
        fputc('\n', stdout);
        comm_tables_print(stdout, s, r, COMM_VIEW_COMM, limit);
    }
}

/* The tables asked for by name, in a fixed order, a blank line between them. */
/* The flame graphs' and --folded's default: the steady steps (warm-up left out), the step
 * thread's call tree over the Python table's steps, or its calls long enough to be spans,
 * so that what a step does outside its four phases (a slow rank's extra work between
 * forward and backward) is in it too (EXPORT_PHASE_STEADY); with neither (no counts kept
 * at the steps' edges, PROF_PY_SPAN_US too high to keep any span), the steps' phases,
 * exact from the call trees. */
static int main_default_phase(const struct summary *s)
{
    if (export_folded_steady_exact(s))
        return EXPORT_PHASE_STEADY;
    for (size_t i = 0; i < s->nprocs; i++)
        if (s->procs[i]->py.nspan_list)
            return EXPORT_PHASE_STEADY;
    return EXPORT_PHASE_STEPS;
}

static void main_print_selected(const struct summary *s, size_t limit,
                                enum tables_python_split split, int python, int kernels, int gpu,
                                int actions, int ops, int memory, int threads)
{
    int first = 1;
    if (memory) {
        tables_memory_view(stdout, s);
        first = 0;
    }
    if (ops) {
        tables_ops(stdout, s, limit);
        first = 0;
    }
    if (kernels) {
        if (!first)
            fputc('\n', stdout);
        tables_gpu_kernels(stdout, s, limit);
        first = 0;
    }
    if (gpu) {
        if (!first)
            fputc('\n', stdout);
        tables_gpu(stdout, s, limit);
        first = 0;
    }
    if (actions) {
        if (!first)
            fputc('\n', stdout);
        tables_actions(stdout, s, limit);
        first = 0;
    }
    if (python) {
        if (!first)
            fputc('\n', stdout);
        tables_python(stdout, s, limit, split);
        first = 0;
    }
    if (threads) {
        if (!first)
            fputc('\n', stdout);
        tables_threads_view(stdout, s);
    }
}

/* What follows --stacks is no API name but the next option, or an input (a directory, a
 * .trace or .summary file): `--memory --stacks out/`. */
static int main_not_a_name(const char *arg)
{
    struct stat st;
    size_t n = strlen(arg);
    if (arg[0] == '-' && arg[1])
        return 1;
    if (stat(arg, &st) != 0)
        return 0;
    return S_ISDIR(st.st_mode) || (n > 6 && !strcmp(arg + n - 6, ".trace")) ||
           (n > 8 && !strcmp(arg + n - 8, ".summary"));
}

int main(int argc, char **argv)
{
    enum main_format format = MAIN_FORMAT_TEXT;
    enum summary_sort sort = SUMMARY_SORT_TOTAL;
    enum pystats_sort py_sort = PYSTATS_SORT_CUMTIME;
    const char *sort_arg = NULL;
    size_t limit = 0;
    int limit_given = 0; /* --limit 0: every row, also where a view keeps fewer by default */
    const char *run_id = NULL;
    int all_runs = 0, python = 0, format_given = 0, all_roles = 0;
    int kernels = 0, gpu = 0, actions = 0; /* --kernels, --gpu, --actions: those tables only */
    int ops = 0, by_shape = 0;             /* --ops, --group-by-shape */
    int memory = 0;                        /* --memory */
    int threads = 0;                       /* --threads */
    int stacks_bare = 0;                   /* --stacks without a NAME: with --memory */
    enum summary_op_sort op_sort = SUMMARY_OP_SORT_SELF_CPU;
    enum tables_python_split split = TABLES_PYTHON_MERGED;
    const char *pstats_path = NULL, *folded_path = NULL;
    size_t folded_depth = EXPORT_FOLDED_DEPTH_DEFAULT;
    double folded_min_share = EXPORT_FOLDED_MIN_SHARE_BOUNDED;
    const char *timeline_path = NULL;                      /* --memory-timeline */
    const char *perfetto_path = NULL, *chrome_path = NULL; /* --perfetto, --chrome-trace */
    unsigned chrome_flags = 0;                             /* --chrome-ns */
    const char *html_path = NULL, *flame_path = NULL;      /* --html, --flamegraph */
    struct stacks_view_options stacks = {0};
    int stacks_asked = 0;         /* --stacks or --samples */
    int comm_views = 0;           /* --ranks, --comm, --stragglers: COMM_VIEW_* */
    long long only_rank = -1;     /* --rank */
    int summarize = 0;            /* --summarize */
    const char *step_name = NULL; /* --step */
    int phase = -1;               /* --phase (enum export_phase); -1: steps when there are any */
    long jobs = 0;                /* -j: 0, the CPUs */

    if (argc >= 2 && !strcmp(argv[1], "dump")) {
        if (argc == 3 && (!strcmp(argv[2], "--help") || !strcmp(argv[2], "-h"))) {
            report_usage(stdout);
            return 0;
        }
        if (argc != 3)
            return main_bad_usage("dump takes one FILE%s", "");
        return dump_file(stdout, stderr, argv[2]);
    }

    enum {
        OPT_RUN = 256,
        OPT_ALL_RUNS,
        OPT_PYTHON,
        OPT_PER_THREAD,
        OPT_PER_PROCESS,
        OPT_PSTATS,
        OPT_FOLDED,
        OPT_FOLDED_DEPTH,
        OPT_FOLDED_MIN_SHARE,
        OPT_KERNELS,
        OPT_GPU,
        OPT_ACTIONS,
        OPT_OPS,
        OPT_MEMORY,
        OPT_THREADS,
        OPT_GROUP_BY_SHAPE,
        OPT_MEMORY_TIMELINE,
        OPT_STACKS,
        OPT_SAMPLES,
        OPT_STACKS_FOLDED,
        OPT_DEBUG_DIR,
        OPT_SYSROOT,
        OPT_PERFETTO,
        OPT_CHROME_TRACE,
        OPT_CHROME_NS,
        OPT_ALL_ROLES,
        OPT_RANKS,
        OPT_COMM,
        OPT_STRAGGLERS,
        OPT_RANK,
        OPT_HTML,
        OPT_FLAMEGRAPH,
        OPT_SUMMARIZE,
        OPT_STEP,
        OPT_PHASE
    };
    static const struct option options[] = {
        {"format", required_argument, NULL, 'f'},
        {"sort", required_argument, NULL, 's'},
        {"limit", required_argument, NULL, 'n'},
        {"run", required_argument, NULL, OPT_RUN},
        {"all-runs", no_argument, NULL, OPT_ALL_RUNS},
        {"all-roles", no_argument, NULL, OPT_ALL_ROLES},
        {"python", no_argument, NULL, OPT_PYTHON},
        {"per-thread", no_argument, NULL, OPT_PER_THREAD},
        {"per-process", no_argument, NULL, OPT_PER_PROCESS},
        {"pstats", required_argument, NULL, OPT_PSTATS},
        {"folded", required_argument, NULL, OPT_FOLDED},
        {"folded-depth", required_argument, NULL, OPT_FOLDED_DEPTH},
        {"folded-min-share", required_argument, NULL, OPT_FOLDED_MIN_SHARE},
        {"kernels", no_argument, NULL, OPT_KERNELS},
        {"gpu", no_argument, NULL, OPT_GPU},
        {"actions", no_argument, NULL, OPT_ACTIONS},
        {"ops", no_argument, NULL, OPT_OPS},
        {"memory", no_argument, NULL, OPT_MEMORY},
        {"threads", no_argument, NULL, OPT_THREADS},
        {"group-by-shape", no_argument, NULL, OPT_GROUP_BY_SHAPE},
        {"memory-timeline", required_argument, NULL, OPT_MEMORY_TIMELINE},
        {"stacks", required_argument, NULL, OPT_STACKS},
        {"samples", no_argument, NULL, OPT_SAMPLES},
        {"stacks-folded", required_argument, NULL, OPT_STACKS_FOLDED},
        {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
        {"sysroot", required_argument, NULL, OPT_SYSROOT},
        {"perfetto", required_argument, NULL, OPT_PERFETTO},
        {"chrome-trace", required_argument, NULL, OPT_CHROME_TRACE},
        {"chrome-ns", no_argument, NULL, OPT_CHROME_NS},
        {"ranks", no_argument, NULL, OPT_RANKS},
        {"comm", no_argument, NULL, OPT_COMM},
        {"stragglers", no_argument, NULL, OPT_STRAGGLERS},
        {"rank", required_argument, NULL, OPT_RANK},
        {"html", required_argument, NULL, OPT_HTML},
        {"flamegraph", required_argument, NULL, OPT_FLAMEGRAPH},
        {"summarize", no_argument, NULL, OPT_SUMMARIZE},
        {"step", required_argument, NULL, OPT_STEP},
        {"phase", required_argument, NULL, OPT_PHASE},
        {"jobs", required_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    opterr = 0; /* our own one-line messages */
    int c;
    while ((c = getopt_long(argc, argv, ":f:s:n:j:h", options, NULL)) != -1) {
        switch (c) {
        case 'f':
            format_given = 1;
            if (!strcmp(optarg, "text"))
                format = MAIN_FORMAT_TEXT;
            else if (!strcmp(optarg, "json"))
                format = MAIN_FORMAT_JSON;
            else if (!strcmp(optarg, "csv"))
                format = MAIN_FORMAT_CSV;
            else
                return main_bad_usage("unknown format '%s' (text, json or csv)", optarg);
            break;
        case 's':
            sort_arg = optarg; /* checked once --python is known */
            break;
        case 'n':
        case OPT_FOLDED_DEPTH: {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(optarg, &end, 10);
            if (errno || end == optarg || *end || optarg[0] == '-' || v > SIZE_MAX)
                return main_bad_usage(c == 'n' ? "--limit wants a number, not '%s'"
                                               : "--folded-depth wants a number, not '%s'",
                                      optarg);
            if (c == 'n') {
                limit = (size_t)v;
                limit_given = 1;
            } else
                folded_depth = (size_t)v;
            break;
        }
        case OPT_FOLDED_MIN_SHARE: {
            char *end;
            errno = 0;
            double v = strtod(optarg, &end);
            if (errno || end == optarg || *end || !(v >= 0 && v <= 100))
                return main_bad_usage("--folded-min-share wants a percentage from 0 to 100, "
                                      "not '%s'",
                                      optarg);
            folded_min_share = v / 100;
            break;
        }
        case OPT_RUN:
            run_id = optarg;
            break;
        case OPT_SUMMARIZE:
            summarize = 1;
            break;
        case OPT_STEP:
            if (!*optarg)
                return main_bad_usage("%s wants an action name", "--step");
            step_name = optarg;
            break;
        case OPT_PHASE:
            if (!strcmp(optarg, "all"))
                phase = EXPORT_PHASE_ALL;
            else if (!strcmp(optarg, "steps"))
                phase = EXPORT_PHASE_STEPS;
            else if (!strcmp(optarg, "startup"))
                phase = EXPORT_PHASE_STARTUP;
            else if (!strcmp(optarg, "steady"))
                phase = EXPORT_PHASE_STEADY;
            else
                return main_bad_usage("--phase wants all, steps, steady or startup, not '%s'",
                                      optarg);
            break;
        case 'j': {
            char *end;
            errno = 0;
            jobs = strtol(optarg, &end, 10);
            if (errno || end == optarg || *end || jobs < 1 || jobs > 4096)
                return main_bad_usage("--jobs wants a number of workers (1-4096), not '%s'",
                                      optarg);
            break;
        }
        case OPT_ALL_RUNS:
            all_runs = 1;
            break;
        case OPT_ALL_ROLES:
            all_roles = 1;
            break;
        case OPT_PYTHON:
            python = 1;
            break;
        case OPT_KERNELS:
            kernels = 1;
            break;
        case OPT_GPU:
            gpu = 1;
            break;
        case OPT_ACTIONS:
            actions = 1;
            break;
        case OPT_OPS:
            ops = 1;
            break;
        case OPT_MEMORY:
            memory = 1;
            break;
        case OPT_THREADS:
            threads = 1;
            break;
        case OPT_GROUP_BY_SHAPE:
            by_shape = 1;
            break;
        case OPT_PER_THREAD:
        case OPT_PER_PROCESS: {
            enum tables_python_split want =
                c == OPT_PER_THREAD ? TABLES_PYTHON_PER_THREAD : TABLES_PYTHON_PER_PROCESS;
            if (split != TABLES_PYTHON_MERGED && split != want)
                return main_bad_usage("--per-thread and --per-process exclude each other%s", "");
            split = want;
            break;
        }
        case OPT_STACKS:
        case OPT_SAMPLES:
            if (stacks_asked)
                return main_bad_usage("give one of --stacks NAME and --samples%s", "");
            stacks_asked = 1;
            stacks.api_name = c == OPT_STACKS ? optarg : NULL;
            if (c == OPT_STACKS && main_not_a_name(optarg)) {
                optind--; /* `--stacks --memory`, `--memory --stacks out/` */
                stacks_bare = 1;
            }
            break;
        case OPT_STACKS_FOLDED:
        case OPT_DEBUG_DIR:
        case OPT_SYSROOT:
            if (!*optarg)
                return main_bad_usage("%s wants a value", argv[optind - 1]);
            if (c == OPT_STACKS_FOLDED)
                stacks.folded_path = optarg;
            else if (c == OPT_DEBUG_DIR)
                stacks.debug_dirs = optarg;
            else
                stacks.sysroot = optarg;
            break;
        case OPT_RANKS:
            comm_views |= COMM_VIEW_RANKS;
            break;
        case OPT_COMM:
            comm_views |= COMM_VIEW_COMM;
            break;
        case OPT_STRAGGLERS:
            comm_views |= COMM_VIEW_STRAGGLERS;
            break;
        case OPT_RANK: {
            char *end;
            errno = 0;
            only_rank = strtoll(optarg, &end, 10);
            if (errno || end == optarg || *end || only_rank < 0)
                return main_bad_usage("--rank wants a rank number, not '%s'", optarg);
            break;
        }
        case OPT_MEMORY_TIMELINE:
            if (!*optarg)
                return main_bad_usage("%s wants a file name", "--memory-timeline");
            timeline_path = optarg;
            break;
        case OPT_CHROME_NS:
            chrome_flags |= EXPORT_CHROME_NS;
            break;
        case OPT_PSTATS:
        case OPT_FOLDED:
        case OPT_PERFETTO:
        case OPT_CHROME_TRACE:
        case OPT_HTML:
        case OPT_FLAMEGRAPH:
            if (!*optarg)
                return main_bad_usage("%s wants a file name", argv[optind - 1]);
            *(c == OPT_PSTATS       ? &pstats_path
              : c == OPT_FOLDED     ? &folded_path
              : c == OPT_PERFETTO   ? &perfetto_path
              : c == OPT_HTML       ? &html_path
              : c == OPT_FLAMEGRAPH ? &flame_path
                                    : &chrome_path) = optarg;
            break;
        case 'h':
            report_usage(stdout);
            return 0;
        case ':':
            if (optopt == OPT_STACKS && !stacks_asked) { /* last: `--memory --stacks` */
                stacks_asked = stacks_bare = 1;
                break;
            }
            return main_bad_usage("option '%s' needs a value", argv[optind - 1]);
        default:
            return main_bad_usage("unknown option '%s'", argv[optind - 1]);
        }
    }
    /* The tables asked for by name (else the default report). */
    int tables = python || kernels || gpu || actions || ops || memory || threads;
    if (stacks_bare) {
        if (!memory)
            return main_bad_usage("--stacks wants an API name (e.g. cudaDeviceSynchronize), or "
                                  "goes with --memory%s",
                                  "");
        stacks.api_name = "memory";
    }
    if (run_id && all_runs)
        return main_bad_usage("--run and --all-runs exclude each other%s", "");
    if (jobs && !summarize)
        return main_bad_usage("--jobs goes with --summarize%s", "");
    if (summarize) {
        /* Summaries are written, nothing is reported: a view asked for beside it would be
         * silently ignored. */
        if (argc - optind < 1)
            return main_bad_usage("--summarize wants trace files or directories%s", "");
        int views = tables || by_shape || format_given || sort_arg || limit || run_id || all_runs ||
                    all_roles || pstats_path || folded_path || timeline_path || perfetto_path ||
                    chrome_path || html_path || flame_path || stacks_asked || comm_views ||
                    only_rank >= 0 || step_name;
        if (views)
            return main_bad_usage("--summarize writes summaries only; give the views to the "
                                  "report that reads them%s",
                                  "");
        /* the operator rows of the steady steps beside the whole process's */
        model_torch_set_window(MODEL_WINDOW_STEADY);
        return summarize_run(argv + optind, argc - optind, jobs, stdout);
    }
    if (split != TABLES_PYTHON_MERGED && !python)
        return main_bad_usage("%s goes with --python",
                              split == TABLES_PYTHON_PER_THREAD ? "--per-thread" : "--per-process");
    if (split != TABLES_PYTHON_MERGED && format_given && format != MAIN_FORMAT_TEXT)
        return main_bad_usage("--per-thread and --per-process are for the text report%s", "");
    /* --group-by-shape alone asks for the table it changes. */
    if (by_shape && !tables && format == MAIN_FORMAT_TEXT)
        ops = tables = 1;
    if (sort_arg) {
        /* A key of both tables (calls, name) orders both; otherwise the key says which. */
        int api_ok = summary_parse_sort(sort_arg, &sort) == 0;
        int py_ok = pystats_parse_sort(sort_arg, &py_sort) == 0;
        int ops_ok = summary_parse_op_sort(sort_arg, &op_sort) == 0;
        if (ops && !ops_ok)
            return main_bad_usage("unknown sort key '%s' for --ops (self_cpu, cpu_total, "
                                  "self_cuda, cuda_total, calls or name; or torch's "
                                  "self_cpu_time_total, cpu_time_total, self_cuda_time_total, "
                                  "cuda_time_total, count, cpu_memory_usage, "
                                  "self_cpu_memory_usage, cuda_memory_usage, "
                                  "self_cuda_memory_usage)",
                                  sort_arg);
        if (python && !py_ok)
            return main_bad_usage("unknown sort key '%s' for --python (cumtime, tottime, ncalls, "
                                  "percall, name, filename or line)",
                                  sort_arg);
        if (!api_ok && !py_ok && !ops_ok)
            return main_bad_usage("unknown sort key '%s' (total, calls, avg, min, max, errors or "
                                  "name; for Python: cumtime, tottime, ncalls, percall, "
                                  "filename or line; for --ops: self_cpu, cpu_total, "
                                  "self_cuda, cuda_total)",
                                  sort_arg);
    }
    if (optind >= argc)
        return main_bad_usage("no trace file or directory given%s", "");
    if (html_path && stacks_asked)
        return main_bad_usage("--html reports the tables; --samples and --stacks take "
                              "--flamegraph%s",
                              "");
    if (stacks.folded_path && !stacks_asked)
        return main_bad_usage("--stacks-folded goes with --stacks NAME or --samples%s", "");

    /* Writing a file alone prints no report, unless one was asked for too. */
    int print = !(pstats_path || folded_path || timeline_path || perfetto_path || chrome_path ||
                  html_path || flame_path) ||
                tables || format_given;
    struct report_inputs in = {.defs_only = (perfetto_path || chrome_path) && !print &&
                                            !pstats_path && !folded_path && !timeline_path &&
                                            !stacks_asked && !html_path && !flame_path};
    in.trace_only = perfetto_path                     ? "--perfetto"
                    : chrome_path                     ? "--chrome-trace"
                    : stacks_asked && stacks.api_name ? "--stacks"
                    : stacks_asked                    ? "--samples"
                    : timeline_path                   ? "--memory-timeline"
                    : folded_path                     ? "--folded"
                    : html_path                       ? "--html"
                    : flame_path                      ? "--flamegraph"
                    : split != TABLES_PYTHON_MERGED   ? "--per-thread / --per-process"
                    : step_name                       ? "--step"
                                                      : NULL;
    model_steps_set_name(step_name);
    model_steps_keep_spans(html_path || flame_path || folded_path); /* --phase startup, steady */
    /* The operator tables: the steady steps unless --phase says otherwise. */
    model_torch_set_window(phase == EXPORT_PHASE_ALL       ? MODEL_WINDOW_ALL
                           : phase == EXPORT_PHASE_STEPS   ? MODEL_WINDOW_STEPS
                           : phase == EXPORT_PHASE_STARTUP ? MODEL_WINDOW_STARTUP
                                                           : MODEL_WINDOW_STEADY);
    in.fold = !in.trace_only;
    for (int i = optind; i < argc; i++)
        report_inputs_load_path(&in, argv[i]);
    report_inputs_finish(&in);
    if (in.n == 0) {
        if (!in.failed) /* else each input has said why already */
            fprintf(stderr, "profreport: no readable trace in the inputs\n");
        free(in.procs);
        return 1;
    }
    struct jobs_report job;
    if (jobs_select(in.procs, &in.n, run_id, all_runs, all_roles, &job, stderr) != 0) {
        for (size_t i = 0; i < in.n; i++)
            model_process_free(in.procs[i]);
        free(in.procs);
        jobs_free(&job);
        return 1;
    }
    for (size_t i = 0; i < job.nwarnings; i++)
        main_print_warning(job.warnings[i]);
    if (only_rank >= 0 && main_keep_rank(&in, only_rank) != 0) {
        jobs_free(&job);
        return 1;
    }

    int failed = in.failed;
    if (main_write_timelines(in.procs, in.n, perfetto_path, chrome_path, chrome_flags) != 0)
        failed = 1;
    if (in.defs_only) {
        for (size_t i = 0; i < in.n; i++) {
            for (size_t w = 0; w < in.procs[i]->nwarnings; w++)
                main_print_warning(in.procs[i]->warnings[w]);
            model_process_free(in.procs[i]);
        }
        free(in.procs);
        jobs_free(&job);
        return failed ? 1 : 0;
    }
    if (stacks_asked) {
        stacks.limit = limit;
        stacks.json = format == MAIN_FORMAT_JSON;
        stacks.left_out = job.left_out;
        int rc = 0;
        if (format == MAIN_FORMAT_CSV)
            rc = main_bad_usage("--stacks and --samples print text or json%s", "");
        else if (flame_path)
            rc = html_write_stacks_flame(flame_path, in.procs, in.n, &stacks, stderr);
        if (rc != 2 && (!flame_path || stacks.folded_path || format_given))
            rc |= stacks_view(stdout, stderr, in.procs, in.n, &stacks);
        for (size_t i = 0; i < in.n; i++)
            model_process_free(in.procs[i]);
        free(in.procs);
        jobs_free(&job);
        if (fflush(stdout) != 0)
            rc = 1;
        return rc == 2 ? 2 : rc || failed ? 1 : 0;
    }

    struct summary s;
    summary_build(&s, in.procs, in.n);
    s.job = &job;
    s.step_name = step_name;
    s.phase = phase >= 0 ? phase : main_default_phase(&s);
    if (s.phase != EXPORT_PHASE_ALL && !export_folded_has_steps(&s)) {
        if (phase >= 0 && (html_path || flame_path || folded_path))
            fprintf(stderr, "profreport: note: --phase: the run has no training steps; the "
                            "flame graphs and folded stacks cover the whole process\n");
        s.phase = EXPORT_PHASE_ALL;
    }
    int draws_startup = s.phase == EXPORT_PHASE_STARTUP && (flame_path || folded_path || html_path);
    for (size_t i = 0; draws_startup && i < s.nprocs; i++)
        if (s.procs[i]->steps.nsteps && model_start_unrecorded(s.procs[i]))
            fprintf(stderr,
                    "profreport: note: --phase startup: pid %lld's recording opened after its "
                    "start (a capture window or an attach): its startup is not in the trace, "
                    "nor in the flame graph\n",
                    (long long)s.procs[i]->pid);
    summary_sort(&s, sort);
    summary_sort_python(&s, py_sort);
    if (by_shape)
        summary_build_torch(&s, 1);
    summary_sort_torch(&s, op_sort);
    for (size_t i = 0; i < s.nwarnings; i++)
        main_print_warning(s.warnings[i]);
    if (main_write_python_files(&s, pstats_path, folded_path, folded_depth, folded_min_share) != 0)
        failed = 1;
    if (html_write_files(html_path, flame_path, &s, stderr) != 0)
        failed = 1;
    if (timeline_path) {
        char err[512];
        if (export_memory_timeline_write(timeline_path, &s, err, sizeof err) != 0) {
            format_say(stderr, "%s", err);
            failed = 1;
        }
    }
    int rc = 0;
    if (comm_views) {
        rc = main_print_comm(&s, format, comm_views, limit_given && !limit ? SIZE_MAX : limit);
        /* Tables named beside them follow, in the text report only. */
        print = format == MAIN_FORMAT_TEXT && tables;
        if (print)
            fputc('\n', stdout);
    }
    if (!print)
        ;
    else if (format == MAIN_FORMAT_JSON)
        rc = export_json_write(stdout, &s, limit);
    else if (format == MAIN_FORMAT_CSV)
        rc = export_csv_write(stdout, &s, limit);
    else if (tables) {
        jobs_print(stdout, &job);
        main_print_selected(&s, limit, split, python, kernels, gpu, actions, ops, memory, threads);
    } else {
        struct findings found;
        if (s.nsummaries)
            fprintf(stderr,
                    "profreport: note: %zu of the processes were read from summaries "
                    "(profreport --summarize), not from their traces\n",
                    s.nsummaries);
        struct comm_report ranks;
        comm_merge_build(&ranks, &s);
        findings_build(&found, &s);
        findings_print(stdout, &found);
        findings_free(&found);
        steps_view_print(stdout, &s, &ranks);
        jobs_print(stdout, &job);
        tables_print(stdout, &s, limit);
        main_print_comm_default(&s, &ranks, limit);
        comm_merge_free(&ranks);
    }
    summary_free(&s);
    jobs_free(&job);
    if (fflush(stdout) != 0 || ferror(stdout) || rc != 0) {
        fprintf(stderr, "profreport: cannot write the report: %s\n", strerror(errno));
        return 1;
    }
    return failed ? 1 : 0;
}
