/* usage: profreport's --help text, every option and what it does. */
#ifndef REPORT_USAGE_H
#define REPORT_USAGE_H

#include <stdio.h>

void report_usage(FILE *out);

#endif
