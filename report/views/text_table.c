#include "text_table.h"

#include "format.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void text_table_begin(struct text_table *t, const char *spec)
{
    /* spec: "<Name|>Calls|..." where '>' marks a right-aligned column */
    memset(t, 0, sizeof *t);
    snprintf(t->spec, sizeof t->spec, "%s", spec);
    for (char *save = NULL, *c = strtok_r(t->spec, "|", &save); c && t->ncols < TEXT_TABLE_MAX_COLS;
         c = strtok_r(NULL, "|", &save)) {
        t->right[t->ncols] = *c == '>';
        t->head[t->ncols++] = c + 1;
    }
}

static void text_table_grow(struct text_table *t)
{
    if ((t->nrows + 1) * t->ncols > t->cap) {
        t->cap = t->cap ? t->cap * 2 : 64 * t->ncols;
        while (t->cap < (t->nrows + 1) * t->ncols)
            t->cap *= 2;
        char **n = realloc(t->cells, t->cap * sizeof *n);
        if (!n) {
            fprintf(stderr, "profreport: out of memory\n");
            exit(1);
        }
        t->cells = n;
    }
}

static char *text_table_cell(const char *s)
{
    char *d = format_escape_dup(s ? s : ""); /* trace strings reach the terminal */
    if (!d) {
        fprintf(stderr, "profreport: out of memory\n");
        exit(1);
    }
    return d;
}

void text_table_row_cells(struct text_table *t, const char *const *cells)
{
    text_table_grow(t);
    for (size_t c = 0; c < t->ncols; c++)
        t->cells[t->nrows * t->ncols + c] = text_table_cell(cells[c]);
    t->nrows++;
}

void text_table_row(struct text_table *t, ...)
{
    text_table_grow(t);
    va_list ap;
    va_start(ap, t);
    for (size_t c = 0; c < t->ncols; c++) {
        t->cells[t->nrows * t->ncols + c] = text_table_cell(va_arg(ap, const char *));
    }
    va_end(ap);
    t->nrows++;
}

void text_table_discard(struct text_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    memset(t, 0, sizeof *t);
}

void text_table_end(FILE *out, struct text_table *t)
{
    size_t w[TEXT_TABLE_MAX_COLS];
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = format_columns(t->head[c]);
        for (size_t r = 0; r < t->nrows; r++) {
            size_t l = format_columns(t->cells[r * t->ncols + c]);
            if (l > w[c])
                w[c] = l;
        }
    }
    for (size_t r = 0; r <= t->nrows; r++) {
        fputs("  ", out);
        for (size_t c = 0; c < t->ncols; c++) {
            const char *s = r == 0 ? t->head[c] : t->cells[(r - 1) * t->ncols + c];
            int last = c + 1 == t->ncols;
            size_t pad = last && !t->right[c] ? 0 : w[c] - format_columns(s);
            if (t->right[c])
                fprintf(out, "%*s", (int)pad, "");
            fputs(s, out);
            if (!t->right[c])
                fprintf(out, "%*s", (int)pad, "");
            if (!last)
                fputs("  ", out);
        }
        fputc('\n', out);
    }
    text_table_discard(t);
}
