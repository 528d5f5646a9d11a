/* The libFuzzer harness of the reader: arbitrary bytes as a trace file through the reader,
 * the model, the merge and every view, written to /dev/null (`make fuzz`, `make fuzz-ci`;
 * see test/fuzz/fuzz.mk). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_input.h"

static FILE *fuzz_sink;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *writers = getenv("FUZZ_WRITERS");
    fuzz_input_writers = !writers                  ? FUZZ_WRITERS_SOME
                         : !strcmp(writers, "all") ? FUZZ_WRITERS_ALL
                         : !strcmp(writers, "0")   ? FUZZ_WRITERS_NONE
                                                   : FUZZ_WRITERS_SOME;
    fuzz_sink = fopen("/dev/null", "w");
    if (!fuzz_sink) {
        perror("fuzz: /dev/null");
        abort();
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_input_run(data, size, fuzz_sink);
    return 0;
}
