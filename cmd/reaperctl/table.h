/*
 * table.h - aligned text tables for people: every column as wide as its
 * widest cell (counted in characters, not bytes), capped at
 * RP_TABLE_MAX_WIDTH with the cut shown as "...", two spaces between
 * columns, the last column not padded. A cell's control characters (and
 * bytes that are not UTF-8) are shown escaped (escape.h), so nothing a
 * message or a broker name holds can move the cursor or break a line.
 *
 * Ownership: the table copies every cell; rp_table_free frees it all.
 */
#ifndef RP_CTL_TABLE_H
#define RP_CTL_TABLE_H

#include <stddef.h>
#include <stdio.h>

#define RP_TABLE_MAX_WIDTH 60

typedef struct rp_table rp_table;

/* A table with ncols columns and these headings. NULL when out of memory. */
rp_table *rp_table_new(size_t ncols, const char *const *headings);
/* Appends a row of ncols cells (NULL shows "-"). False when out of memory. */
_Bool rp_table_add(rp_table *t, const char *const *cells);
/* Prints the headings and every row, each line prefixed by indent. */
void rp_table_print(const rp_table *t, FILE *f, const char *indent);
void rp_table_free(rp_table *t);

#endif
