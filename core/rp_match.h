/*
 * rp_match.h - matching queue names against the configured patterns
 * (owned_queue_pattern, dead_letter_queue_pattern).
 *
 * The patterns are PCRE because the broker's policy patterns are: a name is
 * matched the way the broker matches it, unanchored unless the pattern
 * anchors itself ("^vibey\." matches "vibey.x" and not "x.vibey.y").
 * Compiling the patterns is the configuration's job; core only matches.
 *
 * BOUNDED COST. A pattern may come from someone else (a policy on the
 * broker, a policy.set event): one like (a+)+$ against a 255-byte queue
 * name costs about half a second with PCRE2's default limits (measured
 * here: 460 ms, 10,000,000 steps), on whatever thread matches it. Every
 * match here runs under RP_MATCH_LIMIT steps, RP_MATCH_DEPTH_LIMIT
 * backtracking depth and RP_MATCH_HEAP_LIMIT_KIB of backtracking memory
 * (about 2 ms for that pattern); a match that hits a limit is an error
 * (RP_ERR_INVALID: the caller cannot tell whether the name matches), never
 * a match nor a miss. A name-matching pattern needs far less: the policy
 * pattern reaper composes takes some thousands of steps on a 255-byte name.
 * rp_match_compile_untrusted() bounds the compile of a pattern that comes
 * from outside the configuration.
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

#define RP_MATCH_LIMIT 200000u
#define RP_MATCH_DEPTH_LIMIT 5000u
#define RP_MATCH_HEAP_LIMIT_KIB 2048u
/* The longest pattern from outside that is compiled (bytes). */
#define RP_MATCH_MAX_PATTERN 1024u

/* A match context carrying the limits above, for callers that run
 * pcre2_match themselves with their own match data; NULL when out of
 * memory. The caller frees it with pcre2_match_context_free(). */
pcre2_match_context *rp_match_context_new(void);

/* Compiles a pattern that comes from outside the configuration (the
 * broker) with the compile bounds: at most RP_MATCH_MAX_PATTERN bytes
 * (longer is refused without compiling, *err PCRE2_ERROR_PATTERN_STRING_TOO_LONG),
 * PCRE2's default nesting limit. NULL when it does not compile; *err and
 * *off as pcre2_compile gives them. */
pcre2_code *rp_match_compile_untrusted(const char *text, int *err, size_t *off);

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
