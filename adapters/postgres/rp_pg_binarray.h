/*
 * rp_pg_binarray.h - one-dimensional arrays in PostgreSQL's binary format
 * (array_recv: ndim, flags, element type, dimension and lower bound, then
 * each element as its length and bytes, -1 for NULL; all integers in
 * network order), to bind a column of a set-based statement as one
 * parameter with no quoting or escaping: text, jsonb as text and bytea
 * travel as their bytes.
 *
 * Ownership: the builder owns its buffer (rp_pg_binarray_cleanup frees it);
 * data and len stay valid until then. Not thread-safe; no I/O.
 */
#ifndef RP_PG_BINARRAY_H
#define RP_PG_BINARRAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Element types (pg_type.oid) the park binds. */
#define RP_PG_OID_BYTEA 17
#define RP_PG_OID_TEXT 25

typedef struct rp_pg_binarray {
    char *data;
    size_t len, cap;
    uint32_t count, want; /* elements added, elements announced */
    bool oom;
} rp_pg_binarray;

/* Starts an array of exactly n (>= 1) elements of type oid. */
void rp_pg_binarray_begin(rp_pg_binarray *a, uint32_t oid, uint32_t n);
/* Adds one element: len bytes at p, or NULL when p is NULL. */
void rp_pg_binarray_add(rp_pg_binarray *a, const void *p, size_t len);
/* Makes room for bytes more of elements (each element's bytes and its
 * 4-byte length) at once, so that adding them reallocates nothing (a
 * column of 250 texts grew by doubling, copying itself each time). A
 * failure shows in rp_pg_binarray_ok. */
void rp_pg_binarray_reserve(rp_pg_binarray *a, size_t bytes);
/* Adds a NUL-terminated text, or NULL when s is NULL. */
void rp_pg_binarray_add_str(rp_pg_binarray *a, const char *s);
/* True when the array holds the n elements announced, each under 1 GiB,
 * and no allocation failed: then data/len are the parameter's bytes. */
bool rp_pg_binarray_ok(const rp_pg_binarray *a);
void rp_pg_binarray_cleanup(rp_pg_binarray *a);

#endif
