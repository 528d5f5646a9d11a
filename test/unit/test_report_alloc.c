/* The reporter's heap before a trace is read (report_heap_for_trace): the memory malloc
 * hands out after it is advised for huge pages, and what is freed stays in the heap. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"

/* The VmFlags of the mapping of /proc/self/smaps that holds addr, into flags. */
static int vm_flags_of(const void *addr, char *flags, size_t cap)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    cr_assert_not_null(f);
    char line[512];
    int inside = 0, found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
        else if (inside && !strncmp(line, "VmFlags:", 8)) {
            snprintf(flags, cap, "%.200s", line + 8);
            found = 1;
        }
    }
    fclose(f);
    return found;
}

static int kernel_has_huge_pages(void)
{
    return access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
}

Test(report_alloc, a_models_arrays_come_from_memory_advised_for_huge_pages)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's malloc does not take the heap from brk");
#endif
    if (!kernel_has_huge_pages())
        cr_skip_test("this kernel has no transparent huge pages");
    report_heap_for_trace(10 << 20); /* a 10 MB trace: 40 MB advised */
    /* A model's largest arrays: blocks of a few MB, under the 32 MB mmap threshold. */
    char *arrays[4];
    for (int i = 0; i < 4; i++) {
        arrays[i] = malloc(8 << 20);
        cr_assert_not_null(arrays[i]);
        memset(arrays[i], 1, 8 << 20);
    }
    for (int i = 0; i < 4; i++) {
        char flags[256];
        char *middle = arrays[i] + (4 << 20); /* past any 2 MB boundary of the block */
        cr_assert(vm_flags_of(middle, flags, sizeof flags), "array %d not in smaps", i);
        cr_expect(strstr(flags, " hg") != NULL,
                  "array %d (%p) is not advised for huge pages: VmFlags%s", i, (void *)middle,
                  flags);
    }
    for (int i = 0; i < 4; i++)
        free(arrays[i]);
}

Test(report_alloc, freed_memory_stays_in_the_heap_for_the_next_trace)
{
#if defined(__SANITIZE_ADDRESS__)
    cr_skip_test("AddressSanitizer's malloc does not take the heap from brk");
#endif
    report_heap_for_trace(1 << 20);
    char *model = malloc(20 << 20);
    cr_assert_not_null(model);
    memset(model, 1, 20 << 20);
    void *top = sbrk(0);
    free(model); /* glibc's default would give the heap's free top back to the kernel */
    cr_expect_eq(sbrk(0), top, "the heap shrank from %p to %p", top, sbrk(0));
    char *next = malloc(20 << 20);
    cr_assert_not_null(next);
    cr_expect_eq(next, model, "the next trace's model got other memory");
    free(next);
}
