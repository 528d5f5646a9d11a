/* fuzz_input: one input of the reader fuzzer through everything profreport does with a
 * trace: read, model, merge, every view and every writer. Shared by the libFuzzer harness
 * (fuzz_reader.c) and the regression test that replays the saved inputs
 * (test/unit/test_fuzz_inputs.c). */
#ifndef TEST_FUZZ_INPUT_H
#define TEST_FUZZ_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The bytes are one trace file, or two when the magic appears again at an 8-byte
 * aligned offset (the second file starts there): both are read and merged. Every table,
 * export and the dump are written to sink; messages for the user go there too. Returns
 * the number of files that read as traces (0, 1 or 2). */
int fuzz_input_run(const uint8_t *data, size_t size, FILE *sink);
/* Also the writers to files — HTML, the SVG flame graphs, pstats, Perfetto, Chrome/Kineto
 * JSON — into a private folder under /dev/shm or /tmp: for every input (FUZZ_WRITERS_ALL,
 * the default: the replays), for a fixed quarter of the inputs (FUZZ_WRITERS_SOME:
 * fuzz_reader, unless FUZZ_WRITERS=all or 0 in its environment), or none. */
enum { FUZZ_WRITERS_NONE, FUZZ_WRITERS_ALL, FUZZ_WRITERS_SOME };
extern int fuzz_input_writers;

#endif
