/* text_bound: over-long texts keep their first bytes, whole UTF-8 characters, and a
 * marker with the whole length; shorter ones, and bounded ones, stay as they are. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "text_bound.h"

/* n bytes: `lead` 'a's, then copies of the character ch (a UTF-8 sequence), then 'a's
 * to fill. */
static char *text_led(size_t n, size_t lead, const char *ch)
{
    char *s = malloc(n + 1);
    size_t k = strlen(ch), i = lead;
    memset(s, 'a', lead);
    for (; i + k <= n; i += k)
        memcpy(s + i, ch, k);
    memset(s + i, 'a', n - i);
    s[n] = '\0';
    return s;
}

static char *text_of(size_t n, const char *ch)
{
    return text_led(n, 1, ch);
}

static char *bounded(const char *s)
{
    char *out = malloc(TEXT_BOUND_MAX);
    size_t n = text_bound_copy(out, s);
    cr_assert_eq(n, strlen(out));
    cr_assert_eq(n, text_bound_len(s));
    cr_assert_lt(n, TEXT_BOUND_MAX);
    return out;
}

Test(text_bound, a_text_that_fits_is_kept_whole)
{
    char *s = text_of(TEXT_BOUND_MAX - 1, "x");
    char *b = bounded(s);
    cr_expect_str_eq(b, s);
    free(s);
    free(b);
}

Test(text_bound, a_longer_text_keeps_its_start_and_says_how_long_it_was)
{
    char *s = text_of(1048577, "x");
    char *b = bounded(s);
    char *mark = strstr(b, "\u2026[truncated, 1048577 bytes]");
    cr_assert(mark != NULL);
    cr_expect_eq(mark - b, TEXT_BOUND_KEEP);
    cr_expect_str_eq(mark + strlen(mark) - 1, "]");
    cr_expect_eq(memcmp(b, s, TEXT_BOUND_KEEP), 0);
    free(s);
    free(b);
}

Test(text_bound, the_cut_never_splits_a_utf8_character)
{
    const char *chars[] = {"\u00e9", "\u20ac", "\U0001F600"}; /* 2, 3 and 4 bytes */
    for (size_t c = 0; c < 3; c++) {
        for (size_t shift = 0; shift < 4; shift++) {
            char *s = text_led(TEXT_BOUND_MAX + 100, 1 + shift, chars[c]);
            char *b = bounded(s);
            size_t kept = (size_t)(strstr(b, "\u2026[truncated, ") - b);
            cr_expect_leq(kept, TEXT_BOUND_KEEP);
            cr_expect_gt(kept + strlen(chars[c]), TEXT_BOUND_KEEP, "no more than needed cut");
            cr_expect_eq((kept - 1 - shift) % strlen(chars[c]), 0, "%zu-byte characters whole",
                         strlen(chars[c]));
            free(s);
            free(b);
        }
    }
}

Test(text_bound, a_bounded_text_is_not_cut_again)
{
    char *s = text_of(200000, "\u00e9");
    char *b = bounded(s);
    char *again = bounded(b);
    cr_expect_str_eq(again, b);
    free(s);
    free(b);
    free(again);
}
