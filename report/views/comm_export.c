/* The cross-rank views as JSON and CSV: see comm_views.h. Times in ns, bandwidths in GB/s
 * (10^9 bytes per second); a spread is {min, median, max, rank_at_max}. */
#include <inttypes.h>
#include <jansson.h>

#include "comm_views.h"
#include "format.h"

static json_t *comm_export_spread(const struct rank_spread *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "min", json_integer((json_int_t)s->min));
    json_object_set_new(o, "median", json_integer((json_int_t)s->median));
    json_object_set_new(o, "max", json_integer((json_int_t)s->max));
    json_object_set_new(o, "rank_at_max", json_integer((json_int_t)s->rank_at_max));
    return o;
}

#define COMM_EXPORT_INT(o, key, v) json_object_set_new(o, key, json_integer((json_int_t)(v)))

static json_t *comm_export_ranks(const struct comm_report *r)
{
    json_t *o = json_object();
    json_t *rows = json_array();
    for (size_t i = 0; i < r->nranks; i++) {
        const struct comm_rank_row *k = &r->ranks[i];
        json_t *row = json_object();
        COMM_EXPORT_INT(row, "rank", k->rank);
        json_object_set_new(row, "host", json_string(k->host ? k->host : ""));
        COMM_EXPORT_INT(row, "processes", k->nprocs);
        COMM_EXPORT_INT(row, "wall_ns", k->wall_ns);
        COMM_EXPORT_INT(row, "steps", k->steps);
        COMM_EXPORT_INT(row, "step_ns", k->step_ns);
        COMM_EXPORT_INT(row, "compute_ns", k->compute_ns);
        COMM_EXPORT_INT(row, "comm_ns", k->comm_ns);
        COMM_EXPORT_INT(row, "wait_ns", k->wait_ns);
        COMM_EXPORT_INT(row, "idle_ns", k->idle_ns);
        COMM_EXPORT_INT(row, "last_arrivals", k->last_arrivals);
        COMM_EXPORT_INT(row, "late_ns", k->late_ns);
        COMM_EXPORT_INT(row, "run_last_arrivals", k->run_last_arrivals);
        COMM_EXPORT_INT(row, "run_late_ns", k->run_late_ns);
        COMM_EXPORT_INT(row, "data_ns", k->data_ns);
        COMM_EXPORT_INT(row, "sync_ns", k->sync_ns);
        json_array_append_new(rows, row);
    }
    json_object_set_new(o, "rows", rows);
    json_object_set_new(o, "step", json_string(r->step_name ? r->step_name : "optimizer_step"));
    json_t *over = json_object();
    json_object_set_new(over, "wall_ns", comm_export_spread(&r->wall));
    json_object_set_new(over, "steps", comm_export_spread(&r->steps));
    json_object_set_new(over, "step_ns", comm_export_spread(&r->step));
    json_object_set_new(over, "compute_ns", comm_export_spread(&r->compute));
    json_object_set_new(over, "comm_ns", comm_export_spread(&r->comm));
    json_object_set_new(over, "wait_ns", comm_export_spread(&r->wait));
    json_object_set_new(over, "idle_ns", comm_export_spread(&r->idle));
    json_object_set_new(over, "data_ns", comm_export_spread(&r->data));
    json_object_set_new(over, "sync_ns", comm_export_spread(&r->sync));
    if (r->slowest.rank >= 0) {
        const struct comm_slowest *w = &r->slowest;
        json_object_set_new(
            o, "slowest",
            json_pack("{s:I,s:I,s:I,s:I,s:I,s:I,s:I,s:o}", "rank", (json_int_t)w->rank, "late_ns",
                      (json_int_t)w->late_ns, "last_arrivals", (json_int_t)w->last_arrivals,
                      "compute_excess_ns", (json_int_t)w->compute_ns, "data_excess_ns",
                      (json_int_t)w->data_ns, "sync_excess_ns", (json_int_t)w->sync_ns,
                      "idle_excess_ns", (json_int_t)w->idle_ns, "why",
                      w->why ? json_string(w->why) : json_null()));
    }
    json_object_set_new(o, "over_ranks", over);
    return o;
}

static json_t *comm_export_comm(const struct comm_report *r, size_t limit)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->nrows && (!limit || i < limit); i++) {
        const struct comm_row *c = &r->rows[i];
        json_t *row = json_object();
        json_object_set_new(row, "name", json_string(c->name));
        json_object_set_new(row, "kind", json_string(comm_kind_name(c->kind)));
        json_object_set_new(row, "source",
                            json_string(c->source == MODEL_COMM_TORCH_OP ? "torch" : "call"));
        COMM_EXPORT_INT(row, "ranks", c->ranks);
        COMM_EXPORT_INT(row, "comm_size", c->comm_size);
        COMM_EXPORT_INT(row, "calls", c->calls);
        COMM_EXPORT_INT(row, "bytes", c->bytes);
        COMM_EXPORT_INT(row, "time_ns", c->time_ns);
        COMM_EXPORT_INT(row, "wait_ns", c->wait_ns);
        COMM_EXPORT_INT(row, "transfer_ns", c->time_ns - c->wait_ns);
        COMM_EXPORT_INT(row, "matched", c->matched);
        COMM_EXPORT_INT(row, "last_rank", c->last_rank);
        COMM_EXPORT_INT(row, "last_count", c->last_count);
        COMM_EXPORT_INT(row, "late_ns", c->late_ns);
        COMM_EXPORT_INT(row, "gpu_ns", c->gpu_ns);
        COMM_EXPORT_INT(row, "kernels", c->kernels);
        json_object_set_new(row, "algbw_gbs", json_real(c->algbw_gbs));
        json_object_set_new(row, "busbw_gbs", json_real(c->busbw_gbs));
        json_object_set_new(row, "time_per_rank", comm_export_spread(&c->time));
        json_object_set_new(row, "wait_per_rank", comm_export_spread(&c->wait));
        json_object_set_new(row, "calls_per_rank", comm_export_spread(&c->calls_per_rank));
        json_t *parts = json_array();
        for (size_t k = 0; k < c->nper_rank; k++) {
            json_t *part = json_object();
            COMM_EXPORT_INT(part, "rank", c->per_rank[k].rank);
            COMM_EXPORT_INT(part, "calls", c->per_rank[k].calls);
            COMM_EXPORT_INT(part, "time_ns", c->per_rank[k].time_ns);
            COMM_EXPORT_INT(part, "wait_ns", c->per_rank[k].wait_ns);
            json_array_append_new(parts, part);
        }
        json_object_set_new(row, "per_rank", parts);
        json_array_append_new(rows, row);
    }
    return rows;
}

static json_t *comm_export_stragglers(const struct comm_report *r, size_t limit)
{
    json_t *rows = json_array();
    for (size_t i = 0; i < r->nstragglers && (!limit || i < limit); i++) {
        const struct comm_straggler *g = &r->stragglers[i];
        json_t *row = json_object();
        json_object_set_new(row, "name", json_string(g->name));
        COMM_EXPORT_INT(row, "comm", g->comm);
        COMM_EXPORT_INT(row, "index", g->index);
        COMM_EXPORT_INT(row, "ranks", g->ranks);
        COMM_EXPORT_INT(row, "last_rank", g->last_rank);
        COMM_EXPORT_INT(row, "late_ns", g->late_ns);
        COMM_EXPORT_INT(row, "spread_ns", g->spread_ns);
        COMM_EXPORT_INT(row, "first_arrival_realtime_ns", g->start_ns);
        json_array_append_new(rows, row);
    }
    return rows;
}

int comm_export_json(FILE *out, const struct comm_report *r, int views, size_t limit)
{
    json_t *root = json_object();
    COMM_EXPORT_INT(root, "hosts", r->nhosts);
    json_object_set_new(root, "clock",
                        json_string(r->nhosts > 1 ? "realtime of the first host, offsets "
                                                    "estimated from collective exits"
                                                  : "realtime"));
    if (r->nhosts > 1) {
        json_t *hosts = json_array();
        for (size_t h = 0; h < r->nhosts; h++) {
            json_t *o = json_object();
            json_object_set_new(o, "host", json_string(r->hosts[h].host));
            json_object_set_new(o, "offset_ns", json_integer(r->hosts[h].offset_ns));
            COMM_EXPORT_INT(o, "uncertainty_ns", r->hosts[h].uncertainty_ns);
            COMM_EXPORT_INT(o, "samples", r->hosts[h].samples);
            json_object_set_new(o, "known", json_boolean(h == 0 || r->hosts[h].samples));
            json_array_append_new(hosts, o);
        }
        json_object_set_new(root, "clock_offsets", hosts);
        COMM_EXPORT_INT(root, "clock_uncertainty_ns", r->clock_uncertainty_ns);
    }
    if (views & COMM_VIEW_RANKS)
        json_object_set_new(root, "ranks", comm_export_ranks(r));
    if (views & COMM_VIEW_COMM)
        json_object_set_new(root, "comm", comm_export_comm(r, limit));
    if (views & COMM_VIEW_STRAGGLERS)
        json_object_set_new(root, "stragglers", comm_export_stragglers(r, limit));
    int rc = json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    fputc('\n', out);
    json_decref(root);
    return rc;
}

static void comm_export_csv_spread(FILE *out, const char *what, const struct rank_spread *s)
{
    fprintf(out, "%s,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%lld\n", what, s->min, s->median, s->max,
            (long long)s->rank_at_max);
}

int comm_export_csv(FILE *out, const struct comm_report *r, int views, size_t limit)
{
    const char *sep = "";
    if (r->nhosts > 1) { /* every time below is on the first host's clock */
        fprintf(out, "# clocks\nhost,offset_ns,uncertainty_ns,samples\n");
        for (size_t h = 0; h < r->nhosts; h++) {
            format_csv_field(out, r->hosts[h].host);
            fprintf(out, ",%lld,%" PRIu64 ",%" PRIu64 "\n", (long long)r->hosts[h].offset_ns,
                    r->hosts[h].uncertainty_ns, r->hosts[h].samples);
        }
        sep = "\n";
    }
    if (views & COMM_VIEW_RANKS) {
        fprintf(out,
                "%s# ranks\nrank,host,processes,wall_ns,steps,step_ns,compute_ns,comm_ns,"
                "wait_ns,idle_ns,last_arrivals,late_ns,data_ns,sync_ns,run_last_arrivals,"
                "run_late_ns\n",
                sep);
        for (size_t i = 0; i < r->nranks; i++) {
            const struct comm_rank_row *k = &r->ranks[i];
            fprintf(out, "%lld,", (long long)k->rank);
            format_csv_field(out, k->host ? k->host : "");
            fprintf(out,
                    ",%zu,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                    ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                    ",%" PRIu64 "\n",
                    k->nprocs, k->wall_ns, k->steps, k->step_ns, k->compute_ns, k->comm_ns,
                    k->wait_ns, k->idle_ns, k->last_arrivals, k->late_ns, k->data_ns, k->sync_ns,
                    k->run_last_arrivals, k->run_late_ns);
        }
        fprintf(out, "\n# ranks_spread\ncolumn,min,median,max,rank_at_max\n");
        comm_export_csv_spread(out, "wall_ns", &r->wall);
        comm_export_csv_spread(out, "data_ns", &r->data);
        comm_export_csv_spread(out, "sync_ns", &r->sync);
        comm_export_csv_spread(out, "steps", &r->steps);
        comm_export_csv_spread(out, "step_ns", &r->step);
        comm_export_csv_spread(out, "compute_ns", &r->compute);
        comm_export_csv_spread(out, "comm_ns", &r->comm);
        comm_export_csv_spread(out, "wait_ns", &r->wait);
        comm_export_csv_spread(out, "idle_ns", &r->idle);
        sep = "\n";
    }
    if (views & COMM_VIEW_COMM) {
        fprintf(out,
                "%s# comm\nname,kind,ranks,comm_size,calls,bytes,time_ns,wait_ns,transfer_ns,"
                "gpu_ns,kernels,algbw_gbs,busbw_gbs,time_min_ns,time_median_ns,time_max_ns,"
                "time_rank_at_max\n",
                sep);
        for (size_t i = 0; i < r->nrows && (!limit || i < limit); i++) {
            const struct comm_row *c = &r->rows[i];
            format_csv_field(out, c->name);
            fprintf(out,
                    ",%s,%u,%u,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
                    ",%" PRIu64 ",%.6f,%.6f,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%lld\n",
                    comm_kind_name(c->kind), c->ranks, c->comm_size, c->calls, c->bytes, c->time_ns,
                    c->wait_ns, c->time_ns - c->wait_ns, c->gpu_ns, c->kernels, c->algbw_gbs,
                    c->busbw_gbs, c->time.min, c->time.median, c->time.max,
                    (long long)c->time.rank_at_max);
        }
        sep = "\n";
    }
    if (views & COMM_VIEW_STRAGGLERS) {
        fprintf(out, "%s# stragglers\nname,comm,index,ranks,last_rank,late_ns,spread_ns\n", sep);
        for (size_t i = 0; i < r->nstragglers && (!limit || i < limit); i++) {
            const struct comm_straggler *g = &r->stragglers[i];
            format_csv_field(out, g->name);
            fprintf(out, ",%" PRIu64 ",%zu,%u,%lld,%" PRIu64 ",%" PRIu64 "\n", g->comm, g->index,
                    g->ranks, (long long)g->last_rank, g->late_ns, g->spread_ns);
        }
    }
    return ferror(out) ? -1 : 0;
}
