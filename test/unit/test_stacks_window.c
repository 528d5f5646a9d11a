/* stacks_window (preload/stacks/stacks_window.c): the sampler's reads of its own
 * process's memory, a page copied whole and the next reads in it served from the copy;
 * an unreadable page fails the read instead of faulting. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "stacks_window.h"

#define PAGE STACKS_WINDOW_PAGE

/* Three pages: two readable, filled with their offsets' low bytes, then one that is not. */
static uint8_t *three_pages(void)
{
    uint8_t *m = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    cr_assert(m != MAP_FAILED);
    for (unsigned i = 0; i < 2 * PAGE; i++)
        m[i] = (uint8_t)(i * 7);
    cr_assert_eq(mprotect(m + 2 * PAGE, PAGE, PROT_NONE), 0);
    return m;
}

static struct stacks_window w; /* 8 KB: not on the test's stack */

Test(stacks_window, a_read_copies_its_page_and_the_next_reads_come_from_the_copy)
{
    uint8_t *m = three_pages();
    uint64_t v = 0, want;
    stacks_window_clear(&w);
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)(m + 100), &v, 8), 0);
    memcpy(&want, m + 100, 8);
    cr_assert_eq(v, want);
    cr_assert_eq(w.lo, (uint64_t)(uintptr_t)m);
    cr_assert_eq(w.hi, (uint64_t)(uintptr_t)m + PAGE);
    /* the page made unreadable: a read inside it still succeeds, so it made no call */
    cr_assert_eq(mprotect(m, PAGE, PROT_NONE), 0);
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)(m + 4000), &v, 8), 0);
    cr_assert_eq(mprotect(m, PAGE, PROT_READ | PROT_WRITE), 0);
    memcpy(&want, m + 4000, 8);
    cr_assert_eq(v, want);
    /* a change made since is seen only once the copy is forgotten (the next sample) */
    m[200] = 0xab;
    uint8_t b = 0;
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)(m + 200), &b, 1), 0);
    cr_assert_eq(b, (uint8_t)(200 * 7));
    stacks_window_clear(&w);
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)(m + 200), &b, 1), 0);
    cr_assert_eq(b, 0xab);
    munmap(m, 3 * PAGE);
}

Test(stacks_window, a_read_across_two_pages_copies_both)
{
    uint8_t *m = three_pages();
    uint8_t got[72], want[72];
    stacks_window_clear(&w);
    uint8_t *at = m + PAGE - 40;
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)at, got, sizeof got), 0);
    memcpy(want, at, sizeof want);
    cr_assert_arr_eq(got, want, sizeof got);
    cr_assert_eq(w.lo, (uint64_t)(uintptr_t)m);
    cr_assert_eq(w.hi, (uint64_t)(uintptr_t)m + 2 * PAGE);
    /* both pages are in the copy now: the first page's start and the second's end */
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)m, got, 8), 0);
    cr_assert_arr_eq(got, m, 8);
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)(m + 2 * PAGE - 8), got, 8),
                 0);
    cr_assert_arr_eq(got, m + 2 * PAGE - 8, 8);
    munmap(m, 3 * PAGE);
}

Test(stacks_window, an_unreadable_byte_fails_the_read_and_empties_the_copy)
{
    uint8_t *m = three_pages();
    uint8_t got[16];
    stacks_window_clear(&w);
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)m, got, 8), 0);
    /* 8 bytes before the unreadable page, 8 in it */
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)(m + 2 * PAGE - 8), got, 16),
                 -1);
    cr_assert_eq(w.lo, w.hi);
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)(m + 2 * PAGE), got, 8), -1);
    /* a null pointer, nothing asked, more than a page, an address range that wraps */
    cr_assert_eq(stacks_window_read(getpid(), &w, 0, got, 8), -1);
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)m, got, 0), -1);
    cr_assert_eq(stacks_window_read(getpid(), &w, (uint64_t)(uintptr_t)m, w.buf, PAGE + 1), -1);
    cr_assert_eq(stacks_window_read(getpid(), &w, UINT64_MAX - 3, got, 8), -1);
    munmap(m, 3 * PAGE);
}
