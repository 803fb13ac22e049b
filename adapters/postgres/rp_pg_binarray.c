/* Arrays in PostgreSQL's binary format (rp_pg_binarray.h). */
#include "rp_pg_binarray.h"

#include <arpa/inet.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* An element's length is an int32; PostgreSQL's varlena limit is 1 GiB. */
#define RP_PG_ELEM_MAX ((size_t)0x3fffffff)

/* Room for n more bytes (a->oom when it cannot be had). */
static bool rp_grow(rp_pg_binarray *a, size_t n) {
    if (a->oom) return false;
    if (n > SIZE_MAX / 4 - a->len) {
        a->oom = true;
        return false;
    }
    if (a->len + n > a->cap) {
        size_t cap = a->cap ? a->cap : 1024;
        while (cap < a->len + n) cap *= 2;
        char *d = realloc(a->data, cap);
        if (d == NULL) {
            a->oom = true;
            return false;
        }
        a->data = d;
        a->cap = cap;
    }
    return true;
}

/* Inline: two puts per element of every column (issue 21). */
static inline void rp_put(rp_pg_binarray *a, const void *p, size_t n) {
    if (a->oom || n > a->cap - a->len) {
        if (!rp_grow(a, n)) return;
    }
    if (n > 0) memcpy(a->data + a->len, p, n);
    a->len += n;
}

void rp_pg_binarray_reserve(rp_pg_binarray *a, size_t bytes) { (void)rp_grow(a, bytes); }

static void rp_put32(rp_pg_binarray *a, uint32_t v) {
    uint32_t be = htonl(v);
    rp_put(a, &be, sizeof be);
}

void rp_pg_binarray_begin(rp_pg_binarray *a, uint32_t oid, uint32_t n) {
    memset(a, 0, sizeof *a);
    a->want = n;
    rp_put32(a, 1);   /* ndim */
    rp_put32(a, 0);   /* flags: array_recv finds the NULLs itself */
    rp_put32(a, oid); /* element type */
    rp_put32(a, n);   /* the dimension's length */
    rp_put32(a, 1);   /* its lower bound */
}

void rp_pg_binarray_add(rp_pg_binarray *a, const void *p, size_t len) {
    a->count++;
    if (p == NULL) {
        rp_put32(a, UINT32_MAX); /* -1: NULL */
        return;
    }
    if (len > RP_PG_ELEM_MAX) {
        a->oom = true; /* refused as a whole, as PostgreSQL would */
        return;
    }
    rp_put32(a, (uint32_t)len);
    rp_put(a, p, len);
}

void rp_pg_binarray_add_str(rp_pg_binarray *a, const char *s) {
    rp_pg_binarray_add(a, s, s ? strlen(s) : 0);
}

bool rp_pg_binarray_ok(const rp_pg_binarray *a) {
    return !a->oom && a->count == a->want && a->want > 0 && a->len <= (size_t)INT32_MAX;
}

void rp_pg_binarray_cleanup(rp_pg_binarray *a) {
    free(a->data);
    memset(a, 0, sizeof *a);
}
