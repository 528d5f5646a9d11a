/* dump: every record of one trace, one line each: byte offset, type name, fields
 * (API call arguments by the names their API_NAME record gives). For debugging and
 * tests. */
#ifndef REPORT_DUMP_H
#define REPORT_DUMP_H

#include <stdio.h>

/* Returns the exit status: 0 (also for a file cut off part way, with a warning on err),
 * 1 when the file cannot be read as a trace. */
int dump_file(FILE *out, FILE *err, const char *path);

#endif
