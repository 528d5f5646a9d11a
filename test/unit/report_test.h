/* Shared by the report unit tests: a temporary file for the trace each test builds, and a
 * load that fails the test with the reader's message. */
#ifndef REPORT_TEST_H
#define REPORT_TEST_H

#include <criterion/criterion.h>
#include <stdio.h>
#include <unistd.h>

#include "model.h"

/* path (64 bytes) becomes a new empty file /tmp/test_<suite>_XXXXXX. */
static inline void report_test_temp(char *path, const char *suite)
{
    snprintf(path, 64, "/tmp/test_%s_XXXXXX", suite);
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
}

static inline struct model_process *report_test_load(const char *file)
{
    char err[256];
    struct model_process *p = model_load_file(file, err, sizeof err);
    cr_assert_not_null(p, "%s", err);
    return p;
}

#endif
