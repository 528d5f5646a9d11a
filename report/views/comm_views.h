/* comm_views: the cross-rank views as text (comm_tables.c), JSON and CSV (comm_export.c):
 * --ranks, --comm, --stragglers. */
#ifndef REPORT_COMM_VIEWS_H
#define REPORT_COMM_VIEWS_H

#include <stdio.h>

#include "comm_merge.h"
#include "summary.h"

enum comm_view { COMM_VIEW_RANKS = 1, COMM_VIEW_COMM = 2, COMM_VIEW_STRAGGLERS = 4 };

/* The views in `views` (COMM_VIEW_* bits), in that order, a blank line between them.
 * limit (0 = all) caps the rows of --comm and the operations of --stragglers. */
void comm_tables_print(FILE *out, const struct summary *s, const struct comm_report *r, int views,
                       size_t limit);
/* 0 on success. */
int comm_export_json(FILE *out, const struct comm_report *r, int views, size_t limit);
int comm_export_csv(FILE *out, const struct comm_report *r, int views, size_t limit);

#endif
