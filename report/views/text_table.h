/* text_table: aligned columns for a terminal, shared by the text reports. */
#ifndef REPORT_TEXT_TABLE_H
#define REPORT_TEXT_TABLE_H

#include <stddef.h>
#include <stdio.h>

#define TEXT_TABLE_MAX_COLS 16

/* A text table: cells are collected, then printed with each column as wide as its widest
 * cell. Numbers align right, text left. */
struct text_table {
    size_t ncols;
    const char *head[TEXT_TABLE_MAX_COLS];
    int right[TEXT_TABLE_MAX_COLS];
    char spec[256]; /* head[] points into it */
    char **cells;   /* row-major */
    size_t nrows, cap;
};

/* spec: "<Name|>Calls|..." where '>' marks a right-aligned column, '<' a left one. */
void text_table_begin(struct text_table *t, const char *spec);
/* One row: as many const char * cells as the table has columns (NULL prints ""). */
void text_table_row(struct text_table *t, ...);
/* The same from an array of t->ncols cells. */
void text_table_row_cells(struct text_table *t, const char *const *cells);
/* Prints the heading and the rows, indented by two spaces, and frees the cells. */
void text_table_end(FILE *out, struct text_table *t);
/* Frees the cells without printing. */
void text_table_discard(struct text_table *t);

#endif
