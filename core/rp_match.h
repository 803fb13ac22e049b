/*
 * rp_match.h - matching queue names against the configured patterns
 * (owned_queue_pattern, dead_letter_queue_pattern).
 *
 * The patterns are PCRE because the broker's policy patterns are: a name is
 * matched the way the broker matches it, unanchored unless the pattern
 * anchors itself ("^vibey\." matches "vibey.x" and not "x.vibey.y").
 * Compiling the patterns is the configuration's job; core only matches.
 *
 * Ownership: patterns and subjects are borrowed for the call. Nothing is
 * kept; the match data each call needs is allocated and freed inside it.
 * A compiled pcre2_code may be shared by threads for matching.
 */
#ifndef RP_MATCH_H
#define RP_MATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pcre2.h>

#include "rp_common.h"
#include "rp_status.h"

/* Finds the first match of re in s[0..len). On RP_OK, *matched says whether
 * there was one and, when there was, [*start, *end) is the matched part
 * (start and end may be NULL when not wanted). RP_ERR_INVALID when re is
 * NULL or the match itself fails (e.g. a UTF pattern given invalid UTF-8, a
 * match limit); RP_ERR_NOMEM when the match data cannot be allocated. */
rp_status rp_match_find(const pcre2_code *re, const uint8_t *s, size_t len, bool *matched,
                        size_t *start, size_t *end) RP_MUSTCHECK;

/* rp_match_find() over a NUL-terminated name. */
rp_status rp_match_name(const pcre2_code *re, const char *name, bool *matched) RP_MUSTCHECK;

/* The name less the first match of re, as a new heap string in *out that
 * the caller frees (NULL on failure): "vibey.x.dlq" with '(\.dlq|\.dead)$'
 * gives "vibey.x", "dlq.vibey.x" with '^dlq\.' gives "vibey.x". When re is
 * NULL, does not match, cannot be matched against the name (see
 * rp_match_find), or the cut would leave nothing, *out is a copy of the
 * whole name. RP_ERR_INVALID for a NULL name; RP_ERR_NOMEM. */
rp_status rp_match_cut(const pcre2_code *re, const char *name, char **out) RP_MUSTCHECK;

#endif
