/* bench_proc: what the merge benches share (bench_merge.c on generated ranks,
 * bench_merge_real.c on ranks cloned from a real trace): running a profreport and taking
 * its wall time, CPU time and peak RSS; checks that fail the bench; the nodes' folders and
 * summaries. */
#ifndef BENCH_PROC_H
#define BENCH_PROC_H

struct bench_run {
    double seconds, cpu; /* wall; user + system of the child and the children it waited for */
    long max_rss_kb;     /* its largest process */
    int status;          /* exit status, or -1 */
};

extern const char *bench_name;   /* the bench's name, before its messages */
extern int bench_failures;       /* checks failed */
extern long bench_parent_rss_kb; /* the most this process held when it forked */

double bench_now(void);
double bench_mb(unsigned long long bytes);
/* The whole file, NUL-terminated (malloc'd), or NULL. */
char *bench_read(const char *path);
/* Runs argv with stdout to out and stderr to err (NULL: inherited); bench_exec also shows
 * a failed run's stderr. */
struct bench_run bench_run_child(char *const argv[], const char *out, const char *err);
struct bench_run bench_exec(char *const argv[], const char *out, const char *err);
void bench_print_run(const char *what, const struct bench_run *r);
/* Counts a failure and says it when !ok. */
void bench_check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int bench_mkdir(const char *path);
/* The summaries in dir: count and bytes. */
unsigned bench_summaries(const char *dir, unsigned long long *bytes);
/* The final merge's inputs: the summaries in the nodes' folders by name (without their
 * traces they are read only when named), or the folders when the traces were kept. */
char **bench_inputs(char **node_dirs, unsigned nodes, int summaries, size_t *n);

/* The nodes' `--summarize` runs together. */
struct bench_sums {
    double wall, cpu;
    long max_rss_kb;
    unsigned long long summary_bytes;
};
/* A node's traces were summarized by run s: checks that each has its summary and adds the
 * run to sums; the node's summary bytes. */
unsigned long long bench_node_summarized(const char *node_dir, unsigned traces,
                                         const struct bench_run *s, struct bench_sums *sums);

#endif
