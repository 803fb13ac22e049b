/*
 * rp_text.h - allocating formatted strings for core.
 *
 * Core builds object names, sighting keys and detail sentences; each is a
 * fresh heap string its caller then owns.
 *
 * Ownership: rp_text_format() stores a heap string in *out that the caller
 * frees with free(); on failure *out is NULL.
 */
#ifndef RP_TEXT_H
#define RP_TEXT_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rp_common.h"
#include "rp_status.h"

/* printf into a new heap string. RP_ERR_NOMEM when allocation fails,
 * RP_ERR_INVALID when the format fails (an encoding error). */
rp_status rp_text_format(char **out, const char *fmt, ...) RP_PRINTF(2, 3) RP_MUSTCHECK;
rp_status rp_text_vformat(char **out, const char *fmt, va_list ap) RP_PRINTF(2, 0) RP_MUSTCHECK;

/* parts[0..n) (NUL-terminated, none NULL) one after the other into a new
 * heap string: what rp_text_format(out, "%s%s...") makes, without a format
 * to parse (the tap builds a sentence per dead letter, issue 21).
 * RP_ERR_NOMEM when allocation fails. */
rp_status rp_text_join(char **out, const char *const *parts, size_t n) RP_MUSTCHECK;

/* v in decimal into buf (NUL-terminated): what snprintf "%" PRId64
 * writes, without a format to parse (a dead letter renders its first
 * death's second three times, issue 21). Returns the length. */
#define RP_TEXT_I64_BUF 24
size_t rp_text_i64(int64_t v, char buf[RP_TEXT_I64_BUF]);

/* A growing text, appended to with printf formats: the Prometheus
 * rendering and the pass report build theirs so. The caller starts it with
 * a heap buffer of cap bytes (p = malloc(cap), len 0, nomem false) and
 * owns p (free()). A failed append (no memory, an encoding error) sets
 * nomem and every later append does nothing: check it once at the end. */
typedef struct rp_text_buf {
    char *p;
    size_t len, cap;
    bool nomem;
} rp_text_buf;

void rp_text_buf_printf(rp_text_buf *b, const char *fmt, ...) RP_PRINTF(2, 3);

#endif
