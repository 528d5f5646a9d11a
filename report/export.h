/* export: the report as JSON (export_json.c) or CSV (export_csv.c). */
#ifndef REPORT_EXPORT_H
#define REPORT_EXPORT_H

#include <stdio.h>

#include "summary.h"

/* limit (0 = all) caps the API and kernel rows, as in the text tables. 0 on success. */
int export_json_write(FILE *out, const struct summary *s, size_t limit);
int export_csv_write(FILE *out, const struct summary *s, size_t limit);

#endif
