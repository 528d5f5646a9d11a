/* tables: the text report, aligned columns for a terminal. */
#ifndef REPORT_TABLES_H
#define REPORT_TABLES_H

#include <stdio.h>

#include "summary.h"

/* Prints every table of s; limit (0 = all) caps the API and kernel tables. */
void tables_print(FILE *out, const struct summary *s, size_t limit);

#endif
